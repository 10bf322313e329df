//! Lab cases for the host layer: a listen backlog that overflows, local ports that run out, and
//! a SYN flood. Each builds its own namespaces (unique names from a caller-given prefix), changes
//! sysctls only inside them, runs its servers as threads of this process (their sockets are
//! created inside the server namespace), and removes everything on [`HostLab`]'s drop: the
//! servers stop, child processes are killed by PID, the namespaces (and with them every veth,
//! sysctl and iptables rule) are deleted.
//!
//! Topology: `<prefix>-srv` (server, 10.214.0.1 and 10.214.1.1), `<prefix>-cli` (client,
//! 10.214.0.2), and for the flood `<prefix>-atk` (attacker, 10.214.1.2), each joined to the server
//! by a veth pair created directly inside the namespaces (it never appears in the root
//! namespace).
//!
//! - [`backlog_server`]: listen(backlog) and an acceptor that takes one connection per interval;
//! - [`port_exhaustion`]: a tiny `ip_local_port_range` in the client namespace, then connections
//!   closed by the client (TIME_WAIT keeps each port for 60 s) until connect() fails;
//! - [`syn_flood`]: a bounded SYN flood (`hping3 -S -c N`) from the attacker namespace, whose
//!   RSTs to the SYN/ACKs are dropped so the half-open connections stay.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::process::{Child, Command};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::{LabError, in_netns};

/// Server address on the client link.
pub const HOST_SERVER_IP: Ipv4Addr = Ipv4Addr::new(10, 214, 0, 1);
/// Client address.
pub const HOST_CLIENT_IP: Ipv4Addr = Ipv4Addr::new(10, 214, 0, 2);
/// Server address on the attacker link.
pub const HOST_SERVER_IP_ATK: Ipv4Addr = Ipv4Addr::new(10, 214, 1, 1);
/// Attacker address.
pub const HOST_ATTACKER_IP: Ipv4Addr = Ipv4Addr::new(10, 214, 1, 2);

use crate::netns::run;

/// A lab prefix: 1–40 characters from `[A-Za-z0-9_-]` (namespace names append `-srv` …).
pub(crate) fn check_prefix(prefix: &str) -> Result<(), LabError> {
    if prefix.is_empty()
        || prefix.len() > 40
        || !prefix
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(LabError::InvalidName {
            name: prefix.to_string(),
            reason: "use 1-40 characters from [A-Za-z0-9_-]".to_string(),
        });
    }
    Ok(())
}

/// The namespaces of one host case; everything is removed on drop.
pub struct HostLab {
    server: String,
    client: String,
    attacker: Option<String>,
    servers: Vec<TestServer>,
    children: Vec<Child>,
}

impl std::fmt::Debug for HostLab {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostLab")
            .field("server", &self.server)
            .field("client", &self.client)
            .field("attacker", &self.attacker)
            .finish()
    }
}

impl HostLab {
    /// Creates `<prefix>-srv` and `<prefix>-cli` (and `<prefix>-atk` with `attacker`), joined by
    /// veth pairs. `prefix` must be unique (e.g. include the PID) and at most 40 characters.
    pub fn create(prefix: &str, attacker: bool) -> Result<HostLab, LabError> {
        check_prefix(prefix)?;
        let lab = HostLab {
            server: format!("{prefix}-srv"),
            client: format!("{prefix}-cli"),
            attacker: attacker.then(|| format!("{prefix}-atk")),
            servers: Vec::new(),
            children: Vec::new(),
        };
        // On error, `lab`'s drop removes whatever was created.
        for ns in lab.namespaces() {
            run("ip", &["netns", "add", &ns])?;
            run("ip", &["-n", &ns, "link", "set", "lo", "up"])?;
        }
        lab.link(
            "h-srv",
            &lab.server.clone(),
            HOST_SERVER_IP,
            "h-cli",
            &lab.client.clone(),
            HOST_CLIENT_IP,
        )?;
        if let Some(atk) = lab.attacker.clone() {
            lab.link(
                "h-srv-a",
                &lab.server.clone(),
                HOST_SERVER_IP_ATK,
                "h-atk",
                &atk,
                HOST_ATTACKER_IP,
            )?;
        }
        Ok(lab)
    }

    fn link(
        &self,
        a: &str,
        ns_a: &str,
        ip_a: Ipv4Addr,
        b: &str,
        ns_b: &str,
        ip_b: Ipv4Addr,
    ) -> Result<(), LabError> {
        run(
            "ip",
            &[
                "link", "add", a, "netns", ns_a, "type", "veth", "peer", "name", b, "netns", ns_b,
            ],
        )?;
        for (ns, dev, ip) in [(ns_a, a, ip_a), (ns_b, b, ip_b)] {
            run(
                "ip",
                &["-n", ns, "addr", "add", &format!("{ip}/24"), "dev", dev],
            )?;
            run("ip", &["-n", ns, "link", "set", dev, "up"])?;
        }
        Ok(())
    }

    fn namespaces(&self) -> Vec<String> {
        let mut v = vec![self.server.clone(), self.client.clone()];
        v.extend(self.attacker.clone());
        v
    }

    /// Name of the server namespace.
    pub fn server_netns(&self) -> &str {
        &self.server
    }

    /// Name of the client namespace.
    pub fn client_netns(&self) -> &str {
        &self.client
    }

    /// Name of the attacker namespace, if the lab has one.
    pub fn attacker_netns(&self) -> Option<&str> {
        self.attacker.as_deref()
    }

    /// Sets a sysctl inside one of the lab's namespaces (`key` like `net.core.somaxconn`).
    pub fn sysctl(&self, netns: &str, key: &str, value: &str) -> Result<(), LabError> {
        self.check_own(netns)?;
        run(
            "ip",
            &[
                "netns",
                "exec",
                netns,
                "sysctl",
                "-q",
                "-w",
                &format!("{key}={value}"),
            ],
        )
        .map(|_| ())
    }

    /// A command that runs `program` inside one of the lab's namespaces.
    pub fn command(&self, netns: &str, program: &str) -> Result<Command, LabError> {
        self.check_own(netns)?;
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", netns, program]);
        Ok(cmd)
    }

    fn check_own(&self, netns: &str) -> Result<(), LabError> {
        if self.namespaces().iter().any(|n| n == netns) {
            Ok(())
        } else {
            Err(LabError::InvalidName {
                name: netns.to_string(),
                reason: "not a namespace of this lab".to_string(),
            })
        }
    }

    /// Runs `f` on a thread inside one of the lab's namespaces.
    pub fn in_ns<T: Send>(&self, netns: &str, f: impl FnOnce() -> T + Send) -> Result<T, LabError> {
        self.check_own(netns)?;
        in_netns(netns, f)
    }

    /// Keeps a child process: it is killed (by PID) and reaped when the lab is dropped.
    pub fn keep_child(&mut self, child: Child) {
        self.children.push(child);
    }

    fn teardown(&mut self) {
        for s in self.servers.drain(..) {
            s.stop();
        }
        for mut c in self.children.drain(..) {
            let _ = c.kill();
            let _ = c.wait();
        }
        for ns in self.namespaces() {
            if crate::netns_exists(&ns) {
                let _ = run("ip", &["netns", "del", &ns]);
            }
        }
    }
}

impl Drop for HostLab {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// A server thread (or threads) that stops on drop of its lab.
struct TestServer {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl TestServer {
    fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn listen(lab: &HostLab, port: u16, backlog: i32) -> Result<TcpListener, LabError> {
    let addr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port));
    lab.in_ns(&lab.server, move || -> std::io::Result<TcpListener> {
        let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
        s.set_reuse_address(true)?;
        s.bind(&addr.into())?;
        s.listen(backlog)?;
        // Non-blocking, so the acceptor sees its stop flag without a wake-up connection.
        s.set_nonblocking(true)?;
        Ok(s.into())
    })?
    .map_err(|source| LabError::Io {
        op: format!(
            "listen on port {port} (backlog {backlog}) in {}",
            lab.server
        ),
        source,
    })
}

/// Starts a server in the server namespace on `port` with `listen(backlog)` whose acceptor takes
/// one connection per `accept_every`, answers each request line with `ok\n` and closes.
/// Returns the address clients connect to.
pub fn backlog_server(
    lab: &mut HostLab,
    port: u16,
    backlog: i32,
    accept_every: Duration,
) -> Result<SocketAddr, LabError> {
    let listener = listen(lab, port, backlog)?;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let handle = std::thread::spawn(move || {
        while !flag.load(Ordering::Relaxed) {
            std::thread::sleep(accept_every);
            let Ok((mut conn, _)) = listener.accept() else {
                continue;
            };
            let _ = conn.set_nonblocking(false);
            let _ = conn.set_read_timeout(Some(Duration::from_millis(500)));
            let mut buf = [0u8; 256];
            if conn.read(&mut buf).is_ok_and(|n| n > 0) {
                let _ = conn.write_all(b"ok\n");
            }
        }
    });
    let addr = SocketAddr::V4(SocketAddrV4::new(HOST_SERVER_IP, port));
    lab.servers.push(TestServer {
        stop,
        handle: Some(handle),
    });
    Ok(addr)
}

/// Starts a server that accepts at once, reads until the client closes, then closes (so the
/// client's side ends in TIME_WAIT on the client).
pub fn echo_server(lab: &mut HostLab, port: u16, backlog: i32) -> Result<SocketAddr, LabError> {
    let listener = listen(lab, port, backlog)?;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let handle = std::thread::spawn(move || {
        while !flag.load(Ordering::Relaxed) {
            let Ok((mut conn, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(2));
                continue;
            };
            let _ = conn.set_nonblocking(false);
            let _ = conn.set_read_timeout(Some(Duration::from_millis(500)));
            let mut buf = [0u8; 256];
            while conn.read(&mut buf).is_ok_and(|n| n > 0) {}
        }
    });
    lab.servers.push(TestServer {
        stop,
        handle: Some(handle),
    });
    Ok(SocketAddr::V4(SocketAddrV4::new(HOST_SERVER_IP, port)))
}

/// How a batch of client connections went.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClientOutcome {
    pub attempts: u64,
    pub connected: u64,
    /// connect() failed with EADDRNOTAVAIL (no local port left).
    pub addr_not_avail: u64,
    /// Other failures (timeouts, refusals), with the first error.
    pub other_failures: u64,
    pub first_error: Option<String>,
    /// Connect times of the successful connections, in milliseconds.
    pub connect_ms: Vec<f64>,
}

fn connect_once(to: SocketAddr, timeout: Duration, out: &mut ClientOutcome) -> Option<TcpStream> {
    out.attempts += 1;
    let t = Instant::now();
    match TcpStream::connect_timeout(&to, timeout) {
        Ok(s) => {
            out.connected += 1;
            out.connect_ms.push(t.elapsed().as_secs_f64() * 1e3);
            Some(s)
        }
        Err(e) => {
            if e.raw_os_error() == Some(libc::EADDRNOTAVAIL) {
                out.addr_not_avail += 1;
            } else {
                out.other_failures += 1;
            }
            out.first_error.get_or_insert(format!("connect {to}: {e}"));
            None
        }
    }
}

/// From the client namespace, opens `n` connections at once (one thread each, each sending one
/// line and waiting for the answer), each bounded by `timeout`.
pub fn burst_clients(
    lab: &HostLab,
    to: SocketAddr,
    n: usize,
    timeout: Duration,
) -> Result<ClientOutcome, LabError> {
    lab.in_ns(&lab.client, move || {
        let threads: Vec<_> = (0..n)
            .map(|_| {
                std::thread::spawn(move || {
                    let mut out = ClientOutcome::default();
                    if let Some(mut s) = connect_once(to, timeout, &mut out) {
                        let _ = s.set_read_timeout(Some(timeout));
                        let _ = s.write_all(b"hello\n");
                        let mut buf = [0u8; 16];
                        let _ = s.read(&mut buf);
                    }
                    out
                })
            })
            .collect();
        let mut all = ClientOutcome::default();
        for t in threads {
            let o = t.join().unwrap_or_default();
            all.attempts += o.attempts;
            all.connected += o.connected;
            all.addr_not_avail += o.addr_not_avail;
            all.other_failures += o.other_failures;
            if all.first_error.is_none() {
                all.first_error = o.first_error;
            }
            all.connect_ms.extend(o.connect_ms);
        }
        all
    })
}

/// Sets `ip_local_port_range` to `first..=last` in the client namespace, then opens and closes
/// `n` connections one after the other (the client closes first, so each port stays in
/// TIME_WAIT). With fewer ports than `n`, connect() fails with EADDRNOTAVAIL.
pub fn port_exhaustion(
    lab: &HostLab,
    to: SocketAddr,
    first: u16,
    last: u16,
    n: usize,
) -> Result<ClientOutcome, LabError> {
    lab.sysctl(
        &lab.client,
        "net.ipv4.ip_local_port_range",
        &format!("{first} {last}"),
    )?;
    lab.in_ns(&lab.client, move || {
        let mut out = ClientOutcome::default();
        for _ in 0..n {
            if let Some(s) = connect_once(to, Duration::from_secs(2), &mut out) {
                drop(s);
            }
        }
        out
    })
}

/// Floods `port` on the server with `count` SYNs from the attacker namespace (`hping3 -S`, one
/// every `interval_us`), and waits for hping3 to finish (bounded by the count). The attacker's
/// RSTs to the SYN/ACKs are dropped there, so the connections stay half-open on the server.
pub fn syn_flood(lab: &HostLab, port: u16, count: u32, interval_us: u32) -> Result<(), LabError> {
    let mut child = spawn_syn_flood(lab, port, count, interval_us)?;
    let status = child.wait().map_err(|source| LabError::Io {
        op: "wait for hping3".to_string(),
        source,
    })?;
    if status.success() {
        Ok(())
    } else {
        Err(LabError::Command {
            command: format!("hping3 -S -p {port} -c {count} {HOST_SERVER_IP_ATK}"),
            status: status.to_string(),
            stderr: String::new(),
        })
    }
}

/// Like [`syn_flood`], but returns the running hping3 (in the attacker namespace) at once; it
/// ends by itself after `count` SYNs. The caller owns it (end it by its PID).
pub fn spawn_syn_flood(
    lab: &HostLab,
    port: u16,
    count: u32,
    interval_us: u32,
) -> Result<Child, LabError> {
    let atk = lab.attacker.clone().ok_or_else(|| LabError::InvalidName {
        name: lab.server.clone(),
        reason: "this lab has no attacker namespace (create it with attacker = true)".to_string(),
    })?;
    run(
        "ip",
        &[
            "netns",
            "exec",
            &atk,
            "iptables",
            "-A",
            "OUTPUT",
            "-p",
            "tcp",
            "--tcp-flags",
            "RST",
            "RST",
            "-j",
            "DROP",
        ],
    )?;
    Command::new("ip")
        .args(["netns", "exec", &atk, "hping3", "-q", "-S", "-p"])
        .arg(port.to_string())
        .arg("-c")
        .arg(count.to_string())
        .arg("-i")
        .arg(format!("u{interval_us}"))
        .arg(HOST_SERVER_IP_ATK.to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|source| LabError::Io {
            op: format!("run hping3 in {atk}"),
            source,
        })
}
