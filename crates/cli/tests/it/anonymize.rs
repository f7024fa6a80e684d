//! `--anonymize`: Crypto-PAn against a second implementation (yacryptopan, from pip:
//! skipped with the reason printed where python3 or the package is missing, unless
//! TAPSTAT_REQUIRE_PYTHON=1), and end to end on dev captures: no original address
//! anywhere in the output directory, the same mapping in every log, prefixes preserved,
//! and `--anonymize-only` keeping one side of the internal networks clear.

use crate::common::{analyze, corpus, python_has, read_log, ready, tempdir, L7_LOGS, LOGS};
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

/// Columns of free text the peers wrote, in which any address is anonymized.
const FREE_TEXT: &[&str] = &["path", "referer", "user_agent", "tls_subject_cn", "tls_issuer_cn"];

/// Whether `now` is `was` with some of the addresses written in it (tokens of digits,
/// letters, dots and colons, less a trailing dot or colon) replaced by their images, and
/// nothing else changed.
fn only_addresses_changed(was: &str, now: &str, pan: &CryptoPan) -> bool {
    let split = |s: &str| -> Vec<String> {
        s.split(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == ':'))
            .map(|t| t.trim_end_matches(['.', ':']).to_string())
            .collect()
    };
    let (a, b) = (split(was), split(now));
    a.len() == b.len()
        && a.iter().zip(&b).all(|(x, y)| x == y || x.parse::<IpAddr>().is_ok_and(|ip| pan.ip(ip).to_string() == *y))
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
                    // Names the peers chose change only where they are addresses.
                    if NAMES.contains(&c.as_str()) && rp[c] != ra[c] {
                        let (was, now) = (host_addr(&rp[c]), host_addr(&ra[c]));
                        assert!(
                            was.is_some() && now == was.map(|a| pan.ip(a)),
                            "{name} {log} {c}: {} -> {}",
                            rp[c],
                            ra[c]
                        );
                        continue;
                    }
                    if FREE_TEXT.contains(&c.as_str()) {
                        assert!(
                            only_addresses_changed(&rp[c], &ra[c], &pan),
                            "{name} {log} {c}: {} -> {}",
                            rp[c],
                            ra[c]
                        );
                        free_changed += usize::from(rp[c] != ra[c]);
                        continue;
                    }
                    assert_eq!(rp[c], ra[c], "{name} {log} {c}: only addresses change");
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
