//! The reset kinds, their sides and severities, and the own-timeout split.

use super::*;
use crate::decode::TcpFlags as F;
use crate::detect::testkit::*;
use crate::event::ExchangeDone;

fn reset(kind: ResetKind, from_server: bool, k: u64) -> Event<'static> {
    Event::Reset {
        ends: ends(),
        kind,
        before: Some(pkt(k * 2, k as i64, !from_server, F::PSH, 100)),
        rst: pkt(k * 2 + 1, k as i64 + 1, from_server, F::RST, 0),
        req: None,
        context: Default::default(),
    }
}

/// The same reset with the ACK flag (a live socket's reset: Linux, Windows and macOS send
/// those with ACK).
fn with_ack(ev: Event<'static>) -> Event<'static> {
    match ev {
        Event::Reset {
            ends,
            kind,
            before,
            rst,
            req,
            context,
        } => Event::Reset {
            ends,
            kind,
            before,
            rst: Pkt {
                flags: crate::decode::TcpFlags(F::RST | F::ACK),
                ..rst
            },
            req,
            context,
        },
        ev => ev,
    }
}

#[test]
fn a_client_abort_without_ack_is_a_host_that_no_longer_had_the_connection() {
    // `suri-tcp-empty-sack`'s shape: a reset with no ACK flag while the response flowed.
    let v = run::<ConnectionReset>(&[reset(ResetKind::ClientAbort, false, 1)], &cx(4));
    assert_eq!(v.len(), 1);
    assert_eq!((v[0].side, v[0].severity), (Side::Client, Severity::Info));
    assert!(
        v[0].summary
            .starts_with("The client's host reset 1 connections"),
        "{}",
        v[0].summary
    );
    assert!(
        v[0].explanation.contains("RFC 9293"),
        "{}",
        v[0].explanation
    );
    assert!(!v[0].fix.contains("Nothing to do"), "{}", v[0].fix);
    // The look-alike: a client closing its socket with the response unread resets with ACK.
    let ev = [
        reset(ResetKind::ClientAbort, false, 1),
        with_ack(reset(ResetKind::ClientAbort, false, 2)),
    ];
    let v = run::<ConnectionReset>(&ev[1..], &cx(4));
    assert_eq!(
        v[0].summary, "The client reset 1 connections while a response was arriving",
        "{v:?}"
    );
    assert!(
        v[0].explanation
            .contains("closed its socket with response data still unread"),
        "{}",
        v[0].explanation
    );
    // Both: each told for what it is.
    let v = run::<ConnectionReset>(&ev, &cx(4));
    assert!(
        v[0].summary.starts_with(
            "The client reset 2 connections while a response was arriving; 1 of those resets \
             acknowledge nothing"
        ),
        "{}",
        v[0].summary
    );
    assert!(
        v[0].explanation.contains("RFC 9293"),
        "{}",
        v[0].explanation
    );
}

#[test]
fn a_reset_before_any_byte_is_a_refusal_at_setup_not_an_idle_timeout() {
    let ev: Vec<Event<'_>> = (1..=10).map(|k| reset(ResetKind::Setup, true, k)).collect();
    let v = run::<ConnectionReset>(&ev, &cx(0));
    assert_eq!(v.len(), 1);
    assert_eq!(
        (v[0].side, v[0].severity),
        (Side::Server, Severity::Critical)
    );
    assert!(
        v[0].summary.contains("right after the handshake"),
        "{}",
        v[0].summary
    );
    assert!(!v[0].summary.contains("idle"), "{}", v[0].summary);
    assert!(!v[0].fix.contains("idle timeouts"), "{}", v[0].fix);
    assert!(v[0].explanation.contains("tcp_abort_on_overflow"));
}

#[test]
fn the_load_generators_own_timeouts_are_not_the_servers_resets() {
    // Requests that waited 2 s, reset by the client: with a 2000 ms timeout they are
    // netdoctor's own; a 300 ms one is not.
    let waited = |k: u64, ms: i64| Event::Reset {
        ends: ends(),
        kind: ResetKind::DuringExchange,
        before: None,
        rst: pkt(k * 2 + 1, k as i64 * 10_000 + ms, false, F::RST, 0),
        req: Some(pkt(k * 2, k as i64 * 10_000, false, F::PSH, 78)),
        context: Default::default(),
    };
    let cfg = Observation::RunConfig {
        keepalive: true,
        timeout_ms: 2000,
        connections: 10,
    };
    let mut ev: Vec<Event<'_>> = (0..4).map(|k| waited(k, 2001)).collect();
    ev.push(waited(5, 300));
    ev.push(Event::Observed(&cfg));
    let v = run::<ConnectionReset>(&ev, &cx(100));
    assert_eq!(v.len(), 1, "one finding for every kind: {v:?}");
    // The client's one reset of a 300 ms request leads (a warning); netdoctor's own
    // timeouts follow, at info.
    assert_eq!(v[0].severity, Severity::Warning, "{}", v[0].summary);
    assert!(
        v[0].summary.starts_with("The client reset 1 connections"),
        "{}",
        v[0].summary
    );
    assert!(
        v[0].summary
            .contains("; also, netdoctor's load generator reset 4 connections itself"),
        "{}",
        v[0].summary
    );
    // Without the run's config nothing is discounted.
    ev.pop();
    let v = run::<ConnectionReset>(&ev, &cx(100));
    assert_eq!(v.len(), 1);
    assert!(
        v[0].summary.contains("reset 5 connections"),
        "{}",
        v[0].summary
    );
}

#[test]
fn kinds_get_their_own_finding_side_and_severity() {
    let ev = [
        reset(ResetKind::DuringExchange, true, 1),
        reset(ResetKind::DuringExchange, true, 2),
        with_ack(reset(ResetKind::ClientAbort, false, 3)),
    ];
    let v = run::<ConnectionReset>(&ev, &cx(10));
    assert_eq!(v.len(), 1, "merged: {v:?}");
    assert_eq!(
        (v[0].side, v[0].severity),
        (Side::Server, Severity::Critical)
    );
    assert!(
        v[0].summary
            .starts_with("The server reset 2 connections in the middle"),
        "{}",
        v[0].summary
    );
    assert!(
        v[0].summary
            .contains("; also, the client reset 1 connections while a response was arriving"),
        "{}",
        v[0].summary
    );
    assert_eq!(v[0].evidence.len(), 3);
}

#[test]
fn a_reset_after_the_close_is_info_not_a_failed_request() {
    let v = run::<ConnectionReset>(&[reset(ResetKind::AfterClose, true, 1)], &cx(1));
    assert_eq!((v[0].side, v[0].severity), (Side::Server, Severity::Info));
    assert!(
        v[0].summary.contains("it had already closed (FIN sent)"),
        "{}",
        v[0].summary
    );
    assert!(!v[0].summary.contains("middle"), "{}", v[0].summary);
    // Refusals are server_not_listening's.
    assert!(run::<ConnectionReset>(&[reset(ResetKind::Refused, true, 1)], &cx(1)).is_empty());
}

#[test]
fn a_reset_answering_the_peers_close_of_an_unused_connection_is_info_on_the_closer() {
    let v = run::<ConnectionReset>(&[reset(ResetKind::UnusedClosed, true, 1)], &cx(1));
    assert_eq!(v.len(), 1);
    assert_eq!((v[0].side, v[0].severity), (Side::Client, Severity::Info));
    assert!(
        v[0].summary
            .starts_with("The client closed 1 connections before any byte"),
        "{}",
        v[0].summary
    );
    assert!(!v[0].summary.contains("refused"), "{}", v[0].summary);
}

#[test]
fn a_listener_seen_in_the_run_contradicts_nothing_listens() {
    let ev: Vec<Event<'_>> = (1..=3)
        .map(|k| reset(ResetKind::Refused, true, k))
        .collect();
    // Without a listener seen, refusals are server_not_listening's alone.
    assert!(run::<ConnectionReset>(&ev, &cx(10)).is_empty());
    let nl = run::<crate::detect::server_not_listening::ServerNotListening>(&ev, &cx(10));
    assert_eq!(nl.len(), 1);
    let socks = Observation::ServerSockets(vec![crate::observation::ServerSocket {
        pid: 7,
        process: "nginx".into(),
        fd: 6,
        state: crate::observation::SocketState::Listen,
        local: "0.0.0.0:80".into(),
        tcp_nodelay: false,
        tcp_cork: false,
        sndbuf: 0,
        rcvbuf: 0,
    }]);
    let mut ev = ev;
    ev.push(Event::Observed(&socks));
    let v = run::<ConnectionReset>(&ev, &cx(10));
    assert!(
        v[0].summary.contains("although nginx (pid 7) listens"),
        "{}",
        v[0].summary
    );
    assert!(!v[0].fix.contains("Start the server"), "{}", v[0].fix);
    // And server_not_listening, which the listener contradicts, stays silent.
    assert!(
        run::<crate::detect::server_not_listening::ServerNotListening>(&ev, &cx(10)).is_empty()
    );
}

#[test]
fn a_few_idle_resets_are_info() {
    // Before the reset: the server's answer (an idle connection).
    let mut ev = [reset(ResetKind::Idle, true, 1)];
    if let Event::Reset { before, .. } = &mut ev[0] {
        *before = Some(pkt(2, 1, true, F::PSH, 100));
    }
    let v = run::<ConnectionReset>(&ev, &cx(10));
    assert_eq!(v[0].severity, Severity::Info);
    // Before it, the client's request: a request on a connection dropped while idle failed.
    let v = run::<ConnectionReset>(&[reset(ResetKind::Idle, true, 1)], &cx(10));
    assert_eq!(v[0].severity, Severity::Critical, "{}", v[0].summary);
    assert!(
        v[0].summary.contains("1 requests sent on a connection"),
        "{}",
        v[0].summary
    );
    assert!(run::<ConnectionReset>(&[], &cx(10)).is_empty());
}

#[test]
fn a_reset_after_a_complete_answer_is_a_warning_only_when_the_answer_was_not_acknowledged() {
    let after = |k: u64, unacked: bool| Event::Reset {
        ends: ends(),
        kind: ResetKind::AfterAnswer,
        before: Some(pkt(k * 2, k as i64 * 10, true, F::PSH, 600)),
        rst: pkt(k * 2 + 1, k as i64 * 10 + 1, true, F::RST, 0),
        req: None,
        context: crate::event::ResetContext {
            unacked,
            answer_gap_ns: Some(1_000_000),
            ..Default::default()
        },
    };
    let probe = |f: &Finding| {
        f.evidence
            .iter()
            .any(|e| matches!(e, Evidence::Probe { probe, .. } if probe == AFTER_ANSWER_EVIDENCE))
    };
    let v = run::<ConnectionReset>(&[after(1, false), after(2, false)], &cx(10));
    assert_eq!((v[0].severity, v[0].side), (Severity::Info, Side::Server));
    assert!(v[0].summary.contains("1.00 ms after"), "{}", v[0].summary);
    assert!(probe(&v[0]));
    let v = run::<ConnectionReset>(&[after(1, false), after(2, true)], &cx(10));
    assert_eq!(v[0].severity, Severity::Warning, "{}", v[0].summary);
    assert!(
        v[0].summary
            .contains("1 came before the client had acknowledged"),
        "{}",
        v[0].summary
    );
    // Behind a failure in the middle, it follows as "also" without its zh key.
    let v = run::<ConnectionReset>(
        &[after(1, false), reset(ResetKind::DuringExchange, true, 3)],
        &cx(10),
    );
    assert_eq!(v[0].severity, Severity::Critical, "{}", v[0].summary);
    assert!(
        v[0].summary.contains("; also, the server closed"),
        "{}",
        v[0].summary
    );
    assert!(!probe(&v[0]));
}

#[test]
fn the_clients_reuse_gap_stands_next_to_the_idle_timer() {
    let idle = |k: u64| Event::Reset {
        ends: ends(),
        kind: ResetKind::Idle,
        before: Some(pkt(k * 2, k as i64 * 10_000, true, F::PSH, 600)),
        rst: pkt(
            k * 2 + 1,
            k as i64 * 10_000 + 1000,
            true,
            F::RST | F::ACK,
            0,
        ),
        req: None,
        context: crate::event::ResetContext {
            idle_ns: 1_000_000_000,
            ..Default::default()
        },
    };
    let xs: Vec<ExchangeDone> = (0..3)
        .map(|k| ExchangeDone {
            reuse_gap_ns: Some(500_000_000),
            ..ExchangeDone::new(
                ends(),
                pkt(100 + k, 0, false, F::PSH, 50),
                pkt(200 + k, 1, true, F::PSH, 600),
            )
        })
        .collect();
    let mut ev: Vec<Event<'_>> = (1..=6).map(idle).collect();
    ev.extend(xs.iter().map(Event::ExchangeDone));
    let v = run::<ConnectionReset>(&ev, &cx(10));
    assert_eq!(v[0].side, Side::Network, "{}", v[0].summary);
    assert!(
        v[0].explanation.contains(
            "The client reused connections 0.50 s (median; 90th percentile 0.50 s, largest \
             0.50 s, over 3 reuses) after an answer's last byte, against the 1.00 s timer."
        ),
        "{}",
        v[0].explanation
    );
    assert!(
        v[0].fix
            .contains("below 1.00 s (the client now reuses after up to 0.50 s)"),
        "{}",
        v[0].fix
    );
    let note = v[0]
        .evidence
        .iter()
        .find_map(|e| match e {
            Evidence::Probe { probe, note } if probe == IDLE_RESET_EVIDENCE => Some(note),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{:#?}", v[0].evidence));
    assert!(
        note.contains("the client reused a connection 0.50 s"),
        "{note}"
    );
}

/// The probe that carries a client abort's numbers to the zh texts: the bare resets' count,
/// or the stalled ones' count and longest stall; none while every response flowed.
#[test]
fn client_aborts_carry_their_numbers_in_a_probe() {
    let probe = |v: &[Finding]| {
        v[0].evidence.iter().find_map(|e| match e {
            Evidence::Probe { probe, note } => Some((probe.clone(), note.clone())),
            _ => None,
        })
    };
    let bare = reset(ResetKind::ClientAbort, false, 1);
    let acked = with_ack(reset(ResetKind::ClientAbort, false, 2));
    let v = run::<ConnectionReset>(&[bare], &cx(4));
    let (p, note) = probe(&v).expect("a probe");
    assert_eq!(p, CLIENT_HOST_GONE_EVIDENCE);
    assert!(note.starts_with("1 of 1 client resets"), "{note}");
    let v = run::<ConnectionReset>(&[bare, acked], &cx(4));
    let (p, note) = probe(&v).expect("a probe");
    assert_eq!(p, CLIENT_HOST_GONE_EVIDENCE);
    assert!(note.starts_with("1 of 2 client resets"), "{note}");
    assert_eq!(probe(&run::<ConnectionReset>(&[acked], &cx(4))), None);
    // A reset 6.2 s after the response's last byte: the client gave up on a stalled response.
    let stalled = Event::Reset {
        ends: ends(),
        kind: ResetKind::ClientAbort,
        before: Some(pkt(10, 100, true, F::PSH | F::ACK, 100)),
        rst: pkt(11, 6_300, false, F::RST | F::ACK, 0),
        req: None,
        context: Default::default(),
    };
    let v = run::<ConnectionReset>(&[stalled], &cx(4));
    assert_eq!(v[0].side, Side::Network, "{v:?}");
    let (p, note) = probe(&v).expect("a probe");
    assert_eq!(p, RESPONSE_STALLED_EVIDENCE);
    assert!(note.starts_with("1 of 1 client resets"), "{note}");
    assert!(note.ends_with("up to 6.2 s"), "{note}");
    let v = run::<ConnectionReset>(&[stalled, acked], &cx(4));
    let (_, note) = probe(&v).expect("a probe");
    assert!(note.starts_with("1 of 2 client resets"), "{note}");
}
