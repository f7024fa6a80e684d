//! `log_http_complete` and `log_dns_complete`: one row per HTTP request/response pair
//! and per DNS transaction, with the flow they travelled in.

use crate::flow::{Flow, FlowId};
use std::sync::LazyLock;
use tapstat_l7::dns::parser::AnswerData;
use tapstat_l7::dns::DnsTransaction;
use tapstat_l7::http::HttpTransaction;
use tapstat_record::{run, Column, Field, Log, LogDoc, Type, Value};

/// The flow a row belongs to.
#[derive(Clone, Debug)]
pub struct FlowRef {
    pub flow_id: FlowId,
    pub ip_version: u8,
    pub c_ip: u128,
    pub c_port: u16,
    pub s_ip: u128,
    pub s_port: u16,
    pub fqdn: Option<std::sync::Arc<str>>,
    /// The flow's application-layer events when the row was written.
    pub events: tapstat_l7::Events,
}

impl FlowRef {
    pub fn of(f: &Flow) -> FlowRef {
        FlowRef {
            flow_id: f.flow_id,
            ip_version: f.ip_version,
            c_ip: f.shown_ip(0),
            c_port: f.dir[0].port,
            s_ip: f.shown_ip(1),
            s_port: f.dir[1].port,
            fqdn: f.fqdn.clone(),
            events: f.l7.as_ref().map(|x| x.events()).unwrap_or_default(),
        }
    }
}

/// One HTTP request and its response (either may be missing).
pub struct HttpRow {
    pub flow: FlowRef,
    pub tx: HttpTransaction,
}

/// One DNS query and its response (either may be missing), with the answers as text.
pub struct DnsRow {
    pub flow: FlowRef,
    pub tx: DnsTransaction,
    /// Addresses and CNAMEs of the answers, separated by NUL ([`Value::Strs`]).
    pub answers: String,
    pub min_ttl: Option<u32>,
}

impl DnsRow {
    pub fn new(flow: FlowRef, tx: DnsTransaction) -> DnsRow {
        use std::fmt::Write;
        let mut answers = String::new();
        let mut first = true;
        for a in &tx.answers {
            if matches!(a.data, AnswerData::Other) {
                continue;
            }
            if !first {
                answers.push('\0');
            }
            first = false;
            // Written in place, as `to_string` would spell them.
            match &a.data {
                AnswerData::A(v4) => push_ipv4(&mut answers, v4),
                AnswerData::Aaaa(v6) => {
                    let _ = write!(answers, "{v6}");
                }
                AnswerData::Cname(n) => answers.push_str(n),
                AnswerData::Other => {}
            }
        }
        let min_ttl = tx.answers.iter().map(|a| a.ttl).min();
        DnsRow { flow, tx, answers, min_ttl }
    }
}

/// Dotted decimal, as `Ipv4Addr`'s `Display` writes it, without `core::fmt`.
fn push_ipv4(s: &mut String, a: &std::net::Ipv4Addr) {
    for (i, o) in a.octets().into_iter().enumerate() {
        if i > 0 {
            s.push('.');
        }
        if o >= 100 {
            s.push(char::from(b'0' + o / 100));
        }
        if o >= 10 {
            s.push(char::from(b'0' + o / 10 % 10));
        }
        s.push(char::from(b'0' + o % 10));
    }
}

fn ms(ns: Option<u64>) -> Value<'static> {
    ns.map_or(Value::None, |ns| Value::Micros(ns.saturating_add(500) / 1000))
}

fn opt_str(s: &Option<String>) -> Value<'_> {
    s.as_deref().map_or(Value::None, Value::Str)
}

macro_rules! rcol {
    ($t:ty, $name:expr, $ty:ident, $unit:literal, $meaning:expr, $get:expr) => {
        Column::<$t> {
            field: Field { name: $name, ty: Type::$ty, unit: $unit, meaning: $meaning, group: "l7" },
            get: $get,
        }
    };
}

/// `l7_events`, last in each log: the flow's events when the row was written (a row
/// written at the flow's end has them all; one written as soon as its transaction was
/// complete has those met by then).
macro_rules! events_col {
    ($t:ty) => {
        rcol!($t, "l7_events", Strs, "", crate::logs::L7_EVENTS_MEANING, |r: &$t| crate::logs::l7_events(r.flow.events))
    };
}

macro_rules! flow_cols {
    ($t:ty) => {
        run!($t;
            rcol!($t, "flow_id", Str, "", "the flow's id (as in its TCP/UDP record)", |r: &$t| Value::Token(
                r.flow.flow_id.as_str()
            )),
            rcol!($t, "c_ip", Ip, "", "IP address of the client", |r: &$t| Value::Ip(tapstat_flow::ip_of(
                r.flow.ip_version,
                r.flow.c_ip
            ))),
            rcol!($t, "c_port", U64, "", "port of the client", |r: &$t| Value::U64(r.flow.c_port as u64)),
            rcol!($t, "s_ip", Ip, "", "IP address of the server", |r: &$t| Value::Ip(tapstat_flow::ip_of(
                r.flow.ip_version,
                r.flow.s_ip
            ))),
            rcol!($t, "s_port", U64, "", "port of the server", |r: &$t| Value::U64(r.flow.s_port as u64)),
        )
    };
}

/// `log_http_complete`.
pub static HTTP: LazyLock<Log<HttpRow>> = LazyLock::new(|| {
    let v = vec![
        flow_cols!(HttpRow),
        run!(HttpRow;
            rcol!(HttpRow, "fqdn", Str, "", "the name the client resolved for the server (DN-Hunter)", |r: &HttpRow| r
                .flow
                .fqdn
                .as_deref()
                .map_or(Value::None, Value::Str)),
            rcol!(HttpRow, "req_time", Time, "epoch ms", "time of the request's first packet", |r: &HttpRow| ms(r
                .tx
                .request
                .as_ref()
                .map(|q| q.ts_ns))),
            rcol!(HttpRow, "method", Str, "", "request method", |r: &HttpRow| r
                .tx
                .request
                .as_ref()
                .map_or(Value::None, |q| Value::Str(&q.method))),
            rcol!(HttpRow, "hostname", Str, "", "Host header", |r: &HttpRow| r
                .tx
                .request
                .as_ref()
                .map_or(Value::None, |q| opt_str(&q.host))),
            rcol!(
                HttpRow,
                "path",
                Str,
                "",
                "request target, as `--http-url` allows (full, path only, or none)",
                |r: &HttpRow| r.tx.request.as_ref().map_or(Value::None, |q| opt_str(&q.url))
            ),
            rcol!(HttpRow, "user_agent", Str, "", "User-Agent header", |r: &HttpRow| r
                .tx
                .request
                .as_ref()
                .map_or(Value::None, |q| opt_str(&q.user_agent))),
            rcol!(HttpRow, "referer", Str, "", "Referer header", |r: &HttpRow| r
                .tx
                .request
                .as_ref()
                .map_or(Value::None, |q| opt_str(&q.referer))),
            rcol!(HttpRow, "res_time", Time, "epoch ms", "time of the response's first packet", |r: &HttpRow| ms(r
                .tx
                .response
                .as_ref()
                .map(|s| s.ts_ns))),
            rcol!(HttpRow, "response", U64, "", "response status code", |r: &HttpRow| r
                .tx
                .response
                .as_ref()
                .map_or(Value::None, |s| Value::U64(s.status as u64))),
            rcol!(HttpRow, "content_type", Str, "", "Content-Type of the response", |r: &HttpRow| r
                .tx
                .response
                .as_ref()
                .map_or(Value::None, |s| opt_str(&s.content_type))),
            rcol!(HttpRow, "content_len", U64, "bytes", "Content-Length of the response", |r: &HttpRow| r
                .tx
                .response
                .as_ref()
                .and_then(|s| s.content_length)
                .map_or(Value::None, Value::U64)),
            rcol!(HttpRow, "server", Str, "", "Server header of the response", |r: &HttpRow| r
                .tx
                .response
                .as_ref()
                .map_or(Value::None, |s| opt_str(&s.server))),
            events_col!(HttpRow),
        ),
    ];
    Log::from_runs("log_http_complete", "One row per HTTP/1.x request and its final response (interim 1xx responses make no row), in the order they complete; a request whose response was not captured, or a response whose request was not, has a row of its own. Responses are paired in order (pipelining included) with requests sent before them; the first response after a gap in the server's stream answers the latest such request, the ones before it being unanswered. At most 64 rows per flow (and none past a direction's inspection budget): the flow's http_too_many_transactions (or budget_exhausted) event says rows were left out; http_req_cnt and http_res_cnt count every message. With the application layer on.", v)
});

/// `log_dns_complete`.
pub static DNS: LazyLock<Log<DnsRow>> = LazyLock::new(|| {
    let v = vec![
        flow_cols!(DnsRow),
        run!(DnsRow;
            rcol!(DnsRow, "query_time", Time, "epoch ms", "time of the query", |r: &DnsRow| ms(r.tx.query_ts_ns)),
            rcol!(DnsRow, "response_time", Time, "epoch ms", "time of the response", |r: &DnsRow| ms(r.tx.response_ts_ns)),
            rcol!(DnsRow, "resp_delay", F64, "ms", "response time - query time", |r: &DnsRow| match (
                r.tx.query_ts_ns,
                r.tx.response_ts_ns
            ) {
                (Some(q), Some(s)) => Value::Micros(s.saturating_sub(q).saturating_add(500) / 1000),
                _ => Value::None,
            }),
            rcol!(DnsRow, "trans_id", U64, "", "DNS transaction id", |r: &DnsRow| Value::U64(r.tx.id as u64)),
            rcol!(DnsRow, "query", Str, "", "query name", |r: &DnsRow| Value::Str(&r.tx.qname)),
            rcol!(DnsRow, "type", U64, "", "query type (1 A, 28 AAAA, 5 CNAME, 65 HTTPS...)", |r: &DnsRow| Value::U64(
                r.tx.qtype as u64
            )),
            rcol!(
                DnsRow,
                "rcode",
                U64,
                "",
                "response code (0 NOERROR, 2 SERVFAIL, 3 NXDOMAIN...); none without a response",
                |r: &DnsRow| r.tx.rcode.map_or(Value::None, |c| Value::U64(c as u64))
            ),
            rcol!(DnsRow, "ancount", U64, "", "answer records in the response", |r: &DnsRow| Value::U64(
                r.tx.answer_count as u64
            )),
            rcol!(DnsRow, "answers", Strs, "", "addresses and CNAMEs of the answers, in order", |r: &DnsRow| {
                Value::Strs(&r.answers)
            }),
            rcol!(DnsRow, "ttl", U64, "s", "smallest TTL of the answers", |r: &DnsRow| r
                .min_ttl
                .map_or(Value::None, |t| Value::U64(t as u64))),
            events_col!(DnsRow),
        ),
    ];
    Log::from_runs("log_dns_complete", "One row per DNS transaction (query and response paired by id, type and name) over UDP or TCP; with the application layer on.", v)
});

pub fn docs() -> Vec<LogDoc> {
    vec![LogDoc::from(&*HTTP), LogDoc::from(&*DNS)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_spelled_as_display() {
        for x in (0..=255u8).step_by(1) {
            for a in [std::net::Ipv4Addr::new(x, 0, 9, 255), std::net::Ipv4Addr::new(10, x, 100, x.wrapping_mul(7))] {
                let mut s = String::new();
                push_ipv4(&mut s, &a);
                assert_eq!(s, a.to_string());
            }
        }
    }
}
