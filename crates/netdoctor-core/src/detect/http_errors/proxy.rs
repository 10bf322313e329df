//! A reverse proxy's 504 and 502 told as such, from the times of the captured answers.
//!
//! A proxy (nginx, HAProxy, a load balancer, an API gateway) answers **504 Gateway Timeout**
//! when its upstream did not answer within the proxy's read (or connect) timeout: every such
//! answer then comes the same time after its request (nginx `proxy_read_timeout 1s`: 1.00 s,
//! within a few ms, `proxy-504`). That fixed wait is the proxy's timer, and the upstream, not
//! the proxy, is where to look. It answers **502 Bad Gateway** within a millisecond when its
//! upstream refused the connection or closed it without an answer (`proxy-502`: nothing
//! listens on the upstream port).
//!
//! Look-alikes kept to the plain text: an application that answers 504 itself at varied
//! latencies (`app-504`: 0.2 to 1.6 s, no common wait), 504s too few to show a wait (fewer
//! than [`MIN_ANSWERS`]) or quicker than [`MIN_TIMEOUT_NS`] (no proxy times out that soon),
//! 502s that took longer than [`FAST_502_NS`] (an upstream that worked, then failed), 503s
//! (an overload or a rate limit) and 500s (the application's own error).

use super::{Evidence, Finding};
use crate::observation::LoadOutcome;

/// The probe evidence a proxy's timeout leads with (the Chinese catalogue picks its text by it).
pub const PROXY_TIMEOUT_EVIDENCE: &str = "proxy_timeout";
/// The probe evidence a proxy's quick 502s lead with.
pub const UPSTREAM_REFUSED_EVIDENCE: &str = "upstream_refused";

/// At least this many answers of the code to tell their time apart from chance.
pub const MIN_ANSWERS: usize = 3;
/// 504s sooner than this are no proxy's timeout (timeouts are seconds: nginx 60 s, HAProxy
/// and load balancers 30-60 s by default; 1 s is about the least anyone sets).
pub const MIN_TIMEOUT_NS: i64 = 250_000_000;
/// 502s whose median came within this are the upstream refusing or closing at once.
pub const FAST_502_NS: i64 = 10_000_000;
/// The answers kept per code (their times).
const KEEP: usize = 4096;

/// The latencies (request's first byte to response's last) of captured 502 and 504 answers.
#[derive(Default)]
pub(super) struct GatewayTimes {
    t502: Vec<i64>,
    t504: Vec<i64>,
}

impl GatewayTimes {
    pub(super) fn on_answer(&mut self, code: u16, latency_ns: i64) {
        let v = match code {
            502 => &mut self.t502,
            504 => &mut self.t504,
            _ => return,
        };
        if v.len() < KEEP {
            v.push(latency_ns);
        }
    }

    /// Retells the captured-responses finding `f` when most failures are 504s that came at
    /// one time (a proxy's timeout) or 502s that came at once (upstream refused or closed).
    pub(super) fn retell(&self, l: &LoadOutcome, f: &mut Finding) {
        let failed = l.failed();
        let count = |c: u16| l.status.get(&c).copied().unwrap_or(0);
        if count(504) * 2 > failed
            && let Some((wait, spread)) = timer(&self.t504)
        {
            let n = self.t504.len();
            let within = if spread >= 1_000_000 {
                format!("{:.0} ms", spread as f64 / 1e6)
            } else {
                "1 ms".to_string()
            };
            // Always in seconds (timeouts are set in seconds; the zh text reads them so).
            let t = format!("{:.2} s", wait as f64 / 1e9);
            f.summary.push_str(&format!(
                ", each {t} after its request: a proxy's timeout, it gave up waiting for its \
                 upstream"
            ));
            f.explanation = format!(
                "The 504 answers all came {t} after their request (within {within} of each \
                 other): a fixed wait is the mark of a timer, not of work that happens to be \
                 slow. 504 Gateway Timeout is what a proxy or gateway (nginx, HAProxy, a load \
                 balancer, an API gateway) answers when its upstream, the application behind \
                 it, did not answer (or accept the connection) within the proxy's timeout: the \
                 proxy gave up after {t} while the upstream was still working or hung. These \
                 requests' latency is the proxy's timeout, not the upstream's real time, which \
                 is longer."
            );
            f.fix = format!(
                "Look at the upstream behind the proxy, not at the proxy: why does it take \
                 longer than {t} (its own log for these requests, a slow database or backend, a \
                 hung or saturated worker pool)? The proxy's error log names it (nginx: \
                 `upstream timed out (110: Connection timed out) while reading response header \
                 from upstream`, with the upstream's address). Raise the proxy's timeout \
                 (nginx `proxy_read_timeout`, HAProxy `timeout server`, the load balancer's \
                 idle or request timeout) only if the upstream's real time is expected to be \
                 that long (a report, an export); otherwise clients only wait longer for the \
                 same failure."
            );
            f.evidence.insert(
                0,
                Evidence::Probe {
                    probe: PROXY_TIMEOUT_EVIDENCE.into(),
                    note: format!(
                        "{n} of {n} captured HTTP 504 answers came within {within} of {t} after \
                         their request"
                    ),
                },
            );
            return;
        }
        if count(502) * 2 > failed && self.t502.len() >= MIN_ANSWERS {
            let mut v = self.t502.clone();
            v.sort_unstable();
            let med = v[v.len() / 2];
            if med > FAST_502_NS {
                return;
            }
            let n = v.len();
            let t = crate::detect::ms_text(med as f64 / 1e6);
            f.summary.push_str(&format!(
                " in {t} (median): the proxy's upstream refused or closed the connection at \
                 once (upstream down)"
            ));
            f.explanation = format!(
                "502 Bad Gateway is a proxy's answer when it got no valid answer from its \
                 upstream. These came {t} after their request (median), too soon for the \
                 upstream to have done any work: the proxy's connection to its upstream was \
                 refused (nothing listening: the application is down, restarting, or on another \
                 port), reset, or closed without an answer (the upstream crashed on the \
                 request)."
            );
            f.fix = "Look at the upstream the proxy forwards to: is it running and listening \
                     on the address the proxy uses? The proxy's error log names it (nginx: \
                     `connect() failed (111: Connection refused) while connecting to \
                     upstream`); `ss -ltn` on the upstream's host shows what listens; a crash \
                     on the request shows in the upstream's own log. The proxy needs no change \
                     unless it points at the wrong address."
                .to_string();
            f.evidence.insert(
                0,
                Evidence::Probe {
                    probe: UPSTREAM_REFUSED_EVIDENCE.into(),
                    note: format!(
                        "{n} of {n} captured HTTP 502 answers came {t} (median) after their \
                         request"
                    ),
                },
            );
        }
    }
}

/// The probe evidence a `slow_server_processing` leads with when its time is a proxy's timeout
/// (see [`retell_waited`]).
pub const PROXY_WAITED_EVIDENCE: &str = "proxy_waited";

/// The proxy's timeout in seconds that an `http_errors` finding told (its
/// [`PROXY_TIMEOUT_EVIDENCE`] note: `… came within 8 ms of 1.00 s after their request`).
pub fn timeout_s(f: &Finding) -> Option<f64> {
    f.evidence.iter().find_map(|e| match e {
        Evidence::Probe { probe, note } if probe == PROXY_TIMEOUT_EVIDENCE => {
            let head = note.strip_suffix(" s after their request")?;
            head.rsplit(' ').next()?.parse().ok()
        }
        _ => None,
    })
}

/// Whether a server's time (`c`, a `slow_server_processing`) is the proxy's timeout that
/// `root` (an `http_errors`) told: its median is the timeout, within the timer's own tolerance
/// (3 %, at least 25 ms), so the median request was one the proxy gave up on. A server slow at
/// other times (an application's own 504s, a proxy whose timeouts are the minority) is not.
pub fn proxy_waited(root: &Finding, c: &Finding) -> bool {
    let (Some(t), Some(ms)) = (timeout_s(root), c.impact.added_latency_ms) else {
        return false;
    };
    let t_ms = t * 1e3;
    (ms - t_ms).abs() <= (t_ms / 33.0).max(25.0)
}

/// Retells a server's time that is the proxy's timeout (`root`'s, see [`proxy_waited`]): the
/// proxy waited for its upstream and gave up, so the time is the upstream's and the fix is
/// there, not in the proxy's own handler.
pub fn retell_waited(root: &Finding, c: &mut Finding) {
    let Some(t) = timeout_s(root) else {
        return;
    };
    let t = format!("{t:.2} s");
    let ms = c
        .impact
        .added_latency_ms
        .map(crate::detect::ms_text)
        .unwrap_or_default();
    c.summary = format!(
        "{}; this is the proxy's {t} timeout: it waited for its upstream, gave up and answered \
         504, not its own work",
        c.summary
    );
    c.explanation = format!(
        "The server here is a proxy in front of an upstream: the median request waited {ms} \
         before any answer left, and that wait is the proxy's {t} timeout (the 504 answers of \
         http_errors all came {t} after their request). The proxy spent the time waiting for \
         its upstream, which did not answer within {t}; the upstream's real time is longer. \
         The network delivers requests and answers promptly."
    );
    c.fix = format!(
        "Caused by {} (above): look at the upstream behind the proxy, why it takes longer \
         than {t} (its own log, a slow database or backend, a hung or saturated worker pool), \
         not at the proxy's handler; raise the proxy's timeout only if that long is expected.",
        root.id
    );
    c.evidence.insert(
        0,
        Evidence::Probe {
            probe: PROXY_WAITED_EVIDENCE.into(),
            note: format!(
                "the median server time {ms} is the proxy's {t} timeout: it waited for its \
                 upstream, then answered 504"
            ),
        },
    );
}

/// The common wait of answers that came at one time, and their spread: at least
/// [`MIN_ANSWERS`], the median at least [`MIN_TIMEOUT_NS`], and 90 % of them within 3 % of the
/// median (at least 25 ms: the client's side of the round trip and the proxy's scheduling).
fn timer(times: &[i64]) -> Option<(i64, i64)> {
    if times.len() < MIN_ANSWERS {
        return None;
    }
    let mut v = times.to_vec();
    v.sort_unstable();
    let med = v[v.len() / 2];
    if med < MIN_TIMEOUT_NS {
        return None;
    }
    let tol = (med / 33).max(25_000_000);
    let near: Vec<i64> = v
        .iter()
        .copied()
        .filter(|t| (t - med).abs() <= tol)
        .collect();
    if near.len() * 10 < v.len() * 9 {
        return None;
    }
    let spread = near.last().copied().unwrap_or(med) - near.first().copied().unwrap_or(med);
    Some((med, spread))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_wait_is_a_timer_and_varied_waits_are_not() {
        let s = 1_000_000_000;
        assert_eq!(
            timer(&[s + 1_500_000, s + 9_300_000, s + 5_100_000]),
            Some((s + 5_100_000, 7_800_000))
        );
        // app-504's waits: 0.2 to 1.6 s.
        let app: Vec<i64> = [2, 9, 16, 5, 13, 3, 11, 7, 15, 4, 10, 6]
            .iter()
            .map(|d| d * 100_000_000)
            .collect();
        assert_eq!(timer(&app), None);
        assert_eq!(timer(&[s, s]), None, "too few");
        assert_eq!(timer(&[1_000_000; 5]), None, "too quick for a timeout");
    }

    #[test]
    fn only_a_server_time_at_the_timeout_is_the_proxys_wait() {
        let mut root = Finding::new(
            crate::finding::FindingId::HttpErrors,
            crate::finding::Severity::Critical,
            crate::finding::Side::Server,
            "",
        );
        root.evidence.push(Evidence::Probe {
            probe: PROXY_TIMEOUT_EVIDENCE.into(),
            note: "12 of 12 captured HTTP 504 answers came within 8 ms of 1.00 s after their \
                   request"
                .into(),
        });
        assert_eq!(timeout_s(&root), Some(1.0));
        let slow = |ms: f64| {
            let mut c = Finding::new(
                crate::finding::FindingId::SlowServerProcessing,
                crate::finding::Severity::Critical,
                crate::finding::Side::Server,
                "",
            );
            c.impact.added_latency_ms = Some(ms);
            c
        };
        assert!(proxy_waited(&root, &slow(1001.5)));
        assert!(proxy_waited(&root, &slow(1024.0)));
        // A median request that was no timeout (most requests answered, slowly, before it).
        assert!(!proxy_waited(&root, &slow(700.0)));
        assert!(!proxy_waited(&root, &slow(1040.0)));
        // Without the proxy's timer the time is the server's own.
        root.evidence.clear();
        assert!(!proxy_waited(&root, &slow(1001.5)));
    }
}
