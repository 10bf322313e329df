//! SVG primitives for the HTML report: an element writer that escapes every piece of text, the
//! scales the charts share (linear, log10) and tick/number formatting.
//!
//! Coordinates are written with one decimal: enough for a screen, and it keeps the file small.

use super::esc;
use std::fmt::Write as _;

/// An SVG document being written into a string.
pub(crate) struct Svg {
    pub(crate) buf: String,
}

/// Chart geometry shared by the report's and the comparison's charts: width, left and right
/// margins.
pub(crate) const W: f64 = 820.0;
pub(crate) const L: f64 = 64.0;
pub(crate) const R: f64 = 24.0;

/// `1 − q` as decades: 0 at q = 0, 2 at 99 % (the x axis of the percentile curves).
pub(crate) fn nines(q: f64) -> f64 {
    -(1.0 - q).max(1e-9).log10()
}

/// Rounds a coordinate to one decimal for output.
pub(crate) fn c(v: f64) -> f64 {
    if v.is_finite() {
        (v * 10.0).round() / 10.0
    } else {
        0.0
    }
}

impl Svg {
    /// Opens an `<svg>` of the given size; `label` is its accessible name (escaped).
    pub(crate) fn new(w: f64, h: f64, class: &str, label: &str) -> Svg {
        let mut buf = String::with_capacity(4096);
        let _ = write!(
            buf,
            r#"<svg class="{}" viewBox="0 0 {} {}" width="{}" height="{}" role="img" aria-label="{}" xmlns="http://www.w3.org/2000/svg">"#,
            esc(class),
            c(w),
            c(h),
            c(w),
            c(h),
            esc(label)
        );
        Svg { buf }
    }

    pub(crate) fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, class: &str) {
        let _ = write!(
            self.buf,
            r#"<line x1="{}" y1="{}" x2="{}" y2="{}" class="{}"/>"#,
            c(x1),
            c(y1),
            c(x2),
            c(y2),
            esc(class)
        );
    }

    /// A rectangle with an optional tooltip (`<title>`, escaped).
    pub(crate) fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, class: &str, tip: Option<&str>) {
        let _ = write!(
            self.buf,
            r#"<rect x="{}" y="{}" width="{}" height="{}" class="{}""#,
            c(x),
            c(y),
            c(w.max(0.0)),
            c(h.max(0.0)),
            esc(class)
        );
        match tip {
            Some(t) => {
                let _ = write!(self.buf, "><title>{}</title></rect>", esc(t));
            }
            None => self.buf.push_str("/>"),
        }
    }

    /// Text anchored at `(x, y)`; `anchor` is `start`, `middle` or `end`.
    pub(crate) fn text(&mut self, x: f64, y: f64, anchor: &str, class: &str, text: &str) {
        let _ = write!(
            self.buf,
            r#"<text x="{}" y="{}" text-anchor="{}" class="{}">{}</text>"#,
            c(x),
            c(y),
            esc(anchor),
            esc(class),
            esc(text)
        );
    }

    /// A polyline through the points.
    pub(crate) fn polyline(&mut self, pts: &[(f64, f64)], class: &str) {
        if pts.is_empty() {
            return;
        }
        self.buf.push_str(r#"<polyline points=""#);
        for (i, (x, y)) in pts.iter().enumerate() {
            if i > 0 {
                self.buf.push(' ');
            }
            let _ = write!(self.buf, "{},{}", c(*x), c(*y));
        }
        let _ = write!(self.buf, r#"" class="{}"/>"#, esc(class));
    }

    /// A small dot with a tooltip.
    pub(crate) fn dot(&mut self, x: f64, y: f64, r: f64, class: &str, tip: &str) {
        let _ = write!(
            self.buf,
            r#"<circle cx="{}" cy="{}" r="{}" class="{}"><title>{}</title></circle>"#,
            c(x),
            c(y),
            c(r),
            esc(class),
            esc(tip)
        );
    }

    /// An arrow from `(x1, y1)` to `(x2, y2)` with a filled head at the end.
    pub(crate) fn arrow(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, class: &str) {
        let (dx, dy) = (x2 - x1, y2 - y1);
        let len = (dx * dx + dy * dy).sqrt().max(1e-9);
        let (ux, uy) = (dx / len, dy / len);
        let (hl, hw) = (10.0, 4.5);
        let (bx, by) = (x2 - ux * hl, y2 - uy * hl);
        self.line(x1, y1, bx, by, class);
        let _ = write!(
            self.buf,
            r#"<path d="M{},{}L{},{}L{},{}Z" class="{} head"/>"#,
            c(x2),
            c(y2),
            c(bx - uy * hw),
            c(by + ux * hw),
            c(bx + uy * hw),
            c(by - ux * hw),
            esc(class)
        );
    }

    pub(crate) fn finish(mut self) -> String {
        self.buf.push_str("</svg>");
        self.buf
    }
}

/// Maps `[d0, d1]` linearly onto `[r0, r1]`.
#[derive(Clone, Copy)]
pub(crate) struct Linear {
    pub d0: f64,
    pub d1: f64,
    pub r0: f64,
    pub r1: f64,
}

impl Linear {
    pub(crate) fn at(&self, v: f64) -> f64 {
        let span = self.d1 - self.d0;
        if span.abs() < f64::EPSILON {
            return self.r0;
        }
        self.r0 + (v - self.d0) / span * (self.r1 - self.r0)
    }
}

/// Maps `[d0, d1]` (both > 0) onto `[r0, r1]` on a log10 scale.
#[derive(Clone, Copy)]
pub(crate) struct Log {
    pub d0: f64,
    pub d1: f64,
    pub r0: f64,
    pub r1: f64,
}

impl Log {
    pub(crate) fn at(&self, v: f64) -> f64 {
        let (a, b) = (self.d0.max(1e-12).log10(), self.d1.max(1e-12).log10());
        if (b - a).abs() < f64::EPSILON {
            return self.r0;
        }
        self.r0 + (v.max(1e-12).log10() - a) / (b - a) * (self.r1 - self.r0)
    }
}

/// A "nice" upper bound for a linear axis starting at 0 (1, 2, 2.5 or 5 × 10^k).
pub(crate) fn nice_max(v: f64) -> f64 {
    if !(v.is_finite() && v > 0.0) {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if v <= m * p * 1.000_001 {
            return m * p;
        }
    }
    10.0 * p
}

/// Five ticks from 0 to `max` (as from [`nice_max`]).
pub(crate) fn linear_ticks(max: f64) -> Vec<f64> {
    (0..=4).map(|i| max * f64::from(i) / 4.0).collect()
}

/// Ticks at 1, 2, 5 × 10^k within `[lo, hi]`.
pub(crate) fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let mut out = Vec::new();
    if !(lo > 0.0 && hi > lo) {
        return out;
    }
    let mut p = 10f64.powf(lo.log10().floor());
    while p <= hi * 1.000_001 {
        for m in [1.0, 2.0, 5.0] {
            let v = m * p;
            if v >= lo * 0.999_999 && v <= hi * 1.000_001 {
                out.push(v);
            }
        }
        p *= 10.0;
    }
    out
}

/// A number of milliseconds for people: `0.07 ms`, `2.15 ms`, `43.9 ms`, `1.02 s`.
pub(crate) fn fmt_ms(ms: f64) -> String {
    if !ms.is_finite() {
        return "–".to_string();
    }
    let a = ms.abs();
    if a >= 1000.0 {
        format!("{:.2} s", ms / 1000.0)
    } else if a >= 100.0 {
        format!("{ms:.0} ms")
    } else if a >= 10.0 {
        format!("{ms:.1} ms")
    } else if a >= 0.01 || a == 0.0 {
        format!("{ms:.2} ms")
    } else {
        format!("{:.0} µs", ms * 1000.0)
    }
}

/// A tick label: short, no trailing zeros (`0.5`, `2`, `100`, `1k`).
pub(crate) fn fmt_tick(v: f64) -> String {
    if v >= 10_000.0 {
        format!("{}k", trim(v / 1000.0))
    } else {
        trim(v)
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() || s == "-0" {
        "0".to_string()
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_ticks_and_numbers() {
        let l = Linear {
            d0: 0.0,
            d1: 10.0,
            r0: 100.0,
            r1: 0.0,
        };
        assert_eq!(l.at(5.0), 50.0);
        let g = Log {
            d0: 1.0,
            d1: 100.0,
            r0: 0.0,
            r1: 200.0,
        };
        assert!((g.at(10.0) - 100.0).abs() < 1e-9);
        assert_eq!(nice_max(43.9), 50.0);
        assert_eq!(nice_max(2.1), 2.5);
        assert_eq!(nice_max(0.0), 1.0);
        assert_eq!(log_ticks(0.8, 60.0), vec![1.0, 2.0, 5.0, 10.0, 20.0, 50.0]);
        assert_eq!(fmt_ms(43.912), "43.9 ms");
        assert_eq!(fmt_ms(0.07), "0.07 ms");
        assert_eq!(fmt_ms(1016.0), "1.02 s");
        assert_eq!(fmt_ms(0.004), "4 µs");
        assert_eq!(fmt_tick(0.5), "0.5");
        assert_eq!(fmt_tick(20000.0), "20k");
    }

    #[test]
    fn text_is_escaped_in_every_primitive() {
        let mut s = Svg::new(10.0, 10.0, "x\"><script>", "<b>label</b>");
        s.text(0.0, 0.0, "start", "t", "<script>alert(1)</script>");
        s.rect(0.0, 0.0, 1.0, 1.0, "r", Some("a</title><script>"));
        s.dot(0.0, 0.0, 1.0, "d", "\"onmouseover=\"x");
        let out = s.finish();
        assert!(!out.contains("<script"), "{out}");
        assert!(!out.contains("<b>"), "{out}");
        assert!(
            out.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{out}"
        );
        assert!(!out.contains("\"onmouseover"), "{out}");
    }
}
