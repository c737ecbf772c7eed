//! Every arithmetic opcode with ordinary values, plus the rounding / summation-order
//! rules: F32 rounds to nearest even, F24 truncates the f32 result to 16 mantissa
//! bits; dot products sum as (p0 + p1) + (p2 + p3); MAD is never fused.

use crate::common::Case;
use crate::*;
use pica_jit::Precision::{self, F24, F32};

/// A value just large enough that adding it to 1.0 is lost (F32: half an ulp,
/// rounds to even; F24: below the 16th mantissa bit, truncated away), while it
/// is itself exact in both formats.
fn eps(p: Precision) -> f32 {
    pick(p, pow2(-24), pow2(-17))
}

#[test]
fn add_adds_componentwise() {
    for p in BOTH {
        let what = format!("add {p:?}");
        check(
            binary(p, "add", [1.5, -2.0, 100.0, 0.25], [2.25, 0.5, -100.0, 0.5]),
            bits([3.75, -1.5, 0.0, 0.75]),
            &what,
        );
        // A constant in SRC1 and a negated SRC2 (subtraction).
        let t = Case::new("add o0, c5, -v0")
            .precision(p)
            .f(5, [10.0, 20.0, 30.0, 40.0])
            .input(0, [1.0, 2.0, 3.0, -4.0])
            .run();
        check(t.out_bits(0), bits([9.0, 18.0, 27.0, 44.0]), &what);
    }
}

#[test]
fn add_rounds_to_nearest_in_f32_and_truncates_in_f24() {
    // Lane x: 1 + 3*2^-25 rounds up to 1 + 2^-23 in f32; F24 truncates that to 1.
    // Lane y: 1 + 2^-16 + 3*2^-18 = 1 + 7*2^-18 is exact in f32; F24 keeps 1 + 2^-16.
    // Lane z: -(1 + 3*2^-25) -> -(1 + 2^-23) in f32; F24 truncates toward zero: -1.
    let a = [1.0, 1.0 + pow2(-16), -1.0, 0.5];
    let b = [3.0 * pow2(-25), 3.0 * pow2(-18), -3.0 * pow2(-25), 0.25];
    check(
        binary(F32, "add", a, b),
        [0x3F80_0001, 0x3F80_00E0, 0xBF80_0001, 0x3F40_0000],
        "add F32",
    );
    check(
        binary(F24, "add", a, b),
        [0x3F80_0000, 0x3F80_0080, 0xBF80_0000, 0x3F40_0000],
        "add F24",
    );
}

#[test]
fn mul_multiplies_componentwise() {
    for p in BOTH {
        check(
            binary(p, "mul", [1.5, -2.0, 3.0, 0.5], [2.0, 3.0, -0.25, 0.5]),
            bits([3.0, -6.0, -0.75, 0.25]),
            &format!("mul {p:?}"),
        );
        let t = Case::new("mul o0, c5, v0")
            .precision(p)
            .f(5, [2.0, 4.0, 8.0, 16.0])
            .input(0, [0.5, 0.5, 0.5, -1.0])
            .run();
        check(
            t.out_bits(0),
            bits([1.0, 2.0, 4.0, -16.0]),
            &format!("mul c5 {p:?}"),
        );
    }
}

#[test]
fn mul_rounding_and_float24_truncation() {
    // (1 + 2^-8)(1 + 2^-9) = 1 + 2^-8 + 2^-9 + 2^-17: exact in f32, F24 drops 2^-17.
    // (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24: a tie in f32, to even -> 1 + 2^-11 (both).
    let a = [1.0 + pow2(-8), 1.0 + pow2(-12), -(1.0 + pow2(-8)), 3.0];
    let b = [1.0 + pow2(-9), 1.0 + pow2(-12), 1.0 + pow2(-9), 1.0];
    check(
        binary(F32, "mul", a, b),
        [0x3F80_C040, 0x3F80_1000, 0xBF80_C040, 0x4040_0000],
        "mul F32",
    );
    check(
        binary(F24, "mul", a, b),
        [0x3F80_C000, 0x3F80_1000, 0xBF80_C000, 0x4040_0000],
        "mul F24",
    );
}

#[test]
fn mul_overflow_and_underflow_depend_on_precision() {
    // F24: |r| >= 2^64 is inf, |r| < 2^-62 is +0 (never -0). F32 keeps them.
    let a = [pow2(40), -pow2(40), pow2(-40), -pow2(-40)];
    let b = [pow2(30), pow2(30), pow2(-30), pow2(-30)];
    check(
        binary(F32, "mul", a, b),
        bits([pow2(70), -pow2(70), pow2(-70), -pow2(-70)]),
        "mul F32",
    );
    check(
        binary(F24, "mul", a, b),
        [INF_BITS, NEG_INF_BITS, 0, 0],
        "mul F24",
    );
    // The float24 boundaries: MAX stays finite, 2^63 * 2 = 2^64 overflows in F24.
    let max24 = fb(0x5F7F_FF80);
    let a = [max24, pow2(63), -pow2(63), pow2(-61)];
    let b = [1.0, 2.0, 2.0, 0.5];
    check(
        binary(F32, "mul", a, b),
        bits([max24, fb(0x5F80_0000), fb(0xDF80_0000), pow2(-62)]),
        "mul F32 edges",
    );
    check(
        binary(F24, "mul", a, b),
        [0x5F7F_FF80, INF_BITS, NEG_INF_BITS, N_BITS],
        "mul F24 edges",
    );
}

#[test]
fn dp4_multiplies_and_sums_into_every_lane() {
    for p in BOTH {
        check(
            binary(p, "dp4", [1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]),
            splat(70f32.to_bits()),
            &format!("dp4 {p:?}"),
        );
        let t = Case::new("dp4 o0, c5, v0")
            .precision(p)
            .f(5, [1.0, -2.0, 3.0, -4.0])
            .input(0, [1.0, 1.0, 1.0, 1.0])
            .run();
        check(
            t.out_bits(0),
            splat((-2f32).to_bits()),
            &format!("dp4 c5 {p:?}"),
        );
    }
}

#[test]
fn dp4_sums_pairwise() {
    for p in BOTH {
        let e = eps(p);
        // (1 + e) + (e - 1) = 1 + -(1 - e) = e. Sequential ((1 + e) + e) - 1 = 0 and
        // reverse sequential ((-1 + e) + e) + 1 = 2e.
        check(
            binary(p, "dp4", [1.0, e, e, -1.0], [1.0; 4]),
            splat(e.to_bits()),
            &format!("dp4 order 1 {p:?}"),
        );
        // (1 + e) + (-1 + e) = e, whereas (p0 + p2) + (p1 + p3) = 2e.
        check(
            binary(p, "dp4", [1.0, e, -1.0, e], [1.0; 4]),
            splat(e.to_bits()),
            &format!("dp4 order 2 {p:?}"),
        );
    }
}

#[test]
fn dp3_ignores_w_and_sums_pairwise() {
    for p in BOTH {
        let what = format!("dp3 {p:?}");
        // a.w and b.w are ignored even when NaN / inf.
        check(
            binary(p, "dp3", [1.0, 2.0, 3.0, QNAN], [4.0, 5.0, 6.0, INF]),
            splat(32f32.to_bits()),
            &what,
        );
        check(
            binary(p, "dp3", [1.0, 2.0, 3.0, INF], [4.0, 5.0, 6.0, 0.0]),
            splat(32f32.to_bits()),
            &what,
        );
        // (e + e) + (1 + 0) = 1 + 2e; e + (e + 1) would give 1.
        let e = eps(p);
        check(
            binary(p, "dp3", [e, e, 1.0, 0.0], [1.0; 4]),
            splat((1.0 + 2.0 * e).to_bits()),
            &what,
        );
    }
}

#[test]
fn dot_products_of_negative_zero_products() {
    // Every product is -0 in F32: dp4 = (-0 + -0) + (-0 + -0) = -0, but dp3 adds
    // +0.0 for the missing fourth product (+0) and dph's p3 = 1.0 * b.w = +0.
    let a = [-1.0; 4];
    let b = [0.0; 4];
    check(binary(F32, "dp4", a, b), splat(NEG_ZERO_BITS), "dp4 F32");
    check(binary(F32, "dp3", a, b), splat(0), "dp3 F32");
    check(binary(F32, "dph", a, b), splat(0), "dph F32");
    // F24 has no -0.
    for op in ["dp4", "dp3", "dph"] {
        check(binary(F24, op, a, b), splat(0), &format!("{op} F24"));
    }
}

#[test]
fn dph_and_dphi_use_one_for_src1_w() {
    for p in BOTH {
        let what = format!("dph {p:?}");
        // 4 + 10 + 18 + 1*7 = 39; src1.w (NaN) is replaced by 1.
        check(
            binary(p, "dph", [1.0, 2.0, 3.0, QNAN], [4.0, 5.0, 6.0, 7.0]),
            splat(39f32.to_bits()),
            &what,
        );
        let t = Case::new("dph o0, c5, v0")
            .precision(p)
            .f(5, [1.0, 2.0, 3.0, 100.0])
            .input(0, [4.0, 5.0, 6.0, 7.0])
            .run();
        check(t.out_bits(0), splat(39f32.to_bits()), &what);
        // dphi: SRC1 is the 5-bit (v) operand, SRC2 the constant; same formula.
        let t = Case::new("dphi o0, v0, c5")
            .precision(p)
            .f(5, [4.0, 5.0, 6.0, 7.0])
            .input(0, [1.0, 2.0, 3.0, -9.0])
            .run();
        check(
            t.out_bits(0),
            splat(39f32.to_bits()),
            &format!("dphi {p:?}"),
        );
        // Pairwise order as dp4: (1 + e) + (e + 1*-1) = e.
        let e = eps(p);
        check(
            binary(p, "dph", [1.0, e, e, 99.0], [1.0, 1.0, 1.0, -1.0]),
            splat(e.to_bits()),
            &what,
        );
    }
}

#[test]
fn sge_slt_and_inverted_forms() {
    let a = [1.0, 2.0, 3.0, NEG_ZERO];
    let b = [2.0, 2.0, 2.0, 0.0];
    let ge = bits([0.0, 1.0, 1.0, 1.0]);
    let lt = bits([1.0, 0.0, 0.0, 0.0]);
    for p in BOTH {
        check(binary(p, "sge", a, b), ge, &format!("sge {p:?}"));
        check(binary(p, "slt", a, b), lt, &format!("slt {p:?}"));
        check(
            binary(p, "sge", [INF, NEG_INF, INF, 5.0], [INF, INF, 5.0, INF]),
            bits([1.0, 0.0, 1.0, 0.0]),
            "sge inf",
        );
        check(
            binary(p, "slt", [INF, NEG_INF, INF, 5.0], [INF, INF, 5.0, INF]),
            bits([0.0, 1.0, 0.0, 1.0]),
            "slt inf",
        );
        // Constant in SRC1 (format 1) and in SRC2 (format 1i).
        for (src, expected) in [
            ("sge o0, c5, v1", ge),
            ("slt o0, c5, v1", lt),
            ("sgei o0, v0, c6", ge),
            ("slti o0, v0, c6", lt),
        ] {
            let t = Case::new(src)
                .precision(p)
                .f(5, a)
                .f(6, b)
                .input(0, a)
                .input(1, b)
                .run();
            check(t.out_bits(0), expected, &format!("{src} {p:?}"));
        }
    }
}

#[test]
fn max_and_min_componentwise() {
    for p in BOTH {
        let a = [1.0, 5.0, -3.0, 2.0];
        let b = [2.0, 4.0, -7.0, 2.0];
        check(
            binary(p, "max", a, b),
            bits([2.0, 5.0, -3.0, 2.0]),
            &format!("max {p:?}"),
        );
        check(
            binary(p, "min", a, b),
            bits([1.0, 4.0, -7.0, 2.0]),
            &format!("min {p:?}"),
        );
        let t = Case::new("max o0, c5, v0\nmin o1, c5, v0")
            .precision(p)
            .f(5, a)
            .input(0, b)
            .run();
        check(
            t.out_bits(0),
            bits([2.0, 5.0, -3.0, 2.0]),
            &format!("max c5 {p:?}"),
        );
        check(
            t.out_bits(1),
            bits([1.0, 4.0, -7.0, 2.0]),
            &format!("min c5 {p:?}"),
        );
        // max(a, b) = a > b ? a : b (a -inf second operand never wins against a
        // larger first one, as on hardware); min(a, b) = a < b ? a : b.
        let a = [5.0, NEG_INF, INF, 0.0];
        let b = [NEG_INF, 5.0, NEG_INF, INF];
        check(
            binary(p, "max", a, b),
            bits([5.0, 5.0, INF, INF]),
            &format!("max -inf {p:?}"),
        );
        check(
            binary(p, "min", a, b),
            bits([NEG_INF, NEG_INF, NEG_INF, 0.0]),
            &format!("min -inf {p:?}"),
        );
    }
}

#[test]
fn max_and_min_select_an_operand_bit_for_bit() {
    // Between +0 and -0 neither a > b nor a < b holds, so the result is b's bits.
    let a = [NEG_ZERO, 0.0, NEG_ZERO, 0.0];
    let b = [0.0, NEG_ZERO, NEG_ZERO, 0.0];
    let expected = [0, NEG_ZERO_BITS, NEG_ZERO_BITS, 0];
    check(binary(F32, "max", a, b), expected, "max F32");
    check(binary(F32, "min", a, b), expected, "min F32");
    // In F24 the -0 inputs are loaded as +0.
    check(binary(F24, "max", a, b), splat(0), "max F24");
    check(binary(F24, "min", a, b), splat(0), "min F24");
}

#[test]
fn flr_rounds_toward_negative_infinity() {
    for p in BOTH {
        check(
            unary(p, "flr", [2.5, -0.5, -3.0, 7.75]),
            bits([2.0, -1.0, -3.0, 7.0]),
            &format!("flr {p:?}"),
        );
        check(
            unary(p, "flr", [-1.5, 0.75, 1024.0, -1024.25]),
            bits([-2.0, 0.0, 1024.0, -1025.0]),
            &format!("flr {p:?}"),
        );
    }
    // -0, infinities, NaN.
    let v = [NEG_ZERO, INF, NEG_INF, PAYLOAD_NAN];
    check(
        unary(F32, "flr", v),
        [NEG_ZERO_BITS, INF_BITS, NEG_INF_BITS, QNAN_BITS],
        "flr F32",
    );
    check(
        unary(F24, "flr", v),
        [0, INF_BITS, NEG_INF_BITS, QNAN_BITS],
        "flr F24",
    );
    // Values below 2^-62 are flushed to +0 before the floor in F24.
    let v = [-pow2(-70), pow2(-70), -S, S];
    check(
        unary(F32, "flr", v),
        bits([-1.0, 0.0, -1.0, 0.0]),
        "flr tiny F32",
    );
    check(unary(F24, "flr", v), splat(0), "flr tiny F24");
}

#[test]
fn rcp_and_rsq_of_ordinary_values() {
    for p in BOTH {
        let what = format!("{p:?}");
        check1(scalar(p, "rcp", 4.0), 0.25f32.to_bits(), &what);
        check1(scalar(p, "rcp", -0.5), (-2f32).to_bits(), &what);
        check1(scalar(p, "rcp", 1024.0), pow2(-10).to_bits(), &what);
        check1(scalar(p, "rsq", 4.0), 0.5f32.to_bits(), &what);
        check1(scalar(p, "rsq", 0.25), 2f32.to_bits(), &what);
        check1(scalar(p, "rsq", pow2(-20)), 1024f32.to_bits(), &what);
    }
    // 1/3 rounds to 0x3EAAAAAB in f32; F24 truncates it to 16 mantissa bits.
    check1(scalar(F32, "rcp", 3.0), 0x3EAA_AAAB, "rcp(3) F32");
    check1(scalar(F24, "rcp", 3.0), 0x3EAA_AA80, "rcp(3) F24");
    // sqrt(2) rounds to 0x3FB504F3 (1.41421353...); 1 / that = 0.7071067932...,
    // nearest f32 0x3F3504F3 (0.70710676908...), not an estimate instruction.
    check1(scalar(F32, "rsq", 2.0), 0x3F35_04F3, "rsq(2) F32");
    check1(scalar(F24, "rsq", 2.0), 0x3F35_0480, "rsq(2) F24");
}

#[test]
fn mov_copies_and_does_not_flush() {
    for p in BOTH {
        let v = [1.0, -2.0, 3.5, 1024.0];
        check(unary(p, "mov", v), bits(v), &format!("mov {p:?}"));
        // mov is not arithmetic: float24 subnormals pass unchanged (both modes).
        check(
            unary(p, "mov", [S, -S, pow2(-78), 0.0]),
            bits([S, -S, pow2(-78), 0.0]),
            &format!("mov s {p:?}"),
        );
        let t = Case::new("mov r0, c5\nmov o0, r0")
            .precision(p)
            .f(5, v)
            .run();
        check(t.out_bits(0), bits(v), &format!("mov c5 {p:?}"));
        check(t.temp_bits(0), bits(v), &format!("mov c5 {p:?}"));
    }
}

#[test]
fn mad_and_madi_multiply_then_add() {
    let a = [1.0, 2.0, 3.0, 4.0];
    let b = [5.0, 6.0, 7.0, 8.0];
    let c = [1.0, 1.0, 1.0, -40.0];
    let expected = bits([6.0, 13.0, 22.0, -8.0]);
    for p in BOTH {
        check(ternary(p, "mad", a, b, c), expected, &format!("mad {p:?}"));
        check(
            ternary(p, "madi", a, b, c),
            expected,
            &format!("madi {p:?}"),
        );
        // mad: SRC2 is the 7-bit operand; madi: SRC3 is.
        let t = Case::new("mad o0, v0, c5, v2\nmadi o1, v0, v1, c6")
            .precision(p)
            .f(5, b)
            .f(6, c)
            .input(0, a)
            .input(1, b)
            .input(2, c)
            .run();
        check(t.out_bits(0), expected, &format!("mad c {p:?}"));
        check(t.out_bits(1), expected, &format!("madi c {p:?}"));
    }
}

#[test]
fn mad_is_not_fused() {
    for p in BOTH {
        // F32: (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24 rounds (tie, to even) to 1 + 2^-11,
        // so adding -(1 + 2^-11) gives 0; a fused mad would give 2^-24.
        // F24: (1 + 2^-9)^2 = 1 + 2^-8 + 2^-18 is truncated to 1 + 2^-8 before the
        // addition; fused would give 2^-18.
        let (x, product) = pick(
            p,
            (1.0 + pow2(-12), 1.0 + pow2(-11)),
            (1.0 + pow2(-9), 1.0 + pow2(-8)),
        );
        let a = [x, x, 2.0, 0.5];
        let c = [-product, 0.0, 1.0, -0.5];
        let expected = [0, product.to_bits(), 3f32.to_bits(), 0xBF00_0000];
        let b = [x, x, 1.0, 0.0];
        check(ternary(p, "mad", a, b, c), expected, &format!("mad {p:?}"));
        check(
            ternary(p, "madi", a, b, c),
            expected,
            &format!("madi {p:?}"),
        );
    }
}
