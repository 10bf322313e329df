//! Every source of data a diagnosis reads from the machine, behind one trait.
//!
//! The method ([`crate::run`]) never calls the OS directly: it asks a [`Host`] to resolve,
//! probe, capture, read counters and sockets, and run the load. [`SystemHost`] is the real
//! machine; [`crate::fake::FakeHost`] replays recorded results and packets, so the orchestration
//! (which checks are skipped and why, what is corroborated, when a run is interrupted) is tested
//! without root or network. Model: bandwhich's `OsInputOutput`.

use crate::observers::CpuTimes;
use netdoctor_core::RawPacket;
use netdoctor_core::packet::LinkType;
use netdoctor_core::sockets::ServerSocket;
use netdoctor_load::{LoadConfig, LoadError, LoadResult, Progress as LoadProgress};
use netdoctor_observe::live::{LiveCapture, LiveConfig};
use netdoctor_observe::{CounterSnapshot, ObserveError, SourceSummary};
use netdoctor_probe::{HttpProbeConfig, HttpTiming, ProbeError, SynProbe, SynProbeConfig};
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;

/// An open packet capture: it is capturing when [`Host::open_capture`] returns.
pub trait Capture: Send {
    fn link_type(&self) -> LinkType;
    /// Calls `f` for every packet until `stop` is set (packets already captured are still
    /// delivered) or the capture's own packet limit is reached.
    fn run(
        &mut self,
        stop: &AtomicBool,
        f: &mut dyn FnMut(&RawPacket<'_>),
    ) -> Result<SourceSummary, ObserveError>;
}

/// The machine a diagnosis runs on.
pub trait Host: Sync {
    fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, ProbeError>;
    fn syn_probe(&self, addr: SocketAddr, cfg: &SynProbeConfig) -> SynProbe;
    fn http_probe(&self, addr: SocketAddr, cfg: &HttpProbeConfig)
    -> Result<HttpTiming, ProbeError>;
    fn open_capture(&self, cfg: &LiveConfig) -> Result<Box<dyn Capture>, ObserveError>;
    /// Kernel counters of the network namespace the run is in.
    fn counters(&self) -> Result<CounterSnapshot, ObserveError>;
    /// Sockets (with options) of the processes on this host that serve `addr`.
    fn server_sockets(
        &self,
        addr: SocketAddr,
        max_per_process: usize,
    ) -> Result<Vec<ServerSocket>, ObserveError>;
    fn load(
        &self,
        cfg: &LoadConfig,
        stop: &AtomicBool,
        on_progress: &mut dyn FnMut(&LoadProgress),
    ) -> Result<LoadResult, LoadError>;
    /// The machine's and this process's CPU counters; `None` when they cannot be read.
    fn cpu_times(&self) -> Option<CpuTimes>;
    /// Starts the host collectors around the load, sampling the listener of `addr` in the
    /// network namespace of the process that serves it when that process is on this host;
    /// `None` where they do not run.
    fn start_host_run(&self, addr: SocketAddr) -> Option<netdoctor_observe::host_run::HostRun>;
}

/// The real machine.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemHost;

impl Capture for LiveCapture {
    fn link_type(&self) -> LinkType {
        LiveCapture::link_type(self)
    }
    fn run(
        &mut self,
        stop: &AtomicBool,
        f: &mut dyn FnMut(&RawPacket<'_>),
    ) -> Result<SourceSummary, ObserveError> {
        LiveCapture::run(self, stop, f)
    }
}

impl Host for SystemHost {
    fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, ProbeError> {
        netdoctor_probe::resolve(host, port)
    }
    fn syn_probe(&self, addr: SocketAddr, cfg: &SynProbeConfig) -> SynProbe {
        netdoctor_probe::syn_rtt(addr, cfg)
    }
    fn http_probe(
        &self,
        addr: SocketAddr,
        cfg: &HttpProbeConfig,
    ) -> Result<HttpTiming, ProbeError> {
        netdoctor_probe::http_timing(addr, cfg)
    }
    fn open_capture(&self, cfg: &LiveConfig) -> Result<Box<dyn Capture>, ObserveError> {
        Ok(Box::new(LiveCapture::open(cfg)?))
    }
    fn counters(&self) -> Result<CounterSnapshot, ObserveError> {
        netdoctor_observe::counters::snapshot()
    }
    fn server_sockets(
        &self,
        addr: SocketAddr,
        max_per_process: usize,
    ) -> Result<Vec<ServerSocket>, ObserveError> {
        netdoctor_observe::sockopt::server_sockets(addr, max_per_process)
    }
    fn load(
        &self,
        cfg: &LoadConfig,
        stop: &AtomicBool,
        on_progress: &mut dyn FnMut(&LoadProgress),
    ) -> Result<LoadResult, LoadError> {
        netdoctor_load::run(cfg, stop, on_progress)
    }
    fn cpu_times(&self) -> Option<CpuTimes> {
        crate::observers::cpu_times()
    }
    fn start_host_run(&self, addr: SocketAddr) -> Option<netdoctor_observe::host_run::HostRun> {
        use netdoctor_observe::host_run::{HostRun, HostRunConfig};
        let cfg = HostRunConfig {
            listener_port: Some(addr.port()),
            ..Default::default()
        };
        Some(match netdoctor_observe::listener_ns::listener_owner(addr) {
            Some(owner) if !owner.same_netns => {
                match HostRun::start_in_netns_of(owner.pid, &cfg, owner.describe()) {
                    Ok(run) => run,
                    Err(mut skipped) => {
                        // Our own namespace has no such listener: read the rest here.
                        skipped.reason = format!(
                            "the listener is in the {}, not sampled: {}",
                            owner.describe(),
                            skipped.reason
                        );
                        let mut run = HostRun::start(&HostRunConfig {
                            listener_port: None,
                            ..cfg
                        });
                        run.note_skipped(skipped);
                        run
                    }
                }
            }
            _ => HostRun::start(&cfg),
        })
    }
}
