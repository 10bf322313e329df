//! The socket options of the process serving the target on this host, sampled once while the
//! load holds connections open; at the same moment, `tcp_info` of the load's own connections
//! (their `min_rtt`, a source of the base RTT: [`crate::base_rtt`]).

use crate::observer::{Observer, Outcome, RunCtx};
use crate::plan::defaults::SOCKETS_PER_PROCESS;
use netdoctor_core::observation::Observation;
use netdoctor_core::sockets::ServerSocket;
use netdoctor_report::{Check, CheckName};
use std::time::Duration;

#[derive(Default)]
pub struct SocketsObserver {
    sample: Option<Result<Vec<ServerSocket>, String>>,
    /// The load's connections; `Err`: sock_diag could not be read (the source is then missing).
    client: Option<Result<Vec<netdoctor_observe::sockdiag::ConnInfo>, String>>,
}

impl Observer for SocketsObserver {
    fn name(&self) -> CheckName {
        CheckName::SocketOptions
    }

    fn start(&mut self, _ctx: &RunCtx<'_>) -> Result<(), Check> {
        Ok(())
    }

    fn tick(&mut self, ctx: &RunCtx<'_>, elapsed: Duration) {
        if self.sample.is_none() && elapsed >= ctx.plan.socket_sample_at() {
            self.sample = Some(
                ctx.host
                    .server_sockets(ctx.addr, SOCKETS_PER_PROCESS)
                    .map_err(|e| e.to_string()),
            );
            self.client = Some(ctx.host.client_tcp_info(ctx.addr));
        }
    }

    fn finish(self: Box<Self>, ctx: &RunCtx<'_>, out: &mut Outcome) {
        let addr = ctx.addr;
        let SocketsObserver { sample, client } = *self;
        if let Some(Ok(conns)) = client {
            out.client_tcp_info = conns;
        }
        match sample {
            Some(Ok(list)) if !list.is_empty() => {
                out.checks.push(Check::ok(CheckName::SocketOptions));
                out.measurements.server_sockets = Some(list.clone());
                out.observations.push(Observation::ServerSockets(list));
            }
            Some(Ok(_)) => out.checks.push(Check::skipped(
                CheckName::SocketOptions,
                format!("no process on this host serves {addr} (a remote server?)"),
            )),
            Some(Err(e)) => out.checks.push(Check::skipped(CheckName::SocketOptions, e)),
            None => out.checks.push(Check::skipped(
                CheckName::SocketOptions,
                "the load ended before the server's sockets were sampled",
            )),
        }
    }
}
