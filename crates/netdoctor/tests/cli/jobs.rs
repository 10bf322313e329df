//! `analyze -j N`: the JSON report of every committed capture, and of every capture of the
//! shared corpus (skipped when it is missing), is byte-identical with 1 and with 2, 3 and 4
//! worker threads (the elapsed time aside); a bad `-j` is one line naming it.

use crate::common;
use common::*;
use netdoctor::analyze::analyze;
use netdoctor::cli::{AnalyzeArgs, OutputArgs};
use netdoctor::output::Progress;
use netdoctor_report::Format;
use std::path::{Path, PathBuf};

fn json_of(path: &Path, jobs: usize) -> Result<String, String> {
    let args = AnalyzeArgs {
        file: path.to_path_buf(),
        server_port: None,
        follow: false,
        follow_timeout: None,
        follow_idle: None,
        html: None,
        slo: None,
        jobs: Some(jobs),
        dump_flags: None,
        output: OutputArgs::of(Format::Json),
    };
    let mut report = analyze(&args, &Progress::new()).map_err(|e| format!("{e:#}"))?;
    report.elapsed_s = 0.0;
    let mut out = Vec::new();
    Format::Json.write(&report, &mut out).unwrap();
    Ok(String::from_utf8(out).unwrap())
}

fn captures_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    files.retain(|p| {
        let name = p.file_name().unwrap().to_string_lossy();
        [".pcap", ".pcapng", ".pcap.gz", ".pcapng.gz"]
            .iter()
            .any(|ext| name.ends_with(ext))
    });
    files.sort();
    files
}

/// Compares the reports; returns how many captures were compared.
fn assert_same_for_every_n(files: &[PathBuf], ns: &[usize]) -> usize {
    let mut compared = 0;
    let mut differ = Vec::new();
    for f in files {
        let one = json_of(f, 1);
        for &n in ns {
            let many = json_of(f, n);
            if one != many {
                differ.push(format!("{} with -j {n}", f.display()));
                if let (Ok(a), Ok(b)) = (&one, &many) {
                    let line = a.lines().zip(b.lines()).position(|(x, y)| x != y);
                    if let Some(k) = line {
                        eprintln!(
                            "{}: -j 1 line {k}: {}\n-j {n}: {}",
                            f.display(),
                            a.lines().nth(k).unwrap_or(""),
                            b.lines().nth(k).unwrap_or("")
                        );
                    }
                }
            }
        }
        compared += usize::from(one.is_ok());
    }
    assert!(differ.is_empty(), "reports differ: {differ:#?}");
    compared
}

#[test]
fn committed_captures_give_the_same_json_with_any_worker_count() {
    let files = captures_in(&captures_dir());
    assert!(
        files.len() >= 10,
        "captures not found in {}",
        captures_dir().display()
    );
    let compared = assert_same_for_every_n(&files, &[2, 3, 4]);
    assert!(compared >= 10, "only {compared} captures could be read");
}

#[test]
fn corpus_captures_give_the_same_json_with_any_worker_count() {
    let dir = std::env::var_os("NETDOCTOR_REALWORLD_PCAPS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/realworld-pcaps")
        });
    let files = captures_in(&dir);
    if files.is_empty() {
        eprintln!(
            "skipped: needs {} (the shared realworld-pcaps corpus)",
            dir.display()
        );
        return;
    }
    let compared = assert_same_for_every_n(&files, &[4]);
    assert!(compared > 0, "no corpus capture could be read");
}

/// The default `-j`: never more workers than cores, one for a small capture, one per
/// `BYTES_PER_WORKER` of a larger file, the cores for input of unknown size.
#[test]
fn default_jobs_fit_the_capture_and_the_cores() {
    use netdoctor::analyze::{BYTES_PER_WORKER, default_jobs};
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let small = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/captures/reset.pcap");
    assert!(small.metadata().unwrap().len() < BYTES_PER_WORKER);
    assert_eq!(default_jobs(&small, false), 1);
    // Standard input and a file followed as it grows: size unknown.
    assert_eq!(default_jobs(Path::new("-"), false), cores);
    assert_eq!(default_jobs(&small, true), cores);
    let dir = tempdir("jobs");
    for k in [1u64, 2, 3, 64] {
        let f = dir.join(format!("sparse-{k}.pcap"));
        let file = std::fs::File::create(&f).unwrap();
        file.set_len(k * BYTES_PER_WORKER + 1).unwrap();
        let want = cores.min(k as usize);
        assert_eq!(default_jobs(&f, false), want, "{k} x BYTES_PER_WORKER");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_job_counts_are_one_line_errors() {
    let cap = captures_dir().join("reset.pcap");
    let cap = cap.to_str().unwrap();
    for bad in ["0", "many", "100000", "2.5"] {
        let o = netdoctor(&["analyze", "-j", bad, cap]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "-j {bad}: {err}");
        assert!(err.starts_with("error: "), "-j {bad}: {err}");
        // One line naming the option and the range; clap's usual hint may follow it.
        let first = err.lines().next().unwrap_or("");
        assert!(
            first.contains("--jobs") && first.contains("worker threads from 1 to"),
            "-j {bad}: {err}"
        );
        assert!(!err.contains("panicked"), "-j {bad}: {err}");
        let others: Vec<&str> = err
            .lines()
            .skip(1)
            .filter(|l| !l.trim().is_empty())
            .collect();
        assert!(
            others.iter().all(|l| l.starts_with("For more information")),
            "-j {bad}: {err}"
        );
    }
    let o = netdoctor(&["analyze", "-j", "2", "--json", cap]);
    assert!(o.status.code().is_some_and(|c| c <= 1), "{}", stderr(&o));
    assert!(json(&o)["findings"].is_array());
}

/// Hand-made Ethernet frames for [`odd_frames_give_the_same_json_with_any_worker_count`].
mod frames {
    pub fn eth(vlan: bool, ethertype: u16, payload: &[u8]) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
        if vlan {
            f.extend_from_slice(&[0x81, 0x00, 0, 5]);
        }
        f.extend_from_slice(&ethertype.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    /// `frag`: the flags/fragment-offset field (0x2000: more fragments).
    pub fn ipv4(src: [u8; 4], dst: [u8; 4], id: u16, proto: u8, frag: u16, l4: &[u8]) -> Vec<u8> {
        let total = (20 + l4.len()) as u16;
        let mut p = vec![0x45, 0];
        p.extend_from_slice(&total.to_be_bytes());
        p.extend_from_slice(&id.to_be_bytes());
        p.extend_from_slice(&frag.to_be_bytes());
        p.extend_from_slice(&[64, proto, 0, 0]);
        p.extend_from_slice(&src);
        p.extend_from_slice(&dst);
        p.extend_from_slice(l4);
        p
    }

    /// `hbh`: with a hop-by-hop extension header before TCP (the reader's slow path).
    pub fn ipv6(src: [u8; 16], dst: [u8; 16], hbh: bool, tcp: &[u8]) -> Vec<u8> {
        let ext: &[u8] = if hbh { &[6, 0, 1, 4, 0, 0, 0, 0] } else { &[] };
        let mut p = vec![0x60, 0, 0, 0];
        p.extend_from_slice(&((ext.len() + tcp.len()) as u16).to_be_bytes());
        p.extend_from_slice(&[if hbh { 0 } else { 6 }, 64]);
        p.extend_from_slice(&src);
        p.extend_from_slice(&dst);
        p.extend_from_slice(ext);
        p.extend_from_slice(tcp);
        p
    }

    pub fn tcp(sport: u16, dport: u16, seq: u32, ack: u32, flags: u8, data: &[u8]) -> Vec<u8> {
        let mut t = Vec::new();
        t.extend_from_slice(&sport.to_be_bytes());
        t.extend_from_slice(&dport.to_be_bytes());
        t.extend_from_slice(&seq.to_be_bytes());
        t.extend_from_slice(&ack.to_be_bytes());
        t.extend_from_slice(&[0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
        t.extend_from_slice(data);
        t
    }
}

/// The frames the reader of `-j N` does not route by itself (IPv6 with extension headers,
/// within connections whose other packets it does route; VLAN tags; IPv4 fragments; UDP; ARP;
/// cut-short TCP headers) give the report of `-j 1`, with every packet counted as it counts.
#[test]
fn odd_frames_give_the_same_json_with_any_worker_count() {
    use frames::*;
    use netdoctor_core::{LinkType, RawPacket};
    const SYN: u8 = 0x02;
    const FIN: u8 = 0x01;
    const PSH_ACK: u8 = 0x18;
    const ACK: u8 = 0x10;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("odd.pcap");
    let mut w =
        netdoctor_observe::pcapwrite::PcapWriter::create(&path, LinkType::Ethernet, 65535).unwrap();
    let mut frame = 0u64;
    let mut put = |data: Vec<u8>| {
        frame += 1;
        let pkt = RawPacket {
            frame,
            ts_ns: 1_700_000_000_000_000_000 + frame as i64 * 1_000_000,
            link: LinkType::Ethernet,
            data: &data,
            orig_len: data.len() as u32,
        };
        w.write(&pkt).unwrap();
    };
    let req = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    let resp = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    let (mut others, mut errors) = (0u64, 0u64);
    // Connections on both paths, interleaved: IPv4 (every other one VLAN-tagged) and IPv6
    // (every other phase with a hop-by-hop header: `k` has the same parity for all packets of
    // a connection, so it cannot alternate per packet), three exchanges each.
    let conns = 12u16;
    let v6 = |last: u8| {
        let mut a = [0u8; 16];
        a[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        a[15] = last;
        a
    };
    let mut k = 0usize;
    let mut seg =
        |c: u16, to_server: bool, seq: u32, ack: u32, flags: u8, data: &[u8]| -> Vec<u8> {
            k += 1;
            let port = 40_000 + c;
            let t = if to_server {
                tcp(port, 80, seq, ack, flags, data)
            } else {
                tcp(80, port, seq, ack, flags, data)
            };
            let (cli4, srv4) = ([10, 0, 0, 1 + (c % 3) as u8], [10, 0, 1, 1]);
            let (cli6, srv6) = (v6(1 + (c % 3) as u8), v6(200));
            if c.is_multiple_of(2) {
                let (s, d) = if to_server {
                    (cli4, srv4)
                } else {
                    (srv4, cli4)
                };
                eth(
                    c.is_multiple_of(4),
                    0x0800,
                    &ipv4(s, d, k as u16, 6, 0x4000, &t),
                )
            } else {
                let (s, d) = if to_server {
                    (cli6, srv6)
                } else {
                    (srv6, cli6)
                };
                eth(false, 0x86dd, &ipv6(s, d, (k / 12).is_multiple_of(2), &t))
            }
        };
    let (c0, s0) = (1000u32, 5000u32);
    let mut cs = vec![(c0, s0); usize::from(conns)];
    let mut step = |put: &mut dyn FnMut(Vec<u8>), c: u16, phase: usize| {
        let (cseq, sseq) = &mut cs[usize::from(c)];
        match phase {
            0 => put(seg(c, true, *cseq, 0, SYN, b"")),
            1 => put(seg(c, false, *sseq, *cseq + 1, SYN | ACK, b"")),
            2 => {
                *cseq += 1;
                *sseq += 1;
                put(seg(c, true, *cseq, *sseq, ACK, b""));
            }
            3 | 5 | 7 => {
                put(seg(c, true, *cseq, *sseq, PSH_ACK, req));
                *cseq += req.len() as u32;
            }
            4 | 6 | 8 => {
                put(seg(c, false, *sseq, *cseq, PSH_ACK, resp));
                *sseq += resp.len() as u32;
            }
            9 => put(seg(c, true, *cseq, *sseq, FIN | ACK, b"")),
            _ => put(seg(c, false, *sseq, *cseq + 1, FIN | ACK, b"")),
        }
    };
    for phase in 0..11 {
        for c in 0..conns {
            step(&mut put, c, phase);
        }
        // Between the phases: a UDP datagram, an ARP frame, the first fragment of a TCP
        // segment, and a TCP header cut short.
        let udp = [0x13, 0x88, 0x13, 0x89, 0, 12, 0, 0, 1, 2, 3, 4];
        put(eth(
            false,
            0x0800,
            &ipv4([10, 0, 0, 9], [10, 0, 1, 1], 1, 17, 0, &udp),
        ));
        put(eth(false, 0x0806, &[0u8; 28]));
        let t = tcp(40_999, 80, 1, 0, SYN, b"");
        put(eth(
            true,
            0x0800,
            &ipv4([10, 0, 0, 9], [10, 0, 1, 1], 2, 6, 0x2000, &t),
        ));
        others += 3;
        put(eth(
            false,
            0x0800,
            &ipv4([10, 0, 0, 9], [10, 0, 1, 1], 3, 6, 0, &t[..8]),
        ));
        errors += 1;
    }
    w.finish().unwrap();

    let one = json_of(&path, 1).unwrap();
    let report: serde_json::Value = serde_json::from_str(&one).unwrap();
    let stats = &report["measurements"]["capture"]["stats"];
    assert_eq!(stats["tcp_segments"], u64::from(conns) * 11, "{stats}");
    assert_eq!(stats["other_packets"], others, "{stats}");
    assert_eq!(stats["decode_errors"], errors, "{stats}");
    assert_eq!(stats["connections"], u64::from(conns), "{stats}");
    for n in [2, 3, 4] {
        let many = json_of(&path, n).unwrap();
        assert!(one == many, "-j {n} differs from -j 1:\n{many}\n---\n{one}");
    }
}

/// An uncompressed capture has its stamps walked before the analysis (one analysis pass); a
/// gzip'd one is analyzed in file order up to its first backdated frame and then again in
/// timestamp order. Both give one report, also with workers: every committed gzip'd capture
/// (reorder-eth.pcap.gz has frames out of timestamp order) against its decompressed copy.
#[test]
fn a_walked_file_gives_the_report_of_a_file_read_twice() {
    if std::process::Command::new("gzip")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: gzip is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut compared = 0;
    let mut sorted = 0;
    for gz in captures_in(&captures_dir()) {
        let name = gz.file_name().unwrap().to_string_lossy().to_string();
        let Some(plain_name) = name.strip_suffix(".gz") else {
            continue;
        };
        let out = std::process::Command::new("gzip")
            .arg("-dc")
            .arg(&gz)
            .output()
            .unwrap();
        assert!(out.status.success(), "gzip -dc {}", gz.display());
        let plain = dir.path().join(plain_name);
        std::fs::write(&plain, &out.stdout).unwrap();
        for jobs in [1, 2] {
            let a = json_of(&gz, jobs).map(|s| s.replace(&*gz.to_string_lossy(), "FILE"));
            let b = json_of(&plain, jobs).map(|s| s.replace(&*plain.to_string_lossy(), "FILE"));
            assert_eq!(a, b, "{name} with -j {jobs}");
            if jobs == 1
                && a.as_ref()
                    .is_ok_and(|s| s.contains("analyzed in timestamp order"))
            {
                sorted += 1;
            }
        }
        compared += 1;
    }
    assert!(compared >= 5, "only {compared} gzip'd captures");
    assert!(
        sorted >= 1,
        "no committed capture is read in timestamp order"
    );
}
