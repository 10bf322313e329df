//! netdoctor-report's tests that need no browser: compare, the HTML report's markup and the
//! load output (html_chromium.rs, which renders in headless chromium, stays its own binary):
//! one test binary (one link instead of one per file); cargo runs their tests on parallel
//! threads. A new file here needs its `mod` line below.

#[path = "../html_common/mod.rs"]
mod html_common;

mod compare;
mod html_report;
mod load_output;
