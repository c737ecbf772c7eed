//! Every row of the spec's "Floating-Point Behavior" table, through instructions.
//! All rows hold in F24; in F32 all but the subnormal-flushing rows (mul(s, 2),
//! mul(n, 0.5), 0.5^63), whose F32 counterparts are checked too. Also: arithmetic
//! NaNs are exactly 0x7FC00000 and F24 never produces -0.

use crate::common::Case;
use crate::*;
use pica_jit::Precision::{F24, F32};

#[test]
fn inf_times_zero_is_plus_zero_in_mul() {
    for p in BOTH {
        // Either order, any signs: +0 (bits 0), never NaN and never -0.
        let a = [INF, NEG_INF, 0.0, NEG_ZERO];
        let b = [0.0, 0.0, INF, NEG_INF];
        check(binary(p, "mul", a, b), splat(0), &format!("mul {p:?}"));
        check(
            binary(p, "mul", b, a),
            splat(0),
            &format!("mul swapped {p:?}"),
        );
        check(
            binary(p, "mul", [NEG_INF, INF, NEG_ZERO, NEG_INF], [NEG_ZERO; 4]),
            splat(0),
            &format!("mul -0 {p:?}"),
        );
        // With the infinity in a constant register.
        let t = Case::new("mul o0, c5, v0")
            .precision(p)
            .f(5, [INF, NEG_INF, INF, NEG_INF])
            .run();
        check(t.out_bits(0), splat(0), &format!("mul c5 {p:?}"));
    }
}

#[test]
fn inf_times_zero_is_plus_zero_in_mad_and_madi() {
    for p in BOTH {
        let a = [INF, 0.0, NEG_INF, INF];
        let b = [0.0, INF, NEG_ZERO, 0.0];
        let c = [1.0, -2.0, 0.5, 0.0];
        check(
            ternary(p, "mad", a, b, c),
            bits([1.0, -2.0, 0.5, 0.0]),
            &format!("mad {p:?}"),
        );
        check(
            ternary(p, "madi", a, b, c),
            bits([1.0, -2.0, 0.5, 0.0]),
            &format!("madi {p:?}"),
        );
    }
}

#[test]
fn inf_times_zero_is_plus_zero_in_dot_products() {
    for p in BOTH {
        let what = format!("{p:?}");
        // 0 + 1 + 2 + 3.
        check(
            binary(p, "dp4", [INF, 1.0, 2.0, 3.0], [0.0, 1.0, 1.0, 1.0]),
            splat(6f32.to_bits()),
            &what,
        );
        // All four products are inf * 0: +0.
        check(
            binary(p, "dp4", [INF, NEG_INF, 0.0, 0.0], [0.0, 0.0, INF, NEG_INF]),
            splat(0),
            &what,
        );
        // dp3: 0 + 2 + 3 (w ignored).
        check(
            binary(p, "dp3", [INF, 2.0, 3.0, QNAN], [0.0, 1.0, 1.0, QNAN]),
            splat(5f32.to_bits()),
            &what,
        );
        check(
            binary(p, "dp3", [1.0, 2.0, NEG_INF, 1.0], [1.0, 1.0, 0.0, 1.0]),
            splat(3f32.to_bits()),
            &what,
        );
        // dph: 1 + 2 + inf*0 + 1*4.
        check(
            binary(p, "dph", [1.0, 2.0, INF, QNAN], [1.0, 1.0, 0.0, 4.0]),
            splat(7f32.to_bits()),
            &what,
        );
        let t = Case::new("dphi o0, v0, c5")
            .precision(p)
            .f(5, [0.0, 1.0, 1.0, 4.0])
            .input(0, [NEG_INF, 2.0, 3.0, 9.0])
            .run();
        check(
            t.out_bits(0),
            splat(9f32.to_bits()),
            &format!("dphi {what}"),
        );
    }
}

#[test]
fn inf_times_zero_is_plus_zero_in_dst_y() {
    for p in BOTH {
        let what = format!("dst {p:?}");
        check(
            binary(p, "dst", [9.0, INF, 3.0, 9.0], [9.0, 0.0, 9.0, 4.0]),
            bits([1.0, 0.0, 3.0, 4.0]),
            &what,
        );
        check(
            binary(
                p,
                "dst",
                [9.0, NEG_ZERO, 3.0, 9.0],
                [9.0, NEG_INF, 9.0, 4.0],
            ),
            bits([1.0, 0.0, 3.0, 4.0]),
            &what,
        );
        let t = Case::new("dsti o0, v0, c5")
            .precision(p)
            .f(5, [9.0, 0.0, 9.0, 4.0])
            .input(0, [9.0, NEG_INF, 3.0, 9.0])
            .run();
        check(
            t.out_bits(0),
            bits([1.0, 0.0, 3.0, 4.0]),
            &format!("dsti {p:?}"),
        );
    }
}

#[test]
fn nan_times_zero_is_canonical_nan() {
    for p in BOTH {
        let what = format!("{p:?}");
        let a = [QNAN, PAYLOAD_NAN, NEG_PAYLOAD_NAN, QNAN];
        let b = [0.0, 0.0, NEG_ZERO, INF];
        check(
            binary(p, "mul", a, b),
            splat(QNAN_BITS),
            &format!("mul {what}"),
        );
        check(
            binary(p, "mul", b, a),
            splat(QNAN_BITS),
            &format!("mul swapped {what}"),
        );
        check(
            ternary(p, "mad", a, b, [1.0; 4]),
            splat(QNAN_BITS),
            &format!("mad {what}"),
        );
        check(
            binary(p, "dp4", [PAYLOAD_NAN, 1.0, 1.0, 1.0], [0.0, 1.0, 1.0, 1.0]),
            splat(QNAN_BITS),
            &format!("dp4 {what}"),
        );
        check(
            binary(
                p,
                "dp3",
                [1.0, 1.0, NEG_PAYLOAD_NAN, 1.0],
                [1.0, 1.0, 0.0, 1.0],
            ),
            splat(QNAN_BITS),
            &format!("dp3 {what}"),
        );
        check(
            binary(p, "dph", [1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, PAYLOAD_NAN]),
            splat(QNAN_BITS),
            &format!("dph {what}"),
        );
        check(
            binary(p, "dst", [1.0, PAYLOAD_NAN, 2.0, 3.0], [1.0, 0.0, 4.0, 5.0]),
            [ONE_BITS, QNAN_BITS, 2f32.to_bits(), 5f32.to_bits()],
            &format!("dst {what}"),
        );
    }
}

#[test]
fn inf_minus_inf_is_canonical_nan() {
    for p in BOTH {
        let what = format!("{p:?}");
        let v = [INF, NEG_INF, INF, 1.0];
        // v - v: inf - inf, -inf - -inf, inf - inf, 1 - 1 = +0.
        check(
            o0(p, "add o0, v0, -v1", &[v, v]),
            [QNAN_BITS, QNAN_BITS, QNAN_BITS, 0],
            &format!("add {what}"),
        );
        check(
            binary(
                p,
                "add",
                [INF, NEG_INF, INF, 2.0],
                [NEG_INF, INF, 5.0, NEG_INF],
            ),
            [QNAN_BITS, QNAN_BITS, INF_BITS, NEG_INF_BITS],
            &what,
        );
        check(
            ternary(
                p,
                "mad",
                [INF, 1.0, 1.0, 1.0],
                [1.0; 4],
                [NEG_INF, 1.0, 1.0, 1.0],
            ),
            [QNAN_BITS, 0x4000_0000, 0x4000_0000, 0x4000_0000],
            &what,
        );
        check(
            binary(p, "dp4", [INF, NEG_INF, 1.0, 1.0], [1.0; 4]),
            splat(QNAN_BITS),
            &format!("dp4 {what}"),
        );
        check(
            binary(p, "dp4", [INF, 1.0, NEG_INF, 1.0], [1.0; 4]),
            splat(QNAN_BITS),
            &format!("dp4 {what}"),
        );
    }
}

#[test]
fn nan_results_are_canonical() {
    // Payload NaNs entering arithmetic never come out with their payload.
    for p in BOTH {
        let what = format!("{p:?}");
        let nans = [
            PAYLOAD_NAN,
            NEG_PAYLOAD_NAN,
            fb(0xFF80_0001),
            fb(0x7FFF_FFFF),
        ];
        check(
            binary(p, "add", nans, [1.0; 4]),
            splat(QNAN_BITS),
            &format!("add {what}"),
        );
        check(
            binary(p, "mul", nans, [2.0; 4]),
            splat(QNAN_BITS),
            &format!("mul {what}"),
        );
        check(
            ternary(p, "mad", [1.0; 4], [1.0; 4], nans),
            splat(QNAN_BITS),
            &format!("mad {what}"),
        );
        check(
            unary(p, "flr", nans),
            splat(QNAN_BITS),
            &format!("flr {what}"),
        );
        for op in ["rcp", "rsq", "ex2", "lg2"] {
            for nan in nans {
                check1(
                    scalar(p, op, nan),
                    QNAN_BITS,
                    &format!("{op}({:#x}) {what}", nan.to_bits()),
                );
            }
        }
    }
}

#[test]
fn rsq_of_rcp_of_negative_infinity_is_plus_infinity() {
    for p in BOTH {
        let t = run(p, "rcp r0, v0\nrsq o0, r0", &[[NEG_INF, 1.0, 1.0, 1.0]]);
        // rcp(-inf) is -0 in F32 (IEEE) and +0 in F24; rsq of either zero is +inf.
        check(
            t.temp_bits(0),
            splat(pick(p, NEG_ZERO_BITS, 0)),
            &format!("rcp(-inf) {p:?}"),
        );
        check(
            t.out_bits(0),
            splat(INF_BITS),
            &format!("rsq(rcp(-inf)) {p:?}"),
        );
    }
}

#[test]
fn rcp_table_rows() {
    for p in BOTH {
        let what = |x: &str| format!("rcp({x}) {p:?}");
        check1(scalar(p, "rcp", NEG_ZERO), INF_BITS, &what("-0"));
        check1(scalar(p, "rcp", 0.0), INF_BITS, &what("0"));
        check1(scalar(p, "rcp", INF), 0, &what("+inf"));
        check1(scalar(p, "rcp", QNAN), QNAN_BITS, &what("NaN"));
        check1(
            scalar(p, "rcp", PAYLOAD_NAN),
            QNAN_BITS,
            &what("payload NaN"),
        );
        check1(
            scalar(p, "rcp", NEG_INF),
            pick(p, NEG_ZERO_BITS, 0),
            &what("-inf"),
        );
        // A negated +0 source (-0 in F32, +0 in F24).
        check(
            o0(p, "rcp o0, -v0", &[[0.0; 4]]),
            splat(INF_BITS),
            &what("-(+0)"),
        );
    }
}

#[test]
fn rsq_table_rows() {
    for p in BOTH {
        let what = |x: &str| format!("rsq({x}) {p:?}");
        check1(scalar(p, "rsq", NEG_ZERO), INF_BITS, &what("-0"));
        check1(scalar(p, "rsq", 0.0), INF_BITS, &what("0"));
        check1(scalar(p, "rsq", -2.0), QNAN_BITS, &what("-2"));
        check1(scalar(p, "rsq", INF), 0, &what("+inf"));
        check1(scalar(p, "rsq", NEG_INF), QNAN_BITS, &what("-inf"));
        check1(scalar(p, "rsq", QNAN), QNAN_BITS, &what("NaN"));
        check1(
            scalar(p, "rsq", NEG_PAYLOAD_NAN),
            QNAN_BITS,
            &what("payload NaN"),
        );
        check(
            o0(p, "rsq o0, -v0", &[[0.0; 4]]),
            splat(INF_BITS),
            &what("-(+0)"),
        );
    }
}

#[test]
fn max_table_rows() {
    for p in BOTH {
        let what = format!("max {p:?}");
        // max(0, +inf), max(0, -inf) (= 0 as on hardware), max(0, NaN), max(NaN, 0).
        check(
            binary(p, "max", [0.0, 0.0, 0.0, QNAN], [INF, NEG_INF, QNAN, 0.0]),
            [INF_BITS, 0, QNAN_BITS, 0],
            &what,
        );
        // max(-inf, +inf), max(+inf, 0), max(NaN, 3), max(3, 2).
        check(
            binary(p, "max", [NEG_INF, INF, QNAN, 3.0], [INF, 0.0, 3.0, 2.0]),
            bits([INF, INF, 3.0, 3.0]),
            &what,
        );
        // A selection preserves the NaN payload in F32; F24 loads it as the canonical NaN.
        check(
            binary(
                p,
                "max",
                [0.0, PAYLOAD_NAN, 0.0, NEG_PAYLOAD_NAN],
                [PAYLOAD_NAN, 0.0, NEG_PAYLOAD_NAN, 1.0],
            ),
            [
                pick(p, 0x7F80_0001, QNAN_BITS),
                0,
                pick(p, 0xFFC0_0123, QNAN_BITS),
                ONE_BITS,
            ],
            &what,
        );
    }
}

#[test]
fn min_table_rows() {
    for p in BOTH {
        let what = format!("min {p:?}");
        // min(0, +inf), min(0, -inf), min(0, NaN), min(NaN, 0).
        check(
            binary(p, "min", [0.0, 0.0, 0.0, QNAN], [INF, NEG_INF, QNAN, 0.0]),
            [0, NEG_INF_BITS, QNAN_BITS, 0],
            &what,
        );
        // min(-inf, +inf), min(+inf, -inf), min(NaN, 3), min(3, 2).
        check(
            binary(
                p,
                "min",
                [NEG_INF, INF, QNAN, 3.0],
                [INF, NEG_INF, 3.0, 2.0],
            ),
            bits([NEG_INF, NEG_INF, 3.0, 2.0]),
            &what,
        );
        check(
            binary(
                p,
                "min",
                [0.0, PAYLOAD_NAN, 0.0, NEG_PAYLOAD_NAN],
                [PAYLOAD_NAN, 0.0, NEG_PAYLOAD_NAN, 1.0],
            ),
            [
                pick(p, 0x7F80_0001, QNAN_BITS),
                0,
                pick(p, 0xFFC0_0123, QNAN_BITS),
                ONE_BITS,
            ],
            &what,
        );
    }
}

#[test]
fn cmp_of_subnormal_and_zero_is_false() {
    // cmp never flushes, in either mode (s is a float24 subnormal).
    for p in BOTH {
        let t = run(p, "cmp v0, eq, ne, v1", &[[S, S, 0.0, 0.0], [0.0; 4]]);
        assert_eq!(t.state.cmp, [false, true], "cmp(s, 0) eq/ne {p:?}");
        let t = run(p, "cmp v0, gt, lt, v1", &[[S, -S, 0.0, 0.0], [0.0; 4]]);
        assert_eq!(
            t.state.cmp,
            [true, true],
            "cmp(s, 0) gt, cmp(-s, 0) lt {p:?}"
        );
        let t = run(
            p,
            "cmp v0, eq, le, v1",
            &[[pow2(-78), pow2(-78), 0.0, 0.0], [0.0; 4]],
        );
        assert_eq!(t.state.cmp, [false, false], "cmp(2^-78, 0) eq/le {p:?}");
    }
}

#[test]
fn max_of_subnormal_and_zero_is_the_subnormal() {
    for p in BOTH {
        let what = format!("{p:?}");
        check(
            binary(p, "max", [S, 0.0, -S, S], [0.0, S, 0.0, -S]),
            [S_BITS, S_BITS, 0, S_BITS],
            &format!("max {what}"),
        );
        check(
            binary(p, "min", [-S, 0.0, S, S], [0.0, -S, 0.0, -S]),
            bits([-S, -S, 0.0, -S]),
            &format!("min {what}"),
        );
    }
}

#[test]
fn mul_of_subnormal_and_two_is_zero_in_f24() {
    let a = [S, -S, 2.0, pow2(-78)];
    let b = [2.0, 2.0, S, 1.0];
    check(binary(F24, "mul", a, b), splat(0), "mul(s, 2) F24");
    // F32 keeps the value: 2s is exact.
    check(
        binary(F32, "mul", a, b),
        bits([2.0 * S, -2.0 * S, 2.0 * S, pow2(-78)]),
        "mul(s, 2) F32",
    );
    // F24 flushes the subnormal input before the PICA rule: inf * s = inf * 0 = +0.
    check(
        binary(F24, "mul", [INF; 4], [S; 4]),
        splat(0),
        "mul(inf, s) F24",
    );
    check(
        binary(F32, "mul", [INF; 4], [S; 4]),
        splat(INF_BITS),
        "mul(inf, s) F32",
    );
    // Other arithmetic flushes subnormal inputs too: s + s = 0, dp4(s...) = 0.
    check(
        binary(F24, "add", [S; 4], [S; 4]),
        splat(0),
        "add(s, s) F24",
    );
    check(binary(F24, "dp4", [S; 4], [1.0; 4]), splat(0), "dp4(s) F24");
}

#[test]
fn mul_of_min_normal_and_half_is_zero_in_f24() {
    let a = [N, -N, N, 0.5];
    let b = [0.5, 0.5, 1.0, N];
    check(
        binary(F24, "mul", a, b),
        [0, 0, N_BITS, 0],
        "mul(n, 0.5) F24",
    );
    check(
        binary(F32, "mul", a, b),
        bits([pow2(-63), -pow2(-63), N, pow2(-63)]),
        "mul(n, 0.5) F32",
    );
    // Same for other arithmetic results below 2^-62: n*0.5 in mad and dp4.
    check(
        ternary(F24, "mad", [N; 4], [0.5; 4], [0.0; 4]),
        splat(0),
        "mad(n, 0.5, 0) F24",
    );
    // 1.5n - n = n/2.
    check(
        binary(F24, "add", [1.5 * N; 4], [-N; 4]),
        splat(0),
        "add(1.5n, -n) F24",
    );
    check(
        binary(F32, "add", [1.5 * N; 4], [-N; 4]),
        splat(pow2(-63).to_bits()),
        "add(1.5n, -n) F32",
    );
}

/// `1.0` multiplied by 0.5 `count` times in a loop; returns the outcome. cmp.x says
/// whether the result compares equal to zero.
fn halve(p: pica_jit::Precision, count: u8) -> common::Outcome {
    Case::new(
        "
        mov r0, c1
        loop i0, last
    last:
        mul r0, c2, r0
        cmp r0, eq, ne, v0
        end
    ",
    )
    .precision(p)
    .f(2, [0.5; 4])
    .i(0, [count - 1, 0, 0, 0])
    .run()
}

#[test]
fn half_to_the_63_is_zero_in_f24() {
    for p in BOTH {
        let t = halve(p, 62);
        check(t.temp_bits(0), splat(N_BITS), &format!("0.5^62 {p:?}"));
        assert_eq!(t.state.cmp, [false, true], "0.5^62 != 0 {p:?}");
    }
    let t = halve(F24, 63);
    check(t.temp_bits(0), splat(0), "0.5^63 F24");
    assert_eq!(t.state.cmp, [true, false], "0.5^63 == 0 F24");
    let t = halve(F32, 63);
    check(t.temp_bits(0), splat(pow2(-63).to_bits()), "0.5^63 F32");
    assert_eq!(t.state.cmp, [false, true], "0.5^63 != 0 F32");
}

#[test]
fn f24_never_produces_negative_zero() {
    // Each of these gives -0 in IEEE arithmetic (F32 mode) and +0 in F24.
    let cases: &[(&str, &[[f32; 4]])] = &[
        ("mul o0, v0, v1", &[[-1.0; 4], [0.0; 4]]),
        ("add o0, -v0, -v0", &[[0.0; 4]]),
        ("add o0, v0, v1", &[[NEG_ZERO; 4], [NEG_ZERO; 4]]),
        ("mad o0, v0, v1, -v2", &[[-1.0; 4], [0.0; 4], [0.0; 4]]),
        ("flr o0, -v0", &[[0.0; 4]]),
        ("rcp o0, v0", &[[NEG_INF; 4]]),
        ("dp4 o0, -v0, v1", &[[1.0; 4], [0.0; 4]]),
    ];
    for &(src, inputs) in cases {
        check(
            o0(F32, src, inputs),
            splat(NEG_ZERO_BITS),
            &format!("{src} F32"),
        );
        check(o0(F24, src, inputs), splat(0), &format!("{src} F24"));
    }
}
