//! A fake Kubernetes pod for tests of pod mode (`watch --pods`) without a cluster: a network
//! namespace with an HTTP server (Debian's `/usr/bin/python3 -m http.server`) on
//! 127.0.0.1:[`PORT`], and the pod's entry in a fake proc root (`PID/ns` and `PID/net` link to
//! the real ones, `PID/cgroup` names the pod's UID the way a kubelet's cgroup driver does).
//! Shared by the agent's discovery test and the CLI's live `watch --pods` test, so both fake
//! the same kubelet layout. Needs root; the namespace and the server are removed on drop.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The port every fake pod's server listens on (the same in each: pods have their own
/// namespaces).
pub const PORT: u16 = 8080;

/// A namespace with an HTTP server on 127.0.0.1:[`PORT`], removed on drop.
pub struct FakePod {
    pub ns: String,
    server: Option<Child>,
}

impl FakePod {
    /// Makes namespace `ns` (loopback up), starts the server in it and waits (up to 20 s)
    /// until it listens. `None` when `ip netns` is not available.
    pub fn start(ns: &str) -> Option<FakePod> {
        let ok = Command::new("ip")
            .args(["netns", "add", ns])
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            return None;
        }
        let mut pod = FakePod {
            ns: ns.to_string(),
            server: None,
        };
        Command::new("ip")
            .args(["-n", ns, "link", "set", "lo", "up"])
            .status()
            .ok()?;
        let child = Command::new("ip")
            .args(["netns", "exec", ns, "/usr/bin/python3", "-m", "http.server"])
            .args([&PORT.to_string(), "--bind", "127.0.0.1"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        pod.server = Some(child);
        let t0 = Instant::now();
        while !listening(pod.pid(), PORT) {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "the test's server in {ns} did not listen within 20 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(pod)
    }

    /// The server's PID (0 once gone).
    pub fn pid(&self) -> u32 {
        self.server.as_ref().map_or(0, Child::id)
    }

    /// One `GET /` from inside the namespace, its answer read to the end.
    pub fn get(&self) -> std::io::Result<()> {
        crate::in_netns(&self.ns, || {
            let mut s = std::net::TcpStream::connect(("127.0.0.1", PORT))?;
            s.write_all(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")?;
            let mut b = Vec::new();
            s.read_to_end(&mut b)?;
            Ok(())
        })
        .map_err(|e| std::io::Error::other(e.to_string()))?
    }

    /// The pod's entry in the fake proc root `proc_root`: `PID/ns` and `PID/net` link to the
    /// real ones, `PID/cgroup` holds `cgroup` ([`cgroup_systemd`], [`cgroup_cgroupfs`], or a
    /// non-pod one). Returns the entry's directory.
    pub fn proc_entry(&self, proc_root: &Path, cgroup: &str) -> PathBuf {
        let pid = self.pid();
        let d = proc_root.join(pid.to_string());
        std::fs::create_dir_all(&d).expect("fake proc entry");
        std::os::unix::fs::symlink(format!("/proc/{pid}/ns"), d.join("ns")).expect("ns link");
        std::os::unix::fs::symlink(format!("/proc/{pid}/net"), d.join("net")).expect("net link");
        std::fs::write(d.join("cgroup"), cgroup).expect("fake cgroup");
        d
    }
}

impl Drop for FakePod {
    fn drop(&mut self) {
        if let Some(mut c) = self.server.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).status();
    }
}

/// The cgroup line of a pod's process under the systemd cgroup driver.
pub fn cgroup_systemd(uid: &str) -> String {
    format!(
        "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice/cri-containerd-1.scope\n",
        uid.replace('-', "_")
    )
}

/// The cgroup line of a pod's process under the cgroupfs driver.
pub fn cgroup_cgroupfs(uid: &str) -> String {
    format!("0::/kubepods/besteffort/pod{uid}/0123\n")
}

/// `pid`'s namespace has a TCP listener on `port` (`/proc/PID/net/tcp`, state 0A).
pub fn listening(pid: u32, port: u16) -> bool {
    let t = std::fs::read_to_string(format!("/proc/{pid}/net/tcp")).unwrap_or_default();
    t.lines().skip(1).any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.get(3) == Some(&"0A")
            && f.get(1)
                .and_then(|a| a.rsplit_once(':'))
                .and_then(|(_, p)| u16::from_str_radix(p, 16).ok())
                == Some(port)
    })
}
