//! DN-Hunter (Bermudez et al., "DNS to the rescue", IMC 2012): the name a client
//! resolved for an address, joined to the flows it then opens to that address.
//!
//! Each worker keeps its own bounded cache of answered (client, address) → name. A DNS
//! response and the flows it names usually hash to different workers, so the
//! dispatcher hands every DNS response to every worker, in its place in the packet
//! stream, to learn from ([`DnsCache::learn`]); only the response's own worker accounts
//! it. Every worker thus sees the same answers in the same order relative to its own
//! packets, whatever the number of workers: the caches agree where it matters, and a
//! flow gets its name from the responses before its first packet, never after.
//! Architecture invariant: nothing is shared between workers but these messages.
//!
//! Live capture has no dispatcher: the kernel or the NIC gives each response to one
//! worker. There a worker that learns answers from its own packets also keeps them as
//! [`DnsAnswer`]s ([`DnsCache::share`], [`DnsCache::take_shared`]) for the engine to
//! hand to the other workers, which insert them ([`DnsCache::insert_answer`]). An
//! answer may then arrive after a flow it names has started, so such caches also keep
//! the latest names of each pair by packet time, and a flow is named by the latest
//! answer stamped no later than its first packet ([`DnsCache::lookup_before`]).

use hashbrown::HashMap;
use std::collections::VecDeque;
use std::net::IpAddr;
use std::sync::Arc;
use tapstat_l7::dns::parser::{AnswerData, Message};

/// Is `d` a DNS response over UDP (from port 53, with a payload)? Such packets are
/// learnt from by every worker.
#[inline]
pub fn is_dns_response(d: &tapstat_decode::Decoded) -> bool {
    d.l4 == tapstat_decode::L4::Udp && d.sport == 53 && d.payload_len > 0
}

/// One answer of a DNS response: `client` resolved `name` to `addr`, at packet time
/// `ts_ns`. What live workers hand each other.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DnsAnswer {
    pub client: u128,
    pub addr: u128,
    pub name: Arc<str>,
    pub ts_ns: u64,
}

/// What a DNS response teaches: the addresses of its A and AAAA answers, each named by
/// the query's name (the name the client asked for, not the end of a CNAME chain: what
/// the user typed or the page linked), for the client it was sent to. Parsed once by
/// the offline dispatcher for every worker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answers {
    pub client: u128,
    pub name: Arc<str>,
    pub addrs: Vec<u128>,
}

impl Answers {
    /// The answers of the DNS response `msg` sent to `client`; `None` when it teaches
    /// nothing (not a response, no question, no address).
    pub fn parse(client: u128, msg: &[u8]) -> Option<Answers> {
        let m = Message::parse(msg).ok()?;
        // QR set: a response (RFC 1035 §4.1.1).
        if m.header.flags & 0x8000 == 0 {
            return None;
        }
        let q = m.question.as_ref().filter(|q| !q.name.is_empty())?;
        let addrs: Vec<u128> = m
            .answers
            .iter()
            .filter_map(|a| match a.data {
                AnswerData::A(v4) => Some(addr_bits(IpAddr::V4(v4))),
                AnswerData::Aaaa(v6) => Some(addr_bits(IpAddr::V6(v6))),
                _ => None,
            })
            .collect();
        if addrs.is_empty() {
            return None;
        }
        Some(Answers { client, name: Arc::from(q.name.trim_end_matches('.')), addrs })
    }
}

/// An entry of the cache.
struct Named {
    /// The name last inserted, what [`DnsCache::lookup`] gives.
    name: Arc<str>,
    /// Its insertion number, for eviction.
    when: u64,
    /// With sharing on, for [`DnsCache::lookup_before`]: the names of the latest
    /// answers by packet time, newest first, each with the time of the first answer
    /// that gave it since another name; at most [`MAX_RUNS`] (empty, unallocated,
    /// without sharing).
    runs: Runs,
}

/// Names by the packet time from which they hold (see [`Named::runs`]).
type Runs = Vec<(Arc<str>, u64)>;

/// Runs of names kept per (client, address). Anycast addresses are answered under many
/// names in turn (ndpi__android.pcap: five names for one Google address within five
/// seconds), and another worker's answer may arrive after later ones: with two runs a
/// flow's name could be forgotten before the flow ended.
const MAX_RUNS: usize = 8;

/// Records that an answer stamped `ts_ns` named `name`, in `runs`, whatever the order
/// the answers arrive in (another worker's may come late): two answers of the same
/// name with none of another name between them make one run from the earlier.
fn record(runs: &mut Runs, name: &Arc<str>, ts_ns: u64) {
    // The run holding `ts_ns`: the newest that started no later.
    let i = runs.iter().position(|(_, since)| *since <= ts_ns).unwrap_or(runs.len());
    if runs.get(i).is_some_and(|(n, _)| n == name) {
        return;
    }
    if i > 0 && runs[i - 1].0 == *name {
        runs[i - 1].1 = ts_ns;
        return;
    }
    if i < MAX_RUNS {
        // The oldest falls off.
        runs.insert(i, (name.clone(), ts_ns));
        runs.truncate(MAX_RUNS);
    }
}

/// (client address, resolved address) → name, oldest evicted first.
pub struct DnsCache {
    map: HashMap<(u128, u128), Named>,
    /// Insertion order, for eviction: (key, insertion number).
    order: VecDeque<((u128, u128), u64)>,
    inserted: u64,
    capacity: usize,
    /// Whether [`DnsCache::learn`] keeps its answers in `shared`.
    sharing: bool,
    /// The answers learnt since [`DnsCache::take_shared`].
    shared: Vec<DnsAnswer>,
}

/// An address as the flow keys hold it: IPv4 in the low 32 bits.
fn addr_bits(a: IpAddr) -> u128 {
    match a {
        IpAddr::V4(a) => u32::from(a) as u128,
        IpAddr::V6(a) => u128::from(a),
    }
}

impl DnsCache {
    pub fn new(capacity: usize) -> Self {
        DnsCache {
            map: HashMap::new(),
            order: VecDeque::new(),
            inserted: 0,
            capacity: capacity.max(1),
            sharing: false,
            shared: Vec::new(),
        }
    }

    /// Keeps every answer [`DnsCache::learn`] learns from now on, for
    /// [`DnsCache::take_shared`] (live capture with several workers).
    pub fn share(&mut self) {
        self.sharing = true;
    }

    /// The answers learnt since the last call (none unless [`DnsCache::share`]); the
    /// vector keeps its allocation.
    #[inline]
    pub fn take_shared(&mut self) -> std::vec::Drain<'_, DnsAnswer> {
        self.shared.drain(..)
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Learns the A and AAAA answers of the DNS response `msg` sent to `client` (see
    /// [`Answers::parse`]); `ts_ns` is the response's packet time. Returns the answers
    /// learnt.
    pub fn learn(&mut self, client: u128, msg: &[u8], ts_ns: u64) -> usize {
        Answers::parse(client, msg).map_or(0, |a| self.learn_answers(&a, ts_ns))
    }

    /// Learns answers already parsed (the offline dispatcher parses a DNS response once
    /// for every worker); shared with other workers when sharing is on. Returns the
    /// answers learnt.
    pub fn learn_answers(&mut self, a: &Answers, ts_ns: u64) -> usize {
        for &addr in &a.addrs {
            if self.sharing {
                self.shared.push(DnsAnswer { client: a.client, addr, name: a.name.clone(), ts_ns });
            }
            self.insert((a.client, addr), a.name.clone(), ts_ns);
        }
        a.addrs.len()
    }

    /// Inserts an answer another worker learnt (it is not shared again).
    pub fn insert_answer(&mut self, a: DnsAnswer) {
        self.insert((a.client, a.addr), a.name, a.ts_ns);
    }

    fn insert(&mut self, key: (u128, u128), name: Arc<str>, ts_ns: u64) {
        self.inserted += 1;
        let when = self.inserted;
        match self.map.entry(key) {
            hashbrown::hash_map::Entry::Occupied(mut o) => {
                let e = o.get_mut();
                if self.sharing {
                    record(&mut e.runs, &name, ts_ns);
                }
                e.name = name;
                e.when = when;
            }
            hashbrown::hash_map::Entry::Vacant(v) => {
                let mut runs: Runs = Vec::new();
                if self.sharing {
                    runs.push((name.clone(), ts_ns));
                }
                v.insert(Named { name, when, runs });
            }
        }
        self.order.push_back((key, self.inserted));
        while self.map.len() > self.capacity {
            let Some((k, when)) = self.order.pop_front() else { break };
            // A key inserted again later has a newer entry further back: keep it.
            if self.map.get(&k).is_some_and(|e| e.when == when) {
                self.map.remove(&k);
            }
        }
        // Stale positions of re-inserted keys: keep the queue within twice the map.
        if self.order.len() > 2 * self.capacity {
            let map = &self.map;
            self.order.retain(|(k, w)| map.get(k).is_some_and(|e| e.when == *w));
        }
    }

    /// The name `client` resolved for `server`, if any.
    #[inline]
    pub fn lookup(&self, client: u128, server: u128) -> Option<Arc<str>> {
        if self.map.is_empty() {
            return None;
        }
        self.map.get(&(client, server)).map(|e| e.name.clone())
    }

    /// The name of the latest response to `client` for `server` stamped no later than
    /// `ts_ns`, whatever the order the responses were learnt in, with sharing on (else
    /// `None`): the name of a flow that started at `ts_ns` when answers also come
    /// from other workers, and may arrive after the flow's first packet (live
    /// capture). The cache remembers the `MAX_RUNS` latest names of a pair; an older one, or
    /// an evicted pair, is not found.
    #[inline]
    pub fn lookup_before(&self, client: u128, server: u128, ts_ns: u64) -> Option<Arc<str>> {
        if self.map.is_empty() {
            return None;
        }
        let e = self.map.get(&(client, server))?;
        e.runs.iter().find(|(_, since)| *since <= ts_ns).map(|(n, _)| n.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A response to `client` for `name` with A records `addrs`.
    fn response(name: &str, addrs: &[[u8; 4]]) -> Vec<u8> {
        let mut m = vec![0x12, 0x34, 0x81, 0x80, 0, 1, 0, addrs.len() as u8, 0, 0, 0, 0];
        for label in name.split('.') {
            m.push(label.len() as u8);
            m.extend_from_slice(label.as_bytes());
        }
        m.extend_from_slice(&[0, 0, 1, 0, 1]);
        for a in addrs {
            // A pointer to the question's name, type A, class IN, TTL 60, 4 bytes.
            m.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4]);
            m.extend_from_slice(a);
        }
        m
    }

    #[test]
    fn learns_a_records_and_forgets_the_oldest() {
        let mut c = DnsCache::new(2);
        let client = 0x0a00_0001;
        assert_eq!(c.learn(client, &response("www.example.com", &[[93, 184, 216, 34], [93, 184, 216, 35]]), 1), 2);
        assert_eq!(c.lookup(client, 0x5db8_d822).as_deref(), Some("www.example.com"));
        assert_eq!(c.lookup(0x0a00_0002, 0x5db8_d822), None, "another client did not ask");
        c.learn(client, &response("cdn.example.net", &[[1, 2, 3, 4]]), 2);
        assert_eq!(c.len(), 2);
        assert_eq!(c.lookup(client, 0x5db8_d822), None, "the oldest answer is evicted");
        assert_eq!(c.lookup(client, 0x0102_0304).as_deref(), Some("cdn.example.net"));
    }

    #[test]
    fn queries_and_garbage_teach_nothing() {
        let mut c = DnsCache::new(8);
        let mut q = response("a.example", &[[1, 1, 1, 1]]);
        q[2] = 0x01; // QR clear: a query
        assert_eq!(c.learn(1, &q, 1), 0);
        assert_eq!(c.learn(1, b"\x00\x01garbage", 1), 0);
        assert!(c.is_empty());
    }

    #[test]
    fn shares_what_it_learns_and_knows_when() {
        let mut a = DnsCache::new(8);
        let mut b = DnsCache::new(8);
        b.share();
        a.learn(7, &response("x.example", &[[1, 1, 1, 1]]), 10);
        assert_eq!(a.take_shared().count(), 0, "sharing is off by default");
        a.share();
        a.learn(7, &response("y.example", &[[2, 2, 2, 2], [3, 3, 3, 3]]), 20);
        let got: Vec<DnsAnswer> = a.take_shared().collect();
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].client, got[0].addr, &*got[0].name, got[0].ts_ns), (7, 0x0202_0202, "y.example", 20));
        assert_eq!(a.take_shared().count(), 0, "taken once");
        for x in got {
            b.insert_answer(x);
        }
        assert_eq!(b.take_shared().count(), 0, "answers from others are not shared again");
        assert_eq!(b.lookup(7, 0x0303_0303).as_deref(), Some("y.example"));
        assert_eq!(b.lookup_before(7, 0x0303_0303, 20).as_deref(), Some("y.example"));
        assert_eq!(b.lookup_before(7, 0x0303_0303, 19), None, "answered after the flow started");
    }

    /// Answers of two names for one address, learnt out of order (another worker's
    /// arrive late): `lookup_before` gives the name of the latest answer by time.
    #[test]
    fn names_by_time_whatever_the_order_learnt() {
        let mut c = DnsCache::new(8);
        c.share();
        let (a, b) = (response("a.example", &[[9, 9, 9, 9]]), response("b.example", &[[9, 9, 9, 9]]));
        let at = |c: &DnsCache, t| c.lookup_before(1, 0x0909_0909, t).as_deref().map(str::to_string);
        c.learn(1, &a, 30); // a at 30 (this worker)
        c.learn(1, &b, 20); // b at 20, from another worker, late
        c.learn(1, &a, 10); // a at 10, later still
        c.learn(1, &a, 40); // a again: still one run from 30
        c.learn(1, &b, 25); // b again, before a: b's run still starts at 20
        assert_eq!(at(&c, 5), None);
        assert_eq!(at(&c, 15).as_deref(), Some("a.example"), "a from 10 to 20, a third run");
        assert_eq!(at(&c, 25).as_deref(), Some("b.example"));
        assert_eq!(at(&c, 35).as_deref(), Some("a.example"));
        assert_eq!(c.lookup(1, 0x0909_0909).as_deref(), Some("b.example"), "lookup: the last learnt");
        let mut off = DnsCache::new(8);
        off.learn(1, &a, 30);
        assert_eq!(off.lookup_before(1, 0x0909_0909, 99), None, "no times kept without sharing");
    }

    /// An anycast address answered under five names in turn, the answers arriving late
    /// and out of order (ndpi__android.pcap's Google address, seen live with 2 workers):
    /// a flow that started between two of them still finds its name once every answer
    /// is in, however many came after; past `MAX_RUNS` runs the oldest is forgotten.
    #[test]
    fn many_names_for_one_address_keep_their_times() {
        let mut c = DnsCache::new(8);
        c.share();
        let names = ["clients1", "mtalk", "android.clients", "www", "accounts"];
        let r: Vec<Vec<u8>> = names.iter().map(|n| response(&format!("{n}.google.com"), &[[9, 9, 9, 9]])).collect();
        // Learnt in the order another worker's ring delivers them: the third late.
        for (i, t) in [(0, 10), (1, 20), (3, 40), (4, 50), (2, 30)] {
            c.learn(1, &r[i], t);
        }
        let at = |c: &DnsCache, t| c.lookup_before(1, 0x0909_0909, t).as_deref().map(str::to_string);
        assert_eq!(at(&c, 31).as_deref(), Some("android.clients.google.com"));
        assert_eq!(at(&c, 21).as_deref(), Some("mtalk.google.com"));
        assert_eq!(at(&c, 51).as_deref(), Some("accounts.google.com"));
        for t in 0..MAX_RUNS as u64 {
            c.learn(1, &r[(t % 2) as usize], 100 + t);
        }
        assert_eq!(at(&c, 11), None, "the oldest runs are forgotten past MAX_RUNS");
    }
}
