//! The tail block of the terminal report: where the time of the requests in each latency band
//! went (p50, p90, p99, p99.9, max; see `netdoctor_core::breakdown`), one line per band, with
//! each stall cause's milliseconds and the share of the band's requests it stalled. Bands that
//! are the same bucket share a line ("p50/p90").

use super::{a, ms};
use crate::i18n::{Lang, pad};
use netdoctor_core::analyze::ExchangeStats;
use netdoctor_core::{Breakdown, FindingId};

/// The capture's bands in order, with their labels; absent bands are left out.
pub fn bands(e: &ExchangeStats) -> Vec<(&'static str, Breakdown)> {
    [
        ("p50", e.breakdown_p50_ms),
        ("p90", e.breakdown_p90_ms),
        ("p99", e.breakdown_p99_ms),
        ("p99.9", e.breakdown_p999_ms),
        ("max", e.breakdown_max_ms),
    ]
    .into_iter()
    .filter_map(|(l, b)| b.map(|b| (l, b)))
    .collect()
}

/// The name a stall cause has in the terminal and HTML reports.
pub fn cause_name(id: FindingId, lang: Lang) -> String {
    use netdoctor_core::FindingId as F;
    match id {
        F::NagleDelayedAck => lang.t("term-stall-nagle"),
        F::DelayedAckStall => lang.t("term-stall-delayed-ack"),
        F::PacketLossRetransmission => lang.t("term-stall-loss"),
        F::RetransmissionTimeout => lang.t("term-stall-rto"),
        F::ZeroWindow => lang.t("term-stall-zero-window"),
        F::SynRetransmit => lang.t("term-stall-syn"),
        other => other.as_str().to_string(),
    }
}

/// `"p99      51.0 ms = 0.10 ms network + 0.50 ms server + 50.2 ms Nagle/delayed ACK on 96% of the band (12 requests)"`.
fn band_line(label: &str, b: &Breakdown, lang: Lang) -> String {
    let part = |id: &str, v: f64| lang.ui(id, &[("v", a(ms(v)))]);
    let mut parts = vec![
        part("term-bd-network", b.network),
        part("term-bd-server", b.server),
    ];
    if b.transfer >= 0.005 {
        parts.push(part("term-bd-transfer", b.transfer));
    }
    for (id, v, share) in b.causes(0.005) {
        let name = cause_name(id, lang);
        parts.push(if b.requests > 0 {
            lang.ui(
                "term-tail-cause",
                &[
                    ("v", a(ms(v))),
                    ("name", a(name)),
                    ("pct", a(format!("{:.0}%", share * 100.0))),
                ],
            )
        } else {
            format!("{} {name}", ms(v))
        });
    }
    lang.ui(
        "term-tail-band",
        &[
            ("band", a(pad(label, 9))),
            ("latency", a(ms(b.latency))),
            ("parts", a(parts.join(" + "))),
            ("n", a(b.requests)),
        ],
    )
}

/// The block: a heading, then one line per distinct band (empty without bands).
pub fn tail_lines_in(e: &ExchangeStats, lang: Lang) -> Vec<String> {
    let bands = bands(e);
    if bands.is_empty() {
        return Vec::new();
    }
    // Consecutive bands that are the same bucket (equal breakdowns) share one line.
    let mut merged: Vec<(String, Breakdown)> = Vec::new();
    for (label, b) in bands {
        match merged.last_mut() {
            Some((l, prev)) if *prev == b => {
                l.push('/');
                l.push_str(label);
            }
            _ => merged.push((label.to_string(), b)),
        }
    }
    let mut out = vec![lang.t("term-tail-head")];
    out.extend(merged.iter().map(|(l, b)| band_line(l, b, lang)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use netdoctor_core::Stalls;

    fn band(latency: f64, nagle: f64, share: f64, requests: u64) -> Breakdown {
        let mut stalls = Stalls::default();
        stalls.set(FindingId::NagleDelayedAck, nagle);
        let mut sh = Stalls::default();
        sh.set(FindingId::NagleDelayedAck, share);
        Breakdown {
            latency,
            network: 0.1,
            server: 0.5,
            transfer: latency - 0.6 - nagle,
            stalls,
            requests,
            share: sh,
            stalled: share,
        }
    }

    #[test]
    fn one_line_per_distinct_band_with_the_share_each_cause_stalled() {
        let fast = band(2.0, 0.0, 0.0, 9_000);
        let slow = band(51.0, 50.2, 0.96, 90);
        let e = ExchangeStats {
            count: 10_000,
            breakdown_p50_ms: Some(fast),
            breakdown_p90_ms: Some(fast),
            breakdown_p99_ms: Some(slow),
            breakdown_p999_ms: Some(slow),
            breakdown_max_ms: Some(slow),
            ..Default::default()
        };
        let lines = tail_lines_in(&e, Lang::En);
        assert_eq!(lines.len(), 3, "{lines:#?}");
        assert!(
            lines[1].starts_with(
                "p50/p90   2.00 ms = 0.10 ms network + 0.50 ms server + 1.40 ms transfer"
            ),
            "{}",
            lines[1]
        );
        assert!(!lines[1].contains("Nagle"), "{}", lines[1]);
        assert_eq!(
            lines[2],
            "p99/p99.9/max 51.0 ms = 0.10 ms network + 0.50 ms server + 0.20 ms transfer + 50.2 ms Nagle/delayed ACK on 96% of the band (90 requests)"
        );
        // Chinese has every message.
        let zh = tail_lines_in(&e, Lang::Zh);
        assert_eq!(zh.len(), 3);
        assert!(zh[2].contains("96%"), "{}", zh[2]);
        assert!(tail_lines_in(&ExchangeStats::default(), Lang::En).is_empty());
    }
}
