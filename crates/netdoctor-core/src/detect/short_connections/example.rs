//! One connection shown in the evidence: its SYN, the client's own wait after the handshake
//! (when long), its first request and who closed it first.

use std::net::SocketAddr;

use super::{Closer, THINK_SHOWN_MS};
use crate::detect::{Pkt, conn_label, ms};
use crate::finding::Evidence;

#[derive(Clone, Copy, Debug)]
pub(super) struct Example {
    pub client: SocketAddr,
    pub server: SocketAddr,
    pub syn: Pkt,
    /// The client's ACK of the SYN/ACK, when it went before the request.
    pub ack: Option<Pkt>,
    pub first_req: Pkt,
    pub first_close: Option<Pkt>,
    /// The silence before `first_close`.
    pub idle_ns: Option<i64>,
}

impl Example {
    /// The client's own wait after its handshake ACK, named when it is long whatever the
    /// median (`think_shown`): an open-loop load connects at once and writes at its scheduled
    /// time.
    fn own_wait(&self, think_shown: bool) -> Option<Pkt> {
        self.ack
            .filter(|a| think_shown || ms(self.first_req.ts_ns - a.ts_ns) >= THINK_SHOWN_MS)
    }

    pub fn evidence(&self, think_shown: bool, closer: Closer, t0_ns: i64) -> Evidence {
        let e = self;
        let own_wait = e.own_wait(think_shown);
        Evidence::Packets {
            connection: conn_label(e.client, e.server),
            packets: [Some(e.syn), own_wait, Some(e.first_req)]
                .into_iter()
                .flatten()
                .chain(e.first_close.filter(|_| closer != Closer::Unknown))
                .map(|p| p.to_ref(t0_ns))
                .collect(),
            note: format!(
                "SYN, then the request {:.2} ms later{}{}",
                ms(e.first_req.ts_ns - e.syn.ts_ns),
                match own_wait {
                    Some(a) => format!(
                        " (the handshake ACK {:.2} ms after the SYN, the client's own wait \
                         {:.2} ms)",
                        ms(a.ts_ns - e.syn.ts_ns),
                        ms(e.first_req.ts_ns - a.ts_ns)
                    ),
                    None => String::new(),
                },
                match e.first_close {
                    Some(p) if closer != Closer::Unknown => format!(
                        "; the {} closed first{}",
                        if p.from_server { "server" } else { "client" },
                        match e.idle_ns {
                            Some(ns) if closer == Closer::ServerIdle => format!(
                                " ({}), {:.2} s after the connection's last packet",
                                if p.flags.rst() { "RST" } else { "FIN" },
                                ns as f64 / 1e9
                            ),
                            _ => String::new(),
                        }
                    ),
                    _ => String::new(),
                }
            ),
        }
    }
}
