//! The command-line fuzz body (getopt, `@FILE`, symbol specifications), run over the command
//! lines of every golden case and over damaged copies of them.

#![allow(clippy::unwrap_used)]

#[path = "../../../fuzz/src/cmdline.rs"]
mod cmdline_target;

#[test]
fn every_golden_command_line_and_its_damaged_copies_parse_cleanly() {
    let cases = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/cases");
    let mut seen = 0;
    for e in std::fs::read_dir(&cases).unwrap() {
        let cmd = e.unwrap().path().join("cmd");
        let Ok(text) = std::fs::read_to_string(&cmd) else {
            continue;
        };
        seen += 1;
        let args: Vec<&str> = text.split_whitespace().collect();
        let joined = args.join("\0");
        cmdline_target::run(joined.as_bytes());
        for cut in 0..joined.len().min(40) {
            cmdline_target::run(&joined.as_bytes()[..cut]);
        }
        let mut damaged = joined.clone().into_bytes();
        for b in damaged.iter_mut().step_by(3) {
            *b = b'-';
        }
        cmdline_target::run(&damaged);
    }
    assert!(seen > 100, "{seen} golden cases");
}
