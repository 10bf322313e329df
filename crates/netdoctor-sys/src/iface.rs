//! Interface names and indexes of the calling thread's network namespace
//! (`if_nametoindex(3)` / `if_indextoname(3)`: glibc asks through a socket it opens on the
//! calling thread, so a thread that joined another namespace gets that namespace's answer).
//! An IPv6 link-local address means nothing without the interface it belongs to: the neighbour
//! table keys its entries by index, a reply's scope id is an index, people read a name.

use std::ffi::{CStr, CString};

/// The index of interface `name`; `None` when there is no such interface (or the name holds a
/// NUL).
pub fn index_of(name: &str) -> Option<u32> {
    let c = CString::new(name).ok()?;
    // SAFETY: `c` is a valid NUL-terminated string alive for the call; the function only reads
    // it and returns 0 when there is no such interface.
    let idx = unsafe { libc::if_nametoindex(c.as_ptr()) };
    (idx != 0).then_some(idx)
}

/// The name of interface `index`; `None` when no interface has it.
pub fn name_of(index: u32) -> Option<String> {
    let mut buf = [0 as libc::c_char; libc::IF_NAMESIZE];
    // SAFETY: `buf` is writable and IF_NAMESIZE long, as if_indextoname requires; it returns
    // null (writing nothing we read) when the index is unknown.
    let p = unsafe { libc::if_indextoname(index, buf.as_mut_ptr()) };
    if p.is_null() {
        return None;
    }
    // SAFETY: on success if_indextoname wrote a NUL-terminated name into `buf`.
    let name = unsafe { CStr::from_ptr(buf.as_ptr()) };
    Some(name.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_both_ways_and_unknowns_are_none() {
        let lo = index_of("lo").expect("every namespace has lo");
        assert_eq!(name_of(lo).as_deref(), Some("lo"));
        assert_eq!(index_of("nd-no-such-if0"), None);
        assert_eq!(index_of("a\0b"), None);
        assert_eq!(name_of(u32::MAX), None);
    }
}
