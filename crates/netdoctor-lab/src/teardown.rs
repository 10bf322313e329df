//! Teardown: remove everything a lab may have left, by PID and by name, idempotently.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::nginx::{self, StatePaths};
use crate::state::State;
use crate::{
    CLIENT_IF, DEFAULT_STATE_PARENT, LIFECYCLE, LabConfig, LabError, SERVER_IF, STOP_GRACE, netns,
    netns_exists,
};

/// Where `ip netns exec` finds a namespace's own `/etc` files.
pub(crate) const ETC_NETNS: &str = "/etc/netns";

/// Idempotent teardown of everything a lab with this config may have left: the processes its
/// state file records (a case's process, a bounded flood: by PID and start time, never by
/// name), nginx (by the PID in its pid file, plus any nginx left inside the lab's server
/// namespace), the namespaces (the veth pairs, sysctls and iptables rules inside them go with
/// them), the `/etc/netns/<ns>` dirs it wrote, and the files of the state dir. Works after a
/// crash. Returns a description of each thing it removed; empty when nothing was there.
pub fn stop(cfg: &LabConfig) -> Result<Vec<String>, LabError> {
    cfg.validate()?;
    let _lock = LIFECYCLE.lock().unwrap_or_else(|e| e.into_inner());
    teardown(cfg)
}

/// Removes everything a lab with this config may have left. Caller holds `LIFECYCLE`.
pub(crate) fn teardown(cfg: &LabConfig) -> Result<Vec<String>, LabError> {
    let paths = StatePaths::new(&cfg.state_dir);
    let srv = cfg.server_netns();
    let cli = cfg.client_netns();
    let srv_path = netns::netns_path(&srv);
    let mut removed = Vec::new();
    let mut errors = Vec::new();
    let state = fs::read_to_string(&paths.state)
        .ok()
        .and_then(|t| State::parse(&t).ok())
        .filter(|s| s.name == cfg.name)
        .unwrap_or_default();
    let mut namespaces = vec![srv.clone(), cli.clone()];
    for ns in &state.extra_netns {
        if !namespaces.contains(ns) {
            namespaces.push(ns.clone());
        }
    }
    // What is there before anything ends: a case's process removes its lab itself on SIGTERM,
    // so what it removed is reported from this list.
    let present_ns: Vec<String> = namespaces
        .iter()
        .filter(|ns| netns_exists(ns))
        .cloned()
        .collect();
    let etc_dirs: Vec<PathBuf> = state
        .etc_netns
        .iter()
        .map(|ns| Path::new(ETC_NETNS).join(ns))
        .collect();
    let present_etc: Vec<&PathBuf> = etc_dirs.iter().filter(|d| d.exists()).collect();
    let dir_was_there = paths.dir.exists();

    // 0. Processes the state file records (never this one: a case's process runs this on
    //    SIGTERM), each only if the same PID still has the same start time.
    for (owner, label) in &state.procs {
        if owner.pid == std::process::id() || !owner.alive() {
            continue;
        }
        if nginx::terminate(owner.pid as i32, STOP_GRACE) {
            removed.push(format!("{label} process {}", owner.pid));
        } else {
            errors.push(format!("{label} process {} did not exit", owner.pid));
        }
    }

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
    // 3. Namespaces; the veth pairs (and sysctls, iptables rules) live only inside them and go
    //    with them.
    for ns in &present_ns {
        let lingering = netns::netns_pids(ns);
        match netns::ip(&["netns", "del", ns]) {
            Ok(()) if !lingering.is_empty() => removed.push(format!(
                "network namespace {ns} (name only: processes {lingering:?} still use it)"
            )),
            Ok(()) => removed.push(format!("network namespace {ns}")),
            // Gone meanwhile: the case's process removed it when it ended.
            Err(_) if !netns_exists(ns) => removed.push(format!("network namespace {ns}")),
            Err(e) => errors.push(e.to_string()),
        }
    }
    if !present_ns.is_empty() {
        if state.case.is_some() {
            removed.push(
                "the veth pairs, sysctls and iptables rules inside those namespaces".to_string(),
            );
        } else {
            removed.push(format!("veth pair {SERVER_IF}/{CLIENT_IF}"));
        }
    }
    // 3b. /etc/netns/<ns>: only the resolv.conf the lab wrote, then the dir if empty.
    for dir in &etc_dirs {
        let conf = dir.join("resolv.conf");
        if let Err(e) = fs::remove_file(&conf)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            errors.push(format!("remove {}: {e}", conf.display()));
        }
        match fs::remove_dir(dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                errors.push(format!("remove {}: {e}", dir.display()))
            }
            _ if present_etc.contains(&dir) => removed.push(format!("{}", dir.display())),
            _ => {}
        }
    }
    // 4. Files we wrote or nginx wrote, then the state dir if empty. Never a blind recursive
    //    delete of state_dir: it may have been pointed at a directory holding other files.
    if dir_was_there {
        for file in [
            &paths.case_log,
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
    }
    if dir_was_there && !paths.dir.exists() {
        removed.push(format!("state dir {}", paths.dir.display()));
        // The default parent, /run/netdoctor, goes too once no lab uses it.
        if paths.dir.parent() == Some(Path::new(DEFAULT_STATE_PARENT)) {
            let _ = fs::remove_dir(DEFAULT_STATE_PARENT);
        }
    }
    if errors.is_empty() {
        Ok(removed)
    } else {
        Err(LabError::Teardown { removed, errors })
    }
}
