//! A read-only map of a whole regular file (`mmap(2)`), so a capture is parsed where the page
//! cache holds it: `read(2)` copied every byte once more (about 12 % of `analyze -j 1`'s CPU on
//! a cached 170 MB capture), and the sharded analyzer's workers can read frames from the map
//! instead of from copies the reader made.
//!
//! The pages already read are dropped from the process with `madvise(MADV_DONTNEED)`
//! ([`Mapped::release`]), so the resident memory stays a window of the file rather than the
//! whole file; a page touched again is read back from the page cache (the map is private and
//! never written, so its bytes are the file's).
//!
//! Hand-written rather than `memmap2`: three calls (`mmap`, `madvise`, `munmap`), and mapping
//! is `unsafe` there too (the caller still owes the same promise).
//!
//! The one hazard of any file map: a file truncated by another process while it is mapped
//! turns reads past its new end into `SIGBUS`. Callers map only regular files they are not
//! following as they grow; a file being written by tcpdump only grows.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// A private, read-only map of a file's bytes as they were when mapped.
pub struct Mapped {
    ptr: *mut libc::c_void,
    len: usize,
}

// SAFETY: the map is read-only and owned by this value (unmapped once, in Drop); reading it from
// several threads at once is reading shared immutable memory. `release` only asks the kernel to
// drop page-table entries, which a concurrent reader sees as a refault of the same bytes.
unsafe impl Send for Mapped {}
// SAFETY: see `Send`: no method mutates memory the map's readers can observe.
unsafe impl Sync for Mapped {}

impl Mapped {
    /// Maps `file` whole; `None` when it is empty (a zero-length map is an error) or too large
    /// for the address space.
    pub fn of(file: &File) -> io::Result<Option<Mapped>> {
        let len = file.metadata()?.len();
        let Ok(len) = usize::try_from(len) else {
            return Ok(None);
        };
        if len == 0 {
            return Ok(None);
        }
        // SAFETY: a fresh private read-only mapping chosen by the kernel (addr NULL) of a
        // descriptor we hold open for the call; no existing memory is affected. The result is
        // checked against MAP_FAILED before use.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let m = Mapped { ptr, len };
        m.advise(0, len, libc::MADV_SEQUENTIAL);
        Ok(Some(m))
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` is a live PROT_READ mapping of `len` bytes owned by `self` (unmapped only
        // in Drop, which needs `&mut self`), so the slice cannot outlive it. Mapped only for
        // files this process does not write (see the module docs on truncation).
        unsafe { std::slice::from_raw_parts(self.ptr.cast::<u8>(), self.len) }
    }

    /// Drops the pages wholly inside `start..end` from this process's memory (they stay in the
    /// page cache); reading them again faults them back in.
    pub fn release(&self, start: usize, end: usize) {
        let page = page_size();
        let s = start.div_ceil(page) * page;
        let e = (end.min(self.len) / page) * page;
        if e > s {
            self.advise(s, e - s, libc::MADV_DONTNEED);
        }
    }

    /// Asks the kernel to map `start..end` now (one call instead of a fault per 64 KiB), when
    /// the kernel knows `MADV_POPULATE_READ` (5.14); otherwise nothing.
    pub fn prefetch(&self, start: usize, end: usize) {
        let page = page_size();
        let s = (start / page) * page;
        let e = end.min(self.len);
        if e > s {
            self.advise(s, e - s, libc::MADV_POPULATE_READ);
        }
    }

    /// Asks the CPU to bring the cache line at byte `off` of the map into its caches (a hint:
    /// nothing when `off` is past the end or the CPU has no such instruction). A walk over the
    /// record headers is a chain of dependent loads (each record's length says where the next
    /// one starts), so without it every record waits for memory: measured on a 232 MB pcap,
    /// 8 KiB ahead took the header walk from 53 to 36 ms (session 16, bench/README.md).
    #[inline]
    pub fn warm(&self, off: usize) {
        #[cfg(target_arch = "x86_64")]
        if off < self.len {
            // SAFETY: `off < len`, so the address lies inside our own live mapping; a prefetch
            // never faults, never writes and changes no visible state (SSE is baseline on
            // x86_64, so the instruction exists).
            unsafe {
                use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
                _mm_prefetch::<_MM_HINT_T0>(self.ptr.cast::<i8>().add(off));
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = off;
    }

    /// `madvise` on part of the map; the advice is only a hint, so its errors are ignored.
    fn advise(&self, off: usize, len: usize, advice: libc::c_int) {
        debug_assert!(off + len <= self.len && off.is_multiple_of(page_size()));
        // SAFETY: `off..off + len` lies inside our own mapping (callers clamp it) and starts on
        // a page boundary; the advice values used (SEQUENTIAL, DONTNEED, POPULATE_READ) never
        // change the bytes a private read-only file mapping shows, only what is resident.
        unsafe {
            libc::madvise(self.ptr.cast::<u8>().add(off).cast(), len, advice);
        }
    }
}

/// Asks the CPU to bring the first [`WARM_LINES`] cache lines of `bytes` into its caches (a
/// hint: nothing on a CPU without the instruction). For a consumer that knows which bytes it
/// reads next and has other work meanwhile: the sharded analyzer's worker warms a frame a few
/// frames ahead of the one it decodes, since the frames were last touched on the reader's core
/// (session 22: the worker's `decode_at` samples halved on the bench capture).
#[inline]
pub fn warm_lines(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    for off in (0..bytes.len()).step_by(64).take(WARM_LINES) {
        // SAFETY: `off < bytes.len()`, so the address lies inside a live slice; a prefetch
        // never faults, never writes and changes no visible state (SSE is baseline on x86_64).
        unsafe {
            use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
            _mm_prefetch::<_MM_HINT_T0>(bytes.as_ptr().add(off).cast::<i8>());
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}

/// Cache lines [`warm_lines`] warms at most: a frame's headers and the start of its payload
/// (the bench capture's snap length is 200 bytes).
pub const WARM_LINES: usize = 3;

impl AsRef<[u8]> for Mapped {
    fn as_ref(&self) -> &[u8] {
        self.bytes()
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly the mapping made in `of`, unmapped only here; no
        // slice from `bytes` can be alive (they borrow `self`).
        unsafe {
            libc::munmap(self.ptr, self.len);
        }
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf reads a constant of the running system; no pointers.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).ok().filter(|&n| n > 0).unwrap_or(4096)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn warming_any_slice_is_harmless() {
        // A hint only: an empty slice, one shorter than a line, one longer than WARM_LINES
        // lines, and a slice's end (prefetches stay inside it) neither fault nor change bytes.
        let data: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
        for s in [&data[..0], &data[..10], &data[..], &data[990..]] {
            warm_lines(s);
        }
        assert!(data.iter().enumerate().all(|(i, b)| *b == i as u8));
    }

    #[test]
    fn maps_a_file_and_reads_it_back_after_release() {
        let dir = std::env::temp_dir().join(format!("nd-sys-mmap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f.bin");
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::File::create(&path)
            .unwrap()
            .write_all(&data)
            .unwrap();
        let m = Mapped::of(&File::open(&path).unwrap()).unwrap().unwrap();
        assert_eq!(m.bytes(), &data[..]);
        m.prefetch(0, 100_000);
        m.release(0, 200_000);
        // Released pages come back with the file's bytes.
        assert_eq!(m.bytes(), &data[..]);
        let empty = dir.join("empty.bin");
        std::fs::File::create(&empty).unwrap();
        assert!(Mapped::of(&File::open(&empty).unwrap()).unwrap().is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
