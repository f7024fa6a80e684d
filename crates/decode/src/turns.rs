//! `SharedFrags`: one fragment table for several decoders that decode the chunks of
//! one input in parallel, handed to them in input order.
//!
//! The fragments of a datagram may fall in different chunks, and chunks go to
//! different decoders. A later fragment is resolved from what its first fragment put
//! in the table, so the table must see the fragments in input order, as one decoder
//! would. Each chunk is a *turn* (its sequence number in the input): a decoder begins
//! a turn before its chunk and ends it after. The first time a turn meets a fragment,
//! its decoder waits until every earlier turn has ended and takes the table; it gives
//! the table back when the turn ends. Turns that meet no fragment never wait, so a
//! capture without fragments decodes fully in parallel; a capture full of them decodes
//! its fragments one chunk at a time, in order, and the rest in parallel.
//!
//! Waits only point to earlier turns, and the earliest unfinished turn never waits, so
//! there is no deadlock as long as every turn begun is ended. A turn that will never
//! begin (the run was stopped and its chunk dropped) would hold the others back:
//! [`SharedFrags::abandon`] releases them (order is then no longer kept, which an
//! interrupted run does not need).

use crate::fragment::FragTable;
use std::collections::BTreeSet;
use std::sync::{Condvar, Mutex, MutexGuard};

/// The shared table and whose turn has ended.
pub struct SharedFrags {
    state: Mutex<State>,
    changed: Condvar,
}

struct State {
    /// The table, when no decoder holds it.
    table: Option<FragTable>,
    /// Every turn before this one has ended.
    next: u64,
    /// Turns at or after `next` that have ended.
    ended: BTreeSet<u64>,
    abandoned: bool,
}

impl SharedFrags {
    pub(crate) fn new(table: FragTable) -> Self {
        SharedFrags {
            state: Mutex::new(State { table: Some(table), next: 0, ended: BTreeSet::new(), abandoned: false }),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A decoder never panics while holding the lock (it only moves the table).
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until every turn before `turn` has ended and the table is free, then
    /// takes it.
    pub(crate) fn take(&self, turn: u64) -> FragTable {
        let mut s = self.lock();
        loop {
            if s.next >= turn || s.abandoned {
                if let Some(t) = s.table.take() {
                    return t;
                }
            }
            s = self.changed.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Ends `turn`, giving back the table if the turn held it.
    pub(crate) fn end(&self, turn: u64, table: Option<FragTable>) {
        let mut s = self.lock();
        if let Some(t) = table {
            s.table = Some(t);
        }
        s.ended.insert(turn);
        while s.ended.first() == Some(&s.next) {
            s.ended.pop_first();
            s.next += 1;
        }
        drop(s);
        self.changed.notify_all();
    }

    /// Stops keeping the order: waiting decoders take the table as soon as it is free.
    pub fn abandon(&self) {
        self.lock().abandoned = true;
        self.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A turn that needs the table waits for every earlier turn, whichever order the
    /// turns end in, and turns that do not need it run past.
    #[test]
    fn the_table_goes_to_turns_in_order() {
        let shared = Arc::new(SharedFrags::new(FragTable::new(4, 1, 0)));
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut hs = Vec::new();
        // Turns 3, 2, 1 take the table; turn 0 does not, and ends last.
        for turn in [3u64, 2, 1] {
            let (shared, order) = (shared.clone(), order.clone());
            hs.push(std::thread::spawn(move || {
                let t = shared.take(turn);
                order.lock().unwrap().push(turn);
                shared.end(turn, Some(t));
            }));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(order.lock().unwrap().is_empty(), "nobody may take the table before turn 0 ends");
        shared.end(0, None);
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(*order.lock().unwrap(), [1, 2, 3]);
    }

    /// After `abandon`, a turn waiting for one that will never come gets the table.
    #[test]
    fn abandon_releases_waiters() {
        let shared = Arc::new(SharedFrags::new(FragTable::new(4, 1, 0)));
        let s2 = shared.clone();
        let h = std::thread::spawn(move || {
            let t = s2.take(5);
            s2.end(5, Some(t));
        });
        std::thread::sleep(std::time::Duration::from_millis(20));
        shared.abandon();
        h.join().unwrap();
    }
}
