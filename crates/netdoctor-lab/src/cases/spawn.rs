//! `lab start --case`: starts the case's process detached (its own session, so a closed terminal
//! or Ctrl-C in it does not end the lab) and waits for its ready line.

use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use super::{Case, CaseInfo};
use crate::lifecycle::presence;
use crate::nginx::{self, StatePaths};
use crate::state::create_dir;
use crate::{LabConfig, LabError, stop};

/// How long `start_case` waits for the case's process to say it is ready (the route lab runs
/// some 60 `ip` commands).
pub const CASE_READY_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs `program args…` (the netdoctor binary's hidden `lab run-case`, which calls
/// [`super::run::run_case`]) in a new session with stdin closed, stdout a pipe for its ready
/// line and stderr the state dir's `case.log`, and waits for `ready`. On an error line, an early
/// exit or a timeout, ends that process (by the PID it was spawned with), removes what it built
/// and returns the error with the log's tail.
pub fn start_case(
    cfg: &LabConfig,
    case: Case,
    program: &Path,
    args: &[OsString],
) -> Result<CaseInfo, LabError> {
    cfg.validate()?;
    // SAFETY: geteuid has no preconditions, touches no memory and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err(LabError::NeedsRoot {
            case: case.name().to_string(),
        });
    }
    if let Some(reason) = presence(cfg) {
        return Err(LabError::AlreadyRunning {
            name: cfg.name.clone(),
            reason,
        });
    }
    let paths = StatePaths::new(&cfg.state_dir);
    create_dir(&paths.dir)?;
    let log = std::fs::File::create(&paths.case_log).map_err(|source| LabError::Io {
        op: format!("create {}", paths.case_log.display()),
        source,
    })?;
    let mut cmd = Command::new(program);
    // `/` as its working directory: it must not hold the caller's directory busy for its life.
    cmd.args(args)
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log);
    // SAFETY: setsid(2) is async-signal-safe and touches no memory of this process; it runs in
    // the forked child before exec, making it the leader of a new session without a terminal.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().map_err(|source| LabError::Io {
        op: format!("start the case's process {}", program.display()),
        source,
    })?;
    let stdout = child.stdout.take().expect("stdout is piped");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let got = BufReader::new(stdout).read_line(&mut line).map(|_| line);
        let _ = tx.send(got);
    });
    let failure = match rx.recv_timeout(CASE_READY_TIMEOUT) {
        Ok(Ok(line)) if line.trim() == "ready" => {
            let mut info = case.info(cfg);
            info.pid = Some(child.id());
            return Ok(info);
        }
        Ok(Ok(line)) if line.is_empty() => "its process exited before it was ready".to_string(),
        Ok(Ok(line)) => line.trim().trim_start_matches("error: ").to_string(),
        Ok(Err(e)) => format!("read its ready line: {e}"),
        Err(_) => format!(
            "not ready after {} s",
            CASE_READY_TIMEOUT.as_secs_f64().round()
        ),
    };
    // The process we spawned, by its PID: it may be done already (then this only reaps it).
    let _ = child.kill();
    let _ = child.wait();
    let log = nginx::log_tail(&paths.case_log, 20);
    let _ = stop(cfg);
    Err(LabError::CaseStart {
        case: case.name().to_string(),
        detail: failure,
        log,
    })
}
