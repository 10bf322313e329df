//! The charts of the HTML report, each an inline SVG drawn from the report's own numbers: the
//! latency histogram (log-scale buckets), the percentile curve, requests/s and latency over the
//! run, and the per-request breakdown as a stacked bar. Each returns `None` when the report
//! does not hold its data (the page then says "not measured"), never a chart of made-up data.

use super::esc;
use super::svg::{L, R, W, nines};
use super::svg::{Linear, Log, Svg, fmt_ms, fmt_tick, linear_ticks, log_ticks, nice_max};
use crate::i18n::Lang;
use netdoctor_load::LoadResult;
use std::fmt::Write as _;

/// Horizontal grid lines and value labels of a linear y axis.
pub(crate) fn y_axis(s: &mut Svg, y: &Linear, max: f64, x0: f64, x1: f64) {
    for t in linear_ticks(max) {
        let py = y.at(t);
        s.line(x0, py, x1, py, "grid");
        s.text(x0 - 6.0, py + 4.0, "end", "tick", &fmt_tick(t));
    }
}

/// Time ticks (seconds) under each of `bottoms`, labelled under the last: the first of `steps`
/// that gives at most 12 ticks over `0..=end` (else 1200 s), up to `end + slack` (the
/// accumulated sum may overshoot `end` by a rounding error).
pub(crate) fn time_ticks(
    s: &mut Svg,
    x: &Linear,
    end: f64,
    bottoms: &[f64],
    steps: &[f64],
    slack: f64,
) {
    let step = steps
        .iter()
        .copied()
        .find(|st| end / st <= 12.0)
        .unwrap_or(1200.0);
    let label_y = bottoms.last().copied().unwrap_or_default() + 19.0;
    let mut v = 0.0;
    while v <= end + slack {
        let px = x.at(v);
        for &bot in bottoms {
            s.line(px, bot, px, bot + 5.0, "axis");
        }
        s.text(px, label_y, "middle", "tick", &format!("{}s", fmt_tick(v)));
        v += step;
    }
}

/// The latency histogram: bars per log-spaced bucket, p50 and p99 marked.
pub(crate) fn histogram(load: &LoadResult, l: Lang) -> Option<String> {
    let b = load.latency_histogram.as_ref().filter(|b| !b.is_empty())?;
    let (h, top, bottom) = (280.0, 28.0, 236.0);
    let lo = b.first()?.from_ms.max(1e-3);
    let hi = b.last()?.to_ms.max(lo * 1.01);
    let x = Log {
        d0: lo,
        d1: hi,
        r0: L,
        r1: W - R,
    };
    let max = nice_max(b.iter().map(|b| b.count).max().unwrap_or(1) as f64);
    let y = Linear {
        d0: 0.0,
        d1: max,
        r0: bottom,
        r1: top,
    };
    let mut s = Svg::new(W, h, "chart", &l.t("chart-histogram"));
    y_axis(&mut s, &y, max, L, W - R);
    for t in log_ticks(lo, hi) {
        let px = x.at(t);
        s.line(px, bottom, px, bottom + 5.0, "axis");
        s.text(px, bottom + 19.0, "middle", "tick", &fmt_tick(t));
    }
    let total: u64 = b.iter().map(|b| b.count).sum();
    for k in b {
        let (x0, x1) = (x.at(k.from_ms.max(lo)), x.at(k.to_ms));
        let tip = format!(
            "{} – {}: {} requests ({:.1} %)",
            fmt_ms(k.from_ms),
            fmt_ms(k.to_ms),
            k.count,
            k.count as f64 * 100.0 / total.max(1) as f64
        );
        // A bucket with any request stays visible (2 px) next to one with thousands.
        let py = if k.count > 0 {
            y.at(k.count as f64).min(bottom - 2.0)
        } else {
            bottom
        };
        s.rect(x0 + 0.5, py, x1 - x0 - 1.0, bottom - py, "bar", Some(&tip));
    }
    s.line(L, bottom, W - R, bottom, "axis");
    let p = &load.latency_ms;
    for (name, v, class) in [("p50", p.p50, "mark p50"), ("p99", p.p99, "mark p99")] {
        if v > 0.0 && v >= lo && v <= hi {
            let px = x.at(v);
            // Lines start below both labels, so neither crosses a label.
            s.line(px, top + 10.0, px, bottom, class);
            // p50 to the left of its line, p99 to the right (or left, lower, at the right
            // edge): the two labels never overlap, however close the lines are.
            let anchor = if name == "p50" || px > W - 140.0 {
                "end"
            } else {
                "start"
            };
            let dx = if anchor == "end" { -4.0 } else { 4.0 };
            let ly = if name == "p50" { top - 12.0 } else { top + 6.0 };
            s.text(px + dx, ly, anchor, class, &format!("{name} {}", fmt_ms(v)));
        }
    }
    s.text(
        (L + W - R) / 2.0,
        h - 6.0,
        "middle",
        "axis-title",
        &l.t("chart-latency-log"),
    );
    s.text(
        14.0,
        top - 12.0,
        "start",
        "axis-title",
        &l.t("chart-requests"),
    );
    Some(s.finish())
}

/// The percentile curve: latency against quantile on a "nines" axis, up to the maximum.
pub(crate) fn curve(load: &LoadResult, l: Lang) -> Option<String> {
    let c = load.latency_curve.as_ref().filter(|c| c.len() >= 2)?;
    let (h, top, bottom) = (260.0, 20.0, 216.0);
    let last = c
        .iter()
        .rev()
        .find(|p| p.quantile < 1.0)
        .map_or(0.0, |p| nines(p.quantile));
    let end = last.ceil().max(1.0) + 0.5;
    let xpos = |q: f64| if q >= 1.0 { end } else { nines(q) };
    let x = Linear {
        d0: 0.0,
        d1: end,
        r0: L,
        r1: W - R,
    };
    let max = nice_max(c.iter().map(|p| p.ms).fold(0.0, f64::max));
    let y = Linear {
        d0: 0.0,
        d1: max,
        r0: bottom,
        r1: top,
    };
    let mut s = Svg::new(W, h, "chart", &l.t("chart-curve"));
    y_axis(&mut s, &y, max, L, W - R);
    let labels = ["0 %", "90 %", "99 %", "99.9 %", "99.99 %", "99.999 %"];
    for (k, lab) in labels.iter().enumerate() {
        let v = k as f64;
        if v > end - 0.5 {
            break;
        }
        let px = x.at(v);
        s.line(px, bottom, px, bottom + 5.0, "axis");
        s.text(px, bottom + 19.0, "middle", "tick", lab);
    }
    s.text(x.at(end), bottom + 19.0, "middle", "tick", "max");
    s.line(L, bottom, W - R, bottom, "axis");
    let pts: Vec<(f64, f64)> = c
        .iter()
        .map(|p| (x.at(xpos(p.quantile)), y.at(p.ms)))
        .collect();
    s.polyline(&pts, "curve");
    for (p, (px, py)) in c.iter().zip(&pts) {
        let tip = if p.quantile >= 1.0 {
            format!("max: {}", fmt_ms(p.ms))
        } else {
            format!("p{}: {}", trim_pct(p.quantile * 100.0), fmt_ms(p.ms))
        };
        s.dot(*px, *py, 3.0, "curve-dot", &tip);
    }
    s.text(
        (L + W - R) / 2.0,
        h - 6.0,
        "middle",
        "axis-title",
        &l.t("chart-percentile"),
    );
    s.text(14.0, top - 6.0, "start", "axis-title", "ms");
    Some(s.finish())
}

fn trim_pct(v: f64) -> String {
    let s = format!("{v:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Requests/s (bars, errors in red) and p50/p99 latency (lines) per second of the run.
pub(crate) fn timeline(load: &LoadResult, l: Lang) -> Option<String> {
    let t = load.timeline.as_ref().filter(|t| !t.is_empty())?;
    let end = t.last().map_or(1.0, |p| p.t_s + p.len_s).max(1e-3);
    let (h, a_top, a_bot, b_top, b_bot) = (420.0, 28.0, 170.0, 222.0, 364.0);
    let x = Linear {
        d0: 0.0,
        d1: end,
        r0: L,
        r1: W - R,
    };
    let rmax = nice_max(
        t.iter()
            .map(|p| (p.requests + p.errors) as f64 / p.len_s)
            .fold(0.0, f64::max),
    );
    let ya = Linear {
        d0: 0.0,
        d1: rmax,
        r0: a_bot,
        r1: a_top,
    };
    let lmax = nice_max(
        t.iter()
            .flat_map(|p| [p.p50_ms, p.p99_ms])
            .flatten()
            .fold(0.0, f64::max),
    );
    let yb = Linear {
        d0: 0.0,
        d1: lmax,
        r0: b_bot,
        r1: b_top,
    };
    let mut s = Svg::new(W, h, "chart", &l.t("chart-timeline"));
    y_axis(&mut s, &ya, rmax, L, W - R);
    y_axis(&mut s, &yb, lmax, L, W - R);
    s.text(14.0, a_top - 12.0, "start", "axis-title", &l.t("chart-rps"));
    s.text(
        14.0,
        b_top - 12.0,
        "start",
        "axis-title",
        &l.t("chart-latency-ms"),
    );
    time_ticks(
        &mut s,
        &x,
        end,
        &[a_bot, b_bot],
        &[1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0],
        1e-9,
    );
    for p in t {
        let (x0, x1) = (x.at(p.t_s), x.at(p.t_s + p.len_s));
        let rps = p.requests as f64 / p.len_s;
        let eps = p.errors as f64 / p.len_s;
        let tip = format!(
            "{}–{} s: {} requests ({:.0}/s), {} errors",
            fmt_tick(p.t_s),
            fmt_tick(p.t_s + p.len_s),
            p.requests,
            rps,
            p.errors
        );
        let (py, pe) = (ya.at(rps), ya.at(rps + eps));
        s.rect(x0 + 1.0, py, x1 - x0 - 2.0, a_bot - py, "bar", Some(&tip));
        if p.errors > 0 {
            s.rect(x0 + 1.0, pe, x1 - x0 - 2.0, py - pe, "bar err", Some(&tip));
        }
    }
    s.line(L, a_bot, W - R, a_bot, "axis");
    s.line(L, b_bot, W - R, b_bot, "axis");
    for (get, class, name) in [
        (
            (|p: &netdoctor_load::TimelinePoint| p.p99_ms) as fn(&_) -> Option<f64>,
            "p99",
            "p99",
        ),
        (|p: &netdoctor_load::TimelinePoint| p.p50_ms, "p50", "p50"),
    ] {
        // A second without responses breaks the line.
        let mut run: Vec<(f64, f64)> = Vec::new();
        for p in t {
            match get(p) {
                Some(v) => {
                    let px = x.at(p.t_s + p.len_s / 2.0);
                    run.push((px, yb.at(v)));
                    s.dot(
                        px,
                        yb.at(v),
                        2.5,
                        &format!("line-dot {class}"),
                        &format!(
                            "{}–{} s {name}: {}",
                            fmt_tick(p.t_s),
                            fmt_tick(p.t_s + p.len_s),
                            fmt_ms(v)
                        ),
                    );
                }
                None => {
                    s.polyline(&run, &format!("line {class}"));
                    run.clear();
                }
            }
        }
        s.polyline(&run, &format!("line {class}"));
    }
    // Legend.
    let ly = b_top - 12.0;
    s.line(W - R - 150.0, ly - 4.0, W - R - 130.0, ly - 4.0, "line p50");
    s.text(W - R - 126.0, ly, "start", "tick", "p50");
    s.line(W - R - 80.0, ly - 4.0, W - R - 60.0, ly - 4.0, "line p99");
    s.text(W - R - 56.0, ly, "start", "tick", "p99");
    s.text(
        (L + W - R) / 2.0,
        h - 6.0,
        "middle",
        "axis-title",
        &l.t("chart-time"),
    );
    Some(s.finish())
}

/// One part of a breakdown: its label, CSS class and milliseconds.
pub(crate) struct Part {
    pub label: String,
    pub class: String,
    pub ms: f64,
}

/// Reads a breakdown from its JSON form (`latency`, `network`, `server`, `transfer` and the
/// `stalls` object keyed by finding id), so it does not depend on how the core stores the
/// stall causes. Zero parts are left out.
pub(crate) fn breakdown_parts(v: &serde_json::Value, l: Lang) -> Option<(f64, Vec<Part>)> {
    let latency = v.get("latency")?.as_f64()?;
    let mut parts = Vec::new();
    for (key, label) in [
        ("network", "chart-part-network"),
        ("server", "chart-part-server"),
        ("transfer", "chart-part-transfer"),
    ] {
        if let Some(ms) = v.get(key).and_then(|x| x.as_f64()) {
            parts.push(Part {
                label: l.t(label),
                class: key.to_string(),
                ms,
            });
        }
    }
    if let Some(st) = v.get("stalls").and_then(|s| s.as_object()) {
        for (id, ms) in st {
            if let Some(ms) = ms.as_f64() {
                parts.push(Part {
                    label: l.ui("chart-part-stall", &[("id", id.as_str().into())]),
                    class: format!("stall s-{}", css_ident(id)),
                    ms,
                });
            }
        }
    }
    parts.retain(|p| p.ms > 0.0005);
    Some((latency, parts))
}

/// Keeps `[a-z0-9_]` (class names built from data).
fn css_ident(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// Horizontal stacked bars, one per `(title, latency, parts)`, on one scale, with a legend in
/// HTML.
pub(crate) fn stacked(bars: &[(&str, f64, Vec<Part>)], l: Lang) -> Option<String> {
    stacked_scaled(bars, l, false)
}

/// [`stacked`], each bar drawn over the full width (its own latency is 100 %): the make-up of
/// bands whose latencies differ by orders of magnitude (p50 2 ms, max 1 s).
pub(crate) fn stacked_each_full(bars: &[(&str, f64, Vec<Part>)], l: Lang) -> Option<String> {
    stacked_scaled(bars, l, true)
}

fn stacked_scaled(bars: &[(&str, f64, Vec<Part>)], l: Lang, each_full: bool) -> Option<String> {
    if bars.is_empty() {
        return None;
    }
    let full = |lat: f64, parts: &[Part]| lat.max(parts.iter().map(|p| p.ms).sum()).max(1e-6);
    let scale = bars
        .iter()
        .map(|(_, lat, parts)| full(*lat, parts))
        .fold(0.0, f64::max)
        .max(1e-6);
    let (bar_h, gap, lw) = (30.0, 26.0, 170.0);
    let h = bars.len() as f64 * (bar_h + gap) + 10.0;
    let mut s = Svg::new(W, h, "chart breakdown-svg", &l.t("chart-breakdown"));
    let x = Linear {
        d0: 0.0,
        d1: scale,
        r0: lw,
        r1: W - R - 70.0,
    };
    for (i, (title, lat, parts)) in bars.iter().enumerate() {
        let y = 10.0 + i as f64 * (bar_h + gap);
        s.text(lw - 10.0, y + bar_h / 2.0 + 5.0, "end", "bar-title", title);
        // Each bar full width: its parts in units of the widest bar.
        let k = if each_full {
            scale / full(*lat, parts)
        } else {
            1.0
        };
        let mut acc = 0.0;
        for p in parts {
            let (x0, x1) = (x.at(acc * k), x.at((acc + p.ms) * k));
            let pct = p.ms * 100.0 / lat.max(1e-9);
            s.rect(
                x0,
                y,
                x1 - x0,
                bar_h,
                &format!("part {}", p.class),
                Some(&format!("{}: {} ({pct:.0} %)", p.label, fmt_ms(p.ms))),
            );
            if x1 - x0 > 64.0 {
                s.text(
                    (x0 + x1) / 2.0,
                    y + bar_h / 2.0 + 5.0,
                    "middle",
                    "part-label",
                    &fmt_ms(p.ms),
                );
            }
            acc += p.ms;
        }
        s.text(
            x.at(acc * k) + 6.0,
            y + bar_h / 2.0 + 5.0,
            "start",
            "bar-total",
            &fmt_ms(*lat),
        );
    }
    let mut out = s.finish();
    // Legend: every part that appears, once.
    let mut seen: Vec<&str> = Vec::new();
    out.push_str(r#"<ul class="legend">"#);
    for (_, lat, parts) in bars {
        for p in parts {
            if seen.contains(&p.class.as_str()) {
                continue;
            }
            seen.push(&p.class);
            let _ = write!(
                out,
                r#"<li><span class="swatch part {}"></span>{} <b>{}</b> ({:.0} %)</li>"#,
                esc(&p.class),
                esc(&p.label),
                esc(&fmt_ms(p.ms)),
                p.ms * 100.0 / lat.max(1e-9)
            );
        }
    }
    out.push_str("</ul>");
    Some(out)
}
