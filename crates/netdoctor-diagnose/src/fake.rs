//! A recorded host: the orchestration's tests feed it results and packets instead of touching
//! the machine (no root, no network). Packets come from a capture file, counters from
//! `/proc/net/netstat`-style text, everything else from plain values.

use crate::host::{Capture, Host};
use crate::observers::CpuTimes;
use netdoctor_core::RawPacket;
use netdoctor_core::packet::LinkType;
use netdoctor_core::sockets::ServerSocket;
use netdoctor_load::{LoadConfig, LoadError, LoadResult, Progress as LoadProgress};
use netdoctor_observe::live::LiveConfig;
use netdoctor_observe::pcapfile::CaptureFile;
use netdoctor_observe::{CounterSnapshot, ObserveError, PacketSource, SourceSummary};
use netdoctor_probe::{
    HttpProbeConfig, HttpTiming, KeepAliveConfig, KeepAliveProbe, ProbeError, SynMethod, SynProbe,
    SynProbeConfig,
};
use netdoctor_route::dns::{DnsOptions, DnsReport};
use netdoctor_route::neighbour::Neighbour;
use netdoctor_route::route_table::NextHop;
use netdoctor_route::trace::{TraceOptions, TraceResult};
use std::net::{IpAddr, SocketAddr};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How the fake capture behaves.
pub enum FakeCapture {
    /// Replays this capture file's packets (of this link type, for a `--pcap` copy).
    File(PathBuf, LinkType),
    /// Opening the capture fails like this.
    Denied,
}

/// Recorded answers; each field is what the real host would have returned.
pub struct FakeHost {
    pub addr: SocketAddr,
    pub syn: SynProbe,
    /// `None`: the connection is refused.
    pub http: Option<HttpTiming>,
    pub capture: FakeCapture,
    /// Counter snapshots handed out in turn (before, after); an empty list fails the read.
    pub counters: Mutex<Vec<CounterSnapshot>>,
    pub sockets: Result<Vec<ServerSocket>, String>,
    pub load: LoadResult,
    /// Progress ticks the fake load reports (the load ends early when `stop` is set).
    pub ticks: Vec<Duration>,
    /// Set by the fake load after this many ticks (simulates a Ctrl-C during the load).
    pub interrupt_after_ticks: Option<usize>,
    /// CPU counters handed out in turn (before, after the load).
    pub cpu: Mutex<Vec<CpuTimes>>,
    /// Listening ports of the namespace.
    pub listening: Vec<u16>,
    /// Requests the probes and the load sent (a passive run must leave this at zero).
    pub sent: std::sync::atomic::AtomicU64,
    /// `Some(message)`: resolving the target's name fails like this.
    pub resolve_error: Option<String>,
    /// What the DNS checks find (`None`: they fail to run).
    pub dns: Option<DnsReport>,
    /// How the target is reached (`Ok(Local)` by default).
    pub next_hop: Result<Option<NextHop>, String>,
    /// The neighbour entry every address has (`None`: no entry).
    pub neighbour: Option<Neighbour>,
    /// When set, every HTTP probe fails with this error (a connect errno, a certificate).
    pub http_error: Option<fn(SocketAddr) -> ProbeError>,
    /// What a trace finds (`None`: it fails to run).
    pub trace: Option<TraceResult>,
    /// The options of every trace asked for, in order.
    pub traces_asked: Mutex<Vec<TraceOptions>>,
    /// What eBPF counted during the load, or why it could not run.
    pub kernel: Result<netdoctor_observe::host_findings::KernelEvents, String>,
    /// What a keep-alive probe measures (`None`: it fails, the connection refused).
    pub keepalive: Option<KeepAliveProbe>,
    /// Keep-alive probes asked for.
    pub keepalive_asked: std::sync::atomic::AtomicU64,
    /// What an MTU probe measures (`None`: it fails, the connection refused).
    pub pmtu: Option<netdoctor_probe::PmtuProbe>,
    /// MTU probes asked for.
    pub pmtu_asked: std::sync::atomic::AtomicU64,
    /// `tcp_info` of the load's connections (empty by default: none sampled).
    pub client_tcp_info: Result<Vec<netdoctor_observe::sockdiag::ConnInfo>, String>,
}

/// Recorded kernel events, handed back as they are.
struct FakeKernelEvents(netdoctor_observe::host_findings::KernelEvents);

impl crate::host::KernelEventsRun for FakeKernelEvents {
    fn finish(self: Box<Self>) -> netdoctor_observe::host_findings::KernelEvents {
        self.0
    }
}

impl FakeHost {
    /// A host whose target answers SYNs in 0.05 ms and one request in 0.3 ms.
    pub fn answering(addr: SocketAddr, load: LoadResult) -> FakeHost {
        FakeHost {
            addr,
            syn: SynProbe {
                method: SynMethod::Connect,
                fallback_reason: None,
                sent: 5,
                answered: 5,
                refused: 0,
                lost: 0,
                rtt_ms: vec![0.05; 5],
                min_ms: Some(0.05),
                median_ms: Some(0.05),
                max_ms: Some(0.05),
            },
            http: Some(HttpTiming {
                connect_ms: 0.05,
                ttfb_ms: 0.2,
                first_byte_ms: 0.25,
                total_ms: 0.3,
                tls_ms: None,
                status: 200,
                header_bytes: 238,
                body_bytes: 615,
                protocol: None,
            }),
            capture: FakeCapture::Denied,
            counters: Mutex::new(Vec::new()),
            sockets: Ok(Vec::new()),
            load,
            ticks: (1..=10).map(|i| Duration::from_millis(100 * i)).collect(),
            interrupt_after_ticks: None,
            cpu: Mutex::new(Vec::new()),
            listening: Vec::new(),
            sent: std::sync::atomic::AtomicU64::new(0),
            resolve_error: None,
            dns: None,
            next_hop: Ok(Some(NextHop::Local)),
            neighbour: None,
            http_error: None,
            trace: None,
            traces_asked: Mutex::new(Vec::new()),
            kernel: Err("eBPF does not run on this recorded host".to_string()),
            keepalive: None,
            keepalive_asked: std::sync::atomic::AtomicU64::new(0),
            pmtu: None,
            pmtu_asked: std::sync::atomic::AtomicU64::new(0),
            client_tcp_info: Ok(Vec::new()),
        }
    }
}

struct FileCapture(CaptureFile, LinkType);

impl Capture for FileCapture {
    fn link_type(&self) -> LinkType {
        self.1
    }
    fn run(
        &mut self,
        _stop: &AtomicBool,
        f: &mut dyn FnMut(&RawPacket<'_>),
    ) -> Result<SourceSummary, ObserveError> {
        self.0.for_each_packet(&mut |p| {
            f(p);
            ControlFlow::Continue(())
        })
    }
}

impl Host for FakeHost {
    fn resolve(&self, host: &str, _port: u16) -> Result<Vec<SocketAddr>, ProbeError> {
        match &self.resolve_error {
            None => Ok(vec![self.addr]),
            Some(msg) => Err(ProbeError::Resolve {
                host: host.to_string(),
                msg: msg.clone(),
            }),
        }
    }
    fn syn_probe(&self, _addr: SocketAddr, _cfg: &SynProbeConfig) -> SynProbe {
        self.sent.fetch_add(1, Ordering::Relaxed);
        self.syn.clone()
    }
    fn connect_probe(&self, _addr: SocketAddr, _cfg: &SynProbeConfig) -> SynProbe {
        self.sent.fetch_add(1, Ordering::Relaxed);
        SynProbe {
            method: SynMethod::Connect,
            ..self.syn.clone()
        }
    }
    fn http_probe(
        &self,
        addr: SocketAddr,
        _cfg: &HttpProbeConfig,
    ) -> Result<HttpTiming, ProbeError> {
        self.sent.fetch_add(1, Ordering::Relaxed);
        if let Some(fail) = self.http_error {
            return Err(fail(addr));
        }
        self.http.clone().ok_or(ProbeError::Refused { addr })
    }
    fn keepalive_probe(
        &self,
        addr: SocketAddr,
        _cfg: &KeepAliveConfig,
    ) -> Result<KeepAliveProbe, ProbeError> {
        self.sent.fetch_add(1, Ordering::Relaxed);
        self.keepalive_asked.fetch_add(1, Ordering::Relaxed);
        self.keepalive.clone().ok_or(ProbeError::Refused { addr })
    }
    fn pmtu_probe(
        &self,
        addr: SocketAddr,
        _cfg: &netdoctor_probe::PmtuConfig,
    ) -> Result<netdoctor_probe::PmtuProbe, ProbeError> {
        self.sent.fetch_add(1, Ordering::Relaxed);
        self.pmtu_asked.fetch_add(1, Ordering::Relaxed);
        self.pmtu.clone().ok_or(ProbeError::Refused { addr })
    }
    fn client_tcp_info(
        &self,
        _addr: SocketAddr,
    ) -> Result<Vec<netdoctor_observe::sockdiag::ConnInfo>, String> {
        self.client_tcp_info.clone()
    }
    fn open_capture(
        &self,
        _cfg: &LiveConfig,
        _rings: usize,
    ) -> Result<Box<dyn Capture>, ObserveError> {
        match &self.capture {
            FakeCapture::File(p, link) => Ok(Box::new(FileCapture(CaptureFile::open(p)?, *link))),
            FakeCapture::Denied => Err(ObserveError::NeedsCapNetRaw),
        }
    }
    fn counters(&self) -> Result<CounterSnapshot, ObserveError> {
        let mut list = self.counters.lock().unwrap_or_else(|e| e.into_inner());
        if list.is_empty() {
            return Err(ObserveError::Capture {
                op: "read /proc/net/netstat".into(),
                errno: None,
                message: "no recorded counters".into(),
            });
        }
        Ok(list.remove(0))
    }
    fn server_sockets(
        &self,
        _addr: SocketAddr,
        _max_per_process: usize,
    ) -> Result<Vec<ServerSocket>, ObserveError> {
        self.sockets
            .clone()
            .map_err(|message| ObserveError::Capture {
                op: "read the server's sockets".into(),
                errno: None,
                message,
            })
    }
    fn load(
        &self,
        cfg: &LoadConfig,
        stop: &AtomicBool,
        on_progress: &mut dyn FnMut(&LoadProgress),
    ) -> Result<LoadResult, LoadError> {
        if cfg.connections == 0 {
            return Err(LoadError::NoConnections);
        }
        self.sent.fetch_add(1, Ordering::Relaxed);
        let mut result = self.load.clone();
        for (i, &elapsed) in self.ticks.iter().enumerate() {
            if stop.load(Ordering::Relaxed) {
                result.duration_s = elapsed.as_secs_f64();
                break;
            }
            on_progress(&LoadProgress {
                elapsed,
                requests: 0,
                errors: 0,
            });
            if self.interrupt_after_ticks == Some(i + 1) {
                stop.store(true, Ordering::Relaxed);
            }
        }
        Ok(result)
    }
    fn start_host_run(&self, _addr: SocketAddr) -> Option<netdoctor_observe::host_run::HostRun> {
        None
    }
    fn listening_ports(&self) -> Result<Vec<u16>, String> {
        Ok(self.listening.clone())
    }
    fn start_kernel_events(
        &self,
        _addr: SocketAddr,
    ) -> Result<Box<dyn crate::host::KernelEventsRun>, String> {
        self.kernel
            .clone()
            .map(|k| Box::new(FakeKernelEvents(k)) as Box<dyn crate::host::KernelEventsRun>)
    }
    fn cpu_times(&self) -> Option<CpuTimes> {
        let mut list = self.cpu.lock().unwrap_or_else(|e| e.into_inner());
        (!list.is_empty()).then(|| list.remove(0))
    }
    fn dns(&self, _opts: &DnsOptions) -> Result<DnsReport, String> {
        self.dns
            .clone()
            .ok_or_else(|| "no recorded DNS result".to_string())
    }
    fn next_hop(&self, _ip: IpAddr) -> Result<Option<NextHop>, String> {
        self.next_hop.clone()
    }
    fn neighbour(&self, _ip: IpAddr, _iface: Option<&str>) -> Result<Option<Neighbour>, String> {
        Ok(self.neighbour.clone())
    }
    fn trace(&self, opts: &TraceOptions) -> Result<TraceResult, String> {
        self.traces_asked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(opts.clone());
        self.trace
            .clone()
            .ok_or_else(|| "no recorded trace".to_string())
    }
}
