//! Giving freed heap memory back to the kernel (`malloc_trim(3)`, glibc). Loading the eBPF
//! programs parses the kernel's BTF twice (aya's loader, then the programs' attach points):
//! tens of thousands of small allocations, freed right after, that glibc would otherwise keep
//! in the loading thread's arena for the rest of the run, where the load's own threads (other
//! arenas) never reuse them.

/// Returns the free memory at the top of every malloc arena to the kernel; `true` when some
/// was released. A no-op on C libraries other than glibc.
pub fn release_free_heap() -> bool {
    #[cfg(target_env = "gnu")]
    {
        // SAFETY: malloc_trim takes a size (0: keep no padding) and only touches the allocator's
        // own free lists; it is thread-safe (it locks each arena) and passes no pointers of ours.
        unsafe { libc::malloc_trim(0) == 1 }
    }
    #[cfg(not(target_env = "gnu"))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn trimming_after_a_large_free_does_not_break_the_heap() {
        let v: Vec<Vec<u8>> = (0..10_000).map(|i| vec![1u8; 64 + i % 64]).collect();
        drop(v);
        super::release_free_heap();
        // The allocator still works after the trim.
        let w = vec![7u8; 1 << 16];
        assert_eq!(w.iter().map(|&b| u64::from(b)).sum::<u64>(), 7 << 16);
    }
}
