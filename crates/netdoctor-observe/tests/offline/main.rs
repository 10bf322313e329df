//! netdoctor-observe's tests on files and in-memory data: counters, mapped captures,
//! pcap files, streams and fan-out (host_lab.rs and live.rs stay their own binaries, and
//! hostile.rs, whose memory test reruns its own binary by test name): one test binary
//! (one link instead of one per file); cargo runs their tests on parallel threads. A new file
//! here needs its `mod` line below.

mod counters;
mod fanout;
mod mapped;
mod page_hold;
mod pcap_files;
mod runs;
mod streams;
mod walking;
