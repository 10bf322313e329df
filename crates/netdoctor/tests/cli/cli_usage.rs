//! Usage errors through the real binary: zero or nonsense counts and conflicting output flags
//! exit 2 with a message naming the flag, before anything runs; never a silent change.

use crate::common;
use common::*;

fn assert_usage_error(args: &[&str], needle: &str) {
    let o = netdoctor(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(
        err.contains(needle),
        "{args:?}: expected '{needle}' in: {err}"
    );
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert!(
        o.stdout.is_empty(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stdout)
    );
}

const URL: &str = "http://127.0.0.1:1/";

#[test]
fn zero_and_nonsense_counts_are_usage_errors() {
    for (args, needle) in [
        (&["diagnose", "-c", "0", URL][..], "--connections"),
        (&["diagnose", "-t", "0", URL][..], "--threads"),
        (
            &["diagnose", "-t", "two", URL][..],
            "'two' is not a positive whole number",
        ),
        (&["diagnose", "--syn-probes", "0", URL][..], "--syn-probes"),
        (&["diagnose", "--snaplen", "10", URL][..], "at least 96"),
        (&["diagnose", "--snaplen", "0", URL][..], "--snaplen"),
        (
            &["diagnose", "--snaplen", "1000000", URL][..],
            "at most 262144",
        ),
        (&["diagnose", "-d", "0s", URL][..], "greater than zero"),
        (
            &["diagnose", "--timeout", "0ms", URL][..],
            "greater than zero",
        ),
        (&["diagnose", "-H", "nocolon", URL][..], "Name: value"),
        (&["demo", "-c", "0"][..], "--connections"),
        (&["demo", "-d", "0s"][..], "greater than zero"),
        (
            &["analyze", "--server-port", "0", "x.pcap"][..],
            "--server-port",
        ),
        (
            &["analyze", "--server-port", "70000", "x.pcap"][..],
            "--server-port",
        ),
        (
            &["analyze", "--follow-timeout", "5s", "x.pcap"][..],
            "--follow",
        ),
        (
            &["analyze", "--follow", "--follow-idle", "0s", "x.pcap"][..],
            "greater than zero",
        ),
        (&["load", "-c", "0", URL][..], "at least 1"),
        (&["connect", "-n", "0", "127.0.0.1:1"][..], "at least 1"),
    ] {
        assert_usage_error(args, needle);
    }
}

#[test]
fn output_flags_are_one_choice_on_every_command() {
    for cmd in [
        &["diagnose", URL][..],
        &["analyze", "x.pcap"][..],
        &["load", URL][..],
        &["connect", "127.0.0.1:1"][..],
        &["lab", "status"][..],
        &["demo"][..],
    ] {
        let mut args = cmd.to_vec();
        args.extend(["--json", "--format", "terminal"]);
        assert_usage_error(&args, "--json conflicts with --format terminal");
        let mut args = cmd.to_vec();
        args.extend(["--format", "yaml"]);
        assert_usage_error(&args, "possible values: terminal, json");
    }
}

#[test]
fn json_and_format_json_are_the_same() {
    let path = captures_dir().join("nagle-eth.pcap");
    let p = path.to_str().unwrap();
    let a = netdoctor(&["analyze", "--json", p]);
    let b = netdoctor(&["analyze", "--format", "json", p]);
    let c = netdoctor(&["analyze", "--format", "json", "--json", p]);
    let strip = |o: &std::process::Output| {
        let mut v = json(o);
        v["elapsed_s"] = 0.into();
        v
    };
    assert_eq!(strip(&a), strip(&b));
    assert_eq!(strip(&a), strip(&c));
    let t = netdoctor(&["analyze", "--format", "terminal", p]);
    let text = String::from_utf8_lossy(&t.stdout);
    assert!(text.starts_with("netdoctor analyze "), "{text}");
    assert!(text.contains("[CRITICAL] nagle_delayed_ack"), "{text}");
}

/// Every duration flag takes the same units: `host --log-window 5m` as `diagnose -d 5s`.
#[test]
fn durations_take_units_everywhere() {
    let o = netdoctor(&["host", "--log-window", "5m", "--json"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    assert_eq!(json(&o)["schema"], "netdoctor.host/v1");
    assert_usage_error(&["host", "--log-window", "5x"], "unknown unit 'x'");
    assert_usage_error(&["host", "--watch", "10ms"], "0.1 s to 1 h");
}

/// `--help` says what a newcomer needs: `load` takes https, `lab stop` without a name removes
/// every lab, `lab status` has an exit status.
#[test]
fn help_tells_the_truth() {
    let help = |args: &[&str]| String::from_utf8_lossy(&netdoctor(args).stdout).into_owned();
    let load = help(&["load", "--help"]);
    assert!(
        load.contains("https://") && !load.contains("http only"),
        "{load}"
    );
    let stop = help(&["lab", "stop", "--help"]);
    assert!(stop.contains("removes EVERY lab"), "{stop}");
    let status = help(&["lab", "status", "--help"]);
    assert!(status.contains("1 when it does not"), "{status}");
}

/// `lab status` of a lab that does not run exits 1 (scripts can test it).
#[test]
fn lab_status_of_a_missing_lab_exits_1() {
    let name = format!("ndfresh{}", std::process::id());
    let o = netdoctor(&["lab", "status", "--name", &name, "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(json(&o)["running"], false);
}

/// `--version` says the version, the commit and whether the eBPF observers are built in.
#[test]
fn version_names_the_commit_and_the_ebpf_build() {
    let o = netdoctor(&["--version"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = String::from_utf8_lossy(&o.stdout);
    assert!(
        v.starts_with(&format!("netdoctor {} (commit ", env!("CARGO_PKG_VERSION"))),
        "{v}"
    );
    let ebpf = if netdoctor_bpf::BUILT {
        "eBPF observers built in)"
    } else {
        "eBPF observers not built: "
    };
    assert!(v.contains(ebpf), "{v}");
}
