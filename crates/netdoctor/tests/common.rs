//! Helpers shared by the binary's integration tests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

pub fn netdoctor(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_netdoctor"))
        .args(args)
        .env("NETDOCTOR_QUIET", "1")
        .env("NO_COLOR", "1")
        .output()
        .expect("run netdoctor")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&o.stdout),
            stderr(o)
        )
    })
}

/// Validates a report against the committed schema, panicking with every error.
pub fn assert_schema(report: &serde_json::Value) {
    let schema: serde_json::Value =
        serde_json::from_str(netdoctor_report::SCHEMA_JSON).expect("schema is JSON");
    let v = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = v
        .iter_errors(report)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "report breaks the schema: {errors:#?}");
}

pub fn captures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/captures")
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

pub fn nginx_installed() -> bool {
    std::path::Path::new("/usr/sbin/nginx").exists()
}

/// Why a root/nginx test cannot run here, if it cannot.
pub fn lab_unavailable() -> Option<&'static str> {
    if !is_root() {
        Some("needs root (network namespaces, packet capture)")
    } else if !nginx_installed() {
        Some("needs nginx: apt-get install nginx-light")
    } else {
        None
    }
}
