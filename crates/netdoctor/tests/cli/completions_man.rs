//! Completions and man pages come from the CLI definition: bash loads the completions and
//! completes every command; `netdoctor man DIR` writes a page per command that `man` renders.

use crate::common;
use clap::CommandFactory;
use common::*;
use std::process::Command;

fn commands() -> Vec<String> {
    netdoctor::Cli::command()
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .map(|s| s.get_name().to_string())
        .collect()
}

#[test]
fn bash_completions_load_and_name_every_command() {
    let bin = env!("CARGO_BIN_EXE_netdoctor");
    // Load them as a user would, then ask the completion function for the first word.
    let script = format!(
        "source <('{bin}' completions bash) || exit 9\n\
         COMP_WORDS=(netdoctor ''); COMP_CWORD=1; COMP_LINE='netdoctor '; COMP_POINT=10\n\
         _netdoctor netdoctor '' netdoctor\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\""
    );
    let o = Command::new("bash")
        .args(["-c", &script])
        .output()
        .expect("run bash");
    assert!(o.status.success(), "{}", stderr(&o));
    let offered: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    let want = commands();
    assert!(want.len() >= 11, "{want:?}");
    for c in &want {
        assert!(
            offered.contains(c),
            "bash does not complete {c}: {offered:?}"
        );
    }
    assert!(!offered.iter().any(|c| c == "run-case"), "{offered:?}");
    for shell in ["zsh", "fish"] {
        let o = netdoctor(&["completions", shell]);
        assert_eq!(o.status.code(), Some(0), "{shell}: {}", stderr(&o));
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("diagnose"),
            "{shell}"
        );
    }
    assert_eq!(netdoctor(&["completions", "tcsh"]).status.code(), Some(2));
}

#[test]
fn a_man_page_per_command_that_man_renders() {
    let dir = tempfile::tempdir().unwrap();
    let o = netdoctor(&["man", dir.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(dir.path().join("netdoctor.1").is_file());
    for c in commands() {
        assert!(
            dir.path().join(format!("netdoctor-{c}.1")).is_file(),
            "no page for {c}"
        );
    }
    if !netdoctor_lab::tools::have(&[("man", "man-db")]) {
        return;
    }
    let o = Command::new("man")
        .args(["-P", "cat", "-l"])
        .arg(dir.path().join("netdoctor-diagnose.1"))
        .env("MANWIDTH", "100")
        .output()
        .unwrap();
    let page = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        page.contains("netdoctor-diagnose") && page.contains("--connections"),
        "{page}"
    );
}
