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
    pub stats: TrackerStats,
}

impl Tracker {
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
                    f.fqdn = if self.late_names {
                        self.dns.lookup_before(f.dir[0].ip, f.dir[1].ip, p.ts_ns)
                    } else {
                        self.dns.lookup(f.dir[0].ip, f.dir[1].ip)
                    };
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
        if let (Some(cfg), Some(fresh)) = (self.cfg.l7.as_ref(), fresh) {
            on_payload(f, cfg, di, p, fresh, out, Ctx::new(self.late_names, &self.dns, self.anon.as_ref(), &self.cfg));
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
        let cfg = self.cfg;
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
) {
    let Some(l7) = f.l7.as_mut() else { return };
    if l7.is_done() {
        return;
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
    let held = tcp && l7.on_tcp_segment(cfg, dir, fresh.seg_at, len, bytes, p.ts_ns, fresh.next);
    if !held {
        let off = fresh.off as usize;
        if off >= p.dec.payload_len as usize {
            return;
        }
        if fresh.after_gap() {
            l7.on_gap(dir);
        }
        if !whole {
            l7.on_gap(dir);
            return;
        }
        l7.on_payload(cfg, dir, &p.payload[off..], p.ts_ns);
    }
    // Complete transactions go out now: a resolver's 5-tuple can live for hours.
    let (http, dns) = (l7.drain_http(false), l7.drain_dns(false));
    if !(http.is_empty() && dns.is_empty()) {
        name_late(f, ctx.late);
        out.at(p.now_ns);
    }
    emit_transactions(f, http, dns, out, ctx);
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
        l7.flush_held(cfg);
    }
    name_late(&mut f, ctx.late);
    if let (Some(a), Some(l7)) = (ctx.anon, f.l7.as_mut()) {
        // `http_hostname`, the SNIs: names the peers chose, which may be addresses;
        // the certificate's common names, which may hold some.
        l7.rewrite_names(|x| a.host(x, ctx.nets), |x| a.text(x, ctx.nets));
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
fn name_late(f: &mut Flow, late: Option<&DnsCache>) {
    if let Some(c) = late {
        if f.l7.is_some() {
            if let Some(n) = c.lookup_before(f.dir[0].ip, f.dir[1].ip, f.first_ns) {
                f.fqdn = Some(n);
            }
        }
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
        if let (Some(a), Some(r)) = (ctx.anon, tx.request.as_mut()) {
            anonymize_http(r, a, ctx.nets);
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

/// The addresses an HTTP request writes: a Host that is an address rather than a name,
/// and any address written in its target, Referer (their authority, a query's
/// `?ip=...`, a path) or User-Agent, each anonymized once.
fn anonymize_http(
    r: &mut tapstat_l7::http::HttpRequest,
    a: &crate::anon::Anonymizer,
    nets: Option<&crate::nets::Nets>,
) {
    if let Some(h) = r.host.as_deref().and_then(|h| a.host(h, nets)) {
        r.host = Some(h);
    }
    for t in [&mut r.url, &mut r.referer, &mut r.user_agent] {
        if let Some(v) = t.as_deref().and_then(|v| a.text(v, nets)) {
            *t = Some(v);
        }
    }
}

/// The addresses a DNS transaction writes (its answers, and the address spelled by a
/// reverse lookup's name), anonymized under the scope of `--anonymize-only`.
fn anonymize_dns(tx: &mut DnsTransaction, a: &crate::anon::Anonymizer, nets: Option<&crate::nets::Nets>) {
    use tapstat_l7::dns::parser::AnswerData;
    if let Some(r) = a.reverse_name(&tx.qname, nets) {
        tx.qname = r;
    }
    for ans in &mut tx.answers {
        if let Some(r) = a.reverse_name(&ans.name, nets) {
            ans.name = r;
        }
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
            AnswerData::Cname(n) => {
                if let Some(r) = a.reverse_name(n, nets) {
                    *n = r;
                }
            }
            AnswerData::Other => {}
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
mod tests {
    use super::*;
    use crate::flow::ClientRule;
    use tapstat_decode::{Decoded, TcpFields, L4};

    const S: u64 = 1_000_000_000;
    const C: u128 = 0x0a00_0001;
    const SRV: u128 = 0x0a00_0002;

    /// A TCP segment from client (`from_client`) or server, as the decoder gives it.
    fn seg(from_client: bool, flags: u8, seq: u32, payload: u32) -> Decoded {
        let (src, sport, dst, dport) = if from_client { (C, 40000, SRV, 80) } else { (SRV, 80, C, 40000) };
        Decoded {
            l4: L4::Tcp,
            ip_version: 4,
            proto: 6,
            src,
            dst,
            sport,
            dport,
            payload_len: payload,
            tcp: TcpFields { seq, ack: 1, flags, window: 1000, hdr_len: 20 },
            ..Default::default()
        }
    }

    /// Segment `d` as the pipeline hands it to the tracker: keyed and hashed, stamped
    /// `ts` with the input's clock at `now`, a 60-byte frame carrying `payload`.
    fn packet<'a>(h: &tapstat_flow::FlowHasher, ts: u64, now: u64, d: &'a Decoded, payload: &'a [u8]) -> Packet<'a> {
        let (key, src_is_lo) = tapstat_flow::FlowKey::new(4, 6, d.src, d.sport, d.dst, d.dport);
        Packet {
            ts_ns: ts,
            now_ns: now,
            wire_len: 60,
            key,
            hash: h.hash(&key),
            src_is_lo,
            dec: d,
            payload,
            dns_learnt: false,
            unanalysed: false,
        }
    }

    /// Feeds `(time in s, segment)` through a tracker and returns the finished flows.
    fn run(cfg: TrackerConfig, pkts: &[(u64, Decoded)]) -> Vec<Flow> {
        let mut t = Tracker::new(cfg);
        let mut clock = InputClock::default();
        let mut out = Vec::new();
        let h = tapstat_flow::FlowHasher::new(1);
        for (ts, d) in pkts {
            let now = clock.tick(ts * S);
            t.on_packet(&packet(&h, ts * S, now, d, &[]), &mut |f: &Flow| out.push(f.clone()));
        }
        t.finish(clock.now(), false, &mut |f: &Flow| out.push(f.clone()));
        out.sort_by_key(|f| f.first_ns);
        out
    }

    const SYN: u8 = TcpFields::SYN;
    const SYNACK: u8 = TcpFields::SYN | TcpFields::ACK;

    /// The time a record was due (`FlowSink::at`) is when its flow ended in packet
    /// time, not when the collector found it: a flow timed out at its last packet plus
    /// its timeout, the flows left at the end at the final clock.
    #[test]
    fn records_are_due_when_their_flows_ended_not_when_found() {
        struct Due(u64, Vec<(u64, u64)>);
        impl FlowSink for Due {
            fn on_flow_end(&mut self, f: &Flow) {
                self.1.push((f.first_ns, self.0));
            }
            fn at(&mut self, ns: u64) {
                self.0 = ns;
            }
        }
        let mut t = Tracker::new(TrackerConfig::default());
        let h = tapstat_flow::FlowHasher::new(1);
        let mut out = Due(0, Vec::new());
        let a = seg(true, SYN, 0, 0);
        let b = Decoded { sport: 40001, ..seg(true, SYN, 0, 0) };
        t.on_packet(&packet(&h, S, S, &a, &[]), &mut out);
        // Flow a, a single packet, timed out at 1 s + 10 s; the collector finds it at
        // 30 s, or the end does.
        t.on_packet(&packet(&h, 30 * S, 30 * S, &b, &[]), &mut out);
        t.on_packet(&packet(&h, 31 * S, 31 * S, &b, &[]), &mut out);
        t.finish(31 * S, false, &mut out);
        out.1.sort();
        assert_eq!(out.1, [(S, 11 * S + 1), (30 * S, 31 * S)]);
    }
    const ACK: u8 = TcpFields::ACK;
    const FINACK: u8 = TcpFields::FIN | TcpFields::ACK;

    fn handshake(t: u64, isn: u32) -> Vec<(u64, Decoded)> {
        vec![(t, seg(true, SYN, isn, 0)), (t, seg(false, SYNACK, 9000, 0)), (t, seg(true, ACK, isn + 1, 0))]
    }

    /// Flows of one packet keep only that packet (`Full::First`); the full sets' state
    /// comes at the second packet or the record, with the first packet in it.
    #[test]
    fn a_flow_of_one_packet_waits_in_it_and_its_record_has_it() {
        let h = tapstat_flow::FlowHasher::new(1);
        let mut t = Tracker::new(TrackerConfig::default());
        let mut out = Vec::new();
        let syns: Vec<Decoded> = (0..100u16).map(|i| Decoded { sport: 1000 + i, ..seg(true, SYN, 100, 0) }).collect();
        for d in &syns {
            t.on_packet(&packet(&h, S, S, d, &[]), &mut |f: &Flow| out.push(f.clone()));
        }
        // The first flow gets its answer: SYN/ACK 2 ms after the SYN.
        let mut synack = seg(false, SYNACK, 9000, 0);
        synack.dport = 1000;
        synack.tcp.ack = 101;
        t.on_packet(&packet(&h, S + 2_000_000, S + 2_000_000, &synack, &[]), &mut |f: &Flow| out.push(f.clone()));
        let mut folded = 0;
        t.table.for_each_mut(|_, _, f| folded += f.folded() as usize);
        assert_eq!(folded, 99, "one-packet flows hold no full state");
        t.finish(10 * S, false, &mut |f: &Flow| out.push(f.clone()));
        assert_eq!(out.len(), 100);
        for f in &out {
            assert!(!f.folded());
            let answered = f.dir[1].pkts_all == 1;
            assert_eq!(f.dir[0].port == 1000, answered);
            let st = &f.full_base().expect("full sets").stats;
            assert_eq!((st.size(0).n, st.size(0).min(), st.size(1).n), (1, Some(60), answered as u64));
            assert_eq!(f.full_base().unwrap().first.sizes(), if answered { &[60, 60][..] } else { &[60][..] });
            let e = f.e2e(0);
            assert_eq!((e.win_max, e.syn_ns, e.syn_opts.is_some()), (1000, S, true));
            // The SYN's time, kept in the folded state, times the handshake.
            assert_eq!(f.rtt_3whs[0], if answered { 2_000_000 } else { 0 });
        }
    }

    /// A counted-only packet (TED's tail packet) counts in its flow's packets, wire
    /// bytes and `pkts_unanalysed`, and in no sequence or payload counter.
    #[test]
    fn a_counted_only_packet_is_counted_not_analysed() {
        let h = tapstat_flow::FlowHasher::new(1);
        let mut t = Tracker::new(TrackerConfig::default());
        let mut out = Vec::new();
        for (ts, d) in handshake(1, 100) {
            t.on_packet(&packet(&h, ts * S, ts * S, &d, &[]), &mut |f: &Flow| out.push(f.clone()));
        }
        // Data the probe does not analyse: 1000 bytes each, 1514 on the wire, with a
        // sequence hole between them that analysis would count.
        for (i, seq) in [101u32, 5101].into_iter().enumerate() {
            let d = seg(true, ACK, seq, 1000);
            let mut p = packet(&h, 2 * S + i as u64, 2 * S + i as u64, &d, &[]);
            p.wire_len = 1514;
            p.unanalysed = true;
            t.on_packet(&p, &mut |f: &Flow| out.push(f.clone()));
        }
        let d = seg(false, ACK, 9001, 0);
        let mut p = packet(&h, 3 * S, 3 * S, &d, &[]);
        p.unanalysed = true;
        t.on_packet(&p, &mut |f: &Flow| out.push(f.clone()));
        t.finish(4 * S, false, &mut |f: &Flow| out.push(f.clone()));
        assert_eq!(out.len(), 1);
        let f = &out[0];
        assert_eq!((f.dir[0].pkts_all, f.dir[0].pkts_unanalysed, f.dir[0].bytes_wire), (4, 2, 60 * 2 + 1514 * 2));
        assert_eq!((f.dir[1].pkts_all, f.dir[1].pkts_unanalysed, f.dir[1].bytes_wire), (2, 1, 120));
        assert_eq!((f.dir[0].pkts_data, f.dir[0].bytes_all, f.dir[0].bytes_uniq), (0, 0, 0));
        assert_eq!((f.dir[0].pkts_ooo, f.dir[0].pkts_retx, f.dir[0].ack_cnt), (0, 0, 1));
        assert_eq!(f.dir[0].last_ns, 2 * S + 1);
        assert_eq!(f.last_ns, 3 * S);
        assert_eq!(t.stats.packets, 6);
    }

    /// `on_tails` (a held-tails record) counts as that many counted-only packets would,
    /// with one flow lookup: the flow's and the tracker's counts and the link histograms
    /// agree.
    #[test]
    fn tails_count_as_their_packets_would() {
        let h = tapstat_flow::FlowHasher::new(1);
        let run = |at_once: bool| {
            let mut t = Tracker::new(TrackerConfig { histo_ns: 60 * S, ..TrackerConfig::default() });
            let mut out = Vec::new();
            for (ts, d) in handshake(1, 100) {
                t.on_packet(&packet(&h, ts * S, ts * S, &d, &[]), &mut |f: &Flow| out.push(f.clone()));
            }
            let d = seg(true, ACK, 101, 1000);
            let mut p = packet(&h, 2 * S, 2 * S, &d, &[]);
            p.unanalysed = true;
            if at_once {
                p.wire_len = 3 * 1514 + 2;
                t.on_tails(&p, 3, &mut |f: &Flow| out.push(f.clone()));
                t.on_tails(&p, 0, &mut |f: &Flow| out.push(f.clone()));
            } else {
                for k in 0..3 {
                    p.wire_len = 1514 + u32::from(k < 2);
                    t.on_packet(&p, &mut |f: &Flow| out.push(f.clone()));
                }
            }
            t.finish(4 * S, false, &mut |f: &Flow| out.push(f.clone()));
            assert_eq!(out.len(), 1);
            let f = &out[0];
            let histo = t.take_histo().expect("histograms").rows();
            (
                f.dir[0].pkts_all,
                f.dir[0].pkts_unanalysed,
                f.dir[0].bytes_wire,
                f.dir[0].last_ns,
                f.last_ns,
                t.stats.packets,
                t.stats.wire_bytes,
                histo,
            )
        };
        let once = run(true);
        assert_eq!(once, run(false));
        assert_eq!((once.0, once.1, once.5), (5, 3, 6));
        // The link histograms count the held packets too.
        let ttl: u64 = once.7.iter().filter(|r| r.family.name() == "ttl").map(|r| r.count).sum();
        assert_eq!(ttl, 6);
    }

    /// A live run's histograms, taken an interval at a time as the clock passes their
    /// ends, are the whole run's: the scan before each hand-over ends the flows whose
    /// record is due in the intervals handed over.
    #[test]
    fn histograms_taken_as_the_clock_passes_are_the_whole_runs() {
        let h = tapstat_flow::FlowHasher::new(1);
        // No incremental collection: only the scan before a hand-over ends flow 0.
        let gc = tapstat_flow::GcConfig { period_ns: u64::MAX / 2, steps: 1 };
        let cfg = TrackerConfig { histo_ns: 60 * S, tcp_idle_ns: 10 * S, gc, ..TrackerConfig::default() };
        // Flow 0 at 1 s, idle past its timeout at 11 s; then one flow a minute.
        let mut pkts = handshake(1, 100);
        for k in 1..5u16 {
            for (t, d) in handshake(60 * u64::from(k) + 30, 100) {
                let port = 40000 + k;
                pkts.push((t, if d.sport == 80 { Decoded { dport: port, ..d } } else { Decoded { sport: port, ..d } }));
            }
        }
        let run = |take: bool| {
            let mut t = Tracker::new(cfg);
            let (mut out, mut rows, mut records_by_take) = (Vec::new(), Vec::new(), None);
            for (ts, d) in &pkts {
                t.on_packet(&packet(&h, ts * S, ts * S, d, &[]), &mut |f: &Flow| out.push(f.first_ns));
                if take && t.now_ns() >= 100 * S && records_by_take.is_none() {
                    let got = t.take_histo_before_now(0, &mut |f: &Flow| out.push(f.first_ns)).expect("histograms");
                    records_by_take = Some(out.clone());
                    rows.extend(got.rows());
                }
            }
            t.finish(5 * 60 * S, false, &mut |f: &Flow| out.push(f.first_ns));
            rows.extend(t.take_histo().expect("histograms").rows());
            (rows, records_by_take.unwrap_or_default(), out.len())
        };
        let (whole, _, n) = run(false);
        let (taken, by_take, n2) = run(true);
        assert_eq!((n, n2), (5, 5));
        assert_eq!(taken, whole);
        // At 150 s, [0, 60 s) and [60 s, 120 s) were handed over: flow 0 (due at 11 s)
        // had been ended for it.
        assert!(by_take.contains(&S), "{by_take:?}");
        assert!(whole.iter().any(|r| r.time_s == 0 && r.family == crate::histo::Family::App));
    }

    #[test]
    fn a_new_syn_after_a_close_starts_a_new_flow() {
        let mut p = handshake(1, 100);
        p.extend([(2, seg(true, FINACK, 101, 0)), (2, seg(false, FINACK, 9001, 0)), (2, seg(true, ACK, 102, 0))]);
        p.extend(handshake(3, 5000));
        let flows = run(TrackerConfig::default(), &p);
        assert_eq!(flows.len(), 2);
        assert_eq!(flows[0].end, EndReason::Fin);
        assert_eq!(flows[0].tcp.conn_state(), "SF");
        assert_eq!(flows[1].end, EndReason::EndOfInput);
        assert_eq!(flows[1].dir[0].pkts_all, 2);
    }

    #[test]
    fn a_retransmitted_syn_is_the_same_flow_and_a_new_isn_is_not() {
        let p = vec![(1, seg(true, SYN, 100, 0)), (2, seg(true, SYN, 100, 0))];
        let flows = run(TrackerConfig::default(), &p);
        assert_eq!(flows.len(), 1);
        assert_eq!(flows[0].dir[0].syn_cnt, 2);
        assert_eq!(flows[0].tcp.conn_state(), "S0");
        let mut p = handshake(1, 100);
        p.push((2, seg(true, SYN, 7777, 0)));
        let flows = run(TrackerConfig::default(), &p);
        assert_eq!(flows.len(), 2);
        assert_eq!(flows[0].end, EndReason::SynReuse);
    }

    #[test]
    fn idle_and_singleton_timeouts_split_in_packet_time() {
        let cfg = TrackerConfig::default();
        // 301 s of silence ends a TCP flow (300 s idle timeout); the next packet is
        // a new flow, whose client is its sender (no SYN).
        let mut p = handshake(1, 100);
        p.push((302, seg(false, ACK, 9001, 10)));
        let flows = run(cfg, &p);
        assert_eq!(flows.len(), 2);
        assert_eq!(flows[0].end, EndReason::Idle);
        assert_eq!(flows[1].client_rule, ClientRule::FirstPacket);
        assert_eq!(flows[1].dir[0].port, 80);
        // A single packet is forgotten after 10 s, not 300.
        let p = vec![(1, seg(true, ACK, 1, 0)), (12, seg(true, ACK, 1, 0))];
        assert_eq!(run(cfg, &p).len(), 2);
        let p = vec![(1, seg(true, ACK, 1, 0)), (10, seg(true, ACK, 1, 0))];
        assert_eq!(run(cfg, &p).len(), 1);
    }

    #[test]
    fn a_flow_first_seen_at_its_synack_has_the_receiver_as_client() {
        let p = vec![(1, seg(false, SYNACK, 9000, 0)), (1, seg(true, ACK, 101, 0))];
        let flows = run(TrackerConfig::default(), &p);
        assert_eq!(flows.len(), 1);
        assert_eq!(flows[0].client_rule, ClientRule::SynAck);
        assert_eq!(flows[0].dir[0].ip, C);
        assert_eq!(flows[0].tcp.conn_state(), "OTH");
    }

    /// An LLMNR, mDNS or NBNS answer sent by unicast to the querier's port is a flow of
    /// its own (the query went to the group address): its receiver, the querier, is the
    /// client. A datagram between two equal ports, or from another port, keeps its
    /// sender as client.
    #[test]
    fn a_multicast_query_answer_names_the_querier_as_client() {
        let h = tapstat_flow::FlowHasher::new(1);
        for (sport, dport, client_port, rule) in [
            (5355, 50000, 50000, ClientRule::AnswerPort),
            (5353, 50001, 50001, ClientRule::AnswerPort),
            (137, 50002, 50002, ClientRule::AnswerPort),
            (137, 137, 137, ClientRule::FirstPacket),
            (53, 50003, 53, ClientRule::FirstPacket),
            (50004, 5355, 50004, ClientRule::FirstPacket),
        ] {
            let d =
                Decoded { l4: L4::Udp, ip_version: 4, proto: 17, src: SRV, dst: C, sport, dport, ..Default::default() };
            let (key, src_is_lo) = tapstat_flow::FlowKey::new(4, 17, d.src, d.sport, d.dst, d.dport);
            let p = Packet {
                ts_ns: S,
                now_ns: S,
                wire_len: 60,
                key,
                hash: h.hash(&key),
                src_is_lo,
                dec: &d,
                payload: &[],
                dns_learnt: false,
                unanalysed: false,
            };
            let mut t = Tracker::new(TrackerConfig::default());
            let mut out = Vec::new();
            t.on_packet(&p, &mut |f: &Flow| out.push(f.clone()));
            t.finish(S, false, &mut |f: &Flow| out.push(f.clone()));
            assert_eq!(out.len(), 1);
            assert_eq!((out[0].client_rule, out[0].dir[0].port), (rule, client_port), "{sport} -> {dport}");
            assert_eq!(out[0].dir[0].ip, if rule == ClientRule::AnswerPort { C } else { SRV });
            assert_eq!(
                out[0].dir[1].pkts_all,
                (rule == ClientRule::AnswerPort) as u64,
                "the answer counts for the server side"
            );
        }
    }

    /// A segment with an ACK number, at a time in ms.
    fn ack_seg(from_client: bool, flags: u8, seq: u32, ack: u32, payload: u32) -> Decoded {
        let mut d = seg(from_client, flags, seq, payload);
        d.tcp.ack = ack;
        d
    }

    fn run_ms(pkts: &[(u64, Decoded)]) -> Vec<Flow> {
        let mut t = Tracker::new(TrackerConfig::default());
        let h = tapstat_flow::FlowHasher::new(1);
        let mut out = Vec::new();
        for (ms, d) in pkts {
            let ts = S + ms * 1_000_000;
            t.on_packet(&packet(&h, ts, ts, d, &[]), &mut |f: &Flow| out.push(f.clone()));
        }
        t.finish(S + 10 * S, false, &mut |f: &Flow| out.push(f.clone()));
        out
    }

    /// The application layer sees each direction's bytes once, in order: a
    /// retransmission feeds nothing, and a segment that overlaps what was seen feeds
    /// only its new tail. A request split in three segments, the second sent twice and
    /// the third overlapping it, parses as one request with its host; a HTTP log row
    /// comes out for it.
    #[test]
    fn the_application_layer_gets_the_stream_once_in_order() {
        let req = b"GET /a HTTP/1.1\r\nHost: example.org\r\nUser-Agent: t\r\n\r\n";
        let (a, b) = (20u32, 30u32); // the overlap falls inside the host name
        let segs: Vec<(u64, Decoded, std::ops::Range<usize>)> = vec![
            (0, ack_seg(true, SYN, 100, 0, 0), 0..0),
            (1, ack_seg(false, SYNACK, 9000, 101, 0), 0..0),
            (2, ack_seg(true, ACK, 101, 9001, 0), 0..0),
            (3, ack_seg(true, ACK, 101, 9001, a), 0..a as usize),
            (4, ack_seg(true, ACK, 101 + a, 9001, b - a), a as usize..b as usize),
            (5, ack_seg(true, ACK, 101 + a, 9001, b - a), a as usize..b as usize), // again
            (6, ack_seg(true, ACK, 101 + b - 5, 9001, req.len() as u32 - b + 5), b as usize - 5..req.len()),
        ];
        struct Out(Vec<Flow>, Vec<HttpRow>);
        impl FlowSink for Out {
            fn on_flow_end(&mut self, f: &Flow) {
                self.0.push(f.clone());
            }
            fn on_http(&mut self, row: &HttpRow) {
                self.1.push(HttpRow { flow: row.flow.clone(), tx: row.tx.clone() });
            }
        }
        let mut t = Tracker::new(TrackerConfig::default());
        let h = tapstat_flow::FlowHasher::new(1);
        let mut out = Out(Vec::new(), Vec::new());
        for (ms, d, r) in &segs {
            let ts = S + ms * 1_000_000;
            t.on_packet(&packet(&h, ts, ts, d, &req[r.clone()]), &mut out);
        }
        t.finish(S + 10 * S, false, &mut out);
        let f = &out.0[0];
        let http = f.l7.as_ref().and_then(|x| x.http()).expect("an HTTP flow");
        assert_eq!((http.requests, http.first_host.as_deref()), (1, Some("example.org")));
        assert_eq!(out.1.len(), 1);
        let q = out.1[0].tx.request.as_ref().expect("the request");
        assert_eq!((q.method.as_str(), q.host.as_deref()), ("GET", Some("example.org")));
    }

    /// A sink that keeps the records and the HTTP rows.
    struct Rows(Vec<Flow>, Vec<HttpRow>);

    impl FlowSink for Rows {
        fn on_flow_end(&mut self, f: &Flow) {
            self.0.push(f.clone());
        }
        fn on_http(&mut self, row: &HttpRow) {
            self.1.push(HttpRow { flow: row.flow.clone(), tx: row.tx.clone() });
        }
    }

    /// One HTTP connection through a tracker: the handshake, then each piece
    /// `(from_client, bytes, captured)` as one segment, in sequence order, 1 ms apart.
    /// A piece not captured takes its room in the sequence space and is never seen.
    fn http_connection(pieces: &[(bool, &[u8], bool)]) -> Rows {
        let mut t = Tracker::new(TrackerConfig::default());
        let h = tapstat_flow::FlowHasher::new(1);
        let mut out = Rows(Vec::new(), Vec::new());
        let mut next = [101u32, 9001u32];
        let mut ms = 0;
        let mut feed = |d: Decoded, payload: &[u8], out: &mut Rows| {
            ms += 1;
            let ts = S + ms * 1_000_000;
            t.on_packet(&packet(&h, ts, ts, &d, payload), out);
        };
        feed(ack_seg(true, SYN, 100, 0, 0), &[], &mut out);
        feed(ack_seg(false, SYNACK, 9000, 101, 0), &[], &mut out);
        feed(ack_seg(true, ACK, 101, 9001, 0), &[], &mut out);
        for &(from_client, bytes, captured) in pieces {
            let i = usize::from(!from_client);
            let d = ack_seg(from_client, ACK, next[i], next[1 - i], bytes.len() as u32);
            next[i] += bytes.len() as u32;
            if captured {
                feed(d, bytes, &mut out);
            }
        }
        t.finish(S + 10 * S, false, &mut out);
        out
    }

    /// The TSV text of column `name` of a flow's record.
    fn column(f: &Flow, name: &str) -> String {
        let log = crate::logs::LogId::of(f).log_for(TcpSets::Full, true);
        let c = log.columns.iter().find(|c| c.field.name == name).expect("the column");
        let mut v = Vec::new();
        tapstat_record::tsv::value((c.get)(f), &mut v);
        String::from_utf8(v).expect("UTF-8")
    }

    /// The TSV text of column `name` of an HTTP row.
    fn http_column(r: &HttpRow, name: &str) -> String {
        let c = crate::l7log::HTTP.columns.iter().find(|c| c.field.name == name).expect("the column");
        let mut v = Vec::new();
        tapstat_record::tsv::value((c.get)(r), &mut v);
        String::from_utf8(v).expect("UTF-8")
    }

    /// A record says when the application layer hit a limit: the HTTP transaction cap
    /// (64 a flow) shows in `l7_events`, and a flow that hit nothing has no value there.
    #[test]
    fn the_http_transaction_cap_shows_in_l7_events() {
        let reqs: Vec<String> = (0..70).map(|i| format!("GET /{i} HTTP/1.1\r\nHost: h\r\n\r\n")).collect();
        let mut pieces: Vec<(bool, &[u8], bool)> = Vec::new();
        for r in &reqs {
            pieces.push((true, r.as_bytes(), true));
            pieces.push((false, b"HTTP/1.1 204 No Content\r\n\r\n", true));
        }
        let out = http_connection(&pieces);
        assert_eq!(out.1.len(), 64);
        assert_eq!(column(&out.0[0], "l7_events"), "[http_too_many_transactions]");
        // Each row went out when its response came, before the 65th request hit the cap.
        assert_eq!(http_column(&out.1[63], "l7_events"), "");

        let out = http_connection(&pieces[..4]);
        assert_eq!(column(&out.0[0], "l7_events"), "");
    }

    /// A segment lost at the probe inside a response body: the engine tells the
    /// application layer of the gap, and the next response, at a segment that starts with
    /// its status line, is still logged and paired with its request; the record says
    /// `http_gap`. Before, the bytes after the gap were read as the lost body's rest, the
    /// next head was swallowed and the response never logged.
    #[test]
    fn a_gap_in_a_response_body_is_resynchronised() {
        let out = http_connection(&[
            (true, b"GET /big HTTP/1.1\r\nHost: h\r\n\r\n", true),
            (false, b"HTTP/1.1 200 OK\r\nContent-Length: 30\r\n\r\n0123456789", true),
            (false, b"0123456789", false),
            (false, b"0123456789", true),
            (true, b"GET /next HTTP/1.1\r\nHost: h\r\n\r\n", true),
            (false, b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", true),
        ]);
        let got: Vec<_> = out
            .1
            .iter()
            .map(|r| (r.tx.request.as_ref().and_then(|q| q.url.clone()), r.tx.response.as_ref().map(|s| s.status)))
            .collect();
        assert_eq!(got, [(Some("/big".to_string()), Some(200)), (Some("/next".to_string()), Some(404))]);
        assert_eq!(column(&out.0[0], "l7_events"), "[http_gap]");
        // A row carries the events its flow met by the time it was written.
        assert_eq!(http_column(&out.1[0], "l7_events"), "");
        assert_eq!(http_column(&out.1[1], "l7_events"), "[http_gap]");
    }

    /// `d` with the timestamps option.
    fn with_ts(mut d: Decoded, val: u32, ecr: u32) -> Decoded {
        d.tcp_opts.has_ts = true;
        d.tcp_opts.ts_val = val;
        d.tcp_opts.ts_ecr = ecr;
        d
    }

    #[test]
    fn timestamp_rtt_needs_no_karn_and_ignores_pure_acks() {
        let p = vec![
            (0, with_ts(ack_seg(true, SYN, 100, 0, 0), 1, 0)),
            (10, with_ts(ack_seg(false, SYNACK, 9000, 101, 0), 50, 1)), // echoes the SYN: 10 ms
            (12, with_ts(ack_seg(true, ACK, 101, 9001, 0), 2, 50)),     // echoes the SYN/ACK: 2 ms
            (12, with_ts(ack_seg(true, ACK, 101, 9001, 100), 3, 50)),   // data 101..201, lost
            (40, with_ts(ack_seg(true, ACK, 101, 9001, 100), 4, 50)),   // sent again, new TSval
            (50, with_ts(ack_seg(false, ACK, 9001, 201, 0), 51, 4)),    // echoes the second: 10 ms
            (60, with_ts(ack_seg(true, ACK, 201, 9001, 0), 5, 51)),     // pure ACK: not timed
            (5000, with_ts(ack_seg(false, ACK, 9001, 201, 10), 52, 5)), // echoes it much later
        ];
        let f = &run_ms(&p)[0];
        let c = &f.e2e(0).ts.rtt_us;
        assert_eq!((c.n, c.min(), c.max()), (2, Some(10_000), Some(10_000)));
        let s = &f.e2e(1).ts.rtt_us;
        assert_eq!((s.n, s.mean()), (1, Some(2_000.0)));
        // The sequence-number RTT gave up on the retransmitted segment (Karn).
        assert_eq!(f.e2e(0).rtt_cnt, 1);
    }

    #[test]
    fn rtt_samples_follow_tcptrace_and_karn() {
        // Client ISN 100, server ISN 9000; the probe sits 10 ms from the server and
        // 2 ms from the client.
        let p = vec![
            (0, ack_seg(true, SYN, 100, 0, 0)),
            (10, ack_seg(false, SYNACK, 9000, 101, 0)),
            (12, ack_seg(true, ACK, 101, 9001, 0)),
            (12, ack_seg(true, ACK | TcpFields::PSH, 101, 9001, 100)), // data 101..201
            (22, ack_seg(false, ACK, 9001, 201, 0)),                   // RTT 10 ms
            (23, ack_seg(true, ACK, 201, 9001, 100)),                  // data 201..301
            (40, ack_seg(true, ACK, 201, 9001, 100)),                  // sent again: Karn
            (50, ack_seg(false, ACK, 9001, 301, 0)),                   // no sample
        ];
        let f = &run_ms(&p)[0];
        let c = f.e2e(0);
        // SYN → SYN/ACK (10 ms) and the first data segment (10 ms); not the one sent twice.
        assert_eq!(c.rtt_cnt, 2);
        let (avg, std, min, max) = c.rtt_ms().unwrap();
        assert_eq!((avg, std, min, max), (10.0, 0.0, 10.0, 10.0));
        // The server's SYN/ACK → the client's ACK: 2 ms.
        assert_eq!(f.e2e(1).rtt_cnt, 1);
        assert_eq!(f.e2e(1).rtt_ms().unwrap().0, 2.0);
        assert_eq!(f.rtt_3whs, [10_000_000, 2_000_000]);
        assert_eq!(c.pkts_push, 1);
        assert_eq!(f.dir[0].pkts_retx, 1);
        // In flight: 100 bytes when each segment left (the first ACK of data came in between).
        assert_eq!((c.cwin_ini, c.cwin_max), (100, 100));
    }

    #[test]
    fn windows_are_scaled_once_both_syns_offered_scaling() {
        let mut syn = ack_seg(true, SYN, 100, 0, 0);
        syn.tcp_opts = tapstat_decode::TcpOptions { mss: 1460, wscale: 7, has_wscale: true, ..Default::default() };
        let mut synack = ack_seg(false, SYNACK, 9000, 101, 0);
        synack.tcp_opts = tapstat_decode::TcpOptions { mss: 1400, wscale: 2, has_wscale: true, ..Default::default() };
        let mut ack = ack_seg(true, ACK, 101, 9001, 0);
        ack.tcp.window = 10;
        let f = &run_ms(&[(0, syn), (1, synack), (2, ack)])[0];
        assert_eq!(f.win_scale(0), 7);
        assert_eq!(f.win_scale(1), 2);
        // The SYN's 1000 is not scaled, the ACK's 10 is: 10 << 7.
        assert_eq!((f.e2e(0).win_min, f.e2e(0).win_max), (1000, 1280));
        assert_eq!(f.e2e(1).syn_opts.unwrap().mss, 1400);
    }

    #[test]
    fn a_full_table_evicts_the_flow_idle_longest_and_says_so() {
        let cfg = TrackerConfig { capacity: 2, ..Default::default() };
        let mut t = Tracker::new(cfg);
        let h = tapstat_flow::FlowHasher::new(1);
        let mut out: Vec<Flow> = Vec::new();
        for (i, port) in [1000u16, 1001, 1002].into_iter().enumerate() {
            let mut d = seg(true, SYN, 1, 0);
            d.sport = port;
            let ts = (i as u64 + 1) * S;
            t.on_packet(&packet(&h, ts, ts, &d, &[]), &mut |f: &Flow| out.push(f.clone()));
        }
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].end, EndReason::Evicted);
        assert_eq!(out[0].dir[0].port, 1000);
        assert_eq!(t.stats.evictions, 1);
        t.finish(3 * S, false, &mut |f: &Flow| out.push(f.clone()));
        assert_eq!(out.len(), 3, "nothing is lost: every flow is written once");
    }

    /// A run grouped by flow and held at its first clock ends the flows that input order
    /// ends; grouped on the latest clock instead, the collector and the lookup would
    /// see a later flow's time and split a flow that input order keeps.
    #[test]
    fn a_held_run_grouped_by_flow_keeps_the_flows_of_input_order() {
        // Idle timeouts 60 s; the collector scans the whole table at every packet.
        let cfg = TrackerConfig {
            tcp_idle_ns: 60 * S,
            singleton_ns: 60 * S,
            gc: GcConfig { period_ns: 1, steps: 1 },
            ..Default::default()
        };
        let h = tapstat_flow::FlowHasher::new(1);
        let data = |port: u16, seq: u32| Decoded { sport: port, ..seg(true, ACK, seq, 10) };
        let (a, b) = (40000, 40001);
        // Input order: A at 0 s; then a batch B 40, A 55, B 70, A 80. A is never idle
        // 60 s at its own packets. Grouped by last packets: B 40, B 70, A 55, A 80.
        let first = data(a, 1);
        let batch = [(40, data(b, 1)), (55, data(a, 11)), (70, data(b, 11)), (80, data(a, 21))];
        let grouped = [0usize, 2, 1, 3];
        let ends = |mode: u8| {
            let mut t = Tracker::new(cfg);
            let mut out: Vec<Flow> = Vec::new();
            let mut sink = |f: &Flow| out.push(f.clone());
            t.on_packet(&packet(&h, 0, 0, &first, &[]), &mut sink);
            let order: Vec<usize> = if mode == 0 { vec![0, 1, 2, 3] } else { grouped.to_vec() };
            for i in order {
                let (ts, d) = &batch[i];
                let p = packet(&h, ts * S, ts * S, d, &[]);
                match mode {
                    0 | 2 => t.on_packet(&p, &mut sink),
                    _ => t.on_packet_held(&p, 40 * S, &mut sink),
                }
            }
            t.advance(80 * S);
            t.finish(80 * S, false, &mut sink);
            let mut v: Vec<(u16, u64, u64, EndReason)> =
                out.iter().map(|f| (f.dir[0].port.max(f.dir[1].port), f.first_ns, f.packets(), f.end)).collect();
            v.sort_by_key(|x| (x.0, x.1));
            v
        };
        let input = ends(0);
        assert_eq!(input, vec![(a, 0, 3, EndReason::EndOfInput), (b, 40 * S, 2, EndReason::EndOfInput)]);
        assert_eq!(ends(1), input, "held at the run's first clock");
        assert_ne!(ends(2), input, "on the latest clock, A is split at 55 s");
    }

    #[test]
    fn the_input_clock_ignores_reordering_and_survives_steps_back() {
        let mut c = InputClock::default();
        let s = 1_000_000_000u64;
        let t0 = 1_700_000_000 * s;
        assert_eq!(c.tick(t0), t0);
        assert_eq!(c.tick(t0 + s), t0 + s);
        // a packet 1 ms late: no effect
        assert_eq!(c.tick(t0 + s - 1_000_000), t0 + s);
        assert_eq!(c.tick(t0 + 2 * s), t0 + 2 * s);
        // the capture's clock is reset 5 hours back: the input clock stays, then
        // follows the packets' steps forward from there
        let back = t0 + 2 * s - 18_000 * s;
        assert_eq!(c.tick(back), t0 + 2 * s);
        assert_eq!(c.tick(back + 2 * s), t0 + 4 * s);
        // a forward jump of a day counts in full
        assert_eq!(c.tick(back + 2 * s + 86_400 * s), t0 + 4 * s + 86_400 * s);
        // forward to the end of time, back, forward again (found by the engine fuzz
        // target): the clock saturates instead of wrapping
        let mut c = InputClock::default();
        c.tick(1);
        assert_eq!(c.tick(u64::MAX), u64::MAX);
        assert_eq!(c.tick(s), u64::MAX);
        assert_eq!(c.tick(3 * s), u64::MAX);
    }
}
