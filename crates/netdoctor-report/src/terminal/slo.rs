//! The SLO block of the terminal reports (`--slo`): the set's result, then one line per
//! objective with its value and margin, or why it could not be judged.

use super::a;
use crate::i18n::{Lang, pad};
use crate::slo::{ObjectiveResult, SloReport, SloResult};
use owo_colors::OwoColorize;
use std::io::{self, Write};

/// `PASS` / `FAIL` / `INCONCLUSIVE` in `lang`, coloured.
pub fn result_word(r: SloResult, lang: Lang) -> String {
    let w = lang.t(&format!("slo-{}", r.as_str())).to_uppercase();
    match r {
        SloResult::Pass => w.green().bold().to_string(),
        SloResult::Fail => w.red().bold().to_string(),
        SloResult::Inconclusive => w.yellow().bold().to_string(),
    }
}

/// The objective's value and margin (or reason) in `lang`.
pub fn objective_detail(o: &ObjectiveResult, lang: Lang) -> String {
    match (o.value, o.margin, &o.reason) {
        (_, _, Some(reason)) => reason.clone(),
        (Some(v), Some(m), None) => {
            let shown = match o.unit.as_str() {
                "fraction" => lang.ui(
                    "slo-points",
                    &[("v", a(format!("{:.3}", (m * 100.0).abs())))],
                ),
                _ => o.show(m.abs()),
            };
            let id = if m >= 0.0 { "slo-spare" } else { "slo-over" };
            lang.ui(
                id,
                &[
                    ("value", a(o.show(v))),
                    ("margin", a(shown)),
                    ("source", a(o.source.clone().unwrap_or_default())),
                ],
            )
        }
        _ => String::new(),
    }
}

/// Writes the block; `label` names the run (comparisons: "B"), empty for one report.
pub fn render_slo(s: &SloReport, label: &str, lang: Lang, out: &mut dyn Write) -> io::Result<()> {
    let head = lang.t("slo-head");
    let sep = if head.ends_with('：') { "" } else { " " };
    let label = if label.is_empty() {
        String::new()
    } else {
        format!(" ({label})")
    };
    writeln!(
        out,
        "{}{sep}{}{label} — {}",
        head.bold(),
        result_word(s.result, lang),
        s.spec
    )?;
    for o in &s.objectives {
        let plain = lang.t(&format!("slo-{}", o.result.as_str())).to_uppercase();
        let word = result_word(o.result, lang);
        // Pad by the plain word's width (colour codes take no cells).
        let fill = 13usize.saturating_sub(crate::i18n::width(&plain));
        writeln!(
            out,
            "  {word}{} {} {}",
            " ".repeat(fill),
            pad(&o.objective, 16),
            objective_detail(o, lang)
        )?;
    }
    Ok(())
}
