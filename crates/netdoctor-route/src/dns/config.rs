//! The system resolver's configuration, read the way glibc reads it: the `hosts:` line of
//! `/etc/nsswitch.conf`, `/etc/resolv.conf` (nameserver, search/domain, options ndots, timeout,
//! attempts, rotate) and the entries of `/etc/hosts` that match a name.
//!
//! Parsing is pure (`parse_*` take the file's text) so tests need no files and no root; the
//! `read_*` wrappers add the file access and say when a file is missing. Hand-written: the
//! formats are a few keywords each, and no crate in reach reads all three with glibc's defaults
//! and limits (3 nameservers, ndots capped at 15, timeout at 30 s, attempts at 5).

use serde::Serialize;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// glibc's `MAXNS`: nameservers after the third are ignored.
pub const MAX_NAMESERVERS: usize = 3;

/// What `/etc/resolv.conf` says (with glibc's defaults for what it leaves out).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResolvConf {
    pub path: PathBuf,
    /// False when the file does not exist (glibc then asks 127.0.0.1).
    pub exists: bool,
    /// The nameservers glibc uses (at most three), in order.
    pub nameservers: Vec<IpAddr>,
    /// Nameserver lines beyond the third, or with an address that does not parse.
    pub ignored: Vec<String>,
    pub search: Vec<String>,
    pub ndots: u32,
    /// Seconds to wait for one answer (`options timeout:N`, default 5).
    pub timeout_s: u32,
    /// Rounds over all nameservers (`options attempts:N`, default 2).
    pub attempts: u32,
    pub rotate: bool,
    /// Other `options` words, kept for the reader (e.g. `edns0`, `single-request`).
    pub other_options: Vec<String>,
}

impl ResolvConf {
    fn defaults(path: &Path, exists: bool) -> Self {
        ResolvConf {
            path: path.to_path_buf(),
            exists,
            nameservers: Vec::new(),
            ignored: Vec::new(),
            search: Vec::new(),
            ndots: 1,
            timeout_s: 5,
            attempts: 2,
            rotate: false,
            other_options: Vec::new(),
        }
    }

    /// How many names glibc may try for `name`: the name itself and, unless it ends with a dot
    /// (absolute), each search domain.
    pub fn names_tried(&self, name: &str) -> u32 {
        if name.ends_with('.') {
            1
        } else {
            1 + self.search.len() as u32
        }
    }

    /// The worst-case time one lookup of `name` can take when no nameserver answers:
    /// timeout × attempts × nameservers (glibc's retry loop) × names tried.
    pub fn worst_case_s(&self, name: &str) -> u32 {
        self.timeout_s
            * self.attempts
            * self.nameservers.len().max(1) as u32
            * self.names_tried(name)
    }

    /// The names glibc asks for `name`, in order (without the trailing dot), as `res_nsearch`
    /// does: ending with a dot (absolute), only the name; at least `ndots` dots, the name as
    /// written first, then each search domain appended; fewer, each search domain appended
    /// first and the name as written last.
    pub fn search_order(&self, name: &str) -> Vec<String> {
        if name.ends_with('.') {
            // Absolute: glibc never appends a search domain.
            return vec![name.trim_end_matches('.').to_string()];
        }
        let suffixed = self
            .search
            .iter()
            .map(|d| format!("{name}.{}", d.trim_end_matches('.')));
        let dots = name.matches('.').count() as u32;
        if dots >= self.ndots {
            std::iter::once(name.to_string()).chain(suffixed).collect()
        } else {
            suffixed.chain(std::iter::once(name.to_string())).collect()
        }
    }

    /// The name glibc asks first for `name` (the head of [`Self::search_order`]).
    pub fn first_query_name(&self, name: &str) -> String {
        self.search_order(name)
            .into_iter()
            .next()
            .unwrap_or_else(|| name.to_string())
    }
}

/// Parses resolv.conf text with glibc's rules: the last `search`/`domain` line wins, options
/// are clamped to glibc's limits, comments start with `#` or `;`.
pub fn parse_resolv_conf(path: &Path, text: &str) -> ResolvConf {
    let mut rc = ResolvConf::defaults(path, true);
    for line in text.lines() {
        let line = line.split(['#', ';']).next().unwrap_or("").trim();
        let mut words = line.split_whitespace();
        match words.next() {
            Some("nameserver") => {
                let Some(addr) = words.next() else { continue };
                // glibc accepts a scope suffix (fe80::1%eth0); we keep the address part.
                match addr.split('%').next().unwrap_or("").parse::<IpAddr>() {
                    Ok(ip) if rc.nameservers.len() < MAX_NAMESERVERS => rc.nameservers.push(ip),
                    _ => rc.ignored.push(addr.to_string()),
                }
            }
            Some("search") | Some("domain") => {
                rc.search = words.map(|w| w.to_string()).collect();
            }
            Some("options") => {
                for opt in words {
                    let (key, val) = opt.split_once(':').unwrap_or((opt, ""));
                    let num = val.parse::<u32>().ok();
                    match (key, num) {
                        ("ndots", Some(n)) => rc.ndots = n.min(15),
                        ("timeout", Some(n)) => rc.timeout_s = n.clamp(1, 30),
                        ("attempts", Some(n)) => rc.attempts = n.clamp(1, 5),
                        ("rotate", _) => rc.rotate = true,
                        _ => rc.other_options.push(opt.to_string()),
                    }
                }
            }
            _ => {}
        }
    }
    rc
}

/// Reads and parses a resolv.conf; a missing file is not an error (glibc's defaults apply).
pub fn read_resolv_conf(path: &Path) -> std::io::Result<ResolvConf> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(parse_resolv_conf(path, &text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(ResolvConf::defaults(path, false)),
        Err(e) => Err(e),
    }
}

/// The sources of the `hosts:` line of nsswitch.conf, in order (e.g. `files`, `dns`).
/// `None` when the file or the line is missing (glibc then uses `dns files`... in practice
/// `files dns`); action items like `[NOTFOUND=return]` are kept as written.
pub fn parse_nsswitch_hosts(text: &str) -> Option<Vec<String>> {
    text.lines().find_map(|line| {
        let line = line.split('#').next().unwrap_or("").trim();
        let rest = line.strip_prefix("hosts:")?;
        Some(rest.split_whitespace().map(|w| w.to_string()).collect())
    })
}

/// Addresses `/etc/hosts` gives `name` (case-insensitive; canonical names and aliases).
pub fn parse_hosts_matches(text: &str, name: &str) -> Vec<IpAddr> {
    let name = name.trim_end_matches('.');
    text.lines()
        .filter_map(|line| {
            let line = line.split('#').next().unwrap_or("");
            let mut words = line.split_whitespace();
            let ip = words.next()?.parse::<IpAddr>().ok()?;
            words.any(|w| w.eq_ignore_ascii_case(name)).then_some(ip)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolv_conf_with_everything() {
        let text = "# generated\nsearch corp.example svc.cluster.local\nnameserver 10.0.0.2\n\
                    nameserver 10.0.0.3 ; second\nnameserver fe80::1%eth0\nnameserver 10.0.0.9\n\
                    nameserver bogus\noptions ndots:5 timeout:1 attempts:3 rotate edns0\n";
        let rc = parse_resolv_conf(Path::new("/x"), text);
        assert_eq!(
            rc.nameservers,
            vec![
                "10.0.0.2".parse::<IpAddr>().unwrap(),
                "10.0.0.3".parse().unwrap(),
                "fe80::1".parse().unwrap()
            ]
        );
        assert_eq!(rc.ignored, vec!["10.0.0.9", "bogus"]);
        assert_eq!(rc.search, vec!["corp.example", "svc.cluster.local"]);
        assert_eq!(
            (rc.ndots, rc.timeout_s, rc.attempts, rc.rotate),
            (5, 1, 3, true)
        );
        assert_eq!(rc.other_options, vec!["edns0"]);
        assert_eq!(rc.worst_case_s("api"), 27);
        assert_eq!(rc.worst_case_s("api.corp.example."), 9);
        assert_eq!(rc.first_query_name("api"), "api.corp.example");
        assert_eq!(rc.first_query_name("a.b.c.d.e.f"), "a.b.c.d.e.f");
        assert_eq!(rc.first_query_name("x.y"), "x.y.corp.example");
        assert_eq!(rc.first_query_name("api."), "api");
        assert_eq!(
            rc.search_order("x.y"),
            ["x.y.corp.example", "x.y.svc.cluster.local", "x.y"]
        );
        assert_eq!(
            rc.search_order("a.b.c.d.e.f"),
            [
                "a.b.c.d.e.f",
                "a.b.c.d.e.f.corp.example",
                "a.b.c.d.e.f.svc.cluster.local"
            ]
        );
        assert_eq!(rc.search_order("x.y."), ["x.y"]);
    }

    #[test]
    fn empty_resolv_conf_has_glibc_defaults() {
        let rc = parse_resolv_conf(Path::new("/x"), "");
        assert!(rc.nameservers.is_empty());
        assert_eq!(
            (rc.ndots, rc.timeout_s, rc.attempts, rc.rotate),
            (1, 5, 2, false)
        );
        assert_eq!(rc.first_query_name("example.com"), "example.com");
        let missing = read_resolv_conf(Path::new("/nonexistent/resolv.conf")).unwrap();
        assert!(!missing.exists);
    }

    #[test]
    fn options_are_clamped_and_last_search_wins() {
        let rc = parse_resolv_conf(
            Path::new("/x"),
            "search a\ndomain b\noptions ndots:99 timeout:0 attempts:9\n",
        );
        assert_eq!(rc.search, vec!["b"]);
        assert_eq!((rc.ndots, rc.timeout_s, rc.attempts), (15, 1, 5));
    }

    #[test]
    fn nsswitch_and_hosts() {
        let ns = "passwd: files\nhosts:          files mdns4_minimal [NOTFOUND=return] dns # c\n";
        assert_eq!(
            parse_nsswitch_hosts(ns).unwrap(),
            vec!["files", "mdns4_minimal", "[NOTFOUND=return]", "dns"]
        );
        assert_eq!(parse_nsswitch_hosts("passwd: files\n"), None);
        let hosts = "127.0.0.1 localhost\n10.1.1.1 Api.Local api # x\n# 10.9.9.9 api\n";
        assert_eq!(
            parse_hosts_matches(hosts, "API.local."),
            vec!["10.1.1.1".parse::<IpAddr>().unwrap()]
        );
        assert!(parse_hosts_matches(hosts, "other").is_empty());
    }
}
