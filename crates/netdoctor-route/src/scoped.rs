//! An address as a target is written with its zone: `fe80::1%eth0` or `fe80::1%2` (RFC 4007
//! §11; in brackets too). A link-local address (`fe80::/10`) is valid on one link only, so
//! it means nothing without the interface: the zone is its scope id (`sin6_scope_id`), an
//! interface index of the calling thread's network namespace. Names are looked up with
//! `if_nametoindex` ([`netdoctor_sys::iface`]), which is why this is not in a pure crate.

use std::net::{IpAddr, SocketAddr, SocketAddrV6};

/// An address and, for an IPv6 link-local one, the interface it is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopedIp {
    pub ip: IpAddr,
    /// The interface's index (`sin6_scope_id`).
    pub scope_id: Option<u32>,
    /// The interface's name, when it has one.
    pub scope: Option<String>,
}

impl ScopedIp {
    /// An address without a zone.
    pub fn plain(ip: IpAddr) -> ScopedIp {
        ScopedIp {
            ip,
            scope_id: None,
            scope: None,
        }
    }

    /// `fe80::1%eth0` (the index when the interface has no name), else the address alone.
    pub fn to_text(&self) -> String {
        match (&self.scope, self.scope_id) {
            (Some(name), _) => format!("{}%{name}", self.ip),
            (None, Some(id)) => format!("{}%{id}", self.ip),
            (None, None) => self.ip.to_string(),
        }
    }

    /// The socket address to send to, scope id included.
    pub fn socket_addr(&self, port: u16) -> SocketAddr {
        match (self.ip, self.scope_id) {
            (IpAddr::V6(v6), Some(id)) => SocketAddr::V6(SocketAddrV6::new(v6, port, 0, id)),
            (ip, _) => SocketAddr::new(ip, port),
        }
    }
}

/// Whether `ip` needs a zone to be reached: an IPv6 link-local unicast address.
pub fn needs_scope(ip: IpAddr) -> bool {
    matches!(ip, IpAddr::V6(v6) if v6.is_unicast_link_local())
}

/// Parses `ADDR%ZONE` (brackets allowed): `Ok(None)` when `text` has no `%` (a plain address
/// or a host name, for the caller to read); an error naming what is wrong when the part
/// before `%` is not an address, the zone is empty or names no interface of this namespace,
/// or the address is not one a zone applies to (IPv4, a global IPv6 address).
pub fn parse_zoned(text: &str) -> Result<Option<ScopedIp>, String> {
    let bare = text
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(text);
    let Some((addr, zone)) = bare.split_once('%') else {
        return Ok(None);
    };
    let ip: IpAddr = addr
        .parse()
        .map_err(|_| format!("'{text}': only an IPv6 address can carry a %zone"))?;
    if zone.is_empty() {
        return Err(format!("'{text}': empty zone after '%'"));
    }
    if !needs_scope(ip) {
        let what = if ip.is_ipv4() {
            "an IPv4 address"
        } else {
            "not link-local (fe80::/10)"
        };
        return Err(format!(
            "'{text}': a zone applies only to an IPv6 link-local address; {ip} is {what}"
        ));
    }
    let (scope_id, scope) = match zone.parse::<u32>() {
        Ok(id) => match netdoctor_sys::iface::name_of(id) {
            Some(name) => (id, Some(name)),
            None => return Err(format!("'{text}': no interface with index {id} here")),
        },
        Err(_) => match netdoctor_sys::iface::index_of(zone) {
            Some(id) => (id, Some(zone.to_string())),
            None => return Err(format!("'{text}': no interface named '{zone}' here")),
        },
    };
    Ok(Some(ScopedIp {
        ip,
        scope_id: Some(scope_id),
        scope,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zones_by_name_and_index_in_brackets_or_not() {
        let lo = netdoctor_sys::iface::index_of("lo").unwrap();
        for text in ["fe80::1%lo", "[fe80::1%lo]", &format!("fe80::1%{lo}")] {
            let s = parse_zoned(text).unwrap().unwrap();
            assert_eq!(s.ip, "fe80::1".parse::<IpAddr>().unwrap(), "{text}");
            assert_eq!(s.scope_id, Some(lo), "{text}");
            assert_eq!(s.to_text(), "fe80::1%lo", "{text}");
            assert!(matches!(s.socket_addr(80), SocketAddr::V6(a) if a.scope_id() == lo));
        }
        assert_eq!(parse_zoned("fe80::1").unwrap(), None);
        assert_eq!(parse_zoned("example.com").unwrap(), None);
    }

    #[test]
    fn a_wrong_zone_is_a_one_line_error_naming_it() {
        let err = |t: &str| parse_zoned(t).unwrap_err();
        assert!(
            err("fe80::1%nd-no-such0").contains("no interface named 'nd-no-such0'"),
            "{}",
            err("fe80::1%nd-no-such0")
        );
        assert!(err("fe80::1%4000000000").contains("no interface with index 4000000000"));
        assert!(err("10.0.0.1%lo").contains("10.0.0.1 is an IPv4 address"));
        assert!(err("2001:db8::1%lo").contains("2001:db8::1 is not link-local"));
        assert!(err("fe80::1%").contains("empty zone"));
        assert!(err("host%lo").contains("only an IPv6 address"));
        for t in ["fe80::1%nd-no-such0", "10.0.0.1%lo", "host%lo"] {
            assert!(!err(t).contains('\n'), "{t}");
        }
    }
}
