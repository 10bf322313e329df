//! The merge of the workers' logs, on the reader's thread between its rounds ([`Merge`]): each
//! round's logs replayed in the order the frames were pushed into one [`Agg`] once every worker has logged it, and
//! the workers' counters summed ([`add_counts`]). Apart from the reader's loop because it is
//! the one half of the sharded analyzer that sees every worker: what order the conclusions
//! are applied in, and which counters are summed, is decided here alone.

use std::collections::VecDeque;
use std::sync::mpsc::{Receiver, SyncSender};
use std::time::Duration;

use super::super::agg::{Agg, Entry};
use super::super::{CaptureQuality, CaptureStats};
use super::{Log, Msg};

/// The merge, on the reader's thread: each round's logs of every worker (the reader's own
/// first), in the order the frames were pushed (their `Frame::seq`), into one `Agg`, a round as soon as every worker has logged it;
/// then the ends.
pub(super) struct Merge {
    agg: Agg,
    counts: CaptureStats,
    from: Vec<Receiver<Msg>>,
    back: Vec<SyncSender<Log>>,
    /// Per worker (the reader's own at 0), its logs not merged yet, oldest first.
    queued: Vec<VecDeque<Log>>,
    /// Emptied logs of the reader's own, for its next rounds.
    spare: Vec<Log>,
    /// Per worker (1..), its busy time and rounds logged since [`Merge::take_busy`].
    busy: Vec<(Duration, u32)>,
}

impl Merge {
    pub(super) fn new(from: Vec<Receiver<Msg>>, back: Vec<SyncSender<Log>>) -> Merge {
        let n = from.len() + 1;
        Merge {
            agg: Agg::new(),
            counts: CaptureStats::default(),
            from,
            back,
            queued: (0..n).map(|_| VecDeque::new()).collect(),
            spare: Vec::new(),
            busy: vec![(Duration::ZERO, 0); n - 1],
        }
    }

    /// An emptied log for the reader's next round.
    pub(super) fn spare(&mut self) -> Log {
        self.spare.pop().unwrap_or_default()
    }

    /// The reader's own log of its latest round.
    pub(super) fn own(&mut self, log: Log) {
        self.queued[0].push_back(log);
    }

    /// Takes what the workers have logged so far, without waiting, and merges every round
    /// complete; how many rounds it merged.
    pub(super) fn poll(&mut self) -> usize {
        for (w, rx) in self.from.iter().enumerate() {
            while let Ok(m) = rx.try_recv() {
                Self::take(
                    &mut self.queued[w + 1],
                    &mut self.counts,
                    &mut self.busy[w],
                    m,
                );
            }
        }
        self.merge_ready()
    }

    /// The workers' busy time and rounds logged since the last call; the counts restart.
    pub(super) fn take_busy(&mut self) -> Vec<(Duration, u32)> {
        let zero = (Duration::ZERO, 0);
        self.busy
            .iter_mut()
            .map(|b| std::mem::replace(b, zero))
            .collect()
    }

    fn take(q: &mut VecDeque<Log>, counts: &mut CaptureStats, busy: &mut (Duration, u32), m: Msg) {
        match m {
            Msg::Round(l, t) => {
                q.push_back(l);
                busy.0 += t;
                busy.1 += 1;
            }
            Msg::End(l, s) => {
                q.push_back(l);
                add_counts(counts, &s);
            }
        }
    }

    /// Merges the rounds every worker has logged, oldest first; how many.
    fn merge_ready(&mut self) -> usize {
        let mut merged = 0;
        while self.queued.iter().all(|q| !q.is_empty()) {
            merged += 1;
            let logs: Vec<Log> = self
                .queued
                .iter_mut()
                .map(|q| q.pop_front().expect("not empty"))
                .collect();
            replay(&logs, |e| self.agg.apply(e));
            let mut logs = logs.into_iter();
            if let Some(mut l) = logs.next() {
                l.clear();
                self.spare.push(l);
            }
            for (mut l, tx) in logs.zip(&self.back) {
                l.clear();
                // Full (the worker has not taken the last ones) or gone: dropped.
                let _ = tx.try_send(l);
            }
        }
        merged
    }

    /// Waits for every worker's last log (their queues are closed; the reader's own is
    /// queued), merging every round; the aggregates and the workers' counters. A worker gone
    /// without its last log (it panicked) leaves its rounds unmerged: its join reports it.
    pub(super) fn finish(mut self) -> (Agg, CaptureStats) {
        for w in 0..self.from.len() {
            while self.queued[w + 1].len() < self.queued[0].len() {
                match self.from[w].recv() {
                    Ok(m) => Self::take(
                        &mut self.queued[w + 1],
                        &mut self.counts,
                        &mut self.busy[w],
                        m,
                    ),
                    Err(_) => break,
                }
            }
        }
        self.merge_ready();
        (self.agg, self.counts)
    }
}

/// Applies the entries of `logs` (each in tag order; a tag in one log only) in tag order: from
/// the log with the lowest next tag, every entry before the next tag of any other log, as one
/// run (session 23: an entry at a time, comparing every log's next tag each time, was ~90
/// instructions an entry).
fn replay(logs: &[Log], mut apply: impl FnMut(&Entry)) {
    let mut at = vec![0usize; logs.len()];
    loop {
        // The log with the lowest next tag, and the lowest next tag of the others.
        let mut best: Option<(u64, usize)> = None;
        let mut second = u64::MAX;
        for (w, l) in logs.iter().enumerate() {
            let Some(tag) = l.tag(at[w]) else { continue };
            match best {
                Some((t, _)) if tag >= t => second = second.min(tag),
                _ => {
                    if let Some((t, _)) = best {
                        second = second.min(t);
                    }
                    best = Some((tag, w));
                }
            }
        }
        let Some((_, w)) = best else { return };
        let (l, i) = (&logs[w], &mut at[w]);
        while let Some(tag) = l.tag(*i)
            && tag < second
        {
            apply(l.entry(*i));
            *i += 1;
        }
    }
}

/// Adds the counters of `b` to `a` (the packet and time fields too: a worker's are zero). A
/// pattern without `..`: a counter added to [`CaptureStats`] must be summed here.
pub(super) fn add_counts(a: &mut CaptureStats, b: &CaptureStats) {
    let CaptureStats {
        packets,
        bytes,
        tcp_segments,
        other_packets,
        decode_errors,
        syns_cut,
        connections,
        connections_with_handshake,
        connections_untracked,
        retransmitted_segments,
        first_ts_ns: _,
        last_ts_ns: _,
        duration_s: _,
        capture_drops,
        data_segments,
        out_of_order_segments,
        spurious_retransmissions,
        duplicate_acks,
        capture_gaps,
        syn_retransmits,
        resets,
        connections_evicted,
        half_open_evicted,
        pipelined_connections,
        tls_h2_connections,
        tls_h2_maybe_connections,
        fast_retransmissions,
        rto_retransmissions,
        tail_loss_probes,
        keep_alives,
        h2_framing_lost,
        h2_reassembly_overflows,
        h2_streams_cut_by_gap,
        // The merger's own aggregates hold the bulk transfers (replayed in frame order).
        bulk: _,
        quality:
            CaptureQuality {
                duplicate_frames,
                missing_segments,
                missing_bytes,
                captured_bytes,
                sequence_gaps,
                client_unseen_connections,
                server_unseen_connections,
                // Read by the reader's own stamps (a worker sees a share of the frames).
                backdated_frames: _,
                sorted_frames: _,
            },
    } = b;
    a.packets += packets;
    a.h2_framing_lost += h2_framing_lost;
    a.h2_reassembly_overflows += h2_reassembly_overflows;
    a.h2_streams_cut_by_gap += h2_streams_cut_by_gap;
    a.bytes += bytes;
    a.tcp_segments += tcp_segments;
    a.other_packets += other_packets;
    a.decode_errors += decode_errors;
    a.syns_cut += syns_cut;
    a.connections += connections;
    a.connections_with_handshake += connections_with_handshake;
    a.connections_untracked += connections_untracked;
    a.retransmitted_segments += retransmitted_segments;
    a.capture_drops += capture_drops;
    a.data_segments += data_segments;
    a.out_of_order_segments += out_of_order_segments;
    a.spurious_retransmissions += spurious_retransmissions;
    a.duplicate_acks += duplicate_acks;
    a.capture_gaps += capture_gaps;
    a.syn_retransmits += syn_retransmits;
    a.resets += resets;
    a.connections_evicted += connections_evicted;
    a.half_open_evicted += half_open_evicted;
    a.pipelined_connections += pipelined_connections;
    a.tls_h2_connections += tls_h2_connections;
    a.tls_h2_maybe_connections += tls_h2_maybe_connections;
    a.fast_retransmissions += fast_retransmissions;
    a.rto_retransmissions += rto_retransmissions;
    a.tail_loss_probes += tail_loss_probes;
    a.keep_alives += keep_alives;
    let q = &mut a.quality;
    q.duplicate_frames += duplicate_frames;
    q.missing_segments += missing_segments;
    q.missing_bytes += missing_bytes;
    q.captured_bytes += captured_bytes;
    q.sequence_gaps += sequence_gaps;
    q.client_unseen_connections += client_unseen_connections;
    q.server_unseen_connections += server_unseen_connections;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log of handshake RTT entries (the RTT the tag itself), with these tags.
    fn log(tags: &[u64]) -> Log {
        let mut l = Log::default();
        for &t in tags {
            l.push(t, Entry::Rtt(t as i64));
        }
        l
    }

    #[test]
    fn logs_are_replayed_in_tag_order_with_runs_and_repeated_tags() {
        // Runs of one log (1, 2), a tag with two entries (5), a log that ends first, an empty one.
        let logs = [
            log(&[1, 2, 5, 5, 9, 12, 13]),
            log(&[3, 4, 6, 10]),
            log(&[7, 8, 11]),
            log(&[]),
        ];
        let mut seen = Vec::new();
        replay(&logs, |e| {
            if let Entry::Rtt(ns) = e {
                seen.push(*ns);
            }
        });
        assert_eq!(seen, [1, 2, 3, 4, 5, 5, 6, 7, 8, 9, 10, 11, 12, 13]);
    }
}
