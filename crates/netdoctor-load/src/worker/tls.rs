//! A connection's transport (plain TCP or a TLS session over it: an enum, so the plain path
//! is one predictable branch away from what it was) and the TLS handshake step of a
//! connection's life: `Connecting → Handshaking → (Writing | Idle ...)`. Its failures count as
//! connect errors (`tls handshake with ADDR: reason`) and the connection is retried like a
//! refused one.

use super::*;
use std::io::{Read, Write};

use crate::tls::TlsSession;

pub(super) enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream>),
}

pub(super) struct TlsStream {
    tcp: TcpStream,
    session: TlsSession,
}

impl TlsStream {
    /// Advances the handshake (see [`TlsSession::handshake`]).
    pub(super) fn handshake(&mut self) -> Result<bool, crate::tls::HandshakeError> {
        self.session.handshake(&mut self.tcp)
    }

    /// The protocol the server chose by ALPN.
    pub(super) fn alpn(&self) -> Option<&[u8]> {
        self.session.alpn()
    }
}

impl Stream {
    /// A connected (or connecting) socket, with TLS when the run has it.
    pub(super) fn new(tcp: TcpStream, tls: Option<&TlsClient>) -> Result<Stream, String> {
        match tls {
            None => Ok(Stream::Plain(tcp)),
            Some(t) => match t.session() {
                Ok(session) => Ok(Stream::Tls(Box::new(TlsStream { tcp, session }))),
                Err(e) => Err(e.to_string()),
            },
        }
    }

    pub(super) fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(t) => &t.tcp,
        }
    }

    pub(super) fn is_tls(&self) -> bool {
        matches!(self, Stream::Tls(_))
    }

    /// Writes (part of) a request; for TLS, bytes taken are sent on later writable edges if the
    /// socket is full (see [`Stream::flush`]).
    #[inline]
    pub(super) fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(data),
            Stream::Tls(t) => t.session.write(&mut t.tcp, data),
        }
    }

    /// Sends TLS bytes still held by the session; `Ok` when there are none left.
    pub(super) fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Plain(_) => Ok(()),
            Stream::Tls(t) => t.session.flush(&mut t.tcp),
        }
    }

    /// Reads response bytes: `(n, more)`, `more == false` when the socket was drained (a short
    /// read) and nothing decrypted is left, so the edge-triggered loop can stop reading.
    #[inline]
    pub(super) fn read(&mut self, buf: &mut [u8]) -> io::Result<(usize, bool)> {
        match self {
            Stream::Plain(s) => s.read(buf).map(|n| (n, n == buf.len())),
            Stream::Tls(t) => t.session.read(&mut t.tcp, buf),
        }
    }
}

impl Loop<'_> {
    /// Advances slot `i`'s TLS handshake; once complete, the connection goes on as a freshly
    /// connected plain one would.
    pub(super) fn handshake(&mut self, poll: &Poll, i: usize) {
        let c = &mut self.conns[i];
        let Some(Stream::Tls(t)) = c.stream.as_mut() else {
            return;
        };
        match t.session.handshake(&mut t.tcp) {
            Ok(false) => {}
            Ok(true) => self.connected(poll, i),
            Err(e) => {
                let addr = self.b.spec.addr;
                self.setup_failed(i, Instant::now(), || {
                    format!("tls handshake with {addr}: {e}")
                });
            }
        }
    }

    /// Slot `i`'s TLS connection became writable while reading: send what the session holds.
    pub(super) fn flush_tls(&mut self, poll: &Poll, i: usize) {
        let Some(s) = self.conns[i].stream.as_mut() else {
            return;
        };
        match s.flush() {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => {
                let addr = self.b.spec.addr;
                self.b
                    .note_error(Kind::Write, || format!("write {addr}: {}", describe(&e)));
                self.reopen(poll, i, Instant::now());
            }
        }
    }
}
