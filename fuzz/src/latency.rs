//! Fuzz body for latency files: any bytes must parse or fail cleanly with a line and an
//! offset, and whatever reads is written back to text that reads the same.

use gmon_format::latency::LatencyFile;

/// Parses `data` as a latency file and checks what it reads.
pub fn run(data: &[u8]) {
    let file = match LatencyFile::parse(data) {
        Ok(f) => f,
        Err(e) => {
            assert!(e.offset().is_some(), "error without an offset: {e}");
            return;
        }
    };
    let text = file.to_text().expect("what was read can be written");
    let again = LatencyFile::parse(text.as_bytes()).expect("own output parses");
    assert_eq!(again, file, "read, written and read again differ");
    assert_eq!(again.to_text().expect("writes"), text);
}
