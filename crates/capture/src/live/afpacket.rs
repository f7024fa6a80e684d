//! `AF_PACKET` sockets with `TPACKET_V3` block rings, joined in one `PACKET_FANOUT_HASH`
//! group (packet(7), Documentation/networking/packet_mmap.rst).
//!
//! Why these choices:
//! - `TPACKET_V3` hands whole blocks of frames to user space at a time, so one
//!   status check covers many frames (the batching of DPDKStat §3.2), and frames are
//!   packed by their real size instead of a fixed frame slot.
//! - `PACKET_FANOUT_HASH` spreads flows over the sockets with the kernel's
//!   `__skb_get_hash_symmetric` (af_packet.c `fanout_demux_hash`): both directions of
//!   a TCP/UDP flow reach the same socket, so each worker owns its flows without a
//!   dispatcher. `PACKET_FANOUT_FLAG_DEFRAG` reassembles IP fragments before hashing,
//!   so a later fragment (which has no ports) cannot go to another worker.
//! - A socket receives nothing until every socket of the group has joined: each opens
//!   with a filter that drops everything, and the real filter replaces it once the
//!   group is complete. Otherwise a frame arriving between one socket's `bind` and
//!   its joining the group would be delivered twice.

use super::{BpfProgram, LiveError, LiveSource, LiveStats};
use crate::{FrameMeta, LinkType};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

/// `tpacket_versions::TPACKET_V3` (linux/if_packet.h).
const TPACKET_V3: libc::c_int = 2;

/// How to open the sockets of one interface.
#[derive(Clone, Debug)]
pub struct AfPacketConfig {
    pub iface: String,
    /// Bytes per ring block (a power of two, a multiple of the page size).
    pub block_bytes: u32,
    /// Blocks per socket's ring.
    pub blocks: u32,
    /// A block is handed to user space after this long even if not full.
    pub block_timeout_ms: u32,
    /// Compiled filter attached to every socket; `None` keeps every frame.
    pub filter: Option<BpfProgram>,
    /// Put the interface in promiscuous mode while the sockets are open.
    pub promisc: bool,
    /// Fanout group id; `None` picks one from the process id.
    pub group: Option<u16>,
}

impl AfPacketConfig {
    pub fn new(iface: &str) -> Self {
        AfPacketConfig {
            iface: iface.to_string(),
            block_bytes: 1 << 20,
            blocks: 64,
            block_timeout_ms: 10,
            filter: None,
            promisc: true,
            group: None,
        }
    }
}

/// What a frame may wait in the kernel beyond its block's timeout before a poll sees
/// it (the block being retired, a poll that was descheduled): the clock of a quiet
/// link stays this far behind the wall clock.
const WAIT_MARGIN_MS: u64 = 100;

/// One `AF_PACKET` socket and its memory-mapped ring.
pub struct AfPacket {
    fd: OwnedFd,
    ring: *mut u8,
    ring_len: usize,
    block_bytes: usize,
    blocks: usize,
    /// The block to look at next.
    cur: usize,
    link: LinkType,
    name: String,
    stats: LiveStats,
    /// A frame with its VLAN tag put back (the kernel moves it out of the frame).
    scratch: Vec<u8>,
    /// The longest a frame can wait in the kernel's ring before a poll sees it: the
    /// block's timeout and a margin for the kernel to retire it.
    wait_ns: u64,
}

// SAFETY: the ring mapping belongs to this value alone (it is unmapped in Drop and
// never shared); moving the value to another thread moves its only user.
unsafe impl Send for AfPacket {}

/// The link type of `iface` from sysfs (`ARPHRD_*`), or why it cannot be captured.
fn link_type(iface: &str) -> Result<LinkType, LiveError> {
    if iface.is_empty() || iface.contains('/') {
        return Err(LiveError::NoSuchInterface(iface.to_string()));
    }
    let path = format!("/sys/class/net/{iface}/type");
    let text = std::fs::read_to_string(&path).map_err(|_| LiveError::NoSuchInterface(iface.to_string()))?;
    let arphrd: u32 = text.trim().parse().unwrap_or(u32::MAX);
    match arphrd {
        // ARPHRD_ETHER; ARPHRD_LOOPBACK (frames carry a zeroed Ethernet header).
        1 | 772 => Ok(LinkType::ETHERNET),
        // ARPHRD_NONE (tun devices): bare IP packets.
        65534 => Ok(LinkType::RAW),
        _ => Err(LiveError::LinkType { iface: iface.to_string(), arphrd }),
    }
}

fn setsockopt<T>(fd: &OwnedFd, level: libc::c_int, name: libc::c_int, val: &T, what: &str) -> Result<(), LiveError> {
    // SAFETY: `val` points to a live `T` of `size_of::<T>()` bytes, which the kernel
    // only reads during the call.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (val as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(LiveError::os(what));
    }
    Ok(())
}

fn attach(fd: &OwnedFd, prog: &BpfProgram, what: &str) -> Result<(), LiveError> {
    let fprog =
        libc::sock_fprog { len: prog.insns.len() as u16, filter: prog.insns.as_ptr() as *mut libc::sock_filter };
    // SO_ATTACH_FILTER copies the program into the kernel during the call.
    setsockopt(fd, libc::SOL_SOCKET, libc::SO_ATTACH_FILTER, &fprog, what)
}

/// Opens `n` sockets on `cfg.iface`, all in one fanout group, each with its own ring.
pub fn open_fanout(cfg: &AfPacketConfig, n: usize) -> Result<Vec<AfPacket>, LiveError> {
    let link = link_type(&cfg.iface)?;
    let cname =
        std::ffi::CString::new(cfg.iface.as_str()).map_err(|_| LiveError::NoSuchInterface(cfg.iface.clone()))?;
    // SAFETY: `cname` is a valid NUL-terminated string for the duration of the call.
    let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) };
    if ifindex == 0 {
        return Err(LiveError::NoSuchInterface(cfg.iface.clone()));
    }
    if !cfg.block_bytes.is_power_of_two() || cfg.block_bytes < 4096 || cfg.blocks == 0 {
        return Err(LiveError::Unsupported(format!(
            "ring blocks must be a power of two of at least 4096 bytes (got {} x {})",
            cfg.blocks, cfg.block_bytes
        )));
    }
    let group = cfg.group.unwrap_or_else(|| (std::process::id() & 0xffff) as u16);
    let mut socks = Vec::with_capacity(n);
    for i in 0..n.max(1) {
        socks.push(AfPacket::open(cfg, ifindex, link, group, i)?);
    }
    // Every socket is in the group: now let frames in.
    for s in &socks {
        match &cfg.filter {
            Some(p) => attach(&s.fd, p, &format!("{}: attaching the filter", s.name))?,
            None => {
                let zero: libc::c_int = 0;
                setsockopt(&s.fd, libc::SOL_SOCKET, libc::SO_DETACH_FILTER, &zero, "detaching the start-up filter")?;
            }
        }
    }
    Ok(socks)
}

impl AfPacket {
    fn open(cfg: &AfPacketConfig, ifindex: u32, link: LinkType, group: u16, i: usize) -> Result<AfPacket, LiveError> {
        let name = format!("{}#{i}", cfg.iface);
        // Protocol 0: no frames until `bind` names the interface and ETH_P_ALL.
        // SAFETY: plain system call; the returned descriptor is checked before use.
        let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(LiveError::os(format!("{name}: opening an AF_PACKET socket")));
        }
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        attach(&fd, &BpfProgram::drop_all(), "attaching the start-up filter")?;
        setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_VERSION, &TPACKET_V3, "selecting TPACKET_V3")?;
        // Ask for the NIC's own receive timestamps where it is configured to give
        // them; frames are stamped in software (ns) otherwise. Failure is harmless.
        let ts: libc::c_int = libc::SOF_TIMESTAMPING_RAW_HARDWARE as libc::c_int;
        let _ = setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_TIMESTAMP, &ts, "PACKET_TIMESTAMP");
        let frame_size = 2048u32;
        let req = libc::tpacket_req3 {
            tp_block_size: cfg.block_bytes,
            tp_block_nr: cfg.blocks,
            tp_frame_size: frame_size,
            tp_frame_nr: (cfg.block_bytes / frame_size) * cfg.blocks,
            tp_retire_blk_tov: cfg.block_timeout_ms,
            tp_sizeof_priv: 0,
            tp_feature_req_word: libc::TP_FT_REQ_FILL_RXHASH,
        };
        setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_RX_RING, &req, &format!("{name}: setting up the ring"))?;
        let ring_len = cfg.block_bytes as usize * cfg.blocks as usize;
        // SAFETY: maps the ring the kernel just allocated for this socket; the result
        // is checked, and the mapping lives until Drop unmaps it.
        let ring = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                ring_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd.as_raw_fd(),
                0,
            )
        };
        if ring == libc::MAP_FAILED {
            return Err(LiveError::os(format!("{name}: mapping the ring ({ring_len} bytes)")));
        }
        let mut s = AfPacket {
            fd,
            ring: ring.cast(),
            ring_len,
            block_bytes: cfg.block_bytes as usize,
            blocks: cfg.blocks as usize,
            cur: 0,
            link,
            name,
            stats: LiveStats::default(),
            scratch: Vec::new(),
            wait_ns: (u64::from(cfg.block_timeout_ms) + WAIT_MARGIN_MS) * 1_000_000,
        };
        // SAFETY: sockaddr_ll is plain data; all-zero is a valid value.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        sll.sll_ifindex = ifindex as i32;
        // SAFETY: `sll` is a valid sockaddr_ll and the length given is its size.
        let rc = unsafe {
            libc::bind(
                s.fd.as_raw_fd(),
                (&sll as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(LiveError::os(format!("{}: binding to the interface", s.name)));
        }
        if cfg.promisc {
            // SAFETY: packet_mreq is plain data; all-zero is a valid value.
            let mut mr: libc::packet_mreq = unsafe { std::mem::zeroed() };
            mr.mr_ifindex = ifindex as i32;
            mr.mr_type = libc::PACKET_MR_PROMISC as u16;
            // The membership ends when the socket closes.
            setsockopt(&s.fd, libc::SOL_PACKET, libc::PACKET_ADD_MEMBERSHIP, &mr, "entering promiscuous mode")?;
        }
        let fanout: libc::c_int =
            (group as u32 | ((libc::PACKET_FANOUT_HASH | libc::PACKET_FANOUT_FLAG_DEFRAG) << 16)) as libc::c_int;
        setsockopt(
            &s.fd,
            libc::SOL_PACKET,
            libc::PACKET_FANOUT,
            &fanout,
            &format!("{}: joining fanout group {group} (is another capture using it?)", s.name),
        )?;
        // Reset the counters: what the start-up filter dropped is not a loss.
        s.read_kernel_stats();
        s.stats = LiveStats::default();
        Ok(s)
    }

    /// Adds the kernel's counters since the last read (reading resets them).
    fn read_kernel_stats(&mut self) {
        let mut st = libc::tpacket_stats_v3 { tp_packets: 0, tp_drops: 0, tp_freeze_q_cnt: 0 };
        let mut len = std::mem::size_of::<libc::tpacket_stats_v3>() as libc::socklen_t;
        // SAFETY: `st` and `len` are valid for writes of the sizes given.
        let rc = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                (&mut st as *mut libc::tpacket_stats_v3).cast(),
                &mut len,
            )
        };
        if rc == 0 {
            self.stats.kernel_drops += st.tp_drops as u64;
            self.stats.freezes += st.tp_freeze_q_cnt as u64;
        }
    }

    fn block(&self, i: usize) -> *mut libc::tpacket_block_desc {
        // SAFETY (of the pointer arithmetic): i < blocks, so the block lies inside
        // the mapping of blocks * block_bytes bytes.
        unsafe { self.ring.add(i * self.block_bytes).cast() }
    }
}

/// The block's status word, read with acquire ordering: the kernel writes the
/// frames, then sets TP_STATUS_USER.
///
/// # Safety
/// `bd` must point to a block descriptor inside a live ring mapping.
unsafe fn block_status(bd: *mut libc::tpacket_block_desc) -> &'static std::sync::atomic::AtomicU32 {
    // SAFETY: block_status is the first u32 of the (4-byte aligned) block header,
    // shared with the kernel, which only ever accesses it whole; the caller keeps the
    // mapping alive while the reference is used.
    unsafe { &*std::ptr::addr_of_mut!((*bd).hdr.bh1.block_status).cast::<std::sync::atomic::AtomicU32>() }
}

impl LiveSource for AfPacket {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn link(&self) -> LinkType {
        self.link
    }

    fn poll(&mut self, on_frame: &mut dyn FnMut(&FrameMeta, &[u8])) -> Result<usize, LiveError> {
        use std::sync::atomic::Ordering;
        let mut n = 0;
        for _ in 0..self.blocks {
            let bd = self.block(self.cur);
            // SAFETY: `bd` is a block of our live mapping.
            let status = unsafe { block_status(bd) };
            if status.load(Ordering::Acquire) & libc::TP_STATUS_USER == 0 {
                break;
            }
            // SAFETY: the block belongs to user space until we give it back below;
            // the kernel wrote its header and frames before setting TP_STATUS_USER
            // (acquire above), and every offset it wrote stays inside the block.
            unsafe {
                let h = &(*bd).hdr.bh1;
                let mut p = (bd as *const u8).add(h.offset_to_first_pkt as usize);
                for _ in 0..h.num_pkts {
                    let tp = &*(p as *const libc::tpacket3_hdr);
                    let data = std::slice::from_raw_parts(p.add(tp.tp_mac as usize), tp.tp_snaplen as usize);
                    let mut meta = FrameMeta {
                        ts_ns: tp.tp_sec as u64 * 1_000_000_000 + tp.tp_nsec as u64,
                        orig_len: tp.tp_len,
                        caplen: tp.tp_snaplen,
                        offset: 0,
                        link: self.link,
                    };
                    if tp.tp_status & libc::TP_STATUS_VLAN_VALID != 0
                        && data.len() >= 12
                        && self.link == LinkType::ETHERNET
                    {
                        // The kernel took the 802.1Q tag out of the frame; put it
                        // back, as libpcap does, so the decoder sees the wire's bytes.
                        let tpid = if tp.tp_status & libc::TP_STATUS_VLAN_TPID_VALID != 0 {
                            tp.hv1.tp_vlan_tpid
                        } else {
                            0x8100
                        };
                        self.scratch.clear();
                        self.scratch.extend_from_slice(&data[..12]);
                        self.scratch.extend_from_slice(&tpid.to_be_bytes());
                        self.scratch.extend_from_slice(&(tp.hv1.tp_vlan_tci as u16).to_be_bytes());
                        self.scratch.extend_from_slice(&data[12..]);
                        meta.orig_len += 4;
                        meta.caplen += 4;
                        on_frame(&meta, &self.scratch);
                    } else {
                        on_frame(&meta, data);
                    }
                    n += 1;
                    p = p.add(tp.tp_next_offset as usize);
                }
            }
            status.store(libc::TP_STATUS_KERNEL, Ordering::Release);
            self.cur = (self.cur + 1) % self.blocks;
        }
        Ok(n)
    }

    fn wait(&mut self, timeout: Duration) {
        let mut pfd = libc::pollfd { fd: self.fd.as_raw_fd(), events: libc::POLLIN | libc::POLLERR, revents: 0 };
        let ms = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
        // SAFETY: `pfd` is one valid pollfd for the duration of the call.
        unsafe { libc::poll(&mut pfd, 1, ms) };
    }

    fn stats(&mut self) -> LiveStats {
        self.read_kernel_stats();
        self.stats
    }

    /// The kernel stamps each frame with the wall clock as it takes it, and hands a
    /// block over at the latest its timeout after the block's first frame: a frame
    /// not handed out yet was taken no earlier than the wall clock less that wait
    /// (and a margin). A quiet link's flows end by this clock.
    fn pending_from_ns(&self) -> Option<u64> {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        Some((now.as_nanos() as u64).saturating_sub(self.wait_ns))
    }
}

impl Drop for AfPacket {
    fn drop(&mut self) {
        // SAFETY: `ring` and `ring_len` are exactly what mmap returned and took; no
        // reference into the ring outlives `poll`.
        unsafe { libc::munmap(self.ring.cast(), self.ring_len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_interface_is_named() {
        let e = open_fanout(&AfPacketConfig::new("tapstat-nope0"), 1).err().expect("no such interface");
        assert!(matches!(e, LiveError::NoSuchInterface(_)), "{e}");
        assert!(e.to_string().contains("tapstat-nope0"));
    }

    #[test]
    fn loopback_opens_or_says_why() {
        // As root this opens two sockets on lo; without CAP_NET_RAW it must say so.
        match open_fanout(&AfPacketConfig { blocks: 2, ..AfPacketConfig::new("lo") }, 2) {
            Ok(mut s) => {
                assert_eq!(s.len(), 2);
                assert_eq!(s[0].link(), LinkType::ETHERNET);
                assert_eq!(s[1].stats(), LiveStats::default());
            }
            Err(e) => assert!(matches!(e, LiveError::Permission { .. }), "{e}"),
        }
    }
}
