//! One DNS question asked directly of one nameserver over UDP or TCP, timed.
//!
//! The wire format is `hickory-proto`'s; the exchange itself (one socket, one question, a
//! deadline) is a few lines of std networking, so no resolver crate is involved: we want the
//! time and the fate of each single try, which a resolver hides behind its retries.

use hickory_proto::op::{Message, MessageType, OpCode, Query};
use hickory_proto::rr::{Name, RecordType};
use serde::Serialize;
use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

/// UDP or TCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    Udp,
    Tcp,
}

/// What became of one try.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// The server answered (any rcode: NXDOMAIN is an answer).
    Answer {
        rcode: String,
        /// `"A 10.0.0.1"`, `"PTR host.example."`, … in answer-section order.
        answers: Vec<String>,
        /// The TC bit: the answer did not fit the UDP datagram and must be asked again over
        /// TCP (what glibc does next); its records, if any, are incomplete.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        truncated: bool,
    },
    /// No answer before the deadline.
    Timeout,
    /// The try failed at once (refused, unreachable, malformed answer).
    Error { error: String },
}

/// One try: how long it took and what came back.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Try {
    /// Time to the answer or the error; `None` on a timeout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elapsed_ms: Option<f64>,
    #[serde(flatten)]
    pub outcome: Outcome,
}

impl Try {
    pub fn answered(&self) -> bool {
        matches!(self.outcome, Outcome::Answer { .. })
    }
    pub fn answers(&self) -> &[String] {
        match &self.outcome {
            Outcome::Answer { answers, .. } => answers,
            _ => &[],
        }
    }
}

/// Builds the query message (recursion desired, as the stub resolver sends it).
fn build(name: &str, rtype: RecordType, id: u16) -> Result<Vec<u8>, String> {
    let name = Name::from_ascii(name).map_err(|e| format!("invalid name {name:?}: {e}"))?;
    let mut msg = Message::new(id, MessageType::Query, OpCode::Query);
    msg.metadata.recursion_desired = true;
    msg.add_query(Query::query(name, rtype));
    msg.to_vec().map_err(|e| format!("encode query: {e}"))
}

fn parse_answer(buf: &[u8]) -> Result<Outcome, String> {
    let msg = Message::from_vec(buf).map_err(|e| format!("malformed answer: {e}"))?;
    Ok(Outcome::Answer {
        rcode: msg.metadata.response_code.to_string(),
        answers: msg
            .answers
            .iter()
            .map(|r| format!("{} {}", r.record_type(), r.data))
            .collect(),
        truncated: msg.metadata.truncation,
    })
}

/// A query id that differs between tries and processes: clock nanoseconds, pid and a counter.
fn next_id() -> u16 {
    static COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let mixed = (nanos ^ std::process::id().rotate_left(16) ^ n.wrapping_mul(0x9e37_79b9))
        .wrapping_mul(0x85eb_ca6b);
    (mixed >> 16) as u16
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn io_outcome(op: &str, e: &std::io::Error) -> Outcome {
    let what = match e.kind() {
        ErrorKind::ConnectionRefused => "refused (nothing listens on port 53)".to_string(),
        ErrorKind::UnexpectedEof => "connection closed without an answer".to_string(),
        _ => match e.raw_os_error() {
            Some(libc::ENETUNREACH) => NO_ROUTE.to_string(),
            Some(libc::EHOSTUNREACH) => HOST_UNREACHABLE.to_string(),
            _ => e.to_string(),
        },
    };
    Outcome::Error {
        error: format!("{op}: {what}"),
    }
}

/// How a try that failed for want of a route says so (ENETUNREACH).
pub const NO_ROUTE: &str = "no route to the server (network unreachable)";
/// How a try whose next hop never answered ARP, or that a router refused, says so
/// (EHOSTUNREACH).
pub const HOST_UNREACHABLE: &str = "host unreachable (no ARP reply, or a router said so)";

/// Asks `server` for `name`/`rtype` once over `transport`, waiting at most `timeout`.
pub fn ask(
    server: SocketAddr,
    transport: Transport,
    name: &str,
    rtype: RecordType,
    timeout: Duration,
) -> Try {
    let id = next_id();
    let query = match build(name, rtype, id) {
        Ok(q) => q,
        Err(error) => {
            return Try {
                elapsed_ms: None,
                outcome: Outcome::Error { error },
            };
        }
    };
    let start = Instant::now();
    let deadline = start + timeout;
    let result = match transport {
        Transport::Udp => ask_udp(server, &query, id, deadline),
        Transport::Tcp => ask_tcp(server, &query, deadline),
    };
    let elapsed = start.elapsed();
    match result {
        Some(Ok(buf)) => Try {
            elapsed_ms: Some(ms(elapsed)),
            outcome: parse_answer(&buf).unwrap_or_else(|error| Outcome::Error { error }),
        },
        Some(Err(outcome)) => Try {
            elapsed_ms: Some(ms(elapsed)),
            outcome,
        },
        None => Try {
            elapsed_ms: None,
            outcome: Outcome::Timeout,
        },
    }
}

fn remaining(deadline: Instant) -> Option<Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    (!left.is_zero()).then_some(left)
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

/// `None` = timeout; `Some(Err)` = failed at once; `Some(Ok)` = the answer's bytes.
fn ask_udp(
    server: SocketAddr,
    query: &[u8],
    id: u16,
    deadline: Instant,
) -> Option<Result<Vec<u8>, Outcome>> {
    let local: SocketAddr = match server.ip() {
        IpAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
        IpAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let sock = match UdpSocket::bind(local).and_then(|s| s.connect(server).map(|_| s)) {
        Ok(s) => s,
        Err(e) => return Some(Err(io_outcome(&format!("udp socket to {server}"), &e))),
    };
    if let Err(e) = sock.send(query) {
        return Some(Err(io_outcome(&format!("send to {server}"), &e)));
    }
    let mut buf = vec![0u8; 65535];
    loop {
        let left = remaining(deadline)?;
        let _ = sock.set_read_timeout(Some(left));
        match sock.recv(&mut buf) {
            // Answers to other ids (late answers of an earlier try) are skipped.
            Ok(n) if n >= 2 && u16::from_be_bytes([buf[0], buf[1]]) == id => {
                return Some(Ok(buf[..n].to_vec()));
            }
            Ok(_) => continue,
            Err(e) if is_timeout(&e) => return None,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Some(Err(io_outcome(&format!("receive from {server}"), &e))),
        }
    }
}

fn ask_tcp(
    server: SocketAddr,
    query: &[u8],
    deadline: Instant,
) -> Option<Result<Vec<u8>, Outcome>> {
    let left = remaining(deadline)?;
    let mut stream = match TcpStream::connect_timeout(&server, left) {
        Ok(s) => s,
        Err(e) if is_timeout(&e) => return None,
        Err(e) => return Some(Err(io_outcome(&format!("connect {server}"), &e))),
    };
    let _ = stream.set_nodelay(true);
    let mut framed = (query.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(query);
    if let Err(e) = stream.write_all(&framed) {
        return Some(Err(io_outcome(&format!("send to {server}"), &e)));
    }
    let mut read_exact = |buf: &mut [u8]| -> Option<Result<(), Outcome>> {
        let left = remaining(deadline)?;
        let _ = stream.set_read_timeout(Some(left));
        match stream.read_exact(buf) {
            Ok(()) => Some(Ok(())),
            Err(e) if is_timeout(&e) => None,
            Err(e) => Some(Err(io_outcome(&format!("receive from {server}"), &e))),
        }
    };
    let mut len = [0u8; 2];
    if let Err(o) = read_exact(&mut len)? {
        return Some(Err(o));
    }
    let mut buf = vec![0u8; u16::from_be_bytes(len) as usize];
    if let Err(o) = read_exact(&mut buf)? {
        return Some(Err(o));
    }
    Some(Ok(buf))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hickory_proto::rr::rdata::A;
    use hickory_proto::rr::{RData, Record};

    /// A one-shot UDP server on loopback that answers the first query with one A record.
    #[test]
    fn udp_query_against_a_loopback_responder() {
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = server.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let mut buf = [0u8; 512];
            let (n, peer) = server.recv_from(&mut buf).unwrap();
            let q = Message::from_vec(&buf[..n]).unwrap();
            let mut r = Message::response(q.metadata.id, OpCode::Query);
            r.add_query(q.queries[0].clone());
            r.add_answer(Record::from_rdata(
                q.queries[0].name().clone(),
                60,
                RData::A(A(Ipv4Addr::new(10, 1, 2, 3))),
            ));
            server.send_to(&r.to_vec().unwrap(), peer).unwrap();
        });
        let t0 = ask(
            addr,
            Transport::Udp,
            "svc.test.",
            RecordType::A,
            Duration::from_secs(2),
        );
        t.join().unwrap();
        assert!(t0.answered(), "{t0:?}");
        assert_eq!(t0.answers(), ["A 10.1.2.3"]);
        assert!(t0.elapsed_ms.is_some());
    }

    #[test]
    fn silent_server_times_out_and_closed_port_is_refused() {
        let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
        let t = ask(
            silent.local_addr().unwrap(),
            Transport::Udp,
            "x.test.",
            RecordType::A,
            Duration::from_millis(100),
        );
        assert_eq!(t.outcome, Outcome::Timeout);
        // A TCP port held bound without listen(): refused, and, unlike a port merely freed,
        // neither taken by another test nor picked as the connect's own local port.
        let held =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        held.bind(&std::net::SocketAddr::from((Ipv4Addr::LOCALHOST, 0)).into())
            .unwrap();
        let closed = held.local_addr().unwrap().as_socket().unwrap();
        let t = ask(
            closed,
            Transport::Tcp,
            "x.test.",
            RecordType::A,
            Duration::from_millis(500),
        );
        assert!(
            matches!(&t.outcome, Outcome::Error { error } if error.contains("refused")),
            "{t:?}"
        );
    }
}
