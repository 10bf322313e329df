//! Runs the probes against one target and prints the results:
//! `cargo run -p netdoctor-probe --example probe -- 127.0.0.1 8080 [count]`.

use std::time::Duration;

use netdoctor_probe::{
    HttpProbeConfig, SynProbeConfig, connect_rtt, http_timing, resolve, syn_rtt,
};

fn main() {
    let mut args = std::env::args().skip(1);
    let host = args.next().unwrap_or_else(|| "127.0.0.1".into());
    let port = args.next().and_then(|p| p.parse().ok()).unwrap_or(80);
    let count = args.next().and_then(|c| c.parse().ok()).unwrap_or(5);
    let addrs = match resolve(&host, port) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let cfg = SynProbeConfig {
        count,
        ..SynProbeConfig::default()
    };
    println!("raw:     {:?}", syn_rtt(addrs[0], &cfg));
    println!("connect: {:?}", connect_rtt(addrs[0], &cfg));
    let http = HttpProbeConfig {
        host: host.clone(),
        path: "/".into(),
        timeout: Duration::from_secs(5),
        connect_timeout: None,
        tls: None,
        ..Default::default()
    };
    match http_timing(addrs[0], &http) {
        Ok(t) => println!("http:    {t:?}"),
        Err(e) => println!("http:    error: {e}"),
    }
}
