//! Property tests (proptest) over arbitrary f32 bit patterns, ordinary
//! values and special values.

use super::super::{
    CANONICAL_NAN, Precision, add, dp3, dp4, dph, dst, ex2, f24, flr, lg2, load, mad, max, min,
    mul, negate, rcp, rsq,
};
use proptest::prelude::*;

/// Any f32: raw bit patterns (all NaN payloads, subnormals, ...), moderate
/// values, and special values including float24 boundaries.
fn any_f32() -> impl Strategy<Value = f32> {
    prop_oneof![
        any::<u32>().prop_map(f32::from_bits),
        -1000.0f32..1000.0,
        -1.0f32..1.0,
        prop::sample::select(vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            2.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            CANONICAL_NAN,
            f32::from_bits(0xFFC0_1234),
            f32::from_bits(0x7F80_0001),
            f24::MIN_NORMAL,
            -f24::MIN_NORMAL,
            f24::LARGEST_SUBNORMAL,
            -f24::LARGEST_SUBNORMAL,
            f24::MAX,
            f24::OVERFLOW,
            f32::MAX,
            f32::from_bits(1),
        ]),
    ]
}

fn any_mode() -> impl Strategy<Value = Precision> {
    prop::sample::select(vec![Precision::F24, Precision::F32])
}

fn any_vec4() -> impl Strategy<Value = [f32; 4]> {
    [any_f32(), any_f32(), any_f32(), any_f32()]
}

fn v24_check(what: &str, x: f32) -> Result<(), TestCaseError> {
    prop_assert!(
        f24::is_v24(x),
        "{} = {:e} ({:#010x}) not in V24",
        what,
        x,
        x.to_bits()
    );
    Ok(())
}

proptest! {
    #[test]
    fn prop_add_mul_commutative_bitwise(p in any_mode(), a in any_f32(), b in any_f32()) {
        prop_assert_eq!(add(p, a, b).to_bits(), add(p, b, a).to_bits());
        prop_assert_eq!(mul(p, a, b).to_bits(), mul(p, b, a).to_bits());
    }

    #[test]
    fn prop_f24_results_in_v24(a in any_f32(), b in any_f32(), c in any_f32(),
                               va in any_vec4(), vb in any_vec4()) {
        let p = Precision::F24;
        v24_check("add", add(p, a, b))?;
        v24_check("mul", mul(p, a, b))?;
        v24_check("mad", mad(p, a, b, c))?;
        v24_check("dp3", dp3(p, va, vb))?;
        v24_check("dp4", dp4(p, va, vb))?;
        v24_check("dph", dph(p, va, vb))?;
        v24_check("dst.y", dst(p, va, vb)[1])?;
        v24_check("rcp", rcp(p, a))?;
        v24_check("rsq", rsq(p, a))?;
        v24_check("ex2", ex2(p, a))?;
        v24_check("lg2", lg2(p, a))?;
        v24_check("flr", flr(p, a))?;
        v24_check("load", load(p, a))?;
        // Operations on V24 operands stay in V24.
        let (la, lb) = (load(p, a), load(p, b));
        v24_check("negate(load)", negate(p, la))?;
        v24_check("max(load, load)", max(la, lb))?;
        v24_check("min(load, load)", min(la, lb))?;
        let d = dst(p, va.map(|x| load(p, x)), vb.map(|x| load(p, x)));
        for x in d {
            v24_check("dst(load)", x)?;
        }
    }

    #[test]
    fn prop_f24_load_idempotent(x in any_f32()) {
        let l = f24::load(x);
        prop_assert_eq!(f24::load(l).to_bits(), l.to_bits());
        prop_assert!(f24::is_v24(l));
        // Truncation toward zero: |load(x)| <= |x| for finite x below 2^64.
        if x.is_finite() && x.abs() < f24::OVERFLOW {
            prop_assert!(l.abs() <= x.abs());
        }
    }

    #[test]
    fn prop_f24_quantize_idempotent(x in any_f32()) {
        let q = f24::quantize_result(x);
        prop_assert_eq!(f24::quantize_result(q).to_bits(), q.to_bits());
        prop_assert!(f24::is_v24(q));
        // A quantised value (never subnormal) loads to itself.
        prop_assert_eq!(f24::load(q).to_bits(), q.to_bits());
    }

    #[test]
    fn prop_f24_negate_involution_on_v24(x in any_f32()) {
        let l = f24::load(x);
        let p = Precision::F24;
        prop_assert_eq!(negate(p, negate(p, l)).to_bits(), l.to_bits());
    }

    #[test]
    fn prop_f32_negate_flips_sign_bit(x in any_f32()) {
        prop_assert_eq!(negate(Precision::F32, x).to_bits(), x.to_bits() ^ 0x8000_0000);
    }

    #[test]
    fn prop_min_max_select_an_operand(a in any_f32(), b in any_f32()) {
        let (mx, mn) = (max(a, b).to_bits(), min(a, b).to_bits());
        prop_assert!(mx == a.to_bits() || mx == b.to_bits());
        prop_assert!(mn == a.to_bits() || mn == b.to_bits());
    }

    #[test]
    fn prop_f32_add_mul_are_ieee_apart_from_rules(a in any_f32(), b in any_f32()) {
        let p = Precision::F32;
        let s = a + b;
        if s.is_nan() {
            prop_assert_eq!(add(p, a, b).to_bits(), CANONICAL_NAN.to_bits());
        } else {
            prop_assert_eq!(add(p, a, b).to_bits(), s.to_bits());
        }
        let m = a * b;
        let r = mul(p, a, b).to_bits();
        if !m.is_nan() {
            prop_assert_eq!(r, m.to_bits());
        } else if a.is_nan() || b.is_nan() {
            prop_assert_eq!(r, CANONICAL_NAN.to_bits());
        } else {
            prop_assert_eq!(r, 0); // inf * 0
        }
    }

    #[test]
    fn prop_nan_results_canonical(p in any_mode(), a in any_f32(), b in any_f32(),
                                  va in any_vec4(), vb in any_vec4()) {
        let results = [
            add(p, a, b), mul(p, a, b), mad(p, a, b, a), dp3(p, va, vb), dp4(p, va, vb),
            dph(p, va, vb), dst(p, va, vb)[1], rcp(p, a), rsq(p, a), ex2(p, a), lg2(p, a),
            flr(p, a),
        ];
        for r in results {
            prop_assert!(!r.is_nan() || r.to_bits() == CANONICAL_NAN.to_bits());
        }
    }

    #[test]
    fn prop_f24_op_is_quantized_f32_op_on_flushed_inputs(a in any_f32(), b in any_f32()) {
        let (fa, fb) = (f24::flush_input(a), f24::flush_input(b));
        let q = f24::quantize_result;
        let f32m = Precision::F32;
        let f24m = Precision::F24;
        prop_assert_eq!(add(f24m, a, b).to_bits(), q(add(f32m, fa, fb)).to_bits());
        prop_assert_eq!(mul(f24m, a, b).to_bits(), q(mul(f32m, fa, fb)).to_bits());
        prop_assert_eq!(rcp(f24m, a).to_bits(), q(rcp(f32m, fa)).to_bits());
        prop_assert_eq!(rsq(f24m, a).to_bits(), q(rsq(f32m, fa)).to_bits());
        prop_assert_eq!(ex2(f24m, a).to_bits(), q(ex2(f32m, fa)).to_bits());
        prop_assert_eq!(lg2(f24m, a).to_bits(), q(lg2(f32m, fa)).to_bits());
        prop_assert_eq!(flr(f24m, a).to_bits(), q(flr(f32m, fa)).to_bits());
    }
}
