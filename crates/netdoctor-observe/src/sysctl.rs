//! The sysctls worth a look for connection setup, read from `/proc/sys/net/…`. The kernel
//! resolves `/proc/sys/net` against the network namespace of the thread that opens the file, so
//! these are the values of the calling thread's namespace (most of them are per namespace;
//! `nf_conntrack_max` is global and only readable from a child namespace).

use crate::host_error::{HostError, read_file};

/// One value per sysctl; `None` when the file does not exist here (e.g. nf_conntrack not loaded).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Sysctls {
    /// `net.core.somaxconn`: the cap on every listen() backlog.
    pub somaxconn: Option<u32>,
    /// `net.ipv4.tcp_max_syn_backlog`: the SYN queue's size per listener.
    pub tcp_max_syn_backlog: Option<u32>,
    /// `net.ipv4.tcp_syncookies`: 0 off, 1 when the SYN queue overflows, 2 always.
    pub tcp_syncookies: Option<u32>,
    /// `net.ipv4.tcp_abort_on_overflow`: reset instead of drop when the accept queue is full.
    pub tcp_abort_on_overflow: Option<u32>,
    /// `net.ipv4.ip_local_port_range`: the ports connect() picks from (inclusive).
    pub ip_local_port_range: Option<(u16, u16)>,
    /// `net.ipv4.tcp_tw_reuse`: 0 off, 1 on, 2 loopback only.
    pub tcp_tw_reuse: Option<u32>,
    /// `net.ipv4.tcp_fin_timeout`: seconds in FIN_WAIT2.
    pub tcp_fin_timeout: Option<u32>,
    /// `net.ipv4.tcp_max_tw_buckets`: TIME_WAIT sockets allowed.
    pub tcp_max_tw_buckets: Option<u32>,
    /// `net.netfilter.nf_conntrack_max`: the conntrack table's size.
    pub nf_conntrack_max: Option<u64>,
}

impl Sysctls {
    /// Number of ports in `ip_local_port_range`.
    pub fn local_ports(&self) -> Option<u32> {
        self.ip_local_port_range
            .map(|(lo, hi)| u32::from(hi.saturating_sub(lo)) + 1)
    }

    /// `(sysctl name, value)` for printing, the ones that were read.
    pub fn entries(&self) -> Vec<(&'static str, String)> {
        let mut v = Vec::new();
        let mut push = |name, value: Option<String>| {
            if let Some(value) = value {
                v.push((name, value));
            }
        };
        push("net.core.somaxconn", self.somaxconn.map(|x| x.to_string()));
        push(
            "net.ipv4.tcp_max_syn_backlog",
            self.tcp_max_syn_backlog.map(|x| x.to_string()),
        );
        push(
            "net.ipv4.tcp_syncookies",
            self.tcp_syncookies.map(|x| x.to_string()),
        );
        push(
            "net.ipv4.tcp_abort_on_overflow",
            self.tcp_abort_on_overflow.map(|x| x.to_string()),
        );
        push(
            "net.ipv4.ip_local_port_range",
            self.ip_local_port_range.map(|(a, b)| format!("{a} {b}")),
        );
        push(
            "net.ipv4.tcp_tw_reuse",
            self.tcp_tw_reuse.map(|x| x.to_string()),
        );
        push(
            "net.ipv4.tcp_fin_timeout",
            self.tcp_fin_timeout.map(|x| x.to_string()),
        );
        push(
            "net.ipv4.tcp_max_tw_buckets",
            self.tcp_max_tw_buckets.map(|x| x.to_string()),
        );
        push(
            "net.netfilter.nf_conntrack_max",
            self.nf_conntrack_max.map(|x| x.to_string()),
        );
        v
    }
}

fn read_value<T: std::str::FromStr>(path: &str) -> Result<Option<T>, HostError> {
    match read_file("sysctl", path, None) {
        Ok(text) => text.trim().parse().map(Some).map_err(|_| HostError::Parse {
            what: "sysctl",
            path: path.to_string(),
            message: format!("not a number: {:?}", text.trim()),
        }),
        Err(HostError::Unavailable { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Parses `ip_local_port_range`'s `"32768\t60999"`.
pub fn parse_port_range(text: &str) -> Option<(u16, u16)> {
    let mut it = text.split_whitespace().map(str::parse::<u16>);
    match (it.next(), it.next(), it.next()) {
        (Some(Ok(lo)), Some(Ok(hi)), None) if lo <= hi => Some((lo, hi)),
        _ => None,
    }
}

/// Reads the sysctls of the calling thread's network namespace.
pub fn read() -> Result<Sysctls, HostError> {
    let range_path = "/proc/sys/net/ipv4/ip_local_port_range";
    let range = match read_file("sysctl", range_path, None) {
        Ok(text) => Some(parse_port_range(&text).ok_or_else(|| HostError::Parse {
            what: "sysctl",
            path: range_path.to_string(),
            message: format!("expected two ports, found {:?}", text.trim()),
        })?),
        Err(HostError::Unavailable { .. }) => None,
        Err(e) => return Err(e),
    };
    Ok(Sysctls {
        somaxconn: read_value("/proc/sys/net/core/somaxconn")?,
        tcp_max_syn_backlog: read_value("/proc/sys/net/ipv4/tcp_max_syn_backlog")?,
        tcp_syncookies: read_value("/proc/sys/net/ipv4/tcp_syncookies")?,
        tcp_abort_on_overflow: read_value("/proc/sys/net/ipv4/tcp_abort_on_overflow")?,
        ip_local_port_range: range,
        tcp_tw_reuse: read_value("/proc/sys/net/ipv4/tcp_tw_reuse")?,
        tcp_fin_timeout: read_value("/proc/sys/net/ipv4/tcp_fin_timeout")?,
        tcp_max_tw_buckets: read_value("/proc/sys/net/ipv4/tcp_max_tw_buckets")?,
        nf_conntrack_max: read_value("/proc/sys/net/netfilter/nf_conntrack_max")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_range_parses_and_rejects() {
        assert_eq!(parse_port_range("32768\t60999\n"), Some((32768, 60999)));
        assert_eq!(parse_port_range("10 5"), None);
        assert_eq!(parse_port_range("10"), None);
        let s = Sysctls {
            ip_local_port_range: Some((40000, 40009)),
            ..Default::default()
        };
        assert_eq!(s.local_ports(), Some(10));
    }

    #[test]
    fn reads_this_namespace() {
        let s = read().unwrap();
        assert!(s.somaxconn.unwrap() > 0);
        assert!(s.local_ports().unwrap() > 0);
        assert!(s.entries().iter().any(|(n, _)| *n == "net.core.somaxconn"));
    }
}
