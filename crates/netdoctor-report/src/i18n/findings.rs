//! A finding's summary, explanation and fix in the report's language.
//!
//! English is the text the detector wrote (`Finding::summary` …), printed unchanged. Chinese is
//! rendered from `findings.zh.ftl` (messages `<id>-summary`, `<id>-explanation`, `<id>-fix`)
//! with arguments taken **only from the finding's structured fields**: `side`, `severity`,
//! `impact` (added latency, affected share) and the evidence (how many connections, the first
//! counter and its change, the first probe, the first socket option).
//!
//! **Why structured fields, not a new field of message arguments.** Both keep the JSON the same
//! whatever the language. Templates over the structured fields also keep the JSON byte for byte
//! what it was (no new field, no schema change), work on every saved report, including reports
//! written before this existed (baselines, `--compare` against old runs), and need no change in
//! the detectors, which live in three crates (core, observe, route) that others change at the
//! same time: a new detector gets its Chinese text from this catalogue alone. The price: a
//! Chinese text can only say what the structured fields hold. Where a detector's English
//! prose has more (the worst episode, how many times, which of several causes it concluded), the
//! Chinese text says the general case for that id and `side` and the evidence below it carries
//! the particulars; the English text stays available with `--lang en` and in the JSON.

use super::{Cat, Lang, bundle, format};
use fluent_bundle::FluentValue;
use netdoctor_core::analyze::ALL_SILENT_FIX;
use netdoctor_core::detect::loss::{FORGOT_NOTE_MARK, SILENT_NOTE_MARK, SILENT_PEER_MARK};
use netdoctor_core::detect::slow_tls_handshake::TLS_SERVER_EVIDENCE;
use netdoctor_core::{Evidence, Finding, FindingId, Severity, Side};
use std::borrow::Cow;

/// Every finding id (the parity test walks it; a new id without zh messages fails it).
pub const ALL_IDS: [FindingId; FindingId::ALL.len()] = FindingId::ALL;

/// The three texts of a finding shown to people.
#[derive(Debug, Clone, PartialEq)]
pub struct Texts<'a> {
    pub summary: Cow<'a, str>,
    pub explanation: Cow<'a, str>,
    pub fix: Cow<'a, str>,
}

/// A serde enum's JSON word (`server`, `critical`).
fn word<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

/// A share of requests in percent as the sentences print it: a share under 1 % is "<1", never
/// a rounded "0" that contradicts the finding's own count (session 18: "0%" of requests for
/// one stall in 4,878).
pub(crate) fn pct_text(p: f64) -> String {
    if p > 0.0 && p < 0.01 {
        "<1".to_string()
    } else {
        format!("{:.0}", p * 100.0)
    }
}

/// An added latency at a precision that shows it: below 0.01 ms in µs, never "0.00 ms"
/// beside evidence that names a stall.
pub(crate) fn latency_text(v: f64) -> String {
    if v > 0.0 && v < 0.01 {
        format!("{:.0} µs", (v * 1000.0).max(1.0))
    } else {
        crate::terminal::ms(v)
    }
}

/// The numbers a probe's note starts and ends with: `(N, M)` of a leading `N of M `, and the
/// last duration in seconds (`43.1` of `… up to 43.1 s`). Detectors whose zh texts need their
/// story's numbers write them so (`connection_reset`'s client aborts).
fn note_numbers(note: &str) -> (Option<(u64, u64)>, Option<String>) {
    let w: Vec<&str> = note.split_whitespace().collect();
    let counts = match w.as_slice() {
        [n, "of", m, ..] => n.parse().ok().zip(m.parse().ok()),
        _ => None,
    };
    let secs = w.windows(2).rev().find_map(|p| {
        let unit = p[1].trim_end_matches(|c: char| c.is_ascii_punctuation());
        (unit == "s" && p[0].parse::<f64>().is_ok()).then(|| p[0].to_string())
    });
    (counts, secs)
}

/// A `retransmission_timeout` whose receiver went silent (`detect::loss::silent`), told from
/// the summary's mark (every episode silent) and the evidence notes' marks: `silent` is
/// `forgot` (its host answered at last with a reset that acknowledges nothing), `near` (the
/// capture next to the silent receiver), `far` (next to the sender: silent peer or dead
/// path), `some` (some episodes only) or `none`; `silent_rcv` the receiver (client/server).
fn silent_peer(f: &Finding) -> (&'static str, &'static str) {
    if f.id != FindingId::RetransmissionTimeout {
        return ("none", "server");
    }
    let notes: Vec<&str> = f
        .evidence
        .iter()
        .filter_map(|e| match e {
            Evidence::Packets { note, .. } if note.contains(SILENT_NOTE_MARK) => {
                Some(note.as_str())
            }
            _ => None,
        })
        .collect();
    let Some(first) = notes.first() else {
        return ("none", "server");
    };
    let rcv = if first.contains(&format!("the client {SILENT_NOTE_MARK}")) {
        "client"
    } else {
        "server"
    };
    if !f.summary.contains(SILENT_PEER_MARK) {
        return ("some", rcv);
    }
    let forgot = notes
        .iter()
        .filter(|n| n.contains(FORGOT_NOTE_MARK))
        .count();
    let story = if forgot * 2 > notes.len() {
        "forgot"
    } else if f.side == Side::Network {
        "far"
    } else {
        "near"
    };
    (story, rcv)
}

fn yes(b: bool) -> FluentValue<'static> {
    FluentValue::from(if b { "yes" } else { "no" })
}

/// The arguments every finding message may use (all always set, so no message meets a
/// missing one): `side`, `severity`, `latency` + `has_latency`, `pct` + `has_pct`, `conns`,
/// `counter` + `counter_delta` + `has_counter`, `probe` (and its note's numbers: `probe_n`,
/// `probe_of`, `probe_all`, `probe_secs`, see [`note_numbers`]), `option` + `value` +
/// `has_option`, `silent` + `silent_rcv` (see [`silent_peer`]), `dns_all_silent`.
pub fn args(f: &Finding) -> Vec<(&'static str, FluentValue<'static>)> {
    let (silent, silent_rcv) = silent_peer(f);
    let lat = f.impact.added_latency_ms;
    let pct = f.impact.affected_fraction;
    let conns = f
        .evidence
        .iter()
        .filter(|e| matches!(e, Evidence::Packets { .. }))
        .count();
    let counter = f.evidence.iter().find_map(|e| match e {
        Evidence::Counter {
            name,
            before,
            after,
            ..
        } => Some((name.clone(), i128::from(*after) - i128::from(*before))),
        _ => None,
    });
    let (probe, note) = f
        .evidence
        .iter()
        .find_map(|e| match e {
            Evidence::Probe { probe, note } => Some((probe.clone(), note.as_str())),
            _ => None,
        })
        .unzip();
    let (counts, secs) = note.map_or((None, None), note_numbers);
    let option = f.evidence.iter().find_map(|e| match e {
        Evidence::SocketOption { option, value, .. } => Some((option.clone(), value.clone())),
        _ => None,
    });
    vec![
        ("side", FluentValue::from(word(&f.side))),
        ("severity", FluentValue::from(word(&f.severity))),
        (
            "latency",
            FluentValue::from(lat.map(latency_text).unwrap_or_default()),
        ),
        ("has_latency", yes(lat.is_some_and(|v| v > 0.0))),
        (
            "pct",
            FluentValue::from(pct.map(pct_text).unwrap_or_default()),
        ),
        // A share of exactly 0 is no share to tell ("影响 0% 的请求" reads as harmless).
        ("has_pct", yes(pct.is_some_and(|p| p > 0.0))),
        ("conns", FluentValue::from(conns)),
        (
            "counter",
            FluentValue::from(counter.as_ref().map(|c| c.0.clone()).unwrap_or_default()),
        ),
        (
            "counter_delta",
            FluentValue::from(
                counter
                    .as_ref()
                    .map(|c| format!("{:+}", c.1))
                    .unwrap_or_default(),
            ),
        ),
        ("has_counter", yes(counter.is_some())),
        ("probe", FluentValue::from(probe.unwrap_or_default())),
        (
            "probe_n",
            FluentValue::from(counts.map(|c| c.0.to_string()).unwrap_or_default()),
        ),
        (
            "probe_of",
            FluentValue::from(counts.map(|c| c.1.to_string()).unwrap_or_default()),
        ),
        ("probe_all", yes(counts.is_some_and(|(n, m)| n == m))),
        ("probe_secs", FluentValue::from(secs.unwrap_or_default())),
        (
            "option",
            FluentValue::from(option.as_ref().map(|o| o.0.clone()).unwrap_or_default()),
        ),
        (
            "value",
            FluentValue::from(option.as_ref().map(|o| o.1.clone()).unwrap_or_default()),
        ),
        ("has_option", yes(option.is_some())),
        ("critical", yes(f.severity == Severity::Critical)),
        (
            "caused_by",
            FluentValue::from(f.caused_by.map(|c| c.as_str()).unwrap_or_default()),
        ),
        ("has_caused_by", yes(f.caused_by.is_some())),
        ("silent", FluentValue::from(silent)),
        ("silent_rcv", FluentValue::from(silent_rcv)),
        // Every nameserver asked was silent (`analyze::dns`): what they share first.
        (
            "dns_all_silent",
            yes(f.id == FindingId::DnsServerUnreachable && f.fix.starts_with(ALL_SILENT_FIX)),
        ),
    ]
}

/// Whether the finding tells a name's other addresses (its `other_addresses` evidence), and
/// then whether one of them accepted a connection (the note says `accepted a connection`).
fn other_addresses(f: &Finding) -> Option<bool> {
    f.evidence.iter().find_map(|e| match e {
        Evidence::Probe { probe, note } if probe == "other_addresses" => {
            Some(note.contains(" accepted a connection"))
        }
        _ => None,
    })
}

/// The message id of one of a finding id's texts: `nagle_delayed_ack-summary`.
pub fn message_id(id: FindingId, part: &str) -> String {
    format!("{}-{part}", id.as_str())
}

/// The finding's texts in `lang`. An English text that is empty stays empty in every language
/// (the finding has no explanation or fix to show).
pub fn texts(f: &Finding, lang: Lang) -> Texts<'_> {
    match lang {
        Lang::En => Texts {
            summary: Cow::Borrowed(&f.summary),
            explanation: Cow::Borrowed(&f.explanation),
            fix: Cow::Borrowed(&f.fix),
        },
        Lang::Zh => {
            let args = args(f);
            let b = bundle(Cat::FindingsZh, Lang::Zh);
            let part = |name: &str, en: &str| -> Cow<'_, str> {
                if en.is_empty() {
                    Cow::Owned(String::new())
                } else {
                    Cow::Owned(format(b, &message_id(f.id, name), &args))
                }
            };
            let mut t = Texts {
                summary: part("summary", &f.summary),
                explanation: part("explanation", &f.explanation),
                fix: part("fix", &f.fix),
            };
            // A stopping finding about a name's first address that also tells what the
            // name's other addresses did (`other_addresses`: diagnose's `other_addrs`).
            if let Some(live) = other_addresses(f) {
                let key = if live { "live" } else { "none" };
                for (text, part) in [
                    (&mut t.summary, "summary"),
                    (&mut t.explanation, "explanation"),
                ] {
                    let more = format(b, &format!("common-other-addrs-{key}-{part}"), &args);
                    *text = Cow::Owned(format!("{text}{more}"));
                }
                if live {
                    let before = format(b, "common-other-addrs-live-fix", &args);
                    t.fix = Cow::Owned(format!("{before}{}", t.fix));
                }
            }
            // A server slow in the TLS handshake (`slow_server_processing` with the
            // `tls_handshake_server` probe): its own text when the handshake is the whole
            // story, a sentence more when the requests were slow too.
            if let Some(alone) = tls_handshake_server(f) {
                let tls = |name: &str, en: &str| -> Cow<'_, str> {
                    if en.is_empty() {
                        Cow::Owned(String::new())
                    } else {
                        Cow::Owned(format(b, &format!("common-tls-server-{name}"), &args))
                    }
                };
                if alone {
                    t.summary = tls("summary", &f.summary);
                    t.explanation = tls("explanation", &f.explanation);
                    t.fix = tls("fix", &f.fix);
                } else {
                    let more = format(b, "common-tls-server-also", &args);
                    t.explanation = Cow::Owned(format!("{}{more}", t.explanation));
                }
            }
            t
        }
    }
}

/// Whether a finding tells a server slow in the TLS handshake (its `tls_handshake_server`
/// probe), and then whether that is its whole story: the probe leads the evidence then (the
/// detector puts it first), and follows the slow requests' evidence otherwise.
fn tls_handshake_server(f: &Finding) -> Option<bool> {
    let is_it =
        |e: &Evidence| matches!(e, Evidence::Probe { probe, .. } if probe == TLS_SERVER_EVIDENCE);
    (f.id == FindingId::SlowServerProcessing && f.evidence.iter().any(is_it))
        .then(|| f.evidence.first().is_some_and(is_it))
}

/// The note under a connection's packets in `lang`. English is the detector's note. In
/// Chinese, the stall of `nagle_delayed_ack` and `delayed_ack_stall` (data, the late ACK, the
/// data it let go) is described from the packets themselves (their times and the released
/// segment's length); any other note stays as the detector wrote it (see the module docs).
pub fn packets_note<'a>(
    id: FindingId,
    packets: &[netdoctor_core::PacketRef],
    note: &'a str,
    lang: Lang,
) -> Cow<'a, str> {
    if lang == Lang::En || note.is_empty() {
        return Cow::Borrowed(note);
    }
    let msg = match id {
        FindingId::NagleDelayedAck => "common-note-nagle",
        FindingId::DelayedAckStall => "common-note-delayed-ack",
        _ => return Cow::Borrowed(note),
    };
    let [prev, ack, held] = packets else {
        return Cow::Borrowed(note);
    };
    let Some(len) = held
        .desc
        .split_whitespace()
        .find_map(|w| w.strip_prefix("len="))
    else {
        return Cow::Borrowed(note);
    };
    let b = bundle(Cat::FindingsZh, Lang::Zh);
    Cow::Owned(format(
        b,
        msg,
        &[
            (
                "delay",
                FluentValue::from(format!("{:.1}", (ack.time - prev.time) * 1e3)),
            ),
            ("bytes", FluentValue::from(len.to_string())),
            (
                "hold",
                FluentValue::from(format!("{:.2}", (held.time - ack.time) * 1e3)),
            ),
        ],
    ))
}

#[cfg(test)]
mod story_tests;
#[cfg(test)]
mod tests;
