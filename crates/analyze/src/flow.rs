//! The state of one flow, and the counters common to every protocol.

use crate::stats::{FirstPackets, PktStats};
use crate::tcp::{History, SeqSpace, TcpConn, TcpDir};

use tapstat_decode::{Decoded, Tunnel};

/// Which log a flow belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Tcp,
    Udp,
    /// ICMP, ICMPv6 and every other IP protocol (and fragments whose first was not seen).
    Other,
}

impl Kind {
    /// The kind of the flow that packet `d` belongs to.
    #[inline]
    pub fn of(d: &Decoded) -> Kind {
        // An orphan fragment has no ports to key a TCP or UDP flow by; ports 0 on a
        // real header are a flow like any other (tshark's too).
        let orphan = d.fragment == tapstat_decode::Fragment::Orphan;
        match d.l4 {
            tapstat_decode::L4::Tcp if !orphan => Kind::Tcp,
            tapstat_decode::L4::Udp if !orphan => Kind::Udp,
            _ => Kind::Other,
        }
    }
}

/// How the client (the `c_` side) was chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientRule {
    /// The client sent the first SYN (without ACK) seen.
    Syn,
    /// The first packet seen was a SYN/ACK: the client is its receiver.
    SynAck,
    /// No handshake opened the flow: the client is the sender of the first packet.
    FirstPacket,
    /// A UDP flow whose first packet comes from the port of a service queried by
    /// multicast or broadcast (NBNS 137, mDNS 5353, LLMNR 5355) to another port: an
    /// answer, whose query went to the group address and is a flow of its own, so the
    /// client is the receiver (RFC 4795 §2.1 and RFC 6762 §6.7 answer by unicast to
    /// the querier's port; RFC 1002 §4.2.1.1 likewise).
    AnswerPort,
}

/// The UDP ports of services queried by multicast or broadcast, whose answers come
/// back as a flow of their own ([`ClientRule::AnswerPort`]).
const MULTICAST_QUERY_PORTS: [u16; 3] = [137, 5353, 5355];

impl ClientRule {
    pub fn name(self) -> &'static str {
        match self {
            ClientRule::Syn => "syn",
            ClientRule::SynAck => "synack",
            ClientRule::FirstPacket => "first_packet",
            ClientRule::AnswerPort => "answer_port",
        }
    }
}

/// Why a flow's record was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndReason {
    /// Still live (never written with this value).
    Live,
    /// Both sides sent FIN.
    Fin,
    /// A side sent RST.
    Rst,
    /// No packet for the idle timeout of its kind (packet time).
    Idle,
    /// The worker's flow table was full and this flow was idle the longest.
    Evicted,
    /// The input ended with the flow live.
    EndOfInput,
    /// The run was stopped (SIGINT or SIGTERM) with the flow live: on a file, the rest
    /// of the input was not read; live, the capture was stopped.
    Interrupted,
    /// A new SYN reused the 5-tuple of a flow that had not closed.
    SynReuse,
}

impl EndReason {
    pub fn name(self) -> &'static str {
        match self {
            EndReason::Live => "live",
            EndReason::Fin => "fin",
            EndReason::Rst => "rst",
            EndReason::Idle => "idle",
            EndReason::Evicted => "evicted",
            EndReason::EndOfInput => "end_of_input",
            EndReason::Interrupted => "interrupted",
            EndReason::SynReuse => "syn_reuse",
        }
    }
}

/// Counters of one direction of a flow (index 0: client to server, 1: server to client).
#[derive(Clone, Debug, Default)]
pub struct Dir {
    /// Address and port of the sender of this direction.
    pub ip: u128,
    pub port: u16,
    /// OR of the flags of this direction's TCP segments (IPFIX's `tcpControlBits`);
    /// in the padding after `port`, so `Dir` does not grow.
    pub tcp_flags: u8,
    /// Payload bytes of this direction's first packet with payload, at most 65535, and
    /// whether its first 4 bytes are printable ASCII (Tstat's MSE heuristic, `con_t`);
    /// in the padding too.
    pub first_payload_len: u16,
    pub first_payload_text: bool,
    pub pkts_all: u64,
    /// L4 payload bytes, retransmissions included.
    pub bytes_all: u64,
    /// Sum of the frames' original lengths.
    pub bytes_wire: u64,
    /// Packets with L4 payload.
    pub pkts_data: u64,
    /// Packet time of the first and last packet of this direction (0: none).
    pub first_ns: u64,
    pub last_ns: u64,
    /// Packet time of the first and last packet with payload (0: none).
    pub first_payload_ns: u64,
    pub last_payload_ns: u64,
    /// Packet time of the first ACK without SYN (0: none).
    pub first_ack_ns: u64,
    pub rst_cnt: u64,
    pub ack_cnt: u64,
    pub ack_cnt_p: u64,
    pub syn_cnt: u64,
    pub fin_cnt: u64,
    pub pkts_retx: u64,
    pub bytes_retx: u64,
    pub pkts_ooo: u64,
    /// Bytes of new sequence space: payload not counting retransmissions.
    pub bytes_uniq: u64,
    /// Packets counted but not analysed: the live overload controller cut them from
    /// the flow's tail (TED) and passed on only their headers and wire length. They
    /// are in `pkts_all` and `bytes_wire`, in no other counter.
    pub pkts_unanalysed: u64,
    pub seq: SeqSpace,
}

/// The state of the full sets (`TcpSets::Full`) that every flow has: the packet size
/// and gap statistics and the first packets. Boxed and kept apart from [`Flow`] so
/// that the flows of the core set stay small (a cache line matters more than the
/// pointer); the tracker recycles the boxes of ended flows, so the packet path does not
/// allocate once the pool has grown to the most flows live at once. TCP flows carry
/// it inside a [`TcpFullState`]; UDP and other flows carry it alone, without the two
/// `TcpDir`s they would not use (most of the TCP state's size).
#[derive(Clone, Debug, Default)]
pub struct FullState {
    /// Packet size and inter-arrival statistics (NFStream's `statistical_analysis`).
    pub stats: PktStats,
    /// The first `first_limit` packets (`--first-n`).
    pub first: FirstPackets,
    pub first_limit: usize,
}

impl FullState {
    /// A new state whose first-packets lists hold `n` without growing.
    pub fn with_first_n(n: usize) -> FullState {
        FullState { stats: PktStats::default(), first: FirstPackets::with_limit(n), first_limit: n }
    }

    /// Accounts a packet of `wire_len` bytes in direction `di`, `gap_dir_ns` after the
    /// direction's previous packet and `gap_ns` after the flow's (none for the first).
    #[inline]
    pub fn on_packet(&mut self, di: usize, wire_len: u32, gap_dir_ns: Option<u64>, gap_ns: Option<u64>) {
        self.stats.on_packet(di, wire_len, gap_dir_ns, gap_ns);
        self.first.on_packet(self.first_limit, di, wire_len, gap_ns.unwrap_or(0));
    }

    /// Back to the state of a new flow, keeping the allocations.
    pub fn reset(&mut self) {
        self.stats = PktStats::default();
        self.first.clear();
    }
}

/// The full sets' state of a TCP flow: [`FullState`] and, per direction, TCP's
/// end-to-end, options and anomaly sets.
#[derive(Clone, Debug, Default)]
pub struct TcpFullState {
    pub base: FullState,
    /// Index 0: client to server, 1: server to client.
    pub tcp: [TcpDir; 2],
}

impl TcpFullState {
    /// A new state whose first-packets lists hold `n` without growing.
    pub fn with_first_n(n: usize) -> TcpFullState {
        TcpFullState { base: FullState::with_first_n(n), tcp: Default::default() }
    }

    /// The window scale shift in effect for side `di`'s windows: its SYN's, once
    /// both SYNs offered scaling (RFC 7323 §2.2); 0 otherwise.
    #[inline]
    pub fn win_scale(&self, di: usize) -> u8 {
        self.tcp[di].scale
    }

    /// Sets both sides' [`TcpDir::scale`](crate::tcp::TcpDir::scale) from their SYNs'
    /// options (after a SYN).
    pub fn agree_scale(&mut self) {
        let [a, b] = [self.tcp[0].syn_opts, self.tcp[1].syn_opts];
        let both = a.is_some_and(|o| o.has_wscale) && b.is_some_and(|o| o.has_wscale);
        for (d, o) in self.tcp.iter_mut().zip([a, b]) {
            d.scale = if both { o.map_or(0, |o| o.wscale) } else { 0 };
        }
    }

    /// Back to the state of a new flow, in place, keeping the allocations (the
    /// rings of segments in flight and of TSvals are left as they are: only their
    /// first `len` entries are ever read).
    pub fn reset(&mut self) {
        self.base.reset();
        self.tcp[0].reset();
        self.tcp[1].reset();
    }

    /// Hands the rings of both directions back to `pool` (when the flow ends): they
    /// go to the next flow that has two segments in flight, not to this state's.
    pub fn release_rings(&mut self, pool: &mut crate::tcp::RingPool) {
        self.tcp[0].release_rings(pool);
        self.tcp[1].release_rings(pool);
    }
}

/// A flow's full sets' state: boxed, the TCP sets' part only for TCP flows.
#[derive(Clone, Debug)]
pub enum Full {
    /// UDP and other flows.
    Flow(Box<FullState>),
    Tcp(Box<TcpFullState>),
    /// A flow of one packet so far: the packet, whose full sets' part waits for the
    /// second packet or the record ([`Flow::unfold`]). Most flows of a busy link have
    /// one packet (scans, backscatter, unanswered SYNs and queries: 11,813 of
    /// mix-small's 18,340 TCP flows) and live for the singleton timeout: a 112-byte
    /// box instead of a 1,024-byte state halves what such a flow holds (with its slot),
    /// and the state their record is written from is the pool's most recent.
    First(Box<Option<FirstPacket>>),
}

/// The first packet of a flow, as [`Flow::update`] saw it, for [`Full::First`].
#[derive(Clone, Copy, Debug)]
pub struct FirstPacket {
    pub(crate) dec: Decoded,
    /// The packet time as the flow took it.
    ts: u64,
    wire_len: u32,
    di: u8,
    /// How the TCP core set classified the segment's payload.
    pub(crate) class: Option<crate::tcp::SegmentClass>,
}

impl Full {
    /// The part every flow has (none while it waits in [`Full::First`]).
    #[inline]
    pub fn base(&self) -> Option<&FullState> {
        match self {
            Full::Flow(b) => Some(b),
            Full::Tcp(b) => Some(&b.base),
            Full::First(_) => None,
        }
    }

    #[inline]
    pub fn base_mut(&mut self) -> Option<&mut FullState> {
        match self {
            Full::Flow(b) => Some(b),
            Full::Tcp(b) => Some(&mut b.base),
            Full::First(_) => None,
        }
    }

    /// Asks the CPU to bring the whole state into its cache, ahead of a pass that
    /// reads most of it (writing the flow's record): the state of a flow that ended
    /// has usually left the cache since its last packet, and the misses then overlap
    /// with the work before (instead of coming one after another).
    #[inline]
    pub fn prefetch(&self) {
        match self {
            Full::Flow(b) => prefetch(&**b),
            Full::Tcp(b) => prefetch(&**b),
            Full::First(b) => prefetch(&**b),
        }
    }

    /// The TCP sets' part (TCP flows only).
    #[inline]
    pub fn tcp(&self) -> Option<&TcpFullState> {
        match self {
            Full::Tcp(b) => Some(b),
            _ => None,
        }
    }
}

/// Prefetches every cache line of `x` (nothing where the architecture has no
/// prefetch instruction in stable Rust).
#[inline(always)]
fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let p = (x as *const T).cast::<i8>();
        for off in (0..std::mem::size_of::<T>()).step_by(64) {
            // SAFETY: a prefetch is a hint, not an access: it does not fault on any
            // address and changes nothing the program can observe. SSE, which it
            // needs, is in every x86-64 CPU (the baseline target feature).
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(off)) }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// A flow's id: 16 hex digits from its 5-tuple and first packet time, the same with
/// any number of workers and in every run over the same input (periodic rows and the
/// final record share it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FlowId(pub [u8; 16]);

impl FlowId {
    pub fn new(key: &tapstat_flow::FlowKey, first_ns: u64) -> FlowId {
        // A fixed seed: the id must not depend on the run's (random) flow hash seed.
        static H: std::sync::LazyLock<tapstat_flow::FlowHasher> =
            std::sync::LazyLock::new(|| tapstat_flow::FlowHasher::new(0x7a95_7a75_f10d_1d00));
        // splitmix64's finalizer over the key's hash and the time.
        let mut z = H.hash(key) ^ first_ns.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let mut out = [0u8; 16];
        for (i, b) in out.iter_mut().enumerate() {
            *b = b"0123456789abcdef"[(z >> (60 - 4 * i) & 0xf) as usize];
        }
        FlowId(out)
    }

    /// The id of a run with `--anonymize`: the same, with a secret derived from the
    /// key mixed in, so that the id cannot be recomputed from a guessed 5-tuple.
    pub fn keyed(key: &tapstat_flow::FlowKey, first_ns: u64, secret: u64) -> FlowId {
        FlowId::new(key, first_ns ^ secret)
    }

    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).unwrap_or("")
    }
}

/// One bidirectional flow.
#[derive(Clone, Debug)]
pub struct Flow {
    pub kind: Kind,
    pub ip_version: u8,
    pub proto: u8,
    pub client_rule: ClientRule,
    /// Whether the client is the `lo` endpoint of the flow key.
    pub client_is_lo: bool,
    /// A `--shunt` rule matched: later packets were only counted (see [`crate::shunt`]).
    pub shunted: bool,
    /// `--community-id`: the record writes the flow's Community ID.
    pub community_id: bool,
    pub tunnel: Tunnel,
    pub first_ns: u64,
    pub last_ns: u64,
    pub dir: [Dir; 2],
    pub tcp: TcpConn,
    /// Handshake RTTs in ns (0: not measured): \[0\] SYN → SYN/ACK (the probe to the
    /// server and back), \[1\] SYN/ACK → the client's ACK (the probe to the client).
    pub rtt_3whs: [u64; 2],
    pub history: History,
    pub end: EndReason,
    /// The full sets' state; none with the core set alone.
    pub full: Option<Full>,
    pub flow_id: FlowId,
    /// Where the previous periodic row left off (`--periodic`).
    pub snap: crate::periodic::Snapshot,
    /// The application layer's state (TCP and UDP flows, when it is on).
    pub l7: Option<tapstat_l7::L7Flow>,
    /// The name the client resolved for the server before the flow began (DN-Hunter).
    pub fqdn: Option<std::sync::Arc<str>>,
    /// Whether the client and the server are in the internal networks (`-N`,
    /// `--internal`; every address is without them): Tstat's `c_isint`, `s_isint`.
    pub isint: [bool; 2],
    /// Whether the client's and the server's addresses are anonymized in the records
    /// (`--anonymize`): Tstat's `c_iscrypto`, `s_iscrypto`.
    pub iscrypto: [bool; 2],
    /// Under `--anonymize`, the client's and the server's addresses as every record
    /// writes them ([`Flow::shown_ip`]): their Crypto-PAn images where `iscrypto`.
    /// `dir` keeps the real ones for the analysis (DN-Hunter's lookups). Boxed: a flow
    /// of a run without `--anonymize` carries 8 bytes for it, not 32.
    pub anon_ip: Option<Box<[u128; 2]>>,
}

impl Flow {
    /// A new flow opened by packet `d`, whose sender is the `lo` endpoint when
    /// `src_is_lo`.
    /// `full` carries the full sets' state (reset) when they are on; `l7` says whether
    /// the application layer is.
    /// `full` must be [`Full::Tcp`] for a TCP flow ([`Kind::of`]).
    pub fn new(d: &Decoded, src_is_lo: bool, ts_ns: u64, full: Option<Full>, l7: bool) -> Flow {
        let kind = Kind::of(d);
        let (rule, src_is_client) = if kind == Kind::Tcp {
            let f = d.tcp.flags;
            let syn = f & tapstat_decode::TcpFields::SYN != 0;
            let ack = f & tapstat_decode::TcpFields::ACK != 0;
            match (syn, ack) {
                (true, false) => (ClientRule::Syn, true),
                (true, true) => (ClientRule::SynAck, false),
                _ => (ClientRule::FirstPacket, true),
            }
        } else if kind == Kind::Udp && d.sport != d.dport && MULTICAST_QUERY_PORTS.contains(&d.sport) {
            (ClientRule::AnswerPort, false)
        } else {
            (ClientRule::FirstPacket, true)
        };
        let mut dir: [Dir; 2] = Default::default();
        let (ci, cp, si, sp) =
            if src_is_client { (d.src, d.sport, d.dst, d.dport) } else { (d.dst, d.dport, d.src, d.sport) };
        dir[0].ip = ci;
        dir[0].port = cp;
        dir[1].ip = si;
        dir[1].port = sp;
        Flow {
            kind,
            ip_version: d.ip_version,
            proto: d.proto,
            client_rule: rule,
            client_is_lo: src_is_lo == src_is_client,
            shunted: false,
            community_id: false,
            tunnel: d.tunnel,
            first_ns: ts_ns,
            last_ns: ts_ns,
            dir,
            tcp: TcpConn::default(),
            rtt_3whs: [0; 2],
            history: History::default(),
            end: EndReason::Live,
            full,
            flow_id: FlowId::default(),
            snap: Default::default(),
            l7: match kind {
                Kind::Tcp if l7 => Some(tapstat_l7::L7Flow::new(tapstat_l7::Transport::Tcp, cp, sp)),
                Kind::Udp if l7 => Some(tapstat_l7::L7Flow::new(tapstat_l7::Transport::Udp, cp, sp)),
                _ => None,
            },
            fqdn: None,
            isint: [true; 2],
            iscrypto: [false; 2],
            anon_ip: None,
        }
    }

    /// The address of side `i` (0 client, 1 server) as records write it: anonymized
    /// under `--anonymize`.
    #[inline]
    pub fn shown_ip(&self, i: usize) -> u128 {
        match &self.anon_ip {
            None => self.dir[i & 1].ip,
            Some(a) => a[i & 1],
        }
    }

    /// The traffic class of the flow, client to server ([`crate::nets::Class`]).
    #[inline]
    pub fn class(&self) -> crate::nets::Class {
        crate::nets::Class::of(self.isint[0], self.isint[1])
    }

    /// The traffic class of the flow's packets in direction `di` (0 client to server,
    /// 1 server to client), from what the flow looked up when it started: no lookup.
    #[inline]
    pub fn class_of_dir(&self, di: usize) -> crate::nets::Class {
        crate::nets::Class::of(self.isint[di & 1], self.isint[(di & 1) ^ 1])
    }

    /// The direction index (0 client to server, 1 server to client) of a packet whose
    /// sender is the key's `lo` endpoint when `src_is_lo`.
    #[inline]
    pub fn dir_of(&self, src_is_lo: bool) -> usize {
        (src_is_lo != self.client_is_lo) as usize
    }

    /// The window scale shift in effect for side `di`'s windows: its SYN's, once
    /// both SYNs offered scaling (RFC 7323 §2.2); 0 otherwise.
    pub fn win_scale(&self, di: usize) -> u8 {
        self.tcp_full().map_or(0, |x| x.win_scale(di))
    }

    /// The end-to-end, options and anomaly state of side `di` (an empty one with the
    /// core set alone).
    pub fn e2e(&self, di: usize) -> &TcpDir {
        static EMPTY: std::sync::LazyLock<TcpDir> = std::sync::LazyLock::new(TcpDir::default);
        match self.tcp_full() {
            Some(x) => &x.tcp[di],
            // Not `map_or(&EMPTY, ..)`: that would force the lazy static on every call.
            None => &EMPTY,
        }
    }

    /// The full sets' state every flow has (none with the core set alone).
    #[inline]
    pub fn full_base(&self) -> Option<&FullState> {
        self.full.as_ref().and_then(Full::base)
    }

    /// Whether the flow's full sets' state waits in its first packet
    /// ([`Full::First`]): [`Flow::unfold`] must come before a second packet or the
    /// record.
    #[inline]
    pub fn folded(&self) -> bool {
        matches!(self.full, Some(Full::First(_)))
    }

    /// Gives a flow whose full sets' state waits in its first packet the state `full`
    /// (new or reset) and accounts that packet in it as [`Flow::update`] would have
    /// done then: the core set's state is still the one that packet left, which is
    /// all the full sets read. Returns the emptied first-packet box, for reuse.
    pub fn unfold(&mut self, mut full: Full, rings: &mut crate::tcp::RingPool) -> Option<Box<Option<FirstPacket>>> {
        let Some(Full::First(mut first)) = self.full.take() else {
            self.full = Some(full);
            return None;
        };
        let pk = first.take();
        if let (Some(pk), Some(base)) = (pk, full.base_mut()) {
            // A flow's first packet: no gap before it, in its direction or in the flow.
            base.on_packet(pk.di as usize, pk.wire_len, None, None);
        }
        self.full = Some(full);
        if let (Some(pk), Kind::Tcp) = (pk, self.kind) {
            crate::tcp::on_segment_e2e(self, &pk.dec, pk.ts, pk.di as usize, pk.class, rings);
        }
        Some(first)
    }

    /// The TCP sets' state (TCP flows with the full sets only).
    #[inline]
    pub fn tcp_full(&self) -> Option<&TcpFullState> {
        self.full.as_ref().and_then(Full::tcp)
    }

    /// Payload bytes of side `di` that the other side acknowledged but the probe
    /// never saw (the probe's own losses, apart from the sender's retransmissions).
    pub fn bytes_missed(&self, di: usize) -> u64 {
        let d = &self.dir[di];
        let e = self.e2e(di);
        let Some(mut ack) = e.acked.get() else { return 0 };
        // The FIN takes a sequence number too: an ACK of the FIN is one past the data.
        if e.fin_end.get() == Some(ack) {
            ack -= 1;
        }
        d.seq.missed_below(ack)
    }

    /// Packets in both directions.
    pub fn packets(&self) -> u64 {
        self.dir[0].pkts_all + self.dir[1].pkts_all
    }

    /// Accounts packet `d` of `wire_len` bytes at `ts_ns` in direction `di`.
    #[inline]
    /// With the full sets' state, TCP segments also go through the end-to-end, options
    /// and anomaly sets (`TcpSets::Full`).
    ///
    /// Returns where the payload's bytes new to the direction's stream begin, for the
    /// application layer: every UDP datagram from 0; for TCP, new bytes only, with
    /// whether a gap comes before them; none for other protocols.
    /// `rings` lends the rings of the TCP sets' segments in flight (see
    /// [`crate::tcp::RingPool`]).
    pub fn update(
        &mut self,
        d: &Decoded,
        payload: &[u8],
        wire_len: u32,
        ts_ns: u64,
        di: usize,
        rings: &mut crate::tcp::RingPool,
    ) -> Option<crate::tcp::Fresh> {
        // Time never runs backwards within a flow: a capture whose clock stepped back
        // by a few packets keeps first <= last.
        let prev_ns = self.last_ns;
        self.last_ns = self.last_ns.max(ts_ns);
        let ts = ts_ns.max(self.first_ns);
        if let Some(Full::First(first)) = self.full.as_mut() {
            debug_assert!(first.is_none(), "a flow is unfolded before its second packet");
            **first = Some(FirstPacket { dec: *d, ts, wire_len, di: di as u8, class: None });
        } else if let Some(full) = self.full.as_mut().and_then(Full::base_mut) {
            // Gaps from the latest packet time so far: a packet stamped earlier than
            // one before it (reordered capture queues) counts as a gap of 0.
            let gap = ts.saturating_sub(prev_ns);
            let prev_dir = self.dir[di].last_ns;
            let first = self.dir[0].pkts_all + self.dir[1].pkts_all == 0;
            let gap_dir = (prev_dir != 0).then(|| ts.saturating_sub(prev_dir));
            full.on_packet(di, wire_len, gap_dir, (!first).then_some(gap));
        }
        let x = &mut self.dir[di];
        x.pkts_all += 1;
        x.bytes_wire += wire_len as u64;
        if x.first_ns == 0 {
            x.first_ns = ts;
        }
        x.last_ns = x.last_ns.max(ts);
        let len = d.payload_len as u64;
        if len > 0 {
            x.pkts_data += 1;
            x.bytes_all += len;
            if x.first_payload_ns == 0 {
                x.first_payload_ns = ts;
                x.first_payload_len = len.min(u16::MAX as u64) as u16;
                x.first_payload_text = payload.len() >= 4 && payload[..4].iter().all(|b| (0x20..0x7f).contains(b));
            }
            x.last_payload_ns = x.last_payload_ns.max(ts);
        }
        match self.kind {
            Kind::Tcp => crate::tcp::on_segment(self, d, ts, di, rings),
            Kind::Udp => Some(crate::tcp::Fresh::at(0)),
            Kind::Other => None,
        }
    }

    /// Accounts `n` counted-only packets of direction `di` (see
    /// [`Dir::pkts_unanalysed`]) with `wire_bytes` in all, at `ts_ns`: packets, wire
    /// bytes and time, nothing else.
    pub fn count_unanalysed(&mut self, n: u32, wire_bytes: u64, ts_ns: u64, di: usize) {
        self.last_ns = self.last_ns.max(ts_ns);
        let ts = ts_ns.max(self.first_ns);
        let x = &mut self.dir[di];
        x.pkts_all += n as u64;
        x.pkts_unanalysed += n as u64;
        x.bytes_wire += wire_bytes;
        if x.first_ns == 0 {
            x.first_ns = ts;
        }
        x.last_ns = x.last_ns.max(ts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_zero_are_a_udp_or_tcp_flow_but_orphan_fragments_are_other() {
        use tapstat_decode::{Fragment, L4};
        let d = |l4, fragment| Decoded { l4, fragment, ..Decoded::default() };
        assert_eq!(Kind::of(&d(L4::Udp, Fragment::No)), Kind::Udp);
        assert_eq!(Kind::of(&d(L4::Tcp, Fragment::No)), Kind::Tcp);
        assert_eq!(Kind::of(&d(L4::Udp, Fragment::First)), Kind::Udp);
        assert_eq!(Kind::of(&d(L4::Udp, Fragment::Orphan)), Kind::Other);
        assert_eq!(Kind::of(&d(L4::Tcp, Fragment::Orphan)), Kind::Other);
        assert_eq!(Kind::of(&d(L4::Icmp, Fragment::No)), Kind::Other);
    }

    /// docs/ARCHITECTURE.md states the per-flow state's size: keep them in step.
    #[test]
    fn flow_state_size_is_as_documented() {
        let size = std::mem::size_of::<Flow>();
        let full = std::mem::size_of::<FullState>();
        let tcp = std::mem::size_of::<TcpFullState>();
        let first = std::mem::size_of::<Option<FirstPacket>>();
        eprintln!("size_of::<Flow>() = {size}, size_of::<FullState>() = {full}, size_of::<TcpFullState>() = {tcp}");
        eprintln!("size_of::<Option<FirstPacket>>() = {first}");
        assert!(size <= 832, "Flow grew to {size} bytes: update docs/ARCHITECTURE.md (Per-flow state)");
        assert!(full <= 352, "FullState grew to {full} bytes: update docs/ARCHITECTURE.md (Per-flow state)");
        // 1,024 is one of mimalloc's size classes; the next is 1,280 (a quarter more
        // memory per TCP flow of two packets or more).
        assert!(
            tcp <= 1024,
            "TcpFullState grew to {tcp} bytes: past mimalloc's 1,024-byte class; update docs/ARCHITECTURE.md (Per-flow state)"
        );
        assert!(
            first <= 112,
            "Option<FirstPacket> grew to {first} bytes: update docs/ARCHITECTURE.md (Per-flow state)"
        );
    }
}
