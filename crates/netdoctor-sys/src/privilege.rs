//! Which capabilities this thread has, which one each privileged feature of netdoctor needs, and
//! what still works without it — so a run without root says exactly what it skipped and why,
//! never guesses ("a remote server?") when the answer is "not permitted".
//!
//! The effective set is read from `CapEff` in `/proc/thread-self/status` (capabilities are per
//! thread in Linux). The model is trippy's `trippy-privilege`: ask once, then let each feature
//! say what it needs; the code is netdoctor's own.

use std::fmt;
use std::io;

/// The Linux capabilities netdoctor's features need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Capability {
    /// CAP_NET_ADMIN (12): network configuration, `SO_RCVBUFFORCE`, veth pairs.
    NetAdmin,
    /// CAP_NET_RAW (13): raw and packet sockets.
    NetRaw,
    /// CAP_SYS_PTRACE (19): `pidfd_getfd` of another user's process.
    SysPtrace,
    /// CAP_SYS_ADMIN (21): namespaces (`setns`, `ip netns add`); also implies eBPF on old kernels.
    SysAdmin,
    /// CAP_PERFMON (38): attaching eBPF programs to tracepoints.
    Perfmon,
    /// CAP_BPF (39): loading eBPF programs and maps.
    Bpf,
}

impl Capability {
    /// Every capability of this enum.
    pub const ALL: [Capability; 6] = [
        Capability::NetAdmin,
        Capability::NetRaw,
        Capability::SysPtrace,
        Capability::SysAdmin,
        Capability::Perfmon,
        Capability::Bpf,
    ];

    /// The capability's number in `linux/capability.h`.
    pub fn number(self) -> u32 {
        match self {
            Capability::NetAdmin => 12,
            Capability::NetRaw => 13,
            Capability::SysPtrace => 19,
            Capability::SysAdmin => 21,
            Capability::Perfmon => 38,
            Capability::Bpf => 39,
        }
    }

    /// The name as in the man pages: `CAP_NET_RAW`.
    pub fn name(self) -> &'static str {
        match self {
            Capability::NetAdmin => "CAP_NET_ADMIN",
            Capability::NetRaw => "CAP_NET_RAW",
            Capability::SysPtrace => "CAP_SYS_PTRACE",
            Capability::SysAdmin => "CAP_SYS_ADMIN",
            Capability::Perfmon => "CAP_PERFMON",
            Capability::Bpf => "CAP_BPF",
        }
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of capabilities as the kernel shows it: one bit per capability number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CapSet(pub u64);

impl CapSet {
    /// Whether `cap` is in the set.
    pub fn contains(self, cap: Capability) -> bool {
        self.0 & (1u64 << cap.number()) != 0
    }
}

/// The `CapEff` line of a `/proc/<pid>/status` text: `CapEff:\t000001ffffffffff`.
pub fn parse_cap_eff(status: &str) -> Result<CapSet, String> {
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .ok_or("no CapEff line")?;
    let hex = line.trim();
    u64::from_str_radix(hex, 16)
        .map(CapSet)
        .map_err(|e| format!("CapEff {hex:?}: {e}"))
}

/// The effective capabilities of the calling thread (`/proc/thread-self/status`).
pub fn effective() -> io::Result<CapSet> {
    let text = std::fs::read_to_string("/proc/thread-self/status")?;
    parse_cap_eff(&text).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Whether the effective user is root (uid 0). Capabilities say more (see [`Privileges`]);
/// this is for what is tied to the user, e.g. running a child as another user in tests.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions, touches no memory and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// A netdoctor feature that needs a privilege.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Feature {
    /// AF_PACKET capture of the run's packets.
    PacketCapture,
    /// The raw-socket SYN probe (`hping3 -S`-like RTT with kernel timestamps).
    RawSynProbe,
    /// Reading socket options (TCP_NODELAY, …) of a server owned by another user
    /// (`pidfd_getfd`).
    ForeignSocketOptions,
    /// `SO_RCVBUFFORCE`: a receive buffer above `net.core.rmem_max` for the raw SYN probe.
    ForcedReceiveBuffer,
    /// Network namespaces: `--netns`, the lab and the demo.
    Namespaces,
    /// eBPF programs on tracepoints (drop reasons, retransmits, setsockopt calls).
    Ebpf,
}

impl Feature {
    /// Every feature of this enum.
    pub const ALL: [Feature; 6] = [
        Feature::PacketCapture,
        Feature::RawSynProbe,
        Feature::ForeignSocketOptions,
        Feature::ForcedReceiveBuffer,
        Feature::Namespaces,
        Feature::Ebpf,
    ];

    /// What the feature is, as the subject of a sentence.
    pub fn what(self) -> &'static str {
        match self {
            Feature::PacketCapture => "packet capture",
            Feature::RawSynProbe => "the raw SYN probe",
            Feature::ForeignSocketOptions => {
                "reading the socket options of another user's process (pidfd_getfd)"
            }
            Feature::ForcedReceiveBuffer => "a receive buffer above net.core.rmem_max",
            Feature::Namespaces => "network namespaces (--netns, lab, demo)",
            Feature::Ebpf => "eBPF tracepoint programs",
        }
    }

    /// The capabilities that allow it: any one of these alternatives, each needing all of its
    /// capabilities.
    pub fn needs(self) -> &'static [&'static [Capability]] {
        use Capability::*;
        match self {
            Feature::PacketCapture | Feature::RawSynProbe => &[&[NetRaw]],
            // ptrace_may_access() checks CAP_SYS_PTRACE only; CAP_SYS_ADMIN does not grant it.
            Feature::ForeignSocketOptions => &[&[SysPtrace]],
            Feature::ForcedReceiveBuffer => &[&[NetAdmin]],
            Feature::Namespaces => &[&[SysAdmin, NetAdmin]],
            Feature::Ebpf => &[&[Bpf, Perfmon], &[SysAdmin]],
        }
    }

    /// What still works without it.
    pub fn without(self) -> &'static str {
        match self {
            Feature::PacketCapture => {
                "the load, probes and kernel counters still run; findings that need packets are \
                 skipped (or capture with tcpdump elsewhere and run `netdoctor analyze`)"
            }
            Feature::RawSynProbe => "the SYN round trip is timed with connect() instead",
            Feature::ForeignSocketOptions => {
                "the options of servers run by this user are still read; the others are skipped"
            }
            Feature::ForcedReceiveBuffer => {
                "the buffer stays at net.core.rmem_max; under heavy loopback load a SYN/ACK may \
                 be dropped and its probe counted as lost"
            }
            Feature::Namespaces => "runs against targets reachable from this namespace still work",
            Feature::Ebpf => "kernel counters (netstat, snmp) stand in for the per-event view",
        }
    }
}

/// A feature that cannot run for lack of a capability.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    /// The feature.
    pub feature: Feature,
    /// The capabilities to add (the smallest alternative that is not held).
    pub capabilities: Vec<Capability>,
}

impl Missing {
    /// `CAP_BPF and CAP_PERFMON`.
    pub fn capability_names(&self) -> String {
        let names: Vec<&str> = self.capabilities.iter().map(|c| c.name()).collect();
        names.join(" and ")
    }
}

impl fmt::Display for Missing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} needs {} (run as root or grant it); without it {}",
            self.feature.what(),
            self.capability_names(),
            self.feature.without()
        )
    }
}

/// The privileges of the calling thread, asked once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Privileges {
    effective: CapSet,
}

impl Privileges {
    /// The calling thread's effective set; an unreadable status counts as no capability.
    pub fn current() -> Privileges {
        Privileges {
            effective: effective().unwrap_or_default(),
        }
    }

    /// Privileges from a given set (tests, or another process's status).
    pub fn from_set(effective: CapSet) -> Privileges {
        Privileges { effective }
    }

    /// The effective set.
    pub fn effective(&self) -> CapSet {
        self.effective
    }

    /// Whether `cap` is held.
    pub fn has(&self, cap: Capability) -> bool {
        self.effective.contains(cap)
    }

    /// `Ok` when `feature` is allowed, else what is missing.
    pub fn check(&self, feature: Feature) -> Result<(), Missing> {
        let alternatives = feature.needs();
        if alternatives
            .iter()
            .any(|all| all.iter().all(|&c| self.has(c)))
        {
            return Ok(());
        }
        // The alternative that lacks the fewest capabilities; report only what it lacks.
        let capabilities = alternatives
            .iter()
            .map(|all| {
                all.iter()
                    .copied()
                    .filter(|&c| !self.has(c))
                    .collect::<Vec<_>>()
            })
            .min_by_key(Vec::len)
            .unwrap_or_default();
        Err(Missing {
            feature,
            capabilities,
        })
    }

    /// Every feature that cannot run, with what is missing for it.
    pub fn missing(&self) -> Vec<Missing> {
        Feature::ALL
            .iter()
            .filter_map(|&f| self.check(f).err())
            .collect()
    }

    /// For an error of `feature`'s system call: when it is EPERM/EACCES, what is missing (the
    /// needed capabilities this thread lacks, or all of them when it seems to hold them —
    /// e.g. a user namespace or an LSM said no).
    pub fn explain(&self, feature: Feature, err: &io::Error) -> Option<Missing> {
        if !crate::os_error::is_permission(err) {
            return None;
        }
        Some(self.check(feature).err().unwrap_or_else(|| {
            Missing {
                feature,
                capabilities: feature
                    .needs()
                    .first()
                    .map(|a| a.to_vec())
                    .unwrap_or_default(),
            }
        }))
    }
}

/// Removes `cap` from the effective set of the calling thread only (the raw `capset` syscall
/// acts on one thread, unlike glibc's setuid family). The permitted set keeps it, so
/// [`raise_effective`] can bring it back. Returns false when the thread did not have it. For
/// tests that check the unprivileged paths while running as root.
pub fn drop_effective_in_this_thread(cap: Capability) -> io::Result<bool> {
    set_effective(cap, false)
}

/// Raises `cap` from the permitted into the effective set of the calling thread, as a binary
/// with `setcap cap_net_raw+p` must before it can use it (threads spawned afterwards inherit
/// it, so call it first thing). Returns false when `cap` is not permitted (then nothing
/// changes), true when it is effective now.
pub fn raise_effective(cap: Capability) -> io::Result<bool> {
    set_effective(cap, true)
}

/// `capget`, change the effective bit of `cap` (raise only when permitted), `capset`.
fn set_effective(cap: Capability, on: bool) -> io::Result<bool> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    let mut hdr = Header {
        version: VERSION_3,
        pid: 0,
    };
    let mut data = [Data::default(); 2];
    // SAFETY: capget reads `hdr` and writes two `Data` structs (the version 3 layout) into
    // `data`; both live for the call and have the layout the kernel expects (`repr(C)`).
    let rc = unsafe { libc::syscall(libc::SYS_capget, &mut hdr, data.as_mut_ptr()) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let n = cap.number() as usize;
    let (word, bit) = (n / 32, 1u32 << (n % 32));
    let d = &mut data[word];
    if on {
        if d.permitted & bit == 0 {
            return Ok(false);
        }
        if d.effective & bit != 0 {
            return Ok(true);
        }
        d.effective |= bit;
    } else {
        if d.effective & bit == 0 {
            return Ok(false);
        }
        d.effective &= !bit;
    }
    // SAFETY: capset reads `hdr` and two `Data` structs, all live for the call; pid 0 means the
    // calling thread only.
    let rc = unsafe { libc::syscall(libc::SYS_capset, &mut hdr, data.as_ptr()) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT_STATUS: &str = "Name:\tcat\nUmask:\t0022\nState:\tR (running)\n\
        CapInh:\t0000000000000000\nCapPrm:\t000001ffffffffff\nCapEff:\t000001ffffffffff\n\
        CapBnd:\t000001ffffffffff\nCapAmb:\t0000000000000000\nNoNewPrivs:\t0\n";
    /// A user's shell with only CAP_NET_RAW (e.g. `setcap cap_net_raw+ep`): bit 13 = 0x2000.
    const NET_RAW_ONLY: &str = "Name:\tnetdoctor\nCapInh:\t0000000000000000\n\
        CapPrm:\t0000000000002000\nCapEff:\t0000000000002000\n";

    #[test]
    fn parses_cap_eff_from_status_text() {
        let root = parse_cap_eff(ROOT_STATUS).unwrap();
        assert!(Capability::ALL.iter().all(|&c| root.contains(c)));
        let raw = parse_cap_eff(NET_RAW_ONLY).unwrap();
        assert_eq!(raw, CapSet(0x2000));
        assert!(raw.contains(Capability::NetRaw));
        assert!(!raw.contains(Capability::NetAdmin));
        assert!(!raw.contains(Capability::Bpf)); // bit 39: above 32, still read right
        assert!(
            parse_cap_eff("Name:\tx\n")
                .unwrap_err()
                .contains("no CapEff")
        );
        assert!(
            parse_cap_eff("CapEff:\tzz\n")
                .unwrap_err()
                .contains("\"zz\"")
        );
    }

    #[test]
    fn says_what_is_missing_and_what_still_works() {
        let root = Privileges::from_set(parse_cap_eff(ROOT_STATUS).unwrap());
        assert!(root.missing().is_empty());
        let user = Privileges::from_set(parse_cap_eff(NET_RAW_ONLY).unwrap());
        assert!(user.check(Feature::PacketCapture).is_ok());
        assert!(user.check(Feature::RawSynProbe).is_ok());
        let m = user.check(Feature::ForeignSocketOptions).unwrap_err();
        assert_eq!(m.capabilities, vec![Capability::SysPtrace]);
        let text = m.to_string();
        assert!(text.contains("needs CAP_SYS_PTRACE"), "{text}");
        assert!(
            text.contains("servers run by this user are still read"),
            "{text}"
        );
        // eBPF: two alternatives; the smaller missing one is named
        let ebpf = user.check(Feature::Ebpf).unwrap_err();
        assert_eq!(ebpf.capabilities, vec![Capability::SysAdmin]);
        let with_bpf = Privileges::from_set(CapSet(1 << 39));
        assert_eq!(
            with_bpf.check(Feature::Ebpf).unwrap_err().capabilities,
            vec![Capability::Perfmon]
        );
        assert!(
            Privileges::from_set(CapSet((1 << 39) | (1 << 38)))
                .check(Feature::Ebpf)
                .is_ok()
        );
        let nobody = Privileges::from_set(CapSet(0));
        let names: Vec<Feature> = nobody.missing().iter().map(|m| m.feature).collect();
        assert_eq!(names, Feature::ALL.to_vec());
        let capture = nobody.check(Feature::PacketCapture).unwrap_err();
        assert_eq!(
            capture.to_string(),
            "packet capture needs CAP_NET_RAW (run as root or grant it); without it the load, \
             probes and kernel counters still run; findings that need packets are skipped (or \
             capture with tcpdump elsewhere and run `netdoctor analyze`)"
        );
    }

    #[test]
    fn explains_permission_errors_only() {
        let user = Privileges::from_set(CapSet(0));
        let eperm = io::Error::from_raw_os_error(libc::EPERM);
        let m = user.explain(Feature::ForeignSocketOptions, &eperm).unwrap();
        assert_eq!(m.capability_names(), "CAP_SYS_PTRACE");
        let esrch = io::Error::from_raw_os_error(libc::ESRCH);
        assert!(
            user.explain(Feature::ForeignSocketOptions, &esrch)
                .is_none()
        );
        // held but refused anyway (LSM, user namespace): still names what is needed
        let root = Privileges::from_set(CapSet(u64::MAX));
        let m = root.explain(Feature::Namespaces, &eperm).unwrap();
        assert_eq!(m.capability_names(), "CAP_SYS_ADMIN and CAP_NET_ADMIN");
    }

    #[test]
    fn dropping_a_capability_affects_only_this_thread() {
        let before = effective().unwrap();
        if !before.contains(Capability::NetRaw) {
            eprintln!("skipped: this thread has no CAP_NET_RAW to drop");
            return;
        }
        let in_thread = std::thread::spawn(|| {
            let dropped = drop_effective_in_this_thread(Capability::NetRaw).unwrap();
            let again = drop_effective_in_this_thread(Capability::NetRaw).unwrap();
            let without = effective().unwrap();
            // still permitted: it comes back
            let raised = raise_effective(Capability::NetRaw).unwrap();
            (dropped, again, without, raised, effective().unwrap())
        })
        .join()
        .unwrap();
        assert_eq!((in_thread.0, in_thread.1), (true, false));
        assert!(!in_thread.2.contains(Capability::NetRaw));
        assert!(in_thread.3 && in_thread.4.contains(Capability::NetRaw));
        assert!(
            Privileges::from_set(in_thread.2)
                .check(Feature::RawSynProbe)
                .is_err()
        );
        // this thread keeps it
        assert!(effective().unwrap().contains(Capability::NetRaw));
        assert_eq!(Privileges::current().effective(), before);
    }
}
