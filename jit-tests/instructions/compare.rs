//! CMP (every operator, on x and y independently, with NaN, swizzles, negation,
//! subnormals) and SGE/SLT with NaN.

use crate::common::Case;
use crate::*;
use pica_jit::Precision::{F24, F32};
use pica_jit::isa::{CmpOp, OperandDescriptor, WriteMask};

/// Ordered pairs (src1, src2) and what each operator gives for them.
/// Columns: less, equal, greater, NaN left, NaN right, payload NaN both, -0 vs +0.
const PAIRS: [(f32, f32); 7] = [
    (1.0, 2.0),
    (2.0, 2.0),
    (3.0, 2.0),
    (QNAN, 2.0),
    (2.0, QNAN),
    (PAYLOAD_NAN, NEG_PAYLOAD_NAN),
    (NEG_ZERO, 0.0),
];

/// The truth table, written out by hand from the spec's operator list (ordered
/// IEEE comparisons: false with NaN except `ne`; 6 and 7 always true).
fn truth(op: CmpOp) -> [bool; 7] {
    const T: bool = true;
    const F: bool = false;
    match op {
        CmpOp::Eq => [F, T, F, F, F, F, T],
        CmpOp::Ne => [T, F, T, T, T, T, F],
        CmpOp::Lt => [T, F, F, F, F, F, F],
        CmpOp::Le => [T, T, F, F, F, F, T],
        CmpOp::Gt => [F, F, T, F, F, F, F],
        CmpOp::Ge => [F, T, T, F, F, F, T],
        CmpOp::True6 | CmpOp::True7 => [T; 7],
    }
}

#[test]
fn every_operator_on_x_and_y_independently() {
    for p in BOTH {
        for x in CmpOp::ALL {
            for y in CmpOp::ALL {
                let src = format!("cmp v0, {}, {}, v1", x.name(), y.name());
                for (i, &a) in PAIRS.iter().enumerate() {
                    // y gets a different pair than x.
                    let j = (i + 3) % PAIRS.len();
                    let b = PAIRS[j];
                    // Start from the opposite flags so both are really written.
                    let before = [!truth(x)[i], !truth(y)[j]];
                    let t = Case::new(&src)
                        .precision(p)
                        .input(0, [a.0, b.0, 5.0, 5.0])
                        .input(1, [a.1, b.1, 6.0, 6.0])
                        .with_state(|s| s.cmp = before)
                        .run();
                    assert_eq!(
                        t.state.cmp,
                        [truth(x)[i], truth(y)[j]],
                        "{src} with x = {:?}, y = {:?} {p:?}",
                        a,
                        b
                    );
                }
            }
        }
    }
}

#[test]
fn cmp_reads_lanes_x_and_y_after_swizzle_and_negation() {
    for p in BOTH {
        let v0 = [1.0, 2.0, 3.0, 4.0];
        let v1 = [4.0, 3.0, 2.0, 1.0];
        let cases = [
            ("cmp v0.zw, gt, eq, v1.xy", [false, false]), // 3 > 4, 4 == 3
            ("cmp v0.wz, eq, gt, v1.xw", [true, true]),   // 4 == 4, 3 > 1
            ("cmp v0.y, eq, lt, v1.z", [true, false]),    // 2 == 2, 2 < 2
            ("cmp v0, lt, lt, v1", [true, true]),         // 1 < 4, 2 < 3
            ("cmp v0.wzyx, gt, ge, v1", [false, true]),   // 4 > 4, 3 >= 3
            ("cmp -v0, lt, gt, v1", [true, false]),       // -1 < 4, -2 > 3
            ("cmp v0, gt, gt, -v1", [true, true]),        // 1 > -4, 2 > -3
            ("cmp -v0.w, eq, eq, -v1.xx", [true, true]),  // -4 == -4 twice
            ("cmp c5.yx, eq, ne, v0", [false, true]),     // c5 = v1: 3 == 1, 4 != 2
            ("cmp r0.zw, eq, eq, r1", [true, true]),      // r0 = v0, r1 = (3, 4, ..)
        ];
        for (src, expected) in cases {
            let t = Case::new(src)
                .precision(p)
                .input(0, v0)
                .input(1, v1)
                .f(5, v1)
                .temp(0, v0)
                .temp(1, [3.0, 4.0, 0.0, 0.0])
                .run();
            assert_eq!(t.state.cmp, expected, "{src} {p:?}");
        }
    }
}

#[test]
fn cmp_compares_infinities_and_signed_zeros() {
    for p in BOTH {
        let t = run(
            p,
            "cmp v0, eq, lt, v1",
            &[[INF, NEG_INF, 0.0, 0.0], [INF, INF, 0.0, 0.0]],
        );
        assert_eq!(t.state.cmp, [true, true], "{p:?}");
        let t = run(
            p,
            "cmp v0, eq, ge, v1",
            &[[NEG_ZERO, 0.0, 0.0, 0.0], [0.0, NEG_ZERO, 0.0, 0.0]],
        );
        assert_eq!(t.state.cmp, [true, true], "+0 == -0 {p:?}");
    }
}

#[test]
fn cmp_never_flushes_subnormals() {
    // s (largest float24 subnormal), 2^-78 (smallest), and the f32 -> F24 load keeps them.
    for p in BOTH {
        for (v, zero) in [(S, 0.0), (pow2(-78), 0.0), (-S, NEG_ZERO)] {
            let t = run(
                p,
                "cmp v0, eq, ne, v1",
                &[[v, v, 0.0, 0.0], [zero, zero, 0.0, 0.0]],
            );
            assert_eq!(t.state.cmp, [false, true], "cmp({v:e}, 0) eq/ne {p:?}");
            let gt = v > 0.0;
            let t = run(
                p,
                "cmp v0, gt, lt, v1",
                &[[v, v, 0.0, 0.0], [zero, zero, 0.0, 0.0]],
            );
            assert_eq!(t.state.cmp, [gt, !gt], "cmp({v:e}, 0) gt/lt {p:?}");
        }
        // Between two distinct subnormals.
        let t = run(
            p,
            "cmp v0, lt, eq, v1",
            &[[pow2(-78), S, 0.0, 0.0], [S, S, 0.0, 0.0]],
        );
        assert_eq!(t.state.cmp, [true, true], "{p:?}");
    }
}

#[test]
fn cmp_ignores_the_destination_mask() {
    // Re-encode the descriptor with an empty mask: both flags are still written.
    let assembled = common::assemble("cmp v0, eq, eq, v1");
    let d = OperandDescriptor(assembled.descriptors[0]);
    let empty = OperandDescriptor::new(
        WriteMask(0),
        [
            (d.negate(0), d.swizzle(0)),
            (d.negate(1), d.swizzle(1)),
            (false, d.swizzle(2)),
        ],
    );
    let program = pica_jit::Program::new(assembled.code.clone(), vec![empty.0]).unwrap();
    for p in BOTH {
        let t = Case::from_program(program.clone())
            .precision(p)
            .input(0, [1.0, 2.0, 0.0, 0.0])
            .input(1, [1.0, 2.0, 0.0, 0.0])
            .run();
        assert_eq!(t.state.cmp, [true, true], "{p:?}");
    }
}

#[test]
fn sge_and_slt_with_nan_give_zero() {
    for p in BOTH {
        let a = [QNAN, 1.0, QNAN, PAYLOAD_NAN];
        let b = [1.0, QNAN, QNAN, NEG_PAYLOAD_NAN];
        for op in ["sge", "slt"] {
            check(binary(p, op, a, b), splat(0), &format!("{op} NaN {p:?}"));
            check(
                binary(p, op, b, a),
                splat(0),
                &format!("{op} NaN swapped {p:?}"),
            );
        }
        for src in ["sgei o0, v0, c5", "slti o0, v0, c5"] {
            let t = Case::new(src).precision(p).input(0, a).f(5, b).run();
            check(t.out_bits(0), splat(0), &format!("{src} {p:?}"));
        }
    }
}

#[test]
fn sge_and_slt_never_flush_subnormals() {
    for p in BOTH {
        let a = [0.0, S, -S, pow2(-78)];
        let b = [S, 0.0, 0.0, pow2(-77)];
        // 0 >= s no, s >= 0 yes, -s >= 0 no, 2^-78 >= 2^-77 no.
        check(
            binary(p, "sge", a, b),
            bits([0.0, 1.0, 0.0, 0.0]),
            &format!("sge {p:?}"),
        );
        check(
            binary(p, "slt", a, b),
            bits([1.0, 0.0, 1.0, 1.0]),
            &format!("slt {p:?}"),
        );
    }
    // In F24 the same subnormals are zero to arithmetic: s - 0 = 0.
    check(
        o0(F24, "add o0, v0, -v1", &[[S; 4], [0.0; 4]]),
        splat(0),
        "add F24",
    );
    check(
        o0(F32, "add o0, v0, -v1", &[[S; 4], [0.0; 4]]),
        splat(S_BITS),
        "add F32",
    );
}
