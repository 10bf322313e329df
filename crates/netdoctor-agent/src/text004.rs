//! The classic Prometheus text format (version 0.0.4) from prometheus-client's OpenMetrics
//! text, for scrapers that do not ask for OpenMetrics (curl, `promtool check metrics`, older
//! agents). Same samples; the differences are the counter families' names in `# HELP`/`# TYPE`
//! (with `_total`, as 0.0.4 names them after their samples) and no `# UNIT`/`# EOF` lines.
//! Hand-written: prometheus-client writes OpenMetrics only, and the difference is these lines.

use std::collections::BTreeSet;

/// Converts prometheus-client's OpenMetrics text to the 0.0.4 text format (see
/// [`crate::metrics::AgentMetrics::encode_text_004`]).
pub fn openmetrics_to_004(om: &str) -> String {
    let counters: BTreeSet<&str> = om
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(om.len());
    for line in om.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let renamed = ["# HELP ", "# TYPE "].iter().find_map(|p| {
            let rest = line.strip_prefix(p)?;
            let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
            counters
                .contains(name)
                .then(|| format!("{p}{name}_total {tail}"))
        });
        out.push_str(renamed.as_deref().unwrap_or(line).trim_end());
        out.push('\n');
    }
    out
}
