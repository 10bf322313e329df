//! Fuzz target: arbitrary bytes as a capture file, read through [`CaptureFile`] into an
//! [`Analyzer`].
//!
//! `CaptureFile` only opens paths (it streams from a `File`), so each input is written to a
//! scratch file on tmpfs (`/dev/shm` when present), opened, and unlinked at once: the open file
//! descriptor keeps it readable and nothing is left behind. libFuzzer's `-malloc_limit_mb`
//! (default: the RSS limit) turns an allocation sized from a hostile length field into a crash.
//!
//! Checked besides "no panic": every packet handed out is at most `MAX_CAPLEN` bytes, the
//! reader's packet count matches the callbacks, and the analyzer saw each packet once.
#![no_main]

use libfuzzer_sys::fuzz_target;
use netdoctor_core::{Analyzer, AnalyzerConfig};
use netdoctor_observe::pcapfile::MAX_CAPLEN;
use netdoctor_observe::{CaptureFile, PacketSource};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::OnceLock;

fn scratch() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = if std::path::Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        dir.join(format!("netdoctor-fuzz-{}.cap", std::process::id()))
    })
}

fuzz_target!(|data: &[u8]| {
    let path = scratch();
    std::fs::write(path, data).expect("write scratch capture file");
    let opened = CaptureFile::open(path);
    std::fs::remove_file(path).expect("remove scratch capture file");
    let Ok(mut file) = opened else {
        return;
    };
    let mut analyzer = Analyzer::new(AnalyzerConfig::default());
    let mut seen = 0u64;
    let result = file.for_each_packet(&mut |p| {
        assert!(
            p.data.len() <= MAX_CAPLEN as usize,
            "packet of {} bytes",
            p.data.len()
        );
        seen += 1;
        analyzer.push(p);
        ControlFlow::Continue(())
    });
    match &result {
        Ok(summary) => assert_eq!(summary.packets, seen),
        // Each error renders as one line.
        Err(e) => {
            let msg = e.to_string();
            assert!(!msg.contains('\n'), "{msg}");
        }
    }
    let analysis = analyzer.finish();
    assert_eq!(analysis.stats.packets, seen);
});
