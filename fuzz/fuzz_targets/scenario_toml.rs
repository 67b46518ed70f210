//! Fuzz target `scenario_toml`: see [`memcgsim_fuzz::scenario_toml`] and docs/TESTING.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| memcgsim_fuzz::scenario_toml(data));
