//! What is present of a lab (`netdoctor lab status`).

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::cases::{Case, CaseInfo};
use crate::nginx::{self, StatePaths};
use crate::readiness::http_check;
use crate::state::State;
use crate::{Lab, LabConfig, LabError, LabServer, in_netns, lab_servers, netns, netns_exists};

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
    /// The lab case it runs (`lab start --case`; not for the reference lab).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub case: Option<CaseStatus>,
}

/// A running lab case in [`LabStatus`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CaseStatus {
    #[serde(flatten)]
    pub info: CaseInfo,
    /// Whether the case's process (its `pid`) still runs.
    pub process_alive: bool,
    /// The lab's namespaces that are missing.
    pub missing_netns: Vec<String>,
    /// Every process the lab recorded (the case's, a flood's), and whether each still runs.
    #[serde(default)]
    pub processes: Vec<CaseProcess>,
}

/// A process a lab case started.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CaseProcess {
    pub label: String,
    pub pid: u32,
    pub alive: bool,
}

impl LabStatus {
    /// Whether anything of the lab exists (state file, a namespace, or nginx).
    pub fn anything_present(&self) -> bool {
        self.state_file_present
            || self.server_netns_present
            || self.client_netns_present
            || self.nginx_alive
            || self.case.as_ref().is_some_and(|c| c.process_alive)
    }
}

/// Human-readable status, several lines, no trailing newline.
impl std::fmt::Display for LabStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let present = |yes: bool| if yes { "present" } else { "absent" };
        let verdict = if self.running {
            "running".to_string()
        } else if self.anything_present() {
            format!(
                "broken (partly present; `netdoctor lab stop --name {}` removes the rest)",
                self.name
            )
        } else {
            "not running".to_string()
        };
        write!(f, "lab '{}': {verdict}", self.name)?;
        if !self.anything_present() {
            return Ok(());
        }
        if let Some(c) = &self.case {
            let i = &c.info;
            write!(f, "\n  case        {} ({})", i.case, i.summary)?;
            write!(
                f,
                "\n  state dir   {} (state file {})",
                self.state_dir.display(),
                present(self.state_file_present)
            )?;
            write!(f, "\n  namespaces  {}", i.namespaces.join(", "))?;
            if !c.missing_netns.is_empty() {
                write!(f, " (missing: {})", c.missing_netns.join(", "))?;
            }
            match (i.pid, c.process_alive) {
                (Some(pid), true) => write!(f, "\n  process     pid {pid}, alive")?,
                (Some(pid), false) => write!(f, "\n  process     pid {pid}, not running")?,
                (None, _) => write!(f, "\n  process     unknown")?,
            }
            for p in c.processes.iter().filter(|p| p.label != "case") {
                let state = if p.alive { "running" } else { "ended" };
                write!(f, "\n  {:<11} pid {}, {state}", p.label, p.pid)?;
            }
            write!(f, "\n  diagnose    {}", i.command)?;
            write!(f, "\n  expect      {}", i.expect.join(", "))?;
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

impl Lab {
    /// What is present of the lab with this config; probes both servers from the client
    /// namespace when it exists.
    pub fn status(cfg: &LabConfig) -> Result<LabStatus, LabError> {
        cfg.validate()?;
        if let Some(status) = case_status(cfg)? {
            return Ok(status);
        }
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
            case: None,
        })
    }
}

/// The status of a lab that runs a case in its own process, `None` for other labs.
fn case_status(cfg: &LabConfig) -> Result<Option<LabStatus>, LabError> {
    let paths = StatePaths::new(&cfg.state_dir);
    let Some(state) = std::fs::read_to_string(&paths.state)
        .ok()
        .and_then(|t| State::parse(&t).ok())
        .filter(|s| s.name == cfg.name)
    else {
        return Ok(None);
    };
    let Some(case) = state.case.as_deref().and_then(Case::parse) else {
        return Ok(None);
    };
    let mut info = case.info(cfg);
    let owner = state
        .procs
        .iter()
        .find(|(_, label)| label == "case")
        .map(|(o, _)| *o);
    info.pid = owner.map(|o| o.pid);
    let process_alive = owner.is_some_and(|o| o.alive());
    let missing_netns: Vec<String> = info
        .namespaces
        .iter()
        .filter(|n| !netns_exists(n))
        .cloned()
        .collect();
    let (srv, cli) = (cfg.server_netns(), cfg.client_netns());
    Ok(Some(LabStatus {
        name: cfg.name.clone(),
        running: process_alive && missing_netns.is_empty(),
        state_dir: cfg.state_dir.clone(),
        state_file_present: true,
        server_netns_present: netns_exists(&srv),
        server_netns: srv,
        client_netns_present: netns_exists(&cli),
        client_netns: cli,
        nginx_pid: None,
        nginx_alive: false,
        servers: Vec::new(),
        case: Some(CaseStatus {
            info,
            process_alive,
            missing_netns,
            processes: state
                .procs
                .iter()
                .map(|(o, label)| CaseProcess {
                    label: label.clone(),
                    pid: o.pid,
                    alive: o.alive(),
                })
                .collect(),
        }),
    }))
}
