//! Fuzz body for sampled-stacks files: any bytes must parse or fail cleanly with an offset, and
//! whatever reads is written back to the same bytes (for files this crate's writer could make).

use gmon_format::{Stack, Stacks, StacksWriter};

/// Parses `data` as a stacks file and checks what it reads.
pub fn run(data: &[u8]) {
    let Ok(file) = Stacks::parse(data) else {
        return;
    };
    let mut kept = Vec::new();
    for record in file.records() {
        match record {
            Ok((offset, r)) => {
                assert!(offset < data.len() as u64);
                kept.push((r, r.kernel.to_vec(), r.user.to_vec()));
            }
            Err(e) => {
                assert!(e.offset().is_some(), "error without an offset: {e}");
                return;
            }
        }
    }
    let mut w = StacksWriter::new(Vec::new(), kept.len() as u64).expect("header to a Vec");
    for (r, k, u) in &kept {
        w.stack(&Stack {
            samples: r.samples,
            nanoseconds: r.nanoseconds,
            boundary: r.boundary,
            user_truncated: r.user_truncated,
            kernel: k,
            user: u,
        })
        .expect("stack to a Vec");
    }
    let written = w.finish().expect("finish");
    let again = Stacks::parse(&written).expect("own output parses");
    assert_eq!(again.records().count(), kept.len());
    // Files in this version's exact layout, without unknown flag bits or reserved bytes, come
    // back byte for byte.
    let canonical = data.get(10..16) == Some(&[0, 0, 32, 0, 24, 0][..])
        && data.get(24..32) == Some(&[0; 8][..]);
    if canonical && written.len() == data.len() {
        let plain = file.records().all(|r| {
            r.is_ok_and(|(o, _)| {
                let o = o as usize;
                data[o + 21] & !1 == 0 && data[o + 22..o + 24] == [0, 0]
            })
        });
        if plain {
            assert_eq!(written, data, "read and written again differ");
        }
    }
}
