//! The reader against real captures: the shared corpus (env `TAPSTAT_CORPUS`,
//! default `<workspace>/../shared/pcaps/dev`). Skipped with a message when the
//! corpus is absent, unless `TAPSTAT_REQUIRE_CORPUS=1`.
//!
//! Checks: every capture outside `malformed/` gives exactly MANIFEST's packet
//! count with no warning, as a mapped file and as a stream, and the same frames as
//! the independent `pcap-file` reader; every file in `malformed/` is read without
//! panic (frames, or `NotACapture`); known timestamps; all captures as one stream.
//! `cargo test -p tapstat-capture -- --ignored` also compares with tshark.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use tapstat_capture::{open_files, open_reader, CaptureError, CaptureStats, FrameMeta, LinkType, PacketSource};

fn corpus_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("TAPSTAT_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/pcaps/dev"));
    if dir.join("MANIFEST.tsv").is_file() {
        return Some(dir);
    }
    let msg = format!("corpus not found at {} (set TAPSTAT_CORPUS)", dir.display());
    if std::env::var("TAPSTAT_REQUIRE_CORPUS").as_deref() == Ok("1") {
        panic!("{msg}, and TAPSTAT_REQUIRE_CORPUS=1");
    }
    eprintln!("skipped: {msg}");
    None
}

/// MANIFEST rows: file (relative to the corpus) and the `packets` column as
/// written (malformed rows have notes like `1(partial)`).
fn manifest(dir: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(dir.join("MANIFEST.tsv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (fc, pc) = (col("file"), col("packets"));
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f[fc].to_string(), f[pc].to_string())
        })
        .collect()
}

struct Read {
    frames: Vec<(FrameMeta, Vec<u8>)>,
    stats: CaptureStats,
    warnings: Vec<String>,
}

fn drain(mut src: impl PacketSource, max: usize) -> Read {
    let mut frames = Vec::new();
    while let Some(c) = src.next_chunk(max).unwrap() {
        assert!(!c.frames.is_empty() && c.frames.len() <= max);
        for f in &c.frames {
            let d = c.data(f);
            assert_eq!(d.len(), f.caplen as usize);
            frames.push((*f, d.to_vec()));
        }
    }
    let p = src.progress();
    if let Some(t) = p.bytes_total {
        assert_eq!(p.bytes_read, t);
    }
    Read { frames, stats: src.stats(), warnings: src.take_warnings() }
}

fn no_offsets(frames: &[(FrameMeta, Vec<u8>)]) -> Vec<(FrameMeta, &[u8])> {
    frames.iter().map(|(f, d)| (FrameMeta { offset: 0, ..*f }, d.as_slice())).collect()
}

/// A packet as `pcap-file` reads it: timestamp (if it has one), orig_len, data.
type TheirPacket = (Option<u64>, u32, Vec<u8>);

/// (ts_ns, orig_len, data) of every packet as the `pcap-file` crate reads it, and
/// whether it read the whole file without error. EPB timestamps come from the
/// crate (3.0.0-rc1 scales decimal resolutions right); simple and obsolete packet
/// blocks have no timestamp there (None).
fn pcap_file_packets(path: &Path) -> (Vec<TheirPacket>, bool) {
    use pcap_file::pcap::PcapReader;
    use pcap_file::pcapng::{Block, PcapNgReader};
    use pcap_file::TsResolution;
    let mut out = Vec::new();
    let magic = std::fs::read(path).unwrap();
    if magic.starts_with(&[0x0a, 0x0d, 0x0d, 0x0a]) {
        let Ok(mut r) = PcapNgReader::new(File::open(path).unwrap()) else {
            return (out, false);
        };
        while let Some(b) = r.next_block() {
            match b {
                Ok(Block::EnhancedPacket(p)) => {
                    out.push((Some(p.timestamp.as_nanos() as u64), p.original_len, p.data.to_vec()))
                }
                Ok(Block::SimplePacket(p)) => out.push((None, p.original_len, p.data.to_vec())),
                Ok(Block::Packet(p)) => out.push((None, p.original_len, p.data.to_vec())),
                Ok(_) => {}
                Err(_) => return (out, false),
            }
        }
    } else {
        let Ok(mut r) = PcapReader::new(File::open(path).unwrap()) else {
            return (out, false);
        };
        let frac_ns = match r.header().ts_resolution {
            TsResolution::MicroSecond => 1000,
            TsResolution::NanoSecond => 1,
        };
        while let Some(p) = r.next_raw_packet() {
            match p {
                Ok(p) => out.push((
                    Some(u64::from(p.ts_sec) * 1_000_000_000 + u64::from(p.ts_frac) * frac_ns),
                    p.orig_len,
                    p.data.to_vec(),
                )),
                Err(_) => return (out, false),
            }
        }
    }
    (out, true)
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn corpus_packet_counts_match_manifest() {
    let Some(dir) = corpus_dir() else { return };
    let rows = manifest(&dir);
    let mut checked = 0;
    let mut cross_checked = 0;
    for (file, packets) in rows.iter().filter(|(f, _)| !f.starts_with("malformed/")) {
        let path = dir.join(file);
        let want: usize = packets.parse().unwrap_or_else(|_| panic!("{file}: packets {packets:?}"));
        let got = drain(open_files(std::slice::from_ref(&path)).unwrap(), 256);
        assert_eq!(got.frames.len(), want, "{file}: frames vs MANIFEST");
        assert!(got.warnings.is_empty(), "{file}: {:?}", got.warnings);
        assert_eq!(got.stats.frames, want as u64);
        assert_eq!(got.stats.wire_bytes, got.frames.iter().map(|(f, _)| u64::from(f.orig_len)).sum::<u64>());
        assert_eq!(
            (got.stats.truncated_files, got.stats.corrupt_records, got.stats.bad_packet_blocks),
            (0, 0, 0),
            "{file}"
        );

        // As a stream: the same frames.
        let s = drain(open_reader(file, File::open(&path).unwrap()).unwrap(), 100);
        assert_eq!(no_offsets(&s.frames), no_offsets(&got.frames), "{file}: stream");
        assert_eq!(s.stats, got.stats, "{file}: stream stats");

        // Against pcap-file, as far as it reads the file.
        let (theirs, complete) = pcap_file_packets(&path);
        if complete {
            assert_eq!(theirs.len(), want, "{file}: pcap-file count");
            cross_checked += 1;
        }
        for (i, ((f, d), (ts, orig, data))) in got.frames.iter().zip(&theirs).enumerate() {
            if let Some(ts) = ts {
                assert_eq!(f.ts_ns, *ts, "{file}: frame {i} timestamp");
            }
            assert_eq!(f.orig_len, *orig, "{file}: frame {i} orig_len");
            assert_eq!(d, data, "{file}: frame {i} bytes");
        }
        checked += 1;
    }
    assert!(checked >= 100, "only {checked} captures in the MANIFEST");
    eprintln!("{checked} captures match MANIFEST; {cross_checked} fully cross-checked with pcap-file");
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn corpus_malformed_files_never_panic() {
    let Some(dir) = corpus_dir() else { return };
    let mut n = 0;
    for (file, packets) in manifest(&dir).iter().filter(|(f, _)| f.starts_with("malformed/")) {
        let path = dir.join(file);
        match open_files(std::slice::from_ref(&path)) {
            Ok(src) => {
                let got = drain(src, 7);
                let s = drain(open_reader(file, File::open(&path).unwrap()).unwrap(), 5);
                assert_eq!(no_offsets(&s.frames), no_offsets(&got.frames), "{file}");
                assert_eq!(s.stats, got.stats, "{file}");
                eprintln!(
                    "{file}: {} frames (MANIFEST {packets}){}",
                    got.frames.len(),
                    got.warnings.iter().map(|w| format!("\n    {w}")).collect::<String>()
                );
            }
            Err(e @ CaptureError::NotACapture { .. }) => eprintln!("{file}: {e}"),
            Err(e) => panic!("{file}: {e}"),
        }
        n += 1;
    }
    assert!(n >= 50, "only {n} malformed captures");
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn corpus_known_timestamps_and_link_types() {
    let Some(dir) = corpus_dir() else { return };
    let read = |name: &str| {
        let src = open_files(&[dir.join(name)]).unwrap();
        let fmts = src.formats();
        (drain(src, 64), fmts[0].1)
    };
    // Nanosecond pcap: sub-microsecond digits survive.
    let (r, fmt) = read("tcpdump__tcp-handshake-nano.pcap");
    assert_eq!(fmt, "pcap (ns)");
    assert_eq!(r.frames[0].0.ts_ns, 1_418_145_369_924_505_488);
    assert_eq!(r.frames[0].0.link, LinkType::LINUX_SLL);
    // The largest timestamp a 32-bit pcap can hold.
    let (r, _) = read("tcpdump__time_2106_max.pcap");
    assert_eq!(r.frames.len(), 1);
    assert_eq!(r.frames[0].0.ts_ns, 4_294_967_295_000_000_000);
    let (r, _) = read("tcpdump__time_2038.pcap");
    assert_eq!(r.frames[0].0.ts_ns, 2_145_916_800_000_000_000);
    // Link types from the headers.
    for (name, link) in [
        ("suricata__decode-sll2-01__input.pcap", LinkType::LINUX_SLL2),
        ("tcpdump__LINKTYPE_IPV4.pcap", LinkType::IPV4),
        ("tcpdump__LINKTYPE_IPV6.pcap", LinkType::IPV6),
        ("tcpdump__LINKTYPE_RAW_ipv4.pcap", LinkType::RAW),
        ("tcpdump__quic_handshake.pcap", LinkType::NULL),
        ("ndpi__http2.pcapng", LinkType::LINUX_SLL),
    ] {
        let (r, _) = read(name);
        assert!(r.frames.iter().all(|(f, _)| f.link == link), "{name}");
    }
    // A pcapng named .pcap is still read as pcapng.
    let (r, fmt) = read("ndpi__dns.pcap");
    assert_eq!((fmt, r.frames.len()), ("pcapng", 5));
    // Empty captures: no frames, no warnings.
    for name in ["tcpdump__empty.pcap", "tcpdump__empty.pcapng"] {
        let (r, _) = read(name);
        assert!(r.frames.is_empty() && r.warnings.is_empty(), "{name}");
    }
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn corpus_as_one_stream() {
    let Some(dir) = corpus_dir() else { return };
    let rows: Vec<_> = manifest(&dir).into_iter().filter(|(f, _)| !f.starts_with("malformed/")).collect();
    let paths: Vec<PathBuf> = rows.iter().map(|(f, _)| dir.join(f)).collect();
    let want: u64 = rows.iter().map(|(_, p)| p.parse::<u64>().unwrap()).sum();
    let total: u64 = paths.iter().map(|p| p.metadata().unwrap().len()).sum();
    let src = open_files(&paths).unwrap();
    assert_eq!(src.progress().bytes_total, Some(total));
    let r = drain(src, 1000);
    assert_eq!(r.stats.frames, want);
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}

/// Every frame's timestamp and lengths against tshark (if installed):
/// `cargo test -p tapstat-capture --test corpus -- --ignored`.
#[test]
#[ignore = "needs tshark; slow"]
fn corpus_matches_tshark() {
    let Some(dir) = corpus_dir() else { return };
    let mut by_file: HashMap<String, usize> = HashMap::new();
    for (file, _) in manifest(&dir) {
        let path = dir.join(&file);
        let Ok(src) = open_files(std::slice::from_ref(&path)) else {
            continue;
        };
        let ours = drain(src, 256);
        let out = std::process::Command::new("tshark")
            .args(["-n", "-r"])
            .arg(&path)
            .args(["-T", "fields", "-e", "frame.time_epoch", "-e", "frame.len", "-e", "frame.cap_len"])
            .output()
            .expect("tshark");
        let text = String::from_utf8_lossy(&out.stdout);
        let theirs: Vec<(u64, u32, u32)> = text
            .lines()
            .filter_map(|l| {
                let mut it = l.split('\t');
                let t = it.next()?;
                let (s, frac) = t.split_once('.').unwrap_or((t, "0"));
                let frac = format!("{frac:0<9}");
                let ns = s.parse::<u64>().ok()? * 1_000_000_000 + frac.get(..9)?.parse::<u64>().ok()?;
                Some((ns, it.next()?.parse().ok()?, it.next()?.parse().ok()?))
            })
            .collect();
        let n = theirs.len().min(ours.frames.len());
        // (tshark prints a damaged fraction of a second, e.g. 1000000 µs, as
        // digits after the point rather than carrying it; compare lengths only.)
        let damaged = file.starts_with("malformed/");
        for (i, ((f, _), t)) in ours.frames.iter().zip(&theirs).enumerate() {
            assert_eq!((f.orig_len, f.caplen), (t.1, t.2), "{file}: frame {i} lengths");
            if !damaged {
                assert_eq!(f.ts_ns, t.0, "{file}: frame {i} timestamp");
            }
        }
        if !file.starts_with("malformed/") {
            assert_eq!(ours.frames.len(), theirs.len(), "{file}");
        }
        by_file.insert(file, n);
    }
    eprintln!("compared {} files with tshark", by_file.len());
}
