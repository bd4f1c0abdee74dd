//! xdp-lb's scenarios (the kernel runner's 24, under its names) and the
//! bytes each one's packet, flow and VIP are: what the load balancer is
//! given and what its maps must hold for the scenario's path through it.

/// XDP verdicts.
pub const XDP_DROP: u32 = 1;
pub const XDP_PASS: u32 = 2;
pub const XDP_TX: u32 = 3;

const IPPROTO_ICMP: u8 = 1;
const IPPROTO_TCP: u8 = 6;
const IPPROTO_UDP: u8 = 17;
const ETH_P_IP: u16 = 0x0800;
const ETH_P_ARP: u16 = 0x0806;
const ETH_P_IPV6: u16 = 0x86dd;

/// bpf/xdp_lb.bpf.c's VIP flags.
pub const F_IPV6: u8 = 1;
const F_LRU_BYPASS: u32 = 2;

/// The load balancer's MAC (the packets' destination), the client's, and
/// the router's (the encapsulated packets' destination).
const LB_MAC: [u8; 6] = [0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff];
const CLIENT_MAC: [u8; 6] = [0x11, 0x22, 0x33, 0x44, 0x55, 0x66];
pub const ROUTER_MAC: [u8; 6] = [0xde, 0xad, 0xbe, 0xef, 0x00, 0x01];
/// The backends' tunnel addresses.
pub const TUNNEL_V4: u32 = 0xc0a8_0102; // 192.168.1.2
pub const TUNNEL_V6: [u32; 4] = [0xfd00_0000, 0, 0, 2]; // fd00::2
/// The backend of IPv4 tunnels, and of IPv6 ones.
pub const BACKEND_V4: u32 = 1;
pub const BACKEND_V6: u32 = 2;
/// Every packet's payload: 16 bytes.
const PAYLOAD: &[u8; 16] = b"bench's payload!";

/// One scenario: a packet, and what the maps hold for it.
#[derive(Clone, Copy, Debug)]
pub struct Scenario {
    pub name: &'static str,
    pub description: &'static str,
    /// The verdict the program must return.
    pub action: u32,
    pub v6: bool,
    /// Addresses in host order (IPv4 in the first word).
    pub vip: [u32; 4],
    pub src: [u32; 4],
    pub dst_port: u16,
    pub src_port: u16,
    pub proto: u8,
    pub vip_flags: u32,
    pub vip_num: u32,
    /// The flow is in every CPU's connection table before the run.
    pub warm_table: bool,
    pub fragment: bool,
    /// Not IP: this Ethernet type.
    pub eth_proto: Option<u16>,
    /// Encapsulated in IPv6 (an IPv6 VIP, or an IPv4 one to an IPv6 backend).
    pub outer_v6: bool,
    /// The source address randomized under this mask after each packet.
    pub src_mask: u32,
    /// A source no run used before, each run: the table misses.
    pub cold_table: bool,
    pub syn: bool,
    pub rst: bool,
    pub ip_options: bool,
    /// A batch of this many packets, not calibrated.
    pub fixed_batch: u64,
}

const fn v4(a: u8, b: u8, c: u8, d: u8) -> [u32; 4] {
    [
        (a as u32) << 24 | (b as u32) << 16 | (c as u32) << 8 | d as u32,
        0,
        0,
        0,
    ]
}

const NONE: Scenario = Scenario {
    name: "",
    description: "",
    action: XDP_DROP,
    v6: false,
    vip: [0; 4],
    src: [0; 4],
    dst_port: 0,
    src_port: 0,
    proto: IPPROTO_TCP,
    vip_flags: 0,
    vip_num: 0,
    warm_table: false,
    fragment: false,
    eth_proto: None,
    outer_v6: false,
    src_mask: 0,
    cold_table: false,
    syn: false,
    rst: false,
    ip_options: false,
    fixed_batch: 0,
};
/// Balanced and encapsulated: in IPv4, in IPv6, IPv4 in IPv6.
const TX_V4: Scenario = Scenario {
    action: XDP_TX,
    ..NONE
};
const TX_V6: Scenario = Scenario {
    action: XDP_TX,
    v6: true,
    outer_v6: true,
    ..NONE
};
const TX_V4_IN_V6: Scenario = Scenario {
    action: XDP_TX,
    outer_v6: true,
    ..NONE
};
const VIP_A: [u32; 4] = v4(10, 10, 1, 1);
const VIP6_A: [u32; 4] = [0xfd00_0100, 0, 0, 1];
const VIP6_B: [u32; 4] = [0xfd00_0100, 0, 0, 2];
const DIVERSE: u32 = 0xfff;
const HUGE: u32 = 0xff_ffff;

/// The kernel runner's scenarios, in its order.
#[rustfmt::skip]
pub const SCENARIOS: [Scenario; 24] = [
    Scenario { name: "tcp-v4-lru-hit", description: "IPv4 TCP, LRU hit, IPIP encap",
        vip: VIP_A, dst_port: 80, src: v4(10, 10, 2, 1), src_port: 12345, warm_table: true, ..TX_V4 },
    Scenario { name: "tcp-v4-ch", description: "IPv4 TCP, CH (LRU bypass), IPIP encap",
        vip: v4(10, 10, 1, 2), dst_port: 80, src: v4(10, 10, 2, 2), src_port: 54321,
        vip_flags: F_LRU_BYPASS, vip_num: 1, ..TX_V4 },
    Scenario { name: "tcp-v6-lru-hit", description: "IPv6 TCP, LRU hit, IP6IP6 encap",
        vip: VIP6_A, dst_port: 80, src: [0xfd00_0200, 0, 0, 1], src_port: 12345, vip_num: 10,
        warm_table: true, ..TX_V6 },
    Scenario { name: "tcp-v6-ch", description: "IPv6 TCP, CH (LRU bypass), IP6IP6 encap",
        vip: VIP6_B, dst_port: 80, src: [0xfd00_0200, 0, 0, 2], src_port: 54321,
        vip_flags: F_LRU_BYPASS, vip_num: 12, ..TX_V6 },
    Scenario { name: "udp-v4-lru-hit", description: "IPv4 UDP, LRU hit, IPIP encap", proto: IPPROTO_UDP,
        vip: VIP_A, dst_port: 443, src: v4(10, 10, 3, 1), src_port: 11111, vip_num: 2,
        warm_table: true, ..TX_V4 },
    Scenario { name: "udp-v6-lru-hit", description: "IPv6 UDP, LRU hit, IP6IP6 encap", proto: IPPROTO_UDP,
        vip: VIP6_A, dst_port: 443, src: [0xfd00_0200, 0, 0, 3], src_port: 22222, vip_num: 14,
        warm_table: true, ..TX_V6 },
    Scenario { name: "tcp-v4v6-lru-hit", description: "IPv4 TCP, LRU hit, IPv4-in-IPv6 encap",
        vip: v4(10, 10, 1, 4), dst_port: 80, src: v4(10, 10, 2, 4), src_port: 12347, vip_num: 13,
        warm_table: true, ..TX_V4_IN_V6 },
    Scenario { name: "tcp-v4-lru-diverse", description: "IPv4 TCP, diverse flows, warm LRU",
        vip: VIP_A, dst_port: 80, src: v4(10, 10, 2, 1), src_port: 12345, warm_table: true,
        src_mask: DIVERSE, ..TX_V4 },
    Scenario { name: "tcp-v4-ch-diverse", description: "IPv4 TCP, diverse flows, CH (LRU bypass)",
        vip: v4(10, 10, 1, 2), dst_port: 80, src: v4(10, 10, 2, 2), src_port: 54321,
        vip_flags: F_LRU_BYPASS, vip_num: 1, src_mask: DIVERSE, ..TX_V4 },
    Scenario { name: "tcp-v6-lru-diverse", description: "IPv6 TCP, diverse flows, warm LRU",
        vip: VIP6_A, dst_port: 80, src: [0xfd00_0200, 0, 0, 1], src_port: 12345, vip_num: 10,
        warm_table: true, src_mask: DIVERSE, ..TX_V6 },
    Scenario { name: "tcp-v6-ch-diverse", description: "IPv6 TCP, diverse flows, CH (LRU bypass)",
        vip: VIP6_B, dst_port: 80, src: [0xfd00_0200, 0, 0, 2], src_port: 54321,
        vip_flags: F_LRU_BYPASS, vip_num: 12, src_mask: DIVERSE, ..TX_V6 },
    Scenario { name: "udp-v4-lru-diverse", description: "IPv4 UDP, diverse flows, warm LRU",
        proto: IPPROTO_UDP, vip: VIP_A, dst_port: 443, src: v4(10, 10, 3, 1), src_port: 11111,
        vip_num: 2, warm_table: true, src_mask: DIVERSE, ..TX_V4 },
    Scenario { name: "tcp-v4-lru-miss", description: "IPv4 TCP, LRU miss (16M flow space), CH lookup",
        vip: VIP_A, dst_port: 80, src: v4(10, 10, 2, 1), src_port: 12345, src_mask: HUGE,
        cold_table: true, ..TX_V4 },
    Scenario { name: "udp-v4-lru-miss", description: "IPv4 UDP, LRU miss (16M flow space), CH lookup",
        proto: IPPROTO_UDP, vip: VIP_A, dst_port: 443, src: v4(10, 10, 3, 1), src_port: 11111,
        vip_num: 2, src_mask: HUGE, cold_table: true, ..TX_V4 },
    Scenario { name: "tcp-v4-lru-warmup", description: "IPv4 TCP, 4K flows, ~50% LRU miss",
        vip: VIP_A, dst_port: 80, src: v4(10, 10, 2, 1), src_port: 12345, src_mask: DIVERSE,
        cold_table: true, fixed_batch: 6500, ..TX_V4 },
    Scenario { name: "tcp-v4-syn", description: "IPv4 TCP SYN, skip LRU, CH + LRU insert",
        vip: VIP_A, dst_port: 80, src: v4(10, 10, 8, 2), src_port: 60001, syn: true, ..TX_V4 },
    Scenario { name: "tcp-v4-rst-miss", description: "IPv4 TCP RST, CH lookup, no LRU insert",
        vip: VIP_A, dst_port: 80, src: v4(10, 10, 8, 1), src_port: 60000, src_mask: HUGE,
        cold_table: true, rst: true, ..TX_V4 },
    Scenario { name: "pass-v4-no-vip", description: "IPv4 TCP, unknown VIP, XDP_PASS", action: XDP_PASS,
        vip: v4(10, 10, 9, 9), dst_port: 80, src: v4(10, 10, 4, 1), src_port: 33333, ..NONE },
    Scenario { name: "pass-v6-no-vip", description: "IPv6 TCP, unknown VIP, XDP_PASS", action: XDP_PASS,
        v6: true, vip: [0xfd00_9900, 0, 0, 1], dst_port: 80, src: [0xfd00_0400, 0, 0, 1],
        src_port: 33333, ..NONE },
    Scenario { name: "pass-v4-icmp", description: "IPv4 ICMP, non-TCP/UDP protocol, XDP_PASS",
        action: XDP_PASS, proto: IPPROTO_ICMP, vip: VIP_A, src: v4(10, 10, 6, 1), ..NONE },
    Scenario { name: "pass-non-ip", description: "Non-IP (ARP), earliest XDP_PASS exit",
        action: XDP_PASS, eth_proto: Some(ETH_P_ARP), ..NONE },
    Scenario { name: "drop-v4-frag", description: "IPv4 fragmented, XDP_DROP",
        vip: VIP_A, dst_port: 80, src: v4(10, 10, 5, 1), src_port: 44444, fragment: true, ..NONE },
    Scenario { name: "drop-v4-options", description: "IPv4 with IP options (ihl>5), XDP_DROP",
        vip: VIP_A, dst_port: 80, src: v4(10, 10, 7, 1), src_port: 55555, ip_options: true, ..NONE },
    Scenario { name: "drop-v6-frag", description: "IPv6 fragment extension header, XDP_DROP",
        v6: true, vip: VIP6_A, dst_port: 80, src: [0xfd00_0500, 0, 0, 1], src_port: 44444,
        fragment: true, ..NONE },
];

/// The scenarios' names, in the table's order: what `--scenario` takes.
pub const NAMES: [&str; SCENARIOS.len()] = {
    let mut names = [""; SCENARIOS.len()];
    let mut i = 0;
    while i < names.len() {
        names[i] = SCENARIOS[i].name;
        i += 1;
    }
    names
};

/// The scenario of that name.
pub fn find(name: &str) -> Option<&'static Scenario> {
    SCENARIOS.iter().find(|s| s.name == name)
}

/// An address in network order, as the packet and the maps hold it.
fn address(words: &[u32; 4], v6: bool) -> Vec<u8> {
    let words = if v6 { &words[..] } else { &words[..1] };
    words.iter().flat_map(|w| w.to_be_bytes()).collect()
}

/// The 16 bytes of an address as the maps' keys hold it (IPv4 in the first
/// four, the rest zero).
pub fn key_address(words: &[u32; 4], v6: bool) -> [u8; 16] {
    let mut out = [0u8; 16];
    let bytes = address(words, v6);
    out[..bytes.len()].copy_from_slice(&bytes);
    out
}

fn checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = header
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

impl Scenario {
    fn l4(&self) -> Vec<u8> {
        let ports = [self.src_port.to_be_bytes(), self.dst_port.to_be_bytes()].concat();
        match self.proto {
            IPPROTO_TCP => {
                let flags = u8::from(self.syn) << 1 | u8::from(self.rst) << 2;
                let mut tcp = ports;
                tcp.extend_from_slice(&[0; 8]); // sequence and acknowledgement
                tcp.extend_from_slice(&[5 << 4, flags]);
                tcp.extend_from_slice(&8192u16.to_be_bytes());
                tcp.extend_from_slice(&[0; 4]); // checksum, urgent pointer
                tcp
            }
            IPPROTO_UDP => {
                let mut udp = ports;
                udp.extend_from_slice(&(8u16 + 16).to_be_bytes());
                udp.extend_from_slice(&[0; 2]);
                udp
            }
            _ => Vec::new(),
        }
    }

    /// The scenario's packet, Ethernet header first.
    pub fn packet(&self) -> Vec<u8> {
        let eth_proto = match (self.eth_proto, self.v6) {
            (Some(proto), _) => proto,
            (None, true) => ETH_P_IPV6,
            (None, false) => ETH_P_IP,
        };
        let mut packet = [&LB_MAC[..], &CLIENT_MAC, &eth_proto.to_be_bytes()].concat();
        if self.eth_proto.is_some() {
            packet.extend_from_slice(PAYLOAD);
            return packet;
        }
        let mut body = Vec::new();
        if self.v6 && self.fragment {
            body.extend_from_slice(&[self.proto, 0, 0, 0, 0, 0, 0, 0]);
        }
        body.extend(self.l4());
        body.extend_from_slice(PAYLOAD);
        if self.v6 {
            let next = if self.fragment { 44 } else { self.proto };
            packet.extend_from_slice(&[0x60, 0, 0, 0]);
            packet.extend_from_slice(&(body.len() as u16).to_be_bytes());
            packet.extend_from_slice(&[next, 64]);
            packet.extend(address(&self.src, true));
            packet.extend(address(&self.vip, true));
        } else {
            let options: &[u8] = if self.ip_options { &[1; 4] } else { &[] };
            let total = (20 + options.len() + body.len()) as u16;
            let fragment: u16 = if self.fragment { 0x2000 } else { 0 };
            let mut ip = vec![0x40 | (5 + options.len() / 4) as u8, 0];
            ip.extend_from_slice(&total.to_be_bytes());
            ip.extend_from_slice(&[0, 0]);
            ip.extend_from_slice(&fragment.to_be_bytes());
            ip.extend_from_slice(&[64, self.proto, 0, 0]);
            ip.extend(address(&self.src, false));
            ip.extend(address(&self.vip, false));
            let sum = checksum(&ip);
            ip[10..12].copy_from_slice(&sum.to_be_bytes());
            packet.extend(ip);
            packet.extend_from_slice(options);
        }
        packet.extend(body);
        packet
    }

    /// The connection table's key of the scenario's flow (bpf/xdp_lb.bpf.c's
    /// `struct flow`: source, destination, ports, protocol, padding).
    pub fn flow_key(&self) -> Vec<u8> {
        let mut key = key_address(&self.src, self.v6).to_vec();
        key.extend(key_address(&self.vip, self.v6));
        key.extend_from_slice(&self.src_port.to_be_bytes());
        key.extend_from_slice(&self.dst_port.to_be_bytes());
        key.extend_from_slice(&[self.proto, 0, 0, 0]);
        key
    }

    /// The VIP's key (`struct vip_key`: address, port, protocol, padding).
    pub fn vip_key(&self) -> Vec<u8> {
        let mut key = key_address(&self.vip, self.v6).to_vec();
        key.extend_from_slice(&self.dst_port.to_be_bytes());
        key.extend_from_slice(&[self.proto, 0]);
        key
    }

    /// The VIP's value (`struct vip_meta`: flags, number).
    pub fn vip_meta(&self) -> Vec<u8> {
        [self.vip_flags.to_ne_bytes(), self.vip_num.to_ne_bytes()].concat()
    }

    /// The backend the scenario's flow goes to.
    pub fn backend(&self) -> u32 {
        if self.outer_v6 {
            BACKEND_V6
        } else {
            BACKEND_V4
        }
    }

    /// What an encapsulated packet must be: its length, and its outer
    /// destination address at its offset.
    pub fn encapsulated(&self, packet_len: usize) -> (usize, usize, Vec<u8>) {
        if self.outer_v6 {
            (packet_len + 40, 14 + 24, address(&TUNNEL_V6, true))
        } else {
            (
                packet_len + 20,
                14 + 16,
                address(&[TUNNEL_V4, 0, 0, 0], false),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found() {
        for scenario in &SCENARIOS {
            assert_eq!(find(scenario.name).map(|s| s.name), Some(scenario.name));
        }
        assert!(find("no-such").is_none());
    }

    #[test]
    fn an_ipv4_tcp_packet_is_laid_out_as_on_the_wire() {
        let packet = find("tcp-v4-syn").unwrap().packet();
        // Ethernet 14, IPv4 20, TCP 20, payload 16.
        assert_eq!(packet.len(), 70);
        assert_eq!(&packet[12..14], &[0x08, 0x00]);
        assert_eq!(packet[14], 0x45);
        assert_eq!(&packet[16..18], &56u16.to_be_bytes());
        assert_eq!(&packet[26..30], &[10, 10, 8, 2]);
        assert_eq!(&packet[30..34], &[10, 10, 1, 1]);
        assert_eq!(&packet[34..38], &[0xea, 0x61, 0, 80]);
        assert_eq!(packet[47], 0x02, "SYN");
        assert_eq!(checksum(&packet[14..34]), 0, "the header checksums to zero");
    }

    #[test]
    fn an_ipv6_fragment_carries_its_extension_header() {
        let packet = find("drop-v6-frag").unwrap().packet();
        // Ethernet 14, IPv6 40, fragment header 8, TCP 20, payload 16.
        assert_eq!(packet.len(), 98);
        assert_eq!(packet[20], 44);
        assert_eq!(packet[54], IPPROTO_TCP);
        assert_eq!(&packet[18..20], &44u16.to_be_bytes());
    }

    #[test]
    fn keys_have_the_programs_sizes() {
        let s = find("tcp-v6-lru-hit").unwrap();
        assert_eq!(s.flow_key().len(), 40);
        assert_eq!(s.vip_key().len(), 20);
        assert_eq!(s.vip_meta().len(), 8);
    }
}
