//! IPFIX export (`--ipfix HOST:PORT`): every ended flow as a data record to a
//! collector, beside the logs.
//!
//! ```text
//! worker 0: RecordOut ─ IpfixOut (records of ended flows, in blocks) ──┐
//! worker 1: RecordOut ─ IpfixOut ──────────────────────────────────────┼─► exporter thread: Framer (messages) ─► Collector (UDP or TCP)
//!  ...                                                                 ┘
//! ```
//!
//! The workers encode each ended flow as a data record of its template
//! (`tapstat_sink::ipfix::encode`, as they format its log record) into a block of 32 KiB,
//! prefixed by the template id and the record's length; the exporter thread puts the
//! records into messages (header, data sets, the sequence number of the stream) and
//! sends them, so the workers never wait on the network while the channel has room.
//! Over UDP the templates go first and again every [`TEMPLATE_REFRESH`] of wall time and
//! every [`TEMPLATE_REFRESH_MESSAGES`] messages (RFC 7011 §8.4: a collector that starts
//! or restarts later learns them); over TCP, once per connection. A message that cannot
//! be sent is counted (`send_errors`, `records_lost`); a TCP connection that fails is
//! opened again, at most once a second, with the templates first.

use crate::export::blocks::{Backpressure, BlockOut, Blocks, Drops};
use crate::EngineError;
use serde::Serialize;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tapstat_analyze::{ClientRule, EndReason, Flow, Kind};
pub use tapstat_sink::ipfix::Transport;
use tapstat_sink::ipfix::{self, end_reason, Collector, DirCounts, FlowRecord, Framer, Message};

/// Where and how to export (`--ipfix`, `--ipfix-transport`, `--ipfix-domain`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpfixConfig {
    pub collector: SocketAddr,
    pub transport: Transport,
    /// The observation domain id of every message header.
    pub domain: u32,
}

/// summary.json's `ipfix`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct IpfixSummary {
    pub collector: String,
    pub transport: &'static str,
    pub observation_domain: u32,
    /// Data records sent (one per ended flow).
    pub records: u64,
    /// Messages sent, the template messages included.
    pub messages: u64,
    /// Messages that carried the templates.
    pub template_messages: u64,
    pub bytes: u64,
    /// Messages the transport refused (UDP: an error from `send`, such as a collector's
    /// port unreachable; TCP: a failed write or no connection).
    pub send_errors: u64,
    /// Data records of the messages not sent.
    pub records_lost: u64,
    /// Data records never handed to the exporter: its queue was full (a collector
    /// that does not read, or a network that does not carry), so the workers dropped
    /// them rather than wait (export never holds the analysis back).
    pub records_dropped: u64,
    /// TCP connections opened again after a failure.
    pub reconnects: u64,
    /// The last sending error, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// Over UDP, templates are sent again after this much wall time...
pub const TEMPLATE_REFRESH: Duration = Duration::from_secs(20);
/// ...and after this many messages.
pub const TEMPLATE_REFRESH_MESSAGES: u64 = 256;
/// A worker hands its records to the exporter once it holds this many bytes (and at
/// every flush of its logs: the end of a file run, and every second live).
const BLOCK_BYTES: usize = 32 * 1024;
/// A failed TCP connection is tried again after this long, doubled after every failure
/// in a row up to [`RECONNECT_MAX`], back to this after a message is sent.
const RECONNECT_EVERY: Duration = Duration::from_secs(1);
const RECONNECT_MAX: Duration = Duration::from_secs(30);
/// A worker whose records find the exporter's queue full waits this long, then drops
/// them (counted in `records_dropped`) and drops the next ones at once until the
/// exporter has caught up.
const QUEUE_WAIT: Duration = Duration::from_secs(1);

/// The exporter thread, and the channel the workers' [`IpfixOut`]s feed.
pub(crate) struct Exporter(Blocks<IpfixSummary>);

impl Exporter {
    /// Opens the transport (for TCP, the connection: an error when no collector takes
    /// it) and starts the exporter thread.
    pub(crate) fn start(cfg: &IpfixConfig) -> Result<Exporter, EngineError> {
        let col = Collector::connect(cfg.collector, cfg.transport).map_err(|e| {
            EngineError::Live(format!(
                "cannot open IPFIX export to {} over {}: {e}",
                cfg.collector,
                cfg.transport.name()
            ))
        })?;
        let cfg = *cfg;
        let wait = Backpressure::DropAfter(QUEUE_WAIT);
        Ok(Exporter(Blocks::spawn(
            "tapstat-ipfix",
            "IPFIX exporter",
            BLOCK_BYTES,
            4096,
            wait,
            move |rx, free, drops| export(col, cfg, rx, free, &drops),
        )))
    }

    /// A worker's end of the channel.
    pub(crate) fn out(&self) -> Option<IpfixOut> {
        self.0.out().map(IpfixOut)
    }

    /// Waits for the exporter to send what the workers handed over (call once every
    /// worker has ended, so every [`IpfixOut`] is gone).
    pub(crate) fn finish(self) -> Result<IpfixSummary, EngineError> {
        self.0.finish()
    }
}

/// A worker's IPFIX records on their way to the exporter.
pub(crate) struct IpfixOut(BlockOut);

impl IpfixOut {
    /// Encodes ended flow `f`.
    #[inline]
    pub(crate) fn flow(&mut self, f: &Flow) {
        self.record(&record_of(f));
    }

    /// Encodes record `r`.
    #[inline]
    fn record(&mut self, r: &FlowRecord) {
        let buf = self.0.buf();
        let at = buf.len();
        buf.extend_from_slice(&[0; 4]);
        let tid = ipfix::encode(r, buf);
        let len = (buf.len() - at - 4) as u16;
        buf[at..at + 2].copy_from_slice(&tid.to_be_bytes());
        buf[at + 2..at + 4].copy_from_slice(&len.to_be_bytes());
        self.0.wrote();
    }

    /// Hands the records encoded so far to the exporter.
    pub(crate) fn flush(&mut self) {
        self.0.flush();
    }
}

/// Rounded microseconds, as the logs' times (so that the milliseconds exported are
/// the logs' `first` and `last` cut to the millisecond).
fn us(ns: u64) -> u64 {
    ns.saturating_add(500) / 1000
}

/// Flow `f` as an IPFIX record: the client is the source.
pub(crate) fn record_of(f: &Flow) -> FlowRecord<'_> {
    let dir = |i: usize| {
        let d = &f.dir[i];
        DirCounts {
            octets: d.bytes_wire,
            packets: d.pkts_all,
            tcp_flags: d.tcp_flags,
            retx_packets: d.pkts_retx,
            rtt_mean_us: f.e2e(i).rtt_ms().map_or(0, |r| (r.0 * 1000.0 + 0.5).min(u32::MAX as f64) as u32),
        }
    };
    let l7 = f.l7.as_ref();
    let sni = l7
        .and_then(|x| x.sni().or_else(|| x.quic().and_then(|q| q.tls.client.as_ref()).and_then(|c| c.sni.as_deref())));
    FlowRecord {
        ipv6: f.ip_version == 6,
        src: f.shown_ip(0),
        dst: f.shown_ip(1),
        ports: matches!(f.kind, Kind::Tcp | Kind::Udp).then_some((f.dir[0].port, f.dir[1].port)),
        proto: f.proto,
        start_ms: us(f.first_ns) / 1000,
        end_ms: us(f.last_ns) / 1000,
        end_reason: match f.end {
            EndReason::Idle => end_reason::IDLE_TIMEOUT,
            EndReason::Fin | EndReason::Rst | EndReason::SynReuse => end_reason::END_OF_FLOW,
            EndReason::Evicted => end_reason::LACK_OF_RESOURCES,
            EndReason::EndOfInput | EndReason::Interrupted | EndReason::Live => end_reason::FORCED_END,
        },
        // RFC 5103 §5.1: 1 initiator (the source opened the flow), 0 arbitrary.
        biflow_direction: if f.kind == Kind::Tcp && f.client_rule == ClientRule::FirstPacket { 0 } else { 1 },
        flow_id: u64::from_str_radix(f.flow_id.as_str(), 16).unwrap_or(0),
        dirs: [dir(0), dir(1)],
        app: l7.and_then(|x| x.app()).map_or("", |a| a.name()),
        server_name: sni.unwrap_or(""),
        resolved_name: f.fqdn.as_deref().unwrap_or(""),
    }
}

fn now_s() -> u32 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as u32)
}

/// The exporter thread: blocks of records in, messages out, until every worker's
/// channel end is gone.
fn export(
    col: Collector,
    cfg: IpfixConfig,
    blocks: crossbeam_channel::Receiver<Vec<u8>>,
    free: crossbeam_channel::Sender<Vec<u8>>,
    drops: &Drops,
) -> IpfixSummary {
    let mut x = Sender {
        framer: Framer::new(cfg.domain, cfg.transport.message_max()),
        col,
        s: IpfixSummary {
            collector: cfg.collector.to_string(),
            transport: cfg.transport.name(),
            observation_domain: cfg.domain,
            ..Default::default()
        },
        templates_at: None,
        since_templates: 0,
        tried_at: Instant::now(),
        retry_in: RECONNECT_EVERY,
    };
    for mut b in &blocks {
        let mut at = 0;
        while at + 4 <= b.len() {
            let tid = u16::from_be_bytes([b[at], b[at + 1]]);
            let len = u16::from_be_bytes([b[at + 2], b[at + 3]]) as usize;
            let Some(rec) = b.get(at + 4..at + 4 + len) else { break };
            if let Some(m) = x.framer.push(tid, rec, now_s()) {
                x.send(m);
            }
            at += 4 + len;
        }
        if let Some(m) = x.framer.flush(now_s()) {
            x.send(m);
        }
        b.clear();
        let _ = free.try_send(b);
        if blocks.is_empty() {
            drops.caught_up();
        }
    }
    x.col.close();
    x.s.records_dropped = drops.records.load(std::sync::atomic::Ordering::Relaxed);
    x.s
}

/// The exporter's state: the framer, the transport, what was sent.
struct Sender {
    framer: Framer,
    col: Collector,
    s: IpfixSummary,
    /// When the templates were last sent on this stream (none: not yet, or the TCP
    /// connection is new).
    templates_at: Option<Instant>,
    /// Messages sent since.
    since_templates: u64,
    /// The last (re)connection attempt, and the wait before the next one.
    tried_at: Instant,
    retry_in: Duration,
}

impl Sender {
    fn send(&mut self, m: Message) {
        let tcp = self.col.transport == Transport::Tcp;
        if tcp && !self.col.is_open() && self.tried_at.elapsed() >= self.retry_in {
            self.tried_at = Instant::now();
            // Until a message goes through, each try waits twice as long as the last.
            self.retry_in = (self.retry_in * 2).min(RECONNECT_MAX);
            match self.col.reconnect() {
                Ok(()) => {
                    self.s.reconnects += 1;
                    self.templates_at = None;
                }
                Err(e) => self.s.last_error = Some(format!("reconnecting: {e}")),
            }
        }
        if !self.col.is_open() {
            self.lost(&m, None);
            return;
        }
        let due = match self.templates_at {
            None => true,
            Some(t) => !tcp && (t.elapsed() >= TEMPLATE_REFRESH || self.since_templates >= TEMPLATE_REFRESH_MESSAGES),
        };
        if due {
            let t = self.framer.templates_message(now_s(), m.seq);
            match self.col.send(&t) {
                Ok(()) => {
                    self.s.messages += 1;
                    self.s.template_messages += 1;
                    self.s.bytes += t.len() as u64;
                    self.templates_at = Some(Instant::now());
                    self.since_templates = 0;
                }
                Err(e) => {
                    // Data the collector could not decode is lost as surely.
                    self.lost(&m, Some(e));
                    return;
                }
            }
        }
        match self.col.send(&m.bytes) {
            Ok(()) => {
                self.s.messages += 1;
                self.s.records += m.records as u64;
                self.s.bytes += m.bytes.len() as u64;
                self.since_templates += 1;
                self.retry_in = RECONNECT_EVERY;
            }
            Err(e) => self.lost(&m, Some(e)),
        }
        self.framer.recycle(m.bytes);
    }

    /// Message `m` was not sent (`e`: the transport's error; none: no connection).
    fn lost(&mut self, m: &Message, e: Option<std::io::Error>) {
        let failed_send = e.is_some();
        self.s.send_errors += 1;
        self.s.records_lost += m.records as u64;
        if let Some(e) = e {
            self.s.last_error = Some(e.to_string());
        }
        if !self.col.is_open() {
            // A new connection starts with the templates; it is tried once the wait
            // has passed since this failure (a send that timed out took its time).
            self.templates_at = None;
            if failed_send {
                self.tried_at = Instant::now();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Over UDP, every message reaches a local socket: the templates first, then the
    /// records, every one counted in a sequence number that has no gap.
    #[test]
    fn udp_export_sends_templates_then_every_record() {
        let rx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let cfg = IpfixConfig { collector: rx.local_addr().unwrap(), transport: Transport::Udp, domain: 7 };
        let e = Exporter::start(&cfg).unwrap();
        let mut out = e.out().unwrap();
        let r = FlowRecord { ports: Some((1, 2)), proto: 17, app: "dns", ..Default::default() };
        let mut n = 0;
        for _ in 0..500 {
            out.record(&r);
            n += 1;
        }
        out.flush();
        drop(out);
        let s = e.finish().unwrap();
        assert_eq!((s.records, s.records_lost, s.send_errors, s.template_messages), (n, 0, 0, 1));
        let mut buf = [0u8; 2048];
        let mut seq = 0u32;
        let mut got = 0u64;
        for i in 0..s.messages {
            let k = rx.recv(&mut buf).unwrap();
            let b = &buf[..k];
            assert!(k <= ipfix::UDP_MESSAGE_MAX);
            assert_eq!(u16::from_be_bytes([b[2], b[3]]) as usize, k);
            assert_eq!(u32::from_be_bytes(b[12..16].try_into().unwrap()), 7);
            assert_eq!(u32::from_be_bytes(b[8..12].try_into().unwrap()), seq);
            let set = u16::from_be_bytes([b[16], b[17]]);
            if i == 0 {
                assert_eq!(set, ipfix::TEMPLATE_SET_ID);
                continue;
            }
            assert_eq!(set, ipfix::TEMPLATE_V4.id);
            let recs = count_records(b) as u32;
            seq += recs;
            got += recs as u64;
        }
        assert_eq!(got, n);
    }

    /// The exported addresses are those the records show: Crypto-PAn's under
    /// `--anonymize`, never the flow's real ones.
    #[test]
    fn records_carry_the_shown_addresses() {
        let d = tapstat_decode::Decoded {
            l4: tapstat_decode::L4::Udp,
            ip_version: 4,
            proto: 17,
            src: 0x0a00_0001,
            dst: 0x0a00_0002,
            sport: 5000,
            dport: 53,
            ..Default::default()
        };
        let mut f = Flow::new(&d, true, 1, None, false);
        assert_eq!((record_of(&f).src, record_of(&f).dst), (0x0a00_0001, 0x0a00_0002));
        f.anon_ip = Some(Box::new([0x0b00_0001, 0x0b00_0002]));
        assert_eq!((record_of(&f).src, record_of(&f).dst), (0x0b00_0001, 0x0b00_0002));
    }

    /// Records in a message's data sets, from the records' fixed layout.
    fn count_records(b: &[u8]) -> usize {
        let mut one = Vec::new();
        ipfix::encode(&FlowRecord { ports: Some((1, 2)), proto: 17, app: "dns", ..Default::default() }, &mut one);
        (b.len() - 20) / one.len()
    }

    /// Over UDP the templates go again after [`TEMPLATE_REFRESH_MESSAGES`] messages.
    #[test]
    fn udp_templates_are_sent_again() {
        let rx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let cfg = IpfixConfig { collector: rx.local_addr().unwrap(), transport: Transport::Udp, domain: 1 };
        let e = Exporter::start(&cfg).unwrap();
        let mut out = e.out().unwrap();
        // One record a block, so one message a record.
        let r = FlowRecord { ports: Some((1, 2)), proto: 6, ..Default::default() };
        let n = 2 * TEMPLATE_REFRESH_MESSAGES + 10;
        let mut got = 0;
        let mut buf = [0u8; 2048];
        rx.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut templates_at = Vec::new();
        for i in 0..n {
            out.record(&r);
            out.flush();
            // Read as they come (the socket's buffer is small).
            loop {
                let k = rx.recv(&mut buf).unwrap();
                got += 1;
                if u16::from_be_bytes([buf[16], buf[17]]) == ipfix::TEMPLATE_SET_ID {
                    templates_at.push(i);
                    continue;
                }
                assert_eq!(u32::from_be_bytes(buf[8..12].try_into().unwrap()), i as u32, "{k}");
                break;
            }
        }
        drop(out);
        let s = e.finish().unwrap();
        assert_eq!(templates_at, [0, TEMPLATE_REFRESH_MESSAGES, 2 * TEMPLATE_REFRESH_MESSAGES]);
        assert_eq!((s.records, s.messages, s.template_messages), (n, got, 3));
    }

    /// Over TCP, a connection the collector closes is opened again (at most once a
    /// second), starting with the templates; what could not be sent is counted.
    #[test]
    fn tcp_reconnects_with_the_templates_first() {
        use std::io::Read;
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let cfg = IpfixConfig { collector: l.local_addr().unwrap(), transport: Transport::Tcp, domain: 1 };
        let e = Exporter::start(&cfg).unwrap();
        let (mut first, _) = l.accept().unwrap();
        let mut out = e.out().unwrap();
        let r = FlowRecord { ports: Some((1, 2)), proto: 6, ..Default::default() };
        out.record(&r);
        out.flush();
        // The templates and the record, then the collector goes away.
        let mut buf = vec![0u8; 4096];
        let mut have = 0;
        while have < 2 {
            let k = first.read(&mut buf).unwrap();
            assert!(k > 0);
            let mut at = 0;
            while at < k {
                at += u16::from_be_bytes([buf[at + 2], buf[at + 3]]) as usize;
                have += 1;
            }
        }
        drop(first);
        // Writes into a closed connection fail from the second on.
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_millis(300) {
            out.record(&r);
            out.flush();
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(RECONNECT_EVERY);
        out.record(&r);
        out.flush();
        let (mut second, _) = l.accept().unwrap();
        drop(out);
        let s = e.finish().unwrap();
        let mut rest = Vec::new();
        second.read_to_end(&mut rest).unwrap();
        assert_eq!(u16::from_be_bytes([rest[16], rest[17]]), ipfix::TEMPLATE_SET_ID, "templates first");
        assert_eq!(s.reconnects, 1, "{s:?}");
        assert_eq!(s.template_messages, 2, "{s:?}");
        assert!(s.records_lost > 0 && s.send_errors > 0, "{s:?}");
    }

    /// Over TCP, a collector that is not there is an error before the run.
    #[test]
    fn tcp_export_to_nobody_is_an_error_at_start() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        drop(l);
        let cfg = IpfixConfig { collector: addr, transport: Transport::Tcp, domain: 1 };
        let e = Exporter::start(&cfg).err().expect("no collector listens");
        assert!(e.to_string().contains("cannot open IPFIX export"), "{e}");
    }
}
