//! Half-open connections past [`MAX_HALF_OPEN`]: a spoofed SYN flood, answered by the
//! server, whose oldest SYN/ACKs are repeated a second later (as Linux repeats those of its
//! SYN queue). The table holds at most the cap, the oldest are evicted and counted, and the
//! repeats still make the `syn_retransmit` finding.

use std::net::SocketAddr;

use super::script::{MS, ipv4};
use crate::analyze::{Analysis, Analyzer, AnalyzerConfig, MAX_HALF_OPEN, MAX_TOMBS};
use crate::decode::TcpFlags as F;
use crate::finding::FindingId;
use crate::packet::{LinkType, RawPacket};

const SERVER: &str = "10.0.0.2:80";

struct Feed {
    a: Analyzer,
    frame: u64,
    t: i64,
    max_open: usize,
}

impl Feed {
    fn push(&mut self, dt: i64, p: &[u8]) {
        self.t += dt;
        self.frame += 1;
        self.a.push(&RawPacket {
            frame: self.frame,
            ts_ns: self.t,
            link: LinkType::Raw,
            data: p,
            orig_len: p.len() as u32,
        });
        self.max_open = self.max_open.max(self.a.open_connections());
    }
}

fn spoofed(k: usize) -> SocketAddr {
    format!(
        "172.{}.{}.{}:{}",
        16 + k % 8,
        (k / 8) % 250,
        1 + k % 250,
        1024 + k % 60000
    )
    .parse()
    .unwrap()
}

/// `n` spoofed SYNs, each answered; then the first `repeated` SYN/ACKs again 1 s later; a
/// real client completing its handshake and one request in the middle of the flood.
fn flood(n: usize, repeated: usize) -> (Analysis, usize) {
    let s: SocketAddr = SERVER.parse().unwrap();
    let mut f = Feed {
        a: Analyzer::new(AnalyzerConfig::default()),
        frame: 0,
        t: 1_700_000_000_000_000_000,
        max_open: 0,
    };
    let isn = |k: usize| 7000 + k as u32 * 3;
    for k in 0..n {
        let c = spoofed(k);
        f.push(10_000, &ipv4(c, s, 100 + k as u32, 0, F::SYN, b""));
        f.push(
            5_000,
            &ipv4(s, c, isn(k), 101 + k as u32, F::SYN | F::ACK, b""),
        );
        if k == n / 2 {
            let c: SocketAddr = "10.0.0.1:40000".parse().unwrap();
            f.push(10_000, &ipv4(c, s, 1, 0, F::SYN, b""));
            f.push(10_000, &ipv4(s, c, 9, 2, F::SYN | F::ACK, b""));
            f.push(10_000, &ipv4(c, s, 2, 10, F::ACK, b""));
            f.push(
                MS,
                &ipv4(c, s, 2, 10, F::PSH | F::ACK, b"GET / HTTP/1.1\r\n\r\n"),
            );
            f.push(
                MS,
                &ipv4(s, c, 10, 20, F::PSH | F::ACK, b"HTTP/1.1 200 OK\r\n\r\n"),
            );
            f.push(MS, &ipv4(c, s, 20, 29, F::RST | F::ACK, b""));
        }
    }
    f.t += 1000 * MS;
    for k in 0..repeated {
        f.push(
            10_000,
            &ipv4(s, spoofed(k), isn(k), 101 + k as u32, F::SYN | F::ACK, b""),
        );
    }
    let max_open = f.max_open;
    (f.a.finish(), max_open)
}

#[test]
fn flood_past_the_cap_keeps_the_cap_and_the_evidence() {
    let n = MAX_HALF_OPEN + 3000;
    let (a, max_open) = flood(n, 1000);
    assert!(max_open <= MAX_HALF_OPEN + 1, "{max_open} open at once");
    assert_eq!(a.stats.half_open_evicted, (n - MAX_HALF_OPEN) as u64);
    assert_eq!(a.stats.syn_retransmits, 1000);
    assert_eq!(a.stats.connections_with_handshake, n as u64 + 1);
    assert_eq!(a.exchanges.count, 1, "the real client's request");
    assert!(
        a.warnings.iter().any(|w| w.contains("half-open")),
        "{:?}",
        a.warnings
    );
    let f = a
        .findings
        .iter()
        .find(|f| f.id == FindingId::SynRetransmit)
        .expect("the flood's repeated SYN/ACKs are a syn_retransmit finding");
    assert!(
        f.summary.contains(&format!("1000 of {}", n + 1)),
        "{}",
        f.summary
    );
    // The same flood under the cap: the same finding.
    let (b, _) = flood(MAX_HALF_OPEN - 2, 1000);
    assert_eq!(b.stats.half_open_evicted, 0);
    assert!(b.warnings.iter().all(|w| !w.contains("half-open")));
    let g = b.findings.iter().find(|f| f.id == FindingId::SynRetransmit);
    assert!(g.is_some_and(|g| g.summary.contains("1000 of")), "{g:?}");
}

#[test]
fn past_the_records_the_oldest_keep_theirs() {
    // More evicted than records: the oldest keep theirs (their SYN/ACKs are the repeated
    // ones); the newest are ended at once.
    let n = MAX_HALF_OPEN + MAX_TOMBS + 500;
    let (a, max_open) = flood(n, 300);
    assert!(max_open <= MAX_HALF_OPEN + 1, "{max_open} open at once");
    assert_eq!(a.stats.half_open_evicted, (n - MAX_HALF_OPEN) as u64);
    assert_eq!(a.stats.syn_retransmits, 300);
    let f = a.findings.iter().find(|f| f.id == FindingId::SynRetransmit);
    assert!(f.is_some_and(|f| f.summary.contains("300 of")), "{f:?}");
}

/// SYN+FIN probes (a scan; Linux drops them in LISTEN, so nothing answers) open no state: as
/// half-open connections that never end they filled the half-open cap and its records (about
/// 10 MB in the watch soak's odd-flags turn).
#[test]
fn syn_fin_probes_open_no_connection() {
    let s: SocketAddr = SERVER.parse().unwrap();
    let mut f = Feed {
        a: Analyzer::new(AnalyzerConfig::default()),
        frame: 0,
        t: 1_700_000_000_000_000_000,
        max_open: 0,
    };
    let n = MAX_HALF_OPEN + 500;
    for k in 0..n {
        f.push(MS, &ipv4(spoofed(k), s, 100, 0, F::SYN | F::FIN, b""));
    }
    // A plain SYN still opens one.
    f.push(MS, &ipv4(spoofed(n), s, 100, 0, F::SYN, b""));
    assert_eq!(f.max_open, 1);
    let a = f.a.finish();
    assert_eq!(a.stats.half_open_evicted, 0);
    assert_eq!(a.stats.connections, 1);
}
