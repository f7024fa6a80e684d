//! DPDK as a live source for tapstat (with the `dpdk` feature; without it this crate
//! is empty and nothing of DPDK is built).
//!
//! The main types are `Dpdk` (the EAL, started once per process from the
//! `--dpdk 'EAL ARGS'` string), `DpdkQueue` (one RX queue index on every port: a
//! `tapstat_capture::live::LiveSource` that one worker's acquisition thread polls)
//! and `PortDesc` (what was configured). Ports get one RX queue per worker and
//! RSS over IP, TCP and UDP with a symmetric key (0x6d5a repeated), so both
//! directions of a flow reach the same queue and so the same worker (DPDKStat,
//! DPDKStat §3.2; STA-COTS §III).
//!
//! ```ignore
//! use tapstat_capture::live::LiveSource;
//! use tapstat_dpdk::Dpdk;
//! let dpdk = Dpdk::init("--no-huge --no-pci --no-shconf -m 512 --vdev=net_pcap0,rx_pcap=trace.pcap")?;
//! let (mut queues, ports) = dpdk.open(1)?;
//! let n = queues[0].poll(&mut |f, bytes| println!("{} ns, {} bytes", f.ts_ns, bytes.len()))?;
//! println!("{n} frames from {}", ports[0].driver);
//! ```
//! (`ignore`: the example needs the `dpdk` feature and a run as root.)
//!
//! `rte_eth_rx_burst` and the mbuf accessors are static inline functions, so a
//! small C shim (`csrc/shim.c`, built by build.rs with `pkg-config libdpdk`'s flags)
//! wraps them in plain functions; `ffi` declares those, and only `port` calls them.

#[cfg(feature = "dpdk")]
mod ffi;
#[cfg(feature = "dpdk")]
mod port;

#[cfg(feature = "dpdk")]
pub use port::{Dpdk, DpdkError, DpdkQueue, PortDesc};
