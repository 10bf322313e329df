//! Starting a lab (namespaces, veth, nginx or the built-in server), attaching to a running one,
//! and the guard that stops it on drop.

use std::ffi::OsStr;
use std::fs;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::nginx::{self, ServerBlock, StatePaths};
use crate::readiness::{http_check, wait_ready};
use crate::state::{Owner, State, create_dir, write_file};
use crate::teardown::teardown;
use crate::{
    CLIENT_IF, CLIENT_IP, DEFAULT_NGINX, DEFAULT_PAGE, LIFECYCLE, LabConfig, LabError, LabServer,
    PREFIX_LEN, READY_TIMEOUT, SERVER_IF, SERVER_IP, builtin, in_netns, is_executable, lab_servers,
    netns, netns_exists, stop,
};

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
            let (srv, cli) = build_network(cfg, true)?;
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

/// Why a lab with this config counts as present, or `None`.
pub(crate) fn presence(cfg: &LabConfig) -> Option<String> {
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

/// State dir, state file (with this process as the owner; `builtin`: the servers are its
/// threads), both namespaces and the veth pair between them. Returns the server
/// and client namespace names.
pub(crate) fn build_network(cfg: &LabConfig, builtin: bool) -> Result<(String, String), LabError> {
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
            owner: Owner::current(),
            builtin,
            ..Default::default()
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

pub(crate) fn build(cfg: &LabConfig, opts: &StartOptions<'_>) -> Result<Lab, LabError> {
    let (srv, cli) = build_network(cfg, false)?;
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
            owner: Owner::current(),
            builtin: false,
            ..Default::default()
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
pub(crate) fn start_nginx(
    srv: &str,
    paths: &StatePaths,
    opts: &StartOptions<'_>,
) -> Result<(), LabError> {
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
