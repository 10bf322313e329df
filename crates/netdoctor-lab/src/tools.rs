//! Which external tools (Debian packages) are installed, for tests and lab cases that run them.
//! A test whose tool is missing skips with one line naming the tool and its package:
//!
//! ```no_run
//! if !netdoctor_lab::tools::have(&[("hping3", "hping3"), ("iptables", "iptables")]) {
//!     return; // printed "skipped: needs hping3 (apt-get install hping3)"
//! }
//! ```
//!
//! `cargo xtask test` installs every package the suite needs (crates/xtask lists them).

use std::path::{Path, PathBuf};

/// `name` on PATH, or in /usr/sbin and /sbin (where Debian puts nginx, iptables and bpftool,
/// which a user's PATH may lack).
pub fn find(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The skip line for the first of `tools` (tool, Debian package) that is missing:
/// `needs TOOL (apt-get install PKG)`; `None` when all are there.
pub fn missing(tools: &[(&str, &str)]) -> Option<String> {
    tools
        .iter()
        .find(|(tool, _)| find(tool).is_none())
        .map(|(tool, pkg)| format!("needs {tool} (apt-get install {pkg})"))
}

/// True when every tool is there; otherwise prints `skipped: needs TOOL (apt-get install PKG)`
/// to stderr and returns false.
pub fn have(tools: &[(&str, &str)]) -> bool {
    match missing(tools) {
        Some(why) => {
            eprintln!("skipped: {why}");
            false
        }
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_sh_and_names_a_missing_tool_with_its_package() {
        assert!(find("sh").is_some());
        assert_eq!(missing(&[("sh", "dash")]), None);
        assert_eq!(
            missing(&[("sh", "dash"), ("nd-no-such-tool", "nd-pkg")]).as_deref(),
            Some("needs nd-no-such-tool (apt-get install nd-pkg)")
        );
        assert!(!have(&[("nd-no-such-tool", "nd-pkg")]));
    }
}
