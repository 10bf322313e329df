//! How long a server's threads waited for a CPU: the scheduler's run-queue delay of every task
//! of a server's processes (the topmost ancestor of the listener's owner with its command
//! name, and every descendant: nginx's master and workers, a forking server's children),
//! from `/proc/PID/task/TID/schedstat` (on-CPU and run-queue ns per task); a task that ends
//! takes its figures with it, so the caller samples during the run and keeps each task's
//! last. A slow server on a busy machine is CPU contention only when its own threads waited
//! or worked; a proxy waiting on a slow upstream sleeps, and waits for no CPU. Hand-parsed:
//! one line of numbers per file.

use std::fs;

/// On-CPU time and run-queue delay (ns) in one task's schedstat text.
pub fn parse_task(text: &str) -> Option<(u64, u64)> {
    let mut f = text.split_whitespace();
    Some((f.next()?.parse().ok()?, f.next()?.parse().ok()?))
}

/// One task's (thread's) counters: id, on-CPU ns, run-queue wait ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskCpu {
    pub tid: u32,
    pub cpu_ns: u64,
    pub wait_ns: u64,
}

/// Every task of `pid` into `out`: `None` when the process is gone or unreadable.
fn tasks(pid: u32, out: &mut Vec<TaskCpu>) -> Option<()> {
    let dir = fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    for e in dir.flatten() {
        let Some(tid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if let Some((cpu_ns, wait_ns)) = fs::read_to_string(e.path().join("schedstat"))
            .ok()
            .and_then(|t| parse_task(&t))
        {
            out.push(TaskCpu {
                tid,
                cpu_ns,
                wait_ns,
            });
        }
    }
    Some(())
}

/// The parent pid in a `/proc/PID/stat` text (the field after the parenthesised name).
pub fn parse_ppid(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// The command name in a `/proc/PID/stat` text (between the parentheses).
fn parse_comm(stat: &str) -> Option<&str> {
    Some(&stat[stat.find('(')? + 1..stat.rfind(')')?])
}

/// The tasks of the server that process `pid` belongs to: the topmost ancestor with the same
/// command name (a forked child or an nginx worker holds the listening socket too, and may be
/// the one found), and every descendant of it. `None` when `pid` is gone. A task that ends
/// takes its counters with it: callers sample during the run and keep each task's last
/// figures.
pub fn server_tasks(pid: u32) -> Option<Vec<TaskCpu>> {
    // pid -> (ppid, comm) of every process, read once.
    let mut procs: std::collections::HashMap<u32, (u32, String)> = Default::default();
    if let Ok(dir) = fs::read_dir("/proc") {
        for e in dir.flatten() {
            let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if let Ok(t) = fs::read_to_string(format!("/proc/{p}/stat"))
                && let (Some(pp), Some(c)) = (parse_ppid(&t), parse_comm(&t))
            {
                procs.insert(p, (pp, c.to_string()));
            }
        }
    }
    let mut root = pid;
    for _ in 0..64 {
        match (
            procs.get(&root),
            procs.get(&root).and_then(|r| procs.get(&r.0)),
        ) {
            (Some((pp, c)), Some((_, pc))) if pc == c && *pp > 1 => root = *pp,
            _ => break,
        }
    }
    let mut out = Vec::new();
    tasks(root, &mut out)?;
    let mut todo = vec![root];
    let mut n = 0usize;
    while let Some(p) = todo.pop() {
        n += 1;
        if n > 10_000 {
            break;
        }
        for (child, (pp, _)) in &procs {
            if *pp == p && *child != p {
                todo.push(*child);
                let _ = tasks(*child, &mut out);
            }
        }
    }
    Some(out)
}

/// The CPU a per-CPU softirq thread serves, from its command name (`ksoftirqd/3` → 3).
pub fn parse_ksoftirqd(comm: &str) -> Option<u32> {
    comm.trim_end().strip_prefix("ksoftirqd/")?.parse().ok()
}

/// The per-CPU softirq threads (`ksoftirqd/N`): (CPU, pid) of each one this process can see.
/// The kernel runs a CPU's softirqs in its thread once they defer (too much work in one pass,
/// or the CPU busy); when that thread waits on the run queue, packets wait in the backlog.
/// Empty in a PID namespace that does not show kernel threads.
pub fn ksoftirqd_pids() -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let Ok(dir) = fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if let Some(cpu) = fs::read_to_string(e.path().join("comm"))
            .ok()
            .and_then(|c| parse_ksoftirqd(&c))
        {
            out.push((cpu, pid));
        }
    }
    out.sort_unstable();
    out
}

/// On-CPU and run-queue ns of one process (its main task), `None` when it is gone.
pub fn process_cpu(pid: u32) -> Option<TaskCpu> {
    let (cpu_ns, wait_ns) =
        parse_task(&fs::read_to_string(format!("/proc/{pid}/schedstat")).ok()?)?;
    Some(TaskCpu {
        tid: pid,
        cpu_ns,
        wait_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat_and_stat_fields() {
        assert_eq!(parse_task("123456 7890 42\n"), Some((123456, 7890)));
        assert_eq!(parse_task("123456\n"), None);
        assert_eq!(
            parse_ppid("812 (nginx: worker (x)) S 811 811 811 0 -1"),
            Some(811)
        );
        assert_eq!(parse_ppid("garbage"), None);
        assert_eq!(parse_ksoftirqd("ksoftirqd/12\n"), Some(12));
        assert_eq!(parse_ksoftirqd("kworker/1:0"), None);
        assert_eq!(parse_ksoftirqd("ksoftirqd/x"), None);
        assert_eq!(
            parse_comm("812 (nginx: worker (x)) S 811"),
            Some("nginx: worker (x)")
        );
    }

    #[test]
    fn this_process_has_a_run_delay() {
        // Every Linux kernel with schedstats (CONFIG_SCHED_INFO) has the file for our tasks.
        let me = server_tasks(std::process::id()).unwrap();
        assert!(me.iter().any(|t| t.cpu_ns > 0), "{me:?}");
        assert_eq!(server_tasks(u32::MAX), None);
    }

    #[test]
    fn every_online_cpu_has_a_softirq_thread() {
        // Run as root in the initial PID namespace (as the tests are), kernel threads show.
        let k = ksoftirqd_pids();
        if k.is_empty() {
            eprintln!("skipped: no ksoftirqd visible (a PID namespace without kernel threads)");
            return;
        }
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert!(k.len() >= cpus, "{k:?}");
        assert!(k.iter().all(|&(_, pid)| process_cpu(pid).is_some()));
    }
}
