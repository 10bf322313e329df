//! Typed `getsockopt`/`setsockopt` on any socket descriptor (`socket2::Socket`, `TcpStream`,
//! `OwnedFd`, …): an `int` value or a plain C struct.

use std::io;
use std::mem::{MaybeUninit, size_of};
use std::os::fd::{AsFd, AsRawFd};

/// A type the kernel may fill with any bytes: plain integers and `#[repr(C)]` structs of them,
/// for which every bit pattern is a valid value (no references, no `bool`, no enums).
///
/// # Safety
/// Implement only for types for which every bit pattern (including all zeros) is a valid value.
pub unsafe trait Plain: Copy {}

// SAFETY: integers accept every bit pattern.
unsafe impl Plain for libc::c_int {}
// SAFETY: integers accept every bit pattern.
unsafe impl Plain for u32 {}
// SAFETY: integers accept every bit pattern.
unsafe impl Plain for u64 {}
// SAFETY: `tcp_info` is a `#[repr(C)]` struct of integer fields only.
unsafe impl Plain for libc::tcp_info {}
// SAFETY: `linger` is a `#[repr(C)]` struct of two `c_int`s.
unsafe impl Plain for libc::linger {}
// SAFETY: `timeval` is a `#[repr(C)]` struct of two integers.
unsafe impl Plain for libc::timeval {}

/// `getsockopt(level, name)` of an `int` option (TCP_NODELAY, SO_SNDBUF, …).
pub fn get_int(fd: &impl AsFd, level: libc::c_int, name: libc::c_int) -> io::Result<libc::c_int> {
    get::<libc::c_int>(fd, level, name).map(|(v, _)| v)
}

/// `setsockopt(level, name, &value)` of an `int` option.
pub fn set_int(
    fd: &impl AsFd,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    set(fd, level, name, &value)
}

/// `getsockopt(level, name)` into a `T` that starts all-zero; returns it and the number of bytes
/// the kernel wrote (it may write fewer than `size_of::<T>()`, e.g. an older kernel's
/// `tcp_info`; the rest stays zero).
pub fn get<T: Plain>(
    fd: &impl AsFd,
    level: libc::c_int,
    name: libc::c_int,
) -> io::Result<(T, usize)> {
    let mut value = MaybeUninit::<T>::zeroed();
    let mut len = size_of::<T>() as libc::socklen_t;
    // SAFETY: the descriptor is borrowed from an open socket for the whole call; `value` is
    // valid for writes of `len` bytes (its size), and the kernel writes at most `len` bytes and
    // stores the count back into `len`.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_fd().as_raw_fd(),
            level,
            name,
            value.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `value` was zero-initialised and the kernel overwrote some prefix of its bytes;
    // `T: Plain` says every bit pattern is a valid `T`.
    let value = unsafe { value.assume_init() };
    Ok((value, (len as usize).min(size_of::<T>())))
}

/// `setsockopt(level, name, value)` with the bytes of `*value` (an `int`, or a C struct such as
/// `tpacket_req3` or `sock_fprog`). When `T` holds a pointer (e.g. `sock_fprog`), what it points
/// to must stay alive for the call: the kernel copies it during the call.
pub fn set<T>(fd: &impl AsFd, level: libc::c_int, name: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: the descriptor is borrowed from an open socket for the whole call; `value` points
    // to a live `T` of the size passed, which the kernel only reads.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_fd().as_raw_fd(),
            level,
            name,
            (value as *const T).cast(),
            size_of::<T>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `TCP_INFO` of a TCP socket.
pub fn tcp_info(fd: &impl AsFd) -> io::Result<libc::tcp_info> {
    get::<libc::tcp_info>(fd, libc::IPPROTO_TCP, libc::TCP_INFO).map(|(v, _)| v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn int_round_trip_on_a_real_socket() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let s = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        for v in [1, 0, 1] {
            set_int(&s, libc::IPPROTO_TCP, libc::TCP_NODELAY, v).unwrap();
            assert_eq!(
                get_int(&s, libc::IPPROTO_TCP, libc::TCP_NODELAY).unwrap(),
                v
            );
            // std reads the same option through its own path
            assert_eq!(s.nodelay().unwrap(), v != 0);
        }
        set_int(&s, libc::SOL_SOCKET, libc::SO_SNDBUF, 64 * 1024).unwrap();
        // the kernel doubles the value for bookkeeping overhead
        assert_eq!(
            get_int(&s, libc::SOL_SOCKET, libc::SO_SNDBUF).unwrap(),
            128 * 1024
        );
    }

    #[test]
    fn struct_round_trip_and_partial_lengths() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let s = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let on = libc::linger {
            l_onoff: 1,
            l_linger: 7,
        };
        set(&s, libc::SOL_SOCKET, libc::SO_LINGER, &on).unwrap();
        let (got, len) = get::<libc::linger>(&s, libc::SOL_SOCKET, libc::SO_LINGER).unwrap();
        assert_eq!(
            (got.l_onoff, got.l_linger, len),
            (1, 7, size_of::<libc::linger>())
        );
        // TCP_INFO of an established connection: state 1 (TCP_ESTABLISHED)
        let info = tcp_info(&s).unwrap();
        assert_eq!(info.tcpi_state, 1);
        // a u64 buffer for an int option: the kernel writes 4 bytes and says so
        let (_, n) = get::<u64>(&s, libc::IPPROTO_TCP, libc::TCP_NODELAY).unwrap();
        assert_eq!(n, 4);
    }

    #[test]
    fn errors_come_back_as_os_errors() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        // an unknown level and an unknown option name are the kernel's errors, not panics
        let e = get_int(&l, 0x7fff, 1).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EOPNOTSUPP), "{e}");
        let e = set_int(&l, libc::IPPROTO_TCP, 0x7fff, 1).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOPROTOOPT), "{e}");
    }
}
