//! Ctrl-C (SIGINT/SIGTERM/SIGHUP) during a lab's life tears it down before the process exits.

use crate::teardown::teardown;
use crate::{LIFECYCLE, LabConfig, LabError};

/// Spawns a thread that, on SIGINT/SIGTERM/SIGHUP, tears down the lab with this config and exits
/// the process with status 130 — used by `demo` and `lab start` so Ctrl-C leaves nothing behind.
/// If the signal arrives while [`Lab::start`](crate::Lab::start) runs, the teardown waits for it to finish first.
pub fn cleanup_on_signal(cfg: &LabConfig) -> Result<(), LabError> {
    use signal_hook::consts::signal::{SIGHUP, SIGINT, SIGTERM};
    cfg.validate()?;
    let mut signals =
        signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]).map_err(|source| {
            LabError::Io {
                op: "register SIGINT/SIGTERM/SIGHUP handlers".to_string(),
                source,
            }
        })?;
    let cfg = cfg.clone();
    std::thread::Builder::new()
        .name("netdoctor-lab-signals".to_string())
        .spawn(move || {
            if let Some(sig) = signals.forever().next() {
                let _lock = LIFECYCLE.lock().unwrap_or_else(|e| e.into_inner());
                match teardown(&cfg) {
                    Ok(removed) if removed.is_empty() => {
                        eprintln!(
                            "netdoctor lab {}: signal {sig}, nothing to remove",
                            cfg.name
                        )
                    }
                    Ok(removed) => eprintln!(
                        "netdoctor lab {}: signal {sig}, removed {}",
                        cfg.name,
                        removed.join(", ")
                    ),
                    Err(e) => eprintln!("netdoctor lab {}: signal {sig}: {e}", cfg.name),
                }
                std::process::exit(130);
            }
        })
        .map_err(|source| LabError::Io {
            op: "spawn signal thread".to_string(),
            source,
        })?;
    Ok(())
}
