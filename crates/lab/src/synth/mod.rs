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

use std::io::{self, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;

use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

mod payloads;
mod pcap;
mod profiles;
mod tcp;
#[cfg(test)]
mod tests;

pub use profiles::{profile_to, write_profile, Profile, ProfileTruth};

use payloads::{dns_name, host_name};
use pcap::{frame, pcap_header, write_record, L3};
use tcp::{App, Done, Shut, TcpGen};

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
