//! netdoctor-load
