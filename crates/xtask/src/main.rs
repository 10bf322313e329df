//! `cargo xtask test`: the README's test command. It sets the machine up and runs the whole
//! suite, so a fresh Debian machine needs nothing but the clone (and Rust):
//!
//! 1. as root, installs the Debian packages in [`PACKAGES`] that are missing (`apt-get update`
//!    once, `DEBIAN_FRONTEND=noninteractive`, services denied from starting during the install
//!    through `/usr/sbin/policy-rc.d`, removed afterwards only if this run created it); without
//!    root it says what it cannot install and that the tests needing it will skip;
//! 2. builds the test binaries (`cargo test --no-run`), then runs `cargo test --workspace
//!    --release --no-fail-fast` (one failing test binary does not hide the others), and says how
//!    long each took; arguments after `test` replace `--workspace`
//!    (`cargo xtask test -p netdoctor --test cli`);
//! 3. fails when the run left a network namespace behind (`nd*`/`netdoctor*` names that were not
//!    there before it started).
//!
//! `cargo xtask setup` does step 1 only (and installs cargo-deb, see [`deb`]); `cargo xtask deb`
//! builds the Debian package; `cargo xtask packages` prints the list. [`PACKAGES`] is
//! the one list of what the tests need: `.ci/run` calls `cargo xtask test` and has none.
//! Hand-written on std only (plus signal-hook): a few process calls do not need a framework, and
//! the xtask must build fast on a fresh machine.

mod deb;

use std::collections::BTreeSet;
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Every Debian package the test suite uses, with what for. Tests whose package is missing skip
/// with one line naming the tool and this package.
pub const PACKAGES: &[(&str, &str)] = &[
    ("iproute2", "ip netns/link: every lab"),
    ("util-linux", "setpriv: the unprivileged tests"),
    ("nginx-light", "the reference lab, HTTPS and watch tests"),
    ("wrk", "load peer in the host lab test"),
    ("tcpdump", "captures streamed into analyze"),
    ("tshark", "cross-checks of written pcaps"),
    (
        "iptables",
        "drops inside lab namespaces (syn-flood case, eBPF drop test)",
    ),
    ("hping3", "the syn-flood lab case"),
    ("openssl", "test certificates for the TLS tests"),
    ("clang", "netdoctor-bpf's build.rs: the eBPF programs"),
    ("llvm", "netdoctor-bpf's build.rs: the eBPF programs"),
    ("libbpf-dev", "netdoctor-bpf's build.rs: bpf_helpers.h"),
    (
        "bpftool",
        "netdoctor-bpf's build.rs: vmlinux.h from BTF; the eBPF tests",
    ),
    ("chromium", "the HTML report test (headless render)"),
    (
        "prometheus",
        "the watch exporter test (prometheus, promtool)",
    ),
    ("redis-server", "the passive Redis test"),
    ("redis-tools", "redis-benchmark: the passive Redis test"),
    ("iperf3", "throughput peer"),
    ("nghttp2-client", "h2load, nghttpd: HTTP/2 tests"),
    ("netsniff-ng", "trafgen: packet generator tests"),
    ("python3-grpcio", "gRPC test server"),
    ("python3-h2", "HTTP/2 test server"),
    ("tcptrace", "analysis peer"),
    ("ethtool", "interface offload tests"),
    ("dnsutils", "dig: DNS peer"),
    ("traceroute", "trace peer"),
    ("man-db", "man: the man pages render"),
    ("curl", "the metrics endpoint's TLS and basic-auth test"),
];

const POLICY_RC_D: &str = "/usr/sbin/policy-rc.d";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let interrupted = Arc::new(AtomicBool::new(false));
    // Ctrl-C reaches apt-get and cargo (same process group) and ends them; this process stays
    // to remove what it made (policy-rc.d) and report.
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        if let Err(e) = signal_hook::flag::register(sig, Arc::clone(&interrupted)) {
            eprintln!("xtask: cannot handle signal {sig}: {e}");
        }
    }
    match args.first().map(String::as_str) {
        Some("test") => test(&args[1..], &interrupted),
        Some("setup") => match setup(&interrupted) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("xtask: {e}");
                ExitCode::FAILURE
            }
        },
        Some("deb") => match deb::deb(&args[1..]) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("xtask: {e}");
                ExitCode::FAILURE
            }
        },
        Some("packages") => {
            for (p, why) in PACKAGES {
                println!("{p:<16} {why}");
            }
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!(
                "usage: cargo xtask test [CARGO-TEST-ARGS]   install what the tests need, run them\n       \
                 cargo xtask setup                     only install (as root)\n       \
                 cargo xtask deb [--no-build]          build the Debian package\n       \
                 cargo xtask packages                  the Debian packages the tests need"
            );
            ExitCode::from(2)
        }
    }
}

fn test(extra: &[String], interrupted: &AtomicBool) -> ExitCode {
    if let Err(e) = setup(interrupted) {
        // A failed install is not the end: the tests whose tool is missing skip and say so.
        eprintln!("xtask: {e}; running the tests anyway");
    }
    if interrupted.load(Ordering::SeqCst) {
        return ExitCode::from(130);
    }
    let before = namespaces();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let scope: Vec<String> = if extra.is_empty() {
        vec!["--workspace".into()]
    } else {
        extra.to_vec()
    };
    // Built first on its own, so the run says how its time splits between building and testing
    // (a failed build still reaches the test command below, which reports it).
    let started = std::time::Instant::now();
    let _ = Command::new(&cargo)
        .args(["test", "--release", "--no-run"])
        .args(&scope)
        .status();
    eprintln!(
        "xtask: test binaries built in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    if interrupted.load(Ordering::SeqCst) {
        return ExitCode::from(130);
    }
    let started = std::time::Instant::now();
    let mut cmd = Command::new(&cargo);
    cmd.args(["test", "--release", "--no-fail-fast"]);
    cmd.args(&scope);
    eprintln!(
        "xtask: cargo test --release --no-fail-fast {}",
        scope.join(" ")
    );
    let status = match cmd.status() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("xtask: cannot run cargo: {e}");
            return ExitCode::FAILURE;
        }
    };
    eprintln!(
        "xtask: tests ran in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    let left: Vec<String> = namespaces().difference(&before).cloned().collect();
    if !left.is_empty() {
        eprintln!(
            "xtask: network namespaces left behind by the tests: {}",
            left.join(" ")
        );
        return ExitCode::FAILURE;
    }
    if status.success() {
        eprintln!("xtask: ok");
        ExitCode::SUCCESS
    } else {
        eprintln!("xtask: tests failed ({status})");
        ExitCode::FAILURE
    }
}

/// Installs the missing Debian packages (when root) and cargo-deb.
fn setup(interrupted: &AtomicBool) -> Result<(), String> {
    let packages = install_packages(interrupted);
    if interrupted.load(Ordering::SeqCst) {
        return packages;
    }
    // cargo-deb is for the package test; its absence makes only that test skip.
    let tools = deb::ensure_cargo_deb();
    packages.and(tools)
}

/// Installs the missing packages when root; otherwise says what will be skipped.
fn install_packages(interrupted: &AtomicBool) -> Result<(), String> {
    let root = is_root();
    if !root {
        eprintln!(
            "xtask: not root: the lab, capture, raw-socket and eBPF tests will skip \
             (each prints why); nothing can be installed"
        );
    }
    let names: Vec<&str> = PACKAGES.iter().map(|(p, _)| *p).collect();
    let missing = missing_packages(&names)?;
    if missing.is_empty() {
        eprintln!("xtask: all {} Debian packages present", names.len());
        return Ok(());
    }
    if !root {
        return Err(format!(
            "missing Debian packages: {} (as root: apt-get install {0}); tests that need them \
             will skip",
            missing.join(" ")
        ));
    }
    eprintln!("xtask: installing {}", missing.join(" "));
    let _policy = DenyServiceStarts::install()?;
    run(
        Command::new("apt-get").args(["update", "-qq"]),
        "apt-get update",
    )?;
    if interrupted.load(Ordering::SeqCst) {
        return Err("interrupted".into());
    }
    run(
        Command::new("apt-get")
            .env("DEBIAN_FRONTEND", "noninteractive")
            .args(["install", "-y", "-qq"])
            .args(&missing)
            .stdout(Stdio::null()),
        "apt-get install",
    )?;
    let still = missing_packages(&names)?;
    if !still.is_empty() {
        return Err(format!("still missing after apt-get: {}", still.join(" ")));
    }
    Ok(())
}

fn run(cmd: &mut Command, what: &str) -> Result<(), String> {
    match cmd.status() {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("{what} failed ({s})")),
        Err(e) => Err(format!("cannot run {what}: {e}")),
    }
}

/// `/usr/sbin/policy-rc.d` answering 101 ("action forbidden") while it lives, so packages do not
/// start their services (prometheus would listen on :9090). Removed on drop, also when the
/// install fails, but only if this run created it: a machine's own policy stays.
struct DenyServiceStarts {
    created: bool,
}

impl DenyServiceStarts {
    fn install() -> Result<DenyServiceStarts, String> {
        use std::os::unix::fs::PermissionsExt;
        if std::path::Path::new(POLICY_RC_D).exists() {
            return Ok(DenyServiceStarts { created: false });
        }
        std::fs::write(POLICY_RC_D, "#!/bin/sh\nexit 101\n")
            .and_then(|()| {
                std::fs::set_permissions(POLICY_RC_D, std::fs::Permissions::from_mode(0o755))
            })
            .map_err(|e| format!("write {POLICY_RC_D}: {e}"))?;
        Ok(DenyServiceStarts { created: true })
    }
}

impl Drop for DenyServiceStarts {
    fn drop(&mut self) {
        if self.created
            && let Err(e) = std::fs::remove_file(POLICY_RC_D)
        {
            eprintln!("xtask: remove {POLICY_RC_D}: {e}");
        }
    }
}

/// The packages of `names` that dpkg does not list as installed.
fn missing_packages<'a>(names: &[&'a str]) -> Result<Vec<&'a str>, String> {
    let out = Command::new("dpkg-query")
        .args(["-W", "-f=${Package} ${db:Status-Status}\\n"])
        .args(names)
        .stderr(Stdio::null())
        .output()
        .map_err(|e| {
            format!("not a Debian system? cannot run dpkg-query ({e}); installing nothing")
        })?;
    // dpkg-query exits 1 when a name is unknown to it: that is "missing", not an error.
    Ok(missing_from_dpkg_query(
        &String::from_utf8_lossy(&out.stdout),
        names,
    ))
}

/// Parses `dpkg-query -W -f='${Package} ${db:Status-Status}\n'` output: a name is present only
/// when a line says it is `installed` (a removed package still listed as `config-files`, or one
/// dpkg has never heard of, is missing). Architecture-qualified names (`libfoo:amd64`) count for
/// the plain name.
fn missing_from_dpkg_query<'a>(output: &str, names: &[&'a str]) -> Vec<&'a str> {
    let installed: BTreeSet<&str> = output
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(_, status)| status.trim() == "installed")
        .map(|(pkg, _)| pkg.split(':').next().unwrap_or(pkg))
        .collect();
    names
        .iter()
        .copied()
        .filter(|n| !installed.contains(n))
        .collect()
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| euid_from_status(&s))
        == Some(0)
}

/// The effective uid: the second field of the `Uid:` line of `/proc/self/status`.
fn euid_from_status(status: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|u| u.parse().ok())
}

/// The network namespaces named like the ones netdoctor and its tests make.
fn namespaces() -> BTreeSet<String> {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else {
        return BTreeSet::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with("nd") || n.starts_with("netdoctor"))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_installed_packages_count_as_present() {
        let out = "nginx-light installed\nwrk not-installed\nclang config-files\n\
                   libbpf-dev:amd64 installed\n";
        let names = ["nginx-light", "wrk", "clang", "libbpf-dev", "hping3"];
        assert_eq!(
            missing_from_dpkg_query(out, &names),
            ["wrk", "clang", "hping3"]
        );
        assert_eq!(missing_from_dpkg_query("", &names), names);
    }

    #[test]
    fn euid_is_the_second_uid_field() {
        let s = "Name:\txtask\nUid:\t1000\t0\t0\t0\nGid:\t0\t0\t0\t0\n";
        assert_eq!(euid_from_status(s), Some(0));
        assert_eq!(euid_from_status("Name: x\n"), None);
    }

    /// The real dpkg database: dpkg itself is installed on every Debian system, a made-up name
    /// never is. Skips where there is no dpkg-query.
    #[test]
    fn dpkg_query_finds_dpkg_and_not_a_made_up_package() {
        if Command::new("dpkg-query")
            .arg("--version")
            .output()
            .is_err()
        {
            eprintln!("skipped: needs dpkg-query (a Debian system)");
            return;
        }
        let names = ["dpkg", "nd-no-such-package-xtask"];
        assert_eq!(
            missing_packages(&names).unwrap(),
            ["nd-no-such-package-xtask"]
        );
    }

    #[test]
    fn the_list_has_no_duplicates() {
        let set: BTreeSet<&str> = PACKAGES.iter().map(|(p, _)| *p).collect();
        assert_eq!(set.len(), PACKAGES.len());
    }
}
