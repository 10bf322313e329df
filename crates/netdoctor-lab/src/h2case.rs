//! The HTTP/2 cases, each on `far-l2`'s bridge (no router, +40 ms RTT): an h2c server
//! (prior knowledge) from [`SERVER_PY`] (`h2server.py`: python3-h2, Debian's `python3-h2` for
//! `/usr/bin/python3`) in the server namespace and `h2load` clients (nghttp2-client) in the
//! client namespace, each in a `sh` loop of short runs (a new connection per run, so a capture
//! started at any time sees whole connections: HTTP/2 is read from the preface and SETTINGS)
//! for at most [`LOAD_SECS`] s. Every case but `h2-window` also runs a look-alike on a second
//! port of the same path, the control its test compares with.
//!
//! | case | port: server | control port: server |
//! |---|---|---|
//! | `h2-window` | 8090: 64 KB windows, 256 KiB uploads (`h2_flow_control_stall`) | — |
//! | `h2-stream-limit` | 8091: MAX_CONCURRENT_STREAMS 2, answers after 60–160 ms, `-m 8` | 8092: the same with python3-h2's 100 |
//! | `h2-resets` | 8093: every 4th stream RST_STREAM INTERNAL_ERROR | 8094: every 4th stream HTTP 503 |
//! | `h2-head-of-line` | 8095: 32 KiB answers, `-m 10`, 2 % loss each way | 8096: the same over HTTP/1.1 |

use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::LabError;
use crate::cases::Case;

/// The server every case runs (also run by `testdata/captures/make-h2.sh`).
pub const SERVER_PY: &str = include_str!("h2server.py");
/// Port of the `h2-window` case's server.
pub const H2_WINDOW_PORT: u16 = 8090;
/// Bytes of each `h2-window` upload.
pub const UPLOAD_BYTES: usize = 256 * 1024;
/// How long a case's clients run; they end by themselves then.
pub const LOAD_SECS: u32 = 600;
/// Uploads per `h2-window` h2load run (one connection each).
pub const RUN_REQUESTS: u32 = 2;
/// The `h2-stream-limit` case: the limited server's port, its limit, the unlimited control's
/// port and the client's streams per connection.
pub const STREAM_LIMIT_PORT: u16 = 8091;
pub const STREAM_LIMIT: u32 = 2;
pub const UNLIMITED_PORT: u16 = 8092;
/// Each answer comes after a random time between these (ms): the streams end one by one, so
/// each freed slot is refilled while the other stream is still open.
pub const ANSWER_DELAY_MS: (u32, u32) = (60, 160);
pub const WANTED_STREAMS: u32 = 8;
/// The `h2-resets` case: the resetting server's port, the 5xx control's port, and every how
/// many streams each misbehaves.
pub const RESETS_PORT: u16 = 8093;
pub const ERRORS_PORT: u16 = 8094;
pub const EVERY: u32 = 4;
/// The `h2-head-of-line` case: the h2 server's port, the HTTP/1.1 control's port, the answer
/// size and the bridge's loss (each way).
pub const HOL_PORT: u16 = 8095;
pub const HOL_H1_PORT: u16 = 8096;
pub const HOL_BODY: usize = 32 * 1024;
pub const HOL_LOSS: f64 = 0.02;
/// A single h2load run gives up after this long (a lost connection cannot outlive the lab).
const RUN_TIMEOUT_SECS: u32 = 30;

/// One server and the h2load arguments of its client.
struct Part {
    port: u16,
    server: Vec<String>,
    client: String,
    what: &'static str,
}

fn args(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

/// What `case` runs (`body`: the upload file, for `h2-window`).
fn parts(case: Case, body: &Path) -> Vec<Part> {
    let part = |port, server: String, client: String, what| Part {
        port,
        server: args(&server),
        client,
        what,
    };
    match case {
        Case::H2Window => vec![part(
            H2_WINDOW_PORT,
            String::new(),
            format!("-c 1 -m 1 -n {RUN_REQUESTS} -d '{}'", body.display()),
            "h2-window",
        )],
        Case::H2StreamLimit => {
            let (lo, hi) = ANSWER_DELAY_MS;
            let slow = format!("--delay-ms {lo} --delay-max-ms {hi} --body 1024");
            let client = format!("-c 1 -m {WANTED_STREAMS} -n {}", 4 * WANTED_STREAMS);
            vec![
                part(
                    STREAM_LIMIT_PORT,
                    format!("{slow} --max-streams {STREAM_LIMIT}"),
                    client.clone(),
                    "stream-limited",
                ),
                part(UNLIMITED_PORT, slow, client, "unlimited"),
            ]
        }
        Case::H2Resets => {
            let client = "-c 1 -m 4 -n 24".to_string();
            vec![
                part(
                    RESETS_PORT,
                    format!("--body 512 --reset-every {EVERY} --reset-code 2"),
                    client.clone(),
                    "resetting",
                ),
                part(
                    ERRORS_PORT,
                    format!("--body 512 --status-every {EVERY}:503"),
                    client,
                    "503",
                ),
            ]
        }
        Case::H2HeadOfLine => vec![
            part(
                HOL_PORT,
                format!("--body {HOL_BODY}"),
                "-c 1 -m 10 -n 30".to_string(),
                "h2",
            ),
            part(
                HOL_H1_PORT,
                format!("--http1 --body {HOL_BODY}"),
                "--h1 -c 1 -n 30".to_string(),
                "HTTP/1.1",
            ),
        ],
        _ => Vec::new(),
    }
}

fn spawn(netns: &str, program: &str, args: &[String], what: &str) -> Result<Child, LabError> {
    Command::new("ip")
        .args(["netns", "exec", netns, program])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|source| LabError::Io {
            op: format!("start {what} in {netns}"),
            source,
        })
}

/// Waits (at most 5 s) until `ip:port` accepts connections in `netns`.
fn wait_listening(netns: &str, ip: &str, port: u16) -> Result<(), LabError> {
    let addr: std::net::SocketAddr =
        format!("{ip}:{port}")
            .parse()
            .map_err(|_| LabError::InvalidName {
                name: ip.to_string(),
                reason: "not an address".to_string(),
            })?;
    for _ in 0..100 {
        let ok = crate::in_netns(netns, || {
            std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_millis(100))
                .is_ok()
        })?;
        if ok {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Err(LabError::Io {
        op: format!("wait for the HTTP/2 case's server on {addr}"),
        source: std::io::Error::new(std::io::ErrorKind::TimedOut, "not listening after 5 s"),
    })
}

fn not_installed(op: String, pkg: &str) -> LabError {
    LabError::Io {
        op,
        source: std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("not installed (apt-get install {pkg})"),
        ),
    }
}

/// Whether the case's tools are installed (the error names the package otherwise).
pub fn check_tools(case: Case) -> Result<(), LabError> {
    let mut tools = vec![
        ("/usr/bin/h2load", "nghttp2-client"),
        ("/usr/bin/python3", "python3-h2"),
    ];
    if case == Case::H2HeadOfLine {
        tools.push(("/usr/sbin/ethtool", "ethtool"));
    }
    for (tool, pkg) in tools {
        if !crate::is_executable(Path::new(tool)) {
            return Err(not_installed(format!("the {case} case runs {tool}"), pkg));
        }
    }
    let ok = Command::new("/usr/bin/python3")
        .args(["-c", "import h2"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        return Err(not_installed(
            format!("the {case} case imports h2 in /usr/bin/python3"),
            "python3-h2",
        ));
    }
    Ok(())
}

/// Segmentation offloads off on both ends of the bridge (`cli-b`, `srv-b`): the bridge then
/// drops single MTU-sized segments, as a lossy path does, not 64 KB TSO frames.
fn offloads_off(srv_ns: &str, cli_ns: &str) -> Result<(), LabError> {
    for (ns, dev) in [(srv_ns, "srv-b"), (cli_ns, "cli-b")] {
        let out = Command::new("ip")
            .args(["netns", "exec", ns, "/usr/sbin/ethtool", "-K", dev])
            .args(["tso", "off", "gso", "off", "gro", "off"])
            .stdin(Stdio::null())
            .output()
            .map_err(|source| LabError::Io {
                op: format!("run ethtool in {ns}"),
                source,
            })?;
        if !out.status.success() {
            return Err(LabError::Command {
                command: format!("ip netns exec {ns} ethtool -K {dev} tso off gso off gro off"),
                status: out.status.to_string(),
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
    }
    Ok(())
}

/// Starts `case`'s servers in `srv_ns` at `ip` and, once they listen, its clients in `cli_ns`;
/// the script (and body file) go to `dir`. Returns every child (children of the case
/// process) with what it is, servers first; on failure those already started are ended here.
pub fn start(
    case: Case,
    srv_ns: &str,
    cli_ns: &str,
    ip: &str,
    dir: &Path,
) -> Result<Vec<(Child, String)>, LabError> {
    let mut started: Vec<(Child, String)> = Vec::new();
    let r = start_into(case, srv_ns, cli_ns, ip, dir, &mut started);
    if let Err(e) = r {
        for (c, _) in &mut started {
            let _ = c.kill();
            let _ = c.wait();
        }
        return Err(e);
    }
    Ok(started)
}

fn start_into(
    case: Case,
    srv_ns: &str,
    cli_ns: &str,
    ip: &str,
    dir: &Path,
    started: &mut Vec<(Child, String)>,
) -> Result<(), LabError> {
    let script = dir.join("h2server.py");
    let body = dir.join("h2-window-body");
    let mut files = vec![(&script, SERVER_PY.as_bytes().to_vec())];
    if case == Case::H2Window {
        files.push((&body, vec![b'u'; UPLOAD_BYTES]));
    }
    for (path, bytes) in files {
        std::fs::write(path, bytes).map_err(|source| LabError::Io {
            op: format!("write {}", path.display()),
            source,
        })?;
    }
    if case == Case::H2HeadOfLine {
        offloads_off(srv_ns, cli_ns)?;
    }
    let parts = parts(case, &body);
    for p in &parts {
        let mut a = vec![script.to_string_lossy().into_owned(), ip.to_string()];
        a.push(p.port.to_string());
        a.extend(p.server.iter().cloned());
        let what = format!("{} h2 server (python3-h2, :{})", p.what, p.port);
        started.push((spawn(srv_ns, "/usr/bin/python3", &a, &what)?, what));
    }
    for p in &parts {
        wait_listening(srv_ns, ip, p.port)?;
    }
    for p in &parts {
        let url = format!("http://{ip}:{}/", p.port);
        let sh = format!(
            "end=$(($(date +%s)+{LOAD_SECS})); while [ \"$(date +%s)\" -lt \"$end\" ]; do \
             timeout {RUN_TIMEOUT_SECS} /usr/bin/h2load {} '{url}' >/dev/null 2>&1 || sleep 0.2; done",
            p.client
        );
        let what = format!("h2load loop (:{})", p.port);
        started.push((
            spawn(cli_ns, "/bin/sh", &["-c".to_string(), sh], &what)?,
            what,
        ));
    }
    Ok(())
}
