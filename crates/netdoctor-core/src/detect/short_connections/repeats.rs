//! Repeated SYNs are not the cost of a connection per request. When the server (or the path)
//! did not answer a connection's first SYN, the client waited for its timer (1 s, 3 s …)
//! before repeating it: that wait is `syn_retransmit`'s story, and keep-alive would not have
//! saved it (a server that drops SYNs still has to answer the requests). The setup a
//! connection per request costs is counted from the last SYN the client sent before the
//! first SYN/ACK: the handshake that went through. Measured on `syn-lost-client.pcap.gz`
//! (a listener whose accept queue was full for 2.5 s): 3055 ms "setup" per request, of which
//! 3054 ms were the repeats.

use crate::event::SynState;
use crate::stats::Hist;

/// The connections whose first SYN was repeated before the server answered, and how long the
/// client waited on those repeats.
#[derive(Default)]
pub(super) struct SynRepeats {
    wait: Option<Hist>,
}

impl SynRepeats {
    /// The time from the connection's first SYN to the last one sent before the first
    /// SYN/ACK (0 without a repeat), recorded when there is one.
    pub fn record(&mut self, st: &SynState) -> i64 {
        let (Some(first), Some(last)) = (st.first_syn, st.last_syn) else {
            return 0;
        };
        let answered_at = st.first_synack.map_or(i64::MAX, |p| p.ts_ns);
        if st.syns < 2 || last.ts_ns > answered_at || last.ts_ns <= first.ts_ns {
            return 0;
        }
        let ns = last.ts_ns - first.ts_ns;
        self.wait.get_or_insert_with(Hist::new).record_ns(ns);
        ns
    }

    /// "; not counted: N connections waited M ms (median) on repeated SYNs (syn_retransmit)",
    /// or nothing.
    pub fn summary(&self) -> String {
        self.wait.as_ref().map_or(String::new(), |h| {
            let n = h.len();
            format!(
                "; not counted: {n} connection{} waited {:.0} ms (median) on repeated SYNs \
                 before the server answered (syn_retransmit)",
                if n == 1 { "" } else { "s" },
                h.quantile_ms(0.5)
            )
        })
    }

    /// Where the setup was counted from: "SYN", or "SYN the server answered" when some were
    /// repeated.
    pub fn counted_from(&self) -> &'static str {
        if self.wait.is_some() {
            "SYN the server answered"
        } else {
            "SYN"
        }
    }
}
