//! Packets as they come from a capture (live ring or file), before decoding.

/// Link-layer framing of captured packets, named after the pcap LINKTYPE_* values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinkType {
    /// LINKTYPE_NULL (0): BSD loopback, 4-byte host-order address family.
    Null,
    /// LINKTYPE_ETHERNET (1). Linux `lo` captures are Ethernet with zero addresses.
    Ethernet,
    /// LINKTYPE_RAW (101) / 12 / 14: the packet starts with an IPv4 or IPv6 header.
    Raw,
    /// LINKTYPE_LOOP (108): like NULL but the family is big-endian.
    Loop,
    /// LINKTYPE_LINUX_SLL (113): `tcpdump -i any` before libpcap 1.10.
    LinuxSll,
    /// LINKTYPE_IPV4 (228).
    Ipv4,
    /// LINKTYPE_IPV6 (229).
    Ipv6,
    /// LINKTYPE_LINUX_SLL2 (276): `tcpdump -i any` with libpcap ≥ 1.10.
    LinuxSll2,
    /// LINKTYPE_IEEE802_11 (105): 802.11 frames (a Wi-Fi capture in monitor mode without a
    /// radio header); unencrypted data frames carry LLC/SNAP and an ethertype.
    Ieee80211,
    /// LINKTYPE_IEEE802_11_RADIOTAP (127): a radiotap header, then an 802.11 frame.
    Radiotap,
    /// LINKTYPE_NFLOG (239): Linux netfilter log messages (`tcpdump -i nflog:N`): a 4-byte
    /// header, then TLVs, the packet in the NFULA_PAYLOAD one.
    Nflog,
}

impl LinkType {
    /// Maps a pcap/pcapng link type number; `None` for link types netdoctor does not decode.
    pub fn from_pcap(linktype: u32) -> Option<LinkType> {
        Some(match linktype {
            0 => LinkType::Null,
            1 => LinkType::Ethernet,
            12 | 14 | 101 => LinkType::Raw,
            108 => LinkType::Loop,
            113 => LinkType::LinuxSll,
            228 => LinkType::Ipv4,
            229 => LinkType::Ipv6,
            276 => LinkType::LinuxSll2,
            105 => LinkType::Ieee80211,
            127 => LinkType::Radiotap,
            239 => LinkType::Nflog,
            _ => return None,
        })
    }

    /// The number written into pcap headers for this link type.
    pub fn to_pcap(self) -> u32 {
        match self {
            LinkType::Null => 0,
            LinkType::Ethernet => 1,
            LinkType::Raw => 101,
            LinkType::Loop => 108,
            LinkType::LinuxSll => 113,
            LinkType::Ipv4 => 228,
            LinkType::Ipv6 => 229,
            LinkType::LinuxSll2 => 276,
            LinkType::Ieee80211 => 105,
            LinkType::Radiotap => 127,
            LinkType::Nflog => 239,
        }
    }
}

/// One captured packet, borrowed from the reader's buffer.
#[derive(Debug, Clone, Copy)]
pub struct RawPacket<'a> {
    /// Frame number, 1-based, in capture order (as Wireshark numbers frames).
    pub frame: u64,
    /// Capture timestamp, nanoseconds since the Unix epoch.
    pub ts_ns: i64,
    pub link: LinkType,
    /// The captured bytes (possibly shorter than `orig_len` when a snap length applied).
    pub data: &'a [u8],
    /// Length of the packet on the wire.
    pub orig_len: u32,
}
