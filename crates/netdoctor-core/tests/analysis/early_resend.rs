//! A body lost before the capture point and resent after the client's delayed ACK, early in a
//! connection whose IP ids had skipped once already: still not Nagle. The skip is told from a
//! Nagle hold by the server's IPv4 ids (see `held_by_loss.rs`), believed while the ids count
//! one per packet. Before, the SYN/ACK's id 0 (Linux sends its SYN/ACKs with id 0) counted as
//! a step that was not +1, and so did the earlier loss: two +1 steps for each other step were
//! asked for, and the resend read as "Server's Nagle algorithm waits for the client's delayed
//! ACK" (the session-17 CI flake of `client_drop.rs`, "+40.3 ms on 0% of requests").
//!
//! `out-drop-nagle-synack.pcap.gz`: one connection (129 packets, the first 0.1 s) of a failing
//! run of `client_drop.rs`'s look-alike (the built-in server, TCP_NODELAY on, 5 % of its
//! packets dropped in its OUTPUT chain, captured on the client's interface): ids 0 (SYN/ACK),
//! 0x669f (ACK), 0x66a1 (the first response, 0x66a0 lost), … 0x66a4 (a 256-byte header),
//! the client's ACK of it 40.8 ms later, the 615-byte body with 0x66a6 right after it: three
//! +1 steps against two others before.
//!
//! `out-drop-nagle-early.pcap.gz`: one connection (305 packets, 0.1 s) of the same look-alike
//! by hand (`make-out-drop-nagle.sh`, a server writing header and body in two send()s with
//! TCP_NODELAY on), the stall in its second response: ids 0 (SYN/ACK), 0x8191 (ACK), 0x8193
//! (the first response, 0x8192 lost), 0x8194 (the second header), the client's ACK 43.7 ms
//! later, the body with 0x8196: one +1 step against one skip when the body came, still
//! Nagle with the id 0 left out.

use crate::common::analyze;
use netdoctor_core::finding::FindingId;

fn assert_not_nagle(name: &str) {
    let (an, _) = analyze(name);
    assert!(an.exchanges.count >= 30, "{name}: {}", an.exchanges.count);
    for id in [FindingId::NagleDelayedAck, FindingId::DelayedAckStall] {
        assert!(
            !an.findings.iter().any(|f| f.id == id),
            "{name}: {id:?}: {:#?}",
            an.findings
        );
    }
}

#[test]
fn a_resend_after_a_delayed_ack_behind_a_syn_ack_id_zero_is_not_nagle() {
    assert_not_nagle("out-drop-nagle-synack.pcap.gz");
}

#[test]
fn a_resend_after_a_delayed_ack_in_the_second_response_is_not_nagle() {
    assert_not_nagle("out-drop-nagle-early.pcap.gz");
}
