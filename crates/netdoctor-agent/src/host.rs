//! The host collectors of a watch window: the watched listeners sampled through sock_diag
//! (accept queue against backlog, half-open SYN_RECV connections) every
//! [`WatchConfig::listener_sample_every`](crate::WatchConfig), and the kernel log lines logged
//! during the window ([`KmsgFollower`]), with the window's kernel counter deltas, turned into
//! the same host findings as `diagnose` (`listen_queue_overflow`, `syn_flood`,
//! `conntrack_table_full`, … from [`netdoctor_observe::host_findings`]).
//!
//! Sampling runs on the watch loop's own thread (it wakes every 100 ms anyway), so it costs no
//! thread: one sock_diag dump of LISTEN and SYN_RECV sockets per port and sample. Both read the
//! calling thread's network namespace, like the capture.
//!
//! The SYN_RECV part of a dump walks the kernel's whole established hash (milliseconds, most
//! of an idle agent's CPU), so it is skipped while it cannot find anything: when the port's
//! capture ([`SynSeen`]) has counted no SYN since a sample that found no half-open connection,
//! had no drops, and the last full sample is less than [`FULL_EVERY`] samples old (a half-open
//! connection needs a SYN, and one the capture read late, or did not see, is found by the
//! next full sample).
//!
//! Attribution: the counters are the namespace's and the kernel log is the machine's, so a
//! host finding could belong to any watched port. A finding goes to the ports whose own
//! samples show it (queue full, half-open connections); when no port's samples do (a brief
//! overflow between two samples), to every watched port, whose report then names "a listener".

use netdoctor_core::{Finding, FindingId};
use netdoctor_observe::counters::CounterDelta;
use netdoctor_observe::host_findings::{HostObservations, host_findings};
use netdoctor_observe::kmsg::{KmsgFollower, KmsgLine};
use netdoctor_observe::sockdiag::{ListenerSeries, sample_listener, sample_listener_queue};
use netdoctor_report::{Check, CheckName};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A full sample (with SYN_RECV) at least every this many samples of a port.
pub const FULL_EVERY: u32 = 10;

/// What a port's capture tells the listener sampler: SYNs to the port it saw, and whether it
/// may have missed some (kernel drops in its last window).
#[derive(Debug, Default)]
pub struct SynSeen {
    syns: AtomicU64,
    unsure: AtomicBool,
}

impl SynSeen {
    /// Counts the packet when it is a SYN (without ACK) to `port`: `ip` starts at the IP
    /// header, as the capture's packets do.
    pub fn note(&self, ip: &[u8], port: u16) {
        if opens_to(ip, port) {
            self.syns.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Whether the capture may have missed packets (a window with kernel drops).
    pub fn set_unsure(&self, unsure: bool) {
        self.unsure.store(unsure, Ordering::Relaxed);
    }
}

/// Whether the IPv4/IPv6 TCP packet `ip` is a SYN without ACK to `port`.
pub fn opens_to(ip: &[u8], port: u16) -> bool {
    let tcp = match ip.first().map(|b| b >> 4) {
        Some(4) => usize::from(ip[0] & 0x0f) * 4,
        Some(6) => 40,
        _ => return false,
    };
    match (ip.get(tcp + 2..tcp + 4), ip.get(tcp + 13)) {
        (Some(dst), Some(&flags)) => {
            u16::from_be_bytes([dst[0], dst[1]]) == port && flags & 0x12 == 0x02
        }
        _ => false,
    }
}

/// Samples kept per port and window at most (memory stays bounded whatever the window).
const MAX_SAMPLES: usize = 3600;

/// What the listener of one port looked like over a window.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListenerWindow {
    /// Samples taken in the window in which the listener was found.
    pub samples: usize,
    /// Largest accept queue (Recv-Q) seen.
    pub max_accept_queue: u32,
    /// The accept queue's limit (Send-Q: min(backlog, somaxconn)) at that sample.
    pub backlog: u32,
    /// Samples with the accept queue at its limit.
    pub full_samples: usize,
    /// Largest number of half-open (SYN_RECV) connections to the port seen.
    pub max_syn_recv: u32,
}

impl ListenerWindow {
    fn from_series(s: &ListenerSeries) -> ListenerWindow {
        let (max_accept_queue, backlog) = s.max_queue().unwrap_or((0, 0));
        ListenerWindow {
            samples: s.samples.len(),
            max_accept_queue,
            backlog,
            full_samples: s.full_samples(),
            max_syn_recv: s.max_syn_recv(),
        }
    }
}

/// One port's host part of a window.
#[derive(Debug, Clone)]
pub struct HostWindow {
    pub port: u16,
    pub findings: Vec<Finding>,
    /// `None` when no sample found a listener on the port (or sock_diag failed).
    pub listener: Option<ListenerWindow>,
    /// Matching kernel log lines in the window (machine-wide, all ports).
    pub kmsg_lines: Vec<KmsgLine>,
    /// The `host` check: ok, or ok with the collectors that were skipped and why.
    pub check: Check,
}

/// The collectors' state across windows.
pub struct HostWatch {
    ports: Vec<u16>,
    every: Duration,
    series: Vec<ListenerSeries>,
    window_start: Instant,
    next_sample: Instant,
    kmsg: Result<KmsgFollower, String>,
    /// Per port: its capture's SYN count (none: always a full sample), the count when a full
    /// sample last found no half-open connection, samples since the last full one.
    syn_seen: Vec<Option<Arc<SynSeen>>>,
    zero_at: Vec<Option<u64>>,
    since_full: Vec<u32>,
    /// Samples taken with the SYN_RECV dump, all ports.
    pub full_samples: u64,
}

impl HostWatch {
    /// Starts following the kernel log (from now) and takes the first listener samples.
    pub fn start(ports: &[u16], every: Duration) -> HostWatch {
        let now = Instant::now();
        let mut h = HostWatch {
            ports: ports.to_vec(),
            every: every.max(Duration::from_millis(10)),
            series: Vec::new(),
            window_start: now,
            next_sample: now,
            kmsg: KmsgFollower::open().map_err(|e| match e.missing_capability() {
                Some(cap) => format!("{e}; needs {cap}"),
                None => e.to_string(),
            }),
            syn_seen: vec![None; ports.len()],
            zero_at: vec![None; ports.len()],
            since_full: vec![0; ports.len()],
            full_samples: 0,
        };
        h.reset_series();
        h.tick(now);
        h
    }

    /// Lets the sampler skip the SYN_RECV dump of port `k` (in the order given to
    /// [`start`](Self::start)) while `seen` shows no SYN (see the module docs).
    pub fn with_syn_seen(mut self, seen: Vec<Option<Arc<SynSeen>>>) -> HostWatch {
        for (k, s) in seen.into_iter().enumerate().take(self.ports.len()) {
            self.syn_seen[k] = s;
        }
        self
    }

    fn reset_series(&mut self) {
        self.series = self
            .ports
            .iter()
            .map(|&port| ListenerSeries {
                port,
                ..Default::default()
            })
            .collect();
    }

    /// Samples the listeners when a sample is due.
    pub fn tick(&mut self, now: Instant) {
        if now < self.next_sample {
            return;
        }
        self.next_sample = now + self.every;
        for (k, s) in self.series.iter_mut().enumerate() {
            if s.samples.len() >= MAX_SAMPLES {
                continue;
            }
            // Read before the dump: a SYN counted after it makes the next sample a full one.
            let syns = self.syn_seen[k]
                .as_ref()
                .filter(|g| !g.unsure.load(Ordering::Relaxed))
                .map(|g| g.syns.load(Ordering::Relaxed));
            let full =
                syns.is_none() || self.zero_at[k] != syns || self.since_full[k] + 1 >= FULL_EVERY;
            let got = if full {
                self.full_samples += 1;
                sample_listener(s.port, self.window_start)
            } else {
                sample_listener_queue(s.port, self.window_start)
            };
            if full && let Ok(x) = &got {
                self.since_full[k] = 0;
                let none_half_open = x.as_ref().is_none_or(|x| x.syn_recv == 0);
                self.zero_at[k] = syns.filter(|_| none_half_open);
            } else {
                self.since_full[k] += 1;
            }
            match got {
                Ok(Some(x)) => s.samples.push(x),
                Ok(None) => {}
                Err(e) => {
                    s.failed += 1;
                    s.first_error.get_or_insert(e.to_string());
                }
            }
        }
    }

    /// Time until the next sample is due.
    pub fn until_next(&self, now: Instant) -> Duration {
        self.next_sample.saturating_duration_since(now)
    }

    /// Ends the window: one last sample, the kernel log lines since the previous window, and
    /// the host findings per port (in the order of the ports given to [`start`](Self::start)).
    pub fn take_window(&mut self, counters: Option<&[CounterDelta]>) -> Vec<HostWindow> {
        self.next_sample = Instant::now();
        self.tick(Instant::now());
        let mut skipped: Vec<String> = Vec::new();
        let kmsg = match &mut self.kmsg {
            Ok(f) => f.read_new().unwrap_or_else(|e| {
                skipped.push(format!("kernel_log skipped ({e})"));
                Vec::new()
            }),
            Err(e) => {
                skipped.push(format!("kernel_log skipped ({e})"));
                Vec::new()
            }
        };
        if counters.is_none() {
            skipped.push("counters skipped (see the counters check)".to_string());
        }
        let series = std::mem::take(&mut self.series);
        self.reset_series();
        self.window_start = Instant::now();
        let mut out: Vec<HostWindow> = series
            .into_iter()
            .map(|s| {
                let mut notes = skipped.clone();
                if let Some(e) = &s.first_error {
                    notes.push(format!(
                        "sock_diag failed in {} samples of port {} ({e})",
                        s.failed, s.port
                    ));
                }
                let listener = (!s.samples.is_empty()).then(|| ListenerWindow::from_series(&s));
                let port = s.port;
                let obs = HostObservations {
                    counters: counters.map(<[CounterDelta]>::to_vec).unwrap_or_default(),
                    listener: (!s.samples.is_empty()).then_some(s),
                    kmsg: kmsg.clone(),
                    ..Default::default()
                };
                HostWindow {
                    port,
                    findings: host_findings(&obs),
                    listener,
                    kmsg_lines: kmsg.clone(),
                    check: if notes.is_empty() {
                        Check::ok(CheckName::Host)
                    } else {
                        Check::ok_with(CheckName::Host, notes.join("; "))
                    },
                }
            })
            .collect();
        attribute(&mut out);
        out
    }
}

/// Whether a port's own samples show the finding's cause.
fn own_evidence(id: FindingId, l: Option<&ListenerWindow>) -> bool {
    let Some(l) = l else { return false };
    match id {
        FindingId::ListenQueueOverflow => l.full_samples > 0,
        FindingId::SynFlood => l.max_syn_recv > 0,
        _ => false,
    }
}

/// Keeps each host finding on the ports whose samples show it, when any port's do.
fn attribute(windows: &mut [HostWindow]) {
    for id in [FindingId::ListenQueueOverflow, FindingId::SynFlood] {
        let shown: Vec<bool> = windows
            .iter()
            .map(|w| w.findings.iter().any(|f| f.id == id) && own_evidence(id, w.listener.as_ref()))
            .collect();
        if shown.iter().any(|&s| s) {
            for (w, keep) in windows.iter_mut().zip(shown) {
                if !keep {
                    w.findings.retain(|f| f.id != id);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netdoctor_core::{Severity, Side};

    fn window(port: u16, full: usize, findings: &[FindingId]) -> HostWindow {
        HostWindow {
            port,
            findings: findings
                .iter()
                .map(|&id| Finding::new(id, Severity::Warning, Side::Server, "x"))
                .collect(),
            listener: Some(ListenerWindow {
                samples: 3,
                full_samples: full,
                ..Default::default()
            }),
            kmsg_lines: Vec::new(),
            check: Check::ok(CheckName::Host),
        }
    }

    #[test]
    fn an_overflow_goes_to_the_port_whose_queue_was_full() {
        let q = FindingId::ListenQueueOverflow;
        let mut w = vec![window(80, 0, &[q]), window(443, 2, &[q])];
        attribute(&mut w);
        assert!(w[0].findings.is_empty());
        assert_eq!(w[1].findings.len(), 1);
        // No port saw its queue full: every port keeps the (counter-only) finding.
        let mut w = vec![window(80, 0, &[q]), window(443, 0, &[q])];
        attribute(&mut w);
        assert_eq!(w[0].findings.len() + w[1].findings.len(), 2);
    }

    #[test]
    fn samples_a_real_listener() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let _c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let mut h = HostWatch::start(&[port], Duration::from_millis(10));
        h.tick(Instant::now() + Duration::from_millis(20));
        let w = h.take_window(Some(&[]));
        assert_eq!(w.len(), 1);
        let lw = w[0].listener.as_ref().expect("listener sampled");
        assert!(lw.samples >= 2, "{lw:?}");
        assert_eq!((lw.max_accept_queue, lw.backlog), (1, 128));
        assert!(w[0].findings.is_empty(), "{:?}", w[0].findings);
    }

    /// An IPv4 TCP header of 20 bytes after a 20-byte IP header.
    fn tcp4(dst: u16, flags: u8) -> Vec<u8> {
        let mut p = vec![0u8; 40];
        p[0] = 0x45;
        p[9] = 6;
        p[22..24].copy_from_slice(&dst.to_be_bytes());
        p[33] = flags;
        p
    }

    #[test]
    fn only_a_syn_to_the_port_counts() {
        assert!(opens_to(&tcp4(80, 0x02), 80));
        assert!(!opens_to(&tcp4(80, 0x12), 80), "SYN/ACK");
        assert!(!opens_to(&tcp4(80, 0x10), 80), "ACK");
        assert!(!opens_to(&tcp4(8080, 0x02), 80), "another port");
        assert!(!opens_to(&tcp4(80, 0x02)[..30], 80), "cut short");
        let mut v6 = vec![0u8; 60];
        v6[0] = 0x60;
        v6[6] = 6;
        v6[42..44].copy_from_slice(&80u16.to_be_bytes());
        v6[53] = 0x02;
        assert!(opens_to(&v6, 80));
        assert!(!opens_to(&[], 80));
    }

    #[test]
    fn the_syn_recv_dump_is_skipped_only_while_no_syn_came() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let _c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let seen = Arc::new(SynSeen::default());
        let mut h = HostWatch::start(&[port], Duration::from_millis(10))
            .with_syn_seen(vec![Some(Arc::clone(&seen))]);
        let mut at = Instant::now();
        let mut sample = |h: &mut HostWatch| {
            at += Duration::from_millis(20);
            let before = h.full_samples;
            h.tick(at);
            h.full_samples - before
        };
        // The first sample with the capture's count is full (none before it had one), the
        // next ones are not while no SYN comes.
        assert_eq!(sample(&mut h), 1);
        assert_eq!(sample(&mut h), 0);
        assert_eq!(sample(&mut h), 0);
        seen.note(&tcp4(port, 0x12), port);
        assert_eq!(sample(&mut h), 0, "a SYN/ACK opens nothing here");
        seen.note(&tcp4(port, 0x02), port);
        assert_eq!(sample(&mut h), 1, "a SYN came");
        assert_eq!(sample(&mut h), 0);
        seen.set_unsure(true);
        assert_eq!(sample(&mut h), 1, "the capture dropped packets");
        assert_eq!(sample(&mut h), 1);
        seen.set_unsure(false);
        // One full sample to learn the count again, then at least every FULL_EVERY samples.
        let fulls: u64 = (0..3 * FULL_EVERY).map(|_| sample(&mut h)).sum();
        assert_eq!(fulls, 3, "samples 1, 11 and 21 are full: {fulls}");
        // The queue part is sampled either way.
        let w = h.take_window(Some(&[]));
        let lw = w[0].listener.as_ref().expect("listener sampled");
        assert!(lw.samples >= 3 * FULL_EVERY as usize, "{lw:?}");
        assert_eq!(
            (lw.max_accept_queue, lw.backlog, lw.max_syn_recv),
            (1, 128, 0)
        );
    }
}
