//! The route and the names: DNS timed per nameserver ([`dns`]), TCP/UDP/ICMP traceroute with
//! per-hop statistics ([`trace`]), and the findings drawn from them ([`findings`]: pure
//! functions over the result structs, one file each), and how this namespace reaches an address
//! ([`route_table`]: whether a trace has hops to show), and whether its next hop answered ARP
//! ([`neighbour`]); an address with its zone as a target is written (`fe80::1%eth0`: [`scoped`]).
//!
//! Collectors return plain data (serde-serializable) so the binary can print it and the
//! detectors can be fed recorded results in tests.

pub mod dns;
pub mod findings;
pub mod names;
pub mod neighbour;
pub mod route_table;
pub mod scoped;
pub mod trace;
