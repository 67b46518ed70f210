//! Formatting of sizes and times for the text reports, the charts and the controllers'
//! messages: `512K`, `1.25G`, `12.003s`, `0.500000000`.

/// A size in bytes, short: `512K`, `8.0M`, `1.25G`, `max`.
pub fn fmt_size(b: u64) -> String {
    const K: f64 = 1024.0;
    let f = b as f64;
    if b == u64::MAX {
        "max".into()
    } else if f >= K * K * K {
        format!("{:.2}G", f / (K * K * K))
    } else if f >= K * K {
        format!("{:.1}M", f / (K * K))
    } else if f >= K {
        format!("{:.1}K", f / K)
    } else {
        format!("{b}")
    }
}

pub use memcgsim_model::units::fmt_ns;

/// Seconds with nanosecond precision, as the CSV's time column has them.
pub fn fmt_time_s(ns: u64) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}
