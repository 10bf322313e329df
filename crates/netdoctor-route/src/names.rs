//! The system's own name lookups (glibc's getaddrinfo and getnameinfo, through nsswitch), timed
//! and bounded: a lookup that hangs on a dead nameserver is abandoned after a cap and reported
//! as such (its thread finishes in the background; glibc offers no way to cancel it).

use serde::Serialize;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// One timed system lookup.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SystemLookup {
    /// Time to the result; `None` when the cap ran out first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elapsed_ms: Option<f64>,
    /// True when the lookup did not finish within the cap.
    pub timed_out: bool,
    /// Addresses (getaddrinfo) or the name (getnameinfo) found.
    pub results: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

fn bounded<F>(cap: Duration, f: F) -> SystemLookup
where
    F: FnOnce() -> Result<Vec<String>, String> + Send + 'static,
{
    let (tx, rx) = mpsc::channel();
    let start = Instant::now();
    let spawned = std::thread::Builder::new()
        .name("netdoctor-lookup".into())
        .spawn(move || {
            let _ = tx.send(f());
        });
    if let Err(e) = spawned {
        return SystemLookup {
            elapsed_ms: None,
            timed_out: false,
            results: Vec::new(),
            error: Some(format!("spawn lookup thread: {e}")),
        };
    }
    match rx.recv_timeout(cap) {
        Ok(r) => {
            let elapsed_ms = Some(start.elapsed().as_secs_f64() * 1000.0);
            match r {
                Ok(results) => SystemLookup {
                    elapsed_ms,
                    timed_out: false,
                    results,
                    error: None,
                },
                Err(error) => SystemLookup {
                    elapsed_ms,
                    timed_out: false,
                    results: Vec::new(),
                    error: Some(error),
                },
            }
        }
        Err(_) => SystemLookup {
            elapsed_ms: None,
            timed_out: true,
            results: Vec::new(),
            error: Some(format!("no result after {} ms", cap.as_millis())),
        },
    }
}

/// getaddrinfo(name) as every program calls it, timed, abandoned after `cap`.
pub fn getaddrinfo(name: &str, cap: Duration) -> SystemLookup {
    let name = name.to_string();
    bounded(cap, move || {
        let mut out: Vec<String> = Vec::new();
        for sa in (name.as_str(), 0u16)
            .to_socket_addrs()
            .map_err(|e| e.to_string())?
        {
            let ip = sa.ip().to_string();
            if !out.contains(&ip) {
                out.push(ip);
            }
        }
        Ok(out)
    })
}

/// getnameinfo(ip, NI_NAMEREQD) as `ping`/`traceroute` call it, timed, abandoned after `cap`.
pub fn getnameinfo(ip: IpAddr, cap: Duration) -> SystemLookup {
    getnameinfo_addr(SocketAddr::new(ip, 0), cap)
}

/// [`getnameinfo`] of a socket address: an IPv6 link-local one keeps its scope id.
pub fn getnameinfo_addr(sa: SocketAddr, cap: Duration) -> SystemLookup {
    bounded(cap, move || reverse_name(sa).map(|n| vec![n]))
}

fn reverse_name(sa: SocketAddr) -> Result<String, String> {
    let sa = socket2::SockAddr::from(sa);
    let mut host = [0 as libc::c_char; 1025];
    // SAFETY: `sa` is a valid sockaddr of `sa.len()` bytes; `host` is a writable buffer of the
    // length passed; no service buffer is requested (null, 0). getnameinfo is thread-safe.
    let rc = unsafe {
        libc::getnameinfo(
            sa.as_ptr().cast(),
            sa.len(),
            host.as_mut_ptr(),
            host.len() as libc::socklen_t,
            std::ptr::null_mut(),
            0,
            libc::NI_NAMEREQD,
        )
    };
    if rc != 0 {
        // SAFETY: gai_strerror returns a pointer to a static, NUL-terminated message.
        let msg = unsafe { std::ffi::CStr::from_ptr(libc::gai_strerror(rc)) };
        return Err(msg.to_string_lossy().into_owned());
    }
    // SAFETY: on success getnameinfo wrote a NUL-terminated string into `host`.
    let name = unsafe { std::ffi::CStr::from_ptr(host.as_ptr()) };
    Ok(name.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn localhost_resolves_through_files() {
        let r = getaddrinfo("localhost", Duration::from_secs(5));
        assert!(r.error.is_none(), "{r:?}");
        assert!(
            r.results.iter().any(|a| a == "127.0.0.1" || a == "::1"),
            "{r:?}"
        );
        assert!(r.elapsed_ms.is_some());
    }

    #[test]
    fn a_lookup_that_outlives_the_cap_is_reported_as_timed_out() {
        // The lookup ends only after the assertion (not after a fixed 300 ms, which a busy
        // machine could let pass before the 20 ms wait even started).
        let (release, held) = mpsc::channel::<()>();
        let r = bounded(Duration::from_millis(20), move || {
            let _ = held.recv_timeout(Duration::from_secs(30));
            Ok(vec![])
        });
        assert!(r.timed_out && r.elapsed_ms.is_none(), "{r:?}");
        drop(release);
    }
}
