//! The HTML report in a real browser: headless Chromium (Debian's `chromium`) opens the pages
//! rendered from a committed capture, from a live load and from hostile text. For each: no
//! console message at all (a blocked fetch, a CSP violation or a script error would log one),
//! the parsed DOM has the verdict, the findings and the ladder diagram, and no element that
//! hostile text could have injected; a full-page screenshot is kept under
//! `$CARGO_TARGET_TMPDIR/html-test/`; the file is under 500 KB.
//!
//! Chromium is driven through its own command line (`--dump-dom` for the DOM after load,
//! `--screenshot` for the picture, `--enable-logging=stderr` for the console) rather than over
//! the DevTools protocol (chromiumoxide, or fantoccini + chromedriver): the page has no script
//! and nothing to click, so the command line sees everything a protocol client would, with no
//! async runtime and dozens of crates to build, and no driver version to match to the browser.
//! Skipped, saying so, when no Chromium is installed (`apt-get install -y chromium`); set
//! `NETDOCTOR_CHROMIUM` to use another binary.

mod html_common;

use html_common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Longest a Chromium run may take before it is killed.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(90);

fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("NETDOCTOR_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

struct Run {
    stdout: String,
    stderr: String,
}

/// Runs Chromium headless on `page` with `extra` arguments, its output into files next to the
/// page; kills it (by its own pid) when it overruns.
fn browse(bin: &Path, page: &Path, tag: &str, extra: &[String]) -> Run {
    let dir = out_dir();
    let stem = page.file_stem().unwrap().to_string_lossy().to_string();
    let out_path = dir.join(format!("{stem}.{tag}.stdout"));
    let err_path = dir.join(format!("{stem}.{tag}.stderr"));
    let profile = tempfile::tempdir().expect("profile dir");
    let mut cmd = Command::new(bin);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-extensions",
        "--disable-background-networking",
        "--hide-scrollbars",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=3000",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()))
    .args(extra)
    .arg(format!("file://{}", page.display()))
    .stdin(Stdio::null())
    .stdout(std::fs::File::create(&out_path).unwrap())
    .stderr(std::fs::File::create(&err_path).unwrap());
    let mut child = cmd.spawn().expect("start chromium");
    let deadline = Instant::now() + BROWSER_TIMEOUT;
    loop {
        match child.try_wait().expect("wait for chromium") {
            Some(status) => {
                assert!(status.success(), "chromium on {stem} exited with {status}");
                break;
            }
            None if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("chromium on {stem} did not finish in {BROWSER_TIMEOUT:?}");
            }
            None => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    Run {
        stdout: std::fs::read_to_string(&out_path).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
    }
}

/// Console messages Chromium logged for the page (`...:INFO:CONSOLE:...`).
fn console(run: &Run) -> Vec<&str> {
    run.stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .collect()
}

/// Opens `page`, checks the DOM and the console, takes the screenshot; returns the DOM.
fn check_page(bin: &Path, page: &Path, height: u32) -> String {
    let name = page.file_stem().unwrap().to_string_lossy().to_string();
    let size = std::fs::metadata(page).unwrap().len();
    assert!(size < MAX_BYTES as u64, "{name}: {size} bytes");
    let dom = browse(bin, page, "dom", &["--dump-dom".to_string()]);
    let msgs = console(&dom);
    assert!(msgs.is_empty(), "{name}: console messages: {msgs:#?}");
    for want in [
        r#"id="verdict""#,
        r#"class="finding sev-"#,
        r#"class="ladder""#,
    ] {
        assert!(dom.stdout.contains(want), "{name}: parsed DOM lacks {want}");
    }
    let shot = out_dir().join(format!("{name}.png"));
    let _ = std::fs::remove_file(&shot);
    let run = browse(
        bin,
        page,
        "shot",
        &[
            format!("--screenshot={}", shot.display()),
            format!("--window-size=1000,{height}"),
        ],
    );
    let msgs = console(&run);
    assert!(msgs.is_empty(), "{name}: console messages: {msgs:#?}");
    let png = std::fs::read(&shot).unwrap_or_else(|e| panic!("{name}: no screenshot: {e}"));
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{name}: not a PNG");
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    assert_eq!(width, 1000, "{name}: screenshot width");
    println!(
        "{name}: {size} bytes of HTML, screenshot {} ({} bytes)",
        shot.display(),
        png.len()
    );
    dom.stdout
}

/// The comparison page (`diagnose --compare`/`--baseline --html`) of two committed lab reports:
/// no console message, the verdicts and both histograms in the parsed DOM, a screenshot.
#[test]
fn the_comparison_page_opens_cleanly_in_headless_chromium() {
    let Some(bin) = chromium() else {
        eprintln!("skipped: needs chromium (apt-get install chromium)");
        return;
    };
    let read = |name: &str| {
        let p =
            Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/data/compare/{name}.json"));
        netdoctor_report::compare::Compared {
            label: name.into(),
            origin: netdoctor_report::compare::Origin::Run,
            file: None,
            report: netdoctor_report::json::parse(&std::fs::read_to_string(p).unwrap()).unwrap(),
        }
    };
    let c = netdoctor_report::compare::Comparison::new(read("lab-off-1"), read("lab-on-1"));
    let mut html = Vec::new();
    netdoctor_report::compare::html::render(&c, &mut html).unwrap();
    let page = save("compare-lab.html", &String::from_utf8(html).unwrap());
    let dom = browse(&bin, &page, "dom", &["--dump-dom".to_string()]);
    let msgs = console(&dom);
    assert!(msgs.is_empty(), "console messages: {msgs:#?}");
    for want in [
        r#"class="verdict c-fixed""#,
        r#"id="fc-nagle_delayed_ack""#,
        r#"class="bar a""#,
        r#"class="bar b""#,
        r#"class="curve b""#,
    ] {
        assert!(dom.stdout.contains(want), "parsed DOM lacks {want}");
    }
    let shot = out_dir().join("compare-lab.png");
    let _ = std::fs::remove_file(&shot);
    let run = browse(
        &bin,
        &page,
        "shot",
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1000,2400".to_string(),
        ],
    );
    assert!(console(&run).is_empty(), "{:#?}", console(&run));
    let png = std::fs::read(&shot).unwrap_or_else(|e| panic!("no screenshot: {e}"));
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    println!("comparison page: screenshot {}", shot.display());
}

#[test]
fn reports_open_cleanly_in_headless_chromium() {
    let Some(bin) = chromium() else {
        eprintln!("skipped: needs chromium (apt-get install chromium, or set NETDOCTOR_CHROMIUM)");
        return;
    };

    // The console check can fail: a page that logs is caught.
    let noisy = save(
        "console-control.html",
        "<!DOCTYPE html><html><body><p>x</p><script>console.error('control')</script></body></html>",
    );
    let run = browse(&bin, &noisy, "dom", &["--dump-dom".to_string()]);
    assert!(
        console(&run).iter().any(|l| l.contains("control")),
        "the console log is not being read: {}",
        run.stderr
    );

    let nagle = save(
        "nagle-eth.html",
        &render(&report_from_capture("nagle-eth.pcap")),
    );
    let dom = check_page(&bin, &nagle, 3000);
    assert!(
        dom.contains("45.3 ms gap"),
        "the gap label is not in the DOM"
    );

    // A bulk transfer's chart (throughput, in flight against the window) from a lab capture.
    let bulk = save(
        "bulk-shaper.html",
        &render(&report_from_capture("bulk-shaper.pcap.gz")),
    );
    let dom = check_page(&bin, &bulk, 3400);
    assert!(
        dom.contains("Bulk transfers") && dom.contains("<polyline"),
        "the bulk chart is not in the DOM"
    );

    let hostile = save("hostile.html", &render(&hostile_report()));
    let dom = check_page(&bin, &hostile, 2600);
    let lower = dom.to_ascii_lowercase();
    assert!(!lower.contains("<script"), "a script element was parsed");
    assert!(!lower.contains("<img"), "an img element was parsed");
    assert!(dom.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));

    match live_report(LOAD_SECS) {
        Some(r) => {
            let live = save("live-nagle.html", &render(&r));
            let dom = check_page(&bin, &live, 4400);
            for want in [
                r#"id="histogram""#,
                r#"id="percentiles""#,
                r#"id="breakdown-bar""#,
            ] {
                assert!(
                    dom.contains(want) || r.measurements.capture.is_none(),
                    "live page lacks {want}"
                );
            }
        }
        None => println!("live page not checked: the reference server could not start"),
    }
}
