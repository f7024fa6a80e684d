//! Link histograms (`--histo-interval`): Tstat's periodic histograms of the link as a
//! whole, in a tidy long format (`time, histogram, direction, bin, count`).
//!
//! Every interval of packet time (aligned to multiples of the interval on the input's
//! clock, like `--periodic` and `--rotate`), each [`Family`] counts packets or flows
//! per bin:
//!
//! - packet families ([`Histo::packets`], every packet a tracker accounts), in the
//!   interval of the packet's input clock (`Packet::now_ns`);
//! - flow families ([`Histo::flow`], every flow record), in the interval its record was
//!   due in ([`crate::FlowSink::at`]: a timed-out flow at its timeout, the flows left
//!   at the end at the final clock...).
//!
//! Both are properties of the packet or the flow and of the input's clock, never of the
//! worker that saw them, so each worker keeps its own counters (shared-nothing) and the
//! sum of every worker's counters ([`Histo::merge`], at the end of the run) is the same
//! for any number of workers (evictions and interrupted runs aside, as for the records).
//!
//! Bins are fixed ([`Family::bins`] documents them): a numeric bin is written as its
//! inclusive lower edge, and holds the values up to the next edge; times are binned on
//! µs and written in ms.
//!
//! Direction: without internal networks (`-N`, `--internal`) every count is
//! [`Direction::All`]; with them, a packet counts in the traffic class of its sender
//! and receiver ([`Histo::direction`]: in, out, local, ext) and a flow's record in its
//! class from client to server ([`Flow::class`]); both from what the flow looked up
//! when it started, not per packet.

use crate::flow::{Flow, Kind};
use hashbrown::HashMap;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use tapstat_decode::Decoded;

/// The direction of a packet or a flow, relative to the internal networks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Direction {
    /// No internal networks given: every packet and flow.
    All = 0,
    /// From an external address to an internal one (a flow: client external).
    In = 1,
    /// From an internal address to an external one.
    Out = 2,
    /// Both internal.
    Local = 3,
    /// Both external.
    Ext = 4,
}

impl From<crate::nets::Class> for Direction {
    fn from(c: crate::nets::Class) -> Direction {
        match c {
            crate::nets::Class::In => Direction::In,
            crate::nets::Class::Out => Direction::Out,
            crate::nets::Class::Local => Direction::Local,
            crate::nets::Class::Ext => Direction::Ext,
        }
    }
}

impl Direction {
    pub const ALL: [Direction; 5] = [Direction::All, Direction::In, Direction::Out, Direction::Local, Direction::Ext];

    pub fn name(self) -> &'static str {
        match self {
            Direction::All => "all",
            Direction::In => "in",
            Direction::Out => "out",
            Direction::Local => "local",
            Direction::Ext => "ext",
        }
    }
}

/// One histogram family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Family {
    IpLen,
    Ttl,
    IpProto,
    TcpPort,
    UdpPort,
    TcpDuration,
    UdpDuration,
    TcpBytes,
    UdpBytes,
    TcpPkts,
    UdpPkts,
    TcpRttC,
    TcpRttS,
    App,
}

/// How many families have the 1-2-5 ladder's bins ([`LOG_EDGES`]): `TcpDuration` to
/// `TcpRttS`, consecutive in [`Family`]'s order, which is [`Counts::log`]'s.
const LOG_COUNT: usize = Family::TcpRttS as usize - Family::TcpDuration as usize + 1;

impl Family {
    /// Every family, in the order of the output.
    pub const ALL: [Family; 14] = [
        Family::IpLen,
        Family::Ttl,
        Family::IpProto,
        Family::TcpPort,
        Family::UdpPort,
        Family::TcpDuration,
        Family::UdpDuration,
        Family::TcpBytes,
        Family::UdpBytes,
        Family::TcpPkts,
        Family::UdpPkts,
        Family::TcpRttC,
        Family::TcpRttS,
        Family::App,
    ];

    /// The `histogram` column.
    pub fn name(self) -> &'static str {
        match self {
            Family::IpLen => "ip_len",
            Family::Ttl => "ttl",
            Family::IpProto => "ip_proto",
            Family::TcpPort => "tcp_port",
            Family::UdpPort => "udp_port",
            Family::TcpDuration => "tcp_duration_ms",
            Family::UdpDuration => "udp_duration_ms",
            Family::TcpBytes => "tcp_bytes",
            Family::UdpBytes => "udp_bytes",
            Family::TcpPkts => "tcp_pkts",
            Family::UdpPkts => "udp_pkts",
            Family::TcpRttC => "tcp_rtt_c_ms",
            Family::TcpRttS => "tcp_rtt_s_ms",
            Family::App => "app",
        }
    }

    /// What is counted (`packets` or `flows`).
    pub fn counts(self) -> &'static str {
        match self {
            Family::IpLen | Family::Ttl | Family::IpProto => "packets",
            _ => "flows",
        }
    }

    /// What the family's bins are (docs/METRICS.md).
    pub fn bins(self) -> &'static str {
        match self {
            Family::IpLen => "length of the innermost IP packet (header included, from the IP header), bytes: bins 32 wide from 0 to 1536, then 1536, 2048, 4096, 9216 and up",
            Family::Ttl => "TTL or hop limit of the innermost IP header: one bin per value 0..255",
            Family::IpProto => "IP protocol number of the innermost header (after IPv6 extension headers): one bin per value",
            Family::TcpPort => "server port of TCP flows: one bin per port",
            Family::UdpPort => "server port of UDP flows: one bin per port",
            Family::TcpDuration => "TCP flow duration (last - first packet), ms: 1-2-5 bins on µs (0, 0.001, 0.002, 0.005, 0.01 ...)",
            Family::UdpDuration => "UDP flow duration, ms: 1-2-5 bins on µs",
            Family::TcpBytes => "TCP flow payload bytes, both directions: 1-2-5 bins (0, 1, 2, 5, 10, 20, 50 ...)",
            Family::UdpBytes => "UDP flow payload bytes, both directions: 1-2-5 bins",
            Family::TcpPkts => "TCP flow packets, both directions: 1-2-5 bins",
            Family::UdpPkts => "UDP flow packets, both directions: 1-2-5 bins",
            Family::TcpRttC => "mean RTT of the client's data (column c_rtt_avg; flows with samples only, full sets), ms: 1-2-5 bins on µs",
            Family::TcpRttS => "mean RTT of the server's data (column s_rtt_avg), ms: 1-2-5 bins on µs",
            Family::App => "flows by `app` (every flow; `unknown` for TCP and UDP flows without one, `none` for flows of other protocols)",
        }
    }

    fn log_index(self) -> Option<usize> {
        (self as usize).checked_sub(Family::TcpDuration as usize).filter(|&i| i < LOG_COUNT)
    }

    /// Times are binned on µs and written in ms.
    fn in_ms(self) -> bool {
        matches!(self, Family::TcpDuration | Family::UdpDuration | Family::TcpRttC | Family::TcpRttS)
    }
}

/// The 1-2-5 ladder: 0, 1, 2, 5, 10, 20, 50, ... 5·10^18.
pub const LOG_EDGES: [u64; 58] = {
    let mut e = [0u64; 58];
    let mut i = 1;
    let mut p = 1u64;
    while i < 58 {
        e[i] = p;
        e[i + 1] = 2 * p;
        e[i + 2] = 5 * p;
        i += 3;
        if i < 58 {
            p *= 10;
        }
    }
    e
};

/// Bin of `v` on the 1-2-5 ladder.
#[inline]
pub fn log_bin(v: u64) -> usize {
    LOG_EDGES.partition_point(|&e| e <= v) - 1
}

/// `ip_len`'s edges: 0, 32, ... 1536, then 2048, 4096, 9216.
pub const LEN_EDGES: [u64; 52] = {
    let mut e = [0u64; 52];
    let mut i = 0;
    while i <= 48 {
        e[i] = 32 * i as u64;
        i += 1;
    }
    e[49] = 2048;
    e[50] = 4096;
    e[51] = 9216;
    e
};

#[inline]
fn len_bin(len: u32) -> usize {
    if len < 1536 {
        (len / 32) as usize
    } else {
        LEN_EDGES.partition_point(|&e| e <= len as u64) - 1
    }
}

/// One direction's counters of one interval.
#[derive(Clone, Debug)]
struct Counts {
    ip_len: [u64; LEN_EDGES.len()],
    ttl: [u64; 256],
    proto: [u64; 256],
    log: [[u64; LOG_EDGES.len()]; LOG_COUNT],
    /// Server ports of TCP [0] and UDP [1] flows.
    ports: [HashMap<u16, u64>; 2],
    apps: HashMap<&'static str, u64>,
}

impl Default for Counts {
    fn default() -> Self {
        Counts {
            ip_len: [0; LEN_EDGES.len()],
            ttl: [0; 256],
            proto: [0; 256],
            log: [[0; LOG_EDGES.len()]; LOG_COUNT],
            ports: Default::default(),
            apps: HashMap::new(),
        }
    }
}

fn add(a: &mut [u64], b: &[u64]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x += y;
    }
}

impl Counts {
    fn merge(&mut self, o: &Counts) {
        add(&mut self.ip_len, &o.ip_len);
        add(&mut self.ttl, &o.ttl);
        add(&mut self.proto, &o.proto);
        for (a, b) in self.log.iter_mut().zip(&o.log) {
            add(a, b);
        }
        for (a, b) in self.ports.iter_mut().zip(&o.ports) {
            for (k, v) in b {
                *a.entry(*k).or_default() += v;
            }
        }
        for (k, v) in &o.apps {
            *self.apps.entry(*k).or_default() += v;
        }
    }

    fn log(&mut self, f: Family, v: u64) {
        if let Some(i) = f.log_index() {
            self.log[i][log_bin(v)] += 1;
        }
    }

    /// The nonzero bins of family `f`, in bin order: (label, count).
    fn bins(&self, f: Family) -> Vec<(String, u64)> {
        let dense = |a: &[u64], label: &dyn Fn(usize) -> String| -> Vec<(String, u64)> {
            a.iter().enumerate().filter(|(_, c)| **c > 0).map(|(i, c)| (label(i), *c)).collect()
        };
        match f {
            Family::IpLen => dense(&self.ip_len, &|i| LEN_EDGES[i].to_string()),
            Family::Ttl => dense(&self.ttl, &|i| i.to_string()),
            Family::IpProto => dense(&self.proto, &|i| i.to_string()),
            Family::TcpPort | Family::UdpPort => {
                let m = &self.ports[usize::from(f == Family::UdpPort)];
                let mut v: Vec<(u16, u64)> = m.iter().filter(|(_, c)| **c > 0).map(|(k, c)| (*k, *c)).collect();
                v.sort_unstable();
                v.into_iter().map(|(k, c)| (k.to_string(), c)).collect()
            }
            Family::App => {
                let mut v: Vec<(&str, u64)> =
                    self.apps.iter().filter(|(_, c)| **c > 0).map(|(k, c)| (*k, *c)).collect();
                v.sort_unstable();
                v.into_iter().map(|(k, c)| (k.to_string(), c)).collect()
            }
            _ => {
                let i = f.log_index().expect("every other family is on the ladder");
                let ms = f.in_ms();
                dense(&self.log[i], &|b| {
                    if ms {
                        (LOG_EDGES[b] as f64 / 1000.0).to_string()
                    } else {
                        LOG_EDGES[b].to_string()
                    }
                })
            }
        }
    }
}

/// The counters of one interval, per direction (allocated when first used).
#[derive(Clone, Debug, Default)]
struct Interval {
    dirs: [Option<Box<Counts>>; 5],
}

impl Interval {
    #[inline]
    fn dir(&mut self, d: Direction) -> &mut Counts {
        self.dirs[d as usize].get_or_insert_with(Default::default)
    }

    fn merge(&mut self, o: &Interval) {
        for d in Direction::ALL {
            if let Some(c) = &o.dirs[d as usize] {
                self.dir(d).merge(c);
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.dirs.iter().all(Option::is_none)
    }
}

/// One worker's histograms (or, after [`Histo::merge`], the run's). See the module doc.
#[derive(Clone, Debug)]
pub struct Histo {
    interval_ns: u64,
    /// The interval the packets fall in now: [cur_start, cur_start + interval).
    cur_start: u64,
    cur: Interval,
    /// Every other interval, by start (ns).
    past: BTreeMap<u64, Interval>,
    /// The internal networks (`-N`, `--internal`): counts by in/out/local/ext
    /// direction; without them every count is `all`.
    nets: Option<&'static crate::nets::Nets>,
    /// Intervals before this one were handed over ([`Histo::take_before`]): a count
    /// due earlier goes to this one (a start; 0 until something was handed over).
    open_from: u64,
}

/// One row of the output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// Start of the interval, epoch seconds.
    pub time_s: u64,
    pub family: Family,
    pub direction: Direction,
    pub bin: String,
    pub count: u64,
}

impl Histo {
    /// Histograms every `interval_ns` (> 0) of packet time.
    /// Histograms every `interval_ns` (> 0) of packet time, by direction under `nets`
    /// where given.
    pub fn new(interval_ns: u64, nets: Option<&'static crate::nets::Nets>) -> Histo {
        Histo {
            interval_ns: interval_ns.max(1),
            cur_start: 0,
            cur: Interval::default(),
            past: BTreeMap::new(),
            nets,
            open_from: 0,
        }
    }

    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.cur.is_empty() && self.past.values().all(Interval::is_empty)
    }

    /// Takes out every interval that ended by `ns` (those that start before the
    /// interval of `ns`), as histograms of their own, for a live run to write them
    /// while it runs. The caller knows that nothing more is due in them (see
    /// docs/ARCHITECTURE.md, "Link histograms"); should a count come for one anyway,
    /// it is counted in the first interval still here, so that no interval is ever
    /// written twice.
    pub fn take_before(&mut self, ns: u64) -> Histo {
        let open = self.start_of(ns).max(self.open_from);
        let mut done = Histo::new(self.interval_ns, self.nets);
        done.open_from = self.open_from;
        let keep = self.past.split_off(&open);
        done.past = std::mem::replace(&mut self.past, keep);
        done.past.retain(|_, iv| !iv.is_empty());
        if self.cur_start < open {
            let cur = std::mem::take(&mut self.cur);
            if !cur.is_empty() {
                done.past.insert(self.cur_start, cur);
            }
            self.cur = self.past.remove(&open).unwrap_or_default();
            self.cur_start = open;
        }
        self.open_from = open;
        done
    }

    pub fn interval_ns(&self) -> u64 {
        self.interval_ns
    }

    /// The histograms by `--rotate` period (`period_ns` > 0): each piece holds the
    /// intervals that start in the period, keyed by the period's start (ns).
    pub fn split(mut self, period_ns: u64) -> BTreeMap<u64, Histo> {
        let period_ns = period_ns.max(1);
        let cur = std::mem::take(&mut self.cur);
        if !cur.is_empty() {
            self.past.insert(self.cur_start, cur);
        }
        let mut out: BTreeMap<u64, Histo> = BTreeMap::new();
        for (start, iv) in std::mem::take(&mut self.past) {
            if iv.is_empty() {
                continue;
            }
            let piece = out.entry(start - start % period_ns).or_insert_with(|| Histo::new(self.interval_ns, self.nets));
            piece.past.insert(start, iv);
        }
        out
    }

    /// The direction of the packets side `di` of flow `f` sends: the flow's class for
    /// that side under the internal networks (looked up once, when the flow started),
    /// or `all` without them.
    #[inline]
    pub fn direction(&self, f: &Flow, di: usize) -> Direction {
        match self.nets {
            None => Direction::All,
            Some(_) => f.class_of_dir(di).into(),
        }
    }

    #[inline]
    fn start_of(&self, ns: u64) -> u64 {
        ns - ns % self.interval_ns
    }

    /// The counters of the interval that holds `ns`, made the current one.
    #[inline]
    fn at(&mut self, ns: u64) -> &mut Interval {
        // Most packets fall in the current interval: no division for them.
        if ns.wrapping_sub(self.cur_start) < self.interval_ns {
            return &mut self.cur;
        }
        let start = self.start_of(ns.max(self.open_from));
        if start != self.cur_start {
            let old = std::mem::replace(&mut self.cur, self.past.remove(&start).unwrap_or_default());
            if !old.is_empty() {
                self.past.insert(self.cur_start, old);
            }
            self.cur_start = start;
        }
        &mut self.cur
    }

    /// Counts `n` packets of direction `dir` with headers `d`, accounted at input clock
    /// `now_ns` (`n` > 1: a held-tails record's counted-only packets, which carry the
    /// headers of the packet that stands for them).
    #[inline]
    pub fn packets(&mut self, now_ns: u64, d: &Decoded, dir: Direction, n: u64) {
        let c = self.at(now_ns).dir(dir);
        c.ip_len[len_bin(d.ip_len)] += n;
        c.ttl[d.ttl as usize] += n;
        c.proto[d.proto as usize] += n;
    }

    /// Counts the record of flow `f`, due at `due_ns` ([`crate::FlowSink::at`]).
    pub fn flow(&mut self, due_ns: u64, f: &Flow) {
        // A flow: client to server, from what the flow looked up when it started.
        let dir = if self.nets.is_some() { f.class().into() } else { Direction::All };
        let start = self.start_of(due_ns.max(self.open_from));
        let iv = if start == self.cur_start { &mut self.cur } else { self.past.entry(start).or_default() };
        let c = iv.dir(dir);
        let app = match f.kind {
            Kind::Other => "none",
            _ => f.l7.as_ref().and_then(|l| l.app()).map_or("unknown", |a| a.name()),
        };
        *c.apps.entry(app).or_default() += 1;
        let (port, dur, bytes, pkts) = match f.kind {
            Kind::Tcp => (0, Family::TcpDuration, Family::TcpBytes, Family::TcpPkts),
            Kind::Udp => (1, Family::UdpDuration, Family::UdpBytes, Family::UdpPkts),
            Kind::Other => return,
        };
        *c.ports[port].entry(f.dir[1].port).or_default() += 1;
        c.log(dur, f.last_ns.saturating_sub(f.first_ns) / 1000);
        c.log(bytes, f.dir[0].bytes_all + f.dir[1].bytes_all);
        c.log(pkts, f.dir[0].pkts_all + f.dir[1].pkts_all);
        if f.kind == Kind::Tcp {
            for (di, fam) in [(0, Family::TcpRttC), (1, Family::TcpRttS)] {
                if let Some(r) = f.e2e(di).rtt_ms() {
                    c.log(fam, (r.0 * 1000.0 + 0.5) as u64);
                }
            }
        }
    }

    /// Adds another worker's histograms (of the same interval).
    pub fn merge(&mut self, o: &Histo) {
        for (start, iv) in o.past.iter().chain(std::iter::once((&o.cur_start, &o.cur))) {
            if iv.is_empty() {
                continue;
            }
            let start = (*start).max(self.open_from);
            let mine = if start == self.cur_start { &mut self.cur } else { self.past.entry(start).or_default() };
            mine.merge(iv);
        }
    }

    /// Every nonzero bin, ordered by time, family ([`Family::ALL`]), direction and bin.
    pub fn rows(&self) -> Vec<Row> {
        let mut all: BTreeMap<u64, &Interval> = self.past.iter().map(|(k, v)| (*k, v)).collect();
        if !self.cur.is_empty() {
            all.insert(self.cur_start, &self.cur);
        }
        let mut rows = Vec::new();
        for (start, iv) in all {
            for family in Family::ALL {
                for direction in Direction::ALL {
                    let Some(c) = &iv.dirs[direction as usize] else { continue };
                    for (bin, count) in c.bins(family) {
                        rows.push(Row { time_s: start / 1_000_000_000, family, direction, bin, count });
                    }
                }
            }
        }
        rows
    }

    /// The header line of the TSV form.
    pub const TSV_HEADER: &'static str = "time\thistogram\tdirection\tbin\tcount\n";

    /// The rows as TSV (with the header line): bins are numbers or names made of
    /// `[a-z0-9_.-]`, so nothing needs escaping.
    pub fn to_tsv(&self) -> String {
        String::from(Self::TSV_HEADER) + &self.tsv_rows()
    }

    /// The rows as TSV lines, without the header.
    pub fn tsv_rows(&self) -> String {
        let mut s = String::new();
        for r in self.rows() {
            let _ = writeln!(s, "{}\t{}\t{}\t{}\t{}", r.time_s, r.family.name(), r.direction.name(), r.bin, r.count);
        }
        s
    }

    /// The rows as JSON lines, each `{"log":"histograms",...}` (`-o -`). `bin` is a
    /// string in every row, so that the key has one type.
    pub fn to_jsonl(&self) -> String {
        let mut s = String::new();
        for r in self.rows() {
            let _ = writeln!(
                s,
                "{{\"log\":\"histograms\",\"time\":{},\"histogram\":\"{}\",\"direction\":\"{}\",\"bin\":\"{}\",\"count\":{}}}",
                r.time_s,
                r.family.name(),
                r.direction.name(),
                r.bin,
                r.count
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ladders_are_increasing_and_bin_their_edges() {
        assert!(LOG_EDGES.windows(2).all(|w| w[0] < w[1]));
        assert!(LEN_EDGES.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(&LOG_EDGES[..8], &[0, 1, 2, 5, 10, 20, 50, 100]);
        for (i, e) in LOG_EDGES.iter().enumerate() {
            assert_eq!(log_bin(*e), i);
            if *e > 0 {
                assert_eq!(log_bin(e - 1), i - 1);
            }
        }
        for (i, e) in LEN_EDGES.iter().enumerate() {
            assert_eq!(len_bin(*e as u32), i);
        }
        assert_eq!(len_bin(1535), 47);
        assert_eq!(len_bin(65535), LEN_EDGES.len() - 1);
        assert_eq!(log_bin(u64::MAX), LOG_EDGES.len() - 1);
    }

    #[test]
    fn packets_land_in_their_interval_and_merging_sums() {
        let s = 1_000_000_000;
        let d = Decoded { ip_len: 40, ttl: 64, proto: 6, ..Default::default() };
        let mut a = Histo::new(60 * s, None);
        let mut b = Histo::new(60 * s, None);
        a.packets(61 * s, &d, Direction::All, 1);
        a.packets(130 * s, &d, Direction::All, 1);
        b.packets(62 * s, &d, Direction::All, 1);
        b.packets(59 * s, &d, Direction::All, 1);
        a.merge(&b);
        let rows: Vec<(u64, &str, String, u64)> = a
            .rows()
            .into_iter()
            .filter(|r| r.family == Family::IpLen)
            .map(|r| (r.time_s, r.family.name(), r.bin, r.count))
            .collect();
        assert_eq!(
            rows,
            vec![(0, "ip_len", "32".into(), 1), (60, "ip_len", "32".into(), 2), (120, "ip_len", "32".into(), 1)]
        );
        let tsv = a.to_tsv();
        assert!(tsv.starts_with(Histo::TSV_HEADER));
        assert!(tsv.contains("60\tttl\tall\t64\t2\n"), "{tsv}");
    }
    #[test]
    fn a_flow_counts_in_the_interval_its_record_was_due() {
        let s = 1_000_000_000;
        let tcp = Decoded { l4: tapstat_decode::L4::Tcp, proto: 6, sport: 40000, dport: 443, ..Default::default() };
        let mut f = Flow::new(&tcp, true, 10 * s, None, false);
        f.last_ns = 12 * s;
        f.dir[0].bytes_all = 700;
        f.dir[1].pkts_all = 3;
        let other = Decoded { l4: tapstat_decode::L4::Other, proto: 47, ..Default::default() };
        let g = Flow::new(&other, true, 10 * s, None, false);
        let mut h = Histo::new(60 * s, None);
        h.packets(10 * s, &tcp, Direction::All, 1);
        // Due after the boundary (a timeout): counted in the next interval.
        h.flow(61 * s, &f);
        h.flow(30 * s, &g);
        let rows: Vec<(u64, &str, String, u64)> =
            h.rows().into_iter().map(|r| (r.time_s, r.family.name(), r.bin, r.count)).collect();
        let want: Vec<(u64, &str, String, u64)> = vec![
            (0, "ip_len", "0".into(), 1),
            (0, "ttl", "0".into(), 1),
            (0, "ip_proto", "6".into(), 1),
            (0, "app", "none".into(), 1),
            (60, "tcp_port", "443".into(), 1),
            (60, "tcp_duration_ms", "2000".into(), 1),
            (60, "tcp_bytes", "500".into(), 1),
            (60, "tcp_pkts", "2".into(), 1),
            (60, "app", "unknown".into(), 1),
        ];
        assert_eq!(rows, want);
        assert!(h.to_jsonl().lines().all(|l| l.starts_with("{\"log\":\"histograms\",\"time\":")));
    }

    /// Intervals taken out as they close and written in turn make the rows of the
    /// whole: each interval once, in order; a count that comes late for a closed
    /// interval goes to the first open one instead of writing that interval again.
    #[test]
    fn intervals_taken_as_they_close_add_up_to_the_whole() {
        let s = 1_000_000_000;
        let d = Decoded { ip_len: 40, ttl: 64, proto: 6, ..Default::default() };
        let tcp = Decoded { l4: tapstat_decode::L4::Tcp, proto: 6, sport: 40000, dport: 443, ..Default::default() };
        let f = Flow::new(&tcp, true, 10 * s, None, false);
        let feed = |h: &mut Histo, from: u64, to: u64| {
            for t in from..to {
                h.packets(t * s, &d, Direction::All, 1);
                if t % 7 == 0 {
                    h.flow(t * s + 1, &f);
                }
            }
        };
        let (mut whole, mut a, mut b) = (Histo::new(10 * s, None), Histo::new(10 * s, None), Histo::new(10 * s, None));
        feed(&mut whole, 0, 95);
        // Two workers share the packets; each hands over what ended by its clock,
        // and the writer merges and writes what ended by both clocks.
        let mut writer = Histo::new(10 * s, None);
        let mut out = String::from(Histo::TSV_HEADER);
        for (lo, hi) in [(0, 25), (25, 47), (47, 95)] {
            let mid = (lo + hi) / 2;
            feed(&mut a, lo, mid);
            feed(&mut b, mid, hi);
            writer.merge(&a.take_before(hi * s));
            writer.merge(&b.take_before(hi * s));
            out += &writer.take_before(hi * s).tsv_rows();
        }
        writer.merge(&a);
        writer.merge(&b);
        out += &writer.take_before(u64::MAX).tsv_rows();
        assert_eq!(out, whole.to_tsv());
        assert!(whole.to_tsv().lines().count() > 30);

        // A packet due in an interval already handed over counts in the first open one.
        let mut h = Histo::new(10 * s, None);
        h.packets(5 * s, &d, Direction::All, 1);
        let early = h.take_before(23 * s);
        assert_eq!(early.rows().iter().map(|r| r.time_s).collect::<Vec<_>>(), vec![0, 0, 0]);
        assert!(h.is_empty());
        h.packets(3 * s, &d, Direction::All, 1);
        h.flow(4 * s, &f);
        assert!(h.rows().iter().all(|r| r.time_s == 20), "{:?}", h.rows());
        assert_eq!(h.rows().len(), 8);
    }

    /// Split by a `--rotate` period, each piece holds the intervals that start in its
    /// period, and the pieces in order are the whole.
    #[test]
    fn split_by_period_keeps_each_interval_in_the_period_it_starts_in() {
        let s = 1_000_000_000;
        let d = Decoded { ip_len: 40, ttl: 64, proto: 6, ..Default::default() };
        let mut h = Histo::new(10 * s, None);
        for t in [3, 15, 29, 31, 64, 118] {
            h.packets(t * s, &d, Direction::All, 1);
        }
        let whole = h.to_tsv();
        // 30 s periods: [0,30) has intervals 0, 10, 20; [30,60) has 30; [60,90) has 60; [90,120) has 110.
        let pieces = h.split(30 * s);
        let times: Vec<(u64, Vec<u64>)> = pieces
            .iter()
            .map(|(p, piece)| {
                let mut t: Vec<u64> = piece.rows().iter().map(|r| r.time_s).collect();
                t.dedup();
                (p / s, t)
            })
            .collect();
        assert_eq!(times, vec![(0, vec![0, 10, 20]), (30, vec![30]), (60, vec![60]), (90, vec![110])]);
        let joined: String = pieces.values().map(Histo::tsv_rows).collect();
        assert_eq!(String::from(Histo::TSV_HEADER) + &joined, whole);
        // An interval longer than the period goes to the period it starts in.
        let mut h = Histo::new(60 * s, None);
        h.packets(59 * s, &d, Direction::All, 1);
        h.packets(61 * s, &d, Direction::All, 1);
        assert_eq!(h.split(25 * s).keys().map(|k| k / s).collect::<Vec<_>>(), vec![0, 50]);
    }
}
