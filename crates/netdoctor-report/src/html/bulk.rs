//! The bulk-transfer chart (issue 22): per bulk transfer of a capture
//! (`measurements.capture.stats.bulk`, built by the core's `analyze::bulk`), throughput over
//! time (bars, Mbit/s per bin) above the bytes in flight against the window the receiver
//! advertised (largest in flight and smallest window of each bin), as tcptrace's and
//! Wireshark's stream graphs show them. Inline SVG, no script.

use super::charts::{time_ticks, y_axis};
use super::svg::{L, Linear, R, Svg, W, fmt_tick, nice_max};
use crate::i18n::Lang;
use netdoctor_core::analyze::bulk::BulkTransfer;

/// The chart of one transfer; `None` without at least two time bins.
pub(crate) fn chart(t: &BulkTransfer, l: Lang) -> Option<String> {
    let bins = &t.bins;
    if bins.len() < 2 || t.bin_ns <= 0 {
        return None;
    }
    let bin_s = t.bin_ns as f64 / 1e9;
    let end = bins.len() as f64 * bin_s;
    let (h, a_top, a_bot, b_top, b_bot) = (420.0, 28.0, 170.0, 222.0, 364.0);
    let x = Linear {
        d0: 0.0,
        d1: end,
        r0: L,
        r1: W - R,
    };
    let mbit = |b: u64| b as f64 * 8.0 / bin_s / 1e6;
    let rmax = nice_max(bins.iter().map(|b| mbit(b.bytes)).fold(0.0, f64::max));
    let ya = Linear {
        d0: 0.0,
        d1: rmax,
        r0: a_bot,
        r1: a_top,
    };
    let kb = |v: u32| f64::from(v) / 1024.0;
    let kmax = nice_max(
        bins.iter()
            .flat_map(|b| [kb(b.inflight_max), kb(b.window_min)])
            .fold(0.0, f64::max),
    );
    let yb = Linear {
        d0: 0.0,
        d1: kmax,
        r0: b_bot,
        r1: b_top,
    };
    let mut s = Svg::new(W, h, "chart", &l.t("chart-bulk"));
    y_axis(&mut s, &ya, rmax, L, W - R);
    y_axis(&mut s, &yb, kmax, L, W - R);
    s.text(
        14.0,
        a_top - 12.0,
        "start",
        "axis-title",
        &l.t("chart-mbits"),
    );
    s.text(
        14.0,
        b_top - 12.0,
        "start",
        "axis-title",
        &l.t("chart-inflight-window"),
    );
    time_ticks(
        &mut s,
        &x,
        end,
        &[a_bot, b_bot],
        &[
            0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0,
            120.0, 300.0, 600.0,
        ],
        1e-12,
    );
    let mut inflight = Vec::with_capacity(bins.len());
    let mut window = Vec::with_capacity(bins.len());
    for (k, b) in bins.iter().enumerate() {
        let t0 = k as f64 * bin_s;
        let (x0, x1) = (x.at(t0), x.at(t0 + bin_s));
        let tip = format!(
            "{}–{} s: {:.1} Mbit/s, in flight up to {:.1} KB, window {:.1} KB",
            fmt_tick(t0),
            fmt_tick(t0 + bin_s),
            mbit(b.bytes),
            kb(b.inflight_max),
            kb(b.window_min)
        );
        let py = ya.at(mbit(b.bytes));
        s.rect(
            x0 + 0.5,
            py,
            (x1 - x0 - 1.0).max(0.5),
            a_bot - py,
            "bar",
            Some(&tip),
        );
        let xm = (x0 + x1) / 2.0;
        if b.bytes > 0 {
            inflight.push((xm, yb.at(kb(b.inflight_max))));
        }
        if b.window_min > 0 {
            window.push((xm, yb.at(kb(b.window_min))));
        }
    }
    s.line(L, a_bot, W - R, a_bot, "axis");
    s.line(L, b_bot, W - R, b_bot, "axis");
    s.polyline(&window, "line p99");
    s.polyline(&inflight, "line p50");
    Some(s.finish())
}

/// The section's HTML: one figure per bulk transfer, with its figures as the caption.
pub(crate) fn figures(transfers: &[BulkTransfer], l: Lang) -> String {
    let mut h = String::new();
    for t in transfers {
        let Some(svg) = chart(t, l) else {
            continue;
        };
        let who = if t.sender_is_server {
            l.t("html-bulk-server-sends")
        } else {
            l.t("html-bulk-client-sends")
        };
        h.push_str(&format!(
            r#"<figure><figcaption>{} · {} · {:.1} MB · {:.1} Mbit/s · {} {}</figcaption>{svg}<ul class="legend"><li class="p50">{}</li><li class="p99">{}</li></ul></figure>"#,
            super::esc(&t.connection),
            super::esc(&who),
            t.bytes as f64 / 1048576.0,
            t.bits_per_second() / 1e6,
            t.retransmitted,
            super::esc(&l.t("html-bulk-retransmitted")),
            super::esc(&l.t("html-bulk-inflight")),
            super::esc(&l.t("html-bulk-window")),
        ));
    }
    h
}
