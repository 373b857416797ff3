//! Wall-clock latency of a call: recorded in events as data, never read by the fold.

/// Measures one call.
pub(crate) struct Stopwatch(std::time::Instant);

impl Stopwatch {
    /// Starts now.
    #[expect(clippy::disallowed_methods, reason = "latency is recorded data, never a fold input")]
    pub(crate) fn start() -> Stopwatch {
        Stopwatch(std::time::Instant::now())
    }

    /// Milliseconds since the start, saturating.
    pub(crate) fn millis(&self) -> u32 {
        u32::try_from(self.0.elapsed().as_millis()).unwrap_or(u32::MAX)
    }
}
