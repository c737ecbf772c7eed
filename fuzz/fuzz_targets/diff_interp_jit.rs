//! Structured differential fuzzing: a generated program and its inputs
//! (`pica_jit::testgen::TestCase`) must run bit-identically on the interpreter
//! and every other engine this host has.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pica_jit::testgen::{TestCase, run_all_engines};

fuzz_target!(|case: TestCase| {
    if let Err(mismatch) = run_all_engines(&case) {
        panic!("{mismatch}\nreproducer:\n{}", case.reproducer());
    }
});
