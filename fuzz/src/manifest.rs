//! Fuzz body for the measurement manifest: any bytes parse or fail with the line at fault; a
//! manifest that parses writes back to one that parses to the same files, and no strict prefix
//! of a written manifest is accepted.

use gmon_format::Manifest;

/// Checks one manifest.
pub fn run(data: &[u8]) {
    let Ok(manifest) = Manifest::parse(data) else {
        return;
    };
    let mut text = Vec::new();
    manifest
        .write(&mut text)
        .expect("what was read can be written");
    let again = Manifest::parse(&text).expect("what was written can be read");
    assert!(again == manifest, "write then parse changed the files");
    // Complete or refused: every cut of a complete manifest is refused.
    for cut in [0, text.len() / 2, text.len().saturating_sub(1)] {
        if cut < text.len() {
            assert!(
                Manifest::parse(&text[..cut]).is_err(),
                "a prefix of {cut} bytes passed"
            );
        }
    }
}
