//! Debian's nginx serving HTTPS on 127.0.0.1 for tests: a self-signed certificate made with the
//! `openssl` CLI, one `ssl` server block and one plain-HTTP block on free high ports, in a temp
//! dir that is removed when the server is dropped.
//!
//! nginx runs in the foreground with `master_process off` (one process, no workers), so killing
//! its PID on drop leaves nothing behind. The certificate is an end-entity one (`CA:FALSE`,
//! subject `CN=netdoctor tls test`, unlike any system root: Debian's snakeoil is `CN=localhost`) for
//! `localhost` and `127.0.0.1`: a client that checks it against the system roots fails with
//! `UnknownIssuer`, as it would for any self-signed server certificate.
//!
//! The address, the ports and the parent dir of its files are settable too, for the lab's
//! `self-signed` case (nginx on the server namespace's address, its files under the lab's state
//! dir, its certificate naming that address so the issuer is the only problem).
//!
//! `keepalive_timeout 0` makes a server that closes every connection after its response.
//! `tcp_nodelay`, `ssl_buffer_size` and the page size are settable, for the Nagle case over TLS:
//! a response that leaves in several TLS records (e.g. `ssl_buffer_size 4k` with an 8 KiB page)
//! stalls behind the client's delayed ACK when `tcp_nodelay off`; one record does not.

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How to configure the TLS nginx.
#[derive(Clone, Debug)]
pub struct TlsNginxConfig {
    /// `tcp_nodelay on|off` (nginx's default: on).
    pub tcp_nodelay: bool,
    /// `ssl_buffer_size` in bytes (nginx's default: 16k).
    pub ssl_buffer_size: Option<usize>,
    /// Size of the page served at `/` (default: nginx's 615-byte welcome page).
    pub page_bytes: Option<usize>,
    /// `listen ... http2` in both servers (nginx 1.22's form): h2 by ALPN on the TLS port
    /// (HTTP/1.1 still offered), h2c with prior knowledge only on the plain one.
    pub http2: bool,
    /// `keepalive_requests` (default here: 100000; nginx's own is 1000). Past it, nginx ends
    /// an HTTP/2 connection with GOAWAY.
    pub keepalive_requests: Option<u32>,
    /// The address both servers listen on (default 127.0.0.1); the certificate names it.
    pub ip: Option<std::net::IpAddr>,
    /// Fixed (https, http) ports instead of free ones.
    pub ports: Option<(u16, u16)>,
    /// The dir its files go under (default: the system temp dir).
    pub parent_dir: Option<PathBuf>,
    /// `keepalive_timeout` in seconds (default: nginx's 75); `Some(0)` closes every connection
    /// after its response (`Connection: close`), whatever the client asked.
    pub keepalive_timeout: Option<u32>,
    /// Log each request of the TLS server (`$connection_requests $ssl_session_reused
    /// $ssl_protocol $ssl_cipher $ssl_curve`, unbuffered) for [`TlsNginx::handshakes`].
    pub handshake_log: bool,
}

impl Default for TlsNginxConfig {
    fn default() -> Self {
        TlsNginxConfig {
            tcp_nodelay: true,
            ssl_buffer_size: None,
            page_bytes: None,
            http2: false,
            keepalive_requests: None,
            ip: None,
            ports: None,
            parent_dir: None,
            keepalive_timeout: None,
            handshake_log: false,
        }
    }
}

/// A running TLS nginx; stopped (by PID) and its files removed on drop.
pub struct TlsNginx {
    /// The `ssl` server (`https://` here).
    pub https: SocketAddr,
    /// A plain-HTTP server of the same nginx (for "plain HTTP behind an https URL").
    pub http: SocketAddr,
    /// Size of the page at `/`.
    pub page_bytes: usize,
    child: Option<Child>,
    dir: PathBuf,
}

/// Why the TLS nginx cannot be used; `Missing` means "skip the test" (a tool is not installed).
#[derive(Debug, thiserror::Error)]
pub enum TlsNginxError {
    #[error("{0} is not installed")]
    Missing(&'static str),
    #[error("{0}")]
    Failed(String),
}

fn installed(tool: &str) -> bool {
    ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]
        .iter()
        .any(|d| Path::new(d).join(tool).exists())
}

impl TlsNginx {
    /// Makes the certificate and starts nginx; returns once both ports accept connections.
    pub fn start(cfg: &TlsNginxConfig) -> Result<TlsNginx, TlsNginxError> {
        for tool in ["nginx", "openssl"] {
            if !installed(tool) {
                return Err(TlsNginxError::Missing(tool));
            }
        }
        let fail = |what: &str, e: &dyn std::fmt::Display| {
            TlsNginxError::Failed(format!("tls nginx: {what}: {e}"))
        };
        let ip = cfg.ip.unwrap_or(std::net::IpAddr::from([127, 0, 0, 1]));
        let parent = cfg.parent_dir.clone().unwrap_or_else(std::env::temp_dir);
        let dir = parent.join(format!(
            "netdoctor-tls-nginx-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("html")).map_err(|e| fail("create temp dir", &e))?;
        // From here on, drop removes the dir (and stops nginx once it runs).
        let mut server = TlsNginx {
            https: SocketAddr::new(ip, 0),
            http: SocketAddr::new(ip, 0),
            page_bytes: 0,
            child: None,
            dir,
        };
        let d = server.dir.clone();
        let out = Command::new("openssl")
            .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
            .arg("ec_paramgen_curve:prime256v1")
            .args(["-nodes", "-days", "2", "-subj", "/CN=netdoctor tls test"])
            .arg("-addext")
            .arg(match ip {
                std::net::IpAddr::V4(v4) if v4.is_loopback() => {
                    "subjectAltName=DNS:localhost,IP:127.0.0.1".to_string()
                }
                _ => format!("subjectAltName=DNS:localhost,IP:127.0.0.1,IP:{ip}"),
            })
            .args(["-addext", "basicConstraints=critical,CA:FALSE"])
            .arg("-keyout")
            .arg(d.join("key.pem"))
            .arg("-out")
            .arg(d.join("cert.pem"))
            .stdin(Stdio::null())
            .output()
            .map_err(|e| fail("run openssl", &e))?;
        if !out.status.success() {
            return Err(fail(
                "openssl req",
                &String::from_utf8_lossy(&out.stderr).trim(),
            ));
        }
        let page = match cfg.page_bytes {
            None => crate::DEFAULT_PAGE.to_string(),
            Some(n) => {
                let line = "netdoctor tls test page, padding to the size asked for.........\n";
                line.repeat(n / line.len() + 1)[..n].to_string()
            }
        };
        server.page_bytes = page.len();
        std::fs::write(d.join("html/index.html"), page).map_err(|e| fail("write page", &e))?;

        // Free ports below the ephemeral range (`ports::unused_port`): no outgoing connection
        // or bind(0) elsewhere takes them before nginx binds them. Another process still may:
        // try a few times.
        let mut last = String::new();
        for _ in 0..5 {
            let (ps, ph) = match cfg.ports {
                Some(p) => p,
                None => (crate::ports::unused_port(ip), crate::ports::unused_port(ip)),
            };
            if ps == ph {
                continue;
            }
            server.https.set_port(ps);
            server.http.set_port(ph);
            let conf = render(&d, ip, ps, ph, cfg);
            std::fs::write(d.join("nginx.conf"), conf).map_err(|e| fail("write config", &e))?;
            let _ = std::fs::remove_file(d.join("nginx.pid"));
            let child = Command::new("nginx")
                .arg("-p")
                .arg(&d)
                .arg("-c")
                .arg(d.join("nginx.conf"))
                .arg("-e")
                .arg(d.join("error.log"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| fail("start nginx", &e))?;
            server.child = Some(child);
            match server.wait_ready(Duration::from_secs(5)) {
                Ok(()) => return Ok(server),
                Err(e) => {
                    last = e;
                    server.stop_child();
                }
            }
        }
        Err(TlsNginxError::Failed(format!(
            "tls nginx did not start: {last}"
        )))
    }

    /// Waits for nginx's pid file (written once its sockets listen) and both ports.
    fn wait_ready(&mut self, limit: Duration) -> Result<(), String> {
        let end = Instant::now() + limit;
        loop {
            if let Some(c) = self.child.as_mut()
                && let Ok(Some(status)) = c.try_wait()
            {
                let log = std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default();
                return Err(format!("nginx exited ({status}): {}", log.trim()));
            }
            if self.dir.join("nginx.pid").exists()
                && TcpStream::connect(self.https).is_ok()
                && TcpStream::connect(self.http).is_ok()
            {
                return Ok(());
            }
            if Instant::now() >= end {
                return Err(format!("not ready after {limit:?}"));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn stop_child(&mut self) {
        if let Some(mut c) = self.child.take() {
            // One process (master_process off): killing its PID stops nginx entirely.
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// The PID of nginx (one process), to record for a lab's teardown.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The `https://` URL of the TLS server's page.
    pub fn https_url(&self) -> String {
        format!("https://{}/", self.https)
    }

    /// The TLS handshakes the server has logged so far (`handshake_log` on): one per
    /// connection that carried a request, read from each connection's first request.
    pub fn handshakes(&self) -> Result<Handshakes, String> {
        let path = self.dir.join("tls.log");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("read {}: {e} (is handshake_log on?)", path.display()))?;
        Ok(Handshakes::parse(&text))
    }
}

/// TLS handshakes counted from the TLS server's log (see [`TlsNginx::handshakes`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Handshakes {
    /// Full handshakes (a new session: certificate, signature, key exchange).
    pub full: u64,
    /// Resumed sessions (a session ticket or id the client offered and the server accepted).
    pub resumed: u64,
    /// `protocol cipher group` of the connections, e.g. `TLSv1.2 ECDHE-ECDSA-AES256-GCM-SHA384
    /// X25519`, each once.
    pub suites: Vec<String>,
}

impl Handshakes {
    fn parse(text: &str) -> Handshakes {
        let mut h = Handshakes::default();
        for line in text.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            // The first request of a connection stands for its handshake.
            if f.len() < 5 || f[0] != "1" {
                continue;
            }
            if f[1] == "r" {
                h.resumed += 1;
            } else {
                h.full += 1;
            }
            let suite = f[2..5].join(" ");
            if !h.suites.contains(&suite) {
                h.suites.push(suite);
            }
        }
        h
    }
}

impl Drop for TlsNginx {
    fn drop(&mut self) {
        self.stop_child();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn render(
    dir: &Path,
    ip: std::net::IpAddr,
    https_port: u16,
    http_port: u16,
    cfg: &TlsNginxConfig,
) -> String {
    let d = dir.display();
    let ip = SocketAddr::new(ip, 0).to_string();
    let ip = ip.trim_end_matches(":0");
    let buffer = cfg
        .ssl_buffer_size
        .map(|n| format!("ssl_buffer_size {n};"))
        .unwrap_or_default();
    let nodelay = if cfg.tcp_nodelay { "on" } else { "off" };
    let http2 = if cfg.http2 { " http2" } else { "" };
    let keepalive_requests = cfg.keepalive_requests.unwrap_or(100_000);
    let keepalive_timeout = cfg.keepalive_timeout.unwrap_or(75);
    // log_format belongs to the http block, access_log to the TLS server.
    let (log_format, tls_log) = if cfg.handshake_log {
        (
            "log_format handshakes '$connection_requests $ssl_session_reused $ssl_protocol \
             $ssl_cipher $ssl_curve';"
                .to_string(),
            format!("access_log {d}/tls.log handshakes;"),
        )
    } else {
        (String::new(), String::new())
    };
    format!(
        "# netdoctor TLS test server (removed on drop)
daemon off;
master_process off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    {log_format}
    sendfile on;
    tcp_nopush off;
    tcp_nodelay {nodelay};
    keepalive_requests {keepalive_requests};
    keepalive_timeout {keepalive_timeout};
    types {{ text/html html; }}
    default_type text/html;
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    server {{
        listen {ip}:{https_port} ssl{http2};
        ssl_certificate {d}/cert.pem;
        ssl_certificate_key {d}/key.pem;
        {buffer}
        {tls_log}
        root {d}/html;
        index index.html;
    }}
    server {{
        listen {ip}:{http_port}{http2};
        root {d}/html;
        index index.html;
    }}
}}
"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handshakes_are_counted_from_first_requests() {
        let log = "1 . TLSv1.2 ECDHE-ECDSA-AES256-GCM-SHA384 X25519\n\
                   2 . TLSv1.2 ECDHE-ECDSA-AES256-GCM-SHA384 X25519\n\
                   1 r TLSv1.2 ECDHE-ECDSA-AES256-GCM-SHA384 X25519\n\
                   1 r TLSv1.3 TLS_AES_256_GCM_SHA384 X25519\n\
                   garbage\n";
        assert_eq!(
            Handshakes::parse(log),
            Handshakes {
                full: 1,
                resumed: 2,
                suites: vec![
                    "TLSv1.2 ECDHE-ECDSA-AES256-GCM-SHA384 X25519".into(),
                    "TLSv1.3 TLS_AES_256_GCM_SHA384 X25519".into()
                ],
            }
        );
    }
}
