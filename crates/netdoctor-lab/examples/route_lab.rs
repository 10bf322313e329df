//! Runs the route lab until stdin closes or a signal arrives, for scripts (bench/route-vs-peers.sh)
//! and for poking at it by hand (needs root):
//!
//! ```text
//! cargo run --release -p netdoctor-lab --example route_lab -- --rtt-ms 30 --loss 0 --resolver slow:300
//! ```
//! `--case NAME` starts a named case (slow-dns, dead-dns, no-dns, ptr-timeout, far-server,
//! lossy-hop, icmp-ratelimit); later flags adjust it. It prints one line `ready client=<netns> server=<ip> nameserver=<ip> resolv=<path>` when the
//! lab is up, then waits; closing stdin (or Ctrl-C) removes everything.

use netdoctor_lab::nameserver::Behavior;
use netdoctor_lab::route_lab::{self, Resolver, RouteLab, RouteLabConfig};
use std::io::Read;
use std::time::Duration;

fn main() {
    let mut cfg = RouteLabConfig::default();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().unwrap_or_default();
        match a.as_str() {
            "--rtt-ms" => {
                let ms: f64 = val().parse().expect("--rtt-ms NUMBER");
                cfg.one_way_delay = Duration::from_secs_f64(ms / 2000.0);
            }
            "--case" => {
                let v = val();
                cfg = RouteLabConfig::case(&v).unwrap_or_else(|| {
                    let names: Vec<&str> = route_lab::CASES.iter().map(|c| c.0).collect();
                    eprintln!("unknown case {v:?}: use one of {}", names.join(", "));
                    std::process::exit(2);
                });
            }
            "--loss" => cfg.loss = val().parse().expect("--loss FRACTION"),
            "--r1-icmp-ratelimit-ms" => {
                cfg.r1_icmp_ratelimit_ms = Some(val().parse().expect("--r1-icmp-ratelimit-ms MS"))
            }
            "--resolver" => {
                let v = val();
                cfg.resolver = match v.split_once(':') {
                    _ if v == "lab" => Resolver::Lab(Behavior::default()),
                    _ if v == "dead" => Resolver::Dead,
                    _ if v == "empty" => Resolver::Empty,
                    _ if v == "ptr-drop" => Resolver::Lab(Behavior {
                        drop_reverse: true,
                        ..Default::default()
                    }),
                    Some(("slow", ms)) => Resolver::Lab(Behavior {
                        delay: Duration::from_millis(ms.parse().expect("slow:MS")),
                        ..Default::default()
                    }),
                    _ => {
                        eprintln!("--resolver lab|dead|empty|ptr-drop|slow:MS");
                        std::process::exit(2);
                    }
                };
            }
            other => {
                eprintln!("unknown argument {other}");
                std::process::exit(2);
            }
        }
    }
    route_lab::cleanup_on_signal().expect("signal handler");
    let lab = match RouteLab::start(&cfg) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("route lab: {e}");
            std::process::exit(1);
        }
    };
    println!(
        "ready client={} server={} nameserver={} resolv={}",
        lab.client_netns(),
        route_lab::SERVER_IP,
        route_lab::NAMESERVER_IP,
        lab.client_resolv_conf().display()
    );
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    if let Err(e) = lab.stop() {
        eprintln!("route lab: {e}");
        std::process::exit(1);
    }
}
