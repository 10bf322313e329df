use super::*;
use crate::decode::TcpFlags as F;
use crate::detect::testkit::*;
use crate::event::ConnDone;

fn conn(repeat_syn: bool) -> ConnDone {
    let mut syn = SynState::default();
    syn.on_syn(pkt(1, 0, false, F::SYN, 0));
    let mut t = 0;
    if repeat_syn {
        t = 1000;
        syn.on_syn(pkt(2, t, false, F::SYN, 0));
    }
    syn.on_synack(pkt(3, t, true, F::SYN | F::ACK, 0));
    syn.done = Some(pkt(4, t, false, F::ACK, 0));
    ConnDone {
        ends: ends(),
        syn,
        first_req: None,
        exchanges: 0,
        first_close: None,
        idle_before_close_ns: None,
        asked: Default::default(),
        tls: Default::default(),
        crossed_fin: false,
    }
}

#[test]
fn a_repeated_syn_delays_setup_by_a_second() {
    let cs = [conn(true), conn(false), conn(false)];
    let ev: Vec<Event<'_>> = cs.iter().map(Event::ConnDone).collect();
    let v = run::<SynRetransmit>(&ev, &cx(0));
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].severity, Severity::Critical);
    assert!(
        v[0].summary.contains("on 1 of 3 connections"),
        "{}",
        v[0].summary
    );
    assert!((999.0..1001.0).contains(&v[0].impact.added_latency_ms.unwrap()));
    let clean = [conn(false)];
    let ev: Vec<Event<'_>> = clean.iter().map(Event::ConnDone).collect();
    assert!(run::<SynRetransmit>(&ev, &cx(0)).is_empty());
}

#[test]
fn requests_and_connections_are_told_apart() {
    // Keep-alive: 2 of 3 connections repeated a SYN, but they carried 3000 requests.
    let mut cs = [conn(true), conn(true), conn(false)];
    for c in cs.iter_mut() {
        c.exchanges = 1000;
    }
    let ev: Vec<Event<'_>> = cs.iter().map(Event::ConnDone).collect();
    let v = run::<SynRetransmit>(&ev, &cx(3000));
    assert!(
        v[0].summary
            .contains("on 2 of 3 connections, the first request of each: 2 of 3000 requests"),
        "{}",
        v[0].summary
    );
    let share = v[0].impact.affected_fraction.unwrap();
    assert!((share - 2.0 / 3000.0).abs() < 1e-9, "{share}");
    // One request per connection: the shares are the same, said once.
    for c in cs.iter_mut() {
        c.exchanges = 1;
    }
    let ev: Vec<Event<'_>> = cs.iter().map(Event::ConnDone).collect();
    let v = run::<SynRetransmit>(&ev, &cx(3));
    assert!(!v[0].summary.contains("requests"), "{}", v[0].summary);
    assert!((v[0].impact.affected_fraction.unwrap() - 2.0 / 3.0).abs() < 1e-9);
}

#[test]
fn listen_drops_make_it_the_hosts_listen_queue() {
    let cs = [conn(true), conn(true), conn(false)];
    let obs = Observation::Counters(vec![CounterDelta {
        name: "TcpExt.ListenDrops".into(),
        before: 0,
        after: 2,
    }]);
    let mut ev: Vec<Event<'_>> = cs.iter().map(Event::ConnDone).collect();
    ev.push(Event::Observed(&obs));
    let v = run::<SynRetransmit>(&ev, &cx(3));
    assert_eq!(v[0].side, Side::Host);
    assert!(v[0].summary.contains("ListenDrops +2"), "{}", v[0].summary);
    assert!(
        v[0].evidence
            .iter()
            .any(|e| matches!(e, Evidence::Counter { .. }))
    );
    // Counters that did not grow change nothing.
    let flat = Observation::Counters(vec![CounterDelta {
        name: "TcpExt.ListenDrops".into(),
        before: 2,
        after: 2,
    }]);
    ev.pop();
    ev.push(Event::Observed(&flat));
    assert_eq!(run::<SynRetransmit>(&ev, &cx(3))[0].side, Side::Server);
}

/// SYN/ACKs repeated to a client that never answered (a scan, spoofed SYNs): an info on
/// the client's side with no added latency. The look-alike, a client whose ACK the server
/// dropped (it answered, the server repeated anyway: a full accept queue), stays the
/// server's delayed setup.
#[test]
fn synacks_to_a_silent_client_are_not_a_slow_setup() {
    let silent = || {
        let mut syn = SynState::default();
        syn.on_syn(pkt(1, 0, false, F::SYN, 0));
        syn.on_synack(pkt(2, 1, true, F::SYN | F::ACK, 0));
        syn.on_synack(pkt(3, 1001, true, F::SYN | F::ACK, 0));
        ConnDone {
            ends: ends(),
            syn,
            first_req: None,
            exchanges: 0,
            first_close: None,
            idle_before_close_ns: None,
            asked: Default::default(),
            tls: Default::default(),
            crossed_fin: false,
        }
    };
    let cs = [silent(), silent(), conn(false)];
    let ev: Vec<Event<'_>> = cs.iter().map(Event::ConnDone).collect();
    let v = run::<SynRetransmit>(&ev, &cx(0));
    assert_eq!(v.len(), 1);
    assert_eq!((v[0].severity, v[0].side), (Severity::Info, Side::Client));
    assert_eq!(v[0].impact.added_latency_ms, None);
    assert!(
        v[0].summary.starts_with(
            "The server repeated its SYN/ACK on 2 of 3 connections whose client never"
        ),
        "{}",
        v[0].summary
    );
    // The client answered the first SYN/ACK; the server repeated it (the ACK was dropped)
    // and the handshake never completed for the server: the server's side, critical.
    let mut answered = silent();
    answered.syn = SynState::default();
    answered.syn.on_syn(pkt(1, 0, false, F::SYN, 0));
    answered.syn.on_synack(pkt(2, 1, true, F::SYN | F::ACK, 0));
    answered.syn.done = Some(pkt(3, 2, false, F::ACK, 0));
    answered.syn.client_answered = true;
    answered
        .syn
        .on_synack(pkt(4, 1001, true, F::SYN | F::ACK, 0));
    let cs = [answered, silent(), conn(false)];
    let ev: Vec<Event<'_>> = cs.iter().map(Event::ConnDone).collect();
    let v = run::<SynRetransmit>(&ev, &cx(0));
    assert_eq!(v.len(), 1);
    assert_eq!(
        (v[0].severity, v[0].side),
        (Severity::Critical, Side::Server)
    );
    assert!(
        v[0].summary.contains("on 1 of 3 connections"),
        "{}",
        v[0].summary
    );
    assert!(
        v[0].explanation.contains("Not counted: 1 more"),
        "{}",
        v[0].explanation
    );
}

/// A preconnected, idle connection on a TCP_DEFER_ACCEPT server (ppa-sessionhijacking):
/// the client ACKs the SYN/ACK at once and sends nothing; the server repeats its SYN/ACK
/// 31 s later and the client answers it. Nobody waited: an info, no added latency. The
/// look-alikes stay the server's delayed setup: a full accept queue that dropped the ACK
/// and the request behind it (client data before the repeat), and a server that speaks
/// first (its banner came before any client data, after the repeat).
#[test]
fn a_synack_repeated_to_an_idle_open_connection_delays_nobody() {
    let handshake = |client_data: Option<i64>, server_data: Option<i64>| {
        let mut syn = SynState::default();
        syn.on_syn(pkt(1, 0, false, F::SYN, 0));
        syn.on_synack(pkt(2, 1, true, F::SYN | F::ACK, 0));
        syn.on_client_ack(pkt(3, 18, false, F::ACK, 0));
        let mut frame = 4;
        let mut data = |syn: &mut SynState, at: Option<i64>, from_server: bool| {
            if let Some(t) = at {
                frame += 1;
                syn.on_data(pkt(frame, t, from_server, F::ACK | F::PSH, 100));
            }
        };
        // Data sent before the repeat goes in first.
        data(&mut syn, client_data.filter(|t| *t < 31_200), false);
        syn.on_synack(pkt(20, 31_200, true, F::SYN | F::ACK, 0));
        syn.on_client_ack(pkt(21, 31_388, false, F::ACK, 0));
        data(&mut syn, server_data, true);
        data(&mut syn, client_data.filter(|t| *t >= 31_200), false);
        ConnDone {
            ends: ends(),
            syn,
            first_req: None,
            exchanges: 0,
            first_close: None,
            idle_before_close_ns: None,
            asked: Default::default(),
            tls: Default::default(),
            crossed_fin: false,
        }
    };
    let idle = handshake(None, None);
    assert!(idle.syn.repeat_after_idle_open());
    let cs = [handshake(None, None), idle, conn(false)];
    let ev: Vec<Event<'_>> = cs.iter().map(Event::ConnDone).collect();
    let v = run::<SynRetransmit>(&ev, &cx(0));
    assert_eq!(v.len(), 1);
    assert_eq!((v[0].severity, v[0].side), (Severity::Info, Side::Client));
    assert_eq!(v[0].impact.added_latency_ms, None);
    assert!(
        v[0].summary.starts_with("The server repeated its SYN/ACK on 2 of 3 connections after their client had answered it"),
        "{}",
        v[0].summary
    );
    let Evidence::Packets { note, packets, .. } = &v[0].evidence[0] else {
        panic!("{:?}", v[0].evidence);
    };
    assert!(
        note.contains("the client ACKed 18 ms after its SYN") && !note.contains("completed"),
        "{note}"
    );
    assert_eq!(packets.len(), 5, "SYN, SYN/ACK, ACK, SYN/ACK, ACK");
    // Used later: the client's first data long after the repeat; still nobody waited.
    assert!(
        handshake(Some(40_000), Some(40_001))
            .syn
            .repeat_after_idle_open()
    );
    // Look-alikes: the request sent before the repeat (a full accept queue dropped it),
    // and a server that speaks first after the repeat (the client waited for it).
    for (c, s) in [
        (Some(20), Some(31_400)),
        (None, Some(31_400)),
        (Some(31_500), Some(31_400)),
    ] {
        let delayed = handshake(c, s);
        assert!(!delayed.syn.repeat_after_idle_open(), "{c:?} {s:?}");
        let cs = [delayed, conn(false)];
        let ev: Vec<Event<'_>> = cs.iter().map(Event::ConnDone).collect();
        let v = run::<SynRetransmit>(&ev, &cx(0));
        assert_eq!(
            (v[0].severity, v[0].side),
            (Severity::Critical, Side::Server),
            "{c:?} {s:?}"
        );
    }
    // Both kinds of quiet repeats with one delayed setup: the delayed one is the finding,
    // the others are named as not counted.
    let cs = [
        handshake(None, None),
        handshake(Some(20), None),
        conn(false),
    ];
    let ev: Vec<Event<'_>> = cs.iter().map(Event::ConnDone).collect();
    let v = run::<SynRetransmit>(&ev, &cx(0));
    assert!(
        v[0].summary.contains("on 1 of 3 connections"),
        "{}",
        v[0].summary
    );
    assert!(
        v[0].explanation
            .contains("Not counted either: on 1 connections"),
        "{}",
        v[0].explanation
    );
}
