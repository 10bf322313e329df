//! The report's language: `--lang en|zh` (or `NETDOCTOR_LANG`, or a `zh*` locale) picks the
//! words of the terminal and HTML reports. The JSON report is the same in every language.
//!
//! **Catalogues, not code branches.** Every word a sink shows is a message in a Fluent file
//! (`fluent-bundle`, the Project Fluent reference implementation; plural and select
//! expressions are written in the catalogue, not in code):
//! - `ui.en.ftl` / `ui.zh.ftl`: the headings, labels and sentences of the terminal and HTML
//!   reports and of `demo`. The two files hold the same message ids (a test fails otherwise).
//! - `findings.zh.ftl`: the summary, explanation and fix of every finding id in Simplified
//!   Chinese. Their English counterparts are the texts the detectors write into the finding
//!   (`Finding::summary` …), which the JSON carries and the English sinks print unchanged; a
//!   test fails when a [`FindingId`](netdoctor_core::FindingId) lacks any of the three zh
//!   messages, or when the catalogue names an id that does not exist. See [`findings`].
//!
//! Arguments are passed pre-formatted (the same `ms()`/`thousands()` helpers in both languages)
//! except counts that choose a plural form. Bidi isolation marks are off
//! (`set_use_isolating(false)`): the output goes to terminals and HTML, where the marks would
//! show as stray characters or break column alignment.
//!
//! A message that is missing renders as `⟦id⟧` and an argument that is missing as `{$name}`,
//! never a panic: tests render whole reports in both languages and look for both markers.
//!
//! Layout helpers live here too because they depend on the script: [`pad`] pads to a display
//! width (a CJK character takes two terminal cells, `unicode-width`), and [`wrap`] breaks
//! between CJK characters as well as at spaces.

pub mod findings;

use fluent_bundle::concurrent::FluentBundle;
use fluent_bundle::{FluentArgs, FluentResource, FluentValue};
use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;
use unicode_width::UnicodeWidthStr;

/// The language of the words in a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Lang {
    /// English (the detectors' own texts).
    #[default]
    En,
    /// Simplified Chinese.
    Zh,
}

/// `ui.en.ftl`: headings and labels in English.
pub const UI_EN: &str = include_str!("ui.en.ftl");
/// `ui.zh.ftl`: headings and labels in Simplified Chinese.
pub const UI_ZH: &str = include_str!("ui.zh.ftl");
/// `findings.zh.ftl`: every finding's summary, explanation and fix in Simplified Chinese.
pub const FINDINGS_ZH: &str = include_str!("findings.zh.ftl");

impl Lang {
    pub const ALL: [Lang; 2] = [Lang::En, Lang::Zh];
    /// The names `--lang` and `NETDOCTOR_LANG` accept.
    pub const NAMES: [&'static str; 2] = ["en", "zh"];

    pub fn name(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Zh => "zh",
        }
    }

    /// The BCP 47 tag for `<html lang>`.
    pub fn tag(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Zh => "zh-CN",
        }
    }

    /// The language when `--lang` was not given: `NETDOCTOR_LANG` (`en` or `zh`; anything
    /// else is an error naming it), else the locale: the first of `LC_ALL`, `LC_MESSAGES`,
    /// `LANG` that is set and not empty (POSIX order) gives Chinese when it starts with `zh`,
    /// English otherwise. `var` reads one variable (tests pass a map).
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Result<Lang, String> {
        if let Some(v) = var("NETDOCTOR_LANG").filter(|v| !v.is_empty()) {
            return v
                .parse::<Lang>()
                .map_err(|e| format!("NETDOCTOR_LANG: {e}"));
        }
        let locale = ["LC_ALL", "LC_MESSAGES", "LANG"]
            .into_iter()
            .find_map(|k| var(k).filter(|v| !v.is_empty()));
        Ok(match locale {
            Some(l) if l.starts_with("zh") => Lang::Zh,
            _ => Lang::En,
        })
    }

    /// The message `id` of the UI catalogue.
    pub fn t(self, id: &str) -> String {
        self.ui(id, &[])
    }

    /// The message `id` of the UI catalogue with arguments.
    pub fn ui(self, id: &str, args: &[(&str, FluentValue<'_>)]) -> String {
        format(bundle(Cat::Ui, self), id, args)
    }
}

impl fmt::Display for Lang {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Lang {
    type Err = String;

    fn from_str(s: &str) -> Result<Lang, String> {
        Lang::ALL
            .into_iter()
            .find(|l| l.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown language '{s}' (one of: {})",
                    Lang::NAMES.join(", ")
                )
            })
    }
}

#[derive(Clone, Copy)]
enum Cat {
    Ui,
    FindingsZh,
}

type Bundle = FluentBundle<FluentResource>;

fn make(tag: &str, sources: &[&str]) -> Bundle {
    let id: unic_langid::LanguageIdentifier = tag.parse().unwrap_or_default();
    let mut b = Bundle::new_concurrent(vec![id]);
    b.set_use_isolating(false);
    for src in sources {
        // A syntax error keeps the entries that parsed; the parity test names the error.
        let res = FluentResource::try_new(src.to_string()).unwrap_or_else(|(res, _)| res);
        // Duplicate ids: the first stays (the parity test forbids duplicates).
        let _ = b.add_resource(res);
    }
    b
}

fn bundle(cat: Cat, lang: Lang) -> &'static Bundle {
    static UI: OnceLock<[Bundle; 2]> = OnceLock::new();
    static FINDINGS: OnceLock<Bundle> = OnceLock::new();
    match cat {
        Cat::Ui => &UI.get_or_init(|| [make("en", &[UI_EN]), make("zh-CN", &[UI_ZH])])
            [usize::from(lang == Lang::Zh)],
        Cat::FindingsZh => FINDINGS.get_or_init(|| make("zh-CN", &[FINDINGS_ZH])),
    }
}

/// Formats message `id` of `b`; `⟦id⟧` when it does not exist.
fn format(b: &Bundle, id: &str, args: &[(&str, FluentValue<'_>)]) -> String {
    let Some(pattern) = b.get_message(id).and_then(|m| m.value()) else {
        return format!("⟦{id}⟧");
    };
    let mut fa = FluentArgs::with_capacity(args.len());
    for (k, v) in args {
        fa.set(*k, v.clone());
    }
    let mut errors = Vec::new();
    b.format_pattern(pattern, Some(&fa), &mut errors)
        .into_owned()
}

/// The message ids of a catalogue's source (for the parity tests).
pub fn message_ids(source: &str) -> Result<Vec<String>, String> {
    use fluent_bundle::FluentResource;
    let res =
        FluentResource::try_new(source.to_string()).map_err(|(_, errs)| format!("{errs:?}"))?;
    Ok(res
        .entries()
        .filter_map(|e| match e {
            fluent_syntax::ast::Entry::Message(m) => Some(m.id.name.to_string()),
            _ => None,
        })
        .collect())
}

/// Terminal cells `s` takes (a CJK character takes two).
pub fn width(s: &str) -> usize {
    UnicodeWidthStr::width(s)
}

/// `s` padded with spaces to `w` terminal cells (`format!("{s:<w$}")` for any script).
pub fn pad(s: &str, w: usize) -> String {
    let mut out = s.to_string();
    for _ in width(s)..w {
        out.push(' ');
    }
    out
}

/// A CJK character: a line may break before or after it without a space.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x2E80..=0x9FFF | 0xA960..=0xA97F | 0xAC00..=0xD7FF | 0xF900..=0xFAFF
        | 0xFE30..=0xFE4F | 0xFF00..=0xFFEF | 0x20000..=0x3FFFF)
}

/// Greedy word wrap to `width` terminal cells; keeps words longer than the width whole. Breaks
/// at spaces, and between CJK characters (which have no spaces between them); a line never
/// starts with CJK closing punctuation (`，。；：、）` …).
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    // Tokens: (text, space before it). A CJK character is a token of its own; closing
    // punctuation sticks to the token before it, opening punctuation to the one after it.
    fn tokens(para: &str) -> Vec<(String, bool)> {
        let mut out: Vec<(String, bool)> = Vec::new();
        for (i, word) in para.split_whitespace().enumerate() {
            let mut cur = String::new();
            let mut space = i > 0;
            let mut opened = false;
            for c in word.chars() {
                let closing = "，。；：、！？）」』》".contains(c);
                let opening = "（「『《".contains(c);
                if opening {
                    if !cur.is_empty() && !opened {
                        out.push((std::mem::take(&mut cur), space));
                        space = false;
                    }
                    cur.push(c);
                    opened = true;
                } else if closing {
                    if cur.is_empty() && !out.is_empty() {
                        if let Some(last) = out.last_mut() {
                            last.0.push(c);
                        }
                    } else {
                        cur.push(c);
                    }
                } else if is_cjk(c) {
                    if !cur.is_empty() && !opened {
                        out.push((std::mem::take(&mut cur), space));
                        space = false;
                    }
                    cur.push(c);
                    out.push((std::mem::take(&mut cur), space));
                    space = false;
                    opened = false;
                } else {
                    cur.push(c);
                    opened = false;
                }
            }
            if !cur.is_empty() {
                out.push((cur, space));
            }
        }
        out
    }
    let mut lines = Vec::new();
    for para in text.split('\n') {
        let mut line = String::new();
        let mut w = 0;
        for (tok, space) in tokens(para) {
            let tw = self::width(&tok);
            let sep = usize::from(space && !line.is_empty());
            if !line.is_empty() && w + sep + tw > width {
                lines.push(std::mem::take(&mut line));
                w = 0;
            } else if sep == 1 {
                line.push(' ');
                w += 1;
            }
            line.push_str(&tok);
            w += tw;
        }
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeSet, HashMap};

    #[test]
    fn ui_catalogues_hold_the_same_messages() {
        let en = message_ids(UI_EN).expect("ui.en.ftl parses");
        let zh = message_ids(UI_ZH).expect("ui.zh.ftl parses");
        for (name, ids) in [("ui.en.ftl", &en), ("ui.zh.ftl", &zh)] {
            let set: BTreeSet<_> = ids.iter().collect();
            assert_eq!(set.len(), ids.len(), "{name} defines a message twice");
        }
        let en: BTreeSet<_> = en.into_iter().collect();
        let zh: BTreeSet<_> = zh.into_iter().collect();
        let only_en: Vec<_> = en.difference(&zh).collect();
        let only_zh: Vec<_> = zh.difference(&en).collect();
        assert!(
            only_en.is_empty() && only_zh.is_empty(),
            "messages in one language only: en {only_en:?}, zh {only_zh:?}"
        );
        assert!(en.len() > 50, "{}", en.len());
    }

    #[test]
    fn the_zh_catalogue_uses_no_english_sentence() {
        // Every zh UI message has Chinese in it, or is only symbols/terms kept as they are.
        let keep = ["term-p-line", "term-syn-rtt", "term-tls", "term-connect"];
        let b = bundle(Cat::Ui, Lang::Zh);
        let en = bundle(Cat::Ui, Lang::En);
        for id in message_ids(UI_ZH).unwrap() {
            let zh_text = b
                .get_message(&id)
                .and_then(|m| m.value())
                .map(|p| format!("{p:?}"))
                .unwrap_or_default();
            let en_text = en
                .get_message(&id)
                .and_then(|m| m.value())
                .map(|p| format!("{p:?}"))
                .unwrap_or_default();
            if keep.contains(&id.as_str()) || zh_text != en_text {
                continue;
            }
            panic!("{id}: the zh message is the English one");
        }
    }

    #[test]
    fn language_comes_from_the_flag_env_or_locale() {
        let env = |pairs: &[(&str, &str)]| {
            let m: HashMap<String, String> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            Lang::from_env(move |k| m.get(k).cloned())
        };
        assert_eq!(env(&[]), Ok(Lang::En));
        assert_eq!(env(&[("LANG", "zh_CN.UTF-8")]), Ok(Lang::Zh));
        assert_eq!(env(&[("LANG", "zh_TW.UTF-8")]), Ok(Lang::Zh));
        assert_eq!(env(&[("LANG", "de_DE.UTF-8")]), Ok(Lang::En));
        // LC_ALL wins over LANG, LC_MESSAGES over LANG; empty ones are skipped.
        assert_eq!(
            env(&[("LC_ALL", "C"), ("LANG", "zh_CN.UTF-8")]),
            Ok(Lang::En)
        );
        assert_eq!(
            env(&[("LC_ALL", ""), ("LC_MESSAGES", "zh_CN"), ("LANG", "C")]),
            Ok(Lang::Zh)
        );
        assert_eq!(
            env(&[("NETDOCTOR_LANG", "en"), ("LANG", "zh_CN.UTF-8")]),
            Ok(Lang::En)
        );
        assert_eq!(env(&[("NETDOCTOR_LANG", "zh")]), Ok(Lang::Zh));
        let e = env(&[("NETDOCTOR_LANG", "fr")]).unwrap_err();
        assert!(e.contains("NETDOCTOR_LANG") && e.contains("en, zh"), "{e}");
    }

    #[test]
    fn missing_messages_and_arguments_show_instead_of_panicking() {
        assert_eq!(Lang::Zh.t("no-such-message"), "⟦no-such-message⟧");
        let s = Lang::En.ui("term-syn-refused", &[]);
        assert!(s.contains("{$refused}"), "{s}");
    }

    #[test]
    fn pads_and_wraps_by_terminal_width() {
        assert_eq!(pad("SYN RTT", 10), "SYN RTT   ");
        assert_eq!(pad("握手", 6), "握手  ");
        assert_eq!(pad("too long", 3), "too long");
        // English wraps at spaces exactly as before.
        let text = "the quick brown fox jumps over the lazy dog";
        let lines = wrap(text, 10);
        assert!(lines.iter().all(|l| l.chars().count() <= 10), "{lines:?}");
        assert_eq!(lines.join(" "), text);
        // Chinese wraps between characters, keeps spaces around Latin words, and never starts a
        // line with a comma.
        let zh = "服务器的 Nagle 算法在等待客户端的延迟确认，每个请求增加约 40 ms。";
        let lines = wrap(zh, 16);
        assert!(lines.len() > 1, "{lines:?}");
        assert!(lines.iter().all(|l| width(l) <= 16), "{lines:?}");
        assert!(lines.iter().all(|l| !l.starts_with('，')), "{lines:?}");
        // …nor ends one with an opening parenthesis.
        for w in 4..30 {
            let lines = wrap("开启时（TCP_NODELAY 关闭），内核（一段）会扣住", w);
            assert!(lines.iter().all(|l| !l.ends_with('（')), "{w}: {lines:?}");
            assert!(lines.iter().all(|l| !l.starts_with('）')), "{w}: {lines:?}");
        }
        assert_eq!(lines.concat().replace(' ', ""), zh.replace(' ', ""));
        assert!(lines.concat().contains("Nagle"), "{lines:?}");
    }
}
