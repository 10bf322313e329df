//! netdoctor-sys: the few Linux system calls netdoctor makes that `socket2`/`std` do not wrap,
//! each in a small function with its one `unsafe` block and a `// SAFETY:` comment, plus the
//! helpers that interpret their results.
//!
//! - [`sockopt`]: typed `getsockopt`/`setsockopt` (an `int` or a plain struct).
//! - [`pidfd`]: `pidfd_open` + `pidfd_getfd`, to read socket options of another process's socket.
//! - [`privilege`]: which capabilities this thread has (`CapEff`), which one a feature needs,
//!   and what still works without it, and raising a permitted capability into the effective set
//!   (the model is trippy's `trippy-privilege`).
//! - [`memory`]: `malloc_trim`, to give the heap freed after loading eBPF back to the kernel.
//! - [`netns`]: `setns` of the calling thread into a network namespace.
//! - [`iface`]: interface names and indexes of the calling thread's namespace (a link-local
//!   IPv6 address's scope).
//! - [`rusage`]: this process's CPU time (`getrusage`).
//! - [`mmap`]: a read-only map of a whole file (`analyze` reads a plain pcap file in place).
//! - [`poll`]: waiting for one descriptor to become readable (a listener, without a timer), or
//!   for any of several (`poll(2)`); [`poll::Wake`] ends such a wait from another thread.
//! - [`mmsg`]: `sendmmsg`/`recvmmsg`, many datagrams per call (the packet-rate mode).
//! - [`affinity`]: the CPUs a thread may run on, and pinning it to one (the load threads).
//! - [`os_error`]: the one formatter of OS errors (`connection refused`, `EADDRNOTAVAIL`).
//! - [`sendfile`]: a memory file (`memfd_create`) and `sendfile` of its pages on a socket (the
//!   throughput sender's pattern goes out by reference, as `iperf3 -Z` sends it).
//! - [`rxstamp`]: the kernel's receive timestamp of a frame (`SO_TIMESTAMPNS`, `recvmsg`).
//! - [`fds`]: marking the descriptors this process inherited close-on-exec (`close_range`), so
//!   the daemons it starts do not hold a caller's lock.
//!
//! Hand-written rather than `nix`: four calls do not justify a large dependency, and `nix` has
//! no `pidfd_getfd` wrapper; `libc` gives the raw calls and constants.

pub mod affinity;
pub mod fds;
pub mod iface;
pub mod memory;
pub mod mmap;
pub mod mmsg;
pub mod netns;
pub mod os_error;
pub mod pidfd;
pub mod poll;
pub mod privilege;
pub mod rusage;
pub mod rxstamp;
pub mod sendfile;
pub mod sockopt;
