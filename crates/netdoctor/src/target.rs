//! Parsing what users type: target URLs and durations.

use std::time::Duration;

/// An HTTP target as given on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpUrl {
    /// What the user typed.
    pub input: String,
    /// Host name or address, without brackets.
    pub host: String,
    pub port: u16,
    /// Path with query, at least `/`.
    pub path: String,
    /// Value for the Host header (`host` or `host:port`).
    pub host_header: String,
}

/// Parses `http://host[:port]/path`; `host:port/path` without a scheme means http.
pub fn parse_url(input: &str) -> Result<HttpUrl, String> {
    let trimmed = input.trim();
    if trimmed.is_empty() {
        return Err("invalid URL '': empty".into());
    }
    let with_scheme = if trimmed.contains("://") {
        trimmed.to_string()
    } else {
        format!("http://{trimmed}")
    };
    let url = url::Url::parse(&with_scheme).map_err(|e| format!("invalid URL '{input}': {e}"))?;
    match url.scheme() {
        "http" => {}
        "https" => {
            return Err(format!(
                "invalid URL '{input}': https is not supported yet; netdoctor speaks HTTP/1.1 over \
                 plain TCP (point it at the backend's http port)"
            ));
        }
        other => {
            return Err(format!(
                "invalid URL '{input}': scheme '{other}' is not supported (use http://)"
            ));
        }
    }
    let host = match url.host() {
        Some(url::Host::Domain(d)) => d.to_string(),
        Some(url::Host::Ipv4(a)) => a.to_string(),
        Some(url::Host::Ipv6(a)) => a.to_string(),
        None => return Err(format!("invalid URL '{input}': no host")),
    };
    if host.is_empty() {
        return Err(format!("invalid URL '{input}': no host"));
    }
    let port = url.port_or_known_default().unwrap_or(80);
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
        host,
        port,
        path,
        host_header,
    })
}

/// Parses durations written like `5s`, `500ms`, `1m`, `1.5s`, `2` (seconds), `1h`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let value: f64 = num.parse().map_err(|_| {
        format!("invalid duration '{s}': expected a number with a unit, like 5s, 500ms or 1m")
    })?;
    let secs = match unit.trim() {
        "" | "s" | "sec" => value,
        "ms" => value / 1e3,
        "us" | "µs" => value / 1e6,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        other => {
            return Err(format!(
                "invalid duration '{s}': unknown unit '{other}' (use ms, s, m or h)"
            ));
        }
    };
    if !secs.is_finite() || secs <= 0.0 {
        return Err(format!("invalid duration '{s}': must be greater than zero"));
    }
    if secs > 24.0 * 3600.0 {
        return Err(format!("invalid duration '{s}': longer than a day"));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let u = parse_url("http://127.0.0.1:8080/index.html?x=1").unwrap();
        assert_eq!((u.host.as_str(), u.port), ("127.0.0.1", 8080));
        assert_eq!(u.path, "/index.html?x=1");
        assert_eq!(u.host_header, "127.0.0.1:8080");
        let u = parse_url("localhost:9000").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("localhost", 9000, "/")
        );
        let u = parse_url("http://[::1]:8080/").unwrap();
        assert_eq!(
            (u.host.as_str(), u.host_header.as_str()),
            ("::1", "[::1]:8080")
        );
        let u = parse_url("http://example.org").unwrap();
        assert_eq!((u.port, u.host_header.as_str()), (80, "example.org"));
        for bad in ["", "https://x/", "ftp://x/", "http://", "http://[::1/"] {
            let e = parse_url(bad).unwrap_err();
            assert!(e.starts_with("invalid URL"), "{bad}: {e}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("5s").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("1m").unwrap(), Duration::from_secs(60));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        for bad in ["", "0s", "-1s", "abc", "5x", "1e9h"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
