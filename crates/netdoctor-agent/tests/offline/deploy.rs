//! The files in `deploy/` against what the agent really exports and needs.

use netdoctor_agent::AgentMetrics;
use serde_json::Value;
use std::path::PathBuf;

fn deploy(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()))
}

/// Every `expr` in the dashboard, in panels and templating queries.
fn exprs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("expr" | "definition", Value::String(s)) => out.push(s.clone()),
                    _ => exprs(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| exprs(x, out)),
        _ => {}
    }
}

/// Identifiers in a PromQL expression that name metrics of ours (`netdoctor_…`, `process_…`).
fn metric_names(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_str = false;
    for c in expr.chars().chain(std::iter::once(' ')) {
        if c == '"' {
            in_str = !in_str;
            cur.clear();
            continue;
        }
        if !in_str && (c.is_ascii_alphanumeric() || c == '_' || c == ':') {
            cur.push(c);
        } else {
            if cur.starts_with("netdoctor_") || cur.starts_with("process_") {
                out.push(cur.clone());
            }
            cur.clear();
        }
    }
    out
}

#[test]
fn dashboard_parses_and_every_query_names_an_exported_metric() {
    let dash: Value = serde_json::from_str(&deploy("grafana-dashboard.json")).expect("valid JSON");
    assert!(dash["title"].is_string());
    let mut all = Vec::new();
    exprs(&dash, &mut all);
    assert!(
        all.len() >= 10,
        "expected the dashboard's queries, found {all:?}"
    );
    let exported = AgentMetrics::sample_names();
    assert!(exported.contains(&"netdoctor_finding_active".to_string()));
    let mut used = std::collections::BTreeSet::new();
    for e in &all {
        let names = metric_names(e);
        assert!(!names.is_empty(), "query names no netdoctor metric: {e}");
        for n in names {
            assert!(
                exported.contains(&n),
                "dashboard query uses {n}, which the agent does not export: {e}\nexported: {exported:?}"
            );
            used.insert(n);
        }
    }
    // The dashboard shows what issue 14 asks for: findings, latency percentiles, counters,
    // the watched listeners' queues, capture drops and what the agent's memory follows.
    for must in [
        "netdoctor_request_duration_seconds_bucket",
        "netdoctor_kernel_stat_total",
        "netdoctor_finding_severity",
        "process_cpu_seconds_total",
        "netdoctor_listen_queue_depth",
        "netdoctor_syn_recv_connections",
        "netdoctor_capture_drops_total",
        "netdoctor_tcp_open_connections",
    ] {
        assert!(used.contains(must), "dashboard does not show {must}");
    }
}

#[test]
fn metric_name_extraction_skips_label_values() {
    assert_eq!(
        metric_names(r#"rate(netdoctor_requests_total{id="netdoctor_x"}[5m])"#),
        vec!["netdoctor_requests_total"]
    );
}

fn yaml(name: &str) -> serde_yaml::Value {
    serde_yaml::from_str(&deploy(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Kubernetes quantity → bytes (Mi/Gi/M) or millicores (m / whole cores).
fn quantity(q: &serde_yaml::Value) -> f64 {
    let s = match q {
        serde_yaml::Value::String(s) => s.clone(),
        serde_yaml::Value::Number(n) => n.to_string(),
        other => panic!("not a quantity: {other:?}"),
    };
    let (num, mult) = if let Some(n) = s.strip_suffix("Mi") {
        (n, 1024.0 * 1024.0)
    } else if let Some(n) = s.strip_suffix("Gi") {
        (n, 1024.0 * 1024.0 * 1024.0)
    } else if let Some(n) = s.strip_suffix('M') {
        (n, 1e6)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 1.0)
    } else {
        (s.as_str(), 1000.0)
    };
    num.parse::<f64>().expect("number") * mult
}

#[test]
fn daemonset_is_a_pod_watching_agent_with_only_the_needed_capabilities() {
    let ds = yaml("daemonset.yaml");
    assert_eq!(ds["apiVersion"].as_str(), Some("apps/v1"));
    assert_eq!(ds["kind"].as_str(), Some("DaemonSet"));
    let sel = &ds["spec"]["selector"]["matchLabels"];
    let pod = &ds["spec"]["template"];
    assert_eq!(
        sel, &pod["metadata"]["labels"],
        "selector must match the pod labels"
    );
    let spec = &pod["spec"];
    assert_eq!(spec["hostNetwork"].as_bool(), Some(true));
    // --pods reads the host's /proc to find the pods' network namespaces.
    assert_eq!(spec["hostPID"].as_bool(), Some(true));
    assert_eq!(spec["automountServiceAccountToken"].as_bool(), Some(false));
    let containers = spec["containers"].as_sequence().expect("containers");
    assert_eq!(containers.len(), 1);
    let c = &containers[0];
    assert!(c["image"].as_str().is_some_and(|i| !i.is_empty()));
    let args: Vec<&str> = c["args"]
        .as_sequence()
        .expect("args")
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    assert_eq!(args.first(), Some(&"watch"));
    assert!(args.contains(&"--listen=0.0.0.0:9465"), "{args:?}");
    assert!(args.contains(&"--pods"), "{args:?}");
    // Every host path but the evidence directory is read-only.
    for m in c["volumeMounts"].as_sequence().expect("volumeMounts") {
        let path = m["mountPath"].as_str().unwrap_or("");
        assert!(
            path == "/var/lib/netdoctor" || m["readOnly"].as_bool() == Some(true),
            "{path} must be read-only"
        );
    }
    assert_eq!(c["ports"][0]["containerPort"].as_u64(), Some(9465));
    let sc = &c["securityContext"];
    assert_eq!(sc["privileged"].as_bool(), Some(false));
    assert_eq!(sc["allowPrivilegeEscalation"].as_bool(), Some(false));
    let drop: Vec<&str> = sc["capabilities"]["drop"]
        .as_sequence()
        .expect("drop")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert_eq!(drop, vec!["ALL"]);
    let mut add: Vec<&str> = sc["capabilities"]["add"]
        .as_sequence()
        .expect("add")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    add.sort();
    assert_eq!(
        add,
        vec!["NET_ADMIN", "NET_RAW", "SYS_ADMIN", "SYS_PTRACE"],
        "no capability beyond these"
    );
    // Limits match the budget: ≤ 50 MB RSS measured, so a 64 Mi ceiling; the request is the
    // 2 %-of-a-core budget (20m) and the limit leaves room against CFS stalls.
    let res = &c["resources"];
    let mem_limit = quantity(&res["limits"]["memory"]);
    assert!(
        (50e6..=128.0 * 1024.0 * 1024.0).contains(&mem_limit),
        "memory limit {mem_limit}"
    );
    assert!(quantity(&res["requests"]["memory"]) <= mem_limit);
    let cpu_req = quantity(&res["requests"]["cpu"]);
    let cpu_limit = quantity(&res["limits"]["cpu"]);
    assert!((20.0..=50.0).contains(&cpu_req), "cpu request {cpu_req}m");
    assert!(
        cpu_limit >= cpu_req && cpu_limit <= 500.0,
        "cpu limit {cpu_limit}m"
    );
    // The evidence ring survives restarts on the node.
    assert_eq!(
        c["volumeMounts"][0]["mountPath"].as_str(),
        Some("/var/lib/netdoctor")
    );
    assert!(args.contains(&"--dir=/var/lib/netdoctor"));
}

#[test]
fn scrape_config_keeps_netdoctor_pods_and_labels_the_node() {
    let s = yaml("prometheus-scrape.yaml");
    let jobs = s["scrape_configs"].as_sequence().expect("scrape_configs");
    let k8s = jobs
        .iter()
        .find(|j| j["job_name"].as_str() == Some("netdoctor"))
        .expect("job netdoctor");
    assert_eq!(k8s["metrics_path"].as_str(), Some("/metrics"));
    let relabel = k8s["relabel_configs"].as_sequence().expect("relabel");
    assert!(
        relabel
            .iter()
            .any(|r| r["target_label"].as_str() == Some("node"))
    );
    assert!(
        relabel
            .iter()
            .any(|r| r["action"].as_str() == Some("keep")
                && r["regex"].as_str() == Some("netdoctor"))
    );
    for j in jobs {
        assert!(
            j["job_name"]
                .as_str()
                .is_some_and(|n| n.starts_with("netdoctor"))
        );
    }
}

/// The shipped alert rules are the generator's output (so they never drift from the catalog).
#[test]
fn shipped_alert_rules_are_generated_from_the_catalog() {
    assert_eq!(
        deploy("alerts/netdoctor-rules.yaml"),
        netdoctor_agent::alerts::rules_file(),
        "regenerate: netdoctor watch --print-alert-rules > deploy/alerts/netdoctor-rules.yaml"
    );
    assert_eq!(
        deploy("alerts/prometheus-rule.yaml"),
        netdoctor_agent::alerts::prometheus_rule(),
        "regenerate: netdoctor watch --print-prometheus-rule > deploy/alerts/prometheus-rule.yaml"
    );
    let rule = yaml("alerts/prometheus-rule.yaml");
    assert_eq!(rule["kind"], "PrometheusRule");
    let rules = &rule["spec"]["groups"][0]["rules"];
    assert_eq!(
        rules.as_sequence().map(Vec::len),
        Some(netdoctor_core::FindingId::ALL.len())
    );
    // Every alert's expression names an exported metric.
    let exported = AgentMetrics::sample_names();
    for r in rules.as_sequence().unwrap() {
        for n in metric_names(r["expr"].as_str().unwrap()) {
            assert!(exported.contains(&n), "{n} is not exported");
        }
    }
}

/// `promtool check rules` accepts the rules and `promtool test rules` passes their unit tests
/// (an alert fires after two windows, carries its runbook, resolves when the finding goes).
#[test]
fn promtool_checks_and_tests_the_alert_rules() {
    let promtool = ["/usr/bin/promtool", "/usr/local/bin/promtool"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists());
    let Some(promtool) = promtool else {
        eprintln!("skipped: needs promtool (apt-get install prometheus)");
        return;
    };
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy/alerts");
    for args in [
        vec!["check", "rules", "netdoctor-rules.yaml"],
        vec!["test", "rules", "netdoctor-rules.test.yaml"],
    ] {
        let out = std::process::Command::new(promtool)
            .args(&args)
            .current_dir(&dir)
            .output()
            .expect("run promtool");
        assert!(
            out.status.success(),
            "promtool {args:?}:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
