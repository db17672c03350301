//! Fuzz a transfer configuration: `flashkit::fuzzing::transfer` checks what must hold.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(e) = flashkit::fuzzing::transfer(data) {
        panic!("{e}");
    }
});
