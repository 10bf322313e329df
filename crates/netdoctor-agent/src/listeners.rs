//! Local TCP listeners, for `watch` without `-p`: the ports in state LISTEN in
//! /proc/net/tcp and /proc/net/tcp6 of the agent's network namespace.
//!
//! Hand-parsed (one hex field per line); the sock_diag observer of the host helper will give the
//! same answer with queue depths, and can replace this when it lands.

use std::collections::BTreeSet;

/// `st` value of a listening socket in /proc/net/tcp.
const TCP_LISTEN: &str = "0A";

/// The listening ports in the text of /proc/net/tcp or /proc/net/tcp6.
pub fn parse_listen_ports(text: &str) -> BTreeSet<u16> {
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let local = f.nth(1)?;
            let state = f.nth(1)?;
            if state != TCP_LISTEN {
                return None;
            }
            let port = local.rsplit_once(':')?.1;
            u16::from_str_radix(port, 16).ok()
        })
        .collect()
}

/// Listening TCP ports of this namespace (IPv4 and IPv6), without `exclude`.
pub fn local_listen_ports(exclude: &[u16]) -> std::io::Result<Vec<u16>> {
    let mut ports = BTreeSet::new();
    let mut read_any = false;
    for p in ["/proc/net/tcp", "/proc/net/tcp6"] {
        match std::fs::read_to_string(p) {
            Ok(t) => {
                read_any = true;
                ports.extend(parse_listen_ports(&t));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    if !read_any {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "neither /proc/net/tcp nor /proc/net/tcp6 exists",
        ));
    }
    Ok(ports.into_iter().filter(|p| !exclude.contains(p)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_listeners_only() {
        let t = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0\n\
   1: 0100007F:1F90 0100007F:D4B2 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0 100 0 0 10 0\n\
   2: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 3 1 0 100 0 0 10 0\n";
        let ports: Vec<u16> = parse_listen_ports(t).into_iter().collect();
        assert_eq!(ports, vec![22, 8080]);
    }
}
