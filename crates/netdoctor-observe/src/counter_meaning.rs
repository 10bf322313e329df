//! One line of meaning for the kernel counters an SRE should read after a slow run, keyed by
//! the `Prefix.Name` form of [`crate::counters`]. Counters not listed here are still reported
//! with their delta; they just carry no explanation.

/// `(counter, meaning)`, grouped by what they tell.
pub const MEANINGS: &[(&str, &str)] = &[
    // Accept queue and SYN queue.
    (
        "TcpExt.ListenOverflows",
        "a SYN or handshake-completing ACK arrived while the listener's accept queue was full (the application accepts too slowly or the backlog is too small)",
    ),
    (
        "TcpExt.ListenDrops",
        "connection attempts dropped by a listener for any reason (includes ListenOverflows)",
    ),
    (
        "TcpExt.TCPReqQFullDrop",
        "SYNs dropped because the SYN queue was full and SYN cookies were off",
    ),
    (
        "TcpExt.TCPReqQFullDoCookies",
        "SYN queue full: the kernel answered with a SYN cookie instead of queueing",
    ),
    (
        "TcpExt.SyncookiesSent",
        "SYN cookies sent: the SYN queue overflowed (a SYN flood or a burst of connections)",
    ),
    (
        "TcpExt.SyncookiesRecv",
        "valid SYN-cookie ACKs received (connections set up from cookies)",
    ),
    ("TcpExt.SyncookiesFailed", "ACKs with an invalid SYN cookie"),
    // There is no TCPAbortOnOverflow counter (a name often quoted): with tcp_abort_on_overflow=1
    // the resets of an overflowing accept queue are counted in EmbryonicRsts.
    (
        "TcpExt.EmbryonicRsts",
        "resets sent to half-open connections (SYN_RECV), e.g. by tcp_abort_on_overflow=1 when the accept queue is full",
    ),
    (
        "TcpExt.TCPBacklogDrop",
        "segments dropped because the socket's backlog (owned by the application) was full",
    ),
    (
        "TcpExt.PAWSEstab",
        "segments dropped by the timestamp check (PAWS) on established connections",
    ),
    (
        "TcpExt.TCPTimeWaitOverflow",
        "TIME_WAIT sockets not created because tcp_max_tw_buckets was reached",
    ),
    (
        "TcpExt.TW",
        "connections that went through TIME_WAIT (normal churn of short connections)",
    ),
    (
        "TcpExt.TWRecycled",
        "TIME_WAIT sockets reused for a new outgoing connection (tcp_tw_reuse)",
    ),
    // Retransmissions and timers.
    ("Tcp.RetransSegs", "TCP segments retransmitted (any reason)"),
    (
        "TcpExt.TCPSynRetrans",
        "SYNs and SYN/ACKs retransmitted: connection setup waited 1 s, 3 s, … for the retry",
    ),
    (
        "TcpExt.TCPTimeouts",
        "retransmission timeouts (RTO) fired: a sender waited for its timer, typically ≥ 200 ms",
    ),
    (
        "TcpExt.TCPLossProbes",
        "tail loss probes sent (the last segment of a burst was not acknowledged in time)",
    ),
    (
        "TcpExt.TCPFastRetrans",
        "fast retransmits (loss detected from duplicate ACKs or SACK, no timeout)",
    ),
    (
        "TcpExt.TCPSlowStartRetrans",
        "retransmits in slow start after a timeout",
    ),
    (
        "TcpExt.TCPSpuriousRTOs",
        "timeouts found to be spurious afterwards (the ACK was only late)",
    ),
    (
        "TcpExt.DelayedACKs",
        "delayed ACKs sent by the delayed-ACK timer (normal; 40 ms stalls when combined with Nagle)",
    ),
    (
        "TcpExt.DelayedACKLocked",
        "delayed ACKs further delayed because the application held the socket",
    ),
    (
        "TcpExt.DelayedACKLost",
        "duplicate segments received whose ACK was delayed (the peer retransmitted)",
    ),
    (
        "TcpExt.TCPDSACKRecv",
        "duplicate-SACK blocks received: the peer saw a segment twice (spurious retransmission)",
    ),
    // Resets and aborts.
    (
        "Tcp.AttemptFails",
        "connect() attempts that failed (SYN_SENT/SYN_RECV to CLOSED, e.g. refused or reset)",
    ),
    ("Tcp.EstabResets", "established connections reset"),
    ("Tcp.OutRsts", "TCP resets sent"),
    (
        "Tcp.InErrs",
        "TCP segments received with errors (bad checksum, …)",
    ),
    (
        "TcpExt.TCPAbortOnData",
        "connections reset because data arrived after the application closed",
    ),
    (
        "TcpExt.TCPAbortOnClose",
        "connections reset on close with unread data",
    ),
    (
        "TcpExt.TCPAbortOnTimeout",
        "connections aborted after too many retransmission timeouts",
    ),
    (
        "TcpExt.TCPAbortOnMemory",
        "connections aborted because TCP memory was exhausted (tcp_mem)",
    ),
    (
        "TcpExt.TCPMemoryPressures",
        "times TCP entered memory pressure (tcp_mem)",
    ),
    // Receive side.
    (
        "TcpExt.TCPRcvQDrop",
        "segments dropped because the receive buffer was full",
    ),
    (
        "TcpExt.PruneCalled",
        "receive queue pruned because of memory pressure",
    ),
    (
        "TcpExt.TCPOFODrop",
        "out-of-order segments dropped for lack of receive buffer",
    ),
    (
        "TcpExt.TCPZeroWindowDrop",
        "segments dropped because the advertised window was zero",
    ),
    (
        "TcpExt.TCPToZeroWindowAdv",
        "times this host advertised a zero window (its reader was too slow)",
    ),
    (
        "TcpExt.TCPWantZeroWindowAdv",
        "times this host wanted to shrink the window to zero",
    ),
    // IP and UDP.
    (
        "Ip.InDiscards",
        "IPv4 packets discarded on input without error (e.g. no buffer)",
    ),
    ("Ip.OutNoRoutes", "IPv4 packets dropped for lack of a route"),
    ("Ip.ReasmFails", "IPv4 reassembly failures (fragments lost)"),
    ("Ip6.InDiscards", "IPv6 packets discarded on input"),
    (
        "Ip6.OutNoRoutes",
        "IPv6 packets dropped for lack of a route",
    ),
    (
        "Udp.RcvbufErrors",
        "UDP datagrams dropped because the socket's receive buffer was full",
    ),
    (
        "Udp.SndbufErrors",
        "UDP datagrams dropped because the send buffer was full",
    ),
    (
        "Udp.InErrors",
        "UDP datagrams received with errors or dropped",
    ),
    (
        "Udp.NoPorts",
        "UDP datagrams to a port where nothing listens",
    ),
    (
        "Udp6.RcvbufErrors",
        "UDP/IPv6 datagrams dropped because the receive buffer was full",
    ),
    (
        "Udp6.InErrors",
        "UDP/IPv6 datagrams received with errors or dropped",
    ),
    (
        "IpExt.InNoRoutes",
        "packets received with no route to forward them",
    ),
];

/// The meaning of a counter (`"TcpExt.ListenOverflows"`), if it is one that matters.
pub fn meaning(name: &str) -> Option<&'static str> {
    MEANINGS.iter().find(|(n, _)| *n == name).map(|(_, m)| *m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_counter_has_a_unique_prefixed_name() {
        let mut names: Vec<&str> = MEANINGS.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(names.len(), before, "duplicate entry in MEANINGS");
        assert!(names.iter().all(|n| n.contains('.')));
        assert!(
            meaning("TcpExt.ListenOverflows")
                .unwrap()
                .contains("accept queue")
        );
        assert_eq!(meaning("TcpExt.NoSuchCounter"), None);
    }

    #[test]
    fn the_names_exist_in_this_kernel() {
        // Every listed counter is one this kernel prints (skip the few that are kernel-specific).
        let Ok(snap) = crate::counters::snapshot() else {
            return;
        };
        let missing: Vec<&str> = MEANINGS
            .iter()
            .map(|(n, _)| *n)
            .filter(|n| snap.get(n).is_none())
            .collect();
        assert!(
            missing.is_empty(),
            "not in this kernel's counters: {missing:?}"
        );
    }
}
