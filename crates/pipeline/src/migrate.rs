//! Flow migration between workers (`--schedule balance|bundle`): when the scheduler
//! moves bins, each worker mails the flows of the bins it gives away to their new owners.

use crate::schedule::{Table, BINS};
use crate::worker::Worker;
use std::collections::BTreeMap;

use tapstat_flow::FlowHasher;

/// Flows of moved bins from one worker to another: (epoch, giving worker, flows).
pub(crate) type Mail = (u64, usize, Vec<tapstat_analyze::MovedFlow>);

/// A worker's mailboxes for the flows of moved bins.
pub(crate) struct Mailboxes {
    pub(crate) me: usize,
    pub(crate) inbox: crossbeam_channel::Receiver<Mail>,
    pub(crate) outboxes: Vec<crossbeam_channel::Sender<Mail>>,
    /// Mail of a later epoch that came before this worker got there.
    pub(crate) early: Vec<Mail>,
    /// Flows received.
    pub(crate) moved_in: u64,
}

impl Mailboxes {
    /// Between two chunks, at the start of an epoch whose table `t` moved bins: sends
    /// the flows of the bins this worker gives away to their new workers (one message
    /// to each taker, empty or not), then takes the flows of the bins it receives. A
    /// worker sends before it waits, and sending never blocks, so no worker waits for
    /// one that waits for it.
    pub(crate) fn exchange(&mut self, work: &mut Worker, t: &Table) {
        let me = self.me as u16;
        let takers: std::collections::BTreeSet<u16> = t.moves.iter().filter(|m| m.1 == me).map(|m| m.2).collect();
        if !takers.is_empty() {
            let mut giving = vec![false; BINS];
            for &(bin, from, _) in &t.moves {
                giving[bin as usize] = from == me;
            }
            let flows = work.tracker.take_flows(|h| giving[FlowHasher::bin_of(h, BINS)]);
            let mut by_taker: BTreeMap<u16, Vec<tapstat_analyze::MovedFlow>> =
                takers.iter().map(|&to| (to, Vec::new())).collect();
            for f in flows {
                if let Some(v) = by_taker.get_mut(&(t.worker_of(f.hash()) as u16)) {
                    v.push(f);
                }
            }
            for (to, v) in by_taker {
                // A taker gone (it stopped) takes nothing; the flows are dropped with
                // the run.
                let _ = self.outboxes[to as usize].send((t.epoch, self.me, v));
            }
        }
        let mut givers: std::collections::BTreeSet<usize> =
            t.moves.iter().filter(|m| m.2 == me).map(|m| m.1 as usize).collect();
        let mut i = 0;
        while i < self.early.len() {
            if self.early[i].0 == t.epoch && givers.remove(&self.early[i].1) {
                let (_, _, v) = self.early.swap_remove(i);
                self.moved_in += v.len() as u64;
                work.tracker.put_flows(v, &mut work.rout);
            } else {
                i += 1;
            }
        }
        while !givers.is_empty() {
            let Ok(m) = self.inbox.recv() else { break };
            if m.0 == t.epoch && givers.remove(&m.1) {
                self.moved_in += m.2.len() as u64;
                work.tracker.put_flows(m.2, &mut work.rout);
            } else {
                self.early.push(m);
            }
        }
    }
}
