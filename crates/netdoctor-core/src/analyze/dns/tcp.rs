//! DNS over TCP port 53 (RFC 1035 §4.2.2, RFC 7766): each message behind a 2-byte length,
//! several messages per connection (glibc writes its A and AAAA queries in one segment). Read
//! from every TCP segment with port 53 at either end, in capture order, beside the TCP path
//! (which carries these connections as [`crate::analyze`]'s `Source::Dns`: no exchanges).
//!
//! Per connection: its first SYN, whether the server answered it (SYN/ACK) or reset it, and
//! each direction's bytes in sequence order (a retransmission's bytes already read are
//! skipped; a gap, or a payload cut by the snap length, ends the reading of that direction).
//! The messages go to the lookups as UDP ones do ([`super::DnsLog`]).

use std::collections::HashMap;
use std::net::SocketAddr;

use super::Msg;
use crate::decode::TcpSegment;

/// Connections followed (then not read).
const MAX_CONNS: usize = 4096;

/// One direction's bytes not yet cut into messages.
#[derive(Default)]
struct Bytes {
    /// The next sequence number expected (`None`: nothing read yet).
    next: Option<u32>,
    buf: Vec<u8>,
    /// A gap or a cut payload: the direction is no longer read.
    broken: bool,
}

impl Bytes {
    /// Takes the segment's payload at `seq` (`len` bytes on the wire, `data` captured); the
    /// complete messages are appended to `out`.
    fn take(&mut self, seq: u32, len: u32, data: &[u8], out: &mut Vec<Vec<u8>>) {
        if self.broken || len == 0 {
            return;
        }
        let next = *self.next.get_or_insert(seq);
        let skip = next.wrapping_sub(seq);
        if skip > len {
            // Ahead of what was read (a gap), or far behind (an old copy).
            if seq.wrapping_sub(next) < 1 << 30 {
                self.broken = true;
                self.buf = Vec::new();
            }
            return;
        }
        if data.len() < len as usize {
            self.broken = true;
            self.buf = Vec::new();
            return;
        }
        self.buf
            .extend_from_slice(&data[skip as usize..len as usize]);
        self.next = Some(seq.wrapping_add(len));
        let mut at = 0;
        while let Some(h) = self.buf.get(at..at + 2) {
            let n = usize::from(u16::from_be_bytes([h[0], h[1]]));
            let Some(m) = self.buf.get(at + 2..at + 2 + n) else {
                break;
            };
            out.push(m.to_vec());
            at += 2 + n;
        }
        self.buf.drain(..at);
    }
}

/// A TCP connection to port 53.
pub(super) struct Conn {
    pub client: SocketAddr,
    pub server: SocketAddr,
    /// The client's first SYN captured.
    pub syn: Option<Msg>,
    /// The sequence number of the client's SYN.
    isn: Option<u32>,
    /// SYNs the client sent (repeats included).
    pub syns: u32,
    /// The server answered the SYN.
    pub synack: bool,
    /// The server's first reset.
    pub rst: Option<Msg>,
    /// The server's FIN.
    pub fin: Option<Msg>,
    /// The server sent a DNS message on it (the messages after it paid no handshake).
    pub answered: bool,
    bytes: [Bytes; 2],
}

/// The capture's TCP connections to port 53.
#[derive(Default)]
pub(super) struct Conns {
    pub list: Vec<Conn>,
    open: HashMap<(SocketAddr, SocketAddr), usize>,
    /// Segments of connections not followed ([`MAX_CONNS`]).
    pub dropped: u64,
}

impl Conns {
    /// A segment with port 53 at one end: the connection it belongs to (`None`: not
    /// followed), and the messages it completed (in `out`).
    pub(super) fn on_segment(
        &mut self,
        seg: &TcpSegment<'_>,
        out: &mut Vec<Vec<u8>>,
    ) -> Option<usize> {
        let from_client = seg.dst.port() == 53;
        let (client, server) = if from_client {
            (seg.src, seg.dst)
        } else {
            (seg.dst, seg.src)
        };
        let f = seg.flags;
        let msg = Msg {
            ts: seg.ts_ns,
            frame: seg.frame,
            server,
        };
        let key = (client, server);
        let mut i = self.open.get(&key).copied();
        // A SYN with another initial sequence number: a new connection on the same ports
        // (the same one is a repeat).
        if from_client
            && f.syn()
            && !f.ack()
            && let Some(k) = i
            && self.list[k].isn != Some(seg.seq)
        {
            i = None;
        }
        let i = match i {
            Some(i) => i,
            None => {
                if self.list.len() >= MAX_CONNS {
                    self.dropped += 1;
                    return None;
                }
                self.open.insert(key, self.list.len());
                self.list.push(Conn {
                    client,
                    server,
                    syn: None,
                    isn: None,
                    syns: 0,
                    synack: false,
                    rst: None,
                    fin: None,
                    answered: false,
                    bytes: Default::default(),
                });
                self.list.len() - 1
            }
        };
        let c = &mut self.list[i];
        let d = usize::from(!from_client);
        if f.syn() {
            // The payload starts after the SYN's sequence number.
            c.bytes[d].next.get_or_insert(seg.seq.wrapping_add(1));
            if from_client && !f.ack() {
                c.syn.get_or_insert(msg);
                c.isn = Some(seg.seq);
                c.syns += 1;
            } else if !from_client && f.ack() {
                c.synack = true;
            }
        }
        if !from_client && f.rst() {
            c.rst.get_or_insert(msg);
        }
        if !from_client && f.fin() {
            c.fin.get_or_insert(msg);
        }
        if seg.payload_len > 0 && !f.rst() {
            c.bytes[d].take(seg.seq, seg.payload_len, seg.payload, out);
        }
        Some(i)
    }
}

#[cfg(test)]
mod tests {
    use super::Bytes;

    #[test]
    fn messages_are_cut_at_their_lengths_across_segments_and_copies() {
        let mut b = Bytes::default();
        let mut out = Vec::new();
        // Two messages (3 and 2 bytes) in one segment, the second cut after its length.
        b.take(100, 6, &[0, 3, 1, 2, 3, 0], &mut out);
        assert_eq!(out, [vec![1, 2, 3]]);
        // A copy of the first segment, then the rest.
        b.take(100, 6, &[0, 3, 1, 2, 3, 0], &mut out);
        b.take(106, 3, &[2, 7, 8], &mut out);
        assert_eq!(out, [vec![1, 2, 3], vec![7, 8]]);
        // A gap: the direction is no longer read.
        b.take(200, 4, &[0, 2, 9, 9], &mut out);
        b.take(109, 4, &[0, 2, 5, 5], &mut out);
        assert_eq!(out.len(), 2);
    }
}
