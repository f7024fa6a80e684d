//! HTTP/1.x: `parser` (heads, chunk lines) and `state` (per-direction stream parsers,
//! transactions paired in order) and `site` (Tstat's content classes of a request).

pub mod parser;
pub mod site;
pub mod state;

pub use state::{HttpLimits, HttpRequest, HttpResponse, HttpState, HttpTransaction};
