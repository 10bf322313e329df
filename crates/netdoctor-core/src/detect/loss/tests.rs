//! Unit tests of the loss detector (apart from loss.rs to keep the detector in one reading).

use super::*;
use crate::decode::TcpFlags as F;
use crate::detect::testkit::*;
use crate::event::ExchangeDone;

fn episode(k: u64, silence_ms: i64, spurious: bool) -> Episode {
    let t = k as i64 * 1000;
    let first = pkt(k * 10 + 5, t + silence_ms, true, F::ACK, 1448);
    Episode::synthetic(first, first, (t) * MS + T0, 1, u32::from(spurious))
}

#[test]
fn fast_and_timeout_episodes_are_two_findings() {
    let eps = [
        episode(0, 2, false),
        episode(1, 2, false),
        episode(2, 210, false),
    ];
    let mut ev: Vec<Event<'_>> = eps
        .iter()
        .map(|e| Event::LossEpisode {
            ends: ends(),
            episode: *e,
        })
        .collect();
    let mut x = ExchangeDone::new(
        ends(),
        pkt(1, 0, false, F::PSH, 78),
        pkt(2, 1, true, F::PSH, 100),
    );
    x.charge(FindingId::RetransmissionTimeout, true, 210 * MS);
    ev.push(Event::ExchangeDone(&x));
    let v = run::<Loss>(&ev, &cx(10));
    let ids: Vec<FindingId> = v.iter().map(|f| f.id).collect();
    assert_eq!(
        ids,
        [
            FindingId::PacketLossRetransmission,
            FindingId::RetransmissionTimeout
        ]
    );
    assert!(v.iter().all(|f| f.side == Side::Network));
    let rto = &v[1];
    assert_eq!(rto.severity, Severity::Critical, "{rto:?}");
    assert!(rto.summary.contains("210 ms"), "{}", rto.summary);
}

#[test]
fn resends_into_a_closed_window_are_not_loss() {
    let mut e = episode(0, 5500, false);
    e.window_closed = true;
    let ev = [Event::LossEpisode {
        ends: ends(),
        episode: e,
    }];
    assert!(run::<Loss>(&ev, &cx(10)).is_empty());
}

#[test]
fn spurious_episodes_are_not_loss() {
    let e = episode(0, 5, true);
    let ev = [Event::LossEpisode {
        ends: ends(),
        episode: e,
    }];
    assert!(run::<Loss>(&ev, &cx(10)).is_empty());
}

fn setup_timeouts(n: u64) -> Vec<Event<'static>> {
    (0..n)
        .map(|k| {
            let t = k as i64 * 1000;
            let first = pkt(k * 10 + 5, t + 210, false, F::PSH, 78);
            let mut ep = Episode::synthetic(first, first, t * MS + T0, 1, 0);
            ep.setup = true;
            Event::LossEpisode {
                ends: ends(),
                episode: ep,
            }
        })
        .collect()
}

#[test]
fn setup_timeouts_with_listen_drops_are_the_hosts_listen_queue() {
    let obs = Observation::Counters(vec![
        CounterDelta {
            name: "TcpExt.ListenOverflows".into(),
            before: 10,
            after: 110,
        },
        CounterDelta {
            name: "TcpExt.TCPTimeouts".into(),
            before: 0,
            after: 5,
        },
    ]);
    let mut ev = setup_timeouts(4);
    ev.push(Event::Observed(&obs));
    let v = run::<Loss>(&ev, &cx(10));
    assert_eq!(v.len(), 1);
    assert_eq!(
        (v[0].id, v[0].side),
        (FindingId::RetransmissionTimeout, Side::Host)
    );
    assert!(
        v[0].summary.contains("listen queue overflowed"),
        "{}",
        v[0].summary
    );
    assert!(
        v[0].summary.contains("ListenOverflows +100"),
        "{}",
        v[0].summary
    );
    assert!(!v[0].fix.contains("ethtool"), "{}", v[0].fix);
    assert!(
        v[0].evidence.iter().any(
            |e| matches!(e, Evidence::Counter { name, .. } if name == "TcpExt.ListenOverflows")
        )
    );
    assert!(v[0].confidence > 0.9);
}

#[test]
fn setup_timeouts_without_counters_are_not_called_network_with_certainty() {
    // 10.0.0.x: not one host; no counters: the path or the queue, at half confidence.
    let v = run::<Loss>(&setup_timeouts(4), &cx(10));
    assert_eq!(v[0].side, Side::Network);
    assert!(v[0].confidence <= 0.5);
    assert!(
        v[0].summary.contains("a full listen queue or a lossy path"),
        "{}",
        v[0].summary
    );
    // On loopback there is no path: the host.
    let local: Vec<Event<'_>> = setup_timeouts(4)
        .into_iter()
        .map(|e| match e {
            Event::LossEpisode { episode, .. } => Event::LossEpisode {
                ends: Ends {
                    client: "127.0.0.1:40000".parse().unwrap(),
                    server: "127.0.0.1:80".parse().unwrap(),
                },
                episode,
            },
            e => e,
        })
        .collect();
    let v = run::<Loss>(&local, &cx(10));
    assert_eq!(v[0].side, Side::Host);
    assert!(
        v[0].explanation.contains("one host"),
        "{}",
        v[0].explanation
    );
}

#[test]
fn one_long_stall_among_small_ones_sets_the_severity() {
    // Nine 0.2 ms fast recoveries and one 1.5 s stall: the median says 0.2 ms.
    let eps: Vec<Episode> = (0..10).map(|k| episode(k, 2, false)).collect();
    let mut ev: Vec<Event<'_>> = eps
        .iter()
        .map(|e| Event::LossEpisode {
            ends: ends(),
            episode: *e,
        })
        .collect();
    let xs: Vec<ExchangeDone> = (0..10)
        .map(|k| {
            let mut x = ExchangeDone::new(
                ends(),
                pkt(1, 0, false, F::PSH, 78),
                pkt(2, 1, true, F::PSH, 100),
            );
            let stall = if k == 0 { 1500 * MS } else { MS / 5 };
            x.charge(FindingId::PacketLossRetransmission, true, stall);
            x
        })
        .collect();
    ev.extend(xs.iter().map(Event::ExchangeDone));
    let v = run::<Loss>(&ev, &cx(1000));
    assert_eq!(v[0].severity, Severity::Critical, "{}", v[0].summary);
    assert!(v[0].summary.contains("worst 1500"), "{}", v[0].summary);
}
