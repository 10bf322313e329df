//! Ctrl-C during `load` and `connect`: the first SIGINT ends the run early so it still reports
//! what it measured; a second one ends the process.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// SIGINT sets `stop` (the run ends early and reports what it measured); a second SIGINT while
/// the flag is set ends the process. Unregistered on drop.
pub struct StopOnSigint {
    ids: Vec<signal_hook::SigId>,
}

impl StopOnSigint {
    pub fn new(stop: &Arc<AtomicBool>) -> StopOnSigint {
        let mut ids = Vec::new();
        // Order matters: the conditional shutdown sees the flag as it was before this signal.
        if let Ok(id) =
            signal_hook::flag::register_conditional_shutdown(libc::SIGINT, 130, Arc::clone(stop))
        {
            ids.push(id);
        }
        if let Ok(id) = signal_hook::flag::register(libc::SIGINT, Arc::clone(stop)) {
            ids.push(id);
        }
        StopOnSigint { ids }
    }
}

impl Drop for StopOnSigint {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}
