//! The logs tapstat writes and their columns: the single declaration of every metric.
//! Column names follow Tstat's where Tstat has the metric, so its users find their
//! way; `conn_state` and `history` are Zeek's; the rest are tapstat's own.

use crate::flow::{Dir, Flow, Kind};
use crate::tcp::TcpDir;
use std::sync::LazyLock;
use tapstat_record::{run, Column, Field, Log, LogDoc, Run, Type, Value};

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

/// The address of side `i` as records write it ([`Flow::shown_ip`]: anonymized under
/// `--anonymize`).
fn ip(f: &Flow, i: usize) -> Value<'static> {
    Value::Ip(tapstat_flow::ip_of(f.ip_version, f.shown_ip(i)))
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
        $v.push(run!(Flow;
            col!(concat!($p, "_ip"), Ip, "", "endpoints", concat!("IP address of the ", $who), |f: &Flow| ip(f, $i)),
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
        ));
    };
}

const ISINT_C: &str = "1 when the client's address is in the internal networks (-N, --internal; every address is without them, as in Tstat)";
const ISINT_S: &str = "1 when the server's address is in the internal networks (as `c_isint`)";
const ISCRYPTO_C: &str = "1 when the client's address is anonymized (--anonymize, under --anonymize-only)";
const ISCRYPTO_S: &str = "1 when the server's address is anonymized (as `c_iscrypto`)";

/// A duration in ns as ms, none for 0 (not measured).
fn ns_ms(ns: u64) -> Value<'static> {
    if ns == 0 {
        Value::None
    } else {
        Value::Micros(us(ns))
    }
}

/// An RTT figure in ms (3 decimals: the samples are whole µs), none without samples.
/// Written through integer µs: formatting a float costs ten times more.
fn rtt(d: &TcpDir, pick: fn((f64, f64, f64, f64)) -> f64) -> Value<'static> {
    d.rtt_ms().map_or(Value::None, |r| Value::Micros((pick(r) * 1000.0 + 0.5) as u64))
}

/// A minimum that starts at the type's maximum: none when nothing was seen.
fn min_or_none(v: u64, none: u64) -> Value<'static> {
    if v == none {
        Value::None
    } else {
        Value::U64(v)
    }
}

/// Whether side `I` of the flow sent no packet: then its end-to-end, options,
/// anomaly and statistics columns are those of [`silent_flow`] (no RTT, no window,
/// no option, counters at 0), and their runs are written as one string.
fn silent<const I: usize>(f: &Flow) -> bool {
    f.dir[I].pkts_all == 0
}

/// A flow with the full sets' state in which no side sent anything.
fn silent_flow() -> Flow {
    let full = crate::flow::Full::Tcp(Box::default());
    Flow::new(&tapstat_decode::Decoded::default(), true, 0, Some(full), false)
}

/// Tstat's end-to-end set of one side: RTT (data segment to the ACK that covers its
/// end, both seen at the probe; Karn's rule) and TTL.
macro_rules! tcp_e2e {
    ($v:ident, $p:literal, $i:tt, $who:literal) => {
        $v.push(run!(Flow;
            col!(concat!($p, "_rtt_avg"), F64, "ms", "end-to-end", concat!("mean RTT of the ", $who, "'s data: segment to the ACK that covers exactly its end, both seen at the probe; no samples from retransmitted segments (Karn)"), |f: &Flow| rtt(f.e2e($i), |r| r.0)),
            col!(concat!($p, "_rtt_min"), F64, "ms", "end-to-end", concat!("smallest RTT sample of the ", $who, "'s data"), |f: &Flow| rtt(f.e2e($i), |r| r.2)),
            col!(concat!($p, "_rtt_max"), F64, "ms", "end-to-end", concat!("largest RTT sample of the ", $who, "'s data"), |f: &Flow| rtt(f.e2e($i), |r| r.3)),
            col!(concat!($p, "_rtt_std"), F64, "ms", "end-to-end", concat!("sample standard deviation (n − 1) of the RTT samples of the ", $who, "'s data, 0 for fewer than three samples (Tstat's and tcptrace's)"), |f: &Flow| f.e2e($i).rtt_std_ms().map_or(Value::None, |s| Value::Micros((s * 1000.0 + 0.5) as u64))),
            col!(concat!($p, "_rtt_cnt"), U64, "samples", "end-to-end", concat!("RTT samples of the ", $who, "'s data"), |f: &Flow| Value::U64(f.e2e($i).rtt_cnt)),
            col!(concat!($p, "_rtt_dropped"), U64, "segments", "end-to-end", concat!("segments of the ", $who, " not remembered for an RTT sample because 32 older ones were awaiting their ACK (the per-flow bound); not 0 means `rtt_cnt` undercounts (the samples taken are spread evenly over the flight)"), |f: &Flow| Value::U64(f.e2e($i).rtt_dropped as u64)),
            col!(concat!($p, "_rtt_ts_avg"), F64, "ms", "end-to-end", concat!("mean RTT from TCP timestamps: a segment of the ", $who, " that must be acknowledged (data, SYN, FIN) carrying a TSval, to the first segment of the other side echoing it (RFC 7323); no Karn ambiguity"), |f: &Flow| f64_or_none(f.e2e($i).ts.rtt_us.mean().map(|x| x / 1000.0))),
            col!(concat!($p, "_rtt_ts_min"), F64, "ms", "end-to-end", concat!("smallest timestamp RTT sample of the ", $who, "'s segments"), |f: &Flow| f.e2e($i).ts.rtt_us.min().map_or(Value::None, Value::Micros)),
            col!(concat!($p, "_rtt_ts_max"), F64, "ms", "end-to-end", concat!("largest timestamp RTT sample of the ", $who, "'s segments"), |f: &Flow| f.e2e($i).ts.rtt_us.max().map_or(Value::None, Value::Micros)),
            col!(concat!($p, "_rtt_ts_std"), F64, "ms", "end-to-end", concat!("sample standard deviation of the timestamp RTT samples of the ", $who, "'s segments"), |f: &Flow| f64_or_none(f.e2e($i).ts.rtt_us.std().map(|x| x / 1000.0))),
            col!(concat!($p, "_rtt_ts_cnt"), U64, "samples", "end-to-end", concat!("timestamp RTT samples of the ", $who, "'s segments"), |f: &Flow| Value::U64(f.e2e($i).ts.rtt_us.n)),
            col!(concat!($p, "_ttl_min"), U64, "", "end-to-end", concat!("smallest IP TTL / hop limit of the ", $who, "'s packets"), |f: &Flow| min_or_none(f.e2e($i).ttl_min as u64, u8::MAX as u64)),
            col!(concat!($p, "_ttl_max"), U64, "", "end-to-end", concat!("largest IP TTL / hop limit of the ", $who, "'s packets"), |f: &Flow| if f.dir[$i].pkts_all == 0 { Value::None } else { Value::U64(f.e2e($i).ttl_max as u64) }),
        ).blank_when(silent::<$i>, silent_flow));
    };
}

/// Tstat's TCP options set of one side.
macro_rules! tcp_options {
    ($v:ident, $p:literal, $i:tt, $who:literal) => {
        $v.push(run!(Flow;
            col!(
                concat!($p, "_f1323_opt"),
                U64,
                "",
                "options",
                concat!("the ", $who, "'s SYN offered window scaling (RFC 7323)"),
                |f: &Flow| Value::U64(f.e2e($i).syn_opts.is_some_and(|o| o.has_wscale) as u64)
            ),
            col!(
                concat!($p, "_tm_opt"),
                U64,
                "",
                "options",
                concat!("the ", $who, "'s SYN offered timestamps (RFC 7323)"),
                |f: &Flow| Value::U64(f.e2e($i).syn_opts.is_some_and(|o| o.has_ts) as u64)
            ),
            col!(
                concat!($p, "_win_scl"),
                U64,
                "",
                "options",
                concat!(
                    "window scale shift in effect for the ",
                    $who,
                    "'s windows: its SYN's, once both SYNs offered scaling (RFC 7323 §2.2), else 0"
                ),
                |f: &Flow| Value::U64(f.win_scale($i) as u64)
            ),
            col!(
                concat!($p, "_sack_opt"),
                U64,
                "",
                "options",
                concat!("the ", $who, "'s SYN offered SACK (RFC 2018)"),
                |f: &Flow| Value::U64(f.e2e($i).syn_opts.is_some_and(|o| o.sack_perm) as u64)
            ),
            col!(
                concat!($p, "_sack_cnt"),
                U64,
                "packets",
                "options",
                concat!("segments of the ", $who, " carrying SACK blocks"),
                |f: &Flow| Value::U64(f.e2e($i).sack_cnt)
            ),
            col!(
                concat!($p, "_mss"),
                U64,
                "bytes",
                "options",
                concat!("MSS the ", $who, "'s SYN announced (0 when none)"),
                |f: &Flow| Value::U64(f.e2e($i).syn_opts.map_or(0, |o| o.mss as u64))
            ),
            col!(
                concat!($p, "_mss_max"),
                U64,
                "bytes",
                "options",
                concat!("largest payload of a ", $who, " segment"),
                |f: &Flow| Value::U64(f.e2e($i).seg_max as u64)
            ),
            col!(
                concat!($p, "_mss_min"),
                U64,
                "bytes",
                "options",
                concat!("smallest payload of a ", $who, " data segment"),
                |f: &Flow| min_or_none(f.e2e($i).seg_min as u64, u32::MAX as u64)
            ),
            col!(
                concat!($p, "_win_max"),
                U64,
                "bytes",
                "options",
                concat!(
                    "largest receive window the ",
                    $who,
                    " advertised, scaled when both sides agreed on scaling (a SYN's window never is)"
                ),
                |f: &Flow| Value::U64(f.e2e($i).win_max as u64)
            ),
            col!(
                concat!($p, "_win_min"),
                U64,
                "bytes",
                "options",
                concat!("smallest receive window the ", $who, " advertised, scaled likewise"),
                |f: &Flow| min_or_none(f.e2e($i).win_min as u64, u32::MAX as u64)
            ),
            col!(
                concat!($p, "_win_0"),
                U64,
                "packets",
                "options",
                concat!("segments of the ", $who, " advertising a zero window"),
                |f: &Flow| Value::U64(f.e2e($i).win_0)
            ),
            col!(
                concat!($p, "_cwin_max"),
                U64,
                "bytes",
                "options",
                concat!(
                    "most bytes the ",
                    $who,
                    " had in flight (highest byte sent minus the highest ACK received), at its segments of new data (not at retransmissions)"
                ),
                |f: &Flow| Value::U64(f.e2e($i).cwin_max as u64)
            ),
            col!(
                concat!($p, "_cwin_min"),
                U64,
                "bytes",
                "options",
                concat!("fewest bytes the ", $who, " had in flight at its segments of new data"),
                |f: &Flow| min_or_none(f.e2e($i).cwin_min as u64, u32::MAX as u64)
            ),
            col!(
                concat!($p, "_cwin_ini"),
                U64,
                "bytes",
                "options",
                concat!(
                    "bytes the ",
                    $who,
                    " had in flight before its first data was acknowledged (its initial window as seen)"
                ),
                |f: &Flow| Value::U64(f.e2e($i).cwin_ini as u64)
            ),
            col!(concat!($p, "_pkts_rto"), U64, "packets", "anomalies", concat!("the ", $who, "'s segments sent again after a timeout (no 3 duplicate ACKs, later than the RTO estimate)"), |f: &Flow| Value::U64(f.e2e($i).pkts_rto)),
            col!(concat!($p, "_pkts_fs"), U64, "packets", "anomalies", concat!("the ", $who, "'s segments sent again after 3 duplicate ACKs (fast retransmit)"), |f: &Flow| Value::U64(f.e2e($i).pkts_fs)),
            col!(concat!($p, "_pkts_reor"), U64, "packets", "anomalies", concat!("the ", $who, "'s segments that filled a gap opened less than an RTT before: reordered by the network"), |f: &Flow| Value::U64(f.e2e($i).pkts_reor)),
            col!(concat!($p, "_pkts_dup"), U64, "packets", "anomalies", concat!("the ", $who, "'s segments seen twice within half an RTT: duplicated by the network"), |f: &Flow| Value::U64(f.e2e($i).pkts_dup)),
            col!(concat!($p, "_pkts_unk"), U64, "packets", "anomalies", concat!("the ", $who, "'s out-of-sequence or repeated segments of no other class"), |f: &Flow| Value::U64(f.e2e($i).pkts_unk)),
            col!(concat!($p, "_pkts_fc"), U64, "packets", "anomalies", concat!("the ", $who, "'s window probes: at most one byte sent into a zero window"), |f: &Flow| Value::U64(f.e2e($i).pkts_fc)),
            col!(concat!($p, "_pkts_unrto"), U64, "packets", "anomalies", concat!("the ", $who, "'s unnecessary retransmissions after a timeout: the data had been acknowledged"), |f: &Flow| Value::U64(f.e2e($i).pkts_unrto)),
            col!(concat!($p, "_pkts_unfs"), U64, "packets", "anomalies", concat!("the ", $who, "'s unnecessary fast retransmissions: the data had been acknowledged"), |f: &Flow| Value::U64(f.e2e($i).pkts_unfs)),
            col!(concat!($p, "_syn_retx"), U64, "packets", "anomalies", concat!("the ", $who, "'s SYNs sent again"), |f: &Flow| Value::U64(f.e2e($i).syn_retx)),
            col!(concat!($p, "_bytes_missed"), U64, "bytes", "anomalies", concat!("the ", $who, "'s payload bytes the other side acknowledged but the probe never saw (the probe's own losses, like Zeek's missed_bytes)"), |f: &Flow| Value::U64(f.bytes_missed($i))),
        ).blank_when(silent::<$i>, silent_flow));
    };
}

fn tunnel_cols() -> Run<Flow> {
    run!(Flow;
        col!("tunnel", Str, "", "endpoints", "innermost tunnel the flow was carried in (gre, erspan, vxlan, vxlan-gpe, geneve, gtpu, teredo, ipip, 6in4, 4in6, 6in6, mpls-udp); none when the flow was not in a tunnel", |f: &Flow| if f.tunnel.kind == tapstat_decode::TunnelKind::None { Value::None } else { Value::Token(f.tunnel.kind.name()) }),
        col!("tunnel_id", U64, "", "endpoints", "the tunnel's id: VXLAN/Geneve VNI, GTP-U TEID, GRE key, ERSPAN session; 0 when it has none", |f: &Flow| Value::U64(f.tunnel.id as u64)),
    )
}

fn end_cols() -> Run<Flow> {
    run!(Flow;
        col!("end_reason", Str, "", "state", "why the record was written: fin (both sides closed), rst, idle (timeout in packet time), evicted (flow table full), end_of_input, interrupted (the run was stopped by SIGINT/SIGTERM with the flow live), syn_reuse (a new SYN on the same 5-tuple)", |f: &Flow| Value::Token(f.end.name())),
        col!("client_rule", Str, "", "state", "how the client was chosen: syn (sender of the first SYN), synack (receiver of the first packet, a SYN/ACK), first_packet (sender of the first packet)", |f: &Flow| Value::Token(f.client_rule.name())),
    )
}

fn time_cols() -> Run<Flow> {
    run!(Flow;
        col!("first", Time, "epoch ms", "time", "time of the flow's first packet", |f: &Flow| abs_ms(f.first_ns)),
        col!("last", Time, "epoch ms", "time", "time of the flow's last packet", |f: &Flow| abs_ms(f.last_ns)),
        col!("durat", F64, "ms", "time", "last - first", |f: &Flow| Value::Micros(us(f
            .last_ns
            .saturating_sub(f.first_ns)))),
    )
}

fn stats(f: &Flow) -> Option<&crate::stats::PktStats> {
    f.full_base().map(|x| &x.stats)
}

fn f64_or_none(x: Option<f64>) -> Value<'static> {
    x.map_or(Value::None, Value::F64)
}

/// Packet-size and inter-arrival statistics of one direction (`$i` 0, 1) or of both
/// (2), NFStream's `statistical_analysis` figures.
macro_rules! stat_cols {
    ($v:ident, $p:literal, $i:tt, $who:literal) => {
        $v.push(run!(Flow;
            col!(
                concat!($p, "min_ps"),
                U64,
                "bytes",
                "stats",
                concat!("smallest frame on the wire (", $who, ")"),
                |f: &Flow| stats(f).and_then(|s| s.size($i).min()).map_or(Value::None, Value::U64)
            ),
            col!(
                concat!($p, "mean_ps"),
                F64,
                "bytes",
                "stats",
                concat!("mean frame length on the wire (", $who, ")"),
                |f: &Flow| f64_or_none(stats(f).and_then(|s| s.size($i).mean()))
            ),
            col!(
                concat!($p, "stddev_ps"),
                F64,
                "bytes",
                "stats",
                concat!("sample standard deviation of the frame lengths (", $who, ")"),
                |f: &Flow| f64_or_none(stats(f).and_then(|s| s.size($i).std()))
            ),
            col!(
                concat!($p, "max_ps"),
                U64,
                "bytes",
                "stats",
                concat!("largest frame on the wire (", $who, ")"),
                |f: &Flow| stats(f).and_then(|s| s.size($i).max()).map_or(Value::None, Value::U64)
            ),
            col!(
                concat!($p, "min_piat"),
                F64,
                "ms",
                "stats",
                concat!("shortest gap between consecutive packets (", $who, ")"),
                |f: &Flow| stats(f).and_then(|s| s.iat_us[$i].min()).map_or(Value::None, Value::Micros)
            ),
            col!(
                concat!($p, "mean_piat"),
                F64,
                "ms",
                "stats",
                concat!("mean gap between consecutive packets (", $who, ")"),
                |f: &Flow| f64_or_none(stats(f).and_then(|s| s.iat_us[$i].mean()).map(|x| x / 1000.0))
            ),
            col!(
                concat!($p, "stddev_piat"),
                F64,
                "ms",
                "stats",
                concat!("sample standard deviation of the gaps between consecutive packets (", $who, ")"),
                |f: &Flow| f64_or_none(stats(f).and_then(|s| s.iat_us[$i].std()).map(|x| x / 1000.0))
            ),
            col!(
                concat!($p, "max_piat"),
                F64,
                "ms",
                "stats",
                concat!("longest gap between consecutive packets (", $who, ")"),
                |f: &Flow| stats(f).and_then(|s| s.iat_us[$i].max()).map_or(Value::None, Value::Micros)
            ),
        ));
    };
}

/// Size and inter-arrival statistics per direction and of the whole flow, and its
/// first packets (`--first-n`): the full sets' features for traffic classifiers.
fn stats_cols() -> Vec<Run<Flow>> {
    let mut v = Vec::new();
    stat_cols!(v, "c_", 0, "client to server");
    stat_cols!(v, "s_", 1, "server to client");
    // A side that sent nothing has no sizes and no gaps.
    v[0] = v[0].clone().blank_when(silent::<0>, silent_flow);
    v[1] = v[1].clone().blank_when(silent::<1>, silent_flow);
    stat_cols!(v, "", 2, "both directions");
    v.push(run!(Flow;
        col!("first_dirs", Str, "", "first_n", "direction of each of the flow's first packets (`--first-n`, default 10): c client to server, s server to client", |f: &Flow| f.full_base().map_or(Value::None, |x| Value::Token(x.first.dirs()))),
        col!("first_ps", Counts, "bytes", "first_n", "frame length on the wire of each of the flow's first packets", |f: &Flow| f.full_base().map_or(Value::None, |x| Value::U32s(x.first.sizes()))),
        col!("first_piat", Durations, "ms", "first_n", "gap from the flow's previous packet to each of its first packets (0 for the first)", |f: &Flow| f.full_base().map_or(Value::None, |x| Value::MicrosU32s(x.first.gaps_us()))),
    ));
    v
}

/// The Community ID of a TCP (6) or UDP (17) flow, computed when its record is written,
/// from the addresses the record shows (anonymized under `--anonymize`: the ID of the
/// real addresses would let anyone test a guess of them).
fn community(f: &Flow, proto: u8) -> Value<'static> {
    if !f.community_id {
        return Value::None;
    }
    let end = |i: usize| (tapstat_flow::ip_of(f.ip_version, f.shown_ip(i)), f.dir[i].port);
    Value::Inline(crate::community_id::community_id(0, proto, end(0), end(1)))
}

fn l7(f: &Flow) -> Option<&tapstat_l7::L7Flow> {
    f.l7.as_ref()
}

/// A TLS version: the number on the wire, as a number in every format (hex digits
/// would be a string in JSON, and a number or a string in TSV depending on the digits).
fn tls_version(v: Option<u16>) -> Value<'static> {
    v.map_or(Value::None, |v| Value::U64(v as u64))
}

/// The highest version a ClientHello offers (supported_versions, else the legacy field),
/// GREASE values (RFC 8701: 0x?a?a) left out.
fn offered_version(c: &tapstat_l7::tls::ClientHelloInfo) -> Option<u16> {
    let grease = |v: &u16| v & 0x0f0f == 0x0a0a;
    c.supported_versions.iter().filter(|v| !grease(v)).max().copied().or(Some(c.legacy_version))
}

/// A QUIC version: the number on the wire, as [`tls_version`].
fn quic_version(v: Option<u32>) -> Value<'static> {
    v.map_or(Value::None, |v| Value::U64(v as u64))
}

fn app_cols() -> Run<Flow> {
    run!(Flow;
        col!("app", Str, "", "l7", "application protocol (tls, quic, http, dns, mdns, ssh, dhcp, ntp, snmp, ipsec, wireguard, openvpn, bittorrent, rtp, stun, ...: `tapstat_l7::App`): from payload signatures first, else the port table", |f: &Flow| l7(f).and_then(|x| x.app()).map_or(Value::None, |a| Value::Token(a.name()))),
        col!("app_source", Str, "", "l7", "where `app` came from: payload, port or none", |f: &Flow| l7(f).map_or(Value::None, |x| Value::Token(x.app_source().name()))),
        col!("fqdn", Str, "", "l7", "the name the client resolved for the server before the flow (DN-Hunter: from the DNS answers seen)", |f: &Flow| f.fqdn.as_deref().map_or(Value::None, Value::Str)),
        col!("l7_events", Strs, "", "l7", L7_EVENTS_MEANING, |f: &Flow| l7_events(l7(f).map(|x| x.events()).unwrap_or_default())),
    )
}

/// What `l7_events` holds, in every log that has it.
pub(crate) const L7_EVENTS_MEANING: &str = "limits the application layer hit and malformed input it met in the flow by the time the record was written (names in \"Application-layer events\" below); none when there were none";

/// The names of `events` (a list), or none when there are none: most flows have none,
/// and an empty field costs a record nothing.
pub(crate) fn l7_events(events: tapstat_l7::Events) -> Value<'static> {
    if events.is_empty() {
        Value::None
    } else {
        Value::Names { bits: u64::from(events.bits()), names: &tapstat_l7::Event::NAMES }
    }
}

/// The application layer's columns of a TCP record (Tstat's names where Tstat has the
/// value).
fn tcp_l7_cols() -> Vec<Run<Flow>> {
    let mut v = vec![app_cols()];
    v.push(run!(Flow;
        col!("http_hostname", Str, "", "l7", "Host of the flow's first HTTP request", |f: &Flow| l7(f)
            .and_then(|x| x.http())
            .and_then(|h| h.first_host.as_deref())
            .map_or(Value::None, Value::Str)),
        col!("http_req_cnt", U64, "", "l7", "HTTP requests", |f: &Flow| Value::U64(
            l7(f).and_then(|x| x.http()).map_or(0, |h| h.requests as u64)
        )),
        col!("http_res_cnt", U64, "", "l7", "HTTP responses", |f: &Flow| Value::U64(
            l7(f).and_then(|x| x.http()).map_or(0, |h| h.responses as u64)
        )),
        col!("http_res", U64, "", "l7", "status code of the first HTTP response", |f: &Flow| l7(f)
            .and_then(|x| x.http())
            .and_then(|h| h.first_status)
            .map_or(Value::None, |s| Value::U64(s as u64))),
        col!("c_tls_SNI", Str, "", "l7", "server name (SNI) of the ClientHello", |f: &Flow| l7(f)
            .and_then(|x| x.sni())
            .map_or(Value::None, Value::Str)),
        col!("c_alpn", Str, "", "l7", "first ALPN protocol the ClientHello offers", |f: &Flow| l7(f)
            .and_then(|x| x.alpn().first())
            .map_or(Value::None, |a| Value::Str(a))),
        col!(
            "s_alpn",
            Str,
            "",
            "l7",
            "ALPN protocol the ServerHello selects (TLS 1.2; TLS 1.3 encrypts it)",
            |f: &Flow| l7(f)
                .and_then(|x| x.tls())
                .and_then(|t| t.server.as_ref())
                .and_then(|s| s.alpn.as_deref())
                .map_or(Value::None, Value::Str)
        ),
        col!(
            "c_TLSvers",
            U64,
            "",
            "l7",
            "highest TLS version the ClientHello offers (supported_versions, else its version field), as a number: 769 (0x0301) TLS 1.0, 770 TLS 1.1, 771 TLS 1.2, 772 TLS 1.3, 65279 (0xfeff) DTLS 1.0, 65277 DTLS 1.2, 65276 DTLS 1.3",
            |f: &Flow| tls_version(
                l7(f).and_then(|x| x.tls()).and_then(|t| t.client.as_ref()).and_then(offered_version)
            )
        ),
        col!("s_TLSvers", U64, "", "l7", "TLS version the ServerHello selects, as a number (as `c_TLSvers`)", |f: &Flow| tls_version(
            l7(f).and_then(|x| x.tls()).and_then(|t| t.server.as_ref()).map(|s| s.version)
        )),
        col!("ja3", Str, "", "l7", "JA3 fingerprint of the ClientHello (MD5)", |f: &Flow| l7(f)
            .and_then(|x| x.ja3_md5())
            .map_or(Value::None, Value::Token)),
        col!("ja4", Str, "", "l7", "JA4 fingerprint of the ClientHello", |f: &Flow| l7(f)
            .and_then(|x| x.ja4())
            .map_or(Value::None, Value::Str)),
    ));
    v.push(server_hello_run());
    v.push(cert_run());
    v.push(run!(Flow;
        col!(
            "c_last_handshakeT",
            F64,
            "ms",
            "l7",
            "time from the flow's first packet to the client's last TLS handshake record",
            |f: &Flow| rel_ms(f, l7(f).and_then(|x| x.tls_times()).and_then(|t| t.last_handshake_ns[0]).unwrap_or(0))
        ),
        col!(
            "s_last_handshakeT",
            F64,
            "ms",
            "l7",
            "time from the flow's first packet to the server's last TLS handshake record",
            |f: &Flow| rel_ms(f, l7(f).and_then(|x| x.tls_times()).and_then(|t| t.last_handshake_ns[1]).unwrap_or(0))
        ),
        col!(
            "c_appdataT",
            F64,
            "ms",
            "l7",
            "time from the flow's first packet to the client's first TLS Application Data",
            |f: &Flow| rel_ms(f, l7(f).and_then(|x| x.tls_times()).and_then(|t| t.first_appdata_ns[0]).unwrap_or(0))
        ),
        col!(
            "s_appdataT",
            F64,
            "ms",
            "l7",
            "time from the flow's first packet to the server's first TLS Application Data",
            |f: &Flow| rel_ms(f, l7(f).and_then(|x| x.tls_times()).and_then(|t| t.first_appdata_ns[1]).unwrap_or(0))
        ),
        col!(
            "c_appdataB",
            U64,
            "bytes",
            "l7",
            "client payload bytes before its first Application Data, plus 1 (Tstat's relative sequence number)",
            |f: &Flow| l7(f)
                .and_then(|x| x.tls_times())
                .and_then(|t| t.first_appdata_offset[0])
                .map_or(Value::None, |o| Value::U64(o + 1))
        ),
        col!(
            "s_appdataB",
            U64,
            "bytes",
            "l7",
            "server payload bytes before its first Application Data, plus 1",
            |f: &Flow| l7(f)
                .and_then(|x| x.tls_times())
                .and_then(|t| t.first_appdata_offset[1])
                .map_or(Value::None, |o| Value::U64(o + 1))
        ),
    ));
    v.push(run!(Flow;
        col!("ssh_c_version", Str, "", "l7", "SSH identification string of the client (`SSH-2.0-OpenSSH_9.6`, RFC 4253 §4.2)", |f: &Flow| ssh_side(f, tapstat_l7::Dir::ClientToServer)
            .and_then(|s| s.version.as_deref())
            .map_or(Value::None, Value::Str)),
        col!("ssh_s_version", Str, "", "l7", "SSH identification string of the server", |f: &Flow| ssh_side(f, tapstat_l7::Dir::ServerToClient)
            .and_then(|s| s.version.as_deref())
            .map_or(Value::None, Value::Str)),
        col!("ssh_hassh", Str, "", "l7", "HASSH of the client's KEXINIT: MD5 of its kex;encryption;mac;compression lists (client to server)", |f: &Flow| ssh_side(f, tapstat_l7::Dir::ClientToServer)
            .and_then(|s| s.hassh.as_deref())
            .map_or(Value::None, Value::Str)),
        col!("ssh_hassh_server", Str, "", "l7", "hasshServer: the same of the server's KEXINIT (server to client lists)", |f: &Flow| ssh_side(f, tapstat_l7::Dir::ServerToClient)
            .and_then(|s| s.hassh.as_deref())
            .map_or(Value::None, Value::Str)),
    ));
    v
}

/// The server's certificate of a TLS flow (TLS ≤ 1.2).
fn cert(f: &Flow) -> Option<&tapstat_l7::tls::cert::CertInfo> {
    l7(f)?.tls()?.cert.as_deref()
}

fn ssh_side(f: &Flow, dir: tapstat_l7::Dir) -> Option<&tapstat_l7::ssh::SshSide> {
    Some(l7(f)?.ssh()?.side(dir))
}

/// The application layer's columns of a UDP record.
fn udp_l7_cols() -> Vec<Run<Flow>> {
    let mut v = vec![app_cols()];
    v.push(run!(Flow;
        col!(
            "quic_SNI",
            Str,
            "",
            "l7",
            "server name (SNI) of the QUIC ClientHello, from the decrypted Initial packets",
            |f: &Flow| l7(f)
                .and_then(|x| x.quic())
                .and_then(|q| q.tls.client.as_ref())
                .and_then(|c| c.sni.as_deref())
                .map_or(Value::None, Value::Str)
        ),
        col!("quic_alpn", Str, "", "l7", "first ALPN protocol the QUIC ClientHello offers", |f: &Flow| l7(f)
            .and_then(|x| x.quic())
            .and_then(|q| q.tls.client.as_ref())
            .and_then(|c| c.alpn.first())
            .map_or(Value::None, |a| Value::Str(a))),
        col!(
            "quic_UA",
            Str,
            "",
            "l7",
            "user agent of the QUIC client (transport parameter google_user_agent)",
            |f: &Flow| l7(f)
                .and_then(|x| x.quic())
                .and_then(|q| q.user_agent.as_deref())
                .map_or(Value::None, Value::Str)
        ),
        col!(
            "quic_c_vers",
            U64,
            "",
            "l7",
            "QUIC version of the client's first long header, as a number: 1 v1, 1798521807 (0x6b3343cf) v2, 4278190109 (0xff00001d) draft-29",
            |f: &Flow| quic_version(l7(f).and_then(|x| x.quic()).and_then(|q| q.client_version))
        ),
        col!("quic_s_vers", U64, "", "l7", "QUIC version of the server's first long header, as a number (as `quic_c_vers`)", |f: &Flow| quic_version(
            l7(f).and_then(|x| x.quic()).and_then(|q| q.server_version)
        )),
        col!("quic_zero_rtt", U64, "packets", "l7", "0-RTT packets from the client", |f: &Flow| Value::U64(
            l7(f).and_then(|x| x.quic()).map_or(0, |q| q.zero_rtt_packets as u64)
        )),
        col!("dtls_SNI", Str, "", "l7", "server name (SNI) of a DTLS ClientHello", |f: &Flow| l7(f)
            .filter(|x| x.quic().is_none())
            .and_then(|x| x.sni())
            .map_or(Value::None, Value::Str)),
        col!("ja4", Str, "", "l7", "JA4 fingerprint of the QUIC or DTLS ClientHello", |f: &Flow| l7(f)
            .and_then(|x| x.ja4())
            .map_or(Value::None, Value::Str)),
    ));
    v.push(server_hello_run());
    // DTLS ≤ 1.2 sends the server's certificate in the clear, as TLS ≤ 1.2 does.
    v.push(cert_run());
    v
}

/// The ServerHello's fingerprints (TLS over TCP; QUIC and DTLS over UDP).
fn server_hello_run() -> Run<Flow> {
    run!(Flow;
        col!("ja3s", Str, "", "l7", "JA3S fingerprint of the TLS, DTLS or QUIC ServerHello (MD5 of its version, cipher and extensions)", |f: &Flow| l7(f)
            .and_then(|x| x.ja3s_md5())
            .map_or(Value::None, Value::Token)),
        col!("ja4s", Str, "", "l7", "JA4S fingerprint of the TLS, DTLS or QUIC ServerHello", |f: &Flow| l7(f)
            .and_then(|x| x.ja4s())
            .map_or(Value::None, Value::Str))
    )
}

/// The server certificate's columns (TLS ≤ 1.2 over TCP, DTLS ≤ 1.2 over UDP).
fn cert_run() -> Run<Flow> {
    run!(Flow;
        col!("tls_subject_cn", Str, "", "l7", "subject common name of the server's certificate (the chain's first; TLS and DTLS ≤ 1.2, where it is in clear; Tstat's `s_tls_SCN`)", |f: &Flow| cert(f)
            .and_then(|c| c.subject_cn.as_deref())
            .map_or(Value::None, Value::Str)),
        col!("tls_issuer_cn", Str, "", "l7", "issuer common name of the server's certificate", |f: &Flow| cert(f)
            .and_then(|c| c.issuer_cn.as_deref())
            .map_or(Value::None, Value::Str)),
        col!("tls_issuer", Str, "", "l7", "issuer of the server's certificate, its whole name as RFC 4514 writes it (`CN=R3,O=Let's Encrypt,C=US`; what `openssl x509 -issuer -nameopt RFC2253,-esc_msb` prints)", |f: &Flow| cert(f)
            .map_or(Value::None, |c| Value::Str(&c.issuer))),
        col!("tls_sans", Strs, "", "l7", "DNS names of the server certificate's subjectAltName, in order", |f: &Flow| cert(f)
            .map_or(Value::None, |c| Value::Strs(&c.sans))),
        col!("tls_not_before", Time, "epoch ms", "l7", "notBefore of the server's certificate", |f: &Flow| cert(f)
            .map_or(Value::None, |c| Value::F64(c.not_before as f64 * 1000.0))),
        col!("tls_not_after", Time, "epoch ms", "l7", "notAfter of the server's certificate", |f: &Flow| cert(f)
            .map_or(Value::None, |c| Value::F64(c.not_after as f64 * 1000.0)))
    )
}

/// `log_tcp_complete` (three-way handshake seen) and `log_tcp_nocomplete` (the rest)
/// share these columns.
pub static TCP: LazyLock<Log<Flow>> = LazyLock::new(|| {
    let mut v = Vec::new();
    tcp_side!(v, "c", 0, "client");
    tcp_side!(v, "s", 1, "server");
    v.push(time_cols());
    v.push(run!(Flow;
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
        col!("c_isint", U64, "", "core", ISINT_C, |f: &Flow| Value::U64(f.isint[0] as u64)),
        col!("s_isint", U64, "", "core", ISINT_S, |f: &Flow| Value::U64(f.isint[1] as u64)),
        col!("c_iscrypto", U64, "", "core", ISCRYPTO_C, |f: &Flow| Value::U64(f.iscrypto[0] as u64)),
        col!("s_iscrypto", U64, "", "core", ISCRYPTO_S, |f: &Flow| Value::U64(f.iscrypto[1] as u64)),
        col!("con_t", U64, "", "core", "Tstat's connection type, a bit mask from the payload: 1 HTTP, 2 RTSP, 4 RTP, 16 RTCP, 1024 SMTP, 2048 POP3, 4096 IMAP, 8192 TLS, 32768 SSH, 131072 MSE (Tstat's heuristic for BitTorrent's Message Stream Encryption: no protocol recognised, the client's first data segment 96 to 608 bytes (a Diffie-Hellman key and its padding) not starting with text, and data from the server); 0 none. Needs the application layer (0 without it)", |f: &Flow| Value::U64(crate::tstat::con_t(f) as u64)),
        col!("p2p_t", U64, "", "core", "Tstat's P2P type (IPP2P's codes as Tstat numbers them): 900 BitTorrent (its handshake seen), 0 none; Tstat's other IPP2P protocols (eDonkey, Kazaa, Gnutella, DirectConnect...) are not recognised", |f: &Flow| Value::U64(crate::tstat::p2p_t(f) as u64)),
        col!("http_t", U64, "", "core", "Tstat's HTTP content class of the flow's first request, by its request line: 1 GET (and other methods but POST), 2 POST, 3 MSN over HTTP, 4 RTMPT, 5 YouTube video, 15 Netflix Open Connect request, 22 YouTube 204 probe, 24 YouTube watch page, 25 YouTube embed, 27 Dropbox LAN-sync poll; 0 not HTTP. Tstat's site-specific classes (Facebook, Wikipedia, file lockers, ...) are not made: see docs/METRICS.md", |f: &Flow| Value::U64(crate::tstat::http_t(f) as u64)),
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
    ));
    v.push(tunnel_cols());
    v.push(run!(Flow;
        col!("conn_state", Str, "", "state", "Zeek's connection state: S0 S1 SF REJ S2 S3 RSTO RSTR RSTOS0 RSTRH SH SHR OTH", |f: &Flow| Value::Token(f.conn_state())),
        col!("history", Str, "", "state", "Zeek's history: s(SYN) h(SYN/ACK) a(pure ACK) d(data) f(FIN) r(RST) i(FIN+RST) q(other multi-flag) once per side (s h f r again at another sequence number), t(retransmission) g(content gap) w(zero window) at the 1st, 10th, 100th... time, ^(first packet from the server); upper case for the client", |f: &Flow| Value::Token(f.history.as_str())),
    ));
    v.push(end_cols());
    tcp_e2e!(v, "c", 0, "client");
    tcp_e2e!(v, "s", 1, "server");
    v.push(run!(Flow;
        col!(
            "c_rtt_3whs",
            F64,
            "ms",
            "end-to-end",
            "handshake RTT between the probe and the server: client's SYN to the server's SYN/ACK",
            |f: &Flow| ns_ms(f.rtt_3whs[0])
        ),
        col!(
            "s_rtt_3whs",
            F64,
            "ms",
            "end-to-end",
            "handshake RTT between the probe and the client: server's SYN/ACK to the client's ACK",
            |f: &Flow| ns_ms(f.rtt_3whs[1])
        ),
    ));
    tcp_options!(v, "c", 0, "client");
    tcp_options!(v, "s", 1, "server");
    v.push(run!(Flow;
        col!("c_pkts_push", U64, "packets", "core", "segments with payload and PSH, retransmissions left out (client)", |f: &Flow| Value::U64(
            f.e2e(0).pkts_push
        )),
        col!("s_pkts_push", U64, "packets", "core", "segments with payload and PSH, retransmissions left out (server)", |f: &Flow| Value::U64(
            f.e2e(1).pkts_push
        )),
    ));
    v.push(run!(Flow; col!(
        "flow_id",
        Str,
        "",
        "state",
        "the flow's id (16 hex digits from its 5-tuple and first packet time), shared with its periodic rows",
        |f: &Flow| Value::Token(f.flow_id.as_str())
    ),
    col!(
        "community_id",
        Str,
        "",
        "state",
        "Community ID v1 of the 5-tuple (seed 0: `1:` and base64 of SHA-1), the id Zeek, Suricata and Wireshark give the same flow (of the anonymized addresses under --anonymize); empty without --community-id",
        |f: &Flow| community(f, 6)
    )));
    v.push(unanalysed_cols());
    v.extend(tcp_l7_cols());
    v.extend(stats_cols());
    Log::from_runs("log_tcp_complete", "TCP flows whose three-way handshake was seen (SYN, SYN/ACK, ACK). `log_tcp_nocomplete` has the same columns for the other TCP flows.", v)
});

/// The packets of each side that a live run's overload controller counted but did not
/// analyse (TED and shunting): in `pkts_all` and `bytes_wire`, in no other
/// column; and whether the flow was shunted.
fn unanalysed_cols() -> Run<Flow> {
    run!(Flow;
        col!("shunted", U64, "", "core", "1 when a --shunt rule matched the flow in a live run: its later packets were counted (c_/s_pkts_unanalysed), not analysed, except SYN, FIN and RST; 0 otherwise", |f: &Flow| Value::U64(f.shunted as u64)),
        dir_u64!("c", 0, "client", pkts_unanalysed, "packets", "core", "packets counted but not analysed: cut from the flow's tail by the live overload controller (--overload ted) or sent after the flow was shunted (--shunt), in pkts_all and bytes_wire only"),
        dir_u64!("s", 1, "server", pkts_unanalysed, "packets", "core", "packets counted but not analysed: cut from the flow's tail by the live overload controller (--overload ted) or sent after the flow was shunted (--shunt), in pkts_all and bytes_wire only"),
    )
}

/// The groups of columns the TCP core set writes; the rest (end-to-end, options,
/// anomalies, statistics) come with `TcpSets::Full`, and `l7` with the application layer.
const CORE_GROUPS: &[&str] = &["endpoints", "core", "time", "state"];

/// `log` with the columns of the sets that are on.
fn variant(log: &Log<Flow>, sets: crate::TcpSets, l7: bool) -> Log<Flow> {
    let keep = |c: &&Column<Flow>| {
        let g = c.field.group;
        (g != "l7" || l7)
            && (sets == crate::TcpSets::Full
                || g == "l7"
                || (CORE_GROUPS.contains(&g) && !c.field.name.ends_with("_pkts_push")))
    };
    log.filter(|c| keep(&c))
}

/// Every log in every combination of the sets: [log][full][l7].
static VARIANTS: LazyLock<Vec<[[Log<Flow>; 2]; 2]>> = LazyLock::new(|| {
    [&*TCP, &*UDP, &*OTHER]
        .into_iter()
        .map(|log| {
            let v = |sets, l7| variant(log, sets, l7);
            use crate::TcpSets::{Core, Full};
            [[v(Core, false), v(Core, true)], [v(Full, false), v(Full, true)]]
        })
        .collect()
});

/// `log_udp_complete`: every UDP flow.
pub static UDP: LazyLock<Log<Flow>> = LazyLock::new(|| {
    let mut v = Vec::new();
    macro_rules! udp_side {
        ($p:literal, $i:tt, $who:literal) => {
            v.push(run!(Flow;
                col!(concat!($p, "_ip"), Ip, "", "endpoints", concat!("IP address of the ", $who), |f: &Flow| ip(f, $i)),
                col!(concat!($p, "_port"), U64, "", "endpoints", concat!("UDP port of the ", $who), |f: &Flow| {
                    Value::U64(f.dir[$i].port as u64)
                }),
                col!(
                    concat!($p, "_first_abs"),
                    Time,
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
                col!(concat!($p, "_isint"), U64, "", "core", concat!("1 when the ", $who, "'s address is in the internal networks (-N, --internal; every address is without them, as in Tstat)"), |f: &Flow| Value::U64(f.isint[$i] as u64)),
                col!(concat!($p, "_iscrypto"), U64, "", "core", concat!("1 when the ", $who, "'s address is anonymized (--anonymize, under --anonymize-only)"), |f: &Flow| Value::U64(f.iscrypto[$i] as u64)),
            ));
        };
    }
    udp_side!("c", 0, "client");
    udp_side!("s", 1, "server");
    v.push(time_cols());
    v.push(
        run!(Flow; col!("ip_version", U64, "", "endpoints", "4 or 6 (the innermost IP header)", |f: &Flow| Value::U64(
            f.ip_version as u64
        ))),
    );
    v.push(tunnel_cols());
    v.push(end_cols());
    v.push(run!(Flow; col!(
        "flow_id",
        Str,
        "",
        "state",
        "the flow's id (16 hex digits from its 5-tuple and first packet time), shared with its periodic rows",
        |f: &Flow| Value::Token(f.flow_id.as_str())
    ),
    col!(
        "community_id",
        Str,
        "",
        "state",
        "Community ID v1 of the 5-tuple (seed 0: `1:` and base64 of SHA-1), the id Zeek, Suricata and Wireshark give the same flow (of the anonymized addresses under --anonymize); empty without --community-id",
        |f: &Flow| community(f, 17)
    )));
    v.push(unanalysed_cols());
    v.extend(udp_l7_cols());
    v.extend(stats_cols());
    Log::from_runs("log_udp_complete", "UDP flows; the client is the sender of the first packet.", v)
});

/// `log_other`: ICMP, ICMPv6 and the other IP protocols, one record per address pair
/// and protocol.
pub static OTHER: LazyLock<Log<Flow>> = LazyLock::new(|| {
    let mut v = vec![run!(Flow;
        col!("c_ip", Ip, "", "endpoints", "IP address of the sender of the first packet", |f: &Flow| ip(f, 0)),
        col!("s_ip", Ip, "", "endpoints", "IP address of the other side", |f: &Flow| ip(f, 1)),
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
    )];
    v.push(time_cols());
    v.push(
        run!(Flow; col!("ip_version", U64, "", "endpoints", "4 or 6 (the innermost IP header)", |f: &Flow| Value::U64(
            f.ip_version as u64
        ))),
    );
    v.push(tunnel_cols());
    v.push(run!(Flow; col!(
        "end_reason",
        Str,
        "",
        "state",
        "why the record was written: idle, evicted, end_of_input, interrupted",
        |f: &Flow| Value::Token(f.end.name())
    )));
    v.push(run!(Flow; col!(
        "flow_id",
        Str,
        "",
        "state",
        "the flow's id (16 hex digits from its 5-tuple and first packet time), shared with its periodic rows",
        |f: &Flow| Value::Token(f.flow_id.as_str())
    )));
    Log::from_runs("log_other", "ICMP, ICMPv6 and other IP protocols (and IP fragments whose first fragment was not seen), per address pair and protocol.", v)
});

/// Every log tapstat writes, in the order of its output files: the four logs of ended
/// flows (every flow's record goes to one of them, [`LogId::of`]), the periodic logs of
/// TCP and UDP (with `--periodic`), and the application layer's HTTP and DNS
/// transactions (when it is on).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LogId {
    TcpComplete,
    TcpNocomplete,
    Udp,
    Other,
    TcpPeriodic,
    UdpPeriodic,
    Http,
    Dns,
}

/// Something done with a log's columns, whatever the type of its rows
/// ([`LogId::visit`]): writing its header, listing its fields.
pub trait LogVisitor {
    type Out;
    fn visit<T>(self, log: &Log<T>) -> Self::Out;
}

impl LogId {
    /// How many logs there are: the length of a table indexed by `LogId as usize`.
    pub const COUNT: usize = 8;

    /// Every log, in the order of the output files.
    pub const ALL: [LogId; LogId::COUNT] = [
        LogId::TcpComplete,
        LogId::TcpNocomplete,
        LogId::Udp,
        LogId::Other,
        LogId::TcpPeriodic,
        LogId::UdpPeriodic,
        LogId::Http,
        LogId::Dns,
    ];

    /// The logs of ended flows.
    pub const FLOWS: [LogId; 4] = [LogId::TcpComplete, LogId::TcpNocomplete, LogId::Udp, LogId::Other];

    /// The log of finished flow `f`.
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
            LogId::TcpPeriodic => crate::periodic::TCP_PERIODIC.name,
            LogId::UdpPeriodic => crate::periodic::UDP_PERIODIC.name,
            LogId::Http => crate::l7log::HTTP.name,
            LogId::Dns => crate::l7log::DNS.name,
        }
    }

    /// Whether the run of `periodic` (`--periodic` on) and `l7` (the application layer
    /// on) writes this log.
    pub fn written(self, periodic: bool, l7: bool) -> bool {
        match self {
            LogId::TcpPeriodic | LogId::UdpPeriodic => periodic,
            LogId::Http | LogId::Dns => l7,
            _ => true,
        }
    }

    /// The columns of this log of ended flows with every set.
    pub fn log(self) -> &'static Log<Flow> {
        self.log_for(crate::TcpSets::Full, true)
    }

    /// The columns of this log of ended flows ([`LogId::FLOWS`]) with the given TCP
    /// sets, with or without the application layer. The other logs' rows are not
    /// flows: reach their columns with [`LogId::visit`].
    pub fn log_for(self, sets: crate::TcpSets, l7: bool) -> &'static Log<Flow> {
        let i = match self {
            LogId::TcpComplete | LogId::TcpNocomplete => 0,
            LogId::Udp => 1,
            LogId::Other => 2,
            _ => unreachable!("{} is not a log of flows", self.name()),
        };
        &VARIANTS[i][(sets == crate::TcpSets::Full) as usize][l7 as usize]
    }

    /// Hands `v` this log's columns (with the given TCP sets and application layer, for
    /// the logs of flows).
    pub fn visit<V: LogVisitor>(self, sets: crate::TcpSets, l7: bool, v: V) -> V::Out {
        match self {
            LogId::TcpPeriodic => v.visit(&*crate::periodic::TCP_PERIODIC),
            LogId::UdpPeriodic => v.visit(&*crate::periodic::UDP_PERIODIC),
            LogId::Http => v.visit(&*crate::l7log::HTTP),
            LogId::Dns => v.visit(&*crate::l7log::DNS),
            flows => v.visit(flows.log_for(sets, l7)),
        }
    }
}

/// The reference of every log, for docs/METRICS.md.
pub fn docs() -> Vec<LogDoc> {
    let mut v = vec![LogDoc::from(&*TCP), LogDoc::from(&*UDP), LogDoc::from(&*OTHER)];
    v.extend(crate::periodic::docs());
    v.extend(crate::l7log::docs());
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// FNV-1a (64 bits) of every log's name, and of each of its columns its name and
    /// type, in order: stable across platforms and Rust versions (no std hasher).
    fn columns_fingerprint(logs: &[LogDoc]) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut eat = |s: &str| {
            for b in s.bytes().chain([b'\n']) {
                h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
            }
        };
        for log in logs {
            eat(log.name);
            for f in &log.fields {
                eat(f.name);
                eat(f.ty.name());
            }
            eat("");
        }
        h
    }

    #[test]
    fn columns_version_moves_with_the_columns() {
        let got = (tapstat_record::COLUMNS_VERSION, columns_fingerprint(&docs()));
        assert_eq!(
            got,
            (1, 0x4e32_25d3_789f_1ebd),
            "the logs' columns changed (added, removed, renamed, reordered or retyped): raise \
             tapstat_record::COLUMNS_VERSION (crates/record/src/lib.rs) by one, say what changed \
             in CHANGELOG.md, and expect (COLUMNS_VERSION, {:#018x}) here",
            got.1
        );
    }

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
    fn units_agree_with_types() {
        // The stores read times and lists of durations from the type, never the unit:
        // the two must say the same.
        use tapstat_record::EPOCH_MS;
        for log in docs() {
            for f in &log.fields {
                let at = format!("{}.{}", log.name, f.name);
                assert_eq!(f.ty == Type::Time, f.unit == EPOCH_MS, "{at}");
                if matches!(f.ty, Type::Counts | Type::Durations) {
                    assert_eq!(f.ty == Type::Durations, f.unit == "ms", "{at}");
                }
            }
        }
    }

    #[test]
    fn tcp_starts_with_tstats_core_columns_in_tstats_order() {
        // The 44 columns of Tstat 3.3's core set (log_tcp_complete), in its order, in
        // every variant of the TCP log.
        let tstat = "c_ip c_port c_pkts_all c_rst_cnt c_ack_cnt c_ack_cnt_p c_bytes_uniq c_pkts_data c_bytes_all c_pkts_retx c_bytes_retx c_pkts_ooo c_syn_cnt c_fin_cnt s_ip s_port s_pkts_all s_rst_cnt s_ack_cnt s_ack_cnt_p s_bytes_uniq s_pkts_data s_bytes_all s_pkts_retx s_bytes_retx s_pkts_ooo s_syn_cnt s_fin_cnt first last durat c_first s_first c_last s_last c_first_ack s_first_ack c_isint s_isint c_iscrypto s_iscrypto con_t p2p_t http_t";
        for sets in [crate::TcpSets::Core, crate::TcpSets::Full] {
            for l7 in [false, true] {
                let ours: Vec<&str> = LogId::TcpComplete.log_for(sets, l7).fields().map(|f| f.name).take(44).collect();
                assert_eq!(ours.join(" "), tstat);
            }
        }
        let ours: Vec<&str> = TCP.fields().map(|f| f.name).take(44).collect();
        assert_eq!(ours.join(" "), tstat);
    }
}
