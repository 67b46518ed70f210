//! Fuzz target `script_run`: see [`memcgsim_fuzz::script_run`] and docs/TESTING.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| memcgsim_fuzz::script_run(data));
