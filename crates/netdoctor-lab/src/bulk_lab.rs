//! Lab cases for bulk transfers: what limits a TCP transfer, one cause per case.
//!
//! Topology: `<prefix>-cli` (client, 10.216.0.2) — `<prefix>-rtr` (router, 10.216.0.1 and
//! 10.216.1.1, forwarding on) — `<prefix>-srv` (server, 10.216.1.2), veth pairs created inside
//! the namespaces. The router is there so a shaper, a loss rule or a small-MTU hop sits on the
//! path and not on either end's own host (a shaper on the sender's own host makes TCP hold data
//! in the socket instead of queueing and dropping it: DESIGN.md's bulk-transfer facts).
//! Every sysctl, qdisc and iptables rule is set inside these namespaces, never in the root one.
//! The server is `netdoctor throughput --server` (iperf3-compatible), a child process started
//! in the server namespace by the caller with [`BulkLab::start_server`].
//!
//! | limit | built |
//! |---|---|
//! | `SmallWmem` | `tcp_wmem = 4096 16384 16384` in the client (the sender) |
//! | `SmallRmem` | `tcp_rmem = 4096 8192 8192` in the server (the receiver) |
//! | `PathLoss` | the router drops 2 % of the client's packets (`iptables -m statistic`); the client's TSO/GSO off (else whole 64 KB super-frames drop) and reno (bbr shrugs off random loss) |
//! | `Shaper` | htb at 100 Mbit/s with a 100-packet pfifo on the router's link to the server |
//! | `MtuBlackhole` | the router's link to the server has MTU 1280 and the router drops its own ICMP fragmentation-needed, so full-size segments vanish |
//! | `SlowWriter` | nothing: the client writes at a target rate (`-b`) |
//! | `SoftirqBound` | [`SOFTIRQ_RULES`] non-matching iptables rules in the server's INPUT chain (netfilter runs in the receive softirq, so every packet walks them) and RPS steering the server link's receive to one CPU (the last), as a NIC queue's interrupt would; the client's TSO/GSO off (a rule walk per 1500-byte packet, not per 64 KB) |
//! | `SmallMss` | the router clamps the MSS of every SYN it forwards to 536 (`iptables -t mangle … -j TCPMSS --set-mss 536`): every segment is small, none is lost |
//!
//! Everything is removed on drop: the server process is killed by PID, the namespaces (and with
//! them every veth, sysctl, qdisc and rule) are deleted.

use std::net::Ipv4Addr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::LabError;
use crate::netns::run;

/// The client's address.
pub const CLIENT_IP: Ipv4Addr = Ipv4Addr::new(10, 216, 0, 2);
/// The server's address (the throughput server listens here).
pub const SERVER_IP: Ipv4Addr = Ipv4Addr::new(10, 216, 1, 2);
/// The throughput server's port (iperf3's).
pub const PORT: u16 = 5201;
/// The shaper's rate, Mbit/s.
pub const SHAPER_MBIT: u32 = 100;
/// The `PathLoss` case's drop probability.
pub const LOSS: f64 = 0.02;
/// The small hop's MTU.
pub const SMALL_MTU: u32 = 1280;
/// The MSS the `SmallMss` case's router clamps SYNs to.
pub const CLAMPED_MSS: u16 = 536;
/// The `SlowWriter` case's target bitrate (bits/s, as `-b` takes it).
pub const WRITER_RATE: &str = "50M";

/// The `SoftirqBound` case's count of iptables rules in the server's INPUT chain: on this 2-core
/// VM 10,000 kept the receiving CPU 79–95 % in softirq (5,000: 58–72 %) with other builds
/// running.
pub const SOFTIRQ_RULES: u32 = 10_000;

/// What limits the transfer in a bulk lab.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    SmallWmem,
    SmallRmem,
    PathLoss,
    Shaper,
    MtuBlackhole,
    SlowWriter,
    SmallMss,
    SoftirqBound,
}

/// The three namespaces of one bulk case; everything is removed on drop.
#[derive(Debug)]
pub struct BulkLab {
    client: String,
    router: String,
    server: String,
    child: Option<Child>,
}

impl BulkLab {
    /// The namespaces a lab with this prefix has, client first.
    pub fn namespace_names(prefix: &str) -> [String; 3] {
        [
            format!("{prefix}-cli"),
            format!("{prefix}-rtr"),
            format!("{prefix}-srv"),
        ]
    }

    /// Builds the topology and the limit. `prefix` must be unique (e.g. include the PID), at
    /// most 40 characters from `[A-Za-z0-9_-]`.
    pub fn create(prefix: &str, limit: Limit) -> Result<BulkLab, LabError> {
        crate::hostcases::check_prefix(prefix)?;
        let [client, router, server] = Self::namespace_names(prefix);
        let lab = BulkLab {
            client,
            router,
            server,
            child: None,
        };
        // On error, `lab`'s drop removes whatever was created.
        for ns in lab.namespaces() {
            run("ip", &["netns", "add", ns])?;
            run("ip", &["-n", ns, "link", "set", "lo", "up"])?;
        }
        let (c, r, s) = (&lab.client, &lab.router, &lab.server);
        run(
            "ip",
            &[
                "link", "add", "b-cli", "netns", c, "type", "veth", "peer", "name", "b-rc",
                "netns", r,
            ],
        )?;
        run(
            "ip",
            &[
                "link", "add", "b-rs", "netns", r, "type", "veth", "peer", "name", "b-srv",
                "netns", s,
            ],
        )?;
        for (ns, dev, addr) in [
            (c, "b-cli", "10.216.0.2/24"),
            (r, "b-rc", "10.216.0.1/24"),
            (r, "b-rs", "10.216.1.1/24"),
            (s, "b-srv", "10.216.1.2/24"),
        ] {
            run("ip", &["-n", ns, "addr", "add", addr, "dev", dev])?;
            run("ip", &["-n", ns, "link", "set", dev, "up"])?;
        }
        run(
            "ip",
            &["-n", c, "route", "add", "default", "via", "10.216.0.1"],
        )?;
        run(
            "ip",
            &["-n", s, "route", "add", "default", "via", "10.216.1.1"],
        )?;
        lab.sysctl(r, "net.ipv4.ip_forward", "1")?;
        lab.apply(limit)?;
        Ok(lab)
    }

    fn apply(&self, limit: Limit) -> Result<(), LabError> {
        let (c, r, s) = (&self.client, &self.router, &self.server);
        match limit {
            Limit::SmallWmem => self.sysctl(c, "net.ipv4.tcp_wmem", "4096 16384 16384"),
            Limit::SmallRmem => self.sysctl(s, "net.ipv4.tcp_rmem", "4096 8192 8192"),
            Limit::PathLoss => {
                self.exec(c, &["ethtool", "-K", "b-cli", "tso", "off", "gso", "off"])?;
                self.sysctl(c, "net.ipv4.tcp_congestion_control", "reno")?;
                self.exec(
                    r,
                    &[
                        "iptables",
                        "-A",
                        "FORWARD",
                        "-s",
                        "10.216.0.2",
                        "-m",
                        "statistic",
                        "--mode",
                        "random",
                        "--probability",
                        &LOSS.to_string(),
                        "-j",
                        "DROP",
                    ],
                )
            }
            Limit::Shaper => {
                let rate = format!("{SHAPER_MBIT}mbit");
                self.exec(
                    r,
                    &[
                        "tc", "qdisc", "add", "dev", "b-rs", "root", "handle", "1:", "htb",
                        "default", "10", "r2q", "100",
                    ],
                )?;
                self.exec(
                    r,
                    &[
                        "tc", "class", "add", "dev", "b-rs", "parent", "1:", "classid", "1:10",
                        "htb", "rate", &rate, "ceil", &rate,
                    ],
                )?;
                self.exec(
                    r,
                    &[
                        "tc", "qdisc", "add", "dev", "b-rs", "parent", "1:10", "handle", "10:",
                        "pfifo", "limit", "100",
                    ],
                )
            }
            Limit::MtuBlackhole => {
                run(
                    "ip",
                    &[
                        "-n",
                        r,
                        "link",
                        "set",
                        "b-rs",
                        "mtu",
                        &SMALL_MTU.to_string(),
                    ],
                )?;
                self.exec(
                    r,
                    &[
                        "iptables",
                        "-A",
                        "OUTPUT",
                        "-p",
                        "icmp",
                        "--icmp-type",
                        "fragmentation-needed",
                        "-j",
                        "DROP",
                    ],
                )
            }
            Limit::SlowWriter => Ok(()),
            Limit::SoftirqBound => {
                self.exec(c, &["ethtool", "-K", "b-cli", "tso", "off", "gso", "off"])?;
                self.load_rules(s, SOFTIRQ_RULES)?;
                let mask = rps_mask(softirq_cpu());
                self.exec(
                    s,
                    &[
                        "sh",
                        "-c",
                        &format!("echo {mask} > /sys/class/net/b-srv/queues/rx-0/rps_cpus"),
                    ],
                )
            }
            Limit::SmallMss => self.exec(
                r,
                &[
                    "iptables",
                    "-t",
                    "mangle",
                    "-A",
                    "FORWARD",
                    "-p",
                    "tcp",
                    "--tcp-flags",
                    "SYN,RST",
                    "SYN",
                    "-j",
                    "TCPMSS",
                    "--set-mss",
                    &CLAMPED_MSS.to_string(),
                ],
            ),
        }
    }

    /// Loads `n` INPUT rules that match nothing the lab sends (UDP from 10.0.0.0/8 hosts to
    /// ports 1000–60999) into `ns` with one `iptables-restore` (one rule per `iptables` call
    /// would take minutes). The rules file is removed whatever happens.
    fn load_rules(&self, ns: &str, n: u32) -> Result<(), LabError> {
        let mut text = String::from("*filter\n");
        for i in 0..n {
            text.push_str(&format!(
                "-A INPUT -s 10.{}.{}.9/32 -p udp --dport {} -j DROP\n",
                i / 250 % 250,
                i % 250,
                1000 + i % 60000
            ));
        }
        text.push_str("COMMIT\n");
        let path = std::env::temp_dir().join(format!("{ns}-{}.rules", std::process::id()));
        let io = |source| LabError::Io {
            op: format!("write {}", path.display()),
            source,
        };
        std::fs::write(&path, text).map_err(io)?;
        let r = self.exec(ns, &["iptables-restore", &path.to_string_lossy()]);
        let _ = std::fs::remove_file(&path);
        r
    }

    /// Starts `<exe> throughput --server --bind SERVER_IP` in the server namespace and waits
    /// (up to 5 s) until it listens. Returns its PID; the lab kills it on drop.
    pub fn start_server(&mut self, exe: &Path) -> Result<u32, LabError> {
        let child = Command::new("ip")
            .args(["netns", "exec", &self.server])
            .arg(exe)
            .args([
                "throughput",
                "--server",
                "--bind",
                &SERVER_IP.to_string(),
                "-p",
                &PORT.to_string(),
                "-i",
                "0",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|source| LabError::Io {
                op: format!("start {} throughput --server", exe.display()),
                source,
            })?;
        let pid = child.id();
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let ss = run("ip", &["netns", "exec", &self.server, "ss", "-Htln"])?;
            if ss.contains(&format!("{SERVER_IP}:{PORT}")) {
                return Ok(pid);
            }
            if let Some(c) = self.child.as_mut()
                && let Ok(Some(status)) = c.try_wait()
            {
                return Err(LabError::Io {
                    op: "the throughput server".to_string(),
                    source: std::io::Error::other(format!("exited at start ({status})")),
                });
            }
            if Instant::now() > deadline {
                return Err(LabError::Io {
                    op: "the throughput server".to_string(),
                    source: std::io::Error::other(format!(
                        "not listening on {SERVER_IP}:{PORT} after 5 s"
                    )),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The client namespace (run the throughput client here).
    pub fn client_netns(&self) -> &str {
        &self.client
    }

    /// The server namespace.
    pub fn server_netns(&self) -> &str {
        &self.server
    }

    /// The router namespace.
    pub fn router_netns(&self) -> &str {
        &self.router
    }

    fn namespaces(&self) -> [&String; 3] {
        [&self.client, &self.router, &self.server]
    }

    fn sysctl(&self, ns: &str, key: &str, value: &str) -> Result<(), LabError> {
        self.exec(ns, &["sysctl", "-q", "-w", &format!("{key}={value}")])
    }

    fn exec(&self, ns: &str, argv: &[&str]) -> Result<(), LabError> {
        let mut a = vec!["netns", "exec", ns];
        a.extend_from_slice(argv);
        run("ip", &a).map(|_| ())
    }
}

/// The CPU the `SoftirqBound` case steers the server's receive to: the last one.
pub fn softirq_cpu() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()) - 1
}

/// An `rps_cpus` mask naming one CPU: hex, comma-separated 32-bit groups (the sysfs format).
fn rps_mask(cpu: usize) -> String {
    let mut groups: Vec<String> = (0..=cpu / 32)
        .map(|g| {
            if g == cpu / 32 {
                format!("{:08x}", 1u32 << (cpu % 32))
            } else {
                "00000000".to_string()
            }
        })
        .collect();
    groups.reverse();
    groups.join(",")
}

impl Drop for BulkLab {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        for ns in self.namespaces() {
            if crate::netns_exists(ns) {
                let _ = run("ip", &["netns", "del", ns]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn rps_masks() {
        assert_eq!(super::rps_mask(0), "00000001");
        assert_eq!(super::rps_mask(1), "00000002");
        assert_eq!(super::rps_mask(33), "00000002,00000000");
    }
}
