//! A small authoritative nameserver for the lab (UDP and TCP, wire format by `hickory-proto`)
//! that can be made slow, lossy, silent, or deaf to reverse (PTR) questions — the resolver
//! failures netdoctor's DNS findings name.
//!
//! It answers A (and an empty NOERROR for AAAA) for the names it was given, PTR for their
//! addresses, NXDOMAIN for the rest. Written here rather than using dnsmasq because the faults
//! must be exact and switchable (a fixed delay on every answer, a fraction of dropped queries,
//! no answer at all to PTR), which dnsmasq does not offer. Delayed UDP answers are sent by a
//! sender thread in due order, so concurrent questions (glibc asks A and AAAA at once) each wait
//! the delay once. Threads stop within 50 ms of [`Nameserver::stop`] or drop.

use crate::LabError;
use hickory_proto::op::{Message, MessageType, OpCode, ResponseCode};
use hickory_proto::rr::rdata::{A, PTR};
use hickory_proto::rr::{Name, RData, Record, RecordType};
use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How the nameserver misbehaves.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Behavior {
    /// Added before every answer.
    pub delay: Duration,
    /// Fraction of queries ignored (0..=1).
    pub loss: f64,
    /// Never answer PTR questions.
    pub drop_reverse: bool,
    /// Never answer anything (a dead server that still has its address).
    pub silent: bool,
}

/// The zone: names and their IPv4 addresses.
#[derive(Debug, Clone, Default)]
pub struct Zone {
    pub records: Vec<(String, Ipv4Addr)>,
}

fn norm(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

impl Zone {
    /// Builds the answer to `q`; `None` when the behaviour says not to answer.
    pub fn answer(&self, q: &Message, b: &Behavior) -> Option<Message> {
        let query = q.queries.first()?;
        if b.drop_reverse && query.query_type() == RecordType::PTR {
            return None;
        }
        let mut r = Message::new(q.metadata.id, MessageType::Response, OpCode::Query);
        r.metadata.authoritative = true;
        r.metadata.recursion_desired = q.metadata.recursion_desired;
        r.add_query(query.clone());
        let qname = norm(&query.name().to_ascii());
        let known = self.records.iter().filter(|(n, _)| norm(n) == qname);
        match query.query_type() {
            RecordType::A => {
                let mut any = false;
                for (_, ip) in known {
                    any = true;
                    r.add_answer(Record::from_rdata(
                        query.name().clone(),
                        60,
                        RData::A(A(*ip)),
                    ));
                }
                if !any {
                    r.metadata.response_code = ResponseCode::NXDomain;
                }
            }
            RecordType::PTR => {
                let hit = self
                    .records
                    .iter()
                    .find(|(_, ip)| norm(&Name::from(*ip).to_ascii()) == qname);
                match hit.and_then(|(n, _)| Name::from_ascii(format!("{}.", norm(n))).ok()) {
                    Some(target) => {
                        r.add_answer(Record::from_rdata(
                            query.name().clone(),
                            60,
                            RData::PTR(PTR(target)),
                        ));
                    }
                    None => r.metadata.response_code = ResponseCode::NXDomain,
                }
            }
            _ => {
                if known.count() == 0 {
                    r.metadata.response_code = ResponseCode::NXDomain;
                }
            }
        }
        Some(r)
    }
}

/// Counters of a running nameserver.
#[derive(Debug, Default)]
pub struct Stats {
    pub queries: AtomicU64,
    pub answered: AtomicU64,
}

/// A running nameserver (UDP and TCP port 53 on one address).
pub struct Nameserver {
    pub addr: Ipv4Addr,
    pub stats: Arc<Stats>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for Nameserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nameserver")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

struct Rng(u64);
impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>, LabError> {
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(f)
        .map_err(|source| LabError::Io {
            op: format!("spawn {name}"),
            source,
        })
}

impl Nameserver {
    /// Binds UDP and TCP `addr:port` inside network namespace `netns` and serves `zone`.
    pub fn start(
        netns: &str,
        addr: Ipv4Addr,
        port: u16,
        zone: Zone,
        behavior: Behavior,
    ) -> Result<Nameserver, LabError> {
        let sa = SocketAddr::from((addr, port));
        let (udp, tcp) = crate::in_netns(netns, || -> std::io::Result<_> {
            Ok((UdpSocket::bind(sa)?, TcpListener::bind(sa)?))
        })?
        .map_err(|source| LabError::Io {
            op: format!("bind nameserver {sa} in namespace {netns}"),
            source,
        })?;
        let io = |op: &str, source| LabError::Io {
            op: format!("{op} {sa}"),
            source,
        };
        udp.set_read_timeout(Some(Duration::from_millis(50)))
            .map_err(|e| io("configure", e))?;
        tcp.set_nonblocking(true).map_err(|e| io("configure", e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(Stats::default());
        let zone = Arc::new(zone);
        let behavior = Arc::new(behavior);
        let mut threads = Vec::new();

        // UDP: receive, decide, queue (due, bytes, peer) for the sender thread.
        let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>, SocketAddr)>();
        let send_sock = udp.try_clone().map_err(|e| io("clone socket", e))?;
        {
            let (stop, stats, zone, b) =
                (stop.clone(), stats.clone(), zone.clone(), behavior.clone());
            threads.push(spawn("nd-dns-udp", move || {
                // Its answer times are the experiment (see the forwarder): real-time if allowed.
                let _ = netdoctor_sys::affinity::set_current_thread_fifo();
                let mut rng = Rng(0x2545_f491_4f6c_dd1d ^ u64::from(port));
                let mut buf = [0u8; 4096];
                while !stop.load(Ordering::Relaxed) {
                    let Ok((n, peer)) = udp.recv_from(&mut buf) else {
                        continue;
                    };
                    stats.queries.fetch_add(1, Ordering::Relaxed);
                    if b.silent || (b.loss > 0.0 && rng.unit() < b.loss) {
                        continue;
                    }
                    let Ok(q) = Message::from_vec(&buf[..n]) else {
                        continue;
                    };
                    if let Some(bytes) = zone.answer(&q, &b).and_then(|r| r.to_vec().ok()) {
                        let _ = tx.send((Instant::now() + b.delay, bytes, peer));
                    }
                }
            })?);
        }
        {
            let (stop, stats) = (stop.clone(), stats.clone());
            threads.push(spawn("nd-dns-udp-send", move || {
                let _ = netdoctor_sys::affinity::set_current_thread_fifo();
                let mut queue: VecDeque<(Instant, Vec<u8>, SocketAddr)> = VecDeque::new();
                while !stop.load(Ordering::Relaxed) {
                    let wait = queue
                        .front()
                        .map_or(Duration::from_millis(50), |(due, _, _)| {
                            due.saturating_duration_since(Instant::now())
                                .min(Duration::from_millis(50))
                        });
                    if let Ok(item) = rx.recv_timeout(wait) {
                        queue.push_back(item);
                    }
                    while queue
                        .front()
                        .is_some_and(|(due, _, _)| *due <= Instant::now())
                    {
                        let (_, bytes, peer) = queue.pop_front().expect("front exists");
                        if send_sock.send_to(&bytes, peer).is_ok() {
                            stats.answered.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            })?);
        }
        // TCP: one thread per connection, each query answered after the delay.
        {
            let (stop, stats, zone, b) =
                (stop.clone(), stats.clone(), zone.clone(), behavior.clone());
            threads.push(spawn("nd-dns-tcp", move || {
                while !stop.load(Ordering::Relaxed) {
                    match tcp.accept() {
                        Ok((conn, _)) => {
                            let (stop, stats, zone, b) =
                                (stop.clone(), stats.clone(), zone.clone(), b.clone());
                            let _ = spawn("nd-dns-tcp-conn", move || {
                                serve_tcp(conn, &stop, &stats, &zone, &b)
                            });
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(20)),
                    }
                }
            })?);
        }
        Ok(Nameserver {
            addr,
            stats,
            stop,
            threads,
        })
    }

    /// Stops serving and waits for the threads.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Nameserver {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn serve_tcp(
    mut conn: std::net::TcpStream,
    stop: &AtomicBool,
    stats: &Stats,
    zone: &Zone,
    b: &Behavior,
) {
    let _ = conn.set_nonblocking(false);
    let _ = conn.set_read_timeout(Some(Duration::from_millis(200)));
    let mut len = [0u8; 2];
    while !stop.load(Ordering::Relaxed) {
        match conn.read_exact(&mut len) {
            Ok(()) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue;
            }
            Err(_) => return,
        }
        let mut msg = vec![0u8; u16::from_be_bytes(len) as usize];
        if conn.read_exact(&mut msg).is_err() {
            return;
        }
        stats.queries.fetch_add(1, Ordering::Relaxed);
        if b.silent {
            continue;
        }
        let Some(bytes) = Message::from_vec(&msg)
            .ok()
            .and_then(|q| zone.answer(&q, b))
            .and_then(|r| r.to_vec().ok())
        else {
            continue;
        };
        std::thread::sleep(b.delay);
        let mut framed = (bytes.len() as u16).to_be_bytes().to_vec();
        framed.extend_from_slice(&bytes);
        if conn.write_all(&framed).is_err() {
            return;
        }
        stats.answered.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hickory_proto::op::Query;

    fn q(name: &str, t: RecordType) -> Message {
        let mut m = Message::new(7, MessageType::Query, OpCode::Query);
        m.add_query(Query::query(Name::from_ascii(name).unwrap(), t));
        m
    }

    #[test]
    fn zone_answers_a_ptr_and_nxdomain_and_drops_ptr_on_request() {
        let z = Zone {
            records: vec![("srv.lab.test".into(), Ipv4Addr::new(10, 231, 3, 2))],
        };
        let b = Behavior::default();
        let r = z.answer(&q("SRV.lab.test.", RecordType::A), &b).unwrap();
        assert_eq!(r.answers.len(), 1);
        assert_eq!(r.metadata.id, 7);
        let r = z
            .answer(&q("2.3.231.10.in-addr.arpa.", RecordType::PTR), &b)
            .unwrap();
        assert_eq!(r.answers[0].data.to_string(), "srv.lab.test.");
        let r = z.answer(&q("nope.lab.test.", RecordType::A), &b).unwrap();
        assert_eq!(r.metadata.response_code, ResponseCode::NXDomain);
        let r = z.answer(&q("srv.lab.test.", RecordType::AAAA), &b).unwrap();
        assert_eq!(
            (r.metadata.response_code, r.answers.len()),
            (ResponseCode::NoError, 0)
        );
        let deaf = Behavior {
            drop_reverse: true,
            ..Default::default()
        };
        assert!(
            z.answer(&q("2.3.231.10.in-addr.arpa.", RecordType::PTR), &deaf)
                .is_none()
        );
        assert!(
            z.answer(&q("srv.lab.test.", RecordType::A), &deaf)
                .is_some()
        );
    }
}
