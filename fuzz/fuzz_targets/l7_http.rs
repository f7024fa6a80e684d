//! HTTP/1.x: head, request and response parsers on the whole input, and `L7Flow` over
//! TCP port 80 on its segments (pipelining, chunked bodies, heads split anywhere).
//!
//! Input: segments separated by `#FRM`, each led by a direction byte. Asserted: no panic,
//! and `run_l7`'s checks.

#![no_main]

use libfuzzer_sys::fuzz_target;
use tapstat_fuzz::{l7_segments, run_l7};
use tapstat_l7::http::parser::{chunk_size, head_end, Request, Response};
use tapstat_l7::Transport;

fuzz_target!(|data: &[u8]| {
    if let Some(n) = head_end(data) {
        assert!(n <= data.len(), "the head ends within the input");
    }
    let _ = (chunk_size(data), Request::parse(data).map(|r| r.body()), Response::parse(data).map(|r| r.body(None)));
    run_l7(Transport::Tcp, 80, &l7_segments(data));
});
