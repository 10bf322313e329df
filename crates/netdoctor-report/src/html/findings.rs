//! What the run concluded: the finding cards (severity, summary, explanation, fix, evidence)
//! and, for each finding with packet evidence, its flow graph ([`super::ladder`]) with the
//! other connections that showed the same thing listed under it.

use super::{Rich, a, e, esc, ladder, severity_word, svg};
use crate::i18n::Lang;
use crate::model::Report;
use crate::terminal::word_in;
use netdoctor_core::{Evidence, Finding};
use std::fmt::{self, Write as _};

pub(super) fn findings(r: &Report, l: Lang, h: &mut String) -> fmt::Result {
    write!(
        h,
        r#"<section id="findings"><h2>{}</h2>"#,
        l.t("html-findings")
    )?;
    if r.findings.is_empty() {
        write!(h, r#"<p class="none">{}</p>"#, l.t("html-no-findings"))?;
    }
    for (i, f) in r.findings.iter().enumerate() {
        finding(i + 1, f, l, h)?;
    }
    h.push_str("</section>\n");
    Ok(())
}

fn finding(n: usize, f: &Finding, l: Lang, h: &mut String) -> fmt::Result {
    let sev = severity_word(f.severity);
    write!(
        h,
        r#"<article class="finding sev-{sev}" id="finding-{n}"><div class="fhead"><span class="badge sev-{sev}">{}</span> <code class="fid">{}</code> <span class="meta">{}</span></div>"#,
        esc(&word_in(&f.severity, l)),
        esc(f.id.as_str()),
        l.ui(
            "html-finding-meta",
            &[
                ("layer", e(&word_in(&f.layer, l))),
                ("side", e(&word_in(&f.side, l))),
                ("confidence", a(format!("{:.0}", f.confidence * 100.0))),
            ]
        )
    )?;
    let texts = crate::i18n::findings::texts(f, l);
    write!(h, "<h3>{}</h3>", esc(&texts.summary))?;
    if let Some(root) = f.caused_by {
        write!(
            h,
            r#"<p class="impact">{}</p>"#,
            l.ui(
                "html-consequence-of",
                &[("root", a(format!("<code>{root}</code>")))]
            )
        )?;
    }
    if !f.consequences.is_empty() {
        let ids: Vec<String> = f
            .consequences
            .iter()
            .map(|c| format!("<code>{c}</code>"))
            .collect();
        write!(
            h,
            r#"<p class="impact">{}</p>"#,
            l.ui("html-root-cause-of", &[("ids", a(ids.join(", ")))])
        )?;
    }
    let mut impact = Vec::new();
    if let Some(ms) = f.impact.added_latency_ms {
        impact.push(l.ui("html-impact-adds", &[("ms", a(svg::fmt_ms(ms)))]));
    }
    if let Some(fr) = f.impact.affected_fraction {
        impact.push(l.ui(
            "html-impact-affected",
            &[("pct", a(format!("{:.0}", fr * 100.0)))],
        ));
    }
    if !impact.is_empty() {
        write!(
            h,
            r#"<p class="impact">{}</p>"#,
            l.ui("html-impact", &[("impact", e(&impact.join(", ")))])
        )?;
    }
    if !texts.explanation.is_empty() {
        write!(h, r#"<p class="explain">{}</p>"#, Rich(&texts.explanation))?;
    }
    if !texts.fix.is_empty() {
        write!(
            h,
            r#"<div class="fix"><b>{}</b> {}</div>"#,
            l.t("html-fix"),
            Rich(&texts.fix)
        )?;
    }
    let mut items = String::new();
    let mut conns = 0;
    for e in &f.evidence {
        match e {
            Evidence::Packets { .. } => conns += 1,
            Evidence::Counter {
                name,
                before,
                after,
                note,
            } => {
                let _ = write!(
                    items,
                    "<li>{} — {}</li>",
                    l.ui(
                        "html-ev-counter",
                        &[
                            ("name", super::e(name)),
                            ("before", a(before.to_string())),
                            ("after", a(after.to_string())),
                            (
                                "change",
                                a(format!("{:+}", i128::from(*after) - i128::from(*before)))
                            ),
                        ]
                    ),
                    esc(note)
                );
            }
            Evidence::SocketOption {
                pid,
                fd,
                option,
                value,
                note,
            } => {
                let _ = write!(
                    items,
                    "<li>{} — {}</li>",
                    l.ui(
                        "html-ev-socket",
                        &[
                            ("option", super::e(option)),
                            ("value", super::e(value)),
                            ("pid", a(pid.to_string())),
                            ("fd", a(fd.to_string())),
                        ]
                    ),
                    esc(note)
                );
            }
            Evidence::Probe { probe, note } => {
                let _ = write!(
                    items,
                    "<li>{} {}</li>",
                    l.ui("html-ev-probe", &[("probe", super::e(probe))]),
                    esc(note)
                );
            }
            Evidence::Log { line, note } => {
                let _ = write!(
                    items,
                    "<li>{} — {}</li>",
                    l.ui("html-ev-log", &[("line", super::e(line))]),
                    esc(note)
                );
            }
        }
    }
    if conns > 0 {
        let _ = write!(
            items,
            "<li>{}</li>",
            l.ui(
                "html-ev-packets",
                &[("n", a(conns)), ("href", a(format!("#packets-{n}")))]
            )
        );
    }
    if !items.is_empty() {
        write!(h, r#"<ul class="evidence">{items}</ul>"#)?;
    }
    h.push_str("</article>\n");
    Ok(())
}

/// Most connections listed under a ladder.
const MORE_CONNECTIONS: usize = 20;

pub(super) fn packets(r: &Report, l: Lang, h: &mut String) -> fmt::Result {
    let with: Vec<(usize, &Finding)> = r
        .findings
        .iter()
        .enumerate()
        .filter(|(_, f)| {
            f.evidence
                .iter()
                .any(|e| matches!(e, Evidence::Packets { .. }))
        })
        .map(|(i, f)| (i + 1, f))
        .collect();
    write!(
        h,
        r#"<section id="packets"><h2>{}</h2>"#,
        l.t("html-packet-evidence")
    )?;
    if with.is_empty() {
        if r.measurements.capture.is_none() {
            super::not_measured(
                l,
                h,
                "html-packet-evidence",
                super::check_reason(r, "capture"),
            )?;
        } else {
            write!(
                h,
                r#"<p class="none">{}</p>"#,
                l.t("html-no-packet-finding")
            )?;
        }
    }
    for (n, f) in with {
        let mut conns = f.evidence.iter().filter_map(|e| match e {
            Evidence::Packets {
                connection,
                packets,
                note,
            } => Some((connection, packets, note)),
            _ => None,
        });
        let Some((connection, pkts, note)) = conns.next() else {
            continue;
        };
        write!(
            h,
            r#"<div class="ladder-block" id="packets-{n}"><h3><span class="badge sev-{}">{}</span> {}</h3>"#,
            severity_word(f.severity),
            esc(&word_in(&f.severity, l)),
            l.ui(
                "html-ladder-title",
                &[("id", e(f.id.as_str())), ("connection", e(connection))]
            )
        )?;
        if let Some(svg) = ladder::ladder(n, f.id, connection, pkts, l) {
            h.push_str(&svg);
        }
        write!(
            h,
            r#"<p class="note">{}</p>"#,
            esc(&crate::i18n::findings::packets_note(f.id, pkts, note, l))
        )?;
        let rest: Vec<_> = conns.collect();
        if !rest.is_empty() {
            write!(
                h,
                "<details><summary>{}</summary><table><thead><tr><th>{}</th><th>{}</th><th>{}</th></tr></thead><tbody>",
                l.ui("html-more-connections", &[("n", a(rest.len()))]),
                l.t("html-th-connection"),
                l.t("html-th-frames"),
                l.t("html-th-packets-show")
            )?;
            for (c, p, note) in rest.iter().take(MORE_CONNECTIONS) {
                let frames: Vec<String> = p.iter().map(|p| p.frame.to_string()).collect();
                write!(
                    h,
                    "<tr><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
                    esc(c),
                    esc(&frames.join(", ")),
                    esc(&crate::i18n::findings::packets_note(f.id, p, note, l))
                )?;
            }
            h.push_str("</tbody></table></details>");
        }
        h.push_str("</div>");
    }
    h.push_str("</section>\n");
    Ok(())
}
