//! Records the git commit this binary is built from for `--version`
//! (`NETDOCTOR_GIT_COMMIT`; `unknown` outside a git checkout, e.g. from a source tarball).
//! Reruns when HEAD or the branch it points to moves; only paths that exist are watched (a
//! missing one would make Cargo rerun this script on every build).

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let s = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !s.is_empty()).then_some(s)
}

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let commit = git(&["rev-parse", "--short=12", "HEAD"]);
    if commit.is_some() {
        let mut watch = vec![git(&["rev-parse", "--git-path", "HEAD"])];
        if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
            watch.push(git(&["rev-parse", "--git-path", &r]));
        }
        watch.push(git(&["rev-parse", "--git-path", "packed-refs"]));
        for p in watch.into_iter().flatten() {
            if Path::new(&p).exists() {
                println!("cargo::rerun-if-changed={p}");
            }
        }
    }
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some();
    let commit = match commit {
        Some(c) if dirty => format!("{c}-modified"),
        Some(c) => c,
        None => "unknown".into(),
    };
    println!("cargo::rustc-env=NETDOCTOR_GIT_COMMIT={commit}");
}
