//! Fuzz body for the measurement-info file: any bytes must parse or fail cleanly; whatever
//! parses writes, parses back to the same value, and writes the same text again.

use gmon_format::MeasurementInfo;

/// Checks one file.
pub fn run(data: &[u8]) {
    let Ok(info) = MeasurementInfo::parse(data) else {
        return;
    };
    let mut text = Vec::new();
    info.write(&mut text).expect("what was read can be written");
    let again = MeasurementInfo::parse(&text).expect("what was written can be read");
    assert!(again == info, "write then parse changed the value");
    let mut text2 = Vec::new();
    again.write(&mut text2).expect("written twice");
    assert!(
        text2 == text,
        "writing is not a fixed point after one round"
    );
}
