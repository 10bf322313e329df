//! `getrusage(RUSAGE_SELF)`: the CPU time this process used, to tell a load generator that ran
//! out of CPU from a slow server.

use std::time::Duration;

/// User + system CPU time of this process so far; zero if the call fails (it cannot for
/// `RUSAGE_SELF` with a valid pointer).
pub fn own_cpu_time() -> Duration {
    let (user, system) = own_cpu_times();
    user + system
}

/// User and system CPU time of this process so far, apart (iperf3 reports both); zero if the
/// call fails.
pub fn own_cpu_times() -> (Duration, Duration) {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes one rusage struct through the pointer, which is valid, aligned
    // and sized for it; RUSAGE_SELF has no other preconditions.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr()) };
    if rc != 0 {
        return (Duration::ZERO, Duration::ZERO);
    }
    // SAFETY: getrusage returned 0, so it filled the struct (and zeroed() initialized it anyway).
    let ru = unsafe { ru.assume_init() };
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn own_cpu_time_grows_with_work() {
        let a = own_cpu_time();
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed() < Duration::from_millis(30) {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        std::hint::black_box(x);
        assert!(own_cpu_time() > a);
    }
}
