//! Teardown: remove everything a lab may have left, by PID and by name, idempotently.

use std::fs;
use std::path::Path;
use std::time::Duration;

use crate::nginx::{self, StatePaths};
use crate::{
    CLIENT_IF, DEFAULT_STATE_PARENT, LIFECYCLE, LabConfig, LabError, SERVER_IF, STOP_GRACE, netns,
    netns_exists,
};

/// Idempotent teardown of everything a lab with this config may have left: nginx (by the PID in
/// its pid file — never by name — plus any nginx left inside the lab's server namespace),
/// the namespaces (the veth pair goes with them), and the files of the state dir. Works after a
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
