//! The reverse (PTR) lookups of the addresses a forward lookup found: directly at each
//! answering nameserver and through getnameinfo.

use super::query::{self, Transport};
use super::{DnsOptions, ReverseTiming, ServerTiming};
use crate::names::{self, SystemLookup};
use hickory_proto::rr::RecordType;
use std::net::{IpAddr, SocketAddr};

/// At most this many addresses get PTR lookups.
const MAX_REVERSE: usize = 4;

pub(super) fn lookups(
    opts: &DnsOptions,
    gai: Option<&SystemLookup>,
    servers: &[ServerTiming],
    notes: &mut Vec<String>,
) -> Vec<ReverseTiming> {
    let mut addrs: Vec<IpAddr> = Vec::new();
    let from_gai = gai.iter().flat_map(|g| g.results.iter().cloned());
    let from_servers = servers.iter().flat_map(|s| {
        s.answers()
            .iter()
            .filter_map(|a| a.split_once(' ').map(|(_, v)| v.to_string()))
    });
    for a in from_gai.chain(from_servers) {
        if let Ok(ip) = a.parse::<IpAddr>()
            && !addrs.contains(&ip)
            && addrs.len() < MAX_REVERSE
        {
            addrs.push(ip);
        }
    }
    if addrs.is_empty() {
        notes.push("no address found: no reverse (PTR) lookup to time".to_string());
        return Vec::new();
    }
    let answering: Vec<IpAddr> = servers
        .iter()
        .filter(|s| s.reachable())
        .map(|s| s.server)
        .collect();
    std::thread::scope(|s| {
        let handles: Vec<_> = addrs
            .iter()
            .map(|&address| {
                let answering = &answering;
                s.spawn(move || {
                    let ptr = hickory_proto::rr::Name::from(address).to_ascii();
                    let direct = std::thread::scope(|s2| {
                        let hs: Vec<_> = answering
                            .iter()
                            .map(|&srv| {
                                let ptr = ptr.as_str();
                                s2.spawn(move || {
                                    let to = SocketAddr::new(srv, 53);
                                    (
                                        srv,
                                        query::ask(
                                            to,
                                            Transport::Udp,
                                            ptr,
                                            RecordType::PTR,
                                            opts.timeout,
                                        ),
                                    )
                                })
                            })
                            .collect();
                        hs.into_iter()
                            .map(|h| h.join().expect("ptr thread"))
                            .collect()
                    });
                    let system = opts
                        .system
                        .then(|| names::getnameinfo(address, opts.system_cap));
                    ReverseTiming {
                        address,
                        direct,
                        system,
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("reverse thread"))
            .collect()
    })
}
