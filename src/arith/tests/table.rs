//! One test per row of the "Floating-Point Behavior" hardware table
//! (docs / seed spec). Rows without subnormals are checked in both modes;
//! operands go through `load` first, as values entering the unit do.

use super::super::{
    CANONICAL_NAN, Precision, add, compare, dp3, dp4, dph, dst, f24, load, mad, max, min, mul,
    negate, rcp, rsq,
};
use super::{INF, MODES, NEG_INF, ODD_NAN, SNAN, assert_bits, assert_canonical_nan};
use crate::isa::CmpOp;

const ZERO: f32 = 0.0;
const NEG_ZERO: f32 = -0.0;

#[test]
fn table_inf_times_zero_is_zero() {
    for p in MODES {
        for inf in [INF, NEG_INF] {
            for zero in [ZERO, NEG_ZERO] {
                let (i, z) = (load(p, inf), load(p, zero));
                let what = format!("{p:?} {inf} * {zero}");
                assert_bits(mul(p, i, z), 0.0, &format!("mul {what}"));
                assert_bits(mul(p, z, i), 0.0, &format!("mul swapped {what}"));
                assert_bits(mad(p, i, z, 0.0), 0.0, &format!("mad +0 {what}"));
                assert_bits(mad(p, z, i, 1.5), 1.5, &format!("mad 1.5 {what}"));
                assert_bits(mad(p, i, z, -2.0), -2.0, &format!("mad -2 {what}"));
                for lane in 0..3 {
                    let mut a = [1.0, 2.0, 3.0, 4.0];
                    let mut b = [1.0, 1.0, 1.0, 1.0];
                    a[lane] = i;
                    b[lane] = z;
                    let rest: f32 = [1.0f32, 2.0, 3.0]
                        .iter()
                        .enumerate()
                        .filter(|&(k, _)| k != lane)
                        .map(|(_, v)| *v)
                        .sum();
                    assert_bits(dp3(p, a, b), rest, &format!("dp3 lane {lane} {what}"));
                    assert_bits(dp4(p, a, b), rest + 4.0, &format!("dp4 lane {lane} {what}"));
                    assert_bits(dph(p, a, b), rest + 1.0, &format!("dph lane {lane} {what}"));
                }
                let a = [1.0, 1.0, 1.0, i];
                let b = [1.0, 1.0, 1.0, z];
                assert_bits(dp4(p, a, b), 3.0, &format!("dp4 lane 3 {what}"));
                assert_bits(dp4(p, b, a), 3.0, &format!("dp4 lane 3 swapped {what}"));
                // dph replaces a.w by 1: the inf in a.w is ignored.
                assert_bits(dph(p, a, [1.0, 1.0, 1.0, 2.0]), 5.0, "dph ignores a.w");
                // All four products are inf * 0.
                assert_bits(dp4(p, [i; 4], [z; 4]), 0.0, &format!("dp4 all {what}"));
                assert_bits(dp3(p, [i; 4], [z; 4]), 0.0, &format!("dp3 all {what}"));
                assert_bits(dph(p, [i; 4], [z; 4]), 0.0, &format!("dph all {what}"));
                let d = dst(p, [9.0, i, 3.0, 9.0], [9.0, z, 9.0, 4.0]);
                assert_bits(d[1], 0.0, &format!("dst.y {what}"));
                assert_eq!(
                    d.map(f32::to_bits),
                    [1.0f32, 0.0, 3.0, 4.0].map(f32::to_bits)
                );
            }
        }
    }
}

#[test]
fn table_nan_times_zero_is_nan() {
    for p in MODES {
        for nan in [CANONICAL_NAN, f32::NAN, ODD_NAN, SNAN] {
            for zero in [ZERO, NEG_ZERO] {
                let (n, z) = (load(p, nan), load(p, zero));
                assert_canonical_nan(mul(p, n, z), &format!("{p:?} mul(NaN, {zero})"));
                assert_canonical_nan(mul(p, z, n), &format!("{p:?} mul({zero}, NaN)"));
                assert_canonical_nan(mad(p, n, z, 1.0), &format!("{p:?} mad(NaN, 0, 1)"));
                assert_canonical_nan(dp4(p, [n; 4], [z; 4]), &format!("{p:?} dp4"));
                assert_canonical_nan(dst(p, [n; 4], [z; 4])[1], &format!("{p:?} dst.y"));
            }
            // NaN * inf is NaN too (not the inf * 0 rule).
            assert_canonical_nan(mul(p, load(p, nan), INF), &format!("{p:?} NaN * inf"));
        }
    }
}

#[test]
fn table_inf_minus_inf_is_nan() {
    for p in MODES {
        let inf = load(p, INF);
        assert_canonical_nan(add(p, inf, negate(p, inf)), &format!("{p:?} +inf - +inf"));
        assert_canonical_nan(add(p, negate(p, inf), inf), &format!("{p:?} -inf + +inf"));
        assert_canonical_nan(mad(p, inf, 1.0, NEG_INF), &format!("{p:?} mad"));
        // And +inf is a real infinity, not FLT_MAX: inf - large = inf.
        assert_bits(add(p, inf, -1.0e18), INF, &format!("{p:?} inf - 1e18"));
    }
}

#[test]
fn table_rsq_rcp_neg_inf_is_pos_inf() {
    for p in MODES {
        assert_bits(rsq(p, rcp(p, load(p, NEG_INF))), INF, &format!("{p:?}"));
    }
    // rcp(-inf) itself: -0 in F32, +0 in F24 (no -0 in float24).
    assert_bits(rcp(Precision::F32, NEG_INF), -0.0, "F32 rcp(-inf)");
    assert_bits(rcp(Precision::F24, NEG_INF), 0.0, "F24 rcp(-inf)");
}

#[test]
fn table_rcp_rows() {
    for p in MODES {
        assert_bits(rcp(p, load(p, NEG_ZERO)), INF, &format!("{p:?} rcp(-0)"));
        assert_bits(rcp(p, load(p, ZERO)), INF, &format!("{p:?} rcp(0)"));
        assert_bits(rcp(p, load(p, INF)), 0.0, &format!("{p:?} rcp(+inf)"));
        for nan in [CANONICAL_NAN, ODD_NAN, SNAN] {
            assert_canonical_nan(rcp(p, load(p, nan)), &format!("{p:?} rcp(NaN)"));
        }
        assert_bits(rcp(p, 4.0), 0.25, &format!("{p:?} rcp(4)"));
        assert_bits(rcp(p, -0.5), -2.0, &format!("{p:?} rcp(-0.5)"));
    }
    // Correct rounding in F32; truncation in F24.
    assert_bits(rcp(Precision::F32, 3.0), 1.0 / 3.0, "F32 rcp(3)");
    assert_bits(
        rcp(Precision::F24, 3.0),
        f32::from_bits(0x3EAA_AA80),
        "F24 rcp(3)",
    );
}

#[test]
fn table_rsq_rows() {
    for p in MODES {
        assert_bits(rsq(p, load(p, NEG_ZERO)), INF, &format!("{p:?} rsq(-0)"));
        assert_bits(rsq(p, load(p, ZERO)), INF, &format!("{p:?} rsq(0)"));
        assert_canonical_nan(rsq(p, load(p, -2.0)), &format!("{p:?} rsq(-2)"));
        assert_bits(rsq(p, load(p, INF)), 0.0, &format!("{p:?} rsq(+inf)"));
        assert_canonical_nan(rsq(p, load(p, NEG_INF)), &format!("{p:?} rsq(-inf)"));
        for nan in [CANONICAL_NAN, ODD_NAN, SNAN] {
            assert_canonical_nan(rsq(p, load(p, nan)), &format!("{p:?} rsq(NaN)"));
        }
        assert_bits(rsq(p, 16.0), 0.25, &format!("{p:?} rsq(16)"));
    }
    // Two roundings: 1 / sqrt(x), not a fused or estimated sequence.
    let x = 3.0f32;
    assert_bits(rsq(Precision::F32, x), 1.0 / x.sqrt(), "F32 rsq(3)");
}

#[test]
fn table_max_rows() {
    // Identical in both modes (precision independent, no flushing).
    assert_bits(max(0.0, INF), INF, "max(0, +inf)");
    assert_bits(
        max(0.0, NEG_INF),
        0.0,
        "max(0, -inf) (hardware, not 3dbrew)",
    );
    assert_canonical_nan(max(0.0, CANONICAL_NAN), "max(0, NaN)");
    assert_bits(max(0.0, ODD_NAN), ODD_NAN, "max(0, NaN) keeps NaN bits");
    assert_bits(max(CANONICAL_NAN, 0.0), 0.0, "max(NaN, 0)");
    assert_bits(max(NEG_INF, INF), INF, "max(-inf, +inf)");
    // Through load in both modes.
    for p in MODES {
        let l = |x| load(p, x);
        assert_bits(max(l(0.0), l(INF)), INF, "loaded max(0, +inf)");
        assert_bits(max(l(0.0), l(NEG_INF)), 0.0, "loaded max(0, -inf)");
        assert_canonical_nan(max(l(0.0), l(CANONICAL_NAN)), "loaded max(0, NaN)");
        assert_bits(max(l(CANONICAL_NAN), l(0.0)), 0.0, "loaded max(NaN, 0)");
        assert_bits(max(l(NEG_INF), l(INF)), INF, "loaded max(-inf, +inf)");
    }
    // Ordinary values.
    assert_bits(max(1.0, 2.0), 2.0, "max(1, 2)");
    assert_bits(max(2.0, 1.0), 2.0, "max(2, 1)");
    assert_bits(max(INF, NEG_INF), INF, "max(+inf, -inf)");
    assert_bits(max(0.0, -0.0), -0.0, "max(0, -0) = b");
    assert_bits(max(-0.0, 0.0), 0.0, "max(-0, 0) = b");
}

#[test]
fn table_min_rows() {
    assert_bits(min(0.0, INF), 0.0, "min(0, +inf)");
    assert_bits(min(0.0, NEG_INF), NEG_INF, "min(0, -inf)");
    assert_canonical_nan(min(0.0, CANONICAL_NAN), "min(0, NaN)");
    assert_bits(min(0.0, ODD_NAN), ODD_NAN, "min(0, NaN) keeps NaN bits");
    assert_bits(min(CANONICAL_NAN, 0.0), 0.0, "min(NaN, 0)");
    assert_bits(min(NEG_INF, INF), NEG_INF, "min(-inf, +inf)");
    for p in MODES {
        let l = |x| load(p, x);
        assert_bits(min(l(0.0), l(INF)), 0.0, "loaded min(0, +inf)");
        assert_bits(min(l(0.0), l(NEG_INF)), NEG_INF, "loaded min(0, -inf)");
        assert_canonical_nan(min(l(0.0), l(CANONICAL_NAN)), "loaded min(0, NaN)");
        assert_bits(min(l(CANONICAL_NAN), l(0.0)), 0.0, "loaded min(NaN, 0)");
        assert_bits(min(l(NEG_INF), l(INF)), NEG_INF, "loaded min(-inf, +inf)");
    }
    assert_bits(min(1.0, 2.0), 1.0, "min(1, 2)");
    assert_bits(min(2.0, 1.0), 1.0, "min(2, 1)");
    assert_bits(min(0.0, -0.0), -0.0, "min(0, -0) = b");
}

/// s = largest float24 subnormal (raw 0x00FFFF = 65535 * 2^-78).
fn s() -> f32 {
    let s = load(Precision::F24, f24::LARGEST_SUBNORMAL);
    assert_bits(s, f24::from_raw(0x00_FFFF), "s");
    assert_bits(s, 65535.0 * f24::SUBNORMAL_QUANTUM, "s value");
    s
}

#[test]
fn table_f24_cmp_subnormal_zero_is_false() {
    let s = s();
    let z = load(Precision::F24, 0.0);
    assert!(!compare(CmpOp::Eq, s, z), "cmp(s, 0) must not flush s");
    assert!(compare(CmpOp::Ne, s, z));
    assert!(compare(CmpOp::Gt, s, z));
    assert!(!compare(CmpOp::Le, s, z));
    let neg_s = negate(Precision::F24, s);
    assert!(!compare(CmpOp::Eq, neg_s, z));
    assert!(compare(CmpOp::Lt, neg_s, z));
}

#[test]
fn table_f24_max_subnormal_zero_is_subnormal() {
    let s = s();
    assert_bits(max(s, 0.0), s, "max(s, 0)");
    assert_bits(min(negate(Precision::F24, s), 0.0), -s, "min(-s, 0)");
}

#[test]
fn table_f24_mul_subnormal_two_is_zero() {
    let s = s();
    assert_bits(mul(Precision::F24, s, 2.0), 0.0, "mul(s, 2)");
    assert_bits(mul(Precision::F24, 2.0, s), 0.0, "mul(2, s)");
    assert_bits(add(Precision::F24, s, s), 0.0, "add(s, s)");
    assert_bits(mad(Precision::F24, s, 2.0, s), 0.0, "mad(s, 2, s)");
}

#[test]
fn table_f24_mul_min_normal_half_is_zero() {
    let n = load(Precision::F24, f24::MIN_NORMAL);
    assert_bits(n, f24::from_raw(0x01_0000), "n");
    assert_bits(mul(Precision::F24, n, 0.5), 0.0, "mul(n, 0.5)");
    assert_bits(mul(Precision::F24, n, 1.0), n, "mul(n, 1)");
    assert_bits(
        mul(Precision::F24, negate(Precision::F24, n), 0.5),
        0.0,
        "mul(-n, 0.5)",
    );
}

#[test]
fn table_f24_half_pow_63_is_zero() {
    let p = Precision::F24;
    let mut x = load(p, 1.0);
    for i in 1..=62 {
        x = mul(p, x, 0.5);
        assert!(!compare(CmpOp::Eq, x, 0.0), "0.5^{i} must be non-zero");
    }
    assert_bits(x, f24::MIN_NORMAL, "0.5^62 == 2^-62");
    x = mul(p, x, 0.5);
    assert!(compare(CmpOp::Eq, x, 0.0), "0.5^63 compares equal to zero");
    assert_bits(x, 0.0, "0.5^63 is +0");
}
