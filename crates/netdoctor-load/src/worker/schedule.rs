//! When a connection's next request goes out: at once (closed loop), or at its intended send
//! time on the constant-rate schedule (wrk2's model; see the module docs of `worker`).

use super::*;

impl Loop<'_> {
    /// The intended send time of connection `i`'s next request at a constant rate.
    pub(super) fn next_due(&self, i: usize, rate: f64) -> Instant {
        let c = &self.conns[i];
        let n = c.index + c.seq * self.b.spec.connections as u64;
        self.b.start + Duration::from_secs_f64(n as f64 / rate)
    }

    /// Slot `i` is ready for its next request: issue it now (closed loop, or when it is due),
    /// or park the slot until it is due.
    pub(super) fn begin(&mut self, poll: &Poll, i: usize, now: Instant) {
        if self.b.draining {
            return self.close(i);
        }
        let mut start = now;
        if let Some(rate) = self.b.spec.rate {
            let due = self.next_due(i, rate);
            if due > now {
                self.conns[i].state = State::Idle;
                self.due.push(Reverse((due, i)));
                return;
            }
            // Latency counts from when the request should have been sent.
            start = due;
            self.conns[i].seq += 1;
        }
        let c = &mut self.conns[i];
        c.pending = true;
        c.start = start;
        c.sent = now;
        c.written = 0;
        c.parser.reset();
        c.resp_bytes = 0;
        if c.stream.is_none() {
            return self.connect(poll, i, now);
        }
        c.state = State::Writing;
        self.write(poll, i);
    }

    /// Issues the requests whose time has come; true when any was.
    pub(super) fn run_due(&mut self, poll: &Poll, now: Instant) -> bool {
        let mut any = false;
        while let Some(Reverse((t, i))) = self.due.peek().copied() {
            if t > now {
                break;
            }
            self.due.pop();
            if self.conns[i].state == State::Idle {
                any = true;
                self.begin(poll, i, now);
            }
        }
        any
    }

    /// Sends the next request of every connection queued during the batch of events.
    pub(super) fn run_queued(&mut self, poll: &Poll) {
        let mut queued = std::mem::take(&mut self.queued);
        for &i in &queued {
            if self.conns[i].state == State::Queued {
                self.begin(poll, i, Instant::now());
            }
        }
        queued.clear();
        self.queued = queued;
    }
}
