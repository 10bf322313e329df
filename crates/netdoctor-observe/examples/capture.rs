//! Live capture to a pcap file, for manual checks with tshark:
//! `capture PORT OUT.pcap SECONDS [INTERFACE]`. Prints the summary as JSON on stderr.

use netdoctor_observe::{LiveCapture, LiveConfig, PcapWriter};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        return Err("usage: capture PORT OUT.pcap SECONDS [INTERFACE]".into());
    }
    let mut cfg = LiveConfig::new(args[1].parse()?);
    cfg.interface = args.get(4).cloned();
    let secs: f64 = args[3].parse()?;
    let mut cap = LiveCapture::open(&cfg)?;
    let mut out = PcapWriter::create(args[2].as_ref(), cap.link_type(), cfg.snaplen)?;
    let stop = Arc::new(AtomicBool::new(false));
    let timer = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs_f64(secs));
            stop.store(true, Ordering::Relaxed);
        })
    };
    eprintln!("capturing tcp port {} for {secs} s", cfg.port);
    let mut write_err = None;
    let summary = cap.run(&stop, &mut |p| {
        if write_err.is_none()
            && let Err(e) = out.write(p)
        {
            write_err = Some(e);
        }
    })?;
    timer.join().ok();
    out.finish()?;
    if let Some(e) = write_err {
        return Err(e.into());
    }
    eprintln!(
        "packets={} drops={} warnings={:?}",
        summary.packets, summary.drops, summary.warnings
    );
    Ok(())
}
