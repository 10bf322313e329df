//! Starts a lab, prints `ready <server netns> <client netns> <url>...` on stdout, and holds it
//! until SIGINT/SIGTERM/SIGHUP, which tear it down (`cleanup_on_signal`) and exit with 130.
//!
//! Usage: `labhold [NAME] [STATE_DIR] [builtin]` (defaults: "netdoctor",
//! /run/netdoctor/lab-NAME, nginx; `builtin`: the built-in reference server instead of nginx).
//! Used by the Ctrl-C and leftover tests, and handy for measuring the lab by hand.

use std::io::Write;
use std::process::ExitCode;

use netdoctor_lab::{Lab, LabConfig, cleanup_on_signal};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut cfg = LabConfig::new(&args.next().unwrap_or_else(|| "netdoctor".to_string()));
    if let Some(dir) = args.next() {
        cfg.state_dir = dir.into();
    }
    // Register the handler before starting, so a signal during start also cleans up.
    if let Err(e) = cleanup_on_signal(&cfg) {
        eprintln!("labhold: {e}");
        return ExitCode::from(2);
    }
    let builtin = args.next().as_deref() == Some("builtin");
    let started = if builtin {
        Lab::start_builtin(&cfg)
    } else {
        Lab::start(&cfg)
    };
    let lab = match started {
        Ok(lab) => lab,
        Err(e) => {
            eprintln!("labhold: {e}");
            return ExitCode::from(2);
        }
    };
    let urls: Vec<&str> = lab.servers().iter().map(|s| s.url.as_str()).collect();
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "ready {} {} {}",
        lab.server_netns(),
        lab.client_netns(),
        urls.join(" ")
    );
    let _ = out.flush();
    drop(out);
    // Hold the lab; the signal thread tears it down and exits the process.
    loop {
        std::thread::park();
    }
}
