//! The neighbour (ARP) table of the calling thread's network namespace: whether the next hop
//! toward an address answered ARP.
//!
//! Read from `/proc/thread-self/net/arp` (so `--netns` threads see their own table). The kernel
//! prints every entry that is not NOARP, with `ATF_COM` (0x2) in its flags once the entry holds
//! a link-layer address; an entry without it is INCOMPLETE (solicitations sent, no answer yet) or
//! FAILED (the kernel gave up, ~3 s): either way nobody answered. Hand-written rather than an
//! rtnetlink `RTM_GETNEIGH` dump: the file is six columns and this is the one question asked;
//! the cost is IPv6 (NDP has no such file), for which [`lookup`] says `None`.

use serde::Serialize;
use std::net::{IpAddr, Ipv4Addr};

const ATF_COM: u32 = 0x2;
const ATF_PERM: u32 = 0x4;

/// What the neighbour table says about one address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NeighbourState {
    /// A link-layer address is known (REACHABLE, STALE, DELAY, PROBE).
    Resolved,
    /// Configured by hand (PERMANENT).
    Permanent,
    /// Solicited, never answered (INCOMPLETE, or FAILED after the kernel's tries).
    Unanswered,
}

/// One row of `/proc/net/arp`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Neighbour {
    pub ip: Ipv4Addr,
    pub state: NeighbourState,
    /// `aa:bb:…`; all zeros while unanswered.
    pub lladdr: String,
    pub iface: String,
}

/// Parses the text of `/proc/net/arp`; malformed rows are skipped.
pub fn parse_proc_net_arp(text: &str) -> Vec<Neighbour> {
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let c: Vec<&str> = line.split_whitespace().collect();
            if c.len() < 6 {
                return None;
            }
            let flags = u32::from_str_radix(c[2].trim_start_matches("0x"), 16).ok()?;
            let state = if flags & ATF_PERM != 0 {
                NeighbourState::Permanent
            } else if flags & ATF_COM != 0 {
                NeighbourState::Resolved
            } else {
                NeighbourState::Unanswered
            };
            Some(Neighbour {
                ip: c[0].parse().ok()?,
                state,
                lladdr: c[3].to_string(),
                iface: c[5].to_string(),
            })
        })
        .collect()
}

/// The entry for `ip` in the calling thread's namespace: `Ok(None)` when there is none, or for
/// IPv6 (not read).
pub fn lookup(ip: IpAddr) -> std::io::Result<Option<Neighbour>> {
    let IpAddr::V4(v4) = ip else {
        return Ok(None);
    };
    let text = std::fs::read_to_string("/proc/thread-self/net/arp")?;
    Ok(parse_proc_net_arp(&text).into_iter().find(|n| n.ip == v4))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_give_the_state() {
        let text = "IP address       HW type     Flags       HW address            Mask     Device
10.214.0.1       0x1         0x2         5a:1e:9c:00:11:22     *        h-cli
10.214.0.99      0x1         0x0         00:00:00:00:00:00     *        h-cli
10.214.0.7       0x1         0x6         5a:1e:9c:00:11:33     *        h-cli
garbage
";
        let t = parse_proc_net_arp(text);
        assert_eq!(t.len(), 3);
        assert_eq!(t[0].state, NeighbourState::Resolved);
        assert_eq!(t[1].state, NeighbourState::Unanswered);
        assert_eq!(t[1].iface, "h-cli");
        assert_eq!(t[2].state, NeighbourState::Permanent);
    }

    #[test]
    fn this_namespace_reads() {
        // Whatever the table holds, it reads; a TEST-NET address has no entry.
        assert_eq!(lookup("192.0.2.77".parse().unwrap()).unwrap(), None);
        assert_eq!(lookup("::1".parse().unwrap()).unwrap(), None);
    }
}
