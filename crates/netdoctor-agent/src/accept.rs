//! Which exposition format a scrape gets, from its `Accept` header(s).
//!
//! - The protobuf format ([`Format::Protobuf`], with native histograms) when the header offers
//!   `application/vnd.google.protobuf` with `proto=io.prometheus.client.MetricFamily` and
//!   `encoding=delimited` at a quality (`q`) no lower than any other type the agent writes
//!   (Prometheus with `--enable-feature=native-histograms` puts it first, q = 1).
//! - Otherwise the rule the agent always had: OpenMetrics text when `application/openmetrics-text`
//!   appears, else the classic 0.0.4 text (curl, promtool, older scrapers).
//!
//! Hand-written: the media-range grammar needed here is a comma list with `;`-parameters, and
//! the HTTP crates in the tree (`http`) do not parse `Accept`.

/// The answer's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Protobuf,
    OpenMetrics,
    Text004,
}

/// One media range: `type/subtype`, its parameters (lower-case keys), its quality.
struct Range<'a> {
    mime: String,
    params: Vec<(String, &'a str)>,
    q: f64,
}

fn ranges(accept: &str) -> Vec<Range<'_>> {
    accept
        .split(',')
        .filter_map(|r| {
            let mut parts = r.split(';');
            let mime = parts.next()?.trim().to_ascii_lowercase();
            if mime.is_empty() {
                return None;
            }
            let mut q = 1.0;
            let mut params = Vec::new();
            for p in parts {
                let Some((k, v)) = p.split_once('=') else {
                    continue;
                };
                let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().trim_matches('"'));
                if k == "q" {
                    q = v
                        .parse::<f64>()
                        .ok()
                        .filter(|q| q.is_finite())
                        .unwrap_or(0.0);
                } else {
                    params.push((k, v));
                }
            }
            Some(Range { mime, params, q })
        })
        .collect()
}

/// The format for these `Accept` header values (several headers are one list).
pub fn negotiate<'a>(accept: impl IntoIterator<Item = &'a str>) -> Format {
    let joined: Vec<&str> = accept.into_iter().collect();
    let joined = joined.join(",");
    let rs = ranges(&joined);
    fn param<'a>(r: &Range<'a>, k: &str) -> Option<&'a str> {
        r.params.iter().find(|(pk, _)| pk == k).map(|(_, v)| *v)
    }
    let protobuf_q = rs
        .iter()
        .filter(|r| {
            r.mime == "application/vnd.google.protobuf"
                && param(r, "proto") == Some("io.prometheus.client.MetricFamily")
                && param(r, "encoding") == Some("delimited")
        })
        .map(|r| r.q)
        .fold(0.0, f64::max);
    let text_q = rs
        .iter()
        .filter(|r| {
            matches!(
                r.mime.as_str(),
                "application/openmetrics-text" | "text/plain" | "text/*" | "*/*"
            )
        })
        .map(|r| r.q)
        .fold(0.0, f64::max);
    if protobuf_q > 0.0 && protobuf_q >= text_q {
        Format::Protobuf
    } else if joined
        .to_ascii_lowercase()
        .contains("application/openmetrics-text")
    {
        Format::OpenMetrics
    } else {
        Format::Text004
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_headers_get_their_format() {
        // Prometheus 2.42 with --enable-feature=native-histograms.
        let native = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;\
            encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,\
            application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(negotiate([native]), Format::Protobuf);
        // Prometheus without the feature.
        let classic = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;\
            version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(negotiate([classic]), Format::OpenMetrics);
        assert_eq!(negotiate(["*/*"]), Format::Text004);
        assert_eq!(negotiate([]), Format::Text004);
    }

    #[test]
    fn protobuf_needs_its_parameters_and_the_best_quality() {
        // Text-format protobuf, or no `encoding=delimited`: not what the agent writes.
        let text_pb =
            "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text";
        assert_eq!(negotiate([text_pb]), Format::Text004);
        let low = "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; \
                   encoding=delimited; q=0.2, application/openmetrics-text; q=0.9";
        assert_eq!(negotiate([low]), Format::OpenMetrics);
        let refused = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;\
                       encoding=delimited;q=0";
        assert_eq!(negotiate([refused]), Format::Text004);
        // Two Accept lines are one list.
        let split = [
            "text/plain;q=0.5",
            "Application/Vnd.Google.Protobuf; proto=\"io.prometheus.client.MetricFamily\"; encoding=delimited",
        ];
        assert_eq!(negotiate(split), Format::Protobuf);
    }
}
