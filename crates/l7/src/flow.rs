//! `L7Flow`: what one flow's application layer remembers, and the one entry point the
//! engine calls per payload.

use crate::classify::signatures::{probe_tcp, probe_udp, ProbeMemory, Verdict};
use crate::classify::{ports, App, AppSource};
use crate::dns::{DnsState, DnsTransaction};
use crate::event::{Event, Events};
use crate::http::{HttpLimits, HttpState, HttpTransaction};
use crate::quic::{QuicInfo, QuicState};
use crate::tls::{DtlsState, TlsInfo, TlsState, TlsTimes};
use crate::{Dir, L7Config, Records, Transport};

/// The protocol state. The parsers' states are boxed: a flow pays for one only when its
/// protocol is being parsed, and a flow that is none of them stays a few dozen bytes.
#[derive(Clone, Debug)]
enum State {
    Probing(ProbeMemory),
    Tls(Box<TlsState>),
    Dtls(Box<DtlsState>),
    Quic(Box<QuicState>),
    Http(Box<HttpState>),
    Dns(Box<DnsState>),
    /// Decided with nothing to parse, or undecided after the probes.
    Idle,
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
        }
    }

    /// Feeds one payload: in-order TCP bytes of `dir` (no retransmissions, no gaps) or
    /// one whole UDP datagram. Returns the TLS record kinds that start in it (empty unless
    /// the flow is TLS or DTLS and its record tracking still runs).
    pub fn on_payload(&mut self, cfg: &L7Config, dir: Dir, payload: &[u8], ts_ns: u64) -> Records {
        if self.done || payload.is_empty() {
            return Records::default();
        }
        let d = dir as usize;
        if let State::Probing(mem) = &mut self.state {
            if self.stopped[d] {
                return Records::default();
            }
            self.probed[d] = self.probed[d].saturating_add(1);
            let verdict = match self.transport {
                Transport::Tcp => probe_tcp(dir, payload, mem, self.client_port, self.server_port),
                Transport::Udp => probe_udp(dir, payload, mem, self.client_port, self.server_port),
            };
            match verdict {
                Verdict::Yes(app) => {
                    self.app = Some(app);
                    self.state = match (app, self.transport) {
                        (App::Tls, Transport::Tcp) => State::Tls(Box::default()),
                        (App::Dtls, Transport::Udp) => State::Dtls(Box::default()),
                        (App::Quic, Transport::Udp) => State::Quic(Box::default()),
                        (App::Http, Transport::Tcp) => State::Http(Box::default()),
                        (App::Dns, _) => State::Dns(Box::default()),
                        _ => {
                            self.done = true;
                            State::Idle
                        }
                    };
                    if self.done {
                        return Records::default();
                    }
                }
                Verdict::No if self.transport == Transport::Tcp => {
                    // Only the first bytes of a TCP stream carry its signatures.
                    self.stopped[d] = true;
                    return self.probe_end();
                }
                Verdict::No | Verdict::Maybe => {
                    if self.probed[d] >= cfg.probe_packets {
                        self.stopped[d] = true;
                    }
                    return self.probe_end();
                }
            }
        }
        self.parse(cfg, dir, payload, ts_ns)
    }

    /// Bytes of `dir`'s TCP stream were lost before its next payload (a hole the engine
    /// saw in the sequence space). HTTP resynchronises at the next head; the others are
    /// not told.
    pub fn on_gap(&mut self, dir: Dir) {
        if let State::Http(s) = &mut self.state {
            s.on_gap(dir);
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
            State::Dns(s) => {
                // DNS is bounded by its transaction count, not the byte budget: every
                // message is parsed whole and small, and a resolver's long-lived 5-tuple
                // should log all of its transactions up to the limit.
                s.on_data(dir, self.transport, payload, ts_ns, cfg.max_dns_transactions);
                false
            }
            State::Probing(_) | State::Idle => false,
        };
        if counted {
            self.used[d] = self.used[d].saturating_add(payload.len().min(u32::MAX as usize) as u32);
            if self.used[d] as usize >= budget && !self.stopped[d] {
                self.stopped[d] = true;
                let stopped_early = match &mut self.state {
                    State::Tls(s) => {
                        let early = !s.dir_done(dir);
                        s.stop(dir);
                        early
                    }
                    State::Dtls(s) => {
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
        self.done = match &self.state {
            State::Tls(s) => s.is_done(),
            State::Dtls(s) => s.is_done(),
            State::Quic(s) => s.is_done(),
            State::Http(s) => s.is_done(),
            State::Dns(s) => s.is_done(),
            State::Probing(_) => false,
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
            State::Tls(s) => Some(&s.info),
            State::Dtls(s) => Some(&s.info),
            State::Quic(s) => Some(&s.info.tls),
            _ => None,
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

    /// Handshake and first Application Data times (TLS over TCP and DTLS).
    pub fn tls_times(&self) -> Option<&TlsTimes> {
        match &self.state {
            State::Tls(s) => Some(&s.times),
            State::Dtls(s) => Some(&s.times),
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
            State::Http(s) => Some(s),
            _ => None,
        }
    }

    /// The finished HTTP transactions; with `flush` (at the flow's end) also requests
    /// still without a response.
    pub fn drain_http(&mut self, flush: bool) -> Vec<HttpTransaction> {
        match &mut self.state {
            State::Http(s) => s.drain(flush),
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
            State::Tls(s) => s.events,
            State::Dtls(s) => s.events,
            State::Quic(s) => s.events,
            State::Http(s) => s.events,
            State::Dns(s) => s.events,
            State::Probing(_) | State::Idle => Events::default(),
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
            State::Dtls(_) => size_of::<DtlsState>(),
            State::Quic(s) => size_of::<QuicState>() + s.heap_bytes(),
            State::Http(s) => size_of::<HttpState>() + s.heap_bytes(),
            State::Dns(s) => size_of::<DnsState>() + s.heap_bytes(),
            State::Probing(_) | State::Idle => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tls::parser::tests::{alpn_ext, client_hello, records, sni_ext};

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
