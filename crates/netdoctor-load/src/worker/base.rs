//! What the HTTP/1.1 loop (`conn`) and the HTTP/2 loop (`h2`) share: the run's own state
//! ([`Base`]: outcome, error notes, the connect-retry pause, the drain flag), opening a
//! connection (connect, `TCP_NODELAY`, registration, the TLS session) and reading the result of a
//! non-blocking connect, and the event loop itself ([`drive`]: scan, due requests, the rate
//! timer, `epoll_wait`, dispatch, progress, then the drain of in-flight responses). Each protocol
//! implements [`Protocol`] and keeps only its own framing and connection states.

use super::*;

/// The state of a run that does not depend on the protocol.
pub(super) struct Base<'a> {
    pub(super) spec: &'a Spec,
    pub(super) start: Instant,
    pub(super) deadline: Instant,
    /// The thread's read buffer (reused for every read).
    pub(super) buf: Vec<u8>,
    pub(super) out: Outcome,
    /// Earliest time a closed connection should reconnect.
    pub(super) retry_at: Option<Instant>,
    /// The run is over: in-flight responses are read to the end (uncounted), nothing new is
    /// sent, and connections close once idle — so they close with a FIN, not a reset.
    pub(super) draining: bool,
    /// Sixteen times the recent mean latency, µs: each response adds its latency (at most 4 ×
    /// the mean + 16 µs) and takes a sixteenth off (an average over the last ~16 responses),
    /// for the length of a nap (the `spin` module).
    latency_x16: u64,
}

impl<'a> Base<'a> {
    pub(super) fn new(spec: &'a Spec, start: Instant, deadline: Instant) -> Self {
        Base {
            spec,
            start,
            deadline,
            buf: vec![0; READ_BUF],
            out: Outcome {
                hist: new_histogram(),
                requests: 0,
                bytes_read: 0,
                errors: ErrorCounts::default(),
                connects: 0,
                status: vec![0; STATUS_CODES],
                first_error: None,
                ended: start,
                timeline: crate::timeline::Recorder::new(start, deadline - start),
                h2: None,
                sched: super::sched::SchedClock::new(start),
                spin: None,
            },
            retry_at: None,
            draining: false,
            latency_x16: 0,
        }
    }

    /// The thread's recent mean latency, µs (0 before its first response).
    pub(super) fn latency_us(&self) -> u64 {
        self.latency_x16 / 16
    }

    /// Counts an error of `kind` (not while draining) and keeps the run's first message.
    pub(super) fn note_error(&mut self, kind: Kind, msg: impl FnOnce() -> String) {
        if self.draining {
            return;
        }
        let e = &mut self.out.errors;
        match kind {
            Kind::Connect => e.connect += 1,
            Kind::Read => e.read += 1,
            Kind::Write => e.write += 1,
            Kind::Timeout => e.timeout += 1,
            Kind::Status => e.status += 1,
            Kind::Stream => e.stream += 1,
        }
        let now = Instant::now();
        self.out.timeline.error(now);
        if self.out.first_error.is_none() {
            self.out.first_error = Some((now, msg()));
        }
    }

    /// Records a completed response of `status` whose latency counts from `since`.
    #[inline]
    pub(super) fn record(&mut self, since: Instant, now: Instant, status: u16) {
        let us = now.saturating_duration_since(since).as_micros();
        let us = u64::try_from(us).unwrap_or(u64::MAX).max(1);
        self.out.requests += 1;
        // An outlier counts for at most 4 × the average (+16 µs): one late response must not
        // lift it into naps (`spin::MIN_NAP`), whose late starts would lift it further.
        let cap = (self.latency_x16 / 4).saturating_add(16);
        self.latency_x16 = self.latency_x16 - self.latency_x16 / 16 + us.min(cap);
        self.out.hist.saturating_record(us);
        self.out.sched.request(since, us);
        self.out.timeline.request(now, us);
        if let Some(n) = self.out.status.get_mut(usize::from(status)) {
            *n += 1;
        }
        if !(200..400).contains(&status) {
            let addr = self.spec.addr;
            self.note_error(Kind::Status, || {
                format!("request to {addr}: HTTP status {status}")
            });
        }
    }

    /// Connecting or the TLS handshake failed: a connect error; closed connections reconnect
    /// after a pause (no busy loop against a closed port).
    pub(super) fn setup_failed(&mut self, now: Instant, msg: impl FnOnce() -> String) {
        let at = now + CONNECT_RETRY;
        self.retry_at = Some(self.retry_at.map_or(at, |t| t.min(at)));
        self.note_error(Kind::Connect, msg);
    }

    /// A connect that failed with `e` (counts EADDRNOTAVAIL apart).
    pub(super) fn connect_failed(&mut self, now: Instant, e: &io::Error) {
        let addr = self.spec.addr;
        if !self.draining && e.kind() == io::ErrorKind::AddrNotAvailable {
            self.out.errors.connect_addr_not_avail += 1;
        }
        self.setup_failed(now, || format!("connect {addr}: {}", describe(e)));
    }

    /// Starts a non-blocking connect for connection `i` (token `i`, read and write interest,
    /// edge-triggered, `TCP_NODELAY`), with a TLS session when the run has one. On failure the
    /// error is noted (see [`Base::setup_failed`]) and `None` returned.
    pub(super) fn open(&mut self, poll: &Poll, i: usize, now: Instant) -> Option<Stream> {
        let addr = self.spec.addr;
        self.out.connects += 1;
        let res = TcpStream::connect(addr).and_then(|mut s| {
            s.set_nodelay(true)?;
            poll.registry()
                .register(&mut s, Token(i), Interest::READABLE | Interest::WRITABLE)?;
            Ok(s)
        });
        match res.map(|s| Stream::new(s, self.spec.tls.as_ref())) {
            Ok(Ok(s)) => Some(s),
            Ok(Err(e)) => {
                self.setup_failed(now, || format!("tls session for {addr}: {e}"));
                None
            }
            Err(e) => {
                self.connect_failed(now, &e);
                None
            }
        }
    }
}

/// What became of a non-blocking connect after an event: failed (with why), done, or not yet.
pub(super) fn connect_outcome(
    stream: Option<&Stream>,
    ev: &mio::event::Event,
) -> Result<bool, io::Error> {
    match stream.map(|s| s.tcp().take_error()) {
        Some(Ok(Some(e))) | Some(Err(e)) => Err(e),
        _ if ev.is_error() => Err(io::Error::other("connection failed")),
        _ => Ok(ev.is_writable()),
    }
}

/// One protocol's connections, driven by [`drive`].
pub(super) trait Protocol<'a> {
    fn base(&mut self) -> &mut Base<'a>;
    /// Opens every connection (and issues the first requests).
    fn open_all(&mut self, poll: &Poll, now: Instant);
    /// Times out stuck requests and reconnects connections waiting for a retry.
    fn scan(&mut self, poll: &Poll, now: Instant);
    /// Issues the requests whose time has come (constant rate); true when any was.
    fn run_due(&mut self, poll: &Poll, now: Instant) -> bool;
    /// The intended send time of the next request waiting for its turn (constant rate).
    fn next_due(&self) -> Option<Instant>;
    /// Handles a readiness event of connection `i`.
    fn handle(&mut self, poll: &Poll, i: usize, ev: &mio::event::Event);
    /// After a batch of events: writes what they made ready (one write per connection).
    fn end_batch(&mut self, poll: &Poll);
    /// The run is over: closes the idle connections (see [`Base::draining`]).
    fn start_drain(&mut self);
    /// Some connection still has a request in flight.
    fn in_flight(&self) -> bool;
    /// Looks for responses held back below `SO_RCVLOWAT` (see the `lowat` module).
    fn watch(&mut self, _now: Instant) {}
    /// `watch` must run every [`LOWAT_WATCH`] even when no event comes.
    fn watching(&self) -> bool {
        false
    }
}

/// The timer slack of a napping load thread, ns (`LoadConfig::nap`).
const NAP_SLACK_NS: u64 = 1_000;

/// Runs `lp` until the deadline or `done`, then reads in-flight responses for a short grace
/// (uncounted) so connections close with a FIN: closing a socket with unread data makes the
/// kernel send a reset, which a capture of the run would show as the client aborting.
pub(super) fn drive<'a>(
    lp: &mut impl Protocol<'a>,
    mut poll: Poll,
    counters: &Counters,
    connections: usize,
    done: &AtomicBool,
) {
    let b = lp.base();
    let (spec, start, deadline) = (b.spec, b.start, b.deadline);
    // Constant rate: a timer for the due requests (without it, the ms poll timeout).
    let mut timer = match spec.rate {
        Some(_) => Timer::new()
            .and_then(|t| {
                poll.registry().register(
                    &mut mio::unix::SourceFd(&t.fd.as_raw_fd()),
                    TIMER,
                    Interest::READABLE,
                )?;
                Ok(t)
            })
            .ok(),
        None => None,
    };
    lp.open_all(&poll, start);
    let mut events = Events::with_capacity(connections.clamp(16, 1024) + 1);
    let scan_every = (spec.timeout / 8).clamp(Duration::from_millis(1), Duration::from_millis(100));
    let mut next_scan = start + scan_every;
    let mut next_watch = start + LOWAT_WATCH;
    let mut waiter = super::spin::Waiter::new(spec.spin, spec.nap);
    if !spec.nap.is_zero() {
        // A 40 µs nap must not last the default slack's 50 µs more; without it naps are
        // longer, not wrong.
        let _ = netdoctor_sys::affinity::set_current_thread_timer_slack(NAP_SLACK_NS);
    }
    loop {
        let mut now = Instant::now();
        if now >= deadline || done.load(Ordering::Relaxed) {
            break;
        }
        if now >= next_scan || lp.base().retry_at.is_some_and(|t| now >= t) {
            lp.scan(&poll, now);
            next_scan = now + scan_every;
        }
        if now >= next_watch {
            lp.watch(now);
            next_watch = now + LOWAT_WATCH;
        }
        if lp.run_due(&poll, now) {
            now = Instant::now();
        }
        let mut wake = deadline.min(next_scan);
        if lp.watching() {
            wake = wake.min(next_watch);
        }
        if let Some(t) = lp.base().retry_at {
            wake = wake.min(t);
        }
        if let Some(t) = lp.next_due()
            && !timer.as_mut().is_some_and(|tm| tm.arm(t, now))
        {
            wake = wake.min(t);
        }
        let latency = lp.base().latency_us();
        let slept = waiter.wait(&mut poll, &mut events, now, wake, latency);
        if let Err(e) = slept {
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            lp.base()
                .note_error(Kind::Read, || format!("epoll_wait: {}", describe(&e)));
            break;
        }
        lp.base().out.sched.tick(Instant::now());
        dispatch(lp, &poll, &events);
        lp.base().publish(counters);
    }
    lp.base().out.ended = Instant::now();
    if waiter.waits() {
        lp.base().out.spin = Some(waiter.counts);
    }
    lp.base().draining = true;
    lp.start_drain();
    let grace_end = Instant::now() + spec.timeout.min(DRAIN_GRACE);
    while lp.in_flight() {
        let now = Instant::now();
        if now >= grace_end {
            break;
        }
        match poll.poll(&mut events, Some(grace_end - now)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
        dispatch(lp, &poll, &events);
    }
    // The rest close when the loop drops.
    lp.base().publish(counters);
}

/// Handles one batch of readiness events, then writes what they made ready.
fn dispatch<'a>(lp: &mut impl Protocol<'a>, poll: &Poll, events: &Events) {
    for ev in events.iter() {
        let t = ev.token();
        if t != WAKER && t != TIMER {
            lp.handle(poll, t.0, ev);
        }
    }
    lp.end_batch(poll);
}

impl Base<'_> {
    /// Makes the counts so far visible to the progress reporter.
    pub(super) fn publish(&self, counters: &Counters) {
        counters
            .requests
            .store(self.out.requests, Ordering::Relaxed);
        counters
            .errors
            .store(self.out.errors.total(), Ordering::Relaxed);
    }
}
