//! The flow table's key: both endpoints of a connection in a fixed order, so the two
//! directions of a connection find the same entry with one hash lookup.

use std::net::{IpAddr, SocketAddr};

/// One endpoint, IPv4 stored as v4-mapped IPv6, the address as a big-endian integer: a
/// compact key part that compares (same order as the address bytes) and hashes in a few
/// instructions.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) struct Endpoint {
    pub ip: u128,
    pub port: u16,
}

impl From<SocketAddr> for Endpoint {
    #[inline]
    fn from(a: SocketAddr) -> Self {
        let ip = match a.ip() {
            IpAddr::V4(v4) => 0xffff_0000_0000 | u128::from(v4.to_bits()),
            IpAddr::V6(v6) => v6.to_bits(),
        };
        Endpoint { ip, port: a.port() }
    }
}

/// Both endpoints, lower first, so both directions map to the same entry.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct ConnKey {
    pub lo: Endpoint,
    pub hi: Endpoint,
}

impl std::hash::Hash for ConnKey {
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u128(self.lo.ip);
        state.write_u128(self.hi.ip);
        state.write_u32(u32::from(self.lo.port) << 16 | u32::from(self.hi.port));
    }
}

/// The key and the index (0: lo, 1: hi) of the sender.
#[inline]
pub(super) fn conn_key(src: SocketAddr, dst: SocketAddr) -> (ConnKey, usize) {
    let (s, d) = (Endpoint::from(src), Endpoint::from(dst));
    if s <= d {
        (ConnKey { lo: s, hi: d }, 0)
    } else {
        (ConnKey { lo: d, hi: s }, 1)
    }
}

/// `a` is after `b` in sequence space (RFC 1982 arithmetic).
pub(super) fn seq_gt(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}
