//! Parsing what users type: target URLs, `host:port`, headers, durations and counts.

use anyhow::{Context, bail};
use std::net::SocketAddr;
use std::time::Duration;

/// An HTTP(S) target as given on the command line (the one parser: `netdoctor_load::target`).
pub use netdoctor_load::target::HttpUrl;

/// Parses `http(s)://host[:port]/path`; `host:port/path` without a scheme means http.
pub fn parse_url(input: &str) -> Result<HttpUrl, String> {
    netdoctor_load::target::parse_url(input).map_err(|e| e.to_string())
}

/// Parses what [`parse_url`] does and `tcp://host:port` (`diagnose`'s targets).
pub fn parse_target(input: &str) -> Result<HttpUrl, String> {
    netdoctor_load::target::parse_target(input).map_err(|e| e.to_string())
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

/// A count of at least 1 (`-c`, `-t`): zero and nonsense are usage errors.
pub fn positive(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("'{s}' is not a positive whole number")),
    }
}

/// [`positive`] for `u32` flags.
pub fn positive_u32(s: &str) -> Result<u32, String> {
    u32::try_from(positive(s)?).map_err(|_| format!("'{s}' is too large"))
}

/// [`positive`] for `u64` flags.
pub fn positive_u64(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("'{s}' is not a positive whole number")),
    }
}

/// A rate in requests per second, greater than zero.
pub fn positive_rate(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 => Ok(r),
        _ => Err(format!(
            "'{s}' is not a rate: requests per second, a number greater than zero"
        )),
    }
}

/// "Name: value" → (name, value).
pub fn parse_header(h: &str) -> anyhow::Result<(String, String)> {
    let Some((name, value)) = h.split_once(':') else {
        bail!("invalid header '{h}': expected 'Name: value'");
    };
    let name = name.trim();
    if name.is_empty() {
        bail!("invalid header '{h}': empty name");
    }
    Ok((name.to_string(), value.trim().to_string()))
}

/// The first address of `host`.
pub fn resolve(host: &str, port: u16) -> anyhow::Result<SocketAddr> {
    netdoctor_probe::resolve(host, port)?
        .into_iter()
        .next()
        .with_context(|| format!("resolve {host}: no addresses"))
}

/// `host:port`, `[v6]:port` or an http:// URL → the first address.
pub fn parse_host_port(input: &str) -> anyhow::Result<SocketAddr> {
    let hp = netdoctor_load::target::parse_host_port(input)?;
    resolve(&hp.host, hp.port)
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
        let u = parse_url("https://example.org/").unwrap();
        assert_eq!(
            (u.port, u.scheme),
            (443, netdoctor_load::target::Scheme::Https)
        );
        for bad in ["", "ftp://x/", "http://", "http://[::1/"] {
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

    #[test]
    fn headers_targets_and_counts() {
        assert_eq!(
            parse_header("Accept:  text/html ").unwrap(),
            ("Accept".to_string(), "text/html".to_string())
        );
        assert!(parse_header("no colon").is_err());
        assert!(parse_header(": v").is_err());
        assert_eq!(
            parse_host_port("127.0.0.1:80").unwrap(),
            "127.0.0.1:80".parse().unwrap()
        );
        assert_eq!(
            parse_host_port("http://[::1]:8080/x").unwrap(),
            "[::1]:8080".parse().unwrap()
        );
        for bad in ["127.0.0.1", "127.0.0.1:0", "127.0.0.1:x", ":80"] {
            assert!(parse_host_port(bad).is_err(), "{bad}");
        }
        assert!(positive("0").is_err() && positive("-1").is_err() && positive("3") == Ok(3));
        assert!(positive_u32("0").is_err() && positive_u32("5000000000").is_err());
        assert_eq!(positive_u64("7"), Ok(7));
        assert!(positive_rate("0").is_err() && positive_rate("nan").is_err());
        assert_eq!(positive_rate("2.5"), Ok(2.5));
    }
}
