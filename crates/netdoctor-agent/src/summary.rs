//! `netdoctor_window_request_duration_seconds`: a summary of the latest window of each watched
//! port (exact quantiles 0.5, 0.9, 0.99 and 1 = max, the window's count and sum). A summary and
//! not a gauge because `quantile` is a summary's label (promtool rejects it elsewhere).
//!
//! Hand-written because prometheus-client has no summary type: [`WindowSummary::encode`] writes
//! the family's OpenMetrics lines, which [`crate::metrics::AgentMetrics::encode`] inserts before
//! the closing `# EOF`.

use crate::labels::PodLabels;
use netdoctor_core::Percentiles;
use std::collections::BTreeMap;
use std::sync::Mutex;

const NAME: &str = "netdoctor_window_request_duration_seconds";

/// The latest window's quantiles, count of each (pod, port).
#[derive(Debug, Default)]
pub struct WindowSummary {
    latest: Mutex<BTreeMap<(PodLabels, u16), (Percentiles, u64)>>,
}

impl WindowSummary {
    /// Replaces the (pod, port)'s latest window (latencies in ms, as the report has them).
    pub fn set(&self, pod: &PodLabels, port: u16, latency_ms: Percentiles, count: u64) {
        self.latest
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert((pod.clone(), port), (latency_ms, count));
    }

    /// Removes the (pod, port)'s series; whether there was one.
    pub fn remove(&self, pod: &PodLabels, port: u16) -> bool {
        self.latest
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&(pod.clone(), port))
            .is_some()
    }

    /// The family in OpenMetrics text (`# HELP`, `# TYPE`, `# UNIT`, samples); empty before
    /// the first window.
    pub fn encode(&self) -> String {
        use std::fmt::Write as _;
        let w = self.latest.lock().unwrap_or_else(|e| e.into_inner());
        if w.is_empty() {
            return String::new();
        }
        let mut s = String::new();
        let _ = writeln!(
            s,
            "# HELP {NAME} Exact request-duration quantiles of the latest window (1 = max), with its count and sum."
        );
        let _ = writeln!(s, "# TYPE {NAME} summary");
        let _ = writeln!(s, "# UNIT {NAME} seconds");
        for ((pod, port), (q, count)) in w.iter() {
            let l = format!("port=\"{port}\"{}", pod.text());
            for (quantile, v) in [
                ("0.5", q.p50),
                ("0.9", q.p90),
                ("0.99", q.p99),
                ("1", q.max),
            ] {
                let _ = writeln!(s, "{NAME}{{{l},quantile=\"{quantile}\"}} {}", v / 1000.0);
            }
            let _ = writeln!(s, "{NAME}_sum{{{l}}} {}", q.mean * *count as f64 / 1000.0);
            let _ = writeln!(s, "{NAME}_count{{{l}}} {count}");
        }
        s
    }
}
