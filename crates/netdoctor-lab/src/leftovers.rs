//! Labs netdoctor left behind: every lab with its state under a state parent (by default
//! `/run/netdoctor/lab-<name>`), found without knowing their names, listed, and removed.
//!
//! `netdoctor lab stop` without `--name` calls [`stop_all`]; `lab status` without `--name` lists
//! [`list_labs`]; `demo` calls [`remove_abandoned`] for its own lab (`nd-demo`) before starting,
//! so a demo that was killed (SIGKILL leaves no chance to clean up) does not block the next one.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::nginx::{self, StatePaths};
use crate::state::State;
use crate::{DEFAULT_STATE_PARENT, LabConfig, LabError, netns, stop};

/// A lab found under a state parent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabEntry {
    /// The lab's name (namespaces `<name>-srv`, `<name>-cli`).
    pub name: String,
    /// Its state dir.
    pub state_dir: PathBuf,
    /// The process that started it, when the state file says (files of older versions do not).
    pub owner_pid: Option<u32>,
    /// Whether that process still runs (same PID and start time).
    pub owner_alive: bool,
    /// The servers are the built-in reference server, threads of the owner: gone with it.
    pub builtin: bool,
    /// This lab's nginx master, when one runs.
    pub nginx_pid: Option<u32>,
    /// The lab case it runs (`lab start --case`), when it is one whose process serves it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<String>,
    /// Why the state file could not be read, when it could not (the lab is still listed, by
    /// the name in its directory, so it can be removed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_error: Option<String>,
}

impl LabEntry {
    /// The config that [`Lab::status`](crate::Lab::status) and [`stop`] take.
    pub fn config(&self) -> LabConfig {
        LabConfig {
            name: self.name.clone(),
            state_dir: self.state_dir.clone(),
        }
    }

    /// Whether something still serves the lab: the process that runs its built-in servers, or
    /// its nginx. A lab that is not serving is a leftover to remove.
    pub fn serving(&self) -> bool {
        if self.builtin || self.case.is_some() {
            self.owner_alive
        } else {
            self.nginx_pid.is_some()
        }
    }
}

/// One lab removed by [`stop_all`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoppedLab {
    /// The lab's name.
    pub name: String,
    /// What was removed (as [`stop`] describes it).
    pub removed: Vec<String>,
    /// Why the teardown is incomplete, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Every lab with its state under `/run/netdoctor`, by name.
pub fn list_labs() -> Result<Vec<LabEntry>, LabError> {
    list_labs_in(Path::new(DEFAULT_STATE_PARENT))
}

/// Every lab with its state dir (`lab-<name>`) under `parent`, sorted by name. A missing
/// `parent` means no lab.
pub fn list_labs_in(parent: &Path) -> Result<Vec<LabEntry>, LabError> {
    let dir = match fs::read_dir(parent) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(LabError::Io {
                op: format!("list {}", parent.display()),
                source,
            });
        }
    };
    let mut labs = Vec::new();
    for entry in dir.flatten() {
        let path = entry.path();
        let Some(dir_name) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.strip_prefix("lab-"))
            .map(str::to_string)
        else {
            continue;
        };
        if !path.is_dir() {
            continue;
        }
        labs.push(entry_of(&path, dir_name));
    }
    labs.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(labs)
}

fn entry_of(state_dir: &Path, dir_name: String) -> LabEntry {
    let paths = StatePaths::new(state_dir);
    let state = fs::read_to_string(&paths.state)
        .map_err(|e| format!("read {}: {e}", paths.state.display()))
        .and_then(|text| {
            State::parse(&text).map_err(|e| format!("read {}: {e}", paths.state.display()))
        });
    let (name, owner, builtin, case, state_error) = match state {
        Ok(s) => (s.name, s.owner, s.builtin, s.case, None),
        Err(e) => (dir_name, None, false, None, Some(e)),
    };
    let srv_path = netns::netns_path(&format!("{name}-srv"));
    let nginx_pid = nginx::read_pid(&paths.pid)
        .filter(|&pid| nginx::pid_alive(pid) && nginx::is_lab_nginx(pid, &paths.conf, &srv_path))
        .map(|p| p as u32);
    LabEntry {
        name,
        state_dir: state_dir.to_path_buf(),
        owner_pid: owner.map(|o| o.pid),
        owner_alive: owner.is_some_and(|o| o.alive()),
        builtin,
        nginx_pid,
        case,
        state_error,
    }
}

/// Removes every lab with its state under `/run/netdoctor` (see [`stop_all_in`]).
pub fn stop_all() -> Result<Vec<StoppedLab>, LabError> {
    stop_all_in(Path::new(DEFAULT_STATE_PARENT))
}

/// Removes every lab with its state dir under `parent`, running or not, each as [`stop`] does
/// (nginx by PID, namespaces, files). One lab that cannot be removed completely does not keep
/// the others: its error is in its [`StoppedLab`]. Empty when there was none.
pub fn stop_all_in(parent: &Path) -> Result<Vec<StoppedLab>, LabError> {
    let mut out = Vec::new();
    for lab in list_labs_in(parent)? {
        let (removed, error) = match stop(&lab.config()) {
            Ok(removed) => (removed, None),
            Err(LabError::Teardown { removed, errors }) => (removed, Some(errors.join("; "))),
            Err(e) => (Vec::new(), Some(e.to_string())),
        };
        out.push(StoppedLab {
            name: lab.name,
            removed,
            error,
        });
    }
    Ok(out)
}

/// For a lab that lives only as long as the process that started it (`demo`'s): when a lab with
/// this config is present and that process has exited (killed before it could clean up), removes
/// it and returns what was removed; empty when there is no such lab. When the process that
/// started it still runs, [`LabError::AlreadyRunning`] names it.
pub fn remove_abandoned(cfg: &LabConfig) -> Result<Vec<String>, LabError> {
    let paths = StatePaths::new(&cfg.state_dir);
    let present = paths.state.exists()
        || crate::netns_exists(&cfg.server_netns())
        || crate::netns_exists(&cfg.client_netns());
    if !present {
        return Ok(Vec::new());
    }
    let entry = entry_of(&cfg.state_dir, cfg.name.clone());
    if entry.owner_alive {
        return Err(LabError::AlreadyRunning {
            name: cfg.name.clone(),
            reason: format!(
                "started by process {}, which still runs",
                entry.owner_pid.unwrap_or_default()
            ),
        });
    }
    stop(cfg)
}
