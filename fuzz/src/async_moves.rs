//! Fuzz body for `async.moves`: any bytes parse or fail with the line at fault; what parses
//! writes back to text that parses to the same moves and writes the same bytes again.

use gmon_format::AsyncMoves;

/// Checks one file.
pub fn run(data: &[u8]) {
    let Ok(moves) = AsyncMoves::parse(data) else {
        return;
    };
    let mut text = Vec::new();
    moves
        .write(&mut text)
        .expect("what was read can be written");
    let again = AsyncMoves::parse(&text).expect("what was written can be read");
    let mut twice = Vec::new();
    again.write(&mut twice).expect("written again");
    assert!(
        twice == text,
        "write then parse then write changed the text"
    );
}
