//! HTTP/1.x wire handling: the request bytes (built once per run, `request`) and an incremental
//! response parser (`response`) — netdoctor's one HTTP/1 response framer, used by the load
//! engine and by the probe's single timed request (`netdoctor_probe::http_timing`).

mod head_memo;
mod request;
mod response;

pub use request::build_request;
pub use response::{Feed, MAX_HEADER_BYTES, ParseError, ResponseParser};
