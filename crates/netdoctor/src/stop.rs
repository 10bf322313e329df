//! Stopping long work on a signal and still reporting: the first SIGINT (or SIGTERM, where
//! asked) ends the run early so it reports what it measured or read; a second one ends the
//! process at once with the usual code (130 for SIGINT, 143 for SIGTERM).

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Sets `stop` on the given signals; a second signal while the flag is set ends the process.
/// Unregistered on drop.
pub struct StopOnSignals {
    ids: Vec<signal_hook::SigId>,
}

impl StopOnSignals {
    pub fn new(stop: &Arc<AtomicBool>, signals: &[libc::c_int]) -> StopOnSignals {
        let mut ids = Vec::new();
        for &sig in signals {
            // Order matters: the conditional shutdown sees the flag as it was before this signal.
            if let Ok(id) =
                signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, Arc::clone(stop))
            {
                ids.push(id);
            }
            if let Ok(id) = signal_hook::flag::register(sig, Arc::clone(stop)) {
                ids.push(id);
            }
        }
        StopOnSignals { ids }
    }

    /// Ctrl-C only (`load`, `connect`).
    pub fn sigint(stop: &Arc<AtomicBool>) -> StopOnSignals {
        StopOnSignals::new(stop, &[libc::SIGINT])
    }
}

impl Drop for StopOnSignals {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}
