//! HTTP/1.x: `parser` (heads, chunk lines) and `state` (per-direction stream parsers,
//! transactions paired in order).

pub mod parser;
pub mod state;

pub use state::{HttpLimits, HttpRequest, HttpResponse, HttpState, HttpTransaction};
