//! netdoctor-probe: active, cheap probes of one target.
//!
//! - [`resolve`]: host name → addresses with the system resolver (getaddrinfo).
//! - [`syn_rtt`]: TCP SYN round-trip time with a raw socket and kernel timestamps, like
//!   `hping3 -S`; [`connect_rtt`] times `connect()` instead and is the fallback without
//!   CAP_NET_RAW.
//! - [`http_timing`]: one HTTP/1.1 request broken into connect, time to first byte and total.
//! - [`keepalive_probe`]: a short keep-alive probe: does the server keep connections, and what
//!   a connection per request costs (setup timed apart from the requests).
//! - [`pmtu_probe`]: which packet sizes get from the target to this host (a connection per
//!   size, its SYN announcing a smaller MSS each): a path MTU black hole, measured.
//!
//! - [`ProbeError::failure`]: what a failed probe says about the cause and side ([`Failure`]),
//!   for the diagnosis's preflight.
//!
//! All results are plain serializable data; errors ([`ProbeError`]) name the operation and the
//! address or host.

mod classify;
mod error;
mod h2;
mod http;
mod keepalive;
mod model;
mod packet;
mod pmtu;
mod raw;
mod syn;
mod sys;

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

pub use classify::Failure;
pub use error::ProbeError;
pub use http::{HttpProbeConfig, HttpTiming, http_timing};
pub use keepalive::{KeepAliveConfig, KeepAliveProbe, keepalive_probe};
pub use model::{SynMethod, SynProbe, SynProbeConfig};
pub use netdoctor_load::tls::CertificateProblem;
pub use pmtu::{BlackHole, PmtuConfig, PmtuProbe, PmtuStep, StepOutcome, pmtu_probe};
pub use syn::{connect_rtt, syn_rtt};

/// Resolves `host:port` with the system resolver (getaddrinfo). IP literals (also `[::1]`) are
/// returned as they are. The error names the host: `resolve nosuch.invalid: name or service not
/// known`.
pub fn resolve(host: &str, port: u16) -> Result<Vec<SocketAddr>, ProbeError> {
    let err = |msg: String| ProbeError::Resolve {
        host: host.to_string(),
        msg,
    };
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if bare.is_empty() {
        return Err(err("empty host name".into()));
    }
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let addrs = (bare, port).to_socket_addrs().map_err(|e| {
        // std says "failed to lookup address information: Name or service not known"
        let s = netdoctor_sys::os_error::describe(&e);
        let s = s
            .strip_prefix("failed to lookup address information: ")
            .unwrap_or(&s);
        let mut c = s.chars();
        err(match c.next() {
            Some(f) => f.to_lowercase().chain(c).collect(),
            None => "unknown error".into(),
        })
    })?;
    let mut out: Vec<SocketAddr> = Vec::new();
    for a in addrs {
        if !out.contains(&a) {
            out.push(a);
        }
    }
    if out.is_empty() {
        return Err(err("no addresses".into()));
    }
    Ok(out)
}
