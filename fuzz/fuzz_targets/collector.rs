#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pkgprof_fuzz::collector::run(data));
