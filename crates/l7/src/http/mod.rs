//! HTTP/1.x: `parser` (heads, chunk lines) and `state` (per-direction stream parsers,
//! transactions paired in order) and `site` (Tstat's content classes of a request).
//!
//! # What is counted, what is paired, what is written
//!
//! - **Counts.** `HttpState::requests` and `responses` (the records' `http_req_cnt` and
//!   `http_res_cnt`) count every request and response head of the connection, as tshark
//!   and Tstat count HTTP messages: interim responses (1xx, RFC 9110 §15.2) are
//!   responses; a request sent again in a retransmitted segment is counted once (the
//!   stream is read once, in order). Neither the row cap nor the budget stops them: past
//!   either, heads are still delimited and parsed (to find where each body ends), not
//!   kept. Counting stops only where the stream cannot be followed: an unbounded body
//!   (read until close, a 101 upgrade, a CONNECT tunnel), a malformed head, a head over
//!   16 KiB; a gap in the capture resumes at the next segment that starts with a head.
//! - **Pairing.** A final response (2xx–5xx, or 101) answers the oldest request still
//!   waiting, in order (RFC 9112 §9.3.2), pipelined requests included, provided that
//!   request was sent before it (capture time). HEAD, 1xx, 204 and 304 responses have no
//!   body (RFC 9112 §6.3), whatever their Content-Length says. Interim responses are
//!   counted and skipped: the request pairs with the final response after them.
//! - **Lost messages.** The first final response after a gap in the server's stream
//!   answers the latest request sent before it; the requests before that one lost their
//!   responses in the gap and are written unanswered. (How many responses a gap took is
//!   not in the stream; browsers do not pipeline, so a client with several requests
//!   outstanding across a gap is one whose responses were lost. Pipelined requests that
//!   lose a response are the case this gets wrong.) The server's segments held beyond a
//!   hole (`crate::reorder`) keep their capture times, so requests sent while they were
//!   held wait for the responses after them. A response with no request sent before it
//!   (its request lost in the client's stream, or sent before the capture began) is
//!   written without a request; while the client's stream holds segments beyond a hole,
//!   such a response waits for them.
//! - **Rows.** One transaction per row: a request with its final response, a request
//!   unanswered (at the flow's end), a response without a request. The first
//!   `HttpLimits::max_transactions` (64) are written; later ones, and those completed
//!   after a direction used up its inspection budget (`HttpLimits::budget`, bytes of
//!   heads per direction), are not, and are counted in `HttpState::unlogged`; the flow
//!   gets `http_too_many_transactions` (or `budget_exhausted`) in `l7_events`, so a
//!   reader knows `log_http_complete` holds fewer rows than the counts say.
//! - **Bounds.** At most 32 requests wait for responses (past that, the oldest is
//!   written unanswered: a capture without the server's side counts every request), and
//!   32 responses for the client's held segments.

pub mod parser;
pub mod site;
pub mod state;

pub use state::{HttpLimits, HttpRequest, HttpResponse, HttpState, HttpTransaction};
