//! The one parser of what users type as a target: an HTTP(S) URL
//! (`http[s]://host[:port]/path?query`, or `host:port/path` without a scheme, which means http),
//! a plain TCP service (`tcp://host:port`, for `diagnose`: probes and passive watching; see
//! [`parse_target`]) and a bare `host:port` (for `connect`). Pure: no name resolution here (see
//! [`crate::HttpTarget::resolve`]), so every case is unit-tested.
//!
//! URLs go through the `url` crate (WHATWG parsing: IPv6 brackets, percent-encoding, default
//! ports); only the scheme check, the no-scheme shorthand and the messages are netdoctor's.

/// A target that cannot be used; prints as `invalid URL 'x': reason` or
/// `invalid target 'x': reason`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what} '{input}': {reason}")]
pub struct TargetError {
    /// "URL" or "target".
    pub what: &'static str,
    /// What the user typed.
    pub input: String,
    /// What is wrong with it.
    pub reason: String,
}

/// How a URL's requests travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `http://`: HTTP/1.1 over TCP (default port 80).
    Http,
    /// `https://`: HTTP/1.1 over TLS (default port 443; see [`crate::tls`]).
    Https,
    /// `tcp://host:port`: any TCP request/response protocol (no default port). Accepted by
    /// [`parse_target`] only: the load engine speaks HTTP(S).
    Tcp,
    /// `grpc://`: gRPC over cleartext HTTP/2 with prior knowledge (default port 80).
    Grpc,
    /// `grpcs://`: gRPC over HTTP/2 in TLS (default port 443).
    Grpcs,
}

impl Scheme {
    /// `http`, `https` or `tcp`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
            Scheme::Tcp => "tcp",
            Scheme::Grpc => "grpc",
            Scheme::Grpcs => "grpcs",
        }
    }

    /// Over TLS (`https`, `grpcs`).
    pub fn is_tls(self) -> bool {
        matches!(self, Scheme::Https | Scheme::Grpcs)
    }

    /// gRPC (`grpc`, `grpcs`): always HTTP/2.
    pub fn is_grpc(self) -> bool {
        matches!(self, Scheme::Grpc | Scheme::Grpcs)
    }
}

/// An HTTP(S) target as given on the command line (or, from [`parse_target`], a `tcp://` one:
/// path `/`, and the Host header is `host:port`, never sent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpUrl {
    /// What the user typed.
    pub input: String,
    /// `http` or `https`.
    pub scheme: Scheme,
    /// Host name or address, without brackets (`::1`).
    pub host: String,
    /// The port (80 or 443 when the URL has none).
    pub port: u16,
    /// Path with query, at least `/`.
    pub path: String,
    /// Value for the Host header (`host` or `host:port`, IPv6 in brackets).
    pub host_header: String,
}

/// A `host:port` target (no path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPort {
    /// What the user typed.
    pub input: String,
    /// Host name or address, without brackets.
    pub host: String,
    /// The port, 1..65535.
    pub port: u16,
}

/// Parses `http[s]://host[:port]/path?query`; `host:port/path` without a scheme means http.
/// A `tcp://` target is an error here (the load engine and the HTTP probe need HTTP).
pub fn parse_url(input: &str) -> Result<HttpUrl, TargetError> {
    parse(input, false)
}

/// What `tcp://` targets look like, for messages.
pub const TCP_USAGE: &str = "tcp://HOST:PORT, e.g. tcp://10.0.0.5:6379";

/// Parses what [`parse_url`] does, and `tcp://host:port` (any TCP protocol; the port is
/// required, a path is not allowed).
pub fn parse_target(input: &str) -> Result<HttpUrl, TargetError> {
    parse(input, true)
}

fn parse(input: &str, tcp: bool) -> Result<HttpUrl, TargetError> {
    let bad = |reason: String| TargetError {
        what: "URL",
        input: input.to_string(),
        reason,
    };
    let trimmed = input.trim();
    if trimmed.is_empty() {
        return Err(bad("empty".into()));
    }
    if let Some(zone) = ipv6_zone(trimmed) {
        return Err(bad(format!(
            "an IPv6 zone in a URL ('%{zone}', RFC 6874) is not supported: a link-local \
             server cannot be loaded or diagnosed yet; use one of its global or ULA addresses \
             (`netdoctor trace fe80::…%IFACE` does take a zone)"
        )));
    }
    let with_scheme = if trimmed.contains("://") {
        trimmed.to_string()
    } else {
        format!("http://{trimmed}")
    };
    let url = url::Url::parse(&with_scheme).map_err(|e| bad(e.to_string()))?;
    let scheme = match url.scheme() {
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        "grpc" => Scheme::Grpc,
        "grpcs" => Scheme::Grpcs,
        "tcp" if tcp => Scheme::Tcp,
        "tcp" => {
            return Err(bad(
                "scheme 'tcp' is not supported here (use http:// or https://; \
                 `netdoctor diagnose` takes tcp://HOST:PORT)"
                    .into(),
            ));
        }
        other if tcp => {
            return Err(bad(format!(
                "scheme '{other}' is not supported (use http://, https://, grpc://, grpcs:// or tcp://)"
            )));
        }
        other => {
            return Err(bad(format!(
                "scheme '{other}' is not supported (use http://, https://, grpc:// or grpcs://)"
            )));
        }
    };
    if scheme == Scheme::Tcp {
        return tcp_target(input, &url).map_err(bad);
    }
    let host = match url.host() {
        Some(url::Host::Domain(d)) => d.to_string(),
        Some(url::Host::Ipv4(a)) => a.to_string(),
        Some(url::Host::Ipv6(a)) => a.to_string(),
        None => return Err(bad("no host".into())),
    };
    if host.is_empty() {
        return Err(bad("no host".into()));
    }
    let port = url.port_or_known_default().unwrap_or(match scheme {
        Scheme::Https | Scheme::Grpcs => 443,
        Scheme::Http | Scheme::Tcp | Scheme::Grpc => 80,
    });
    let mut path = url.path().to_string();
    if path.is_empty() {
        path.push('/');
    }
    if let Some(q) = url.query() {
        path.push('?');
        path.push_str(q);
    }
    let host_str = url.host_str().unwrap_or(&host).to_string();
    let host_header = match url.port() {
        Some(p) => format!("{host_str}:{p}"),
        None => host_str,
    };
    Ok(HttpUrl {
        input: input.to_string(),
        scheme,
        host,
        port,
        path,
        host_header,
    })
}

/// The zone of a bracketed IPv6 host (`[fe80::1%25eth0]` gives `25eth0`), if any.
fn ipv6_zone(url: &str) -> Option<&str> {
    let open = url.find('[')?;
    let close = open + url[open..].find(']')?;
    let zone = url[open..close].split_once('%')?.1;
    Some(
        zone.strip_prefix("25")
            .filter(|z| !z.is_empty())
            .unwrap_or(zone),
    )
}

/// `tcp://host:port` from its parsed URL (a non-special scheme: the host is opaque text).
fn tcp_target(input: &str, url: &url::Url) -> Result<HttpUrl, String> {
    let host = match url.host() {
        Some(url::Host::Domain(d)) => d.to_string(),
        Some(url::Host::Ipv4(a)) => a.to_string(),
        Some(url::Host::Ipv6(a)) => a.to_string(),
        None => String::new(),
    };
    if host.is_empty() {
        return Err(format!("no host (expected {TCP_USAGE})"));
    }
    let Some(port) = url.port().filter(|p| *p > 0) else {
        return Err(format!(
            "a tcp:// target needs a port (expected {TCP_USAGE})"
        ));
    };
    if !matches!(url.path(), "" | "/") || url.query().is_some() {
        return Err(format!(
            "a tcp:// target has no path (expected {TCP_USAGE})"
        ));
    }
    let host_str = url.host_str().unwrap_or(&host).to_string();
    Ok(HttpUrl {
        input: input.to_string(),
        scheme: Scheme::Tcp,
        host,
        port,
        path: "/".into(),
        host_header: format!("{host_str}:{port}"),
    })
}

/// Parses `host:port` or `[v6]:port`; an `http(s)://` URL gives its host and port.
pub fn parse_host_port(input: &str) -> Result<HostPort, TargetError> {
    let bad = |reason: String| TargetError {
        what: "target",
        input: input.to_string(),
        reason,
    };
    let s = input.trim();
    if let Ok(a) = s.parse::<std::net::SocketAddr>() {
        if a.port() == 0 {
            return Err(bad("port 0 is not a number in 1..65535".into()));
        }
        return Ok(HostPort {
            input: input.to_string(),
            host: a.ip().to_string(),
            port: a.port(),
        });
    }
    if s.contains("://") {
        let u = parse_url(s)?;
        return Ok(HostPort {
            input: input.to_string(),
            host: u.host,
            port: u.port,
        });
    }
    let Some((host, port)) = s.rsplit_once(':') else {
        return Err(bad("expected HOST:PORT, e.g. 127.0.0.1:80".into()));
    };
    let port: u16 = match port.parse() {
        Ok(p) if p > 0 => p,
        _ => {
            return Err(bad(format!("port '{port}' is not a number in 1..65535")));
        }
    };
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if host.is_empty() {
        return Err(bad("no host".into()));
    }
    Ok(HostPort {
        input: input.to_string(),
        host: host.to_string(),
        port,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_with_and_without_scheme() {
        let u = parse_url("http://127.0.0.1:8080/index.html?x=1").unwrap();
        assert_eq!((u.host.as_str(), u.port), ("127.0.0.1", 8080));
        assert_eq!(u.path, "/index.html?x=1");
        assert_eq!(u.host_header, "127.0.0.1:8080");
        assert_eq!(u.input, "http://127.0.0.1:8080/index.html?x=1");
        // host:port without a scheme means http
        let u = parse_url("localhost:9000").unwrap();
        assert_eq!(
            (
                u.host.as_str(),
                u.port,
                u.path.as_str(),
                u.host_header.as_str()
            ),
            ("localhost", 9000, "/", "localhost:9000")
        );
        let u = parse_url("  10.0.0.1/a/b?c=d&e  ").unwrap();
        assert_eq!((u.port, u.path.as_str()), (80, "/a/b?c=d&e"));
    }

    #[test]
    fn ipv6_brackets_and_default_port() {
        let u = parse_url("http://[::1]:8080/").unwrap();
        assert_eq!(
            (u.host.as_str(), u.host_header.as_str(), u.port),
            ("::1", "[::1]:8080", 8080)
        );
        let u = parse_url("http://[::1]/").unwrap();
        assert_eq!((u.port, u.host_header.as_str()), (80, "[::1]"));
        let u = parse_url("http://example.org").unwrap();
        assert_eq!(
            (u.port, u.host_header.as_str(), u.path.as_str()),
            (80, "example.org", "/")
        );
        // an explicit default port stays out of the Host header (the url crate drops it)
        let u = parse_url("http://example.org:80/x").unwrap();
        assert_eq!((u.port, u.host_header.as_str()), (80, "example.org"));
    }

    #[test]
    fn https_urls() {
        let u = parse_url("https://example.org/a").unwrap();
        assert_eq!(
            (u.scheme, u.port, u.host_header.as_str(), u.path.as_str()),
            (Scheme::Https, 443, "example.org", "/a")
        );
        let u = parse_url("HTTPS://127.0.0.1:8443").unwrap();
        assert_eq!(
            (u.scheme, u.port, u.host_header.as_str()),
            (Scheme::Https, 8443, "127.0.0.1:8443")
        );
        // an explicit default port stays out of the Host header
        let u = parse_url("https://example.org:443/").unwrap();
        assert_eq!((u.port, u.host_header.as_str()), (443, "example.org"));
        // no scheme still means http
        assert_eq!(parse_url("example.org:443/").unwrap().scheme, Scheme::Http);
        assert_eq!(parse_url("http://x/").unwrap().scheme, Scheme::Http);
    }

    #[test]
    fn grpc_urls() {
        let u = parse_url("grpc://127.0.0.1:50051").unwrap();
        assert_eq!(
            (u.scheme, u.port, u.path.as_str()),
            (Scheme::Grpc, 50051, "/")
        );
        assert!(u.scheme.is_grpc() && !u.scheme.is_tls());
        let u = parse_url("grpcs://svc.example/pkg.Svc/Method").unwrap();
        assert_eq!(
            (u.scheme, u.port, u.path.as_str()),
            (Scheme::Grpcs, 443, "/pkg.Svc/Method")
        );
        assert!(u.scheme.is_grpc() && u.scheme.is_tls());
    }

    #[test]
    fn bad_urls_say_what_is_wrong() {
        let e = parse_url("").unwrap_err();
        assert_eq!(e.to_string(), "invalid URL '': empty");
        let e = parse_url("ftp://x/").unwrap_err().to_string();
        assert_eq!(
            e,
            "invalid URL 'ftp://x/': scheme 'ftp' is not supported (use http://, https://, grpc:// or grpcs://)"
        );
        for zoned in [
            "http://[fe80::1%25eth0]:8080/",
            "[fe80::1%eth0]:80",
            "grpc://[fe80::2%253]/",
        ] {
            let e = parse_url(zoned).unwrap_err().to_string();
            assert!(e.contains("IPv6 zone in a URL") && !e.contains('\n'), "{e}");
            assert!(e.contains("'%eth0'") || e.contains("'%3'"), "{e}");
        }
        for bad in ["http://", "http://[::1/", "not a url", "http://h:99999/"] {
            let e = parse_url(bad).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("invalid URL '{bad}': ")),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn tcp_targets() {
        let u = parse_target("tcp://10.0.0.5:6379").unwrap();
        assert_eq!(
            (u.scheme, u.host.as_str(), u.port, u.path.as_str()),
            (Scheme::Tcp, "10.0.0.5", 6379, "/")
        );
        let u = parse_target("tcp://[::1]:11211/").unwrap();
        assert_eq!((u.host.as_str(), u.port), ("::1", 11211));
        assert_eq!(u.host_header, "[::1]:11211");
        let u = parse_target("TCP://db.example:5432").unwrap();
        assert_eq!((u.host.as_str(), u.port), ("db.example", 5432));
        // URLs still parse the same way through parse_target.
        assert_eq!(parse_target("https://x/").unwrap().scheme, Scheme::Https);
        let e = |s: &str| parse_target(s).unwrap_err().to_string();
        assert_eq!(
            e("tcp://10.0.0.5"),
            "invalid URL 'tcp://10.0.0.5': a tcp:// target needs a port (expected \
             tcp://HOST:PORT, e.g. tcp://10.0.0.5:6379)"
        );
        assert!(e("tcp://").contains("no host"), "{}", e("tcp://"));
        assert!(e("tcp://:80").contains("host"), "{}", e("tcp://:80"));
        assert!(
            e("tcp://h:0").contains("needs a port"),
            "{}",
            e("tcp://h:0")
        );
        assert!(e("tcp://h:70000").starts_with("invalid URL 'tcp://h:70000': "));
        assert!(e("tcp://h:80/x").contains("has no path"));
        // The HTTP-only parser refuses tcp:// and says where it works.
        let e = parse_url("tcp://h:80").unwrap_err().to_string();
        assert!(e.contains("scheme 'tcp' is not supported here"), "{e}");
    }

    #[test]
    fn host_ports() {
        let hp = |s: &str| parse_host_port(s).map(|h| (h.host, h.port));
        assert_eq!(hp("127.0.0.1:80"), Ok(("127.0.0.1".into(), 80)));
        assert_eq!(hp("[::1]:8080"), Ok(("::1".into(), 8080)));
        assert_eq!(hp("localhost:9000"), Ok(("localhost".into(), 9000)));
        assert_eq!(hp("http://[::1]/x"), Ok(("::1".into(), 80)));
        let e = |s: &str| parse_host_port(s).unwrap_err().to_string();
        assert_eq!(
            e("127.0.0.1:0"),
            "invalid target '127.0.0.1:0': port 0 is not a number in 1..65535"
        );
        assert_eq!(
            e("localhost"),
            "invalid target 'localhost': expected HOST:PORT, e.g. 127.0.0.1:80"
        );
        assert_eq!(
            e("h:http"),
            "invalid target 'h:http': port 'http' is not a number in 1..65535"
        );
        assert_eq!(e(":80"), "invalid target ':80': no host");
        assert_eq!(hp("https://x/"), Ok(("x".into(), 443)));
        assert!(e("ftp://x/").starts_with("invalid URL 'ftp://x/'"));
    }
}
