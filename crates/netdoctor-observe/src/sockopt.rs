//! Socket options of the process that serves a port on this host.
//!
//! How: every process's socket descriptors (`/proc/<pid>/fd/* → socket:[inode]`) are matched
//! against the TCP table of that process's network namespace (`/proc/<pid>/net/tcp{,6}`: inode
//! → local address and state), which finds the listener and the accepted connections bound to
//! the target address even when the server runs in another network namespace. A matching
//! descriptor is duplicated into this process with `pidfd_getfd(2)` (Linux ≥ 5.6; needs
//! CAP_SYS_PTRACE over the target, i.e. root) and read with `getsockopt`: TCP_NODELAY,
//! TCP_CORK, SO_SNDBUF, SO_RCVBUF. The duplicate is closed at once; the server is not touched.
//!
//! Hand-written: no crate wraps `pidfd_getfd` (netdoctor-sys does), and the /proc parsing
//! needed is a few lines.

use crate::error::ObserveError;
use netdoctor_core::sockets::{ServerSocket, SocketState};
use netdoctor_sys::privilege::{Feature, Privileges};
use netdoctor_sys::{os_error, pidfd, sockopt};
use std::collections::HashMap;
use std::fs;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::RawFd;

/// Reads the options of at most `max_per_process` established sockets (plus the listener) of
/// each process bound to `addr`. An empty result means no process on this host serves it (a
/// remote server, or one in another PID namespace). When the address has a listener here but
/// its process cannot be inspected (another user's, without CAP_SYS_PTRACE), the error says so
/// and names the missing capability.
pub fn server_sockets(
    addr: SocketAddr,
    max_per_process: usize,
) -> Result<Vec<ServerSocket>, ObserveError> {
    let me = std::process::id();
    let mut tables: HashMap<String, HashMap<u64, TcpEntry>> = HashMap::new();
    let mut out = Vec::new();
    let mut denied: Option<String> = None;
    let mut hidden = 0;
    let procs = fs::read_dir("/proc").map_err(|e| ObserveError::Capture {
        op: "read /proc".into(),
        errno: e.raw_os_error(),
        message: e.to_string(),
    })?;
    for entry in procs.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(sockets) = socket_fds(pid) else {
            hidden += 1;
            continue;
        };
        if sockets.is_empty() {
            continue;
        }
        let Ok(ns) = fs::read_link(format!("/proc/{pid}/ns/net")) else {
            continue;
        };
        let ns = ns.to_string_lossy().into_owned();
        let table = tables.entry(ns).or_insert_with(|| tcp_table(pid));
        let mut established = 0;
        let mut listener_seen = false;
        for (fd, inode) in sockets {
            let Some(e) = table.get(&inode) else { continue };
            if e.local.port() != addr.port()
                || !(e.local.ip() == addr.ip() || e.local.ip().is_unspecified())
            {
                continue;
            }
            let state = match e.state {
                0x0A if !listener_seen => SocketState::Listen,
                0x01 if established < max_per_process => SocketState::Established,
                _ => continue,
            };
            match read_options(pid, fd) {
                Ok(o) => {
                    match state {
                        SocketState::Listen => listener_seen = true,
                        SocketState::Established => established += 1,
                    }
                    out.push(ServerSocket {
                        pid,
                        process: comm(pid),
                        fd,
                        state,
                        local: e.local.to_string(),
                        tcp_nodelay: o.nodelay,
                        tcp_cork: o.cork,
                        sndbuf: o.sndbuf,
                        rcvbuf: o.rcvbuf,
                    });
                }
                Err(msg) => {
                    denied.get_or_insert(msg);
                }
            }
        }
    }
    let op = || format!("read the socket options of the process serving {addr}");
    match (out.is_empty(), denied) {
        (true, Some(msg)) => Err(ObserveError::Capture {
            op: op(),
            errno: None,
            message: msg,
        }),
        (true, None) => {
            match hidden_server(addr, hidden, local_listener(addr), &Privileges::current()) {
                Some(message) => Err(ObserveError::Capture {
                    op: op(),
                    errno: Some(libc::EACCES),
                    message,
                }),
                None => Ok(out),
            }
        }
        _ => Ok(out),
    }
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct TcpEntry {
    pub(crate) local: SocketAddr,
    pub(crate) state: u8,
}

/// `(fd, inode)` of every socket descriptor of `pid`; `Err` when its descriptors may not be
/// read (another user's process), empty when it has gone.
pub(crate) fn socket_fds(pid: u32) -> Result<Vec<(RawFd, u64)>, ()> {
    let dir = match fs::read_dir(format!("/proc/{pid}/fd")) {
        Ok(dir) => dir,
        Err(e) if os_error::is_permission(&e) => return Err(()),
        Err(_) => return Ok(Vec::new()),
    };
    Ok(dir
        .flatten()
        .filter_map(|e| {
            let fd = e.file_name().to_str()?.parse::<RawFd>().ok()?;
            let target = fs::read_link(e.path()).ok()?;
            let inode = target
                .to_str()?
                .strip_prefix("socket:[")?
                .strip_suffix(']')?
                .parse()
                .ok()?;
            Some((fd, inode))
        })
        .collect())
}

/// inode → entry for the TCP sockets of `pid`'s network namespace.
pub(crate) fn tcp_table(pid: u32) -> HashMap<u64, TcpEntry> {
    tcp_table_of(&pid.to_string())
}

/// [`tcp_table`] of `/proc/<proc_dir>` (a pid, or `self`).
fn tcp_table_of(proc_dir: &str) -> HashMap<u64, TcpEntry> {
    let mut map = HashMap::new();
    for file in ["tcp", "tcp6"] {
        if let Ok(text) = fs::read_to_string(format!("/proc/{proc_dir}/net/{file}")) {
            for line in text.lines().skip(1) {
                if let Some((inode, e)) = parse_tcp_line(line) {
                    map.insert(inode, e);
                }
            }
        }
    }
    map
}

/// One line of /proc/net/tcp or tcp6: `sl local rem st tx:rx tr:when retr uid timeout inode …`.
fn parse_tcp_line(line: &str) -> Option<(u64, TcpEntry)> {
    let f: Vec<&str> = line.split_whitespace().collect();
    if f.len() < 10 {
        return None;
    }
    let local = parse_hex_addr(f[1])?;
    let state = u8::from_str_radix(f[3], 16).ok()?;
    let inode = f[9].parse().ok()?;
    Some((inode, TcpEntry { local, state }))
}

/// `0100007F:1F90` (IPv4) or 32 hex digits `:PORT` (IPv6): each 32-bit word in host order.
pub(crate) fn parse_hex_addr(s: &str) -> Option<SocketAddr> {
    let (ip, port) = s.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let word = |i: usize| -> Option<[u8; 4]> {
        let w = u32::from_str_radix(ip.get(i * 8..i * 8 + 8)?, 16).ok()?;
        Some(w.to_ne_bytes())
    };
    let ip = match ip.len() {
        8 => IpAddr::V4(Ipv4Addr::from(word(0)?)),
        32 => {
            let mut b = [0u8; 16];
            for i in 0..4 {
                b[i * 4..i * 4 + 4].copy_from_slice(&word(i)?);
            }
            let v6 = Ipv6Addr::from(b);
            match v6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None => IpAddr::V6(v6),
            }
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

pub(crate) fn comm(pid: u32) -> String {
    fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

struct Options {
    nodelay: bool,
    cork: bool,
    sndbuf: u32,
    rcvbuf: u32,
}

fn read_options(pid: u32, fd: RawFd) -> Result<Options, String> {
    let sock = pidfd::dup_from(pid, fd).map_err(|e| {
        let why = match Privileges::current().explain(Feature::ForeignSocketOptions, &e) {
            Some(missing) => format!("; {missing}"),
            None => String::new(),
        };
        format!(
            "pidfd_getfd(pid {pid}, fd {fd}): {}{why}",
            os_error::describe(&e)
        )
    })?;
    let get = |level: i32, name: i32| -> Result<i32, String> {
        sockopt::get_int(&sock, level, name)
            .map_err(|e| format!("getsockopt: {}", os_error::describe(&e)))
    };
    Ok(Options {
        nodelay: get(libc::IPPROTO_TCP, libc::TCP_NODELAY)? != 0,
        cork: get(libc::IPPROTO_TCP, libc::TCP_CORK)? != 0,
        sndbuf: get(libc::SOL_SOCKET, libc::SO_SNDBUF)?.max(0) as u32,
        rcvbuf: get(libc::SOL_SOCKET, libc::SO_RCVBUF)?.max(0) as u32,
    })
}

/// Why nothing was found when processes could not be inspected: `hidden` processes whose
/// descriptors this user may not read, while the address has a listener in this network
/// namespace (so the server is local, just not visible). `None`: nothing hidden, or no local
/// listener (a remote server, or one in another namespace).
fn hidden_server(
    addr: SocketAddr,
    hidden: usize,
    local_listener: bool,
    privileges: &Privileges,
) -> Option<String> {
    if hidden == 0 || !local_listener {
        return None;
    }
    let missing = privileges
        .check(Feature::ForeignSocketOptions)
        .err()
        .map_or_else(|| "reading them was refused".to_string(), |m| m.to_string());
    Some(format!(
        "{addr} has a listener on this host, but the descriptors of {hidden} processes of other \
         users cannot be read: {missing}"
    ))
}

/// Whether this process's network namespace has a TCP listener on `addr` (or on the wildcard
/// address of its port).
fn local_listener(addr: SocketAddr) -> bool {
    tcp_table_of("self").values().any(|e| {
        e.state == 0x0A
            && e.local.port() == addr.port()
            && (e.local.ip() == addr.ip() || e.local.ip().is_unspecified())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_net_tcp_lines() {
        let v4 = "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 12345 1 0000000000000000 100 0 0 10 0";
        let (inode, e) = parse_tcp_line(v4).unwrap();
        assert_eq!(inode, 12345);
        assert_eq!(e.local, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(e.state, 0x0A);
        let v6 = "   1: 00000000000000000000000001000000:1F91 00000000000000000000000000000000:0000 01 00000000:00000000 00:00000000 00000000     0        0 777 1 0";
        let (inode, e) = parse_tcp_line(v6).unwrap();
        assert_eq!(inode, 777);
        assert_eq!(e.local, "[::1]:8081".parse().unwrap());
        assert_eq!(e.state, 0x01);
        assert!(parse_tcp_line("garbage").is_none());
        assert!(parse_tcp_line("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode").is_none());
    }

    #[test]
    fn a_hidden_local_server_is_a_permission_problem_not_a_remote_one() {
        use netdoctor_sys::privilege::CapSet;
        let addr: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let user = Privileges::from_set(CapSet(0));
        let why = hidden_server(addr, 3, true, &user).unwrap();
        assert!(why.contains("descriptors of 3 processes"), "{why}");
        assert!(why.contains("needs CAP_SYS_PTRACE"), "{why}");
        // nothing hidden, or no listener here: nothing to say (remote or other namespace)
        assert_eq!(hidden_server(addr, 0, true, &user), None);
        assert_eq!(hidden_server(addr, 3, false, &user), None);
        // the capability is there, yet reading was refused (LSM, ptrace_scope)
        let root = Privileges::from_set(CapSet(u64::MAX));
        let why = hidden_server(addr, 1, true, &root).unwrap();
        assert!(why.ends_with("reading them was refused"), "{why}");
    }

    /// Env var that makes [`as_another_user_the_error_names_the_missing_capability`] the child
    /// half: it then runs as `nobody` and prints what `server_sockets` says.
    const CHILD_ADDR: &str = "NETDOCTOR_SOCKOPT_CHILD_ADDR";

    #[test]
    fn as_another_user_the_error_names_the_missing_capability() {
        if let Ok(addr) = std::env::var(CHILD_ADDR) {
            let addr: SocketAddr = addr.parse().unwrap();
            match server_sockets(addr, 4) {
                Ok(found) => println!("CHILD-OK {}", found.len()),
                Err(e) => println!("CHILD-ERR {e}"),
            }
            return;
        }
        if !netdoctor_sys::privilege::is_root() {
            eprintln!("skipped: needs root to run a child as another user");
            return;
        }
        // The server: a listener of this (root) process. The child runs as nobody, with no
        // capabilities, and cannot read this process's descriptors.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let out = std::process::Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--inh-caps=-all",
                "--bounding-set=-all",
            ])
            .arg(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "sockopt::tests::as_another_user_the_error_names_the_missing_capability",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ADDR, addr.to_string())
            .output();
        let out = match out {
            Ok(o) => o,
            Err(e) => {
                eprintln!("skipped: setpriv: {e}");
                return;
            }
        };
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line = stdout
            .lines()
            .find_map(|l| l.find("CHILD-").map(|i| &l[i..]))
            .unwrap_or_else(|| {
                panic!(
                    "child printed no result: {stdout}\n{}",
                    String::from_utf8_lossy(&out.stderr)
                )
            });
        assert!(line.starts_with("CHILD-ERR "), "{line}");
        assert!(line.contains(&addr.to_string()), "{line}");
        assert!(line.contains("has a listener on this host"), "{line}");
        assert!(line.contains("needs CAP_SYS_PTRACE"), "{line}");
        assert!(!line.contains("remote"), "{line}");
        drop(l);
    }

    #[test]
    fn finds_a_local_listener_in_this_namespace() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        assert!(local_listener(addr));
        // Another address on the same port: no listener. Checked while `l` holds the port, so
        // no parallel test can take it (after a drop, bind(0) elsewhere may reuse it).
        let other = SocketAddr::new(std::net::Ipv4Addr::new(127, 0, 0, 2).into(), addr.port());
        assert!(!local_listener(other));
        drop(l);
    }

    #[test]
    fn reads_the_options_of_a_server_in_a_child_process() {
        if !netdoctor_sys::privilege::is_root() {
            eprintln!("skipped: pidfd_getfd needs CAP_SYS_PTRACE (root)");
            return;
        }
        // A python child listens, accepts one connection with TCP_NODELAY off, and holds it.
        let script = "import socket,sys\n\
            s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(4)\n\
            print(s.getsockname()[1], flush=True)\n\
            c,_=s.accept(); c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0)\n\
            print('accepted', flush=True); sys.stdin.read()\n";
        let mut child = match std::process::Command::new("python3")
            .args(["-c", script])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
        {
            Ok(c) => c,
            Err(e) => {
                eprintln!("skipped: python3: {e}");
                return;
            }
        };
        use std::io::BufRead;
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let port: u16 = lines.next().unwrap().unwrap().trim().parse().unwrap();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let _client = std::net::TcpStream::connect(addr).unwrap();
        assert_eq!(lines.next().unwrap().unwrap(), "accepted");
        let found = server_sockets(addr, 4);
        let _ = child.kill();
        let _ = child.wait();
        let found = found.unwrap();
        let listen = found.iter().find(|s| s.state == SocketState::Listen);
        let conn = found.iter().find(|s| s.state == SocketState::Established);
        assert_eq!(listen.map(|s| s.pid), Some(child.id()), "{found:?}");
        let conn = conn.expect("the accepted connection");
        assert!(!conn.tcp_nodelay, "TCP_NODELAY was turned off by the child");
        assert!(conn.process.starts_with("python"), "{}", conn.process);
        assert!(conn.sndbuf > 0);
        // Our own client socket (local port ephemeral) is not mistaken for the server's.
        assert!(found.iter().all(|s| s.local.ends_with(&format!(":{port}"))));
    }
}
