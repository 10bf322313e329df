//! Builds bpf/netdoctor.bpf.c into a BPF object with clang when it can, and says why not when it
//! cannot. The main build never needs a nightly toolchain: the BPF side is C, compiled by
//! Debian's clang (`apt-get install clang libbpf-dev bpftool`), not Rust.
//!
//! - clang: `$NETDOCTOR_BPF_CLANG`, else `clang` on PATH;
//! - vmlinux.h: `$NETDOCTOR_VMLINUX_H` (a file), else `bpftool btf dump file
//!   /sys/kernel/btf/vmlinux format c` on the build machine. It is generated, not committed
//!   (several MB); the object uses CO-RE relocations, so it runs on other BTF kernels too;
//! - bpf/bpf_helpers.h etc. from libbpf-dev (`/usr/include/bpf`).
//!
//! When any of these is missing, the crate builds without the object (`cfg(netdoctor_bpf)` is
//! unset) and `NETDOCTOR_BPF_SKIP` carries the reason, which the observer reports at run time.
//!
//! The script reruns when what it probed appears or changes, so following its advice is enough
//! (no `cargo clean`): it watches each probed file that exists, and for one that does not, the
//! nearest directory above it that exists (a new entry changes that directory's mtime, which
//! Cargo sees; a missing path itself would make Cargo rerun the script, and rebuild everything
//! above this crate, on every build). clang and bpftool are looked up on PATH here; each PATH
//! directory that exists is watched while they are missing. PATH itself is not watched: rustup
//! and `cargo xtask` change it between invocations, which would rebuild for nothing.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

const HELPERS_H: &str = "/usr/include/bpf/bpf_helpers.h";
const KERNEL_BTF: &str = "/sys/kernel/btf/vmlinux";

fn main() {
    println!("cargo::rustc-check-cfg=cfg(netdoctor_bpf)");
    println!("cargo::rerun-if-changed=bpf/netdoctor.bpf.c");
    println!("cargo::rerun-if-env-changed=NETDOCTOR_BPF_CLANG");
    println!("cargo::rerun-if-env-changed=NETDOCTOR_VMLINUX_H");
    println!("cargo::rerun-if-env-changed=NETDOCTOR_NO_BPF");
    match build() {
        Ok(()) => println!("cargo::rustc-cfg=netdoctor_bpf"),
        Err(reason) => {
            println!("cargo::warning=eBPF observers not built: {reason}");
            println!("cargo::rustc-env=NETDOCTOR_BPF_SKIP={reason}");
        }
    }
}

/// Tells Cargo to rerun this script when `path` changes or, while it is missing, when it may
/// have appeared (the nearest existing directory above it changed).
fn watch(path: &Path) {
    let mut p = path;
    loop {
        if p.exists() {
            println!("cargo::rerun-if-changed={}", p.display());
            return;
        }
        match p.parent() {
            Some(parent) if parent != p => p = parent,
            _ => return,
        }
    }
}

/// `name` as a path: itself when it has a slash, else the first match on PATH. While it is not
/// found, every PATH directory that exists is watched, so installing it reruns the script.
fn find_program(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        let p = PathBuf::from(name);
        watch(&p);
        return p.exists().then_some(p);
    }
    let dirs: Vec<PathBuf> = env::var_os("PATH")
        .map(|p| env::split_paths(&p).collect())
        .unwrap_or_default();
    // Debian puts bpftool in /usr/sbin, which a user's PATH may lack.
    let mut dirs = dirs;
    for sbin in ["/usr/sbin", "/sbin"] {
        if !dirs.iter().any(|d| d == Path::new(sbin)) {
            dirs.push(sbin.into());
        }
    }
    for d in &dirs {
        let p = d.join(name);
        if p.is_file() {
            watch(&p);
            return Some(p);
        }
    }
    for d in dirs.iter().filter(|d| d.is_dir()) {
        println!("cargo::rerun-if-changed={}", d.display());
    }
    None
}

fn build() -> Result<(), String> {
    if env::var_os("NETDOCTOR_NO_BPF").is_some() {
        return Err("NETDOCTOR_NO_BPF was set at build time".into());
    }
    let out = PathBuf::from(env::var("OUT_DIR").map_err(|e| e.to_string())?);
    let arch = match env::var("CARGO_CFG_TARGET_ARCH").as_deref() {
        Ok("x86_64") => "x86",
        Ok("aarch64") => "arm64",
        Ok(other) => return Err(format!("no BPF target arch for {other}")),
        Err(e) => return Err(e.to_string()),
    };
    // Probe everything first, so one message names every package that is missing.
    let clang_name = env::var("NETDOCTOR_BPF_CLANG").unwrap_or_else(|_| "clang".into());
    let clang = find_program(&clang_name);
    watch(Path::new(HELPERS_H));
    let vmlinux_in = env::var_os("NETDOCTOR_VMLINUX_H").map(PathBuf::from);
    let bpftool = match &vmlinux_in {
        Some(p) => {
            watch(p);
            None
        }
        // Not watched: /sys/kernel/btf/vmlinux (sysfs mtimes change when the inode is
        // recreated, which would rebuild for nothing; BTF does not appear without a reboot).
        None => find_program("bpftool"),
    };
    let mut missing = Vec::new();
    let mut pkgs = Vec::new();
    if clang.is_none() {
        missing.push(clang_name.clone());
        pkgs.push("clang");
    }
    if !Path::new(HELPERS_H).exists() {
        missing.push(HELPERS_H.to_string());
        pkgs.push("libbpf-dev");
    }
    if vmlinux_in.is_none() && bpftool.is_none() {
        missing.push("bpftool".into());
        pkgs.push("bpftool");
    }
    if !missing.is_empty() {
        return Err(format!(
            "{} missing (apt-get install {}; the next cargo build picks them up)",
            missing.join(", "),
            pkgs.join(" ")
        ));
    }
    let vmlinux = out.join("vmlinux.h");
    match (&vmlinux_in, &bpftool) {
        (Some(p), _) => {
            std::fs::copy(p, &vmlinux).map_err(|e| format!("copy {p:?}: {e}"))?;
        }
        (None, Some(bpftool)) => {
            if !Path::new(KERNEL_BTF).exists() {
                return Err(format!(
                    "{KERNEL_BTF} missing (kernel without BTF); set NETDOCTOR_VMLINUX_H"
                ));
            }
            let dump = Command::new(bpftool)
                .args(["btf", "dump", "file", KERNEL_BTF, "format", "c"])
                .output()
                .map_err(|e| format!("run {}: {e}", bpftool.display()))?;
            if !dump.status.success() {
                return Err(format!(
                    "bpftool btf dump failed: {}",
                    String::from_utf8_lossy(&dump.stderr).trim()
                ));
            }
            std::fs::write(&vmlinux, dump.stdout).map_err(|e| format!("write vmlinux.h: {e}"))?;
        }
        (None, None) => unreachable!("checked above"),
    }
    let clang = clang.expect("checked above");
    let obj = out.join("netdoctor.bpf.o");
    let res = Command::new(&clang)
        .args(["-O2", "-g", "-target", "bpf", "-Wall", "-Werror"])
        .arg(format!("-D__TARGET_ARCH_{arch}"))
        .arg("-I")
        .arg(&out)
        .arg("-c")
        .arg("bpf/netdoctor.bpf.c")
        .arg("-o")
        .arg(&obj)
        .output()
        .map_err(|e| format!("run {}: {e}", clang.display()))?;
    if !res.status.success() {
        return Err(format!(
            "{} failed: {}",
            clang.display(),
            String::from_utf8_lossy(&res.stderr)
                .lines()
                .next()
                .unwrap_or("")
        ));
    }
    Ok(())
}
