//! The reference lab: reproduces netdoctor's reference case locally with real nginx.
//!
//! `Lab::start` builds two network namespaces, `<name>-srv` and `<name>-cli`, joined by a veth
//! pair (server 10.213.0.1/24, client 10.213.0.2/24, loopback up in both), and starts Debian's
//! nginx in the server namespace with two server blocks serving nginx's default 615-byte page:
//! port 8080 with `tcp_nodelay on;` and port 8081 with `tcp_nodelay off;`. From the client
//! namespace, `wrk -c 100` against :8081 shows the Nagle / delayed-ACK stall (p50 ≈ 40 ms) and
//! :8080 does not (p50 ≈ 1–2 ms). Measured on veth: on ≈ 40–55k req/s, p50 1.4–2 ms; off ≈ 2.2k
//! req/s, p50 44 ms. nginx runs with `tcp_nopush off` on purpose: with Debian's packaged
//! `tcp_nopush on`, TCP_CORK merges headers and body into one segment and the stall disappears
//! (see the `nginx` module). No offload changes (ethtool) were needed.
//!
//! Everything is created with the `ip` command (iproute2) through `std::process::Command` —
//! simple, and exactly what an SRE would type to rebuild or inspect the lab by hand. The veth pair
//! is created directly inside the two namespaces (`ip link add ... netns <srv> type veth peer ...
//! netns <cli>`), so it never appears in the root namespace and nothing of the host's network
//! configuration (sysctls, qdiscs, firewall) is touched.
//!
//! State lives in `state_dir` (default `/run/netdoctor/lab-<name>`): the nginx config, the page,
//! nginx's pid file and error log, and `lab.state`, a small `key=value` file (hand-written to keep
//! the crate free of a JSON dependency; it holds four fields). [`stop`] tears down everything a lab
//! with a given config may have left — by the nginx PID from the pid file, never by process name —
//! and is idempotent, so it also cleans up after a crash. [`cleanup_on_signal`] runs it on
//! SIGINT/SIGTERM/SIGHUP so Ctrl-C during `netdoctor demo` leaves nothing behind.

pub mod builtin;
pub mod hostcases;
mod netns;
mod nginx;

use std::ffi::OsStr;
use std::fs;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub use netns::{in_netns, netns_exists};
pub use nginx::DEFAULT_PAGE;

use nginx::{ServerBlock, StatePaths};

/// Address of the server end of the veth pair (nginx listens here).
pub const SERVER_IP: Ipv4Addr = Ipv4Addr::new(10, 213, 0, 1);
/// Address of the client end of the veth pair.
pub const CLIENT_IP: Ipv4Addr = Ipv4Addr::new(10, 213, 0, 2);
/// Prefix length of the lab subnet.
pub const PREFIX_LEN: u8 = 24;
/// Port of the server with `tcp_nodelay on;`.
pub const PORT_NODELAY_ON: u16 = 8080;
/// Port of the server with `tcp_nodelay off;`.
pub const PORT_NODELAY_OFF: u16 = 8081;
/// Name of the veth end inside the server namespace.
pub const SERVER_IF: &str = "nd-srv";
/// Name of the veth end inside the client namespace.
pub const CLIENT_IF: &str = "nd-cli";
/// Parent of the default state dirs (`/run/netdoctor/lab-<name>`).
pub const DEFAULT_STATE_PARENT: &str = "/run/netdoctor";
/// Where Debian installs nginx.
pub const DEFAULT_NGINX: &str = "/usr/sbin/nginx";

/// How long `start` waits for both servers to answer.
const READY_TIMEOUT: Duration = Duration::from_secs(5);
/// How long `stop` gives nginx to exit after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Serializes start and teardown within this process, so a signal arriving during `start` tears
/// down only after `start` has finished creating things (nothing is created after the teardown).
static LIFECYCLE: Mutex<()> = Mutex::new(());

/// Errors of the lab.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// The nginx binary is not installed.
    #[error("nginx not found: install it with `apt-get install nginx-light` (looked for {path})")]
    NginxMissing { path: PathBuf },
    /// A lab with this name exists already (state file or namespaces present).
    #[error("lab {name:?} is already running ({reason}); run `netdoctor lab stop` first")]
    AlreadyRunning { name: String, reason: String },
    /// The lab name cannot be used for namespace or file names.
    #[error("invalid lab name {name:?}: {reason}")]
    InvalidName { name: String, reason: String },
    /// A system call or file operation failed.
    #[error("{op}: {source}")]
    Io {
        op: String,
        #[source]
        source: std::io::Error,
    },
    /// An external command (`ip`, `nginx`) exited with an error.
    #[error("`{command}` failed ({status}): {stderr}")]
    Command {
        command: String,
        status: String,
        stderr: String,
    },
    /// nginx exited with an error while starting.
    #[error("start nginx in namespace {netns} ({status}):\n{log}")]
    NginxStart {
        netns: String,
        status: String,
        log: String,
    },
    /// nginx did not answer on both ports within the ready timeout.
    #[error(
        "nginx in namespace {netns} not ready after {waited_ms} ms: {detail}\nnginx error log {}:\n{log}",
        error_log.display()
    )]
    NotReady {
        netns: String,
        waited_ms: u128,
        detail: String,
        error_log: PathBuf,
        log: String,
    },
    /// The state file exists but cannot be understood.
    #[error("read lab state {}: {reason}", path.display())]
    BadState { path: PathBuf, reason: String },
    /// Teardown could not remove everything.
    #[error("lab teardown incomplete: {}{}", errors.join("; "), removed_note(removed))]
    Teardown {
        removed: Vec<String>,
        errors: Vec<String>,
    },
}

fn removed_note(removed: &[String]) -> String {
    if removed.is_empty() {
        String::new()
    } else {
        format!(" (removed: {})", removed.join(", "))
    }
}

/// Which lab: its name and where its state lives.
#[derive(Clone, Debug)]
pub struct LabConfig {
    /// Lab name; namespaces are `<name>-srv` and `<name>-cli`. Default "netdoctor".
    pub name: String,
    /// Directory for nginx config, page, pid file, logs and the state file.
    /// Default `/run/netdoctor/lab-<name>`.
    pub state_dir: PathBuf,
}

impl LabConfig {
    /// Config for a lab called `name` with the default state dir.
    pub fn new(name: &str) -> Self {
        LabConfig {
            name: name.to_string(),
            state_dir: Path::new(DEFAULT_STATE_PARENT).join(format!("lab-{name}")),
        }
    }

    /// Name of the server namespace, `<name>-srv`.
    pub fn server_netns(&self) -> String {
        format!("{}-srv", self.name)
    }

    /// Name of the client namespace, `<name>-cli`.
    pub fn client_netns(&self) -> String {
        format!("{}-cli", self.name)
    }

    fn validate(&self) -> Result<(), LabError> {
        netns::check_netns_name(&self.name)?;
        netns::check_netns_name(&self.server_netns())?;
        if self.state_dir.as_os_str().is_empty() || self.state_dir.parent().is_none() {
            return Err(LabError::InvalidName {
                name: self.name.clone(),
                reason: format!("unusable state dir {:?}", self.state_dir),
            });
        }
        Ok(())
    }
}

impl Default for LabConfig {
    fn default() -> Self {
        LabConfig::new("netdoctor")
    }
}

/// One nginx server of the lab.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabServer {
    /// "nodelay-on" or "nodelay-off".
    pub name: String,
    /// Whether this server block has `tcp_nodelay on;`.
    pub tcp_nodelay: bool,
    /// Listen address (in the server namespace, reachable from the client namespace).
    pub addr: SocketAddr,
    /// URL of the default page, e.g. "http://10.213.0.1:8080/".
    pub url: String,
}

fn lab_servers() -> Vec<LabServer> {
    [(PORT_NODELAY_ON, true), (PORT_NODELAY_OFF, false)]
        .into_iter()
        .map(|(port, nodelay)| {
            let addr = SocketAddr::V4(SocketAddrV4::new(SERVER_IP, port));
            LabServer {
                name: if nodelay { "nodelay-on" } else { "nodelay-off" }.to_string(),
                tcp_nodelay: nodelay,
                addr,
                url: format!("http://{addr}/"),
            }
        })
        .collect()
}

/// One server in [`LabStatus`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ServerStatus {
    #[serde(flatten)]
    pub server: LabServer,
    /// Whether an HTTP GET from the client namespace returned 200 with the page.
    pub answering: bool,
    /// Why not, when not answering.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
}

/// What is present of a lab (`netdoctor lab status`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LabStatus {
    pub name: String,
    /// State file, both namespaces and nginx present, and both servers answering.
    pub running: bool,
    pub state_dir: PathBuf,
    pub state_file_present: bool,
    pub server_netns: String,
    pub server_netns_present: bool,
    pub client_netns: String,
    pub client_netns_present: bool,
    pub nginx_pid: Option<u32>,
    pub nginx_alive: bool,
    pub servers: Vec<ServerStatus>,
}

impl LabStatus {
    /// Whether anything of the lab exists (state file, a namespace, or nginx).
    pub fn anything_present(&self) -> bool {
        self.state_file_present
            || self.server_netns_present
            || self.client_netns_present
            || self.nginx_alive
    }
}

/// Human-readable status, several lines, no trailing newline.
impl std::fmt::Display for LabStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let present = |yes: bool| if yes { "present" } else { "absent" };
        let verdict = if self.running {
            "running"
        } else if self.anything_present() {
            "broken (partly present; `netdoctor lab stop` removes the rest)"
        } else {
            "not running"
        };
        write!(f, "lab '{}': {verdict}", self.name)?;
        if !self.anything_present() {
            return Ok(());
        }
        write!(
            f,
            "\n  state dir   {} (state file {})",
            self.state_dir.display(),
            present(self.state_file_present)
        )?;
        write!(
            f,
            "\n  namespaces  {} {}, {} {}",
            self.server_netns,
            present(self.server_netns_present),
            self.client_netns,
            present(self.client_netns_present)
        )?;
        match self.nginx_pid {
            Some(pid) if self.nginx_alive => write!(f, "\n  nginx       pid {pid}, alive")?,
            Some(pid) => write!(f, "\n  nginx       pid {pid}, not running")?,
            None => write!(f, "\n  nginx       not running")?,
        }
        for s in &self.servers {
            let state = match (&s.error, s.answering) {
                (_, true) => "answering".to_string(),
                (Some(e), false) => format!("not answering: {e}"),
                (None, false) => "not answering".to_string(),
            };
            write!(
                f,
                "\n  {:<12} {:<24} tcp_nodelay {:<3}  {state}",
                s.server.name,
                s.server.url,
                if s.server.tcp_nodelay { "on" } else { "off" }
            )?;
        }
        Ok(())
    }
}

/// A running lab.
#[derive(Debug)]
pub struct Lab {
    cfg: LabConfig,
    server_netns: String,
    client_netns: String,
    servers: Vec<LabServer>,
    nginx_pid: Option<u32>,
    /// The built-in reference server's threads, when the lab runs without nginx.
    builtin: Option<builtin::BuiltinServers>,
}

/// Knobs used by tests to provoke failures; `Lab::start` uses the defaults.
pub(crate) struct StartOptions<'a> {
    pub nginx: PathBuf,
    pub ready_timeout: Duration,
    /// Runs after the namespaces exist and before nginx starts.
    pub before_nginx: Option<&'a (dyn Fn(&str) + Sync)>,
}

impl Default for StartOptions<'_> {
    fn default() -> Self {
        StartOptions {
            nginx: PathBuf::from(DEFAULT_NGINX),
            ready_timeout: READY_TIMEOUT,
            before_nginx: None,
        }
    }
}

impl Lab {
    /// Creates namespaces + veth, writes nginx config and page into the state dir, starts nginx in
    /// the server namespace, and returns once both ports answer an HTTP request from inside the
    /// client namespace (at most 5 s, else [`LabError::NotReady`] with nginx's error log tail).
    /// On any failure, removes what it made.
    pub fn start(cfg: &LabConfig) -> Result<Lab, LabError> {
        Self::start_with(cfg, &StartOptions::default())
    }

    /// True when the nginx that [`Lab::start`] runs is installed.
    pub fn nginx_available() -> bool {
        is_executable(Path::new(DEFAULT_NGINX))
    }

    /// Like [`Lab::start`], but the servers are netdoctor's built-in reference server (see
    /// [`builtin`]) running as threads of this process inside the server namespace, so the lab
    /// lives only as long as the calling process. For `demo` on machines without nginx.
    pub fn start_builtin(cfg: &LabConfig) -> Result<Lab, LabError> {
        cfg.validate()?;
        let _lock = LIFECYCLE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(reason) = presence(cfg) {
            return Err(LabError::AlreadyRunning {
                name: cfg.name.clone(),
                reason,
            });
        }
        let built = (|| {
            let (srv, cli) = build_network(cfg)?;
            let servers = lab_servers();
            let specs: Vec<(SocketAddr, bool)> =
                servers.iter().map(|s| (s.addr, s.tcp_nodelay)).collect();
            let running =
                in_netns(&srv, || builtin::BuiltinServers::start(&specs))?.map_err(|source| {
                    LabError::Io {
                        op: format!("start the built-in reference server in {srv}"),
                        source,
                    }
                })?;
            let probes = in_netns(&cli, || {
                servers
                    .iter()
                    .map(|s| http_check(s.addr, Duration::from_secs(2)))
                    .collect::<Vec<_>>()
            })?;
            if let Some(Err(detail)) = probes.into_iter().find(|p| p.is_err()) {
                return Err(LabError::Io {
                    op: format!("check the built-in reference server from {cli}"),
                    source: std::io::Error::other(detail),
                });
            }
            Ok(Lab {
                cfg: cfg.clone(),
                server_netns: srv,
                client_netns: cli,
                servers,
                nginx_pid: None,
                builtin: Some(running),
            })
        })();
        if built.is_err() {
            let _ = teardown(cfg);
        }
        built
    }

    /// Whether the servers are the built-in reference server rather than nginx.
    pub fn is_builtin(&self) -> bool {
        self.builtin.is_some()
    }

    pub(crate) fn start_with(cfg: &LabConfig, opts: &StartOptions<'_>) -> Result<Lab, LabError> {
        cfg.validate()?;
        if !is_executable(&opts.nginx) {
            return Err(LabError::NginxMissing {
                path: opts.nginx.clone(),
            });
        }
        let _lock = LIFECYCLE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(reason) = presence(cfg) {
            return Err(LabError::AlreadyRunning {
                name: cfg.name.clone(),
                reason,
            });
        }
        match build(cfg, opts) {
            Ok(lab) => Ok(lab),
            Err(err) => {
                // Remove what we made; the original error is the one worth reporting.
                let _ = teardown(cfg);
                Err(err)
            }
        }
    }

    /// The running lab described by the state file, or `None` when there is no state file.
    pub fn attach(cfg: &LabConfig) -> Result<Option<Lab>, LabError> {
        cfg.validate()?;
        let paths = StatePaths::new(&cfg.state_dir);
        let text = match fs::read_to_string(&paths.state) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(LabError::Io {
                    op: format!("read {}", paths.state.display()),
                    source,
                });
            }
        };
        let state = State::parse(&text).map_err(|reason| LabError::BadState {
            path: paths.state.clone(),
            reason,
        })?;
        if state.name != cfg.name {
            return Err(LabError::BadState {
                path: paths.state,
                reason: format!("belongs to lab {:?}, not {:?}", state.name, cfg.name),
            });
        }
        let nginx_pid = nginx::read_pid(&paths.pid)
            .map(|p| p as u32)
            .or(state.nginx_pid);
        Ok(Some(Lab {
            cfg: cfg.clone(),
            server_netns: state.server_netns,
            client_netns: state.client_netns,
            servers: lab_servers(),
            nginx_pid,
            builtin: None,
        }))
    }

    /// What is present of the lab with this config; probes both servers from the client
    /// namespace when it exists.
    pub fn status(cfg: &LabConfig) -> Result<LabStatus, LabError> {
        cfg.validate()?;
        let paths = StatePaths::new(&cfg.state_dir);
        let srv = cfg.server_netns();
        let cli = cfg.client_netns();
        let state_file_present = paths.state.exists();
        let server_netns_present = netns_exists(&srv);
        let client_netns_present = netns_exists(&cli);
        let nginx_pid = nginx::read_pid(&paths.pid)
            .filter(|&pid| nginx::is_lab_nginx(pid, &paths.conf, &netns::netns_path(&srv)));
        let nginx_alive = nginx_pid.is_some_and(nginx::pid_alive);
        let servers = lab_servers();
        let probes: Vec<Result<(), String>> = if client_netns_present {
            in_netns(&cli, || {
                servers
                    .iter()
                    .map(|s| http_check(s.addr, Duration::from_secs(1)))
                    .collect()
            })?
        } else {
            servers
                .iter()
                .map(|_| Err(format!("client namespace {cli} does not exist")))
                .collect()
        };
        let servers: Vec<ServerStatus> = servers
            .into_iter()
            .zip(probes)
            .map(|(server, probe)| ServerStatus {
                server,
                answering: probe.is_ok(),
                error: probe.err(),
            })
            .collect();
        let running = state_file_present
            && server_netns_present
            && client_netns_present
            && nginx_alive
            && servers.iter().all(|s| s.answering);
        Ok(LabStatus {
            name: cfg.name.clone(),
            running,
            state_dir: cfg.state_dir.clone(),
            state_file_present,
            server_netns: srv,
            server_netns_present,
            client_netns: cli,
            client_netns_present,
            nginx_pid: nginx_pid.map(|p| p as u32),
            nginx_alive,
            servers,
        })
    }

    /// The two servers: nodelay-on (:8080) and nodelay-off (:8081).
    pub fn servers(&self) -> &[LabServer] {
        &self.servers
    }

    /// The server with `tcp_nodelay` on or off.
    pub fn server(&self, tcp_nodelay: bool) -> Option<&LabServer> {
        self.servers.iter().find(|s| s.tcp_nodelay == tcp_nodelay)
    }

    /// Name of the client namespace.
    pub fn client_netns(&self) -> &str {
        &self.client_netns
    }

    /// Name of the server namespace.
    pub fn server_netns(&self) -> &str {
        &self.server_netns
    }

    /// PID of the nginx master process, when known.
    pub fn nginx_pid(&self) -> Option<u32> {
        self.nginx_pid
    }

    /// The config this lab was started or attached with.
    pub fn config(&self) -> &LabConfig {
        &self.cfg
    }

    /// `ip netns exec <client netns> <program>`: add arguments and run it.
    pub fn command_in_client(&self, program: &OsStr) -> Command {
        netns_command(&self.client_netns, program)
    }

    /// `ip netns exec <server netns> <program>`: add arguments and run it.
    pub fn command_in_server(&self, program: &OsStr) -> Command {
        netns_command(&self.server_netns, program)
    }

    /// Tears the lab down (see [`stop`]).
    pub fn stop(mut self) -> Result<(), LabError> {
        if let Some(servers) = self.builtin.take() {
            servers.stop();
        }
        stop(&self.cfg).map(|_| ())
    }
}

fn netns_command(netns: &str, program: &OsStr) -> Command {
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", netns]).arg(program);
    cmd
}

/// Idempotent teardown of everything a lab with this config may have left: nginx (by the PID in
/// its pid file — never by name — plus any nginx left inside the lab's server namespace),
/// the namespaces (the veth pair goes with them), and the files of the state dir. Works after a
/// crash. Returns a description of each thing it removed; empty when nothing was there.
pub fn stop(cfg: &LabConfig) -> Result<Vec<String>, LabError> {
    cfg.validate()?;
    let _lock = LIFECYCLE.lock().unwrap_or_else(|e| e.into_inner());
    teardown(cfg)
}

/// Holds a lab and stops it on drop (for `demo` and tests). Teardown errors on drop are printed
/// to stderr; call [`LabGuard::stop`] to handle them.
#[derive(Debug)]
pub struct LabGuard(Option<Lab>);

impl LabGuard {
    /// Takes ownership of `lab`; it is stopped when the guard is dropped.
    pub fn new(lab: Lab) -> Self {
        LabGuard(Some(lab))
    }

    /// The guarded lab.
    pub fn lab(&self) -> &Lab {
        self.0
            .as_ref()
            .expect("LabGuard holds a lab until dropped or stopped")
    }

    /// Stops the lab now and reports errors.
    pub fn stop(mut self) -> Result<(), LabError> {
        match self.0.take() {
            Some(lab) => lab.stop(),
            None => Ok(()),
        }
    }
}

impl Drop for LabGuard {
    fn drop(&mut self) {
        if let Some(lab) = self.0.take() {
            let name = lab.cfg.name.clone();
            if let Err(e) = lab.stop() {
                eprintln!("netdoctor lab {name}: {e}");
            }
        }
    }
}

/// Spawns a thread that, on SIGINT/SIGTERM/SIGHUP, tears down the lab with this config and exits
/// the process with status 130 — used by `demo` and `lab start` so Ctrl-C leaves nothing behind.
/// If the signal arrives while [`Lab::start`] runs, the teardown waits for it to finish first.
pub fn cleanup_on_signal(cfg: &LabConfig) -> Result<(), LabError> {
    use signal_hook::consts::signal::{SIGHUP, SIGINT, SIGTERM};
    cfg.validate()?;
    let mut signals =
        signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]).map_err(|source| {
            LabError::Io {
                op: "register SIGINT/SIGTERM/SIGHUP handlers".to_string(),
                source,
            }
        })?;
    let cfg = cfg.clone();
    std::thread::Builder::new()
        .name("netdoctor-lab-signals".to_string())
        .spawn(move || {
            if let Some(sig) = signals.forever().next() {
                let _lock = LIFECYCLE.lock().unwrap_or_else(|e| e.into_inner());
                match teardown(&cfg) {
                    Ok(removed) if removed.is_empty() => {
                        eprintln!(
                            "netdoctor lab {}: signal {sig}, nothing to remove",
                            cfg.name
                        )
                    }
                    Ok(removed) => eprintln!(
                        "netdoctor lab {}: signal {sig}, removed {}",
                        cfg.name,
                        removed.join(", ")
                    ),
                    Err(e) => eprintln!("netdoctor lab {}: signal {sig}: {e}", cfg.name),
                }
                std::process::exit(130);
            }
        })
        .map_err(|source| LabError::Io {
            op: "spawn signal thread".to_string(),
            source,
        })?;
    Ok(())
}

/// Why a lab with this config counts as present, or `None`.
fn presence(cfg: &LabConfig) -> Option<String> {
    let paths = StatePaths::new(&cfg.state_dir);
    let mut found = Vec::new();
    if paths.state.exists() {
        found.push(format!("state file {}", paths.state.display()));
    }
    for ns in [cfg.server_netns(), cfg.client_netns()] {
        if netns_exists(&ns) {
            found.push(format!("network namespace {ns}"));
        }
    }
    (!found.is_empty()).then(|| found.join(", "))
}

/// State dir, state file, both namespaces and the veth pair between them. Returns the server
/// and client namespace names.
fn build_network(cfg: &LabConfig) -> Result<(String, String), LabError> {
    let srv = cfg.server_netns();
    let cli = cfg.client_netns();
    let paths = StatePaths::new(&cfg.state_dir);

    // State dir first, with the state file, so a crash at any later point is visible to
    // `status` and cleaned by `stop`.
    create_dir(&paths.dir)?;
    write_file(
        &paths.state,
        &State {
            name: cfg.name.clone(),
            server_netns: srv.clone(),
            client_netns: cli.clone(),
            nginx_pid: None,
        }
        .render(),
    )?;

    // Namespaces and the veth pair between them.
    let srv_addr = format!("{SERVER_IP}/{PREFIX_LEN}");
    let cli_addr = format!("{CLIENT_IP}/{PREFIX_LEN}");
    netns::ip(&["netns", "add", &srv])?;
    netns::ip(&["netns", "add", &cli])?;
    netns::ip(&[
        "link", "add", "name", SERVER_IF, "netns", &srv, "type", "veth", "peer", "name", CLIENT_IF,
        "netns", &cli,
    ])?;
    for (ns, ifname, addr) in [(&srv, SERVER_IF, &srv_addr), (&cli, CLIENT_IF, &cli_addr)] {
        netns::ip(&["-n", ns, "addr", "add", addr, "dev", ifname])?;
        netns::ip(&["-n", ns, "link", "set", "lo", "up"])?;
        netns::ip(&["-n", ns, "link", "set", ifname, "up"])?;
    }
    Ok((srv, cli))
}

fn build(cfg: &LabConfig, opts: &StartOptions<'_>) -> Result<Lab, LabError> {
    let (srv, cli) = build_network(cfg)?;
    let paths = StatePaths::new(&cfg.state_dir);

    // nginx config and page.
    create_dir(&paths.html_dir)?;
    create_dir(&paths.temp_dir)?;
    write_file(&paths.page, DEFAULT_PAGE)?;
    let servers = lab_servers();
    let blocks: Vec<ServerBlock> = servers
        .iter()
        .map(|s| ServerBlock {
            ip: SERVER_IP,
            port: s.addr.port(),
            tcp_nodelay: s.tcp_nodelay,
        })
        .collect();
    write_file(&paths.conf, &nginx::render_config(&paths, &blocks))?;

    if let Some(hook) = opts.before_nginx {
        hook(&srv);
    }

    start_nginx(&srv, &paths, opts)?;
    let pid = wait_ready(&srv, &cli, &servers, &paths, opts.ready_timeout)?;

    write_file(
        &paths.state,
        &State {
            name: cfg.name.clone(),
            server_netns: srv.clone(),
            client_netns: cli.clone(),
            nginx_pid: Some(pid as u32),
        }
        .render(),
    )?;
    Ok(Lab {
        cfg: cfg.clone(),
        server_netns: srv,
        client_netns: cli,
        servers,
        nginx_pid: Some(pid as u32),
        builtin: None,
    })
}

/// Runs `ip netns exec <srv> nginx -p <dir>/ -e <error_log> -c <conf>`. nginx binds its ports
/// before daemonizing, so a bind or config error makes this command fail synchronously. Its
/// output goes to a file, not a pipe: the daemon must not keep our pipe open.
fn start_nginx(srv: &str, paths: &StatePaths, opts: &StartOptions<'_>) -> Result<(), LabError> {
    let log = fs::File::create(&paths.start_log).map_err(|source| LabError::Io {
        op: format!("create {}", paths.start_log.display()),
        source,
    })?;
    let log2 = log.try_clone().map_err(|source| LabError::Io {
        op: format!("dup {}", paths.start_log.display()),
        source,
    })?;
    let mut prefix = paths.dir.as_os_str().to_owned();
    prefix.push("/");
    let status = Command::new("ip")
        .args(["netns", "exec", srv])
        .arg(&opts.nginx)
        .arg("-p")
        .arg(&prefix)
        .arg("-e")
        .arg(&paths.error_log)
        .arg("-c")
        .arg(&paths.conf)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2)
        .status()
        .map_err(|source| LabError::Io {
            op: format!("run `ip netns exec {srv} {}`", opts.nginx.display()),
            source,
        })?;
    if !status.success() {
        // nginx prints its fatal errors on stderr (captured in the start log); when that is
        // empty, the error log may say more.
        let mut log = nginx::log_tail(&paths.start_log, 20);
        if log == "(empty)" || log.starts_with("(cannot read") {
            log = nginx::log_tail(&paths.error_log, 20);
        }
        return Err(LabError::NginxStart {
            netns: srv.to_string(),
            status: status.to_string(),
            log,
        });
    }
    Ok(())
}

/// Polls (bounded by `timeout`) until nginx's pid file names a live nginx and both servers answer
/// an HTTP GET from inside the client namespace. Returns the master PID.
fn wait_ready(
    srv: &str,
    cli: &str,
    servers: &[LabServer],
    paths: &StatePaths,
    timeout: Duration,
) -> Result<i32, LabError> {
    let started = Instant::now();
    let srv_path = netns::netns_path(srv);
    loop {
        let pid = nginx::read_pid(&paths.pid);
        let detail = match pid {
            None => format!("no pid in {}", paths.pid.display()),
            Some(pid) if !nginx::pid_alive(pid) => {
                // The daemon died: no point in waiting longer.
                return Err(not_ready(
                    srv,
                    started,
                    format!("nginx master {pid} exited"),
                    paths,
                ));
            }
            Some(pid) if !nginx::is_lab_nginx(pid, &paths.conf, &srv_path) => {
                format!(
                    "pid {pid} from {} is not this lab's nginx",
                    paths.pid.display()
                )
            }
            Some(pid) => {
                let probes = in_netns(cli, || {
                    servers
                        .iter()
                        .map(|s| {
                            http_check(s.addr, Duration::from_millis(500))
                                .map_err(|e| format!("{}: {e}", s.url))
                        })
                        .collect::<Vec<_>>()
                })?;
                let failures: Vec<String> = probes.into_iter().filter_map(|p| p.err()).collect();
                if failures.is_empty() {
                    return Ok(pid);
                }
                failures.join("; ")
            }
        };
        if started.elapsed() >= timeout {
            return Err(not_ready(srv, started, detail, paths));
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

fn not_ready(srv: &str, started: Instant, detail: String, paths: &StatePaths) -> LabError {
    LabError::NotReady {
        netns: srv.to_string(),
        waited_ms: started.elapsed().as_millis(),
        detail,
        error_log: paths.error_log.clone(),
        log: nginx::log_tail(&paths.error_log, 20),
    }
}

/// One HTTP/1.1 GET of `/` with `Connection: close`; Ok when the status is 200 and the body is
/// the lab page. Bounded: `timeout` per connect/read/write, at most 64 KiB read.
fn http_check(addr: SocketAddr, timeout: Duration) -> Result<(), String> {
    let mut stream =
        TcpStream::connect_timeout(&addr, timeout).map_err(|e| format!("connect {addr}: {e}"))?;
    stream
        .set_read_timeout(Some(timeout))
        .and_then(|_| stream.set_write_timeout(Some(timeout)))
        .map_err(|e| format!("set timeouts on {addr}: {e}"))?;
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: netdoctor-lab\r\nConnection: close\r\n\r\n")
        .map_err(|e| format!("send request to {addr}: {e}"))?;
    let mut response = Vec::new();
    stream
        .take(64 * 1024)
        .read_to_end(&mut response)
        .map_err(|e| format!("read response from {addr}: {e}"))?;
    let text = String::from_utf8_lossy(&response);
    let status_line = text.lines().next().unwrap_or("");
    if !status_line.starts_with("HTTP/1.1 200") {
        return Err(format!("{addr} answered {status_line:?}"));
    }
    if !text.ends_with(DEFAULT_PAGE) {
        return Err(format!("{addr} answered 200 without the lab page"));
    }
    Ok(())
}

/// Removes everything a lab with this config may have left. Caller holds `LIFECYCLE`.
fn teardown(cfg: &LabConfig) -> Result<Vec<String>, LabError> {
    let paths = StatePaths::new(&cfg.state_dir);
    let srv = cfg.server_netns();
    let cli = cfg.client_netns();
    let srv_path = netns::netns_path(&srv);
    let mut removed = Vec::new();
    let mut errors = Vec::new();

    // 1. nginx master, by the PID in its pid file, if that PID is this lab's nginx.
    if let Some(pid) = nginx::read_pid(&paths.pid)
        && nginx::pid_alive(pid)
        && nginx::is_lab_nginx(pid, &paths.conf, &srv_path)
    {
        if nginx::terminate(pid, STOP_GRACE) {
            removed.push(format!("nginx master process {pid}"));
        } else {
            errors.push(format!("nginx master process {pid} did not exit"));
        }
    }
    // 2. Any nginx still in the server namespace: workers of a killed master, or a master whose
    //    pid file was never written (crash during start). They are ours: we made the namespace.
    for pid in netns::netns_pids(&srv) {
        if nginx::pid_alive(pid) && nginx::is_lab_nginx(pid, &paths.conf, &srv_path) {
            if nginx::terminate(pid, Duration::from_secs(2)) {
                removed.push(format!("nginx process {pid}"));
            } else {
                errors.push(format!("nginx process {pid} did not exit"));
            }
        }
    }
    // 3. Namespaces; the veth pair lives only inside them and goes with them.
    let mut veth_gone = false;
    for ns in [&srv, &cli] {
        if !netns_exists(ns) {
            continue;
        }
        let lingering = netns::netns_pids(ns);
        match netns::ip(&["netns", "del", ns]) {
            Ok(()) => {
                veth_gone = true;
                if lingering.is_empty() {
                    removed.push(format!("network namespace {ns}"));
                } else {
                    removed.push(format!(
                        "network namespace {ns} (name only: processes {lingering:?} still use it)"
                    ));
                }
            }
            Err(e) => errors.push(e.to_string()),
        }
    }
    if veth_gone {
        removed.push(format!("veth pair {SERVER_IF}/{CLIENT_IF}"));
    }
    // 4. Files we wrote or nginx wrote, then the state dir if empty. Never a blind recursive
    //    delete of state_dir: it may have been pointed at a directory holding other files.
    if paths.dir.exists() {
        for file in [
            &paths.conf,
            &paths.pid,
            &paths.error_log,
            &paths.start_log,
            &paths.lock,
            &paths.page,
            &paths.state,
        ] {
            if let Err(e) = fs::remove_file(file)
                && e.kind() != std::io::ErrorKind::NotFound
            {
                errors.push(format!("remove {}: {e}", file.display()));
            }
        }
        if let Err(e) = fs::remove_dir_all(&paths.temp_dir)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            errors.push(format!("remove {}: {e}", paths.temp_dir.display()));
        }
        for dir in [&paths.html_dir, &paths.dir] {
            if let Err(e) = fs::remove_dir(dir)
                && e.kind() != std::io::ErrorKind::NotFound
            {
                errors.push(format!("remove {}: {e}", dir.display()));
            }
        }
        if !paths.dir.exists() {
            removed.push(format!("state dir {}", paths.dir.display()));
            // The default parent, /run/netdoctor, goes too once no lab uses it.
            if paths.dir.parent() == Some(Path::new(DEFAULT_STATE_PARENT)) {
                let _ = fs::remove_dir(DEFAULT_STATE_PARENT);
            }
        }
    }
    if errors.is_empty() {
        Ok(removed)
    } else {
        Err(LabError::Teardown { removed, errors })
    }
}

fn is_executable(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn create_dir(dir: &Path) -> Result<(), LabError> {
    fs::create_dir_all(dir)
        .and_then(|_| fs::set_permissions(dir, fs::Permissions::from_mode(0o755)))
        .map_err(|source| LabError::Io {
            op: format!("create directory {}", dir.display()),
            source,
        })
}

fn write_file(path: &Path, contents: &str) -> Result<(), LabError> {
    fs::write(path, contents)
        .and_then(|_| fs::set_permissions(path, fs::Permissions::from_mode(0o644)))
        .map_err(|source| LabError::Io {
            op: format!("write {}", path.display()),
            source,
        })
}

/// Contents of `lab.state`.
#[derive(Debug, PartialEq)]
struct State {
    name: String,
    server_netns: String,
    client_netns: String,
    nginx_pid: Option<u32>,
}

const STATE_HEADER: &str = "netdoctor-lab v1";

impl State {
    fn render(&self) -> String {
        let mut s = format!(
            "{STATE_HEADER}\nname={}\nserver_netns={}\nclient_netns={}\n",
            self.name, self.server_netns, self.client_netns
        );
        if let Some(pid) = self.nginx_pid {
            s.push_str(&format!("nginx_pid={pid}\n"));
        }
        s
    }

    fn parse(text: &str) -> Result<State, String> {
        let mut lines = text.lines();
        if lines.next() != Some(STATE_HEADER) {
            return Err(format!("first line is not {STATE_HEADER:?}"));
        }
        let (mut name, mut srv, mut cli, mut pid) = (None, None, None, None);
        for line in lines.filter(|l| !l.trim().is_empty()) {
            let (key, value) = line
                .split_once('=')
                .ok_or_else(|| format!("line {line:?} is not key=value"))?;
            match key {
                "name" => name = Some(value.to_string()),
                "server_netns" => srv = Some(value.to_string()),
                "client_netns" => cli = Some(value.to_string()),
                "nginx_pid" => {
                    pid = Some(
                        value
                            .parse::<u32>()
                            .map_err(|e| format!("nginx_pid {value:?}: {e}"))?,
                    )
                }
                _ => {} // unknown keys: written by a newer version, ignored
            }
        }
        let missing = |k: &str| format!("missing {k}");
        Ok(State {
            name: name.ok_or_else(|| missing("name"))?,
            server_netns: srv.ok_or_else(|| missing("server_netns"))?,
            client_netns: cli.ok_or_else(|| missing("client_netns"))?,
            nginx_pid: pid,
        })
    }
}

#[cfg(test)]
mod tests;
