//! What the Kafka export needs of a Kafka client ([`Broker`]), so that the exporter's
//! rules (the spool, the order, the counts) are one piece of code whatever the client:
//! librdkafka's producer with `--features kafka` (`crate::kafka::Producer`), a stand-in
//! in the exporter's unit tests.

use std::time::Duration;

/// What became of a record handed to [`Broker::send`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sent {
    /// In the client's queue: a [`Report`] will say what became of it.
    Queued,
    /// Not taken: the client's queue is full (or the client cannot take records now).
    /// The record can be given again later.
    Full,
    /// Not taken, and never will be (a record larger than the broker takes): lost.
    Refused(String),
}

/// The end of a record that [`Broker::send`] queued.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The broker has it (acknowledged by every in-sync replica).
    Delivered,
    /// Given back undelivered (purged at the end of a run, timed out): the whole frame,
    /// to be sent again. `in_flight`: it was on its way to the broker when it was
    /// given back, so the broker may have it already.
    Undelivered { frame: Vec<u8>, error: String, in_flight: bool },
    /// The client gave up on it for good (what it could retry, it retried): lost.
    Failed(String),
}

/// A delivery report: the sequence number the record was sent with, and its end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    pub seq: u64,
    pub outcome: Outcome,
}

/// A Kafka client as the exporter drives it. Records are frames
/// ([`crate::spool::push_frame`]: log name, key, value); the log's topic is the
/// client's business.
pub trait Broker: Send {
    /// Hands one record to the client, numbered `seq` (increasing with every record
    /// queued).
    fn send(&mut self, frame: &[u8], seq: u64) -> Sent;
    /// Waits up to `wait` for delivery reports, appending them to `out`.
    fn poll(&mut self, wait: Duration, out: &mut Vec<Report>);
    /// Records queued and not yet reported.
    fn in_flight(&self) -> u64;
    /// Gives back every record not yet delivered: each gets a report
    /// ([`Outcome::Undelivered`]) at the next polls.
    fn purge(&mut self);
    /// The latest error of the client as a whole (a broker that cannot be reached),
    /// taken: `None` when there was none since the last call.
    fn take_error(&mut self) -> Option<String>;
}
