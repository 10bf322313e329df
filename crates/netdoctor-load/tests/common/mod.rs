//! A keep-alive HTTP/1.1 test server on 127.0.0.1 (port 0, bound until dropped) that counts the
//! requests it reads and answers each with a function of the test, for the test binaries that
//! need no more than that (`engine.rs` has its own, with stalls and failure modes).

use std::io::{self, Read};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;

use netdoctor_load::HttpTarget;

/// Writes the answer to the `k`-th request (1-based) of a connection.
pub type Answer = fn(u64, &mut TcpStream) -> io::Result<()>;

pub struct Server {
    pub target: HttpTarget,
    /// Request heads read so far, all connections.
    pub requests: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl Server {
    pub fn start(answer: Answer) -> Server {
        // Bound and listening before `start` returns: the ready signal is the listen itself.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (r, s) = (requests.clone(), stop.clone());
        let accept = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                let r = r.clone();
                std::thread::spawn(move || serve(stream, answer, &r));
            }
        });
        Server {
            target: HttpTarget {
                addr,
                host: addr.to_string(),
                path: "/".to_string(),
            },
            requests,
            stop,
            accept: Some(accept),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop, which then sees the flag.
        let _ = TcpStream::connect(self.target.addr);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

/// Reads request heads (each ended by an empty line) and answers each, until the client closes.
fn serve(mut s: TcpStream, answer: Answer, count: &AtomicU64) {
    s.set_nodelay(true).unwrap();
    let mut buf = Vec::new();
    let mut k = 0u64;
    while next_request(&mut s, &mut buf) {
        k += 1;
        count.fetch_add(1, Ordering::SeqCst);
        if answer(k, &mut s).is_err() {
            return;
        }
    }
}

/// Reads until a whole request head (ended by an empty line) is in `buf` and drops it from
/// `buf`; false when the client closed (or the read failed) first.
pub fn next_request(s: &mut TcpStream, buf: &mut Vec<u8>) -> bool {
    let mut tmp = [0u8; 4096];
    loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.drain(..p + 4);
            return true;
        }
        match s.read(&mut tmp) {
            Ok(0) | Err(_) => return false,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
    }
}
