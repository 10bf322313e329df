//! One wake-up per response: `SO_RCVLOWAT` set to the response size a connection has learned.
//!
//! Why: nginx (and most servers) write the head and the body of a response separately, so the
//! client's socket becomes readable twice per response. When the thread is woken by the head
//! alone it reads it, sleeps, and is woken again for the body: on the loopback benchmark 1.3–1.4
//! `recvfrom` and ~1 context switch per request, the largest cost of the client's CPU (the switch
//! into and out of `epoll_wait`). With `SO_RCVLOWAT` at the response size the kernel does not
//! signal readability (nor wake the thread) until that many bytes are queued, so a response costs
//! one wake-up and one read (the first measured with `perf stat`: 11.5–12.6 µs of CPU per
//! request against 15.2–15.8 µs without, in the same alternating runs).
//!
//! The rule, per connection (plain HTTP/1.1 only; TLS bytes are records, not the response):
//! - after two complete responses of the same size `S` (≤ [`MAX_LOWAT`]) it sets
//!   `SO_RCVLOWAT = S` once (one `setsockopt` per connection, not per request);
//! - a response of another size turns the optimisation off for the whole thread (every
//!   connection back to 1, one `setsockopt` each, once): a larger one is seen when a read leaves
//!   it incomplete (then `SO_RCVLOWAT = 1` at once: the kernel re-checks readiness in that call,
//!   so bytes that came in between raise an edge and nothing waits);
//! - a smaller one never raises an edge by itself. [`Loop::watch_lowat`] finds it: every
//!   [`LOWAT_WATCH`] (the loop wakes for it when no event comes) a connection still waiting
//!   after [`LOWAT_WATCH`] is peeked (a non-blocking `recv(MSG_PEEK)`, which returns what is
//!   queued whatever the low-water mark); fewer bytes than the mark that make a whole response
//!   are one held back (as many as the mark were signalled and wait for the loop; a head whose
//!   body is still coming is left alone: the server may have been preempted between its two
//!   writes), and setting `SO_RCVLOWAT = 1` makes the kernel signal them. Such a response is read up to 2 × [`LOWAT_WATCH`] late, so its latency reads up to
//!   ~10 ms high: at most once per connection, and only in a run whose response size changed.
//!   `LoadConfig::rcvlowat = false` (`netdoctor load --no-rcvlowat`) turns it off.
//!
//! Hand-written: no crate does this; the socket options go through `netdoctor_sys::sockopt`.

use super::*;
use crate::http::Feed;

/// Largest response size used as a low-water mark (a larger response is read as it comes).
pub(super) const MAX_LOWAT: u32 = 16 * 1024;
/// How often, and after how long, a waiting connection is checked for a response held back.
pub(super) const LOWAT_WATCH: Duration = Duration::from_millis(5);

impl Loop<'_> {
    /// Slot `i` has just read a complete response of `resp_bytes`: learn its size, set or keep
    /// the low-water mark, or give up on it when the size changed.
    pub(super) fn learn_size(&mut self, i: usize) {
        let c = &mut self.conns[i];
        let size = std::mem::take(&mut c.resp_bytes);
        if c.parser.close || !self.b.spec.keepalive {
            // The connection's last response (nginx's `keepalive_requests`, 1000 by default,
            // ends every connection with a `Connection: close` response 5 bytes shorter): its
            // size says nothing about the next connection's, and the server's FIN made it
            // readable whatever the mark. Counting it as a change turned the mark off for the
            // whole thread after the first ~1000 requests of a connection.
            return;
        }
        let last = std::mem::replace(&mut c.last_size, size);
        if c.lowat > 1 {
            if size != c.lowat {
                self.disable_lowat();
            }
            return;
        }
        if !self.lowat_ok || size != last || size <= 1 || size > MAX_LOWAT {
            return;
        }
        let Some(Stream::Plain(tcp)) = c.stream.as_ref() else {
            return;
        };
        if set_lowat(tcp, size) {
            c.lowat = size;
            self.lowat_active = true;
        }
    }

    /// A read drained the socket before slot `i`'s response was complete although it had a
    /// low-water mark: the response is larger than learned.
    pub(super) fn lowat_missed(&mut self, _i: usize) {
        self.disable_lowat();
    }

    /// Every connection back to `SO_RCVLOWAT = 1`, for the rest of the run on this thread.
    pub(super) fn disable_lowat(&mut self) {
        self.lowat_ok = false;
        self.lowat_active = false;
        for c in &mut self.conns {
            if c.lowat > 1 {
                c.lowat = match c.stream.as_ref() {
                    // The kernel signals readiness in this call if bytes are queued.
                    Some(Stream::Plain(tcp)) if !set_lowat(tcp, 1) => {
                        // Still set: the watch keeps trying.
                        self.lowat_active = true;
                        c.lowat
                    }
                    _ => 0,
                };
            }
        }
    }

    /// Finds a response held back below a low-water mark (a smaller response than learned):
    /// a connection waiting for longer than [`LOWAT_WATCH`] with bytes in its receive queue.
    pub(super) fn watch_lowat(&mut self, now: Instant) {
        if !self.lowat_active {
            return;
        }
        let mut held = false;
        let mut any = false;
        let buf = &mut self.b.buf;
        let head = self.b.spec.head;
        for c in &self.conns {
            if c.lowat <= 1 {
                continue;
            }
            let Some(Stream::Plain(tcp)) = c.stream.as_ref() else {
                continue;
            };
            any = true;
            if c.state == State::Reading && now.saturating_duration_since(c.sent) >= LOWAT_WATCH {
                let mark = c.lowat as usize;
                let n = tcp.peek(&mut buf[..mark]).unwrap_or(0);
                // A head whose body is still coming is not held back (the server may just have
                // been preempted between its writes); a whole (or unparsable) response is.
                if n > 0
                    && n < mark
                    && !matches!(
                        ResponseParser::new(head).feed(&buf[..n]),
                        Ok(Feed::NeedMore)
                    )
                {
                    held = true;
                    break;
                }
            }
        }
        if held {
            self.disable_lowat();
        } else {
            self.lowat_active = any;
        }
    }
}

/// `SO_RCVLOWAT = bytes` on `tcp`; false when the kernel refused it.
fn set_lowat(tcp: &TcpStream, bytes: u32) -> bool {
    let v = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    netdoctor_sys::sockopt::set_int(tcp, libc::SOL_SOCKET, libc::SO_RCVLOWAT, v).is_ok()
}
