//! Duplicate frames: the same packet captured twice (a port mirror that copies both
//! directions of a switch, two capture points merged with `mergecap`, a bridge seen on two
//! interfaces). Left in, every copy would read as a retransmission (a retransmission share of
//! 100 % or 200 %), every SYN as a SYN retransmission, every ACK as a duplicate ACK.
//!
//! A copy has the same IPv4 id, sequence, ACK, flags, window, payload length, TCP timestamp
//! and TCP checksum (which covers the payload) as a segment of the same direction seen
//! shortly before. A real retransmission differs: Linux numbers a connection's IPv4 packets
//! consecutively (and refreshes TSval, every ms), so the same non-zero id within
//! [`DUP_WINDOW_NS`] is the same packet. Without a non-zero IPv4 id (IPv6, or stacks that send 0),
//! a duplicate ACK or a quick retransmission can repeat every byte, so such segments count as
//! copies only within [`DUP_WINDOW_WEAK_NS`] (copies from a mirror or `mergecap` come within
//! microseconds). Hand-written: a ring of four signatures per direction, compared in
//! place, costs less than hashing every packet.

use crate::decode::TcpSegment;

/// A copy with a non-zero IPv4 id comes within this of the original. Copies from several
/// capture points can trail by tens of ms (`arkime-wireshark-retrans`: 1, 5.6 and 40–50 ms);
/// a real resend gets a new IPv4 id (Linux numbers a socket's packets, Windows its path's,
/// BSDs and Apple draw at random) and, with timestamps, a new TSval, and no RTO comes this soon.
pub const DUP_WINDOW_NS: i64 = 100_000_000;
/// … or within this, without a non-zero IPv4 id.
pub const DUP_WINDOW_WEAK_NS: i64 = 200_000;
const RING: usize = 4;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Sig {
    seq: u32,
    ack: u32,
    tsval: u32,
    len: u32,
    ip_id: u16,
    checksum: u16,
    window: u16,
    flags: u8,
    has_ts: bool,
}

/// The last few segments of one direction.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct DupFilter {
    sigs: [(i64, Sig); RING],
    n: u8,
    next: u8,
}

impl DupFilter {
    /// Whether `seg` copies a segment seen within the window; if not, it is remembered.
    #[inline(always)]
    pub(crate) fn is_copy(&mut self, seg: &TcpSegment<'_>) -> bool {
        let sig = Sig {
            seq: seg.seq,
            ack: seg.ack,
            tsval: seg.tsval.unwrap_or(0),
            len: seg.payload_len,
            ip_id: seg.ip_id.unwrap_or(0),
            checksum: seg.checksum,
            window: seg.window,
            flags: seg.flags.0,
            has_ts: seg.tsval.is_some(),
        };
        // Only a non-zero IPv4 id tells packets apart for sure: TSval ticks every ms, so a
        // retransmission within the same ms can repeat every byte on IPv6.
        let weak = sig.ip_id == 0;
        let window = if weak {
            DUP_WINDOW_WEAK_NS
        } else {
            DUP_WINDOW_NS
        };
        for &(ts, s) in &self.sigs[..usize::from(self.n)] {
            let dt = seg.ts_ns.saturating_sub(ts);
            if s == sig && (0..=window).contains(&dt) {
                return true;
            }
        }
        self.sigs[usize::from(self.next)] = (seg.ts_ns, sig);
        self.next = (self.next + 1) % RING as u8;
        self.n = (self.n + 1).min(RING as u8);
        false
    }
}
