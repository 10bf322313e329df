//! Per-hop statistics over the rounds, as mtr shows them: loss, last/best/avg/worst, standard
//! deviation, and jitter (mean absolute difference of consecutive RTTs, mtr's "Javg").

use super::probe::ReplyKind;
use crate::scoped::ScopedIp;
use serde::Serialize;
use std::net::{IpAddr, SocketAddr};

/// One answered probe.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Sample {
    pub round: u32,
    pub from: IpAddr,
    /// `from`'s scope id (interface index) when it is an IPv6 link-local address.
    pub scope_id: Option<u32>,
    pub rtt_ms: f64,
    pub kind: ReplyKind,
}

/// An address seen at a hop (more than one when routes balance or change).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HopAddr {
    pub ip: IpAddr,
    /// For an IPv6 link-local address: the interface the replies arrived on (the link the
    /// address belongs to), by name; see [`HopAddr::scoped`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The same interface by index in the tracing namespace (`sin6_scope_id`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope_id: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub replies: u32,
}

impl HopAddr {
    /// The address as `ping`/`ip` write it: `fe80::1%cli-r1` for a link-local address with its
    /// scope (the index when the interface has no name), else the address alone.
    pub fn scoped(&self) -> String {
        self.as_scoped().to_text()
    }

    /// The socket address to send to or look up this address, scope id included.
    pub fn socket_addr(&self, port: u16) -> SocketAddr {
        self.as_scoped().socket_addr(port)
    }

    fn as_scoped(&self) -> ScopedIp {
        ScopedIp {
            ip: self.ip,
            scope_id: self.scope_id,
            scope: self.scope.clone(),
        }
    }
}

/// One TTL over all rounds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hop {
    pub ttl: u8,
    pub addrs: Vec<HopAddr>,
    pub sent: u32,
    pub received: u32,
    /// Fraction of probes without a reply (0..=1).
    pub loss: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub best_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub avg_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worst_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stdev_ms: Option<f64>,
    /// Mean absolute difference between consecutive RTTs (mtr's Javg).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jitter_ms: Option<f64>,
    /// This hop is the destination.
    pub destination: bool,
    /// An ICMP destination-unreachable code a router sent instead (the route ends here).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreachable_code: Option<u8>,
    /// RTT per round (`None` = lost), in round order.
    pub rtts_ms: Vec<Option<f64>>,
}

impl Hop {
    /// Builds the statistics of `ttl` from its samples (in round order) and the number of probes
    /// sent to it.
    pub fn from_samples(ttl: u8, sent: u32, rounds: &[u32], samples: &[Sample]) -> Hop {
        let mut addrs: Vec<HopAddr> = Vec::new();
        for s in samples {
            // fe80::1 on one link and fe80::1 on another are two routers.
            match addrs
                .iter_mut()
                .find(|a| a.ip == s.from && a.scope_id == s.scope_id)
            {
                Some(a) => a.replies += 1,
                None => addrs.push(HopAddr {
                    ip: s.from,
                    scope: None,
                    scope_id: s.scope_id,
                    name: None,
                    replies: 1,
                }),
            }
        }
        let rtts: Vec<f64> = samples.iter().map(|s| s.rtt_ms).collect();
        let n = rtts.len();
        let avg = (n > 0).then(|| rtts.iter().sum::<f64>() / n as f64);
        let stdev =
            avg.map(|m| (rtts.iter().map(|r| (r - m).powi(2)).sum::<f64>() / n as f64).sqrt());
        let jitter = (n > 1)
            .then(|| rtts.windows(2).map(|w| (w[1] - w[0]).abs()).sum::<f64>() / (n - 1) as f64);
        let mut sorted = rtts.clone();
        sorted.sort_by(f64::total_cmp);
        let received = n as u32;
        Hop {
            ttl,
            addrs,
            sent,
            received,
            loss: if sent == 0 {
                0.0
            } else {
                1.0 - f64::from(received.min(sent)) / f64::from(sent)
            },
            last_ms: rtts.last().copied(),
            best_ms: sorted.first().copied(),
            avg_ms: avg,
            median_ms: (n > 0).then(|| sorted[n / 2]),
            worst_ms: sorted.last().copied(),
            stdev_ms: stdev,
            jitter_ms: jitter,
            destination: samples.iter().any(|s| s.kind == ReplyKind::Reached),
            unreachable_code: samples.iter().find_map(|s| match s.kind {
                ReplyKind::Unreachable { code } => Some(code),
                _ => None,
            }),
            rtts_ms: rounds
                .iter()
                .map(|r| samples.iter().find(|s| s.round == *r).map(|s| s.rtt_ms))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(round: u32, ip: &str, rtt: f64) -> Sample {
        Sample {
            round,
            from: ip.parse().unwrap(),
            scope_id: None,
            rtt_ms: rtt,
            kind: ReplyKind::TimeExceeded,
        }
    }

    #[test]
    fn mtr_columns() {
        let samples = [
            s(0, "10.0.0.1", 10.0),
            s(1, "10.0.0.1", 14.0),
            s(3, "10.0.0.2", 12.0),
        ];
        let h = Hop::from_samples(3, 4, &[0, 1, 2, 3], &samples);
        assert_eq!((h.sent, h.received), (4, 3));
        assert!((h.loss - 0.25).abs() < 1e-9);
        assert_eq!(
            (h.best_ms, h.worst_ms, h.last_ms),
            (Some(10.0), Some(14.0), Some(12.0))
        );
        assert_eq!(h.median_ms, Some(12.0));
        assert!((h.avg_ms.unwrap() - 12.0).abs() < 1e-9);
        // |14-10| + |12-14| over 2 differences
        assert!((h.jitter_ms.unwrap() - 3.0).abs() < 1e-9);
        assert!((h.stdev_ms.unwrap() - (8.0f64 / 3.0).sqrt()).abs() < 1e-9);
        assert_eq!(h.addrs.len(), 2);
        assert_eq!(h.rtts_ms, vec![Some(10.0), Some(14.0), None, Some(12.0)]);
        assert!(!h.destination);
    }

    /// A link-local router keeps its scope: the same address on two links is two addresses,
    /// written and addressed with their interface.
    #[test]
    fn link_local_addresses_keep_their_scope() {
        let ll = |round, scope_id| Sample {
            scope_id,
            ..s(round, "fe80::1", 1.0)
        };
        let samples = [ll(0, Some(2)), ll(1, Some(2)), ll(2, Some(5))];
        let mut h = Hop::from_samples(1, 3, &[0, 1, 2], &samples);
        assert_eq!(h.addrs.len(), 2);
        assert_eq!((h.addrs[0].replies, h.addrs[1].replies), (2, 1));
        assert_eq!(h.addrs[1].scoped(), "fe80::1%5");
        h.addrs[0].scope = Some("cli-r1".into());
        assert_eq!(h.addrs[0].scoped(), "fe80::1%cli-r1");
        assert_eq!(
            h.addrs[0].socket_addr(0),
            SocketAddr::V6(std::net::SocketAddrV6::new(
                "fe80::1".parse().unwrap(),
                0,
                0,
                2
            ))
        );
        let json = serde_json::to_value(&h.addrs[0]).unwrap();
        assert_eq!(json["ip"], "fe80::1");
        assert_eq!(json["scope"], "cli-r1");
        assert_eq!(json["scope_id"], 2);
        // A global address has no scope, in text or JSON.
        let g = Hop::from_samples(1, 1, &[0], &[s(0, "fd00:231:1::1", 1.0)]);
        assert_eq!(g.addrs[0].scoped(), "fd00:231:1::1");
        let json = serde_json::to_value(&g.addrs[0]).unwrap();
        assert!(json.get("scope").is_none() && json.get("scope_id").is_none());
    }

    #[test]
    fn a_silent_hop_has_full_loss_and_no_times() {
        let h = Hop::from_samples(2, 5, &[0, 1, 2, 3, 4], &[]);
        assert_eq!(h.loss, 1.0);
        assert!(h.best_ms.is_none() && h.jitter_ms.is_none());
    }
}
