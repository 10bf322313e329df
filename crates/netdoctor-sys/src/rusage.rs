//! `getrusage(RUSAGE_SELF)`: the CPU time this process used, to tell a load generator that ran
//! out of CPU from a slow server; and a thread's own CPU time (`analyze -j N` balances its
//! threads by it).

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

/// CPU time the calling thread used so far (`CLOCK_THREAD_CPUTIME_ID`: the time it ran, not
/// the time it waited or was preempted); zero if the call fails (it cannot with a valid
/// pointer on Linux).
pub fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the valid, exclusively borrowed `ts`;
    // CLOCK_THREAD_CPUTIME_ID needs no other precondition.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(
        ts.tv_sec.max(0) as u64,
        ts.tv_nsec.clamp(0, 999_999_999) as u32,
    )
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

    #[test]
    fn thread_cpu_time_counts_work_not_sleep() {
        let a = thread_cpu_time();
        std::thread::sleep(Duration::from_millis(50));
        let slept = thread_cpu_time() - a;
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed() < Duration::from_millis(30) {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        std::hint::black_box(x);
        let worked = thread_cpu_time() - a - slept;
        assert!(slept < Duration::from_millis(20), "{slept:?} while asleep");
        assert!(worked > Duration::ZERO, "{worked:?} while working");
    }
}
