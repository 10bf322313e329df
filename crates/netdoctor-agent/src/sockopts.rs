//! The server's socket options for a problem window of `watch`: which sockets serve the
//! address the findings name, read from /proc with `pidfd_getfd` (netdoctor-observe's
//! `sockopt`), and what they confirm or contradict (`core::sockets::corroborate`). Apart from
//! the window loop because it is the one step that walks other processes.

use netdoctor_core::Evidence;
use netdoctor_report::{Check, Report};
use std::net::SocketAddr;

/// Reads the server's socket options (TCP_NODELAY, TCP_CORK, buffers) for a problem window, as
/// `diagnose` does, and lets them confirm or contradict the findings. Only problem windows pay
/// for the /proc walk. The server address comes from the findings' packet evidence
/// (`client → server`), so the listener's address need not be known. Needs CAP_SYS_PTRACE over
/// the server (root); without it the check is skipped with the reason.
pub(crate) fn sample_socket_options(report: &mut Report) {
    let server = report
        .findings
        .iter()
        .flat_map(|f| &f.evidence)
        .find_map(|e| match e {
            Evidence::Packets { connection, .. } => connection
                .split('→')
                .nth(1)?
                .trim()
                .parse::<SocketAddr>()
                .ok(),
            _ => None,
        });
    let Some(addr) = server else {
        report.checks.push(Check::skipped(
            netdoctor_report::CheckName::SocketOptions,
            "no finding names a connection to read the server's sockets from",
        ));
        return;
    };
    match netdoctor_observe::sockopt::server_sockets(addr, 16) {
        Ok(list) if !list.is_empty() => {
            netdoctor_core::sockets::corroborate(&mut report.findings, &list);
            report
                .checks
                .push(Check::ok(netdoctor_report::CheckName::SocketOptions));
            report.measurements.server_sockets = Some(list);
        }
        Ok(_) => report.checks.push(Check::skipped(
            netdoctor_report::CheckName::SocketOptions,
            format!("no process on this host serves {addr} now"),
        )),
        Err(e) => report.checks.push(Check::skipped(
            netdoctor_report::CheckName::SocketOptions,
            e.to_string(),
        )),
    }
}
