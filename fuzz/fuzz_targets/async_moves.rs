#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pkgprof_fuzz::async_moves::run(data));
