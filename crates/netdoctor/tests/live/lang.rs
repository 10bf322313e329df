//! `--lang zh`: the terminal and HTML reports in Simplified Chinese, the JSON the same in every
//! language, and the language taken from `NETDOCTOR_LANG` or the locale when no flag is given.
//!
//! The Chinese terminal report of the committed Nagle capture is pinned by a golden file
//! (`tests/golden/zh/`); regenerate it after a deliberate change of the zh catalogue with
//! `UPDATE_GOLDEN=1 cargo test --release -p netdoctor --test live lang::` and review the diff.

use crate::common::*;
use netdoctor::analyze::analyze;
use netdoctor::cli::{AnalyzeArgs, OutputArgs};
use netdoctor::output::Progress;
use netdoctor_report::{Format, Lang, Report};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The binary with a clean language environment plus `env`.
fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_netdoctor"));
    c.args(args)
        .env("NETDOCTOR_QUIET", "1")
        .env("NO_COLOR", "1")
        .env_remove("NETDOCTOR_LANG")
        .env_remove("LC_ALL")
        .env_remove("LC_MESSAGES")
        .env_remove("LANG");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run netdoctor")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("UTF-8 output")
}

fn capture(name: &str) -> PathBuf {
    captures_dir().join(name)
}

fn report_of(path: &Path) -> Report {
    let args = AnalyzeArgs {
        file: path.to_path_buf(),
        server_port: None,
        follow: false,
        follow_timeout: None,
        follow_idle: None,
        html: None,
        slo: None,
        jobs: None,
        dump_flags: None,
        output: OutputArgs::of(Format::Terminal),
    };
    analyze(&args, &Progress::new()).unwrap_or_else(|e| panic!("{}: {e:#}", path.display()))
}

fn render(report: &Report, format: Format, lang: Lang) -> String {
    let mut out = Vec::new();
    format.write_report(report, lang, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// Every committed capture.
fn captures() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(captures_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.ends_with(".pcap") || n.ends_with(".pcapng")
        })
        .collect();
    v.sort();
    assert!(v.len() >= 10, "{v:?}");
    v
}

fn has_chinese(s: &str) -> bool {
    s.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
}

/// Each run of digits (with its thousands commas) replaced by one `#`: what a run-to-run
/// comparison can pin.
fn mask_digits(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            while chars
                .peek()
                .is_some_and(|n| n.is_ascii_digit() || *n == ',')
            {
                chars.next();
            }
            out.push('#');
        } else {
            out.push(c);
        }
    }
    out
}

/// Catalogue markers that a missing message or argument leaves.
fn assert_whole(text: &str, ctx: &str) {
    assert!(!text.contains('⟦'), "{ctx}: a message is missing:\n{text}");
    assert!(
        !text.contains("{$"),
        "{ctx}: an argument is missing:\n{text}"
    );
}

#[test]
fn analyze_lang_zh_of_the_nagle_capture_matches_its_golden_file() {
    let _turn = crate::common::file_turn(file!());
    let path = capture("nagle-full.pcapng");
    let o = run(&["analyze", path.to_str().unwrap(), "--lang", "zh"], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let got = stdout(&o).replace(&captures_dir().display().to_string(), "testdata/captures");
    // The same text in-process (the flag reaches the sink, nothing else differs).
    let in_process =
        anstream::adapter::strip_str(&render(&report_of(&path), Format::Terminal, Lang::Zh))
            .to_string()
            .replace(&captures_dir().display().to_string(), "testdata/captures");
    assert_eq!(got, in_process);
    let golden =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/zh/nagle-full.pcapng.txt");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(golden.parent().unwrap()).unwrap();
        std::fs::write(&golden, &got).unwrap();
    }
    let want = std::fs::read_to_string(&golden).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (make it with UPDATE_GOLDEN=1 cargo test --release -p netdoctor --test live lang::)",
            golden.display()
        )
    });
    assert_eq!(
        got, want,
        "the zh report changed (UPDATE_GOLDEN=1 regenerates)"
    );
    // What it must say, in the terms engineers use.
    for s in [
        "测量结果",
        "结论：有问题",
        "[严重] nagle_delayed_ack",
        "服务端的 Nagle 算法在等待客户端的延迟确认",
        "原因：",
        "证据：",
        "修复：",
        "`tcp_nodelay on;`",
        "检查",
    ] {
        assert!(got.contains(s), "missing {s:?}:\n{got}");
    }
    for s in [
        "Measured",
        "Verdict:",
        "Why:",
        "Fix:",
        "Evidence:",
        "Checks",
    ] {
        assert!(!got.contains(s), "English heading {s:?} left:\n{got}");
    }
}

#[test]
fn every_capture_renders_whole_in_chinese_and_its_json_is_the_same_in_both_languages() {
    let _turn = crate::common::file_turn(file!());
    for path in captures() {
        let report = report_of(&path);
        let ctx = path.display().to_string();
        let zh = render(&report, Format::Terminal, Lang::Zh);
        assert_whole(&zh, &ctx);
        assert!(has_chinese(&zh), "{ctx}");
        let mut html = Vec::new();
        netdoctor_report::html::render_in(&report, Lang::Zh, &mut html).unwrap();
        let html = String::from_utf8(html).unwrap();
        assert_whole(&html, &ctx);
        assert!(html.contains(r#"<html lang="zh-CN">"#), "{ctx}");
        assert!(html.contains("<h2>延迟分布</h2>"), "{ctx}");
        for f in &report.findings {
            let t = netdoctor_report::i18n::findings::texts(f, Lang::Zh);
            assert!(has_chinese(&t.summary), "{ctx}: {}", f.id);
            assert!(zh.contains(t.summary.as_ref()), "{ctx}: {}", f.id);
            // English summaries never leak into the Chinese report.
            assert!(!zh.contains(&f.summary), "{ctx}: {}", f.id);
        }
        assert_eq!(
            render(&report, Format::Json, Lang::Zh),
            render(&report, Format::Json, Lang::En),
            "{ctx}: JSON differs by language"
        );
        assert_eq!(
            render(&report, Format::Json, Lang::En),
            {
                let mut out = Vec::new();
                Format::Json.write(&report, &mut out).unwrap();
                String::from_utf8(out).unwrap()
            },
            "{ctx}"
        );
    }
}

/// The JSON of a run, without the wall-clock time it took.
fn json_without_elapsed(o: &Output) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    v.as_object_mut().unwrap().remove("elapsed_s");
    v
}

#[test]
fn json_through_the_binary_is_the_same_with_lang_zh() {
    let _turn = crate::common::file_turn(file!());
    let path = capture("nagle-full.pcapng");
    let p = path.to_str().unwrap();
    let en = run(&["analyze", p, "--json"], &[]);
    let zh = run(&["analyze", p, "--json", "--lang", "zh"], &[]);
    let env = run(&["analyze", p, "--json"], &[("LANG", "zh_CN.UTF-8")]);
    assert_eq!(en.status.code(), Some(1), "{}", stderr(&en));
    assert_eq!(json_without_elapsed(&en), json_without_elapsed(&zh));
    assert_eq!(json_without_elapsed(&en), json_without_elapsed(&env));
    let summary = json_without_elapsed(&zh)["findings"][0]["summary"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(summary.starts_with("Server's Nagle algorithm"), "{summary}");
}

#[test]
fn language_follows_netdoctor_lang_then_the_locale_and_the_flag_wins() {
    let _turn = crate::common::file_turn(file!());
    let path = capture("nagle-full.pcapng");
    let p = path.to_str().unwrap();
    let zh_marker = "结论：";
    let en_marker = "Verdict:";
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);
    let cases: [Case; 6] = [
        (&[], &[], en_marker),
        (&[], &[("NETDOCTOR_LANG", "zh")], zh_marker),
        (&[], &[("LANG", "zh_CN.UTF-8")], zh_marker),
        (&[], &[("LC_ALL", "C"), ("LANG", "zh_CN.UTF-8")], en_marker),
        (&["--lang", "en"], &[("NETDOCTOR_LANG", "zh")], en_marker),
        (&["--lang", "zh"], &[("LANG", "C.UTF-8")], zh_marker),
    ];
    for (flags, env, want) in cases {
        let mut args = vec!["analyze", p];
        args.extend_from_slice(flags);
        let o = run(&args, env);
        assert!(
            stdout(&o).contains(want),
            "{flags:?} {env:?}: want {want:?}:\n{}",
            stdout(&o)
        );
    }
    let bad = run(&["analyze", p], &[("NETDOCTOR_LANG", "fr")]);
    assert_eq!(bad.status.code(), Some(2));
    let err = stderr(&bad);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("NETDOCTOR_LANG") && err.contains("'fr'") && err.contains("en, zh"),
        "{err}"
    );
    let bad = run(&["analyze", p, "--lang", "de"], &[]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("[possible values: en, zh]"),
        "{}",
        stderr(&bad)
    );
}

#[test]
fn html_lang_zh_through_the_binary() {
    let _turn = crate::common::file_turn(file!());
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("r.html");
    let path = capture("nagle-full.pcapng");
    let o = run(
        &[
            "analyze",
            path.to_str().unwrap(),
            "--lang",
            "zh",
            "--html",
            page.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    assert_whole(&html, "html");
    for s in [
        r#"<html lang="zh-CN">"#,
        "<h2>发现</h2>",
        "服务端的 Nagle 算法在等待客户端的延迟确认",
        "<h2>分组证据</h2>",
        "迟到的 ACK：延迟确认定时器到期",
        "被扣住的分段",
        "<h2>检查</h2>",
    ] {
        assert!(html.contains(s), "missing {s:?}");
    }
}

/// `demo --lang zh` on the built-in server (root only: namespaces and capture): the whole
/// report in Chinese. Its numbers change from run to run, so digits are masked.
#[test]
fn demo_lang_zh_prints_the_whole_report_in_chinese() {
    let _turn = crate::common::file_turn(file!());
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces, packet capture)");
        return;
    }
    let o = run(
        &["demo", "--lang", "zh", "-d", "3s", "--server", "builtin"],
        &[],
    );
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{}\n{text}", stderr(&o));
    assert_whole(&text, "demo");
    let masked = mask_digits(&text);
    for s in [
        "参考案例：同一个服务器、同一个页面测两次",
        "服务器：netdoctor 内置的参考服务器（不是 nginx）。",
        "SYN RTT（中位数）",
        "负载下延迟 p#",
        "netdoctor 对慢服务器的完整报告：",
        "测量结果",
        "  负载下         # 个连接，#.# s：# 个请求，# 请求/秒，错误 #",
        "结论：有问题 — # 项发现；第一项解释了大部分延迟",
        "[严重] nagle_delayed_ack  （传输层，需修改的一方：服务端，置信度 #.#）",
        "服务端的 Nagle 算法在等待客户端的延迟确认：每个受影响的请求增加约 #.# ms",
        "  原因：",
        "  证据：",
        "    连接 ",
        "  修复：",
        "检查",
        "快的服务器结论为健康；慢的服务器的根因从它的分组中找到了。",
    ] {
        assert!(masked.contains(s), "missing {s:?}:\n{masked}");
    }
    // The comparison (A = tcp_nodelay off, B = on): its verdict row, the slow server Nagle
    // and the fixed one healthy; the finding fixed; the latency test; the overall verdict.
    assert!(
        masked.lines().any(|l| l.starts_with("  结论 ")
            && l.contains("有问题: nagle_delayed_ack")
            && l.trim_end().ends_with("健康")),
        "{masked}"
    );
    assert!(
        masked.lines().any(|l| l.starts_with("  已修复 ")
            && l.contains(" nagle_delayed_ack ")
            && l.contains(" A: 严重：")),
        "{masked}"
    );
    for s in [
        "负载下每秒请求数",
        "延迟：B 更快 — 延迟显著降低（p# #.# ms → ",
        "中位请求更快（典型请求 ×#.#",
        "\n发现\n",
        "结论：已修复 — A 有问题，B 已健康；已修复：nagle_delayed_ack；延迟显著降低（p# #.# ms → ",
    ] {
        assert!(masked.contains(s), "missing {s:?}:\n{masked}");
    }
    assert!(
        masked.contains("延迟确认：ACK 在 #.# ms 后才到；被扣住的 # 字节在它之后 #.# ms 发出"),
        "{masked}"
    );
    for s in [
        "Measured",
        "Verdict:",
        "Why:",
        "Fix:",
        "The reference case",
        "ACK after",
        "Findings",
        "FIXED",
        "Latency:",
        "B is faster",
    ] {
        assert!(!text.contains(s), "English {s:?} left:\n{text}");
    }
}
