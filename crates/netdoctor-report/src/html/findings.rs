//! What the run concluded: the finding cards (severity, summary, explanation, fix, evidence)
//! and, for each finding with packet evidence, its flow graph ([`super::ladder`]) with the
//! other connections that showed the same thing listed under it.

use super::{Rich, esc, ladder, severity_word, svg, word};
use crate::model::Report;
use netdoctor_core::{Evidence, Finding};
use std::fmt::{self, Write as _};

pub(super) fn findings(r: &Report, h: &mut String) -> fmt::Result {
    h.push_str(r#"<section id="findings"><h2>Findings</h2>"#);
    if r.findings.is_empty() {
        h.push_str(r#"<p class="none">No findings.</p>"#);
    }
    for (i, f) in r.findings.iter().enumerate() {
        finding(i + 1, f, h)?;
    }
    h.push_str("</section>\n");
    Ok(())
}

fn finding(n: usize, f: &Finding, h: &mut String) -> fmt::Result {
    let sev = severity_word(f.severity);
    write!(
        h,
        r#"<article class="finding sev-{sev}" id="finding-{n}"><div class="fhead"><span class="badge sev-{sev}">{sev}</span> <code class="fid">{}</code> <span class="meta">{} layer · side: {} · confidence {:.0} %</span></div>"#,
        esc(f.id.as_str()),
        esc(&word(&f.layer)),
        esc(&word(&f.side)),
        f.confidence * 100.0
    )?;
    write!(h, "<h3>{}</h3>", esc(&f.summary))?;
    if let Some(root) = f.caused_by {
        write!(
            h,
            r#"<p class="impact">Consequence of <code>{root}</code> (above).</p>"#
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
            r#"<p class="impact">Root cause of: {} (below).</p>"#,
            ids.join(", ")
        )?;
    }
    let mut impact = Vec::new();
    if let Some(ms) = f.impact.added_latency_ms {
        impact.push(format!("adds {} per affected request", svg::fmt_ms(ms)));
    }
    if let Some(fr) = f.impact.affected_fraction {
        impact.push(format!("{:.0} % affected", fr * 100.0));
    }
    if !impact.is_empty() {
        write!(
            h,
            r#"<p class="impact">Impact: {}</p>"#,
            esc(&impact.join(", "))
        )?;
    }
    if !f.explanation.is_empty() {
        write!(h, r#"<p class="explain">{}</p>"#, Rich(&f.explanation))?;
    }
    if !f.fix.is_empty() {
        write!(h, r#"<div class="fix"><b>Fix</b> {}</div>"#, Rich(&f.fix))?;
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
                    "<li>counter <code>{}</code>: {} → {} ({:+}) — {}</li>",
                    esc(name),
                    before,
                    after,
                    i128::from(*after) - i128::from(*before),
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
                    "<li>socket option <code>{}</code> = <code>{}</code> (pid {pid}, fd {fd}) — {}</li>",
                    esc(option),
                    esc(value),
                    esc(note)
                );
            }
            Evidence::Probe { probe, note } => {
                let _ = write!(items, "<li>probe {}: {}</li>", esc(probe), esc(note));
            }
            Evidence::Log { line, note } => {
                let _ = write!(
                    items,
                    "<li>kernel log <code>{}</code> — {}</li>",
                    esc(line),
                    esc(note)
                );
            }
        }
    }
    if conns > 0 {
        let _ = write!(
            items,
            "<li>packets on {conns} connection{}: <a href=\"#packets-{n}\">flow graph below</a></li>",
            if conns == 1 { "" } else { "s" }
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

pub(super) fn packets(r: &Report, h: &mut String) -> fmt::Result {
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
    h.push_str(r#"<section id="packets"><h2>Packet evidence</h2>"#);
    if with.is_empty() {
        if r.measurements.capture.is_none() {
            super::not_measured(h, "Packet evidence", super::check_reason(r, "capture"))?;
        } else {
            h.push_str(
                r#"<p class="none">No finding rests on packets: no flow graph to draw.</p>"#,
            );
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
            r#"<div class="ladder-block" id="packets-{n}"><h3><span class="badge sev-{}">{}</span> <code>{}</code> on {}</h3>"#,
            severity_word(f.severity),
            severity_word(f.severity),
            esc(f.id.as_str()),
            esc(connection)
        )?;
        if let Some(svg) = ladder::ladder(n, f.id, connection, pkts) {
            h.push_str(&svg);
        }
        write!(h, r#"<p class="note">{}</p>"#, esc(note))?;
        let rest: Vec<_> = conns.collect();
        if !rest.is_empty() {
            write!(
                h,
                "<details><summary>{} more connection{} with the same evidence</summary><table><thead><tr><th>connection</th><th>frames</th><th>what the packets show</th></tr></thead><tbody>",
                rest.len(),
                if rest.len() == 1 { "" } else { "s" }
            )?;
            for (c, p, note) in rest.iter().take(MORE_CONNECTIONS) {
                let frames: Vec<String> = p.iter().map(|p| p.frame.to_string()).collect();
                write!(
                    h,
                    "<tr><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
                    esc(c),
                    esc(&frames.join(", ")),
                    esc(note)
                )?;
            }
            h.push_str("</tbody></table></details>");
        }
        h.push_str("</div>");
    }
    h.push_str("</section>\n");
    Ok(())
}
