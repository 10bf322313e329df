//! iperf3's control protocol, as its source (esnet/iperf `src/iperf_api.c`, `iperf_client_api.c`,
//! `iperf_server_api.c`, `iperf.h`) defines it on the wire:
//!
//! 1. the client opens the control connection and writes a 37-byte cookie (36 characters of
//!    `a-z2-7` and a NUL);
//! 2. the server answers with one signed state byte: `PARAM_EXCHANGE` (or `ACCESS_DENIED` when
//!    a test is running);
//! 3. the client sends the parameters as JSON behind a 4-byte big-endian length;
//! 4. the server says `CREATE_STREAMS`; the client opens the data streams (TCP: connect to the
//!    same port and write the cookie; UDP: one 4-byte datagram, answered by another);
//! 5. the server says `TEST_START` and `TEST_RUNNING`; data flows;
//! 6. the client says `TEST_END`; the server says `EXCHANGE_RESULTS`, both send their results
//!    (client first), the server says `DISPLAY_RESULTS`, the client says `IPERF_DONE`.
//!
//! Errors: `SERVER_ERROR` is followed by two 4-byte big-endian integers (iperf3's error number
//! and errno).

use crate::Error;
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};

/// Bytes of the cookie on the wire (an ASCII uuid-like string plus its NUL).
pub const COOKIE_SIZE: usize = 37;
/// iperf3's default port.
pub const DEFAULT_PORT: u16 = 5201;
/// Default TCP block (one write) size.
pub const DEFAULT_TCP_BLKSIZE: usize = 128 * 1024;
/// UDP block size when the control connection's MSS is unknown.
pub const DEFAULT_UDP_BLKSIZE: usize = 1460;
/// The largest UDP payload.
pub const MAX_UDP_BLOCKSIZE: usize = 65535 - 8 - 20;
/// The largest parameters JSON a server accepts.
pub const MAX_PARAMS_JSON: u32 = 8 * 1024;
/// The largest results JSON we accept (iperf3 sets no limit; ours keeps a bad peer from making
/// us allocate gigabytes).
pub const MAX_RESULTS_JSON: u32 = 16 * 1024 * 1024;
/// Most streams iperf3 allows.
pub const MAX_STREAMS: u32 = 128;
/// The UDP "connect" datagram a client sends (iperf3 writes the host-order int 0x36373839 on a
/// little-endian machine: the bytes are "9876").
pub const UDP_CONNECT_MSG: [u8; 4] = *b"9876";
/// The server's UDP reply ("6789" on the wire).
pub const UDP_CONNECT_REPLY: [u8; 4] = *b"6789";
/// The reply of servers before 3.10 (987654321 in little-endian byte order).
pub const LEGACY_UDP_CONNECT_REPLY: [u8; 4] = 987654321u32.to_le_bytes();

/// The state bytes of the control connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    TestStart,
    TestRunning,
    TestEnd,
    ParamExchange,
    CreateStreams,
    ServerTerminate,
    ClientTerminate,
    ExchangeResults,
    DisplayResults,
    IperfStart,
    IperfDone,
    AccessDenied,
    ServerError,
}

impl State {
    /// The byte on the wire.
    pub fn code(self) -> i8 {
        match self {
            State::TestStart => 1,
            State::TestRunning => 2,
            State::TestEnd => 4,
            State::ParamExchange => 9,
            State::CreateStreams => 10,
            State::ServerTerminate => 11,
            State::ClientTerminate => 12,
            State::ExchangeResults => 13,
            State::DisplayResults => 14,
            State::IperfStart => 15,
            State::IperfDone => 16,
            State::AccessDenied => -1,
            State::ServerError => -2,
        }
    }

    /// The state of a byte, `None` for one iperf3 does not send.
    pub fn from_code(b: i8) -> Option<State> {
        Some(match b {
            1 => State::TestStart,
            2 => State::TestRunning,
            4 => State::TestEnd,
            9 => State::ParamExchange,
            10 => State::CreateStreams,
            11 => State::ServerTerminate,
            12 => State::ClientTerminate,
            13 => State::ExchangeResults,
            14 => State::DisplayResults,
            15 => State::IperfStart,
            16 => State::IperfDone,
            -1 => State::AccessDenied,
            -2 => State::ServerError,
            _ => return None,
        })
    }
}

/// A fresh cookie: 36 random characters of iperf3's alphabet and a NUL.
pub fn make_cookie() -> [u8; COOKIE_SIZE] {
    const CHARS: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    let mut raw = [0u8; COOKIE_SIZE];
    let filled = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut raw))
        .is_ok();
    if !filled {
        // No /dev/urandom (a chroot): the clock and the pid are unique enough for a test id.
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
            ^ u128::from(std::process::id()) << 64;
        for (i, b) in raw.iter_mut().enumerate() {
            *b = (seed >> ((i * 5) % 120)) as u8 ^ (i as u8).wrapping_mul(31);
        }
    }
    let mut out = [0u8; COOKIE_SIZE];
    for i in 0..COOKIE_SIZE - 1 {
        out[i] = CHARS[usize::from(raw[i]) % CHARS.len()];
    }
    out
}

/// Writes one state byte.
pub fn send_state(w: &mut impl Write, s: State) -> Result<(), Error> {
    w.write_all(&[s.code() as u8])
        .map_err(|e| Error::io("write control state", e))
}

/// Writes one value as iperf3's length-prefixed JSON.
pub fn write_json<T: Serialize>(w: &mut impl Write, v: &T) -> Result<(), Error> {
    let body = serde_json::to_vec(v).map_err(|e| Error::Protocol(format!("encode JSON: {e}")))?;
    let mut msg = Vec::with_capacity(4 + body.len());
    msg.extend_from_slice(&(body.len() as u32).to_be_bytes());
    msg.extend_from_slice(&body);
    w.write_all(&msg)
        .map_err(|e| Error::io("write control JSON", e))
}

/// Reads one length-prefixed JSON value of at most `max` bytes.
pub fn read_json<T: for<'de> Deserialize<'de>>(r: &mut impl Read, max: u32) -> Result<T, Error> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)
        .map_err(|e| Error::io("read control JSON length", e))?;
    let n = u32::from_be_bytes(len);
    if n == 0 || n > max {
        return Err(Error::Protocol(format!(
            "control JSON of {n} bytes (allowed 1..={max}): not an iperf3 peer?"
        )));
    }
    let mut body = vec![0u8; n as usize];
    r.read_exact(&mut body)
        .map_err(|e| Error::io("read control JSON", e))?;
    serde_json::from_slice(&body).map_err(|e| Error::Protocol(format!("bad control JSON: {e}")))
}

/// The test parameters the client sends (the fields iperf3 3.x reads; others are ignored by
/// both sides).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Params {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tcp: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub udp: Option<bool>,
    pub omit: u32,
    /// Seconds.
    pub time: u32,
    /// Bytes to send instead of a time (0: by time).
    pub num: u64,
    pub blockcount: u64,
    #[serde(rename = "MSS", skip_serializing_if = "Option::is_none")]
    pub mss: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodelay: Option<bool>,
    pub parallel: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reverse: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bidirectional: Option<bool>,
    /// Socket buffer size (-w).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<u32>,
    /// Block size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub len: Option<u32>,
    /// Target bitrate per stream, bits/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pacing_timer: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub udp_counters_64bit: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub congestion: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_version: Option<String>,
}

impl Params {
    /// UDP (else TCP).
    pub fn is_udp(&self) -> bool {
        self.udp == Some(true)
    }
    /// Server sends to client.
    pub fn is_reverse(&self) -> bool {
        self.reverse == Some(true)
    }
    /// Both directions at once.
    pub fn is_bidir(&self) -> bool {
        self.bidirectional == Some(true)
    }

    /// Checks the values iperf3's server checks, with a message naming the field.
    pub fn validate(&self) -> Result<(), Error> {
        if self.parallel < 1 || self.parallel > MAX_STREAMS {
            return Err(Error::Protocol(format!(
                "parameter parallel = {} (allowed 1..={MAX_STREAMS})",
                self.parallel
            )));
        }
        if self.time > 86_400 {
            return Err(Error::Protocol(format!(
                "parameter time = {} s (at most 86400)",
                self.time
            )));
        }
        if self.num != 0 || self.blockcount != 0 {
            return Err(Error::Protocol(
                "tests by byte or block count (-n/-k) are not supported; use a duration (-t)"
                    .into(),
            ));
        }
        if let Some(l) = self.len {
            let max = if self.is_udp() {
                MAX_UDP_BLOCKSIZE as u32
            } else {
                1024 * 1024
            };
            if l == 0 || l > max {
                return Err(Error::Protocol(format!(
                    "parameter len = {l} (allowed 1..={max})"
                )));
            }
            if self.is_udp() && l < 16 {
                return Err(Error::Protocol(format!(
                    "parameter len = {l}: a UDP block holds a 16-byte header"
                )));
            }
        }
        Ok(())
    }
}

/// Reads an integer the way iperf3's cJSON writes it: a negative value may arrive as its
/// unsigned 64-bit twin (iperf3 3.12 sends -1 retransmits as 18446744073709551615), and any
/// number may carry a fraction.
fn lenient_i64<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    let n = serde_json::Number::deserialize(d)?;
    Ok(if let Some(i) = n.as_i64() {
        i
    } else if let Some(u) = n.as_u64() {
        u as i64
    } else {
        n.as_f64().unwrap_or(0.0) as i64
    })
}

fn lenient_u64<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    Ok(lenient_i64(d)?.max(0) as u64)
}

fn lenient_i32<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i32, D::Error> {
    Ok(lenient_i64(d)?.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32)
}

/// One stream's results as exchanged at the end.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct StreamResult {
    pub id: u32,
    #[serde(deserialize_with = "lenient_u64")]
    pub bytes: u64,
    /// -1 when this side did not send or cannot count them.
    #[serde(deserialize_with = "lenient_i64")]
    pub retransmits: i64,
    /// Seconds.
    pub jitter: f64,
    #[serde(deserialize_with = "lenient_i64")]
    pub errors: i64,
    #[serde(deserialize_with = "lenient_i64")]
    pub omitted_errors: i64,
    #[serde(deserialize_with = "lenient_i64")]
    pub packets: i64,
    #[serde(deserialize_with = "lenient_i64")]
    pub omitted_packets: i64,
    pub start_time: f64,
    pub end_time: f64,
}

/// One side's results.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Results {
    pub cpu_util_total: f64,
    pub cpu_util_user: f64,
    pub cpu_util_system: f64,
    /// 1: this side sent and counted retransmits; 0: sent, cannot count; -1: only received.
    #[serde(deserialize_with = "lenient_i32")]
    pub sender_has_retransmits: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub congestion_used: Option<String>,
    pub streams: Vec<StreamResult>,
    /// netdoctor's addition (iperf3 ignores keys it does not know): this host's CPUs over the
    /// test, so the peer can judge the receiver's softirq load.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub netdoctor_cpu: Option<crate::cpu::HostCpu>,
}

/// iperf3's stream numbering: 1, then 3, 4, 5, … (kept for compatibility with old versions).
pub fn stream_id(index: usize) -> u32 {
    if index == 0 { 1 } else { index as u32 + 2 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookie_is_iperf3_shaped() {
        let c = make_cookie();
        assert_eq!(c[COOKIE_SIZE - 1], 0);
        assert!(
            c[..36]
                .iter()
                .all(|b| b"abcdefghijklmnopqrstuvwxyz234567".contains(b))
        );
        assert_ne!(make_cookie(), c);
    }

    #[test]
    fn state_codes_round_trip() {
        for s in [
            State::TestStart,
            State::TestRunning,
            State::TestEnd,
            State::ParamExchange,
            State::CreateStreams,
            State::ServerTerminate,
            State::ClientTerminate,
            State::ExchangeResults,
            State::DisplayResults,
            State::IperfStart,
            State::IperfDone,
            State::AccessDenied,
            State::ServerError,
        ] {
            assert_eq!(State::from_code(s.code()), Some(s));
        }
        assert_eq!(State::from_code(3), None);
        assert_eq!(State::AccessDenied.code() as u8, 0xff);
    }

    #[test]
    fn json_is_length_prefixed_big_endian() {
        let p = Params {
            tcp: Some(true),
            time: 3,
            parallel: 2,
            ..Params::default()
        };
        let mut buf = Vec::new();
        write_json(&mut buf, &p).unwrap();
        let n = u32::from_be_bytes(buf[..4].try_into().unwrap()) as usize;
        assert_eq!(n, buf.len() - 4);
        let text = std::str::from_utf8(&buf[4..]).unwrap();
        assert!(text.contains("\"tcp\":true") && text.contains("\"parallel\":2"));
        assert!(!text.contains("reverse"), "{text}");
        let back: Params = read_json(&mut &buf[..], MAX_PARAMS_JSON).unwrap();
        assert_eq!(back, p);
    }

    #[test]
    fn json_length_out_of_bounds_is_a_clear_error() {
        let mut buf = 100_000u32.to_be_bytes().to_vec();
        buf.extend_from_slice(b"{}");
        let e = read_json::<Params>(&mut &buf[..], MAX_PARAMS_JSON).unwrap_err();
        assert!(e.to_string().contains("100000 bytes"), "{e}");
    }

    #[test]
    fn iperf3_params_parse_with_unknown_fields() {
        // What iperf3 3.12 sends for `-c … -P 2 -R -t 5` (the server's `iperf3 -s -d` printed it).
        let j = r#"{"tcp":true,"omit":0,"time":5,"num":0,"blockcount":0,"parallel":2,"reverse":true,"len":131072,"pacing_timer":1000,"client_version":"3.12"}"#;
        let p: Params = serde_json::from_str(j).unwrap();
        assert!(p.is_reverse() && !p.is_udp() && p.parallel == 2 && p.time == 5);
        p.validate().unwrap();
        let bad = Params { parallel: 0, ..p };
        assert!(bad.validate().unwrap_err().to_string().contains("parallel"));
    }

    #[test]
    fn iperf3_results_with_unsigned_minus_one_parse() {
        // iperf3 3.12's server results for a receiving stream (from a run against it).
        let j = r#"{"cpu_util_total":5.2,"cpu_util_user":0.4,"cpu_util_system":4.8,"sender_has_retransmits":18446744073709551615,"congestion_used":"bbr","streams":[{"id":1,"bytes":1234567,"retransmits":18446744073709551615,"jitter":0,"errors":0,"omitted_errors":0,"packets":0,"omitted_packets":0,"start_time":0,"end_time":2.000107}]}"#;
        let r: Results = serde_json::from_str(j).unwrap();
        assert_eq!(r.sender_has_retransmits, -1);
        assert_eq!(r.streams[0].retransmits, -1);
        assert_eq!(r.streams[0].bytes, 1234567);
    }

    #[test]
    fn stream_ids_skip_two() {
        assert_eq!((0..4).map(stream_id).collect::<Vec<_>>(), vec![1, 3, 4, 5]);
    }

    #[test]
    fn udp_connect_bytes_match_iperf3_on_little_endian() {
        assert_eq!(u32::from_le_bytes(UDP_CONNECT_MSG), 0x36373839);
        assert_eq!(u32::from_le_bytes(UDP_CONNECT_REPLY), 0x39383736);
    }
}
