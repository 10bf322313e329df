//! `cargo xtask deb`: the Debian package. It builds the release binary and runs
//! `crates/netdoctor/pkg/build-deb.sh`, which generates the man pages and completions from the
//! binary and packages them with cargo-deb (`[package.metadata.deb]` in crates/netdoctor's
//! Cargo.toml). The script is the one implementation: the package test calls it directly, because
//! a cargo command started from inside `cargo test` would wait on the build directory's lock.
//!
//! cargo-deb is a cargo subcommand, not a Debian package: `cargo xtask setup` installs the pinned
//! [`CARGO_DEB_VERSION`] with `cargo install --locked` when `cargo deb` is missing.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The cargo-deb release the package is built and tested with (builds on rustc 1.95).
pub const CARGO_DEB_VERSION: &str = "3.8.0";

/// The workspace root: this crate lives in `crates/xtask`.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// Whether `cargo deb` runs.
pub fn cargo_deb_present() -> bool {
    Command::new(cargo())
        .args(["deb", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Installs cargo-deb when `cargo deb` is missing (a few minutes of compiling, once).
pub fn ensure_cargo_deb() -> Result<(), String> {
    if cargo_deb_present() {
        eprintln!("xtask: cargo-deb present");
        return Ok(());
    }
    eprintln!("xtask: installing cargo-deb {CARGO_DEB_VERSION} (cargo install --locked; once)");
    crate::run(
        Command::new(cargo()).args([
            "install",
            "--locked",
            "--quiet",
            "cargo-deb",
            "--version",
            CARGO_DEB_VERSION,
        ]),
        "cargo install cargo-deb",
    )
}

/// `cargo xtask deb [--no-build]`: prints the path of the package.
pub fn deb(args: &[String]) -> Result<(), String> {
    let mut build = true;
    for a in args {
        match a.as_str() {
            "--no-build" => build = false,
            other => {
                return Err(format!(
                    "unknown argument {other:?} (usage: cargo xtask deb [--no-build])"
                ));
            }
        }
    }
    let root = workspace_root();
    if !cargo_deb_present() {
        return Err(
            "cargo-deb is missing: cargo xtask setup (or cargo install --locked \
                    cargo-deb) installs it"
                .into(),
        );
    }
    if build {
        crate::run(
            Command::new(cargo()).current_dir(&root).args([
                "build",
                "--release",
                "-p",
                "netdoctor",
            ]),
            "cargo build --release -p netdoctor",
        )?;
    }
    crate::run(
        Command::new(root.join("crates/netdoctor/pkg/build-deb.sh")).current_dir(&root),
        "crates/netdoctor/pkg/build-deb.sh",
    )
}
