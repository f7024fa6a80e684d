//! The per-worker tracker: matches packets to flows, runs the analyzers, decides in
//! packet time when a flow ends, and hands finished flows to a [`FlowSink`].

use crate::dnhunter::{DnsAnswer, DnsCache};
use crate::flow::{EndReason, FirstPacket, Flow, FlowId, Full, FullState, Kind, TcpFullState};
use crate::histo::Histo;
use crate::l7log::{DnsRow, FlowRef, HttpRow};
use crate::periodic::PeriodicRow;
use tapstat_decode::{Decoded, TcpFields, L4};
use tapstat_flow::{FlowKey, FlowTable, Gc, GcConfig, IndexKind, Slots};
use tapstat_l7::dns::DnsTransaction;
use tapstat_l7::http::HttpTransaction;

/// One packet as the tracker sees it: decoded, keyed and hashed by the dispatcher.
#[derive(Clone, Copy, Debug)]
pub struct Packet<'a> {
    pub ts_ns: u64,
    /// The input's clock at this packet ([`InputClock`], kept by the dispatcher over
    /// the whole input). Expiry is judged on it, not on `ts_ns` nor on a worker's own
    /// clock: a worker sees only its share of the packets, so only a clock of the
    /// whole input gives every worker count the same answer.
    pub now_ns: u64,
    pub wire_len: u32,
    pub key: FlowKey,
    pub hash: u64,
    /// The sender is the key's `lo` endpoint.
    pub src_is_lo: bool,
    pub dec: &'a Decoded,
    /// The L4 payload for the application layer: the captured payload (shorter than
    /// `dec.payload_len` where a snaplen cut it), or for an IP fragment the whole
    /// reassembled payload of the datagram it completes, if any (else nothing: a
    /// fragment's share is not a datagram).
    pub payload: &'a [u8],
    /// This DNS response's answers were already given to the tracker
    /// ([`Tracker::learn_answers`], parsed once by the dispatcher for every worker):
    /// `on_packet` does not parse them again.
    pub dns_learnt: bool,
    /// A counted-only packet (the live overload controller's tail packet, whose
    /// frame holds its headers only): its flow counts its packet and wire bytes and
    /// [`crate::Dir::pkts_unanalysed`]; no sequence analysis, no application layer.
    pub unanalysed: bool,
}

/// The input's clock: packet time made monotonic, for timeouts.
///
/// It moves forward with the packets' timestamps and never back. Timestamps that go
/// back a little (reordering between capture queues: microseconds to milliseconds)
/// are ignored, as a running maximum would. A step back of more than
/// [`InputClock::STEP_BACK_NS`] is a clock that was reset (captures in the corpus
/// step back by hours): the clock then follows the packets again from there without
/// moving back itself, so the flows after the step are not all taken for idle, as
/// they would be against the maximum. Forward jumps count in full: a gap of a day
/// is a day of silence.
#[derive(Clone, Copy, Debug, Default)]
pub struct InputClock {
    now: u64,
    /// The timestamp the clock last advanced from.
    mark: Option<u64>,
}

impl InputClock {
    /// Steps back longer than this are clock resets, not reordering.
    pub const STEP_BACK_NS: u64 = 1_000_000_000;

    /// Advances the clock with a packet stamped `ts_ns`; returns the clock.
    #[inline]
    pub fn tick(&mut self, ts_ns: u64) -> u64 {
        match self.mark {
            None => {
                self.now = ts_ns;
                self.mark = Some(ts_ns);
            }
            Some(m) if ts_ns >= m => {
                // Saturating: a fuzzed capture can step forward to the end of time,
                // back, and forward again.
                self.now = self.now.saturating_add(ts_ns - m);
                self.mark = Some(ts_ns);
            }
            Some(m) if m - ts_ns > Self::STEP_BACK_NS => self.mark = Some(ts_ns),
            Some(_) => {}
        }
        self.now
    }

    pub fn now(&self) -> u64 {
        self.now
    }
}

/// A flow on its way from one worker's tracker to another's.
pub struct MovedFlow {
    key: FlowKey,
    hash: u64,
    flow: Flow,
    last_ns: u64,
}

impl MovedFlow {
    /// The flow hash (the scheduler's bin comes from it).
    pub fn hash(&self) -> u64 {
        self.hash
    }
}

/// Where finished flows go (the worker's record writer, a test's vector...).
pub trait FlowSink {
    fn on_flow_end(&mut self, flow: &Flow);
    /// A periodic row of a live flow (`--periodic`).
    fn on_periodic(&mut self, _row: &PeriodicRow) {}
    /// An HTTP request/response pair (application layer).
    fn on_http(&mut self, _row: &HttpRow) {}
    /// A DNS transaction (application layer).
    fn on_dns(&mut self, _row: &DnsRow) {}
    /// The records that follow (until the next call) were due at `ns` on the input's
    /// clock: a flow ended by a timeout at the moment its timeout passed (whenever the
    /// collector or a lookup found it), a flow or a transaction ended by a packet at
    /// that packet, the flows left at the end at the final clock, a periodic row at its
    /// boundary. Never later than the tracker's clock, and — but for evictions and
    /// interrupted runs — the same with any number of workers; a sink that splits
    /// records by packet time (`--rotate` on files) uses it.
    fn at(&mut self, _ns: u64) {}
}

impl<F: FnMut(&Flow)> FlowSink for F {
    fn on_flow_end(&mut self, flow: &Flow) {
        self(flow)
    }
}

/// Limits and timeouts, all in packet time.
#[derive(Clone, Copy, Debug)]
pub struct TrackerConfig {
    /// Most flows in the table; beyond it the flow idle the longest is evicted.
    pub capacity: usize,
    pub tcp_idle_ns: u64,
    pub udp_idle_ns: u64,
    /// ICMP and other IP protocols.
    pub other_idle_ns: u64,
    /// Flows of a single packet.
    pub singleton_ns: u64,
    /// A TCP flow that closed (FIN both ways or RST) ends after this much silence.
    pub closed_ns: u64,
    pub gc: GcConfig,
    /// Which TCP sets are computed (and written).
    pub tcp_sets: TcpSets,
    /// Packets whose direction, size and gap the full sets record per flow.
    pub first_n: usize,
    /// Interval of the periodic rows of live TCP and UDP flows; 0 for none.
    pub periodic_ns: u64,
    /// Interval of the link histograms ([`crate::histo`]); 0 for none.
    pub histo_ns: u64,
    /// The application layer's settings; none turns it off.
    pub l7: Option<tapstat_l7::L7Config>,
    /// Most (client, address) → name answers each worker remembers (DN-Hunter).
    pub dns_cache: usize,
    /// The flow table's index structure and size (records do not depend on them).
    pub index: IndexKind,
    pub slots: Slots,
    /// Flows a growing index (`Slots::Auto`) has room for at the start (at most
    /// `capacity`): 65,536 for one worker; the engine gives each of W workers 1/W of
    /// it, since each holds 1/W of the flows, rather than W times the start-up cost.
    pub start_flows: usize,
    /// When a flow needs no further analysis (live runs: `--shunt`); empty for never.
    pub shunt: crate::shunt::Shunt,
    /// The internal networks (`-N`, `--internal`); none: every address is internal
    /// (Tstat's default). Looked up once per flow, when it starts.
    pub nets: Option<&'static crate::nets::Nets>,
    /// Anonymize the addresses of every record (`--anonymize`).
    pub anon: Option<crate::anon::AnonConfig>,
    /// Write the `community_id` column (`--community-id`): marked on each flow as it
    /// starts ([`Flow::community_id`]), so the column's getter needs nothing else.
    pub community_id: bool,
    /// Most payload bytes the flows of this worker hold back together for holes in
    /// their TCP streams (`tapstat_l7::reorder`): past it the oldest holes are given up
    /// (their bytes go to the application layer after the hole, as at a flow's end).
    pub held_budget: usize,
}

/// The TCP sets computed and written: the core set alone (volumes, sequence
/// accounting, timing, state), or the core set with the end-to-end (RTT, TTL), options
/// and anomaly sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TcpSets {
    Core,
    #[default]
    Full,
}

const S: u64 = 1_000_000_000;

/// The heap a flow's boxed state takes besides its slot, typically: the full sets
/// (packet sizes and gaps, first packets, TCP end-to-end state) and the application
/// layer's state. 3.2 KB a flow measured on 200,000 TLS flows cut after their
/// ClientHello (652 MB of RSS); `--memcap` sizes the flow table with it.
pub const FLOW_HEAP_BYTES: usize = 3 << 10;

/// [`TrackerConfig::held_budget`] by default: 16 MiB a worker, the bytes of 128 flows
/// whose two directions each hold the most one may (`tapstat_l7::reorder::MAX_HELD_BYTES`).
pub const DEFAULT_HELD_BUDGET: usize = 16 << 20;

impl Default for TrackerConfig {
    /// Tstat's defaults: TCP idle 300 s, UDP idle 200 s, singletons 10 s.
    fn default() -> Self {
        TrackerConfig {
            capacity: 1 << 20,
            tcp_idle_ns: 300 * S,
            udp_idle_ns: 200 * S,
            other_idle_ns: 200 * S,
            singleton_ns: 10 * S,
            closed_ns: 10 * S,
            gc: GcConfig::default(),
            tcp_sets: TcpSets::Full,
            first_n: 10,
            periodic_ns: 0,
            histo_ns: 0,
            l7: Some(tapstat_l7::L7Config::default()),
            dns_cache: 1 << 16,
            index: IndexKind::default(),
            slots: Slots::Auto,
            start_flows: 1 << 16,
            shunt: crate::shunt::Shunt::default(),
            nets: None,
            anon: None,
            community_id: false,
            held_budget: DEFAULT_HELD_BUDGET,
        }
    }
}

impl TrackerConfig {
    /// The shortest timeout of any flow: one used more recently has not expired.
    fn min_idle_ns(&self) -> u64 {
        self.tcp_idle_ns.min(self.udp_idle_ns).min(self.other_idle_ns).min(self.singleton_ns).min(self.closed_ns)
    }

    /// Has `f`, last seen at `last_ns`, ended by `now_ns` (both on the input's clock)?
    /// Returns why.
    #[inline]
    fn expiry(&self, f: &Flow, last_ns: u64, now_ns: u64) -> Option<EndReason> {
        let idle = now_ns.saturating_sub(last_ns);
        (idle > self.limit(f)).then(|| end_reason(f, EndReason::Idle))
    }

    /// When `f`, last seen at `last_ns`, expired: the first clock at which
    /// [`TrackerConfig::expiry`] says so (see [`FlowSink::at`]).
    fn expired_at(&self, f: &Flow, last_ns: u64) -> u64 {
        last_ns.saturating_add(self.limit(f)).saturating_add(1)
    }

    /// The idle time after which `f` ends.
    #[inline]
    fn limit(&self, f: &Flow) -> u64 {
        let closed = f.kind == Kind::Tcp && f.tcp.closed();
        if closed {
            self.closed_ns
        } else if f.packets() <= 1 {
            self.singleton_ns
        } else {
            match f.kind {
                Kind::Tcp => self.tcp_idle_ns,
                Kind::Udp => self.udp_idle_ns,
                Kind::Other => self.other_idle_ns,
            }
        }
    }
}

/// The end reason of a flow that stops for `otherwise`, unless TCP closed it first.
fn end_reason(f: &Flow, otherwise: EndReason) -> EndReason {
    if f.kind == Kind::Tcp {
        if f.tcp.rst[0] || f.tcp.rst[1] {
            return EndReason::Rst;
        }
        if f.tcp.fin[0] && f.tcp.fin[1] {
            return EndReason::Fin;
        }
    }
    otherwise
}

/// What a tracker did, for the summary.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrackerStats {
    pub packets: u64,
    pub wire_bytes: u64,
    pub flows_tcp: u64,
    pub flows_udp: u64,
    pub flows_other: u64,
    pub evictions: u64,
    pub ended_idle: u64,
    pub ended_fin: u64,
    pub ended_rst: u64,
    pub ended_syn_reuse: u64,
    pub ended_end_of_input: u64,
    pub ended_interrupted: u64,
    pub peak_flows: u64,
    pub periodic_rows: u64,
    /// Flows a `--shunt` rule matched.
    pub shunted: u64,
    /// Payload bytes held back for holes in TCP streams now (a gauge), and the most at
    /// once.
    pub held_bytes: u64,
    pub peak_held_bytes: u64,
    /// Holes given up before their flow ended because the worker's flows held more
    /// than [`TrackerConfig::held_budget`] (the oldest first).
    pub holes_given_up: u64,
    /// Times memory ran short (`--memcap`, [`Tracker::relieve`]), and the flows ended
    /// early to free it (also in `evictions`).
    pub memcap_emergencies: u64,
    pub memcap_evictions: u64,
    /// Flows, packets and wire bytes ended, by traffic class ([`crate::nets::Class::ALL`]
    /// order: in, out, local, ext; a flow's class is its client's to its server's).
    pub classes: [ClassTotals; 4],
}

/// What ended flows of one traffic class carried.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClassTotals {
    pub flows: u64,
    pub packets: u64,
    pub bytes: u64,
}

impl TrackerStats {
    pub fn merge(&mut self, o: &TrackerStats) {
        self.packets += o.packets;
        self.wire_bytes += o.wire_bytes;
        self.flows_tcp += o.flows_tcp;
        self.flows_udp += o.flows_udp;
        self.flows_other += o.flows_other;
        self.evictions += o.evictions;
        self.shunted += o.shunted;
        self.held_bytes += o.held_bytes;
        self.peak_held_bytes += o.peak_held_bytes;
        self.holes_given_up += o.holes_given_up;
        self.memcap_emergencies += o.memcap_emergencies;
        self.memcap_evictions += o.memcap_evictions;
        self.ended_idle += o.ended_idle;
        self.ended_fin += o.ended_fin;
        self.ended_rst += o.ended_rst;
        self.ended_syn_reuse += o.ended_syn_reuse;
        self.ended_end_of_input += o.ended_end_of_input;
        self.ended_interrupted += o.ended_interrupted;
        self.peak_flows += o.peak_flows;
        self.periodic_rows += o.periodic_rows;
        for (a, b) in self.classes.iter_mut().zip(&o.classes) {
            a.flows += b.flows;
            a.packets += b.packets;
            a.bytes += b.bytes;
        }
    }
}

/// One worker's flows. See the module doc.
pub struct Tracker {
    table: FlowTable<Flow>,
    gc: Gc,
    cfg: TrackerConfig,
    now_ns: u64,
    /// The next periodic boundary (0: before the first packet), and whether packets
    /// came since the previous one.
    next_boundary_ns: u64,
    dirty: bool,
    /// The full sets' state of ended flows, for the next flows (see [`FullState`]).
    pool: Pool,
    /// Names resolved by clients, for `fqdn`.
    dns: DnsCache,
    /// Answers come from other workers too, and may come after a flow they name has
    /// started (live capture): a flow's name is decided again when it is written.
    late_names: bool,
    /// The packet just accounted made its flow shunted ([`Tracker::take_shunt`]).
    shunt_now: bool,
    /// `--anonymize`: this worker's Crypto-PAn and its cache.
    anon: Option<crate::anon::Anonymizer>,
    /// The link histograms (`histo_ns` > 0).
    histo: Option<Box<Histo>>,
    /// Flows that started holding TCP segments back for a hole, oldest first (each
    /// known by slot, key and first packet, since the slot may have been reused by
    /// the time its turn comes): the order in which holes are given up past
    /// [`TrackerConfig::held_budget`].
    holders: std::collections::VecDeque<(tapstat_flow::SlotId, FlowKey, u64)>,
    /// Memory is short ([`Tracker::relieve`]): the configuration of before, whose
    /// timeouts [`Tracker::calm`] restores.
    normal: Option<TrackerConfig>,
    pub stats: TrackerStats,
}

impl Tracker {
    /// Bytes a flow's slot in the table takes (the boxed state of the full sets and
    /// of the application layer aside): what a table reserves per flow of capacity.
    pub fn slot_bytes() -> usize {
        FlowTable::<Flow>::slot_bytes()
    }

    pub fn new(cfg: TrackerConfig) -> Self {
        let index = tapstat_flow::AnyIndex::new(cfg.index, cfg.slots, cfg.start_flows.clamp(1, cfg.capacity.max(1)));
        let mut table = FlowTable::with_index(cfg.capacity, index);
        // No stall for growing the table while packets wait; without the address space
        // for it, the table grows as before.
        let _ = table.reserve_all();
        Tracker {
            table,
            gc: Gc::new(cfg.gc),
            cfg,
            now_ns: 0,
            next_boundary_ns: 0,
            dirty: false,
            pool: Pool { first_n: cfg.first_n, ..Pool::default() },
            dns: DnsCache::new(cfg.dns_cache),
            late_names: false,
            shunt_now: false,
            anon: cfg.anon.as_ref().map(crate::anon::Anonymizer::new),
            histo: (cfg.histo_ns > 0).then(|| Box::new(Histo::new(cfg.histo_ns, cfg.nets))),
            holders: std::collections::VecDeque::new(),
            normal: None,
            stats: TrackerStats::default(),
        }
    }

    /// Learns the answers of DNS response `d` (a packet this worker accounts, or one
    /// that another worker does: see [`crate::dnhunter`]).
    #[inline]
    pub fn learn_dns(&mut self, d: &Decoded, payload: &[u8]) {
        self.learn_dns_at(d, payload, self.now_ns);
    }

    #[inline]
    fn learn_dns_at(&mut self, d: &Decoded, payload: &[u8], ts_ns: u64) {
        if self.cfg.l7.is_some() && crate::dnhunter::is_dns_response(d) {
            self.dns.learn(d.dst, payload, ts_ns);
        }
    }

    /// Keeps the DNS answers this tracker learns from its own packets for
    /// [`Tracker::take_dns_answers`], so that the engine can hand them to the other
    /// workers: live capture, where no dispatcher broadcasts DNS responses.
    ///
    /// An answer from another worker may then arrive after the first packet of a flow
    /// it names (the two waited in different queues), and a later answer before it.
    /// So a flow's name is looked up by time: that of the latest answer stamped no
    /// later than the flow's first packet, when the flow starts and again before its
    /// HTTP rows and its record are written. It is the name a single worker would
    /// have given it unless the pair was answered with a third name in between, or
    /// evicted.
    pub fn share_dns_answers(&mut self) {
        self.dns.share();
        self.late_names = true;
    }

    /// The DNS answers learnt from this tracker's packets since the last call (none
    /// unless [`Tracker::share_dns_answers`]).
    #[inline]
    pub fn take_dns_answers(&mut self) -> std::vec::Drain<'_, DnsAnswer> {
        self.dns.take_shared()
    }

    /// Learns an answer another worker's tracker learnt.
    pub fn learn_dns_answer(&mut self, a: DnsAnswer) {
        if self.cfg.l7.is_some() {
            self.dns.insert_answer(a);
        }
    }

    /// Learns DNS answers parsed elsewhere (DN-Hunter; see [`Packet::dns_learnt`]).
    pub fn learn_answers(&mut self, a: &crate::dnhunter::Answers, ts_ns: u64) {
        if self.cfg.l7.is_some() {
            self.dns.learn_answers(a, ts_ns);
        }
    }

    /// Flows in the table now.
    pub fn live_flows(&self) -> usize {
        self.table.len()
    }

    /// Accounts one packet; flows that end on the way go to `out`.
    #[inline]
    pub fn on_packet(&mut self, p: &Packet<'_>, out: &mut impl FlowSink) {
        self.now_ns = self.now_ns.max(p.now_ns);
        self.account(p, self.now_ns, 1, out);
    }

    /// Accounts `n` counted-only packets of one flow and direction at once (the live
    /// overload controller's held tails): `p` is one of them with `p.unanalysed` set,
    /// its `wire_len` the wire bytes of all `n`, its time theirs. One flow lookup
    /// instead of `n`; the flow's and the tracker's counts are those of `n` calls of
    /// [`Tracker::on_packet`] with the bytes spread over them.
    pub fn on_tails(&mut self, p: &Packet<'_>, n: u32, out: &mut impl FlowSink) {
        debug_assert!(p.unanalysed);
        if n == 0 {
            return;
        }
        self.now_ns = self.now_ns.max(p.now_ns);
        self.account(p, self.now_ns, n, out);
    }

    /// Accounts packet `p` of a run that the engine took out of input order to group
    /// it by flow (flow-affinity batches), with the clock of garbage collection and of
    /// periodic boundaries held at `held_ns`; flows that end on the way go to `out`.
    ///
    /// The caller's contract (what makes the records those of input order, see
    /// docs/ARCHITECTURE.md, "Flow-affinity batches"): the run's packets are in input
    /// order within each flow; `held_ns` is the clock of the run's first packet in
    /// input order, so no packet of the run or after it has an earlier clock; no
    /// packet of the run teaches DNS answers; all its packets fall between the same two
    /// periodic boundaries; and after the run, [`Tracker::advance`] gives the clock of
    /// its last packet. Then:
    /// - each packet's own decisions (expiry at lookup, the new flow's and the touched
    ///   flow's last use) are taken on the packet's clock, `p.now_ns`, which is what
    ///   `on_packet` uses in input order (the clock is monotonic there);
    /// - the collector never ends a flow that input order would have kept: a flow
    ///   idle past its timeout at `held_ns` is idle past it at the clock of its next
    ///   packet too, so input order splits it there (or ends it as idle at the end)
    ///   with the same packets in it;
    /// - a periodic boundary can only be passed at the run's first packet, before any
    ///   of its packets is accounted, as in input order.
    #[inline]
    pub fn on_packet_held(&mut self, p: &Packet<'_>, held_ns: u64, out: &mut impl FlowSink) {
        self.now_ns = self.now_ns.max(held_ns);
        self.account(p, self.now_ns.max(p.now_ns), 1, out);
    }

    /// Moves the clock to `now_ns` (never back) without a packet: after a run of
    /// [`Tracker::on_packet_held`], the clock of its last packet, which input order
    /// would have reached.
    #[inline]
    pub fn advance(&mut self, now_ns: u64) {
        self.now_ns = self.now_ns.max(now_ns);
    }

    /// The work of a packet: periodic rows, DNS learning and garbage collection on the
    /// tracker's clock, and the packet's own flow on `now` (the tracker's clock, or the
    /// packet's in a held run). `n` is the number of packets `p` stands for: 1, or
    /// more for counted-only tails ([`Tracker::on_tails`]).
    #[inline(always)]
    fn account(&mut self, p: &Packet<'_>, now: u64, n: u32, out: &mut impl FlowSink) {
        self.stats.packets += n as u64;
        self.stats.wire_bytes += p.wire_len as u64;
        if self.cfg.periodic_ns > 0 {
            self.periodic(out);
            self.dirty = true;
        }
        if !p.dns_learnt && !p.unanalysed {
            self.learn_dns_at(p.dec, p.payload, p.ts_ns);
        }
        let scan = self.gc.poll(self.now_ns, self.table.slab_len());
        if scan > 0 {
            self.collect(scan, out);
        }

        let mut slot = self.table.find(&p.key, p.hash);
        if let Some(id) = slot {
            // Expiry is decided here too, not only by the collector, so the split of a
            // 5-tuple into flows depends on packet times only — not on when the
            // collector happened to pass (which depends on the number of workers).
            let (f, last) = (self.table.get(id), self.table.last_ns(id));
            let ended = match self.cfg.expiry(f, last, now) {
                Some(why) => Some((why, self.cfg.expired_at(f, last))),
                None => reuse(f, p).map(|why| (why, now)),
            };
            if let Some((why, due)) = ended {
                self.end(id, why, due, out);
                slot = None;
            }
        }
        let id = match slot {
            Some(id) => id,
            None => {
                let full = (self.cfg.tcp_sets == TcpSets::Full).then(|| self.pool.take_first());
                let mut f = Flow::new(p.dec, p.src_is_lo, p.ts_ns, full, self.cfg.l7.is_some());
                f.flow_id = FlowId::new(&p.key, p.ts_ns);
                f.community_id = self.cfg.community_id;
                if self.cfg.nets.is_some() || self.anon.is_some() {
                    endpoints(&mut f, self.cfg.nets, self.anon.as_ref(), &p.key, p.ts_ns);
                }
                if f.l7.is_some() {
                    let name = if self.late_names {
                        self.dns.lookup_before(f.dir[0].ip, f.dir[1].ip, p.ts_ns)
                    } else {
                        self.dns.lookup(f.dir[0].ip, f.dir[1].ip)
                    };
                    f.fqdn = shown_name(name, self.anon.as_ref(), self.cfg.nets);
                }
                match f.kind {
                    Kind::Tcp => self.stats.flows_tcp += 1,
                    Kind::Udp => self.stats.flows_udp += 1,
                    Kind::Other => self.stats.flows_other += 1,
                }
                let (id, evicted) = self.table.insert(p.key, p.hash, f, now);
                if let Some((_, mut old)) = evicted {
                    old.end = end_reason(&old, EndReason::Evicted);
                    self.stats.evictions += 1;
                    close(
                        old,
                        now,
                        out,
                        &mut self.pool,
                        Ctx::new(self.late_names, &self.dns, self.anon.as_ref(), &self.cfg),
                        &mut self.stats,
                        self.histo.as_deref_mut(),
                    );
                }
                self.stats.peak_flows = self.stats.peak_flows.max(self.table.len() as u64);
                id
            }
        };
        let f = self.table.get_mut(id);
        if f.folded() && f.packets() > 0 {
            self.pool.unfold(f);
        }
        let di = f.dir_of(p.src_is_lo);
        if let Some(h) = self.histo.as_deref_mut() {
            h.packets(p.now_ns, p.dec, h.direction(f, di), n as u64);
        }
        if p.unanalysed {
            f.count_unanalysed(n, p.wire_len as u64, p.ts_ns, di);
            self.table.touch(id, now);
            return;
        }
        let fresh = f.update(p.dec, p.payload, p.wire_len, p.ts_ns, di, &mut self.pool.rings);
        let mut held = (0, 0);
        if let (Some(cfg), Some(fresh)) = (self.cfg.l7.as_ref(), fresh) {
            held = on_payload(
                f,
                cfg,
                di,
                p,
                fresh,
                out,
                Ctx::new(self.late_names, &self.dns, self.anon.as_ref(), &self.cfg),
            );
        }
        // Acquisition knows a flow by the hash of its frame's outer headers
        // (`capture::live::frame_flow`): a tunnel's or a fragment's hash is shared with
        // other flows, so only a plain packet of a flow outside tunnels shunts it.
        if !self.cfg.shunt.is_empty()
            && !f.shunted
            && p.dec.fragment == tapstat_decode::Fragment::No
            && p.dec.tunnel.kind == tapstat_decode::TunnelKind::None
            && self.cfg.shunt.matches(f)
        {
            f.shunted = true;
            self.shunt_now = true;
            self.stats.shunted += 1;
        }
        self.table.touch(id, now);
        if held.0 != held.1 {
            self.held_changed(id, &p.key, held, out);
        }
    }

    /// Whether the packet accounted last made its flow shunted (a `--shunt` rule
    /// matched it for the first time); the engine then asks acquisition to only count
    /// that flow's later packets. Reading clears it.
    #[inline]
    pub fn take_shunt(&mut self) -> bool {
        std::mem::take(&mut self.shunt_now)
    }

    /// Takes the flows whose hash `pick` chooses out of the table, state and last-use
    /// time whole, to hand to another worker's tracker ([`Tracker::put_flows`]): the
    /// scheduler moves a bin of flows between workers between two chunks.
    pub fn take_flows(&mut self, pick: impl FnMut(u64) -> bool) -> Vec<MovedFlow> {
        self.table
            .take_where(pick)
            .into_iter()
            .map(|(key, hash, flow, last_ns)| MovedFlow { key, hash, flow, last_ns })
            .collect()
    }

    /// Puts flows another tracker took ([`Tracker::take_flows`]) into this one, as if
    /// they had always been here (a full table evicts, as for a new flow).
    pub fn put_flows(&mut self, flows: Vec<MovedFlow>, out: &mut impl FlowSink) {
        for m in flows {
            let (_, evicted) = self.table.insert(m.key, m.hash, m.flow, m.last_ns);
            if let Some((_, mut old)) = evicted {
                old.end = end_reason(&old, EndReason::Evicted);
                self.stats.evictions += 1;
                close(
                    old,
                    self.now_ns,
                    out,
                    &mut self.pool,
                    Ctx::new(self.late_names, &self.dns, self.anon.as_ref(), &self.cfg),
                    &mut self.stats,
                    self.histo.as_deref_mut(),
                );
            }
        }
        self.stats.peak_flows = self.stats.peak_flows.max(self.table.len() as u64);
    }

    /// Ends every flow: those idle at `final_ns` (the input's clock at its end, the
    /// same for every worker) as idle, the rest as `end_of_input`, or as `interrupted`
    /// where the run was stopped before the end of its input.
    pub fn finish(&mut self, final_ns: u64, interrupted: bool, out: &mut impl FlowSink) {
        let at_end = if interrupted { EndReason::Interrupted } else { EndReason::EndOfInput };
        self.now_ns = self.now_ns.max(final_ns);
        if self.cfg.periodic_ns > 0 {
            self.periodic(out);
        }
        self.collect(usize::MAX, out);
        let stats = &mut self.stats;
        let pool = &mut self.pool;
        let late = Ctx::new(self.late_names, &self.dns, self.anon.as_ref(), &self.cfg);
        let now = self.now_ns;
        let mut histo = self.histo.as_deref_mut();
        self.table.drain(|_, mut f| {
            f.end = end_reason(&f, at_end);
            count_end(stats, f.end);
            close(f, now, out, pool, late, stats, histo.as_deref_mut());
        });
    }

    /// Moves the clock to `now_ns` without a packet (never back), as a live run does on
    /// a quiet link once every frame before `now_ns` has been accounted: the periodic
    /// rows due by then are written, and a slice of the table (a thousandth) is scanned
    /// for flows expired by then, so that a link without packets still ends its flows
    /// (records to `out`) within a thousand calls of their timeouts. What the next
    /// packet would see is the same: it would move the clock at least this far.
    pub fn idle(&mut self, now_ns: u64, out: &mut impl FlowSink) {
        if now_ns <= self.now_ns {
            return;
        }
        self.now_ns = now_ns;
        if self.cfg.periodic_ns > 0 {
            self.periodic(out);
        }
        let n = self.table.slab_len().div_ceil(1000);
        if n > 0 {
            self.collect(n, out);
        }
    }

    /// The tracker's clock: the latest packet time it accounted (or was moved to).
    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }

    /// The intervals of the link histograms (`--histo-interval`) that ended by the
    /// clock, moved to `now_ns` first if later, for a live run to write while it runs
    /// (none without histograms). Every flow expired by then is ended first (records
    /// to `out`), a scan of the whole table, so the intervals handed over are
    /// complete: a packet to come is at or after the clock, and so is the time a
    /// record still to come is due (a flow left in the table has not expired by
    /// now, so it expires after it; a reused or evicted one ends at a later clock).
    /// Once per interval: the scan costs what the collector's incremental scans do
    /// over one pass of the table.
    pub fn take_histo_before_now(&mut self, now_ns: u64, out: &mut impl FlowSink) -> Option<Histo> {
        self.histo.as_ref()?;
        self.now_ns = self.now_ns.max(now_ns);
        self.collect(usize::MAX, out);
        let now = self.now_ns;
        self.histo.as_deref_mut().map(|h| h.take_before(now))
    }

    /// The link histograms (`--histo-interval`), taken after [`Tracker::finish`] for
    /// the run's merge ([`Histo::merge`]).
    pub fn take_histo(&mut self) -> Option<Box<Histo>> {
        self.histo.take()
    }

    /// Scans `n` slots of the table and ends the flows that have expired by now.
    fn collect(&mut self, n: usize, out: &mut impl FlowSink) {
        let now = self.now_ns;
        // Borrowed, not copied: the configuration is 300 bytes, and a step of the
        // collector runs for most packets.
        let cfg = &self.cfg;
        let stats = &mut self.stats;
        let pool = &mut self.pool;
        let late = Ctx::new(self.late_names, &self.dns, self.anon.as_ref(), &self.cfg);
        let mut histo = self.histo.as_deref_mut();
        // `scan` hands over each flow right after `expired` said yes for it.
        let due = std::cell::Cell::new(0);
        self.table.scan(
            n,
            now,
            cfg.min_idle_ns(),
            |_, f, last| {
                let yes = cfg.expiry(f, last, now).is_some();
                if yes {
                    due.set(cfg.expired_at(f, last));
                }
                yes
            },
            |_, mut f| {
                f.end = end_reason(&f, EndReason::Idle);
                count_end(stats, f.end);
                close(f, due.get(), out, pool, late, stats, histo.as_deref_mut());
            },
        );
    }

    /// Writes the periodic rows of the boundary that the clock passed, if any. Only the
    /// first boundary after packets can have rows: at the next ones every flow's
    /// snapshot is current.
    fn periodic(&mut self, out: &mut impl FlowSink) {
        let period = self.cfg.periodic_ns;
        // The first multiple of the period after `now`.
        let next = |now: u64| (now / period).saturating_add(1).saturating_mul(period);
        if self.next_boundary_ns == 0 {
            self.next_boundary_ns = next(self.now_ns);
        }
        if self.now_ns < self.next_boundary_ns {
            return;
        }
        if self.dirty {
            let b = self.next_boundary_ns;
            out.at(b);
            let cfg = self.cfg;
            let stats = &mut self.stats;
            self.table.for_each_mut(|_, last, f| {
                // A flow that expired before the boundary ended there, whether or not
                // the collector has passed: its final record has it all.
                if f.kind == Kind::Other || cfg.expiry(f, last, b).is_some() {
                    return;
                }
                if let Some(row) = crate::periodic::take_row(f, b) {
                    stats.periodic_rows += 1;
                    out.on_periodic(&row);
                }
            });
            self.dirty = false;
        }
        self.next_boundary_ns = next(self.now_ns);
    }

    /// Memory is short (the process is past `--memcap`): sheds state, the least useful
    /// first, as Suricata's flow emergency mode does. Every hole is given up (the
    /// segments held for it go to the application layer, as at the flow's end); the
    /// flows idle the longest, a sixteenth of the table (at least 64), end now with
    /// `end_reason` evicted (written, counted in `evictions` and `memcap_evictions`);
    /// and until [`Tracker::calm`] the idle timeouts are a tenth of theirs (at least
    /// 1 s), so that the collector ends idle flows sooner. The engine calls it once per
    /// batch of packets while memory stays short.
    pub fn relieve(&mut self, out: &mut impl FlowSink) {
        if self.normal.is_none() {
            self.normal = Some(self.cfg);
            let c = &mut self.cfg;
            for t in
                [&mut c.tcp_idle_ns, &mut c.udp_idle_ns, &mut c.other_idle_ns, &mut c.singleton_ns, &mut c.closed_ns]
            {
                *t = (*t / 10).max(S);
            }
            self.stats.memcap_emergencies += 1;
        }
        while let Some((sid, k, first)) = self.holders.pop_front() {
            self.give_up_holes(sid, &k, first, out);
        }
        self.stats.held_bytes = 0;
        let n = (self.table.len() / 16).max(64);
        for _ in 0..n {
            let Some(id) = self.table.oldest() else { break };
            let why = end_reason(self.table.get(id), EndReason::Evicted);
            self.stats.evictions += 1;
            self.stats.memcap_evictions += 1;
            self.end(id, why, self.now_ns, out);
        }
    }

    /// Memory is no longer short: the idle timeouts are the configured ones again.
    pub fn calm(&mut self) {
        if let Some(normal) = self.normal.take() {
            self.cfg = normal;
        }
    }

    /// Whether memory is short ([`Tracker::relieve`] until [`Tracker::calm`]).
    pub fn emergency(&self) -> bool {
        self.normal.is_some()
    }

    /// The flow in slot `id` (key `key`) holds `held.1` payload bytes back for holes,
    /// where it held `held.0` before its last packet: the worker's total follows, and
    /// past the budget the oldest holes are given up.
    #[cold]
    #[inline(never)]
    fn held_changed(&mut self, id: tapstat_flow::SlotId, key: &FlowKey, held: (usize, usize), out: &mut impl FlowSink) {
        let (before, after) = (held.0 as u64, held.1 as u64);
        let s = &mut self.stats;
        s.held_bytes = (s.held_bytes + after).saturating_sub(before);
        s.peak_held_bytes = s.peak_held_bytes.max(s.held_bytes);
        if before == 0 && after > 0 {
            self.holders.push_back((id, *key, self.table.get(id).first_ns));
        }
        while self.stats.held_bytes > self.cfg.held_budget as u64 {
            match self.holders.pop_front() {
                Some((sid, k, first)) => self.give_up_holes(sid, &k, first, out),
                // Every flow that holds bytes is in the queue: none does.
                None => self.stats.held_bytes = 0,
            }
        }
        // Flows that ended or caught up stay in the queue until their turn: drop them
        // once they are most of it, so that it stays the size of the holders.
        if self.holders.len() > 1024 && self.holders.len() > 4 * self.stats.held_bytes.div_ceil(1 << 16) as usize {
            let table = &self.table;
            self.holders.retain(|&(sid, k, first)| held_by(table, sid, &k, first) > 0);
        }
    }

    /// Gives up the holes of the flow in slot `sid` if it is still the flow of key `k`
    /// that started at `first`: what it held goes to the application layer after the
    /// hole, as at its end, and the transactions that completes go out now.
    fn give_up_holes(&mut self, sid: tapstat_flow::SlotId, k: &FlowKey, first: u64, out: &mut impl FlowSink) {
        let Some(cfg) = self.cfg.l7.as_ref() else { return };
        let n = held_by(&self.table, sid, k, first) as u64;
        if n == 0 {
            return;
        }
        let f = self.table.get_mut(sid);
        let Some(l7) = f.l7.as_mut() else { return };
        l7.flush_held(cfg);
        self.stats.held_bytes = self.stats.held_bytes.saturating_sub(n);
        self.stats.holes_given_up += 1;
        let (http, dns) = (l7.drain_http(false), l7.drain_dns(false));
        if !(http.is_empty() && dns.is_empty()) {
            let ctx = Ctx::new(self.late_names, &self.dns, self.anon.as_ref(), &self.cfg);
            name_late(f, ctx);
            out.at(self.now_ns);
            emit_transactions(f, http, dns, out, ctx);
        }
    }

    fn end(&mut self, id: tapstat_flow::SlotId, why: EndReason, due: u64, out: &mut impl FlowSink) {
        let (_, mut f) = self.table.remove(id);
        f.end = why;
        count_end(&mut self.stats, why);
        close(
            f,
            due,
            out,
            &mut self.pool,
            Ctx::new(self.late_names, &self.dns, self.anon.as_ref(), &self.cfg),
            &mut self.stats,
            self.histo.as_deref_mut(),
        );
    }
}

/// The payload bytes that the flow in slot `sid` holds back for holes, if it is still
/// the flow of key `k` that started at `first` (a queue of holders outlives their
/// flows, and a slot is reused); 0 otherwise.
fn held_by(table: &FlowTable<Flow>, sid: tapstat_flow::SlotId, k: &FlowKey, first: u64) -> usize {
    if !table.holds(sid, k) || table.get(sid).first_ns != first {
        return 0;
    }
    table.get(sid).l7.as_ref().map_or(0, |l| l.held_bytes())
}

/// Feeds the application layer of `f` the payload of `p` from `fresh.off` on: a whole
/// UDP datagram, or the TCP bytes new to the direction's stream. The layer is told of a
/// hole before them: a gap in the sequence space, or a snaplen-cut segment, whose new
/// bytes are not all in the capture and are not fed.
#[inline]
fn on_payload(
    f: &mut Flow,
    cfg: &tapstat_l7::L7Config,
    di: usize,
    p: &Packet<'_>,
    fresh: crate::tcp::Fresh,
    out: &mut impl FlowSink,
    ctx: Ctx<'_>,
) -> (usize, usize) {
    let Some(l7) = f.l7.as_mut() else { return (0, 0) };
    if l7.is_done() {
        return (0, 0);
    }
    let dir = if di == 0 { tapstat_l7::Dir::ClientToServer } else { tapstat_l7::Dir::ServerToClient };
    let tcp = f.kind == Kind::Tcp;
    // A segment cut by the snap length: its bytes are not all in the capture.
    let whole = !tcp || p.payload.len() == p.dec.payload_len as usize;
    // From a TCP direction's first hole on, the application layer puts its segments
    // back in order (`tapstat_l7::reorder`); before, the bytes new to the stream are
    // the next ones.
    let len = p.dec.payload_len as u64;
    let bytes = whole.then_some(p.payload);
    let before = if l7.reordering_any() { l7.held_bytes() } else { 0 };
    let held = tcp && l7.on_tcp_segment(cfg, dir, fresh.seg_at, len, bytes, p.ts_ns, fresh.next);
    let mut after = before;
    if held {
        after = l7.held_bytes();
    } else {
        let off = fresh.off as usize;
        if off >= p.dec.payload_len as usize {
            return (before, after);
        }
        if fresh.after_gap() {
            l7.on_gap(dir);
        }
        if !whole {
            l7.on_gap(dir);
            return (before, after);
        }
        l7.on_payload(cfg, dir, &p.payload[off..], p.ts_ns);
    }
    // Complete transactions go out now: a resolver's 5-tuple can live for hours.
    let (http, dns) = (l7.drain_http(false), l7.drain_dns(false));
    if !(http.is_empty() && dns.is_empty()) {
        name_late(f, ctx);
        out.at(p.now_ns);
    }
    emit_transactions(f, http, dns, out, ctx);
    (before, after)
}

/// The full sets' state of ended flows, for the next flows: one stack per size, the
/// most recently freed (still in cache) first. Boxes, not values: the point is to hand
/// the same allocations back to flows.
#[derive(Default)]
#[allow(clippy::vec_box)]
struct Pool {
    flow: Vec<Box<FullState>>,
    tcp: Vec<Box<TcpFullState>>,
    first: Vec<Box<Option<FirstPacket>>>,
    /// `--first-n`, for new states.
    first_n: usize,
    /// The rings of TCP flows' segments and TSvals in flight, lent only to the
    /// directions that have two at once.
    rings: crate::tcp::RingPool,
}

impl Pool {
    /// A reset state for a new flow of kind `kind`.
    #[inline]
    fn take(&mut self, kind: Kind) -> Full {
        let first_n = self.first_n;
        match kind {
            Kind::Tcp => {
                Full::Tcp(pop_reset(&mut self.tcp, TcpFullState::reset, || TcpFullState::with_first_n(first_n)))
            }
            Kind::Udp | Kind::Other => {
                Full::Flow(pop_reset(&mut self.flow, FullState::reset, || FullState::with_first_n(first_n)))
            }
        }
    }

    /// The state of a new flow: room for its first packet ([`Full::First`]).
    #[inline]
    fn take_first(&mut self) -> Full {
        Full::First(self.first.pop().unwrap_or_default())
    }

    /// Gives `f`, which waits in its first packet, its full sets' state.
    #[inline]
    fn unfold(&mut self, f: &mut Flow) {
        let full = self.take(f.kind);
        if let Some(b) = f.unfold(full, &mut self.rings) {
            self.first.push(b);
        }
    }

    #[inline]
    fn give(&mut self, full: Option<Full>) {
        match full {
            Some(Full::First(b)) => self.first.push(b),
            Some(Full::Flow(b)) => self.flow.push(b),
            Some(Full::Tcp(mut b)) => {
                b.release_rings(&mut self.rings);
                self.tcp.push(b)
            }
            None => {}
        }
    }
}

/// The most recently freed box of `stack`, reset, or a new one.
#[inline]
#[allow(clippy::vec_box)]
fn pop_reset<T>(stack: &mut Vec<Box<T>>, reset: fn(&mut T), new: impl FnOnce() -> T) -> Box<T> {
    match stack.pop() {
        Some(mut b) => {
            reset(&mut b);
            b
        }
        None => Box::new(new()),
    }
}

/// Writes a flow that ended: its last HTTP and DNS transactions, then its record; its
/// full sets' state goes back to the pool.
/// Writes the record of ended flow `f` (and its transactions still pending), due at
/// `due` ([`FlowSink::at`]).
fn close(
    mut f: Flow,
    due: u64,
    out: &mut impl FlowSink,
    pool: &mut Pool,
    ctx: Ctx<'_>,
    stats: &mut TrackerStats,
    histo: Option<&mut Histo>,
) {
    out.at(due);
    if let (Some(cfg), Some(l7)) = (ctx.l7, f.l7.as_mut()) {
        stats.held_bytes = stats.held_bytes.saturating_sub(l7.held_bytes() as u64);
        l7.flush_held(cfg);
    }
    name_late(&mut f, ctx);
    if let (Some(a), Some(l7)) = (ctx.anon, f.l7.as_mut()) {
        // Every text of the application layer a record writes (names, headers,
        // banners, the certificate's names), once, as the flow ends.
        l7.texts_mut(&mut |x| a.rewrite(x, ctx.nets));
    }
    let c = &mut stats.classes[f.class().index()];
    c.flows += 1;
    c.packets += f.dir[0].pkts_all + f.dir[1].pkts_all;
    c.bytes += f.dir[0].bytes_wire + f.dir[1].bytes_wire;
    if f.folded() {
        pool.unfold(&mut f);
    } else if let Some(full) = &f.full {
        full.prefetch();
    }
    if let Some(l7) = f.l7.as_mut() {
        let (http, dns) = (l7.drain_http(true), l7.drain_dns(true));
        emit_transactions(&f, http, dns, out, ctx);
    }
    out.on_flow_end(&f);
    if let Some(h) = histo {
        h.flow(due, &f);
    }
    pool.give(f.full.take());
}

/// Names a flow again from the answers known now, by time (`late`: the cache of a
/// tracker whose answers also come from other workers, see
/// [`Tracker::share_dns_answers`]). An answer evicted since keeps the name it gave.
#[inline]
fn name_late(f: &mut Flow, ctx: Ctx<'_>) {
    if let Some(c) = ctx.late {
        if f.l7.is_some() {
            if let Some(n) = c.lookup_before(f.dir[0].ip, f.dir[1].ip, f.first_ns) {
                f.fqdn = shown_name(Some(n), ctx.anon, ctx.nets);
            }
        }
    }
}

/// A flow's `fqdn` as records show it: under `--anonymize`, with the addresses a name
/// holds (`192.0.2.1.nip.io`) anonymized, once, when the flow takes the name.
#[inline]
fn shown_name(
    name: Option<std::sync::Arc<str>>,
    anon: Option<&crate::anon::Anonymizer>,
    nets: Option<&crate::nets::Nets>,
) -> Option<std::sync::Arc<str>> {
    match (name, anon) {
        (Some(n), Some(a)) => Some(a.text(&n, nets).map_or(n, std::sync::Arc::from)),
        (n, _) => n,
    }
}

/// What writing a flow's records needs besides the flow: DN-Hunter's cache for the
/// names decided late (`late`), and under `--anonymize` the worker's anonymizer and the
/// internal networks (for the addresses of DNS answers).
#[derive(Clone, Copy)]
struct Ctx<'a> {
    late: Option<&'a DnsCache>,
    anon: Option<&'a crate::anon::Anonymizer>,
    nets: Option<&'static crate::nets::Nets>,
    /// The application layer's settings, for the bytes a flow still holds back when it
    /// ends (`reorder`).
    l7: Option<&'a tapstat_l7::L7Config>,
}

impl<'a> Ctx<'a> {
    #[inline]
    fn new(
        late_names: bool,
        dns: &'a DnsCache,
        anon: Option<&'a crate::anon::Anonymizer>,
        cfg: &'a TrackerConfig,
    ) -> Ctx<'a> {
        Ctx { late: late_names.then_some(dns), anon, nets: cfg.nets, l7: cfg.l7.as_ref() }
    }
}

/// Decides, once per flow as it starts, whether its endpoints are internal and, under
/// `--anonymize`, the addresses its records show and a flow id keyed by the secret
/// (the plain id is a hash of the 5-tuple anyone can compute: it would let the real
/// addresses be searched for).
#[cold]
fn endpoints(
    f: &mut Flow,
    nets: Option<&crate::nets::Nets>,
    anon: Option<&crate::anon::Anonymizer>,
    key: &tapstat_flow::FlowKey,
    ts_ns: u64,
) {
    for i in 0..2 {
        f.isint[i] = crate::nets::is_internal(nets, f.ip_version, f.dir[i].ip);
    }
    if let Some(a) = anon {
        let mut shown = [f.dir[0].ip, f.dir[1].ip];
        for (i, ip) in shown.iter_mut().enumerate() {
            if a.scope.covers(f.isint[i]) {
                *ip = a.raw(f.ip_version, *ip);
                f.iscrypto[i] = true;
            }
        }
        f.anon_ip = Some(Box::new(shown));
        f.flow_id = FlowId::keyed(key, ts_ns, a.id_secret);
    }
}

fn emit_transactions(
    f: &Flow,
    http: Vec<HttpTransaction>,
    dns: Vec<DnsTransaction>,
    out: &mut impl FlowSink,
    ctx: Ctx<'_>,
) {
    if http.is_empty() && dns.is_empty() {
        return;
    }
    let fr = FlowRef::of(f);
    for mut tx in http {
        if let Some(a) = ctx.anon {
            tx.texts_mut(&mut |x| a.rewrite(x, ctx.nets));
        }
        out.on_http(&HttpRow { flow: fr.clone(), tx });
    }
    for mut tx in dns {
        if let Some(a) = ctx.anon {
            anonymize_dns(&mut tx, a, ctx.nets);
        }
        out.on_dns(&DnsRow::new(fr.clone(), tx));
    }
}

/// The addresses a DNS transaction writes: those of its answers, and any written in its
/// names (a reverse lookup's, a label holding one), anonymized under the scope of
/// `--anonymize-only`.
fn anonymize_dns(tx: &mut DnsTransaction, a: &crate::anon::Anonymizer, nets: Option<&crate::nets::Nets>) {
    use tapstat_l7::dns::parser::AnswerData;
    tx.texts_mut(&mut |x| a.rewrite(x, nets));
    for ans in &mut tx.answers {
        match &mut ans.data {
            AnswerData::A(v4) => {
                if let std::net::IpAddr::V4(x) = a.answer((*v4).into(), nets) {
                    *v4 = x;
                }
            }
            AnswerData::Aaaa(v6) => {
                if let std::net::IpAddr::V6(x) = a.answer((*v6).into(), nets) {
                    *v6 = x;
                }
            }
            AnswerData::Cname(_) | AnswerData::Other => {}
        }
    }
}

fn count_end(s: &mut TrackerStats, why: EndReason) {
    match why {
        EndReason::Idle => s.ended_idle += 1,
        EndReason::Fin => s.ended_fin += 1,
        EndReason::Rst => s.ended_rst += 1,
        EndReason::SynReuse => s.ended_syn_reuse += 1,
        EndReason::EndOfInput => s.ended_end_of_input += 1,
        EndReason::Interrupted => s.ended_interrupted += 1,
        EndReason::Evicted | EndReason::Live => {}
    }
}

/// Does packet `p` open a new connection on the 5-tuple of `f`? A SYN without ACK
/// does when `f` has closed, or when its sequence number is not the one of the SYN
/// its sender sent before (a retransmitted SYN is not a new connection).
#[inline]
fn reuse(f: &Flow, p: &Packet<'_>) -> Option<EndReason> {
    if f.kind != Kind::Tcp || p.dec.l4 != L4::Tcp {
        return None;
    }
    let flags = p.dec.tcp.flags;
    if flags & (TcpFields::SYN | TcpFields::ACK) != TcpFields::SYN {
        return None;
    }
    let di = f.dir_of(p.src_is_lo);
    if f.tcp.closed() {
        return Some(end_reason(f, EndReason::SynReuse));
    }
    match f.dir[di].seq.syn_seq {
        Some(isn) if isn == p.dec.tcp.seq => None,
        // A SYN from a side that has sent data without one, or with a new ISN.
        _ if f.packets() > 0 && (f.dir[di].seq.syn_seq.is_some() || f.dir[di].pkts_all > 0) => {
            Some(EndReason::SynReuse)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests;
