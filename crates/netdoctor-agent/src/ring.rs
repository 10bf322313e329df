//! The evidence ring on disk: the reports (JSON) and captures (pcap) of the last N windows that
//! had a problem finding, so the evidence of a slow period outlives it.
//!
//! Layout of `--dir`: one entry per port and problem window, named
//! `w<unix-ms>-p<port>` with the files `<name>.json` (a `netdoctor.report/v1` report) and
//! `<name>.pcap` (the window's packets, when capture to disk was on). The window in progress
//! writes to `current-p<port>-<window>.pcap`, which is renamed into the ring when the window has a
//! problem and removed otherwise. After each store the oldest entries are deleted: of each port
//! beyond `keep`, then any older than the age limit, then the oldest of all while the directory
//! holds more than the size limit (the newest entry is always kept). Names sort by time, so
//! "oldest" is the lexical order. What was deleted is counted by reason ([`RingState`]) for the
//! agent's `netdoctor_evidence_dropped_total{reason}`.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A bounded directory of problem windows.
#[derive(Debug, Clone)]
pub struct EvidenceRing {
    dir: PathBuf,
    keep: usize,
    max_bytes: u64,
    max_age: Option<Duration>,
    dropped: Arc<[AtomicU64; 3]>,
}

/// The directory's size and what was deleted from it, by reason (count, size, age).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RingState {
    pub bytes: u64,
    pub dropped_count: u64,
    pub dropped_size: u64,
    pub dropped_age: u64,
}

/// The default size limit of the evidence directory (all ports together).
pub const DEFAULT_MAX_BYTES: u64 = 256 << 20;

impl EvidenceRing {
    /// Creates `dir` when missing. `keep` ≥ 1 entries are kept.
    pub fn open(dir: &Path, keep: usize) -> io::Result<EvidenceRing> {
        std::fs::create_dir_all(dir)?;
        Ok(EvidenceRing {
            dir: dir.to_path_buf(),
            keep: keep.max(1),
            max_bytes: DEFAULT_MAX_BYTES,
            max_age: None,
            dropped: Arc::new([AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)]),
        })
    }

    /// Sets the size limit (bytes, all entries together) and the age limit.
    pub fn with_limits(mut self, max_bytes: u64, max_age: Option<Duration>) -> EvidenceRing {
        self.max_bytes = max_bytes.max(1);
        self.max_age = max_age;
        self
    }

    /// The directory's current size and the deletions so far.
    pub fn state(&self) -> RingState {
        let bytes = self
            .entries()
            .unwrap_or_default()
            .iter()
            .map(|n| self.entry_bytes(n))
            .sum();
        RingState {
            bytes,
            dropped_count: self.dropped[0].load(Ordering::Relaxed),
            dropped_size: self.dropped[1].load(Ordering::Relaxed),
            dropped_age: self.dropped[2].load(Ordering::Relaxed),
        }
    }

    fn entry_bytes(&self, name: &str) -> u64 {
        ["json", "pcap"]
            .iter()
            .filter_map(|ext| std::fs::metadata(self.dir.join(format!("{name}.{ext}"))).ok())
            .map(|m| m.len())
            .sum()
    }

    fn remove_entry(&self, name: &str, reason: usize) -> io::Result<()> {
        for ext in ["json", "pcap"] {
            match std::fs::remove_file(self.dir.join(format!("{name}.{ext}"))) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        self.dropped[reason].fetch_add(1, Ordering::Relaxed);
        Ok(())
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
        self.trim_age(end_unix_ms)?;
        self.trim_size()?;
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
        let old: Vec<String> = old.cloned().collect();
        for n in old {
            self.remove_entry(&n, 0)?;
        }
        Ok(())
    }

    /// Deletes entries older than the age limit, measured from `now_unix_ms` (the newest
    /// window's end), never the newest entry.
    fn trim_age(&self, now_unix_ms: u64) -> io::Result<()> {
        let Some(age) = self.max_age else {
            return Ok(());
        };
        let names = self.entries()?;
        let limit = now_unix_ms.saturating_sub(age.as_millis() as u64);
        for n in names.iter().take(names.len().saturating_sub(1)) {
            let t: u64 = n
                .strip_prefix('w')
                .and_then(|r| r.split_once("-p"))
                .and_then(|(t, _)| t.parse().ok())
                .unwrap_or(u64::MAX);
            if t < limit {
                self.remove_entry(n, 2)?;
            }
        }
        Ok(())
    }

    /// Deletes the oldest entries while the directory is over the size limit, never the newest.
    fn trim_size(&self) -> io::Result<()> {
        let names = self.entries()?;
        let sizes: Vec<u64> = names.iter().map(|n| self.entry_bytes(n)).collect();
        let mut total: u64 = sizes.iter().sum();
        for (n, sz) in names.iter().zip(&sizes).take(names.len().saturating_sub(1)) {
            if total <= self.max_bytes {
                break;
            }
            self.remove_entry(n, 1)?;
            total -= sz;
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
        assert_eq!(ring.state().dropped_count, 2);
    }

    #[test]
    fn size_and_age_limits_delete_the_oldest_and_count_them() {
        let d = tempfile::tempdir().unwrap();
        let ring = EvidenceRing::open(d.path(), 100)
            .unwrap()
            .with_limits(2500, Some(Duration::from_secs(60)));
        for t in [1_000u64, 2_000, 3_000, 4_000] {
            let pcap = ring.current_pcap(80, t);
            std::fs::write(&pcap, vec![0u8; 1000]).unwrap();
            ring.store(t, 80, b"{}", Some(&pcap)).unwrap();
        }
        // 1002 bytes an entry, 2500 allowed: the two newest stay.
        let s = ring.state();
        assert_eq!(ring.entries().unwrap().len(), 2, "{s:?}");
        assert_eq!((s.dropped_size, s.dropped_age, s.dropped_count), (2, 0, 0));
        assert!(s.bytes <= 2500);
        // Two minutes later: only the new window is young enough.
        ring.store(124_000, 80, b"{}", None).unwrap();
        assert_eq!(ring.entries().unwrap(), vec!["w000000000124000-p80"]);
        assert_eq!(ring.state().dropped_age, 2);
        // A single entry over the limit is still kept: the newest evidence is never lost.
        let big = ring.current_pcap(80, 125_000);
        std::fs::write(&big, vec![0u8; 5000]).unwrap();
        ring.store(125_000, 80, b"{}", Some(&big)).unwrap();
        assert!(
            ring.entries()
                .unwrap()
                .contains(&"w000000000125000-p80".to_string())
        );
    }
}
