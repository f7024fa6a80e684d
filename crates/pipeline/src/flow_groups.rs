//! Flow-affinity batches: the order in which a worker accounts a batch's packets,
//! grouped by flow (see [`FlowGroups`]).

use crate::dispatch::{Batch, Pkt};
use crate::worker::Worker;
use tapstat_analyze::dnhunter;
use tapstat_decode::Fragment;

/// Accounts batch `b` grouped by flow: the stretches that `groups` plans, each held run with
/// its clock held at its first packet's and moved to its last packet's after it.
pub(crate) fn account_grouped(work: &mut Worker, b: &Batch, groups: &mut FlowGroups) {
    groups.plan(&b.pkts, !b.wholes.is_empty());
    let g = &*groups;
    let mut from = 0;
    for run in &g.stretches {
        for &i in &g.order[from..run.end as usize] {
            let p = &b.pkts[i as usize];
            let frame = tapstat_capture::bytes_at(&*b.backing, p.offset, p.caplen);
            let whole =
                || g.whole_of.get(i as usize).and_then(|&w| b.wholes.get(w as usize)).and_then(Option::as_deref);
            work.packet_at(
                p,
                frame,
                whole,
                b.answers.as_deref().map_or(&[][..], Vec::as_slice),
                run.held.map(|(first, _)| first),
            );
        }
        if let Some((_, last)) = run.held {
            work.tracker.advance(last);
        }
        from = run.end as usize;
    }
}

/// A stretch of [`FlowGroups::order`]: up to `end`, in input order (`held: None`) or
/// grouped by flow with the clocks of its first and last packets in input order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stretch {
    pub(crate) end: u32,
    pub(crate) held: Option<(u64, u64)>,
}

/// Flow-affinity batches (DPDKStat, §7, "Sorting packets"): the order in
/// which a worker accounts a batch's packets, grouped by flow so that a flow's state
/// and its table lines are brought into the cache once per batch rather than once per
/// packet. Off by default: on the captures measured, the planning pass costs more than
/// the grouping saves (docs/BENCHMARKS.md, "Flow-affinity batches").
///
/// A batch is cut into segments; a segment's packets are grouped by flow hash, each
/// group in input order (a flow's packets keep their order), the groups in the order of
/// their flows' *last* packets in the segment, so the flow table's LRU list ends the
/// segment in the order input order leaves it. The cuts make the records those of
/// input order (the proof is at [`Tracker::on_packet_held`](tapstat_analyze::Tracker::on_packet_held) and in
/// docs/ARCHITECTURE.md, "Flow-affinity batches"):
/// - every packet that teaches DNS answers (a DNS response, a `learn_only` copy, a
///   packet with `learnt` answers) is a run of its own, in its place: the answers a
///   flow's first packet finds (`fqdn`) are those of input order;
/// - with `--periodic`, a segment never spans a periodic boundary;
/// - a grouped segment is a held run: the tracker collects garbage and passes
///   periodic boundaries on the clock of the segment's first packet, and judges each
///   packet's flow on the packet's own clock.
///
/// A segment whose packets are all of different flows keeps input order and is not
/// held (grouping would change nothing).
pub(crate) struct FlowGroups {
    /// `--periodic`'s interval (0: off).
    pub(crate) periodic_ns: u64,
    /// The batch's packet indexes in the order to account them, and its stretches.
    pub(crate) order: Vec<u32>,
    pub(crate) stretches: Vec<Stretch>,
    /// Each packet's index in the batch's `wholes` (for IP fragments), filled only for
    /// a batch that has some.
    pub(crate) whole_of: Vec<u32>,
    /// The next packet of the same group (indexed by packet), and each group's first.
    pub(crate) next: Vec<u32>,
    pub(crate) heads: Vec<u32>,
    /// Open addressing, flow hash → group: (hash, group, stamp); an entry is live only
    /// when its stamp is the segment's, so the map is never cleared.
    pub(crate) map: Vec<(u64, u32, u32)>,
    pub(crate) stamp: u32,
}

/// No packet: the end of a group's list.
pub(crate) const NIL: u32 = u32::MAX;

impl FlowGroups {
    pub(crate) fn new(periodic_ns: u64) -> Self {
        FlowGroups {
            periodic_ns,
            order: Vec::new(),
            stretches: Vec::new(),
            whole_of: Vec::new(),
            next: Vec::new(),
            heads: Vec::new(),
            map: Vec::new(),
            stamp: 0,
        }
    }

    /// A packet that must keep its place: it teaches DNS answers (see
    /// [`tapstat_analyze::dnhunter`]).
    #[inline]
    pub(crate) fn keeps_place(p: &Pkt) -> bool {
        p.learn_only || p.learnt.is_some() || dnhunter::is_dns_response(&p.dec)
    }

    /// Plans the order of `pkts` (`order`, `stretches`); `fragments`: the batch carries
    /// reassembled payloads (`whole_of` is then filled).
    pub(crate) fn plan(&mut self, pkts: &[Pkt], fragments: bool) {
        self.order.clear();
        self.stretches.clear();
        self.next.clear();
        self.next.resize(pkts.len(), NIL);
        if fragments {
            self.whole_of.clear();
            let mut w = 0;
            for p in pkts {
                self.whole_of.push(w);
                w += (p.dec.fragment != Fragment::No) as u32;
            }
        }
        let mut i = 0;
        while i < pkts.len() {
            if Self::keeps_place(&pkts[i]) {
                self.order.push(i as u32);
                self.stretches.push(Stretch { end: self.order.len() as u32, held: None });
                i += 1;
                continue;
            }
            let start = i;
            let period = self.period_of(&pkts[i]);
            i += 1;
            while i < pkts.len() && !Self::keeps_place(&pkts[i]) && self.period_of(&pkts[i]) == period {
                i += 1;
            }
            self.group(pkts, start, i);
        }
    }

    /// The periodic interval packet `p` falls in (0 without `--periodic`).
    #[inline]
    pub(crate) fn period_of(&self, p: &Pkt) -> u64 {
        p.now_ns.checked_div(self.periodic_ns).unwrap_or(0)
    }

    /// Appends segment `pkts[start..end]`, grouped, to `order` as one run.
    pub(crate) fn group(&mut self, pkts: &[Pkt], start: usize, end: usize) {
        let len = end - start;
        let cap = (2 * len).next_power_of_two().max(16);
        if self.map.len() < cap {
            self.map = vec![(0, 0, 0); cap];
            self.stamp = 0;
        }
        if self.stamp == u32::MAX {
            self.map.fill((0, 0, 0));
            self.stamp = 0;
        }
        self.stamp += 1;
        let (stamp, mask, shift) = (self.stamp, cap - 1, 64 - cap.trailing_zeros());
        self.heads.clear();
        let (mut first_ns, mut last_ns) = (u64::MAX, 0);
        // Backwards: a group is made at its flow's last packet, so the groups come in
        // reverse order of their last packets, and each list, built by pushing at its
        // head, in input order.
        for i in (start..end).rev() {
            let p = &pkts[i];
            first_ns = first_ns.min(p.now_ns);
            last_ns = last_ns.max(p.now_ns);
            // The top bits of a multiply: the flow hash's low bits may be weak (CRC,
            // CoralReef), and the worker choice used other bits already.
            let mut k = (p.hash.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize;
            let g = loop {
                let e = &mut self.map[k];
                if e.2 != stamp {
                    *e = (p.hash, self.heads.len() as u32, stamp);
                    self.heads.push(NIL);
                    break self.heads.len() - 1;
                }
                if e.0 == p.hash {
                    break e.1 as usize;
                }
                k = (k + 1) & mask;
            };
            self.next[i] = self.heads[g];
            self.heads[g] = i as u32;
        }
        for &h in self.heads.iter().rev() {
            let mut i = h;
            while i != NIL {
                self.order.push(i);
                i = self.next[i as usize];
            }
        }
        // All of different flows: the order is input order, accounted as such.
        let held = (self.heads.len() < len).then_some((first_ns, last_ns));
        self.stretches.push(Stretch { end: self.order.len() as u32, held });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tapstat_decode::{Decoded, L4};

    /// A TCP packet of the flow with hash `hash`, at the input's clock `now`.
    fn pkt(hash: u64, now: u64) -> Pkt {
        let dec = Decoded { l4: L4::Tcp, sport: 40000, dport: 80, ..Default::default() };
        Pkt { ts_ns: now, now_ns: now, wire_len: 60, caplen: 60, offset: 0, hash, learn_only: false, learnt: None, dec }
    }

    /// A DNS response (UDP from port 53, with a payload) of flow `hash`.
    fn dns(hash: u64, now: u64) -> Pkt {
        let dec = Decoded { l4: L4::Udp, sport: 53, dport: 5353, payload_len: 40, ..Default::default() };
        Pkt { dec, ..pkt(hash, now) }
    }

    /// A planned run: its packet indexes and held clocks.
    type Planned = (Vec<u32>, Option<(u64, u64)>);

    /// The planned stretches.
    fn stretches(g: &FlowGroups) -> Vec<Planned> {
        let mut from = 0;
        g.stretches
            .iter()
            .map(|r| {
                let v = g.order[from..r.end as usize].to_vec();
                from = r.end as usize;
                (v, r.held)
            })
            .collect()
    }

    /// Grouping is stable (a flow's packets keep their order) and the groups come in
    /// the order of their flows' last packets; the run is held at its first and last
    /// clocks.
    #[test]
    fn a_batch_is_grouped_by_flow_stably_in_the_order_of_last_packets() {
        let (a, b, c) = (11, 22, 33);
        let pkts: Vec<Pkt> = [a, b, a, c, b, a].iter().enumerate().map(|(i, &h)| pkt(h, 100 + i as u64)).collect();
        let mut g = FlowGroups::new(0);
        g.plan(&pkts, false);
        assert_eq!(stretches(&g), vec![(vec![3, 1, 4, 0, 2, 5], Some((100, 105)))]);
    }

    /// Every packet that teaches DNS answers keeps its place, alone: a DNS response,
    /// a `learn_only` copy, a packet with answers parsed by the dispatcher.
    #[test]
    fn dns_answers_cut_a_batch_into_segments_grouped_apart() {
        let (a, b) = (11, 22);
        let mut copy = pkt(99, 0);
        copy.learn_only = true;
        let mut parsed = pkt(98, 0);
        parsed.learnt = Some(0);
        let mut pkts = vec![pkt(a, 0), pkt(b, 1), pkt(a, 2), dns(77, 3), pkt(b, 4), pkt(a, 5), pkt(b, 6)];
        pkts.extend([copy, pkt(a, 8), pkt(a, 9), parsed, pkt(b, 11)]);
        for (i, p) in pkts.iter_mut().enumerate() {
            p.now_ns = i as u64;
        }
        let mut g = FlowGroups::new(0);
        g.plan(&pkts, false);
        assert_eq!(
            stretches(&g),
            vec![
                (vec![1, 0, 2], Some((0, 2))),
                (vec![3], None),
                (vec![5, 4, 6], Some((4, 6))),
                (vec![7], None),
                (vec![8, 9], Some((8, 9))),
                (vec![10], None),
                (vec![11], None),
            ]
        );
    }

    /// Packets all of different flows stay in input order, not held; with
    /// `--periodic`, no segment spans a boundary.
    #[test]
    fn distinct_flows_keep_input_order_and_segments_stop_at_periodic_boundaries() {
        let pkts: Vec<Pkt> = (0..5).map(|i| pkt(i, i)).collect();
        let mut g = FlowGroups::new(0);
        g.plan(&pkts, false);
        assert_eq!(stretches(&g), vec![(vec![0, 1, 2, 3, 4], None)]);

        let (a, b) = (11, 22);
        let pkts = vec![pkt(a, 1), pkt(b, 5), pkt(a, 9), pkt(b, 10), pkt(a, 12), pkt(b, 19), pkt(a, 20)];
        let mut g = FlowGroups::new(10);
        g.plan(&pkts, false);
        assert_eq!(
            stretches(&g),
            vec![(vec![1, 0, 2], Some((1, 9))), (vec![4, 3, 5], Some((10, 19))), (vec![6], None)]
        );
    }

    /// Reassembled payloads travel in the order of the fragments: each fragment finds
    /// its own wherever grouping puts it.
    #[test]
    fn fragments_find_their_reassembled_payloads_out_of_order() {
        let (a, b) = (11, 22);
        let mut pkts = vec![pkt(a, 0), pkt(b, 1), pkt(a, 2), pkt(b, 3)];
        pkts[1].dec.fragment = Fragment::First;
        pkts[3].dec.fragment = Fragment::First;
        let mut g = FlowGroups::new(0);
        g.plan(&pkts, true);
        assert_eq!(stretches(&g), vec![(vec![0, 2, 1, 3], Some((0, 3)))]);
        assert_eq!((g.whole_of[1], g.whole_of[3]), (0, 1));
    }

    /// Over many random batches (few flows, some DNS, growing and shrinking segments
    /// that reuse the map): every packet once, each flow's packets in input order.
    #[test]
    fn grouping_is_a_stable_permutation_of_every_batch() {
        let mut g = FlowGroups::new(0);
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut rnd = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for round in 0..500u64 {
            let n = rnd(600) as usize;
            let flows = 1 + rnd(if round % 2 == 0 { 8 } else { 400 });
            let pkts: Vec<Pkt> = (0..n as u64)
                .map(|i| if rnd(50) == 0 { dns(1000, i) } else { pkt(rnd(flows).wrapping_mul(0x1234_5678_9ABC), i) })
                .collect();
            g.plan(&pkts, false);
            let mut seen = g.order.clone();
            seen.sort_unstable();
            assert_eq!(seen, (0..n as u32).collect::<Vec<_>>());
            let mut last: std::collections::HashMap<u64, u32> = Default::default();
            for &i in &g.order {
                let h = pkts[i as usize].hash;
                if let Some(&j) = last.get(&h) {
                    assert!(j < i, "flow {h:x}: packet {i} after {j}");
                }
                last.insert(h, i);
            }
            assert_eq!(g.stretches.last().map_or(0, |r| r.end) as usize, n);
        }
    }
}
