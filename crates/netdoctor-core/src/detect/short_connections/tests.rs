use super::*;
use crate::decode::TcpFlags as F;
use crate::detect::testkit::*;
use crate::event::{ConnDone, SynState};

fn conns(n: u64, exchanges: u32, setup_ms: i64) -> Vec<ConnDone> {
    closed_by(n, exchanges, setup_ms, false)
}

fn closed_by(n: u64, exchanges: u32, setup_ms: i64, server: bool) -> Vec<ConnDone> {
    idle_closed(n, exchanges, setup_ms, server, |_| 1)
}

/// Connections closed first by the server (or the client) after `idle_ms(k)` of silence.
fn idle_closed(
    n: u64,
    exchanges: u32,
    setup_ms: i64,
    server: bool,
    idle_ms: impl Fn(u64) -> i64,
) -> Vec<ConnDone> {
    (0..n)
        .map(|k| {
            let t = k as i64 * 100;
            let mut syn = SynState::default();
            syn.on_syn(pkt(k * 10 + 1, t, false, F::SYN, 0));
            ConnDone {
                ends: ends(),
                syn,
                first_req: Some(pkt(k * 10 + 4, t + setup_ms, false, F::PSH, 78)),
                exchanges,
                first_close: Some(pkt(k * 10 + 7, t + setup_ms + 1, server, F::FIN, 0)),
                idle_before_close_ns: Some(idle_ms(k) * 1_000_000),
                asked: Default::default(),
                tls: Default::default(),
                crossed_fin: false,
            }
        })
        .collect()
}

#[test]
fn one_request_per_connection_is_found() {
    let cs = conns(MIN_CONNECTIONS, 1, 60);
    let ev: Vec<Event<'_>> = cs.iter().map(Event::ConnDone).collect();
    let v = run::<ShortConnections>(
        &ev,
        &Context {
            latency_p50_ms: 10.0,
            ..cx(5)
        },
    );
    assert_eq!(v.len(), 1);
    assert_eq!(
        (v[0].severity, v[0].side),
        (Severity::Critical, Side::Client)
    );
    assert_eq!(v[0].impact.affected_fraction, Some(1.0));
}

#[test]
fn keep_alive_or_few_connections_say_nothing() {
    let many = conns(10, 50, 1);
    let ev: Vec<Event<'_>> = many.iter().map(Event::ConnDone).collect();
    assert!(run::<ShortConnections>(&ev, &cx(500)).is_empty());
    let few = conns(MIN_CONNECTIONS - 1, 1, 1);
    let ev: Vec<Event<'_>> = few.iter().map(Event::ConnDone).collect();
    assert!(run::<ShortConnections>(&ev, &cx(4)).is_empty());
}

#[test]
fn a_server_that_closes_first_is_side_server_with_a_server_fix() {
    let cs = closed_by(10, 1, 60, true);
    let ev: Vec<Event<'_>> = cs.iter().map(Event::ConnDone).collect();
    let cx = Context {
        latency_p50_ms: 10.0,
        ..cx(10)
    };
    let v = run::<ShortConnections>(&ev, &cx);
    assert_eq!(v[0].side, Side::Server);
    assert!(
        v[0].summary.contains("the server closed 10 of them first"),
        "{}",
        v[0].summary
    );
    assert!(v[0].fix.contains("keepalive_requests"), "{}", v[0].fix);
    assert!(!v[0].fix.contains("do not send"), "{}", v[0].fix);
}

#[test]
fn the_users_own_choice_is_not_blamed() {
    let cs = closed_by(10, 1, 60, false);
    let cfg = Observation::RunConfig {
        keepalive: false,
        timeout_ms: 0,
        connections: 10,
    };
    let mut ev: Vec<Event<'_>> = vec![Event::Observed(&cfg)];
    ev.extend(cs.iter().map(Event::ConnDone));
    let cx = Context {
        latency_p50_ms: 10.0,
        ..cx(10)
    };
    let v = run::<ShortConnections>(&ev, &cx);
    assert_eq!((v[0].severity, v[0].side), (Severity::Info, Side::Client));
    assert!(v[0].summary.contains("as requested"), "{}", v[0].summary);
    assert!(v[0].fix.starts_with("Nothing to fix"), "{}", v[0].fix);
}

fn probe(server_closed: u32, reused: u32, rps: f64, p50: f64) -> Observation {
    Observation::KeepAlive(KeepAliveCost {
        requests: 200,
        connections: 200 - reused,
        server_closed,
        reused,
        first_p50_ms: 0.2 * p50,
        request_p50_ms: 0.2,
        requests_per_s: 4000.0,
        rps_ratio: rps,
        p50_ratio: p50,
        lower_bound: reused == 0,
    })
}

/// Connections the server closed (as nginx does after a `Connection: close` request too),
/// at a LAN's setup cost (the guess alone says info), with a probe's measurement.
fn with_probe(obs: &Observation) -> Vec<Finding> {
    let cs = closed_by(10, 1, 0, true);
    let mut ev: Vec<Event<'_>> = vec![Event::Observed(obs)];
    ev.extend(cs.iter().map(Event::ConnDone));
    run::<ShortConnections>(
        &ev,
        &Context {
            latency_p50_ms: 10.0,
            ..cx(10)
        },
    )
}

#[test]
fn the_measured_cost_sets_the_severity_and_the_server_that_closed_is_blamed() {
    let v = with_probe(&probe(200, 0, 2.6, 1.9));
    assert_eq!(
        (v[0].severity, v[0].side),
        (Severity::Warning, Side::Server)
    );
    assert!(
        v[0].summary.contains("at least 2.6x the requests/s"),
        "{}",
        v[0].summary
    );
    assert!(
        v[0].explanation.contains("the real cost is higher"),
        "{}",
        v[0].explanation
    );
    assert!(v[0].fix.contains("keepalive_timeout"), "{}", v[0].fix);
    let v = with_probe(&probe(200, 0, 3.5, 2.0));
    assert_eq!(v[0].severity, Severity::Critical);
    // Refused keep-alive at a small timed cost (a lower bound): still a warning.
    let v = with_probe(&probe(200, 0, 1.1, 1.05));
    assert_eq!(v[0].severity, Severity::Warning);
    // Kept connections at a small measured cost: info.
    let v = with_probe(&probe(0, 190, 1.1, 1.05));
    assert_eq!((v[0].severity, v[0].side), (Severity::Info, Side::Client));
}

#[test]
fn a_server_that_kept_the_probes_connections_is_not_blamed() {
    // The packets say the server sent the first FIN, but it keeps connections when asked:
    // the load's requests asked it to close.
    let v = with_probe(&probe(0, 190, 2.6, 1.9));
    assert_eq!(v[0].side, Side::Client, "{}", v[0].summary);
    assert!(
        v[0].summary.contains("kept the keep-alive probe"),
        "{}",
        v[0].summary
    );
    assert!(v[0].fix.contains("do not send"), "{}", v[0].fix);
    assert!(
        v[0].summary.contains("1.9x lower median"),
        "{}",
        v[0].summary
    );
}

#[test]
fn the_probe_alone_reports_without_a_capture() {
    let obs = probe(200, 0, 2.0, 1.5);
    let v = run::<ShortConnections>(&[Event::Observed(&obs)], &cx(0));
    assert_eq!(
        (v[0].severity, v[0].side),
        (Severity::Warning, Side::Server)
    );
    assert!(
        v[0].evidence
            .iter()
            .any(|e| matches!(e, Evidence::Probe { .. }))
    );
}

/// Server closes after a steady silence, with a probe that kept its connections (`reused`).
fn idle_story(idle_ms: impl Fn(u64) -> i64, obs: Option<&Observation>) -> Vec<Finding> {
    let cs = idle_closed(10, 1, 0, true, idle_ms);
    let mut ev: Vec<Event<'_>> = obs.map(Event::Observed).into_iter().collect();
    ev.extend(cs.iter().map(Event::ConnDone));
    run::<ShortConnections>(
        &ev,
        &Context {
            latency_p50_ms: 10.0,
            ..cx(10)
        },
    )
}

#[test]
fn a_steady_idle_before_the_servers_fin_is_its_idle_timeout_even_when_a_probe_kept_connections() {
    // The closed-loop probe never idles: the server keeps its connections, which used to
    // blame the client.
    let obs = probe(0, 190, 2.6, 1.9);
    let v = idle_story(|k| 1000 + (k as i64 % 3), Some(&obs));
    assert_eq!(v[0].side, Side::Server, "{}", v[0].summary);
    assert!(
        v[0].summary.contains("after 1.00 s idle"),
        "{}",
        v[0].summary
    );
    assert!(
        !v[0].summary.contains("kept the keep-alive probe"),
        "{}",
        v[0].summary
    );
    assert!(v[0].fix.contains("keepalive_timeout"), "{}", v[0].fix);
    assert!(v[0].fix.contains("below 1.00 s"), "{}", v[0].fix);
    assert!(
        v[0].explanation.contains("never leaves a connection idle"),
        "{}",
        v[0].explanation
    );
    assert!(
        v[0].evidence
            .iter()
            .any(|e| matches!(e, Evidence::Probe { probe, .. } if probe == IDLE_EVIDENCE))
    );
}

#[test]
fn a_scattered_or_short_silence_before_the_servers_fin_is_not_a_timeout() {
    // Closes right after the answer (`Connection: close`): the old story.
    let v = idle_story(|_| 2, None);
    assert!(!v[0].summary.contains("idle"), "{}", v[0].summary);
    assert!(v[0].fix.starts_with("Let the server keep"), "{}", v[0].fix);
    // Long silences that do not cluster: no single timer to name.
    let v = idle_story(|k| 300 + 400 * k as i64, None);
    assert!(!v[0].summary.contains("idle"), "{}", v[0].summary);
    // A probe whose every connection the server closed after one answer: it refuses
    // keep-alive, whatever the silences.
    let obs = probe(200, 0, 2.6, 1.9);
    let v = idle_story(|_| 1000, Some(&obs));
    assert!(!v[0].summary.contains("idle"), "{}", v[0].summary);
}

#[test]
fn a_client_that_closes_after_a_steady_idle_is_not_the_servers_timeout() {
    let cs = idle_closed(10, 1, 0, false, |_| 1000);
    let ev: Vec<Event<'_>> = cs.iter().map(Event::ConnDone).collect();
    let v = run::<ShortConnections>(&ev, &cx(10));
    assert_eq!(v[0].side, Side::Client, "{}", v[0].summary);
    assert!(!v[0].summary.contains("idle"), "{}", v[0].summary);
}
