//! From the aggregates to an [`Analysis`]: every detector's `finish` over the capture's (or
//! a window's) counts, the capture-quality warnings, ranking, and the exchange figures
//! (percentiles, breakdown bands, which exchange method was seen).

use super::{
    Analysis, CaptureStats, ExchangeMethod, ExchangeStats, TlsHandshakeStats, agg, quality,
};
use crate::detect::Context;
use crate::finding::{Finding, rank};

/// The detectors' reports and the exchange figures over `g`, with the capture's `stats`.
pub(super) fn conclude(stats: &mut CaptureStats, clamped_ts: u64, g: &mut agg::Agg) -> Analysis {
    let judged = stats.clone();
    conclude_judged(stats, &judged, clamped_ts, g)
}

/// [`conclude`] for one window: the findings and warnings read the window's own counts
/// (`judged`, with `clamped_ts` since the window started); the result carries the
/// cumulative `stats`.
pub(super) fn conclude_judged(
    stats: &mut CaptureStats,
    judged: &CaptureStats,
    clamped_ts: u64,
    g: &mut agg::Agg,
) -> Analysis {
    let t0 = stats.first_ts_ns.unwrap_or(0);
    if let (Some(a), Some(b)) = (stats.first_ts_ns, stats.last_ts_ns) {
        stats.duration_s = (b - a).max(0) as f64 / 1e9;
    }
    let cx = Context {
        t0_ns: t0,
        exchanges: g.exchanges - g.incomplete,
        incomplete: g.incomplete,
        connections: judged.connections,
        data_segments: judged.data_segments,
        latency_p50_ms: g.latency.quantile_ms(0.5),
        server_time_p50_ms: g.server_time.quantile_ms(0.5),
        reuse_gaps: g.reuse_gaps.as_ref(),
    };
    let mut findings: Vec<Finding> = Vec::new();
    for d in &mut g.detectors {
        d.finish(&cx, &mut findings);
    }
    let mut warnings = quality::warnings(judged, clamped_ts, &mut findings);
    let lost_by_capture = quality::lost_ends(judged, &g.cut_ends);
    if lost_by_capture > 0 {
        warnings.push(quality::lost_ends_line(lost_by_capture));
    }
    rank(&mut findings);
    let rtt_ms = (g.handshake_rtt.len() > 0).then(|| g.handshake_rtt.quantile_ms(0.5));
    let bands = g.breakdown.finish();
    Analysis {
        stats: CaptureStats {
            bulk: g.bulk.clone(),
            ..stats.clone()
        },
        exchanges: ExchangeStats {
            count: g.exchanges,
            incomplete: g.incomplete,
            lost_by_capture,
            method: match (
                g.http1_exchanges,
                g.h2_exchanges,
                g.exchanges - g.http1_exchanges - g.h2_exchanges,
            ) {
                (0, 0, 0) => None,
                (_, 0, 0) => Some(ExchangeMethod::Http1),
                (0, _, 0) => Some(ExchangeMethod::H2),
                (0, 0, _) => Some(ExchangeMethod::Turns),
                _ => Some(ExchangeMethod::Mixed),
            },
            latency_ms: g.latency.percentiles(),
            server_time_ms: g.server_time.percentiles(),
            rtt_ms,
            latency_cumulative: g.latency.cumulative_at_bounds(),
            latency_recorded_us: g.latency.recorded_us(),
            breakdown_p50_ms: bands.map(|b| b.p50),
            breakdown_p90_ms: bands.map(|b| b.p90),
            breakdown_p99_ms: bands.map(|b| b.p99),
            breakdown_p999_ms: bands.map(|b| b.p999),
            breakdown_max_ms: bands.map(|b| b.max),
            breakdown_mean_ms: bands.map(|b| b.mean),
            tls_handshake: g.tls_server_time.as_ref().map(|h| TlsHandshakeStats {
                turns: g.tls_turns,
                server_time_ms: h.percentiles(),
            }),
        },
        findings,
        warnings,
    }
}
