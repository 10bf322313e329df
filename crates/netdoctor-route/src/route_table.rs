//! How this network namespace reaches an address: a local address, a directly connected
//! network, or through a gateway (then a trace has hops to show).
//!
//! Read from `/proc/thread-self/net/route` (the main IPv4 table of the calling *thread's*
//! namespace, so it is right inside `setns` threads too) or `/proc/thread-self/net/ipv6_route`
//! (IPv6: every table, hex addresses, prefix lengths and metrics) with the kernel's rule: the
//! longest prefix that matches, then the lowest metric. Hand-written rather than an rtnetlink
//! `RTM_GETROUTE` through a netlink crate: the table is a dozen hex columns and this is the one
//! question asked of it. Policy routing (`ip rule`) and tables other than main are not seen;
//! local addresses are found by connecting a UDP socket to the address (nothing is sent): only
//! a local address becomes its own source.

use serde::Serialize;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

const RTF_UP: u16 = 0x0001;
const RTF_GATEWAY: u16 = 0x0002;
const RTF_REJECT: u16 = 0x0200;

/// One row of `/proc/net/route`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteEntry {
    pub iface: String,
    pub destination: Ipv4Addr,
    pub gateway: Ipv4Addr,
    pub flags: u16,
    pub metric: u32,
    pub mask: Ipv4Addr,
}

/// How an address is reached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NextHop {
    /// The address is this host's own (loopback or an interface address).
    Local,
    /// On a directly connected network of `iface`.
    Direct { iface: String },
    /// Through `gateway` on `iface`.
    Gateway { gateway: IpAddr, iface: String },
    /// No route (or a reject route).
    NoRoute,
}

impl NextHop {
    /// Whether packets to the address cross at least one router.
    pub fn routed(&self) -> bool {
        matches!(self, NextHop::Gateway { .. })
    }
}

fn hex_addr(s: &str) -> Option<Ipv4Addr> {
    // The kernel prints the network-order address as a native-endian u32.
    u32::from_str_radix(s, 16)
        .ok()
        .map(|v| Ipv4Addr::from(v.to_ne_bytes()))
}

/// Parses the text of `/proc/net/route`; malformed rows are skipped.
pub fn parse_proc_net_route(text: &str) -> Vec<RouteEntry> {
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let c: Vec<&str> = line.split_whitespace().collect();
            if c.len() < 8 {
                return None;
            }
            Some(RouteEntry {
                iface: c[0].to_string(),
                destination: hex_addr(c[1])?,
                gateway: hex_addr(c[2])?,
                flags: u16::from_str_radix(c[3], 16).ok()?,
                metric: c[6].parse().ok()?,
                mask: hex_addr(c[7])?,
            })
        })
        .collect()
}

/// The kernel's choice among `routes` for `ip` (longest prefix, then lowest metric), without
/// the local-address check.
pub fn lookup_in(routes: &[RouteEntry], ip: Ipv4Addr) -> NextHop {
    let dst = u32::from(ip);
    let best = routes
        .iter()
        .filter(|r| r.flags & RTF_UP != 0)
        .filter(|r| dst & u32::from(r.mask) == u32::from(r.destination) & u32::from(r.mask))
        .max_by(|a, b| {
            u32::from(a.mask)
                .count_ones()
                .cmp(&u32::from(b.mask).count_ones())
                .then(b.metric.cmp(&a.metric))
        });
    match best {
        None => NextHop::NoRoute,
        Some(r) if r.flags & RTF_REJECT != 0 => NextHop::NoRoute,
        Some(r) if r.flags & RTF_GATEWAY != 0 => NextHop::Gateway {
            gateway: IpAddr::V4(r.gateway),
            iface: r.iface.clone(),
        },
        Some(r) => NextHop::Direct {
            iface: r.iface.clone(),
        },
    }
}

/// One row of `/proc/net/ipv6_route`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route6Entry {
    pub iface: String,
    pub destination: Ipv6Addr,
    pub prefix_len: u8,
    pub gateway: Ipv6Addr,
    pub metric: u32,
    pub flags: u32,
}

/// Parses the text of `/proc/net/ipv6_route` (no header line; 10 columns); malformed rows are
/// skipped.
pub fn parse_proc_net_ipv6_route(text: &str) -> Vec<Route6Entry> {
    let addr = |s: &str| u128::from_str_radix(s, 16).ok().map(Ipv6Addr::from);
    text.lines()
        .filter_map(|line| {
            let c: Vec<&str> = line.split_whitespace().collect();
            if c.len() < 10 {
                return None;
            }
            Some(Route6Entry {
                destination: addr(c[0])?,
                prefix_len: u8::from_str_radix(c[1], 16).ok().filter(|p| *p <= 128)?,
                gateway: addr(c[4])?,
                metric: u32::from_str_radix(c[5], 16).ok()?,
                flags: u32::from_str_radix(c[8], 16).ok()?,
                iface: c[9].to_string(),
            })
        })
        .collect()
}

/// The kernel's choice among IPv6 `routes` for `ip` (longest prefix, then lowest metric).
/// Multicast routes are ignored; a reject route (the `lo` catch-all) is no route.
pub fn lookup_in6(routes: &[Route6Entry], ip: Ipv6Addr) -> NextHop {
    let mask = |len: u8| match len {
        0 => 0,
        l => u128::MAX << (128 - u32::from(l)),
    };
    let dst = u128::from(ip);
    let best = routes
        .iter()
        .filter(|r| r.flags & u32::from(RTF_UP) != 0)
        .filter(|r| !r.destination.is_multicast())
        .filter(|r| dst & mask(r.prefix_len) == u128::from(r.destination) & mask(r.prefix_len))
        .max_by(|a, b| {
            a.prefix_len
                .cmp(&b.prefix_len)
                .then(b.metric.cmp(&a.metric))
        });
    match best {
        None => NextHop::NoRoute,
        Some(r) if r.flags & u32::from(RTF_REJECT) != 0 => NextHop::NoRoute,
        Some(r) if r.flags & u32::from(RTF_GATEWAY) != 0 => NextHop::Gateway {
            gateway: IpAddr::V6(r.gateway),
            iface: r.iface.clone(),
        },
        Some(r) => NextHop::Direct {
            iface: r.iface.clone(),
        },
    }
}

/// Whether `ip` is an address of this host in the calling thread's namespace: a UDP socket
/// connected to it (nothing is sent) gets it as its own source address only then. (Binding
/// to it would say yes for every address where `net.ipv4.ip_nonlocal_bind` is on.)
pub fn is_local(ip: IpAddr) -> bool {
    if ip.is_loopback() {
        return true;
    }
    let any: IpAddr = match ip {
        IpAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
        IpAddr::V6(_) => std::net::Ipv6Addr::UNSPECIFIED.into(),
    };
    std::net::UdpSocket::bind((any, 0))
        .and_then(|s| s.connect((ip, 9)).map(|()| s))
        .and_then(|s| s.local_addr())
        .is_ok_and(|a| a.ip() == ip)
}

/// How the calling thread's network namespace reaches `ip` (an IPv4-mapped address as its
/// IPv4 form). `Ok(None)` only for an IPv6 address where IPv6 is off (no table to read).
pub fn lookup(ip: IpAddr) -> std::io::Result<Option<NextHop>> {
    let ip = ip.to_canonical();
    if is_local(ip) {
        return Ok(Some(NextHop::Local));
    }
    match ip {
        IpAddr::V4(v4) => {
            let text = std::fs::read_to_string("/proc/thread-self/net/route")?;
            Ok(Some(lookup_in(&parse_proc_net_route(&text), v4)))
        }
        IpAddr::V6(v6) => match std::fs::read_to_string("/proc/thread-self/net/ipv6_route") {
            Ok(text) => Ok(Some(lookup_in6(&parse_proc_net_ipv6_route(&text), v6))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The route lab's client: default via 10.231.1.1, 10.231.1.0/24 on cli-r1, plus a more
    // specific gateway route and a reject route.
    const TABLE: &str = "\
Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
cli-r1\t00000000\t0101E70A\t0003\t0\t0\t0\t00000000\t0\t0\t0
cli-r1\t0001E70A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
eth9\t0009E70A\t0201E70A\t0003\t0\t0\t5\t00FFFFFF\t0\t0\t0
eth8\t0009E70A\t0301E70A\t0003\t0\t0\t1\t00FFFFFF\t0\t0\t0
*\t0008E70A\t00000000\t0201\t0\t0\t0\t00FFFFFF\t0\t0\t0
";

    #[test]
    fn longest_prefix_then_lowest_metric() {
        let t = parse_proc_net_route(TABLE);
        assert_eq!(t.len(), 5);
        assert_eq!(t[0].gateway, Ipv4Addr::new(10, 231, 1, 1));
        assert_eq!(
            lookup_in(&t, Ipv4Addr::new(10, 231, 1, 7)),
            NextHop::Direct {
                iface: "cli-r1".into()
            }
        );
        let far = lookup_in(&t, Ipv4Addr::new(10, 231, 3, 2));
        assert_eq!(
            far,
            NextHop::Gateway {
                gateway: "10.231.1.1".parse().unwrap(),
                iface: "cli-r1".into()
            }
        );
        assert!(far.routed());
        assert_eq!(
            lookup_in(&t, Ipv4Addr::new(10, 231, 9, 9)),
            NextHop::Gateway {
                gateway: "10.231.1.3".parse().unwrap(),
                iface: "eth8".into()
            }
        );
        assert_eq!(
            lookup_in(&t, Ipv4Addr::new(10, 231, 8, 1)),
            NextHop::NoRoute
        );
        assert_eq!(
            lookup_in(&t[1..2], Ipv4Addr::new(8, 8, 8, 8)),
            NextHop::NoRoute
        );
    }

    // A client namespace of the IPv6 route lab: fd00:1::/64 on cli-r1, default via fd00:1::1,
    // a more specific route via a link-local router, and the catch-all reject route on lo.
    const TABLE6: &str = "\
fd000001000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001   cli-r1
fe800000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001   cli-r1
00000000000000000000000000000000 00 00000000000000000000000000000000 00 fd000001000000000000000000000001 00000400 00000001 00000000 00000003   cli-r1
fd000009000000000000000000000000 40 00000000000000000000000000000000 00 fe800000000000000000000000000001 00000400 00000001 00000000 00000003   cli-r1
ff000000000000000000000000000000 08 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000002 00000000 00000001   cli-r1
00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo
";

    #[test]
    fn ipv6_longest_prefix_then_lowest_metric() {
        let t = parse_proc_net_ipv6_route(TABLE6);
        assert_eq!(t.len(), 6);
        let v6 = |s: &str| s.parse::<Ipv6Addr>().unwrap();
        assert_eq!(
            lookup_in6(&t, v6("fd00:1::7")),
            NextHop::Direct {
                iface: "cli-r1".into()
            }
        );
        assert_eq!(
            lookup_in6(&t, v6("fd00:3::2")),
            NextHop::Gateway {
                gateway: "fd00:1::1".parse().unwrap(),
                iface: "cli-r1".into()
            }
        );
        assert_eq!(
            lookup_in6(&t, v6("fd00:9::2")),
            NextHop::Gateway {
                gateway: "fe80::1".parse().unwrap(),
                iface: "cli-r1".into()
            }
        );
        // Without the default route only the reject catch-all matches.
        let no_default: Vec<_> = t.iter().filter(|r| r.metric != 0x400).cloned().collect();
        assert_eq!(lookup_in6(&no_default, v6("fd00:3::2")), NextHop::NoRoute);
        assert!(parse_proc_net_ipv6_route("garbage\n").is_empty());
    }

    #[test]
    fn ipv6_loopback_and_mapped_addresses() {
        assert_eq!(
            lookup("::1".parse().unwrap()).unwrap(),
            Some(NextHop::Local)
        );
        assert_eq!(
            lookup("::ffff:127.0.0.1".parse().unwrap()).unwrap(),
            Some(NextHop::Local)
        );
    }

    #[test]
    fn loopback_is_local_and_the_table_of_this_namespace_reads() {
        assert_eq!(
            lookup("127.0.0.1".parse().unwrap()).unwrap(),
            Some(NextHop::Local)
        );
        // Whatever this namespace holds, reading it works and a TEST-NET address is not local.
        assert!(lookup("192.0.2.1".parse().unwrap()).unwrap().is_some());
        assert!(!is_local("192.0.2.1".parse().unwrap()));
        assert!(is_local("127.0.0.53".parse().unwrap()));
    }

    #[test]
    fn an_address_of_this_namespace_is_local() {
        // The source address the kernel picks toward a TEST-NET address is one of ours (when
        // this namespace has a route at all).
        let s = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
        if s.connect("192.0.2.1:9").is_err() {
            eprintln!("skipped: no route out of this namespace");
            return;
        }
        let own = s.local_addr().unwrap().ip();
        assert!(is_local(own), "{own}");
        assert_eq!(lookup(own).unwrap(), Some(NextHop::Local));
    }
}
