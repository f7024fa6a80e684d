//! Flows: the canonical bidirectional [`FlowKey`], the seeded symmetric [`FlowHasher`],
//! and the per-worker [`FlowTable`] (bounded, LRU eviction of the oldest idle flow,
//! incremental garbage collection in packet time).
//!
//! ```
//! use tapstat_flow::{FlowHasher, FlowKey, FlowTable};
//! let h = FlowHasher::new(7);
//! let (k1, fwd) = FlowKey::new(4, 6, 0x0a000001, 1234, 0x0a000002, 80);
//! let (k2, rev) = FlowKey::new(4, 6, 0x0a000002, 80, 0x0a000001, 1234);
//! assert_eq!(k1, k2);            // one key for both directions
//! assert_ne!(fwd, rev);          // and the side the packet came from
//! assert_eq!(h.hash(&k1), h.hash(&k2));
//! let mut t: FlowTable<u32> = FlowTable::new(1024);
//! let (slot, evicted) = t.insert(k1, h.hash(&k1), 99, 1_000);
//! assert!(evicted.is_none());
//! assert_eq!(t.find(&k2, h.hash(&k2)), Some(slot));
//! ```
//!
//! Architecture invariant: the table knows nothing of what a flow is; expiry decisions
//! are the caller's (a predicate), so analyzers never see the table and the table
//! never sees a packet.

pub mod hash;
pub mod index;
mod key;
mod table;

pub use hash::{FlowHasher, HashKind};
pub use index::{AnyIndex, FlowIndex, IndexKind, Slots};
pub use key::{ip_of, FlowKey};
pub use table::{FlowTable, Gc, GcConfig, SlotId, BULK_MAX};
