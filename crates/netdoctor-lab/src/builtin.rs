//! The built-in reference server: answers the way the lab's nginx does, for machines without nginx.
//!
//! Each response is written in two `write()` calls — the 238-byte header block, then the 615-byte
//! page — exactly the pattern nginx produces with `sendfile on; tcp_nopush off;`. With
//! `TCP_NODELAY` off on the accepted socket, Nagle's algorithm holds the second write until the
//! first is acknowledged, which is the reference stall. It runs as threads of the calling process
//! inside the lab's server namespace, so it lives only as long as that process (the demo); `lab
//! start` needs nginx, because the lab must outlive the command.
//!
//! Hand-written (blocking sockets, a thread per connection) rather than built on an HTTP crate:
//! the point is control over the exact write pattern and socket options, and the demo runs a
//! few hundred connections at most.

use crate::DEFAULT_PAGE;
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often blocked threads look at the stop flag.
const POLL: Duration = Duration::from_millis(50);
/// Largest request head accepted; a longer one closes the connection.
const MAX_HEAD: usize = 16 * 1024;

/// Running servers; [`BuiltinServers::stop`] (or drop) ends every thread.
pub struct BuiltinServers {
    stop: Arc<AtomicBool>,
    conns: Conns,
    threads: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for BuiltinServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuiltinServers")
            .field("threads", &self.threads.len())
            .finish()
    }
}

/// Open connections by id, so `stop` can shut them down and each is closed when it ends.
type Conns = Arc<Mutex<HashMap<u64, TcpStream>>>;

/// The response head, shaped like nginx's (238 bytes with these values).
pub fn response_head(body_len: usize) -> String {
    format!(
        "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1 (netdoctor built-in)\r\n\
         Date: Thu, 01 Jan 2026 00:00:00 GMT\r\nContent-Type: text/html\r\n\
         Content-Length: {body_len}\r\nLast-Modified: Thu, 01 Jan 2026 00:00:00 GMT\r\n\
         Connection: keep-alive\r\nETag: \"netdoctor\"\r\nAccept-Ranges: bytes\r\n\r\n"
    )
}

/// How the built-in server accepts and closes, for the lab cases (`lab start --case`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServeOptions {
    /// `listen()` backlog.
    pub backlog: i32,
    /// Accept at most one connection per this interval (a busy, slow acceptor).
    pub accept_every: Option<Duration>,
    /// Ignore `Connection: close` and wait for the client to close first, so TIME_WAIT lands on
    /// the client (as with a server that lets clients close).
    pub client_closes: bool,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            backlog: 128,
            accept_every: None,
            client_closes: false,
        }
    }
}

impl BuiltinServers {
    /// Binds every `(addr, tcp_nodelay)` in the calling thread's network namespace and serves
    /// until stopped. Returns once all listeners are bound (the ready signal).
    pub fn start(servers: &[(SocketAddr, bool)]) -> io::Result<BuiltinServers> {
        Self::start_with(servers, ServeOptions::default())
    }

    /// Like [`BuiltinServers::start`], with a backlog, pace of accepting and closing behaviour.
    pub fn start_with(
        servers: &[(SocketAddr, bool)],
        opts: ServeOptions,
    ) -> io::Result<BuiltinServers> {
        let stop = Arc::new(AtomicBool::new(false));
        let conns: Conns = Arc::new(Mutex::new(HashMap::new()));
        let mut listeners = Vec::new();
        for &(addr, nodelay) in servers {
            let l = bind(addr, opts.backlog)
                .map_err(|e| io::Error::new(e.kind(), format!("bind {addr}: {e}")))?;
            l.set_nonblocking(true)?;
            listeners.push((l, nodelay));
        }
        let mut threads = Vec::new();
        for (listener, nodelay) in listeners {
            let (stop, conns) = (Arc::clone(&stop), Arc::clone(&conns));
            threads.push(
                std::thread::Builder::new()
                    .name("builtin-accept".into())
                    .spawn(move || accept_loop(listener, nodelay, opts, &stop, &conns))?,
            );
        }
        Ok(BuiltinServers {
            stop,
            conns,
            threads,
        })
    }

    /// Stops accepting, closes every connection, and waits for the listener threads.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for c in self
            .conns
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain()
            .map(|(_, c)| c)
        {
            let _ = c.shutdown(Shutdown::Both);
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for BuiltinServers {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn bind(addr: SocketAddr, backlog: i32) -> io::Result<TcpListener> {
    let s = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        None,
    )?;
    s.set_reuse_address(true)?;
    s.bind(&addr.into())?;
    s.listen(backlog)?;
    Ok(s.into())
}

fn accept_loop(
    listener: TcpListener,
    nodelay: bool,
    opts: ServeOptions,
    stop: &Arc<AtomicBool>,
    conns: &Conns,
) {
    let mut next_id = 0u64;
    while !stop.load(Ordering::Relaxed) {
        if let Some(every) = opts.accept_every {
            std::thread::sleep(every);
        }
        match listener.accept() {
            Ok((stream, _)) => {
                let Ok(handle) = stream.try_clone() else {
                    continue;
                };
                if stream.set_nonblocking(false).is_err() || stream.set_nodelay(nodelay).is_err() {
                    continue;
                }
                let _ = stream.set_read_timeout(Some(POLL));
                next_id += 1;
                let id = next_id;
                conns
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(id, handle);
                let (stop, conns) = (Arc::clone(stop), Arc::clone(conns));
                let _ = std::thread::Builder::new()
                    .name("builtin-conn".into())
                    .spawn(move || {
                        serve(stream, opts.client_closes, &stop);
                        // The last handle: the connection closes here.
                        conns.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
                    });
            }
            // Wait for the next connection (woken at once, not on a timer: a 10 ms sleep
            // here added up to 10 ms of accept delay to every new connection, which the
            // port-exhaustion case's one-connection-per-request load read as server time),
            // looking at the stop flag every POLL.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if netdoctor_sys::poll::wait_readable(&listener, POLL).is_err() {
                    std::thread::sleep(POLL / 5);
                }
            }
            Err(_) => std::thread::sleep(POLL / 5),
        }
    }
}

/// Answers every complete request head on the connection with the page, in two writes.
fn serve(mut stream: TcpStream, client_closes: bool, stop: &AtomicBool) {
    let body = DEFAULT_PAGE.as_bytes();
    let head = response_head(body.len());
    let mut buf = vec![0u8; 4096];
    let mut have = 0usize;
    while !stop.load(Ordering::Relaxed) {
        if have == buf.len() {
            if buf.len() >= MAX_HEAD {
                return;
            }
            buf.resize(buf.len() * 2, 0);
        }
        match stream.read(&mut buf[have..]) {
            Ok(0) => return,
            Ok(n) => have += n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                continue;
            }
            Err(_) => return,
        }
        while let Some(end) = find_head_end(&buf[..have]) {
            let close = !client_closes && wants_close(&buf[..end]);
            if stream.write_all(head.as_bytes()).is_err() || stream.write_all(body).is_err() {
                return;
            }
            if close {
                let _ = stream.shutdown(Shutdown::Write);
                return;
            }
            buf.copy_within(end..have, 0);
            have -= end;
        }
    }
}

/// True when the request head asks to close the connection after the response.
fn wants_close(head: &[u8]) -> bool {
    String::from_utf8_lossy(head)
        .lines()
        .any(|l| l.to_ascii_lowercase().replace(' ', "") == "connection:close")
}

/// Index just past the first `\r\n\r\n`.
fn find_head_end(b: &[u8]) -> Option<usize> {
    b.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_is_shaped_like_nginx() {
        let head = response_head(615);
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"));
        assert!(head.contains("Content-Length: 615\r\n"));
        assert!(head.ends_with("\r\n\r\n"));
        // Close to nginx's 238 bytes: small enough that Nagle holds the body behind it.
        assert!((200..300).contains(&head.len()), "{}", head.len());
    }

    #[test]
    fn serves_pipelined_requests_in_order_and_stops() {
        // Not a port bind(0) freed: another test could take it before the server binds it.
        let port = crate::ports::unused_port([127, 0, 0, 1]);
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let servers = BuiltinServers::start(&[(addr, true)]).unwrap();
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let one = response_head(DEFAULT_PAGE.len()).len() + DEFAULT_PAGE.len();
        let mut got = vec![0u8; 2 * one];
        c.read_exact(&mut got).unwrap();
        assert!(got.starts_with(b"HTTP/1.1 200 OK"));
        assert!(got[one..].starts_with(b"HTTP/1.1 200 OK"));
        assert!(got.ends_with(DEFAULT_PAGE.as_bytes()));
        // `Connection: close` is honoured: the response, then EOF.
        let mut c2 = TcpStream::connect(addr).unwrap();
        c2.write_all(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut all = Vec::new();
        c2.read_to_end(&mut all).unwrap();
        assert_eq!(all.len(), one);
        servers.stop();
        // After stop the connection is closed by the server.
        let mut rest = Vec::new();
        let _ = c.set_read_timeout(Some(Duration::from_secs(5)));
        assert_eq!(c.read_to_end(&mut rest).unwrap_or(0), 0);
    }
}
