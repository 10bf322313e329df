//! netdoctor-probe
