//! `--anonymize`: Crypto-PAn against a second implementation (yacryptopan, from pip:
//! skipped with the reason printed where python3 or the package is missing, unless
//! TAPSTAT_REQUIRE_PYTHON=1), and end to end on dev captures: no original address
//! anywhere in the output directory, the same mapping in every log, prefixes preserved,
//! and `--anonymize-only` keeping one side of the internal networks clear.

use crate::common::{analyze, corpus, dev_captures, python_has, read_log, ready, tempdir, L7_LOGS, LOGS};
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::path::Path;
use std::process::Command;
use tapstat_analyze::anon::CryptoPan;

/// A key of 32 bytes, not the sample's.
fn key_of(seed: u8) -> [u8; 32] {
    std::array::from_fn(|i| (i as u8).wrapping_mul(37).wrapping_add(seed))
}

fn yacryptopan_ready() -> bool {
    ready(
        python_has("yacryptopan"),
        "TAPSTAT_REQUIRE_PYTHON",
        "python3 with yacryptopan is missing (pip install yacryptopan)",
    )
}

/// xorshift64: random addresses without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn crypto_pan_agrees_with_yacryptopan() {
    if !yacryptopan_ready() {
        return;
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut addrs: Vec<IpAddr> = Vec::new();
    for _ in 0..300 {
        addrs.push(IpAddr::V4((rng.next() as u32).into()));
        addrs.push(IpAddr::V6((((rng.next() as u128) << 64) | rng.next() as u128).into()));
    }
    // Edges: all zeros, all ones, shared prefixes.
    for a in [
        "0.0.0.0",
        "255.255.255.255",
        "10.0.0.1",
        "10.0.0.2",
        "::",
        "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
        "2001:db8::1",
        "2001:db8::2",
        "::ffff:10.0.0.1",
    ] {
        addrs.push(a.parse().unwrap());
    }
    for key in [key_of(1), key_of(200)] {
        let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
        let list: Vec<String> = addrs.iter().map(|a| a.to_string()).collect();
        let script = "import sys\nfrom yacryptopan import CryptoPAn\nc = CryptoPAn(bytes.fromhex(sys.argv[1]))\nfor a in sys.stdin.read().split():\n    print(c.anonymize(a))\n";
        let mut child = Command::new("python3")
            .args(["-c", script, &hex])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs");
        use std::io::Write;
        child.stdin.take().unwrap().write_all(list.join("\n").as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "yacryptopan failed: {}", String::from_utf8_lossy(&out.stderr));
        let theirs: Vec<IpAddr> =
            String::from_utf8(out.stdout).unwrap().lines().map(|l| l.parse().expect("an address")).collect();
        assert_eq!(theirs.len(), addrs.len());
        let pan = CryptoPan::new(&key);
        for (a, t) in addrs.iter().zip(&theirs) {
            assert_eq!(pan.ip(*a), *t, "{a} with key {hex}");
        }
    }
}

/// Every address of a run's output: the address columns of every log, the DNS answers,
/// and HTTP hosts written as addresses.
fn addresses(dir: &Path) -> BTreeSet<IpAddr> {
    let mut set = BTreeSet::new();
    for log in LOGS.iter().chain(L7_LOGS.iter()) {
        for r in read_log(dir, log) {
            for c in ["c_ip", "s_ip"] {
                if let Some(a) = r.get(c).and_then(|v| v.parse().ok()) {
                    set.insert(a);
                }
            }
            if let Some(ans) = r.get("answers") {
                let items = tapstat_record::tsv::list_items(ans).unwrap_or_default();
                set.extend(items.iter().filter_map(|x| x.parse::<IpAddr>().ok()));
            }
            for c in NAMES {
                set.extend(r.get(*c).and_then(|h| host_addr(h)));
            }
        }
    }
    set
}

/// The tokens of every file of `dir` that read as an address.
fn address_tokens(dir: &Path) -> BTreeMap<IpAddr, String> {
    let mut found = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
        for t in text.split(|c: char| !(c.is_ascii_hexdigit() || c == '.' || c == ':')) {
            for cand in [t, t.trim_matches(['.', ':'])] {
                if let Ok(a) = cand.parse::<IpAddr>() {
                    found.entry(a).or_insert_with(|| p.file_name().unwrap().to_string_lossy().into_owned());
                }
            }
        }
    }
    found
}

/// Columns of names the peers chose (hosts, SNIs), which may be addresses.
const NAMES: &[&str] = &["hostname", "http_hostname", "c_tls_SNI", "quic_SNI", "dtls_SNI"];

/// Whether `now` is `was` with some of the addresses written in it (tokens of digits,
/// letters, dots and colons, less a trailing dot or colon) replaced by their images, and
/// nothing else changed: a token that is an address becomes its image; one that holds
/// a dotted quad (`h-192.0.2.1.example`, `x192.0.2.1`, a reverse name) changes in its
/// numbers only.
fn only_addresses_changed(was: &str, now: &str, pan: &CryptoPan) -> bool {
    let split = |s: &str| -> Vec<String> {
        s.split(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == ':'))
            .map(|t| t.trim_end_matches(['.', ':']).to_string())
            .collect()
    };
    // Each run of digits as `#`.
    let skeleton = |s: &str| -> String {
        let mut out = String::new();
        for c in s.chars() {
            if !c.is_ascii_digit() {
                out.push(c);
            } else if !out.ends_with('#') {
                out.push('#');
            }
        }
        out
    };
    let holds_quad = |s: &str| {
        s.split(|c: char| !(c.is_ascii_digit() || c == '.'))
            .any(|t| t.split('.').filter(|n| !n.is_empty() && n.len() <= 3).count() >= 4)
    };
    let (a, b) = (split(was), split(now));
    a.len() == b.len()
        && a.iter().zip(&b).all(|(x, y)| {
            x == y
                || x.parse::<IpAddr>().is_ok_and(|ip| pan.ip(ip).to_string() == *y)
                || (holds_quad(x) && skeleton(x) == skeleton(y))
        })
}

/// The address a host is written as (`a.b.c.d`, `a.b.c.d:port`, `[v6]:port`, `v6`).
fn host_addr(h: &str) -> Option<IpAddr> {
    if let Ok(a) = h.parse() {
        return Some(a);
    }
    if let Some(r) = h.strip_prefix('[') {
        return r.split_once(']')?.0.parse().ok();
    }
    h.rsplit_once(':')?.0.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4)
}

fn common_prefix(a: IpAddr, b: IpAddr) -> Option<u32> {
    match (a, b) {
        (IpAddr::V4(a), IpAddr::V4(b)) => Some((u32::from(a) ^ u32::from(b)).leading_zeros()),
        (IpAddr::V6(a), IpAddr::V6(b)) => Some((u128::from(a) ^ u128::from(b)).leading_zeros()),
        _ => None,
    }
}

/// Captures with IPv4 and IPv6, DNS answers, HTTP requests to hosts written as
/// addresses (1kxun: `Host: 42.120.51.152:8080`), a tunnel.
const CAPTURES: &[&str] =
    &["ndpi__1kxun.pcap", "ndpi__6in4tunnel.pcap", "ndpi__netflix.pcap", "ndpi__http_ipv6.pcap", "ndpi__dns.pcap"];

#[test]
fn anonymized_output_holds_no_original_address_and_keeps_prefixes() {
    let Some(corpus) = corpus() else { return };
    let key = key_of(9);
    let work = tempdir("anonymize-e2e");
    let keyfile = work.join("key");
    std::fs::write(&keyfile, key).unwrap();
    let pan = CryptoPan::new(&key);
    for name in CAPTURES {
        let cap = corpus.join(name);
        let (plain, anon) = (work.join(format!("{name}.plain")), work.join(format!("{name}.anon")));
        analyze(&cap, &plain, 1, &["--periodic", "1", "--community-id"]);
        analyze(&cap, &anon, 1, &["--periodic", "1", "--community-id", "--anonymize", keyfile.to_str().unwrap()]);
        let originals = addresses(&plain);
        assert!(originals.len() > 3, "{name}: too few addresses to check ({})", originals.len());
        // No original address anywhere (a token that happens to be the image of another
        // address is allowed: it is checked to be one).
        let images: BTreeSet<IpAddr> = originals.iter().map(|a| pan.ip(*a)).collect();
        for (a, file) in address_tokens(&anon) {
            assert!(!originals.contains(&a) || images.contains(&a), "{name}: {a} in {file} of the anonymized output");
        }
        // Row by row, every log: the same records, the addresses their images.
        let mut free_changed = 0;
        for log in LOGS.iter().chain(L7_LOGS.iter()).chain(["log_tcp_periodic", "log_udp_periodic"].iter()) {
            let (p, a) = (read_log(&plain, log), read_log(&anon, log));
            assert_eq!(p.len(), a.len(), "{name} {log}: records");
            for (rp, ra) in p.iter().zip(&a) {
                for c in ["c_ip", "s_ip"] {
                    let Some(v) = rp.get(c) else { continue };
                    let want = pan.ip(v.parse().unwrap());
                    assert_eq!(ra[c], want.to_string(), "{name} {log} {c}");
                }
                if let Some(i) = rp.get("c_iscrypto") {
                    assert_eq!((i.as_str(), ra["c_iscrypto"].as_str(), ra["s_iscrypto"].as_str()), ("0", "1", "1"));
                }
                // The Community ID hashes the addresses the record shows: that of the real
                // ones would let anyone test a guess of them.
                if let Some(id) = rp.get("community_id") {
                    assert_ne!(id, &ra["community_id"], "{name} {log}: community_id of the real addresses");
                }
                for c in rp.keys().filter(|c| {
                    !["c_ip", "s_ip", "flow_id", "answers", "c_iscrypto", "s_iscrypto", "community_id"]
                        .contains(&c.as_str())
                }) {
                    // Any text changes only where it holds addresses.
                    assert!(only_addresses_changed(&rp[c], &ra[c], &pan), "{name} {log} {c}: {} -> {}", rp[c], ra[c]);
                    free_changed += usize::from(rp[c] != ra[c]);
                }
            }
        }
        // 1kxun's requests write addresses in their queries (and a version spelled as
        // one, `_v=2.8.2.1`, hidden as well).
        if *name == "ndpi__1kxun.pcap" {
            assert!(free_changed > 0, "{name}: no address in free text was anonymized");
        }
        // Prefixes: any two addresses share as many leading bits after as before.
        let v: Vec<IpAddr> = originals.iter().copied().collect();
        for (i, &x) in v.iter().enumerate() {
            for &y in &v[i + 1..] {
                if let Some(k) = common_prefix(x, y) {
                    assert_eq!(common_prefix(pan.ip(x), pan.ip(y)), Some(k), "{name}: {x} {y}");
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn anonymize_only_keeps_the_other_side_clear() {
    let Some(corpus) = corpus() else { return };
    let key = key_of(3);
    let work = tempdir("anonymize-only");
    let keyfile = work.join("key");
    std::fs::write(&keyfile, key).unwrap();
    let pan = CryptoPan::new(&key);
    let cap = corpus.join("ndpi__1kxun.pcap");
    let plain = work.join("plain");
    analyze(&cap, &plain, 1, &[]);
    for only in ["internal", "external"] {
        let out = work.join(only);
        analyze(
            &cap,
            &out,
            1,
            &["--internal", "192.168.0.0/16", "--anonymize", keyfile.to_str().unwrap(), "--anonymize-only", only],
        );
        let mut seen = [0usize; 2];
        for log in ["log_tcp_complete", "log_tcp_nocomplete", "log_udp_complete"] {
            for (rp, ra) in read_log(&plain, log).iter().zip(read_log(&out, log)) {
                for p in ["c", "s"] {
                    let orig: IpAddr = rp[&format!("{p}_ip")].parse().unwrap();
                    let internal = matches!(orig, IpAddr::V4(a) if a.octets()[..2] == [192, 168]);
                    assert_eq!(ra[&format!("{p}_isint")], (internal as u8).to_string());
                    let crypto = internal == (only == "internal");
                    seen[crypto as usize] += 1;
                    assert_eq!(ra[&format!("{p}_iscrypto")], (crypto as u8).to_string(), "{only} {orig}");
                    let want = if crypto { pan.ip(orig) } else { orig };
                    assert_eq!(ra[&format!("{p}_ip")], want.to_string(), "{only} {orig}");
                }
            }
        }
        assert!(seen[0] > 10 && seen[1] > 10, "{only}: both kinds of address met: {seen:?}");
    }
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn bad_key_files_are_refused_in_one_line() {
    let work = tempdir("anonymize-badkey");
    let keyfile = work.join("key");
    std::fs::write(&keyfile, [1u8; 16]).unwrap();
    let o = crate::common::tapstat(&[
        "-r",
        "/dev/null",
        "-o",
        work.join("o").to_str().unwrap(),
        "--anonymize",
        keyfile.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("exactly 32 bytes"), "{err}");
    // Longer: refused by its size, not read.
    std::fs::write(&keyfile, [1u8; 33]).unwrap();
    let o = crate::common::tapstat(&[
        "-r",
        "/dev/null",
        "-o",
        work.join("o").to_str().unwrap(),
        "--anonymize",
        keyfile.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("exactly 32 bytes") && err.contains("this one 33"), "{err}");
    let o = crate::common::tapstat(&[
        "-r",
        "/dev/null",
        "-o",
        work.join("o").to_str().unwrap(),
        "--anonymize-only",
        "internal",
    ]);
    assert!(!o.status.success(), "--anonymize-only needs --anonymize");
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn a_device_as_key_file_is_refused_at_once() {
    let work = tempdir("anonymize-devzero");
    let o = crate::common::tapstat_within(
        &["-r", "/dev/null", "-o", work.join("o").to_str().unwrap(), "--anonymize", "/dev/zero"],
        10,
    );
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.len() < 1024 && err.contains("--anonymize /dev/zero") && err.contains("not a regular file"), "{err}");
}

/// The first address of `addrs` that `value` spells (see [`spelled`]), its escapes read
/// (`\\` and `\.` of the logs and of DNS labels, `%2E` and `%3A`).
fn spelled_in(value: &str, addrs: &BTreeSet<IpAddr>) -> Option<IpAddr> {
    let v =
        value.replace("\\\\", "\\").replace("\\.", ".").to_ascii_lowercase().replace("%2e", ".").replace("%3a", ":");
    spelled(&v).into_iter().find(|a| addrs.contains(a))
}

/// The addresses text spells as a reader would see them: the last four numbers of each
/// run of dotted numbers (an IPv4 address, and its reverse before `.in-addr.arpa`);
/// each run of hex digits and colons that is an IPv6 address in any spelling
/// (compressed, every group, every digit); the 32 nibbles before `ip6.arpa`.
fn spelled(v: &str) -> Vec<IpAddr> {
    use std::net::{Ipv4Addr, Ipv6Addr};
    let b = v.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_digit() || (i > 0 && b[i - 1].is_ascii_digit()) {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < b.len() && (b[j].is_ascii_digit() || (b[j] == b'.' && b.get(j + 1).is_some_and(u8::is_ascii_digit))) {
            j += 1;
        }
        let nums: Vec<&str> = v[i..j].split('.').collect();
        if nums.len() >= 4 {
            let last = &nums[nums.len() - 4..];
            out.extend(last.join(".").parse::<Ipv4Addr>().ok().map(IpAddr::V4));
            if b[j..].starts_with(b".in-addr.arpa") {
                let rev: Vec<&str> = last.iter().rev().copied().collect();
                out.extend(rev.join(".").parse::<Ipv4Addr>().ok().map(IpAddr::V4));
            }
        }
        i = j;
    }
    for run in v.split(|c: char| !(c.is_ascii_hexdigit() || c == ':')) {
        if run.matches(':').count() >= 2 {
            out.extend(run.parse::<Ipv6Addr>().ok().map(IpAddr::V6));
        }
    }
    for (p, _) in v.match_indices("ip6.arpa") {
        let Some(nib) = p.checked_sub(64).map(|s| &b[s..p]) else { continue };
        if nib.chunks(2).all(|c| c[0].is_ascii_hexdigit() && c[1] == b'.') {
            let x =
                nib.iter().step_by(2).rev().fold(0u128, |x, &c| x << 4 | (c as char).to_digit(16).unwrap_or(0) as u128);
            out.push(IpAddr::V6(x.into()));
        }
    }
    out
}

/// Every (file, column, value) of an output directory: the columns of the TSV logs,
/// the keys of the JSON lines (each item of a list), any other file whole.
fn output_values(dir: &Path) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    for p in files {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
        if name.ends_with(".jsonl") {
            for line in text.lines() {
                let obj: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
                for (k, v) in obj.as_object().expect("an object") {
                    let items = match v {
                        serde_json::Value::Array(a) => a.clone(),
                        v => vec![v.clone()],
                    };
                    for v in items {
                        let v = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                        out.push((name.clone(), k.clone(), v));
                    }
                }
            }
        } else if name.starts_with("log_") {
            let mut lines = text.lines();
            let cols: Vec<&str> = lines.next().unwrap_or_default().split('\t').collect();
            for l in lines {
                for (c, v) in cols.iter().zip(l.split('\t')) {
                    out.push((name.clone(), c.to_string(), v.to_string()));
                }
            }
        } else {
            out.push((name, "(whole file)".into(), text));
        }
    }
    out
}

/// Each (file, column, value) of `dir` that spells an address of `addrs`.
fn leaks_in(dir: &Path, addrs: &BTreeSet<IpAddr>) -> Vec<String> {
    output_values(dir)
        .into_iter()
        .filter_map(|(f, c, v)| spelled_in(&v, addrs).map(|a| format!("{a} in {f} {c}: {v:?}")))
        .collect()
}

/// The datagrams an IPFIX collector on `sock` received, as text (their strings are the
/// names the records carry).
fn ipfix_text(sock: &std::net::UdpSocket) -> String {
    sock.set_read_timeout(Some(std::time::Duration::from_millis(500))).unwrap();
    let mut buf = vec![0u8; 65536];
    let mut text = String::new();
    while let Ok(n) = sock.recv(&mut buf) {
        text.push_str(&String::from_utf8_lossy(&buf[..n]));
        text.push('\n');
    }
    text
}

/// A capture whose peers write addresses into every text a record shows: the SNI and
/// ALPN of a TLS 1.2 ClientHello and the ALPN of its ServerHello, a certificate whose
/// subject is `CN=<the server's address>` with addresses in its issuer and SANs, SSH
/// banners, an HTTP request's target, Host, User-Agent and Referer and its response's
/// Server and Content-Type, a Host that is a name holding an address, DNS names holding
/// addresses (one in a single label with dots, a reverse name, a network's reverse
/// prefix, a CNAME) and their answers, a flow named by such an answer (`fqdn`), a Google
/// QUIC hello's SNI and user agent, HTTP over IPv6 to a bracketed Host. Returns the
/// pcap and every address of the input.
fn leaky_capture() -> (Vec<u8>, BTreeSet<IpAddr>) {
    use crate::golden::{eth_ip, ether, udp_pair, Cap, Conn, Ip, ACK, PSH_ACK};
    use tapstat_testkit::frames::*;
    let (c, s) = (Ip::V4([192, 0, 2, 10]), Ip::V4([198, 51, 100, 20]));
    let v6 = |x: u16, last: u8| Ip::V6([0x20, 0x01, 0x0d, 0xb8, 0, x as u8, 0, 0, 0, 0, 0, 0, 0, 0, 0, last]);
    let (c6, s6) = (v6(0, 0x10), v6(0, 0x20));
    let mut cap = Cap::new();
    // TLS 1.2, the certificate in clear.
    let cert = x509_certificate(
        &[(OID_O, "Device"), (OID_CN, "198.51.100.20")],
        &[(OID_O, "CA at 2001:db8:1::99"), (OID_CN, "203.0.113.9")],
        &["203.0.113.10.nip.io", "2001:db8:1::a", "gw.example"],
        &["198.51.100.20".parse().unwrap()],
    );
    let mut k = Conn::new(c, s, 40_001, 443);
    k.open(&mut cap);
    k.exchange(
        &mut cap,
        &tls_client_hello("host-203.0.113.7.example", &["203.0.113.8", "h2"]),
        &tls12_server_flight(Some("203.0.113.8"), &[&cert]),
    );
    k.close(&mut cap);
    // SSH banners.
    let mut k = Conn::new(c, s, 40_002, 22);
    k.open(&mut cap);
    cap.push(5_000, k.s(PSH_ACK, b"SSH-2.0-dropbear_2022.83 [2001:db8::20]:22\r\n"));
    cap.push(200, k.c(PSH_ACK, b"SSH-2.0-OpenSSH_9.6 from 192.0.2.10\r\n"));
    cap.push(200, k.s(ACK, &[]));
    k.close(&mut cap);
    // HTTP: a request to an address, its response; a Host that is a name holding one.
    let mut k = Conn::new(c, s, 40_003, 8080);
    k.open(&mut cap);
    k.exchange(
        &mut cap,
        b"GET http://198.51.100.20:8080/p?ip=203.0.113.11&u=http%3A%2F%2F203.0.113.12%2F HTTP/1.1\r\nHost: 198.51.100.20:8080\r\nUser-Agent: curl/8.5.0 (x192.0.2.10y)\r\nReferer: http://[2001:db8:1::30]/x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nServer: nginx/1.25 on 198.51.100.20\r\nContent-Type: text/plain; origin=203.0.113.13\r\nContent-Length: 0\r\n\r\n",
    );
    k.close(&mut cap);
    let mut k = Conn::new(c, s, 40_004, 80);
    k.open(&mut cap);
    k.exchange(&mut cap, b"GET / HTTP/1.1\r\nHost: h-203.0.113.14.example\r\n\r\n", b"HTTP/1.1 204 No Content\r\n\r\n");
    k.close(&mut cap);
    // DNS.
    let r = Ip::V4([198, 51, 100, 53]);
    let mut dns = |port: u16, q: Vec<u8>, a: Vec<u8>| udp_pair(&mut cap, &eth_ip, (c, port), (r, 53), &q, &a);
    dns(
        41_001,
        dns_question(1, "203.0.113.15.nip.io", 1),
        dns_reply(1, "203.0.113.15.nip.io", 1, 0, &[&[203, 0, 113, 16]]),
    );
    dns(
        41_002,
        dns_question(2, "21.113.0.203.in-addr.arpa", 12),
        dns_reply(2, "21.113.0.203.in-addr.arpa", 12, 3, &[]),
    );
    let nib: String = "2001:db8:1::21"
        .parse::<std::net::Ipv6Addr>()
        .map(|v| format!("{:032x}", u128::from(v)).chars().rev().map(|c| format!("{c}.")).collect())
        .unwrap();
    let ptr6 = format!("{nib}ip6.arpa");
    dns(41_003, dns_question(3, &ptr6, 12), dns_reply(3, &ptr6, 12, 3, &[]));
    let dotted = dns_question_labels(4, &[b"203.0.113.17", b"example"], 1);
    let mut dotted_reply = dotted.clone();
    dotted_reply[2..4].copy_from_slice(&[0x81, 0x83]);
    dns(41_004, dotted, dotted_reply);
    let browse = "b._dns-sd._udp.0.113.0.203.in-addr.arpa";
    dns(41_005, dns_question(5, browse, 12), dns_reply(5, browse, 12, 3, &[]));
    let edge = dns_name_bytes("edge.203.0.113.18.example");
    dns(41_006, dns_question(6, "cdn.example", 5), dns_reply(6, "cdn.example", 5, 0, &[&edge]));
    let aaaa = "2001:db8:1::40".parse::<std::net::Ipv6Addr>().unwrap().octets();
    dns(41_007, dns_question(7, "v6.example", 28), dns_reply(7, "v6.example", 28, 0, &[&aaaa]));
    // A flow to the address the first answer gave: its fqdn holds an address.
    let mut k = Conn::new(c, Ip::V4([203, 0, 113, 16]), 40_005, 443);
    k.open(&mut cap);
    k.close(&mut cap);
    // Google QUIC's hello, in clear.
    udp_pair(
        &mut cap,
        &eth_ip,
        (c, 40_006),
        (s, 443),
        &gquic_chlo("quic-203.0.113.19.example", "Chrome/120 198.51.100.20"),
        &[0x40; 60],
    );
    // HTTP over IPv6.
    let mut k = Conn::new(c6, s6, 40_007, 80);
    k.open(&mut cap);
    k.exchange(&mut cap, b"GET / HTTP/1.1\r\nHost: [2001:db8::20]:80\r\n\r\n", b"HTTP/1.1 204 No Content\r\n\r\n");
    k.close(&mut cap);
    let _ = ether;
    let records: Vec<Record> = cap.frames.iter().map(|(us, f)| (us * 1000, f.clone(), f.len() as u32)).collect();
    let addrs = [
        "192.0.2.10",
        "198.51.100.20",
        "198.51.100.53",
        "2001:db8::10",
        "2001:db8::20",
        "203.0.113.0",
        "203.0.113.7",
        "203.0.113.8",
        "203.0.113.9",
        "203.0.113.10",
        "203.0.113.11",
        "203.0.113.12",
        "203.0.113.13",
        "203.0.113.14",
        "203.0.113.15",
        "203.0.113.16",
        "203.0.113.17",
        "203.0.113.18",
        "203.0.113.19",
        "203.0.113.21",
        "2001:db8:1::a",
        "2001:db8:1::21",
        "2001:db8:1::30",
        "2001:db8:1::40",
        "2001:db8:1::99",
    ];
    (pcap(PcapFormat::Micro, false, 1, 65535, &records), addrs.iter().map(|a| a.parse().unwrap()).collect())
}

/// The text columns the capture fills, each with an address it must show in a run
/// without `--anonymize` (so that the test checks something in each).
const LEAKY_COLUMNS: &[(&str, &str, &str)] = &[
    ("log_tcp_complete", "c_tls_SNI", "203.0.113.7"),
    ("log_tcp_complete", "c_alpn", "203.0.113.8"),
    ("log_tcp_complete", "s_alpn", "203.0.113.8"),
    ("log_tcp_complete", "tls_subject_cn", "198.51.100.20"),
    ("log_tcp_complete", "tls_issuer_cn", "203.0.113.9"),
    ("log_tcp_complete", "tls_issuer", "2001:db8:1::99"),
    ("log_tcp_complete", "tls_sans", "2001:db8:1::a"),
    ("log_tcp_complete", "ssh_c_version", "192.0.2.10"),
    ("log_tcp_complete", "ssh_s_version", "2001:db8::20"),
    ("log_tcp_complete", "http_hostname", "203.0.113.14"),
    ("log_tcp_complete", "fqdn", "203.0.113.15"),
    ("log_http_complete", "hostname", "198.51.100.20"),
    ("log_http_complete", "path", "203.0.113.12"),
    ("log_http_complete", "user_agent", "192.0.2.10"),
    ("log_http_complete", "referer", "2001:db8:1::30"),
    ("log_http_complete", "server", "198.51.100.20"),
    ("log_http_complete", "content_type", "203.0.113.13"),
    ("log_dns_complete", "query", "203.0.113.17"),
    ("log_dns_complete", "query", "203.0.113.21"),
    ("log_dns_complete", "query", "2001:db8:1::21"),
    ("log_dns_complete", "query", "203.0.113.0"),
    ("log_dns_complete", "answers", "203.0.113.18"),
    ("log_udp_complete", "quic_SNI", "203.0.113.19"),
    ("log_udp_complete", "quic_UA", "198.51.100.20"),
];

#[test]
fn no_address_of_the_input_in_any_column_of_any_output() {
    let work = tempdir("anonymize-columns");
    let (pcap, addrs) = leaky_capture();
    let cap = work.join("leaky.pcap");
    std::fs::write(&cap, pcap).unwrap();
    let keyfile = work.join("key");
    std::fs::write(&keyfile, key_of(5)).unwrap();
    // Without --anonymize: every text column the capture fills shows its address.
    let plain = work.join("plain");
    analyze(&cap, &plain, 1, &[]);
    let values = output_values(&plain);
    for (log, col, addr) in LEAKY_COLUMNS {
        let a: BTreeSet<IpAddr> = [addr.parse().unwrap()].into();
        assert!(
            values.iter().any(|(f, c, v)| f == log && c == col && spelled_in(v, &a).is_some()),
            "the capture puts no {addr} in {log} {col}"
        );
    }
    // Anonymized, TSV and JSON lines, with an IPFIX collector listening: no address of
    // the input anywhere.
    let mut leaks = Vec::new();
    for format in ["tsv", "jsonl"] {
        let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let target = sock.local_addr().unwrap().to_string();
        let out = work.join(format);
        let args = ["--format", format, "--anonymize", keyfile.to_str().unwrap(), "--ipfix", &target];
        analyze(&cap, &out, 1, &args);
        leaks.extend(leaks_in(&out, &addrs).into_iter().map(|l| format!("{format}: {l}")));
        let ipfix = ipfix_text(&sock);
        assert!(ipfix.contains("nip.io"), "{format}: the IPFIX records carry the names");
        if let Some(a) = spelled_in(&ipfix, &addrs) {
            leaks.push(format!("{format}: {a} in an IPFIX record"));
        }
    }
    assert!(leaks.is_empty(), "addresses of the input in the anonymized output:\n{}", leaks.join("\n"));
    // Under --anonymize-only external, an address in text follows the scope as in a
    // column: the internal client's stays clear in its banner, every other goes.
    let out = work.join("external");
    let args = ["--internal", "192.0.2.0/24", "--anonymize", keyfile.to_str().unwrap(), "--anonymize-only", "external"];
    analyze(&cap, &out, 1, &args);
    let client: IpAddr = "192.0.2.10".parse().unwrap();
    let rest: BTreeSet<IpAddr> = addrs.iter().copied().filter(|&a| a != client).collect();
    let leaks = leaks_in(&out, &rest);
    assert!(leaks.is_empty(), "external addresses in clear:\n{}", leaks.join("\n"));
    let values = output_values(&out);
    assert!(
        values.iter().any(|(_, c, v)| c == "ssh_c_version" && v.ends_with("from 192.0.2.10")),
        "internal kept clear"
    );
}

/// Every capture of the corpus, anonymized: no address of its flows or DNS answers (as
/// a run without `--anonymize` shows them) in any column of any log, TSV or JSON lines,
/// nor in any other file of the run (an address that happens to be the image of another
/// is allowed).
#[test]
fn corpus_anonymized_output_spells_no_original_address() {
    let Some(corpus) = corpus() else { return };
    let work = tempdir("anonymize-corpus");
    let keyfile = work.join("key");
    std::fs::write(&keyfile, key_of(11)).unwrap();
    let pan = CryptoPan::new(&key_of(11));
    let (mut leaks, mut checked) = (Vec::new(), 0usize);
    for cap in dev_captures(&corpus) {
        let name = cap.file_name().unwrap().to_string_lossy().into_owned();
        let (plain, anon) = (work.join("plain"), work.join("anon"));
        for d in [&plain, &anon] {
            let _ = std::fs::remove_dir_all(d);
        }
        analyze(&cap, &plain, 1, &[]);
        let originals = addresses(&plain);
        let images: BTreeSet<IpAddr> = originals.iter().map(|a| pan.ip(*a)).collect();
        let search: BTreeSet<IpAddr> = originals.difference(&images).copied().collect();
        checked += search.len();
        analyze(&cap, &anon, 1, &["--anonymize", keyfile.to_str().unwrap(), "--format", "jsonl"]);
        leaks.extend(leaks_in(&anon, &search).into_iter().map(|l| format!("{name}: {l}")));
    }
    println!("{checked} addresses searched for");
    assert!(checked > 1000, "addresses searched for: {checked}");
    assert!(leaks.is_empty(), "original addresses in the anonymized output:\n{}", leaks.join("\n"));
}
