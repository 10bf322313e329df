//! netdoctor-diagnose's tests on recorded hosts and synthetic observations: orchestration,
//! preflight and route (passive.rs, on live traffic, stays its own binary): one test binary
//! (one link instead of one per file); cargo runs their tests on parallel threads. A new file
//! here needs its `mod` line below.

mod orchestration;
mod preflight;
mod route;
