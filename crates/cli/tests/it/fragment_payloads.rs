//! The application layer sees the payload of IP-fragmented datagrams whole, at the
//! fragment that completes them: DNS answers too large for one frame (DNSSEC, EDNS0),
//! over IPv4 in order and out of order and over IPv6, name the flows that follow
//! (DN-Hunter's `fqdn`), and an HTTP request in a fragmented TCP segment is parsed. The
//! same records with 1 and 3 workers (the reassembled bytes travel beside the packet).
//! On the corpus, the DNS responses of `ndpi__dns_fragmented.pcap` agree with tshark's
//! reassembling view (`tshark -2`).

use crate::common::*;
use tapstat_testkit::frames::*;

use std::collections::BTreeMap;
use std::process::Command;

#[derive(Clone, Copy)]
enum Ip {
    V4([u8; 4]),
    V6([u8; 16]),
}

const C4: Ip = Ip::V4([192, 0, 2, 1]);
const R4: Ip = Ip::V4([198, 51, 100, 53]);
const C6: Ip = Ip::V6([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
const R6: Ip = Ip::V6([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x53]);
const WWW: [u8; 4] = [203, 0, 113, 7];
const IMG: [u8; 4] = [203, 0, 113, 8];
const V6: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80];

/// An Ethernet frame holding an IP packet of protocol `proto` from `src` to `dst`.
fn packet(src: Ip, dst: Ip, proto: u8, payload: &[u8]) -> Vec<u8> {
    match (src, dst) {
        (Ip::V4(s), Ip::V4(d)) => Eth::plain().build(0x0800, &Ipv4::between(s, d, proto).build(payload)),
        (Ip::V6(s), Ip::V6(d)) => Eth::plain().build(0x86dd, &Ipv6::between(s, d, proto).build(payload)),
        _ => unreachable!("one version per packet"),
    }
}

/// `dgram` (a UDP datagram or a TCP segment) in fragments cut at `cuts` (multiples of
/// 8), written in `order`.
fn fragments(src: Ip, dst: Ip, proto: u8, id: u16, dgram: &[u8], cuts: &[usize], order: &[usize]) -> Vec<Vec<u8>> {
    let mut bounds = vec![0];
    bounds.extend(cuts);
    bounds.push(dgram.len());
    order
        .iter()
        .map(|&i| {
            let (a, b) = (bounds[i], bounds[i + 1]);
            let more = b < dgram.len();
            match (src, dst) {
                (Ip::V4(s), Ip::V4(d)) => Eth::plain().build(
                    0x0800,
                    &Ipv4 { id, frag_off: a as u16, mf: more, ..Ipv4::between(s, d, proto) }.build(&dgram[a..b]),
                ),
                (Ip::V6(s), Ip::V6(d)) => Eth::plain().build(
                    0x86dd,
                    &Ipv6::between(s, d, 44).build(&cat(&[&frag6(proto, a as u16, more, u32::from(id)), &dgram[a..b]])),
                ),
                _ => unreachable!("one version per packet"),
            }
        })
        .collect()
}

/// A DNS message with id `id` and the question `name` of type `qtype`.
fn dns_query(id: u16, name: &str, qtype: u16) -> Vec<u8> {
    let mut m = Vec::new();
    m.extend(id.to_be_bytes());
    m.extend([0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in name.split('.') {
        m.push(label.len() as u8);
        m.extend(label.as_bytes());
    }
    m.extend([0]);
    m.extend(qtype.to_be_bytes());
    m.extend([0, 1]);
    m
}

/// The response to [`dns_query`]: a 2,900-byte signature record first, then `addr` (A
/// or AAAA), so the address lies in the datagram's last fragments.
fn dns_response(id: u16, name: &str, qtype: u16, addr: &[u8]) -> Vec<u8> {
    let mut m = dns_query(id, name, qtype);
    m[2..4].copy_from_slice(&[0x81, 0x80]);
    m[6..8].copy_from_slice(&[0, 2]);
    // RRSIG (type 46) and the address, both owned by the question's name (pointer 0xc00c)
    m.extend([0xc0, 0x0c, 0, 46, 0, 1, 0, 0, 0, 60]);
    m.extend(2900u16.to_be_bytes());
    m.extend([0x5a; 2900]);
    m.extend([0xc0, 0x0c]);
    m.extend(qtype.to_be_bytes());
    m.extend([0, 1, 0, 0, 0, 60]);
    m.extend((addr.len() as u16).to_be_bytes());
    m.extend(addr);
    m
}

/// An HTTP request of 2,954 bytes.
fn request() -> String {
    format!("GET /big HTTP/1.1\r\nHost: img.example.com\r\nCookie: {}\r\n\r\n", "a".repeat(2900))
}

/// The capture: three lookups whose responses come in fragments (IPv4 in order, IPv4
/// out of order, IPv6), then a connection to each answered address; the one to `IMG`
/// carries an HTTP request in a TCP segment in three fragments, out of order.
fn capture() -> Vec<(u32, Vec<u8>)> {
    let mut fr = Vec::new();
    let mut t = 100u32;
    let mut push = |f: Vec<u8>| {
        t += 1;
        fr.push((t, f));
    };
    // (client, resolver, port, id, name, type, address, order of the fragments)
    let lookups = [
        (C4, R4, 40001, 0x1111, "www.example.com", 1, &WWW[..], [0, 1, 2]),
        (C4, R4, 40002, 0x2222, "img.example.com", 1, &IMG[..], [0, 2, 1]),
        (C6, R6, 40003, 0x3333, "v6.example.com", 28, &V6[..], [0, 1, 2]),
    ];
    for (k, (c, r, port, id, name, qtype, addr, order)) in lookups.into_iter().enumerate() {
        push(packet(c, r, 17, &udp(port, 53, &dns_query(id, name, qtype))));
        let resp = udp(53, port, &dns_response(id, name, qtype, addr));
        let cuts: &[usize] = if matches!(c, Ip::V4(_)) { &[1480, 2960] } else { &[1448, 2896] };
        for f in fragments(r, c, 17, 500 + k as u16, &resp, cuts, &order) {
            push(f);
        }
    }
    let request = request();
    let response = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    for (c, s, cport, sport) in
        [(C4, Ip::V4(WWW), 41001, 443), (C4, Ip::V4(IMG), 41002, 80), (C6, Ip::V6(V6), 41003, 443)]
    {
        let (ci, si) = (1000u32, 5000u32);
        push(packet(c, s, 6, &Tcp::segment(cport, sport, ci, 0, 0x02).build(&[])));
        push(packet(s, c, 6, &Tcp::segment(sport, cport, si, ci + 1, 0x12).build(&[])));
        push(packet(c, s, 6, &Tcp::segment(cport, sport, ci + 1, si + 1, 0x10).build(&[])));
        let (mut cseq, mut sseq) = (ci + 1, si + 1);
        if sport == 80 {
            let seg = Tcp::segment(cport, sport, cseq, sseq, 0x18).build(request.as_bytes());
            for f in fragments(c, s, 6, 700, &seg, &[1480, 2960], &[0, 2, 1]) {
                push(f);
            }
            cseq += request.len() as u32;
            push(packet(s, c, 6, &Tcp::segment(sport, cport, sseq, cseq, 0x18).build(response)));
            sseq += response.len() as u32;
        }
        push(packet(c, s, 6, &Tcp::segment(cport, sport, cseq, sseq, 0x11).build(&[])));
        push(packet(s, c, 6, &Tcp::segment(sport, cport, sseq, cseq + 1, 0x11).build(&[])));
        push(packet(c, s, 6, &Tcp::segment(cport, sport, cseq + 1, sseq + 1, 0x10).build(&[])));
    }
    fr
}

/// The records of `log` by the value of column `key`.
fn by(out: &std::path::Path, log: &str, key: &str) -> BTreeMap<String, BTreeMap<String, String>> {
    read_log(out, log).into_iter().map(|r| (r[key].clone(), r)).collect()
}

#[test]
fn fragmented_dns_answers_and_http_requests_reach_the_application_layer() {
    let dir = tempdir("fragpay");
    let cap = dir.join("fragpay.pcap");
    write_pcap(&cap, 1, &capture());
    let outs: Vec<_> = [1, 3]
        .into_iter()
        .map(|w| {
            let out = dir.join(format!("w{w}"));
            analyze(&cap, &out, w, &[]);
            out
        })
        .collect();
    for log in LOGS.iter().chain(L7_LOGS.iter()) {
        assert_eq!(record_set(&outs[0], log), record_set(&outs[1], log), "{log}: 1 and 3 workers differ");
    }
    for out in &outs {
        // each response is one datagram to the DNS parser, whole
        let dns = by(out, "log_dns_complete", "trans_id");
        assert_eq!(dns.len(), 3, "{dns:#?}");
        for (id, name, addr) in [
            (0x1111, "www.example.com", "203.0.113.7"),
            (0x2222, "img.example.com", "203.0.113.8"),
            (0x3333, "v6.example.com", "2001:db8::80"),
        ] {
            let r = &dns[&id.to_string()];
            assert_eq!((r["query"].as_str(), r["rcode"].as_str(), r["ancount"].as_str()), (name, "0", "2"), "{r:#?}");
            assert_eq!(r["answers"], format!("[{addr}]"), "{r:#?}");
        }
        // the answers name the connections that follow
        let tcp = by(out, "log_tcp_complete", "s_ip");
        assert_eq!(tcp.len(), 3, "{tcp:#?}");
        for (ip, name) in
            [("203.0.113.7", "www.example.com"), ("203.0.113.8", "img.example.com"), ("2001:db8::80", "v6.example.com")]
        {
            assert_eq!(tcp[ip]["fqdn"], name, "{:#?}", tcp[ip]);
        }
        // the request in three fragments, out of order, is parsed
        let img = &tcp["203.0.113.8"];
        assert_eq!((img["app"].as_str(), img["http_hostname"].as_str()), ("http", "img.example.com"));
        // its accounting is that of one segment, as before
        let n = |c: &str| img[c].parse::<usize>().unwrap();
        let len = request().len();
        assert_eq!((n("c_pkts_data"), n("c_bytes_all"), n("c_bytes_uniq")), (1, len, len));
        let http = read_log(out, "log_http_complete");
        assert_eq!(http.len(), 1, "{http:#?}");
        assert_eq!((http[0]["hostname"].as_str(), http[0]["fqdn"].as_str()), ("img.example.com", "img.example.com"));
        assert_eq!((http[0]["method"].as_str(), http[0]["response"].as_str()), ("GET", "200"), "{:#?}", http[0]);
        // nothing given up, no orphan
        assert_eq!(summary(out)["anomalies"], serde_json::json!({}));
    }
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn fragmented_dns_responses_of_the_corpus_agree_with_tshark() {
    let Some(corpus) = corpus() else { return };
    let cap = corpus.join("ndpi__dns_fragmented.pcap");
    if !cap.is_file() || !tshark_ready() {
        return;
    }
    let out = tempdir("fragpay-corpus");
    analyze(&cap, &out, 1, &[]);
    let ours = read_log(&out, "log_dns_complete");
    let o = Command::new("tshark")
        .arg("-2")
        .arg("-r")
        .arg(&cap)
        .args(["-Y", "dns.flags.response == 1", "-T", "fields", "-E", "separator=/t"])
        .args(["-e", "ip.dst", "-e", "ipv6.dst", "-e", "udp.dstport", "-e", "tcp.dstport", "-e", "dns.id"])
        .args(["-e", "dns.flags.rcode", "-e", "dns.count.answers"])
        .output()
        .expect("tshark runs");
    let mut compared = 0;
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        let v: Vec<&str> = line.split('\t').collect();
        let client = if v[0].is_empty() { v[1] } else { v[0] };
        let port = if v[2].is_empty() { v[3] } else { v[2] };
        let id = u16::from_str_radix(v[4].trim_start_matches("0x"), 16).unwrap().to_string();
        let found = ours.iter().any(|r| {
            (r["c_ip"].as_str(), r["c_port"].as_str(), r["trans_id"].as_str()) == (client, port, id.as_str())
                && (r["rcode"].as_str(), r["ancount"].as_str()) == (v[5], v[6])
        });
        assert!(found, "tshark's response {line:?} is not in log_dns_complete: {ours:#?}");
        compared += 1;
    }
    assert!(compared >= 20, "too few responses compared: {compared}");
}
