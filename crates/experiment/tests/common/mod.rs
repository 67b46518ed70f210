//! Helpers shared by the experiment crate's integration tests.

use memcgsim_experiment::{parse, Scenario};

/// Parse a scenario text, panicking with its error.
pub fn scenario(text: &str) -> Scenario {
    parse(text, "test.toml").unwrap_or_else(|e| panic!("{e}"))
}

/// A fresh, empty scratch folder, removed when the value is dropped.
pub fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("memcgsim-experiment-test-")
        .tempdir()
        .expect("create a scratch folder")
}
