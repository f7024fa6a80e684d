//! DNS over UDP and TCP: `parser` (messages, compressed names) and `state` (TCP framing,
//! queries paired with responses).

pub mod parser;
pub mod state;

pub use parser::{Answer, AnswerData};
pub use state::{DnsKey, DnsState, DnsTransaction};
