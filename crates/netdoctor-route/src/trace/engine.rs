//! The rounds of a trace, on a clock: round `n` starts at `n × interval` whatever became of the
//! earlier rounds, and each probe waits `timeout` from its own send for its own answer. So a
//! lost probe no longer holds the next round back (40 rounds at 50 ms took 9 s under loss when
//! every round waited for its stragglers), and rounds overlap when answers are slow.
//!
//! Overlapping is safe because every answer is matched to the probe that caused it, never to
//! "the round in progress": each probe has its own socket, so for TCP and UDP the kernel
//! delivers an ICMP error to the socket whose ports the quoted header carries (IP_RECVERR), a
//! ping socket gets the echo replies of its own identifier, and a raw ICMP socket (which sees
//! every ICMP packet) keeps only the one quoting its identifier and sequence number, unique
//! among the probes in flight (`seq` = round × 256 + TTL, and at most [`MAX_IN_FLIGHT`] < 256
//! rounds out at once). A reply is recorded under the round and TTL of its probe.
//!
//! Until the first answer, a round still waits for the one before it: a route that ends at a
//! router is answered with Network Unreachable at most once a second per client (Linux's
//! `ip_error` rate limit, whose budget the router's other ICMP to that client also spends), so
//! overlapping rounds from the start lost every such answer in the route lab, although each
//! probe was matched correctly.

use super::probe::{Method, Probe, ReplyKind};
use super::stats::Sample;
use super::{Protocol, TraceError, TraceOptions, sys};
use std::time::{Duration, Instant};

/// Probes (sockets) out at once; a round waits while more are in flight. Below 256 so a raw
/// ICMP probe's sequence number is unique among those in flight.
pub const MAX_IN_FLIGHT: usize = 255;

/// What the rounds found, per TTL (index = TTL).
pub(super) struct Probed {
    pub samples: Vec<Vec<Sample>>,
    pub sent: Vec<u32>,
    pub probed_rounds: Vec<Vec<u32>>,
    /// The lowest TTL that the destination (or a router saying it is unreachable) answered.
    pub dest_ttl: Option<u8>,
    pub local_errors: Vec<String>,
    /// Any probe has been answered.
    pub answered: bool,
}

struct InFlight {
    probe: Probe,
    round: u32,
    deadline: Instant,
}

/// Sends `opts.rounds` rounds, one probe per TTL each (up to the destination once it is
/// known), and collects every answer within its probe's `timeout`.
pub(super) fn probe_rounds(
    opts: &TraceOptions,
    method: Method,
    ident: u16,
    progress: &mut dyn FnMut(u32, u32),
) -> Result<Probed, TraceError> {
    let n = usize::from(opts.max_ttl) + 1;
    let mut out = Probed {
        samples: vec![Vec::new(); n],
        sent: vec![0; n],
        probed_rounds: vec![Vec::new(); n],
        dest_ttl: None,
        local_errors: Vec::new(),
        answered: false,
    };
    let begun = Instant::now();
    let mut in_flight: Vec<InFlight> = Vec::new();
    let mut next_round = 0u32;
    loop {
        let now = Instant::now();
        retire(&mut in_flight, now, &mut out);
        let limit = out.dest_ttl.unwrap_or(opts.max_ttl);
        let width = usize::from(limit.saturating_sub(opts.first_ttl)) + 1;
        let due = (next_round < opts.rounds).then(|| begun + opts.interval * next_round);
        // Until anything has answered, a round waits for the one before it to end: a router
        // that answers a route's end (Network Unreachable) does so at most once a second
        // per client (Linux's ip_error), sharing that budget with its other ICMP to the
        // client, so rounds that overlap from the start never see it.
        let room =
            in_flight.is_empty() || (out.answered && in_flight.len() + width <= MAX_IN_FLIGHT);
        if let Some(at) = due
            && now >= at
            && room
        {
            send_round(
                opts,
                method,
                ident,
                next_round,
                limit,
                &mut in_flight,
                &mut out,
            )?;
            next_round += 1;
            progress(next_round, opts.rounds);
            continue;
        }
        if due.is_none() && in_flight.is_empty() {
            break;
        }
        // Wait for answers until the next round is due or the first deadline passes.
        let mut wake = in_flight.iter().map(|f| f.deadline).min();
        if let Some(at) = due.filter(|_| room) {
            wake = Some(wake.map_or(at, |w| w.min(at)));
        }
        let left = wake
            .map_or(Duration::ZERO, |w| w.saturating_duration_since(now))
            .max(Duration::from_millis(1));
        let pending: Vec<usize> = (0..in_flight.len())
            .filter(|&i| !in_flight[i].probe.done())
            .collect();
        if pending.is_empty() {
            std::thread::sleep(left);
            continue;
        }
        let mut fds: Vec<libc::pollfd> = pending
            .iter()
            .map(|&i| sys::pollfd(in_flight[i].probe.fd(), in_flight[i].probe.events()))
            .collect();
        sys::poll(&mut fds, left).map_err(TraceError::Poll)?;
        for (k, fd) in fds.iter().enumerate() {
            if fd.revents != 0 {
                in_flight[pending[k]].probe.on_event();
            }
        }
    }
    // Per-hop figures that follow the order of samples (last, jitter) read them by round.
    for s in out.samples.iter_mut() {
        s.sort_by_key(|x| x.round);
    }
    Ok(out)
}

fn send_round(
    opts: &TraceOptions,
    method: Method,
    ident: u16,
    round: u32,
    limit: u8,
    in_flight: &mut Vec<InFlight>,
    out: &mut Probed,
) -> Result<(), TraceError> {
    let to = crate::scoped::ScopedIp {
        ip: opts.target,
        scope_id: opts.scope_id,
        scope: None,
    };
    for ttl in opts.first_ttl..=limit {
        let port = match (opts.protocol, opts.udp_fixed_port) {
            (Protocol::Udp, false) => opts.port.wrapping_add(u16::from(ttl) - 1),
            _ => opts.port,
        };
        let seq = (((round % 256) as u16) << 8) | u16::from(ttl);
        let p =
            Probe::send(method, &to, port, ttl, ident, seq).map_err(|source| TraceError::Send {
                ttl,
                target: opts.target,
                source,
            })?;
        out.sent[usize::from(ttl)] += 1;
        out.probed_rounds[usize::from(ttl)].push(round);
        in_flight.push(InFlight {
            probe: p,
            round,
            deadline: Instant::now() + opts.timeout,
        });
    }
    Ok(())
}

/// Records and closes the probes that were answered, failed, or are past their deadline.
///
/// A probe past its deadline is read once more first: on a busy machine this process can be
/// descheduled past a deadline while the answer sits in the socket. The answer counts if it
/// arrived in time by the kernel's receive stamp (an answer without one would carry the stall
/// in its round trip, and stays unanswered, as before).
fn retire(in_flight: &mut Vec<InFlight>, now: Instant, out: &mut Probed) {
    let late: Vec<usize> = (0..in_flight.len())
        .filter(|&i| now >= in_flight[i].deadline && !in_flight[i].probe.done())
        .collect();
    if !late.is_empty() {
        let mut fds: Vec<libc::pollfd> = late
            .iter()
            .map(|&i| sys::pollfd(in_flight[i].probe.fd(), in_flight[i].probe.events()))
            .collect();
        if sys::poll(&mut fds, Duration::ZERO).is_ok() {
            for (k, fd) in fds.iter().enumerate() {
                let f = &mut in_flight[late[k]];
                if fd.revents != 0 {
                    f.probe.on_event();
                    let allowed = f.deadline.saturating_duration_since(f.probe.sent_at);
                    if f.probe.rtt().is_some_and(|rtt| rtt > allowed) {
                        f.probe.reply = None;
                    }
                }
            }
        }
    }
    let mut k = 0;
    while k < in_flight.len() {
        if !(in_flight[k].probe.done() || now >= in_flight[k].deadline) {
            k += 1;
            continue;
        }
        let f = in_flight.swap_remove(k);
        let p = f.probe;
        if let (Some(r), Some(rtt)) = (p.reply, p.rtt()) {
            out.answered = true;
            out.samples[usize::from(p.ttl)].push(Sample {
                round: f.round,
                from: r.from,
                scope_id: r.scope_id,
                rtt_ms: rtt.as_secs_f64() * 1000.0,
                kind: r.kind,
            });
            if matches!(r.kind, ReplyKind::Reached | ReplyKind::Unreachable { .. }) {
                out.dest_ttl = Some(out.dest_ttl.map_or(p.ttl, |d| d.min(p.ttl)));
            }
        } else if let Some(e) = &p.error
            && !out.local_errors.contains(e)
        {
            out.local_errors.push(e.clone());
        }
        p.abort();
    }
}
