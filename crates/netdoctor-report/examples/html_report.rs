//! Renders a real report as HTML, to try the HTML sink before the CLI has `--format html`:
//!
//! ```text
//! cargo run --release -p netdoctor-report --example html_report -- testdata/captures/nagle-eth.pcap > nagle.html
//! cargo run --release -p netdoctor-report --example html_report -- --live 10 > live.html
//! ```
//!
//! A capture file is analyzed as `netdoctor analyze` does; `--live SECS` loads the built-in
//! reference server (Nagle on) on 127.0.0.1 for SECS seconds, capturing on `lo` when allowed.
//! The page goes to stdout; its size goes to stderr.

#[path = "../tests/html_common/mod.rs"]
mod html_common;

use std::io::Write;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let report = match args.as_slice() {
        [flag, secs] if flag == "--live" => {
            let Ok(secs) = secs.parse::<u64>() else {
                eprintln!("html_report: --live needs a number of seconds, got {secs:?}");
                std::process::exit(2);
            };
            match html_common::live_report(secs.clamp(1, 600)) {
                Some(r) => r,
                None => std::process::exit(2),
            }
        }
        [file] => {
            let path = std::path::Path::new(file);
            if !path.is_file() {
                eprintln!("html_report: {file}: no such capture file");
                std::process::exit(2);
            }
            html_common::report_from_path(path)
        }
        _ => {
            eprintln!("usage: html_report CAPTURE.pcap | --live SECS");
            std::process::exit(2);
        }
    };
    let page = html_common::render(&report);
    eprintln!("html_report: {} bytes of HTML", page.len());
    if let Err(e) = std::io::stdout().write_all(page.as_bytes()) {
        eprintln!("html_report: write stdout: {e}");
        std::process::exit(2);
    }
}
