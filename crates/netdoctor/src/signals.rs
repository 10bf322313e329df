//! Ctrl-C and SIGTERM for long runs: the first one asks the run to stop early (it then reports
//! what it measured, marked interrupted); a second one ends the process at once with the usual
//! code (130 for SIGINT, 143 for SIGTERM). Unregistered on drop.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

pub struct StopOnSignal {
    /// Set by either signal: the run's stop flag.
    pub stop: Arc<AtomicBool>,
    int: Arc<AtomicBool>,
    term: Arc<AtomicBool>,
    ids: Vec<signal_hook::SigId>,
}

impl StopOnSignal {
    pub fn new() -> StopOnSignal {
        let stop = Arc::new(AtomicBool::new(false));
        let (int, term) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let mut ids = Vec::new();
        for (sig, code, which) in [(libc::SIGINT, 130, &int), (libc::SIGTERM, 143, &term)] {
            // Order matters: the conditional shutdown sees the flag as it was before this signal.
            let regs = [
                signal_hook::flag::register_conditional_shutdown(sig, code, Arc::clone(&stop)),
                signal_hook::flag::register(sig, Arc::clone(&stop)),
                signal_hook::flag::register(sig, Arc::clone(which)),
            ];
            ids.extend(regs.into_iter().flatten());
        }
        StopOnSignal {
            stop,
            int,
            term,
            ids,
        }
    }

    /// The exit code the received signal calls for (130 or 143), if one arrived.
    pub fn exit_code(&self) -> Option<i32> {
        if self.int.load(Ordering::Relaxed) {
            Some(130)
        } else if self.term.load(Ordering::Relaxed) {
            Some(143)
        } else {
            None
        }
    }
}

impl Default for StopOnSignal {
    fn default() -> Self {
        StopOnSignal::new()
    }
}

impl Drop for StopOnSignal {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}
