//! Measurement file names: any command name, built into a name and parsed back, and mutated
//! names, which parse only when canonical.

#[path = "../../../fuzz/src/name.rs"]
mod name_target;

use gmon_format::{Comm, FileKind, ProfileName};

mod common;

use common::Rng;

/// Whether `name` can be a file name on its own: one component, not `.` or `..`, within
/// `NAME_MAX`, and plain printable ASCII so that no tool needs to quote it.
fn is_plain_component(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name.len() <= 255
        && name.bytes().all(|b| b.is_ascii_graphic() && b != b'/')
}

#[test]
fn random_comms_round_trip_through_names() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let kinds = [
        FileKind::User,
        FileKind::Kernel,
        FileKind::Info,
        FileKind::Stacks,
    ];
    for case in 0..20_000 {
        let max = if rng.chance(10) { Comm::MAX_LEN } else { 16 };
        let comm = Comm::new(rng.bytes(max as u64)).expect("short");
        let pid = match rng.below(4) {
            0 => rng.below(10) as u32,
            1 => u32::MAX,
            _ => rng.next() as u32,
        };
        let kind = kinds[rng.below(4) as usize];
        let instance = match rng.below(3) {
            0 => rng.next() as u32,
            _ => 0,
        };
        let name = ProfileName::Process {
            pid,
            instance,
            kind,
            comm,
        };
        let built = name.file_name();
        assert!(is_plain_component(&built), "case {case}: {built:?}");
        let parsed = ProfileName::parse(&built).unwrap_or_else(|e| panic!("case {case}: {e}"));
        assert_eq!(parsed, name, "case {case}: {built}");
    }
}

#[test]
fn mutated_names_parse_only_when_canonical() {
    let mut rng = Rng(42);
    let mut accepted = 0;
    for case in 0..20_000 {
        let comm = Comm::new(rng.bytes(12)).expect("short");
        let mut name = ProfileName::user(rng.below(1000) as u32, comm)
            .file_name()
            .into_bytes();
        for _ in 0..=rng.below(3) {
            let at = rng.below(name.len() as u64 + 1) as usize;
            let b = b"%/.uk0123456789ABCDEFabcdef -_"[rng.below(30) as usize];
            match rng.below(3) {
                0 if at < name.len() => name[at] = b,
                1 if at < name.len() => {
                    name.remove(at);
                }
                _ => name.insert(at, b),
            }
        }
        let name = String::from_utf8(name).expect("ascii");
        if let Ok(parsed) = ProfileName::parse(&name) {
            accepted += 1;
            assert_eq!(parsed.file_name(), name, "case {case}: not canonical");
        }
        name_target::run(name.as_bytes());
    }
    assert!(accepted > 1000, "only {accepted} mutants parsed");
}
