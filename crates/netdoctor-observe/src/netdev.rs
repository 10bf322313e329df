//! Interface statistics from `/proc/thread-self/net/dev` (the calling thread's namespace; see
//! [`crate::counters`] for why not `/proc/net/dev`): bytes, packets, errors, drops, fifo
//! overruns, frame errors, collisions and carrier errors, before and after a run.
//! Hand-parsed: the format is one fixed table that has not changed since Linux 2.6.

use crate::host_error::{HostError, read_file};

/// The counters of one interface (the 16 columns of /proc/net/dev, minus "compressed").
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NetDevStats {
    pub name: String,
    pub rx_bytes: u64,
    pub rx_packets: u64,
    pub rx_errs: u64,
    pub rx_drop: u64,
    pub rx_fifo: u64,
    pub rx_frame: u64,
    pub tx_bytes: u64,
    pub tx_packets: u64,
    pub tx_errs: u64,
    pub tx_drop: u64,
    pub tx_fifo: u64,
    pub tx_colls: u64,
    pub tx_carrier: u64,
}

impl NetDevStats {
    /// `(name, value)` of the error counters, the ones that mean trouble when they grow.
    pub fn errors(&self) -> [(&'static str, u64); 9] {
        [
            ("rx_errs", self.rx_errs),
            ("rx_drop", self.rx_drop),
            ("rx_fifo", self.rx_fifo),
            ("rx_frame", self.rx_frame),
            ("tx_errs", self.tx_errs),
            ("tx_drop", self.tx_drop),
            ("tx_fifo", self.tx_fifo),
            ("tx_colls", self.tx_colls),
            ("tx_carrier", self.tx_carrier),
        ]
    }
}

const PATH: &str = "/proc/thread-self/net/dev";

/// Reads the interfaces of the calling thread's namespace.
pub fn read() -> Result<Vec<NetDevStats>, HostError> {
    parse(&read_file("interface statistics", PATH, None)?)
}

/// Parses the text of /proc/net/dev.
pub fn parse(text: &str) -> Result<Vec<NetDevStats>, HostError> {
    let err = |message: String| HostError::Parse {
        what: "interface statistics",
        path: PATH.to_string(),
        message,
    };
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate().skip(2) {
        let Some((name, rest)) = line.split_once(':') else {
            return Err(err(format!("line {}: no 'name:'", i + 1)));
        };
        let v: Vec<u64> = rest
            .split_whitespace()
            .map(str::parse)
            .collect::<Result<_, _>>()
            .map_err(|_| err(format!("line {}: not a number", i + 1)))?;
        if v.len() < 16 {
            return Err(err(format!(
                "line {}: {} columns, expected 16",
                i + 1,
                v.len()
            )));
        }
        out.push(NetDevStats {
            name: name.trim().to_string(),
            rx_bytes: v[0],
            rx_packets: v[1],
            rx_errs: v[2],
            rx_drop: v[3],
            rx_fifo: v[4],
            rx_frame: v[5],
            tx_bytes: v[8],
            tx_packets: v[9],
            tx_errs: v[10],
            tx_drop: v[11],
            tx_fifo: v[12],
            tx_colls: v[13],
            tx_carrier: v[14],
        });
    }
    Ok(out)
}

/// How one interface changed between two reads.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NetDevDelta {
    pub before: NetDevStats,
    pub after: NetDevStats,
}

impl NetDevDelta {
    /// The error counters that grew: `(name, before, after)`.
    pub fn grown_errors(&self) -> Vec<(&'static str, u64, u64)> {
        self.before
            .errors()
            .iter()
            .zip(self.after.errors())
            .filter(|(b, a)| a.1 > b.1)
            .map(|(b, a)| (b.0, b.1, a.1))
            .collect()
    }

    /// Packets received and sent during the interval.
    pub fn packets(&self) -> u64 {
        (self.after.rx_packets + self.after.tx_packets)
            .saturating_sub(self.before.rx_packets + self.before.tx_packets)
    }
}

/// Pairs interfaces by name (those present in both reads).
pub fn delta(before: &[NetDevStats], after: &[NetDevStats]) -> Vec<NetDevDelta> {
    after
        .iter()
        .filter_map(|a| {
            let b = before.iter().find(|b| b.name == a.name)?;
            Some(NetDevDelta {
                before: b.clone(),
                after: a.clone(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:    3193      29    0    0    0     0          0         0     3193      29    0    0    0     0       0          0
  eth0: 1000 10 1 2 3 4 0 0 2000 20 5 6 7 8 9 0
";

    #[test]
    fn parses_columns() {
        let v = parse(SAMPLE).unwrap();
        assert_eq!(v.len(), 2);
        let e = &v[1];
        assert_eq!(
            (e.name.as_str(), e.rx_bytes, e.rx_packets),
            ("eth0", 1000, 10)
        );
        assert_eq!((e.rx_errs, e.rx_drop, e.rx_fifo, e.rx_frame), (1, 2, 3, 4));
        assert_eq!(
            (e.tx_bytes, e.tx_errs, e.tx_drop, e.tx_fifo),
            (2000, 5, 6, 7)
        );
        assert_eq!((e.tx_colls, e.tx_carrier), (8, 9));
        assert!(parse("a\nb\n  x: 1 2\n").is_err());
    }

    #[test]
    fn delta_lists_grown_errors() {
        let before = parse(SAMPLE).unwrap();
        let mut after = before.clone();
        after[1].rx_drop += 5;
        after[1].rx_packets += 100;
        let d = delta(&before, &after);
        assert_eq!(d[0].grown_errors(), vec![]);
        assert_eq!(d[1].grown_errors(), vec![("rx_drop", 2, 7)]);
        assert_eq!(d[1].packets(), 100);
    }

    #[test]
    fn reads_loopback() {
        assert!(read().unwrap().iter().any(|d| d.name == "lo"));
    }
}
