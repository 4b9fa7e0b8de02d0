//! Process memory figures for benchmarks and reports.

/// Peak resident set size of this process in bytes (VmHWM from /proc/self/status),
/// or None where the kernel does not report it.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
}
