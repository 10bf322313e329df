//! Pinning the calling thread to one CPU (`sched_getaffinity`/`sched_setaffinity`), for the
//! load engine's threads (`netdoctor_load::Pinning`), and giving it the `SCHED_BATCH` policy
//! (`sched_setscheduler`; see `netdoctor_load::LoadConfig::batch_sched`), or `SCHED_FIFO` (the
//! lab's delay bridge and nameserver), and its timer slack (`prctl(PR_SET_TIMERSLACK)`: how late
//! the kernel may end its sleeps, for the load engine's short naps). `std` has none of them.

use std::io;

/// The CPUs the calling thread may run on, in ascending order.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is a plain bit array; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 is the calling thread; `set` is valid for writes of its size.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((0..libc::CPU_SETSIZE as usize)
        // SAFETY: CPU_ISSET reads bit `c` of the set; `c` is below CPU_SETSIZE.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

/// Pins the calling thread to `cpu`.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("cpu {cpu} is beyond CPU_SETSIZE"),
        ));
    }
    // SAFETY: cpu_set_t is a plain bit array; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` is below CPU_SETSIZE (checked above), so the bit is inside the set.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: pid 0 is the calling thread; `set` is a valid, initialised cpu_set_t of that size.
    check(unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) })
}

/// Gives the calling thread the `SCHED_BATCH` policy: same share of the CPU as
/// `SCHED_OTHER`, but its wake-ups do not preempt the task running on its CPU. No privilege is
/// needed to move from `SCHED_OTHER` to `SCHED_BATCH`.
pub fn set_current_thread_batch() -> io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 is the calling thread; `param` is a valid sched_param read by the call.
    check(unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) })
}

/// Gives the calling thread the real-time `SCHED_FIFO` policy at the lowest priority (1), not
/// inherited by children (`SCHED_RESET_ON_FORK`): it runs as soon as it wakes, ahead of every
/// normal thread. For the lab's delay bridge and nameserver, whose timing is the experiment: a
/// nice −20 thread is not enough where the kernel groups threads by session (autogroup), since
/// nice then only ranks threads of one session. Needs CAP_SYS_NICE; the kernel's real-time
/// throttling (95 % of each second by default) bounds a thread that never sleeps.
pub fn set_current_thread_fifo() -> io::Result<()> {
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: pid 0 is the calling thread; `param` is a valid sched_param read by the call.
    check(unsafe {
        libc::sched_setscheduler(0, libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, &param)
    })
}

/// Raises the calling thread's nice value to at least `nice` (a lower priority; never a higher
/// one, so a run started under `nice -n 19` stays there). On Linux the nice value of
/// `PRIO_PROCESS` with `who = 0` is the calling thread's own. No privilege is needed to raise it.
pub fn lower_current_thread_priority(nice: libc::c_int) -> io::Result<()> {
    // SAFETY: `who = 0` is the calling thread; the call has no memory arguments. A -1 return is
    // also a valid nice value; taking it as the current value at worst sets `nice` itself.
    let current = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
    if current >= nice {
        return Ok(());
    }
    // SAFETY: as above; raising the nice value of the calling thread only.
    check(unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) })
}

/// The calling thread's scheduling policy (`SCHED_OTHER`, `SCHED_BATCH`, ...).
pub fn current_thread_policy() -> io::Result<libc::c_int> {
    // SAFETY: pid 0 is the calling thread; the call has no memory arguments.
    let p = unsafe { libc::sched_getscheduler(0) };
    if p < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(p)
}

/// Lets the kernel end the calling thread's timed sleeps (`nanosleep`, `epoll_wait` timeouts)
/// at most `ns` nanoseconds late instead of the default 50 µs, so a 20 µs sleep lasts ~20 µs.
/// Only this thread's timers are affected.
pub fn set_current_thread_timer_slack(ns: u64) -> io::Result<()> {
    // SAFETY: PR_SET_TIMERSLACK takes its value as an integer argument (no memory) and changes
    // only the calling thread's slack.
    let rc = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
    check(rc)
}

/// The calling thread's timer slack, ns (`PR_GET_TIMERSLACK`).
pub fn current_thread_timer_slack() -> io::Result<u64> {
    // SAFETY: PR_GET_TIMERSLACK takes no memory argument; it returns the slack or -1.
    let rc = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(rc as u64)
}

/// 0 from a sched_* call is success; otherwise the OS error it left.
fn check(rc: libc::c_int) -> io::Result<()> {
    match rc {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_pinned_to_an_allowed_cpu_sees_only_that_cpu() {
        let cpus = allowed_cpus().unwrap();
        assert!(!cpus.is_empty());
        let last = *cpus.last().unwrap();
        let seen = std::thread::spawn(move || {
            pin_current_thread(last).unwrap();
            allowed_cpus().unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(seen, vec![last]);
        // The calling thread keeps its own set.
        assert_eq!(allowed_cpus().unwrap(), cpus);
    }

    #[test]
    fn a_batch_thread_reports_sched_batch_and_others_keep_theirs() {
        let before = current_thread_policy().unwrap();
        let seen = std::thread::spawn(|| {
            set_current_thread_batch().unwrap();
            current_thread_policy().unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(seen, libc::SCHED_BATCH);
        assert_eq!(current_thread_policy().unwrap(), before);
    }

    #[test]
    fn timer_slack_is_the_calling_threads_own() {
        let before = current_thread_timer_slack().unwrap();
        let seen = std::thread::spawn(|| {
            set_current_thread_timer_slack(1_000).unwrap();
            current_thread_timer_slack().unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(seen, 1_000);
        assert_eq!(current_thread_timer_slack().unwrap(), before);
    }

    #[test]
    fn a_cpu_beyond_the_set_is_an_error() {
        assert!(pin_current_thread(usize::MAX).is_err());
    }
}
