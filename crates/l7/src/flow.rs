//! `L7Flow`: what one flow's application layer remembers, and the one entry point the
//! engine calls per payload.

use crate::classify::signatures::{dtls, probe_tcp, probe_udp, ProbeMemory, Verdict};
use crate::classify::{ports, App, AppSource};
use crate::dns::{DnsState, DnsTransaction};
use crate::event::{Event, Events};
use crate::http::{HttpLimits, HttpState, HttpTransaction};
use crate::quic::{QuicInfo, QuicState};
use crate::ssh::SshState;
use crate::tls::{DtlsState, TlsInfo, TlsState, TlsTimes};
use crate::{Dir, L7Config, Records, Transport};

/// The protocol state. The parsers' states are boxed: a flow pays for one only when its
/// protocol is being parsed, and a flow that is none of them stays a few dozen bytes.
#[derive(Clone, Debug)]
enum State {
    Probing(ProbeMemory),
    /// Probing, with the first bytes of a TCP direction that were too few to decide.
    Undecided(Box<Undecided>),
    Tls(Box<TlsState>),
    Dtls(Box<DtlsState>),
    Quic(Box<QuicState>),
    Http(Box<HttpState>),
    /// HTTP whose CONNECT opened a tunnel (RFC 9110 §9.3.6): the HTTP state keeps its
    /// transactions and counters, the tunnel's bytes go to TLS.
    Tunnel(Box<HttpState>, Box<TlsState>),
    Dns(Box<DnsState>),
    Ssh(Box<SshState>),
    /// Decided with nothing to parse, or undecided after the probes.
    Idle,
}

/// The most first bytes of a TCP direction kept while its probes say maybe: enough for
/// every TCP signature (TLS decides at 6 bytes, HTTP at a method and its space, uTP-less
/// BitTorrent at 20), and small enough to box beside `ProbeMemory`.
const HELD_MAX: usize = 32;

/// What probing remembers once a TCP direction's first segment was too short to decide:
/// the probes' memory and each direction's undecided bytes, probed again together with
/// the next segment and handed to the parser first when the probes say yes. Boxed, so
/// only flows whose first bytes arrive in such pieces pay for it, and only while probing.
#[derive(Clone, Debug, Default)]
struct Undecided {
    mem: ProbeMemory,
    len: [u8; 2],
    bytes: [[u8; HELD_MAX]; 2],
}

impl Undecided {
    fn prefix(&self, dir: Dir) -> &[u8] {
        let d = dir as usize;
        &self.bytes[d][..usize::from(self.len[d])]
    }
}

/// One flow's application layer: 48 bytes inline (a unit test keeps this figure honest),
/// plus the boxed state of the protocol being parsed.
///
/// Architecture invariant: once `is_done()` is true, `on_payload` returns at its first
/// branch and nothing allocates again.
#[derive(Clone, Debug)]
pub struct L7Flow {
    state: State,
    /// Bytes inspected per direction, against `L7Config::budget`.
    used: [u32; 2],
    client_port: u16,
    server_port: u16,
    events: Events,
    /// Payload packets probed per direction.
    probed: [u8; 2],
    /// A direction whose budget ran out or whose probes gave up.
    stopped: [bool; 2],
    transport: Transport,
    app: Option<App>,
    done: bool,
    /// The directions whose TCP segments go through the parser's reorder state (bit
    /// per direction): checked on every segment, so kept here, not behind the box.
    reordering: u8,
}

impl L7Flow {
    pub fn new(transport: Transport, client_port: u16, server_port: u16) -> Self {
        L7Flow {
            state: State::Probing(ProbeMemory::default()),
            used: [0; 2],
            client_port,
            server_port,
            events: Events::default(),
            probed: [0; 2],
            stopped: [false; 2],
            transport,
            app: None,
            done: false,
            reordering: 0,
        }
    }

    /// Feeds one payload: in-order TCP bytes of `dir` (no retransmissions, no gaps) or
    /// one whole UDP datagram. Returns the TLS record kinds that start in it (empty unless
    /// the flow is TLS or DTLS and its record tracking still runs).
    pub fn on_payload(&mut self, cfg: &L7Config, dir: Dir, payload: &[u8], ts_ns: u64) -> Records {
        if self.done || payload.is_empty() {
            return Records::default();
        }
        match self.state {
            State::Probing(_) | State::Undecided(_) => self.probe(cfg, dir, payload, ts_ns),
            _ => self.parse(cfg, dir, payload, ts_ns),
        }
    }

    fn probe(&mut self, cfg: &L7Config, dir: Dir, payload: &[u8], ts_ns: u64) -> Records {
        let d = dir as usize;
        if self.stopped[d] {
            return Records::default();
        }
        self.probed[d] = self.probed[d].saturating_add(1);
        if self.app == Some(App::Stun) {
            // WebRTC: ICE's STUN checks, then DTLS on the same 5-tuple (RFC 8827 §6.5):
            // the flow is the DTLS it goes on to carry, as nDPI names it.
            if dtls(payload) {
                return self.decide(cfg, App::Dtls, dir, payload, ts_ns);
            }
            if self.probed[d] >= cfg.probe_packets {
                self.stopped[d] = true;
            }
            return self.probe_end();
        }
        // A TCP direction's signatures are at the start of its stream, which may have
        // begun in earlier segments too short to decide: probe those bytes and these as one.
        let joined: Vec<u8>;
        let stream: &[u8] = match &self.state {
            State::Undecided(h) if h.len[d] > 0 => {
                joined = [h.prefix(dir), payload].concat();
                &joined
            }
            _ => payload,
        };
        let mem = match &mut self.state {
            State::Probing(mem) => mem,
            State::Undecided(h) => &mut h.mem,
            _ => return Records::default(),
        };
        let verdict = match self.transport {
            Transport::Tcp => probe_tcp(dir, stream, mem, self.client_port, self.server_port),
            Transport::Udp => probe_udp(dir, payload, mem, self.client_port, self.server_port),
        };
        match verdict {
            Verdict::Yes(app) => self.decide(cfg, app, dir, stream, ts_ns),
            Verdict::No if self.transport == Transport::Tcp => {
                // Only the first bytes of a TCP stream carry its signatures.
                self.stopped[d] = true;
                self.hold(dir, &[]);
                self.probe_end()
            }
            Verdict::No | Verdict::Maybe => {
                if self.probed[d] >= cfg.probe_packets {
                    self.stopped[d] = true;
                    self.hold(dir, &[]);
                } else if self.transport == Transport::Tcp {
                    self.hold(dir, stream);
                }
                self.probe_end()
            }
        }
    }

    /// Keeps `stream` as the undecided start of a TCP direction, or forgets it when it is
    /// empty or longer than `HELD_MAX`: a direction still undecided after that many bytes
    /// is probed a segment at a time, as if it were joined late.
    fn hold(&mut self, dir: Dir, stream: &[u8]) {
        let d = dir as usize;
        let keep = if stream.len() <= HELD_MAX { stream } else { &[] };
        match &mut self.state {
            State::Undecided(h) => {
                h.bytes[d][..keep.len()].copy_from_slice(keep);
                h.len[d] = keep.len() as u8;
            }
            State::Probing(mem) if !keep.is_empty() => {
                let mut h = Box::new(Undecided { mem: *mem, ..Undecided::default() });
                h.bytes[d][..keep.len()].copy_from_slice(keep);
                h.len[d] = keep.len() as u8;
                self.state = State::Undecided(h);
            }
            _ => {}
        }
    }

    /// The probes said `app` on `stream` (the undecided bytes held for `dir` and the new
    /// ones): sets up its parser and hands it what each direction has sent so far.
    fn decide(&mut self, cfg: &L7Config, app: App, dir: Dir, stream: &[u8], ts_ns: u64) -> Records {
        self.app = Some(app);
        let other = match dir {
            Dir::ClientToServer => Dir::ServerToClient,
            Dir::ServerToClient => Dir::ClientToServer,
        };
        // The other direction may hold undecided bytes too; they start its stream.
        let other_held = match &self.state {
            State::Undecided(h) if h.len[other as usize] > 0 => Some(h.prefix(other).to_vec()),
            _ => None,
        };
        self.state = match (app, self.transport) {
            // A budget of 0 inspects nothing past the signatures (`L7Config::budget`).
            _ if cfg.budget == 0 => {
                self.done = true;
                State::Idle
            }
            (App::Tls, Transport::Tcp) => State::Tls(Box::new(TlsState::new(cfg.tls_certs))),
            (App::Dtls, Transport::Udp) => State::Dtls(Box::new(DtlsState::new(cfg.tls_certs))),
            (App::Quic, Transport::Udp) => State::Quic(Box::default()),
            (App::Http, Transport::Tcp) => State::Http(Box::default()),
            (App::Ssh, Transport::Tcp) => State::Ssh(Box::default()),
            (App::Dns | App::Mdns | App::Llmnr, _) => State::Dns(Box::default()),
            // Probing goes on for DTLS (`probe`).
            (App::Stun, Transport::Udp) => State::Probing(ProbeMemory::default()),
            // DNSCrypt's certificate query is DNS; its encrypted messages are not.
            (App::Dnscrypt, _) if !stream.starts_with(b"r6fnvWj8") => State::Dns(Box::default()),
            _ => {
                self.done = true;
                State::Idle
            }
        };
        if self.done {
            return Records::default();
        }
        if let Some(o) = other_held {
            // Its records started in an earlier payload: not this one's to report.
            self.parse(cfg, other, &o, ts_ns);
        }
        self.parse(cfg, dir, stream, ts_ns)
    }

    /// Bytes of `dir`'s TCP stream were lost before its next payload (a hole the engine
    /// saw in the sequence space). HTTP resynchronises at the next head; TLS stops
    /// looking for the server's certificate (the bytes after a hole would be read as
    /// its continuation); the others are not told.
    pub fn on_gap(&mut self, dir: Dir) {
        match &mut self.state {
            State::Http(s) => s.on_gap(dir),
            State::Tls(s) | State::Tunnel(_, s) => s.on_gap(dir),
            _ => {}
        }
    }

    /// The parser's reorder state (`reorder`); none while probing or once done: a hole
    /// there is told at once, as before.
    fn order_slot(&mut self) -> Option<&mut Option<Box<crate::reorder::Reorder>>> {
        match &mut self.state {
            State::Tls(s) | State::Tunnel(_, s) => Some(&mut s.reorder),
            State::Http(s) => Some(&mut s.reorder),
            State::Ssh(s) => Some(&mut s.reorder),
            State::Dns(s) => Some(&mut s.reorder),
            _ => None,
        }
    }

    /// A TCP segment of `dir`: `len` bytes at stream offset `at`, its `bytes` (none
    /// when the snap length cut it), `next` one past the highest byte of the direction
    /// seen before it (`at > next`: a hole before it). From a direction's first hole on,
    /// its segments are put back in order here (`reorder`) and this answers true;
    /// before, it answers false and the caller feeds the bytes new to the stream as
    /// they come. On every segment: the test is inline, the work cold.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn on_tcp_segment(
        &mut self,
        cfg: &L7Config,
        dir: Dir,
        at: u64,
        len: u64,
        bytes: Option<&[u8]>,
        ts_ns: u64,
        next: u64,
    ) -> bool {
        (self.reordering(dir) || at > next && bytes.is_some())
            && self.reorder_segment(cfg, dir, at, len, bytes, ts_ns, next)
    }

    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn reorder_segment(
        &mut self,
        cfg: &L7Config,
        dir: Dir,
        at: u64,
        len: u64,
        bytes: Option<&[u8]>,
        ts_ns: u64,
        next: u64,
    ) -> bool {
        let d = dir as usize;
        let Some(slot) = self.order_slot() else { return false };
        // Out of the parser's state while the bytes go in (they may change the state).
        let mut order = slot.take().unwrap_or_default();
        let mut stream = order.dirs[d].take().unwrap_or_else(|| crate::reorder::Stream::new(next));
        stream.push(at, len, bytes, ts_ns, &mut |step| self.take_step(cfg, dir, step));
        order.dirs[d] = Some(stream);
        match self.order_slot() {
            Some(slot) => {
                *slot = Some(order);
                self.reordering |= 1 << d;
            }
            // The bytes ended the parser (or changed it): what was held goes with it.
            None => self.reordering = 0,
        }
        true
    }

    /// Payload bytes the reorder streams hold back for a hole, both directions (0 when
    /// no direction has had one). Cold: the engine asks only around segments that
    /// go through the reorder state.
    pub fn held_bytes(&self) -> usize {
        if self.reordering == 0 {
            return 0;
        }
        let order = match &self.state {
            State::Tls(s) | State::Tunnel(_, s) => &s.reorder,
            State::Http(s) => &s.reorder,
            State::Ssh(s) => &s.reorder,
            State::Dns(s) => &s.reorder,
            _ => return 0,
        };
        order.as_ref().map_or(0, |o| o.dirs.iter().flatten().map(|d| d.held_bytes()).sum())
    }

    /// Whether some direction's TCP segments go through the reorder state.
    #[inline]
    pub fn reordering_any(&self) -> bool {
        self.reordering != 0
    }

    /// Whether `dir`'s TCP segments go through the reorder state (since its first hole).
    #[inline]
    pub fn reordering(&self, dir: Dir) -> bool {
        self.reordering & (1 << dir as u8) != 0
    }

    /// At the flow's end: what the streams still hold back for a hole goes in, after
    /// the hole.
    #[inline]
    pub fn flush_held(&mut self, cfg: &L7Config) {
        if self.reordering != 0 {
            self.flush_held_now(cfg);
        }
    }

    #[cold]
    #[inline(never)]
    fn flush_held_now(&mut self, cfg: &L7Config) {
        self.reordering = 0;
        let Some(mut order) = self.order_slot().and_then(Option::take) else { return };
        for (d, dir) in [Dir::ClientToServer, Dir::ServerToClient].into_iter().enumerate() {
            if let Some(s) = order.dirs[d].as_mut() {
                s.flush(&mut |step| self.take_step(cfg, dir, step));
            }
        }
    }

    fn take_step(&mut self, cfg: &L7Config, dir: Dir, step: crate::reorder::Step<'_>) {
        match step {
            crate::reorder::Step::Gap => self.on_gap(dir),
            crate::reorder::Step::Bytes(b, ts) => {
                self.on_payload(cfg, dir, b, ts);
            }
        }
    }

    /// Ends probing once both directions gave up.
    fn probe_end(&mut self) -> Records {
        if self.stopped[0] && self.stopped[1] {
            self.state = State::Idle;
            self.done = true;
        }
        Records::default()
    }

    fn parse(&mut self, cfg: &L7Config, dir: Dir, payload: &[u8], ts_ns: u64) -> Records {
        let d = dir as usize;
        let budget = cfg.budget as usize;
        let mut records = Records::default();
        let counted = match &mut self.state {
            State::Tls(s) => {
                let hello_pending = !s.dir_done(dir);
                records = s.on_data(dir, payload, ts_ns, cfg.reassembly_cap);
                hello_pending
            }
            State::Dtls(s) => {
                records = s.on_datagram(dir, payload, ts_ns);
                true
            }
            State::Quic(s) => {
                s.on_datagram(dir, payload, cfg.reassembly_cap);
                true
            }
            State::Http(s) => {
                let limits =
                    HttpLimits { privacy: cfg.url_privacy, max_transactions: cfg.max_http_transactions, budget };
                s.on_data(dir, payload, ts_ns, &limits);
                false
            }
            State::Tunnel(_, s) => {
                let hello_pending = !s.dir_done(dir);
                records = s.on_data(dir, payload, ts_ns, cfg.reassembly_cap);
                hello_pending
            }
            State::Dns(s) => {
                // DNS is bounded by its transaction count, not the byte budget: every
                // message is parsed whole and small, and a resolver's long-lived 5-tuple
                // should log all of its transactions up to the limit.
                s.on_data(dir, self.transport, payload, ts_ns, cfg.max_dns_transactions);
                false
            }
            State::Ssh(s) => {
                s.on_data(dir, payload);
                true
            }
            State::Probing(_) | State::Undecided(_) | State::Idle => false,
        };
        if counted {
            self.used[d] = self.used[d].saturating_add(payload.len().min(u32::MAX as usize) as u32);
            if self.used[d] as usize >= budget && !self.stopped[d] {
                self.stopped[d] = true;
                let stopped_early = match &mut self.state {
                    State::Tls(s) | State::Tunnel(_, s) => {
                        let early = !s.dir_done(dir);
                        s.stop(dir);
                        early
                    }
                    State::Dtls(s) => {
                        s.stop(dir);
                        false
                    }
                    State::Ssh(s) => {
                        s.stop(dir);
                        false
                    }
                    State::Quic(s) => {
                        let early = !s.is_done();
                        s.stop(dir);
                        early
                    }
                    _ => false,
                };
                if stopped_early {
                    self.events.insert(Event::BudgetExhausted);
                }
            }
        }
        // A tunnel's bytes start after the head of the 2xx that answered CONNECT: the
        // rest of the payload that carried it is lost to TLS (a proxy sends nothing of
        // the tunnel before the client's ClientHello, which comes after the 2xx).
        if matches!(&self.state, State::Http(s) if s.tunnel_established()) {
            if let State::Http(http) = std::mem::replace(&mut self.state, State::Idle) {
                self.state = State::Tunnel(http, Box::default());
            }
        }
        self.done = match &self.state {
            State::Tls(s) | State::Tunnel(_, s) => s.is_done(),
            State::Dtls(s) => s.is_done(),
            State::Quic(s) => s.is_done(),
            State::Http(s) => s.is_done(),
            State::Dns(s) => s.is_done(),
            State::Ssh(s) => s.is_done(),
            State::Probing(_) | State::Undecided(_) => false,
            State::Idle => true,
        };
        records
    }

    /// True when nothing more will be learned: the engine may stop calling.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The application, from the payload or else from the port table.
    pub fn app(&self) -> Option<App> {
        self.app.or_else(|| ports::classify(self.transport, self.client_port, self.server_port))
    }

    /// The application the payload showed; none when only the port table (or nothing)
    /// names one.
    #[inline]
    pub fn payload_app(&self) -> Option<App> {
        self.app
    }

    pub fn app_source(&self) -> AppSource {
        if self.app.is_some() {
            AppSource::Payload
        } else if ports::classify(self.transport, self.client_port, self.server_port).is_some() {
            AppSource::Port
        } else {
            AppSource::None
        }
    }

    /// The hellos of a TLS, DTLS or QUIC flow.
    pub fn tls(&self) -> Option<&TlsInfo> {
        match &self.state {
            State::Tls(s) | State::Tunnel(_, s) => Some(&s.info),
            State::Dtls(s) => Some(&s.info),
            State::Quic(s) => Some(&s.info.tls),
            _ => None,
        }
    }

    /// Every string of the flow's application layer that a record writes and the peers
    /// chose (names, ALPN protocols, banners, headers, the certificate's names), each
    /// handed to `f`: `--anonymize` rewrites the addresses written in them. The strings of
    /// the transactions are [`crate::http::HttpTransaction::texts_mut`] and
    /// [`crate::dns::DnsTransaction::texts_mut`]. Every state and every struct of strings
    /// is matched whole: a new one fails to compile until it is listed here.
    pub fn texts_mut(&mut self, f: &mut crate::TextVisitor<'_>) {
        match &mut self.state {
            State::Tls(s) => s.info.texts_mut(f),
            State::Dtls(s) => s.info.texts_mut(f),
            State::Quic(s) => s.info.texts_mut(f),
            State::Http(h) => h.texts_mut(f),
            State::Tunnel(h, s) => {
                h.texts_mut(f);
                s.info.texts_mut(f);
            }
            State::Ssh(s) => s.texts_mut(f),
            // Its strings are those of its transactions.
            State::Dns(_) => {}
            State::Probing(_) | State::Undecided(_) | State::Idle => {}
        }
    }

    pub fn sni(&self) -> Option<&str> {
        self.tls()?.client.as_ref()?.sni.as_deref()
    }

    /// The ALPN protocols the client offered.
    pub fn alpn(&self) -> &[String] {
        self.tls().and_then(|t| t.client.as_ref()).map(|c| c.alpn.as_slice()).unwrap_or_default()
    }

    pub fn ja3(&self) -> Option<&str> {
        Some(&self.tls()?.client.as_ref()?.ja3)
    }

    pub fn ja3_md5(&self) -> Option<&str> {
        Some(&self.tls()?.client.as_ref()?.ja3_md5)
    }

    pub fn ja4(&self) -> Option<&str> {
        Some(&self.tls()?.client.as_ref()?.ja4)
    }

    /// JA3S of the ServerHello (lowercase hex MD5).
    pub fn ja3s_md5(&self) -> Option<&str> {
        Some(&self.tls()?.server.as_ref()?.ja3s_md5)
    }

    pub fn ja4s(&self) -> Option<&str> {
        Some(&self.tls()?.server.as_ref()?.ja4s)
    }

    /// Handshake and first Application Data times (TLS over TCP and DTLS). Not of a
    /// CONNECT tunnel's TLS: its byte offsets would count from the tunnel's start, not
    /// the connection's.
    pub fn tls_times(&self) -> Option<&TlsTimes> {
        match &self.state {
            State::Tls(s) => Some(&s.times),
            State::Dtls(s) => Some(&s.times),
            _ => None,
        }
    }

    /// The identification strings and HASSH fingerprints of an SSH flow.
    pub fn ssh(&self) -> Option<&SshState> {
        match &self.state {
            State::Ssh(s) => Some(s),
            _ => None,
        }
    }

    pub fn quic(&self) -> Option<&QuicInfo> {
        match &self.state {
            State::Quic(s) => Some(&s.info),
            _ => None,
        }
    }

    /// Counters and first host/status of an HTTP flow.
    pub fn http(&self) -> Option<&HttpState> {
        match &self.state {
            State::Http(s) | State::Tunnel(s, _) => Some(s),
            _ => None,
        }
    }

    /// The HTTP state, to change what a record will write of it (an address-literal
    /// host anonymized).
    pub fn http_mut(&mut self) -> Option<&mut HttpState> {
        match &mut self.state {
            State::Http(s) | State::Tunnel(s, _) => Some(s),
            _ => None,
        }
    }

    /// The finished HTTP transactions; with `flush` (at the flow's end) also requests
    /// still without a response.
    pub fn drain_http(&mut self, flush: bool) -> Vec<HttpTransaction> {
        match &mut self.state {
            State::Http(s) | State::Tunnel(s, _) => s.drain(flush),
            _ => Vec::new(),
        }
    }

    /// The finished DNS transactions; with `flush` also unanswered queries.
    pub fn drain_dns(&mut self, flush: bool) -> Vec<DnsTransaction> {
        match &mut self.state {
            State::Dns(s) => s.drain(flush),
            _ => Vec::new(),
        }
    }

    /// Every named event of the flow and of its parser.
    pub fn events(&self) -> Events {
        let inner = match &self.state {
            State::Tunnel(h, t) => {
                let mut e = h.events;
                for x in t.events.iter() {
                    e.insert(x);
                }
                e
            }
            State::Tls(s) => s.events,
            State::Dtls(s) => s.events,
            State::Quic(s) => s.events,
            State::Http(s) => s.events,
            State::Dns(s) => s.events,
            State::Ssh(_) | State::Probing(_) | State::Undecided(_) | State::Idle => Events::default(),
        };
        let mut all = self.events;
        for e in inner.iter() {
            all.insert(e);
        }
        all
    }

    /// Heap bytes held now (the boxed state and its buffers), for memory accounting.
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        match &self.state {
            State::Tls(s) => size_of::<TlsState>() + s.heap_bytes(),
            State::Dtls(s) => size_of::<DtlsState>() + s.heap_bytes(),
            State::Quic(s) => size_of::<QuicState>() + s.heap_bytes(),
            State::Http(s) => size_of::<HttpState>() + s.heap_bytes(),
            State::Tunnel(h, t) => size_of::<HttpState>() + h.heap_bytes() + size_of::<TlsState>() + t.heap_bytes(),
            State::Dns(s) => size_of::<DnsState>() + s.heap_bytes(),
            State::Ssh(s) => size_of::<SshState>() + s.heap_bytes(),
            State::Undecided(_) => size_of::<Undecided>(),
            State::Probing(_) | State::Idle => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tls::parser::tests::{alpn_ext, client_hello, records, sni_ext};

    /// An HTTP exchange whose segments come out of order gives the transaction of the
    /// same exchange in order; a segment lost for good gives what a hole gives.
    #[test]
    fn tcp_segments_out_of_order_are_put_back_in_order() {
        let cfg = L7Config::default();
        let req = b"GET /reordered/path HTTP/1.1\r\nHost: www.example.com\r\nUser-Agent: t\r\n\r\n";
        let resp = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello";
        let cut = |b: &'static [u8]| -> Vec<(u64, &'static [u8])> {
            let step = b.len().div_ceil(3);
            b.chunks(step).enumerate().map(|(i, c)| ((i * step) as u64, c)).collect()
        };
        // Segments as (direction, offset, bytes), in the order they come.
        let run = |order: &[(Dir, u64, &[u8])]| {
            let mut f = L7Flow::new(Transport::Tcp, 40000, 80);
            let mut next = [0u64; 2];
            for (i, (dir, at, b)) in order.iter().enumerate() {
                let d = *dir as usize;
                let ts = i as u64 * 1_000_000;
                if !f.on_tcp_segment(&cfg, *dir, *at, b.len() as u64, Some(b), ts, next[d]) {
                    // What the engine does without a hole: the bytes new to the stream.
                    let from = next[d].saturating_sub(*at) as usize;
                    if from < b.len() {
                        f.on_payload(&cfg, *dir, &b[from..], ts);
                    }
                }
                next[d] = next[d].max(at + b.len() as u64);
            }
            // The flow's end: what is still held goes in.
            f.flush_held(&cfg);
            f.drain_http(true)
        };
        let (q, r) = (cut(req), cut(resp));
        let (c, s) = (Dir::ClientToServer, Dir::ServerToClient);
        let in_order: Vec<(Dir, u64, &[u8])> =
            q.iter().map(|(a, b)| (c, *a, *b)).chain(r.iter().map(|(a, b)| (s, *a, *b))).collect();
        let want = run(&in_order);
        assert_eq!(want.len(), 1);
        assert_eq!(want[0].request.as_ref().and_then(|q| q.url.as_deref()), Some("/reordered/path"));
        assert!(want[0].response.is_some(), "{want:?}");
        // The request's last two segments swapped, and the response's.
        let swapped = [(c, q[0].0, q[0].1), (c, q[2].0, q[2].1), (c, q[1].0, q[1].1)]
            .into_iter()
            .chain([(s, r[0].0, r[0].1), (s, r[2].0, r[2].1), (s, r[1].0, r[1].1)])
            .collect::<Vec<_>>();
        assert_eq!(run(&swapped), want, "swapped segments");
        // And retransmitted on top (the same but for the times, which shift by a packet).
        let mut again = swapped.clone();
        again.insert(3, (c, q[2].0, q[2].1));
        again.push((s, r[1].0, r[1].1));
        let untimed = |mut v: Vec<HttpTransaction>| {
            for t in &mut v {
                if let Some(q) = t.request.as_mut() {
                    q.ts_ns = 0;
                }
                if let Some(r) = t.response.as_mut() {
                    r.ts_ns = 0;
                }
            }
            v
        };
        assert_eq!(untimed(run(&again)), untimed(want.clone()), "retransmissions");
        // The response's middle segment lost: not the in-order transaction.
        let lost: Vec<_> = swapped.iter().copied().filter(|(d, a, _)| !(*d == s && *a == r[1].0)).collect();
        assert_ne!(run(&lost), want);
    }

    #[test]
    fn size_is_small() {
        assert_eq!(std::mem::size_of::<ProbeMemory>(), 20);
        assert_eq!(std::mem::size_of::<L7Flow>(), 48);
    }

    #[test]
    fn tls_flow_end_to_end() {
        let cfg = L7Config::default();
        let mut f = L7Flow::new(Transport::Tcp, 50000, 443);
        let ch = records(&client_hello(0x0303, &[0x1301], &[sni_ext("flow.example"), alpn_ext(&["h2"])], false), 100);
        for (i, c) in ch.chunks(33).enumerate() {
            f.on_payload(&cfg, Dir::ClientToServer, c, i as u64);
        }
        assert_eq!(f.app(), Some(App::Tls));
        assert_eq!(f.app_source(), AppSource::Payload);
        assert_eq!(f.sni(), Some("flow.example"));
        assert_eq!(f.alpn(), ["h2"]);
        assert!(f.ja4().unwrap().starts_with("t12d0102h2_"));
        assert!(!f.is_done());
        f.on_payload(&cfg, Dir::ClientToServer, &[23, 3, 3, 0, 1, 0], 10);
        let sh = [22, 3, 3, 0, 42, 2, 0, 0, 38, 3, 3];
        let mut s = sh.to_vec();
        s.extend_from_slice(&[0; 32]);
        s.extend_from_slice(&[0, 0x13, 0x01, 0]);
        f.on_payload(&cfg, Dir::ServerToClient, &s, 11);
        let r = f.on_payload(&cfg, Dir::ServerToClient, &[23, 3, 3, 0, 1, 0], 12);
        assert!(r.contains(crate::RecordKind::ApplicationData));
        assert_eq!(f.tls().unwrap().server.as_ref().unwrap().cipher_suite, 0x1301);
        assert_eq!(f.tls_times().unwrap().first_appdata_ns, [Some(10), Some(12)]);
        assert!(f.is_done());
        assert_eq!(f.heap_bytes(), std::mem::size_of::<TlsState>(), "buffers are freed once done");
    }

    #[test]
    fn unknown_flow_costs_nothing_and_falls_back_to_ports() {
        let cfg = L7Config::default();
        let mut f = L7Flow::new(Transport::Tcp, 50000, 22);
        f.on_payload(&cfg, Dir::ClientToServer, b"\x00\x01\x02\x03garbage garbage", 0);
        f.on_payload(&cfg, Dir::ServerToClient, b"\x00\x01\x02\x03garbage garbage", 0);
        assert!(f.is_done());
        assert_eq!(f.heap_bytes(), 0);
        assert_eq!((f.app(), f.app_source()), (Some(App::Ssh), AppSource::Port));
        let f = L7Flow::new(Transport::Udp, 50000, 50001);
        assert_eq!((f.app(), f.app_source()), (None, AppSource::None));
    }

    /// RFC 8448 §3's ClientHello record (`tests/testdata/rfc8448_client_hello.hex`).
    fn rfc8448_client_hello() -> Vec<u8> {
        crate::quic::crypto::tests::unhex(include_str!("../tests/testdata/rfc8448_client_hello.hex"))
    }

    /// Feeds each of `parts` as one payload of `dir`.
    fn feed(f: &mut L7Flow, cfg: &L7Config, dir: Dir, parts: &[&[u8]]) {
        for (i, p) in parts.iter().enumerate() {
            f.on_payload(cfg, dir, p, i as u64);
        }
    }

    /// Guards against false positives found once: Redis's `+OK` and `+PONG` were POP3's
    /// greeting (POP3's server speaks first; Redis answers a client), NetBIOS names on 137
    /// were DNS, and mDNS/LLMNR are named for what they are while DNS parses them.
    #[test]
    fn redis_netbios_mdns_are_not_their_lookalikes() {
        let cfg = L7Config::default();
        let mut f = L7Flow::new(Transport::Tcp, 35901, 6379);
        feed(&mut f, &cfg, Dir::ClientToServer, &[b"PING\r\n"]);
        feed(&mut f, &cfg, Dir::ServerToClient, &[b"+PONG\r\n"]);
        assert_eq!((f.app(), f.app_source()), (Some(App::Redis), AppSource::Payload));
        let mut f = L7Flow::new(Transport::Tcp, 35903, 6379);
        feed(&mut f, &cfg, Dir::ClientToServer, &[b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"]);
        assert_eq!(f.app(), Some(App::Redis));
        let mut f = L7Flow::new(Transport::Tcp, 40000, 2110);
        feed(&mut f, &cfg, Dir::ClientToServer, &[b"hello\r\n"]);
        feed(&mut f, &cfg, Dir::ServerToClient, &[b"+OK ready\r\n"]);
        assert_ne!(f.app(), Some(App::Pop3), "a server that answers is not POP3's greeting");
        let mut f = L7Flow::new(Transport::Tcp, 40000, 110);
        feed(&mut f, &cfg, Dir::ServerToClient, &[b"+OK POP3 server ready\r\n"]);
        assert_eq!((f.app(), f.app_source()), (Some(App::Pop3), AppSource::Payload));

        // NBNS query for `*` (RFC 1002 §4.2.12), DNS-shaped.
        let mut nbns = vec![0xa0, 0xc2, 0x01, 0x10, 0, 1, 0, 0, 0, 0, 0, 0, 32];
        nbns.extend_from_slice(b"CKAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\0\0\x21\0\x01");
        let mut f = L7Flow::new(Transport::Udp, 137, 137);
        feed(&mut f, &cfg, Dir::ClientToServer, &[&nbns]);
        assert_eq!(f.app(), Some(App::Netbios));

        let mut q = vec![0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        q.extend_from_slice(b"\x05_http\x04_tcp\x05local\x00\x00\x0c\x00\x01");
        for (port, app) in [(5353, App::Mdns), (5355, App::Llmnr), (53, App::Dns)] {
            let mut f = L7Flow::new(Transport::Udp, 40000, port);
            feed(&mut f, &cfg, Dir::ClientToServer, &[&q]);
            assert_eq!(f.app(), Some(app));
            assert_eq!(f.drain_dns(true).first().map(|t| t.qname.clone()).as_deref(), Some("_http._tcp.local"));
        }
    }

    /// Guards WebRTC: STUN connectivity checks and then DTLS on one 5-tuple make a `dtls`
    /// flow whose DTLS is parsed, as nDPI names it; STUN alone stays `stun`.
    #[test]
    fn stun_then_dtls_is_dtls() {
        let cfg = L7Config::default();
        let mut stun = vec![0, 1, 0, 0, 0x21, 0x12, 0xa4, 0x42];
        stun.extend_from_slice(&[7; 12]);
        let mut f = L7Flow::new(Transport::Udp, 49153, 3478);
        feed(&mut f, &cfg, Dir::ClientToServer, &[&stun, &stun]);
        assert_eq!(f.app(), Some(App::Stun));
        assert!(!f.is_done(), "still looking for DTLS");
        let dtls_hello = [22, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        feed(&mut f, &cfg, Dir::ClientToServer, &[&dtls_hello]);
        assert_eq!((f.app(), f.app_source()), (Some(App::Dtls), AppSource::Payload));
        assert!(f.tls().is_some());
        let mut f = L7Flow::new(Transport::Udp, 49153, 3478);
        for _ in 0..cfg.probe_packets {
            feed(&mut f, &cfg, Dir::ClientToServer, &[&stun]);
            feed(&mut f, &cfg, Dir::ServerToClient, &[&stun]);
        }
        assert_eq!(f.app(), Some(App::Stun));
        assert!(f.is_done() && f.heap_bytes() == 0);
    }

    /// Guards the undecided first bytes of a TCP direction: a ClientHello whose first
    /// segment holds 1 to 8 bytes (the 5-byte record header alone among them) gives the
    /// same SNI, JA3 and JA4 as one sent whole. Before the probes held those bytes, a
    /// first segment the probes answered "maybe" to was dropped and the parser started
    /// mid-record.
    #[test]
    fn client_hello_split_in_its_first_bytes() {
        let cfg = L7Config::default();
        let ch = rfc8448_client_hello();
        let mut whole = L7Flow::new(Transport::Tcp, 50000, 443);
        feed(&mut whole, &cfg, Dir::ClientToServer, &[&ch]);
        assert_eq!(whole.sni(), Some("server"));
        for at in 1..=8 {
            let mut f = L7Flow::new(Transport::Tcp, 50000, 443);
            feed(&mut f, &cfg, Dir::ClientToServer, &[&ch[..at], &ch[at..]]);
            assert_eq!(f.app(), Some(App::Tls), "split at {at}");
            assert_eq!((f.sni(), f.ja3(), f.ja4()), (whole.sni(), whole.ja3(), whole.ja4()), "split at {at}");
        }
        // Three pieces, the first two still undecided.
        let mut f = L7Flow::new(Transport::Tcp, 50000, 443);
        feed(&mut f, &cfg, Dir::ClientToServer, &[&ch[..2], &ch[2..5], &ch[5..]]);
        assert_eq!(f.ja4(), whole.ja4());
    }

    /// Guards the same for an HTTP request cut after 1 to 6 bytes ("GE" + "T / ..."):
    /// method, host and path are those of the request sent whole.
    #[test]
    fn http_request_split_in_its_first_bytes() {
        let cfg = L7Config::default();
        let req: &[u8] = b"GET /index.html?x=1 HTTP/1.1\r\nHost: www.example.org\r\nUser-Agent: t/1\r\n\r\n";
        let resp: &[u8] = b"HTTP/1.1 204 No Content\r\n\r\n";
        for at in 1..=6 {
            let mut f = L7Flow::new(Transport::Tcp, 50000, 8080);
            feed(&mut f, &cfg, Dir::ClientToServer, &[&req[..at], &req[at..]]);
            feed(&mut f, &cfg, Dir::ServerToClient, &[&resp[..at], &resp[at..]]);
            assert_eq!(f.app(), Some(App::Http), "split at {at}");
            let tx = f.drain_http(true);
            assert_eq!(tx.len(), 1, "split at {at}");
            let r = tx[0].request.as_ref().expect("the request");
            assert_eq!(
                (r.method.as_str(), r.host.as_deref(), r.url.as_deref()),
                ("GET", Some("www.example.org"), Some("/index.html?x=1")),
                "split at {at}"
            );
            assert_eq!(tx[0].response.as_ref().map(|r| r.status), Some(204), "split at {at}");
        }
    }

    /// Guards the other users of held bytes: DNS over TCP whose 2-byte length prefix
    /// (RFC 1035 §4.2.2) goes in a segment of its own keeps its framing, and an SMTP
    /// command cut after one letter still says SMTP on a port the table does not know.
    /// The held bytes are freed once the probes decide, and a direction still undecided
    /// after `HELD_MAX` bytes holds nothing.
    #[test]
    fn held_bytes_serve_every_tcp_signature_and_are_freed() {
        let cfg = L7Config::default();
        let mut q = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
        q.extend_from_slice(b"\x03www\x07example\x03com\x00\x00\x01\x00\x01");
        let len = (q.len() as u16).to_be_bytes();
        let mut f = L7Flow::new(Transport::Tcp, 40000, 53);
        feed(&mut f, &cfg, Dir::ClientToServer, &[&len, &q]);
        assert_eq!(f.app(), Some(App::Dns));
        assert_eq!(f.drain_dns(true).first().map(|t| t.qname.as_str()), Some("www.example.com"));

        let mut f = L7Flow::new(Transport::Tcp, 40000, 2525);
        let greeting = b"220 mail.example.org ESMTP ready for you\r\n";
        assert!(greeting.len() > HELD_MAX);
        feed(&mut f, &cfg, Dir::ServerToClient, &[greeting]);
        assert_eq!(f.heap_bytes(), 0, "too long to hold");
        feed(&mut f, &cfg, Dir::ClientToServer, &[b"E"]);
        assert_eq!(f.heap_bytes(), std::mem::size_of::<Undecided>());
        feed(&mut f, &cfg, Dir::ClientToServer, &[b"HLO me\r\n"]);
        assert_eq!((f.app(), f.app_source()), (Some(App::Smtp), AppSource::Payload));
        assert!(f.is_done());
        assert_eq!(f.heap_bytes(), 0);
    }

    /// Guards `--l7-budget 0`: the signatures still name the application, but no parser
    /// runs (no SNI, no HTTP or DNS transactions, no QUIC hellos) and nothing is
    /// allocated. Before, a budget of 0 changed nothing.
    #[test]
    fn budget_zero_classifies_and_parses_nothing() {
        let cfg = L7Config { budget: 0, ..L7Config::default() };
        let mut f = L7Flow::new(Transport::Tcp, 50000, 443);
        feed(&mut f, &cfg, Dir::ClientToServer, &[&rfc8448_client_hello()]);
        assert_eq!((f.app(), f.app_source()), (Some(App::Tls), AppSource::Payload));
        assert_eq!((f.sni(), f.tls().is_some(), f.tls_times().is_some()), (None, false, false));
        assert!(f.is_done());
        assert_eq!(f.heap_bytes(), 0);

        let mut f = L7Flow::new(Transport::Tcp, 50000, 8080);
        feed(&mut f, &cfg, Dir::ClientToServer, &[b"GET / HTTP/1.1\r\nHost: x.example\r\n\r\n"]);
        assert_eq!(f.app(), Some(App::Http));
        assert!(f.http().is_none() && f.drain_http(true).is_empty() && f.is_done());

        let mut q = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
        q.extend_from_slice(b"\x03www\x07example\x03com\x00\x00\x01\x00\x01");
        let mut f = L7Flow::new(Transport::Udp, 40000, 53);
        feed(&mut f, &cfg, Dir::ClientToServer, &[&q]);
        assert_eq!(f.app(), Some(App::Dns));
        assert!(f.drain_dns(true).is_empty() && f.is_done());

        let mut f = L7Flow::new(Transport::Udp, 40000, 443);
        let initial = crate::quic::crypto::tests::unhex(crate::quic::state::tests::RFC9001_A2_PACKET);
        feed(&mut f, &cfg, Dir::ClientToServer, &[&initial]);
        assert_eq!(f.app(), Some(App::Quic));
        assert!(f.quic().is_none() && f.sni().is_none() && f.is_done());
    }

    /// Guards the budget of HTTP (the heads it keeps as transactions; past it they are
    /// counted only): heads that arrive whole in their segment count against it too (before, it was checked only while a head was buffered across segments,
    /// so a flow of small requests was parsed whole whatever the budget), and the search
    /// for a head's end looks no further than the budget left.
    #[test]
    fn budget_bounds_http_heads() {
        let cfg = L7Config { budget: 200, ..L7Config::default() };
        let req: &[u8] = b"GET /0123456789 HTTP/1.1\r\nHost: x.example\r\n\r\n";
        assert_eq!(req.len(), 45);
        for one_segment in [false, true] {
            let mut f = L7Flow::new(Transport::Tcp, 50000, 8080);
            if one_segment {
                feed(&mut f, &cfg, Dir::ClientToServer, &[&req.repeat(10)]);
            } else {
                feed(&mut f, &cfg, Dir::ClientToServer, &[req; 10]);
            }
            // 4 × 45 = 180 bytes fit in 200; the fifth head would end at 225: the
            // requests after it are counted, not kept.
            assert_eq!(f.http().map(|h| h.requests), Some(10), "one segment: {one_segment}");
            assert!(f.events().contains(Event::BudgetExhausted));
            assert_eq!(f.drain_http(true).len(), 4, "one segment: {one_segment}");
        }
    }

    /// Guards HTTP CONNECT (RFC 9110 §9.3.6): once a CONNECT has a 2xx response, the
    /// TLS inside the tunnel gives the flow its SNI, JA3, JA4 and ServerHello, while the
    /// flow stays `http` with its CONNECT transactions (a 407 first does not open the
    /// tunnel). Before, the ClientHello was taken for a malformed request.
    #[test]
    fn connect_tunnel_carries_tls() {
        let cfg = L7Config::default();
        let ch = rfc8448_client_hello();
        let mut direct = L7Flow::new(Transport::Tcp, 50000, 443);
        feed(&mut direct, &cfg, Dir::ClientToServer, &[&ch]);

        let mut f = L7Flow::new(Transport::Tcp, 50000, 3128);
        let connect: &[u8] = b"CONNECT server:443 HTTP/1.1\r\nHost: server:443\r\n\r\n";
        feed(&mut f, &cfg, Dir::ClientToServer, &[connect]);
        feed(
            &mut f,
            &cfg,
            Dir::ServerToClient,
            &[b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n"],
        );
        assert!(f.tls().is_none(), "no tunnel after a 407");
        feed(
            &mut f,
            &cfg,
            Dir::ClientToServer,
            &[b"CONNECT server:443 HTTP/1.1\r\nHost: server:443\r\nProxy-Authorization: Basic eDp5\r\n\r\n"],
        );
        feed(&mut f, &cfg, Dir::ServerToClient, &[b"HTTP/1.1 200 Connection established\r\n\r\n"]);
        feed(&mut f, &cfg, Dir::ClientToServer, &[&ch[..3], &ch[3..]]);
        let mut sh = vec![22, 3, 3, 0, 42, 2, 0, 0, 38, 3, 3];
        sh.extend_from_slice(&[0; 32]);
        sh.extend_from_slice(&[0, 0x13, 0x01, 0]);
        feed(&mut f, &cfg, Dir::ServerToClient, &[&sh]);

        assert_eq!((f.app(), f.app_source()), (Some(App::Http), AppSource::Payload));
        assert_eq!((f.sni(), f.ja3(), f.ja4()), (Some("server"), direct.ja3(), direct.ja4()));
        assert_eq!(f.tls().and_then(|t| t.server.as_ref()).map(|s| s.cipher_suite), Some(0x1301));
        assert_eq!(f.http().map(|h| (h.requests, h.responses, h.first_status)), Some((2, 2, Some(407))));
        let tx = f.drain_http(true);
        let got: Vec<_> = tx
            .iter()
            .map(|t| (t.request.as_ref().map(|r| r.method.clone()), t.response.as_ref().map(|r| r.status)))
            .collect();
        assert_eq!(got, [(Some("CONNECT".to_string()), Some(407)), (Some("CONNECT".to_string()), Some(200))]);
        assert!(!f.events().contains(Event::HttpMalformed), "{:?}", f.events());
        assert!(f.heap_bytes() >= std::mem::size_of::<HttpState>() + std::mem::size_of::<TlsState>());
    }

    #[test]
    fn transaction_limit_stops_a_dns_flow() {
        let cfg = L7Config { max_dns_transactions: 4, ..L7Config::default() };
        let mut f = L7Flow::new(Transport::Udp, 40000, 53);
        let mut q = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
        q.extend_from_slice(b"\x03www\x07example\x03com\x00\x00\x01\x00\x01");
        for _ in 0..10 {
            f.on_payload(&cfg, Dir::ClientToServer, &q, 0);
            f.on_payload(&cfg, Dir::ServerToClient, &q, 0);
        }
        assert!(f.is_done());
        // The limit counts messages, two per transaction: 8 queries here.
        assert_eq!(f.drain_dns(true).len(), 8);
        assert!(f.events().contains(Event::DnsTooManyTransactions));
    }
}
