//! The last header block a response parser read, to recognise the next one without parsing it.
//!
//! Why: a load run reads the same response thousands of times per connection, and the only
//! bytes of its head that change are the `Date` value (once a second). Parsing the head with
//! `httparse` and walking its headers was ~2,600 of the ~4,000 user-space instructions the load
//! engine spent per request (callgrind, nginx's 615-byte page, 238-byte head). Comparing the
//! new head with the last one, byte for byte but for the Date value, costs a `memcmp`.
//!
//! What counts as the same head: every byte equal to the last parsed header block except the
//! `Date` value's bytes, which must be as many and all printable ASCII (so the line keeps its
//! shape: the bytes after the value, compared, start with its CRLF). Anything else (another
//! length, status, header or value) is parsed in full. Hand-written: `httparse` has no such
//! cache, and it is a slice comparison.

/// The last header block, where its Date value is, and what parsing it decided (`T`).
#[derive(Debug)]
pub(super) struct HeadMemo<T> {
    bytes: Vec<u8>,
    /// Byte range of the Date value in `bytes` (empty: no Date header).
    date: (usize, usize),
    outcome: Option<T>,
}

impl<T: Copy> HeadMemo<T> {
    pub(super) fn new() -> Self {
        HeadMemo {
            bytes: Vec::new(),
            date: (0, 0),
            outcome: None,
        }
    }

    /// The remembered outcome and the header block's length when `buf` starts with the same
    /// header block (but for the Date value).
    #[inline]
    pub(super) fn recall(&self, buf: &[u8]) -> Option<(usize, T)> {
        let outcome = self.outcome?;
        let n = self.bytes.len();
        let (a, b) = self.date;
        let head = buf.get(..n)?;
        (head[..a] == self.bytes[..a]
            && head[b..] == self.bytes[b..]
            && head[a..b].iter().all(|c| (0x20..0x7f).contains(c)))
        .then_some((n, outcome))
    }

    /// Remembers `head` (a whole header block, parsed), the Date value's range in it, and what
    /// parsing it decided. The buffer keeps its capacity: no allocation once the size settled.
    pub(super) fn keep(&mut self, head: &[u8], date: Option<(usize, usize)>, outcome: T) {
        self.bytes.clear();
        self.bytes.extend_from_slice(head);
        self.date = date
            .filter(|&(a, b)| a <= b && b <= head.len())
            .unwrap_or((0, 0));
        self.outcome = Some(outcome);
    }
}

/// The byte range of `value` inside `buf`, when it is a sub-slice of it.
pub(super) fn range_in(buf: &[u8], value: &[u8]) -> Option<(usize, usize)> {
    let start = (value.as_ptr() as usize).checked_sub(buf.as_ptr() as usize)?;
    let end = start.checked_add(value.len())?;
    (end <= buf.len()).then_some((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Thu, 26 Nov 2026 13:00:00 GMT\r\nContent-Length: 615\r\n\r\n";

    fn memo() -> HeadMemo<u16> {
        let mut m = HeadMemo::new();
        let a = HEAD.windows(4).position(|w| w == b"Thu,").unwrap();
        m.keep(HEAD, Some((a, a + 29)), 615);
        m
    }

    #[test]
    fn the_same_head_with_another_date_is_recalled_with_the_bytes_after_it() {
        let m = memo();
        let mut next = HEAD.to_vec();
        let a = HEAD.windows(4).position(|w| w == b"Thu,").unwrap();
        next[a..a + 29].copy_from_slice(b"Fri, 27 Nov 2026 09:59:59 GMT");
        next.extend_from_slice(b"<html>body");
        assert_eq!(m.recall(&next), Some((HEAD.len(), 615)));
        assert_eq!(m.recall(HEAD), Some((HEAD.len(), 615)));
    }

    #[test]
    fn any_other_change_is_parsed_again() {
        let m = memo();
        let swap = |from: &[u8], to: &[u8]| {
            let mut v = HEAD.to_vec();
            let at = v.windows(from.len()).position(|w| w == from).unwrap();
            v.splice(at..at + from.len(), to.iter().copied());
            v
        };
        // Another length, status, header name; a shorter date; a CR inside the date's bytes.
        for other in [
            swap(b"615", b"616"),
            swap(b"200 OK", b"404 NO"),
            swap(b"Server", b"Sender"),
            swap(b"13:00:00 GMT", b"13:00:00 UT"),
            swap(b"13:00:00", b"13:00\r\n0"),
        ] {
            assert_eq!(
                m.recall(&other),
                None,
                "{}",
                String::from_utf8_lossy(&other)
            );
        }
        // Not all of it here yet, or nothing remembered.
        assert_eq!(m.recall(&HEAD[..HEAD.len() - 1]), None);
        assert_eq!(HeadMemo::<u16>::new().recall(HEAD), None);
    }

    #[test]
    fn range_in_finds_sub_slices_only() {
        assert_eq!(range_in(HEAD, &HEAD[5..9]), Some((5, 9)));
        assert_eq!(range_in(HEAD, b"elsewhere"), None);
    }
}
