//! Compressed records (perf record -z) as the vendored linux-perf-data reads them, a chunk at a
//! time (issue 8): they give the records the same data written plainly gives, wherever the
//! chunks and the compressed records cut them, and one inflating past 256 MiB is refused at
//! its byte.

#![allow(clippy::unwrap_used)]

use std::io::Cursor;

use linux_perf_data::{Error, PerfFileReader, PerfFileRecord};
use zstd_safe::zstd_sys::ZSTD_EndDirective;
use zstd_safe::{CCtx, CParameter, InBuffer, OutBuffer};

/// The reader's output chunk (`decompression::CHUNK`).
const CHUNK: usize = 128 << 10;
/// The most one compressed record may inflate to (`decompression::MAX_DECOMPRESSED`).
const MAX_DECOMPRESSED: usize = 256 << 20;

/// A perf.data of one cpu-clock attribute (period 1 ms) whose data section is `data`.
fn perf_data(data: &[u8]) -> Vec<u8> {
    let mut f = b"PERFILE2".to_vec();
    for v in [104u64, 80, 104, 80, 184, data.len() as u64, 0, 0] {
        f.extend(v.to_le_bytes());
    }
    f.extend([0; 32]);
    // perf_event_attr of 64 bytes (PERF_ATTR_SIZE_VER0), then an empty ids section.
    f.extend(1u32.to_le_bytes());
    f.extend(64u32.to_le_bytes());
    f.extend(0u64.to_le_bytes());
    f.extend(1_000_000u64.to_le_bytes());
    f.extend([0; 40 + 16]);
    assert_eq!(f.len(), 184);
    f.extend(data);
    f
}

fn record(type_: u32, body: &[u8]) -> Vec<u8> {
    let mut r = type_.to_le_bytes().to_vec();
    r.extend(0u16.to_le_bytes());
    r.extend(u16::try_from(8 + body.len()).unwrap().to_le_bytes());
    r.extend(body);
    r
}

/// `count` user records of 16 to 4,016 bytes, each its index then a pattern.
fn records(count: u32) -> Vec<u8> {
    let mut raw = Vec::new();
    for i in 0..count {
        let len = 8 + (i as usize * 328) % 4008;
        let mut body = i.to_le_bytes().to_vec();
        body.extend((0..len - 4).map(|j| (j as u32 ^ i) as u8));
        raw.extend(record(100, &body));
    }
    raw
}

/// `raw` compressed as perf does: one zstd stream, flushed into a COMPRESSED record at each
/// of `cuts` and ended at the end.
fn compressed(raw: &[u8], cuts: &[usize]) -> Vec<u8> {
    let mut cctx = CCtx::create();
    cctx.set_parameter(CParameter::CompressionLevel(3)).unwrap();
    let mut out = Vec::new();
    let mut from = 0;
    for &to in cuts.iter().chain([raw.len()].iter()) {
        let mut z = vec![0u8; 65000];
        let mut ob = OutBuffer::around(&mut z[..]);
        let mut ib = InBuffer::around(&raw[from..to]);
        let end = if to == raw.len() {
            ZSTD_EndDirective::ZSTD_e_end
        } else {
            ZSTD_EndDirective::ZSTD_e_flush
        };
        while cctx.compress_stream2(&mut ob, &mut ib, end).unwrap() != 0 {
            assert!(ob.pos() < 65000, "a compressed record overflows");
        }
        let n = ob.pos();
        out.extend(record(81, &z[..n]));
        from = to;
    }
    out
}

/// A zstd frame of `len` bytes `byte`, in RLE blocks of 128 KiB: 4 bytes each.
fn rle(byte: u8, len: usize) -> Vec<u8> {
    let mut z = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38];
    let mut left = len;
    while left > 0 {
        let n = left.min(CHUNK);
        left -= n;
        let header = u32::from(left == 0) | (1 << 1) | ((n as u32) << 3);
        z.extend(&header.to_le_bytes()[..3]);
        z.push(byte);
    }
    z
}

/// The user records of `file` (type and body), sorted: records read from compressed
/// ones share a sort key, so the sorter may give them in any order.
fn records_of(file: Vec<u8>) -> Result<Vec<(u32, Vec<u8>)>, Error> {
    let PerfFileReader {
        mut perf_file,
        mut record_iter,
    } = PerfFileReader::parse_file(Cursor::new(file))?;
    let mut out = Vec::new();
    while let Some(r) = record_iter.next_record(&mut perf_file)? {
        if let PerfFileRecord::UserRecord(u) = r {
            out.push((
                u.record_type.record_type().0,
                u.data.as_slice().into_owned(),
            ));
        }
    }
    out.sort();
    Ok(out)
}

#[test]
fn records_cut_by_chunks_and_compressed_records_read_as_plain_ones() {
    let raw = records(400);
    assert!(raw.len() > 6 * CHUNK);
    let plain = records_of(perf_data(&raw)).unwrap();
    assert_eq!(plain.len(), 400);
    let whole = records_of(perf_data(&compressed(&raw, &[]))).unwrap();
    assert!(whole == plain, "one compressed record reads otherwise");
    // Cut inside a header, inside a body, and on a chunk's edge.
    let cut = compressed(&raw, &[1003, CHUNK, 300_001, 700_000]);
    assert!(records_of(perf_data(&cut)).unwrap() == plain);
}

/// A record whose output is whole chunks: the last chunk's call fills its output, the next
/// has neither input nor output, which is the end, not a stall.
#[test]
fn a_record_inflating_to_whole_chunks_ends_cleanly() {
    let body = [7u8; 4088];
    let raw: Vec<u8> = (0..64).flat_map(|_| record(100, &body)).collect();
    assert_eq!(raw.len(), 2 * CHUNK);
    let read = records_of(perf_data(&compressed(&raw, &[]))).unwrap();
    assert_eq!(read.len(), 64);
    // In RLE blocks of a chunk each: 127 records of 0x0808 bytes 0x08 (type 0x08080808, a
    // user type), the rest of the 128th left for a record that never comes, as upstream.
    let read = records_of(perf_data(&record(81, &rle(8, 2 * CHUNK)))).unwrap();
    assert_eq!(read.len(), 127);
    assert!(
        read.iter()
            .all(|(t, b)| *t == 0x0808_0808 && b.len() == 0x0800)
    );
}

#[test]
fn a_record_inflating_past_the_cap_is_refused_at_its_byte() {
    let bomb = record(81, &rle(8, MAX_DECOMPRESSED + CHUNK));
    let mut data = record(100, &[0; 8]);
    data.extend(&bomb);
    match records_of(perf_data(&data)) {
        Err(e @ Error::CompressedRecord { offset: 200, .. }) => {
            assert!(e.to_string().contains("more than 268435456 bytes"), "{e}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn damaged_zstd_is_refused_at_its_byte() {
    let mut z = compressed(&records(10), &[]);
    z[12..20].copy_from_slice(&[0xff; 8]);
    match records_of(perf_data(&z)) {
        Err(e @ Error::CompressedRecord { offset: 184, .. }) => {
            assert!(e.to_string().contains("does not decompress (zstd: "), "{e}")
        }
        other => panic!("{other:?}"),
    }
}

/// Records each under the cap that together inflate past it more than 1,024 times their size
/// are refused at the one that does: each took the reader a second for a few KiB of file.
#[test]
fn records_inflating_past_1024_times_together_are_refused_at_the_byte() {
    let one = record(81, &rle(8, 200 << 20));
    let data = [one.clone(), one.clone()].concat();
    let second = 184 + one.len() as u64;
    match records_of(perf_data(&data)) {
        Err(Error::CompressedRecord { offset, why }) if offset == second => {
            assert!(
                why.starts_with("takes the compressed records past 1024 times their size"),
                "{why}"
            );
        }
        other => panic!("{other:?}"),
    }
}

/// A record inflating to 64 MiB is handed out in rounds of at most 16 MiB (it is read from
/// 2 KiB of file), every record of it, and counted.
#[test]
fn a_round_holding_more_than_16_mib_of_a_few_kib_is_given_out_in_parts() {
    let PerfFileReader {
        mut perf_file,
        mut record_iter,
    } = PerfFileReader::parse_file(Cursor::new(perf_data(&record(81, &rle(8, 64 << 20))))).unwrap();
    let mut count = 0;
    while let Some(r) = record_iter.next_record(&mut perf_file).unwrap() {
        assert!(matches!(r, PerfFileRecord::UserRecord(_)));
        count += 1;
    }
    assert_eq!(count, (64 << 20) / 0x0808);
    // A round is full past 7,710 records (2,048 bytes of body and 128 counted for each).
    assert_eq!(record_iter.early_rounds(), 4);
}
