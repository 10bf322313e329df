//! Throughput of the analysis engine: packets per second on one core, for decoding alone and
//! for the full pipeline (decode + TCP reconstruction + HTTP exchanges + detectors +
//! `finish`).
//!
//! `cargo bench -p netdoctor-core --bench analyze` (harness = false, plain `Instant`; no
//! criterion: the numbers we need are one ratio per input, and a noisy shared machine is better
//! served by best-of-N rounds than by criterion's statistics).
//!
//! Inputs, all loaded into memory first (reading and pcap parsing are not measured):
//! - `corpus`: every committed capture in `testdata/captures/` (18 files, ~12k packets: Nagle stalls on
//!   five link types, IPv6, loss, RTO, resets, zero windows, short connections...). Each
//!   capture is replayed `REPLAYS` times back to back through ONE [`Analyzer`] per capture,
//!   timestamps shifted by the capture's span (plus 1 s) per replay and frame numbers
//!   continued, so each replay looks like the same traffic happening again later: closed
//!   connections are opened again by their SYN (same 4-tuple, which the analyzer treats as
//!   port reuse), unclosed ones are replaced. This measures steady-state per-packet cost with
//!   a small connection table (the table never grows past one replay's connections).
//! - `big`: a large realistic capture when one is present (`NETDOCTOR_BENCH_BIG`, else
//!   `/tmp/netdoctor-bench-cache/healthy-big.pcap` made by `bench/analyze-vs-tshark.sh`:
//!   ~1 M packets of wrk against nginx on loopback, 100 keep-alive connections), fed once
//!   per round through a fresh analyzer.
//!
//! `NETDOCTOR_BENCH_DUMP=dir`: instead of measuring, write each input's analysis as JSON
//! into `dir` (compare two builds with `diff -r`).
//!
//! Environment: `NETDOCTOR_BENCH_REPLAYS` (default 20), `NETDOCTOR_BENCH_ROUNDS` (default 5;
//! the best round is printed, the median next to it), `NETDOCTOR_BENCH_BIG` (a path, or `0` to
//! skip), `NETDOCTOR_BENCH_CORPUS=0` (skip the corpus). For instruction counts under valgrind
//! use e.g. `NETDOCTOR_BENCH_ROUNDS=1 NETDOCTOR_BENCH_CORPUS=0` and a 100k-packet excerpt of
//! the big capture (`tcpdump -r big.pcap -c 100000 -w excerpt.pcap`).

use std::path::{Path, PathBuf};
use std::time::Instant;

use netdoctor_core::{Analyzer, AnalyzerConfig, LinkType, RawPacket, decode};
use pcap_parser::{PcapBlockOwned, PcapError, create_reader};

/// One capture in memory: packet bytes in one buffer, no allocation per packet.
struct Capture {
    name: String,
    link: LinkType,
    bytes: Vec<u8>,
    /// (timestamp ns, offset into `bytes`, captured length, original length)
    pkts: Vec<(i64, usize, u32, u32)>,
}

impl Capture {
    fn span_ns(&self) -> i64 {
        match (self.pkts.first(), self.pkts.last()) {
            (Some(a), Some(b)) => b.0 - a.0,
            _ => 0,
        }
    }

    /// Calls `f` for every packet of `replays` back-to-back replays.
    fn replay(&self, replays: u32, mut f: impl FnMut(&RawPacket<'_>)) {
        let shift = self.span_ns() + 1_000_000_000;
        let mut frame = 0u64;
        for r in 0..replays {
            let dt = i64::from(r) * shift;
            for &(ts, off, len, orig) in &self.pkts {
                frame += 1;
                f(&RawPacket {
                    frame,
                    ts_ns: ts + dt,
                    link: self.link,
                    data: &self.bytes[off..off + len as usize],
                    orig_len: orig,
                });
            }
        }
    }
}

fn load(path: &Path) -> Result<Capture, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("open {}: {e}", path.display()))?;
    let mut reader =
        create_reader(1 << 20, file).map_err(|e| format!("read {}: {e:?}", path.display()))?;
    let mut cap = Capture {
        name: path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into(),
        link: LinkType::Ethernet,
        bytes: Vec::new(),
        pkts: Vec::new(),
    };
    let mut nanos = false;
    let mut res = 1_000_000u64;
    let push = |cap: &mut Capture, ts: i64, data: &[u8], caplen: u32, orig: u32| {
        let data = &data[..(caplen as usize).min(data.len())];
        cap.pkts
            .push((ts, cap.bytes.len(), data.len() as u32, orig));
        cap.bytes.extend_from_slice(data);
    };
    loop {
        match reader.next() {
            Ok((offset, block)) => {
                match block {
                    PcapBlockOwned::LegacyHeader(h) => {
                        cap.link = LinkType::from_pcap(h.network.0 as u32)
                            .ok_or_else(|| format!("{}: link type", path.display()))?;
                        nanos = h.is_nanosecond_precision();
                    }
                    PcapBlockOwned::Legacy(b) => {
                        let sub = if nanos { 1 } else { 1000 };
                        let ts = i64::from(b.ts_sec) * 1_000_000_000 + i64::from(b.ts_usec) * sub;
                        push(&mut cap, ts, b.data, b.caplen, b.origlen);
                    }
                    PcapBlockOwned::NG(pcap_parser::Block::InterfaceDescription(idb)) => {
                        cap.link = LinkType::from_pcap(idb.linktype.0 as u32)
                            .ok_or_else(|| format!("{}: link type", path.display()))?;
                        res = idb.ts_resolution().unwrap_or(1_000_000).max(1);
                    }
                    PcapBlockOwned::NG(pcap_parser::Block::EnhancedPacket(epb)) => {
                        let units = (u64::from(epb.ts_high) << 32) | u64::from(epb.ts_low);
                        let ts = (units as i128 * 1_000_000_000 / res as i128) as i64;
                        push(&mut cap, ts, epb.data, epb.caplen, epb.origlen);
                    }
                    _ => {}
                }
                reader.consume(offset);
            }
            Err(PcapError::Eof) => break,
            Err(PcapError::Incomplete(_)) => reader
                .refill()
                .map_err(|e| format!("read {}: {e:?}", path.display()))?,
            Err(e) => return Err(format!("read {}: {e:?}", path.display())),
        }
    }
    Ok(cap)
}

fn env_num(name: &str, default: u32) -> u32 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Runs `f` (which returns the packets it handled) `rounds` times; (best, median) packets/s.
fn measure(rounds: u32, mut f: impl FnMut() -> u64) -> (f64, f64) {
    let mut rates: Vec<f64> = (0..rounds.max(1))
        .map(|_| {
            let t = Instant::now();
            let n = f();
            n as f64 / t.elapsed().as_secs_f64()
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    (rates[rates.len() - 1], rates[rates.len() / 2])
}

fn decode_all(caps: &[Capture], replays: u32) -> u64 {
    let mut n = 0u64;
    let mut sink = 0u64;
    for c in caps {
        c.replay(replays, |p| {
            n += 1;
            if let Ok(Some(s)) = decode(p) {
                sink = sink.wrapping_add(u64::from(s.seq) ^ u64::from(s.payload_len));
            }
        });
    }
    std::hint::black_box(sink);
    n
}

fn analyze_all(caps: &[Capture], replays: u32) -> u64 {
    let mut n = 0u64;
    for c in caps {
        let mut a = Analyzer::new(AnalyzerConfig::default());
        c.replay(replays, |p| {
            n += 1;
            a.push(p);
        });
        std::hint::black_box(a.finish());
    }
    n
}

fn report(label: &str, packets: u64, (best, median): (f64, f64)) {
    println!(
        "{label:<28} {packets:>10} packets   best {:>6.2} M pkt/s   median {:>6.2} M pkt/s",
        best / 1e6,
        median / 1e6
    );
}

fn main() {
    let replays = env_num("NETDOCTOR_BENCH_REPLAYS", 20).max(1);
    let rounds = env_num("NETDOCTOR_BENCH_ROUNDS", 5).max(1);
    if let Ok(dir) = std::env::var("NETDOCTOR_BENCH_DUMP") {
        dump(Path::new(&dir));
        return;
    }
    if std::env::var("NETDOCTOR_BENCH_CORPUS").as_deref() != Ok("0") {
        corpus(replays, rounds);
    }
    big(rounds);
}

/// Writes the JSON analysis of each committed capture (replayed twice) and of the big one
/// into `dir`, to compare two builds' results byte for byte.
fn dump(dir: &Path) {
    let mut paths = corpus_paths();
    let big = std::env::var("NETDOCTOR_BENCH_BIG")
        .unwrap_or_else(|_| "/tmp/netdoctor-bench-cache/healthy-big.pcap".into());
    if Path::new(&big).exists() {
        paths.push(PathBuf::from(big));
    }
    for p in paths {
        let cap = load(&p).unwrap_or_else(|e| panic!("{e}"));
        let mut a = Analyzer::new(AnalyzerConfig::default());
        cap.replay(2, |pkt| a.push(pkt));
        let json = serde_json::to_string_pretty(&a.finish()).expect("serialize");
        let out = dir.join(format!("{}.json", cap.name));
        std::fs::write(&out, json).unwrap_or_else(|e| panic!("write {}: {e}", out.display()));
    }
}

fn corpus_paths() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/captures");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read dir {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pcap" || x == "pcapng"))
        .collect();
    names.sort();
    names
}

fn corpus(replays: u32, rounds: u32) {
    let names = corpus_paths();
    let caps: Vec<Capture> = names
        .iter()
        .map(|p| load(p).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    let per_replay: usize = caps.iter().map(|c| c.pkts.len()).sum();
    println!(
        "corpus: {} captures, {per_replay} packets, replayed {replays}x; {rounds} rounds",
        caps.len()
    );
    let n = decode_all(&caps, replays);
    report(
        "corpus decode",
        n,
        measure(rounds, || decode_all(&caps, replays)),
    );
    report(
        "corpus full pipeline",
        n,
        measure(rounds, || analyze_all(&caps, replays)),
    );
}

fn big(rounds: u32) {
    let big = std::env::var("NETDOCTOR_BENCH_BIG")
        .unwrap_or_else(|_| "/tmp/netdoctor-bench-cache/healthy-big.pcap".into());
    if big == "0" || !Path::new(&big).exists() {
        println!("big: skipped (no {big}; set NETDOCTOR_BENCH_BIG to a capture)");
        return;
    }
    let t = Instant::now();
    let cap = match load(Path::new(&big)) {
        Ok(c) => c,
        Err(e) => {
            println!("big: skipped ({e})");
            return;
        }
    };
    println!(
        "big: {} ({} packets, {} MiB, loaded in {:.1} s)",
        cap.name,
        cap.pkts.len(),
        cap.bytes.len() >> 20,
        t.elapsed().as_secs_f64()
    );
    let caps = [cap];
    let n = caps[0].pkts.len() as u64;
    report("big decode", n, measure(rounds, || decode_all(&caps, 1)));
    report(
        "big full pipeline",
        n,
        measure(rounds, || analyze_all(&caps, 1)),
    );
}
