//! The exporters: every ended flow (IPFIX) or record (Kafka) to a collector too,
//! each on a thread of its own fed by bounded queues of blocks.

pub(crate) mod blocks;
pub(crate) mod ipfix;
pub(crate) mod kafka;
