//! Float24 steps the IR optimiser drops because the value is already on the
//! float24 grid, across blocks: a temporary every write of which is a
//! float24 result (and which is never read before it is written) needs no
//! input flush where another block reads it; one written with a loaded
//! value (a float24 subnormal may pass through `mov`) or converted on entry
//! keeps it. Every case runs on every engine against the interpreter, on
//! operands of every range.

use crate::common::Case;
use crate::*;
use pica_jit::Precision::F24;
use pica_jit::ir::{Ir, Op, UnOp, opt};

/// r0 = v0 * v1 (a float24 result), r1 = v2 (loaded only), r2 read before
/// written (entry-converted); the adds are in the block after the jump.
const SRC: &str = "mul r0, v0, v1\nmov r1, v2\njmpu b0, next\nnext:\n\
                   add o0, r0, r0\nadd o1, r1, r1\nadd o2, r2, r2\nadd o3, -r0, r1\n\
                   max o4, r0, -r0\nmov r2, r0";

fn flushes_after_the_jump(case: &Case) -> usize {
    let ir = Ir::build(&case.program, 0, case.config.kind, F24);
    let optimised = opt::optimize(&ir);
    let (block, _) = optimised.locate(3).expect("the block after the jump");
    block
        .nodes
        .iter()
        .filter(|n| matches!(n.op, Op::Unary(UnOp::F24Flush, _)))
        .count()
}

#[test]
fn a_temporary_holding_float24_results_is_not_flushed_in_another_block() {
    let case = Case::new(SRC).precision(F24);
    // r1 (loaded: may be a float24 subnormal) and r2 (entry-converted) are
    // flushed once each; r0 and -r0 are not.
    assert_eq!(flushes_after_the_jump(&case), 2);
    // Once r0 may hold a loaded value too (a second write), it is flushed,
    // and so is its negation.
    let loaded_too = Case::new(&format!("{SRC}\nmov r0, v3")).precision(F24);
    assert_eq!(flushes_after_the_jump(&loaded_too), 4);
}

#[test]
fn dropped_flushes_give_the_interpreters_bits_on_operands_of_every_range() {
    let edges: [u32; 20] = [
        0,
        0x8000_0000,
        0x0000_0001,
        0x1880_0000,
        0x9880_0001,
        0x207F_FF00,
        0xA07F_FFFF,
        0x2080_0000,
        0x2080_007F,
        0x3F80_0008,
        0xC020_0000,
        0x5F7F_FF80,
        0x5F7F_FFFF,
        0x5F80_0000,
        INF_BITS,
        NEG_INF_BITS,
        0x7F80_0001,
        0xFFC0_1234,
        0x1F80_0000,
        0x3000_0000,
    ];
    let v =
        |k: usize| -> [f32; 4] { std::array::from_fn(|l| fb(edges[(k + 5 * l) % edges.len()])) };
    for k in 0..edges.len() {
        let t = Case::new(SRC)
            .precision(F24)
            .input(0, v(k))
            .input(1, v(k + 3))
            .input(2, v(k + 7))
            .temp(2, v(k + 11))
            .run();
        // o0 = r0 + r0 is a float24 value (every engine agrees, above).
        for l in 0..4 {
            let x = f32::from_bits(t.out_bits(0)[l]);
            assert_eq!(
                pica_jit::arith::f24::quantize_result(x).to_bits(),
                x.to_bits(),
                "o0.{l} of case {k}"
            );
        }
    }
    // Known values: 2^-40 * 2^-40 = 2^-80 quantises to +0, so o0 = +0; a
    // float24 subnormal in r1 is flushed before the add.
    let t = Case::new(SRC)
        .precision(F24)
        .input(0, [pow2(-40), 3.0, -1.5, INF])
        .input(1, [pow2(-40), 0.5, 2.0, 0.0])
        .input(2, [fb(0x207F_FF00), 1.0, -0.0, NEG_INF])
        .run();
    check(t.out_bits(0), [0, 0x4040_0000, 0xC0C0_0000, 0], "o0 = 2 r0");
    check(
        t.out_bits(1),
        [0, 0x4000_0000, 0, NEG_INF_BITS],
        "o1 = 2 r1",
    );
}

#[test]
fn a_partial_write_keeps_the_callers_bits_in_the_other_components() {
    // r5 is never read, so never converted: a write of r5.w (a float24
    // value, like the earlier contents would have to be for the facts of a
    // read) leaves the caller's bits, a NaN payload and -0 included, in the
    // other components on every engine.
    let r5 = [fb(0x207F_FF01), fb(0x7FDD_E180), NEG_ZERO, 0.0];
    let t = Case::new("mov r5.w, -r1\nmov o0, r1")
        .precision(F24)
        .temp(5, r5)
        .temp(1, [1.5; 4])
        .run();
    check(
        t.temp_bits(5),
        [0x207F_FF01, 0x7FDD_E180, 0x8000_0000, 0xBFC0_0000],
        "r5",
    );
}
