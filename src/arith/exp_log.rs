//! `ex2` (2^x) and `lg2` (log2 x): one fixed algorithm each, built from IEEE
//! add/sub/mul/div, compare, floor, f32 <-> i32 conversion and integer bit
//! operations. Polynomials are evaluated by Horner's rule with a separate
//! multiply and add per step (`acc = acc * t; acc = acc + c`), never FMA.
//!
//! The coefficients are derived by `src/arith/gen_coeffs.py` (minimax fit of
//! the relative error, rounded to f32 lowest degree first with refitting).
//! Measured maximum relative error against an f64 reference (see the
//! `exp_log` tests): ex2 2^-23.27 over `[-126, 128)`, lg2 2^-22.16 over all
//! positive normal and subnormal inputs (bound required: 2^-20).

use super::nan::CANONICAL_NAN;
use super::precision::{Precision, arith_input, arith_result};

/// Coefficients `c0..c6` of `2^f ≈ c0 + f*(c1 + f*(c2 + ... + f*c6))` on
/// `f ∈ [0, 1]` (`c0 = 1` exactly, so `ex2(k) = 2^k` exactly for integer
/// `k`; the f32 evaluation at `f = 1.0` gives exactly `2.0`).
pub const EX2_COEFFS: [f32; 7] = [
    f32::from_bits(0x3F80_0000), // 1.0
    f32::from_bits(0x3F31_7216), // 6.931470633e-01
    f32::from_bits(0x3E75_FE9D), // 2.402290851e-01
    f32::from_bits(0x3D63_457B), // 5.548618361e-02
    f32::from_bits(0x3C1E_7EC1), // 9.673775174e-03
    f32::from_bits(0x3AA3_9B9D), // 1.248228946e-03
    f32::from_bits(0x3962_22B7), // 2.156597184e-04
];

/// Lower clamp of the `ex2` input (-160: far enough below -149 that the
/// result underflows to +0; maps -inf to +0).
pub const EX2_INPUT_MIN: f32 = -160.0;

/// Upper clamp of the `ex2` input (129: far enough above 128 that the result
/// overflows to +inf; maps +inf to +inf).
pub const EX2_INPUT_MAX: f32 = 129.0;

/// Coefficients `c0..c3` of `log2(m) ≈ s * (c0 + z*(c1 + z*(c2 + z*c3)))`
/// with `s = (m - 1) / (m + 1)`, `z = s*s`, `m ∈ [sqrt(2)/2, sqrt(2)]`
/// (`c0 ≈ 2/ln 2`; a minimax-refined `atanh` series).
pub const LG2_COEFFS: [f32; 4] = [
    f32::from_bits(0x4038_AA3B), // 2.885390043e+00
    f32::from_bits(0x3F76_39F5), // 9.618218541e-01
    f32::from_bits(0x3F13_18D4), // 5.745975971e-01
    f32::from_bits(0x3EF5_D398), // 4.801299572e-01
];

/// Mantissa range-reduction threshold of `lg2`: the f32 nearest below
/// `sqrt(2)` (`0x3FB5_04F3` = 1.41421353816986083984375).
pub const LG2_SQRT2: f32 = f32::from_bits(0x3FB5_04F3);

/// `2^k` for `k ∈ [-126, 127]`, built from bits `(k + 127) << 23`.
#[inline]
fn pow2i(k: i32) -> f32 {
    f32::from_bits((k.wrapping_add(127) << 23) as u32)
}

/// The ex2 algorithm on an already-flushed input, before the result step.
#[inline]
fn ex2_core(x: f32) -> f32 {
    let c = EX2_COEFFS;
    // Clamp (a NaN passes through unchanged; it is replaced at the end).
    let xc = if x < EX2_INPUT_MIN { EX2_INPUT_MIN } else { x };
    let xc = if xc > EX2_INPUT_MAX {
        EX2_INPUT_MAX
    } else {
        xc
    };
    let n = xc.floor();
    let f = xc - n; // in [0, 1]; exact except for xc in (-1, 0)
    let mut q = c[6];
    q = q * f + c[5];
    q = q * f + c[4];
    q = q * f + c[3];
    q = q * f + c[2];
    q = q * f + c[1];
    q = q * f + c[0];
    let ni = n as i32; // in [-160, 129]
    let na = ni >> 1; // arithmetic shift: floor(ni / 2), in [-80, 64]
    let nb = ni.wrapping_sub(na); // in [-80, 65]
    let r = (q * pow2i(na)) * pow2i(nb); // first product exact, second rounds once
    if x.is_nan() { CANONICAL_NAN } else { r }
}

/// The lg2 algorithm on an already-flushed input, before the result step.
#[inline]
fn lg2_core(x: f32) -> f32 {
    let c = LG2_COEFFS;
    const TWO_POW_23: f32 = 8_388_608.0;
    let bits = x.to_bits();
    // Subnormal (or zero) magnitude: scale by 2^23 (exact) and compensate.
    let sub = bits & 0x7FFF_FFFF < 0x0080_0000;
    let xs = if sub { x * TWO_POW_23 } else { x };
    let bias = if sub { 127 + 23 } else { 127 };
    let b = xs.to_bits();
    let e = ((b >> 23) & 0xFF) as i32 - bias;
    let m = f32::from_bits((b & 0x007F_FFFF) | 0x3F80_0000); // [1, 2)
    let big = m > LG2_SQRT2;
    let m = if big { m * 0.5 } else { m }; // [sqrt2/2, sqrt2]
    let e = if big { e + 1 } else { e };
    let s = (m - 1.0) / (m + 1.0); // m - 1 is exact
    let z = s * s;
    let mut q = c[3];
    q = q * z + c[2];
    q = q * z + c[1];
    q = q * z + c[0];
    let r = (e as f32) + s * q;
    // Special values (selects, last one wins).
    let r = if x == f32::INFINITY { f32::INFINITY } else { r };
    let r = if x == 0.0 { f32::NEG_INFINITY } else { r };
    if x < 0.0 || x.is_nan() {
        CANONICAL_NAN
    } else {
        r
    }
}

/// `ex2`: 2^x.
///
/// Algorithm (`x = arith_input(p, x)` first, `arith_result(p, ·)` last; all
/// steps f32, separate mul and add):
/// 1. `xc = x < -160 ? -160 : x`; `xc = xc > 129 ? 129 : xc` (±inf clamp to
///    the ends; a NaN lane is replaced in step 7);
/// 2. `n = floor(xc)`; `f = xc - n` (`f ∈ [0, 1]`);
/// 3. `q = c6`; then for `k = 5..=0`: `q = q * f; q = q + ck`
///    ([`EX2_COEFFS`], `c0 = 1`);
/// 4. `ni = n as i32` (`cvttps2dq`; exact, in `[-160, 129]`);
///    `na = ni >> 1` (arithmetic), `nb = ni - na`;
/// 5. `2^k` is `f32::from_bits((k + 127) << 23)` (valid since
///    `na, nb ∈ [-80, 65]`);
/// 6. `r = (q * 2^na) * 2^nb`: the first product is exact, the second rounds
///    once, giving correct overflow to +inf and gradual underflow to
///    subnormals / +0;
/// 7. `r = x is NaN ? CANONICAL_NAN : r`.
///
/// `ex2(-inf) = +0`, `ex2(+inf) = +inf`, `ex2(0) = 1`, `ex2(k) = 2^k` exactly
/// for integers `k ∈ [-126, 127]`. Max relative error for normal results:
/// 2^-23.27 (F32 mode, measured over `[-126, 128)`).
///
/// ```
/// use pica_jit::arith::{ex2, Precision};
/// assert_eq!(ex2(Precision::F32, 10.0), 1024.0);
/// assert_eq!(ex2(Precision::F32, f32::NEG_INFINITY), 0.0);
/// ```
#[inline]
pub fn ex2(p: Precision, x: f32) -> f32 {
    arith_result(p, ex2_core(arith_input(p, x)))
}

/// `lg2`: log2(x).
///
/// Algorithm (`x = arith_input(p, x)` first, `arith_result(p, ·)` last; all
/// steps f32 / i32):
/// 1. `sub = (bits(x) & 0x7FFF_FFFF) < 0x0080_0000` (subnormal or zero);
///    `xs = sub ? x * 2^23 : x`; `bias = sub ? 150 : 127`;
/// 2. `e = ((bits(xs) >> 23) & 0xFF) - bias` (i32);
///    `m = from_bits((bits(xs) & 0x007F_FFFF) | 0x3F80_0000)` (`m ∈ [1, 2)`);
/// 3. `big = m > LG2_SQRT2` (`0x3FB5_04F3`); `m = big ? m * 0.5 : m`;
///    `e = big ? e + 1 : e`;
/// 4. `s = (m - 1.0) / (m + 1.0)`; `z = s * s`;
/// 5. `q = c3`; for `k = 2..=0`: `q = q * z; q = q + ck` ([`LG2_COEFFS`]);
/// 6. `r = (e as f32) + s * q` (multiply, then add);
/// 7. selects: `x == +inf → +inf`; `x == ±0 → -inf`;
///    `x < 0 or x NaN → CANONICAL_NAN`.
///
/// `lg2(1) = +0` and `lg2(2^k) = k` exactly (then `s = 0`); the relative
/// error stays small near `x = 1` because `e = 0` there and `r = s * q`.
/// Max relative error over all positive normal (and F32 subnormal) inputs:
/// 2^-22.16 (measured).
///
/// ```
/// use pica_jit::arith::{lg2, Precision};
/// assert_eq!(lg2(Precision::F32, 1024.0), 10.0);
/// assert_eq!(lg2(Precision::F24, 0.0), f32::NEG_INFINITY);
/// ```
#[inline]
pub fn lg2(p: Precision, x: f32) -> f32 {
    arith_result(p, lg2_core(arith_input(p, x)))
}
