#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pkgprof_fuzz::continuous_index::run(data));
