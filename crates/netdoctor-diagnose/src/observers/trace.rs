//! The route in a diagnosis (issue 11): when the target is not on a directly connected network
//! (the run's namespace routes it through a gateway, [`Host::next_hop`]), a TCP trace to the
//! target's port, [`ROUNDS`] rounds, bounded in time (at most `ROUNDS × TIMEOUT`), before the
//! other observers start — so its probe connections are neither captured nor counted nor
//! loaded alongside. At the end its findings (`high_base_rtt`, compared with the load's median
//! latency; `route_problem`) join the detectors'. Hop names are not looked up (no PTR
//! queries from a diagnosis).
//!
//! [`Host::next_hop`]: crate::host::Host::next_hop

use crate::observer::{Observer, Outcome, RunCtx};
use netdoctor_report::{Check, CheckName};
use netdoctor_route::findings::{Thresholds, trace_findings};
use netdoctor_route::route_table::NextHop;
use netdoctor_route::trace::assess::assess;
use netdoctor_route::trace::{Protocol, TraceOptions, TraceResult};
use std::net::IpAddr;
use std::time::Duration;

/// Rounds of probes (one probe per hop per round).
pub const ROUNDS: u32 = 6;
/// Time between the starts of two rounds.
pub const INTERVAL: Duration = Duration::from_millis(100);
/// How long one round waits for answers.
pub const TIMEOUT: Duration = Duration::from_millis(500);

#[derive(Default)]
pub struct TraceObserver {
    traced: Option<(TraceResult, NextHop)>,
}

/// The trace a diagnosis runs to `target` on `port`.
pub fn trace_options(target: IpAddr, port: u16) -> TraceOptions {
    let mut o = TraceOptions::new(target, Protocol::Tcp);
    o.port = port;
    o.rounds = ROUNDS;
    o.interval = INTERVAL;
    o.timeout = TIMEOUT;
    o.names = false;
    o
}

impl Observer for TraceObserver {
    fn name(&self) -> CheckName {
        CheckName::Trace
    }

    fn start(&mut self, ctx: &RunCtx<'_>) -> Result<(), Check> {
        let ip = ctx.addr.ip();
        let skipped = |why: String| Check::skipped(CheckName::Trace, why);
        let hop = ctx
            .host
            .next_hop(ip)
            .map_err(|e| Check::failed(CheckName::Trace, format!("route lookup: {e}")))?;
        let hop = match hop {
            None => return Err(skipped(format!("{ip}: IPv6 is off in this namespace"))),
            Some(NextHop::Local) => {
                return Err(skipped(format!("{ip} is an address of this host")));
            }
            Some(NextHop::Direct { iface }) => {
                return Err(skipped(format!(
                    "{ip} is on a directly connected network ({iface}): no router in between"
                )));
            }
            Some(NextHop::NoRoute) => {
                return Err(skipped(format!("this namespace has no route to {ip}")));
            }
            Some(h @ NextHop::Gateway { .. }) => h,
        };
        let result = ctx
            .host
            .trace(&trace_options(ip, ctx.addr.port()))
            .map_err(|e| Check::failed(CheckName::Trace, e))?;
        self.traced = Some((result, hop));
        Ok(())
    }

    fn finish(mut self: Box<Self>, _ctx: &RunCtx<'_>, out: &mut Outcome) {
        let Some((t, hop)) = self.traced.take() else {
            return;
        };
        let th = Thresholds::default();
        out.findings
            .extend(trace_findings(&t, out.load_p50_ms, &th));
        let hops = t.hops.len();
        let best = t.destination().and_then(|d| d.best_ms);
        let mut json = serde_json::to_value(&t).unwrap_or_default();
        if let Some(obj) = json.as_object_mut() {
            obj.insert(
                "next_hop".into(),
                serde_json::to_value(&hop).unwrap_or_default(),
            );
            obj.insert(
                "hop_assessment".into(),
                serde_json::to_value(assess(&t, &th.hops)).unwrap_or_default(),
            );
        }
        out.measurements.trace = Some(json);
        let gateway = match &hop {
            NextHop::Gateway {
                gateway: IpAddr::V6(v6),
                iface,
            } if v6.is_unicast_link_local() => format!("{v6}%{iface}"),
            NextHop::Gateway { gateway, .. } => gateway.to_string(),
            _ => String::new(),
        };
        out.checks.push(Check::ok_with(
            CheckName::Trace,
            match best {
                Some(ms) if t.reached => format!(
                    "tcp trace via {gateway}: {hops} hop(s), best round trip to the target {ms:.1} ms"
                ),
                _ => format!(
                    "tcp trace via {gateway}: the target did not answer within {hops} hop(s)"
                ),
            },
        ));
    }
}
