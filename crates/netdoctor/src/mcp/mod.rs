//! `netdoctor mcp`: a Model Context Protocol server over stdio, so an assistant can run
//! netdoctor's checks and explain the causes that netdoctor's rules found (it does not have to
//! guess them from raw counters).
//!
//! Transport: newline-delimited JSON-RPC 2.0 on stdin/stdout (MCP's stdio transport); anything
//! else netdoctor prints (progress) goes to stderr, which the transport leaves to logs.
//!
//! Both eras of the protocol are spoken:
//! - **session** (revisions 2024-11-05 … 2025-11-25): `initialize` negotiates the version (the
//!   client's if we know it, else our newest session revision), then `notifications/initialized`,
//!   `tools/list`, `tools/call`, `ping`;
//! - **stateless** (revision 2026-07-28): `server/discover` returns the version, capabilities and
//!   the tool list in one answer, and any request may come without a prior `initialize` (its
//!   `_meta` names the version; a version we do not speak is an error naming the ones we do).
//!
//! Tools ([`tools`]): `diagnose`, `analyze`, `compare`, `host`, `dns`, `trace`. Each runs the
//! command in-process with `--json` and returns the JSON contract (`netdoctor.report/v1` and
//! siblings) as `structuredContent` and as text, so the verdict, the evidence and the fix travel
//! whole. The CLI's safety limits hold, and the tools bound durations further (see [`tools`]).
//!
//! Hand-written on purpose: the Rust MCP SDK (`rmcp`) is async on tokio, which this binary does
//! not use, and the part netdoctor needs (line-delimited JSON-RPC, four methods) is about a
//! hundred lines on serde_json.

pub mod tools;

use serde_json::{Value, json};
use std::io::{BufRead, Write};

/// Session-era revisions we speak, newest first.
pub const SESSION_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
/// The stateless revision.
pub const STATELESS_VERSION: &str = "2026-07-28";

/// JSON-RPC error codes.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;

/// Serves MCP on `input`/`output` until the input ends. Returns the process exit code (0).
pub fn serve(input: &mut dyn BufRead, output: &mut dyn Write) -> anyhow::Result<i32> {
    let mut server = Server::default();
    let mut line = String::new();
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            return Ok(0);
        }
        if line.trim().is_empty() {
            continue;
        }
        if let Some(reply) = server.handle_line(&line) {
            // One message per line: serde_json never writes a raw newline inside a string.
            serde_json::to_writer(&mut *output, &reply)?;
            output.write_all(b"\n")?;
            output.flush()?;
        }
    }
}

/// The protocol state of one stdio session.
#[derive(Default)]
pub struct Server {
    /// The version agreed by `initialize`, if one came.
    negotiated: Option<String>,
}

impl Server {
    /// Handles one line of input; `None` for notifications (no reply).
    pub fn handle_line(&mut self, line: &str) -> Option<Value> {
        let msg: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                return Some(error(
                    Value::Null,
                    PARSE_ERROR,
                    &format!("parse error: {e}"),
                ));
            }
        };
        if msg.is_array() {
            return Some(error(
                Value::Null,
                INVALID_REQUEST,
                "batches are not supported: send one message per line",
            ));
        }
        let id = msg.get("id").cloned();
        let Some(method) = msg.get("method").and_then(Value::as_str) else {
            // A response to a request we never sent, or garbage: answer only if it had an id.
            return id.map(|id| error(id, INVALID_REQUEST, "not a request: no method"));
        };
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        let Some(id) = id else {
            // Notifications (initialized, cancelled, …): nothing to answer.
            return None;
        };
        Some(match self.call(method, &params) {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err((code, msg)) => error(id, code, &msg),
        })
    }

    fn call(&mut self, method: &str, params: &Value) -> Result<Value, (i64, String)> {
        if method != "initialize" {
            check_meta_version(params)?;
        }
        match method {
            "initialize" => {
                let asked = params
                    .get("protocolVersion")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let version = SESSION_VERSIONS
                    .iter()
                    .find(|v| **v == asked)
                    .copied()
                    .unwrap_or(SESSION_VERSIONS[0]);
                self.negotiated = Some(version.to_string());
                Ok(json!({
                    "protocolVersion": version,
                    "capabilities": {"tools": {"listChanged": false}},
                    "serverInfo": server_info(),
                    "instructions": INSTRUCTIONS,
                }))
            }
            "server/discover" => Ok(json!({
                "protocolVersion": STATELESS_VERSION,
                "supportedVersions": supported_versions(),
                "capabilities": {"tools": {"listChanged": false}},
                "serverInfo": server_info(),
                "instructions": INSTRUCTIONS,
                "tools": tools::list(),
            })),
            "ping" => Ok(json!({})),
            "tools/list" => Ok(json!({"tools": tools::list()})),
            "tools/call" => {
                let name = params
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or((INVALID_PARAMS, "tools/call needs a tool name".to_string()))?;
                let empty = json!({});
                let args = params.get("arguments").unwrap_or(&empty);
                tools::call(name, args).map_err(|e| (INVALID_PARAMS, e))
            }
            other => Err((METHOD_NOT_FOUND, format!("unknown method {other:?}"))),
        }
    }

    /// The version `initialize` agreed, if any.
    pub fn negotiated(&self) -> Option<&str> {
        self.negotiated.as_deref()
    }
}

const INSTRUCTIONS: &str = "netdoctor finds why network requests got slow. Each tool returns \
netdoctor's JSON report: a verdict (healthy, problem, inconclusive), findings ranked by impact \
with their evidence and fix, and the checks that were skipped and why. Explain the findings as \
netdoctor states them; do not invent causes it did not find. diagnose and compare send traffic \
to the target you give them (a server you are responsible for).";

fn server_info() -> Value {
    json!({"name": "netdoctor", "version": env!("CARGO_PKG_VERSION")})
}

fn supported_versions() -> Vec<&'static str> {
    let mut v = vec![STATELESS_VERSION];
    v.extend(SESSION_VERSIONS);
    v
}

/// A stateless request names its revision in `params._meta`; one we do not speak is refused.
fn check_meta_version(params: &Value) -> Result<(), (i64, String)> {
    let Some(v) = params
        .get("_meta")
        .and_then(|m| {
            m.get("protocolVersion")
                .or_else(|| m.get("modelcontextprotocol.io/protocolVersion"))
        })
        .and_then(Value::as_str)
    else {
        return Ok(());
    };
    if supported_versions().contains(&v) {
        Ok(())
    } else {
        Err((
            INVALID_REQUEST,
            format!(
                "unsupported protocol version {v:?}: this server speaks {}",
                supported_versions().join(", ")
            ),
        ))
    }
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(s: &mut Server, v: Value) -> Value {
        s.handle_line(&v.to_string()).expect("a reply")
    }

    #[test]
    fn initialize_negotiates_a_known_version_or_offers_ours() {
        let mut s = Server::default();
        let r = ask(
            &mut s,
            json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}),
        );
        assert_eq!(r["result"]["protocolVersion"], "2025-06-18");
        assert_eq!(r["result"]["serverInfo"]["name"], "netdoctor");
        assert_eq!(s.negotiated(), Some("2025-06-18"));
        let r = ask(
            &mut Server::default(),
            json!({"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"1999-01-01"}}),
        );
        assert_eq!(r["id"], "a");
        assert_eq!(r["result"]["protocolVersion"], SESSION_VERSIONS[0]);
    }

    #[test]
    fn notifications_get_no_reply_and_unknown_methods_an_error() {
        let mut s = Server::default();
        assert!(
            s.handle_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
                .is_none()
        );
        let r = ask(
            &mut s,
            json!({"jsonrpc":"2.0","id":2,"method":"resources/list"}),
        );
        assert_eq!(r["error"]["code"], METHOD_NOT_FOUND);
        let r = s.handle_line("{not json").unwrap();
        assert_eq!(r["error"]["code"], PARSE_ERROR);
        assert!(r["id"].is_null());
        let r = s.handle_line("[]").unwrap();
        assert_eq!(r["error"]["code"], INVALID_REQUEST);
    }

    #[test]
    fn discover_lists_the_tools_and_a_foreign_version_is_refused() {
        let mut s = Server::default();
        let r = ask(
            &mut s,
            json!({"jsonrpc":"2.0","id":3,"method":"server/discover","params":{"_meta":{"protocolVersion":"2026-07-28"}}}),
        );
        assert_eq!(r["result"]["protocolVersion"], STATELESS_VERSION);
        let names: Vec<&str> = r["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            ["diagnose", "analyze", "compare", "host", "dns", "trace"]
        );
        let r = ask(
            &mut s,
            json!({"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{"protocolVersion":"2030-01-01"}}}),
        );
        assert_eq!(r["error"]["code"], INVALID_REQUEST);
        assert!(
            r["error"]["message"]
                .as_str()
                .unwrap()
                .contains("2026-07-28")
        );
    }

    #[test]
    fn a_tool_call_without_a_name_is_invalid_params() {
        let mut s = Server::default();
        let r = ask(
            &mut s,
            json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{}}),
        );
        assert_eq!(r["error"]["code"], INVALID_PARAMS);
        let r = ask(
            &mut s,
            json!({"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"rm"}}),
        );
        assert_eq!(r["error"]["code"], INVALID_PARAMS);
        assert!(
            r["error"]["message"]
                .as_str()
                .unwrap()
                .contains("unknown tool")
        );
    }
}
