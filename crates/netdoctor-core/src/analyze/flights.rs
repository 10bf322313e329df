//! A response's first flights: slow start as the wire shows it (`small_initial_window`).
//!
//! A sender in slow start sends its congestion window, then waits for the ACKs: its response
//! goes out in flights one round trip apart, each up to twice (bbr's startup: about three
//! times) the one before. Linux starts at 10 segments (RFC 6928); a route's `initcwnd 1`
//! starts at one, and a 300 KB answer over 37 ms then takes two more round trips
//! (testdata/captures: initcwnd1-far 294 ms, initcwnd10-far 213 ms).
//!
//! Per exchange, [`Flights`] follows the response's new data: a gap of at least half the
//! handshake RTT between two new segments starts a flight (as `initcwnd/flights.py` does).
//! The *ramp* is the response's opening flights while they look like slow start from a small
//! window: the first under [`DEFAULT_INITCWND`] segments, each next one released by a packet
//! of the client (its start within the capture point's leg to the server and a quarter RTT of
//! the client's latest packet: a writer that produced its data late is not ACK-clocked),
//! 0.75 to 1.5 RTT after the one before, larger than it and at most three times it plus two
//! (the response's last flight may be smaller: the data ran out), with the client's receive
//! window open over each (a window that held the flight is the client's limit, not the
//! sender's). The first flight that breaks a rule ends the ramp. A packet counts as the
//! segments it holds, of the response's largest packet up to the client's MSS (a capture
//! behind GRO sees one 4,344-byte packet for three segments). Only the segments the
//! capture saw as new data count; retransmissions are judged by the caller (a loss ends the
//! story: `packet_loss_retransmission` tells it).
//!
//! The cost is counted in round trips against the default: the ramp's `n` segments in `k`
//! flights, which an initial window of 10 sends by round `r10` ([`rounds_at_default`]), so the
//! response (or its data after the ramp) came `k − r10` round trips late. Hand-written: a few
//! comparisons per response segment, no allocation.

use crate::event::Pkt;

/// Linux's initial congestion window, segments (RFC 6928).
pub const DEFAULT_INITCWND: u32 = 10;

/// The flights of one response, as far as they form a slow-start ramp.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Flights {
    /// The flight in progress: its first segment's time, segments, bytes, and the time of
    /// its latest segment.
    cur_start: i64,
    cur_segs: u32,
    cur_bytes: u32,
    last_ns: i64,
    /// The flight before it: its start and segments.
    prev_start: i64,
    prev_segs: u32,
    /// Finished flights of the ramp and their segments.
    ramp: u32,
    ramp_segs: u32,
    /// The first flight's segments, and the first packets of the first two flights.
    first_segs: u32,
    first: Option<Pkt>,
    second: Option<Pkt>,
    /// The sender's segment size: the largest packet of the response up to the client's MSS,
    /// or the size of the segments a larger (coalesced) packet holds (a capture behind GRO
    /// holds several segments in one packet: counted by it).
    seg_size: u32,
    /// The ramp ended (a flight broke its rules); the flight that ended it came one RTT
    /// after the ramp's last, ACK-clocked (the sender had more data at once).
    done: bool,
    continued: bool,
    /// The current flight started right after a packet of the client; the client's window
    /// held it (or was not known).
    cur_clocked: bool,
    cur_limited: bool,
    /// The client's window held a flight of the ramp (or was not known).
    window_limited: bool,
    /// A flight of the ramp (not its last) grew less than 1.5× the one before: not the
    /// doubling of a restarted slow start (reno, cubic), maybe a writer's pace.
    slow_growth: bool,
    /// Segments of the flight in progress sent within one RTT of its start, and the most of
    /// any flight of the response so far (after the ramp too): what the sender's window
    /// let out at once, at least (a stream with no gap counts one RTT of it).
    /// (u16, saturating: 65,535 segments in one RTT is beyond any window told here, and the
    /// figure is a floor; kept small because the exchange state is copied per exchange.)
    cur_rtt_segs: u16,
    max_segs: u16,
}

/// The handshake RTT under which a response's flights are not followed. An initial window
/// under 10 costs at most about log2(10) ≈ 4 round trips against the default (the doubling
/// catches up), so under 200 µs it costs under `detect::small_initial_window::MIN_COST_MS`
/// (1 ms), which the detector leaves silent anyway; on a LAN or loopback capture the
/// per-segment work is skipped (it was 7 % of the instructions of `analyze` on the bench's
/// loopback capture, 1.8 M frames).
pub(super) const MIN_RTT_NS: i64 = 200_000;

/// What the packet path knows when a response segment arrives.
#[derive(Clone, Copy, Debug)]
pub(super) struct SegCtx {
    /// The handshake RTT and the capture point's round trip to the server, ns.
    pub rtt_ns: i64,
    pub leg_ns: i64,
    /// The client's latest packet, ns.
    pub client_ns: i64,
    /// The client's advertised window, bytes (`None`: its scale is not known).
    pub window: Option<u32>,
    /// The client's MSS (1460 when not announced).
    pub mss: u32,
}

/// A response whose opening flights were a slow-start ramp from a small window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlowStart {
    /// Flights of the ramp, their segments, the first flight's segments.
    pub flights: u16,
    pub segments: u32,
    pub first_segments: u32,
    /// Round trips the response lost against an initial window of 10 (≥ 1), and the time
    /// that is (× the handshake RTT), ns.
    pub extra_rounds: u16,
    pub cost_ns: i64,
    /// The first packets of the first and second flights.
    pub first: Pkt,
    pub second: Pkt,
    /// A restart after idle (`slow_start_after_idle`): the window the connection's earlier
    /// responses grew, segments (the cost is counted against it, not against 10; the
    /// sender's idle time is [`crate::event::ExchangeDone::sender_idle_ns`]). 0: a small
    /// initial window.
    pub grown_segments: u32,
}

/// Linux's smallest retransmission timeout (`TCP_RTO_MIN`, 200 ms). Its RTO is the smoothed
/// RTT plus a variance term never below this (`tcp_rtt_estimator` keeps `rttvar_us` ≥
/// `tcp_rto_min`), so a connection's RTO is at least its RTT + 200 ms.
pub const RTO_MIN_NS: i64 = 200_000_000;

/// What the connection's earlier responses tell about this one's opening flights.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Before {
    /// The most segments an earlier response sent in one flight (0: none before).
    pub grown_segs: u32,
    /// The sender's idle time before this response: its previous response's last segment to
    /// this one's first, ns (0: the connection's first).
    pub idle_ns: i64,
}

impl Before {
    /// The window this response's ramp is measured against, when the sender restarted slow
    /// start after idle: Linux's `tcp_slow_start_after_idle` (on by default) resets the
    /// window when the sender has sent nothing for an RTO, halving it once per RTO idle down
    /// to the initial window (`tcp_cwnd_restart`). Told by a silence of at least the RTO
    /// estimate (the handshake RTT + [`RTO_MIN_NS`]: the least Linux's RTO can be) and a
    /// first flight at most half the window an earlier response grew.
    fn restarted(&self, rtt_ns: i64, first_segs: u32) -> Option<u32> {
        (self.grown_segs > 0
            && self.idle_ns >= rtt_ns + RTO_MIN_NS
            && first_segs.saturating_mul(2) <= self.grown_segs)
            .then_some(self.grown_segs)
    }
}

/// The round (0-based) in which an initial window of 10 segments, doubling each round, sends
/// its `m`-th segment (`m` ≥ 1).
pub fn rounds_at_default(m: u32) -> u32 {
    let mut r = 0;
    // Segments sent by the end of round r: 10 × (2^(r+1) − 1).
    while u64::from(DEFAULT_INITCWND) * ((1u64 << (r + 1)) - 1) < u64::from(m) && r < 30 {
        r += 1;
    }
    r
}

impl Flights {
    /// A new data segment of the response.
    #[inline]
    pub(super) fn on_segment(&mut self, pkt: Pkt, cx: &SegCtx) {
        if cx.rtt_ns <= 0 {
            return;
        }
        if self.cur_segs > 0 && pkt.ts_ns - self.last_ns >= cx.rtt_ns / 2 {
            self.close(cx.rtt_ns, false);
        }
        if self.done {
            // After the ramp only the flights' sizes are followed (the window the response
            // grew: `Flights::max_flight`).
            self.count_after_ramp(pkt, cx);
            return;
        }
        if self.cur_segs == 0 {
            self.cur_start = pkt.ts_ns;
            self.cur_bytes = 0;
            self.cur_limited = false;
            // Released by the client's packet (an ACK of the flight before): not a writer's
            // own schedule. The first flight answers the request.
            self.cur_clocked = self.ramp == 0
                || (cx.client_ns > self.prev_start
                    && pkt.ts_ns - cx.client_ns <= cx.leg_ns + cx.rtt_ns / 4);
            if self.ramp == 0 {
                self.first = Some(pkt);
            } else if self.ramp == 1 {
                self.second = Some(pkt);
            }
        }
        self.add(pkt, cx);
        self.cur_bytes = self.cur_bytes.saturating_add(pkt.len);
        match cx.window {
            Some(w) if self.cur_bytes.saturating_add(cx.mss) <= w => {}
            _ => self.cur_limited = true,
        }
    }

    /// A segment after the ramp ended: counted in its flight's size only (out of line: the
    /// ramp's path stays as it was).
    #[inline(never)]
    fn count_after_ramp(&mut self, pkt: Pkt, cx: &SegCtx) {
        if self.cur_segs == 0 {
            self.cur_start = pkt.ts_ns;
        }
        self.add(pkt, cx);
    }

    /// Counts `pkt` in the flight in progress: its segments, and those within one RTT of
    /// the flight's start (what the window let out at once).
    #[inline]
    fn add(&mut self, pkt: Pkt, cx: &SegCtx) {
        let n = self.segments(pkt.len, cx.mss);
        self.cur_segs += n;
        if pkt.ts_ns - self.cur_start < cx.rtt_ns {
            self.cur_rtt_segs = self
                .cur_rtt_segs
                .saturating_add(u16::try_from(n).unwrap_or(u16::MAX));
        }
        self.last_ns = pkt.ts_ns;
    }

    /// The segments a packet of `len` bytes holds. A packet larger than the MSS was coalesced
    /// (GRO) from whole segments of the sender's size: 2,896 B is 2 × 1,448, and it tells
    /// that size before a smaller tail piece could be taken for it (idle-slow-writer: a 952 B
    /// tail read first counted each 2,896 B packet as 4).
    #[inline]
    fn segments(&mut self, len: u32, mss: u32) -> u32 {
        let full = mss.saturating_sub(12).max(1);
        let seen = if len <= mss {
            len
        } else {
            (len / ((len + full / 2) / full).max(1)).min(mss)
        };
        self.seg_size = self.seg_size.max(seen);
        let size = if self.seg_size >= mss / 2 {
            self.seg_size
        } else {
            full
        };
        len.div_ceil(size).max(1)
    }

    /// The capture missed data of the response: its flights cannot be told.
    pub(super) fn spoil(&mut self) {
        self.done = true;
        self.window_limited = true;
    }

    /// The most segments the response sent in one flight (within one RTT of its start): the
    /// sender's congestion window was at least that.
    pub(super) fn max_flight(&self) -> u32 {
        u32::from(self.max_segs.max(self.cur_rtt_segs))
    }

    /// The flight in progress ended (`last`: the response ended with it).
    fn close(&mut self, rtt_ns: i64, last: bool) {
        let segs = self.cur_segs;
        self.max_segs = self.max_segs.max(self.cur_rtt_segs);
        self.cur_rtt_segs = 0;
        if self.done {
            self.cur_segs = 0;
            return;
        }
        if self.ramp == 0 {
            // Any first flight opens a ramp: one under the initial window is
            // `small_initial_window`'s, one back at a restarted window after idle
            // `slow_start_after_idle`'s ([`Ramp::judge`]).
            self.window_limited |= self.cur_limited;
            self.ramp = 1;
            self.ramp_segs = segs;
            self.first_segs = segs;
        } else {
            let gap = self.cur_start - self.prev_start;
            let one_rtt = gap * 4 >= rtt_ns * 3 && gap * 2 <= rtt_ns * 3;
            let grows = segs <= 3 * self.prev_segs + 2 && (last || segs > self.prev_segs);
            if one_rtt && grows && self.cur_clocked {
                self.window_limited |= self.cur_limited;
                self.slow_growth |= !last && segs * 2 < self.prev_segs * 3;
                self.ramp += 1;
                self.ramp_segs += segs;
            } else {
                // Data came after the ramp, and the sender had it: the flight that ended
                // the ramp left one RTT after the last, released by the client (it broke
                // the ramp by its size only). Data a writer produced later is no round trip
                // the window cost.
                self.done = true;
                self.continued = one_rtt && self.cur_clocked;
            }
        }
        self.prev_start = self.cur_start;
        self.prev_segs = segs;
        self.cur_segs = 0;
    }

    /// The response ended: its ramp, if it was one from a small window that cost a round
    /// trip or more (`retransmitted`: a needed retransmission of the response; then loss,
    /// not the window, tells the story). `before`: the connection's earlier responses; a
    /// ramp after an idle restart is measured against the window they grew ([`Before`]),
    /// any other against an initial window of 10.
    pub(super) fn finish(
        mut self,
        rtt_ns: Option<i64>,
        retransmitted: bool,
        before: Before,
    ) -> Option<SlowStart> {
        let rtt = rtt_ns.filter(|r| *r > 0)?;
        if self.cur_segs > 0 && !self.done {
            self.close(rtt, true);
        }
        if retransmitted || self.window_limited {
            return None;
        }
        // One flight is no ramp; two need the data after them (a header, then a short body
        // one round trip later, may be the writer's).
        if self.ramp < 2 || (self.ramp == 2 && !self.continued) {
            return None;
        }
        let restart = before
            .restarted(rtt, self.first_segs)
            .filter(|_| !self.slow_growth);
        let extra = if let Some(w) = restart {
            // The grown window sends the m-th segment in round (m − 1) / w.
            if self.continued {
                self.ramp.saturating_sub(self.ramp_segs / w)
            } else {
                (self.ramp - 1).saturating_sub(self.ramp_segs.saturating_sub(1) / w)
            }
        } else if self.first_segs >= DEFAULT_INITCWND {
            return None;
        } else if self.continued {
            self.ramp
                .saturating_sub(rounds_at_default(self.ramp_segs + 1))
        } else {
            (self.ramp - 1).saturating_sub(rounds_at_default(self.ramp_segs))
        };
        if extra == 0 {
            return None;
        }
        Some(SlowStart {
            flights: u16::try_from(self.ramp).unwrap_or(u16::MAX),
            segments: self.ramp_segs,
            first_segments: self.first_segs,
            extra_rounds: u16::try_from(extra).unwrap_or(u16::MAX),
            cost_ns: i64::from(extra) * rtt,
            first: self.first?,
            second: self.second?,
            grown_segments: restart.unwrap_or(0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::TcpFlags;

    const MS: i64 = 1_000_000;

    fn seg(ms: f64, len: u32) -> Pkt {
        Pkt {
            frame: 0,
            ts_ns: (ms * 1e6) as i64,
            from_server: true,
            flags: TcpFlags(0x18),
            len,
        }
    }

    /// Flights of `segs` segments, `gap_ms` apart, each released by a client ACK right after
    /// the flight before (a client-side capture: leg = RTT).
    fn run(flights: &[u32], gap_ms: f64, rtt_ms: f64, window: u32) -> Option<SlowStart> {
        let mut f = Flights::default();
        for (i, &n) in flights.iter().enumerate() {
            let start = i as f64 * gap_ms;
            let cx = SegCtx {
                rtt_ns: (rtt_ms * 1e6) as i64,
                leg_ns: (rtt_ms * 1e6) as i64,
                client_ns: ((start - rtt_ms + 0.2) * 1e6) as i64,
                window: Some(window),
                mss: 1448,
            };
            for k in 0..n {
                f.on_segment(seg(start + f64::from(k) * 0.01, 1448), &cx);
            }
        }
        f.finish(Some((rtt_ms * 1e6) as i64), false, Before::default())
    }

    #[test]
    fn rounds_at_the_default_window() {
        assert_eq!(rounds_at_default(1), 0);
        assert_eq!(rounds_at_default(10), 0);
        assert_eq!(rounds_at_default(11), 1);
        assert_eq!(rounds_at_default(14), 1);
        assert_eq!(rounds_at_default(30), 1);
        assert_eq!(rounds_at_default(31), 2);
    }

    #[test]
    fn initcwnd_one_costs_two_round_trips() {
        // initcwnd1-far: 1, 4, 8 segments one RTT apart, then the paced rest.
        let s = run(&[1, 4, 8, 200], 37.0, 37.0, 64_512).unwrap();
        assert_eq!((s.flights, s.segments, s.first_segments), (3, 13, 1));
        assert_eq!(s.extra_rounds, 2);
        assert_eq!(s.cost_ns, 74 * MS);
    }

    #[test]
    fn what_is_not_a_small_initial_window() {
        // The default: a first flight of 10.
        assert_eq!(run(&[10, 200], 37.0, 37.0, 64_512), None);
        // A LAN-sized ramp is found (the detector drops it for its cost), a short answer is not.
        assert!(run(&[1, 4, 8, 200], 0.1, 0.1, 64_512).is_some());
        assert_eq!(run(&[1], 37.0, 37.0, 64_512), None);
        // A header, then the body one RTT later: the writer's, maybe.
        assert_eq!(run(&[1, 2], 37.0, 37.0, 64_512), None);
        // The client's window held the flights.
        assert_eq!(run(&[1, 4, 8, 200], 37.0, 37.0, 8_000), None);
        // Flights 3 RTT apart, or not growing: not ACK-clocked slow start.
        assert_eq!(run(&[1, 4, 8, 200], 111.0, 37.0, 64_512), None);
        assert_eq!(run(&[4, 4, 4, 4], 37.0, 37.0, 64_512), None);
        // 1, 4, 8, then the rest 3 RTT later (the writer's): the ramp ended with the data
        // the sender had, one round trip late (its 13 segments end in round 1 with 10).
        let mut f = Flights::default();
        for (start, n) in [(0.0, 1), (37.0, 4), (74.0, 8), (185.0, 100)] {
            let cx = SegCtx {
                rtt_ns: 37 * MS,
                leg_ns: 37 * MS,
                client_ns: ((start - 36.8) * 1e6) as i64,
                window: Some(1 << 20),
                mss: 1448,
            };
            for k in 0..n {
                f.on_segment(seg(start + f64::from(k) * 0.01, 1448), &cx);
            }
        }
        let s = f.finish(Some(37 * MS), false, Before::default()).unwrap();
        assert_eq!((s.flights, s.extra_rounds), (3, 1));
    }

    #[test]
    fn coalesced_packets_count_as_their_segments() {
        // idle-restart-reno at the client, behind GRO: 244 + 3 × 2,896 + 1,448 + 4,344 bytes
        // is the default's 10 segments, not 6 packets.
        let cx = |client_ms: f64| SegCtx {
            rtt_ns: 37 * MS,
            leg_ns: 37 * MS,
            client_ns: (client_ms * 1e6) as i64,
            window: Some(1 << 20),
            mss: 1460,
        };
        let mut f = Flights::default();
        for (k, len) in [244, 2896, 2896, 1448, 4344].into_iter().enumerate() {
            f.on_segment(seg(k as f64 * 0.01, len), &cx(-36.8));
        }
        for k in 0..10 {
            f.on_segment(seg(37.0 + f64::from(k) * 0.01, 2896), &cx(0.2));
        }
        for k in 0..20 {
            f.on_segment(seg(74.0 + f64::from(k) * 0.01, 2896), &cx(37.2));
        }
        assert_eq!(f.finish(Some(37 * MS), false, Before::default()), None);
        // initcwnd 1 behind GRO: 244, then 4 segments in two packets, then 8 in two.
        let mut f = Flights::default();
        f.on_segment(seg(0.0, 244), &cx(-36.8));
        for k in 0..2 {
            f.on_segment(seg(37.0 + f64::from(k) * 0.01, 2896), &cx(0.2));
        }
        for k in 0..2 {
            f.on_segment(seg(74.0 + f64::from(k) * 0.01, 5792), &cx(37.2));
        }
        for k in 0..50 {
            f.on_segment(seg(111.0 + f64::from(k) * 0.01, 5792), &cx(74.2));
        }
        let s = f.finish(Some(37 * MS), false, Before::default()).unwrap();
        assert_eq!((s.flights, s.segments, s.extra_rounds), (3, 13, 2));
    }

    /// `run`'s flights judged after `before`.
    fn after(flights: &[u32], before: Before) -> Option<SlowStart> {
        let mut f = Flights::default();
        for (i, &n) in flights.iter().enumerate() {
            let start = i as f64 * 37.0;
            let cx = SegCtx {
                rtt_ns: 37 * MS,
                leg_ns: 37 * MS,
                client_ns: ((start - 36.8) * 1e6) as i64,
                window: Some(1 << 22),
                mss: 1448,
            };
            for k in 0..n {
                f.on_segment(seg(start + f64::from(k) * 0.01, 1448), &cx);
            }
        }
        f.finish(Some(37 * MS), false, before)
    }

    #[test]
    fn a_restart_after_idle_is_counted_against_the_grown_window() {
        // idle-restart-reno's third answer: 14, 28, 56, 112, 3 segments one RTT apart after
        // 1 s idle, on a connection whose earlier answers sent up to 80 at once: the 213
        // segments take 3 round trips with 80, 5 here.
        let idle = Before {
            grown_segs: 80,
            idle_ns: 1000 * MS,
        };
        let s = after(&[14, 28, 56, 112, 3], idle).unwrap();
        assert_eq!((s.flights, s.segments, s.first_segments), (5, 213, 14));
        assert_eq!((s.extra_rounds, s.grown_segments), (2, 80));
        assert_eq!(s.cost_ns, 74 * MS);
        // A ramp that ends with more data one RTT later: 10, 20, 40, then 60-segment flights
        // (the window it reached) against 60: the ramp's 130 segments + 1 are sent in round 2
        // (0-based) by 60, in round 4 here.
        let grown60 = Before {
            grown_segs: 60,
            ..idle
        };
        let s = after(&[10, 20, 40, 60, 60, 20], grown60).unwrap();
        assert_eq!((s.flights, s.segments, s.extra_rounds), (4, 130, 2));
        // The first answer of a connection (no grown window) after a pause: restarting from
        // 10 is the default, nothing to tell.
        assert_eq!(after(&[10, 20, 40, 80, 63], Before::default()), None);
        // A silence under the RTO estimate (RTT + 200 ms): no restart, and a first flight of
        // 10 is no small initial window.
        let short = Before {
            idle_ns: 230 * MS,
            ..idle
        };
        assert_eq!(after(&[10, 20, 40, 80, 63], short), None);
        // A first flight above half the grown window: the window was kept.
        let kept = Before {
            grown_segs: 19,
            ..idle
        };
        assert_eq!(after(&[10, 20, 40, 80, 63], kept), None);
        // A first flight above half the earlier flights: the window was kept (or halved at
        // most once), not restarted; 10, 15, then 15s against 18 would read as a round trip.
        let near = Before {
            grown_segs: 18,
            ..idle
        };
        assert_eq!(after(&[10, 15, 15, 15, 15], near), None);
        // Flights one RTT apart that grow by less than half: a writer's pace, not a doubling
        // window (10, 12, 14, 16, then the rest).
        assert_eq!(after(&[10, 12, 14, 16, 100], idle), None);
        // A first flight that is the whole grown window does the job in its rounds: 80 then
        // 133 with a grown window of 80 is 2 rounds, as needed.
        assert_eq!(after(&[80, 133], idle), None);
    }

    #[test]
    fn the_largest_flight_counts_one_rtt_of_a_stream() {
        // 10, then 20, then a stream of 300 segments over 3 RTTs (no gap): the window let out
        // about 100 at once, not 300.
        let cx = SegCtx {
            rtt_ns: 37 * MS,
            leg_ns: 37 * MS,
            client_ns: 0,
            window: Some(1 << 22),
            mss: 1448,
        };
        let mut f = Flights::default();
        for k in 0..10 {
            f.on_segment(seg(f64::from(k) * 0.01, 1448), &cx);
        }
        for k in 0..20 {
            f.on_segment(seg(37.0 + f64::from(k) * 0.01, 1448), &cx);
        }
        for k in 0..300 {
            f.on_segment(seg(74.0 + f64::from(k) * 0.37, 1448), &cx);
        }
        assert_eq!(f.max_flight(), 100);
    }

    #[test]
    fn a_late_writer_is_not_clocked() {
        // A capture at the server (leg 0.1 ms): the client's ACK of the first flight arrives
        // at 37.1 ms, the next data leaves 13 ms after it (the writer's own time, not the ACK).
        let mut f = Flights::default();
        let mut cx = SegCtx {
            rtt_ns: 37 * MS,
            leg_ns: MS / 10,
            client_ns: 0,
            window: Some(1 << 20),
            mss: 1448,
        };
        f.on_segment(seg(0.0, 300), &cx);
        cx.client_ns = 37 * MS + MS / 10;
        for k in 0..4 {
            f.on_segment(seg(50.2 + f64::from(k) * 0.01, 1448), &cx);
        }
        cx.client_ns = 87 * MS;
        for k in 0..8 {
            f.on_segment(seg(87.2 + f64::from(k) * 0.01, 1448), &cx);
        }
        for k in 0..100 {
            f.on_segment(seg(124.2 + f64::from(k) * 0.01, 1448), &cx);
        }
        assert_eq!(f.finish(Some(37 * MS), false, Before::default()), None);
    }
}
