//! The evidence of one kind of `connection_reset`: each example's packets with a note saying
//! what its reset was, and the probe entries that say what the kind measured (the steady idle
//! timer, the gap after a complete answer, answers whose end the capture cannot tell, client
//! aborts after a stall or from a host without the connection); the zh texts key on those
//! probes' names.

use super::{
    AFTER_ANSWER_EVIDENCE, AFTER_ANSWER_LOST_EVIDENCE, ANSWER_UNSEEN_EVIDENCE, ConnectionReset,
    IDLE_RESET_EVIDENCE, KindAgg, REQUEST_AFTER_CLOSE_EVIDENCE, abort, forged_note, hits_request,
    peer_close,
};
use crate::detect::conn_label;
use crate::event::ResetKind;
use crate::finding::{Evidence, Side};

impl ConnectionReset {
    /// The evidence of `n` resets of `kind` told by `who` on `side` (the finding's own),
    /// leaving out the examples of the load generator's own timeouts (`own` of them).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn evidence(
        &self,
        kind: ResetKind,
        k: &KindAgg,
        who: &str,
        side: Side,
        n: u64,
        own: u64,
        t0_ns: i64,
    ) -> Vec<Evidence> {
        let mut evidence: Vec<Evidence> = k
            .examples
            .iter()
            .filter(|e| {
                own == 0
                    || e.rst.from_server
                    || !e
                        .req
                        .is_some_and(|r| self.is_own_timeout(e.rst.ts_ns - r.ts_ns))
            })
            .map(|e| {
                let mut packets = Vec::with_capacity(3);
                if let Some(b) = e.before {
                    packets.push(b.to_ref(t0_ns));
                }
                // The other side's FIN that closed the connection first.
                if let Some(fin) = e.peer_fin {
                    packets.push(fin.to_ref(t0_ns));
                }
                // The request the reset answered, after the FIN.
                if let (Some(_), Some(r)) = (e.request_after_close_ns, e.req) {
                    packets.push(r.to_ref(t0_ns));
                }
                packets.push(e.rst.to_ref(t0_ns));
                Evidence::Packets {
                    connection: conn_label(e.client, e.server),
                    packets,
                    note: match kind {
                        ResetKind::Refused => "SYN answered by a reset".to_string(),
                        ResetKind::AfterClose => match e.request_after_close_ns {
                            Some(g) => format!(
                                "the {who} closed the connection (FIN); the client's request \
                                 {:.2} ms later got a reset: it failed",
                                g as f64 / 1e6
                            ),
                            None => {
                                format!("the {who} closed the connection (FIN), then reset it")
                            }
                        },
                        ResetKind::DuringExchange => {
                            format!("the {who} reset the connection during an exchange")
                        }
                        ResetKind::ClientAbort => abort::note(e),
                        ResetKind::AfterAnswer => format!(
                            "the answer was complete; the {who} reset {:.2} ms after its \
                             last byte{}",
                            e.answer_gap_ns.unwrap_or(0) as f64 / 1e6,
                            if e.lost_request {
                                ", with the client's next request sent and unanswered \
                                 (lost)"
                            } else if e.unacked {
                                ", before the client had acknowledged all of it"
                            } else {
                                ""
                            }
                        ),
                        ResetKind::Idle if hits_request(e) => format!(
                            "the client's request on a connection dropped while idle; the \
                             {who}'s side answered with a reset that acknowledges nothing"
                        ),
                        ResetKind::Idle => format!(
                            "the {who} reset an idle connection, {:.2} s after its last \
                             packet",
                            e.silence_ns as f64 / 1e9
                        ),
                        ResetKind::AfterPeerClose => format!(
                            "the {} closed the idle connection first (FIN); the {who} reset \
                             {:.2} s after that FIN",
                            peer_close::closer(who),
                            e.peer_fin.map_or(0, |f| e.rst.ts_ns - f.ts_ns) as f64 / 1e9
                        ),
                        ResetKind::UnusedClosed => format!(
                            "the other side closed the unused connection (FIN), the {who} \
                             reset it"
                        ),
                        // The SYN/ACK itself reset: the client's socket was gone.
                        ResetKind::Setup
                            if !e.rst.from_server && e.before.is_some_and(|b| b.flags.syn()) =>
                        {
                            "the client reset the server's SYN/ACK: it had given up on this \
                             connection attempt"
                                .to_string()
                        }
                        ResetKind::Setup => format!(
                            "the {who} reset the connection after the handshake, no byte \
                             sent"
                        ),
                        ResetKind::Injected => {
                            e.forged.map_or_else(String::new, |f| forged_note(who, &f))
                        }
                    },
                }
            })
            .collect();
        if kind == ResetKind::Idle
            && side == Side::Network
            && let Some(s) = self.idle.steady()
        {
            evidence.push(Evidence::Probe {
                probe: IDLE_RESET_EVIDENCE.into(),
                note: self.idle.note(&s),
            });
        }
        if kind == ResetKind::AfterPeerClose {
            evidence.push(Evidence::Probe {
                probe: peer_close::PEER_CLOSED_FIRST_EVIDENCE.into(),
                note: peer_close::note(who, n, k),
            });
        }
        if kind == ResetKind::AfterAnswer {
            evidence.push(Evidence::Probe {
                probe: if self.after_answer.lost > 0 {
                    AFTER_ANSWER_LOST_EVIDENCE
                } else {
                    AFTER_ANSWER_EVIDENCE
                }
                .into(),
                note: self.after_answer.note(who, n),
            });
        }
        if kind == ResetKind::AfterClose && self.after_close.failed > 0 {
            evidence.push(Evidence::Probe {
                probe: REQUEST_AFTER_CLOSE_EVIDENCE.into(),
                note: self.after_close.note(n),
            });
        }
        if kind == ResetKind::DuringExchange && k.unseen > 0 {
            evidence.push(Evidence::Probe {
                probe: ANSWER_UNSEEN_EVIDENCE.into(),
                note: format!(
                    "{} of {n} resets came while an answer was arriving whose end the \
                     capture cannot tell: it did not keep bytes of the answer's framing \
                     (a chunk-size line or header past the snap length, or data it missed)",
                    k.unseen.min(n)
                ),
            });
        }
        if kind == ResetKind::Setup && side == Side::Client {
            evidence.push(Evidence::Probe {
                probe: abort::CLIENT_SETUP_ABORT_EVIDENCE.into(),
                note: format!(
                    "{n} of {n} client resets came at setup, before any request was sent: the \
                     client gave up on those connection attempts; no request failed"
                ),
            });
        }
        if kind == ResetKind::ClientAbort
            && let Some((probe, note)) = self.aborts.probe(n)
        {
            evidence.push(Evidence::Probe {
                probe: probe.into(),
                note,
            });
        }
        evidence
    }
}
