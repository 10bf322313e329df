//! The request bytes of a run, built once.

/// Builds the request bytes (once per run): request line, `Host` (unless `headers` has one),
/// `headers`, `Content-Length` for a body, `Connection: close` without keep-alive.
pub fn build_request(
    method: &str,
    host: &str,
    path: &str,
    headers: &[(String, String)],
    body: Option<&[u8]>,
    keepalive: bool,
) -> Result<Vec<u8>, String> {
    if method.is_empty() || !method.bytes().all(is_token_byte) {
        return Err(format!("method {method:?} is not an HTTP token"));
    }
    let path = if path.is_empty() { "/" } else { path };
    if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err(format!(
            "path {path:?} contains spaces or control characters"
        ));
    }
    if host.bytes().any(|b| b < b' ' || b == 0x7f) {
        return Err(format!("host {host:?} contains control characters"));
    }
    let mut req = Vec::with_capacity(128);
    req.extend_from_slice(method.as_bytes());
    req.push(b' ');
    req.extend_from_slice(path.as_bytes());
    req.extend_from_slice(b" HTTP/1.1\r\n");
    let has = |name: &str| headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
    if !has("host") {
        req.extend_from_slice(b"Host: ");
        req.extend_from_slice(host.as_bytes());
        req.extend_from_slice(b"\r\n");
    }
    for (name, value) in headers {
        if name.is_empty() || !name.bytes().all(is_token_byte) {
            return Err(format!("header name {name:?} is not an HTTP token"));
        }
        if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
            return Err(format!("header {name} has a value with CR, LF or NUL"));
        }
        req.extend_from_slice(name.as_bytes());
        req.extend_from_slice(b": ");
        req.extend_from_slice(value.as_bytes());
        req.extend_from_slice(b"\r\n");
    }
    if let Some(body) = body
        && !has("content-length")
        && !has("transfer-encoding")
    {
        req.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
    }
    if !keepalive && !has("connection") {
        req.extend_from_slice(b"Connection: close\r\n");
    }
    req.extend_from_slice(b"\r\n");
    if let Some(body) = body {
        req.extend_from_slice(body);
    }
    Ok(req)
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_bytes() {
        let r = build_request("GET", "127.0.0.1:8080", "/a?b=1", &[], None, true).unwrap();
        assert_eq!(r, b"GET /a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n");
        let h = vec![("X-A".to_string(), "1".to_string())];
        let r = build_request("POST", "h", "", &h, Some(b"xyz"), false).unwrap();
        assert_eq!(
            r,
            b"POST / HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nContent-Length: 3\r\nConnection: close\r\n\r\nxyz"
        );
        assert!(build_request("G ET", "h", "/", &[], None, true).is_err());
        let evil = vec![("X".to_string(), "a\r\nb".to_string())];
        assert!(build_request("GET", "h", "/", &evil, None, true).is_err());
    }
}
