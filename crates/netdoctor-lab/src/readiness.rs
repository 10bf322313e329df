//! Readiness: wait until nginx runs and both servers answer from the client namespace.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::nginx::{self, StatePaths};
use crate::{DEFAULT_PAGE, LabError, LabServer, in_netns, netns};

/// Polls (bounded by `timeout`) until nginx's pid file names a live nginx and both servers answer
/// an HTTP GET from inside the client namespace. Returns the master PID.
pub(crate) fn wait_ready(
    srv: &str,
    cli: &str,
    servers: &[LabServer],
    paths: &StatePaths,
    timeout: Duration,
) -> Result<i32, LabError> {
    let started = Instant::now();
    let srv_path = netns::netns_path(srv);
    loop {
        let pid = nginx::read_pid(&paths.pid);
        let detail = match pid {
            None => format!("no pid in {}", paths.pid.display()),
            Some(pid) if !nginx::pid_alive(pid) => {
                // The daemon died: no point in waiting longer.
                return Err(not_ready(
                    srv,
                    started,
                    format!("nginx master {pid} exited"),
                    paths,
                ));
            }
            Some(pid) if !nginx::is_lab_nginx(pid, &paths.conf, &srv_path) => {
                format!(
                    "pid {pid} from {} is not this lab's nginx",
                    paths.pid.display()
                )
            }
            Some(pid) => {
                let probes = in_netns(cli, || {
                    servers
                        .iter()
                        .map(|s| {
                            http_check(s.addr, Duration::from_millis(500))
                                .map_err(|e| format!("{}: {e}", s.url))
                        })
                        .collect::<Vec<_>>()
                })?;
                let failures: Vec<String> = probes.into_iter().filter_map(|p| p.err()).collect();
                if failures.is_empty() {
                    return Ok(pid);
                }
                failures.join("; ")
            }
        };
        if started.elapsed() >= timeout {
            return Err(not_ready(srv, started, detail, paths));
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

pub(crate) fn not_ready(
    srv: &str,
    started: Instant,
    detail: String,
    paths: &StatePaths,
) -> LabError {
    LabError::NotReady {
        netns: srv.to_string(),
        waited_ms: started.elapsed().as_millis(),
        detail,
        error_log: paths.error_log.clone(),
        log: nginx::log_tail(&paths.error_log, 20),
    }
}

/// One HTTP/1.1 GET of `/` with `Connection: close`; Ok when the status is 200 and the body is
/// the lab page. Bounded: `timeout` per connect/read/write, at most 64 KiB read.
pub(crate) fn http_check(addr: SocketAddr, timeout: Duration) -> Result<(), String> {
    let mut stream =
        TcpStream::connect_timeout(&addr, timeout).map_err(|e| format!("connect {addr}: {e}"))?;
    stream
        .set_read_timeout(Some(timeout))
        .and_then(|_| stream.set_write_timeout(Some(timeout)))
        .map_err(|e| format!("set timeouts on {addr}: {e}"))?;
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: netdoctor-lab\r\nConnection: close\r\n\r\n")
        .map_err(|e| format!("send request to {addr}: {e}"))?;
    let mut response = Vec::new();
    stream
        .take(64 * 1024)
        .read_to_end(&mut response)
        .map_err(|e| format!("read response from {addr}: {e}"))?;
    let text = String::from_utf8_lossy(&response);
    let status_line = text.lines().next().unwrap_or("");
    if !status_line.starts_with("HTTP/1.1 200") {
        return Err(format!("{addr} answered {status_line:?}"));
    }
    if !text.ends_with(DEFAULT_PAGE) {
        return Err(format!("{addr} answered 200 without the lab page"));
    }
    Ok(())
}
