//! A capture file replayed as live traffic, for overload experiments on any machine.
//!
//! [`ReplayFile::load`] reads the whole file into memory up front (bounded by the
//! caller's maximum: a replay must not stall on the disk, or the disk, not the
//! analyzer, would be what saturates). [`ReplayFile::sources`] then gives one
//! [`ReplaySource`] per worker, each holding the indices of the frames of its flows:
//! the worker is chosen by [`flow_worker`], a symmetric hash of the outer addresses
//! and ports read at fixed offsets, as a NIC's RSS or the kernel's fanout would. Each
//! acquisition thread paces its own source: a frame is handed out once the wall clock
//! since the first poll of any source passes its due time ([`Pace::due_ns`]), which is
//! its packet time over the speed-up, or its index over the packet rate. Frames carry
//! their capture time (the file's), so with nothing dropped the records are those of
//! the file read offline.

use super::{LiveError, LiveSource, LiveStats};
use crate::{FrameMeta, LinkType, PacketSource};
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// The most frames one poll hands out: a source far behind its pace still lets the
/// acquisition thread publish its buffer regularly (and see [`ReplaySource::bound_bursts`]).
const MAX_POLL: usize = 32768;

/// Frames ahead of the one handed out whose first bytes are prefetched: a frame's
/// headers are read first by the acquisition thread (the controller's hash), and a
/// cache miss there was half of its time at 6 M pps.
const PREFETCH: usize = 8;

/// Asks the CPU to bring the cache line at `data[off]` in (a hint; nothing on other
/// architectures).
#[inline(always)]
fn prefetch(data: &[u8], off: usize) {
    #[cfg(target_arch = "x86_64")]
    if off < data.len() {
        // SAFETY: a prefetch hint reads nothing architecturally and cannot fault; the
        // address is inside `data`.
        unsafe { std::arch::x86_64::_mm_prefetch(data.as_ptr().add(off).cast(), std::arch::x86_64::_MM_HINT_T0) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (data, off);
}

/// How fast a replay goes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pace {
    /// This many times the file's packet-time speed.
    Speed(f64),
    /// This many packets per second, evenly spaced, whatever the file's timestamps.
    Pps(f64),
}

impl Pace {
    /// When frame `index` (of the whole file) is due, in ns of wall time after the
    /// replay's start, given its packet time `rel_ns` after the first frame's (made
    /// monotonic: a capture clock that steps back delays nothing).
    pub fn due_ns(self, index: u64, rel_ns: u64) -> u64 {
        match self {
            Pace::Speed(x) => (rel_ns as f64 / x) as u64,
            Pace::Pps(p) => (index as f64 * 1e9 / p) as u64,
        }
    }
}

/// One frame of a loaded file.
#[derive(Clone, Copy, Debug)]
struct Frame {
    offset: u64,
    caplen: u32,
    orig_len: u32,
    ts_ns: u64,
    /// Packet time after the first frame's, monotonic.
    rel_ns: u64,
}

/// A capture file in memory, ready to be replayed.
pub struct ReplayFile {
    name: String,
    link: LinkType,
    data: Vec<u8>,
    frames: Vec<Frame>,
    wire_bytes: u64,
}

impl ReplayFile {
    /// Reads `path` (pcap or pcapng) into memory. A file larger than `max_bytes` is
    /// refused before it is read; so is one whose frames have several link types
    /// (a live source has one).
    pub fn load(path: &Path, max_bytes: u64) -> Result<ReplayFile, LiveError> {
        let name = path.display().to_string();
        let size = std::fs::metadata(path).map_err(|source| LiveError::Os { what: name.clone(), source })?.len();
        if size > max_bytes {
            return Err(LiveError::Unsupported(format!(
                "{name}: {size} bytes, more than the replay's limit of {max_bytes} (it is loaded into memory; raise --replay-max)"
            )));
        }
        let mut src = crate::open_files(&[path.to_path_buf()]).map_err(|e| LiveError::Unsupported(e.to_string()))?;
        let mut data = Vec::with_capacity(size as usize);
        let mut frames = Vec::new();
        let (mut link, mut first_ts, mut max_ts, mut wire_bytes) = (None, None::<u64>, 0u64, 0u64);
        while let Some(chunk) = src.next_chunk(4096).map_err(|e| LiveError::Unsupported(e.to_string()))? {
            for f in &chunk.frames {
                match link {
                    None => link = Some(f.link),
                    Some(l) if l != f.link => {
                        return Err(LiveError::Unsupported(format!(
                            "{name}: frames of several link types ({} and {}); a replay has one",
                            l.0, f.link.0
                        )))
                    }
                    Some(_) => {}
                }
                let bytes = chunk.data(f);
                let first = *first_ts.get_or_insert(f.ts_ns);
                max_ts = max_ts.max(f.ts_ns.saturating_sub(first));
                frames.push(Frame {
                    offset: data.len() as u64,
                    caplen: bytes.len() as u32,
                    orig_len: f.orig_len,
                    ts_ns: f.ts_ns,
                    rel_ns: max_ts,
                });
                data.extend_from_slice(bytes);
                wire_bytes += f.orig_len as u64;
            }
        }
        Ok(ReplayFile { name, link: link.unwrap_or(LinkType::ETHERNET), data, frames, wire_bytes })
    }

    /// Frames in the file.
    pub fn frames(&self) -> u64 {
        self.frames.len() as u64
    }

    /// Bytes of the frames on the wire.
    pub fn wire_bytes(&self) -> u64 {
        self.wire_bytes
    }

    /// Packet time from the first frame to the last, in ns (monotonic).
    pub fn duration_ns(&self) -> u64 {
        self.frames.last().map_or(0, |f| f.rel_ns)
    }

    /// One source per worker (`n` of them), each with the frames of its flows,
    /// paced by `pace` from the first poll of any of them.
    pub fn sources(self: &Arc<Self>, n: usize, pace: Pace) -> Vec<ReplaySource> {
        let n = n.max(1);
        let mut mine: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (i, f) in self.frames.iter().enumerate() {
            let b = &self.data[f.offset as usize..f.offset as usize + f.caplen as usize];
            mine[flow_worker(self.link, b, n)].push(i as u32);
        }
        let start = Arc::new(OnceLock::new());
        mine.into_iter()
            .enumerate()
            .map(|(w, mine)| ReplaySource {
                file: self.clone(),
                mine,
                next: 0,
                pace,
                start: start.clone(),
                worker: w,
                max_poll: MAX_POLL,
            })
            .collect()
    }

    /// Frames per second of the whole file at `pace` (the file's mean rate for a
    /// speed-up; none for a file of one instant).
    pub fn rate(&self, pace: Pace) -> Option<f64> {
        match pace {
            Pace::Pps(p) => Some(p),
            Pace::Speed(x) => {
                let d = self.duration_ns();
                (d > 0).then(|| self.frames() as f64 * 1e9 / d as f64 * x)
            }
        }
    }
}

/// One worker's share of a replayed file: a [`LiveSource`] that ends at the end of
/// the file.
pub struct ReplaySource {
    file: Arc<ReplayFile>,
    /// Indices of this worker's frames, in file order.
    mine: Vec<u32>,
    next: usize,
    pace: Pace,
    /// The wall clock of the replay's start, set by the first poll of any source.
    start: Arc<OnceLock<Instant>>,
    worker: usize,
    /// The most frames one poll hands out ([`ReplaySource::bound_bursts`]).
    max_poll: usize,
}

impl ReplaySource {
    /// Bounds each poll to the frames this source is due to hand out in `window` of
    /// wall time at its pace (at least one; at most `MAX_POLL`). An acquisition
    /// thread that polls once per period and is given twice its period here gets a
    /// period's frames per poll while it keeps up, and catches up at twice the pace
    /// at most after a stall (descheduled, throttled) instead of in one burst of
    /// thousands of frames: the buffer sees the asked rate, smoothly. A thread too
    /// slow for the pace falls behind, which the summary's `offered_pps` shows.
    pub fn bound_bursts(&mut self, window: Duration) {
        let share = self.mine.len() as f64 / self.file.frames().max(1) as f64;
        if let Some(rate) = self.file.rate(self.pace) {
            let n = (rate * share * window.as_secs_f64()).ceil();
            self.max_poll = (n as usize).clamp(1, MAX_POLL);
        }
    }

    fn due(&self, k: usize) -> u64 {
        let i = self.mine[k];
        self.pace.due_ns(i as u64, self.file.frames[i as usize].rel_ns)
    }

    fn now_ns(&self) -> u64 {
        self.start.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }
}

impl LiveSource for ReplaySource {
    fn name(&self) -> String {
        format!("replay:{}#{}", self.file.name, self.worker)
    }

    fn link(&self) -> LinkType {
        self.file.link
    }

    fn poll(&mut self, on_frame: &mut dyn FnMut(&FrameMeta, &[u8])) -> Result<usize, LiveError> {
        let now = self.now_ns();
        let mut k = 0;
        while self.next < self.mine.len() && k < self.max_poll && self.due(self.next) <= now {
            if let Some(&i) = self.mine.get(self.next + PREFETCH) {
                prefetch(&self.file.data, self.file.frames[i as usize].offset as usize);
            }
            let f = self.file.frames[self.mine[self.next] as usize];
            let meta =
                FrameMeta { ts_ns: f.ts_ns, orig_len: f.orig_len, caplen: f.caplen, offset: 0, link: self.file.link };
            on_frame(&meta, &self.file.data[f.offset as usize..f.offset as usize + f.caplen as usize]);
            self.next += 1;
            k += 1;
        }
        Ok(k)
    }

    fn wait(&mut self, timeout: Duration) {
        if self.next >= self.mine.len() {
            return;
        }
        let ahead = self.due(self.next).saturating_sub(self.now_ns());
        std::thread::sleep(timeout.min(Duration::from_nanos(ahead)));
    }

    /// A replay has no ring to overflow: a frame the acquisition thread is late for
    /// is handed out late, never lost before the buffer.
    fn stats(&mut self) -> LiveStats {
        LiveStats::default()
    }

    fn ended(&self) -> bool {
        self.next >= self.mine.len()
    }

    fn pending_from_ns(&self) -> Option<u64> {
        Some(self.mine.get(self.next).map_or(u64::MAX, |&i| self.file.frames[i as usize].ts_ns))
    }
}

/// The worker (of `n`) of a frame: [`frame_flow`]'s hash scaled to `n`, as a NIC's
/// RSS or the kernel's fanout would choose. Both directions of a flow get the same
/// worker; a frame without a key goes to worker 0. Fragments are hashed on their
/// addresses alone, as a NIC's RSS does, so they may land on another worker than
/// their flow's unfragmented packets.
pub fn flow_worker(link: LinkType, b: &[u8], n: usize) -> usize {
    if n <= 1 {
        return 0;
    }
    match frame_flow(link, b) {
        Some(f) => (((f.hash >> 32) * n as u64) >> 32) as usize,
        None => 0,
    }
}

/// What the acquisition side reads of a frame's outer headers without decoding it:
/// enough to spread flows over workers and to keep the packets whose loss costs most
/// (the overload controller's priorities).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameFlow {
    /// A symmetric hash of the outer addresses and (outside fragments) the TCP/UDP
    /// ports and protocol: both directions of a flow have the same.
    pub hash: u64,
    /// The TCP flags byte (RFC 9293 §3.1), for an unfragmented TCP segment whose
    /// header reaches that far.
    pub tcp_flags: Option<u8>,
    /// A name service on either side (`DNS_PORTS`): DNS on TCP or UDP port 53, and
    /// over UDP mDNS (5353), LLMNR (5355) and NetBIOS names (137), whose transactions
    /// the analysis logs as DNS.
    pub dns: bool,
    /// Offset in the frame of the TCP/UDP payload, for an unfragmented segment whose
    /// whole TCP/UDP header is in the frame.
    pub payload: Option<usize>,
    /// The frame's direction: from the lower endpoint (address, then port) to the
    /// higher; the reverse direction of the flow has the other value.
    pub fwd: bool,
}

/// The UDP ports of [`FrameFlow::dns`] (TCP: 53 only).
pub const DNS_PORTS: [u16; 4] = [53, 5353, 5355, 137];

/// Reads [`FrameFlow`] at fixed offsets (Ethernet with up to two VLAN tags, or raw
/// IP); `None` for anything else — another link type or ethertype, a frame too short.
///
/// The hash is that of the flow's two endpoints in a fixed order (address, then
/// port: the lower first), so it is symmetric without being an XOR: two flows whose
/// addresses differ by the same bits on both sides (captures replayed with rewritten
/// addresses, or structured address plans) do not share it. The kernel's fanout hash
/// (`__skb_get_hash_symmetric`) orders the endpoints the same way.
pub fn frame_flow(link: LinkType, b: &[u8]) -> Option<FrameFlow> {
    let ip_off = match link {
        LinkType::ETHERNET => {
            let mut off = 12;
            let mut ethertype = be16(b, off);
            let mut tags = 0;
            while matches!(ethertype, Some(0x8100 | 0x88a8)) && tags < 2 {
                off += 4;
                ethertype = be16(b, off);
                tags += 1;
            }
            match ethertype {
                Some(0x0800 | 0x86dd) => off + 2,
                _ => return None,
            }
        }
        LinkType::RAW | LinkType::RAW_BSD12 | LinkType::RAW_BSD14 | LinkType::IPV4 | LinkType::IPV6 => 0,
        _ => return None,
    };
    let ip = &b[ip_off..];
    let k = flow_key(ip)?;
    let fwd = (k.a, k.pa) <= (k.b, k.pb);
    let (lo, hi) = if fwd { ((k.a, k.pa), (k.b, k.pb)) } else { ((k.b, k.pb), (k.a, k.pa)) };
    let mut h = fmix64(lo.0 ^ 0x9e37_79b9_7f4a_7c15);
    h = fmix64(h ^ hi.0);
    h = fmix64(h ^ ((lo.1 as u64) << 32 | (hi.1 as u64) << 16 | k.proto as u64));
    let (mut tcp_flags, mut dns, mut payload) = (None, false, None);
    if let Some(off) = k.l4 {
        match k.proto {
            6 => {
                dns = k.pa == 53 || k.pb == 53;
                tcp_flags = ip.get(off + 13).copied();
                let data = ip.get(off + 12).map(|d| off + (d >> 4) as usize * 4);
                payload = data.filter(|&d| d >= off + 20 && d <= ip.len()).map(|d| ip_off + d);
            }
            17 => {
                dns = DNS_PORTS.contains(&k.pa) || DNS_PORTS.contains(&k.pb);
                payload = (off + 8 <= ip.len()).then_some(ip_off + off + 8);
            }
            _ => {}
        }
    }
    Some(FrameFlow { hash: h, tcp_flags, dns, payload, fwd })
}

/// fmix64, MurmurHash3's finalizer.
fn fmix64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// An IP packet's endpoints: addresses (IPv6 folded to 64 bits), TCP/UDP ports (0
/// for fragments and other protocols), protocol, and the TCP/UDP header's offset
/// outside fragments.
struct Key {
    a: u64,
    b: u64,
    pa: u16,
    pb: u16,
    proto: u8,
    l4: Option<usize>,
}

fn flow_key(ip: &[u8]) -> Option<Key> {
    let version = ip.first()? >> 4;
    let (a, b, proto, l4) = match version {
        4 => {
            let ihl = (ip[0] & 0x0f) as usize * 4;
            let frag = be16(ip, 6)? & 0x3fff != 0; // MF or an offset
            (be32(ip, 12)? as u64, be32(ip, 16)? as u64, *ip.get(9)?, (!frag).then_some(ihl))
        }
        6 => {
            let fold = |at: usize| -> Option<u64> { Some(fmix64(be64(ip, at)?) ^ be64(ip, at + 8)?) };
            let nh = *ip.get(6)?;
            // A fragment header (44) or any other extension: addresses only.
            (fold(8)?, fold(24)?, nh, matches!(nh, 6 | 17).then_some(40))
        }
        _ => return None,
    };
    let l4 = match (proto, l4) {
        (6 | 17, Some(off)) => Some(off),
        _ => None,
    };
    let (pa, pb) = match l4 {
        Some(off) => (be16(ip, off).unwrap_or(0), be16(ip, off + 2).unwrap_or(0)),
        None => (0, 0),
    };
    Some(Key { a, b, pa, pb, proto, l4 })
}

fn be16(b: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(off..off + 2)?.try_into().ok()?))
}

fn be32(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(off..off + 4)?.try_into().ok()?))
}

fn be64(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_be_bytes(b.get(off..off + 8)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eth_ipv4_tcp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, vlan: bool) -> Vec<u8> {
        let mut f = vec![0u8; 12];
        if vlan {
            f.extend_from_slice(&[0x81, 0x00, 0x00, 0x07]);
        }
        f.extend_from_slice(&[0x08, 0x00]);
        let mut ip = vec![0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0];
        ip.extend_from_slice(&src);
        ip.extend_from_slice(&dst);
        ip.extend_from_slice(&sport.to_be_bytes());
        ip.extend_from_slice(&dport.to_be_bytes());
        ip.extend_from_slice(&[0; 16]);
        f.extend_from_slice(&ip);
        f
    }

    fn raw_ipv6_udp(src: [u8; 16], dst: [u8; 16], sport: u16, dport: u16) -> Vec<u8> {
        let mut ip = vec![0x60, 0, 0, 0, 0, 8, 17, 64];
        ip.extend_from_slice(&src);
        ip.extend_from_slice(&dst);
        ip.extend_from_slice(&sport.to_be_bytes());
        ip.extend_from_slice(&dport.to_be_bytes());
        ip.extend_from_slice(&[0, 8, 0, 0]);
        ip
    }

    #[test]
    fn both_directions_of_a_flow_go_to_one_worker() {
        let mut used = [false; 4];
        for i in 0..200u16 {
            let a = [10, 0, (i >> 8) as u8, i as u8];
            let b = [192, 168, 1, (i % 7) as u8];
            for vlan in [false, true] {
                let fwd = flow_worker(LinkType::ETHERNET, &eth_ipv4_tcp(a, b, 1024 + i, 443, vlan), 4);
                let rev = flow_worker(LinkType::ETHERNET, &eth_ipv4_tcp(b, a, 443, 1024 + i, vlan), 4);
                assert_eq!(fwd, rev, "flow {i}");
                used[fwd] = true;
            }
            let mut a6 = [0u8; 16];
            a6[0] = 0x20;
            a6[15] = i as u8;
            let b6 = [0xfe; 16];
            let fwd = flow_worker(LinkType::RAW, &raw_ipv6_udp(a6, b6, 5000 + i, 53), 3);
            let rev = flow_worker(LinkType::RAW, &raw_ipv6_udp(b6, a6, 53, 5000 + i), 3);
            assert_eq!(fwd, rev, "v6 flow {i}");
            assert!(fwd < 3);
        }
        assert!(used.iter().all(|&u| u), "200 flows spread over all 4 workers: {used:?}");
    }

    #[test]
    fn what_cannot_be_hashed_goes_to_worker_0() {
        assert_eq!(flow_worker(LinkType::ETHERNET, &[0u8; 10], 4), 0);
        let mut arp = vec![0u8; 12];
        arp.extend_from_slice(&[0x08, 0x06]);
        arp.extend_from_slice(&[0; 28]);
        assert_eq!(flow_worker(LinkType::ETHERNET, &arp, 4), 0);
        assert_eq!(flow_worker(LinkType::LINUX_SLL, &eth_ipv4_tcp([1; 4], [2; 4], 1, 2, false), 4), 0);
        // A truncated IPv4 header: no key, no panic.
        let f = eth_ipv4_tcp([1; 4], [2; 4], 1, 2, false);
        assert_eq!(flow_worker(LinkType::ETHERNET, &f[..20], 4), 0);
        assert_eq!(flow_worker(LinkType::ETHERNET, &f, 1), 0);
    }

    #[test]
    fn frame_flow_reads_flags_and_dns() {
        let mut syn = eth_ipv4_tcp([1; 4], [2; 4], 1000, 443, true);
        syn[18 + 20 + 13] = 0x02;
        let f = frame_flow(LinkType::ETHERNET, &syn).unwrap();
        assert_eq!((f.tcp_flags, f.dns), (Some(0x02), false));
        let rev = frame_flow(LinkType::ETHERNET, &eth_ipv4_tcp([2; 4], [1; 4], 443, 1000, false)).unwrap();
        assert_eq!(rev.hash, f.hash);
        assert!(f.fwd && !rev.fwd);
        let dns = frame_flow(LinkType::RAW, &raw_ipv6_udp([1; 16], [2; 16], 5353, 53)).unwrap();
        assert_eq!((dns.tcp_flags, dns.dns), (None, true));
        // A header cut before the flags: no flags, no panic.
        let f = eth_ipv4_tcp([1; 4], [2; 4], 1, 2, false);
        assert_eq!(frame_flow(LinkType::ETHERNET, &f[..14 + 20 + 10]).unwrap().tcp_flags, None);
        assert_eq!(frame_flow(LinkType::ETHERNET, &f[..14 + 20 + 10]).unwrap().payload, None);
    }

    #[test]
    fn name_services_are_dns_and_payloads_are_found() {
        for (port, dns) in [(53, true), (5353, true), (5355, true), (137, true), (138, false), (443, false)] {
            let f = frame_flow(LinkType::RAW, &raw_ipv6_udp([1; 16], [2; 16], 40000, port)).unwrap();
            assert_eq!(f.dns, dns, "udp port {port}");
            assert_eq!(f.payload, Some(48), "udp port {port}");
        }
        // Over TCP only 53 is DNS.
        assert!(frame_flow(LinkType::ETHERNET, &eth_ipv4_tcp([1; 4], [2; 4], 53, 40000, false)).unwrap().dns);
        assert!(!frame_flow(LinkType::ETHERNET, &eth_ipv4_tcp([1; 4], [2; 4], 5353, 40000, false)).unwrap().dns);
        // TCP: after the header whose data offset says 20 bytes (VLAN-tagged Ethernet).
        let mut t = eth_ipv4_tcp([1; 4], [2; 4], 1000, 80, true);
        t[18 + 20 + 12] = 5 << 4;
        assert_eq!(frame_flow(LinkType::ETHERNET, &t).unwrap().payload, Some(18 + 20 + 20));
        // A data offset below the header's size, or past the frame: none.
        t[18 + 20 + 12] = 4 << 4;
        assert_eq!(frame_flow(LinkType::ETHERNET, &t).unwrap().payload, None);
        t[18 + 20 + 12] = 15 << 4;
        assert_eq!(frame_flow(LinkType::ETHERNET, &t).unwrap().payload, None);
    }

    #[test]
    fn flows_whose_addresses_differ_by_the_same_bits_do_not_share_a_hash() {
        // mix-small's copies of one capture: both addresses rewritten by the same mask,
        // so an XOR of the addresses (and of the ports) is the same for every copy.
        let mut seen = std::collections::HashSet::new();
        for m in 0..64u8 {
            let (c, s) = ([192, 168, 7 ^ m, 193], [213, 19, 94 ^ m, 221]);
            let f = frame_flow(LinkType::ETHERNET, &eth_ipv4_tcp(c, s, 54867, 443, false)).unwrap();
            let r = frame_flow(LinkType::ETHERNET, &eth_ipv4_tcp(s, c, 443, 54867, false)).unwrap();
            assert_eq!(f.hash, r.hash);
            assert!(seen.insert(f.hash >> 32), "copy {m} collides");
        }
        // Ports swapped between the two ends are another flow.
        let a = frame_flow(LinkType::ETHERNET, &eth_ipv4_tcp([1; 4], [2; 4], 1000, 2000, false)).unwrap();
        let b = frame_flow(LinkType::ETHERNET, &eth_ipv4_tcp([1; 4], [2; 4], 2000, 1000, false)).unwrap();
        assert_ne!(a.hash, b.hash);
    }

    #[test]
    fn pacing_by_speed_and_by_rate() {
        // 10x: a frame 1 s of packet time after the first is due after 100 ms.
        assert_eq!(Pace::Speed(10.0).due_ns(5, 1_000_000_000), 100_000_000);
        assert_eq!(Pace::Speed(0.5).due_ns(0, 1_000), 2_000);
        // 1000 pps: frame i is due after i ms, whatever its timestamp.
        assert_eq!(Pace::Pps(1000.0).due_ns(0, 123), 0);
        assert_eq!(Pace::Pps(1000.0).due_ns(250, 0), 250_000_000);
        assert_eq!(Pace::Pps(3e6).due_ns(3_000_000, 0), 1_000_000_000);
    }

    #[test]
    fn a_replay_hands_out_every_frame_once_in_order_and_ends() {
        use std::io::Write as _;
        let dir = std::env::temp_dir().join(format!("tapstat-replay-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.pcap");
        let mut out = Vec::new();
        out.extend_from_slice(&[0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0]);
        out.extend_from_slice(&[0; 8]);
        out.extend_from_slice(&65535u32.to_le_bytes());
        out.extend_from_slice(&1u32.to_le_bytes());
        for i in 0..50u32 {
            let f = eth_ipv4_tcp([10, 0, 0, i as u8], [10, 0, 1, 1], 1000, 80, false);
            out.extend_from_slice(&(100 + i).to_le_bytes()); // a second apart
            out.extend_from_slice(&0u32.to_le_bytes());
            out.extend_from_slice(&(f.len() as u32).to_le_bytes());
            out.extend_from_slice(&(f.len() as u32).to_le_bytes());
            out.extend_from_slice(&f);
        }
        std::fs::File::create(&path).unwrap().write_all(&out).unwrap();
        assert!(ReplayFile::load(&path, 100).is_err_and(|e| e.to_string().contains("--replay-max")));
        let file = Arc::new(ReplayFile::load(&path, 1 << 20).unwrap());
        assert_eq!((file.frames(), file.duration_ns()), (50, 49_000_000_000));
        // 49 s of packet time at 1e5x: under half a millisecond.
        let mut srcs = file.sources(2, Pace::Speed(1e5));
        let mut seen = Vec::new();
        let t0 = Instant::now();
        while srcs.iter().any(|s| !s.ended()) {
            assert!(t0.elapsed() < Duration::from_secs(5));
            for s in &mut srcs {
                s.poll(&mut |m, b| seen.push((m.ts_ns, b[29]))).unwrap();
                s.wait(Duration::from_millis(1));
            }
        }
        seen.sort();
        assert_eq!(seen, (0..50u64).map(|i| ((100 + i) * 1_000_000_000, i as u8)).collect::<Vec<_>>());
        // Bounded bursts: 50 frames at 1000 pps are due 1 ms apart; with a 4 ms window a
        // poll hands out 4 at most, however late it comes.
        let mut src = file.sources(1, Pace::Pps(1000.0)).pop().unwrap();
        assert_eq!(file.rate(Pace::Speed(2.0)), Some(50.0 * 1e9 / 49e9 * 2.0));
        src.bound_bursts(Duration::from_millis(4));
        assert_eq!(src.poll(&mut |_, _| {}).unwrap(), 1, "frame 0 is due at once");
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(src.poll(&mut |_, _| {}).unwrap(), 4);
        assert_eq!(src.poll(&mut |_, _| {}).unwrap(), 4);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
