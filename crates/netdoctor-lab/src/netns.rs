//! Network namespace helpers: the `ip` command (iproute2) for creating and deleting namespaces and
//! links, and [`in_netns`] for running code (e.g. opening a socket) inside a namespace.
//!
//! Namespaces, veth pairs and addresses are managed by running `ip` through
//! [`std::process::Command`] rather than speaking rtnetlink ourselves: the commands are the ones an
//! SRE would type (`ip netns add`, `ip link add ... type veth`), errors come back as `ip`'s own
//! messages, and a half-built lab can be inspected and cleaned by hand with the same tool.
//! [`in_netns`] is hand-written because it is a single `setns(2)` call on a fresh thread; no crate
//! in the dependency set offers it.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::LabError;

/// Where `ip netns add` bind-mounts named namespaces.
pub const NETNS_RUN_DIR: &str = "/run/netns";

/// Path of the bind mount of a named network namespace.
pub fn netns_path(name: &str) -> PathBuf {
    Path::new(NETNS_RUN_DIR).join(name)
}

/// Whether the named network namespace exists (its bind mount is present).
pub fn netns_exists(name: &str) -> bool {
    netns_path(name).exists()
}

/// Rejects namespace names that could escape `/run/netns` or confuse `ip`.
pub(crate) fn check_netns_name(name: &str) -> Result<(), LabError> {
    let ok = !name.is_empty()
        && name != "."
        && name != ".."
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
    if ok {
        Ok(())
    } else {
        Err(LabError::InvalidName {
            name: name.to_string(),
            reason: "use 1-64 characters from [A-Za-z0-9._-]".to_string(),
        })
    }
}

/// Runs `f` on a fresh thread that has joined the network namespace `name` (`/run/netns/<name>`)
/// with `setns(fd, CLONE_NEWNET)`, and returns its result.
///
/// Only that thread changes namespace; the caller's thread and the rest of the process stay where
/// they are, and the thread ends when `f` returns, so no pooled thread is ever left in the wrong
/// namespace. Sockets created inside `f` belong to the namespace for their whole life and may be
/// returned and used from any thread. Threads that `f` spawns inherit the namespace (clone(2)
/// copies the calling thread's namespaces); threads that existed before (pools) do not.
/// A panic in `f` is propagated to the caller.
pub fn in_netns<T, F>(name: &str, f: F) -> Result<T, LabError>
where
    T: Send,
    F: FnOnce() -> T + Send,
{
    check_netns_name(name)?;
    let path = netns_path(name);
    let file = File::open(&path).map_err(|source| LabError::Io {
        op: format!("open network namespace {}", path.display()),
        source,
    })?;
    let joined = std::thread::scope(|scope| {
        scope
            .spawn(move || {
                // SAFETY: `file` is an open descriptor of a network namespace bind mount and stays
                // open for the duration of the call; setns(2) with CLONE_NEWNET changes only the
                // network namespace of the calling thread, which is this scoped thread.
                let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
                if rc != 0 {
                    return Err(LabError::Io {
                        op: format!("setns into network namespace {}", path.display()),
                        source: std::io::Error::last_os_error(),
                    });
                }
                drop(file);
                Ok(f())
            })
            .join()
    });
    match joined {
        Ok(result) => result,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// Runs `ip <args>` and turns a failure into [`LabError::Command`] with `ip`'s stderr.
pub(crate) fn ip(args: &[&str]) -> Result<(), LabError> {
    run("ip", args).map(|_| ())
}

/// Runs a program with arguments, stdin closed, and returns its stdout. A non-zero exit becomes
/// [`LabError::Command`] naming the full command line.
pub(crate) fn run(program: &str, args: &[&str]) -> Result<String, LabError> {
    let cmdline = std::iter::once(program)
        .chain(args.iter().copied())
        .collect::<Vec<_>>()
        .join(" ");
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|source| LabError::Io {
            op: format!("run `{cmdline}`"),
            source,
        })?;
    if !out.status.success() {
        return Err(LabError::Command {
            command: cmdline,
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// PIDs of the processes living in the named namespace (`ip netns pids`). Empty when the
/// namespace does not exist.
pub(crate) fn netns_pids(name: &str) -> Vec<i32> {
    if !netns_exists(name) {
        return Vec::new();
    }
    run("ip", &["netns", "pids", name])
        .map(|out| {
            out.split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn netns_names_are_checked() {
        assert!(check_netns_name("netdoctor-srv").is_ok());
        assert!(check_netns_name("a.b_c-1").is_ok());
        for bad in ["", ".", "..", "a/b", "../etc", "a b", "x\n"] {
            assert!(check_netns_name(bad).is_err(), "{bad:?} accepted");
        }
        assert!(check_netns_name(&"a".repeat(65)).is_err());
    }

    #[test]
    fn in_netns_missing_namespace_is_an_error_naming_the_path() {
        let err = in_netns("netdoctor-does-not-exist-xyz", || 1).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("/run/netns/netdoctor-does-not-exist-xyz"),
            "{msg}"
        );
    }

    #[test]
    fn in_netns_rejects_path_escapes() {
        assert!(matches!(
            in_netns("../proc", || 1),
            Err(LabError::InvalidName { .. })
        ));
    }
}
