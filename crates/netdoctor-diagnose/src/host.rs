//! Every source of data a diagnosis reads from the machine, behind one trait.
//!
//! The method ([`crate::run`]) never calls the OS directly: it asks a [`Host`] to resolve (and
//! time the resolver and its nameservers), look up the route and trace it, probe, capture, read
//! counters and sockets, and run the load. [`SystemHost`] is the real
//! machine; [`crate::fake::FakeHost`] replays recorded results and packets, so the orchestration
//! (which checks are skipped and why, what is corroborated, when a run is interrupted) is tested
//! without root or network. Model: bandwhich's `OsInputOutput`.

use crate::observers::CpuTimes;
use netdoctor_core::RawPacket;
use netdoctor_core::packet::LinkType;
use netdoctor_core::sockets::ServerSocket;
use netdoctor_load::{LoadConfig, LoadError, LoadResult, Progress as LoadProgress};
use netdoctor_observe::fanout::LiveRings;
use netdoctor_observe::host_findings::{
    KernelDrop, KernelEvents, KernelRetransmit, KernelStateChange,
};
use netdoctor_observe::live::{DEFAULT_RING_BYTES, LiveConfig};
use netdoctor_observe::{CounterSnapshot, ObserveError, SourceSummary};
use netdoctor_probe::{
    HttpProbeConfig, HttpTiming, KeepAliveConfig, KeepAliveProbe, PmtuConfig, PmtuProbe,
    ProbeError, SynProbe, SynProbeConfig,
};
use netdoctor_route::dns::{DnsOptions, DnsReport};
use netdoctor_route::neighbour::Neighbour;
use netdoctor_route::route_table::NextHop;
use netdoctor_route::trace::{TraceOptions, TraceResult};
use std::net::{IpAddr, SocketAddr};
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
    /// connect() timed to completion (the whole handshake, through the listener).
    fn connect_probe(&self, addr: SocketAddr, cfg: &SynProbeConfig) -> SynProbe;
    fn http_probe(&self, addr: SocketAddr, cfg: &HttpProbeConfig)
    -> Result<HttpTiming, ProbeError>;
    /// A short keep-alive probe: does the server keep connections, what setup costs.
    fn keepalive_probe(
        &self,
        addr: SocketAddr,
        cfg: &KeepAliveConfig,
    ) -> Result<KeepAliveProbe, ProbeError>;
    /// Which packet sizes get from the target to this host (after a load whose answers
    /// looked lost on the path).
    fn pmtu_probe(&self, addr: SocketAddr, cfg: &PmtuConfig) -> Result<PmtuProbe, ProbeError>;
    /// A capture on `rings` rings (more than one: a PACKET_FANOUT group, see
    /// [`netdoctor_observe::fanout`]).
    fn open_capture(
        &self,
        cfg: &LiveConfig,
        rings: usize,
    ) -> Result<Box<dyn Capture>, ObserveError>;
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
    /// The process listening on `addr` on this host; `None` when none is found.
    fn server_pid(&self, _addr: SocketAddr) -> Option<u32> {
        None
    }
    /// Each task of the server process `pid` belongs to (its processes' threads) with its
    /// on-CPU and run-queue time so far.
    fn server_tasks(&self, _pid: u32) -> Option<Vec<netdoctor_observe::schedstat::TaskCpu>> {
        None
    }
    /// `tcp_info` (sock_diag) of this side's established connections to `addr`: the load's
    /// own client sockets while it runs, for the kernel's `min_rtt` of each.
    fn client_tcp_info(
        &self,
        addr: SocketAddr,
    ) -> Result<Vec<netdoctor_observe::sockdiag::ConnInfo>, String>;
    /// The TCP ports listening in the run's network namespace (sock_diag), so connections
    /// that began before the capture are oriented by them.
    fn listening_ports(&self) -> Result<Vec<u16>, String>;
    /// The resolver's path, getaddrinfo and each nameserver asked directly for `opts.name`.
    fn dns(&self, opts: &DnsOptions) -> Result<DnsReport, String>;
    /// How the run's network namespace reaches `ip`; `Ok(None)` when it cannot say (IPv6).
    fn next_hop(&self, ip: IpAddr) -> Result<Option<NextHop>, String>;
    /// The neighbour entry (ARP for IPv4, neighbour discovery for IPv6) of `ip` on `iface`
    /// (the route's interface, when known) in the run's network namespace: whether a next hop
    /// answered; `Ok(None)` when there is no entry.
    fn neighbour(&self, ip: IpAddr, iface: Option<&str>) -> Result<Option<Neighbour>, String>;
    /// A traceroute with these options.
    fn trace(&self, opts: &TraceOptions) -> Result<TraceResult, String>;
    /// Starts the host collectors around the load, sampling the listener of `addr` in the
    /// network namespace of the process that serves it when that process is on this host;
    /// `None` where they do not run.
    fn start_host_run(&self, addr: SocketAddr) -> Option<netdoctor_observe::host_run::HostRun>;
    /// Starts counting kernel events with eBPF (drops, retransmits, state changes) in the
    /// network namespace that serves `addr` when its process is on this host, else in this
    /// one; the error says why it cannot run (and which capability is missing).
    fn start_kernel_events(&self, addr: SocketAddr) -> Result<Box<dyn KernelEventsRun>, String>;
}

/// Kernel events being counted; [`KernelEventsRun::finish`] reads them and stops counting.
pub trait KernelEventsRun: Send {
    fn finish(self: Box<Self>) -> KernelEvents;
}

/// The eBPF observer of `netdoctor-bpf`, counting in one namespace.
struct SystemKernelEvents {
    observer: netdoctor_bpf::BpfObserver,
    netns: String,
    /// The target: its connections' share of the namespace's retransmits is counted apart.
    target: SocketAddr,
    /// The namespace counted is the server's.
    server_netns: bool,
}

impl KernelEventsRun for SystemKernelEvents {
    fn finish(self: Box<Self>) -> KernelEvents {
        let s = self.observer.finish();
        let target = self.target;
        let to_target = |r: &&netdoctor_bpf::RetransConn| r.local == target || r.remote == target;
        KernelEvents {
            netns: self.netns,
            server_netns: self.server_netns,
            target_retransmits: s
                .retransmits
                .iter()
                .filter(to_target)
                .map(|r| r.count)
                .sum(),
            target_retransmit_connections: s.retransmits.iter().filter(to_target).count() as u64,
            drops: s
                .drops
                .into_iter()
                .map(|d| KernelDrop {
                    reason: d.reason,
                    location: d.location,
                    count: d.count,
                })
                .collect(),
            retransmits_total: s.retransmits.iter().map(|r| r.count).sum(),
            retransmit_connections: s.retransmits.len() as u64,
            retransmits: s
                .retransmits
                .into_iter()
                .take(KernelEvents::MAX_CONNECTIONS)
                .map(|r| KernelRetransmit {
                    local: r.local.to_string(),
                    remote: r.remote.to_string(),
                    count: r.count,
                })
                .collect(),
            state_changes: s
                .state_changes
                .into_iter()
                .map(|c| KernelStateChange {
                    from: c.from,
                    to: c.to,
                    count: c.count,
                })
                .collect(),
            failed: s
                .failed
                .into_iter()
                .map(|f| format!("{}: {}", f.program, f.reason))
                .collect(),
        }
    }
}

/// The real machine.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemHost;

impl Capture for LiveRings {
    fn link_type(&self) -> LinkType {
        LiveRings::link_type(self)
    }
    fn run(
        &mut self,
        stop: &AtomicBool,
        f: &mut dyn FnMut(&RawPacket<'_>),
    ) -> Result<SourceSummary, ObserveError> {
        self.run_flow(stop, &mut |p| {
            f(p);
            std::ops::ControlFlow::Continue(())
        })
    }
}

impl Host for SystemHost {
    fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, ProbeError> {
        netdoctor_probe::resolve(host, port)
    }
    fn syn_probe(&self, addr: SocketAddr, cfg: &SynProbeConfig) -> SynProbe {
        netdoctor_probe::syn_rtt(addr, cfg)
    }
    fn connect_probe(&self, addr: SocketAddr, cfg: &SynProbeConfig) -> SynProbe {
        netdoctor_probe::connect_rtt(addr, cfg)
    }
    fn http_probe(
        &self,
        addr: SocketAddr,
        cfg: &HttpProbeConfig,
    ) -> Result<HttpTiming, ProbeError> {
        netdoctor_probe::http_timing(addr, cfg)
    }
    fn keepalive_probe(
        &self,
        addr: SocketAddr,
        cfg: &KeepAliveConfig,
    ) -> Result<KeepAliveProbe, ProbeError> {
        netdoctor_probe::keepalive_probe(addr, cfg)
    }
    fn pmtu_probe(&self, addr: SocketAddr, cfg: &PmtuConfig) -> Result<PmtuProbe, ProbeError> {
        netdoctor_probe::pmtu_probe(addr, cfg)
    }
    fn open_capture(
        &self,
        cfg: &LiveConfig,
        rings: usize,
    ) -> Result<Box<dyn Capture>, ObserveError> {
        Ok(Box::new(LiveRings::open(cfg, DEFAULT_RING_BYTES, rings)?))
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
    fn server_pid(&self, addr: SocketAddr) -> Option<u32> {
        Some(netdoctor_observe::listener_ns::listener_owner(addr)?.pid)
    }
    fn server_tasks(&self, pid: u32) -> Option<Vec<netdoctor_observe::schedstat::TaskCpu>> {
        netdoctor_observe::schedstat::server_tasks(pid)
    }
    fn client_tcp_info(
        &self,
        addr: SocketAddr,
    ) -> Result<Vec<netdoctor_observe::sockdiag::ConnInfo>, String> {
        netdoctor_observe::sockdiag::tcp_info(|_, remote| *remote == addr)
            .map_err(|e| e.to_string())
    }
    fn listening_ports(&self) -> Result<Vec<u16>, String> {
        let mut ports: Vec<u16> = netdoctor_observe::sockdiag::listeners()
            .map_err(|e| e.to_string())?
            .iter()
            .map(|l| l.local.port())
            .collect();
        ports.sort_unstable();
        ports.dedup();
        Ok(ports)
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

    fn start_kernel_events(&self, addr: SocketAddr) -> Result<Box<dyn KernelEventsRun>, String> {
        use netdoctor_observe::listener_ns;
        use std::os::unix::fs::MetadataExt;
        let (owner, untold) = match listener_ns::listener_owner_or_why(addr) {
            Ok(owner) => (owner, None),
            Err(why) => (None, Some(why)),
        };
        let server_netns = owner.is_some();
        let (scope, mut netns) = match owner {
            Some(owner) if !owner.same_netns => {
                let ino = std::fs::metadata(format!("/proc/{}/ns/net", owner.pid))
                    .map_err(|e| format!("{}: {e}", owner.describe()))?
                    .ino();
                (netdoctor_bpf::Scope::Netns(ino), owner.describe())
            }
            _ => (
                netdoctor_bpf::Scope::CallingThreadNetns,
                format!(
                    "network namespace {} of this run",
                    listener_ns::own_netns().unwrap_or_default()
                ),
            ),
        };
        if let Some(why) = untold {
            netns.push_str(&format!(" (the server's is not counted: {why})"));
        }
        let observer = netdoctor_bpf::BpfObserver::start(scope).map_err(|e| e.to_string())?;
        Ok(Box::new(SystemKernelEvents {
            observer,
            netns,
            target: addr,
            server_netns,
        }))
    }
    fn dns(&self, opts: &DnsOptions) -> Result<DnsReport, String> {
        netdoctor_route::dns::run(opts).map_err(|e| e.to_string())
    }
    fn next_hop(&self, ip: IpAddr) -> Result<Option<NextHop>, String> {
        netdoctor_route::route_table::lookup(ip)
            .map_err(|e| format!("read /proc/thread-self/net/route: {e}"))
    }
    fn neighbour(&self, ip: IpAddr, iface: Option<&str>) -> Result<Option<Neighbour>, String> {
        netdoctor_route::neighbour::lookup(ip, iface).map_err(|e| match ip.to_canonical() {
            IpAddr::V4(_) => format!("read /proc/thread-self/net/arp: {e}"),
            IpAddr::V6(_) => format!("dump the IPv6 neighbour table (RTM_GETNEIGH): {e}"),
        })
    }
    fn trace(&self, opts: &TraceOptions) -> Result<TraceResult, String> {
        netdoctor_route::trace::run(opts, &mut |_, _| {}).map_err(|e| e.to_string())
    }
}
