//! The lab's error type: each variant names the operation and what it concerns.

use std::path::PathBuf;

/// Errors of the lab.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// The nginx binary is not installed.
    #[error("nginx not found: install it with `apt-get install nginx-light` (looked for {path})")]
    NginxMissing { path: PathBuf },
    /// A lab with this name exists already (state file or namespaces present).
    #[error(
        "lab {name:?} is already running ({reason}); run `netdoctor lab stop --name {name}` first"
    )]
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
    /// Labs create network namespaces: root only.
    #[error("lab case {case} needs root: it creates network namespaces (run it with sudo)")]
    NeedsRoot { case: String },
    /// A lab case's process failed to start or to get ready.
    #[error("start lab case {case}: {detail}\ncase log:\n{log}")]
    CaseStart {
        case: String,
        detail: String,
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
