#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pkgprof_fuzz::perf_data::run(data));
