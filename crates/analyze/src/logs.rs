//! The logs tapstat writes and their columns: the single declaration of every metric.
//! Column names follow Tstat's where Tstat has the metric, so its users find their
//! way; `conn_state` and `history` are Zeek's; the rest are tapstat's own.

use crate::flow::{Dir, Flow, Kind};
use std::sync::LazyLock;
use tapstat_record::{Column, Field, Log, LogDoc, Type, Value};

/// Nanoseconds to microseconds, rounded to the nearest.
fn us(ns: u64) -> u64 {
    ns.saturating_add(500) / 1000
}

/// Epoch milliseconds (µs precision) of a packet time in ns; none for 0 (no packet).
fn abs_ms(ns: u64) -> Value<'static> {
    if ns == 0 {
        Value::None
    } else {
        Value::Micros(us(ns))
    }
}

/// Milliseconds from the flow's first packet to `ns`, or none when `ns` is 0 (the
/// event did not happen).
fn rel_ms(f: &Flow, ns: u64) -> Value<'static> {
    if ns == 0 {
        Value::None
    } else {
        Value::Micros(us(ns.saturating_sub(f.first_ns)))
    }
}

/// Milliseconds between the first and last packet of a direction (0 with one packet).
fn dir_durat(d: &Dir) -> Value<'static> {
    Value::Micros(us(d.last_ns.saturating_sub(d.first_ns)))
}

fn ip(f: &Flow, d: &Dir) -> Value<'static> {
    Value::Ip(tapstat_flow::ip_of(f.ip_version, d.ip))
}

macro_rules! col {
    ($name:expr, $ty:ident, $unit:literal, $group:literal, $meaning:expr, $get:expr) => {
        Column { field: Field { name: $name, ty: Type::$ty, unit: $unit, meaning: $meaning, group: $group }, get: $get }
    };
}

/// A per-direction counter `$field` of [`Dir`] as column `<c|s>_$field`.
macro_rules! dir_u64 {
    ($p:literal, $i:tt, $who:literal, $field:ident, $unit:literal, $group:literal, $meaning:literal) => {
        col!(
            concat!($p, "_", stringify!($field)),
            U64,
            $unit,
            $group,
            concat!($meaning, " (", $who, ")"),
            |f: &Flow| { Value::U64(f.dir[$i].$field) }
        )
    };
}

/// The columns of one side of a TCP flow, in Tstat's order.
macro_rules! tcp_side {
    ($v:ident, $p:literal, $i:tt, $who:literal) => {
        $v.extend([
            col!(concat!($p, "_ip"), Ip, "", "endpoints", concat!("IP address of the ", $who), |f: &Flow| ip(
                f, &f.dir[$i]
            )),
            col!(concat!($p, "_port"), U64, "", "endpoints", concat!("TCP port of the ", $who), |f: &Flow| Value::U64(
                f.dir[$i].port as u64
            )),
            dir_u64!($p, $i, $who, pkts_all, "packets", "core", "packets sent"),
            dir_u64!($p, $i, $who, rst_cnt, "packets", "core", "segments with RST"),
            dir_u64!($p, $i, $who, ack_cnt, "packets", "core", "segments with ACK"),
            dir_u64!($p, $i, $who, ack_cnt_p, "packets", "core", "pure ACKs: ACK set, no payload, no SYN/FIN/RST"),
            dir_u64!(
                $p,
                $i,
                $who,
                bytes_uniq,
                "bytes",
                "core",
                "payload bytes new to the sequence space, retransmissions not counted"
            ),
            dir_u64!($p, $i, $who, pkts_data, "packets", "core", "segments with payload"),
            dir_u64!($p, $i, $who, bytes_all, "bytes", "core", "payload bytes, retransmissions included"),
            dir_u64!(
                $p,
                $i,
                $who,
                pkts_retx,
                "packets",
                "core",
                "segments whose payload had all been seen before (retransmissions)"
            ),
            dir_u64!($p, $i, $who, bytes_retx, "bytes", "core", "payload bytes of retransmitted segments"),
            dir_u64!(
                $p,
                $i,
                $who,
                pkts_ooo,
                "packets",
                "core",
                "segments that filled a gap of the sequence space: out of sequence at the probe"
            ),
            dir_u64!($p, $i, $who, syn_cnt, "packets", "core", "segments with SYN"),
            dir_u64!($p, $i, $who, fin_cnt, "packets", "core", "segments with FIN"),
        ]);
    };
}

fn tunnel_cols() -> [Column<Flow>; 2] {
    [
        col!("tunnel", Str, "", "endpoints", "innermost tunnel the flow was carried in (gre, erspan, vxlan, geneve, gtpu, teredo, ipip, 6in4, 4in6, 6in6, mpls-udp), `-` for none", |f: &Flow| Value::Str(f.tunnel.kind.name())),
        col!("tunnel_id", U64, "", "endpoints", "the tunnel's id: VXLAN/Geneve VNI, GTP-U TEID, GRE key, ERSPAN session; 0 when it has none", |f: &Flow| Value::U64(f.tunnel.id as u64)),
    ]
}

fn end_cols() -> [Column<Flow>; 2] {
    [
        col!("end_reason", Str, "", "state", "why the record was written: fin (both sides closed), rst, idle (timeout in packet time), evicted (flow table full), end_of_input, syn_reuse (a new SYN on the same 5-tuple)", |f: &Flow| Value::Str(f.end.name())),
        col!("client_rule", Str, "", "state", "how the client was chosen: syn (sender of the first SYN), synack (receiver of the first packet, a SYN/ACK), first_packet (sender of the first packet)", |f: &Flow| Value::Str(f.client_rule.name())),
    ]
}

fn time_cols() -> [Column<Flow>; 3] {
    [
        col!("first", F64, "epoch ms", "time", "time of the flow's first packet", |f: &Flow| abs_ms(f.first_ns)),
        col!("last", F64, "epoch ms", "time", "time of the flow's last packet", |f: &Flow| abs_ms(f.last_ns)),
        col!("durat", F64, "ms", "time", "last - first", |f: &Flow| Value::Micros(us(f
            .last_ns
            .saturating_sub(f.first_ns)))),
    ]
}

/// `log_tcp_complete` (three-way handshake seen) and `log_tcp_nocomplete` (the rest)
/// share these columns.
pub static TCP: LazyLock<Log<Flow>> = LazyLock::new(|| {
    let mut v = Vec::new();
    tcp_side!(v, "c", 0, "client");
    tcp_side!(v, "s", 1, "server");
    v.extend(time_cols());
    v.extend([
        col!("c_first", F64, "ms", "time", "first client segment with payload, from `first`", |f: &Flow| rel_ms(
            f,
            f.dir[0].first_payload_ns
        )),
        col!("s_first", F64, "ms", "time", "first server segment with payload, from `first`", |f: &Flow| rel_ms(
            f,
            f.dir[1].first_payload_ns
        )),
        col!("c_last", F64, "ms", "time", "last client segment with payload, from `first`", |f: &Flow| rel_ms(
            f,
            f.dir[0].last_payload_ns
        )),
        col!("s_last", F64, "ms", "time", "last server segment with payload, from `first`", |f: &Flow| rel_ms(
            f,
            f.dir[1].last_payload_ns
        )),
        col!("c_first_ack", F64, "ms", "time", "first client ACK (without SYN), from `first`", |f: &Flow| rel_ms(
            f,
            f.dir[0].first_ack_ns
        )),
        col!("s_first_ack", F64, "ms", "time", "first server ACK (without SYN), from `first`", |f: &Flow| rel_ms(
            f,
            f.dir[1].first_ack_ns
        )),
        dir_u64!(
            "c",
            0,
            "client",
            bytes_wire,
            "bytes",
            "core",
            "sum of the frames' lengths on the wire (pcap orig_len), headers included"
        ),
        dir_u64!(
            "s",
            1,
            "server",
            bytes_wire,
            "bytes",
            "core",
            "sum of the frames' lengths on the wire (pcap orig_len), headers included"
        ),
        col!("ip_version", U64, "", "endpoints", "4 or 6 (the innermost IP header)", |f: &Flow| Value::U64(
            f.ip_version as u64
        )),
    ]);
    v.extend(tunnel_cols());
    v.extend([
        col!("conn_state", Str, "", "state", "Zeek's connection state: S0 S1 SF REJ S2 S3 RSTO RSTR RSTOS0 RSTRH SH SHR OTH", |f: &Flow| Value::Str(f.tcp.conn_state())),
        col!("history", Str, "", "state", "Zeek's history: the first s(SYN) h(SYN/ACK) a(pure ACK) d(data) f(FIN) r(RST) t(retransmission) g(gap) w(zero window) of each side, upper case for the client", |f: &Flow| Value::Str(f.history.as_str())),
    ]);
    v.extend(end_cols());
    Log { name: "log_tcp_complete", meaning: "TCP flows whose three-way handshake was seen (SYN, SYN/ACK, ACK). `log_tcp_nocomplete` has the same columns for the other TCP flows.", columns: v }
});

/// `log_udp_complete`: every UDP flow.
pub static UDP: LazyLock<Log<Flow>> = LazyLock::new(|| {
    let mut v = Vec::new();
    macro_rules! udp_side {
        ($p:literal, $i:tt, $who:literal) => {
            v.extend([
                col!(concat!($p, "_ip"), Ip, "", "endpoints", concat!("IP address of the ", $who), |f: &Flow| ip(
                    f, &f.dir[$i]
                )),
                col!(concat!($p, "_port"), U64, "", "endpoints", concat!("UDP port of the ", $who), |f: &Flow| {
                    Value::U64(f.dir[$i].port as u64)
                }),
                col!(
                    concat!($p, "_first_abs"),
                    F64,
                    "epoch ms",
                    "time",
                    concat!("time of the first packet of the ", $who),
                    |f: &Flow| abs_ms(f.dir[$i].first_ns)
                ),
                col!(
                    concat!($p, "_durat"),
                    F64,
                    "ms",
                    "time",
                    concat!("time between the first and last packet of the ", $who),
                    |f: &Flow| dir_durat(&f.dir[$i])
                ),
                dir_u64!($p, $i, $who, bytes_all, "bytes", "core", "UDP payload bytes"),
                dir_u64!($p, $i, $who, pkts_all, "packets", "core", "packets sent"),
                dir_u64!(
                    $p,
                    $i,
                    $who,
                    bytes_wire,
                    "bytes",
                    "core",
                    "sum of the frames' lengths on the wire (pcap orig_len)"
                ),
            ]);
        };
    }
    udp_side!("c", 0, "client");
    udp_side!("s", 1, "server");
    v.extend(time_cols());
    v.push(col!("ip_version", U64, "", "endpoints", "4 or 6 (the innermost IP header)", |f: &Flow| Value::U64(
        f.ip_version as u64
    )));
    v.extend(tunnel_cols());
    v.extend(end_cols());
    Log { name: "log_udp_complete", meaning: "UDP flows; the client is the sender of the first packet.", columns: v }
});

/// `log_other`: ICMP, ICMPv6 and the other IP protocols, one record per address pair
/// and protocol.
pub static OTHER: LazyLock<Log<Flow>> = LazyLock::new(|| {
    let mut v = vec![
        col!("c_ip", Ip, "", "endpoints", "IP address of the sender of the first packet", |f: &Flow| ip(f, &f.dir[0])),
        col!("s_ip", Ip, "", "endpoints", "IP address of the other side", |f: &Flow| ip(f, &f.dir[1])),
        col!(
            "proto",
            U64,
            "",
            "endpoints",
            "IP protocol number (1 ICMP, 58 ICMPv6, 47 GRE, 50 ESP, ...)",
            |f: &Flow| Value::U64(f.proto as u64)
        ),
        dir_u64!("c", 0, "client", pkts_all, "packets", "core", "packets sent"),
        dir_u64!("c", 0, "client", bytes_all, "bytes", "core", "IP payload bytes"),
        dir_u64!("c", 0, "client", bytes_wire, "bytes", "core", "sum of the frames' lengths on the wire"),
        dir_u64!("s", 1, "server", pkts_all, "packets", "core", "packets sent"),
        dir_u64!("s", 1, "server", bytes_all, "bytes", "core", "IP payload bytes"),
        dir_u64!("s", 1, "server", bytes_wire, "bytes", "core", "sum of the frames' lengths on the wire"),
    ];
    v.extend(time_cols());
    v.push(col!("ip_version", U64, "", "endpoints", "4 or 6 (the innermost IP header)", |f: &Flow| Value::U64(
        f.ip_version as u64
    )));
    v.extend(tunnel_cols());
    v.push(col!(
        "end_reason",
        Str,
        "",
        "state",
        "why the record was written: idle, evicted, end_of_input",
        |f: &Flow| Value::Str(f.end.name())
    ));
    Log { name: "log_other", meaning: "ICMP, ICMPv6 and other IP protocols (and IP fragments whose first fragment was not seen), per address pair and protocol.", columns: v }
});

/// Which log a finished flow is written to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LogId {
    TcpComplete,
    TcpNocomplete,
    Udp,
    Other,
}

impl LogId {
    pub const ALL: [LogId; 4] = [LogId::TcpComplete, LogId::TcpNocomplete, LogId::Udp, LogId::Other];

    pub fn of(f: &Flow) -> LogId {
        match f.kind {
            Kind::Tcp if f.tcp.complete => LogId::TcpComplete,
            Kind::Tcp => LogId::TcpNocomplete,
            Kind::Udp => LogId::Udp,
            Kind::Other => LogId::Other,
        }
    }

    /// File stem in the output directory.
    pub fn name(self) -> &'static str {
        match self {
            LogId::TcpComplete => "log_tcp_complete",
            LogId::TcpNocomplete => "log_tcp_nocomplete",
            LogId::Udp => "log_udp_complete",
            LogId::Other => "log_other",
        }
    }

    /// The columns of this log.
    pub fn log(self) -> &'static Log<Flow> {
        match self {
            LogId::TcpComplete | LogId::TcpNocomplete => &TCP,
            LogId::Udp => &UDP,
            LogId::Other => &OTHER,
        }
    }
}

/// The reference of every log, for docs/METRICS.md.
pub fn docs() -> Vec<LogDoc> {
    vec![LogDoc::from(&*TCP), LogDoc::from(&*UDP), LogDoc::from(&*OTHER)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn column_names_are_unique_per_log() {
        for log in [&*TCP, &*UDP, &*OTHER] {
            let mut seen = HashSet::new();
            for f in log.fields() {
                assert!(seen.insert(f.name), "{} repeats {}", log.name, f.name);
            }
        }
    }

    #[test]
    fn tcp_starts_with_tstats_core_columns_in_tstats_order() {
        // The first 37 columns of Tstat 3.3's log_tcp_complete.
        let tstat = "c_ip c_port c_pkts_all c_rst_cnt c_ack_cnt c_ack_cnt_p c_bytes_uniq c_pkts_data c_bytes_all c_pkts_retx c_bytes_retx c_pkts_ooo c_syn_cnt c_fin_cnt s_ip s_port s_pkts_all s_rst_cnt s_ack_cnt s_ack_cnt_p s_bytes_uniq s_pkts_data s_bytes_all s_pkts_retx s_bytes_retx s_pkts_ooo s_syn_cnt s_fin_cnt first last durat c_first s_first c_last s_last c_first_ack s_first_ack";
        let ours: Vec<&str> = TCP.fields().map(|f| f.name).take(37).collect();
        assert_eq!(ours.join(" "), tstat);
    }
}
