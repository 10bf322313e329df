//! A hash bucket's connections handed from one worker to another ([`Moved`]): everything an
//! [`Analyzer`] keeps per connection key, taken out of one worker after the last round it
//! was given the bucket's frames ([`Analyzer::export`]) and put into the next owner before
//! its first round of them ([`Analyzer::import`]). Per-connection state is whole (the
//! conclusions go to the log with their frame, the endpoint counts of [`super::shared`] are
//! global), so the connection goes on on the other worker as it would have on the first, and
//! the analysis stays the single analyzer's.
//!
//! What is kept per key: the connection (a half-open one with its place in the opening
//! order), an evicted half-open connection's tomb, and the keys remembered for leftovers of
//! untracked and reset connections.

use super::super::Analyzer;
use super::super::conn::Conn;
use super::super::flow::ConnKey;
use super::super::halfopen::Tomb;
use super::route::{Owners, end_bits, route_hash};

/// The bucket of a connection key (as the reader routes its frames).
pub(super) fn bucket_of(k: &ConnKey) -> u16 {
    Owners::bucket(route_hash(end_bits(k.lo), end_bits(k.hi)))
}

/// The buckets moving, as a bit set over all 2^16.
pub(super) struct Buckets(Box<[u64]>);

impl Buckets {
    pub(super) fn of(list: &[u16]) -> Buckets {
        let mut bits = vec![0u64; 1 << 10].into_boxed_slice();
        for &b in list {
            bits[usize::from(b >> 6)] |= 1 << (b & 63);
        }
        Buckets(bits)
    }

    fn has(&self, k: &ConnKey) -> bool {
        let b = bucket_of(k);
        self.0[usize::from(b >> 6)] & 1 << (b & 63) != 0
    }
}

/// The state of the connections of some buckets, on its way between two workers.
#[derive(Default)]
pub(super) struct Moved {
    conns: Vec<(ConnKey, Conn)>,
    tombs: Vec<(ConnKey, Tomb)>,
    untracked: Vec<(ConnKey, u8)>,
    reset_keys: Vec<(ConnKey, u8)>,
}

impl Analyzer {
    /// Takes out everything kept for the keys of `buckets`.
    pub(super) fn export(&mut self, buckets: &Buckets) -> Moved {
        let mut m = Moved::default();
        let keys: Vec<ConnKey> = self
            .conns
            .keys()
            .filter(|k| buckets.has(k))
            .copied()
            .collect();
        for k in keys {
            if let Some(c) = self.conns.remove(&k) {
                // Its entry of the opening order stays behind, skipped as the connection
                // is no longer in this table.
                if c.half_open {
                    self.half.live -= 1;
                }
                m.conns.push((k, c));
            }
        }
        if !self.half.tombs.is_empty() {
            let keys: Vec<ConnKey> = self
                .half
                .tombs
                .keys()
                .filter(|k| buckets.has(k))
                .copied()
                .collect();
            for k in keys {
                if let Some(t) = self.half.tombs.remove(&k) {
                    m.tombs.push((k, t));
                }
            }
        }
        let take = |map: &mut std::collections::HashMap<ConnKey, u8, _>| {
            let keys: Vec<ConnKey> = map.keys().filter(|k| buckets.has(k)).copied().collect();
            keys.into_iter()
                .filter_map(|k| map.remove(&k).map(|v| (k, v)))
                .collect::<Vec<_>>()
        };
        m.untracked = take(&mut self.untracked);
        m.reset_keys = take(&mut self.reset_keys);
        m
    }

    /// Puts in what another worker exported.
    pub(super) fn import(&mut self, m: Moved) {
        for (k, c) in m.conns {
            if c.half_open {
                // Its place among this worker's half-open connections: by first frame.
                self.half.live += 1;
                let order = &mut self.half.order;
                let at = order.partition_point(|(_, f)| *f < c.first_frame);
                order.insert(at, (k, c.first_frame));
            }
            self.conns.insert(k, c);
        }
        self.half.tombs.extend(m.tombs);
        self.untracked.extend(m.untracked);
        self.reset_keys.extend(m.reset_keys);
    }
}
