//! The search list walked as glibc's `res_nsearch` walks it: the names of
//! [`ResolvConf::search_order`](super::config::ResolvConf::search_order) asked one after the
//! other at one nameserver, A and AAAA together as getaddrinfo (AF_UNSPEC) asks them, until one
//! has records. A name the server says does not exist (NXDOMAIN), has no record of the type
//! (NODATA) or failed on (SERVFAIL) sends glibc to the next name; anything else (a timeout, an
//! error, a truncated answer) ends its search, and ends the walk here too.
//!
//! This is what a Kubernetes pod pays for an external name: `search ns.svc.cluster.local
//! svc.cluster.local cluster.local` with `options ndots:5` makes `api.example.com` three
//! NXDOMAIN round trips (each A and AAAA) before the name as written is asked.

use super::ServerTiming;
use super::query::{self, Outcome, Transport, Try};
use hickory_proto::rr::RecordType;
use serde::Serialize;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// What one name's answer told the resolver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fate {
    /// Records of the type asked: the lookup ends with this name.
    Answered,
    /// NXDOMAIN: the next name is asked.
    NoSuchName,
    /// NOERROR without a record of the type asked: the next name is asked.
    NoData,
    /// SERVFAIL: glibc asks the next name too (and fails the lookup if none answers).
    ServerFailure,
    /// No usable answer (timeout, error, truncated, other rcode): the search ends.
    NoAnswer,
}

impl Fate {
    /// Whether glibc goes on to the next name of the search order after this one.
    pub fn searches_on(self) -> bool {
        matches!(self, Fate::NoSuchName | Fate::NoData | Fate::ServerFailure)
    }

    /// The rcode as the reader knows it.
    pub fn word(self) -> &'static str {
        match self {
            Fate::Answered => "answered",
            Fate::NoSuchName => "NXDOMAIN",
            Fate::NoData => "NODATA",
            Fate::ServerFailure => "SERVFAIL",
            Fate::NoAnswer => "no answer",
        }
    }
}

/// The fate of one try's outcome.
pub fn fate(outcome: &Outcome) -> Fate {
    let Outcome::Answer {
        rcode,
        answers,
        truncated,
    } = outcome
    else {
        return Fate::NoAnswer;
    };
    match rcode.to_ascii_lowercase().as_str() {
        r if r.contains("non-existent") => Fate::NoSuchName,
        "server failure" => Fate::ServerFailure,
        "no error" if !truncated && answers.is_empty() => Fate::NoData,
        "no error" if !truncated => Fate::Answered,
        _ => Fate::NoAnswer,
    }
}

/// One name of the search order, asked once.
#[derive(Debug, Clone, Serialize)]
pub struct SearchStep {
    /// The name asked (no trailing dot).
    pub name: String,
    /// The question of the record type asked (A, or AAAA with `-6`).
    pub answer: Try,
    /// AAAA asked beside A, as getaddrinfo does; `None` when AAAA is the question.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aaaa: Option<Try>,
    pub fate: Fate,
}

impl SearchStep {
    pub fn new(name: String, answer: Try, aaaa: Option<Try>) -> Self {
        // With AF_UNSPEC a name that has AAAA records but no A still ends the lookup.
        let fate = match (
            fate(&answer.outcome),
            aaaa.as_ref().map(|t| fate(&t.outcome)),
        ) {
            (Fate::NoData, Some(Fate::Answered)) => Fate::Answered,
            (f, _) => f,
        };
        SearchStep {
            name,
            answer,
            aaaa,
            fate,
        }
    }

    /// The step's time: the later answer of the pair (glibc waits for both); `None` when the
    /// question was not answered.
    pub fn elapsed_ms(&self) -> Option<f64> {
        let a = self.answer.elapsed_ms.filter(|_| self.answer.answered())?;
        let aaaa = self.aaaa.as_ref().and_then(|t| t.elapsed_ms);
        Some(aaaa.map_or(a, |b| a.max(b)))
    }
}

/// The search order walked at one nameserver.
#[derive(Debug, Clone, Serialize)]
pub struct SearchWalk {
    /// The nameserver asked (the first one of resolv.conf that answered the direct tries).
    pub server: IpAddr,
    /// Every name glibc may ask, in order.
    pub order: Vec<String>,
    /// The names asked, up to the one that ended the walk.
    pub steps: Vec<SearchStep>,
}

impl SearchWalk {
    /// The index of the step whose name answered, if one did.
    pub fn answered_at(&self) -> Option<usize> {
        self.steps.iter().position(|s| s.fate == Fate::Answered)
    }

    /// The steps before the one that answered (all of them when none did).
    pub fn before_answer(&self) -> &[SearchStep] {
        &self.steps[..self.answered_at().unwrap_or(self.steps.len())]
    }

    /// The time of the steps before the answer, ms.
    pub fn wasted_ms(&self) -> f64 {
        self.before_answer()
            .iter()
            .filter_map(SearchStep::elapsed_ms)
            .sum()
    }

    /// The time of every step, ms.
    pub fn total_ms(&self) -> f64 {
        self.steps.iter().filter_map(SearchStep::elapsed_ms).sum()
    }
}

/// Walks `order` at the first server (in resolv.conf order) whose direct UDP tries of the
/// first name were answered: that answer is the first step (no question asked twice); each
/// further name is asked once, A and AAAA in parallel, until one answers or the search ends.
/// `None` when no server answered over UDP or the order has one name.
pub fn walk(
    servers: &[ServerTiming],
    order: &[String],
    rt: RecordType,
    timeout: Duration,
) -> Option<SearchWalk> {
    if order.len() < 2 {
        return None;
    }
    let s = servers.iter().find(|s| s.udp.answered > 0)?;
    let first = s.udp.tries.iter().find(|t| t.answered())?.clone();
    let mut steps = vec![SearchStep::new(order[0].clone(), first, s.aaaa.clone())];
    let to = SocketAddr::new(s.server, 53);
    for name in &order[1..] {
        if !steps.last().is_some_and(|l| l.fate.searches_on()) {
            break;
        }
        let qn = format!("{name}.");
        let (answer, aaaa) = std::thread::scope(|sc| {
            let aaaa = (rt == RecordType::A).then(|| {
                sc.spawn(|| query::ask(to, Transport::Udp, &qn, RecordType::AAAA, timeout))
            });
            let answer = query::ask(to, Transport::Udp, &qn, rt, timeout);
            (answer, aaaa.map(|h| h.join().expect("aaaa search thread")))
        });
        steps.push(SearchStep::new(name.clone(), answer, aaaa));
    }
    Some(SearchWalk {
        server: s.server,
        order: order.to_vec(),
        steps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::fixtures::said;

    #[test]
    fn fates_follow_glibc() {
        assert_eq!(
            fate(&said("Non-Existent Domain", &[], 1.0).outcome),
            Fate::NoSuchName
        );
        assert_eq!(fate(&said("No Error", &[], 1.0).outcome), Fate::NoData);
        assert_eq!(
            fate(&said("No Error", &["A 10.0.0.5"], 1.0).outcome),
            Fate::Answered
        );
        assert_eq!(
            fate(&said("Server Failure", &[], 1.0).outcome),
            Fate::ServerFailure
        );
        assert_eq!(
            fate(&said("Query Refused", &[], 1.0).outcome),
            Fate::NoAnswer
        );
        assert_eq!(fate(&Outcome::Timeout), Fate::NoAnswer);
        assert!(Fate::ServerFailure.searches_on() && !Fate::NoAnswer.searches_on());
        // AAAA only: the name answers getaddrinfo.
        let step = SearchStep::new(
            "v6.test".into(),
            said("No Error", &[], 1.0),
            Some(said("No Error", &["AAAA ::1"], 3.0)),
        );
        assert_eq!(step.fate, Fate::Answered);
        assert_eq!(step.elapsed_ms(), Some(3.0));
    }

    #[test]
    fn wasted_time_is_the_steps_before_the_answer() {
        let nx =
            |n: &str, ms| SearchStep::new(n.into(), said("Non-Existent Domain", &[], ms), None);
        let w = SearchWalk {
            server: "10.0.0.2".parse().unwrap(),
            order: vec!["a.x".into(), "a.y".into(), "a".into()],
            steps: vec![
                nx("a.x", 100.0),
                nx("a.y", 110.0),
                SearchStep::new("a".into(), said("No Error", &["A 10.0.0.5"], 90.0), None),
            ],
        };
        assert_eq!(w.answered_at(), Some(2));
        assert_eq!(w.wasted_ms(), 210.0);
        assert_eq!(w.total_ms(), 300.0);
    }
}
