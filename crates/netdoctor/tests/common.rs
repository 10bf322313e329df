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

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The JSON on stdout of a run that must have exited 0.
pub fn json_ok(o: &Output) -> serde_json::Value {
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(o));
    json(o)
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
    assert_doc_schema(report, netdoctor_report::SCHEMA_JSON)
}

/// Validates a document against one of the committed schemas (given as its JSON text),
/// panicking with every error.
pub fn assert_doc_schema(doc: &serde_json::Value, schema: &str) {
    let schema: serde_json::Value = serde_json::from_str(schema).expect("schema is JSON");
    let v = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "breaks the schema: {errors:#?}\n{doc}");
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

/// A comparison (`--compare --json`) against its schema, and both embedded reports against
/// theirs.
pub fn assert_compare_schema(v: &serde_json::Value) {
    let schema: serde_json::Value =
        serde_json::from_str(netdoctor_report::COMPARE_SCHEMA_JSON).unwrap();
    let val = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = val
        .iter_errors(v)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "comparison breaks the schema: {errors:#?}"
    );
    assert_schema(&v["a"]["report"]);
    assert_schema(&v["b"]["report"]);
}

/// A comparison's measurement `name` in A and B.
pub fn compare_metric(c: &serde_json::Value, name: &str) -> (f64, f64) {
    let m = c["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no {name}"));
    (m["a"].as_f64().unwrap(), m["b"].as_f64().unwrap())
}

/// A comparison's summary says latency is lower and names p50 and p99, and never "higher"
/// without the reason (the offered load moved the median).
pub fn assert_says_lower(summary: &str) {
    assert!(
        summary.contains("latency significantly lower (p50 ") && summary.contains(", p99 "),
        "{summary}"
    );
    assert!(
        !summary.contains("higher") || summary.contains("the median rose because"),
        "{summary}"
    );
}
