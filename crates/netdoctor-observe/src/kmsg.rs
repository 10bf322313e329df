//! Kernel log lines from `/dev/kmsg` that explain slow or failing connections: conntrack table
//! full, SYN flooding, TCP out of memory, neighbour table overflow, link not ready.
//!
//! `/dev/kmsg` hands out one record per read(2) (`prio,seq,usec,flags;text`) with the time in
//! microseconds of the kernel's monotonic clock; [`read_since`] reads every record still in the
//! ring without blocking and keeps the matching ones at or after a moment, so a run records
//! [`now_us`] (minus a lookback) before it starts. The kernel log is one for the whole machine,
//! not per network namespace: a line may concern another namespace (the SYN flood line names
//! the port; conntrack's does not name anything). Reading it needs CAP_SYSLOG when
//! `kernel.dmesg_restrict` is 1 (Debian's default). Hand-written: the record format is four
//! fields and a text, and no maintained crate reads /dev/kmsg without pulling in a logger.

use std::fs::OpenOptions;
use std::io::{ErrorKind, Read};
use std::os::unix::fs::OpenOptionsExt;

use crate::host_error::{HostError, read_error};

const PATH: &str = "/dev/kmsg";

/// What a kernel log line says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KmsgKind {
    /// "nf_conntrack: nf_conntrack: table full, dropping packet"
    ConntrackTableFull,
    /// "TCP: request_sock_TCP: Possible SYN flooding on port 8080. Sending cookies."
    SynFlooding,
    /// "TCP: out of memory -- consider tuning tcp_mem"
    TcpOutOfMemory,
    /// "neighbour: arp_cache: neighbor table overflow!"
    NeighbourTableOverflow,
    /// "IPv6: ADDRCONF(NETDEV_UP): eth0: link is not ready"
    LinkNotReady,
}

/// A matching kernel log line.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct KmsgLine {
    /// Microseconds since boot (the kernel's monotonic clock).
    pub at_us: u64,
    pub kind: KmsgKind,
    /// The port, for SYN flooding lines.
    pub port: Option<u16>,
    pub text: String,
}

/// Classifies one log text (the part after `;`).
pub fn classify(text: &str) -> Option<(KmsgKind, Option<u16>)> {
    if text.contains("nf_conntrack: table full") {
        return Some((KmsgKind::ConntrackTableFull, None));
    }
    if let Some(at) = text.find("Possible SYN flooding on port") {
        let rest = &text[at + "Possible SYN flooding on port".len()..];
        // Older kernels print the port, newer ones the address: "10.0.0.1:8080." or "[::]:80.".
        let token = rest.split_whitespace().next().unwrap_or("");
        let token = token.trim_end_matches('.');
        let port = token.rsplit(':').next().and_then(|p| p.parse().ok());
        return Some((KmsgKind::SynFlooding, port));
    }
    if text.contains("TCP: out of memory") {
        return Some((KmsgKind::TcpOutOfMemory, None));
    }
    if text.contains("neighbour table overflow") || text.contains("neighbor table overflow") {
        return Some((KmsgKind::NeighbourTableOverflow, None));
    }
    if text.contains("link is not ready") {
        return Some((KmsgKind::LinkNotReady, None));
    }
    None
}

/// Parses one /dev/kmsg record; `None` for continuation lines and other noise.
pub fn parse_record(record: &str) -> Option<KmsgLine> {
    let (head, text) = record.split_once(';')?;
    let at_us = head.split(',').nth(2)?.parse().ok()?;
    let text = text.lines().next().unwrap_or("").to_string();
    let (kind, port) = classify(&text)?;
    Some(KmsgLine {
        at_us,
        kind,
        port,
        text,
    })
}

/// The kernel's monotonic clock in microseconds (the time base of /dev/kmsg).
pub fn now_us() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the valid, exclusively borrowed `ts`.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1_000
}

/// The matching lines logged at or after `since_us` (see [`now_us`]), oldest first.
pub fn read_since(since_us: u64) -> Result<Vec<KmsgLine>, HostError> {
    let mut file = open()?;
    let mut out = Vec::new();
    drain(&mut file, &mut |line| {
        if line.at_us >= since_us {
            out.push(line);
        }
    })?;
    Ok(out)
}

fn open() -> Result<std::fs::File, HostError> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(PATH)
        .map_err(|e| read_error("kernel log", PATH, &e, Some("CAP_SYSLOG")))
}

/// Reads every record available now from `file` and hands the matching ones to `keep`.
fn drain(file: &mut std::fs::File, keep: &mut dyn FnMut(KmsgLine)) -> Result<(), HostError> {
    // One record per read; records longer than the buffer fail with EINVAL and are skipped.
    let mut buf = vec![0u8; 8192];
    for _ in 0..1_000_000 {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let record = String::from_utf8_lossy(&buf[..n]);
                if let Some(line) = parse_record(&record) {
                    keep(line);
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            // EPIPE: the ring overwrote records we had not read yet; go on with the next.
            Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => continue,
            Err(e) => return Err(read_error("kernel log", PATH, &e, Some("CAP_SYSLOG"))),
        }
    }
    Ok(())
}

/// Follows the kernel log from the moment it is opened: each [`read_new`](Self::read_new)
/// returns the matching lines logged since the previous one. One open `/dev/kmsg` keeps its
/// position, so a long-running agent reads each record once instead of the whole ring every
/// time.
pub struct KmsgFollower {
    file: std::fs::File,
}

impl KmsgFollower {
    /// Opens `/dev/kmsg` positioned after the last record (older lines are not returned).
    pub fn open() -> Result<KmsgFollower, HostError> {
        use std::io::{Seek, SeekFrom};
        let mut file = open()?;
        file.seek(SeekFrom::End(0))
            .map_err(|e| read_error("kernel log", PATH, &e, None))?;
        Ok(KmsgFollower { file })
    }

    /// The matching lines logged since the previous call (or the open), oldest first.
    pub fn read_new(&mut self) -> Result<Vec<KmsgLine>, HostError> {
        let mut out = Vec::new();
        drain(&mut self.file, &mut |line| out.push(line))?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_the_lines_that_matter() {
        let cases = [
            (
                "nf_conntrack: nf_conntrack: table full, dropping packet",
                KmsgKind::ConntrackTableFull,
                None,
            ),
            (
                "TCP: request_sock_TCP: Possible SYN flooding on port 10.0.0.1:8080. Sending cookies.",
                KmsgKind::SynFlooding,
                Some(8080),
            ),
            (
                "TCP: request_sock_TCPv6: Possible SYN flooding on port [::]:443. Dropping request.",
                KmsgKind::SynFlooding,
                Some(443),
            ),
            (
                "TCP: request_sock_TCP: Possible SYN flooding on port 8080. Sending cookies.  Check SNMP counters.",
                KmsgKind::SynFlooding,
                Some(8080),
            ),
            (
                "TCP: out of memory -- consider tuning tcp_mem",
                KmsgKind::TcpOutOfMemory,
                None,
            ),
            (
                "neighbour: arp_cache: neighbor table overflow!",
                KmsgKind::NeighbourTableOverflow,
                None,
            ),
            (
                "IPv6: ADDRCONF(NETDEV_UP): eth0: link is not ready",
                KmsgKind::LinkNotReady,
                None,
            ),
        ];
        for (text, kind, port) in cases {
            assert_eq!(classify(text), Some((kind, port)), "{text}");
        }
        assert_eq!(classify("eth0: renamed from veth1"), None);
    }

    #[test]
    fn parses_records() {
        let r = "4,1234,5678901,-;nf_conntrack: nf_conntrack: table full, dropping packet\n SUBSYSTEM=x\n";
        let l = parse_record(r).unwrap();
        assert_eq!(l.at_us, 5678901);
        assert_eq!(l.kind, KmsgKind::ConntrackTableFull);
        assert_eq!(
            l.text,
            "nf_conntrack: nf_conntrack: table full, dropping packet"
        );
        assert_eq!(parse_record("6,1,2,-;hello"), None);
        assert_eq!(parse_record("garbage"), None);
    }

    #[test]
    fn reads_the_ring_or_names_the_capability() {
        match read_since(now_us()) {
            Ok(lines) => assert!(lines.iter().all(|l| l.at_us > 0)),
            Err(e) => assert_eq!(e.missing_capability(), Some("CAP_SYSLOG"), "{e}"),
        }
    }

    /// The follower returns a line logged after it opened, once. The line is written to the
    /// kernel log by this test (root only): a "link is not ready" line for an interface that
    /// does not exist, which no finding reads.
    #[test]
    fn follower_returns_new_lines_once() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: writing to /dev/kmsg needs root");
            return;
        }
        let mut f = KmsgFollower::open().unwrap();
        let tag = format!("nd-kt{}", std::process::id() % 100_000);
        let text = format!("IPv6: ADDRCONF(NETDEV_UP): {tag}: link is not ready");
        std::fs::write(PATH, format!("<6>{text}\n")).unwrap();
        let lines = f.read_new().unwrap();
        let mine: Vec<&KmsgLine> = lines.iter().filter(|l| l.text.contains(&tag)).collect();
        assert_eq!(mine.len(), 1, "{lines:?}");
        assert_eq!(mine[0].kind, KmsgKind::LinkNotReady);
        let again = f.read_new().unwrap();
        assert!(!again.iter().any(|l| l.text.contains(&tag)), "{again:?}");
    }
}
