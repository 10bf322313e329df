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

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

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
    if !Path::new("/usr/include/bpf/bpf_helpers.h").exists() {
        return Err("/usr/include/bpf/bpf_helpers.h missing (apt-get install libbpf-dev)".into());
    }
    let vmlinux = out.join("vmlinux.h");
    match env::var_os("NETDOCTOR_VMLINUX_H") {
        Some(p) => {
            std::fs::copy(&p, &vmlinux).map_err(|e| format!("copy {p:?}: {e}"))?;
        }
        None => {
            let btf = "/sys/kernel/btf/vmlinux";
            if !Path::new(btf).exists() {
                return Err(format!(
                    "{btf} missing (kernel without BTF); set NETDOCTOR_VMLINUX_H"
                ));
            }
            let dump = Command::new("bpftool")
                .args(["btf", "dump", "file", btf, "format", "c"])
                .output()
                .map_err(|e| format!("run bpftool (apt-get install bpftool): {e}"))?;
            if !dump.status.success() {
                return Err(format!(
                    "bpftool btf dump failed: {}",
                    String::from_utf8_lossy(&dump.stderr).trim()
                ));
            }
            std::fs::write(&vmlinux, dump.stdout).map_err(|e| format!("write vmlinux.h: {e}"))?;
        }
    }
    let clang = env::var("NETDOCTOR_BPF_CLANG").unwrap_or_else(|_| "clang".into());
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
        .map_err(|e| format!("run {clang} (apt-get install clang): {e}"))?;
    if !res.status.success() {
        return Err(format!(
            "{clang} failed: {}",
            String::from_utf8_lossy(&res.stderr)
                .lines()
                .next()
                .unwrap_or("")
        ));
    }
    Ok(())
}
