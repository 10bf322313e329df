//! What a test prints: iperf3's interval table and final summary, and iperf3's units (bytes
//! in powers of 1024, bits/s in powers of 1000; `-b`/`-l`/`-w` arguments parsed the same way).
//! The JSON types these lines render are in [`crate::report`].

use crate::report::{Interval, Report, Sum};

/// iperf3's unit formatting: bytes in powers of 1024, bits/s in powers of 1000, 3–4 digits.
pub fn fmt_bytes(b: f64) -> String {
    let (v, u) = scale(
        b,
        1024.0,
        &["Bytes", "KBytes", "MBytes", "GBytes", "TBytes"],
    );
    format!("{} {u}", digits(v))
}

/// Bits per second as iperf3 prints them.
pub fn fmt_bits(bps: f64) -> String {
    let (v, u) = scale(
        bps,
        1000.0,
        &[
            "bits/sec",
            "Kbits/sec",
            "Mbits/sec",
            "Gbits/sec",
            "Tbits/sec",
        ],
    );
    format!("{} {u}", digits(v))
}

fn scale(mut v: f64, base: f64, units: &[&'static str]) -> (f64, &'static str) {
    let mut i = 0;
    while v >= base && i + 1 < units.len() {
        v /= base;
        i += 1;
    }
    (v, units[i])
}

fn digits(v: f64) -> String {
    if v < 9.995 {
        format!("{v:4.2}")
    } else if v < 99.95 {
        format!("{v:4.1}")
    } else {
        format!("{v:4.0}")
    }
}

/// A bitrate as iperf3's `-b` takes it: bits/s with an optional K, M, G or T (powers of 1000).
pub fn parse_rate(s: &str) -> Result<u64, String> {
    parse_scaled(s, 1000.0)
        .map_err(|e| format!("bitrate '{s}': {e} (e.g. 500K, 100M, 1G; 0 = unlimited)"))
}

/// A size as iperf3's `-l`/`-w` take it: bytes with an optional K, M or G (powers of 1024).
pub fn parse_size(s: &str) -> Result<u64, String> {
    parse_scaled(s, 1024.0).map_err(|e| format!("size '{s}': {e} (e.g. 1400, 64K, 4M)"))
}

fn parse_scaled(s: &str, base: f64) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m = match c.to_ascii_lowercase() {
                'k' => base,
                'm' => base * base,
                'g' => base * base * base,
                't' => base * base * base * base,
                _ => return Err(format!("unknown suffix '{c}'")),
            };
            (&t[..i], m)
        }
        _ => (t, 1.0),
    };
    let v: f64 = num.parse().map_err(|_| "not a number".to_string())?;
    if !v.is_finite() || v < 0.0 {
        return Err("must be a non-negative number".into());
    }
    let r = v * mult;
    if r > u64::MAX as f64 / 2.0 {
        return Err("too large".into());
    }
    Ok(r.round() as u64)
}

impl Report {
    /// The header line of the interval table.
    pub fn header(tcp_sender: bool) -> String {
        if tcp_sender {
            "[ ID] Interval           Transfer     Bitrate         Retr  Cwnd".into()
        } else {
            "[ ID] Interval           Transfer     Bitrate".into()
        }
    }

    /// An interval's lines, iperf3-style (one per stream, and SUM with several).
    pub fn interval_lines(iv: &Interval, bidir: bool) -> Vec<String> {
        let mut out = Vec::new();
        for s in &iv.streams {
            let role = if bidir {
                if s.sender { "[TX] " } else { "[RX] " }
            } else {
                ""
            };
            let mut l = format!(
                "[{:>3}]{role} {:6.2}-{:<6.2} sec  {}  {}",
                s.socket,
                s.start,
                s.end,
                fmt_bytes(s.bytes as f64),
                fmt_bits(s.bits_per_second)
            );
            if let (Some(r), Some(c)) = (s.retransmits, s.snd_cwnd) {
                l.push_str(&format!("  {r:4}   {}", fmt_bytes(c as f64)));
            }
            if let Some(p) = s.packets {
                l.push_str(&format!("  {p} datagrams"));
            }
            out.push(l);
        }
        let n_dirs = if iv.sum_bidir_reverse.is_some() { 2 } else { 1 };
        if iv.streams.len() > n_dirs {
            for s in std::iter::once(&iv.sum).chain(iv.sum_bidir_reverse.as_ref()) {
                let role = if bidir {
                    if s.sender { "[TX] " } else { "[RX] " }
                } else {
                    ""
                };
                out.push(format!(
                    "[SUM]{role} {:6.2}-{:<6.2} sec  {}  {}{}",
                    s.start,
                    s.end,
                    fmt_bytes(s.bytes as f64),
                    fmt_bits(s.bits_per_second),
                    s.retransmits
                        .map(|r| format!("  {r:4}"))
                        .unwrap_or_default()
                ));
            }
        }
        out
    }

    /// The final summary lines.
    pub fn summary_lines(&self) -> Vec<String> {
        let mut out = vec!["- - - - - - - - - - - - - - - - - - - - - - - - -".to_string()];
        let udp = self.setup.protocol == "udp";
        out.push(if udp {
            "[ ID] Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams"
                .into()
        } else {
            "[ ID] Interval           Transfer     Bitrate         Retr".into()
        });
        let mut dir = |label: &str, sent: &Sum, rcv: &Sum| {
            let mut l = format!(
                "[SUM]{label} {:6.2}-{:<6.2} sec  {}  {}",
                0.0,
                sent.seconds,
                fmt_bytes(sent.bytes as f64),
                fmt_bits(sent.bits_per_second)
            );
            if udp {
                l.push_str(&format!(
                    "  {:.3} ms  0/{} (0%)  sender",
                    0.0,
                    sent.packets.unwrap_or(0)
                ));
            } else if let Some(r) = sent.retransmits {
                l.push_str(&format!("  {r:4}             sender"));
            } else {
                l.push_str("                   sender");
            }
            out.push(l);
            let mut l = format!(
                "[SUM]{label} {:6.2}-{:<6.2} sec  {}  {}",
                0.0,
                rcv.seconds,
                fmt_bytes(rcv.bytes as f64),
                fmt_bits(rcv.bits_per_second)
            );
            if udp {
                l.push_str(&format!(
                    "  {:.3} ms  {}/{} ({:.2}%)  receiver",
                    rcv.jitter_ms.unwrap_or(0.0),
                    rcv.lost_packets.unwrap_or(0),
                    sent.packets.unwrap_or(0),
                    rcv.lost_percent.unwrap_or(0.0)
                ));
                if let Some(o) = rcv.out_of_order.filter(|o| *o > 0) {
                    l.push_str(&format!("  ({o} out of order)"));
                }
            } else {
                l.push_str("                  receiver");
            }
            out.push(l);
        };
        let bidir = self.setup.bidir;
        dir(
            if bidir { "[TX-C]" } else { "" },
            &self.end.sum_sent,
            &self.end.sum_received,
        );
        if let (Some(s), Some(r)) = (
            &self.end.sum_sent_bidir_reverse,
            &self.end.sum_received_bidir_reverse,
        ) {
            dir("[RX-C]", s, r);
        }
        for f in &self.findings {
            out.push(format!("finding {} ({:?}): {}", f.id, f.side, f.summary));
        }
        let c = &self.end.cpu_utilization_percent;
        out.push(format!(
            "CPU utilization: local {:.1}% (user {:.1}%, system {:.1}%), remote {:.1}% (user {:.1}%, system {:.1}%)",
            c.host_total, c.host_user, c.host_system, c.remote_total, c.remote_user, c.remote_system
        ));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_like_iperf3() {
        assert_eq!(fmt_bytes(1.10 * 1024.0 * 1024.0 * 1024.0), "1.10 GBytes");
        assert_eq!(fmt_bits(9.42e9), "9.42 Gbits/sec");
        assert_eq!(fmt_bits(941e6), " 941 Mbits/sec");
        assert_eq!(fmt_bytes(512.0 * 1024.0), " 512 KBytes");
        assert_eq!(fmt_bits(12.3e6), "12.3 Mbits/sec");
    }

    #[test]
    fn rates_and_sizes_like_iperf3() {
        assert_eq!(parse_rate("1G"), Ok(1_000_000_000));
        assert_eq!(parse_rate("2.5m"), Ok(2_500_000));
        assert_eq!(parse_rate("0"), Ok(0));
        assert_eq!(parse_size("64K"), Ok(65536));
        assert!(parse_rate("fast").unwrap_err().contains("bitrate 'fast'"));
        assert!(parse_size("12Q").unwrap_err().contains("suffix"));
        assert!(parse_size("-1").is_err());
    }
}
