//! The machine a benchmark ran on, printed before its numbers (shared by the benchmarks of
//! every crate).

fn first_line(program: &str, args: &[&str]) -> String {
    std::process::Command::new(program)
        .args(args)
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).lines().next().map(str::to_owned))
        .unwrap_or_default()
}

/// "machine: CPU (AVX2), N cores, M GiB; rustc …; commit …; release".
pub fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name").and_then(|r| r.split(':').nth(1)))
        .unwrap_or("unknown cpu")
        .trim()
        .to_owned();
    let avx2 = if cpuinfo.contains(" avx2") { "AVX2" } else { "no AVX2" };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mem_kb: u64 = std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|r| r.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    format!(
        "machine: {cpu} ({avx2}), {cores} cores, {:.1} GiB; {}; commit {}; release",
        mem_kb as f64 / (1 << 20) as f64,
        first_line("rustc", &["--version"]),
        first_line("git", &["rev-parse", "--short", "HEAD"]),
    )
}
