//! Fuzz body for a continuous directory's index: any bytes parse or fail with the line at
//! fault; an index that parses writes back to one that parses to the same windows, and no
//! strict prefix of a written index is accepted.

use gmon_format::continuous::ContinuousIndex;

/// Checks one index.
pub fn run(data: &[u8]) {
    let Ok(index) = ContinuousIndex::parse(data) else {
        return;
    };
    let mut text = Vec::new();
    index
        .write(&mut text)
        .expect("what was read can be written");
    let again = ContinuousIndex::parse(&text).expect("what was written can be read");
    assert!(again == index, "write then parse changed the index");
    for cut in [0, text.len() / 2, text.len().saturating_sub(1)] {
        if cut < text.len() {
            assert!(
                ContinuousIndex::parse(&text[..cut]).is_err(),
                "a prefix of {cut} bytes passed"
            );
        }
    }
}
