//! Fuzz target `cgroupfs_ops`: see [`memcgsim_fuzz::cgroupfs_ops`] and docs/TESTING.md.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| memcgsim_fuzz::cgroupfs_ops(data));
