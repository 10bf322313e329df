//! netdoctor-bpf: eBPF observers on BTF-enabled tracepoints (`tp_btf`; no kprobes, no tracefs),
//! loaded with aya 0.14 from an object that `build.rs` compiles from `bpf/netdoctor.bpf.c` with
//! clang. While a [`BpfObserver`] lives, it counts:
//!
//! - `skb:kfree_skb` drops by drop reason (names from the running kernel's BTF) and by kernel
//!   location (resolved with /proc/kallsyms);
//! - `tcp:tcp_retransmit_skb` by connection;
//! - `sock:inet_sock_set_state` TCP state transitions.
//!
//! Counting happens in the kernel (hash maps); [`BpfObserver::finish`] reads the maps once.
//! The scope is one network namespace (the calling thread's, by its inode number) or all.
//! Each program loads and attaches on its own: one that fails is listed in
//! [`BpfSummary::failed`] with the reason and the rest goes on; [`BpfObserver::start`] fails
//! only when none could run. Dropping the observer detaches and unloads everything (aya closes
//! the links and program file descriptors); nothing is pinned, so nothing stays behind.
//! A separate crate keeps aya out of the other crates' dependency trees.

pub mod btfenum;
pub mod ksyms;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Why the eBPF observer cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BpfError {
    /// The crate was built without the BPF object.
    #[error("eBPF observers were not built: {0}")]
    NotBuilt(String),
    /// The object could not be loaded at all.
    #[error("load eBPF object: {message}{}", needs_suffix(*needs))]
    Load {
        message: String,
        needs: Option<&'static str>,
    },
    /// No program could be attached; each one's reason.
    #[error("no eBPF program could run: {}", .0.iter().map(|f| format!("{}: {}", f.program, f.reason)).collect::<Vec<_>>().join("; "))]
    NoProgram(Vec<ProgramFailure>),
}

fn needs_suffix(needs: Option<&'static str>) -> String {
    needs.map(|c| format!(" (needs {c})")).unwrap_or_default()
}

/// The capabilities loading BPF tracing programs needs.
pub const BPF_CAPS: &str = "CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN";

/// A program that could not load or attach, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProgramFailure {
    /// The tracepoint, e.g. `"skb:kfree_skb"`.
    pub program: String,
    pub reason: String,
}

/// Which packets and sockets count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Only the network namespace of the thread that calls [`BpfObserver::start`].
    CallingThreadNetns,
    /// Every namespace of the machine.
    AllNamespaces,
    /// The network namespace with this inode number (e.g. of `/proc/PID/ns/net`).
    Netns(u64),
}

/// Drops of one reason at one kernel location.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DropGroup {
    /// e.g. `"NETFILTER_DROP"`, `"NO_SOCKET"`, `"TCP_LISTEN_OVERFLOW"`.
    pub reason: String,
    pub reason_code: u32,
    /// e.g. `"nf_hook_slow+0x9c"`.
    pub location: String,
    pub count: u64,
}

/// Retransmissions of one connection.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RetransConn {
    pub local: SocketAddr,
    pub remote: SocketAddr,
    pub count: u64,
}

/// How often TCP sockets went from one state to another.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StateChange {
    pub from: String,
    pub to: String,
    pub count: u64,
}

/// What the observer counted.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BpfSummary {
    /// Busiest first.
    pub drops: Vec<DropGroup>,
    pub retransmits: Vec<RetransConn>,
    pub state_changes: Vec<StateChange>,
    /// Programs that did not run, with the reason.
    pub failed: Vec<ProgramFailure>,
}

impl BpfSummary {
    /// Drops of one reason, all locations together.
    pub fn drops_of(&self, reason: &str) -> u64 {
        self.drops
            .iter()
            .filter(|d| d.reason == reason)
            .map(|d| d.count)
            .sum()
    }
}

/// The TCP state names of the kernel (`include/net/tcp_states.h`).
pub fn tcp_state_name(state: u32) -> String {
    const NAMES: [&str; 13] = [
        "?",
        "ESTABLISHED",
        "SYN_SENT",
        "SYN_RECV",
        "FIN_WAIT1",
        "FIN_WAIT2",
        "TIME_WAIT",
        "CLOSE",
        "CLOSE_WAIT",
        "LAST_ACK",
        "LISTEN",
        "CLOSING",
        "NEW_SYN_RECV",
    ];
    NAMES
        .get(state as usize)
        .map(|s| s.to_string())
        .unwrap_or_else(|| format!("state {state}"))
}

/// Socket addresses from the raw key fields of a retransmission (kernel byte order as stored).
pub fn conn_addrs(
    family: u16,
    saddr: [u8; 16],
    daddr: [u8; 16],
    sport: u16,
    dport: u16,
) -> (SocketAddr, SocketAddr) {
    let ip = |b: [u8; 16]| -> IpAddr {
        if family == libc::AF_INET as u16 {
            IpAddr::V4(Ipv4Addr::new(b[0], b[1], b[2], b[3]))
        } else {
            let v6 = Ipv6Addr::from(b);
            v6.to_ipv4_mapped()
                .map(IpAddr::V4)
                .unwrap_or(IpAddr::V6(v6))
        }
    };
    (
        SocketAddr::new(ip(saddr), sport),
        SocketAddr::new(ip(daddr), dport),
    )
}

/// Whether this build has the eBPF programs (`build.rs` found clang, libbpf-dev and bpftool).
/// Tests assert an `ok` eBPF check only when it is true; `--version` says it.
pub const BUILT: bool = cfg!(netdoctor_bpf);

/// Why this build has no eBPF programs (the build script's reason), or `None` when it has them.
pub fn not_built_reason() -> Option<&'static str> {
    #[cfg(netdoctor_bpf)]
    return None;
    #[cfg(not(netdoctor_bpf))]
    return Some(env!("NETDOCTOR_BPF_SKIP"));
}

#[cfg(netdoctor_bpf)]
mod live;
#[cfg(netdoctor_bpf)]
pub use live::BpfObserver;

/// Stand-in when the object was not built: `start` says why.
#[cfg(not(netdoctor_bpf))]
pub struct BpfObserver;

#[cfg(not(netdoctor_bpf))]
impl BpfObserver {
    /// Always fails: the crate was built without clang, libbpf-dev or kernel BTF.
    pub fn start(_scope: Scope) -> Result<BpfObserver, BpfError> {
        Err(BpfError::NotBuilt(env!("NETDOCTOR_BPF_SKIP").to_string()))
    }

    /// Never reached.
    pub fn failed(&self) -> &[ProgramFailure] {
        &[]
    }

    /// Never reached.
    pub fn snapshot(&self) -> BpfSummary {
        BpfSummary::default()
    }

    /// Never reached.
    pub fn snapshot_with(&self, _locations: bool) -> BpfSummary {
        BpfSummary::default()
    }

    /// Never reached.
    pub fn finish(self) -> BpfSummary {
        BpfSummary::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_names_and_addresses() {
        assert_eq!(tcp_state_name(6), "TIME_WAIT");
        assert_eq!(tcp_state_name(99), "state 99");
        let mut s = [0u8; 16];
        s[..4].copy_from_slice(&[10, 0, 0, 1]);
        let (l, r) = conn_addrs(libc::AF_INET as u16, s, s, 80, 40000);
        assert_eq!(l.to_string(), "10.0.0.1:80");
        assert_eq!(r.port(), 40000);
    }
}
