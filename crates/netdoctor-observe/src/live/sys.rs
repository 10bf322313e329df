//! Thin syscall wrappers of the capture ring; every `unsafe` block of `live` lives here.

use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;

const SOL_PACKET: libc::c_int = 263;
const PACKET_RX_RING: libc::c_int = 5;
const PACKET_STATISTICS: libc::c_int = 6;
const PACKET_VERSION: libc::c_int = 10;
const TPACKET_V3: libc::c_int = 2;
const SO_ATTACH_FILTER: libc::c_int = 26;
const ETH_P_ALL: u16 = 0x0003;

#[repr(C)]
pub struct TpacketReq3 {
    pub tp_block_size: u32,
    pub tp_block_nr: u32,
    pub tp_frame_size: u32,
    pub tp_frame_nr: u32,
    pub tp_retire_blk_tov: u32,
    pub tp_sizeof_priv: u32,
    pub tp_feature_req_word: u32,
}

#[repr(C)]
#[derive(Default, Clone, Copy)]
pub struct TpacketStatsV3 {
    pub tp_packets: u32,
    pub tp_drops: u32,
    pub tp_freeze_q_cnt: u32,
}

// SAFETY: `TpacketStatsV3` is `repr(C)` with `u32` fields only: every bit pattern is valid.
unsafe impl netdoctor_sys::sockopt::Plain for TpacketStatsV3 {}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `socket(AF_PACKET, SOCK_DGRAM, 0)`: receives nothing until bound with a protocol.
pub fn packet_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain syscall with constant arguments.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn setsockopt<T>(fd: &OwnedFd, level: libc::c_int, name: libc::c_int, v: &T) -> io::Result<()> {
    netdoctor_sys::sockopt::set(fd, level, name, v)
}

pub fn attach_filter(fd: &OwnedFd, prog: &[libc::sock_filter]) -> io::Result<()> {
    let fprog = libc::sock_fprog {
        len: prog.len() as u16,
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    // The kernel copies the program during the call; `prog` outlives it.
    setsockopt(fd, libc::SOL_SOCKET, SO_ATTACH_FILTER, &fprog)
}

pub fn set_tpacket_v3(fd: &OwnedFd) -> io::Result<()> {
    setsockopt(fd, SOL_PACKET, PACKET_VERSION, &TPACKET_V3)
}

/// `PACKET_FANOUT` with `PACKET_FANOUT_HASH` (0) and the defragment flag: joins group
/// `id`, or with `None` creates one with a kernel-chosen unique id
/// (`PACKET_FANOUT_FLAG_UNIQUEID`, Linux 4.19+); returns the group's id.
pub fn join_fanout(fd: &OwnedFd, id: Option<u16>) -> io::Result<u16> {
    const PACKET_FANOUT: libc::c_int = 18;
    const PACKET_FANOUT_HASH: libc::c_int = 0;
    const PACKET_FANOUT_FLAG_UNIQUEID: libc::c_int = 0x2000;
    const PACKET_FANOUT_FLAG_DEFRAG: libc::c_int = 0x8000;
    let mut kind = PACKET_FANOUT_HASH | PACKET_FANOUT_FLAG_DEFRAG;
    if id.is_none() {
        kind |= PACKET_FANOUT_FLAG_UNIQUEID;
    }
    let arg = libc::c_int::from(id.unwrap_or(0)) | (kind << 16);
    netdoctor_sys::sockopt::set_int(fd, SOL_PACKET, PACKET_FANOUT, arg)?;
    let got = netdoctor_sys::sockopt::get_int(fd, SOL_PACKET, PACKET_FANOUT)?;
    Ok((got & 0xffff) as u16)
}

pub fn set_rx_ring(fd: &OwnedFd, req: &TpacketReq3) -> io::Result<()> {
    setsockopt(fd, SOL_PACKET, PACKET_RX_RING, req)
}

pub fn mmap_ring(fd: &OwnedFd, len: usize) -> io::Result<NonNull<u8>> {
    // SAFETY: a new shared mapping of the socket's ring; no existing memory is affected.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    NonNull::new(p.cast()).ok_or_else(|| io::Error::other("mmap returned NULL"))
}

pub fn munmap(p: NonNull<u8>, len: usize) {
    // SAFETY: p/len are exactly a mapping made by mmap_ring, unmapped once (Ring::drop) after
    // every borrow of it ended.
    unsafe {
        libc::munmap(p.as_ptr().cast(), len);
    }
}

pub fn bind_all(fd: &OwnedFd, ifindex: u32) -> io::Result<()> {
    // SAFETY: sockaddr_ll is plain data; all-zero is a valid value.
    let mut sll: libc::sockaddr_ll = unsafe { zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = ETH_P_ALL.to_be();
    sll.sll_ifindex = ifindex as i32;
    // SAFETY: sll is a valid sockaddr_ll of the size passed.
    check(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&sll as *const libc::sockaddr_ll).cast(),
            size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    })
}

/// Waits up to `timeout_ms` for the socket to become readable; EINTR counts as a timeout.
pub fn poll_in(fd: &OwnedFd, timeout_ms: i32) -> io::Result<()> {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN | libc::POLLERR,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let rc = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(())
}

/// Statistics since the previous call (the kernel resets them on read).
pub fn packet_stats(fd: &OwnedFd) -> io::Result<TpacketStatsV3> {
    netdoctor_sys::sockopt::get::<TpacketStatsV3>(fd, SOL_PACKET, PACKET_STATISTICS)
        .map(|(st, _)| st)
}

pub fn if_index(name: &str) -> io::Result<u32> {
    let c = std::ffi::CString::new(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in interface name"))?;
    // SAFETY: c is a valid NUL-terminated string.
    let idx = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if idx == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(idx)
}
