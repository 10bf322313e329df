//! `http_errors`: requests failed ([`Observation::Load`]): 4xx/5xx answers, or no answer at all
//! (connect, read and write errors, timeouts). A run whose requests failed is never healthy.
//!
//! Who has to act follows the evidence: mostly 4xx answers mean the request itself is wrong
//! (path, method, authentication: side client); 5xx answers, resets and timeouts are the
//! server's. When the load generator hit a limit of its own (file descriptors, local ports),
//! its failures are not a measurement of the server: the finding is `info` on side host and
//! says so, and the verdict is held back by the caller (`VerdictInputs::client_limited`).
//!
//! Requests that failed because netdoctor's own timeout cut a connect still in progress
//! (`LoadOutcome::connect_timeouts`: SYNs repeated after 1 s, 3 s, longer than the request
//! timeout) are not the server's errors: when they are most of the failures, the finding is
//! side client, a warning, and says the timeout was netdoctor's; `relate` ties it to the
//! `syn_retransmit` that made the connects slow.
//! Without a load (`analyze` of a capture made elsewhere) the status codes come from the
//! captured HTTP/1.x responses ([`ExchangeDone::status`]), counted by the same rule; a run
//! with both trusts the load generator's counts (it saw every response, the capture may
//! not have).

use std::collections::BTreeMap;

mod proxy;

pub use proxy::{
    PROXY_TIMEOUT_EVIDENCE, PROXY_WAITED_EVIDENCE, UPSTREAM_REFUSED_EVIDENCE, proxy_waited,
    retell_waited, timeout_s,
};

use super::{Context, Detector, Interests, MAX_EXAMPLES, conn_label};
use crate::event::{Event, ExchangeDone};
use crate::finding::{Evidence, Finding, FindingId, Severity, Side};
use crate::observation::{LoadOutcome, Observation};

/// The `http_errors` detector.
#[derive(Default)]
pub struct HttpErrors {
    load: Option<LoadOutcome>,
    timeout_ms: Option<u64>,
    /// Captured HTTP/1.x responses by status code.
    captured: BTreeMap<u16, u64>,
    /// Captured exchanges answered with 4xx/5xx, the first few.
    examples: Vec<ExchangeDone>,
    /// The times of captured 502 and 504 answers (a proxy's, [`proxy`]).
    gateway: proxy::GatewayTimes,
}

impl Detector for HttpErrors {
    fn interests(&self) -> Interests {
        Interests::OBSERVED
            .and(Interests::EXCHANGE_DONE)
            .and(Interests::EXCHANGE_CUT)
    }

    fn on_event(&mut self, ev: &Event<'_>) {
        match ev {
            Event::Observed(Observation::Load(l)) => self.load = Some(l.clone()),
            Event::Observed(Observation::RunConfig { timeout_ms, .. }) => {
                self.timeout_ms = Some(*timeout_ms);
            }
            Event::ExchangeDone(x) | Event::ExchangeCut(x) => {
                if let Some(code) = x.status {
                    *self.captured.entry(code).or_default() += 1;
                    if !x.cut {
                        self.gateway.on_answer(code, x.latency_ns);
                    }
                    if code >= 400 && self.examples.len() < MAX_EXAMPLES {
                        self.examples.push(**x);
                    }
                }
            }
            _ => {}
        }
    }

    fn finish(&mut self, cx: &Context, out: &mut Vec<Finding>) {
        if let Some(l) = &self.load {
            if let Some(mut f) = finding(l) {
                if let Some(t) = self.timeout_ms
                    && f.summary.contains(crate::relate::CONNECT_TIMEOUT_MARK)
                {
                    f.summary
                        .push_str(&format!(" (-t {:.1} s)", t as f64 / 1000.0));
                }
                out.push(f);
            }
            return;
        }
        let l = LoadOutcome {
            responses: self.captured.values().sum(),
            status: self.captured.clone(),
            ..LoadOutcome::default()
        };
        if let Some(mut f) = finding(&l) {
            for e in &mut f.evidence {
                if let Evidence::Probe { probe, note } = e {
                    *probe = "capture".into();
                    *note = note.replace("requests", "captured HTTP responses");
                }
            }
            f.summary = f
                .summary
                .replacen(" requests failed", " captured HTTP requests failed", 1);
            f.evidence.extend(self.examples.iter().map(|x| {
                let mut pkts = vec![x.first_req, x.first_resp];
                pkts.dedup_by_key(|p| p.frame);
                Evidence::Packets {
                    connection: conn_label(x.ends.client, x.ends.server),
                    packets: pkts.into_iter().map(|p| p.to_ref(cx.t0_ns)).collect(),
                    note: format!(
                        "the request, answered HTTP {}",
                        x.status.unwrap_or_default()
                    ),
                }
            }));
            self.gateway.retell(&l, &mut f);
            out.push(f);
        }
    }
}

fn reason_phrase(code: u16) -> &'static str {
    match code {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Content Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

/// The finding for a load whose requests failed; `None` when every request succeeded.
/// The name of the probe evidence a rate-limit (429) finding leads with (the Chinese
/// catalogue picks its sentences by it).
pub const RATE_LIMIT_EVIDENCE: &str = "rate_limit";

pub fn finding(l: &LoadOutcome) -> Option<Finding> {
    let failed = l.failed();
    if failed == 0 {
        return None;
    }
    let attempted = l.attempted().max(failed);
    let fraction = failed as f64 / attempted as f64;
    let client4xx: u64 = l
        .status
        .iter()
        .filter(|(c, _)| (400..500).contains(*c) && **c != 408 && **c != 429)
        .map(|(_, n)| n)
        .sum();
    let no_answer = l.connect_errors + l.read_errors + l.write_errors + l.timeouts;
    let pct = |n: u64| format!("{:.1}%", n as f64 * 100.0 / attempted as f64);

    let mut evidence = Vec::new();
    let mut codes: Vec<(u16, u64)> = l
        .status
        .iter()
        .filter(|(c, _)| **c >= 400)
        .map(|(c, n)| (*c, *n))
        .collect();
    codes.sort_by_key(|c| std::cmp::Reverse(c.1));
    for (code, n) in codes.iter().take(4) {
        evidence.push(Evidence::Probe {
            probe: "load".into(),
            note: format!(
                "HTTP {code} {}: {n} of {attempted} requests ({})",
                reason_phrase(*code),
                pct(*n)
            )
            .replace("  ", " "),
        });
    }
    for (what, n) in [
        ("connect errors", l.connect_errors),
        (
            "read errors (reset or closed before the response was complete)",
            l.read_errors,
        ),
        ("write errors", l.write_errors),
        ("timeouts (no complete response in time)", l.timeouts),
    ] {
        if n > 0 {
            evidence.push(Evidence::Probe {
                probe: "load".into(),
                note: format!("{what}: {n} of {attempted} requests ({})", pct(n)),
            });
        }
    }
    if let Some(e) = &l.first_error {
        evidence.push(Evidence::Probe {
            probe: "load".into(),
            note: format!("first error: {e}"),
        });
    }

    if !l.client_limits.is_empty() {
        let limits = l.client_limits.join(", ");
        let mut f = Finding::new(
            FindingId::HttpErrors,
            Severity::Info,
            Side::Host,
            format!(
                "{failed} of {attempted} requests failed because netdoctor's own load generator \
                 hit a limit ({limits}): not a measurement of the server"
            ),
        );
        f.confidence = 0.9;
        f.impact.affected_fraction = Some(fraction);
        f.explanation = format!(
            "The client side of the test ran out of a resource of its own ({limits}) before the \
             server was the limit. Requests that failed that way say nothing about the server, \
             and the latency measured with them is the client's. The verdict is held back until \
             a run where the load generator is not the bottleneck."
        );
        f.fix = "Give the load generator room: raise its file limit (`ulimit -n`), widen \
                 `net.ipv4.ip_local_port_range` or use keep-alive, or run with fewer connections \
                 (`-c`)."
            .into();
        f.evidence = evidence;
        return Some(f);
    }

    if l.connect_timeouts * 2 > failed {
        let n = l.connect_timeouts;
        let mut f = Finding::new(
            FindingId::HttpErrors,
            Severity::Warning,
            Side::Client,
            format!(
                "{failed} of {attempted} requests failed ({}); {n} of them because {} the \
                 connect before the server answered the handshake",
                pct(failed),
                crate::relate::CONNECT_TIMEOUT_MARK
            ),
        );
        f.confidence = 0.9;
        f.impact.affected_fraction = Some(fraction);
        f.explanation = "These requests never reached the server: their connection was still \
             being set up (connect() had not completed) when netdoctor's own request timeout \
             expired. A SYN that gets no answer is repeated after 1 s, then again (3 s after \
             the first), so a connect that needs a repeated SYN outlasts a 2 s timeout. The \
             server did not fail them; what delayed the handshake (see syn_retransmit and its \
             cause) did, and the timeout turned the delay into a failure."
            .to_string();
        f.fix = "Fix what delays connection setup (the root cause above: a lossy path, a full \
                 listen queue, a firewall dropping SYNs). To measure the slow connects instead \
                 of cutting them, give the load a longer timeout (-t 5s)."
            .to_string();
        f.evidence = evidence;
        f.evidence.push(Evidence::Probe {
            probe: "load".into(),
            note: format!(
                "{n} of {attempted} requests timed out in connect() ({}), before any byte was \
                 sent to the server",
                pct(n)
            ),
        });
        return Some(f);
    }

    // Most failures were 429: a rate limit turned the load away, by design.
    let limited = l.status.get(&429).copied().unwrap_or(0);
    if limited * 2 > failed {
        let ok = l.responses.saturating_sub(l.error_responses());
        evidence.insert(
            0,
            Evidence::Probe {
                probe: RATE_LIMIT_EVIDENCE.into(),
                note: format!("{ok} of {attempted} requests got through the limit"),
            },
        );
        let mut f = Finding::new(
            FindingId::HttpErrors,
            Severity::Warning,
            Side::Server,
            format!(
                "{failed} of {attempted} requests failed ({}): HTTP 429 Too Many Requests, a rate \
                 limit turned the load away ({ok} requests got through)",
                pct(failed)
            ),
        );
        f.confidence = 0.95;
        f.impact.affected_fraction = Some(fraction);
        f.explanation = "The server, or a proxy or gateway in front of it, answered 429 Too Many \
             Requests: a rate limit rejected the requests above its allowance, on purpose and \
             before doing their work. This load asked for more than the limit allows, so the \
             failures measure the limit, not the server's health, and the latency figures are \
             mostly those of the quick rejections, not of real requests."
            .to_string();
        f.fix = "To measure the server, stay under the limit: an open-loop rate below what got \
                 through (`--rate`), or fewer connections (-c). If real clients are rejected \
                 too, raise the limit where it is set (nginx `limit_req_zone … rate=` and \
                 `burst`, an API gateway's quota, the application's throttle) or have clients \
                 back off and honour Retry-After."
            .to_string();
        f.evidence = evidence;
        return Some(f);
    }

    let client_side = client4xx * 2 > failed;
    let severity = if fraction >= 0.10 {
        Severity::Critical
    } else {
        Severity::Warning
    };
    let top = codes.first().map(|(c, _)| {
        format!("HTTP {c} {}", reason_phrase(*c))
            .trim_end()
            .to_string()
    });
    let what = match (top, no_answer > 0) {
        (Some(t), true) => format!("{t} and requests without an answer"),
        (Some(t), false) => t,
        (None, _) => format!(
            "{} (connect, read or write errors, timeouts)",
            crate::relate::NO_ANSWER_MARK
        ),
    };
    let mut f = Finding::new(
        FindingId::HttpErrors,
        severity,
        if client_side {
            Side::Client
        } else {
            Side::Server
        },
        format!(
            "{failed} of {attempted} requests failed ({}): {what}",
            pct(failed)
        ),
    );
    f.confidence = 0.99;
    f.impact.affected_fraction = Some(fraction);
    f.explanation = if client_side {
        "The server answered, but with a client error (4xx): the request as sent is not one it \
         serves (a wrong path or host, a method it does not allow, missing authentication). \
         Latency figures of such answers say little about the real requests."
            .to_string()
    } else {
        "Requests failed on the server's side: it answered with server errors (5xx), reset or \
         closed connections before the response was complete, refused connections, or did not \
         answer within the timeout. Failed requests are never healthy, however fast the rest \
         were."
            .to_string()
    };
    f.fix = if client_side {
        "Check the URL (path and host), the method (-m) and the headers (-H, e.g. \
         authentication) against what the server serves; `curl -v URL` shows the answer."
            .to_string()
    } else {
        "Look at the server's error log for the failing requests; a fraction of 503s usually \
         means an overloaded backend or a rate limit (nginx `limit_req` answers 503 unless \
         `limit_req_status` says otherwise: then a steady trickle of requests gets through \
         whatever the load), resets and timeouts a crashed or saturated worker."
            .to_string()
    };
    f.evidence = evidence;
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::testkit;
    use crate::event::ExchangeDone;

    fn outcome(status: &[(u16, u64)]) -> LoadOutcome {
        LoadOutcome {
            responses: status.iter().map(|(_, n)| n).sum(),
            status: status.iter().copied().collect(),
            ..LoadOutcome::default()
        }
    }

    fn run(l: LoadOutcome) -> Vec<Finding> {
        let obs = Observation::Load(l);
        testkit::run::<HttpErrors>(&[Event::Observed(&obs)], &testkit::cx(100))
    }

    #[test]
    fn a_rate_limit_is_told_as_one_and_503s_stay_the_servers() {
        let f = run(outcome(&[(200, 155), (429, 195_933)]));
        assert_eq!(
            (f[0].severity, f[0].side),
            (Severity::Warning, Side::Server)
        );
        assert!(f[0].summary.contains("rate limit"), "{}", f[0].summary);
        assert!(
            f[0].summary.contains("155 requests got through"),
            "{}",
            f[0].summary
        );
        assert!(f[0].fix.contains("--rate"), "{}", f[0].fix);
        assert!(
            matches!(&f[0].evidence[0], Evidence::Probe { probe, .. } if probe == RATE_LIMIT_EVIDENCE)
        );
        // The same counts as 503: the server's errors, critical (a limiter answering 503
        // cannot be told from an overloaded backend by the status alone).
        let f = run(outcome(&[(200, 155), (503, 195_933)]));
        assert_eq!(
            (f[0].severity, f[0].side),
            (Severity::Critical, Side::Server)
        );
        assert!(!f[0].summary.contains("rate limit"), "{}", f[0].summary);
        // A few 429s among 500s: the 500s are the story.
        let f = run(outcome(&[(200, 100), (429, 2), (500, 50)]));
        assert_eq!(f[0].severity, Severity::Critical);
        assert!(f[0].summary.contains("HTTP 500"), "{}", f[0].summary);
    }

    #[test]
    fn successful_requests_are_no_finding() {
        assert!(run(outcome(&[(200, 1000), (304, 5)])).is_empty());
    }

    #[test]
    fn all_404_is_critical_on_the_client_side() {
        let f = run(outcome(&[(404, 39_866)]));
        assert_eq!(f.len(), 1);
        assert_eq!(
            (f[0].severity, f[0].side),
            (Severity::Critical, Side::Client)
        );
        assert!(f[0].summary.contains("39866 of 39866"), "{}", f[0].summary);
        assert!(f[0].summary.contains("404 Not Found"), "{}", f[0].summary);
    }

    #[test]
    fn a_fraction_of_503_is_the_servers_with_that_fraction() {
        let f = run(outcome(&[(200, 950), (503, 50)]));
        assert_eq!(f[0].side, Side::Server);
        assert_eq!(f[0].severity, Severity::Warning);
        assert_eq!(f[0].impact.affected_fraction, Some(0.05));
        let f = run(outcome(&[(200, 800), (503, 200)]));
        assert_eq!(f[0].severity, Severity::Critical);
    }

    #[test]
    fn timeouts_and_resets_count_as_failed() {
        let mut l = outcome(&[(200, 90)]);
        l.timeouts = 6;
        l.read_errors = 4;
        let f = run(l);
        assert_eq!(f[0].side, Side::Server);
        assert!(f[0].summary.starts_with("10 of 100"), "{}", f[0].summary);
    }

    #[test]
    fn connects_cut_by_our_own_timeout_are_the_clients_not_the_servers() {
        let mut l = outcome(&[(200, 77)]);
        l.timeouts = 23;
        l.connect_timeouts = 23;
        let f = run(l.clone());
        assert_eq!(
            (f[0].severity, f[0].side),
            (Severity::Warning, Side::Client)
        );
        assert!(
            f[0].summary.contains(crate::relate::CONNECT_TIMEOUT_MARK),
            "{}",
            f[0].summary
        );
        // Timeouts while waiting for a response stay the server's.
        l.connect_timeouts = 3;
        let f = run(l);
        assert_eq!(
            (f[0].severity, f[0].side),
            (Severity::Critical, Side::Server)
        );
    }

    #[test]
    fn captured_error_statuses_count_without_a_load() {
        use crate::decode::TcpFlags as F;
        use testkit::*;
        let mut x = ExchangeDone::new(
            ends(),
            pkt(4, 0, false, F::PSH, 157),
            pkt(6, 3, true, F::PSH, 155),
        );
        x.status = Some(500);
        let ok = ExchangeDone {
            status: Some(200),
            ..x
        };
        let f = testkit::run::<HttpErrors>(&[Event::ExchangeDone(&x)], &cx(1));
        assert_eq!(f.len(), 1);
        assert_eq!(
            (f[0].severity, f[0].side),
            (Severity::Critical, Side::Server)
        );
        assert!(
            f[0].summary
                .starts_with("1 of 1 captured HTTP requests failed"),
            "{}",
            f[0].summary
        );
        assert!(f[0].summary.contains("HTTP 500 Internal Server Error"));
        assert!(matches!(&f[0].evidence[0], Evidence::Probe { probe, .. } if probe == "capture"));
        assert!(
            matches!(&f[0].evidence[1], Evidence::Packets { packets, .. } if packets.len() == 2)
        );
        // A load's own counts win over the capture's (it saw every response).
        let obs = Observation::Load(outcome(&[(200, 10)]));
        let ev = [Event::ExchangeDone(&x), Event::Observed(&obs)];
        assert!(testkit::run::<HttpErrors>(&ev, &cx(1)).is_empty());
        let ev: Vec<Event<'_>> = std::iter::repeat_n(Event::ExchangeDone(&ok), 99)
            .chain([Event::ExchangeDone(&x)])
            .collect();
        assert_eq!(
            testkit::run::<HttpErrors>(&ev, &cx(100))[0].severity,
            Severity::Warning
        );
    }

    #[test]
    fn a_limited_client_is_info_on_the_host_not_the_servers_fault() {
        let mut l = outcome(&[(200, 500)]);
        l.connect_errors = 60_000;
        l.client_limits = vec!["file descriptors (too many open files)".into()];
        let f = run(l);
        assert_eq!((f[0].severity, f[0].side), (Severity::Info, Side::Host));
        assert!(
            f[0].summary.contains("own load generator"),
            "{}",
            f[0].summary
        );
    }
}
