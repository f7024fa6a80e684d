//! Deterministic traffic synthesizer: a realistic sample capture with exact ground truth.
//!
//! The synthesizer builds a classic pcap (microsecond timestamps, Ethernet link type,
//! little-endian) of a few minutes of edge-network traffic, plus a [`FlowTruth`] per
//! flow that counts exactly what was written. It feeds tapstat's README first command
//! and the tests of the analyzers: whatever a probe should measure, the truth says.
//!
//! Main types:
//! - [`SynthConfig`]: seed, how many flows of each kind, loss rate, time window.
//! - [`Synth`]: the generated capture (packets in capture order plus the truth);
//!   [`Synth::write_to`] streams the pcap bytes.
//! - [`FlowTruth`]: per-flow ground truth (packets, wire/payload bytes,
//!   retransmissions, out-of-order fills per direction; handshake; how it closed).
//! - [`synthesize`] and [`write_pcap`]: the one-call entry points.
//! - [`Profile`], [`write_profile`], [`ProfileTruth`]: traffic shapes for comparing
//!   scheduling policies (`dominant`, `many`, `balanced`), about N packets of complete
//!   TCP connections built by the same conversation model, streamed to the file in
//!   time order (connections are generated a phase at a time and merged by time, so
//!   memory holds the open connections, not the capture; ~1–2 s per million packets
//!   in a release build).
//! - [`write_flood`]: a SYN flood, every packet a new flow.
//!
//! What is in a capture:
//! - TCP connections (IPv4 and some IPv6) from a pool of clients to servers on
//!   443/80/8080/22/8443/993: a full handshake with MSS/SACK-permitted/window-scale
//!   (and, for most, timestamp) options, request/response exchanges sent in
//!   MSS-sized segments by a slow-start, ACK-every-two-segments model with per-flow
//!   RTT (1–200 ms), PSH on the last segment of each message, losses, and a close by
//!   FIN both ways, by RST, or none (left open). A few connections are rejected
//!   (RST in reply to the SYN) and a few get no answer at all (SYN repeated after 1 s).
//! - DNS over UDP: one query (A or AAAA, EDNS0) and usually one response.
//!
//! Payloads carry real framing around random bytes (HTTP/1.1 requests and responses;
//! TLS 1.3 ClientHello with SNI and ALPN, ServerHello, then application-data records;
//! SSH banners and key exchange, then encrypted packets), so dissectors and DPI see
//! plausible traffic; tshark reads the capture without malformed packets. A
//! message's odd last segment is ACKed by the receiver's next packet, or after the
//! 40 ms delayed-ACK timer when that comes later.
//!
//! The probe sits near the clients (like Tstat at a campus edge): a client→server
//! packet is seen shortly after the client sends it, a server→client one shortly
//! before the client gets it. Losses come in two kinds, because a probe sees them
//! differently: lost *after* the probe (the original is captured, then its
//! retransmission: counted in `*_retx_*`), and lost *before* the probe (the original
//! never shows; the retransmission fills a hole below data already seen: counted in
//! `*_ooo_*`, not as a retransmission).
//!
//! Everything is derived from the seed (ChaCha8, integer-only sampling, no hash-map
//! iteration, no clock), so the same config gives the same bytes on every machine.
//!
//! ```
//! use tapstat_lab::synth::{synthesize, SynthConfig};
//!
//! let cfg = SynthConfig { tcp_flows: 20, udp_dns_flows: 10, ..SynthConfig::default() };
//! let (pcap, truth) = synthesize(&cfg);
//! assert_eq!(&pcap[..4], &[0xd4, 0xc3, 0xb2, 0xa1]); // little-endian, microseconds
//! assert_eq!(truth.len(), 30);
//! let packets: u64 = truth.iter().map(|f| f.c_pkts + f.s_pkts).sum();
//! assert!(packets > 30);
//! ```

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;

use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// 2026-01-01T00:00:00Z in nanoseconds since the Unix epoch.
pub const START_2026_NS: u64 = 1_767_225_600 * SEC;

const US: u64 = 1_000;
const MS: u64 = 1_000_000;
const SEC: u64 = 1_000_000_000;

const FIN: u8 = 0x01;
const SYN: u8 = 0x02;
const RST: u8 = 0x04;
const PSH: u8 = 0x08;
const ACK: u8 = 0x10;

const PROTO_TCP: u8 = 6;
const PROTO_UDP: u8 = 17;

/// Direction index: client→server.
const C: usize = 0;
/// Direction index: server→client.
const S: usize = 1;

/// The capture's snap length; frames are never truncated.
const SNAPLEN: u32 = 262_144;

/// What to synthesize. Every field has a sensible default; override with struct update
/// syntax (`SynthConfig { seed: 7, ..Default::default() }`).
#[derive(Clone, Debug, PartialEq)]
pub struct SynthConfig {
    /// Seed of every random choice: same config, same bytes.
    pub seed: u64,
    /// Number of TCP connection attempts (including rejected and unanswered ones).
    pub tcp_flows: usize,
    /// Number of DNS-over-UDP query flows.
    pub udp_dns_flows: usize,
    /// Probability that a TCP data segment is lost (once; retransmissions get through).
    pub loss_rate: f64,
    /// Time of the earliest possible flow start, ns since the Unix epoch.
    pub start_ns: u64,
    /// Flows start uniformly within `[start_ns, start_ns + duration_ns)`; the last
    /// ones may run a few seconds past it.
    pub duration_ns: u64,
    /// Fraction of flows over IPv6.
    pub ipv6_fraction: f64,
    /// Cap of an ordinary response (or upload) size, bytes. Sizes are heavy-tailed
    /// below it.
    pub max_response_bytes: usize,
    /// Number of bulk downloads (between half and all of `bulk_bytes`), on top of the
    /// heavy-tailed ordinary ones; they exercise long slow-start/loss dynamics.
    pub bulk_flows: usize,
    /// Size cap of a bulk download, bytes.
    pub bulk_bytes: usize,
    /// Number of client hosts (10.0.x.y and fd00::/64 addresses).
    pub clients: usize,
    /// Number of server hosts (documentation prefixes: 192.0.2.0/24, 198.51.100.0/24,
    /// 203.0.113.0/24, 2001:db8::/32).
    pub servers: usize,
}

impl Default for SynthConfig {
    /// 2500 TCP and 1500 DNS flows starting over three minutes from 2026-01-01, 1%
    /// loss, one bulk download: about 30,000 packets in a 6.5 MB pcap.
    fn default() -> Self {
        SynthConfig {
            seed: 42,
            tcp_flows: 2500,
            udp_dns_flows: 1500,
            loss_rate: 0.01,
            start_ns: START_2026_NS,
            duration_ns: 180 * SEC,
            ipv6_fraction: 0.1,
            max_response_bytes: 64 * 1024,
            bulk_flows: 1,
            bulk_bytes: 512 * 1024,
            clients: 200,
            servers: 60,
        }
    }
}

/// What kind of flow the synthesizer meant to create.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FlowKind {
    /// A TCP connection that completed its handshake.
    Tcp,
    /// A TCP SYN answered by RST/ACK (closed port).
    TcpRejected,
    /// A TCP SYN never answered; the client repeats it once after 1 s.
    TcpUnanswered,
    /// A DNS query with its response.
    Dns,
    /// A DNS query without response.
    DnsUnanswered,
}

/// How a flow ended, as seen in the capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Close {
    /// Both sides sent a FIN (and nobody an RST).
    Fin,
    /// Some side sent an RST.
    Rst,
    /// No close seen (left open, unanswered, or UDP).
    None,
}

/// Exact ground truth of one flow, counted from the packets actually written.
///
/// `c_*` counts client→server packets, `s_*` server→client ones. `*_wire_bytes` is the
/// Ethernet frame length as captured (14-byte header, IP, L4, payload, padding up to
/// 60 bytes; no FCS). `*_payload_bytes` is the TCP/UDP payload of every packet,
/// retransmissions and out-of-order fills included. `*_retx_*` counts data segments
/// captured a second time (lost after the probe); `*_ooo_*` counts data segments
/// whose original never reached the probe (lost before it), so their only copy fills
/// a hole. Neither counts the repeated SYN of an unanswered connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowTruth {
    /// IP protocol number: 6 (TCP) or 17 (UDP).
    pub proto: u8,
    /// What the synthesizer meant this flow to be.
    pub kind: FlowKind,
    /// The initiator's address and port.
    pub client: (IpAddr, u16),
    /// The responder's address and port.
    pub server: (IpAddr, u16),
    pub c_pkts: u64,
    pub c_wire_bytes: u64,
    pub c_payload_bytes: u64,
    pub c_retx_pkts: u64,
    pub c_retx_bytes: u64,
    pub c_ooo_pkts: u64,
    pub c_ooo_bytes: u64,
    pub s_pkts: u64,
    pub s_wire_bytes: u64,
    pub s_payload_bytes: u64,
    pub s_retx_pkts: u64,
    pub s_retx_bytes: u64,
    pub s_ooo_pkts: u64,
    pub s_ooo_bytes: u64,
    /// SYN, SYN/ACK and the client's ACK all captured.
    pub handshake_complete: bool,
    pub closed_by: Close,
    /// Timestamp of the first and last captured packet, ns since the Unix epoch (whole
    /// microseconds, as the pcap holds them).
    pub first_ns: u64,
    pub last_ns: u64,
    /// The flow's base round-trip time client↔server (queueing-free), ns.
    pub rtt_ns: u64,
    /// The base round trip probe↔client (a server→client segment to the ACK), ns.
    pub rtt_probe_client_ns: u64,
    /// The base round trip probe↔server (a client→server segment to the ACK), ns.
    pub rtt_probe_server_ns: u64,
    /// The negotiated MSS (0 for UDP or when no handshake completed).
    pub mss: u16,
    /// Whether the TCP timestamp option is in use (12 option bytes in every segment).
    pub timestamps: bool,
}

impl FlowTruth {
    fn new(proto: u8, kind: FlowKind, client: (IpAddr, u16), server: (IpAddr, u16)) -> Self {
        FlowTruth {
            proto,
            kind,
            client,
            server,
            c_pkts: 0,
            c_wire_bytes: 0,
            c_payload_bytes: 0,
            c_retx_pkts: 0,
            c_retx_bytes: 0,
            c_ooo_pkts: 0,
            c_ooo_bytes: 0,
            s_pkts: 0,
            s_wire_bytes: 0,
            s_payload_bytes: 0,
            s_retx_pkts: 0,
            s_retx_bytes: 0,
            s_ooo_pkts: 0,
            s_ooo_bytes: 0,
            handshake_complete: false,
            closed_by: Close::None,
            first_ns: 0,
            last_ns: 0,
            rtt_ns: 0,
            rtt_probe_client_ns: 0,
            rtt_probe_server_ns: 0,
            mss: 0,
            timestamps: false,
        }
    }

    /// Packets both ways.
    pub fn pkts(&self) -> u64 {
        self.c_pkts + self.s_pkts
    }

    /// Wire bytes both ways.
    pub fn wire_bytes(&self) -> u64 {
        self.c_wire_bytes + self.s_wire_bytes
    }
}

/// How the probe sees a data segment (drives the truth counters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Normal,
    /// Second capture of a segment lost after the probe.
    Retx,
    /// Only capture of a segment lost before the probe.
    Ooo,
}

/// One captured packet, before the global time sort.
struct Pkt {
    ts_ns: u64,
    flow: u32,
    /// Generation order within the flow: breaks timestamp ties causally.
    idx: u32,
    dir: u8,
    class: Class,
    tcp_flags: u8,
    payload: u32,
    frame: Vec<u8>,
}

/// A generated capture: packets in capture order and the truth of every flow.
pub struct Synth {
    pkts: Vec<Pkt>,
    truth: Vec<FlowTruth>,
}

impl Synth {
    /// Generates the whole capture in memory (about the pcap's size).
    pub fn new(cfg: &SynthConfig) -> Synth {
        let mut master = ChaCha8Rng::seed_from_u64(cfg.seed);
        let clients = make_clients(&mut master, cfg.clients.max(1));
        let servers = make_servers(&mut master, cfg.servers.max(1));
        let mut ports: Vec<u16> = clients.iter().map(|_| master.gen_range(32768..=60999)).collect();

        // Plan every flow first, then sort by start time, so that flow ids (the truth
        // index) follow time and each flow's own RNG is independent of the others.
        let duration = cfg.duration_ns.max(1);
        let mut plans = Vec::with_capacity(cfg.tcp_flows + cfg.udp_dns_flows);
        for i in 0..cfg.tcp_flows + cfg.udp_dns_flows {
            let tcp = i < cfg.tcp_flows;
            let ci = master.gen_range(0..clients.len());
            // Per-client port counter with a random stride: looks random, never
            // repeats a 5-tuple within a capture of ordinary size.
            let port = ports[ci];
            let next = port as u32 + master.gen_range(1..=31u32);
            ports[ci] = if next > 60999 { (32768 + next - 61000) as u16 } else { next as u16 };
            plans.push(Plan {
                start: cfg.start_ns + master.gen_range(0..duration),
                tcp,
                bulk: tcp && i < cfg.bulk_flows,
                client: ci,
                port,
                server: master.gen_range(0..servers.len()),
                v6: master.gen_bool(probability(cfg.ipv6_fraction)),
                seed: master.gen(),
            });
        }
        plans.sort_by_key(|p| p.start);

        let mut pkts = Vec::new();
        let mut truth = Vec::with_capacity(plans.len());
        for (id, plan) in plans.iter().enumerate() {
            let em = Emitter::new(std::mem::take(&mut pkts), id as u32);
            let (t, em) = if plan.tcp {
                tcp_flow(cfg, plan, &clients[plan.client], &servers[plan.server], em)
            } else {
                dns_flow(plan, &clients[plan.client], em)
            };
            pkts = em.out;
            truth.push(t);
        }

        // Capture order. The key is unique, so the order is fully determined.
        pkts.sort_unstable_by_key(|p| (p.ts_ns, p.flow, p.idx));
        count_truth(&pkts, &mut truth);
        Synth { pkts, truth }
    }

    /// Truth of every flow, in order of flow start.
    pub fn truth(&self) -> &[FlowTruth] {
        &self.truth
    }

    /// Consumes the capture, keeping the truth.
    pub fn into_truth(self) -> Vec<FlowTruth> {
        self.truth
    }

    /// Number of packets in the capture.
    pub fn packet_count(&self) -> usize {
        self.pkts.len()
    }

    /// Size of the pcap file in bytes.
    pub fn pcap_len(&self) -> usize {
        24 + self.pkts.iter().map(|p| 16 + p.frame.len()).sum::<usize>()
    }

    /// Timestamp (ns, whole µs) and Ethernet frame of every packet, in capture order.
    pub fn frames(&self) -> impl Iterator<Item = (u64, &[u8])> + '_ {
        self.pkts.iter().map(|p| (p.ts_ns, p.frame.as_slice()))
    }

    /// Writes the classic pcap (LE, µs, Ethernet) to `w`.
    pub fn write_to<W: Write>(&self, mut w: W) -> io::Result<()> {
        w.write_all(&pcap_header())?;
        for p in &self.pkts {
            write_record(&mut w, p.ts_ns, &p.frame)?;
        }
        Ok(())
    }

    /// The pcap file as bytes.
    pub fn to_pcap_bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.pcap_len());
        self.write_to(&mut v).expect("writing to a Vec cannot fail");
        v
    }
}

/// Generates the capture for `cfg`: the whole pcap file and the truth of every flow
/// (in order of flow start).
pub fn synthesize(cfg: &SynthConfig) -> (Vec<u8>, Vec<FlowTruth>) {
    let s = Synth::new(cfg);
    let bytes = s.to_pcap_bytes();
    (bytes, s.into_truth())
}

/// Writes the capture for `cfg` to `path` and returns the truth of every flow.
pub fn write_pcap(path: &Path, cfg: &SynthConfig) -> io::Result<Vec<FlowTruth>> {
    let s = Synth::new(cfg);
    let mut w = io::BufWriter::new(std::fs::File::create(path)?);
    s.write_to(&mut w)?;
    w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    Ok(s.into_truth())
}

/// The classic pcap file header: little-endian, µs, Ethernet.
fn pcap_header() -> [u8; 24] {
    let mut h = [0u8; 24];
    h[0..4].copy_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    h[4..6].copy_from_slice(&2u16.to_le_bytes());
    h[6..8].copy_from_slice(&4u16.to_le_bytes());
    // thiszone and sigfigs: 0
    h[16..20].copy_from_slice(&SNAPLEN.to_le_bytes());
    h[20..24].copy_from_slice(&1u32.to_le_bytes()); // LINKTYPE_ETHERNET
    h
}

/// One pcap record: the header (time in whole µs, never truncated) and the frame.
fn write_record<W: Write>(w: &mut W, ts_ns: u64, frame: &[u8]) -> io::Result<()> {
    let mut rec = [0u8; 16];
    rec[0..4].copy_from_slice(&((ts_ns / SEC) as u32).to_le_bytes());
    rec[4..8].copy_from_slice(&((ts_ns % SEC / US) as u32).to_le_bytes());
    rec[8..12].copy_from_slice(&(frame.len() as u32).to_le_bytes());
    rec[12..16].copy_from_slice(&(frame.len() as u32).to_le_bytes());
    w.write_all(&rec)?;
    w.write_all(frame)
}

/// A flood: `flows` TCP SYNs, each from a random IPv4 source address and port to a
/// random destination address and port, so every packet opens a new flow, `pps` of
/// them per second of packet time from 2026-01-01 (a spoofed SYN flood or a scan, the
/// input that fills flow tables fastest). Ethernet, classic pcap, µs. Returns the
/// packets written.
pub fn write_flood(path: &Path, flows: usize, pps: u64, seed: u64) -> io::Result<u64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut w = io::BufWriter::new(std::fs::File::create(path)?);
    w.write_all(&pcap_header())?;
    let gap_ns = SEC / pps.max(1);
    for i in 0..flows as u64 {
        let l3 = L3 {
            src_mac: [0x02, 0, 0, 0, 0, 2],
            dst_mac: GATEWAY_MAC,
            src: IpAddr::V4(Ipv4Addr::from(rng.next_u32())),
            dst: IpAddr::V4(Ipv4Addr::from(rng.next_u32())),
            ttl: 64,
            ip_id: rng.gen(),
            df: true,
            flow_label: 0,
        };
        let mut tcp = vec![0u8; 20];
        tcp[0..2].copy_from_slice(&rng.gen_range(1024..=u16::MAX).to_be_bytes());
        tcp[2..4].copy_from_slice(&rng.gen_range(1..=u16::MAX).to_be_bytes());
        tcp[4..8].copy_from_slice(&rng.next_u32().to_be_bytes());
        tcp[12] = 5 << 4;
        tcp[13] = SYN;
        tcp[14..16].copy_from_slice(&64240u16.to_be_bytes());
        let f = frame(&l3, PROTO_TCP, tcp, 16);
        write_record(&mut w, START_2026_NS + i * gap_ns, &f)?;
    }
    w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    Ok(flows as u64)
}

/// A shape of traffic for comparing how packets are scheduled onto workers (issue 14,
/// after the seed paper's three cases). Every flow of every profile is a complete TCP
/// connection (handshake, request/response data both ways with its ACKs, FIN both ways
/// and the last ACK), built by the same conversation model as the sample capture,
/// without losses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Profile {
    /// One elephant (a long TLS download in chunks of 0.5–4 MB) carries about 90% of
    /// the packets; the rest is a background of short web connections (a few thousand
    /// in a million packets).
    Dominant,
    /// Very many short connections of about 10 packets each (handshake, one request,
    /// one response of one or two segments, close), 10,000 new ones per second of
    /// packet time, each held open 15–75 s before the server closes it (a keep-alive
    /// timeout): nearly all of them are open at once in a million packets.
    Many,
    /// 64–256 long connections (one per 4,000 packets) with equal shares of the
    /// packets, started within the first 100 ms at the same rate (chunks of 64–256 KB
    /// every 50–200 ms, 10–30 ms RTT), so their packets interleave throughout.
    Balanced,
}

impl Profile {
    /// Every profile, in the order the docs list them.
    pub const ALL: [Profile; 3] = [Profile::Dominant, Profile::Many, Profile::Balanced];

    /// The profile's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Dominant => "dominant",
            Profile::Many => "many",
            Profile::Balanced => "balanced",
        }
    }
}

impl std::fmt::Display for Profile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Profile {
    type Err = String;
    fn from_str(s: &str) -> Result<Profile, String> {
        Profile::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| format!("unknown profile {s:?} (one of: {})", Profile::ALL.map(Profile::name).join(", ")))
    }
}

/// What [`write_profile`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProfileTruth {
    /// Packets in the capture.
    pub packets: u64,
    /// Size of the pcap file, bytes.
    pub pcap_bytes: u64,
    /// Packets of each connection (both ways), in order of connection start.
    pub flow_pkts: Vec<u64>,
    /// Time of the first and last packet, ns since the Unix epoch.
    pub first_ns: u64,
    pub last_ns: u64,
    /// Most connections open at once (between a connection's first and last packet).
    pub peak_open: u64,
}

impl ProfileTruth {
    /// Number of connections.
    pub fn flows(&self) -> usize {
        self.flow_pkts.len()
    }

    /// Packets of the largest connection.
    pub fn largest(&self) -> u64 {
        self.flow_pkts.iter().copied().max().unwrap_or(0)
    }
}

/// Writes about `packets` packets of `profile` traffic, derived from `seed`, to `path`
/// (classic pcap, µs, Ethernet, in time order) and says what it wrote. Connections are
/// generated a phase at a time and their packets merged by time, so memory holds the
/// connections open at once and the packets of the last few round trips, never the
/// capture.
pub fn write_profile(path: &Path, profile: Profile, packets: u64, seed: u64) -> io::Result<ProfileTruth> {
    let mut w = io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    let truth = profile_to(&mut w, profile, packets, seed)?;
    w.into_inner().map_err(|e| e.into_error())?;
    Ok(truth)
}

/// [`write_profile`] into any writer.
pub fn profile_to<W: Write>(w: &mut W, profile: Profile, packets: u64, seed: u64) -> io::Result<ProfileTruth> {
    Merge::new(Schedule::new(profile, packets.max(1), seed)).run(w)
}

/// Elephants and the balanced profile's connections ask for chunks of this size or
/// less once their packet budget is close, so that they end near it.
fn bytes_for(pkts: u64, mss_eff: usize) -> u64 {
    // A full segment and half an ACK per segment (ACK every second segment).
    pkts * 2 * mss_eff as u64 / 3
}

/// What one of a profile's connections does after its handshake: exchanges (a request,
/// then a response) until `exchanges` or `budget` packets, then a FIN close.
#[derive(Clone, Copy, Debug)]
struct Script {
    exchanges: u32,
    /// Packets (both ways) after which no new exchange starts; the last response is
    /// sized to end near it.
    budget: u64,
    /// Request size, bytes: uniform.
    req: (u64, u64),
    /// Response size, bytes: log-uniform.
    resp: (u64, u64),
    /// The client's think time between a response and the next request: log-uniform.
    think: (u64, u64),
    /// From the last response to the close: log-uniform.
    idle: (u64, u64),
    /// Probability that the server closes (as at a keep-alive timeout), else the client.
    server_closes: f64,
    /// Path overrides: RTT, largest congestion window (segments), link speed (ns per
    /// byte).
    rtt: Option<u64>,
    max_cwnd: Option<u32>,
    ns_per_byte: Option<u64>,
}

impl Script {
    /// A short web connection (the background of `dominant`; `many` tightens it).
    fn web() -> Script {
        Script {
            exchanges: 1,
            budget: u64::MAX,
            req: (150, 450),
            resp: (200, 64 * 1024),
            think: (200 * US, 1500 * MS),
            idle: (MS, 5 * SEC),
            server_closes: 0.4,
            rtt: None,
            max_cwnd: None,
            ns_per_byte: None,
        }
    }
}

/// One connection to start.
struct NewConn {
    start: u64,
    client: usize,
    server: usize,
    sport: u16,
    v6: bool,
    seed: u64,
    script: Script,
}

/// The connections of a profile, in order of start.
struct Schedule {
    rng: ChaCha8Rng,
    profile: Profile,
    clients: Vec<Host>,
    servers: Vec<Host>,
    /// Next source port of each client.
    ports: Vec<u16>,
    /// Connections still to start, and the next start time.
    left: u64,
    t: u64,
    /// Mean gap between starts.
    gap: u64,
    /// Packet budget of a long connection (the elephant, or each balanced one).
    budget: u64,
    /// The elephant's RTT and largest congestion window.
    elephant: (u64, u32),
    started: u64,
}

/// Packets of a `many` connection and of a background web one, on average (measured
/// over the first million packets of seed 42; they set how many connections make the
/// requested number of packets).
const MANY_PKTS: u64 = 10;
const WEB_PKTS: u64 = 33;

impl Schedule {
    fn new(profile: Profile, packets: u64, seed: u64) -> Schedule {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let start = START_2026_NS + rng.gen_range(0..SEC);
        let elephant = (log_uniform(&mut rng, 10 * MS, 30 * MS), rng.gen_range(128..=256u32));
        let (conns, clients, gap, budget) = match profile {
            // 10,000 new connections per second.
            Profile::Many => {
                let n = packets.div_ceil(MANY_PKTS);
                (n, (n / 64).clamp(200, 64_000), SEC / 10_000, 0)
            }
            // The elephant takes ~90%; the background spreads over about the time the
            // elephant needs: chunks of ~1.7 MB (~1,170 segments and ~1,760 packets),
            // each a request's round trip, cwnd-sized flights a round trip apart and
            // ~27 ms of server and client think time.
            Profile::Dominant => {
                let bg = (packets / 10).div_ceil(WEB_PKTS);
                let budget = packets - (bg * WEB_PKTS).min(packets / 5);
                let (rtt, cwnd) = elephant;
                let chunk_ns = (1170 / cwnd as u64 + 2) * rtt + 27 * MS;
                let span = budget * chunk_ns / 1760;
                (1 + bg, 200, span / bg.max(1), budget)
            }
            // All start within the first 100 ms, long before the first ends.
            Profile::Balanced => {
                let n = (packets / 4000).clamp(64, 256);
                (n, n, 100 * MS / n, packets.div_ceil(n))
            }
        };
        let clients = make_clients(&mut rng, clients as usize);
        let servers = make_servers(&mut rng, 250);
        let ports = clients.iter().map(|_| rng.gen_range(32768..=60999)).collect();
        Schedule { rng, profile, clients, servers, ports, left: conns, t: start, gap, budget, elephant, started: 0 }
    }

    fn next(&mut self) -> Option<NewConn> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let rng = &mut self.rng;
        let start = self.t;
        self.t += rng.gen_range(0..=2 * self.gap);
        let first = self.started == 0;
        self.started += 1;
        let (sport, script) = match self.profile {
            Profile::Dominant if first => (
                443,
                Script {
                    exchanges: u32::MAX,
                    budget: self.budget,
                    resp: (512 * 1024, 4 << 20),
                    think: (MS, 50 * MS),
                    rtt: Some(self.elephant.0),
                    max_cwnd: Some(self.elephant.1),
                    ns_per_byte: Some(8),
                    ..Script::web()
                },
            ),
            Profile::Dominant => {
                let exchanges = [1, 1, 1, 1, 2, 3][rng.gen_range(0..6)];
                ([443, 443, 443, 80][rng.gen_range(0..4)], Script { exchanges, ..Script::web() })
            }
            Profile::Many => (
                [443, 443, 80][rng.gen_range(0..3)],
                Script {
                    resp: (200, 2800),
                    idle: (15 * SEC, 75 * SEC),
                    server_closes: 0.8,
                    // Short connections see the RTTs of the whole Internet, but not
                    // its slowest links (which would stretch the opening).
                    ns_per_byte: Some([8, 16, 80][rng.gen_range(0..3)]),
                    ..Script::web()
                },
            ),
            Profile::Balanced => (
                443,
                Script {
                    exchanges: u32::MAX,
                    budget: self.budget,
                    resp: (64 * 1024, 256 * 1024),
                    think: (50 * MS, 200 * MS),
                    idle: (MS, 50 * MS),
                    rtt: Some(log_uniform(rng, 10 * MS, 30 * MS)),
                    max_cwnd: Some(rng.gen_range(32..=48)),
                    ns_per_byte: Some(80),
                    ..Script::web()
                },
            ),
        };
        let client = match self.profile {
            Profile::Balanced => self.started as usize - 1,
            _ => rng.gen_range(0..self.clients.len()),
        };
        Some(NewConn {
            start,
            client,
            server: rng.gen_range(0..self.servers.len()),
            sport,
            v6: rng.gen_bool(0.1),
            seed: rng.gen(),
            script,
        })
    }

    /// The client's next source port: a per-client counter with a random stride, so
    /// that no 5-tuple repeats within a capture (a client wraps after ~1,700
    /// connections, and clients are added with the connections).
    fn port(&mut self, client: usize) -> u16 {
        let port = self.ports[client];
        let next = port as u32 + self.rng.gen_range(1..=31u32);
        self.ports[client] = if next > 60999 { (32768 + next - 61000) as u16 } else { next as u16 };
        port
    }
}

/// Where a profile's connection is in its script.
enum Phase {
    Open(u64),
    Exchange,
    Close(Closing),
}

/// A profile's connection, generated a phase at a time.
struct Conv {
    g: TcpGen,
    script: Script,
    phase: Phase,
    last: Done,
    t_next: u64,
    exchanges: u32,
}

impl Conv {
    fn new(id: u32, c: &NewConn, sch: &mut Schedule) -> Conv {
        let port = sch.port(c.client);
        let (client, server) = (&sch.clients[c.client], &sch.servers[c.server]);
        let (cip, sip) = if c.v6 {
            (IpAddr::V6(client.v6), IpAddr::V6(server.v6))
        } else {
            (IpAddr::V4(client.v4), IpAddr::V4(server.v4))
        };
        let ends = [(client, cip, port), (server, sip, c.sport)];
        let mut g = TcpGen::new(ChaCha8Rng::seed_from_u64(c.seed), Emitter::new(Vec::new(), id), ends, 0.0);
        let s = c.script;
        if let Some(rtt) = s.rtt {
            let pct = g.rng.gen_range(2..=20);
            g.set_rtt(rtt, pct);
        }
        if let Some(n) = s.max_cwnd {
            g.max_cwnd = n;
        }
        if let Some(n) = s.ns_per_byte {
            g.ns_per_byte = n;
        }
        Conv { g, script: s, phase: Phase::Open(c.start), last: Done { t: 0, owed: false }, t_next: 0, exchanges: 0 }
    }

    /// Generates the next phase into the emitter's buffer. Returns the earliest time
    /// (whole µs) of any packet of the phase after it, or `None` when the connection is
    /// done: no later packet of this connection can come before it.
    fn step(&mut self) -> Option<u64> {
        let g = &mut self.g;
        let s = &self.script;
        match self.phase {
            Phase::Open(t0) => {
                let t = g.syn(t0);
                let t = g.accept(t);
                self.last = Done { t, owed: false };
                self.t_next = t + g.rng.gen_range(10 * US..2 * MS);
                self.phase = Phase::Exchange;
                self.step()
            }
            Phase::Exchange => {
                let req = g.rng.gen_range(s.req.0..=s.req.1);
                let mut resp = log_uniform(&mut g.rng, s.resp.0, s.resp.1);
                let sent = g.em.idx as u64;
                if s.budget != u64::MAX {
                    // Request, its ACK and the close: about 8 packets.
                    resp = resp.min(bytes_for(s.budget.saturating_sub(sent + 8), g.mss_eff).max(1));
                }
                let prev = (self.exchanges > 0).then_some(self.last);
                self.last = g.exchange(req as usize, resp as usize, self.t_next, prev);
                self.exchanges += 1;
                if self.exchanges < s.exchanges && (g.em.idx as u64) + 16 < s.budget {
                    self.t_next = self.last.t + 2 * g.d[C] + log_uniform(&mut g.rng, s.think.0, s.think.1);
                    let wake = g.settle_at(C, self.last, self.t_next).unwrap_or(self.t_next);
                    return Some(wake / US * US);
                }
                let closer = if g.rng.gen_bool(s.server_closes) { S } else { C };
                let idle = log_uniform(&mut g.rng, s.idle.0, s.idle.1);
                let c = g.closing(self.last, closer, idle, Shut::Fin);
                let wake = g.settle_at(C, self.last, c.t_client_next).unwrap_or(c.t_close).min(c.t_close);
                self.phase = Phase::Close(c);
                Some(wake / US * US)
            }
            Phase::Close(c) => {
                g.close(self.last, &c);
                None
            }
        }
    }
}

/// A generated packet waiting in the merge, ordered by (time, connection, index).
struct Queued(Pkt);

impl Queued {
    fn key(&self) -> (u64, u32, u32) {
        (self.0.ts_ns, self.0.flow, self.0.idx)
    }
}

impl PartialEq for Queued {
    fn eq(&self, o: &Self) -> bool {
        self.key() == o.key()
    }
}
impl Eq for Queued {}
impl PartialOrd for Queued {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Queued {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.key().cmp(&o.key())
    }
}

/// The time merge of a profile's connections: a discrete-event loop that runs the
/// phase of the connection due first, and writes every generated packet older than
/// anything still to be generated (the earliest due phase, or the next start).
struct Merge {
    sch: Schedule,
    pending: Option<NewConn>,
    /// Open connections by slot, and the free slots.
    convs: Vec<Option<Box<Conv>>>,
    free: Vec<usize>,
    /// (next phase's earliest packet time, connection id, slot), earliest first.
    due: BinaryHeap<Reverse<(u64, u32, usize)>>,
    queue: BinaryHeap<Reverse<Queued>>,
    /// Last packet time of connections fully generated, earliest first.
    ends: BinaryHeap<Reverse<u64>>,
    open: u64,
    truth: ProfileTruth,
}

impl Merge {
    fn new(mut sch: Schedule) -> Merge {
        let pending = sch.next();
        let truth =
            ProfileTruth { packets: 0, pcap_bytes: 24, flow_pkts: Vec::new(), first_ns: 0, last_ns: 0, peak_open: 0 };
        Merge {
            sch,
            pending,
            convs: Vec::new(),
            free: Vec::new(),
            due: BinaryHeap::new(),
            queue: BinaryHeap::new(),
            ends: BinaryHeap::new(),
            open: 0,
            truth,
        }
    }

    fn run<W: Write>(mut self, w: &mut W) -> io::Result<ProfileTruth> {
        w.write_all(&pcap_header())?;
        loop {
            let next_start = self.pending.as_ref().map_or(u64::MAX, |c| c.start);
            let next_due = self.due.peek().map_or(u64::MAX, |Reverse(d)| d.0);
            self.flush(w, next_start.min(next_due))?;
            if next_start == u64::MAX && next_due == u64::MAX {
                break;
            }
            let slot = if next_start <= next_due {
                let c = self.pending.take().expect("a pending connection starts before u64::MAX");
                self.pending = self.sch.next();
                let id = self.truth.flow_pkts.len() as u32;
                self.truth.flow_pkts.push(0);
                let conv = Box::new(Conv::new(id, &c, &mut self.sch));
                match self.free.pop() {
                    Some(s) => {
                        self.convs[s] = Some(conv);
                        s
                    }
                    None => {
                        self.convs.push(Some(conv));
                        self.convs.len() - 1
                    }
                }
            } else {
                let Reverse((_, _, slot)) = self.due.pop().expect("a phase is due");
                slot
            };
            let conv = self.convs[slot].as_mut().expect("a due slot holds a connection");
            let wake = conv.step();
            let id = conv.g.em.flow;
            self.queue.extend(conv.g.em.out.drain(..).map(|p| Reverse(Queued(p))));
            match wake {
                Some(t) => self.due.push(Reverse((t, id, slot))),
                None => {
                    let end = conv.g.em.last.iter().flatten().copied().max().unwrap_or(0);
                    self.ends.push(Reverse(end));
                    self.convs[slot] = None;
                    self.free.push(slot);
                }
            }
        }
        Ok(self.truth)
    }

    /// Writes the queued packets older than `before`.
    fn flush<W: Write>(&mut self, w: &mut W, before: u64) -> io::Result<()> {
        while let Some(Reverse(q)) = self.queue.peek() {
            if q.0.ts_ns >= before {
                break;
            }
            let Reverse(Queued(p)) = self.queue.pop().expect("peeked");
            let t = &mut self.truth;
            debug_assert!(p.ts_ns >= t.last_ns, "time order");
            while self.ends.peek().is_some_and(|Reverse(e)| *e < p.ts_ns) {
                self.ends.pop();
                self.open -= 1;
            }
            let n = &mut t.flow_pkts[p.flow as usize];
            if *n == 0 {
                self.open += 1;
                t.peak_open = t.peak_open.max(self.open);
            }
            *n += 1;
            if t.packets == 0 {
                t.first_ns = p.ts_ns;
            }
            t.packets += 1;
            t.last_ns = p.ts_ns;
            t.pcap_bytes += 16 + p.frame.len() as u64;
            write_record(w, p.ts_ns, &p.frame)?;
        }
        Ok(())
    }
}

/// Walks the packets in capture order and counts them into the truth, so the truth is
/// exactly what a reader of the file sees.
fn count_truth(pkts: &[Pkt], truth: &mut [FlowTruth]) {
    // Per flow: SYN seen, SYN/ACK seen, FIN from each side, RST seen.
    let mut st = vec![[false; 5]; truth.len()];
    for p in pkts {
        let f = &mut truth[p.flow as usize];
        let s = &mut st[p.flow as usize];
        if f.c_pkts + f.s_pkts == 0 {
            f.first_ns = p.ts_ns;
        }
        f.last_ns = p.ts_ns;
        let wire = p.frame.len() as u64;
        let pay = p.payload as u64;
        let (pkts_, wire_, pay_, retx_p, retx_b, ooo_p, ooo_b) = if p.dir as usize == C {
            (
                &mut f.c_pkts,
                &mut f.c_wire_bytes,
                &mut f.c_payload_bytes,
                &mut f.c_retx_pkts,
                &mut f.c_retx_bytes,
                &mut f.c_ooo_pkts,
                &mut f.c_ooo_bytes,
            )
        } else {
            (
                &mut f.s_pkts,
                &mut f.s_wire_bytes,
                &mut f.s_payload_bytes,
                &mut f.s_retx_pkts,
                &mut f.s_retx_bytes,
                &mut f.s_ooo_pkts,
                &mut f.s_ooo_bytes,
            )
        };
        *pkts_ += 1;
        *wire_ += wire;
        *pay_ += pay;
        match p.class {
            Class::Normal => {}
            Class::Retx => {
                *retx_p += 1;
                *retx_b += pay;
            }
            Class::Ooo => {
                *ooo_p += 1;
                *ooo_b += pay;
            }
        }
        if f.proto == PROTO_TCP {
            let fl = p.tcp_flags;
            let from_client = p.dir as usize == C;
            if from_client && fl & (SYN | ACK) == SYN {
                s[0] = true;
            } else if !from_client && fl & (SYN | ACK) == SYN | ACK && s[0] {
                s[1] = true;
            } else if from_client && fl & (SYN | ACK | RST) == ACK && s[1] {
                f.handshake_complete = true;
            }
            if fl & FIN != 0 {
                s[2 + p.dir as usize] = true;
            }
            if fl & RST != 0 {
                s[4] = true;
            }
            f.closed_by = if s[4] {
                Close::Rst
            } else if s[2] && s[3] {
                Close::Fin
            } else {
                Close::None
            };
        }
    }
}

struct Plan {
    start: u64,
    tcp: bool,
    bulk: bool,
    client: usize,
    port: u16,
    server: usize,
    v6: bool,
    seed: u64,
}

struct Host {
    v4: Ipv4Addr,
    v6: Ipv6Addr,
    /// The host's MAC for clients; the gateway's for servers (their frames reach the
    /// probe through the router).
    mac: [u8; 6],
    /// Initial TTL/hop limit as seen at the probe.
    ttl: u8,
    /// A Windows-like stack: no TCP timestamps, TTL 128.
    windows: bool,
}

const GATEWAY_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0xff, 0x00, 0x01];

fn make_clients(rng: &mut ChaCha8Rng, n: usize) -> Vec<Host> {
    (0..n)
        .map(|i| {
            let windows = rng.gen_bool(0.15);
            let hi = (i / 250) as u8;
            let lo = (i % 250) as u8 + 2;
            Host {
                v4: Ipv4Addr::new(10, 0, hi, lo),
                v6: Ipv6Addr::new(0xfd00, 0, 0, 1, 0, 0, hi as u16, lo as u16 + 0x100),
                mac: [0x02, 0x00, 0x00, 0x00, hi, lo],
                ttl: if windows { 128 } else { 64 },
                windows,
            }
        })
        .collect()
}

fn make_servers(rng: &mut ChaCha8Rng, n: usize) -> Vec<Host> {
    const NETS: [[u8; 3]; 3] = [[192, 0, 2], [198, 51, 100], [203, 0, 113]];
    (0..n)
        .map(|i| {
            let net = NETS[i % 3];
            let host = (i / 3 % 253) as u8 + 1;
            let hops = rng.gen_range(4..=20u8);
            Host {
                v4: Ipv4Addr::new(net[0], net[1], net[2], host),
                v6: Ipv6Addr::new(0x2001, 0xdb8, (i % 3) as u16, 0, 0, 0, 0, host as u16),
                mac: GATEWAY_MAC,
                ttl: 64 - hops,
                windows: false,
            }
        })
        .collect()
}

/// Collects one flow's packets (appended to `out`, which it owns so that a flow can be
/// generated a phase at a time); assigns capture timestamps.
struct Emitter {
    out: Vec<Pkt>,
    flow: u32,
    idx: u32,
    last: [Option<u64>; 2],
}

impl Emitter {
    fn new(out: Vec<Pkt>, flow: u32) -> Emitter {
        Emitter { out, flow, idx: 0, last: [None, None] }
    }

    /// The capture time of a packet meant for `t`: whole microseconds (what the pcap
    /// holds, so the truth matches a reader exactly), and strictly after the previous
    /// packet of the same direction, so generation order is capture order within a
    /// direction.
    fn at(&self, dir: usize, t: u64) -> u64 {
        let q = t / US * US;
        match self.last[dir] {
            Some(l) if q <= l => l + US,
            _ => q,
        }
    }

    fn push(&mut self, dir: usize, ts_ns: u64, class: Class, tcp_flags: u8, payload: usize, frame: Vec<u8>) {
        debug_assert_eq!(ts_ns, self.at(dir, ts_ns));
        self.last[dir] = Some(ts_ns);
        self.out.push(Pkt {
            ts_ns,
            flow: self.flow,
            idx: self.idx,
            dir: dir as u8,
            class,
            tcp_flags,
            payload: payload as u32,
            frame,
        });
        self.idx += 1;
    }
}

/// Addressing of one packet below L4.
struct L3 {
    src_mac: [u8; 6],
    dst_mac: [u8; 6],
    src: IpAddr,
    dst: IpAddr,
    ttl: u8,
    ip_id: u16,
    df: bool,
    flow_label: u32,
}

/// Sum of big-endian 16-bit words (odd tail padded with zero), unfolded.
fn sum16(data: &[u8]) -> u64 {
    let mut chunks = data.chunks_exact(2);
    let mut s: u64 = (&mut chunks).map(|c| u16::from_be_bytes([c[0], c[1]]) as u64).sum();
    if let [b] = chunks.remainder() {
        s += (*b as u64) << 8;
    }
    s
}

/// One's-complement of the folded sum: the Internet checksum.
fn fold(mut s: u64) -> u16 {
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

fn ip_bytes(a: IpAddr) -> Vec<u8> {
    match a {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    }
}

/// Builds an Ethernet frame around `l4`, filling in the L4 checksum (at `csum_at`
/// within `l4`, over the pseudo-header) and the IPv4 header checksum; pads to 60 bytes.
fn frame(l3: &L3, proto: u8, mut l4: Vec<u8>, csum_at: usize) -> Vec<u8> {
    let len = l4.len();
    let (src, dst) = (ip_bytes(l3.src), ip_bytes(l3.dst));
    let pseudo = sum16(&src) + sum16(&dst) + proto as u64 + (len as u64 >> 16) + (len as u64 & 0xffff);
    let mut c = fold(pseudo + sum16(&l4));
    if proto == PROTO_UDP && c == 0 {
        c = 0xffff; // 0 means "no checksum" in UDP
    }
    l4[csum_at..csum_at + 2].copy_from_slice(&c.to_be_bytes());

    let mut f = Vec::with_capacity(14 + 40 + len);
    f.extend_from_slice(&l3.dst_mac);
    f.extend_from_slice(&l3.src_mac);
    match (l3.src, l3.dst) {
        (IpAddr::V4(_), IpAddr::V4(_)) => {
            f.extend_from_slice(&0x0800u16.to_be_bytes());
            let mut h = [0u8; 20];
            h[0] = 0x45;
            h[2..4].copy_from_slice(&((20 + len) as u16).to_be_bytes());
            h[4..6].copy_from_slice(&l3.ip_id.to_be_bytes());
            if l3.df {
                h[6] = 0x40;
            }
            h[8] = l3.ttl;
            h[9] = proto;
            h[12..16].copy_from_slice(&src);
            h[16..20].copy_from_slice(&dst);
            let hc = fold(sum16(&h));
            h[10..12].copy_from_slice(&hc.to_be_bytes());
            f.extend_from_slice(&h);
        }
        (IpAddr::V6(_), IpAddr::V6(_)) => {
            f.extend_from_slice(&0x86ddu16.to_be_bytes());
            let vtf: u32 = (6 << 28) | (l3.flow_label & 0xf_ffff);
            f.extend_from_slice(&vtf.to_be_bytes());
            f.extend_from_slice(&(len as u16).to_be_bytes());
            f.push(proto);
            f.push(l3.ttl);
            f.extend_from_slice(&src);
            f.extend_from_slice(&dst);
        }
        _ => unreachable!("mixed address families"),
    }
    f.extend_from_slice(&l4);
    if f.len() < 60 {
        f.resize(60, 0); // Ethernet minimum frame (FCS not captured)
    }
    f
}

/// A configured fraction as a probability (NaN counts as 0).
fn probability(p: f64) -> f64 {
    if p.is_nan() {
        0.0
    } else {
        p.clamp(0.0, 1.0)
    }
}

/// Log-uniform-ish integer in `[lo, hi]`: a uniformly chosen power-of-two bucket, then
/// uniform within it. Integer-only, so identical on every platform.
fn log_uniform(rng: &mut ChaCha8Rng, lo: u64, hi: u64) -> u64 {
    let lo = lo.max(1);
    if hi <= lo {
        return lo;
    }
    let buckets = 64 - (hi / lo).leading_zeros() as u64; // ≥ 1
    let k = rng.gen_range(0..buckets);
    let b_lo = lo << k;
    let b_hi = (b_lo * 2).min(hi + 1);
    rng.gen_range(b_lo..b_hi.max(b_lo + 1))
}

/// Heavy-tailed size: doubling buckets from `base`, each next one taken with
/// probability `q` (a discrete Pareto), capped at `cap`.
fn heavy_tail(rng: &mut ChaCha8Rng, base: u64, q: f64, cap: u64) -> u64 {
    let mut lo = base;
    while lo * 2 < cap && rng.gen_bool(q) {
        lo *= 2;
    }
    rng.gen_range(lo..=(lo * 2).min(cap).max(lo))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum App {
    Http,
    Tls,
    Ssh,
}

/// One TCP endpoint's state.
struct Side {
    ip: IpAddr,
    port: u16,
    mac: [u8; 6],
    isn: u32,
    snd_nxt: u32,
    rcv_nxt: u32,
    ts_base: u32,
    ts_recent: u32,
    ip_id: u16,
    ttl: u8,
    syn_win: u16,
    win: u16,
    wscale: u8,
    mss: u16,
    flow_label: u32,
}

/// Linux's minimum delayed-ACK timeout.
const DELACK: u64 = 40 * MS;

/// A message fully received.
#[derive(Clone, Copy)]
struct Done {
    /// Capture time of the segment that completed it.
    t: u64,
    /// Its last segment still waits for an ACK.
    owed: bool,
}

/// What one TCP segment carries.
struct Seg<'a> {
    flags: u8,
    seq: u32,
    payload: &'a [u8],
    class: Class,
    /// One SACK block (left, right edge).
    sack: Option<(u32, u32)>,
}

/// Whether a data segment survives its flight.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fate {
    Ok,
    LostAfterProbe,
    LostBeforeProbe,
}

struct TcpGen {
    rng: ChaCha8Rng,
    em: Emitter,
    sides: [Side; 2],
    /// One-way delay probe↔client (`d[C]`) and probe↔server (`d[S]`).
    d: [u64; 2],
    ts: bool,
    established: bool,
    /// Payload bytes per full segment (MSS less the timestamp option).
    mss_eff: usize,
    /// Sender link speed: serialization time per byte.
    ns_per_byte: u64,
    max_cwnd: u32,
    cwnd: [u32; 2],
    loss: f64,
    app: App,
    host: String,
    msgs: [u32; 2],
}

/// How a connection ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shut {
    /// FIN both ways, the second one ACKed.
    Fin,
    /// An RST from the closer.
    Rst,
    /// Left open: only the owed ACK, if any, is ever sent.
    Open,
}

/// When and by whom a connection is closed: see [`TcpGen::closing`].
#[derive(Clone, Copy, Debug)]
struct Closing {
    closer: usize,
    t_close: u64,
    /// When the client would next send (its FIN or its ACK of the server's), which
    /// carries the ACK it owes for the last response.
    t_client_next: u64,
    how: Shut,
}

impl TcpGen {
    /// The state of a connection between `ends` (client then server: host, address,
    /// port), with a random path (RTT 1–200 ms, log-uniform; the probe near the client,
    /// with 2–20% of the RTT, at least 20 µs each way, on the client side), options
    /// (timestamps, MSS), windows, link speed and application (from the server port).
    fn new(mut rng: ChaCha8Rng, em: Emitter, ends: [(&Host, IpAddr, u16); 2], loss: f64) -> TcpGen {
        let [(client, cip, cport), (server, sip, sport)] = ends;
        let app = match sport {
            80 | 8080 => App::Http,
            22 => App::Ssh,
            _ => App::Tls,
        };
        let rtt = log_uniform(&mut rng, MS, 200 * MS);
        let d_c = (rtt * rng.gen_range(2..=20u64) / 200).max(20 * US);
        let d_s = (rtt / 2).saturating_sub(d_c).max(20 * US);
        let ts = !client.windows && rng.gen_bool(0.95);
        let v4mss: u16 = if cip.is_ipv6() { 1440 } else { 1460 };
        let c_mss = if rng.gen_bool(0.1) { v4mss - 80 } else { v4mss };
        let s_mss = if rng.gen_bool(0.15) { v4mss - 100 } else { v4mss };
        let mss = c_mss.min(s_mss);
        let side = |host: &Host, ip: IpAddr, port: u16, mss: u16, rng: &mut ChaCha8Rng| Side {
            ip,
            port,
            mac: host.mac,
            isn: rng.gen(),
            snd_nxt: 0,
            rcv_nxt: 0,
            ts_base: rng.gen(),
            ts_recent: 0,
            ip_id: rng.gen(),
            ttl: host.ttl,
            syn_win: if host.windows { 64240 } else { 65535 - rng.gen_range(0..4u16) * 0x1000 },
            win: rng.gen_range(250..=2048),
            wscale: if host.windows { 8 } else { rng.gen_range(7..=10) },
            mss,
            flow_label: rng.gen_range(0..0x10_0000),
        };
        let cs = side(client, cip, cport, c_mss, &mut rng);
        let ss = side(server, sip, sport, s_mss, &mut rng);
        let ns_per_byte = [8, 16, 80, 160, 800][rng.gen_range(0..5)];
        let mut g = TcpGen {
            rng,
            em,
            sides: [cs, ss],
            d: [d_c, d_s],
            ts,
            established: false,
            mss_eff: mss as usize - if ts { 12 } else { 0 },
            ns_per_byte,
            max_cwnd: 0,
            cwnd: [10, 10],
            loss,
            app,
            host: String::new(),
            msgs: [0, 0],
        };
        g.max_cwnd = g.rng.gen_range(16..=128);
        g.host = host_name(&mut g.rng);
        g
    }

    /// Sets the path's round trip, `client_pct` percent of it on the client side of the
    /// probe (at least 20 µs each way on either side).
    fn set_rtt(&mut self, rtt: u64, client_pct: u64) {
        self.d[C] = (rtt * client_pct / 200).max(20 * US);
        self.d[S] = (rtt / 2).saturating_sub(self.d[C]).max(20 * US);
    }

    /// Writes the path's round trips into `truth`.
    fn path_truth(&self, truth: &mut FlowTruth) {
        truth.rtt_ns = self.rtt();
        truth.rtt_probe_client_ns = 2 * self.d[C];
        truth.rtt_probe_server_ns = 2 * self.d[S];
    }

    /// The negotiated MSS.
    fn mss(&self) -> u16 {
        self.sides[C].mss.min(self.sides[S].mss)
    }

    /// The client's SYN at (about) `t0`; returns its capture time.
    fn syn(&mut self, t0: u64) -> u64 {
        let isn_c = self.sides[C].isn;
        let t = self.ctl(C, t0, SYN, isn_c);
        self.sides[C].snd_nxt = isn_c.wrapping_add(1);
        self.sides[S].rcv_nxt = isn_c.wrapping_add(1);
        t
    }

    /// The rest of the handshake after the SYN captured at `t`: the server's SYN/ACK
    /// and the client's ACK. Returns the ACK's capture time.
    fn accept(&mut self, t: u64) -> u64 {
        let isn_s = self.sides[S].isn;
        let t_synack = t + 2 * self.d[S] + self.rng.gen_range(10 * US..200 * US);
        let t = self.ctl(S, t_synack, SYN | ACK, isn_s);
        self.sides[S].snd_nxt = isn_s.wrapping_add(1);
        self.sides[C].rcv_nxt = isn_s.wrapping_add(1);
        self.established = true;
        let t_ack = t + 2 * self.d[C] + self.rng.gen_range(5 * US..50 * US);
        self.ack(C, t_ack, None)
    }

    /// One exchange: a request of about `req` bytes leaves the client at `t_next` (the
    /// ACK it still owes for `prev`, the previous response, goes first if the
    /// delayed-ACK timer fires before), then the response of about `resp` bytes after
    /// the server's think time. Returns how the response was received.
    fn exchange(&mut self, req: usize, resp: usize, t_next: u64, prev: Option<Done>) -> Done {
        let req = self.message(C, req);
        if let Some(prev) = prev {
            self.settle(C, prev, t_next);
        }
        let done = self.transfer(C, &req, t_next);
        let server_think = match self.app {
            App::Ssh => self.rng.gen_range(50 * US..2 * MS),
            _ => log_uniform(&mut self.rng, 100 * US, 100 * MS),
        };
        let t_resp = done.t + 2 * self.d[S] + server_think;
        self.settle(S, done, t_resp);
        let resp = self.message(S, resp);
        self.transfer(S, &resp, t_resp)
    }

    /// The close of a connection whose last response was received as `last`: by
    /// `closer`, `idle` after it. Decides times only; [`TcpGen::close`] emits.
    fn closing(&self, last: Done, closer: usize, idle: u64, how: Shut) -> Closing {
        let t_close = if closer == C { last.t + 2 * self.d[C] + idle } else { last.t + idle };
        let t_client_next = if closer == C { t_close } else { t_close + 2 * self.d[C] };
        Closing { closer, t_close, t_client_next, how }
    }

    /// Emits the close planned by `c`. The client's owed ACK of the last response
    /// rides on its next packet when that comes soon enough.
    fn close(&mut self, last: Done, c: &Closing) {
        let (closer, other) = (c.closer, 1 - c.closer);
        match c.how {
            Shut::Fin => {
                self.settle(C, last, c.t_client_next);
                let seq = self.sides[closer].snd_nxt;
                let t = self.ctl(closer, c.t_close, FIN | ACK, seq);
                self.sides[closer].snd_nxt = seq.wrapping_add(1);
                self.sides[other].rcv_nxt = seq.wrapping_add(1);
                let t_reply = t + 2 * self.d[other] + self.rng.gen_range(10 * US..200 * US);
                let t_fin = if self.rng.gen_bool(0.5) {
                    t_reply // FIN piggybacked on the ACK
                } else {
                    let t = self.ack(other, t_reply, None);
                    t + log_uniform(&mut self.rng, 50 * US, 20 * MS)
                };
                let seq = self.sides[other].snd_nxt;
                let t = self.ctl(other, t_fin, FIN | ACK, seq);
                self.sides[other].snd_nxt = seq.wrapping_add(1);
                self.sides[closer].rcv_nxt = seq.wrapping_add(1);
                let t_last_ack = t + 2 * self.d[closer] + self.rng.gen_range(10 * US..100 * US);
                self.ack(closer, t_last_ack, None);
            }
            Shut::Rst => {
                self.settle(C, last, c.t_client_next);
                let seq = self.sides[closer].snd_nxt;
                self.ctl(closer, c.t_close, RST | ACK, seq);
            }
            Shut::Open => self.settle(C, last, u64::MAX),
        }
    }

    fn rtt(&self) -> u64 {
        2 * (self.d[C] + self.d[S])
    }

    /// Emits a segment without payload (SYN, FIN, RST, ...) from `dir` at (about) `t`;
    /// returns its capture time.
    fn ctl(&mut self, dir: usize, t: u64, flags: u8, seq: u32) -> u64 {
        let s = Seg { flags, seq, payload: &[], class: Class::Normal, sack: None };
        self.seg(dir, t, s)
    }

    /// Emits one TCP segment from `dir` at (about) `t`; returns its capture time.
    fn seg(&mut self, dir: usize, t: u64, s: Seg<'_>) -> u64 {
        let Seg { flags, seq, payload, class, sack } = s;
        let t = self.em.at(dir, t);
        let peer = 1 - dir;
        let me = &self.sides[dir];
        let tsval = me.ts_base.wrapping_add((t / MS) as u32);
        let mut opts: Vec<u8> = Vec::with_capacity(40);
        let reject = flags & RST != 0 && !self.established;
        if flags & SYN != 0 {
            let m = me.mss.to_be_bytes();
            if self.ts {
                // Linux order: MSS, SACK_PERM, TS, NOP, WS.
                opts.extend_from_slice(&[2, 4, m[0], m[1], 4, 2, 8, 10]);
                opts.extend_from_slice(&tsval.to_be_bytes());
                opts.extend_from_slice(&me.ts_recent.to_be_bytes());
                opts.extend_from_slice(&[1, 3, 3, me.wscale]);
            } else {
                // Windows order: MSS, NOP, WS, NOP, NOP, SACK_PERM.
                opts.extend_from_slice(&[2, 4, m[0], m[1], 1, 3, 3, me.wscale, 1, 1, 4, 2]);
            }
        } else if !reject {
            if self.ts {
                opts.extend_from_slice(&[1, 1, 8, 10]);
                opts.extend_from_slice(&tsval.to_be_bytes());
                opts.extend_from_slice(&me.ts_recent.to_be_bytes());
            }
            if let Some((l, r)) = sack {
                opts.extend_from_slice(&[1, 1, 5, 10]);
                opts.extend_from_slice(&l.to_be_bytes());
                opts.extend_from_slice(&r.to_be_bytes());
            }
        }
        let window = if flags & SYN != 0 {
            me.syn_win
        } else if flags & RST != 0 {
            0
        } else {
            me.win
        };
        let ack = if flags & ACK != 0 { me.rcv_nxt } else { 0 };
        let hl = 20 + opts.len();
        let mut l4 = Vec::with_capacity(hl + payload.len());
        l4.extend_from_slice(&me.port.to_be_bytes());
        l4.extend_from_slice(&self.sides[peer].port.to_be_bytes());
        l4.extend_from_slice(&seq.to_be_bytes());
        l4.extend_from_slice(&ack.to_be_bytes());
        l4.push(((hl / 4) as u8) << 4);
        l4.push(flags);
        l4.extend_from_slice(&window.to_be_bytes());
        l4.extend_from_slice(&[0, 0, 0, 0]); // checksum, urgent pointer
        l4.extend_from_slice(&opts);
        l4.extend_from_slice(payload);
        let l3 = L3 {
            src_mac: me.mac,
            dst_mac: self.sides[peer].mac,
            src: me.ip,
            dst: self.sides[peer].ip,
            ttl: me.ttl,
            ip_id: me.ip_id,
            df: true,
            flow_label: me.flow_label,
        };
        let f = frame(&l3, PROTO_TCP, l4, 16);
        self.sides[dir].ip_id = self.sides[dir].ip_id.wrapping_add(1);
        if self.ts && flags & RST == 0 {
            self.sides[peer].ts_recent = tsval;
        }
        self.em.push(dir, t, class, flags, payload.len(), f);
        t
    }

    /// An ACK from `dir` at `t`, optionally with one SACK block.
    fn ack(&mut self, dir: usize, t: u64, sack: Option<(u32, u32)>) -> u64 {
        let seq = self.sides[dir].snd_nxt;
        self.seg(dir, t, Seg { flags: ACK, seq, payload: &[], class: Class::Normal, sack })
    }

    /// Serialization time of a segment with `len` payload bytes on the sender's link
    /// (headers, preamble and inter-frame gap included).
    fn gap(&self, len: usize) -> u64 {
        (len as u64 + 90) * self.ns_per_byte
    }

    /// Sends `msg` from `from`, starting at probe time `t0`, with slow start, delayed
    /// ACKs every two segments, losses and retransmissions. The ACK of a message's odd
    /// last segment is left owed (see [`TcpGen::settle`]), as a delayed ACK that the
    /// receiver's next packet may carry.
    fn transfer(&mut self, from: usize, msg: &[u8], t0: u64) -> Done {
        let to = 1 - from;
        let rtt = self.rtt();
        let d_rcv = self.d[to];
        let mss = self.mss_eff;
        let n = msg.len().div_ceil(mss);
        let base = self.sides[from].snd_nxt;
        let seq_of = |i: usize| base.wrapping_add((i * mss) as u32);
        let end_of = |i: usize| base.wrapping_add(((i + 1) * mss).min(msg.len()) as u32);

        let mut received = vec![false; n];
        let mut rcv_next = 0usize; // receiver: first segment not yet in order
        let mut next_new = 0usize;
        let mut retx: Vec<(usize, bool)> = Vec::new(); // (segment, original captured)
        let mut t_flight = t0;
        let mut cwnd = self.cwnd[from].max(1);
        let mut complete_t = t0;
        let mut owed = false;

        while next_new < n || !retx.is_empty() {
            let mut flight: Vec<(usize, Option<bool>)> = retx.drain(..).map(|(i, c)| (i, Some(c))).collect();
            while flight.len() < cwnd as usize && next_new < n {
                flight.push((next_new, None));
                next_new += 1;
            }
            // Decide losses back to front: a segment lost before the probe needs a
            // later captured one, or its retransmission would not fill a hole there.
            let mut fate = vec![Fate::Ok; flight.len()];
            let mut later_captured = false;
            for k in (0..flight.len()).rev() {
                if flight[k].1.is_none() && self.rng.gen_bool(self.loss) {
                    fate[k] = if later_captured && self.rng.gen_bool(0.3) {
                        Fate::LostBeforeProbe
                    } else {
                        Fate::LostAfterProbe
                    };
                }
                if fate[k] != Fate::LostBeforeProbe {
                    later_captured = true;
                }
            }

            let mut t = t_flight;
            let mut pending = 0u32; // in-order segments not yet ACKed
            let mut last_in_order = t;
            let mut lost: Vec<(usize, bool)> = Vec::new();
            let mut dupacks = 0u32;
            for (k, &(i, rtx)) in flight.iter().enumerate() {
                let off = i * mss;
                let len = mss.min(msg.len() - off);
                let flags = if off + len == msg.len() { ACK | PSH } else { ACK };
                let class = match rtx {
                    None => Class::Normal,
                    Some(true) => Class::Retx,
                    Some(false) => Class::Ooo,
                };
                let tp = if fate[k] == Fate::LostBeforeProbe {
                    t
                } else {
                    let payload = &msg[off..off + len];
                    self.seg(from, t, Seg { flags, seq: seq_of(i), payload, class, sack: None })
                };
                t = tp + self.gap(len);
                match fate[k] {
                    Fate::LostAfterProbe => lost.push((i, true)),
                    Fate::LostBeforeProbe => lost.push((i, false)),
                    Fate::Ok => {
                        received[i] = true;
                        let t_ack = tp + 2 * d_rcv + self.rng.gen_range(0..30 * US);
                        if i == rcv_next {
                            let filled_hole = i + 1 < n && received[i + 1];
                            while rcv_next < n && received[rcv_next] {
                                rcv_next += 1;
                            }
                            self.sides[to].rcv_nxt = if rcv_next == n { end_of(n - 1) } else { seq_of(rcv_next) };
                            if rcv_next == n {
                                complete_t = tp;
                            }
                            pending += 1;
                            last_in_order = tp;
                            // ACK every second segment, and at once when a hole
                            // closes; the odd last one of the message waits.
                            if pending >= 2 || filled_hole {
                                self.ack(to, t_ack, None);
                                pending = 0;
                            } else if rcv_next == n {
                                owed = true;
                                pending = 0;
                            }
                        } else if i > rcv_next {
                            // Out of order at the receiver: immediate duplicate ACK.
                            let (mut l, mut r) = (i, i);
                            while l > rcv_next && received[l - 1] {
                                l -= 1;
                            }
                            while r + 1 < n && received[r + 1] {
                                r += 1;
                            }
                            self.ack(to, t_ack, Some((seq_of(l), end_of(r))));
                            if !lost.is_empty() {
                                dupacks += 1;
                            }
                        }
                    }
                }
            }
            if pending > 0 {
                // The flight's odd segment: a quick delayed ACK.
                let t_ack = last_in_order + 2 * d_rcv + self.rng.gen_range(100 * US..500 * US);
                self.ack(to, t_ack, None);
            }
            // The sender is ACK-clocked: the next flight leaves about one RTT after this
            // one, but never before the link is free.
            let next = (t_flight + rtt + self.gap(mss)).max(t);
            if lost.is_empty() {
                cwnd = (cwnd * 2).min(self.max_cwnd);
                t_flight = next;
            } else if dupacks >= 3 {
                cwnd = (cwnd / 2).max(2); // fast retransmit, fast recovery
                t_flight = next;
            } else {
                cwnd = 1; // retransmission timeout
                t_flight = t + 200 * MS + rtt;
            }
            retx = lost;
        }
        self.cwnd[from] = cwnd;
        self.sides[from].snd_nxt = base.wrapping_add(msg.len() as u32);
        self.sides[to].rcv_nxt = self.sides[from].snd_nxt;
        Done { t: complete_t, owed }
    }

    /// Pays the ACK owed by the receiver of `done`: a pure ACK when the delayed-ACK
    /// timer (40 ms) fires before the receiver's next packet at `next_t`, which
    /// otherwise carries it.
    fn settle(&mut self, rcv: usize, done: Done, next_t: u64) {
        if let Some(t) = self.settle_at(rcv, done, next_t) {
            self.ack(rcv, t, None);
        }
    }

    /// When [`TcpGen::settle`] sends its pure ACK, if it does.
    fn settle_at(&self, rcv: usize, done: Done, next_t: u64) -> Option<u64> {
        let t_delack = done.t + 2 * self.d[rcv] + DELACK;
        (done.owed && t_delack < next_t).then_some(t_delack)
    }

    /// Application content of a message of about `size` bytes from `from`: real
    /// protocol framing (HTTP/1.1 text, TLS 1.3 hellos with SNI then application-data
    /// records, SSH banners and key exchange then encrypted packets) around random
    /// bytes, so dissectors and DPI see plausible traffic.
    fn message(&mut self, from: usize, size: usize) -> Vec<u8> {
        let nth = self.msgs[from];
        self.msgs[from] += 1;
        let mut m = Vec::with_capacity(size + 64);
        match self.app {
            App::Http if from == C && size > 1024 => {
                let path = format!("/{}/{}", word(&mut self.rng), word(&mut self.rng));
                let hdr = format!(
                    "POST {path} HTTP/1.1\r\nHost: {}\r\nUser-Agent: tapstat-lab/0.1\r\nContent-Type: application/octet-stream\r\nContent-Length: ",
                    self.host
                );
                let body = size.saturating_sub(hdr.len() + 12).max(1);
                m.extend_from_slice(format!("{hdr}{body}\r\n\r\n").as_bytes());
                self.random(&mut m, body);
            }
            App::Http if from == C => {
                let path = format!("/{}/{}{}.js", word(&mut self.rng), word(&mut self.rng), self.rng.gen_range(0..100));
                m.extend_from_slice(
                    format!(
                        "GET {path} HTTP/1.1\r\nHost: {}\r\nUser-Agent: tapstat-lab/0.1\r\nAccept: */*\r\n",
                        self.host
                    )
                    .as_bytes(),
                );
                // Pad with a header to the drawn size, as cookies would.
                if m.len() + 16 < size {
                    m.extend_from_slice(b"Cookie: id=");
                    while m.len() < size - 4 {
                        m.push(b'a' + self.rng.gen_range(0..26u8));
                    }
                    m.extend_from_slice(b"\r\n");
                }
                m.extend_from_slice(b"\r\n");
            }
            App::Http => {
                let hdr = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: ";
                let body = size.saturating_sub(hdr.len() + 12).max(1);
                m.extend_from_slice(format!("{hdr}{body}\r\n\r\n").as_bytes());
                self.random(&mut m, body);
            }
            App::Tls if nth == 0 && from == C => {
                let hello = self.client_hello(size.clamp(260, 600) - 9);
                tls_record(&mut m, 0x16, &hello);
                m[2] = 0x01; // a ClientHello's record says TLS 1.0, for old middleboxes
            }
            App::Tls if nth == 0 => {
                let hello = self.server_hello();
                tls_record(&mut m, 0x16, &hello);
                tls_record(&mut m, 0x14, &[1]); // ChangeCipherSpec (compatibility mode)
                let rest = size.saturating_sub(m.len()).max(32);
                self.app_data(&mut m, rest);
            }
            App::Tls => self.app_data(&mut m, size),
            App::Ssh => match (nth, from) {
                (0, C) => m.extend_from_slice(b"SSH-2.0-OpenSSH_9.6\r\n"),
                (0, _) => m.extend_from_slice(b"SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n"),
                (1, _) => {
                    let mut p = vec![20u8]; // KEXINIT
                    self.random(&mut p, 16); // cookie
                    for list in [
                        "curve25519-sha256",
                        "ssh-rsa",
                        "chacha20-poly1305@openssh.com",
                        "chacha20-poly1305@openssh.com",
                        "hmac-sha2-256",
                        "hmac-sha2-256",
                        "none",
                        "none",
                        "",
                        "",
                    ] {
                        ssh_string(&mut p, list.as_bytes());
                    }
                    p.extend_from_slice(&[0, 0, 0, 0, 0]); // first_kex_packet_follows, reserved
                    self.ssh_packet(&mut m, &p);
                }
                (2, C) => {
                    let mut p = vec![30u8]; // KEX_ECDH_INIT: Q_C
                    let q = self.random_vec(32);
                    ssh_string(&mut p, &q);
                    self.ssh_packet(&mut m, &p);
                }
                (2, _) => {
                    let mut p = vec![31u8]; // KEX_ECDH_REPLY: K_S, Q_S, signature
                                            // An RSA host key and "ssh-rsa" signature: Wireshark decodes
                                            // those fully (it flags Ed25519/ECDSA/rsa-sha2 signatures as
                                            // undecoded, on real captures too).
                    let mut key = Vec::new();
                    ssh_string(&mut key, b"ssh-rsa");
                    ssh_string(&mut key, &[0x01, 0x00, 0x01]); // e = 65537
                    let mut n = vec![0u8]; // mpint: a leading zero keeps it positive
                    self.random(&mut n, 256);
                    n[1] |= 0x80;
                    ssh_string(&mut key, &n);
                    ssh_string(&mut p, &key);
                    let q = self.random_vec(32);
                    ssh_string(&mut p, &q);
                    let mut sig = Vec::new();
                    ssh_string(&mut sig, b"ssh-rsa");
                    let mut k = self.random_vec(256);
                    k[0] &= 0x7f; // a positive mpint
                    ssh_string(&mut sig, &k);
                    ssh_string(&mut p, &sig);
                    self.ssh_packet(&mut m, &p);
                    self.ssh_packet(&mut m, &[21]); // NEWKEYS
                }
                (n, _) => {
                    if n == 3 && from == C {
                        self.ssh_packet(&mut m, &[21]); // NEWKEYS
                    }
                    // Encrypted packets: length, ciphertext, 16-byte tag, all opaque.
                    let n = size.max(36).div_ceil(8) * 8 + 4;
                    self.random(&mut m, n);
                }
            },
        }
        m
    }

    /// Appends `n` random bytes.
    fn random(&mut self, m: &mut Vec<u8>, n: usize) {
        let at = m.len();
        m.resize(at + n, 0);
        self.rng.fill_bytes(&mut m[at..]);
    }

    fn random_vec(&mut self, n: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(n);
        self.random(&mut v, n);
        v
    }

    /// TLS application-data records (at most 16 KiB of ciphertext each) totalling
    /// about `size` bytes.
    fn app_data(&mut self, m: &mut Vec<u8>, size: usize) {
        let mut left = size.max(22);
        while left > 0 {
            let body = left.saturating_sub(5).clamp(17, 16384 + 256);
            let rec = self.random_vec(body);
            tls_record(m, 0x17, &rec);
            left = left.saturating_sub(body + 5);
        }
    }

    /// A TLS 1.3 ClientHello handshake message with SNI and ALPN, padded (padding
    /// extension) to about `size` bytes.
    fn client_hello(&mut self, size: usize) -> Vec<u8> {
        let mut b = vec![0x03, 0x03];
        self.random(&mut b, 32); // random
        b.push(32);
        self.random(&mut b, 32); // legacy session id
        let suites: [u16; 5] = [0x1301, 0x1302, 0x1303, 0xc02b, 0xc02f];
        b.extend_from_slice(&((suites.len() * 2) as u16).to_be_bytes());
        for cs in suites {
            b.extend_from_slice(&cs.to_be_bytes());
        }
        b.extend_from_slice(&[1, 0]); // compression: null
        let mut ext = Vec::new();
        let host = self.host.clone();
        let mut sni = Vec::new();
        sni.extend_from_slice(&((host.len() + 3) as u16).to_be_bytes());
        sni.push(0); // host_name
        sni.extend_from_slice(&(host.len() as u16).to_be_bytes());
        sni.extend_from_slice(host.as_bytes());
        tls_ext(&mut ext, 0x0000, &sni);
        tls_ext(&mut ext, 0x000a, &[0, 4, 0x00, 0x1d, 0x00, 0x17]); // groups: x25519, P-256
        tls_ext(&mut ext, 0x000d, &[0, 6, 0x08, 0x07, 0x04, 0x03, 0x08, 0x04]); // sig algs
        tls_ext(&mut ext, 0x0010, b"\x00\x0c\x02h2\x08http/1.1"); // ALPN
        tls_ext(&mut ext, 0x002b, &[4, 0x03, 0x04, 0x03, 0x03]); // versions: 1.3, 1.2
        let mut ks = vec![0, 36, 0x00, 0x1d, 0, 32];
        self.random(&mut ks, 32);
        tls_ext(&mut ext, 0x0033, &ks); // key share
                                        // 4 bytes of handshake header, 2 of extensions length, 4 of padding header.
        let used = 4 + b.len() + 2 + ext.len() + 4;
        if size > used {
            tls_ext(&mut ext, 0x0015, &vec![0; size - used]);
        }
        b.extend_from_slice(&(ext.len() as u16).to_be_bytes());
        b.extend_from_slice(&ext);
        handshake(1, &b)
    }

    /// A TLS 1.3 ServerHello handshake message.
    fn server_hello(&mut self) -> Vec<u8> {
        let mut b = vec![0x03, 0x03];
        self.random(&mut b, 32);
        b.push(32);
        self.random(&mut b, 32);
        b.extend_from_slice(&[0x13, 0x01, 0]); // TLS_AES_128_GCM_SHA256, null compression
        let mut ext = Vec::new();
        tls_ext(&mut ext, 0x002b, &[0x03, 0x04]);
        let mut ks = vec![0x00, 0x1d, 0, 32];
        self.random(&mut ks, 32);
        tls_ext(&mut ext, 0x0033, &ks);
        b.extend_from_slice(&(ext.len() as u16).to_be_bytes());
        b.extend_from_slice(&ext);
        handshake(2, &b)
    }

    /// An unencrypted SSH binary packet (RFC 4253 §6): length, padding length,
    /// payload, 4–11 bytes of padding to a multiple of 8.
    fn ssh_packet(&mut self, m: &mut Vec<u8>, payload: &[u8]) {
        let mut pad = 8 - (5 + payload.len()) % 8;
        if pad < 4 {
            pad += 8;
        }
        m.extend_from_slice(&((1 + payload.len() + pad) as u32).to_be_bytes());
        m.push(pad as u8);
        m.extend_from_slice(payload);
        self.random(m, pad);
    }
}

fn tls_record(m: &mut Vec<u8>, ctype: u8, body: &[u8]) {
    m.push(ctype);
    m.extend_from_slice(&[0x03, 0x03]);
    m.extend_from_slice(&(body.len() as u16).to_be_bytes());
    m.extend_from_slice(body);
}

fn tls_ext(ext: &mut Vec<u8>, typ: u16, data: &[u8]) {
    ext.extend_from_slice(&typ.to_be_bytes());
    ext.extend_from_slice(&(data.len() as u16).to_be_bytes());
    ext.extend_from_slice(data);
}

fn handshake(typ: u8, body: &[u8]) -> Vec<u8> {
    let mut h = vec![typ];
    h.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
    h.extend_from_slice(body);
    h
}

fn ssh_string(m: &mut Vec<u8>, s: &[u8]) {
    m.extend_from_slice(&(s.len() as u32).to_be_bytes());
    m.extend_from_slice(s);
}

const WORDS: [&str; 48] = [
    "alpha", "amber", "apple", "arrow", "atlas", "beacon", "birch", "blue", "bolt", "cedar", "cloud", "coral", "delta",
    "echo", "ember", "falcon", "fern", "forge", "gamma", "glacier", "harbor", "hazel", "iris", "jade", "juniper",
    "kite", "lantern", "lumen", "maple", "meadow", "nimbus", "north", "oak", "onyx", "orbit", "pine", "quartz",
    "raven", "river", "sage", "signal", "spruce", "stone", "tide", "umber", "vertex", "willow", "zephyr",
];
const TLDS: [&str; 5] = ["com", "net", "org", "io", "example"];

fn word(rng: &mut ChaCha8Rng) -> &'static str {
    WORDS[rng.gen_range(0..WORDS.len())]
}

/// A random-looking host name from the word list.
fn host_name(rng: &mut ChaCha8Rng) -> String {
    let tld = TLDS[rng.gen_range(0..TLDS.len())];
    match rng.gen_range(0..4) {
        0 => format!("www.{}{}.{tld}", word(rng), word(rng)),
        1 => format!("api.{}-{}.{tld}", word(rng), word(rng)),
        2 => format!("{}.cdn.{}.{tld}", word(rng), word(rng)),
        _ => format!("{}{}.{tld}", word(rng), rng.gen_range(1..100)),
    }
}

fn tcp_flow(cfg: &SynthConfig, plan: &Plan, client: &Host, server: &Host, em: Emitter) -> (FlowTruth, Emitter) {
    let mut rng = ChaCha8Rng::seed_from_u64(plan.seed);
    let (cip, sip) = if plan.v6 {
        (IpAddr::V6(client.v6), IpAddr::V6(server.v6))
    } else {
        (IpAddr::V4(client.v4), IpAddr::V4(server.v4))
    };
    let sport = if plan.bulk {
        443
    } else {
        match rng.gen_range(0..100) {
            0..=59 => 443,
            60..=79 => 80,
            80..=86 => 8080,
            87..=89 => 22,
            90..=95 => 8443,
            _ => 993,
        }
    };
    let kind = if plan.bulk {
        FlowKind::Tcp
    } else {
        match rng.gen_range(0..1000) {
            0..=19 => FlowKind::TcpRejected,
            20..=34 => FlowKind::TcpUnanswered,
            _ => FlowKind::Tcp,
        }
    };
    let mut truth = FlowTruth::new(PROTO_TCP, kind, (cip, plan.port), (sip, sport));
    let ends = [(client, cip, plan.port), (server, sip, sport)];
    let mut g = TcpGen::new(rng, em, ends, probability(cfg.loss_rate));
    g.path_truth(&mut truth);

    let t = g.syn(plan.start);
    match kind {
        FlowKind::TcpRejected => {
            let t_rst = t + 2 * g.d[S] + g.rng.gen_range(10 * US..100 * US);
            g.ctl(S, t_rst, RST | ACK, 0);
            return (truth, g.em);
        }
        FlowKind::TcpUnanswered => {
            // Linux's initial RTO: the SYN goes again after 1 s (same sequence number).
            let isn_c = g.sides[C].isn;
            g.ctl(C, t + SEC, SYN, isn_c);
            return (truth, g.em);
        }
        _ => {}
    }
    truth.mss = g.mss();
    truth.timestamps = g.ts;
    let t = g.accept(t);

    // Exchanges: a request, then the response after the server's think time.
    let mut t_next = t + g.rng.gen_range(10 * US..2 * MS);
    let cap = cfg.max_response_bytes.max(64) as u64;
    let (exchanges, upload) = match g.app {
        App::Ssh => (g.rng.gen_range(4..=12), false),
        _ if plan.bulk => (1, false),
        _ => ([1, 1, 1, 1, 1, 1, 2, 3][g.rng.gen_range(0..8)], g.rng.gen_bool(0.03)),
    };
    // An upload comes after the first exchange: a TLS client must say hello first.
    let exchanges = if upload { exchanges.max(2) } else { exchanges };
    let mut last = Done { t, owed: false };
    for e in 0..exchanges {
        let (req, resp) = match g.app {
            App::Ssh => (g.rng.gen_range(36..=180), g.rng.gen_range(36..=600)),
            _ if plan.bulk => {
                let b = cfg.bulk_bytes.max(2) as u64;
                (g.rng.gen_range(150..=450), g.rng.gen_range(b / 2..=b))
            }
            _ if upload && e == exchanges - 1 => (heavy_tail(&mut g.rng, 1024, 0.5, cap), g.rng.gen_range(150..=600)),
            _ => (g.rng.gen_range(150..=450), heavy_tail(&mut g.rng, 150, 0.4, cap)),
        };
        last = g.exchange(req as usize, resp as usize, t_next, (e > 0).then_some(last));
        let client_think = match g.app {
            App::Ssh => g.rng.gen_range(100 * MS..2 * SEC),
            _ => log_uniform(&mut g.rng, 200 * US, 1500 * MS),
        };
        t_next = last.t + 2 * g.d[C] + client_think;
    }

    // Close: FIN both ways (most), RST (~5%), or left open (~4%).
    let closer = if g.rng.gen_bool(0.6) { C } else { S };
    let idle = log_uniform(&mut g.rng, MS, 5 * SEC);
    let how = match if plan.bulk { 0 } else { g.rng.gen_range(0..100) } {
        0..=90 => Shut::Fin,
        91..=95 => Shut::Rst,
        _ => Shut::Open,
    };
    let closing = g.closing(last, closer, idle, how);
    g.close(last, &closing);
    (truth, g.em)
}

/// Encodes a DNS name as labels.
fn dns_name(name: &str, out: &mut Vec<u8>) {
    for label in name.split('.') {
        out.push(label.len() as u8);
        out.extend_from_slice(label.as_bytes());
    }
    out.push(0);
}

fn dns_flow(plan: &Plan, client: &Host, mut em: Emitter) -> (FlowTruth, Emitter) {
    let mut rng = ChaCha8Rng::seed_from_u64(plan.seed);
    // The local resolver (sub-ms away) or a remote one.
    let local = rng.gen_bool(0.6);
    let (cip, sip) = match (plan.v6, local) {
        (false, true) => (IpAddr::V4(client.v4), IpAddr::V4(Ipv4Addr::new(10, 0, 0, 53))),
        (false, false) => (IpAddr::V4(client.v4), IpAddr::V4(Ipv4Addr::new(192, 0, 2, 53))),
        (true, true) => (IpAddr::V6(client.v6), IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 1, 0, 0, 0, 0x53))),
        (true, false) => (IpAddr::V6(client.v6), IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0x53, 0, 0, 0, 0, 0x53))),
    };
    let answered = rng.gen_bool(0.9);
    let kind = if answered { FlowKind::Dns } else { FlowKind::DnsUnanswered };
    let mut truth = FlowTruth::new(PROTO_UDP, kind, (cip, plan.port), (sip, 53));
    let rtt = if local { log_uniform(&mut rng, 150 * US, 2 * MS) } else { log_uniform(&mut rng, 5 * MS, 80 * MS) };
    let d_c = (rtt / 20).max(20 * US);
    truth.rtt_ns = rtt.max(2 * d_c + 40 * US);
    truth.rtt_probe_client_ns = 2 * d_c;
    truth.rtt_probe_server_ns = truth.rtt_ns - 2 * d_c;

    let id: u16 = rng.gen();
    let aaaa = rng.gen_bool(if plan.v6 { 0.6 } else { 0.3 });
    let qtype: u16 = if aaaa { 28 } else { 1 };
    let edns = rng.gen_bool(0.8);
    let name = host_name(&mut rng);
    let mut question = Vec::with_capacity(64);
    dns_name(&name, &mut question);
    question.extend_from_slice(&qtype.to_be_bytes());
    question.extend_from_slice(&1u16.to_be_bytes()); // IN
                                                     // OPT pseudo-record: root name, type 41, UDP size 1232, no flags, no data.
    const OPT: [u8; 11] = [0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0];

    let header = |flags: u16, an: u16| {
        let mut h = Vec::with_capacity(12);
        for v in [id, flags, 1, an, 0, edns as u16] {
            h.extend_from_slice(&v.to_be_bytes());
        }
        h
    };
    let mut query = header(0x0100, 0); // RD
    query.extend_from_slice(&question);
    if edns {
        query.extend_from_slice(&OPT);
    }

    let (c_mac, s_mac) = (client.mac, GATEWAY_MAC);
    let udp = |sport: u16, dport: u16, payload: &[u8]| {
        let mut l4 = Vec::with_capacity(8 + payload.len());
        l4.extend_from_slice(&sport.to_be_bytes());
        l4.extend_from_slice(&dport.to_be_bytes());
        l4.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        l4.extend_from_slice(&[0, 0]);
        l4.extend_from_slice(payload);
        l4
    };
    let l3c = L3 {
        src_mac: c_mac,
        dst_mac: s_mac,
        src: cip,
        dst: sip,
        ttl: client.ttl,
        ip_id: rng.gen(),
        df: false,
        flow_label: rng.gen_range(0..0x10_0000),
    };
    let t = em.at(C, plan.start);
    em.push(C, t, Class::Normal, 0, query.len(), frame(&l3c, PROTO_UDP, udp(plan.port, 53, &query), 6));
    if !answered {
        return (truth, em);
    }

    let nxdomain = rng.gen_bool(0.05);
    let mut resp = header(if nxdomain { 0x8183 } else { 0x8180 }, !nxdomain as u16);
    resp.extend_from_slice(&question);
    if !nxdomain {
        resp.extend_from_slice(&[0xc0, 0x0c]); // pointer to the question's name
        resp.extend_from_slice(&qtype.to_be_bytes());
        resp.extend_from_slice(&1u16.to_be_bytes());
        resp.extend_from_slice(&rng.gen_range(30..=3600u32).to_be_bytes());
        if aaaa {
            resp.extend_from_slice(&16u16.to_be_bytes());
            let a = Ipv6Addr::new(0x2001, 0xdb8, rng.gen(), rng.gen(), 0, 0, 0, rng.gen_range(1..0xffff));
            resp.extend_from_slice(&a.octets());
        } else {
            resp.extend_from_slice(&4u16.to_be_bytes());
            let nets = [[192, 0, 2], [198, 51, 100], [203, 0, 113]];
            let n = nets[rng.gen_range(0..3)];
            resp.extend_from_slice(&[n[0], n[1], n[2], rng.gen_range(1..=254)]);
        }
    }
    if edns {
        resp.extend_from_slice(&OPT);
    }
    let l3s = L3 {
        src_mac: s_mac,
        dst_mac: c_mac,
        src: sip,
        dst: cip,
        ttl: if local { 64 } else { 64 - rng.gen_range(4..=16u8) },
        ip_id: rng.gen(),
        df: false,
        flow_label: rng.gen_range(0..0x10_0000),
    };
    let t = em.at(S, t + truth.rtt_probe_server_ns + rng.gen_range(0..200 * US));
    em.push(S, t, Class::Normal, 0, resp.len(), frame(&l3s, PROTO_UDP, udp(53, plan.port, &resp), 6));
    (truth, em)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// What the test walker reads back from one frame.
    #[derive(Debug)]
    struct Parsed {
        ts_ns: u64,
        wire: u64,
        proto: u8,
        src: (IpAddr, u16),
        dst: (IpAddr, u16),
        payload: u64,
        tcp_flags: u8,
    }

    fn u16be(b: &[u8], at: usize) -> u16 {
        u16::from_be_bytes([b[at], b[at + 1]])
    }

    /// A minimal pcap reader that checks every header and checksum on the way.
    fn walk(pcap: &[u8]) -> Vec<Parsed> {
        assert_eq!(&pcap[0..4], &0xa1b2_c3d4u32.to_le_bytes());
        assert_eq!(u32::from_le_bytes(pcap[20..24].try_into().unwrap()), 1, "Ethernet");
        let mut out = Vec::new();
        let mut at = 24;
        while at < pcap.len() {
            let r = |o: usize| u32::from_le_bytes(pcap[at + o..at + o + 4].try_into().unwrap());
            let (sec, usec, incl, orig) = (r(0), r(4), r(8) as usize, r(12) as u64);
            assert!(usec < 1_000_000);
            assert_eq!(incl as u64, orig, "never truncated");
            assert!(incl >= 60, "padded to the Ethernet minimum");
            let f = &pcap[at + 16..at + 16 + incl];
            at += 16 + incl;
            let (proto, src, dst, l4) = match u16be(f, 12) {
                0x0800 => {
                    let ip = &f[14..34];
                    assert_eq!(ip[0], 0x45);
                    assert_eq!(fold(sum16(ip)), 0, "IPv4 header checksum");
                    let total = u16be(ip, 2) as usize;
                    assert!(14 + total <= f.len());
                    assert!(f[14 + total..].iter().all(|&b| b == 0), "padding is zeros");
                    let src = IpAddr::from(<[u8; 4]>::try_from(&ip[12..16]).unwrap());
                    let dst = IpAddr::from(<[u8; 4]>::try_from(&ip[16..20]).unwrap());
                    (ip[9], src, dst, &f[34..14 + total])
                }
                0x86dd => {
                    let ip = &f[14..54];
                    assert_eq!(ip[0] >> 4, 6);
                    let len = u16be(ip, 4) as usize;
                    assert_eq!(54 + len, f.len().max(54 + len));
                    let src = IpAddr::from(<[u8; 16]>::try_from(&ip[8..24]).unwrap());
                    let dst = IpAddr::from(<[u8; 16]>::try_from(&ip[24..40]).unwrap());
                    (ip[6], src, dst, &f[54..54 + len])
                }
                other => panic!("ethertype {other:#x}"),
            };
            let (sb, db) = (ip_bytes(src), ip_bytes(dst));
            let pseudo = sum16(&sb) + sum16(&db) + proto as u64 + l4.len() as u64;
            assert_eq!(fold(pseudo + sum16(l4)), 0, "L4 checksum of {proto} {src}->{dst}");
            let (payload, flags) = match proto {
                PROTO_TCP => {
                    let hl = (l4[12] >> 4) as usize * 4;
                    assert!((20..=60).contains(&hl));
                    (l4.len() - hl, l4[13])
                }
                PROTO_UDP => {
                    assert_eq!(u16be(l4, 4) as usize, l4.len());
                    (l4.len() - 8, 0)
                }
                other => panic!("proto {other}"),
            };
            out.push(Parsed {
                ts_ns: sec as u64 * SEC + usec as u64 * US,
                wire: orig,
                proto,
                src: (src, u16be(l4, 0)),
                dst: (dst, u16be(l4, 2)),
                payload: payload as u64,
                tcp_flags: flags,
            });
        }
        assert_eq!(at, pcap.len());
        out
    }

    fn small() -> SynthConfig {
        SynthConfig {
            tcp_flows: 300,
            udp_dns_flows: 100,
            bulk_flows: 1,
            bulk_bytes: 200_000,
            loss_rate: 0.03,
            ..SynthConfig::default()
        }
    }

    #[test]
    fn same_seed_same_bytes_other_seed_other_bytes() {
        let (a, ta) = synthesize(&small());
        let (b, tb) = synthesize(&small());
        assert_eq!(a, b);
        assert_eq!(ta, tb);
        let (c, _) = synthesize(&SynthConfig { seed: 43, ..small() });
        assert_ne!(a, c);
    }

    #[test]
    fn default_capture_matches_its_truth() {
        let cfg = SynthConfig::default();
        let synth = Synth::new(&cfg);
        let pcap = synth.to_pcap_bytes();
        assert_eq!(pcap.len(), synth.pcap_len());
        let truth = synth.truth();
        let pkts = walk(&pcap);
        assert_eq!(pkts.len(), synth.packet_count());

        // A few thousand flows in a few MB over a few minutes.
        assert_eq!(truth.len(), cfg.tcp_flows + cfg.udp_dns_flows);
        assert!(truth.len() >= 2000);
        assert!(pcap.len() < 8_000_000, "pcap is {} bytes", pcap.len());
        assert!(pcap.len() > 1_000_000, "pcap is {} bytes", pcap.len());
        let span = pkts.last().unwrap().ts_ns - pkts[0].ts_ns;
        assert!((120 * SEC..600 * SEC).contains(&span), "span {span}");
        assert!(pkts[0].ts_ns >= cfg.start_ns);

        // Time order.
        assert!(pkts.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns));

        // Totals.
        let total_pkts: u64 = truth.iter().map(FlowTruth::pkts).sum();
        let total_wire: u64 = truth.iter().map(FlowTruth::wire_bytes).sum();
        let total_payload: u64 = truth.iter().map(|f| f.c_payload_bytes + f.s_payload_bytes).sum();
        assert_eq!(total_pkts, pkts.len() as u64);
        assert_eq!(total_wire, pkts.iter().map(|p| p.wire).sum::<u64>());
        assert_eq!(total_payload, pkts.iter().map(|p| p.payload).sum::<u64>());

        // Per flow, matched by 5-tuple (which never repeats within the capture).
        type Key = (u8, (IpAddr, u16), (IpAddr, u16));
        let mut by_key: BTreeMap<Key, usize> = BTreeMap::new();
        for (i, f) in truth.iter().enumerate() {
            assert!(by_key.insert((f.proto, f.client, f.server), i).is_none(), "5-tuple reused");
        }
        let mut seen = vec![(0u64, 0u64, 0u64, 0u64, u64::MAX, 0u64); truth.len()];
        let mut first3: Vec<Vec<(u64, bool, u8)>> = vec![Vec::new(); truth.len()];
        for p in &pkts {
            let (i, c2s) = match by_key.get(&(p.proto, p.src, p.dst)) {
                Some(&i) => (i, true),
                None => (by_key[&(p.proto, p.dst, p.src)], false),
            };
            let s = &mut seen[i];
            if c2s {
                s.0 += 1;
                s.1 += p.wire;
            } else {
                s.2 += 1;
                s.3 += p.wire;
            }
            s.4 = s.4.min(p.ts_ns);
            s.5 = s.5.max(p.ts_ns);
            if first3[i].len() < 3 {
                first3[i].push((p.ts_ns, c2s, p.tcp_flags));
            }
            if p.proto == PROTO_TCP && c2s && p.tcp_flags & (SYN | ACK) == SYN {
                assert!(p.payload == 0);
            }
        }
        // The handshake shows the truth's round trips at the probe: SYN to SYN/ACK is
        // the server side (plus up to 200 µs of server time), SYN/ACK to ACK the
        // client side (plus up to 50 µs), to the microsecond.
        for (f, h) in truth.iter().zip(&first3).filter(|(f, _)| f.handshake_complete) {
            assert_eq!((h[0].1, h[0].2, h[1].1, h[1].2, h[2].1, h[2].2), (true, SYN, false, SYN | ACK, true, ACK));
            let server_side = h[1].0 - h[0].0;
            let client_side = h[2].0 - h[1].0;
            assert!((f.rtt_probe_server_ns..=f.rtt_probe_server_ns + 201 * US).contains(&server_side), "{f:?}");
            assert!((f.rtt_probe_client_ns..=f.rtt_probe_client_ns + 51 * US).contains(&client_side), "{f:?}");
            assert_eq!(f.rtt_ns, f.rtt_probe_client_ns + f.rtt_probe_server_ns);
            assert!((MS..=201 * MS).contains(&f.rtt_ns));
        }
        for (f, s) in truth.iter().zip(&seen) {
            assert_eq!((f.c_pkts, f.c_wire_bytes, f.s_pkts, f.s_wire_bytes), (s.0, s.1, s.2, s.3), "{f:?}");
            assert_eq!((f.first_ns, f.last_ns), (s.4, s.5));
            assert!(f.c_retx_bytes <= f.c_payload_bytes && f.s_retx_bytes <= f.s_payload_bytes);
        }

        // The interesting cases are there.
        let count = |k: FlowKind| truth.iter().filter(|f| f.kind == k).count();
        assert!(count(FlowKind::TcpRejected) > 0);
        assert!(count(FlowKind::TcpUnanswered) > 0);
        assert!(count(FlowKind::DnsUnanswered) > 0);
        assert!(count(FlowKind::Dns) > 0);
        for f in truth {
            match f.kind {
                FlowKind::Tcp => assert!(f.handshake_complete),
                FlowKind::TcpRejected => {
                    assert!(!f.handshake_complete);
                    assert_eq!((f.c_pkts, f.s_pkts, f.closed_by), (1, 1, Close::Rst));
                }
                FlowKind::TcpUnanswered => {
                    assert_eq!((f.c_pkts, f.s_pkts, f.closed_by), (2, 0, Close::None));
                    assert_eq!(f.last_ns - f.first_ns, SEC);
                }
                FlowKind::Dns => assert_eq!((f.c_pkts, f.s_pkts), (1, 1)),
                FlowKind::DnsUnanswered => assert_eq!((f.c_pkts, f.s_pkts), (1, 0)),
            }
        }
        let tcp = || truth.iter().filter(|f| f.kind == FlowKind::Tcp);
        assert!(tcp().filter(|f| f.closed_by == Close::Fin).count() > tcp().count() * 8 / 10);
        assert!(tcp().any(|f| f.closed_by == Close::Rst));
        assert!(tcp().any(|f| f.closed_by == Close::None));
        assert!(truth.iter().any(|f| f.client.0.is_ipv6()));
        let retx: u64 = truth.iter().map(|f| f.c_retx_pkts + f.s_retx_pkts).sum();
        let ooo: u64 = truth.iter().map(|f| f.c_ooo_pkts + f.s_ooo_pkts).sum();
        assert!(retx > 0 && ooo > 0, "retx {retx} ooo {ooo}");
        assert!(truth.iter().any(|f| f.s_payload_bytes >= cfg.bulk_bytes as u64 / 2), "a bulk download");
    }

    #[test]
    fn tcp_sequence_space_is_consistent() {
        // Every captured byte of each direction lies in one contiguous range, which a
        // direction covers fully (lost-before-probe holes are filled later).
        let synth = Synth::new(&small());
        let pcap = synth.to_pcap_bytes();
        type Dir = (IpAddr, u16, IpAddr, u16);
        let mut ranges: BTreeMap<Dir, Vec<(u32, u32)>> = BTreeMap::new();
        let mut at = 24;
        while at < pcap.len() {
            let incl = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().unwrap()) as usize;
            let f = &pcap[at + 16..at + 16 + incl];
            at += 16 + incl;
            let (l4, src, dst) = match u16be(f, 12) {
                0x0800 if f[23] == PROTO_TCP => {
                    let total = u16be(f, 16) as usize;
                    let s = IpAddr::from(<[u8; 4]>::try_from(&f[26..30]).unwrap());
                    let d = IpAddr::from(<[u8; 4]>::try_from(&f[30..34]).unwrap());
                    (&f[34..14 + total], s, d)
                }
                0x86dd if f[20] == PROTO_TCP => {
                    let s = IpAddr::from(<[u8; 16]>::try_from(&f[22..38]).unwrap());
                    let d = IpAddr::from(<[u8; 16]>::try_from(&f[38..54]).unwrap());
                    (&f[54..], s, d)
                }
                _ => continue,
            };
            let hl = (l4[12] >> 4) as usize * 4;
            let len = (l4.len() - hl) as u32;
            if len > 0 {
                let seq = u32::from_be_bytes(l4[4..8].try_into().unwrap());
                ranges.entry((src, u16be(l4, 0), dst, u16be(l4, 2))).or_default().push((seq, len));
            }
        }
        assert!(!ranges.is_empty());
        for segs in ranges.values() {
            let first = segs.iter().map(|s| s.0).min_by_key(|&s| s.wrapping_sub(segs[0].0) as i32).unwrap();
            let mut covered: Vec<(u32, u32)> = segs.iter().map(|&(s, l)| (s.wrapping_sub(first), l)).collect();
            covered.sort();
            let mut end = 0u32;
            for (s, l) in covered {
                assert!(s <= end, "hole in the sequence space");
                end = end.max(s + l);
            }
        }
    }

    #[test]
    fn small_configs_work() {
        for (tcp, dns) in [(0, 0), (1, 0), (0, 1), (3, 2)] {
            let cfg = SynthConfig { tcp_flows: tcp, udp_dns_flows: dns, bulk_flows: 0, ..SynthConfig::default() };
            let (pcap, truth) = synthesize(&cfg);
            assert_eq!(truth.len(), tcp + dns);
            let n = walk(&pcap).len() as u64;
            assert_eq!(n, truth.iter().map(FlowTruth::pkts).sum::<u64>());
        }
    }

    #[test]
    fn write_pcap_writes_the_same_bytes() {
        let cfg = SynthConfig { tcp_flows: 30, udp_dns_flows: 10, ..small() };
        let path = std::env::temp_dir().join(format!("tapstat-lab-synth-{}.pcap", std::process::id()));
        let truth = write_pcap(&path, &cfg).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let (expect, expect_truth) = synthesize(&cfg);
        assert_eq!(bytes, expect);
        assert_eq!(truth, expect_truth);
    }

    #[test]
    fn flood_is_one_syn_per_new_flow_at_the_rate() {
        let path = std::env::temp_dir().join(format!("tapstat-lab-flood-{}.pcap", std::process::id()));
        assert_eq!(write_flood(&path, 2000, 1000, 3).unwrap(), 2000);
        let bytes = std::fs::read(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let pkts = walk(&bytes);
        assert_eq!(pkts.len(), 2000);
        assert!(pkts.iter().all(|p| p.proto == PROTO_TCP && p.tcp_flags == SYN && p.payload == 0));
        let flows: std::collections::HashSet<_> = pkts.iter().map(|p| (p.src, p.dst)).collect();
        assert_eq!(flows.len(), 2000, "every packet a new flow");
        assert_eq!(pkts[1999].ts_ns - pkts[0].ts_ns, 1999 * MS, "1000 packets per second");
    }

    /// Frames tshark must not find: malformed, a bad checksum, or an error. Errors on
    /// segments it calls retransmitted or out-of-order are left out: Wireshark's
    /// reassembly reports "new fragment overlaps old data" for a retransmitted segment
    /// of an already reassembled PDU (as on real captures).
    const TSHARK_BAD: &str = "ip.checksum.status == 0 || tcp.checksum.status == 0 || udp.checksum.status == 0 \
        || ((_ws.malformed || _ws.expert.severity >= error) \
            && !(tcp.analysis.retransmission || tcp.analysis.out_of_order))";

    /// The frames of the capture at `path` that tshark flags (see [`TSHARK_BAD`]), or
    /// `None` when tshark is not installed.
    fn tshark_flags(path: &std::path::Path) -> Option<String> {
        let Ok(out) = std::process::Command::new("tshark").arg("-v").output() else {
            eprintln!("tshark not installed; skipped");
            return None;
        };
        assert!(out.status.success());
        let out = std::process::Command::new("tshark")
            .args(["-n", "-r"])
            .arg(path)
            .args(["-o", "tcp.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE", "-o", "ip.check_checksum:TRUE"])
            .args(["-Y", TSHARK_BAD, "-T", "fields", "-e", "frame.number", "-e", "_ws.expert.message"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "tshark failed: {stderr}");
        Some(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Optional: when tshark is installed, it must read the capture without errors or
    /// malformed packets.
    #[test]
    fn tshark_reads_it_if_installed() {
        let path = std::env::temp_dir().join(format!("tapstat-lab-tshark-{}.pcap", std::process::id()));
        write_pcap(&path, &small()).unwrap();
        let bad = tshark_flags(&path);
        let _ = std::fs::remove_file(&path);
        if let Some(bad) = bad {
            assert!(bad.trim().is_empty(), "tshark flags frames: {bad}");
        }
    }

    #[test]
    fn tshark_reads_the_profiles_if_installed() {
        for p in Profile::ALL {
            let path = std::env::temp_dir().join(format!("tapstat-lab-tshark-{p}-{}.pcap", std::process::id()));
            write_profile(&path, p, 5000, 9).unwrap();
            let bad = tshark_flags(&path);
            let _ = std::fs::remove_file(&path);
            match bad {
                Some(bad) => assert!(bad.trim().is_empty(), "{p}: tshark flags frames: {bad}"),
                None => return,
            }
        }
    }

    fn profile(p: Profile, packets: u64, seed: u64) -> (Vec<u8>, ProfileTruth) {
        let mut v = Vec::new();
        let t = profile_to(&mut v, p, packets, seed).unwrap();
        (v, t)
    }

    type Endpoint = (IpAddr, u16);

    /// Per connection (by 5-tuple, client first): packets, and the SYN, SYN/ACK, FIN
    /// and RST counts, from a walk of the capture.
    fn connections(pkts: &[Parsed]) -> BTreeMap<(Endpoint, Endpoint), [u64; 5]> {
        let mut conns: BTreeMap<_, [u64; 5]> = BTreeMap::new();
        for p in pkts {
            assert_eq!(p.proto, PROTO_TCP, "profiles are TCP only");
            if p.tcp_flags & (SYN | ACK) == SYN {
                assert!(conns.insert((p.src, p.dst), [0; 5]).is_none(), "a 5-tuple is reused");
            }
            let c = match conns.get_mut(&(p.src, p.dst)) {
                Some(c) => c,
                None => conns.get_mut(&(p.dst, p.src)).expect("every packet belongs to a connection opened by a SYN"),
            };
            c[0] += 1;
            c[1] += (p.tcp_flags & (SYN | ACK) == SYN) as u64;
            c[2] += (p.tcp_flags & (SYN | ACK) == SYN | ACK) as u64;
            c[3] += (p.tcp_flags & FIN != 0) as u64;
            c[4] += (p.tcp_flags & RST != 0) as u64;
        }
        conns
    }

    #[test]
    fn profiles_are_complete_connections_in_time_order_as_counted() {
        for p in Profile::ALL {
            let (pcap, truth) = profile(p, 8000, 5);
            let pkts = walk(&pcap);
            assert_eq!(pkts.len() as u64, truth.packets, "{p}");
            assert_eq!(pcap.len() as u64, truth.pcap_bytes, "{p}");
            assert!(pkts.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns), "{p}: time order");
            assert_eq!((pkts[0].ts_ns, pkts[pkts.len() - 1].ts_ns), (truth.first_ns, truth.last_ns));
            assert!((7000..=9000).contains(&truth.packets), "{p}: about the packets asked for: {}", truth.packets);
            let conns = connections(&pkts);
            assert_eq!(conns.len(), truth.flows(), "{p}");
            for c in conns.values() {
                assert_eq!(c[1..], [1, 1, 2, 0], "{p}: handshake, a FIN each way, no RST");
            }
            let mut seen: Vec<u64> = conns.values().map(|c| c[0]).collect();
            let mut told = truth.flow_pkts.clone();
            seen.sort_unstable();
            told.sort_unstable();
            assert_eq!(seen, told, "{p}: packets per connection");
            // Packets with a payload: every connection carries data both ways.
            assert!(pkts.iter().any(|p| p.payload > 1000));
        }
    }

    #[test]
    fn profiles_have_their_shapes() {
        let (_, d) = profile(Profile::Dominant, 20_000, 42);
        assert!(d.largest() * 100 >= d.packets * 80, "dominant: {} of {}", d.largest(), d.packets);
        assert!(d.flows() > 50, "dominant: a background ({} connections)", d.flows());

        let (_, m) = profile(Profile::Many, 20_000, 42);
        assert_eq!(m.flows(), 2000);
        assert!(m.flow_pkts.iter().all(|&n| (8..=16).contains(&n)), "many: about 10 packets each");
        assert!(m.peak_open * 10 >= m.flows() as u64 * 9, "many: nearly all open at once ({})", m.peak_open);

        let (_, b) = profile(Profile::Balanced, 20_000, 42);
        assert_eq!(b.flows(), 64);
        let min = b.flow_pkts.iter().copied().min().unwrap();
        assert!(b.largest() * 10 <= min * 12, "balanced: {min}..{}", b.largest());
        assert_eq!(b.peak_open, 64, "balanced: all open at once");
        for (packets, conns) in [(100, 64), (1_000_000, 250), (2_000_000, 256)] {
            assert_eq!(Schedule::new(Profile::Balanced, packets, 42).left, conns, "one per 4000 packets, 64..=256");
        }
    }

    #[test]
    fn profiles_are_deterministic() {
        for p in Profile::ALL {
            let (a, ta) = profile(p, 3000, 1);
            let (b, tb) = profile(p, 3000, 1);
            assert!(a == b && ta == tb, "{p}: same seed, same bytes");
            let (c, _) = profile(p, 3000, 2);
            assert_ne!(a, c, "{p}: another seed, other bytes");
        }
    }

    #[test]
    fn tiny_profiles_work() {
        for p in Profile::ALL {
            for n in [1, 10, 100] {
                let (pcap, t) = profile(p, n, 3);
                assert_eq!(walk(&pcap).len() as u64, t.packets);
                assert!(t.flows() >= 1);
            }
        }
        assert_eq!("many".parse::<Profile>(), Ok(Profile::Many));
        assert!("most".parse::<Profile>().is_err());
    }
}
