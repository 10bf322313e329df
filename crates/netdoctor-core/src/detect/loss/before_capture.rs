//! Losses the capture never saw: a resend told only by a skip of the sender's IPv4 ids
//! (`analyze::hub`'s `on_unseen_resend`: data right after the peer's late ACK, one packet of
//! the sender missing just before it). The original was lost before the capture point, on the
//! sender's host or between it and the capture, so nothing in the capture is flagged as a
//! retransmission (tshark neither), and its wait has the shape of Nagle's. When every episode
//! of `packet_loss_retransmission` is one, the finding tells that story; when some are, its
//! evidence and a sentence say how many. Over IPv6 there is no id: such a resend cannot be
//! told from new data.

use super::KindAgg;
use crate::finding::{Evidence, FindingId};

/// The name of the evidence that says every resend was told by IPv4 ids, and the one that
/// says some were (the Chinese texts choose their sentences by it).
pub const BEFORE_CAPTURE_EVIDENCE: &str = "ip_id_skip";
pub const SOME_BEFORE_CAPTURE_EVIDENCE: &str = "ip_id_skip_some";

pub(super) fn before_capture_evidence(k: &KindAgg) -> Evidence {
    let probe = if k.before_capture == k.episodes {
        BEFORE_CAPTURE_EVIDENCE
    } else {
        SOME_BEFORE_CAPTURE_EVIDENCE
    };
    Evidence::Probe {
        probe: probe.to_string(),
        note: format!(
            "{} of {} episode(s) resent data the capture never saw leave: the sender's IPv4 ids, \
             counting one per packet, skipped a packet just before (lost before the capture \
             point); tshark flags none of them",
            k.before_capture, k.episodes
        ),
    }
}

/// Summary, explanation and fix of fast losses all told by IPv4 id skips: segments lost
/// before the capture point, resent as if new (`who`: whose data, `rate`: share of data
/// segments, `cost`: what they cost the requests).
pub(super) fn before_capture_story(
    k: &KindAgg,
    who: &str,
    rate: f64,
    cost: &str,
) -> (FindingId, String, String, String) {
    let wait = k.stall.as_ref().map_or(0.0, |h| h.quantile_ms(0.5));
    (
        FindingId::PacketLossRetransmission,
        format!(
            "Packet loss before the capture point: {} segments of {who} lost and resent \
             ({:.2}% of data segments; seen only as skips in the sender's IPv4 ids), {cost}",
            k.retx,
            rate * 100.0
        ),
        format!(
            "Segments of {who} were lost before they reached the capture point: on the sender's \
             host or between it and the capture. The capture never saw them leave, so nothing \
             in it is flagged as a retransmission (tshark neither): the sender's IPv4 ids, \
             which count one per packet on Linux, skipped a packet, and the data that followed \
             was the lost segment sent again. It was the last of what the sender had to send, \
             so no later segment made the receiver complain: the sender resent it only when the \
             receiver's delayed ACK of the data before it came, or its timer fired ({wait:.1} ms \
             median here). That wait looks like Nagle's algorithm holding data for a delayed \
             ACK, but TCP_NODELAY does not change it: the loss does. Over IPv6 (no id) such a \
             resend cannot be told from new data."
        ),
        "Find where the sender's packets are lost before the capture point: its interface and \
         queue drops (`ip -s link`, `tc -s qdisc`), a firewall rule or policer on its host \
         (`iptables -L -v -n`, `nft list ruleset`), its retransmission counters (`nstat -az \
         TcpRetransSegs TcpExtTCPLossProbes`), the link between it and the capture point. A \
         capture on the sender's host shows the originals leave."
            .to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::super::Loss;
    use super::*;
    use crate::decode::TcpFlags as F;
    use crate::detect::testkit::*;
    use crate::event::Event;
    use crate::finding::Finding;
    use crate::track::loss::Episode;

    fn episode(k: u64, silence_ms: i64) -> Episode {
        let t = k as i64 * 1000;
        let first = pkt(k * 10 + 5, t + silence_ms, true, F::ACK, 1448);
        Episode::synthetic(first, first, (t) * MS + T0, 1, 0)
    }

    fn probe_names(f: &Finding) -> Vec<&str> {
        f.evidence
            .iter()
            .filter_map(|e| match e {
                Evidence::Probe { probe, .. } => Some(probe.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn resends_told_by_ip_ids_are_loss_before_the_capture_point() {
        let mut eps = [episode(0, 40), episode(1, 40)];
        eps[0].before_capture = true;
        let events = |eps: &[_]| -> Vec<Event<'_>> {
            eps.iter()
                .map(|e| Event::LossEpisode {
                    ends: ends(),
                    episode: *e,
                })
                .collect()
        };
        // One of two: the usual story, with a sentence and its evidence.
        let v = run::<Loss>(&events(&eps), &cx(10));
        assert!(v[0].summary.starts_with("Packet loss: 2 segments"), "{v:?}");
        assert!(v[0].explanation.contains("1 of these resends"), "{v:?}");
        assert_eq!(probe_names(&v[0]), [SOME_BEFORE_CAPTURE_EVIDENCE]);
        // All: the story of a loss the capture never saw.
        eps[1].before_capture = true;
        let v = run::<Loss>(&events(&eps), &cx(10));
        assert_eq!(v[0].id, FindingId::PacketLossRetransmission);
        assert!(
            v[0].summary
                .starts_with("Packet loss before the capture point: 2 segments"),
            "{v:?}"
        );
        assert!(v[0].fix.contains("sender's packets"), "{}", v[0].fix);
        assert_eq!(probe_names(&v[0]), [BEFORE_CAPTURE_EVIDENCE]);
    }
}
