//! Assembler robustness: any bytes (NUL-separated source files) assemble or
//! fail with a positioned error; whatever assembles validates, writes a SHBIN
//! that loads back and is a valid program. The check itself lives in the
//! library (`pica_jit::asm::check_arbitrary_source`) so that
//! `jit-tests/asm_robustness.rs` replays the seeds and corpus with it.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    pica_jit::asm::check_arbitrary_source(data);
});
