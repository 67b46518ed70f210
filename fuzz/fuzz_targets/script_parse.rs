//! Fuzz target `script_parse`: see [`memcgsim_fuzz::script_parse`] and docs/TESTING.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| memcgsim_fuzz::script_parse(data));
