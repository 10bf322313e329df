//! The state dir's files: `lab.state` (hand-written `key=value`, see the crate docs) and the
//! helpers that write files with fixed permissions.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::LabError;

pub(crate) fn create_dir(dir: &Path) -> Result<(), LabError> {
    fs::create_dir_all(dir)
        .and_then(|_| fs::set_permissions(dir, fs::Permissions::from_mode(0o755)))
        .map_err(|source| LabError::Io {
            op: format!("create directory {}", dir.display()),
            source,
        })
}

pub(crate) fn write_file(path: &Path, contents: &str) -> Result<(), LabError> {
    fs::write(path, contents)
        .and_then(|_| fs::set_permissions(path, fs::Permissions::from_mode(0o644)))
        .map_err(|source| LabError::Io {
            op: format!("write {}", path.display()),
            source,
        })
}

/// Contents of `lab.state`.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct State {
    pub(crate) name: String,
    pub(crate) server_netns: String,
    pub(crate) client_netns: String,
    pub(crate) nginx_pid: Option<u32>,
    /// The process that started the lab (absent in files of older versions).
    pub(crate) owner: Option<Owner>,
    /// The servers are the built-in reference server: threads of the owner, gone with it.
    pub(crate) builtin: bool,
    /// The lab case (`lab start --case`), when the lab runs one; `None` for the reference lab.
    pub(crate) case: Option<String>,
    /// Processes the lab started and must end on stop (the case process, a bounded flood), by
    /// PID and start time, each with a label.
    pub(crate) procs: Vec<(Owner, String)>,
    /// Network namespaces of the lab beyond `<name>-srv` and `<name>-cli` (routers, attacker).
    pub(crate) extra_netns: Vec<String>,
    /// `/etc/netns/<ns>` dirs the lab wrote (a namespace's own resolv.conf).
    pub(crate) etc_netns: Vec<String>,
}

/// A process, by PID and start time (`/proc/<pid>/stat` field 22, clock ticks since boot), so a
/// reused PID is not mistaken for the process that started a lab.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Owner {
    pub(crate) pid: u32,
    pub(crate) start: u64,
}

impl Owner {
    /// This process.
    pub(crate) fn current() -> Option<Owner> {
        Owner::of(std::process::id())
    }

    /// A live process by PID.
    pub(crate) fn of(pid: u32) -> Option<Owner> {
        Some(Owner {
            pid,
            start: start_time(pid)?,
        })
    }

    /// Whether that process still runs (same PID, same start time, not a zombie).
    pub(crate) fn alive(&self) -> bool {
        start_time(self.pid) == Some(self.start)
    }
}

/// Start time of a live (non-zombie) process.
fn start_time(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid …`: comm may hold spaces and parentheses; split after the last ')'.
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    if fields.next()? == "Z" {
        return None;
    }
    // `rest` starts at field 3 (state); start time is field 22.
    fields.nth(18)?.parse().ok()
}

pub(crate) const STATE_HEADER: &str = "netdoctor-lab v1";

impl State {
    pub(crate) fn render(&self) -> String {
        let mut s = format!(
            "{STATE_HEADER}\nname={}\nserver_netns={}\nclient_netns={}\n",
            self.name, self.server_netns, self.client_netns
        );
        if let Some(pid) = self.nginx_pid {
            s.push_str(&format!("nginx_pid={pid}\n"));
        }
        if let Some(o) = self.owner {
            s.push_str(&format!("owner_pid={}\nowner_start={}\n", o.pid, o.start));
        }
        if self.builtin {
            s.push_str("servers=builtin\n");
        }
        if let Some(case) = &self.case {
            s.push_str(&format!("case={case}\n"));
        }
        for (o, label) in &self.procs {
            s.push_str(&format!("proc={}:{}:{label}\n", o.pid, o.start));
        }
        for ns in &self.extra_netns {
            s.push_str(&format!("netns={ns}\n"));
        }
        for ns in &self.etc_netns {
            s.push_str(&format!("etc_netns={ns}\n"));
        }
        s
    }

    pub(crate) fn parse(text: &str) -> Result<State, String> {
        let mut lines = text.lines();
        if lines.next() != Some(STATE_HEADER) {
            return Err(format!("first line is not {STATE_HEADER:?}"));
        }
        let (mut name, mut srv, mut cli, mut pid) = (None, None, None, None);
        let (mut owner_pid, mut owner_start, mut builtin) = (None, None, false);
        let (mut case, mut procs, mut extra_netns, mut etc_netns) =
            (None, Vec::new(), Vec::new(), Vec::new());
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
                "owner_pid" => owner_pid = value.parse::<u32>().ok(),
                "owner_start" => owner_start = value.parse::<u64>().ok(),
                "servers" => builtin = value == "builtin",
                "case" => case = Some(value.to_string()),
                "proc" => procs.push(parse_proc(value)?),
                "netns" => extra_netns.push(checked_netns(value)?),
                "etc_netns" => etc_netns.push(checked_netns(value)?),
                _ => {} // unknown keys: written by a newer version, ignored
            }
        }
        let missing = |k: &str| format!("missing {k}");
        Ok(State {
            name: name.ok_or_else(|| missing("name"))?,
            server_netns: srv.ok_or_else(|| missing("server_netns"))?,
            client_netns: cli.ok_or_else(|| missing("client_netns"))?,
            nginx_pid: pid,
            owner: match (owner_pid, owner_start) {
                (Some(pid), Some(start)) => Some(Owner { pid, start }),
                _ => None,
            },
            builtin,
            case,
            procs,
            extra_netns,
            etc_netns,
        })
    }
}

/// `pid:start:label`.
fn parse_proc(value: &str) -> Result<(Owner, String), String> {
    let mut parts = value.splitn(3, ':');
    let pid = parts.next().and_then(|p| p.parse::<u32>().ok());
    let start = parts.next().and_then(|p| p.parse::<u64>().ok());
    match (pid, start) {
        (Some(pid), Some(start)) if pid > 1 => Ok((
            Owner { pid, start },
            parts.next().unwrap_or("process").to_string(),
        )),
        _ => Err(format!("proc {value:?} is not pid:start:label")),
    }
}

/// A namespace name from the state file, checked as at creation (it becomes a path).
fn checked_netns(value: &str) -> Result<String, String> {
    crate::netns::check_netns_name(value)
        .map(|_| value.to_string())
        .map_err(|e| e.to_string())
}
