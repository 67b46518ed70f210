//! Fuzz target `trace_read`: see [`memcgsim_fuzz::trace_read`] and docs/TESTING.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| memcgsim_fuzz::trace_read(data));
