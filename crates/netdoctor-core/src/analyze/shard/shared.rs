//! The one piece of state that is not per connection: how many connections each endpoint
//! was seen in ([`super::super::orient::Shared`]), which orients connections picked up
//! mid-stream without a telling payload. A single analyzer reads the counts as they are when
//! the packet arrives; a shard worker must read the same, so it asks here for the counts as
//! of frame `f` (a frame is numbered here by its place in the order pushed, `Frame::seq`, as
//! the merge orders conclusions: a reader merging a file's runs by time pushes frames out of
//! frame-number order): it waits until every other worker has processed its packets before `f`
//! (progress is published at the end of each batch and by a worker about to wait, so two
//! waiting workers never wait on each other), merges the notes before `f` in frame order,
//! and subtracts those merged from later frames. Only the cold path asks (a connection
//! oriented neither by its handshake, a server port nor its payload).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use super::super::flow::Endpoint;
use super::super::orient::{note, uses};

pub(in crate::analyze) struct Global {
    inner: Mutex<Inner>,
    cv: Condvar,
}

struct Inner {
    /// Per worker: every packet it was given with a frame up to this one is processed.
    progress: Vec<u64>,
    /// Per worker: its notes not merged yet, in frame order.
    pending: Vec<VecDeque<(u64, Endpoint)>>,
    /// Merged counts (as a single analyzer's, notes merged in frame order).
    counts: BTreeMap<Endpoint, u32>,
    /// Merged notes a worker may still need to look back past.
    recent: VecDeque<(u64, Endpoint)>,
    /// Workers waiting on the others' progress: with none, progress wakes nobody (a
    /// `notify_all` is a futex call even with no waiter: two a round, session 22).
    waiting: usize,
}

impl Global {
    pub(in crate::analyze) fn new(workers: usize) -> Arc<Global> {
        Arc::new(Global {
            inner: Mutex::new(Inner {
                progress: vec![0; workers],
                pending: vec![VecDeque::new(); workers],
                counts: BTreeMap::new(),
                recent: VecDeque::new(),
                waiting: 0,
            }),
            cv: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A worker that panicked while holding the lock left consistent counts (every update
        // is one push or one map entry): go on.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Worker `w` processed its packets up to `frame`; its notes so far come along.
    pub(in crate::analyze) fn publish(
        &self,
        w: usize,
        frame: u64,
        notes: &mut Vec<(u64, Endpoint)>,
    ) {
        let mut g = self.lock();
        g.pending[w].extend(notes.drain(..));
        g.progress[w] = g.progress[w].max(frame);
        let wake = g.waiting > 0;
        drop(g);
        if wake {
            self.cv.notify_all();
        }
    }
}

/// A worker's side: notes are buffered and published with its progress.
pub(in crate::analyze) struct Handle {
    g: Arc<Global>,
    me: usize,
    frame: Cell<u64>,
    notes: RefCell<Vec<(u64, Endpoint)>>,
}

impl Handle {
    pub(in crate::analyze) fn new(g: Arc<Global>, me: usize) -> Handle {
        Handle {
            g,
            me,
            frame: Cell::new(0),
            notes: RefCell::new(Vec::new()),
        }
    }

    /// The frame being processed.
    #[inline]
    pub(in crate::analyze) fn at(&self, frame: u64) {
        self.frame.set(frame);
    }

    pub(in crate::analyze) fn note(&self, e: Endpoint) {
        self.notes.borrow_mut().push((self.frame.get(), e));
    }

    /// Every packet up to `frame` is processed (end of a batch; `u64::MAX` at the end).
    pub(in crate::analyze) fn publish(&self, frame: u64) {
        self.g.publish(self.me, frame, &mut self.notes.borrow_mut());
    }

    /// The connections `a` and `b` were seen in before the current frame, over all workers,
    /// and in this worker's notes of the current frame so far (as a single analyzer counts).
    pub(in crate::analyze) fn uses(&self, a: &Endpoint, b: &Endpoint) -> (u32, u32) {
        let f = self.frame.get();
        let before = f.saturating_sub(1);
        let mut g = self.g.lock();
        g.pending[self.me].extend(self.notes.borrow_mut().drain(..));
        g.progress[self.me] = g.progress[self.me].max(before);
        if g.waiting > 0 {
            self.g.cv.notify_all();
        }
        while g.progress.iter().any(|p| *p < before) {
            g.waiting += 1;
            g = self.g.cv.wait(g).unwrap_or_else(|e| e.into_inner());
            g.waiting -= 1;
        }
        let Inner {
            pending,
            counts,
            recent,
            progress,
            ..
        } = &mut *g;
        // Merge the notes before `f`, oldest first (the order a single analyzer noted them),
        // and this worker's own notes of frame `f` so far: a single analyzer sees a note made
        // earlier in the same packet (a connection opened at `f` and re-oriented at once).
        // Only the worker processing `f` notes at `f`.
        loop {
            let next = pending
                .iter()
                .enumerate()
                .filter_map(|(w, q)| q.front().filter(|n| n.0 <= f).map(|n| (n.0, w)))
                .min();
            let Some((_, w)) = next else { break };
            let n = pending[w].pop_front().expect("front was seen");
            note(counts, n.1);
            recent.push_back(n);
        }
        // A worker's next question is past its progress: older notes are not looked back to.
        let low = progress.iter().copied().min().unwrap_or(0);
        while recent.front().is_some_and(|n| n.0 <= low) {
            recent.pop_front();
        }
        // Notes merged from frames after `f` (another worker is ahead) do not count yet.
        let later = |e: &Endpoint| {
            let n = recent
                .iter()
                .rev()
                .take_while(|n| n.0 > f)
                .filter(|n| n.1 == *e)
                .count();
            u32::try_from(n).unwrap_or(u32::MAX)
        };
        (
            uses(counts, a).saturating_sub(later(a)),
            uses(counts, b).saturating_sub(later(b)),
        )
    }
}
