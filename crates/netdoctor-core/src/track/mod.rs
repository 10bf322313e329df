//! Per-connection and per-direction trackers of the packet path: plain `Copy` structs inside
//! the connection state, updated for every segment without dynamic dispatch. What they
//! conclude (a stall, a loss episode, a zero-window period, a handshake) becomes an
//! [`Event`](crate::event::Event) for the detectors.

pub(crate) mod dup;
pub mod echo;
pub mod flags;
pub mod loss;
pub mod nagle;
pub mod syn;
pub mod tsclock;
pub mod zero;
