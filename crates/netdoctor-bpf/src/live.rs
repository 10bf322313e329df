//! The loaded programs (built only when build.rs produced the object).

use std::os::unix::fs::MetadataExt;

use aya::maps::HashMap;
use aya::programs::BtfTracePoint;
use aya::{Btf, Ebpf, EbpfLoader};

use crate::{
    BPF_CAPS, BpfError, BpfSummary, DropGroup, ProgramFailure, RetransConn, Scope, StateChange,
    btfenum, conn_addrs, ksyms::Ksyms, tcp_state_name,
};

static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/netdoctor.bpf.o"));

/// `(program name in the object, tp_btf tracepoint, name to report)`.
const PROGRAMS: [(&str, &str, &str); 3] = [
    ("kfree_skb", "kfree_skb", "skb:kfree_skb"),
    (
        "tcp_retransmit_skb",
        "tcp_retransmit_skb",
        "tcp:tcp_retransmit_skb",
    ),
    (
        "inet_sock_set_state",
        "inet_sock_set_state",
        "sock:inet_sock_set_state",
    ),
];

#[repr(C)]
#[derive(Clone, Copy)]
struct DropKey {
    location: u64,
    reason: u32,
    pad: u32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct ConnKey {
    saddr: [u8; 16],
    daddr: [u8; 16],
    sport: u16,
    dport: u16,
    family: u16,
    pad: u16,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct StateKey {
    oldstate: u32,
    newstate: u32,
}

// SAFETY: plain `#[repr(C)]` structs of integers and byte arrays, laid out exactly as the C keys
// in bpf/netdoctor.bpf.c (explicit padding fields), so every bit pattern is a valid value.
unsafe impl aya::Pod for DropKey {}
// SAFETY: as above.
unsafe impl aya::Pod for ConnKey {}
// SAFETY: as above.
unsafe impl aya::Pod for StateKey {}

/// Loaded and attached programs; dropping it detaches and unloads them.
pub struct BpfObserver {
    ebpf: Ebpf,
    failed: Vec<ProgramFailure>,
    /// Drop-reason names of the running kernel, read once at start.
    reasons: std::collections::BTreeMap<u64, String>,
}

fn perm(e: &dyn std::error::Error) -> Option<&'static str> {
    let mut cur: Option<&dyn std::error::Error> = Some(e);
    while let Some(err) = cur {
        let s = err.to_string();
        if s.contains("Operation not permitted") || s.contains("Permission denied") {
            return Some(BPF_CAPS);
        }
        cur = err.source();
    }
    None
}

fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(err) = cur {
        let s = err.to_string();
        if !out.contains(&s) {
            out.push_str(": ");
            out.push_str(&s);
        }
        cur = err.source();
    }
    out
}

impl BpfObserver {
    /// Loads the object and attaches every program it can.
    pub fn start(scope: Scope) -> Result<BpfObserver, BpfError> {
        let netns: u32 = match scope {
            Scope::AllNamespaces => 0,
            Scope::Netns(inode) => inode as u32,
            Scope::CallingThreadNetns => std::fs::metadata("/proc/thread-self/ns/net")
                .map(|m| m.ino() as u32)
                .map_err(|e| BpfError::Load {
                    message: format!("stat /proc/thread-self/ns/net: {e}"),
                    needs: None,
                })?,
        };
        // The loader parses the kernel's BTF itself (for CO-RE relocations) and frees it when
        // it is dropped; the programs' load needs it once more. Parsing it one copy at a time
        // keeps the peak memory at one parsed BTF (several MB of types).
        let mut ebpf = {
            let mut loader = EbpfLoader::new();
            loader.override_global("TARGET_NETNS", &netns, true);
            loader.load(OBJECT).map_err(|e| BpfError::Load {
                needs: perm(&e),
                message: chain(&e),
            })?
        };
        let btf = Btf::from_sys_fs().map_err(|e| BpfError::Load {
            message: format!("kernel BTF (/sys/kernel/btf/vmlinux): {}", chain(&e)),
            needs: None,
        })?;
        let mut failed = Vec::new();
        for (name, tracepoint, report) in PROGRAMS {
            let mut attach = || -> Result<(), String> {
                let prog: &mut BtfTracePoint = ebpf
                    .program_mut(name)
                    .ok_or("program missing from the object")?
                    .try_into()
                    .map_err(|e: aya::programs::ProgramError| chain(&e))?;
                prog.load(tracepoint, &btf).map_err(|e| {
                    let needs = perm(&e)
                        .map(|c| format!(" (needs {c})"))
                        .unwrap_or_default();
                    format!("load: {}{needs}", chain(&e))
                })?;
                prog.attach()
                    .map_err(|e| format!("attach: {}", chain(&e)))?;
                Ok(())
            };
            if let Err(reason) = attach() {
                failed.push(ProgramFailure {
                    program: report.to_string(),
                    reason,
                });
            }
        }
        if failed.len() == PROGRAMS.len() {
            return Err(BpfError::NoProgram(failed));
        }
        drop(btf);
        let reasons = btfenum::drop_reasons().unwrap_or_default();
        // Both parsed copies of the kernel's BTF and the raw bytes are freed by now: give that
        // heap back, or the run keeps ~18 MB it never uses again (measured, bench/host-cost.sh).
        netdoctor_sys::memory::release_free_heap();
        Ok(BpfObserver {
            ebpf,
            failed,
            reasons,
        })
    }

    /// Programs that did not run, with the reason.
    pub fn failed(&self) -> &[ProgramFailure] {
        &self.failed
    }

    /// Reads the counts, then detaches and unloads everything.
    pub fn finish(self) -> BpfSummary {
        self.snapshot()
    }

    /// Reads the counts so far (since start) and keeps counting.
    pub fn snapshot(&self) -> BpfSummary {
        self.snapshot_with(true)
    }

    /// Like [`BpfObserver::snapshot`]; without `locations`, drop locations stay hex addresses
    /// (no /proc/kallsyms read: cheap enough for once a second).
    pub fn snapshot_with(&self, locations: bool) -> BpfSummary {
        let mut summary = BpfSummary {
            failed: self.failed.clone(),
            ..Default::default()
        };
        let reasons = &self.reasons;
        if let Some(map) = self.ebpf.map("DROPS")
            && let Ok(map) = HashMap::<_, DropKey, u64>::try_from(map)
        {
            let entries: Vec<(DropKey, u64)> = map.iter().filter_map(Result::ok).collect();
            let ksyms = if entries.is_empty() || !locations {
                Ksyms::parse("")
            } else {
                let addrs: Vec<u64> = entries.iter().map(|(k, _)| k.location).collect();
                Ksyms::load_for(&addrs)
            };
            for (k, count) in entries {
                summary.drops.push(DropGroup {
                    reason: reasons
                        .get(&u64::from(k.reason))
                        .cloned()
                        .unwrap_or_else(|| format!("reason {}", k.reason)),
                    reason_code: k.reason,
                    location: ksyms.name(k.location),
                    count,
                });
            }
        }
        if let Some(map) = self.ebpf.map("RETRANS")
            && let Ok(map) = HashMap::<_, ConnKey, u64>::try_from(map)
        {
            for (k, count) in map.iter().filter_map(Result::ok) {
                let (local, remote) = conn_addrs(k.family, k.saddr, k.daddr, k.sport, k.dport);
                summary.retransmits.push(RetransConn {
                    local,
                    remote,
                    count,
                });
            }
        }
        if let Some(map) = self.ebpf.map("STATES")
            && let Ok(map) = HashMap::<_, StateKey, u64>::try_from(map)
        {
            for (k, count) in map.iter().filter_map(Result::ok) {
                summary.state_changes.push(StateChange {
                    from: tcp_state_name(k.oldstate),
                    to: tcp_state_name(k.newstate),
                    count,
                });
            }
        }
        summary
            .drops
            .sort_by(|a, b| b.count.cmp(&a.count).then(a.reason.cmp(&b.reason)));
        summary
            .retransmits
            .sort_by_key(|r| std::cmp::Reverse(r.count));
        summary
            .state_changes
            .sort_by(|a, b| b.count.cmp(&a.count).then(a.from.cmp(&b.from)));
        summary
    }
}
