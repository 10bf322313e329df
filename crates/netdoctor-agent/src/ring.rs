//! The evidence ring on disk: the reports (JSON) and captures (pcap) of the last N windows that
//! had a problem finding, so the evidence of a slow period outlives it.
//!
//! Layout of `--dir`: one entry per port and problem window, named
//! `w<unix-ms>-p<port>` with the files `<name>.json` (a `netdoctor.report/v1` report) and
//! `<name>.pcap` (the window's packets, when capture to disk was on). The window in progress
//! writes to `current-p<port>-<window>.pcap`, which is renamed into the ring when the window has a
//! problem and removed otherwise. After each store the oldest entries of each port beyond `keep`
//! are deleted; names sort by time, so "oldest" is the lexical order.

use std::io;
use std::path::{Path, PathBuf};

/// A bounded directory of problem windows.
#[derive(Debug, Clone)]
pub struct EvidenceRing {
    dir: PathBuf,
    keep: usize,
}

impl EvidenceRing {
    /// Creates `dir` when missing. `keep` ≥ 1 entries are kept.
    pub fn open(dir: &Path, keep: usize) -> io::Result<EvidenceRing> {
        std::fs::create_dir_all(dir)?;
        Ok(EvidenceRing {
            dir: dir.to_path_buf(),
            keep: keep.max(1),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where window `window` of `port` writes its packets while it runs.
    pub fn current_pcap(&self, port: u16, window: u64) -> PathBuf {
        self.dir.join(format!("current-p{port}-{window}.pcap"))
    }

    /// Removes the pcaps of windows in progress (at shutdown, and of a crashed earlier run).
    pub fn remove_current(&self) {
        if let Ok(rd) = std::fs::read_dir(&self.dir) {
            for e in rd.filter_map(|e| e.ok()) {
                if e.file_name().to_string_lossy().starts_with("current-") {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
    }

    /// Stores one problem window: the report JSON, and the pcap at `pcap` (moved) when given.
    /// Returns the entry's base path (without extension).
    pub fn store(
        &self,
        end_unix_ms: u64,
        port: u16,
        report_json: &[u8],
        pcap: Option<&Path>,
    ) -> io::Result<PathBuf> {
        let base = self.dir.join(format!("w{end_unix_ms:015}-p{port}"));
        let json = base.with_extension("json");
        let tmp = base.with_extension("json.tmp");
        std::fs::write(&tmp, report_json)?;
        std::fs::rename(&tmp, &json)?;
        if let Some(p) = pcap {
            std::fs::rename(p, base.with_extension("pcap"))?;
        }
        self.trim()?;
        Ok(base)
    }

    /// Entry names (without extension), oldest first.
    pub fn entries(&self) -> io::Result<Vec<String>> {
        let mut names: Vec<String> = std::fs::read_dir(&self.dir)?
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.starts_with('w') && n.ends_with(".json"))
            .map(|n| n.trim_end_matches(".json").to_string())
            .collect();
        names.sort();
        Ok(names)
    }

    /// Deletes the oldest entries beyond `keep`, per port.
    fn trim(&self) -> io::Result<()> {
        let mut by_port: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for n in self.entries()? {
            let port = n.rsplit_once("-p").map_or("", |(_, p)| p).to_string();
            by_port.entry(port).or_default().push(n);
        }
        let old = by_port.values().flat_map(|names| {
            let excess = names.len().saturating_sub(self.keep);
            names[..excess].iter()
        });
        for n in old {
            for ext in ["json", "pcap"] {
                match std::fs::remove_file(self.dir.join(format!("{n}.{ext}"))) {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                    _ => {}
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_n_with_their_pcaps() {
        let d = tempfile::tempdir().unwrap();
        let ring = EvidenceRing::open(&d.path().join("ring"), 2).unwrap();
        for t in [3000u64, 1000, 2000, 4000] {
            let pcap = ring.current_pcap(80, t);
            std::fs::write(&pcap, b"pcap").unwrap();
            ring.store(t, 80, b"{}", Some(&pcap)).unwrap();
            assert!(!pcap.exists());
        }
        // Another port's windows do not push port 80's out.
        ring.store(5000, 443, b"{}", None).unwrap();
        let names = ring.entries().unwrap();
        assert_eq!(
            names,
            vec![
                "w000000000003000-p80",
                "w000000000004000-p80",
                "w000000000005000-p443"
            ]
        );
        let files = std::fs::read_dir(ring.dir()).unwrap().count();
        assert_eq!(files, 5, "three json + two pcap");
    }
}
