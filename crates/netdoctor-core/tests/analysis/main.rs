//! netdoctor-core's capture tests, one module per story, in one test binary: one link instead
//! of one per file, and cargo runs their tests on parallel threads (they only read committed
//! captures and the shared corpus). A new file here needs its `mod` line below.

#[path = "../common/mod.rs"]
mod common;
mod dns;
mod dns_lab;
mod dns_tcp;
mod proxy_errors;
mod slow_reader_blame;
mod stall_share;
mod syn_repeats;
mod syn_side;
mod upgrade;

mod abandoned_connect;
mod abortive_close;
mod arrived;
mod attribution;
mod bloat;
mod bulk;
mod capture_drops;
mod capture_order;
mod capture_quality;
mod capture_side;
mod captures;
mod client_asked_close;
mod client_think;
mod closed_after_errors;
mod early_resend;
mod echo_turns;
mod expect_continue;
mod fin_echo;
mod framing_complete;
mod gap_not_pipelining;
mod h2;
mod headers_only;
mod held_by_loss;
mod idle_reset;
mod idle_timeout;
mod injected_reset;
mod keepalive_race;
mod lost_before_capture;
mod nagle;
mod near_ack;
mod protocols;
mod queue_wait;
mod realworld;
mod realworld_trust;
mod request_limit;
mod reuse_gap;
mod server_leg;
mod server_timer;
mod shard_region;
mod slow_start_after_idle;
mod small_initial_window;
mod tail;
mod tls_setup;
mod unseen_request;
mod window_probe;
