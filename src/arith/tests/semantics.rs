//! The crate's own decisions beyond the hardware table: evaluation orders,
//! rounding, NaN canonicalisation, negation, mova, litp, compare.

use super::super::{
    CANONICAL_NAN, LITP_CLAMP, Precision, add, compare, dp3, dp4, dph, dst, ex2, flr, lg2, litp,
    load, mad, max, min, mova, mul, negate, rcp, rsq, sge, slt,
};
use super::{INF, MODES, NEG_INF, ODD_NAN, SNAN, assert_bits, assert_canonical_nan, pow2};
use crate::isa::CmpOp;

#[test]
fn dp4_summation_order_is_pairwise() {
    // F32: p0 = 2^24, p1 = 0, p2 = p3 = 1.
    //   pairwise (p0 + p1) + (p2 + p3) = 2^24 + 2 (exact)
    //   sequential ((p0 + p1) + p2) + p3 = 2^24 (each +1 is a tie to even)
    let p = Precision::F32;
    let a = [pow2(24), 0.0, 1.0, 1.0];
    let b = [1.0; 4];
    let seq = ((a[0] + a[1]) + a[2]) + a[3];
    assert_bits(seq, pow2(24), "sequential reference");
    assert_bits(dp4(p, a, b), pow2(24) + 2.0, "F32 dp4 pairwise");
    assert_bits(
        dph(p, [pow2(24), 0.0, 1.0, 99.0], b),
        pow2(24) + 2.0,
        "F32 dph pairwise",
    );
    // The order is fixed, whichever lane holds the big value.
    assert_bits(
        dp4(p, [1.0, 1.0, pow2(24), 0.0], b),
        pow2(24) + 2.0,
        "F32 dp4 swapped",
    );
    // dp3: (p0 + p1) + (p2 + 0): 1 + 1 + 2^24 is exact pairwise.
    assert_bits(
        dp3(p, [1.0, 1.0, pow2(24), 0.0], b),
        pow2(24) + 2.0,
        "F32 dp3",
    );
    // (2^24 + 1) + (1 + 0): each addition is a tie rounding to even 2^24.
    assert_bits(
        dp3(p, [pow2(24), 1.0, 1.0, 0.0], b),
        pow2(24),
        "F32 dp3 (2^24+1)+1",
    );

    // F24: 17 significant bits. p0 = 2^17, p2 = p3 = 1.
    //   pairwise: 2^17 + 2 (representable); sequential: 2^17 + 1 truncates to 2^17.
    let p = Precision::F24;
    let a = [pow2(17), 0.0, 1.0, 1.0];
    assert_bits(dp4(p, a, b), pow2(17) + 2.0, "F24 dp4 pairwise");
    let seq = add(p, add(p, add(p, a[0], a[1]), a[2]), a[3]);
    assert_bits(seq, pow2(17), "F24 sequential reference");
    assert_bits(
        dp4(p, [1.0, 1.0, pow2(17), 0.0], b),
        pow2(17) + 2.0,
        "F24 dp4 swapped",
    );
}

#[test]
fn dot_products_quantize_every_product_and_partial_sum() {
    let p = Precision::F24;
    // p0 = (1 + 2^-9)(1 - 2^-9) = 1 - 2^-18 truncates to 1 - 2^-17 in F24;
    // p1 = -(1 - 2^-17): p0 + p1 = 0 only if the product is quantised first.
    let a = [1.0 + pow2(-9), -(1.0 - pow2(-17)), 0.0, 0.0];
    let b = [1.0 - pow2(-9), 1.0, 0.0, 0.0];
    assert_bits(mul(p, a[0], b[0]), 1.0 - pow2(-17), "F24 product truncated");
    assert_bits(dp4(p, a, b), 0.0, "F24 dp4 quantises products");
    assert_bits(dp3(p, a, b), 0.0, "F24 dp3 quantises products");
    assert_bits(dp4(Precision::F32, a, b), pow2(-18), "F32 dp4");
    // (p0 + p1) = 3 + 2^-16 truncates to 3 (spacing 2^-15 in [2, 4)); then
    // + (p2 + p3) = 2^-16 gives 3 + 2^-16 -> 3 again. Without quantising the
    // partial sum the total would be 3 + 2^-15 (representable).
    let a = [1.0 + pow2(-16), 2.0, pow2(-16), 0.0];
    assert_bits(dp4(p, a, [1.0; 4]), 3.0, "F24 partial sum truncated");
    assert_bits(
        dp4(Precision::F32, a, [1.0; 4]),
        3.0 + pow2(-15),
        "F32 keeps it",
    );
}

#[test]
fn dp3_fourth_term_is_plus_zero() {
    let p = Precision::F32;
    // All products -0: dp3 = (-0 + -0) + (-0 + 0) = -0 + +0 = +0,
    // dp4 = (-0 + -0) + (-0 + -0) = -0.
    let a = [-1.0, -1.0, -1.0, -1.0];
    let b = [0.0; 4];
    assert_bits(dp3(p, a, b), 0.0, "dp3 of -0 products");
    assert_bits(dp4(p, a, b), -0.0, "dp4 of -0 products");
    assert_bits(dph(p, a, b), 0.0, "dph: 1 * 0 = +0 in w");
    assert_bits(dp3(Precision::F24, a, b), 0.0, "F24 dp3");
    assert_bits(dp4(Precision::F24, a, b), 0.0, "F24 dp4: no -0");
    // w components are ignored by dp3, even inf * 0 and NaN.
    for p in MODES {
        for (aw, bw) in [
            (INF, 0.0),
            (CANONICAL_NAN, 1.0),
            (1.0, CANONICAL_NAN),
            (INF, INF),
        ] {
            assert_bits(
                dp3(p, [1.0, 2.0, 3.0, aw], [4.0, 5.0, 6.0, bw]),
                32.0,
                "dp3 ignores w",
            );
        }
        // dph ignores a.w only.
        assert_bits(
            dph(p, [1.0, 2.0, 3.0, CANONICAL_NAN], [4.0, 5.0, 6.0, 7.0]),
            39.0,
            "dph",
        );
        assert_canonical_nan(dph(p, [1.0; 4], [1.0, 1.0, 1.0, ODD_NAN]), "dph NaN b.w");
    }
}

#[test]
fn mad_is_not_fused() {
    // a = b = 1 + 2^-12: a*b = 1 + 2^-11 + 2^-24 rounds (tie to even) to
    // 1 + 2^-11 in f32; with c = -(1 + 2^-11) the fused result is 2^-24.
    let a = 1.0 + pow2(-12);
    let c = -(1.0 + pow2(-11));
    let fused = (a as f64) * (a as f64) + (c as f64); // exact in f64
    assert_eq!(fused, 2f64.powi(-24));
    for p in MODES {
        assert_bits(mad(p, a, a, c), 0.0, &format!("{p:?} mad"));
        assert_bits(
            mad(p, a, a, c),
            add(p, mul(p, a, a), c),
            &format!("{p:?} mad = add(mul)"),
        );
    }
    // F32 ordinary: product rounds, then sum rounds.
    let p = Precision::F32;
    let (x, y, z) = (1.1f32, 3.3f32, -3.63f32);
    assert_bits(mad(p, x, y, z), x * y + z, "mad = x*y + z, two roundings");
}

#[test]
fn add_and_mul_rounding() {
    // F32: round to nearest even; F24: the f32 result truncated.
    let big = 1.0 + pow2(-16);
    assert_bits(
        add(Precision::F32, 1.0, pow2(-20)),
        1.0 + pow2(-20),
        "F32 add exact",
    );
    assert_bits(
        add(Precision::F24, 1.0, pow2(-20)),
        1.0,
        "F24 add truncates",
    );
    assert_bits(
        add(Precision::F24, -1.0, -pow2(-20)),
        -1.0,
        "F24 truncates toward zero",
    );
    assert_bits(
        add(Precision::F24, big, pow2(-16)),
        1.0 + pow2(-15),
        "F24 exact sum",
    );
    // F24 overflow: 2^63 * 2 = 2^64 -> inf; F32 keeps it finite.
    assert_bits(mul(Precision::F24, pow2(63), 2.0), INF, "F24 overflow");
    assert_bits(
        mul(Precision::F24, -pow2(63), 2.0),
        NEG_INF,
        "F24 -overflow",
    );
    assert_bits(
        mul(Precision::F32, pow2(63), 2.0),
        pow2(64),
        "F32 no overflow",
    );
    assert_bits(
        add(Precision::F24, f32::MAX, f32::MAX),
        INF,
        "F24 add overflow",
    );
}

#[test]
fn f32_mode_keeps_subnormals() {
    let p = Precision::F32;
    let tiny = f32::from_bits(1); // 2^-149
    assert_bits(mul(p, tiny, 2.0), f32::from_bits(2), "mul(2^-149, 2)");
    assert_bits(
        mul(p, pow2(-126), 0.5),
        f32::from_bits(0x0040_0000),
        "mul(2^-126, 0.5)",
    );
    assert_bits(add(p, tiny, tiny), f32::from_bits(2), "add subnormals");
    assert_bits(max(tiny, 0.0), tiny, "max(s, 0)");
    assert!(!compare(CmpOp::Eq, tiny, 0.0), "cmp(s, 0)");
    assert_bits(load(p, tiny), tiny, "load keeps subnormals");
    assert_bits(
        rcp(p, f32::from_bits(0x0040_0000)),
        pow2(127),
        "rcp(2^-127)",
    );
    assert_bits(
        rcp(p, f32::from_bits(0x0020_0000)),
        INF,
        "rcp(2^-128) overflows",
    );
}

#[test]
fn nan_results_are_canonical() {
    for p in MODES {
        for nan in [CANONICAL_NAN, f32::NAN, ODD_NAN, SNAN, -CANONICAL_NAN] {
            let what = |op: &str| format!("{p:?} {op}({:#010x})", nan.to_bits());
            assert_canonical_nan(add(p, nan, 1.0), &what("add"));
            assert_canonical_nan(add(p, 1.0, nan), &what("add swapped"));
            assert_canonical_nan(add(p, nan, ODD_NAN), &what("add two NaNs"));
            assert_canonical_nan(mul(p, nan, 2.0), &what("mul"));
            assert_canonical_nan(mul(p, 2.0, nan), &what("mul swapped"));
            assert_canonical_nan(mad(p, nan, 1.0, 1.0), &what("mad a"));
            assert_canonical_nan(mad(p, 1.0, 1.0, nan), &what("mad c"));
            assert_canonical_nan(dp3(p, [nan; 4], [1.0; 4]), &what("dp3"));
            assert_canonical_nan(dp4(p, [1.0; 4], [nan; 4]), &what("dp4"));
            assert_canonical_nan(dph(p, [1.0; 4], [nan; 4]), &what("dph"));
            assert_canonical_nan(dst(p, [nan; 4], [1.0; 4])[1], &what("dst.y"));
            assert_canonical_nan(rcp(p, nan), &what("rcp"));
            assert_canonical_nan(rsq(p, nan), &what("rsq"));
            assert_canonical_nan(ex2(p, nan), &what("ex2"));
            assert_canonical_nan(lg2(p, nan), &what("lg2"));
            assert_canonical_nan(flr(p, nan), &what("flr"));
        }
        // NaN created from non-NaN operands.
        assert_canonical_nan(add(p, INF, NEG_INF), &format!("{p:?} inf + -inf"));
        assert_canonical_nan(rsq(p, -1.0), &format!("{p:?} rsq(-1)"));
        assert_canonical_nan(lg2(p, -1.0), &format!("{p:?} lg2(-1)"));
        assert_canonical_nan(dp4(p, [INF, NEG_INF, 0.0, 0.0], [1.0; 4]), "dp4 inf - inf");
    }
    // Selections keep NaN bits untouched.
    assert_bits(max(0.0, ODD_NAN), ODD_NAN, "max keeps payload");
    assert_bits(min(0.0, SNAN), SNAN, "min keeps payload");
    assert_bits(
        dst(
            Precision::F24,
            [0.0, 1.0, ODD_NAN, 0.0],
            [0.0, 1.0, 0.0, SNAN],
        )[2],
        ODD_NAN,
        "dst.z copy",
    );
    assert_bits(
        dst(Precision::F24, [0.0, 1.0, 0.0, 0.0], [0.0, 1.0, 0.0, SNAN])[3],
        SNAN,
        "dst.w copy",
    );
}

#[test]
fn f24_results_never_negative_zero() {
    let p = Precision::F24;
    let cases = [
        ("mul(-1, 0)", mul(p, -1.0, 0.0)),
        ("mul(0, -1)", mul(p, 0.0, -1.0)),
        ("mul(-0, -0)", mul(p, -0.0, 0.0)),
        ("add(-0, -0)", add(p, -0.0, -0.0)),
        ("add(-1, 1)", add(p, -1.0, 1.0)),
        ("mad(-1, 0, -0)", mad(p, -1.0, 0.0, -0.0)),
        ("dp4 -0 products", dp4(p, [-1.0; 4], [0.0; 4])),
        ("dph -0", dph(p, [-1.0; 4], [0.0, 0.0, 0.0, -0.0])),
        (
            "dst.y",
            dst(p, [0.0, -1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0])[1],
        ),
        ("rcp(-inf)", rcp(p, NEG_INF)),
        ("rcp(-huge)", rcp(p, -pow2(100))),
        ("mul underflow", mul(p, -pow2(-40), pow2(-40))),
        ("flr(-0)", flr(p, -0.0)),
        ("flr(-tiny)", flr(p, -pow2(-70))),
        ("ex2(-inf)", ex2(p, NEG_INF)),
        ("lg2(1)", lg2(p, 1.0)),
        ("negate(0)", negate(p, 0.0)),
        ("negate(load(-0))", negate(p, load(p, -0.0))),
        ("load(-0)", load(p, -0.0)),
        ("load(-tiny)", load(p, -pow2(-100))),
    ];
    for (what, r) in cases {
        assert_bits(r, 0.0, what);
    }
}

#[test]
fn flr_rounds_toward_negative_infinity() {
    // IEEE floor: floor(-0.5) = -1 (toward -inf) in both modes; the sign of
    // a zero result survives only in F32 (F24 maps -0 to +0).
    assert_bits(flr(Precision::F32, -0.5), -1.0, "F32 flr(-0.5)");
    assert_bits(flr(Precision::F24, -0.5), -1.0, "F24 flr(-0.5)");
    assert_bits(flr(Precision::F32, -0.0), -0.0, "F32 flr(-0)");
    assert_bits(flr(Precision::F24, -0.0), 0.0, "F24 flr(-0)");
    assert_bits(flr(Precision::F32, 0.5), 0.0, "F32 flr(0.5)");
    for p in MODES {
        for (x, r) in [
            (2.5, 2.0),
            (-2.5, -3.0),
            (3.0, 3.0),
            (-3.0, -3.0),
            (0.75, 0.0),
            (-0.75, -1.0),
            (pow2(40) + pow2(24), pow2(40) + pow2(24)),
            (INF, INF),
            (NEG_INF, NEG_INF),
        ] {
            assert_bits(flr(p, x), r, &format!("{p:?} flr({x})"));
        }
    }
    // F24 flushes the input first: flr(-2^-70) = flr(+0) = 0, F32 gives -1.
    assert_bits(flr(Precision::F24, -pow2(-70)), 0.0, "F24 flr(-tiny)");
    assert_bits(flr(Precision::F32, -pow2(-70)), -1.0, "F32 flr(-tiny)");
}

#[test]
fn mova_truncates_and_saturates() {
    assert_eq!(mova(2.9), 2);
    assert_eq!(mova(-2.9), -2);
    assert_eq!(mova(0.999), 0);
    assert_eq!(mova(-0.999), 0);
    assert_eq!(mova(-0.0), 0);
    assert_eq!(mova(CANONICAL_NAN), 0);
    assert_eq!(mova(ODD_NAN), 0);
    assert_eq!(mova(3.0e9), i32::MAX);
    assert_eq!(mova(-3.0e9), i32::MIN);
    assert_eq!(mova(INF), i32::MAX);
    assert_eq!(mova(NEG_INF), i32::MIN);
    assert_eq!(mova(2_147_483_648.0), i32::MAX);
    assert_eq!(mova(-2_147_483_648.0), i32::MIN);
    assert_eq!(mova(2_147_483_520.0), 2_147_483_520); // largest f32 below 2^31
    assert_eq!(mova(-127.5), -127);
    // Equals Rust's saturating `as` on a spread of values.
    for bits in (0..=u32::MAX).step_by(65_521) {
        let x = f32::from_bits(bits);
        assert_eq!(mova(x), x as i32, "mova({x:e})");
    }
}

#[test]
fn litp_clamps_and_flags() {
    assert_eq!(LITP_CLAMP, 128.0 - 1.0 / 256.0);
    assert_eq!(LITP_CLAMP.to_bits(), 0x42FF_FE00);
    let bits = |v: [f32; 4]| v.map(f32::to_bits);
    let (r, f) = litp([2.0, 3.0, 7.0, 5.0]);
    assert_eq!(bits(r), bits([2.0, 3.0, 0.0, 5.0]));
    assert_eq!(f, [true, true]);
    let (r, f) = litp([-2.0, 200.0, 7.0, -5.0]);
    assert_eq!(bits(r), bits([0.0, LITP_CLAMP, 0.0, 0.0]));
    assert_eq!(f, [false, false]);
    let (r, _) = litp([0.0, -200.0, 0.0, 0.0]);
    assert_eq!(bits(r), bits([0.0, -LITP_CLAMP, 0.0, 0.0]));
    // NaNs: x -> 0, y -> +clamp (min(NaN, c) = c), w -> 0, flags false.
    let (r, f) = litp([CANONICAL_NAN, CANONICAL_NAN, CANONICAL_NAN, ODD_NAN]);
    assert_eq!(bits(r), bits([0.0, LITP_CLAMP, 0.0, 0.0]));
    assert_eq!(f, [false, false]);
    // Infinities.
    let (r, f) = litp([INF, INF, INF, NEG_INF]);
    assert_eq!(bits(r), bits([INF, LITP_CLAMP, 0.0, 0.0]));
    assert_eq!(f, [true, false]);
    let (r, f) = litp([NEG_INF, NEG_INF, 0.0, INF]);
    assert_eq!(bits(r), bits([0.0, -LITP_CLAMP, 0.0, INF]));
    assert_eq!(f, [false, true]);
    // Zero flags: -0 >= 0 is true; max(-0, 0) = +0 (b).
    let (r, f) = litp([-0.0, 1.0, 0.0, -0.0]);
    assert_eq!(bits(r), bits([0.0, 1.0, 0.0, 0.0]));
    assert_eq!(f, [true, true]);
    // No flushing: a positive subnormal passes unchanged.
    let s = super::super::f24::LARGEST_SUBNORMAL;
    let t = f32::from_bits(1);
    let (r, f) = litp([s, t, 0.0, t]);
    assert_eq!(bits(r), bits([s, t, 0.0, t]));
    assert_eq!(f, [true, true]);
}

#[test]
fn compare_and_set_rules() {
    use CmpOp::*;
    let ops = [Eq, Ne, Lt, Le, Gt, Ge, True6, True7];
    let table: [(f32, f32, [bool; 8]); 7] = [
        (
            1.0,
            2.0,
            [false, true, true, true, false, false, true, true],
        ),
        (
            2.0,
            1.0,
            [false, true, false, false, true, true, true, true],
        ),
        (
            1.0,
            1.0,
            [true, false, false, true, false, true, true, true],
        ),
        (
            0.0,
            -0.0,
            [true, false, false, true, false, true, true, true],
        ),
        (
            CANONICAL_NAN,
            1.0,
            [false, true, false, false, false, false, true, true],
        ),
        (
            1.0,
            ODD_NAN,
            [false, true, false, false, false, false, true, true],
        ),
        (
            NEG_INF,
            INF,
            [false, true, true, true, false, false, true, true],
        ),
    ];
    for (a, b, expected) in table {
        for (op, e) in ops.iter().zip(expected) {
            assert_eq!(compare(*op, a, b), e, "cmp {op:?} {a} {b}");
        }
    }
    assert_bits(sge(1.0, 1.0), 1.0, "sge(1, 1)");
    assert_bits(sge(0.0, 1.0), 0.0, "sge(0, 1)");
    assert_bits(sge(CANONICAL_NAN, 1.0), 0.0, "sge(NaN, 1)");
    assert_bits(sge(1.0, CANONICAL_NAN), 0.0, "sge(1, NaN)");
    assert_bits(sge(-0.0, 0.0), 1.0, "sge(-0, 0)");
    assert_bits(slt(0.0, 1.0), 1.0, "slt(0, 1)");
    assert_bits(slt(1.0, 1.0), 0.0, "slt(1, 1)");
    assert_bits(slt(CANONICAL_NAN, 1.0), 0.0, "slt(NaN, 1)");
    assert_bits(slt(NEG_INF, INF), 1.0, "slt(-inf, inf)");
}

#[test]
fn negate_and_load_rules() {
    let f32m = Precision::F32;
    assert_bits(negate(f32m, 0.0), -0.0, "F32 -(+0)");
    assert_bits(negate(f32m, -0.0), 0.0, "F32 -(-0)");
    assert_bits(
        negate(f32m, ODD_NAN),
        f32::from_bits(0x7FC0_1234),
        "F32 -NaN flips sign only",
    );
    assert_bits(negate(f32m, INF), NEG_INF, "F32 -inf");
    assert_bits(negate(f32m, 1.5), -1.5, "F32 -1.5");
    assert_bits(load(f32m, ODD_NAN), ODD_NAN, "F32 load keeps bits");
    assert_bits(load(f32m, -0.0), -0.0, "F32 load keeps -0");

    let f24m = Precision::F24;
    assert_bits(negate(f24m, 0.0), 0.0, "F24 -(+0)");
    assert_bits(negate(f24m, CANONICAL_NAN), CANONICAL_NAN, "F24 -NaN");
    assert_canonical_nan(negate(f24m, ODD_NAN), "F24 -odd NaN");
    assert_bits(negate(f24m, INF), NEG_INF, "F24 -inf");
    assert_bits(negate(f24m, NEG_INF), INF, "F24 -(-inf)");
    assert_bits(negate(f24m, 1.5), -1.5, "F24 -1.5");
    let s = super::super::f24::LARGEST_SUBNORMAL;
    assert_bits(negate(f24m, s), -s, "F24 -s");
    assert_bits(negate(f24m, -s), s, "F24 -(-s)");
}
