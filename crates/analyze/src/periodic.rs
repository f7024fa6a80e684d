//! Periodic records of live flows (`--periodic SECONDS`): what each TCP and UDP flow
//! did in each interval, so that a connection that lasts a week is visible before it
//! ends.
//!
//! Intervals are aligned to multiples of the period on the input's clock (packet time:
//! epoch-aligned, e.g. every full minute). At each boundary, every flow that had
//! packets since its previous row and has not expired by the boundary gets one row with
//! the counters of that stretch (not cumulative) and the flow's `flow_id`, which its
//! final record carries too. Summing a flow's periodic rows and subtracting them from
//! its final record gives what happened after the last boundary.
//!
//! Architecture invariant: rows depend on packet time only. A worker handles a
//! boundary at its first packet past it (or at the end of the input), before that
//! packet: it has then seen exactly the packets before the boundary, as every worker
//! count would.

use crate::flow::{Flow, Kind};
use std::sync::LazyLock;
use tapstat_record::{Column, Field, Log, LogDoc, Type, Value};

/// The counters a periodic row reports, per direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub pkts: u64,
    /// L4 payload bytes, retransmissions included.
    pub bytes: u64,
    pub bytes_wire: u64,
    /// TCP: bytes new to the sequence space.
    pub bytes_uniq: u64,
    /// TCP: retransmitted segments.
    pub pkts_retx: u64,
}

impl Counters {
    pub fn of(f: &Flow, di: usize) -> Counters {
        let d = &f.dir[di];
        Counters {
            pkts: d.pkts_all,
            bytes: d.bytes_all,
            bytes_wire: d.bytes_wire,
            bytes_uniq: d.bytes_uniq,
            pkts_retx: d.pkts_retx,
        }
    }

    fn minus(self, o: Counters) -> Counters {
        Counters {
            pkts: self.pkts.saturating_sub(o.pkts),
            bytes: self.bytes.saturating_sub(o.bytes),
            bytes_wire: self.bytes_wire.saturating_sub(o.bytes_wire),
            bytes_uniq: self.bytes_uniq.saturating_sub(o.bytes_uniq),
            pkts_retx: self.pkts_retx.saturating_sub(o.pkts_retx),
        }
    }
}

/// Where a flow's previous periodic row left off.
#[derive(Clone, Copy, Debug, Default)]
pub struct Snapshot {
    /// Start of the stretch not reported yet (0: the flow's first packet).
    pub since_ns: u64,
    pub dir: [Counters; 2],
}

/// One periodic row.
#[derive(Clone, Copy, Debug)]
pub struct PeriodicRow {
    pub flow_id: crate::flow::FlowId,
    pub kind: Kind,
    pub ip_version: u8,
    pub c_ip: u128,
    pub c_port: u16,
    pub s_ip: u128,
    pub s_port: u16,
    /// The stretch reported: from the previous boundary (or the flow's first packet) to
    /// this boundary, packet time in ns.
    pub start_ns: u64,
    pub end_ns: u64,
    pub dir: [Counters; 2],
}

/// The row of `f` at boundary `end_ns`, if it had packets since its last row; the
/// flow's snapshot moves to the boundary.
pub fn take_row(f: &mut Flow, end_ns: u64) -> Option<PeriodicRow> {
    let now = [Counters::of(f, 0), Counters::of(f, 1)];
    if now[0].pkts + now[1].pkts == f.snap.dir[0].pkts + f.snap.dir[1].pkts {
        return None;
    }
    let row = PeriodicRow {
        flow_id: f.flow_id,
        kind: f.kind,
        ip_version: f.ip_version,
        c_ip: f.shown_ip(0),
        c_port: f.dir[0].port,
        s_ip: f.shown_ip(1),
        s_port: f.dir[1].port,
        start_ns: if f.snap.since_ns == 0 { f.first_ns } else { f.snap.since_ns },
        end_ns,
        dir: [now[0].minus(f.snap.dir[0]), now[1].minus(f.snap.dir[1])],
    };
    f.snap = Snapshot { since_ns: end_ns, dir: now };
    Some(row)
}

fn ms(ns: u64) -> Value<'static> {
    Value::Micros(ns.saturating_add(500) / 1000)
}

macro_rules! pcol {
    ($name:expr, $ty:ident, $unit:literal, $meaning:expr, $get:expr) => {
        Column {
            field: Field { name: $name, ty: Type::$ty, unit: $unit, meaning: $meaning, group: "periodic" },
            get: $get,
        }
    };
}

macro_rules! side {
    ($v:ident, $p:literal, $i:tt, $who:literal, $tcp:expr) => {
        $v.extend([
            pcol!(
                concat!($p, "_pkts_all"),
                U64,
                "packets",
                concat!("packets sent in the interval (", $who, ")"),
                |r: &PeriodicRow| Value::U64(r.dir[$i].pkts)
            ),
            pcol!(
                concat!($p, "_bytes_all"),
                U64,
                "bytes",
                concat!("payload bytes sent in the interval, retransmissions included (", $who, ")"),
                |r: &PeriodicRow| Value::U64(r.dir[$i].bytes)
            ),
            pcol!(
                concat!($p, "_bytes_wire"),
                U64,
                "bytes",
                concat!("frame bytes on the wire in the interval (", $who, ")"),
                |r: &PeriodicRow| Value::U64(r.dir[$i].bytes_wire)
            ),
        ]);
        if $tcp {
            $v.extend([
                pcol!(
                    concat!($p, "_bytes_uniq"),
                    U64,
                    "bytes",
                    concat!("payload bytes new to the sequence space in the interval (", $who, ")"),
                    |r: &PeriodicRow| Value::U64(r.dir[$i].bytes_uniq)
                ),
                pcol!(
                    concat!($p, "_pkts_retx"),
                    U64,
                    "packets",
                    concat!("retransmitted segments in the interval (", $who, ")"),
                    |r: &PeriodicRow| Value::U64(r.dir[$i].pkts_retx)
                ),
            ]);
        }
    };
}

fn periodic_log(name: &'static str, meaning: &'static str, tcp: bool) -> Log<PeriodicRow> {
    let mut v: Vec<Column<PeriodicRow>> = vec![
        pcol!("flow_id", Str, "", "the flow's id, shared with its final record", |r: &PeriodicRow| Value::Str(
            r.flow_id.as_str()
        )),
        pcol!("c_ip", Ip, "", "IP address of the client", |r: &PeriodicRow| Value::Ip(tapstat_flow::ip_of(
            r.ip_version,
            r.c_ip
        ))),
        pcol!("c_port", U64, "", "port of the client", |r: &PeriodicRow| Value::U64(r.c_port as u64)),
        pcol!("s_ip", Ip, "", "IP address of the server", |r: &PeriodicRow| Value::Ip(tapstat_flow::ip_of(
            r.ip_version,
            r.s_ip
        ))),
        pcol!("s_port", U64, "", "port of the server", |r: &PeriodicRow| Value::U64(r.s_port as u64)),
        pcol!(
            "start",
            Time,
            "epoch ms",
            "start of the interval: the previous boundary, or the flow's first packet",
            |r: &PeriodicRow| ms(r.start_ns)
        ),
        pcol!("end", Time, "epoch ms", "the boundary that closed the interval", |r: &PeriodicRow| ms(r.end_ns)),
    ];
    side!(v, "c", 0, "client", tcp);
    side!(v, "s", 1, "server", tcp);
    Log { name, meaning, columns: v, runs: Vec::new() }
}

/// `log_tcp_periodic`.
pub static TCP_PERIODIC: LazyLock<Log<PeriodicRow>> = LazyLock::new(|| {
    periodic_log(
        "log_tcp_periodic",
        "With `--periodic S`: per live TCP flow and interval of S seconds of packet time (aligned to multiples of S), what the flow did in the interval (not cumulative).",
        true,
    )
});

/// `log_udp_periodic`.
pub static UDP_PERIODIC: LazyLock<Log<PeriodicRow>> = LazyLock::new(|| {
    periodic_log(
        "log_udp_periodic",
        "With `--periodic S`: per live UDP flow and interval, as `log_tcp_periodic`.",
        false,
    )
});

/// The periodic logs' reference, for docs/METRICS.md.
pub fn docs() -> Vec<LogDoc> {
    vec![LogDoc::from(&*TCP_PERIODIC), LogDoc::from(&*UDP_PERIODIC)]
}
