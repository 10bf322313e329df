//! Reads a pcap/pcapng file and prints packet count, bytes and the summary: `read FILE`.

use netdoctor_observe::{CaptureFile, PacketSource};
use std::ops::ControlFlow;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: read FILE")?;
    let mut cap = CaptureFile::open(path.as_ref())?;
    let (mut bytes, mut first, mut last) = (0u64, None, 0i64);
    let summary = cap.for_each_packet(&mut |p| {
        bytes += p.data.len() as u64;
        first.get_or_insert(p.ts_ns);
        last = p.ts_ns;
        ControlFlow::Continue(())
    })?;
    println!(
        "packets={} bytes={bytes} span_ns={} warnings={:?}",
        summary.packets,
        last - first.unwrap_or(last),
        summary.warnings
    );
    Ok(())
}
