//! Windows and idle eviction.
