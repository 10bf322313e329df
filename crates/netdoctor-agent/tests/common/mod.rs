//! Helpers shared by the agent's tests.

use netdoctor_core::analyze::{Analysis, Analyzer, AnalyzerConfig};
use netdoctor_observe::PacketSource;

/// The committed Nagle capture (testdata/captures/nagle-raw.pcap: every stalled request ~40 ms
/// or more, the first ones on each connection fast), analyzed by the core.
pub fn analyze_nagle_capture() -> Analysis {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/captures/nagle-raw.pcap");
    let mut file =
        netdoctor_observe::pcapfile::CaptureFile::open(&path).expect("committed capture");
    let mut analyzer = Analyzer::new(AnalyzerConfig::default());
    file.for_each_packet(&mut |p| {
        analyzer.push(p);
        std::ops::ControlFlow::Continue(())
    })
    .expect("capture reads");
    analyzer.finish()
}
