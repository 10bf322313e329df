//! `netdoctor mcp` driven by a scripted MCP client over stdio, as an assistant's host would:
//! initialize, the initialized notification, tools/list, then tools/call analyze on a committed
//! capture, whose verdict and finding must be netdoctor's own; and the stateless revision's
//! server/discover plus a call without initialize.

use crate::common;
use common::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

struct Client {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Client {
    fn start() -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_netdoctor"))
            .arg("mcp")
            .env("NO_COLOR", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start netdoctor mcp");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Client {
            child,
            stdin,
            stdout,
        }
    }

    fn send(&mut self, msg: &Value) {
        writeln!(self.stdin, "{msg}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn request(&mut self, msg: Value) -> Value {
        self.send(&msg);
        let mut line = String::new();
        assert!(
            self.stdout.read_line(&mut line).unwrap() > 0,
            "server closed"
        );
        let reply: Value = serde_json::from_str(&line).expect("one JSON message per line");
        assert_eq!(reply["jsonrpc"], "2.0");
        assert_eq!(reply["id"], msg["id"], "reply to the request sent");
        reply
    }

    fn finish(mut self) {
        drop(self.stdin);
        let status = self.child.wait().unwrap();
        assert!(status.success(), "mcp server exit: {status}");
    }
}

#[test]
fn a_session_lists_the_tools_and_analyzes_a_capture() {
    let mut c = Client::start();
    let init = c.request(json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}));
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert!(init["result"]["capabilities"]["tools"].is_object());
    c.send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}));

    let list = c.request(json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}));
    let tools = list["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    for want in ["diagnose", "analyze", "compare", "host", "dns", "trace"] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    for t in tools {
        assert_eq!(t["inputSchema"]["type"], "object", "{}", t["name"]);
    }

    let pcap = captures_dir().join("nagle-raw.pcap");
    let call = c.request(
        json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{
        "name":"analyze","arguments":{"file": pcap.to_str().unwrap()}}}),
    );
    let result = &call["result"];
    assert_eq!(result["isError"], false, "{call}");
    let report = &result["structuredContent"];
    assert_eq!(report["schema"], "netdoctor.report/v1");
    assert_eq!(report["verdict"], "problem");
    assert_eq!(report["findings"][0]["id"], "nagle_delayed_ack");
    assert!(
        report["findings"][0]["fix"]
            .as_str()
            .unwrap()
            .contains("TCP_NODELAY")
    );
    // The same report as text, for clients that read only `content`.
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(&text, report);
    assert_eq!(result["_meta"]["netdoctor/exitCode"], 1);
    assert_schema(report);

    // A bad file is a tool error that names it, and the session goes on.
    let bad = c.request(
        json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{
        "name":"analyze","arguments":{"file":"/nonexistent/x.pcap"}}}),
    );
    assert_eq!(bad["result"]["isError"], true);
    assert!(
        bad["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("/nonexistent/x.pcap"),
        "{bad}"
    );
    let ping = c.request(json!({"jsonrpc":"2.0","id":5,"method":"ping"}));
    assert_eq!(ping["result"], json!({}));
    c.finish();
}

#[test]
fn the_stateless_revision_discovers_and_calls_without_initialize() {
    let mut c = Client::start();
    let meta = json!({"protocolVersion": "2026-07-28"});
    let d = c.request(
        json!({"jsonrpc":"2.0","id":"d","method":"server/discover","params":{"_meta": meta}}),
    );
    assert_eq!(d["result"]["protocolVersion"], "2026-07-28");
    assert_eq!(d["result"]["tools"].as_array().unwrap().len(), 6);
    let pcap = captures_dir().join("lab-healthy.pcap");
    let call = c.request(
        json!({"jsonrpc":"2.0","id":"c","method":"tools/call","params":{
        "_meta": meta, "name":"analyze","arguments":{"file": pcap.to_str().unwrap()}}}),
    );
    let report = &call["result"]["structuredContent"];
    // 10 exchanges: below the verdict rule's minimum, so not called healthy.
    assert_eq!(report["verdict"], "inconclusive", "{call}");
    assert!(report["findings"].as_array().unwrap().is_empty());
    c.finish();
}
