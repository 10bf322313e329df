//! netdoctor-lab
