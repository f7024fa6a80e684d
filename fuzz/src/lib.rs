//! The fuzz targets' bodies, one function per target ([`decode_one`], [`capture_one`],
//! [`engine_one`], [`l7_tls_one`], [`l7_quic_one`], [`l7_http_one`], [`l7_dns_one`]; the
//! table [`TARGETS`]), driven by libFuzzer (`fuzz_targets/*.rs`, nightly) and by the
//! stable mutation runner ([`mutate`], `examples/mutate.rs`); and how their inputs are
//! laid out, shared with the seed generator (`examples/seeds.rs`).
//!
//! A `decode` input is one selector byte, then one or more frames separated by
//! [`FRAME_SEP`]. The selector picks the link type: `LINKS[selector % LINKS.len()]`.
//! Without a separator the rest of the input is one frame.

use tapstat_capture::LinkType;

mod capture;
mod decode;
mod engine;
mod l7;
pub mod mutate;

pub use capture::capture_one;
pub use decode::decode_one;
pub use engine::engine_one;
pub use l7::{l7_dns_one, l7_http_one, l7_quic_one, l7_tls_one};
use mutate::Layout;

/// A fuzz target: its body, and what the stable runner needs to know of its inputs.
pub struct Target {
    /// As in `fuzz_targets/<name>.rs` and `corpus/<name>/`.
    pub name: &'static str,
    pub run: fn(&[u8]),
    pub layout: Layout,
    /// Longest input the runner makes (the `-max_len` the README gives libFuzzer).
    pub max_len: usize,
    /// The runner's `--runs` is divided by this for the target, about its cost per input
    /// over `decode`'s in the dev profile: `capture` writes a file and zeroes a 4 MiB
    /// stream buffer per input, `engine` starts threads and writes its logs.
    pub cost: u64,
}

/// Every target.
pub const TARGETS: [Target; 7] = [
    Target { name: "decode", run: decode_one, layout: Layout::Frames { prefix: 1 }, max_len: 4096, cost: 1 },
    Target { name: "capture", run: capture_one, layout: Layout::Bytes, max_len: 16384, cost: 5 },
    Target { name: "engine", run: engine_one, layout: Layout::Bytes, max_len: 8192, cost: 50 },
    Target { name: "l7_tls", run: l7_tls_one, layout: Layout::Frames { prefix: 0 }, max_len: 4096, cost: 1 },
    Target { name: "l7_quic", run: l7_quic_one, layout: Layout::Frames { prefix: 0 }, max_len: 4096, cost: 1 },
    Target { name: "l7_http", run: l7_http_one, layout: Layout::Frames { prefix: 0 }, max_len: 4096, cost: 1 },
    Target { name: "l7_dns", run: l7_dns_one, layout: Layout::Frames { prefix: 0 }, max_len: 4096, cost: 1 },
];

/// Every link type `Decoder::decode` handles (crates/decode/src/decoder.rs,
/// `link_layer`), plus one it does not (147, a user DLT) for the unsupported path.
pub const LINKS: [LinkType; 18] = [
    LinkType::ETHERNET,
    LinkType::RAW,
    LinkType::RAW_BSD12,
    LinkType::RAW_BSD14,
    LinkType::IPV4,
    LinkType::IPV6,
    LinkType::LINUX_SLL,
    LinkType::LINUX_SLL2,
    LinkType::NULL,
    LinkType::LOOP,
    LinkType(9),   // PPP
    LinkType(50),  // PPP in HDLC-like framing
    LinkType(104), // Cisco HDLC
    LinkType(226), // Solaris ipnet
    LinkType(239), // NFLOG
    LinkType(147), // not decoded: LinkUnsupported
    LinkType::ETHERNET,
    LinkType::ETHERNET,
];

/// The selector byte for `link` (its first index in [`LINKS`]).
pub fn selector_of(link: LinkType) -> u8 {
    LINKS.iter().position(|l| *l == link).expect("a link type of LINKS") as u8
}

/// Link type picked by a selector byte.
pub fn link_of(selector: u8) -> LinkType {
    LINKS[usize::from(selector) % LINKS.len()]
}

/// Separates frames in a `decode` input.
pub const FRAME_SEP: &[u8] = b"#FRM";

/// The frames of a `decode` input's body (everything after the selector byte).
pub fn split_frames(body: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(i) = rest.windows(FRAME_SEP.len()).position(|w| w == FRAME_SEP) {
        out.push(&rest[..i]);
        rest = &rest[i + FRAME_SEP.len()..];
    }
    out.push(rest);
    out
}

/// A `decode` input: selector byte for `link`, then `frames` joined by [`FRAME_SEP`].
pub fn decode_input(link: LinkType, frames: &[&[u8]]) -> Vec<u8> {
    let mut v = vec![selector_of(link)];
    for (i, f) in frames.iter().enumerate() {
        if i > 0 {
            v.extend_from_slice(FRAME_SEP);
        }
        v.extend_from_slice(f);
    }
    v
}

/// The segments of an `l7_*` input: separated by [`FRAME_SEP`], each led by a byte whose
/// low bit is the direction (0 client to server, 1 server to client).
pub fn l7_segments(body: &[u8]) -> Vec<(tapstat_l7::Dir, &[u8])> {
    split_frames(body)
        .into_iter()
        .filter_map(|s| s.split_first())
        .map(|(&d, p)| (if d & 1 == 0 { tapstat_l7::Dir::ClientToServer } else { tapstat_l7::Dir::ServerToClient }, p))
        .collect()
}

/// Feeds segments to a fresh flow under two configurations (default, and one whose
/// budget and caps are tiny), checking what `L7Flow` promises: once `is_done()` it
/// stays done and reports no records, and it holds no more heap than its caps allow.
pub fn run_l7(transport: tapstat_l7::Transport, server_port: u16, segs: &[(tapstat_l7::Dir, &[u8])]) {
    use tapstat_l7::{L7Config, L7Flow};
    let tiny = L7Config {
        budget: 64,
        reassembly_cap: 128,
        probe_packets: 2,
        max_http_transactions: 2,
        max_dns_transactions: 2,
        ..L7Config::default()
    };
    for cfg in [L7Config::default(), tiny] {
        let mut f = L7Flow::new(transport, 40000, server_port);
        for (i, (dir, p)) in segs.iter().enumerate() {
            let was_done = f.is_done();
            let r = f.on_payload(&cfg, *dir, p, i as u64);
            if was_done {
                assert!(f.is_done() && r.is_empty(), "a done flow stays done and quiet");
            }
            assert!(f.heap_bytes() < 1 << 20, "heap within the caps: {}", f.heap_bytes());
        }
        let _ = (f.app(), f.app_source(), f.sni(), f.alpn(), f.ja3(), f.ja3_md5(), f.ja4(), f.quic(), f.tls_times());
        let _ = (f.http().map(|h| h.requests), f.events());
        let _ = (f.drain_http(true), f.drain_dns(true));
    }
}
