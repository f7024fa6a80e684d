//! Encapsulations and capture properties found missing against tshark:
//! each capture is written here, tapstat must find the flow inside, and where tshark is
//! installed its two-pass reading (`tshark -2`) must find the same one.

use crate::common::*;
use tapstat_testkit::frames::*;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The flow every capture carries inside: a SYN 10.0.0.1:33000 → 10.0.0.2:22.
fn inner_syn() -> Vec<u8> {
    Ipv4::between([10, 0, 0, 1], [10, 0, 0, 2], 6).build(&Tcp::segment(33000, 22, 1000, 0, 0x02).build(&[]))
}

fn outer_v4(proto: u8, payload: &[u8]) -> Vec<u8> {
    Eth::plain().build(0x0800, &Ipv4::between([192, 0, 2, 1], [198, 51, 100, 2], proto).build(payload))
}

fn snap(payload: &[u8]) -> Vec<u8> {
    [&[0xaa, 0xaa, 0x03, 0, 0, 0, 0x08, 0x00][..], payload].concat()
}

/// The captures: name, link type, frame, tunnel tapstat should name.
fn captures() -> Vec<(&'static str, u32, Vec<u8>, &'static str)> {
    // Aruba: GRE protocol 0x8210, key 3, a QoS data frame to the DS, LLC/SNAP, IPv4
    let mut wlan = vec![0x88, 0x01];
    wlan.resize(26, 0x11);
    wlan.extend(snap(&inner_syn()));
    let mut gre = vec![0x20, 0x00, 0x82, 0x10, 0, 0, 0, 3];
    gre.extend(wlan);
    // VXLAN-GPE: P flag, next protocol IPv4, VNI 7
    let gpe = [&[0x0c, 0, 0, 1, 0, 0, 7, 0][..], &inner_syn()].concat();
    // Geneve from its port: an answer of the endpoint
    let geneve = [&[0, 0, 0x08, 0x00, 0, 0, 12, 0][..], &inner_syn()].concat();
    // VN-Tag then an 802.1Q tag
    let vntag = [&[0x80, 0x01, 0x00, 0x02, 0x81, 0x00, 0x00, 0x05, 0x08, 0x00][..], &inner_syn()].concat();
    // FDDI: async LLC frame control, addresses, LLC/SNAP
    let fddi = [&[0x50][..], &[0x22; 12], &snap(&inner_syn())].concat();
    vec![
        ("aruba", 1, outer_v4(47, &gre), "gre"),
        ("vxlan-gpe", 1, outer_v4(17, &udp(50000, 4790, &gpe)), "vxlan-gpe"),
        ("geneve-answer", 1, outer_v4(17, &udp(6081, 50000, &geneve)), "geneve"),
        ("vntag", 1, Eth::plain().build(0x8926, &vntag), "-"),
        ("fddi", 10, fddi, "-"),
    ]
}

/// tshark's innermost TCP endpoints of each frame (`tshark -2`).
fn tshark_tcp(cap: &Path) -> Vec<String> {
    let out = Command::new("tshark")
        .arg("-2")
        .arg("-r")
        .arg(cap)
        .args(["-T", "fields", "-e", "ip.src", "-e", "tcp.srcport", "-e", "ip.dst", "-e", "tcp.dstport"])
        .output()
        .expect("tshark runs");
    let last = |s: &str| s.rsplit(',').next().unwrap_or("").to_string();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split('\t').map(last).collect::<Vec<_>>().join(" "))
        .collect()
}

fn run(dir: &Path, name: &str, link: u32, frames: &[(u32, Vec<u8>)]) -> (PathBuf, PathBuf) {
    let cap = dir.join(format!("{name}.pcap"));
    write_pcap(&cap, link, frames);
    let out = dir.join(name);
    analyze(&cap, &out, 1, &[]);
    (cap, out)
}

#[test]
fn encapsulations_tshark_decodes_are_decoded() {
    let dir = tempdir("encaps");
    let tshark = tshark_ready();
    for (name, link, frame, tunnel) in captures() {
        let (cap, out) = run(&dir, name, link, &[(1000, frame)]);
        let recs = read_log(&out, "log_tcp_nocomplete");
        assert_eq!(recs.len(), 1, "{name}: {recs:?} {}", summary(&out));
        let r = &recs[0];
        let got = format!("{} {} {} {}", r["c_ip"], r["c_port"], r["s_ip"], r["s_port"]);
        assert_eq!(got, "10.0.0.1 33000 10.0.0.2 22", "{name}");
        assert_eq!(r["tunnel"], tunnel, "{name}");
        assert!(read_log(&out, "log_other").is_empty() && read_log(&out, "log_udp_complete").is_empty(), "{name}");
        if tshark {
            assert_eq!(tshark_tcp(&cap), vec![got], "{name}: tshark");
        }
    }
}

#[test]
fn an_unsupported_link_type_is_a_warning() {
    let dir = tempdir("linkwarn");
    // LINKTYPE_USER0: nothing tapstat decodes
    let cap = dir.join("user0.pcap");
    write_pcap(&cap, 147, &[(1000, inner_syn()), (1001, inner_syn())]);
    let out = dir.join("out");
    let o = tapstat(&["-r", cap.to_str().unwrap(), "-o", out.to_str().unwrap(), "-q"]);
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("warning") && err.contains("link type"), "{err}");
    let s = summary(&out);
    assert_eq!(s["anomalies"]["link_unsupported"], 2);
    assert!(s["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("2 frame(s)")), "{s}");
}

#[test]
fn first_packet_s_is_the_earliest_packet_not_the_first_in_the_file() {
    let dir = tempdir("firstts");
    let f = outer_v4(17, &udp(5000, 53, b"q"));
    let (_, out) = run(&dir, "order", 1, &[(2000, f.clone()), (1000, f.clone()), (3000, f)]);
    let s = summary(&out);
    assert_eq!((s["first_packet_s"].as_f64(), s["last_packet_s"].as_f64()), (Some(1000.0), Some(3000.0)));
}

#[test]
fn udp_ports_zero_are_a_udp_flow() {
    let dir = tempdir("udp00");
    let (cap, out) = run(&dir, "udp00", 1, &[(1000, outer_v4(17, &udp(0, 0, b"zero")))]);
    let recs = read_log(&out, "log_udp_complete");
    assert_eq!(recs.len(), 1, "{recs:?}");
    assert_eq!((recs[0]["c_port"].as_str(), recs[0]["s_port"].as_str()), ("0", "0"));
    assert!(read_log(&out, "log_other").is_empty());
    if tshark_ready() {
        let o =
            Command::new("tshark").arg("-r").arg(&cap).args(["-T", "fields", "-e", "udp.srcport"]).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "0");
    }
}
