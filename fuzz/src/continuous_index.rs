//! Fuzz body for a continuous directory's index and a window's instances file: any bytes
//! parse or fail with the line at fault; what parses writes back to text that parses to the
//! same windows (a version 1 index is written as version 2, its instances in their own
//! files), and no strict prefix of what was written is accepted.

use gmon_format::continuous::{ContinuousIndex, INDEX_VERSION, IndexWindow};

/// Checks one index, and the same bytes as the instances file of a window.
pub fn run(data: &[u8]) {
    instances(data);
    let Ok(index) = ContinuousIndex::parse(data) else {
        return;
    };
    for w in &index.windows {
        if w.instance_lines == w.instances.len() as u64 {
            let text = w.instances_text();
            let again =
                (w.parse_instances(text.as_bytes())).expect("instances written can be read");
            assert!(
                again == w.instances,
                "write then parse changed the instances"
            );
        }
    }
    let mut text = Vec::new();
    index
        .write(&mut text)
        .expect("what was read can be written");
    let again = ContinuousIndex::parse(&text).expect("what was written can be read");
    let mut bare = index.clone();
    bare.version = INDEX_VERSION;
    bare.windows.iter_mut().for_each(|w| w.instances.clear());
    assert!(again == bare, "write then parse changed the index");
    refuses_prefixes(&text, |t| ContinuousIndex::parse(t).is_ok());
}

/// `data` as the instances file of window 1 that counts its `instance` lines.
fn instances(data: &[u8]) {
    let lines = data
        .split(|&b| b == b'\n')
        .filter(|l| l.starts_with(b"instance "))
        .count();
    let w = IndexWindow {
        seq: 1,
        instance_lines: lines as u64,
        ..IndexWindow::default()
    };
    let Ok(instances) = w.parse_instances(data) else {
        return;
    };
    let w = IndexWindow { instances, ..w };
    let text = w.instances_text();
    let again = w
        .parse_instances(text.as_bytes())
        .expect("instances written can be read");
    assert!(
        again == w.instances,
        "write then parse changed the instances"
    );
    refuses_prefixes(text.as_bytes(), |t| w.parse_instances(t).is_ok());
}

fn refuses_prefixes(text: &[u8], parses: impl Fn(&[u8]) -> bool) {
    for cut in [0, text.len() / 2, text.len().saturating_sub(1)] {
        if cut < text.len() {
            assert!(!parses(&text[..cut]), "a prefix of {cut} bytes passed");
        }
    }
}
