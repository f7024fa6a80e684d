//! Analysis: what tapstat learns about each flow.
//!
//! The main types are [`Tracker`] (one per worker: the flow table, expiry, and the
//! analyzers; packets in, finished [`Flow`]s out through a [`FlowSink`]), [`Flow`]
//! (the state of one bidirectional flow, per direction in [`Dir`]) and the logs
//! ([`logs::TCP`], [`logs::UDP`], [`logs::OTHER`]) that declare every column once.
//!
//! ```
//! use tapstat_analyze::{Flow, FlowSink, Tracker, TrackerConfig};
//! struct Count(usize);
//! impl FlowSink for Count { fn on_flow_end(&mut self, _f: &Flow) { self.0 += 1; } }
//! let mut t = Tracker::new(TrackerConfig::default());
//! let mut out = Count(0);
//! t.finish(0, false, &mut out); // no packets, no flows
//! assert_eq!(out.0, 0);
//! ```
//!
//! Architecture invariant: analyzers never see the flow table and never do I/O; the
//! tracker is the only code that decides when a flow starts and ends, and it decides
//! from packet time only.

pub mod anon;
pub mod community_id;
pub mod dnhunter;
mod flow;
pub mod histo;
pub mod l7log;
pub mod logs;
pub mod nets;
pub mod periodic;
pub mod shunt;
pub mod stats;
pub mod tcp;
mod tracker;
pub mod tstat;

pub use flow::{ClientRule, Dir, EndReason, Flow, FlowId, Full, FullState, Kind, TcpFullState};
pub use tracker::{
    ClassTotals, FlowSink, InputClock, MovedFlow, Packet, TcpSets, Tracker, TrackerConfig, TrackerStats,
    DEFAULT_HELD_BUDGET, FLOW_HEAP_BYTES,
};
