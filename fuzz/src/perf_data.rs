//! Fuzz body for perf.data import: any bytes, taken as a perf.data file (file or pipe mode),
//! convert up to the aggregate or fail cleanly with an error that names a byte offset.

/// Converts `data` and checks what comes back.
pub fn run(data: &[u8]) {
    if let Err(e) = perf_import::fuzzing::convert(data) {
        let text = e.to_string();
        assert!(
            text.contains("byte") || text.contains("no cpu-clock"),
            "{text}"
        );
    }
}
