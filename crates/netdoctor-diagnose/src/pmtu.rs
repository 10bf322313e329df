//! After the load: when the answers look lost on the path, which packet sizes get through.
//!
//! The lost-answer sign ([`crate::lost_answer`]: requests timed out after completed
//! handshakes while the server's kernel resent its answer) has more than one cause; the usual
//! one is a path MTU black hole. This stage runs only when the load and eBPF show that sign
//! (the capture's half is checked with the findings), after the observers have finished so
//! its connections stay out of the capture and the kernel's counts: the probe
//! ([`netdoctor_probe::pmtu_probe`]) asks for the target once per packet size, each connection
//! announcing a smaller MSS, for a couple of seconds at most. A size dependence (every size
//! above N stalled, N got through) names the black hole `mss_mtu_problem`; without one, or
//! when the probe cannot run (an https target), the finding stays the path's `http_errors`
//! and the check says why.

use crate::observer::{Outcome, RunCtx};
use crate::run::Progress;
use netdoctor_load::LoadResult;
use netdoctor_probe::{HttpProbeConfig, PmtuConfig};
use netdoctor_report::{Check, CheckName};
use std::time::Duration;

/// Runs the probe when the load and eBPF show the lost-answer sign; its check and result go
/// into `out`.
pub(crate) fn after_load(
    ctx: &RunCtx<'_>,
    load: Option<&LoadResult>,
    syn_rtt_ms: Option<f64>,
    progress: &dyn Progress,
    out: &mut Outcome,
) {
    let plan = ctx.plan;
    let (Some(load), Some(kernel)) = (load, out.measurements.kernel.as_ref()) else {
        return;
    };
    if crate::lost_answer::load_sign(load, kernel).is_none() {
        return;
    }
    if plan.target.tls.is_some() {
        out.checks.push(Check::skipped(
            CheckName::PmtuProbe,
            "the MTU probe speaks plain HTTP only (over TLS the certificate would be the \
             first full-size packet); `ping -M do -s 1472 TARGET` checks the other direction",
        ));
        return;
    }
    let mut cfg = PmtuConfig::new(HttpProbeConfig {
        host: plan.target.host_header.clone(),
        path: plan.target.path.clone(),
        timeout: plan.load.timeout,
        connect_timeout: None,
        tls: None,
        protocol: netdoctor_load::Protocol::Http1,
    });
    // Long enough for a few of the server's retransmission timers on a slow path.
    cfg.wait = Duration::from_secs(2)
        .max(Duration::from_secs_f64(
            syn_rtt_ms.unwrap_or(0.0) * 10.0 / 1e3,
        ))
        .min(Duration::from_secs(10));
    progress.stage(&format!(
        "requests timed out while the server resent its answer: trying packet sizes {}–{} \
         bytes for up to {:.0} s",
        cfg.sizes.iter().min().unwrap_or(&0),
        cfg.sizes.iter().max().unwrap_or(&0),
        cfg.wait.as_secs_f64()
    ));
    match ctx.host.pmtu_probe(ctx.addr, &cfg) {
        Ok(p) => {
            let verdict = match p.black_hole() {
                Some(b) => format!(
                    "packets of {} bytes and more stalled, {} bytes got through",
                    b.smallest_stalled, b.largest_delivered
                ),
                None => "no size dependence".to_string(),
            };
            out.checks.push(Check::ok_with(
                CheckName::PmtuProbe,
                format!("{verdict}: {}", p.describe()),
            ));
            out.pmtu = Some(p);
        }
        Err(e) => out.checks.push(Check::failed(
            CheckName::PmtuProbe,
            crate::run::error_chain(&e),
        )),
    }
}
