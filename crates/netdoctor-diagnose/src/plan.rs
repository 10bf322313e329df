//! What a diagnosis will do, decided before anything runs. The CLI builds a [`DiagnosePlan`]
//! from its arguments and `demo` builds one with [`DiagnosePlan::new`], so the defaults live
//! here once (the CLI's `--help` shows these same constants).

use std::path::PathBuf;
use std::time::Duration;

/// The target as the user gave it, parsed (resolution happens in the run, through the host).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetSpec {
    /// What the user typed.
    pub input: String,
    /// Host name or address, without brackets.
    pub host: String,
    pub port: u16,
    /// Path with query, at least `/`.
    pub path: String,
    /// Value for the Host header.
    pub host_header: String,
    /// TLS for an `https://` target (`None`: plain TCP).
    pub tls: Option<netdoctor_load::TlsOptions>,
    /// `http`, `https` or `tcp` (any TCP protocol: no HTTP probe, no load).
    pub scheme: netdoctor_load::target::Scheme,
}

impl TargetSpec {
    /// The target's protocol as the report names it.
    pub fn protocol(&self) -> netdoctor_report::TargetProtocol {
        use netdoctor_load::target::Scheme;
        use netdoctor_report::TargetProtocol;
        match self.scheme {
            Scheme::Http => TargetProtocol::Http,
            Scheme::Https => TargetProtocol::Https,
            // diagnose has no gRPC load yet: a gRPC target is probed and watched as TCP.
            Scheme::Tcp | Scheme::Grpc | Scheme::Grpcs => TargetProtocol::Tcp,
        }
    }

    /// Whether the load engine and the HTTP probe can speak to it (`http://`, `https://`).
    pub fn is_http(&self) -> bool {
        matches!(
            self.scheme,
            netdoctor_load::target::Scheme::Http | netdoctor_load::target::Scheme::Https
        )
    }
}

/// Defaults shared by the CLI and `demo`.
pub mod defaults {
    use std::time::Duration;
    pub const CONNECTIONS: usize = 100;
    pub const DURATION: Duration = Duration::from_secs(5);
    pub const TIMEOUT: Duration = Duration::from_secs(2);
    pub const SNAPLEN: u32 = 256;
    /// The snap length of an h2c run (`--http2` on an `http://` target) unless the user chose
    /// one: the analyzer reads HTTP/2 frame headers, which sit anywhere in a segment.
    pub const H2C_SNAPLEN: u32 = 65_535;
    /// The smallest snap length that still holds the IP and TCP headers with options.
    pub const MIN_SNAPLEN: u32 = 96;
    pub const SYN_PROBES: u32 = 5;
    /// Upper bound on packets analyzed live; past it the capture stops (and says so).
    pub const MAX_LIVE_PACKETS: u64 = 3_000_000;
    /// When, into the load, the server's socket options are sampled (connections are open).
    pub const SOCKET_SAMPLE_AFTER: Duration = Duration::from_millis(500);
    /// Established sockets of each server process whose options are read.
    pub const SOCKETS_PER_PROCESS: usize = 16;
}

/// How the load runs.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadPlan {
    pub connections: usize,
    /// `None`: the load engine's default (2, or 1 on a single core).
    pub threads: Option<usize>,
    pub duration: Duration,
    pub timeout: Duration,
    pub keepalive: bool,
    pub method: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    /// Open loop at this many requests per second (the load engine's constant-rate mode,
    /// latency from each request's intended send time); `None`: closed loop.
    pub rate: Option<f64>,
    /// HTTP/1.1, HTTP/2, or (`Auto`) over TLS what the server picks by ALPN, in clear
    /// HTTP/1.1; the probes speak the same.
    pub protocol: netdoctor_load::Protocol,
}

/// Whether and how packets are captured during the load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturePlan {
    pub enabled: bool,
    pub snaplen: u32,
    /// The user chose the snap length (else the run may raise the default: see
    /// [`DiagnosePlan::raise_snaplen_for_h2c`]).
    pub snaplen_chosen: bool,
    /// Why the run changed the snap length (the capture check says so).
    pub snaplen_note: Option<String>,
    /// Write what was captured to this pcap file.
    pub pcap: Option<PathBuf>,
    pub max_packets: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DiagnosePlan {
    pub target: TargetSpec,
    pub load: LoadPlan,
    pub capture: CapturePlan,
    pub syn_probes: u32,
    /// Read the kernel's counters before and after the load.
    pub counters: bool,
    /// Read the socket options of the local server process during the load.
    pub socket_options: bool,
    /// Run the host collectors (listener queue, socket states, conntrack, kernel log, ...).
    pub host: bool,
    /// Time the resolver and each nameserver when the target is a name (off: `--no-dns`).
    pub dns: bool,
    /// Trace the route when the target is behind a gateway (off: `--no-trace`).
    pub trace: bool,
    /// Count kernel drops, retransmits and state changes with eBPF during the load.
    pub bpf: bool,
    pub socket_sample_after: Duration,
    /// Watch the target's real traffic for [`LoadPlan::duration`] instead of probing and
    /// loading it: no packet is sent (`diagnose --passive`).
    pub passive: bool,
}

impl DiagnosePlan {
    /// The defaults: 100 keep-alive connections for 5 s, capture on (256-byte snap length),
    /// 5 SYN probes, counters and socket options on.
    pub fn new(target: TargetSpec) -> DiagnosePlan {
        DiagnosePlan {
            target,
            load: LoadPlan {
                connections: defaults::CONNECTIONS,
                threads: None,
                duration: defaults::DURATION,
                timeout: defaults::TIMEOUT,
                keepalive: true,
                method: "GET".to_string(),
                headers: Vec::new(),
                body: None,
                rate: None,
                protocol: netdoctor_load::Protocol::Auto,
            },
            capture: CapturePlan {
                enabled: true,
                snaplen: defaults::SNAPLEN,
                snaplen_chosen: false,
                snaplen_note: None,
                pcap: None,
                max_packets: defaults::MAX_LIVE_PACKETS,
            },
            syn_probes: defaults::SYN_PROBES,
            counters: true,
            socket_options: true,
            host: true,
            dns: true,
            trace: true,
            bpf: true,
            socket_sample_after: defaults::SOCKET_SAMPLE_AFTER,
            passive: false,
        }
    }

    /// Checks the numbers a user can get wrong; the message names the flag's meaning.
    pub fn validate(&self) -> Result<(), String> {
        if self.load.connections == 0 {
            return Err("connections must be at least 1".into());
        }
        if self.load.threads == Some(0) {
            return Err("threads must be at least 1".into());
        }
        if self.load.duration.is_zero() {
            return Err("duration must be greater than zero".into());
        }
        if self.load.timeout.is_zero() {
            return Err("timeout must be greater than zero".into());
        }
        if self.syn_probes == 0 {
            return Err("syn probes must be at least 1".into());
        }
        if let Some(r) = self.load.rate
            && !(r.is_finite() && r > 0.0)
        {
            return Err(format!(
                "rate {r} is not a positive number of requests per second"
            ));
        }
        if self.capture.enabled && self.capture.snaplen < defaults::MIN_SNAPLEN {
            return Err(format!(
                "snap length {} is too small: at least {} bytes are needed for the IP and TCP headers",
                self.capture.snaplen,
                defaults::MIN_SNAPLEN
            ));
        }
        Ok(())
    }

    /// An h2c run (`--http2` on an `http://` target, capture on) keeps whole segments unless
    /// the user chose a snap length: at 256 bytes a segment of several frames loses the
    /// headers past the cut, and with them the streams. The note goes to the capture check.
    pub fn raise_snaplen_for_h2c(&mut self) {
        let h2c = self.load.protocol == netdoctor_load::Protocol::Http2
            && self.target.scheme == netdoctor_load::target::Scheme::Http;
        let c = &mut self.capture;
        if h2c && c.enabled && !c.snaplen_chosen && c.snaplen < defaults::H2C_SNAPLEN {
            c.snaplen_note = Some(format!(
                "snap length raised from {} to {} bytes for h2c: the HTTP/2 frames are read \
                 from the capture (--snaplen sets it)",
                c.snaplen,
                defaults::H2C_SNAPLEN
            ));
            c.snaplen = defaults::H2C_SNAPLEN;
        }
    }

    /// When the server's sockets are sampled: after [`Self::socket_sample_after`], or half-way
    /// through a shorter load (or passive window).
    pub fn socket_sample_at(&self) -> Duration {
        self.socket_sample_after.min(self.load.duration / 2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> TargetSpec {
        TargetSpec {
            input: "http://127.0.0.1:8080/".into(),
            host: "127.0.0.1".into(),
            port: 8080,
            path: "/".into(),
            host_header: "127.0.0.1:8080".into(),
            tls: None,
            scheme: netdoctor_load::target::Scheme::Http,
        }
    }

    #[test]
    fn defaults_validate_and_nonsense_does_not() {
        let plan = DiagnosePlan::new(target());
        assert_eq!(plan.validate(), Ok(()));
        let mut p = plan.clone();
        p.load.connections = 0;
        assert!(p.validate().unwrap_err().contains("connections"));
        let mut p = plan.clone();
        p.load.threads = Some(0);
        assert!(p.validate().unwrap_err().contains("threads"));
        let mut p = plan.clone();
        p.syn_probes = 0;
        assert!(p.validate().unwrap_err().contains("syn probes"));
        let mut p = plan.clone();
        p.capture.snaplen = 10;
        assert!(p.validate().unwrap_err().contains("snap length 10"));
        // A tiny snap length does not matter when nothing is captured.
        p.capture.enabled = false;
        assert_eq!(p.validate(), Ok(()));
    }

    #[test]
    fn h2c_raises_the_default_snap_length_and_nothing_else_does() {
        let mut p = DiagnosePlan::new(target());
        p.load.protocol = netdoctor_load::Protocol::Http2;
        p.raise_snaplen_for_h2c();
        assert_eq!(p.capture.snaplen, defaults::H2C_SNAPLEN);
        assert!(
            p.capture
                .snaplen_note
                .as_ref()
                .unwrap()
                .contains("from 256")
        );
        // A snap length the user chose stays.
        let mut q = DiagnosePlan::new(target());
        q.load.protocol = netdoctor_load::Protocol::Http2;
        q.capture.snaplen = 128;
        q.capture.snaplen_chosen = true;
        q.raise_snaplen_for_h2c();
        assert_eq!((q.capture.snaplen, q.capture.snaplen_note), (128, None));
        // HTTP/1.1, or h2 over TLS (records, not frames, are read): the default stays.
        let mut h1 = DiagnosePlan::new(target());
        h1.raise_snaplen_for_h2c();
        assert_eq!(h1.capture.snaplen, defaults::SNAPLEN);
        let mut tls = DiagnosePlan::new(target());
        tls.load.protocol = netdoctor_load::Protocol::Http2;
        tls.target.scheme = netdoctor_load::target::Scheme::Https;
        tls.raise_snaplen_for_h2c();
        assert_eq!(tls.capture.snaplen, defaults::SNAPLEN);
    }

    #[test]
    fn sockets_are_sampled_within_short_loads() {
        let mut p = DiagnosePlan::new(target());
        assert_eq!(p.socket_sample_at(), Duration::from_millis(500));
        p.load.duration = Duration::from_millis(400);
        assert_eq!(p.socket_sample_at(), Duration::from_millis(200));
    }
}
