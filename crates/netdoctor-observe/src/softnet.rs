//! `/proc/net/softnet_stat`: per CPU, the packets the receive softirq processed, the ones it
//! dropped because the CPU's backlog queue was full (`netdev_max_backlog`), and the times it ran
//! out of budget with work left (`time_squeeze`, `netdev_budget`). The file is the host's, not a
//! namespace's. Hand-parsed: one line of hex columns per CPU.

use crate::host_error::{HostError, read_file};

/// One CPU's softnet counters.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SoftnetCpu {
    pub processed: u64,
    pub dropped: u64,
    pub time_squeeze: u64,
}

/// Reads every CPU's line.
pub fn read() -> Result<Vec<SoftnetCpu>, HostError> {
    Ok(parse(&read_file(
        "softnet statistics",
        "/proc/net/softnet_stat",
        None,
    )?))
}

/// Parses the file; a line that is not hex columns is skipped.
pub fn parse(text: &str) -> Vec<SoftnetCpu> {
    text.lines()
        .filter_map(|l| {
            let mut c = l.split_whitespace().map(|v| u64::from_str_radix(v, 16));
            Some(SoftnetCpu {
                processed: c.next()?.ok()?,
                dropped: c.next()?.ok()?,
                time_squeeze: c.next()?.ok()?,
            })
        })
        .collect()
}

/// The totals over all CPUs: (processed, dropped, time_squeeze).
pub fn totals(cpus: &[SoftnetCpu]) -> (u64, u64, u64) {
    cpus.iter().fold((0, 0, 0), |t, c| {
        (t.0 + c.processed, t.1 + c.dropped, t.2 + c.time_squeeze)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_columns_per_cpu() {
        let t = "0000a1b2 00000003 0000001f 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n\
                 00000010 00000000 00000002 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000001\n";
        let c = parse(t);
        assert_eq!(c.len(), 2);
        assert_eq!(
            c[0],
            SoftnetCpu {
                processed: 0xa1b2,
                dropped: 3,
                time_squeeze: 0x1f
            }
        );
        assert_eq!(totals(&c), (0xa1b2 + 0x10, 3, 0x21));
        assert_eq!(parse("garbage\n"), vec![]);
    }

    #[test]
    fn this_machine_has_a_line_per_cpu() {
        let c = read().unwrap();
        assert!(!c.is_empty());
        assert!(totals(&c).0 > 0, "some packets were processed since boot");
    }
}
