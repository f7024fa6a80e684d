//! The EAL, the ports and one [`DpdkQueue`] per worker.

use crate::ffi;
use std::ffi::{c_char, c_void, CString};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tapstat_capture::live::{LiveError, LiveSource, LiveStats};
use tapstat_capture::{FrameMeta, LinkType};

/// Frames asked for per `rte_eth_rx_burst`.
const BURST: u16 = 256;
/// Bursts per queue in one `poll` at most, so a queue that never runs dry (a
/// `net_pcap` file, a saturated link) still lets the acquisition thread publish.
const MAX_BURSTS: usize = 32;

/// Errors that stop DPDK from starting.
#[derive(Debug, thiserror::Error)]
pub enum DpdkError {
    #[error("--dpdk {args:?}: {reason}")]
    Args { args: String, reason: String },
    #[error(
        "DPDK's EAL did not start: {0} (its messages above say why). Without hugepages or NICs, pass e.g. \
         '--no-huge --no-pci --no-shconf -m 512 --vdev=net_pcap0,rx_pcap=FILE'"
    )]
    Eal(String),
    #[error("DPDK's EAL starts once per process")]
    AlreadyStarted,
    #[error(
        "DPDK found no port: give the EAL a device (a NIC bound to vfio-pci, or a virtual one such as \
         --vdev=net_pcap0,rx_pcap=FILE or --vdev=net_af_packet0,iface=IFACE,qpairs=N)"
    )]
    NoPorts,
    #[error(
        "port {port} ({driver}) has {max} RX queue(s), but each of the {wanted} workers needs one: use -w {max}{hint}"
    )]
    Queues { port: u16, driver: String, max: u16, wanted: usize, hint: &'static str },
    #[error("port {port} ({driver}): {step}: {reason}")]
    Port { port: u16, driver: String, step: String, reason: String },
}

static STARTED: AtomicBool = AtomicBool::new(false);

/// The running EAL; `rte_eal_cleanup` when the last port and [`Dpdk`] are gone.
struct Eal;

impl Drop for Eal {
    fn drop(&mut self) {
        // SAFETY: every port was closed (each holds an Arc of this value) and no
        // DPDK function is called after this.
        unsafe { ffi::tapstat_eal_cleanup() };
    }
}

/// DPDK, initialised: [`Dpdk::init`] once per process, then [`Dpdk::open`].
pub struct Dpdk {
    eal: Arc<Eal>,
    /// The EAL arguments name capture files for net_pcap (`rx_pcap=`) and no
    /// interface or endless replay: the ports end with their files.
    files: bool,
}

/// A configured and started port, as the summary and messages name it.
#[derive(Clone, Debug)]
pub struct PortDesc {
    pub id: u16,
    /// `net_pcap0`, `0000:3b:00.0`.
    pub name: String,
    pub driver: String,
    pub rx_queues: u16,
    pub rx_desc: u16,
    /// Bytes of the symmetric RSS key; 0 when RSS is off (one queue, or a PMD that
    /// spreads frames its own way, like `net_af_packet`'s kernel fanout).
    pub rss_key_len: u16,
    /// `RTE_ETH_RSS_*` functions enabled.
    pub rss_hf: u64,
    /// Frames carry their capture time (`net_pcap`: the file's, in µs).
    pub stamps: bool,
    /// The PMD cuts a frame longer than its buffer and says nothing (`net_af_packet`:
    /// the ring's frame size, `framesz`).
    pub cuts_frames: bool,
    /// Bytes of frame one mbuf holds (2 KiB where the PMD chains mbufs; more where it
    /// cannot, see `AF_PACKET_FRAMESZ`).
    pub mbuf_room: u16,
}

/// A started port; stopped and closed when the last queue of it is dropped.
struct Port {
    desc: PortDesc,
    _eal: Arc<Eal>,
}

impl Drop for Port {
    fn drop(&mut self) {
        // SAFETY: the last DpdkQueue polling this port is being dropped, so no
        // thread receives from it any more.
        unsafe { ffi::tapstat_port_close(self.desc.id) };
    }
}

impl Dpdk {
    /// Starts the EAL with `args` (split at white space; no quoting), as
    /// `tapstat ARGS` on a DPDK command line. Once per process.
    pub fn init(args: &str) -> Result<Dpdk, DpdkError> {
        if STARTED.swap(true, Ordering::SeqCst) {
            return Err(DpdkError::AlreadyStarted);
        }
        let bad = |reason: String| DpdkError::Args { args: args.to_string(), reason };
        let mut owned = vec![CString::new("tapstat").expect("no NUL in a literal")];
        for a in with_af_packet_frames(args) {
            owned.push(CString::new(a).map_err(|_| bad("an argument holds a NUL byte".into()))?);
        }
        // The EAL keeps pointers into argv (and reorders it), so the strings live
        // as long as the process: a few bytes, once.
        let mut argv: Vec<*mut c_char> = owned.into_iter().map(|c| c.into_raw()).collect();
        let argc = argv.len() as i32;
        argv.push(std::ptr::null_mut());
        let argv: &'static mut [*mut c_char] = Box::leak(argv.into_boxed_slice());
        // SAFETY: argv holds argc NUL-terminated strings and a final NULL, all
        // leaked, so they outlive the EAL; this is the process's only EAL init
        // (STARTED above).
        let rc = unsafe { ffi::tapstat_eal_init(argc, argv.as_mut_ptr()) };
        if rc < 0 {
            return Err(DpdkError::Eal(ffi::strerror(rc)));
        }
        let eal = Arc::new(Eal);
        // What the EAL did not parse is left after argv[rc] (getopt moved it there).
        let rest: Vec<String> = argv[(rc as usize + 1)..argc as usize]
            .iter()
            // SAFETY: the EAL only permutes argv; each entry is still one of the
            // strings above.
            .map(|p| unsafe { std::ffi::CStr::from_ptr(*p) }.to_string_lossy().into_owned())
            .collect();
        if !rest.is_empty() {
            return Err(bad(format!("not EAL options: {}", rest.join(" "))));
        }
        let files = args.contains("rx_pcap=") && !args.contains("rx_iface") && !args.contains("infinite_rx=1");
        Ok(Dpdk { eal, files })
    }

    /// The most RX queues every port the EAL found can have (the number of workers
    /// that can each have a queue of every port); `None` without ports.
    pub fn max_rx_queues(&self) -> Option<usize> {
        let mut most: Option<usize> = None;
        let mut from = 0u16;
        loop {
            // SAFETY: plain queries of the EAL's port table.
            let p = unsafe { ffi::tapstat_next_port(from) };
            let Ok(id) = u16::try_from(p) else { break };
            // SAFETY: as above; `id` came from the EAL.
            let q = unsafe { ffi::tapstat_port_max_rx_queues(id) };
            if let Ok(q) = usize::try_from(q) {
                most = Some(most.map_or(q, |m| m.min(q)));
            }
            from = id + 1;
        }
        most
    }

    /// Configures every port the EAL found with `queues` RX queues (symmetric RSS
    /// over them where the PMD has RSS), starts it, and returns one source per
    /// queue index: source `q` receives from queue `q` of every port, so both
    /// directions of a tap's flows meet on one worker even when each direction has
    /// a port of its own (the key, and so the hash, is the same on every port).
    pub fn open(&self, queues: usize) -> Result<(Vec<DpdkQueue>, Vec<PortDesc>), DpdkError> {
        let nq = u16::try_from(queues.max(1)).unwrap_or(u16::MAX);
        let mut ports = Vec::new();
        let mut from = 0u16;
        loop {
            // SAFETY: plain query of the EAL's port table.
            let p = unsafe { ffi::tapstat_next_port(from) };
            let Ok(id) = u16::try_from(p) else { break };
            ports.push(self.setup(id, nq)?);
            from = id + 1;
        }
        if ports.is_empty() {
            return Err(DpdkError::NoPorts);
        }
        let descs: Vec<PortDesc> = ports.iter().map(|p| p.desc.clone()).collect();
        let stamps = descs.iter().all(|d| d.stamps);
        let files = self.files && descs.iter().all(|d| d.driver == "net_pcap");
        let names: Vec<&str> = descs.iter().map(|d| d.name.as_str()).collect();
        let sources = (0..nq)
            .map(|q| DpdkQueue {
                queue: q,
                ports: ports.clone(),
                stamps,
                name: format!("{}#{q}", names.join("+")),
                pkts: vec![ffi::Pkt::default(); BURST as usize],
                mbufs: vec![std::ptr::null_mut(); BURST as usize],
                scratch: Vec::new(),
                stats: LiveStats::default(),
                files,
                dry_since: None,
            })
            .collect();
        Ok((sources, descs))
    }

    fn setup(&self, id: u16, nq: u16) -> Result<Arc<Port>, DpdkError> {
        let mut info = ffi::PortInfo::default();
        // SAFETY: `info` is valid for writing; the port id came from the EAL and
        // is set up once.
        let rc = unsafe { ffi::tapstat_port_setup(id, nq, 0, &mut info) };
        let driver = ffi::c_str(&info.driver);
        if rc != 0 {
            if info.max_rx_queues > 0 && nq > info.max_rx_queues {
                let hint = match driver.as_str() {
                    "net_af_packet" => ", or qpairs=N in --vdev=net_af_packet0,...",
                    "net_pcap" => ", or one rx_pcap= per queue in --vdev=net_pcap0,...",
                    _ => "",
                };
                return Err(DpdkError::Queues { port: id, driver, max: info.max_rx_queues, wanted: nq.into(), hint });
            }
            return Err(DpdkError::Port { port: id, driver, step: ffi::c_str(&info.step), reason: ffi::strerror(rc) });
        }
        // Only net_pcap's stamps are known to be wall-clock time (the file's, in
        // µs). A NIC's timestamp offload counts in its own clock's ticks, which
        // would need a calibration against the host's clock; such frames are
        // batch-stamped like those of a PMD without stamps.
        // SAFETY: plain lookup in the EAL's mbuf registry.
        let stamps = driver == "net_pcap" && unsafe { ffi::tapstat_has_timestamps() } != 0;
        let driver_name = driver.clone();
        let desc = PortDesc {
            id,
            name: ffi::c_str(&info.name),
            driver,
            rx_queues: nq,
            rx_desc: info.nb_rxd,
            rss_key_len: info.rss_key_len,
            rss_hf: info.rss_hf,
            stamps,
            cuts_frames: driver_name == "net_af_packet",
            mbuf_room: info.mbuf_room,
        };
        Ok(Arc::new(Port { desc, _eal: self.eal.clone() }))
    }
}

/// How long a queue of file-backed net_pcap ports must find nothing to be at the end
/// of its files.
const FILE_END: Duration = Duration::from_millis(250);

/// One RX queue index on every port: what one worker's acquisition thread polls.
pub struct DpdkQueue {
    queue: u16,
    ports: Vec<Arc<Port>>,
    stamps: bool,
    name: String,
    /// Filled by each burst.
    pkts: Vec<ffi::Pkt>,
    /// The mbufs of the current burst, freed before `poll` returns.
    mbufs: Vec<*mut c_void>,
    /// A chained (multi-segment) frame, made contiguous.
    scratch: Vec<u8>,
    stats: LiveStats,
    /// Every port reads a capture file (net_pcap `rx_pcap=`).
    files: bool,
    /// Since when every poll found nothing.
    dry_since: Option<std::time::Instant>,
}

// SAFETY: the raw pointers in `pkts` and `mbufs` are only meaningful between a
// burst and the free that ends the same `poll` call; in between, the value is not
// shared. A queue is polled by one thread at a time, as DPDK requires, because only
// its owner can call `poll` (`&mut self`).
unsafe impl Send for DpdkQueue {}

impl LiveSource for DpdkQueue {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn link(&self) -> LinkType {
        LinkType::ETHERNET
    }

    fn poll(&mut self, on_frame: &mut dyn FnMut(&FrameMeta, &[u8])) -> Result<usize, LiveError> {
        let mut n = 0;
        for p in 0..self.ports.len() {
            let port = self.ports[p].desc.id;
            for _ in 0..MAX_BURSTS {
                // SAFETY: `pkts` and `mbufs` hold BURST entries each; this thread
                // alone receives from (port, queue), a started port kept open by
                // the Arc in `ports`.
                let k = unsafe {
                    ffi::tapstat_rx(port, self.queue, self.pkts.as_mut_ptr(), self.mbufs.as_mut_ptr(), BURST)
                };
                for i in 0..k as usize {
                    let pk = self.pkts[i];
                    let bytes: &[u8] = if pk.nb_segs <= 1 {
                        // SAFETY: a one-segment mbuf holds `data_len` bytes at
                        // `data`; it is not freed before the loop ends.
                        unsafe { std::slice::from_raw_parts(pk.data, pk.data_len as usize) }
                    } else {
                        self.scratch.resize(pk.pkt_len as usize, 0);
                        // SAFETY: `mbufs[i]` is the frame's mbuf (not yet freed);
                        // `scratch` has room for `pkt_len` bytes.
                        let got = unsafe { ffi::tapstat_copy(self.mbufs[i], self.scratch.as_mut_ptr(), pk.pkt_len) };
                        &self.scratch[..got as usize]
                    };
                    // net_pcap stamps in µs (pcap_open_offline's precision).
                    let ts_ns = if self.stamps && pk.has_ts != 0 { pk.ts.saturating_mul(1000) } else { 0 };
                    // net_af_packet hands over what fitted in its ring's frame, not the
                    // kernel's length of it: a frame cut there is known by its IP
                    // length, which then gives its wire length (the summary counts
                    // such frames as `truncated_frames`).
                    let orig_len = match self.ports[p].desc.cuts_frames {
                        true => wire_len_from_ip(bytes).map_or(pk.pkt_len, |l| l.max(pk.pkt_len)),
                        false => pk.pkt_len,
                    };
                    let meta =
                        FrameMeta { ts_ns, orig_len, caplen: bytes.len() as u32, offset: 0, link: LinkType::ETHERNET };
                    on_frame(&meta, bytes);
                }
                // SAFETY: the first k entries of `mbufs` are this burst's mbufs, and
                // no reference into them outlives the loop above.
                unsafe { ffi::tapstat_free(self.mbufs.as_mut_ptr(), k) };
                n += k as usize;
                if k < BURST {
                    break;
                }
            }
        }
        if n == 0 {
            self.dry_since.get_or_insert_with(std::time::Instant::now);
        } else {
            self.dry_since = None;
        }
        Ok(n)
    }

    /// net_pcap reads its file within the burst call and returns nothing only at
    /// the end of the file (or when no mbuf is free, which lasts microseconds here:
    /// each burst's mbufs are freed before `poll` returns). So a file-backed queue
    /// that has found nothing for `FILE_END` has reached the end of its files.
    fn ended(&self) -> bool {
        self.files && self.dry_since.is_some_and(|t| t.elapsed() >= FILE_END)
    }

    /// DPDK queues have no descriptor to sleep on (rx interrupts are rare among
    /// PMDs and absent from the virtual ones): a short sleep instead.
    fn wait(&mut self, timeout: Duration) {
        std::thread::sleep(timeout.min(Duration::from_millis(1)));
    }

    /// The ports' drops (`imissed`: no free descriptor, the NIC's or the kernel
    /// ring's overflow; `rx_nombuf`: no free mbuf) as `kernel_drops`. They are
    /// counted per port, not per queue, so queue 0's source reports them for all
    /// queues and the others report none (their sum is the total).
    fn stats(&mut self) -> LiveStats {
        if self.queue != 0 {
            return self.stats;
        }
        let mut drops = 0;
        for p in &self.ports {
            let mut s = ffi::Stats::default();
            // SAFETY: `s` is valid for writing; the port is open.
            if unsafe { ffi::tapstat_stats(p.desc.id, &mut s) } == 0 {
                drops += s.imissed + s.rx_nombuf;
            }
        }
        self.stats.kernel_drops = drops;
        self.stats
    }

    fn stamps_frames(&self) -> bool {
        self.stamps
    }
}

/// The ring frame size tapstat gives a `net_af_packet` vdev that names none: the
/// PMD's default (2048) cuts every frame over ~2,000 bytes (jumbo frames, GRO/TSO
/// segments on a host's own interfaces), and it cannot chain mbufs, so frames up to
/// this size fit in one (the shim's `TAPSTAT_BIG_FRAME`). 512 frames of 16 KiB: an
/// 8 MiB ring per queue.
pub const AF_PACKET_FRAMESZ: u32 = 16384;

/// The EAL arguments, split at white space, with `framesz` and `blocksz` added to
/// each `net_af_packet` vdev that sets neither (a block must hold a frame).
pub fn with_af_packet_frames(args: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for a in args.split_whitespace() {
        let dev = a.strip_prefix("--vdev=").or_else(|| (out.last().map(String::as_str) == Some("--vdev")).then_some(a));
        let is_afp = dev.is_some_and(|d| d.starts_with("net_af_packet") || d.starts_with("eth_af_packet"));
        if is_afp && !a.contains("framesz=") && !a.contains("blocksz=") {
            out.push(format!("{a},framesz={AF_PACKET_FRAMESZ},blocksz={AF_PACKET_FRAMESZ}"));
        } else {
            out.push(a.to_string());
        }
    }
    out
}

/// The length on the wire of an Ethernet frame (up to two VLAN tags) as its IPv4 or
/// IPv6 header says, when it has one.
fn wire_len_from_ip(f: &[u8]) -> Option<u32> {
    let be16 = |o: usize| f.get(o..o + 2).map(|b| u16::from_be_bytes([b[0], b[1]]) as u32);
    let mut off = 12;
    let mut ty = be16(off)?;
    for _ in 0..2 {
        if ty != 0x8100 && ty != 0x88a8 {
            break;
        }
        off += 4;
        ty = be16(off)?;
    }
    let ip = off + 2;
    match ty {
        0x0800 => Some(ip as u32 + be16(ip + 2)?),
        0x86dd => Some(ip as u32 + 40 + be16(ip + 4)?),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A net_af_packet vdev gets ring frames big enough for jumbo frames unless its
    /// user chose a size; other arguments are left as they are.
    #[test]
    fn af_packet_vdevs_get_big_frames() {
        let big = format!("framesz={AF_PACKET_FRAMESZ},blocksz={AF_PACKET_FRAMESZ}");
        assert_eq!(
            with_af_packet_frames("--no-huge --vdev=net_af_packet0,iface=vb,qpairs=2 -m 512"),
            [
                "--no-huge".to_string(),
                format!("--vdev=net_af_packet0,iface=vb,qpairs=2,{big}"),
                "-m".into(),
                "512".into()
            ]
        );
        assert_eq!(
            with_af_packet_frames("--vdev net_af_packet1,iface=x"),
            ["--vdev".to_string(), format!("net_af_packet1,iface=x,{big}")]
        );
        assert_eq!(
            with_af_packet_frames("--vdev=net_af_packet0,iface=vb,framesz=2048"),
            ["--vdev=net_af_packet0,iface=vb,framesz=2048"]
        );
        assert_eq!(with_af_packet_frames("--vdev=net_pcap0,rx_pcap=a.pcap"), ["--vdev=net_pcap0,rx_pcap=a.pcap"]);
    }

    /// The wire length of a cut frame comes from its IP header (IPv4, IPv6, VLAN).
    #[test]
    fn wire_length_from_the_ip_header() {
        let mut v4 = vec![0u8; 60];
        v4[12..14].copy_from_slice(&[0x08, 0x00]);
        v4[16..18].copy_from_slice(&9000u16.to_be_bytes());
        assert_eq!(wire_len_from_ip(&v4), Some(14 + 9000));
        let mut v6 = vec![0u8; 80];
        v6[12..14].copy_from_slice(&[0x81, 0x00]);
        v6[16..18].copy_from_slice(&[0x86, 0xdd]);
        v6[22..24].copy_from_slice(&4000u16.to_be_bytes());
        assert_eq!(wire_len_from_ip(&v6), Some(18 + 40 + 4000));
        assert_eq!(wire_len_from_ip(&v4[..15]), None);
        assert_eq!(wire_len_from_ip(&[0u8; 40]), None, "not IP");
    }
}
