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

/// What a DNS response teaches: the addresses of its A and AAAA answers, each named by
/// the query's name (the name the client asked for, not the end of a CNAME chain: what
/// the user typed or the page linked), for the client it was sent to.
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

/// (client address, resolved address) → name, oldest evicted first.
pub struct DnsCache {
    map: HashMap<(u128, u128), (Arc<str>, u64)>,
    /// Insertion order, for eviction: (key, insertion number).
    order: VecDeque<((u128, u128), u64)>,
    inserted: u64,
    capacity: usize,
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
        DnsCache { map: HashMap::new(), order: VecDeque::new(), inserted: 0, capacity: capacity.max(1) }
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Learns the A and AAAA answers of the DNS response `msg` sent to `client` (see
    /// [`Answers::parse`]). Returns the answers learnt.
    pub fn learn(&mut self, client: u128, msg: &[u8]) -> usize {
        Answers::parse(client, msg).map_or(0, |a| self.learn_answers(&a))
    }

    /// Learns answers parsed once for every worker (the dispatcher parses a DNS
    /// response once, not once per worker). Returns the answers learnt.
    pub fn learn_answers(&mut self, a: &Answers) -> usize {
        for addr in &a.addrs {
            self.insert((a.client, *addr), a.name.clone());
        }
        a.addrs.len()
    }

    fn insert(&mut self, key: (u128, u128), name: Arc<str>) {
        self.inserted += 1;
        self.map.insert(key, (name, self.inserted));
        self.order.push_back((key, self.inserted));
        while self.map.len() > self.capacity {
            let Some((k, when)) = self.order.pop_front() else { break };
            // A key inserted again later has a newer entry further back: keep it.
            if self.map.get(&k).is_some_and(|(_, w)| *w == when) {
                self.map.remove(&k);
            }
        }
        // Stale positions of re-inserted keys: keep the queue within twice the map.
        if self.order.len() > 2 * self.capacity {
            let map = &self.map;
            self.order.retain(|(k, w)| map.get(k).is_some_and(|(_, x)| x == w));
        }
    }

    /// The name `client` resolved for `server`, if any.
    #[inline]
    pub fn lookup(&self, client: u128, server: u128) -> Option<Arc<str>> {
        if self.map.is_empty() {
            return None;
        }
        self.map.get(&(client, server)).map(|(n, _)| n.clone())
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
        assert_eq!(c.learn(client, &response("www.example.com", &[[93, 184, 216, 34], [93, 184, 216, 35]])), 2);
        assert_eq!(c.lookup(client, 0x5db8_d822).as_deref(), Some("www.example.com"));
        assert_eq!(c.lookup(0x0a00_0002, 0x5db8_d822), None, "another client did not ask");
        c.learn(client, &response("cdn.example.net", &[[1, 2, 3, 4]]));
        assert_eq!(c.len(), 2);
        assert_eq!(c.lookup(client, 0x5db8_d822), None, "the oldest answer is evicted");
        assert_eq!(c.lookup(client, 0x0102_0304).as_deref(), Some("cdn.example.net"));
    }

    #[test]
    fn queries_and_garbage_teach_nothing() {
        let mut c = DnsCache::new(8);
        let mut q = response("a.example", &[[1, 1, 1, 1]]);
        q[2] = 0x01; // QR clear: a query
        assert_eq!(c.learn(1, &q), 0);
        assert_eq!(c.learn(1, b"\x00\x01garbage"), 0);
        assert!(c.is_empty());
    }
}
