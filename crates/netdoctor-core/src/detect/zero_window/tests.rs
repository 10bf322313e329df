//! Tests of the zero_window detector (split from zero_window.rs at 700 lines).

use super::*;
use crate::decode::TcpFlags as F;
use crate::detect::testkit::*;
use crate::event::{ExchangeDone, Pkt};

#[test]
fn zero_window_periods_name_the_reader() {
    let z = ZeroPeriod::new(pkt(5, 10, false, F::ACK, 0), pkt(9, 310, false, F::ACK, 0));
    let mut x = ExchangeDone::new(
        ends(),
        pkt(1, 0, false, F::PSH, 78),
        pkt(10, 320, true, F::ACK, 100),
    );
    x.charge(FindingId::ZeroWindow, false, 300 * MS);
    let ev = [
        Event::ZeroWindow {
            ends: ends(),
            reader_is_server: false,
            period: z,
            near_zero: None,
        },
        Event::ExchangeDone(&x),
    ];
    let v = run::<ZeroWindow>(&ev, &cx(1));
    assert_eq!(v.len(), 1);
    assert_eq!(
        (v[0].side, v[0].severity),
        (Side::Client, Severity::Critical)
    );
    assert!(v[0].summary.contains("stopped reading"), "{}", v[0].summary);
    assert!((299.0..301.0).contains(&v[0].impact.added_latency_ms.unwrap()));
}

#[test]
fn a_full_window_stall_is_flow_control_of_the_reader() {
    let stalls: Vec<Event<'_>> = (0..5u64)
        .map(|k| {
            let t = k as i64 * 100;
            Event::Stall {
                ends: ends(),
                stall: Stall {
                    prev: pkt(k * 3 + 1, t, true, F::PSH, 4096),
                    ack: pkt(k * 3 + 2, t + 41, false, F::ACK, 0),
                    held: pkt(k * 3 + 3, t + 41, true, F::PSH, 2048),
                    kind: StallKind::WindowLimited,
                },
            }
        })
        .collect();
    let v = run::<ZeroWindow>(&stalls, &cx(5));
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].id, FindingId::ZeroWindow);
    assert_eq!(v[0].side, Side::Client, "the client's window was full");
    assert!(
        v[0].summary.contains("window was full 5 times"),
        "{}",
        v[0].summary
    );
    assert!(v[0].explanation.contains("TCP_NODELAY does not change it"));
    // Nagle stalls are not flow control.
    let nagle: Vec<Event<'_>> = stalls
        .iter()
        .map(|e| match e {
            Event::Stall { ends, stall } => Event::Stall {
                ends: *ends,
                stall: Stall {
                    kind: StallKind::Nagle,
                    ..*stall
                },
            },
            other => *other,
        })
        .collect();
    assert!(run::<ZeroWindow>(&nagle, &cx(5)).is_empty());
}

fn period(k: u64, start_ms: i64, dur_us: i64) -> Event<'static> {
    Event::ZeroWindow {
        ends: ends(),
        reader_is_server: false,
        near_zero: None,
        period: ZeroPeriod::new(
            pkt(k * 2, start_ms, false, F::ACK, 0),
            Pkt {
                ts_ns: T0 + start_ms * MS + dur_us * 1000,
                ..pkt(k * 2 + 1, 0, false, F::ACK, 0)
            },
        ),
    }
}

#[test]
fn one_long_stall_is_not_hidden_by_a_short_one() {
    // 5.9 s, then 0.2 ms: the median would be 0 ms and the run healthy.
    let ev = [period(1, 0, 5_869_700), period(2, 6000, 200)];
    let v = run::<ZeroWindow>(&ev, &cx(10));
    assert_eq!(v[0].severity, Severity::Critical, "{}", v[0].summary);
    assert!(
        v[0].summary.contains("longest 5869.7 ms"),
        "{}",
        v[0].summary
    );
    assert!(
        v[0].summary.contains("5869.9 ms in total"),
        "{}",
        v[0].summary
    );
    assert!(v[0].summary.contains("stopped reading"), "{}", v[0].summary);
}

#[test]
fn a_near_zero_window_that_held_a_turn_says_how_long() {
    // No exchange completed: the impact is the time the connection was held.
    let ev: Vec<Event<'_>> = (0..4u64)
        .map(|k| {
            let Event::ZeroWindow { period: mut z, .. } = period(k, k as i64 * 2000, 1_200_000)
            else {
                unreachable!()
            };
            z.mss = Some(1460);
            Event::ZeroWindow {
                ends: ends(),
                reader_is_server: true,
                period: z,
                near_zero: Some(80 + k as u32 * 100),
            }
        })
        .collect();
    let v = run::<ZeroWindow>(&ev, &cx(1));
    assert_eq!(
        (v[0].side, v[0].severity),
        (Side::Server, Severity::Critical)
    );
    assert!(
        v[0].summary
            .contains("near-zero (down to 80 bytes, less than one MSS of 1460)"),
        "{}",
        v[0].summary
    );
    assert!(
        v[0].summary.ends_with("holding 1 connection 4800.0 ms"),
        "{}",
        v[0].summary
    );
    assert_eq!(v[0].impact.added_latency_ms, Some(4800.0));
    assert_eq!(v[0].impact.affected_fraction, None);
    // Each example's note gives the window it fell to, never "window 0" (a loopback
    // capture's 9216-byte window under a 65495-byte MSS was told "advertised window 0").
    let notes: Vec<&str> = v[0]
        .evidence
        .iter()
        .filter_map(|e| match e {
            Evidence::Packets { note, .. } => Some(note.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        notes
            .first()
            .is_some_and(|n| n.contains("fell to 80 bytes")),
        "{notes:?}"
    );
    assert!(notes.iter().all(|n| !n.contains("window 0")), "{notes:?}");
}

#[test]
fn a_sub_millisecond_zero_window_is_info() {
    let ev: Vec<Event<'_>> = (0..6).map(|k| period(k, k as i64 * 10, 150)).collect();
    let v = run::<ZeroWindow>(&ev, &cx(10));
    assert_eq!(v[0].severity, Severity::Info, "{}", v[0].summary);
    // Many short ones that add up to a few ms: still info; to 10 ms or more: a warning.
    let ev: Vec<Event<'_>> = (0..6).map(|k| period(k, k as i64 * 10, 800)).collect();
    assert_eq!(run::<ZeroWindow>(&ev, &cx(10))[0].severity, Severity::Info);
    let ev: Vec<Event<'_>> = (0..6).map(|k| period(k, k as i64 * 10, 3000)).collect();
    assert_eq!(
        run::<ZeroWindow>(&ev, &cx(10))[0].severity,
        Severity::Warning
    );
}

#[test]
fn a_slow_reader_is_not_a_stopped_one() {
    let ev: Vec<Event<'_>> = (0..8).map(|k| period(k, k as i64 * 100, 40_000)).collect();
    let v = run::<ZeroWindow>(&ev, &cx(10));
    assert!(v[0].summary.contains("reads slowly"), "{}", v[0].summary);
    assert!(v[0].explanation.contains("not a stopped one"));
    // Reopening by less than one MSS: a tiny buffer, tiny segments.
    let tiny: Vec<Event<'_>> = (0..4u64)
        .map(|k| {
            let Event::ZeroWindow { period: mut z, .. } = period(k, k as i64 * 100, 40_000) else {
                unreachable!()
            };
            z.reopen_bytes = Some(1);
            z.mss = Some(1460);
            Event::ZeroWindow {
                ends: ends(),
                reader_is_server: true,
                period: z,
                near_zero: None,
            }
        })
        .collect();
    let v = run::<ZeroWindow>(&tiny, &cx(10));
    assert_eq!(v[0].side, Side::Server);
    assert!(
        v[0].summary.contains("less than one MSS"),
        "{}",
        v[0].summary
    );
    assert!(
        v[0].explanation.contains("silly window"),
        "{}",
        v[0].explanation
    );
}
