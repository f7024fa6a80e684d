//! The integration tests of the `tapstat` binary, in one test binary: one link instead
//! of one per file (each module was a test binary of its own). The tests that replay
//! traffic at a rate through the live path (live, outputs, replay, ipfix) stay binaries
//! of their own, so that no other test loads the machine while they measure drops; so
//! do those of the optional features (dpdk, kafka, chain, parquet).

#[path = "../common/mod.rs"]
mod common;

mod anonymize;
mod cli;
mod clickhouse;
mod clock;
mod community_id;
mod encapsulations;
mod escapes;
mod files;
mod flags;
mod flowtable;
mod fragment_payloads;
mod golden;
mod histograms;
mod http_pairing;
mod l7;
mod load;
mod malformed;
mod memory;
mod nets;
mod nfstream;
mod oracles;
mod periodic;
mod profiles;
mod report;
mod sample;
mod tcp_fragments;
mod tcptrace;
mod time_format;
mod tshark_retx;
mod tsrtt;
mod tstat;
mod workers;
