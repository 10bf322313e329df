//! The MCP tools: each maps its JSON arguments onto the command line of one netdoctor command,
//! runs it in-process with `--json`, and returns the report.
//!
//! Safety limits beyond the CLI's own: traffic goes only to the target given in the arguments;
//! a load lasts at most [`MAX_SECONDS`] per run and uses at most [`MAX_CONNECTIONS`]
//! connections; a trace runs at most [`MAX_ROUNDS`] rounds. Arguments outside those bounds, of
//! the wrong type or unknown are refused with a message naming the argument (a tool error the
//! assistant can correct, not a protocol error).

use crate::Cli;
use clap::Parser;
use serde_json::{Map, Value, json};

/// Longest load or passive watch one tool call may run, in seconds.
pub const MAX_SECONDS: u64 = 60;
/// Most concurrent connections one tool call may open.
pub const MAX_CONNECTIONS: u64 = 1000;
/// Most trace rounds one tool call may run.
pub const MAX_ROUNDS: u64 = 50;

/// Maps a tool's JSON arguments onto a command line (without the program name).
type ArgsFn = fn(&Map<String, Value>) -> Result<Vec<String>, String>;

/// One tool: its name, what it does, and its arguments as a JSON Schema.
struct Tool {
    name: &'static str,
    description: &'static str,
    schema: fn() -> Value,
    args: ArgsFn,
}

const TOOLS: [Tool; 6] = [
    Tool {
        name: "diagnose",
        description: "Diagnose why requests to a server are slow: SYN RTT, one timed request, \
            a short concurrent load with packet capture and kernel counters, then findings with \
            evidence and fix. `passive` watches the server's real traffic instead of sending \
            load. Sends traffic only to `target`.",
        schema: diagnose_schema,
        args: diagnose_args,
    },
    Tool {
        name: "analyze",
        description: "Run netdoctor's detectors on a capture file (pcap or pcapng, e.g. from \
            tcpdump): retransmissions, Nagle/delayed-ACK stalls, zero windows, resets, slow \
            server responses, each with the packets that prove it.",
        schema: analyze_schema,
        args: analyze_args,
    },
    Tool {
        name: "compare",
        description: "Diagnose two targets one after the other (A before a fix, B after) and \
            say whether the fix worked: per-finding FIXED / NEW / UNCHANGED, and latency and \
            throughput compared with a statistical test.",
        schema: compare_schema,
        args: compare_args,
    },
    Tool {
        name: "host",
        description: "This host's network health: listen queues, socket states, conntrack, \
            kernel counters worth a look, sysctls and recent kernel log lines.",
        schema: host_schema,
        args: host_args,
    },
    Tool {
        name: "dns",
        description: "Time name resolution: the resolver configuration, getaddrinfo, each \
            nameserver over UDP and TCP, and reverse lookups; findings for missing, \
            unreachable or slow nameservers.",
        schema: dns_schema,
        args: dns_args,
    },
    Tool {
        name: "trace",
        description: "Trace the route to a host in rounds (TCP SYN probes by default; UDP or \
            ICMP on request): per-hop loss, latency and jitter, and findings for hops that add \
            latency or loss.",
        schema: trace_schema,
        args: trace_args,
    },
];

/// The tool list of `tools/list` and `server/discover`.
pub fn list() -> Vec<Value> {
    TOOLS
        .iter()
        .map(|t| {
            json!({
                "name": t.name,
                "description": t.description,
                "inputSchema": (t.schema)(),
                "annotations": {"readOnlyHint": true, "openWorldHint": matches!(t.name, "diagnose" | "compare" | "dns" | "trace")},
            })
        })
        .collect()
}

/// Runs a tool. `Err` only for a tool that does not exist (a protocol error); a run that
/// failed or arguments that were refused are a result with `isError: true`.
pub fn call(name: &str, arguments: &Value) -> Result<Value, String> {
    let tool = TOOLS
        .iter()
        .find(|t| t.name == name)
        .ok_or_else(|| format!("unknown tool {name:?}"))?;
    let Some(obj) = arguments.as_object() else {
        return Ok(tool_error("arguments must be a JSON object"));
    };
    let args = match check_known(tool, obj).and_then(|()| (tool.args)(obj)) {
        Ok(a) => a,
        Err(e) => return Ok(tool_error(&e)),
    };
    Ok(run(&args))
}

/// Runs the command line `argv` (without the program name) in-process with JSON output.
fn run(argv: &[String]) -> Value {
    let mut full = vec!["netdoctor".to_string()];
    full.extend(argv.iter().cloned());
    full.push("--json".to_string());
    let cli = match Cli::try_parse_from(&full) {
        Ok(c) => c,
        Err(e) => return tool_error(e.to_string().lines().next().unwrap_or("bad arguments")),
    };
    let mut out = Vec::new();
    match crate::run(cli, &mut out) {
        Ok(code) => {
            let text = String::from_utf8_lossy(&out).into_owned();
            match serde_json::from_str::<Value>(&text) {
                Ok(report) => json!({
                    "content": [{"type": "text", "text": text}],
                    "structuredContent": report,
                    "isError": code == crate::EXIT_ERROR,
                    "_meta": {"netdoctor/exitCode": code},
                }),
                Err(_) => json!({
                    "content": [{"type": "text", "text": text}],
                    "isError": code == crate::EXIT_ERROR,
                    "_meta": {"netdoctor/exitCode": code},
                }),
            }
        }
        Err(e) => tool_error(&crate::error_line(&e)),
    }
}

fn tool_error(msg: &str) -> Value {
    json!({"content": [{"type": "text", "text": msg}], "isError": true})
}

/// Unknown arguments are refused (a typo must not silently fall back to a default).
fn check_known(tool: &Tool, obj: &Map<String, Value>) -> Result<(), String> {
    let schema = (tool.schema)();
    let props = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    for k in obj.keys() {
        if !props.contains_key(k) {
            let mut known: Vec<&String> = props.keys().collect();
            known.sort();
            return Err(format!(
                "unknown argument {k:?} for {}: known are {}",
                tool.name,
                known
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    Ok(())
}

fn string(obj: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.clone())),
        Some(_) => Err(format!("{key} must be a non-empty string")),
    }
}

fn required(obj: &Map<String, Value>, key: &str) -> Result<String, String> {
    string(obj, key)?.ok_or_else(|| format!("{key} is required"))
}

fn flag(obj: &Map<String, Value>, key: &str) -> Result<bool, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(format!("{key} must be true or false")),
    }
}

fn bounded(obj: &Map<String, Value>, key: &str, lo: u64, hi: u64) -> Result<Option<u64>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_u64() {
            Some(n) if (lo..=hi).contains(&n) => Ok(Some(n)),
            _ => Err(format!("{key} must be an integer from {lo} to {hi}")),
        },
    }
}

/// `lang` (en or zh), shared by every tool.
fn lang(obj: &Map<String, Value>, argv: &mut Vec<String>) -> Result<(), String> {
    if let Some(l) = string(obj, "lang")? {
        if l != "en" && l != "zh" {
            return Err("lang must be \"en\" or \"zh\"".into());
        }
        argv.extend(["--lang".into(), l]);
    }
    Ok(())
}

fn lang_schema() -> Value {
    json!({"type": "string", "enum": ["en", "zh"], "description": "language of the report's sentences (default en)"})
}

fn load_schema(target_desc: &str) -> Map<String, Value> {
    let v = json!({
        "target": {"type": "string", "description": target_desc},
        "duration_s": {"type": "integer", "minimum": 1, "maximum": MAX_SECONDS, "description": "how long the load (or the passive watch) runs, in seconds (default 5)"},
        "connections": {"type": "integer", "minimum": 1, "maximum": MAX_CONNECTIONS, "description": "concurrent connections of the load (default 100)"},
        "insecure": {"type": "boolean", "description": "HTTPS: do not verify the server's certificate (curl -k)"},
        "lang": lang_schema(),
    });
    v.as_object().cloned().unwrap_or_default()
}

fn load_args(obj: &Map<String, Value>, argv: &mut Vec<String>) -> Result<(), String> {
    if let Some(d) = bounded(obj, "duration_s", 1, MAX_SECONDS)? {
        argv.extend(["-d".into(), format!("{d}s")]);
    }
    if let Some(c) = bounded(obj, "connections", 1, MAX_CONNECTIONS)? {
        argv.extend(["-c".into(), c.to_string()]);
    }
    if flag(obj, "insecure")? {
        argv.push("-k".into());
    }
    lang(obj, argv)
}

fn diagnose_schema() -> Value {
    let mut p = load_schema("http(s):// URL, or tcp://HOST:PORT for any TCP protocol");
    p.insert(
        "passive".into(),
        json!({"type": "boolean", "description": "watch the server's real traffic for the duration; send nothing"}),
    );
    json!({"type": "object", "properties": p, "required": ["target"], "additionalProperties": false})
}

fn diagnose_args(obj: &Map<String, Value>) -> Result<Vec<String>, String> {
    let mut argv = vec!["diagnose".to_string(), required(obj, "target")?];
    if flag(obj, "passive")? {
        if obj.get("connections").is_some_and(|v| !v.is_null()) {
            return Err("connections cannot be combined with passive (nothing is sent)".into());
        }
        argv.push("--passive".into());
    }
    load_args(obj, &mut argv)?;
    Ok(argv)
}

fn compare_schema() -> Value {
    let mut p = load_schema("unused");
    p.remove("target");
    p.insert(
        "a".into(),
        json!({"type": "string", "description": "URL of the first run (before the fix)"}),
    );
    p.insert(
        "b".into(),
        json!({"type": "string", "description": "URL of the second run (after the fix)"}),
    );
    json!({"type": "object", "properties": p, "required": ["a", "b"], "additionalProperties": false})
}

fn compare_args(obj: &Map<String, Value>) -> Result<Vec<String>, String> {
    let mut argv = vec![
        "diagnose".to_string(),
        required(obj, "a")?,
        "--compare".into(),
        required(obj, "b")?,
    ];
    load_args(obj, &mut argv)?;
    Ok(argv)
}

fn analyze_schema() -> Value {
    json!({"type": "object", "properties": {
        "file": {"type": "string", "description": "path of a pcap or pcapng file (gzip'd or not) on this host"},
        "server_port": {"type": "integer", "minimum": 1, "maximum": 65535, "description": "the server's port, when the capture does not show who listens"},
        "lang": lang_schema(),
    }, "required": ["file"], "additionalProperties": false})
}

fn analyze_args(obj: &Map<String, Value>) -> Result<Vec<String>, String> {
    let file = required(obj, "file")?;
    if file == "-" {
        return Err("file must be a path: stdin carries the MCP messages".into());
    }
    let mut argv = vec!["analyze".to_string(), file];
    if let Some(p) = bounded(obj, "server_port", 1, 65535)? {
        argv.extend(["--server-port".into(), p.to_string()]);
    }
    lang(obj, &mut argv)?;
    Ok(argv)
}

fn host_schema() -> Value {
    json!({"type": "object", "properties": {
        "netns": {"type": "string", "description": "read this network namespace (a name from `ip netns list`) instead of netdoctor's"},
        "lang": lang_schema(),
    }, "additionalProperties": false})
}

fn host_args(obj: &Map<String, Value>) -> Result<Vec<String>, String> {
    let mut argv = vec!["host".to_string()];
    if let Some(ns) = string(obj, "netns")? {
        argv.extend(["--netns".into(), ns]);
    }
    lang(obj, &mut argv)?;
    Ok(argv)
}

fn dns_schema() -> Value {
    json!({"type": "object", "properties": {
        "name": {"type": "string", "description": "the name to resolve, e.g. api.example.com"},
        "aaaa": {"type": "boolean", "description": "ask for AAAA instead of A"},
        "lang": lang_schema(),
    }, "required": ["name"], "additionalProperties": false})
}

fn dns_args(obj: &Map<String, Value>) -> Result<Vec<String>, String> {
    let mut argv = vec!["dns".to_string(), required(obj, "name")?];
    if flag(obj, "aaaa")? {
        argv.push("-6".into());
    }
    lang(obj, &mut argv)?;
    Ok(argv)
}

fn trace_schema() -> Value {
    json!({"type": "object", "properties": {
        "host": {"type": "string", "description": "destination: an address or a host name"},
        "protocol": {"type": "string", "enum": ["tcp", "udp", "icmp"], "description": "probe protocol (default tcp)"},
        "port": {"type": "integer", "minimum": 1, "maximum": 65535, "description": "destination port (tcp default 80)"},
        "rounds": {"type": "integer", "minimum": 1, "maximum": MAX_ROUNDS, "description": "rounds of probes (default 10)"},
        "lang": lang_schema(),
    }, "required": ["host"], "additionalProperties": false})
}

fn trace_args(obj: &Map<String, Value>) -> Result<Vec<String>, String> {
    let mut argv = vec!["trace".to_string(), required(obj, "host")?, "-n".into()];
    match string(obj, "protocol")?.as_deref() {
        None | Some("tcp") => {}
        Some("udp") => argv.push("--udp".into()),
        Some("icmp") => argv.push("--icmp".into()),
        Some(_) => return Err("protocol must be tcp, udp or icmp".into()),
    }
    if let Some(p) = bounded(obj, "port", 1, 65535)? {
        argv.extend(["-p".into(), p.to_string()]);
    }
    if let Some(r) = bounded(obj, "rounds", 1, MAX_ROUNDS)? {
        argv.extend(["--rounds".into(), r.to_string()]);
    }
    lang(obj, &mut argv)?;
    Ok(argv)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn arguments_map_to_the_command_line() {
        assert_eq!(
            diagnose_args(&obj(json!({"target": "http://127.0.0.1:8080/", "duration_s": 3, "connections": 10, "insecure": true}))).unwrap(),
            ["diagnose", "http://127.0.0.1:8080/", "-d", "3s", "-c", "10", "-k"]
        );
        assert_eq!(
            compare_args(&obj(
                json!({"a": "http://a/", "b": "http://b/", "lang": "zh"})
            ))
            .unwrap(),
            [
                "diagnose",
                "http://a/",
                "--compare",
                "http://b/",
                "--lang",
                "zh"
            ]
        );
        assert_eq!(
            trace_args(&obj(
                json!({"host": "10.0.0.1", "protocol": "udp", "rounds": 5})
            ))
            .unwrap(),
            ["trace", "10.0.0.1", "-n", "--udp", "--rounds", "5"]
        );
    }

    #[test]
    fn limits_and_types_are_enforced_with_the_argument_named() {
        let e =
            diagnose_args(&obj(json!({"target": "http://x/", "duration_s": 3600}))).unwrap_err();
        assert!(e.contains("duration_s") && e.contains("60"), "{e}");
        let e = diagnose_args(&obj(json!({"target": 5}))).unwrap_err();
        assert!(e.contains("target"), "{e}");
        let e = diagnose_args(&obj(
            json!({"target": "http://x/", "passive": true, "connections": 5}),
        ))
        .unwrap_err();
        assert!(e.contains("passive"), "{e}");
        let e = analyze_args(&obj(json!({"file": "-"}))).unwrap_err();
        assert!(e.contains("stdin"), "{e}");
        let r = call("dns", &json!({"name": "x", "typo": 1})).unwrap();
        assert_eq!(r["isError"], true);
        assert!(r["content"][0]["text"].as_str().unwrap().contains("typo"));
    }

    #[test]
    fn every_schema_lists_its_required_arguments_as_properties() {
        for t in &TOOLS {
            let s = (t.schema)();
            assert_eq!(s["type"], "object", "{}", t.name);
            for r in s["required"].as_array().into_iter().flatten() {
                assert!(
                    s["properties"].get(r.as_str().unwrap()).is_some(),
                    "{}: {r}",
                    t.name
                );
            }
        }
    }
}
