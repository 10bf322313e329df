//! The Debian package (issue 26): `crates/netdoctor/pkg/build-deb.sh` (what `cargo xtask deb`
//! runs after building) packages the binary this test run built; the package installs with
//! `dpkg -i`, the installed binary says its version and analyzes a committed capture, `man
//! netdoctor-diagnose` renders, bash loads the installed completions, and `dpkg --purge` leaves
//! none of the package's files behind.
//!
//! Skips (one line) without root, dpkg, man or cargo-deb, and when a netdoctor package or a
//! /usr/bin/netdoctor is already on the machine (the test must not replace a real install).

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const PKG: &str = "netdoctor";

fn run(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn cargo_deb() -> Option<PathBuf> {
    netdoctor_lab::tools::find("cargo-deb").or_else(|| {
        let home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
        let p = home.join("bin/cargo-deb");
        p.exists().then_some(p)
    })
}

fn installed() -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${db:Status-Status}", PKG])
        .output()
        .is_ok_and(|o| stdout(&o).trim() == "installed")
}

/// Purges the package when the test ends, also when an assertion failed half-way.
struct Purge;

impl Drop for Purge {
    fn drop(&mut self) {
        let _ = Command::new("dpkg").args(["--purge", PKG]).output();
    }
}

#[test]
fn the_package_installs_works_and_removes_cleanly() {
    let _turn = crate::common::file_turn(file!());
    if !is_root() {
        eprintln!("skipped: needs root (dpkg -i)");
        return;
    }
    if !netdoctor_lab::tools::have(&[("dpkg", "dpkg"), ("man", "man-db")]) {
        return;
    }
    if cargo_deb().is_none() {
        eprintln!(
            "skipped: needs cargo-deb (cargo install --locked cargo-deb; cargo xtask setup installs it)"
        );
        return;
    }
    if installed() || Path::new("/usr/bin/netdoctor").exists() {
        eprintln!("skipped: a netdoctor package or /usr/bin/netdoctor is already installed here");
        return;
    }
    // The binary this test run built: <target>/release/netdoctor.
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_netdoctor"));
    let target = bin.parent().and_then(Path::parent).expect("target dir");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("pkg/build-deb.sh");
    let mut path = std::env::var("PATH").unwrap_or_default();
    if let Some(dir) = cargo_deb().as_deref().and_then(Path::parent) {
        path = format!("{}:{path}", dir.display());
    }
    // --fast: lighter compression; the test checks contents, not the archive size.
    let o = run(Command::new(&script)
        .arg(target)
        .arg("--fast")
        .env("PATH", path));
    assert!(o.status.success(), "build-deb.sh failed:\n{}", stderr(&o));
    let deb = PathBuf::from(stdout(&o).lines().last().unwrap_or_default().trim());
    assert!(
        deb.extension().is_some_and(|e| e == "deb") && deb.exists(),
        "no .deb named on the last line: {}",
        stdout(&o)
    );

    // What is inside, before installing it.
    let list = stdout(&run(Command::new("dpkg-deb").arg("-c").arg(&deb)));
    let files: Vec<String> = list
        .lines()
        .filter(|l| !l.starts_with('d'))
        .filter_map(|l| l.split_whitespace().last())
        .map(|f| f.trim_start_matches('.').to_string())
        .collect();
    for want in [
        "/usr/bin/netdoctor",
        "/usr/share/man/man1/netdoctor.1.gz",
        "/usr/share/man/man1/netdoctor-diagnose.1.gz",
        "/usr/share/bash-completion/completions/netdoctor",
        "/usr/share/zsh/vendor-completions/_netdoctor",
        "/usr/share/fish/vendor_completions.d/netdoctor.fish",
        "/usr/share/doc/netdoctor/copyright",
        "/usr/share/doc/netdoctor/README",
        "/usr/share/doc/netdoctor/LICENSE-MIT",
        "/usr/share/doc/netdoctor/LICENSE-APACHE",
    ] {
        assert!(
            files.iter().any(|f| f == want),
            "{want} not in the package:\n{list}"
        );
    }
    let description = stdout(&run(Command::new("dpkg-deb")
        .args(["-f"])
        .arg(&deb)
        .arg("Description")));
    assert!(
        description.contains("CAP_NET_RAW") && description.contains("root"),
        "the description does not say what needs privileges:\n{description}"
    );

    let _purge = Purge;
    let o = run(Command::new("dpkg").arg("-i").arg(&deb));
    assert!(
        o.status.success(),
        "dpkg -i failed:\n{}{}",
        stdout(&o),
        stderr(&o)
    );
    assert!(installed());

    let o = run(Command::new("/usr/bin/netdoctor").arg("--version"));
    assert!(o.status.success(), "{}", stderr(&o));
    let version = stdout(&o);
    assert!(
        version.starts_with("netdoctor ") && version.contains("commit") && version.contains("eBPF"),
        "{version}"
    );
    let capture = captures_dir().join("nagle-raw.pcap");
    let o = run(Command::new("/usr/bin/netdoctor")
        .arg("analyze")
        .arg(&capture)
        .arg("--json")
        .env("NETDOCTOR_QUIET", "1"));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let report = json(&o);
    assert_eq!(report["verdict"], "problem", "{report}");
    assert_eq!(report["findings"][0]["id"], "nagle_delayed_ack", "{report}");

    let o = run(Command::new("man")
        .arg("netdoctor-diagnose")
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "100"));
    let page = stdout(&o);
    assert!(o.status.success(), "man netdoctor-diagnose: {}", stderr(&o));
    assert!(
        page.contains("netdoctor-diagnose") && page.contains("--compare"),
        "{page}"
    );

    let o = run(Command::new("bash").args([
        "-c",
        "source /usr/share/bash-completion/completions/netdoctor && complete -p netdoctor",
    ]));
    assert!(
        o.status.success(),
        "bash cannot load the completions: {}",
        stderr(&o)
    );

    let o = run(Command::new("dpkg").args(["--purge", PKG]));
    assert!(o.status.success(), "dpkg --purge failed:\n{}", stderr(&o));
    assert!(!installed());
    let left: Vec<&String> = files.iter().filter(|f| Path::new(f).exists()).collect();
    assert!(left.is_empty(), "left behind after dpkg --purge: {left:?}");
    assert!(!Path::new("/usr/share/doc/netdoctor").exists());
}
