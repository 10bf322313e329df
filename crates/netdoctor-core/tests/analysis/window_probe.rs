//! Data resent into a receiver's closed window is the sender probing it, not a loss.
//! `ppa-inconsistent_printer` (the shared corpus; skipped when missing, never copied here): a
//! Windows client prints to 172.16.0.253:9100; the printer's window shrinks to zero six times,
//! the last time to 1092 bytes (below one MSS) at 10.3 s. The client waits 4.8 s, sends 1092
//! bytes that fill that window (tshark: "window … now completely full"), and resends them at
//! 20.6 s and 26.2 s; the printer acknowledges nothing more. Before, those two resends were a
//! critical `retransmission_timeout` on the network ("find where packets are lost"), though
//! the printer had stopped reading: `zero_window` already tells that period (its longest,
//! 15.9 s, never reopened).
//!
//! Look-alikes that keep their finding: a sender whose timer resent into an open window
//! (`ppa-tcp_retransmissions`: `retransmission_timeout`), a receiver with a true zero window
//! (`ppa-tcp_zerowindowdead`: `zero_window` on the client), and the losses of a Windows host
//! whose IPv4 ids count for the whole host (the printer's client skips ids all along: no
//! "lost before the capture point" invented).

use crate::common::{analyze, corpus_file, probe};
use netdoctor_core::finding::{FindingId, Severity, Side};

fn ids(name: &str) -> Option<Vec<(FindingId, Severity, Side)>> {
    let path = corpus_file(name)?;
    let (an, _) = analyze(path.to_str().unwrap());
    for f in &an.findings {
        assert!(probe(f, "ip_id_skip").is_none(), "{name}: {f:#?}");
    }
    Some(
        an.findings
            .iter()
            .map(|f| (f.id, f.severity, f.side))
            .collect(),
    )
}

#[test]
fn resends_into_a_printers_closed_window_are_its_stop_not_loss() {
    let Some(v) = ids("ppa-inconsistent_printer.pcapng") else {
        return;
    };
    assert_eq!(
        v,
        [(FindingId::ZeroWindow, Severity::Critical, Side::Server)],
        "{v:?}"
    );
}

#[test]
fn timer_resends_into_an_open_window_and_true_zero_windows_keep_their_findings() {
    if let Some(v) = ids("ppa-tcp_retransmissions.pcapng") {
        assert!(
            v.iter().any(|f| f.0 == FindingId::RetransmissionTimeout),
            "{v:?}"
        );
    }
    if let Some(v) = ids("ppa-tcp_zerowindowdead.pcapng") {
        assert_eq!(
            v.first(),
            Some(&(FindingId::ZeroWindow, Severity::Critical, Side::Client)),
            "{v:?}"
        );
    }
}
