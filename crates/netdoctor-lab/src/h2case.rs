//! The `h2-window` case: HTTP/2 uploads against a server whose flow-control window is the
//! 64 KB default, behind the `far-l2` bridge (+40 ms RTT). The server (python3-h2, Debian's
//! `python3-h2` for `/usr/bin/python3`) keeps the protocol's initial windows (65 535 bytes,
//! stream and connection) and opens them again only as it reads; the client (`h2load -d`,
//! nghttp2-client, in a `sh` loop: [`RUN_REQUESTS`] uploads per connection) posts 256 KiB
//! bodies one after another for at most [`LOAD_SECS`] s. Each window costs a round trip:
//! DATA waits for WINDOW_UPDATE (`h2_flow_control_stall`).

use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::LabError;

/// Port of the case's HTTP/2 (h2c, prior knowledge) server.
pub const H2_WINDOW_PORT: u16 = 8090;
/// Bytes of each upload.
pub const UPLOAD_BYTES: usize = 256 * 1024;
/// How long the case's client uploads; it ends by itself then.
pub const LOAD_SECS: u32 = 600;
/// Uploads per h2load run (one connection each).
pub const RUN_REQUESTS: u32 = 2;

/// The server: h2c, default windows, WINDOW_UPDATE only for what it has read.
const SERVER_PY: &str = r#"
import socket, sys
import h2.config, h2.connection, h2.events
host, port = sys.argv[1], int(sys.argv[2])
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind((host, port)); ls.listen(16)
while True:
    c, _ = ls.accept()
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
    conn.initiate_connection(); c.sendall(conn.data_to_send())
    while True:
        try:
            data = c.recv(65536)
        except OSError:
            break
        if not data:
            break
        for ev in conn.receive_data(data):
            if isinstance(ev, h2.events.DataReceived):
                conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            if isinstance(ev, h2.events.StreamEnded):
                conn.send_headers(ev.stream_id, [(":status", "200"), ("content-length", "2")])
                conn.send_data(ev.stream_id, b"ok", end_stream=True)
        out = conn.data_to_send()
        if out:
            c.sendall(out)
    c.close()
"#;

fn spawn(netns: &str, program: &str, args: &[&str], what: &str) -> Result<Child, LabError> {
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
fn wait_listening(netns: &str, ip: &str, port: &str) -> Result<(), LabError> {
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
        op: format!("wait for the h2-window server on {addr}"),
        source: std::io::Error::new(std::io::ErrorKind::TimedOut, "not listening after 5 s"),
    })
}

/// Whether the case's tools are installed (the error names the package otherwise).
pub fn check_tools() -> Result<(), LabError> {
    for (tool, pkg) in [
        ("/usr/bin/h2load", "nghttp2-client"),
        ("/usr/bin/python3", "python3-h2"),
    ] {
        if !crate::is_executable(Path::new(tool)) {
            return Err(LabError::Io {
                op: format!("the h2-window case runs {tool}"),
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("not installed (apt-get install {pkg})"),
                ),
            });
        }
    }
    let ok = Command::new("/usr/bin/python3")
        .args(["-c", "import h2"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        return Err(LabError::Io {
            op: "the h2-window case imports h2 in /usr/bin/python3".to_string(),
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "not installed (apt-get install python3-h2)",
            ),
        });
    }
    Ok(())
}

/// Starts the server in `srv_ns` at `ip` and, once it listens, the uploading client in
/// `cli_ns`; the body file goes to `dir`. Both are children of the case process.
pub fn start(srv_ns: &str, cli_ns: &str, ip: &str, dir: &Path) -> Result<(Child, Child), LabError> {
    let script = dir.join("h2-window-server.py");
    let body = dir.join("h2-window-body");
    for (path, bytes) in [
        (&script, SERVER_PY.as_bytes().to_vec()),
        (&body, vec![b'u'; UPLOAD_BYTES]),
    ] {
        std::fs::write(path, bytes).map_err(|source| LabError::Io {
            op: format!("write {}", path.display()),
            source,
        })?;
    }
    let port = H2_WINDOW_PORT.to_string();
    let script_s = script.to_string_lossy().into_owned();
    let mut server = spawn(
        srv_ns,
        "/usr/bin/python3",
        &[&script_s, ip, &port],
        "the h2-window server",
    )?;
    // Wait (bounded) until it listens; on failure the server is ended here (it is not in the
    // lab's state yet).
    if let Err(e) = wait_listening(srv_ns, ip, &port) {
        let _ = server.kill();
        let _ = server.wait();
        return Err(e);
    }
    // Short runs, each on a new connection, so a capture started at any time sees whole
    // connections (their preface: HTTP/2 is read from the frames); bounded by LOAD_SECS.
    let url = format!("http://{ip}:{port}/upload");
    let script = format!(
        "end=$(($(date +%s)+{LOAD_SECS})); while [ \"$(date +%s)\" -lt \"$end\" ]; do \
         /usr/bin/h2load -c 1 -m 1 -n {RUN_REQUESTS} -d '{}' '{url}' >/dev/null 2>&1 || sleep 0.2; done",
        body.display()
    );
    let client = match spawn(
        cli_ns,
        "/bin/sh",
        &["-c", &script],
        "the h2-window client (h2load runs)",
    ) {
        Ok(c) => c,
        Err(e) => {
            let _ = server.kill();
            let _ = server.wait();
            return Err(e);
        }
    };
    Ok((server, client))
}
