//! Traffic profiles for comparing scheduling policies: connections of the TCP
//! conversation model, generated a phase at a time and merged by time into the file.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Write};
use std::net::IpAddr;
use std::path::Path;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::pcap::{pcap_header, write_record};
use super::tcp::{Closing, Done, Shut, TcpGen};
use super::{log_uniform, make_clients, make_servers, Emitter, Host, Pkt, C, MS, S, SEC, START_2026_NS, US};

/// A shape of traffic for comparing how packets are scheduled onto workers (after the
/// three cases of "Packet scheduling for deep packet inspection on multi-core
/// architectures"). Every flow of every profile is a complete TCP connection
/// (handshake, request/response data both ways with its ACKs, FIN both ways and the
/// last ACK), built by the same conversation model as the sample capture, without
/// losses.
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
pub(super) struct Schedule {
    rng: ChaCha8Rng,
    profile: Profile,
    clients: Vec<Host>,
    servers: Vec<Host>,
    /// Next source port of each client.
    ports: Vec<u16>,
    /// Connections still to start, and the next start time.
    pub(super) left: u64,
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
    pub(super) fn new(profile: Profile, packets: u64, seed: u64) -> Schedule {
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
