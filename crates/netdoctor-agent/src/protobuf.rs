//! The protobuf exposition (`io.prometheus.client.MetricFamily`, length-delimited), built from
//! the agent's own OpenMetrics text, so both answers carry the same families, names, labels
//! and types by construction.
//!
//! Why from the text: prometheus-client's registry cannot be walked from outside (its
//! families have no iterator), and its `protobuf` feature writes the *OpenMetrics* protobuf
//! model (which Prometheus does not scrape) and needs `protoc` at build time. The text it writes
//! is a small, known subset of OpenMetrics (no timestamps, no exemplars, one family after the
//! other), which [`families_from_openmetrics`] reads back into the Prometheus messages:
//!
//! | OpenMetrics type | protobuf family |
//! |---|---|
//! | counter `x` (sample `x_total`) | COUNTER `x_total` (the name the sample has in 0.0.4 and protobuf) |
//! | gauge | GAUGE |
//! | info `x` (sample `x_info`) | GAUGE `x_info`, value 1 |
//! | stateset `x` | GAUGE `x`, one series per state (label `x`) |
//! | histogram, gaugehistogram | HISTOGRAM, GAUGE_HISTOGRAM (classic buckets; `+Inf` is the count) |
//! | summary | SUMMARY |
//! | unknown | UNTYPED |
//!
//! `_created` samples are dropped (the agent writes none). The request-duration histogram
//! then gets its native buckets from [`crate::histogram::LatencyHistogram::to_proto`].
//!
//! Reading the text back is not done twice for what did not change: [`ProtoCache`] keeps each
//! family's encoded bytes with the text block they came from (`# HELP` to the next `# HELP`),
//! and a family whose block is the same as at the last scrape is copied, not read again. The
//! registry changes at window ends; between two, a scrape reads back only the process metrics.
//! The request-duration histogram's native buckets are not in the text, but they change only
//! together with its classic `_count` (one window's exchanges, added under one lock), so its
//! block's text says when they changed too.

use crate::proto::{
    Bucket, Counter, Gauge, Histogram, LabelPair, Metric, MetricFamily, MetricType, Quantile,
    Untyped,
};
use std::collections::HashMap;
use std::sync::Mutex;

/// Each family's encoded bytes (length-delimited), by its `# HELP` line, with its text block.
#[derive(Default)]
pub struct ProtoCache {
    blocks: Mutex<CacheState>,
}

#[derive(Default)]
struct CacheState {
    by_help: HashMap<String, (String, Vec<u8>)>,
    /// Blocks read (not copied) by the last answer.
    read: usize,
}

impl ProtoCache {
    /// The protobuf answer of the OpenMetrics `text`: each block copied from the last answer
    /// when its text is the same, else read ([`families_from_openmetrics`]) and passed through
    /// `fix` (the native buckets) first.
    pub fn encode(&self, text: &str, fix: impl Fn(&mut [MetricFamily])) -> Result<Vec<u8>, String> {
        let mut st = self.blocks.lock().unwrap_or_else(|e| e.into_inner());
        let mut old = std::mem::take(&mut st.by_help);
        let mut out = Vec::with_capacity(text.len());
        st.read = 0;
        for block in blocks(text) {
            let help = block.lines().next().unwrap_or("");
            if let Some((t, bytes)) = old.remove(help)
                && t == block
            {
                out.extend_from_slice(&bytes);
                st.by_help.insert(help.to_string(), (t, bytes));
                continue;
            }
            let mut families = families_from_openmetrics(block)?;
            fix(&mut families);
            let bytes = crate::proto::encode_delimited(&families);
            out.extend_from_slice(&bytes);
            st.read += 1;
            st.by_help
                .insert(help.to_string(), (block.to_string(), bytes));
        }
        Ok(out)
    }

    /// Blocks the last answer read from the text (the rest were copied).
    pub fn last_read(&self) -> usize {
        self.blocks.lock().unwrap_or_else(|e| e.into_inner()).read
    }
}

/// The text cut before each `# HELP` line (a family's first line; help texts escape their
/// newlines, so the marker is never inside one).
fn blocks(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = rest.find("\n# HELP ").map_or(rest.len(), |i| i + 1);
        let (block, tail) = rest.split_at(end);
        rest = tail;
        Some(block)
    })
}

/// One parsed sample line: name, labels (in order), value.
type Sample = (String, Vec<(String, String)>, f64);

/// The families of an OpenMetrics (or 0.0.4) text in the Prometheus protobuf model; an error
/// names the line it could not read.
pub fn families_from_openmetrics(text: &str) -> Result<Vec<MetricFamily>, String> {
    let mut out: Vec<MetricFamily> = Vec::new();
    let mut cur: Option<Family> = None;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line
            .strip_prefix("# HELP ")
            .or(line.strip_prefix("# TYPE "))
        {
            let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
            if cur.as_ref().is_none_or(|f| f.name != name) {
                out.extend(cur.take().map(Family::finish));
                cur = Some(Family::new(name));
            }
            if let Some(f) = cur.as_mut() {
                if line.starts_with("# HELP ") {
                    f.help = Some(unescape(tail, false));
                } else {
                    f.kind = tail.to_string();
                }
            }
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let sample = parse_sample(line).ok_or_else(|| format!("unreadable sample: {line}"))?;
        match cur.as_mut() {
            Some(f) => f.add(sample).map_err(|e| format!("{e}: {line}"))?,
            None => return Err(format!("sample before any # TYPE: {line}")),
        }
    }
    out.extend(cur.map(Family::finish));
    Ok(out)
}

/// A family being read: its OpenMetrics name and type, and its metrics in order of first sample.
struct Family {
    name: String,
    kind: String,
    help: Option<String>,
    metrics: Vec<(Vec<(String, String)>, Metric)>,
}

impl Family {
    fn new(name: &str) -> Family {
        Family {
            name: name.to_string(),
            kind: "unknown".to_string(),
            help: None,
            metrics: Vec::new(),
        }
    }

    /// The metric of these labels (created empty on first use).
    fn metric(&mut self, labels: Vec<(String, String)>) -> &mut Metric {
        let i = match self.metrics.iter().position(|(l, _)| *l == labels) {
            Some(i) => i,
            None => {
                let label = labels
                    .iter()
                    .map(|(k, v)| LabelPair {
                        name: Some(k.clone()),
                        value: Some(v.clone()),
                    })
                    .collect();
                self.metrics.push((
                    labels,
                    Metric {
                        label,
                        ..Default::default()
                    },
                ));
                self.metrics.len() - 1
            }
        };
        &mut self.metrics[i].1
    }

    fn add(&mut self, (name, mut labels, v): Sample) -> Result<(), String> {
        let suffix = name
            .strip_prefix(self.name.as_str())
            .ok_or("sample outside its family")?
            .to_string();
        match (self.kind.as_str(), suffix.as_str()) {
            (_, "_created") => {}
            ("counter", "_total") => {
                self.metric(labels).counter = Some(Counter { value: Some(v) });
            }
            ("gauge" | "stateset", "") | ("info", "_info") => {
                self.metric(labels).gauge = Some(Gauge { value: Some(v) });
            }
            ("unknown", "") => {
                self.metric(labels).untyped = Some(Untyped { value: Some(v) });
            }
            ("histogram" | "gaugehistogram", "_bucket") => {
                let le = take_label(&mut labels, "le").ok_or("bucket without le")?;
                let upper = parse_value(&le).ok_or("bad le")?;
                let h = self
                    .metric(labels)
                    .histogram
                    .get_or_insert_with(Default::default);
                if upper.is_finite() {
                    h.bucket.push(Bucket {
                        cumulative_count: Some(count(v)?),
                        upper_bound: Some(upper),
                    });
                }
            }
            ("histogram" | "gaugehistogram", "_count") => {
                let h = self
                    .metric(labels)
                    .histogram
                    .get_or_insert_with(Default::default);
                h.sample_count = Some(count(v)?);
            }
            ("histogram" | "gaugehistogram", "_sum") => {
                let h = self
                    .metric(labels)
                    .histogram
                    .get_or_insert_with(Default::default);
                h.sample_sum = Some(v);
            }
            ("summary", "") => {
                let q = take_label(&mut labels, "quantile").ok_or("summary without quantile")?;
                let q = parse_value(&q).ok_or("bad quantile")?;
                let s = self
                    .metric(labels)
                    .summary
                    .get_or_insert_with(Default::default);
                s.quantile.push(Quantile {
                    quantile: Some(q),
                    value: Some(v),
                });
            }
            ("summary", "_count") => {
                let s = self
                    .metric(labels)
                    .summary
                    .get_or_insert_with(Default::default);
                s.sample_count = Some(count(v)?);
            }
            ("summary", "_sum") => {
                let s = self
                    .metric(labels)
                    .summary
                    .get_or_insert_with(Default::default);
                s.sample_sum = Some(v);
            }
            _ => {
                return Err(format!(
                    "sample suffix {suffix:?} in a {} family",
                    self.kind
                ));
            }
        }
        Ok(())
    }

    fn finish(self) -> MetricFamily {
        let (name, ty) = match self.kind.as_str() {
            "counter" => (format!("{}_total", self.name), MetricType::Counter),
            "gauge" | "stateset" => (self.name, MetricType::Gauge),
            "info" => (format!("{}_info", self.name), MetricType::Gauge),
            "histogram" => (self.name, MetricType::Histogram),
            "gaugehistogram" => (self.name, MetricType::GaugeHistogram),
            "summary" => (self.name, MetricType::Summary),
            _ => (self.name, MetricType::Untyped),
        };
        MetricFamily {
            name: Some(name),
            help: self.help,
            r#type: Some(ty as i32),
            metric: self.metrics.into_iter().map(|(_, m)| m).collect(),
        }
    }
}

fn count(v: f64) -> Result<u64, String> {
    if v >= 0.0 && v.fract() == 0.0 && v < u64::MAX as f64 {
        Ok(v as u64)
    } else {
        Err(format!("count {v} is not a whole number"))
    }
}

fn take_label(labels: &mut Vec<(String, String)>, name: &str) -> Option<String> {
    let i = labels.iter().position(|(k, _)| k == name)?;
    Some(labels.remove(i).1)
}

/// A sample value or label value as a float (`+Inf`, `-Inf`, `NaN` included).
fn parse_value(s: &str) -> Option<f64> {
    match s {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ => s.parse().ok(),
    }
}

/// `name{a="1",b="x"} 1.5` (labels optional; a timestamp or exemplar after the value ignored).
fn parse_sample(line: &str) -> Option<Sample> {
    let name_end = line.find(['{', ' '])?;
    let name = line[..name_end].to_string();
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(mut r) = rest.strip_prefix('{') {
        loop {
            r = r.trim_start_matches(',');
            if let Some(after) = r.strip_prefix('}') {
                rest = after;
                break;
            }
            let (key, after) = r.split_once("=\"")?;
            // The value ends at the first quote not escaped by a backslash.
            let mut end = None;
            let mut escaped = false;
            for (i, c) in after.char_indices() {
                match c {
                    '\\' if !escaped => escaped = true,
                    '"' if !escaped => {
                        end = Some(i);
                        break;
                    }
                    _ => escaped = false,
                }
            }
            let end = end?;
            labels.push((key.trim().to_string(), unescape(&after[..end], true)));
            r = &after[end + 1..];
        }
    }
    let value = parse_value(rest.split_whitespace().next()?)?;
    Some((name, labels, value))
}

/// OpenMetrics escapes: `\\`, `\n`, and in label values `\"`.
fn unescape(s: &str, quotes: bool) -> String {
    if !s.contains('\\') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('\\') => out.push('\\'),
            Some('"') if quotes => out.push('"'),
            Some(o) => {
                out.push('\\');
                out.push(o);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// The labels of a protobuf metric as (name, value) pairs.
pub fn label_pairs(m: &Metric) -> Vec<(&str, &str)> {
    m.label
        .iter()
        .map(|l| {
            (
                l.name.as_deref().unwrap_or(""),
                l.value.as_deref().unwrap_or(""),
            )
        })
        .collect()
}

/// Replaces the histograms of family `name` by `native(labels)` where it has one (the
/// request-duration histogram with its native buckets).
pub fn replace_histograms(
    families: &mut [MetricFamily],
    name: &str,
    native: impl Fn(&[(&str, &str)]) -> Option<Histogram>,
) {
    for f in families
        .iter_mut()
        .filter(|f| f.name.as_deref() == Some(name))
    {
        for m in &mut f.metric {
            if let Some(h) = native(&label_pairs(m)) {
                m.histogram = Some(h);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_openmetrics_type_becomes_its_protobuf_family() {
        let om = "# HELP a_requests Requests.\n# TYPE a_requests counter\n\
            a_requests_total{port=\"80\"} 7\na_requests_total{port=\"81\"} 2\n\
            # HELP a_up Up.\n# TYPE a_up gauge\na_up 1\n\
            # HELP a_build Build.\n# TYPE a_build info\na_build_info{version=\"1.2\"} 1\n\
            # HELP a_state State.\n# TYPE a_state stateset\na_state{a_state=\"on\"} 1\na_state{a_state=\"off\"} 0\n\
            # HELP a_dur Duration \\\\ with a\\nnewline.\n# TYPE a_dur histogram\n# UNIT a_dur seconds\n\
            a_dur_bucket{le=\"0.1\",port=\"80\"} 3\na_dur_bucket{le=\"+Inf\",port=\"80\"} 5\n\
            a_dur_sum{port=\"80\"} 1.5\na_dur_count{port=\"80\"} 5\n\
            # TYPE a_win summary\na_win{port=\"80\",quantile=\"0.5\"} 0.04\na_win_sum{port=\"80\"} 2\na_win_count{port=\"80\"} 50\n\
            # TYPE a_odd unknown\na_odd{x=\"say \\\"hi\\\", {ok}\"} NaN\n# EOF\n";
        let f = families_from_openmetrics(om).unwrap();
        let names: Vec<_> = f.iter().map(|f| f.name.clone().unwrap()).collect();
        assert_eq!(
            names,
            [
                "a_requests_total",
                "a_up",
                "a_build_info",
                "a_state",
                "a_dur",
                "a_win",
                "a_odd"
            ]
        );
        assert_eq!(f[0].r#type, Some(MetricType::Counter as i32));
        assert_eq!(f[0].metric.len(), 2);
        assert_eq!(f[0].metric[1].counter.unwrap().value, Some(2.0));
        assert_eq!(label_pairs(&f[0].metric[1]), [("port", "81")]);
        assert_eq!(f[2].r#type, Some(MetricType::Gauge as i32));
        assert_eq!(f[3].metric.len(), 2);
        let h = f[4].metric[0].histogram.as_ref().unwrap();
        assert_eq!(f[4].help.as_deref(), Some("Duration \\ with a\nnewline."));
        assert_eq!((h.sample_count, h.sample_sum), (Some(5), Some(1.5)));
        assert_eq!(h.bucket.len(), 1, "+Inf is the count");
        assert_eq!(label_pairs(&f[4].metric[0]), [("port", "80")]);
        let s = f[5].metric[0].summary.as_ref().unwrap();
        assert_eq!((s.sample_count, s.quantile.len()), (Some(50), 1));
        assert_eq!(label_pairs(&f[6].metric[0]), [("x", "say \"hi\", {ok}")]);
        assert!(f[6].metric[0].untyped.unwrap().value.unwrap().is_nan());
    }

    /// The cached answer is the uncached one, block for block; a block whose text did not
    /// change is copied, one that changed is read again (and passed through `fix`).
    #[test]
    fn the_cache_reads_only_the_blocks_that_changed() {
        let text = |cpu: f64, req: u64| {
            format!(
                "# HELP a_requests Requests.\n# TYPE a_requests counter\na_requests_total{{port=\"80\"}} {req}\n\
                 # HELP a_dur Duration.\n# TYPE a_dur histogram\na_dur_bucket{{le=\"+Inf\"}} 1\na_dur_sum 1\na_dur_count 1\n\
                 # HELP a_up Up.\n# TYPE a_up gauge\na_up 1\n\
                 # HELP a_cpu Cpu.\n# TYPE a_cpu counter\na_cpu_total {cpu}\n# EOF\n"
            )
        };
        let plain = |t: &str| {
            let mut f = families_from_openmetrics(t).unwrap();
            mark(&mut f);
            crate::proto::encode_delimited(&f)
        };
        // What `fix` does, visible in the bytes: the histogram's count doubled.
        fn mark(f: &mut [MetricFamily]) {
            for m in f.iter_mut().flat_map(|f| f.metric.iter_mut()) {
                if let Some(h) = m.histogram.as_mut() {
                    h.sample_count = h.sample_count.map(|c| c * 2);
                }
            }
        }
        let c = ProtoCache::default();
        let t1 = text(0.5, 7);
        assert_eq!(c.encode(&t1, mark).unwrap(), plain(&t1));
        assert_eq!(c.last_read(), 4, "first answer: every block read");
        let t2 = text(0.75, 7);
        assert_eq!(c.encode(&t2, mark).unwrap(), plain(&t2));
        assert_eq!(c.last_read(), 1, "the cpu block");
        let t3 = text(0.75, 9);
        assert_eq!(c.encode(&t3, mark).unwrap(), plain(&t3));
        assert_eq!(c.last_read(), 1, "the requests block");
        // A family that goes away is not answered from the cache.
        let t4 = t3.replace("# HELP a_up Up.\n# TYPE a_up gauge\na_up 1\n", "");
        assert_eq!(c.encode(&t4, mark).unwrap(), plain(&t4));
        assert!(c.encode("# TYPE a gauge\na{x=\"1} 1\n", mark).is_err());
    }

    #[test]
    fn a_sample_that_does_not_fit_is_an_error_naming_it() {
        let e = families_from_openmetrics("# TYPE a counter\nb_total 1\n").unwrap_err();
        assert!(e.contains("b_total 1"), "{e}");
        let e = families_from_openmetrics("# TYPE a gauge\na{x=\"1} 1\n").unwrap_err();
        assert!(e.contains("unreadable"), "{e}");
        let e = families_from_openmetrics("# TYPE a histogram\na_count 1.5\n").unwrap_err();
        assert!(e.contains("whole number"), "{e}");
    }
}
