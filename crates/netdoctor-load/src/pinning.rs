//! Pinning the load threads to CPUs (`--pin-threads` / `--no-pin-threads`), and the measure
//! the default decides on: how busy the CPUs already are ([`busy_cpus`]).
//!
//! Why pin: on loopback (and any local server) a response wakes the client thread with a
//! synchronous wake-up from the server's CPU, and the scheduler's wake-affine placement moves
//! the woken thread there. With another process busy on the other CPUs, both load threads and
//! the server end up sharing one CPU most of the time (sampled `psr` on the shared 2-core
//! machine: 75–85 % of samples, the same for wrk), so `-t 2` runs like `-t 1`. A pinned thread
//! per CPU keeps the threads on the CPUs they were asked to use.
//!
//! Why not always: on a quiet machine nothing takes the other CPU, the scheduler spreads the
//! threads and the server by itself, and a pinned thread has to wait for the server on "its"
//! CPU while the other one idles. Measured with nginx on loopback, 2 threads, 100 connections,
//! quiet 2-core machine (session 9): pinned 0.924× wrk's requests/s with the machine 24 % idle,
//! unpinned 1.182× with 15 % idle. On the same machine loaded by builds (session 7), pinned was
//! never worse and up to 1.6× better, and kept a constant-rate run's p99 at 9–19 ms instead
//! of 43–314 ms. So the default pins only when other work already keeps the CPUs busy.
//!
//! Why not "pin only when the server is on another host": a local server is where pinning won
//! when the CPUs were busy (session 12, nginx on loopback with other builds running, a busy
//! loop on one CPU, or our processes at autogroup nice −20: pinned ahead of unpinned in 19 of 20
//! bench rounds, unpinned down to 24–41k req/s against 50–86k; bench/README.md).

use std::time::Duration;

/// Pinning the load threads to CPUs (`--pin-threads` / `--no-pin-threads`); see the module
/// docs for why the default depends on how busy the machine is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Pinning {
    /// Pin when there are at least 2 threads and exactly as many as allowed CPUs (each CPU
    /// gets one thread, so no CPU is taken from the process as a whole, the threads only stop
    /// stacking), and other work already keeps those CPUs at least [`BUSY_TO_PIN`] busy just
    /// before the run. With fewer threads the scheduler keeps choosing (it may know idle CPUs
    /// this run does not); with more, pinned threads could not even out; on a quiet machine the
    /// scheduler spreads them by itself.
    #[default]
    Auto,
    /// Thread `i` on the `i`-th allowed CPU, modulo their count, whatever the counts.
    Always,
    /// The scheduler places the threads.
    Never,
}

/// [`Pinning::Auto`] pins when the allowed CPUs were busy with other work for at least this
/// many CPUs' worth of time (e.g. 0.5 = half of one CPU) over the sample before the run.
pub const BUSY_TO_PIN: f64 = 0.5;

/// How long [`busy_cpus`] samples before a run under [`Pinning::Auto`].
pub const BUSY_SAMPLE: Duration = Duration::from_millis(200);

impl Pinning {
    /// The CPU of each of `threads` load threads, given the CPUs the process may use (empty:
    /// no pinning). `busy` is asked only when [`Pinning::Auto`] would pin by the counts: how
    /// many of the allowed CPUs other work keeps busy (`None`: unknown, then it pins, as it
    /// did before the measure existed).
    pub fn cpus(
        self,
        threads: usize,
        allowed: &[usize],
        busy: impl FnOnce() -> Option<f64>,
    ) -> Vec<usize> {
        let pin = match self {
            Pinning::Never => false,
            Pinning::Always => true,
            Pinning::Auto => {
                threads >= 2 && threads == allowed.len() && busy().is_none_or(|b| b >= BUSY_TO_PIN)
            }
        };
        if !pin || allowed.is_empty() {
            return Vec::new();
        }
        (0..threads).map(|i| allowed[i % allowed.len()]).collect()
    }

    /// [`Pinning::Auto`] decided now for `threads` load threads (on the CPUs this thread may
    /// use): [`Pinning::Always`] or [`Pinning::Never`], with the busy CPUs measured when a
    /// measure was needed. A caller that wants to say what the run will do resolves first and
    /// runs with the answer, so the CPUs are sampled once.
    pub fn resolve(self, threads: usize) -> (Pinning, Option<f64>) {
        let allowed = netdoctor_sys::affinity::allowed_cpus().unwrap_or_default();
        let mut busy = None;
        let cpus = self.cpus(threads, &allowed, || {
            busy = busy_cpus(&allowed, BUSY_SAMPLE);
            busy
        });
        let decided = if cpus.is_empty() {
            Pinning::Never
        } else {
            Pinning::Always
        };
        (decided, busy)
    }
}

/// How long the load threads spin before they sleep ([`crate::LoadConfig::spin`]), given the
/// pinning asked for, what it resolved to ([`Pinning::resolve`]) with the busy CPUs it
/// measured, and the constant rate if any: [`crate::SPIN_WAIT`] only when the default left
/// the threads to the scheduler because it measured the CPUs idle, in closed loop. Not when
/// pinned (a spin takes the CPU the task beside it needs), not with `--no-pin-threads` (the
/// CPUs were not looked at), not at a constant rate (the waits between sends are long).
pub fn spin_for(
    asked: Pinning,
    resolved: Pinning,
    busy: Option<f64>,
    rate: Option<f64>,
) -> Duration {
    let idle = busy.is_some_and(|b| b < BUSY_TO_PIN);
    if asked == Pinning::Auto && resolved == Pinning::Never && idle && rate.is_none() {
        crate::SPIN_WAIT
    } else {
        Duration::ZERO
    }
}

/// How long `--wait auto` threads nap ([`crate::LoadConfig::nap`]) given the spin
/// [`spin_for`] allowed and how many requests each of the `threads` keeps in flight in closed
/// loop (its share of the `connections`, times the `streams` each connection multiplexes:
/// 1 for HTTP/1.1): [`crate::NAP_WAIT`] where the threads wait at all and each has at least
/// [`crate::NAP_IN_FLIGHT`] requests in flight, otherwise zero (they spin). HTTP/2 with 10
/// connections of 8 streams on 2 threads holds 40 a thread, as many as 80 HTTP/1.1
/// connections.
/// Why the count: a nap gives the CPU away, and a thread that naps while its sibling holds that
/// CPU gets it back when the sibling's slice ends, milliseconds later. With many responses in
/// flight per thread that costs a few of them a late read and spares the CPU a spin per wait
/// (session 26: plain HTTP at 100 connections, 0.88–0.94× wrk's CPU per request against the
/// spin's 0.99–1.01×, and the best p99 of the three waits); with few, every late nap is a
/// late response (10 connections: p99 1.1–1.6 ms against the spin's 0.23–0.6 ms).
pub fn nap_for(spin: Duration, connections: usize, streams: usize, threads: usize) -> Duration {
    let per_thread = connections / threads.clamp(1, connections.max(1)) * streams.max(1);
    if !spin.is_zero() && per_thread >= crate::NAP_IN_FLIGHT {
        crate::NAP_WAIT
    } else {
        Duration::ZERO
    }
}

/// How many of the CPUs `cpus` were busy (not idle, not waiting for I/O) over `span`, in CPUs
/// (0.0 ..= `cpus.len()`), from two reads of `/proc/stat` (`None` when it cannot be read or
/// names none of them). Its resolution is the kernel's tick count (USER_HZ, 10 ms): over
/// 200 ms, 0.05 of a CPU.
pub fn busy_cpus(cpus: &[usize], span: Duration) -> Option<f64> {
    let before = read_stat(cpus)?;
    std::thread::sleep(span);
    let after = read_stat(cpus)?;
    busy_between(before, after)
}

/// (busy ticks, all ticks, CPUs found) summed over the `cpuN` lines of `cpus`.
fn read_stat(cpus: &[usize]) -> Option<(u64, u64, usize)> {
    parse_stat(&std::fs::read_to_string("/proc/stat").ok()?, cpus)
}

fn parse_stat(stat: &str, cpus: &[usize]) -> Option<(u64, u64, usize)> {
    let (mut busy, mut all, mut found) = (0u64, 0u64, 0usize);
    for line in stat.lines() {
        let Some(rest) = line.strip_prefix("cpu") else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let Some(Ok(n)) = fields.next().map(str::parse::<usize>) else {
            continue; // the "cpu" total line
        };
        if !cpus.contains(&n) {
            continue;
        }
        // user nice system idle iowait irq softirq steal (guest time is inside user).
        let v: Vec<u64> = fields.take(8).filter_map(|f| f.parse().ok()).collect();
        if v.len() < 5 {
            continue;
        }
        let total: u64 = v.iter().sum();
        busy += total - v[3] - v[4];
        all += total;
        found += 1;
    }
    (found > 0).then_some((busy, all, found))
}

fn busy_between(before: (u64, u64, usize), after: (u64, u64, usize)) -> Option<f64> {
    if before.2 != after.2 {
        return None;
    }
    let all = after.1.checked_sub(before.1)?;
    let busy = after.0.checked_sub(before.0)?;
    if all == 0 {
        return None;
    }
    Some(busy as f64 / all as f64 * after.2 as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUSY: fn() -> Option<f64> = || Some(1.0);
    const QUIET: fn() -> Option<f64> = || Some(0.1);

    #[test]
    fn auto_pins_one_thread_per_allowed_cpu_on_a_busy_machine() {
        assert_eq!(Pinning::Auto.cpus(2, &[0, 1], BUSY), vec![0, 1]);
        assert_eq!(Pinning::Auto.cpus(2, &[3, 5], BUSY), vec![3, 5]);
        // Unknown: as before the measure existed.
        assert_eq!(Pinning::Auto.cpus(2, &[0, 1], || None), vec![0, 1]);
        // Fewer threads than CPUs: the scheduler chooses; more: pinned threads could not even out.
        assert!(Pinning::Auto.cpus(2, &[0, 1, 2, 3], BUSY).is_empty());
        assert!(Pinning::Auto.cpus(4, &[0, 1], BUSY).is_empty());
        // One thread on one CPU: nothing to keep apart.
        assert!(Pinning::Auto.cpus(1, &[0], BUSY).is_empty());
        assert!(Pinning::Auto.cpus(2, &[], BUSY).is_empty());
    }

    #[test]
    fn auto_leaves_a_quiet_machine_to_the_scheduler_and_asks_only_when_the_counts_fit() {
        assert!(Pinning::Auto.cpus(2, &[0, 1], QUIET).is_empty());
        assert_eq!(
            Pinning::Auto.cpus(2, &[0, 1], || Some(BUSY_TO_PIN)),
            vec![0, 1]
        );
        let asked = std::cell::Cell::new(false);
        let busy = || {
            asked.set(true);
            Some(2.0)
        };
        assert!(Pinning::Auto.cpus(3, &[0, 1], busy).is_empty());
        assert!(!asked.get(), "measured though the counts rule pinning out");
    }

    #[test]
    fn always_wraps_and_never_pins_nothing_whatever_the_machine() {
        assert_eq!(Pinning::Always.cpus(3, &[0, 1], QUIET), vec![0, 1, 0]);
        assert_eq!(Pinning::Always.cpus(1, &[0, 1, 2, 3], QUIET), vec![0]);
        assert!(Pinning::Always.cpus(2, &[], QUIET).is_empty());
        assert!(Pinning::Never.cpus(2, &[0, 1], BUSY).is_empty());
    }

    #[test]
    fn busy_cpus_counts_only_the_allowed_cpus_and_leaves_out_idle_and_iowait() {
        let a = "cpu  100 0 100 800 0 0 0 0 0 0\n\
                 cpu0 50 0 50 400 0 0 0 0 0 0\n\
                 cpu1 50 0 50 400 0 0 0 0 0 0\n\
                 intr 1 2 3\n";
        // cpu0 fully busy (user+softirq) over 100 ticks; cpu1 idle and waiting for I/O.
        let b = "cpu  200 0 100 850 50 0 0 0 0 0\n\
                 cpu0 140 0 50 400 0 0 10 0 0 0\n\
                 cpu1 50 0 50 450 50 0 0 0 0 0\n";
        let both = busy_between(
            parse_stat(a, &[0, 1]).unwrap(),
            parse_stat(b, &[0, 1]).unwrap(),
        );
        assert_eq!(both, Some(1.0));
        let only1 = busy_between(parse_stat(a, &[1]).unwrap(), parse_stat(b, &[1]).unwrap());
        assert_eq!(only1, Some(0.0));
        assert!(parse_stat(a, &[7]).is_none());
        assert!(parse_stat("garbage\n", &[0]).is_none());
    }

    #[test]
    fn busy_cpus_reads_this_machine() {
        let cpus = netdoctor_sys::affinity::allowed_cpus().unwrap();
        let b = busy_cpus(&cpus, Duration::from_millis(50)).expect("/proc/stat readable");
        assert!(
            (0.0..=cpus.len() as f64 + 1e-9).contains(&b),
            "{b} busy of {cpus:?}"
        );
    }

    #[test]
    fn only_threads_the_default_left_on_idle_cpus_spin_in_closed_loop() {
        use Pinning::*;
        assert_eq!(spin_for(Auto, Never, Some(0.1), None), crate::SPIN_WAIT);
        for (asked, resolved, busy, rate) in [
            (Auto, Always, Some(1.2), None),       // pinned beside busy CPUs
            (Auto, Never, Some(0.6), None),        // busy, left unpinned (too few threads to pin)
            (Auto, Never, None, None),             // the CPUs were not looked at
            (Never, Never, Some(0.1), None),       // --no-pin-threads
            (Always, Always, None, None),          // --pin-threads
            (Auto, Never, Some(0.1), Some(500.0)), // constant rate
        ] {
            assert_eq!(
                spin_for(asked, resolved, busy, rate),
                Duration::ZERO,
                "{asked:?} {resolved:?} {busy:?} {rate:?}"
            );
        }
    }

    /// `--wait auto` naps only where the threads wait at all and each holds at least
    /// NAP_IN_FLIGHT connections; this fails when the count or the spin's decision is ignored.
    #[test]
    fn auto_naps_only_with_many_connections_per_thread() {
        let spin = crate::SPIN_WAIT;
        let n = crate::NAP_IN_FLIGHT;
        assert_eq!(nap_for(spin, 100, 1, 2), crate::NAP_WAIT, "50 per thread");
        assert_eq!(
            nap_for(spin, 2 * n, 1, 2),
            crate::NAP_WAIT,
            "exactly the count"
        );
        assert_eq!(nap_for(spin, 2 * n - 1, 1, 2), Duration::ZERO, "one short");
        assert_eq!(nap_for(spin, 10, 1, 2), Duration::ZERO, "the -c 10 tail");
        // HTTP/2: streams in flight count, not connections.
        assert_eq!(nap_for(spin, 10, 8, 2), crate::NAP_WAIT, "10 x 8 streams");
        assert_eq!(
            nap_for(spin, 10, 3, 2),
            Duration::ZERO,
            "5 x 3 = 15 a thread"
        );
        assert_eq!(nap_for(spin, 1, 1, 1), Duration::ZERO);
        assert_eq!(
            nap_for(Duration::ZERO, 100, 1, 2),
            Duration::ZERO,
            "no wait"
        );
        // More threads than connections: each thread holds at most one.
        assert_eq!(nap_for(spin, 3, 1, 8), Duration::ZERO);
        assert_eq!(
            nap_for(spin, 100, 1, 0),
            crate::NAP_WAIT,
            "threads 0 read as 1"
        );
    }
}
