//! Fuzz a scenario file: `flashkit::fuzzing::scenario` checks what must hold.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(e) = flashkit::fuzzing::scenario(data) {
        panic!("{e}");
    }
});
