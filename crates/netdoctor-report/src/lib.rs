//! netdoctor-report
