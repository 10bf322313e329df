//! The ladder diagram: one connection's evidence packets drawn like Wireshark's flow graph.
//!
//! The client's line is on the left and the server's on the right. Time runs downward, one row
//! per packet (as in Wireshark), each row labelled on the left with the frame number and the
//! capture time; each arrow slopes downward from the sender to the receiver. Rows are evenly
//! spaced except across the longest gap between two packets (when it is over 1 ms), which gets
//! a tall shaded band labelled with its length and what it is (for `nagle_delayed_ack`: the
//! peer's delayed-ACK timer). A linear time axis would not work: a 45 ms wait next to a
//! 0.07 ms release would put the late ACK and the held segment on top of each other. For the
//! delayed-ACK findings, the packets are named by their part in the stall: the segment in
//! flight, the late ACK, the held segment it released.

use super::esc;
use super::svg::{Svg, fmt_ms};
use crate::i18n::Lang;
use netdoctor_core::{FindingId, PacketRef};
use std::fmt::Write as _;

const W: f64 = 820.0;
const CLIENT_X: f64 = 200.0;
const SERVER_X: f64 = 620.0;
const TOP: f64 = 64.0;
const ROW: f64 = 66.0;
const GAP_ROW: f64 = 170.0;
/// Half the vertical drop of an arrow.
const SLOPE: f64 = 9.0;

/// What a packet is in the stall, for the labels and colours.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Plain,
    InFlight,
    LateAck,
    Held,
}

impl Role {
    fn class(self) -> &'static str {
        match self {
            Role::Plain => "pkt",
            Role::InFlight => "pkt inflight",
            Role::LateAck => "pkt lateack",
            Role::Held => "pkt held",
        }
    }
}

fn is_pure_ack(p: &PacketRef) -> bool {
    p.desc.contains("len=0")
        && !p.desc.contains('S')
        && !p.desc.contains('R')
        && !p.desc.contains('F')
}

/// Roles and role labels of the packets, by finding.
fn roles(id: FindingId, pkts: &[PacketRef], l: Lang) -> Vec<(Role, String)> {
    let mut out = vec![(Role::Plain, String::new()); pkts.len()];
    match id {
        FindingId::NagleDelayedAck | FindingId::DelayedAckStall => {
            // sender data, peer's pure ACK, sender data: the stall's three steps.
            for i in 1..pkts.len().saturating_sub(1) {
                let (a, b, n) = (&pkts[i - 1], &pkts[i], &pkts[i + 1]);
                if is_pure_ack(b) && a.dir == n.dir && a.dir != b.dir && !is_pure_ack(n) {
                    out[i - 1] = (Role::InFlight, l.t("ladder-in-flight"));
                    out[i] = (Role::LateAck, l.t("ladder-late-ack"));
                    out[i + 1] = if id == FindingId::NagleDelayedAck {
                        (Role::Held, l.t("ladder-held"))
                    } else {
                        (Role::Held, l.t("ladder-next"))
                    };
                }
            }
        }
        FindingId::RetransmissionTimeout | FindingId::PacketLossRetransmission => {
            if let [first, .., last] = &mut out[..] {
                *first = (Role::InFlight, l.t("ladder-original"));
                *last = (Role::Held, l.t("ladder-retransmission"));
            }
        }
        FindingId::ZeroWindow => {
            if let [first, .., last] = &mut out[..] {
                *first = (Role::LateAck, l.t("ladder-window-zero"));
                *last = (Role::Held, l.t("ladder-window-reopened"));
            }
        }
        FindingId::SlowServerProcessing => {
            if let [first, .., last] = &mut out[..] {
                *first = (Role::InFlight, l.t("ladder-request-complete"));
                *last = (Role::Held, l.t("ladder-first-byte"));
            }
        }
        _ => {}
    }
    out
}

/// What the marked gap is, by finding.
fn gap_label(id: FindingId, l: Lang) -> String {
    l.t(match id {
        FindingId::NagleDelayedAck | FindingId::DelayedAckStall => "ladder-gap-delayed-ack",
        FindingId::RetransmissionTimeout => "ladder-gap-rto",
        FindingId::PacketLossRetransmission => "ladder-gap-loss",
        FindingId::ZeroWindow => "ladder-gap-zero-window",
        FindingId::SlowServerProcessing => "ladder-gap-server",
        FindingId::SynRetransmit => "ladder-gap-syn",
        _ => "ladder-gap-longest",
    })
}

/// At most `n` characters of `s`, with an ellipsis when cut (labels must fit their place;
/// the whole text is in the note under the diagram).
fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let mut out: String = s.chars().take(n.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Splits `"10.0.0.1:40000 → 10.0.0.2:80"` into (client, server).
fn ends(connection: &str) -> (&str, &str) {
    match connection.split_once('→') {
        Some((c, s)) => (c.trim(), s.trim()),
        None => (connection, ""),
    }
}

/// The ladder of one connection's evidence packets as an SVG element with id `ladder-{n}`.
pub(crate) fn ladder(
    n: usize,
    id: FindingId,
    connection: &str,
    pkts: &[PacketRef],
    l: Lang,
) -> Option<String> {
    if pkts.is_empty() {
        return None;
    }
    let gaps: Vec<f64> = pkts
        .windows(2)
        .map(|w| (w[1].time - w[0].time) * 1000.0)
        .collect();
    // The longest gap over 1 ms gets the band.
    let marked = gaps
        .iter()
        .enumerate()
        .filter(|(_, g)| **g >= 1.0)
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(i, _)| i);
    let mut ys = Vec::with_capacity(pkts.len());
    let mut y = TOP + 34.0;
    for i in 0..pkts.len() {
        if i > 0 {
            y += if Some(i - 1) == marked { GAP_ROW } else { ROW };
        }
        ys.push(y);
    }
    let h = y + 44.0;
    let (client, server) = ends(connection);
    let mut s = Svg::new(
        W,
        h,
        "ladder-svg",
        &l.ui(
            "ladder-title",
            &[
                ("connection", connection.into()),
                ("n", pkts.len().to_string().into()),
            ],
        ),
    );
    // Column heads and the two time lines.
    // 40 characters: an IPv6 address with its port fits.
    s.rect(CLIENT_X - 150.0, 8.0, 300.0, 40.0, "endpoint", None);
    s.text(CLIENT_X, 25.0, "middle", "end-role", &l.t("word-client"));
    s.text(CLIENT_X, 41.0, "middle", "end-addr", &clip(client, 40));
    s.rect(SERVER_X - 150.0, 8.0, 300.0, 40.0, "endpoint", None);
    s.text(SERVER_X, 25.0, "middle", "end-role", &l.t("word-server"));
    s.text(SERVER_X, 41.0, "middle", "end-addr", &clip(server, 40));
    s.line(CLIENT_X, TOP - 14.0, CLIENT_X, h - 10.0, "lifeline");
    s.line(SERVER_X, TOP - 14.0, SERVER_X, h - 10.0, "lifeline");
    s.text(
        8.0,
        TOP - 2.0,
        "start",
        "axis-title",
        &l.t("ladder-frame-time"),
    );

    if let Some(g) = marked {
        let (y0, y1) = (ys[g] + SLOPE + 28.0, ys[g + 1] - SLOPE - 24.0);
        s.rect(CLIENT_X, y0, SERVER_X - CLIENT_X, y1 - y0, "gap-band", None);
        let mid = (y0 + y1) / 2.0;
        s.text(
            (CLIENT_X + SERVER_X) / 2.0,
            mid + 2.0,
            "middle",
            "gap-ms",
            &l.ui("ladder-gap", &[("ms", fmt_ms(gaps[g]).into())]),
        );
        s.text(
            (CLIENT_X + SERVER_X) / 2.0,
            mid + 24.0,
            "middle",
            "gap-what",
            &gap_label(id, l),
        );
        // A bracket beside the server's line.
        let bx = SERVER_X + 22.0;
        let (b0, b1) = (ys[g], ys[g + 1]);
        s.line(bx, b0, bx, b1, "bracket");
        s.line(bx - 6.0, b0, bx, b0, "bracket");
        s.line(bx - 6.0, b1, bx, b1, "bracket");
        s.text(
            bx + 8.0,
            (b0 + b1) / 2.0 + 5.0,
            "start",
            "bracket-text",
            &fmt_ms(gaps[g]),
        );
    }

    let roles = roles(id, pkts, l);
    for (i, p) in pkts.iter().enumerate() {
        let y = ys[i];
        let (role, what) = &roles[i];
        let to_server = p.dir.starts_with('C');
        let (x1, x2) = if to_server {
            (CLIENT_X, SERVER_X)
        } else {
            (SERVER_X, CLIENT_X)
        };
        let mut head = String::new();
        let _ = write!(head, "#{}", p.frame);
        let head = clip(&head, 12);
        s.text(8.0, y - 2.0, "start", "frame", &head);
        s.text(8.0, y + 14.0, "start", "time", &format!("{:.6} s", p.time));
        if i > 0 && Some(i - 1) != marked {
            s.text(
                CLIENT_X - 12.0,
                y + 4.0,
                "end",
                "delta",
                &format!("+{}", fmt_ms(gaps[i - 1])),
            );
        }
        s.arrow(x1, y - SLOPE, x2, y + SLOPE, role.class());
        s.text(
            (x1 + x2) / 2.0,
            y - SLOPE - 6.0,
            "middle",
            &format!("desc {}", role.class()),
            &clip(&format!("{} {}", p.dir, p.desc), 56),
        );
        if !what.is_empty() {
            s.text(
                (x1 + x2) / 2.0,
                y + SLOPE + 17.0,
                "middle",
                &format!("role {}", role.class()),
                what,
            );
        }
    }
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<div class="ladder" id="ladder-{n}" data-connection="{}">"#,
        esc(connection)
    );
    out.push_str(&s.finish());
    out.push_str("</div>");
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(frame: u64, time: f64, dir: &str, desc: &str) -> PacketRef {
        PacketRef {
            frame,
            time,
            ts: 1_700_000_000.0 + time,
            dir: dir.into(),
            desc: desc.into(),
        }
    }

    #[test]
    fn nagle_ladder_marks_the_gap_the_late_ack_and_the_held_segment() {
        let pkts = [
            p(116, 0.002503, "S→C", "[P.] len=238"),
            p(117, 0.047849, "C→S", "[.] len=0"),
            p(127, 0.047916, "S→C", "[P.] len=616"),
        ];
        let svg = ladder(
            1,
            FindingId::NagleDelayedAck,
            "127.0.0.1:35044 → 127.0.0.1:18081",
            &pkts,
            Lang::En,
        )
        .unwrap();
        assert!(svg.contains(r#"id="ladder-1""#));
        assert!(svg.contains("45.3 ms gap"), "{svg}");
        assert!(svg.contains("late ACK"));
        assert!(svg.contains("held segment"));
        assert!(
            svg.contains("+0.07 ms"),
            "small gaps keep their delta: {svg}"
        );
        assert_eq!(svg.matches("gap-band").count(), 1);
        // Client on the left: the ACK (C→S) arrow runs left to right.
        assert!(svg.contains(r#"<line x1="200" y1="#), "{svg}");
    }

    #[test]
    fn no_band_without_a_gap_and_nothing_for_no_packets() {
        let pkts = [
            p(1, 0.0, "C→S", "[S] len=0"),
            p(2, 0.0001, "S→C", "[S.] len=0"),
        ];
        let svg = ladder(2, FindingId::ConnectionReset, "a:1 → b:2", &pkts, Lang::En).unwrap();
        assert!(!svg.contains("gap-band"));
        assert!(ladder(3, FindingId::ConnectionReset, "a → b", &[], Lang::En).is_none());
    }
}
