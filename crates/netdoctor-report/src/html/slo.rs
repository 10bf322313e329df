//! The SLO block of the HTML pages (`--slo`): one table, a row per objective and a column per
//! run (one for a report, A and B for a comparison), each cell the objective's result with its
//! value and margin, or why it could not be judged; the set's result in the header. The words
//! are the terminal block's ([`crate::terminal::objective_detail`]), escaped here.

use super::esc;
use crate::i18n::Lang;
use crate::slo::{ObjectiveResult, SloReport, SloResult};
use std::fmt::{self, Write as _};

/// Styles of the block (badges by result).
pub const CSS: &str = ".badge.slo-pass{background:var(--ok)}.badge.slo-fail{background:var(--crit)}\
.badge.slo-inconclusive{background:#8a6100}td.slo{min-width:12em}";

fn badge(r: SloResult, lang: Lang) -> String {
    format!(
        r#"<span class="badge slo-{}">{}</span>"#,
        r.as_str(),
        esc(&lang.t(&format!("slo-{}", r.as_str())))
    )
}

/// Writes `<section id="slo">` for the runs that were judged; nothing when none was.
/// `runs`: the column label ("A", "B"; empty for one report) and the run's SLO report.
pub fn section(runs: &[(&str, Option<&SloReport>)], lang: Lang, h: &mut String) -> fmt::Result {
    let judged: Vec<(&str, &SloReport)> = runs
        .iter()
        .filter_map(|(l, s)| s.map(|s| (*l, s)))
        .collect();
    if judged.is_empty() {
        return Ok(());
    }
    write!(
        h,
        r#"<section id="slo"><h2>{}</h2><table><thead><tr><th>{}</th>"#,
        esc(&lang.t("html-slo")),
        esc(&lang.t("html-slo-th-objective"))
    )?;
    for (label, s) in &judged {
        write!(
            h,
            r#"<th>{} {} <code>{}</code></th>"#,
            esc(label),
            badge(s.result, lang),
            esc(&s.spec)
        )?;
    }
    h.push_str("</tr></thead><tbody>");
    // Every objective of any run, in the order first written (a saved baseline may have been
    // judged on other objectives).
    let mut rows: Vec<&str> = Vec::new();
    for (_, s) in &judged {
        for o in &s.objectives {
            if !rows.contains(&o.objective.as_str()) {
                rows.push(&o.objective);
            }
        }
    }
    for row in rows {
        write!(h, "<tr><th><code>{}</code></th>", esc(row))?;
        for (_, s) in &judged {
            match s.objectives.iter().find(|o| o.objective == row) {
                Some(o) => cell(o, lang, h)?,
                None => h.push_str(r#"<td class="slo">–</td>"#),
            }
        }
        h.push_str("</tr>");
    }
    h.push_str("</tbody></table></section>");
    Ok(())
}

fn cell(o: &ObjectiveResult, lang: Lang, h: &mut String) -> fmt::Result {
    write!(
        h,
        r#"<td class="slo">{} {}</td>"#,
        badge(o.result, lang),
        esc(&crate::terminal::objective_detail(o, lang))
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slo::Slo;

    fn judged(spec: &str, p99: f64) -> SloReport {
        let r = crate::slo::tests::report(p99, p99, 5000, 0);
        spec.parse::<Slo>().unwrap().evaluate(&r)
    }

    #[test]
    fn a_column_per_run_a_row_per_objective_escaped() {
        let a = judged("p99<50ms", 48.0);
        let b = judged("p99<50ms,errors<5%", 4.8);
        let mut h = String::new();
        section(&[("A", Some(&a)), ("B", Some(&b))], Lang::En, &mut h).unwrap();
        assert!(h.starts_with(r#"<section id="slo">"#), "{h}");
        assert_eq!(h.matches("<tr><th><code>").count(), 2, "{h}");
        assert!(h.contains("<code>p99&lt;50ms</code>"), "{h}");
        assert!(
            h.contains(r#"<td class="slo">–</td>"#),
            "A has no errors objective: {h}"
        );
        assert!(h.contains("48.0 ms (2.00 ms to spare"), "{h}");
        let mut none = String::new();
        section(&[("A", None), ("B", None)], Lang::En, &mut none).unwrap();
        assert!(none.is_empty());
    }
}
