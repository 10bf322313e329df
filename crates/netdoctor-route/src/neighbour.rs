//! The neighbour table of the calling thread's network namespace: whether the next hop toward
//! an address answered ARP (IPv4) or neighbour discovery (IPv6, NDP).
//!
//! IPv4 is read from `/proc/thread-self/net/arp` (so `--netns` threads see their own table).
//! The kernel prints every entry that is not NOARP, with `ATF_COM` (0x2) in its flags once the
//! entry holds a link-layer address; an entry without it is INCOMPLETE (solicitations sent, no
//! answer yet) or FAILED (the kernel gave up, ~3 s): either way nobody answered. The file is
//! six columns and this is the one question asked of it, so it is parsed by hand.
//!
//! IPv6 has no such file: its entries are dumped with rtnetlink (`RTM_GETNEIGH`, family
//! `AF_INET6`, what `ip -6 neigh` does) through the `netlink-packet-route` crate, whose
//! `netlink-packet-core`/`netlink-sys` the workspace already uses for sock_diag. A netlink
//! socket belongs to the namespace of the thread that opens it, as `/proc/thread-self` does.
//! The entry's NUD state says the same as ARP's flags: INCOMPLETE or FAILED is unanswered,
//! REACHABLE/STALE/DELAY/PROBE resolved, PERMANENT set by hand; NOARP and NONE entries (no
//! resolution asked) are left out as `/proc/net/arp` leaves out NOARP. A link-local address
//! (`fe80::/10`, a router's usual address) can be on every link at once, so an entry is looked
//! up on the interface the route names.

use netlink_packet_core::{
    NLM_F_DUMP, NLM_F_REQUEST, NetlinkHeader, NetlinkMessage, NetlinkPayload,
};
use netlink_packet_route::neighbour::{
    NeighbourAddress, NeighbourAttribute, NeighbourMessage, NeighbourState as Nud,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::{Socket, SocketAddr as NlAddr, protocols::NETLINK_ROUTE};
use serde::Serialize;
use std::io;
use std::net::{IpAddr, Ipv6Addr};

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

/// One entry of the neighbour table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Neighbour {
    pub ip: IpAddr,
    pub state: NeighbourState,
    /// `aa:bb:…`; all zeros while unanswered.
    pub lladdr: String,
    pub iface: String,
}

impl Neighbour {
    /// The protocol that resolves this address: `ARP` or `neighbour discovery`.
    pub fn protocol(&self) -> &'static str {
        protocol(self.ip)
    }
}

/// The protocol that resolves `ip` on a link: `ARP` (IPv4) or `neighbour discovery` (IPv6).
pub fn protocol(ip: IpAddr) -> &'static str {
    match ip.to_canonical() {
        IpAddr::V4(_) => "ARP",
        IpAddr::V6(_) => "neighbour discovery",
    }
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
                ip: IpAddr::V4(c[0].parse().ok()?),
                state,
                lladdr: c[3].to_string(),
                iface: c[5].to_string(),
            })
        })
        .collect()
}

/// One IPv6 entry of an `RTM_NEWNEIGH` message, its interface named by `iface_name`; `None`
/// for another family, an entry without a destination, or one the kernel does not resolve
/// (NOARP, NONE).
pub fn from_message(m: &NeighbourMessage, iface_name: impl Fn(u32) -> String) -> Option<Neighbour> {
    let state = match m.header.state {
        Nud::Incomplete | Nud::Failed => NeighbourState::Unanswered,
        Nud::Reachable | Nud::Stale | Nud::Delay | Nud::Probe => NeighbourState::Resolved,
        Nud::Permanent => NeighbourState::Permanent,
        _ => return None,
    };
    let ip = m.attributes.iter().find_map(|a| match a {
        NeighbourAttribute::Destination(NeighbourAddress::Inet6(ip)) => Some(IpAddr::V6(*ip)),
        _ => None,
    })?;
    let lladdr = m
        .attributes
        .iter()
        .find_map(|a| match a {
            NeighbourAttribute::LinkLayerAddress(b) => Some(
                b.iter()
                    .map(|x| format!("{x:02x}"))
                    .collect::<Vec<_>>()
                    .join(":"),
            ),
            _ => None,
        })
        .unwrap_or_else(|| "00:00:00:00:00:00".to_string());
    Some(Neighbour {
        ip,
        state,
        lladdr,
        iface: iface_name(m.header.ifindex),
    })
}

/// The IPv6 neighbour entries of the calling thread's namespace (`ip -6 neigh`), each with its
/// interface index.
pub fn dump_ipv6() -> io::Result<Vec<(u32, Neighbour)>> {
    let mut socket = Socket::new(NETLINK_ROUTE)?;
    socket.bind_auto()?;
    socket.connect(&NlAddr::new(0, 0))?;
    let mut header = NetlinkHeader::default();
    header.flags = NLM_F_REQUEST | NLM_F_DUMP;
    let mut msg = NeighbourMessage::default();
    msg.header.family = AddressFamily::Inet6;
    let mut req = NetlinkMessage::new(
        header,
        NetlinkPayload::from(RouteNetlinkMessage::GetNeighbour(msg)),
    );
    req.finalize();
    let mut buf = vec![0; req.buffer_len()];
    req.serialize(&mut buf[..]);
    socket.send(&buf, 0)?;
    let name = |i: u32| netdoctor_sys::iface::name_of(i).unwrap_or_else(|| format!("if{i}"));
    let mut out = Vec::new();
    let mut buf = Vec::with_capacity(64 * 1024);
    loop {
        buf.clear();
        buf.reserve(64 * 1024);
        let n = socket.recv(&mut buf, 0)?;
        let mut offset = 0;
        while offset < n {
            let msg = <NetlinkMessage<RouteNetlinkMessage>>::deserialize(&buf[offset..n])
                .map_err(|e| io::Error::other(format!("decode RTM_NEWNEIGH: {e}")))?;
            let len = msg.header.length as usize;
            match msg.payload {
                NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewNeighbour(m)) => {
                    if let Some(n) = from_message(&m, name) {
                        out.push((m.header.ifindex, n));
                    }
                }
                NetlinkPayload::Done(_) => return Ok(out),
                NetlinkPayload::Error(e) if e.code.is_some() => return Err(e.to_io()),
                _ => {}
            }
            if len == 0 {
                break;
            }
            offset += len;
        }
    }
}

/// The entry for `ip` in the calling thread's namespace, on interface `iface` when given (the
/// route's); `Ok(None)` when there is none. IPv4 from `/proc`, IPv6 by rtnetlink.
pub fn lookup(ip: IpAddr, iface: Option<&str>) -> io::Result<Option<Neighbour>> {
    match ip.to_canonical() {
        IpAddr::V4(_) => {
            let text = std::fs::read_to_string("/proc/thread-self/net/arp")?;
            Ok(parse_proc_net_arp(&text)
                .into_iter()
                .find(|n| n.ip == ip.to_canonical() && iface.is_none_or(|i| i == n.iface)))
        }
        IpAddr::V6(v6) => lookup6(v6, iface),
    }
}

fn lookup6(ip: Ipv6Addr, iface: Option<&str>) -> io::Result<Option<Neighbour>> {
    let index = match iface {
        Some(name) => match netdoctor_sys::iface::index_of(name) {
            Some(i) => Some(i),
            // The route's interface is gone: no entry can be on it.
            None => return Ok(None),
        },
        None => None,
    };
    Ok(dump_ipv6()?
        .into_iter()
        .find(|(i, n)| n.ip == IpAddr::V6(ip) && index.is_none_or(|x| x == *i))
        .map(|(_, n)| n))
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
        assert_eq!(t[0].protocol(), "ARP");
    }

    fn message(state: Nud, dest: Option<&str>, lladdr: Option<Vec<u8>>) -> NeighbourMessage {
        let mut m = NeighbourMessage::default();
        m.header.family = AddressFamily::Inet6;
        m.header.ifindex = 7;
        m.header.state = state;
        if let Some(d) = dest {
            m.attributes
                .push(NeighbourAttribute::Destination(NeighbourAddress::Inet6(
                    d.parse().unwrap(),
                )));
        }
        if let Some(l) = lladdr {
            m.attributes.push(NeighbourAttribute::LinkLayerAddress(l));
        }
        m
    }

    /// Each NUD state maps to what it says about an answer; entries the kernel never resolves
    /// are left out. The message goes through the crate's own encoder and decoder, as a dump's
    /// does.
    #[test]
    fn nud_states_give_the_state() {
        use netlink_packet_core::{Emitable, Parseable};
        let mac = vec![0x5a, 0x1e, 0x9c, 0, 0x11, 0x22];
        let name = |i: u32| format!("if{i}");
        for (state, want) in [
            (Nud::Incomplete, Some(NeighbourState::Unanswered)),
            (Nud::Failed, Some(NeighbourState::Unanswered)),
            (Nud::Reachable, Some(NeighbourState::Resolved)),
            (Nud::Stale, Some(NeighbourState::Resolved)),
            (Nud::Delay, Some(NeighbourState::Resolved)),
            (Nud::Probe, Some(NeighbourState::Resolved)),
            (Nud::Permanent, Some(NeighbourState::Permanent)),
            (Nud::Noarp, None),
            (Nud::None, None),
        ] {
            let m = message(state, Some("fd00:214::99"), Some(mac.clone()));
            let mut wire = vec![0; m.buffer_len()];
            m.emit(&mut wire);
            let back = NeighbourMessage::parse(&wire[..]).unwrap();
            let n = from_message(&back, name);
            assert_eq!(n.as_ref().map(|n| n.state), want, "{state:?}");
            if let Some(n) = n {
                assert_eq!(n.ip.to_string(), "fd00:214::99");
                assert_eq!(n.lladdr, "5a:1e:9c:00:11:22");
                assert_eq!(n.iface, "if7");
                assert_eq!(n.protocol(), "neighbour discovery");
            }
        }
        // INCOMPLETE has no link-layer address yet; no destination is no entry.
        let n = from_message(&message(Nud::Incomplete, Some("fe80::1"), None), name).unwrap();
        assert_eq!(n.lladdr, "00:00:00:00:00:00");
        assert_eq!(
            from_message(&message(Nud::Reachable, None, None), name),
            None
        );
    }

    #[test]
    fn this_namespace_reads() {
        // Whatever the table holds, it reads; documentation addresses have no entry.
        assert_eq!(lookup("192.0.2.77".parse().unwrap(), None).unwrap(), None);
        assert_eq!(lookup("2001:db8::77".parse().unwrap(), None).unwrap(), None);
        assert_eq!(
            lookup("2001:db8::77".parse().unwrap(), Some("lo")).unwrap(),
            None
        );
        assert!(dump_ipv6().is_ok());
    }
}
