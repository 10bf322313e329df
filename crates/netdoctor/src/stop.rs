//! Stopping long work on a signal and still reporting: the first SIGINT (or SIGTERM, where
//! asked) ends the run early so it reports what it measured or read; a second one ends the
//! process at once with the usual code (130 for SIGINT, 143 for SIGTERM).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Sets `stop` on the given signals; a second signal while the flag is set ends the process.
/// Remembers which signal came, for the exit code. Unregistered on drop.
pub struct StopOnSignals {
    ids: Vec<signal_hook::SigId>,
    received: Vec<(libc::c_int, Arc<AtomicBool>)>,
}

impl StopOnSignals {
    pub fn new(stop: &Arc<AtomicBool>, signals: &[libc::c_int]) -> StopOnSignals {
        let mut ids = Vec::new();
        let mut received = Vec::new();
        for &sig in signals {
            let got = Arc::new(AtomicBool::new(false));
            // Order matters: the conditional shutdown sees the flag as it was before this signal.
            let regs = [
                signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, Arc::clone(stop)),
                signal_hook::flag::register(sig, Arc::clone(stop)),
                signal_hook::flag::register(sig, Arc::clone(&got)),
            ];
            ids.extend(regs.into_iter().flatten());
            received.push((sig, got));
        }
        StopOnSignals { ids, received }
    }

    /// Ctrl-C only (`load`, `connect`).
    pub fn sigint(stop: &Arc<AtomicBool>) -> StopOnSignals {
        StopOnSignals::new(stop, &[libc::SIGINT])
    }

    /// Ctrl-C and SIGTERM (`diagnose`).
    pub fn sigint_sigterm(stop: &Arc<AtomicBool>) -> StopOnSignals {
        StopOnSignals::new(stop, &[libc::SIGINT, libc::SIGTERM])
    }

    /// The exit code a received signal calls for (128 + the signal: 130, 143), if one came.
    pub fn exit_code(&self) -> Option<i32> {
        self.received
            .iter()
            .find(|(_, got)| got.load(Ordering::Relaxed))
            .map(|(sig, _)| 128 + sig)
    }
}

impl Drop for StopOnSignals {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}
