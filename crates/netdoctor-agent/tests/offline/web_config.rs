//! The metrics endpoint behind a web configuration (exporter-toolkit format): TLS from a
//! certificate made with openssl, basic auth with a bcrypt hash; scraped with curl as
//! Prometheus would (`scheme: https`, `basic_auth`).

use netdoctor_agent::webconfig::WebConfig;
use netdoctor_agent::{AgentMetrics, MetricsServer};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

fn tool(name: &str) -> bool {
    Command::new(name).arg("--version").output().is_ok()
        || Path::new("/usr/bin").join(name).exists()
}

fn curl(args: &[&str]) -> (String, String) {
    let out = Command::new("curl")
        .args(["-s", "-o", "-", "-w", "\n%{http_code}", "--max-time", "10"])
        .args(args)
        .output()
        .expect("run curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", ""));
    (code.to_string(), body.to_string())
}

#[test]
fn tls_and_basic_auth_guard_the_metrics() {
    if !tool("openssl") || !tool("curl") {
        eprintln!("skipped: needs openssl and curl (apt-get install openssl curl)");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let (crt, key) = (d.path().join("tls.crt"), d.path().join("tls.key"));
    let st = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
        ])
        .args(["-addext", "subjectAltName=IP:127.0.0.1"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&crt)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let hash = bcrypt::hash("s3cret", 4).unwrap();
    let cfg = d.path().join("web.yml");
    std::fs::write(
        &cfg,
        format!(
            "tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\nbasic_auth_users:\n  prometheus: '{hash}'\n"
        ),
    )
    .unwrap();
    let web = WebConfig::load(&cfg).expect("web config loads");
    let server = MetricsServer::start_with(
        "127.0.0.1:0".parse().unwrap(),
        Arc::new(AgentMetrics::new()),
        web,
    )
    .unwrap();
    let url = format!("https://127.0.0.1:{}/metrics", server.local_addr().port());
    let ca = crt.to_str().unwrap();

    let (code, body) = curl(&["--cacert", ca, "-u", "prometheus:s3cret", &url]);
    assert_eq!(code, "200", "{body}");
    assert!(body.contains("process_resident_memory_bytes"), "{body}");
    let (code, _) = curl(&["--cacert", ca, "-u", "prometheus:wrong", &url]);
    assert_eq!(code, "401");
    let (code, _) = curl(&["--cacert", ca, &url]);
    assert_eq!(code, "401");
    // Plain HTTP to the TLS port gets no metrics.
    let (code, body) = curl(&[&url.replace("https", "http")]);
    assert!(
        !body.contains("process_resident_memory_bytes"),
        "{code}: {body}"
    );
}
