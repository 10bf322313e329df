//! Sending a file's pages on a socket without copying them (`sendfile(2)`), and a memory file
//! to send them from (`memfd_create(2)`): the throughput sender's pattern lives in a memfd and
//! goes out by reference, as `iperf3 -Z` sends it. On a veth pair or loopback this saves the
//! sender's copy of every byte into the socket (and the receiver copies from pages that stay
//! cache-warm); `std` and `socket2` wrap neither call.

use std::ffi::CStr;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, FromRawFd};

/// A close-on-exec memory file named `name` (shown in `/proc/PID/fd`) holding `bytes`.
pub fn memfd_with(name: &CStr, bytes: &[u8]) -> io::Result<File> {
    // SAFETY: `name` is a valid NUL-terminated string for the duration of the call; the call
    // only creates a descriptor, which is checked before use.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by memfd_create, is open, and nothing else owns it.
    let mut f = unsafe { File::from_raw_fd(fd) };
    f.write_all(bytes)?;
    Ok(f)
}

/// Sends up to `len` bytes of `file` from `offset` on the socket `sock`; returns how many went
/// out (fewer when the socket buffer filled; `WouldBlock` on a full non-blocking socket).
pub fn sendfile(sock: &impl AsFd, file: &File, offset: u64, len: usize) -> io::Result<usize> {
    let mut off = libc::off_t::try_from(offset)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "sendfile offset too large"))?;
    // SAFETY: both descriptors are borrowed from open objects for the call; `off` is a local
    // the kernel reads and updates; the file's offset is left alone because `off` is given.
    let n = unsafe { libc::sendfile(sock.as_fd().as_raw_fd(), file.as_raw_fd(), &mut off, len) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn a_memfds_bytes_arrive_through_sendfile_from_an_offset() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let f = memfd_with(c"sendfile-test", &data).unwrap();
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let tx = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut rx, _) = l.accept().unwrap();
        let mut sent = 0;
        while sent < data.len() - 1000 {
            sent += sendfile(&tx, &f, 1000 + sent as u64, data.len() - 1000 - sent).unwrap();
        }
        drop(tx);
        let mut got = Vec::new();
        rx.read_to_end(&mut got).unwrap();
        assert_eq!(got, &data[1000..]);
    }

    #[test]
    fn sendfile_on_a_non_socket_fails_with_an_error() {
        let f = memfd_with(c"sendfile-test", b"abc").unwrap();
        let g = memfd_with(c"sendfile-test", b"").unwrap();
        // Since 5.12 sendfile writes into a regular file too; either outcome is no panic.
        let _ = sendfile(&g, &f, 0, 3);
        assert!(sendfile(&g, &f, u64::MAX, 3).is_err());
    }
}
