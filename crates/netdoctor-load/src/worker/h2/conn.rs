//! One HTTP/2 connection's life: connect (through `worker::base`), the TLS handshake and its
//! ALPN check, the client preface, writing the queued frames, reading, failure and replacement
//! (after a GOAWAY or a timeout, with the streams in flight sent again).

use super::*;

impl H2Loop<'_> {
    /// Writes what connection `i` has queued, as far as the socket takes it.
    pub(super) fn flush(&mut self, poll: &Poll, i: usize) {
        let c = &mut self.conns[i];
        if c.state != CState::Open {
            return;
        }
        let Some(stream) = c.stream.as_mut() else {
            return;
        };
        let mut res = Ok(());
        while c.out_pos < c.out.len() {
            match stream.write(&c.out[c.out_pos..]) {
                Ok(0) => {
                    res = Err(io::Error::new(io::ErrorKind::WriteZero, "wrote 0 bytes"));
                    break;
                }
                Ok(n) => c.out_pos += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    res = Err(e);
                    break;
                }
            }
        }
        if c.out_pos == c.out.len() {
            c.out.clear();
            c.out_pos = 0;
        }
        if res.is_ok() {
            res = match stream.flush() {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
                r => r,
            };
        }
        if let Err(e) = res {
            let addr = self.b.spec.addr;
            self.conn_failed(poll, i, Kind::Write, || {
                format!("write {addr}: {}", describe(&e))
            });
        }
    }

    /// Opens a new connection for `i` (the old one, if any, is dropped).
    pub(super) fn connect(&mut self, poll: &Poll, i: usize, now: Instant) {
        if self.b.draining {
            return self.close(i);
        }
        let streams = self.h2.streams as u32;
        let c = &mut self.conns[i];
        c.stream = None;
        c.state = CState::Closed;
        c.sent = now;
        c.out.clear();
        c.out_pos = 0;
        c.inbuf.clear();
        c.skip = 0;
        c.block.clear();
        c.hpack = httlib_hpack::Decoder::default();
        c.next_id = 1;
        c.peer_max = 100;
        c.in_flight = 0;
        c.sent_first_block = false;
        c.recv_unacked = 0;
        c.goaway = None;
        f::put_opening(&mut c.out, streams.max(1));
        match self.b.open(poll, i, now) {
            Some(s) => {
                c.stream = Some(s);
                c.state = CState::Connecting;
            }
            None => c.state = CState::Closed,
        }
    }

    /// Connecting or the TLS handshake failed: a connect error, retried after a pause; the
    /// connection's Ready requests wait for it.
    pub(super) fn setup_failed(&mut self, i: usize, now: Instant, msg: impl FnOnce() -> String) {
        let c = &mut self.conns[i];
        c.stream = None;
        c.state = CState::Closed;
        self.b.setup_failed(now, msg);
    }

    /// Connection `i` broke (or the server closed it): each stream it carried failed (one error
    /// of `kind` each; none when nothing was in flight), and a new connection follows.
    pub(super) fn conn_failed(
        &mut self,
        poll: &Poll,
        i: usize,
        kind: Kind,
        msg: impl Fn() -> String,
    ) {
        let now = Instant::now();
        // Closed first, so the failed streams' next requests wait for the new connection.
        self.conns[i].state = CState::Closed;
        self.conns[i].stream = None;
        let n = self.conns[i].slots.len();
        for s in 0..n {
            if self.conns[i].slots[s].state == SlotState::Flight {
                self.b.note_error(kind, &msg);
                self.begin_after_failure(i, s, now);
            }
        }
        self.conns[i].in_flight = 0;
        self.connect(poll, i, now);
    }

    /// Replaces connection `i`: streams in flight are sent again on the new one.
    pub(super) fn replace(&mut self, poll: &Poll, i: usize, now: Instant) {
        for slot in &mut self.conns[i].slots {
            if slot.state == SlotState::Flight {
                slot.state = SlotState::Ready;
                slot.timed = true;
            }
        }
        self.conns[i].in_flight = 0;
        self.connect(poll, i, now);
    }

    pub(super) fn handle(&mut self, poll: &Poll, i: usize, ev: &mio::event::Event) {
        let c = &mut self.conns[i];
        match c.state {
            CState::Closed => {}
            CState::Connecting => match connect_outcome(c.stream.as_ref(), ev) {
                Err(e) => {
                    c.stream = None;
                    c.state = CState::Closed;
                    self.b.connect_failed(Instant::now(), &e);
                }
                Ok(false) => {}
                Ok(true) if c.stream.as_ref().is_some_and(Stream::is_tls) => {
                    c.state = CState::Handshaking;
                    self.handshake(poll, i);
                }
                Ok(true) => self.opened(poll, i),
            },
            CState::Handshaking => self.handshake(poll, i),
            CState::Open => {
                if ev.is_writable()
                    && (c.out_pos < c.out.len() || c.stream.as_ref().is_some_and(Stream::is_tls))
                {
                    self.flush(poll, i);
                    if self.conns[i].state != CState::Open {
                        return;
                    }
                }
                let closed = ev.is_read_closed() || ev.is_error();
                if ev.is_readable() || closed {
                    self.read(poll, i, closed);
                }
            }
        }
    }

    pub(super) fn handshake(&mut self, poll: &Poll, i: usize) {
        let addr = self.b.spec.addr;
        let c = &mut self.conns[i];
        let Some(Stream::Tls(t)) = c.stream.as_mut() else {
            return;
        };
        match t.handshake() {
            Ok(false) => {}
            Ok(true) => match t.alpn() {
                Some(b"h2") => self.opened(poll, i),
                other => {
                    let chose = other
                        .map(|p| String::from_utf8_lossy(p).into_owned())
                        .unwrap_or_else(|| "no protocol".into());
                    self.setup_failed(i, Instant::now(), || {
                        format!(
                            "tls handshake with {addr}: the server chose {chose} by ALPN, not h2"
                        )
                    });
                }
            },
            Err(e) => {
                self.setup_failed(i, Instant::now(), || {
                    format!("tls handshake with {addr}: {e}")
                });
            }
        }
    }

    /// Connection `i` is up: write the opening and the Ready requests.
    pub(super) fn opened(&mut self, poll: &Poll, i: usize) {
        self.conns[i].state = CState::Open;
        self.issue(i);
        self.mark_dirty(i);
        self.flush(poll, i);
    }

    pub(super) fn read(&mut self, poll: &Poll, i: usize, closed: bool) {
        let mut buf = std::mem::take(&mut self.b.buf);
        loop {
            let c = &mut self.conns[i];
            if c.state != CState::Open {
                break;
            }
            let Some(stream) = c.stream.as_mut() else {
                break;
            };
            let (n, more) = match stream.read(&mut buf) {
                Ok((0, _)) => {
                    self.eof(poll, i);
                    break;
                }
                Ok(r) => r,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let addr = self.b.spec.addr;
                    self.conn_failed(poll, i, Kind::Read, || {
                        format!("read {addr}: {}", describe(&e))
                    });
                    break;
                }
            };
            self.b.out.bytes_read += n as u64;
            if let Err(msg) = self.input(poll, i, &buf[..n]) {
                let addr = self.b.spec.addr;
                self.conn_failed(poll, i, Kind::Read, || format!("read {addr}: {msg}"));
                break;
            }
            if !more && !closed {
                break;
            }
        }
        self.b.buf = buf;
    }

    /// The server closed connection `i`.
    pub(super) fn eof(&mut self, poll: &Poll, i: usize) {
        let c = &self.conns[i];
        if c.in_flight == 0 {
            // An idle connection closed (after GOAWAY, or an idle timeout): just reconnect.
            let now = Instant::now();
            self.connect(poll, i, now);
            return;
        }
        let addr = self.b.spec.addr;
        self.conn_failed(poll, i, Kind::Read, || {
            format!("read {addr}: connection closed with streams in flight")
        });
    }
}
