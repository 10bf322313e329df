//! A TLS handshake's turns are setup, not requests: marked here, at the exchange source, so
//! that no consumer counts them as exchanges (the latency figures, the "N exchanges" line,
//! the breakdown, the per-exchange detectors, `short_connections`' requests per connection).
//!
//! Exchanges are found from direction turns (`super::http`), so a TLS handshake's turns
//! (ClientHello → ServerHello …, TLS 1.2's ClientKeyExchange → ChangeCipherSpec, Finished)
//! would be exchanges too: a TLS 1.2 connection per request read as 3 exchanges a connection
//! (`testdata/captures/tls12-short.pcap.gz`), and the latency percentiles mixed handshake
//! round trips with requests. A client turn whose data opens with a plaintext handshake
//! record (`0x16 0x03 0x0?`) answered by a handshake or ChangeCipherSpec record is a handshake
//! turn ([`crate::event::TlsSetup`]): [`super::hub::Hub::finish_exchange_as`] hands it on as
//! [`crate::event::Event::TlsTurn`] (its server time is the server's work on the handshake: a
//! slow signature, an OCSP fetch) instead of as an exchange.
//!
//! A turn that carries a request besides its handshake records is a request: TLS 1.3 early
//! data (0-RTT: application data records after the ClientHello in the client's first flight)
//! and TLS 1.2 False Start (application data after the client's Finished). The turn's records
//! are walked by their headers while the turn lasts ([`scan`]); a header the snap length cut
//! or a capture gap hid ends the walk, and the turn stays a handshake turn. TLS 1.3's second
//! flight and a resumed TLS 1.2 one open with ChangeCipherSpec or application data: requests.
//!
//! After early data (0-RTT: the request rode with the ClientHello), the client's
//! EndOfEarlyData + Finished flight alone in its turn is setup too ([`client_finished_after_early`]),
//! and a reset while that turn is answered fails no request. On any turn, a client's TLS alert
//! alone (its close_notify as it closes, [`alert_alone`]) is no request: it ends the exchange
//! in progress and leaves the connection idle (`tls13-0rtt*.pcap.gz`: nginx resets as it
//! closes with that flight or alert unread, which read as a reset "in the middle of a
//! request/response", critical).
//!
//! An early-data request's answer opens with the server's ServerHello flight (ServerHello,
//! ChangeCipherSpec, then EncryptedExtensions and Finished in records that look like
//! application data), and its response comes after it: the response's first byte is the
//! server's segment after the flight ([`flight`]: the flight ends where a segment ends with a
//! record of a Finished's size; when it cannot be told, a record of another size last or a
//! header the capture cut, the flight's segment's time stands). Timed to the flight,
//! tls13-0rtt's request read 0.43 ms to its first byte for a response 1.14 ms after it; and the
//! client's EndOfEarlyData + Finished between the flight and the response
//! (`tls13-0rtt-alert`) no longer ends the exchange at the flight.
//!
//! Only a connection's first turns are looked at (the first three requests and the handshake
//! turns before them): the per-packet path stays as it was.
//!
//! HTTP/2 over TLS: one direction turn can carry several multiplexed requests and a response
//! can span turns, so the exchanges of such a connection are not its requests (a curl of 20
//! files over 3 HTTP/2 connections read as 14–24 exchanges). The hellos say whether it is
//! one: the ClientHello's ALPN offers `h2`, TLS 1.2's ServerHello names the protocol chosen
//! ([`client_offers_h2`], [`server_chose`]); TLS 1.3 encrypts the choice, so an offer and a
//! TLS 1.3 ServerHello are all a capture shows there (a handshake that failed, or whose
//! ServerHello the capture cut, is not counted). The report says so (`CaptureStats::tls_h2_connections`,
//! `tls_h2_maybe_connections`); the exchanges stay as found. Read by hand: two length-prefixed
//! walks over bytes already in hand, where a TLS crate would want whole, reassembled messages.

use super::conn::Conn;
use crate::event::Pkt;

/// A plaintext TLS handshake record's header (`0x16`, version `0x03 0x00`–`0x04`): a client's
/// ClientHello or TLS 1.2 ClientKeyExchange.
fn tls_handshake(payload: &[u8]) -> bool {
    matches!(payload, [0x16, 0x03, v, ..] if *v <= 0x04)
}

/// A server's answer in the handshake: a handshake record (ServerHello…) or ChangeCipherSpec
/// (TLS 1.2's server Finished), not application data.
/// TLS 1.3's client Finished alone in its turn, in middlebox-compatibility mode (OpenSSL's and
/// the browsers' default): a ChangeCipherSpec record, then one encrypted record of a
/// Finished's size (53 bytes with a SHA-256 suite, 69 with SHA-384) and nothing after it.
/// Over loopback the server's session tickets answer it before the client writes its request
/// (tls-rsa8192: 8 TLS 1.3 connections read as 1.5 requests each); over a WAN the request
/// usually rides in the same flight (then the turn carries data and is a request).
fn client_finished(payload: &[u8], wire: u32) -> bool {
    match payload {
        [
            0x14,
            0x03,
            0x03,
            0x00,
            0x01,
            0x01,
            0x17,
            0x03,
            0x03,
            hi,
            lo,
            ..,
        ] => {
            let n = u16::from_be_bytes([*hi, *lo]);
            (n == 53 || n == 69) && wire == 11 + u32::from(n)
        }
        _ => false,
    }
}

/// [`crate::event::TlsSetup::hello`]: the ClientHello offered `h2`.
pub(super) const ALPN_OFFERED_H2: u8 = 1;
/// The ServerHello chose `h2`.
pub(super) const ALPN_CHOSE_H2: u8 = 2;
/// The ServerHello was read: the choice is known (`h2` or not).
pub(super) const ALPN_KNOWN: u8 = 4;
/// The ServerHello was TLS 1.3's: the choice is in the encrypted extensions.
pub(super) const ALPN_HIDDEN: u8 = 8;
/// The ClientHello's turn carried application data: TLS 1.3 early data (0-RTT).
pub(super) const EARLY_DATA: u8 = 16;
/// After early data: the server's ServerHello flight goes on in its next segment (its next
/// record header [`crate::event::TlsSetup::skip`] bytes in).
const FLIGHT_WALK: u8 = 32;
/// With [`FLIGHT_WALK`]: the record that goes on in the next segment has a Finished's size.
const FLIGHT_FIN: u8 = 64;
/// After early data: the server's ServerHello flight ended with its segment, and the
/// response's first byte is the server's next segment.
const RESPONSE_NEXT: u8 = 128;
/// The answer to early data is in its ServerHello flight: its response has not begun.
pub(super) const IN_FLIGHT: u8 = FLIGHT_WALK | RESPONSE_NEXT;

/// What a ServerHello says of the protocol chosen.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Chose {
    H2,
    /// Another protocol, or no ALPN (HTTP/1.1).
    Other,
    /// TLS 1.3: the choice is encrypted.
    Hidden,
}

/// The extensions of a hello whose body (after the record and handshake headers) starts at
/// `at`: `fixed` bytes of version and random, a session id, then `lists` (cipher suites with
/// a 2-byte length, compression methods with 1) or, for a ServerHello, `server_tail` fixed
/// bytes; `None` when the captured bytes end first.
fn extensions(payload: &[u8], kind: u8) -> Option<Extensions<'_>> {
    let body = payload.get(5..)?;
    if *body.first()? != kind {
        return None;
    }
    let mut at = 4 + 2 + 32;
    at += 1 + usize::from(*body.get(at)?);
    if kind == 1 {
        let cs = u16::from_be_bytes([*body.get(at)?, *body.get(at + 1)?]);
        at += 2 + usize::from(cs);
        at += 1 + usize::from(*body.get(at)?);
    } else {
        at += 3;
    }
    let len = u16::from_be_bytes([*body.get(at)?, *body.get(at + 1)?]);
    let end = at + 2 + usize::from(len);
    Some(Extensions {
        bytes: body,
        at: at + 2,
        end,
    })
}

/// A hello's extensions, walked as far as the captured bytes go.
struct Extensions<'a> {
    bytes: &'a [u8],
    at: usize,
    end: usize,
}

/// One extension: its type and body, or `Err` when the captured bytes ended in it.
impl<'a> Iterator for Extensions<'a> {
    type Item = Result<(u16, &'a [u8]), ()>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.at + 4 > self.end {
            return None;
        }
        let head = self.bytes.get(self.at..self.at + 4);
        let Some(&[t0, t1, l0, l1]) = head else {
            self.at = self.end;
            return Some(Err(()));
        };
        let body = self.at + 4;
        let next = body + usize::from(u16::from_be_bytes([l0, l1]));
        self.at = next;
        match self.bytes.get(body..next) {
            Some(b) => Some(Ok((u16::from_be_bytes([t0, t1]), b))),
            None => {
                self.at = self.end;
                Some(Err(()))
            }
        }
    }
}

/// The ALPN extension's type.
const ALPN: u16 = 0x0010;
/// The supported_versions extension: in a ServerHello, TLS 1.3 (its ALPN is encrypted).
const SUPPORTED_VERSIONS: u16 = 0x002b;

/// Whether the protocol names of an ALPN extension's body include `h2`.
fn names_h2(body: &[u8]) -> bool {
    let mut at = 2;
    while let Some(&n) = body.get(at) {
        let name = body.get(at + 1..at + 1 + usize::from(n));
        if name == Some(b"h2") {
            return true;
        }
        at += 1 + usize::from(n);
    }
    false
}

/// A ClientHello's offer (its first record's start in `payload`): `Some(true)` when its ALPN
/// names `h2`, `Some(false)` when it has no such offer, `None` when the captured bytes end
/// before that is known (the snap length; a large ClientHello over two segments).
pub(super) fn client_offers_h2(payload: &[u8]) -> Option<bool> {
    for e in extensions(payload, 1)? {
        match e {
            Ok((ALPN, body)) => return Some(names_h2(body)),
            Ok(_) => {}
            Err(()) => return None,
        }
    }
    Some(false)
}

/// A ServerHello's choice (its record's start in `payload`); `None` when the captured bytes
/// end before it is known (the snap length), or it is no ServerHello.
pub(super) fn server_chose(payload: &[u8]) -> Option<Chose> {
    let mut chose = Chose::Other;
    for e in extensions(payload, 2)? {
        match e {
            Err(()) => return None,
            Ok((SUPPORTED_VERSIONS, _)) => return Some(Chose::Hidden),
            Ok((ALPN, body)) if body.get(2..) == Some(&[2, b'h', b'2'][..]) => chose = Chose::H2,
            Ok(_) => {}
        }
    }
    Some(chose)
}

/// TLS 1.3's client flight after early data (0-RTT) alone in its turn: EndOfEarlyData (one
/// encrypted record of 21 bytes: the 4-byte message, its content type, the 16-byte tag) and
/// the Finished's record (53 or 69 bytes), nothing after them (the ChangeCipherSpec went with
/// the ClientHello). The early data was the request; this turn is setup (a 0-RTT curl of
/// `openssl s_client -early_data` to nginx read as two requests, and nginx's reset on close
/// with this flight unread as a reset in the middle of an exchange).
pub(super) fn client_finished_after_early(payload: &[u8], wire: u32) -> bool {
    match payload {
        [0x17, 0x03, 0x03, 0x00, 21, ..] => match payload.get(26..31) {
            Some(&[0x17, 0x03, 0x03, hi, lo]) => {
                let n = u16::from_be_bytes([hi, lo]);
                (n == 53 || n == 69) && wire == 26 + 5 + u32::from(n)
            }
            _ => false,
        },
        _ => false,
    }
}

/// How a segment of the server's ServerHello flight ends ([`flight`]).
#[derive(Debug, PartialEq, Eq)]
enum Flight {
    /// At the segment's end, with a record of a Finished's size (53 or 69 bytes, as
    /// [`client_finished`]): the response starts in the next segment.
    Ended,
    /// In its next segment, whose first record header starts this many bytes in; whether the
    /// record that goes on there has a Finished's size.
    More(u16, bool),
    /// Not known: a header the capture cut, a record of another kind (an alert), or a last
    /// record of another size (the response may have come in the same segment).
    Unknown,
}

/// Walks a segment of the server's ServerHello flight (`wire` bytes, `payload` of them
/// captured) from the record header `skip` bytes in; `fin`: the record going on from the
/// segment before has a Finished's size. The flight is a handshake record (ServerHello), a
/// ChangeCipherSpec, and encrypted records (EncryptedExtensions, Finished) that look like
/// application data: it is taken as ended where a segment ends with a Finished-sized record.
fn flight(payload: &[u8], wire: u32, skip: u16, mut fin: bool) -> Flight {
    let wire = wire as usize;
    let mut at = usize::from(skip);
    while at < wire {
        let Some(&[kind, 0x03, _, hi, lo]) = payload.get(at..at + 5) else {
            return Flight::Unknown;
        };
        if !matches!(kind, 0x14 | 0x16 | 0x17) {
            return Flight::Unknown;
        }
        let n = u16::from_be_bytes([hi, lo]);
        fin = kind == 0x17 && (n == 53 || n == 69);
        at += 5 + usize::from(n);
    }
    match u16::try_from(at - wire) {
        Ok(0) if fin => Flight::Ended,
        Ok(more) if more > 0 => Flight::More(more, fin),
        _ => Flight::Unknown,
    }
}

/// One TLS alert record and nothing else in a segment of `wire` bytes: TLS 1.2's (its content
/// type in the clear, `0x15`) or TLS 1.3's (an application data record of 19 bytes: the 2-byte
/// alert, its content type and the 16-byte tag of AES-GCM or ChaCha20-Poly1305), as a client
/// sends close_notify when it closes. Not a request: read as one, a server that closed with it
/// unread (nginx resets then) was told as resetting "in the middle of a request/response"
/// (`tls13-0rtt`, its first connection), and an answered one as an exchange.
pub(super) fn alert_alone(payload: &[u8], wire: u32) -> bool {
    match payload {
        [0x15, 0x03, 0x01..=0x03, hi, lo, ..] => {
            wire == 5 + u32::from(u16::from_be_bytes([*hi, *lo]))
        }
        [0x17, 0x03, 0x03, 0x00, 19, ..] => wire == 24,
        _ => false,
    }
}

pub(super) fn tls_setup_answer(payload: &[u8]) -> bool {
    matches!(payload, [0x16 | 0x14, 0x03, ..])
}

/// What the walk of a handshake turn's records found in a segment.
#[derive(Debug, PartialEq, Eq)]
enum Scan {
    /// An application data record: the turn carries a request.
    Data,
    /// Only handshake and ChangeCipherSpec records so far; the next header starts this many
    /// bytes into the next segment.
    More(u16),
    /// A header the capture did not keep (snap length) or not a TLS record: the walk ends.
    Lost,
}

/// Walks the records of a segment of `wire` bytes (`payload` of them captured) whose first
/// record header starts `skip` bytes in.
fn scan(payload: &[u8], wire: u32, skip: u16) -> Scan {
    let wire = wire as usize;
    let mut at = usize::from(skip);
    while at < wire {
        let Some(&[kind, 0x03, _, hi, lo]) = payload.get(at..at + 5) else {
            return Scan::Lost;
        };
        match kind {
            0x17 => return Scan::Data,
            0x14..=0x16 => at += 5 + usize::from(u16::from_be_bytes([hi, lo])),
            _ => return Scan::Lost,
        }
    }
    u16::try_from(at - wire).map_or(Scan::Lost, Scan::More)
}

impl Conn {
    /// A new turn of the client's starting with `pkt` (`payload` captured of it), on the
    /// connection's first turns: the turn before it was a TLS handshake turn if it was
    /// answered in kind, and the first turn that is not one is the first request
    /// ([`crate::event::TlsSetup`]).
    #[cold]
    pub(super) fn tls_turn(&mut self, pkt: Pkt, payload: &[u8]) {
        let t = &mut self.tls;
        if t.answered {
            t.answered = false;
            // The Finished turn is setup, not one of the handshake's round trips; the
            // handshake then lasted until this turn (its start was taken provisionally).
            if t.finished {
                t.handshake_us = 0;
            } else {
                t.turns = t.turns.saturating_add(1);
            }
        }
        t.finished = (t.turns > 0 && client_finished(payload, pkt.len))
            || (t.hello & EARLY_DATA != 0 && client_finished_after_early(payload, pkt.len));
        t.hello &= !EARLY_DATA;
        t.asked = t.finished || tls_handshake(payload);
        if t.asked && t.turns == 0 && client_offers_h2(payload) == Some(true) {
            t.hello |= ALPN_OFFERED_H2;
        }
        t.scan = t.asked && !t.finished;
        if t.scan {
            self.tls_records(payload, pkt.len, false);
        } else if (!t.asked || t.finished)
            && t.turns > 0
            && t.handshake_us == 0
            && let Some(first) = self.first_req
        {
            let us = (pkt.ts_ns - first.ts_ns).max(0) / 1000;
            t.handshake_us = u32::try_from(us).unwrap_or(u32::MAX).max(1);
        }
    }

    /// The server's first answer in a handshake turn: what the ServerHello chose, when the
    /// client offered HTTP/2 and the choice is not known yet.
    #[cold]
    pub(super) fn tls_server_hello(&mut self, payload: &[u8]) {
        let t = &mut self.tls;
        if t.hello & (ALPN_OFFERED_H2 | ALPN_KNOWN | ALPN_HIDDEN) == ALPN_OFFERED_H2 {
            t.hello |= match server_chose(payload) {
                Some(Chose::H2) => ALPN_KNOWN | ALPN_CHOSE_H2,
                Some(Chose::Other) => ALPN_KNOWN,
                Some(Chose::Hidden) => ALPN_HIDDEN,
                None => 0,
            };
        }
    }

    /// The server's first segment in answer to early data (0-RTT): when it opens with a
    /// ServerHello, its flight is walked ([`flight`]) to find where the response starts.
    /// Timed to the flight, the request's first byte read 0.43 ms after it on tls13-0rtt, its
    /// response's 1.14 ms.
    #[cold]
    pub(super) fn tls_early_answer(&mut self, payload: &[u8], wire: u32) {
        if matches!(payload, [0x16, 0x03, _, _, _, 0x02, ..]) {
            self.tls.flight(payload, wire, 0);
        }
    }
}

impl crate::event::TlsSetup {
    /// More of the server's data while its ServerHello flight after early data is walked
    /// ([`IN_FLIGHT`]): true when `pkt` is the response's first segment (the flight ended
    /// with the segment before). A capture gap ends the walk (the segment's time stands).
    #[cold]
    pub(super) fn response_starts(&mut self, payload: &[u8], wire: u32, gap: bool) -> bool {
        if gap || self.hello & RESPONSE_NEXT != 0 {
            self.hello &= !(IN_FLIGHT | FLIGHT_FIN);
            return !gap;
        }
        self.flight(payload, wire, self.skip);
        false
    }

    /// Walks a segment of the server's flight after early data from `skip` and notes where
    /// it ends (the `FLIGHT_*` and [`RESPONSE_NEXT`] bits).
    fn flight(&mut self, payload: &[u8], wire: u32, skip: u16) {
        let fin = self.hello & FLIGHT_FIN != 0;
        self.hello &= !(IN_FLIGHT | FLIGHT_FIN);
        match flight(payload, wire, skip, fin) {
            Flight::Ended => self.hello |= RESPONSE_NEXT,
            Flight::More(skip, fin) => {
                self.skip = skip;
                self.hello |= FLIGHT_WALK | if fin { FLIGHT_FIN } else { 0 };
            }
            Flight::Unknown => {}
        }
    }
}

impl Conn {
    /// More of the handshake turn in progress (its records walked while the walk lasts):
    /// application data in it makes it a request. `gap`: bytes before it went uncaptured.
    #[cold]
    pub(super) fn tls_records(&mut self, payload: &[u8], wire: u32, gap: bool) {
        let t = &mut self.tls;
        if t.finished {
            // More of the client's data in the Finished's turn: the request came with it.
            t.finished = false;
            t.asked = false;
            return;
        }
        if !t.scan {
            return;
        }
        if gap {
            t.scan = false;
            return;
        }
        match scan(payload, wire, t.skip) {
            Scan::Data => {
                t.asked = false;
                t.scan = false;
                if t.turns == 0 {
                    t.hello |= EARLY_DATA;
                }
            }
            Scan::More(skip) => t.skip = skip,
            Scan::Lost => t.scan = false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_handshake_records_are_told_from_application_data_and_other_protocols() {
        // ClientHello (TLS 1.0 record version, as clients send it), TLS 1.2's ClientKeyExchange.
        assert!(tls_handshake(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01]));
        assert!(tls_handshake(&[0x16, 0x03, 0x03, 0x00, 0x46, 0x10]));
        // Application data, ChangeCipherSpec (TLS 1.3's second flight), SSLv2-looking or other
        // protocols' bytes, a payload the snap length cut to two bytes.
        assert!(!tls_handshake(&[0x17, 0x03, 0x03, 0x00, 0x20]));
        assert!(!tls_handshake(&[0x14, 0x03, 0x03, 0x00, 0x01, 0x01]));
        assert!(!tls_handshake(&[0x16, 0x03, 0x05]));
        assert!(!tls_handshake(b"GET / HTTP/1.1"));
        assert!(!tls_handshake(&[0x16, 0x03]));
        // The answer in the handshake: ServerHello or ChangeCipherSpec, not data.
        assert!(tls_setup_answer(&[0x16, 0x03, 0x03, 0x00, 0x5a, 0x02]));
        assert!(tls_setup_answer(&[0x14, 0x03, 0x03, 0x00, 0x01, 0x01]));
        assert!(!tls_setup_answer(&[0x17, 0x03, 0x03, 0x00, 0x20]));
        assert!(!tls_setup_answer(b"HTTP/1.1 200 OK"));
    }

    /// A record of `kind` with `len` bytes of body.
    #[test]
    fn tls13_client_finished_alone_is_told_from_a_request() {
        let ccs = vec![0x14, 0x03, 0x03, 0x00, 0x01, 0x01];
        for n in [53, 69] {
            let fin = [ccs.clone(), record(0x17, n)].concat();
            assert!(client_finished(&fin, fin.len() as u32), "{n}");
            // The request in the same segment, or a longer wire than the two records.
            let with_req = [fin.clone(), record(0x17, 100)].concat();
            assert!(!client_finished(&with_req, with_req.len() as u32));
            assert!(!client_finished(&fin, fin.len() as u32 + 105));
        }
        // Another size (a request), or no ChangeCipherSpec first.
        let other = [ccs, record(0x17, 100)].concat();
        assert!(!client_finished(&other, other.len() as u32));
        let bare = record(0x17, 53);
        assert!(!client_finished(&bare, bare.len() as u32));
    }

    fn record(kind: u8, len: u16) -> Vec<u8> {
        let mut r = vec![kind, 0x03, 0x03];
        r.extend_from_slice(&len.to_be_bytes());
        r.resize(5 + usize::from(len), 0xaa);
        r
    }

    #[test]
    fn application_data_in_a_handshake_turn_is_a_request() {
        let hello = record(0x16, 512);
        let ccs = record(0x14, 1);
        let early = record(0x17, 100);
        // A ClientHello alone: the next header would start the next segment.
        assert_eq!(scan(&hello, 517, 0), Scan::More(0));
        // TLS 1.3 early data after the ClientHello (and a compatibility ChangeCipherSpec).
        let flight = [hello.clone(), ccs.clone(), early.clone()].concat();
        assert_eq!(scan(&flight, flight.len() as u32, 0), Scan::Data);
        // A ClientHello cut over two segments, its early data in the second.
        assert_eq!(scan(&hello[..300], 300, 0), Scan::More(217));
        let rest = [hello[300..].to_vec(), early].concat();
        assert_eq!(scan(&rest, rest.len() as u32, 217), Scan::Data);
        // TLS 1.2's ClientKeyExchange, ChangeCipherSpec and Finished: handshake only.
        let cke = [record(0x16, 70), ccs, record(0x16, 40)].concat();
        assert_eq!(scan(&cke, cke.len() as u32, 0), Scan::More(0));
        // Cut by the snap length before the next header, or past the segment's captured
        // bytes: the walk ends (the turn stays a handshake turn).
        assert_eq!(scan(&hello[..200], 517 + 105, 0), Scan::Lost);
        // Not a TLS record.
        assert_eq!(scan(b"GET / HTTP/1.1\r\n", 16, 0), Scan::Lost);
    }

    /// A hello of `kind` (1 ClientHello, 2 ServerHello) in a record, with `exts` as
    /// (type, body) extensions.
    fn hello(kind: u8, exts: &[(u16, Vec<u8>)]) -> Vec<u8> {
        let mut body = vec![0x03, 0x03];
        body.extend([0x11; 32]);
        body.extend([32]);
        body.extend([0x22; 32]);
        if kind == 1 {
            body.extend([0x00, 0x04, 0x13, 0x01, 0x13, 0x02, 0x01, 0x00]);
        } else {
            body.extend([0x13, 0x01, 0x00]);
        }
        let mut e = Vec::new();
        for (t, b) in exts {
            e.extend(t.to_be_bytes());
            e.extend((b.len() as u16).to_be_bytes());
            e.extend(b);
        }
        body.extend((e.len() as u16).to_be_bytes());
        body.extend(e);
        let mut hs = vec![kind, 0, (body.len() >> 8) as u8, body.len() as u8];
        hs.extend(body);
        let mut r = vec![0x16, 0x03, 0x01];
        r.extend((hs.len() as u16).to_be_bytes());
        r.extend(hs);
        r
    }

    fn alpn(names: &[&str]) -> Vec<u8> {
        let list: Vec<u8> = names
            .iter()
            .flat_map(|n| [vec![n.len() as u8], n.as_bytes().to_vec()].concat())
            .collect();
        [(list.len() as u16).to_be_bytes().to_vec(), list].concat()
    }

    #[test]
    fn the_hellos_say_whether_http2_was_offered_and_chosen() {
        let sni = (0x0000, vec![0x00; 20]);
        let offer = hello(1, &[sni.clone(), (ALPN, alpn(&["h2", "http/1.1"]))]);
        assert_eq!(client_offers_h2(&offer), Some(true));
        let h1 = hello(1, &[sni.clone(), (ALPN, alpn(&["http/1.1"]))]);
        assert_eq!(client_offers_h2(&h1), Some(false));
        // "h2c" or a name that only starts with h2 is not h2.
        let h2c = hello(1, &[(ALPN, alpn(&["h2c", "h2-16"]))]);
        assert_eq!(client_offers_h2(&h2c), Some(false));
        assert_eq!(
            client_offers_h2(&hello(1, std::slice::from_ref(&sni))),
            Some(false)
        );
        // Cut before the ALPN extension (snap length) or inside it: not known.
        let alpn_at = offer.len() - alpn(&["h2", "http/1.1"]).len() - 4;
        assert_eq!(client_offers_h2(&offer[..alpn_at + 2]), None);
        assert_eq!(client_offers_h2(&offer[..offer.len() - 3]), None);
        assert_eq!(client_offers_h2(&offer[..60]), None);
        // A ServerHello is no ClientHello, and the other way round.
        let server = hello(2, &[(ALPN, alpn(&["h2"]))]);
        assert_eq!(client_offers_h2(&server), None);
        assert_eq!(server_chose(&offer), None);
        assert_eq!(server_chose(&server), Some(Chose::H2));
        let chose_h1 = hello(2, &[(0xff01, vec![0]), (ALPN, alpn(&["http/1.1"]))]);
        assert_eq!(server_chose(&chose_h1), Some(Chose::Other));
        assert_eq!(server_chose(&hello(2, &[])), Some(Chose::Other));
        // TLS 1.3: supported_versions says so; ALPN is in the encrypted extensions.
        let tls13 = hello(
            2,
            &[(0x0033, vec![0; 36]), (SUPPORTED_VERSIONS, vec![3, 4])],
        );
        assert_eq!(server_chose(&tls13), Some(Chose::Hidden));
        assert_eq!(server_chose(&server[..server.len() - 1]), None);
    }

    #[test]
    fn a_lone_alert_and_the_flight_after_early_data_are_told_from_requests() {
        // TLS 1.3 close_notify (19-byte body), TLS 1.2 alert (clear content type).
        let a13 = record(0x17, 19);
        assert!(alert_alone(&a13, 24));
        assert!(!alert_alone(&a13, 24 + 40), "more data after it: a request");
        let a12 = record(0x15, 26);
        assert!(alert_alone(&a12, 31));
        assert!(!alert_alone(&record(0x17, 20), 25));
        assert!(!alert_alone(b"GET / HTTP/1.1\r\n", 16));
        // EndOfEarlyData (21) then Finished (53 or 69), and nothing after.
        for n in [53, 69] {
            let flight = [record(0x17, 21), record(0x17, n)].concat();
            assert!(
                client_finished_after_early(&flight, flight.len() as u32),
                "{n}"
            );
            assert!(!client_finished_after_early(
                &flight,
                flight.len() as u32 + 30
            ));
        }
        let other = [record(0x17, 21), record(0x17, 100)].concat();
        assert!(!client_finished_after_early(&other, other.len() as u32));
        let no_eoed = [record(0x17, 30), record(0x17, 53)].concat();
        assert!(!client_finished_after_early(&no_eoed, no_eoed.len() as u32));
    }

    /// The server's flight after early data, as nginx sent it (tls13-0rtt frame 24):
    /// ServerHello, ChangeCipherSpec, EncryptedExtensions (27) and Finished (69).
    #[test]
    fn the_server_hello_flight_ends_at_a_finished_sized_record_at_a_segment_end() {
        let mut hello = record(0x16, 128);
        hello[5] = 0x02;
        let seg = [hello, record(0x14, 1), record(0x17, 27), record(0x17, 69)].concat();
        let wire = seg.len() as u32;
        assert_eq!(flight(&seg, wire, 0, false), Flight::Ended);
        // The response in the same segment, or after a record of another size: unknown.
        let with_resp = [seg.clone(), record(0x17, 252)].concat();
        assert_eq!(
            flight(&with_resp, with_resp.len() as u32, 0, false),
            Flight::Unknown
        );
        let short = [seg[..seg.len() - 74].to_vec(), record(0x17, 53)].concat();
        assert_eq!(flight(&short, short.len() as u32, 0, false), Flight::Ended);
        // Cut over two segments in the Finished: walked on into the second.
        let cut = seg.len() - 30;
        assert_eq!(
            flight(&seg[..cut], cut as u32, 0, false),
            Flight::More(30, true)
        );
        let rest = &seg[cut..];
        assert_eq!(flight(rest, 30, 30, true), Flight::Ended);
        assert_eq!(flight(rest, 30, 30, false), Flight::Unknown);
        // The snap length cut a header, an alert record: unknown.
        assert_eq!(flight(&seg[..140], wire, 0, false), Flight::Unknown);
        let alert = [seg[..seg.len() - 74].to_vec(), record(0x15, 2)].concat();
        assert_eq!(
            flight(&alert, alert.len() as u32, 0, false),
            Flight::Unknown
        );
    }
}
