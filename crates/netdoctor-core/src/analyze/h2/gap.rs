//! Bytes the capture never held (a capture gap the receiver acknowledged, a segment cut by
//! the snap length) lose the framing of the server's side until a segment starts with a
//! frame header again, and the frames in between are missed: any open stream may have ended
//! there. Which ones did is not knowable, so all are set aside: out of the open streams
//! (the stream limit, head-of-line counts and stalls no longer see them), back in when a later
//! frame of theirs shows they were still going, else ended as cut by the gap when the
//! connection ends (counted as incomplete, like an exchange the end of the capture cut: its
//! first byte counts, its latency is unknown). A stream still open at the capture's end with
//! no gap, one reset by RST_STREAM and the streams a GOAWAY leaves are not touched by this.

use super::{H2Conn, Stream};
use crate::analyze::http::Exchange;

/// Streams set aside at once at most; past it the oldest is ended as cut by its gap.
const MAX_GAPPED: usize = 1024;

impl H2Conn {
    /// The server's frames from some point on were missed (the framing was lost at `ts_ns`
    /// or found again then): every open stream may have ended in them, so none is open any
    /// more until a frame of its own says so ([`H2Conn::revive`]).
    pub(super) fn set_aside(&mut self, ts_ns: i64, done: &mut Vec<Exchange>) {
        for s in self.streams.drain(..) {
            self.gapped.push((s, ts_ns));
        }
        while self.gapped.len() > MAX_GAPPED {
            let (s, at) = self.gapped.remove(0);
            self.end_in_gap(s, at, done);
        }
    }

    /// A frame of stream `id` after a set-aside: the stream was still going.
    pub(super) fn revive(&mut self, id: u32) {
        if let Some(k) = self.gapped.iter().position(|(s, _)| s.id == id) {
            let (s, _) = self.gapped.remove(k);
            self.streams.push(s);
        }
    }

    /// A set-aside stream that never showed again ended in the missed frames at `at` or
    /// later: an exchange cut by the gap when it was answered.
    pub(super) fn end_in_gap(&mut self, mut s: Stream, at: i64, done: &mut Vec<Exchange>) {
        self.note_waits(&s);
        self.remember_end(s.x.first_req.ts_ns, at);
        self.done.gap_cut += 1;
        if s.x.first_resp.is_some() {
            s.x.gap_cut = true;
            self.done.streams += 1;
            done.push(s.x);
        }
    }
}
