//! netdoctor-observe
