//! The verdict.
