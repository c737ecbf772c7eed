//! `add`, `mul`, `mad`, the dot products and `dst`.

use super::Vec4;
use super::nan::CANONICAL_NAN;
use super::precision::{Precision, arith_input, arith_result};

/// The PICA multiply rule on already-flushed operands, before the result
/// step: `inf * 0 = +0` (either order, any signs), otherwise IEEE `a * b`.
///
/// SIMD: `r = a * b`; `r_nan = r != r`; `in_nan = (a != a) | (b != b)`;
/// `r = blend(r, +0, r_nan & !in_nan)`; `r = blend(r, CANONICAL_NAN, r_nan & in_nan)`.
/// (The only way a product of two non-NaN values is NaN is `±inf * ±0`.)
///
/// ```
/// use pica_jit::arith::mul_rule;
/// assert_eq!(mul_rule(f32::INFINITY, -0.0).to_bits(), 0);
/// assert_eq!(mul_rule(f32::NAN, 0.0).to_bits(), 0x7FC0_0000);
/// assert_eq!(mul_rule(3.0, -2.0), -6.0);
/// ```
#[inline]
pub fn mul_rule(a: f32, b: f32) -> f32 {
    let r = a * b;
    let r_nan = r.is_nan();
    let in_nan = a.is_nan() || b.is_nan();
    if r_nan && !in_nan {
        0.0
    } else if r_nan {
        CANONICAL_NAN
    } else {
        r
    }
}

/// `a + b` (also `a - b` via a negated source).
///
/// `arith_result(p, arith_input(p, a) + arith_input(p, b))`: IEEE addition
/// (round to nearest even); `+inf + -inf` is [`CANONICAL_NAN`]. In F24 mode
/// inputs below 2^-62 are flushed and the sum is truncated to float24.
#[inline]
pub fn add(p: Precision, a: f32, b: f32) -> f32 {
    arith_result(p, arith_input(p, a) + arith_input(p, b))
}

/// `a * b` with the PICA rule `±inf * ±0 = +0` (`NaN * 0` stays NaN).
///
/// 1. `a = arith_input(p, a)`, `b = arith_input(p, b)` (F24: flush < 2^-62);
/// 2. `r = a * b` (IEEE);
/// 3. if `r` is NaN and neither `a` nor `b` is NaN → `+0.0`;
/// 4. `arith_result(p, r)` (NaN → canonical; F24: quantise).
///
/// ```
/// use pica_jit::arith::{mul, Precision};
/// assert_eq!(mul(Precision::F32, f32::NEG_INFINITY, 0.0).to_bits(), 0);
/// assert_eq!(mul(Precision::F32, f32::NAN, 0.0).to_bits(), 0x7FC0_0000);
/// ```
#[inline]
pub fn mul(p: Precision, a: f32, b: f32) -> f32 {
    arith_result(p, mul_rule(arith_input(p, a), arith_input(p, b)))
}

/// `a * b + c`, never fused: `add(p, mul(p, a, b), c)` (two roundings; in
/// F24 mode the product is quantised before the addition).
#[inline]
pub fn mad(p: Precision, a: f32, b: f32, c: f32) -> f32 {
    add(p, mul(p, a, b), c)
}

/// Four-component dot product with the fixed pairwise summation order
/// `(p0 + p1) + (p2 + p3)`, where `pi = mul(p, a[i], b[i])` and every `+`
/// is [`add`] (so each product and partial sum goes through the result step).
///
/// SIMD: `t = mul(a, b)`; `u = t + shuffle(t, [y, x, w, z])` (lanes hold
/// `p0+p1, p0+p1, p2+p3, p2+p3`); `r = u + shuffle(u, [z, w, x, y])`, with
/// the result step after each vector operation; every lane holds the same
/// bits (addition is commutative bitwise, NaN being canonical).
#[inline]
pub fn dp4(p: Precision, a: Vec4, b: Vec4) -> f32 {
    let t = [
        mul(p, a[0], b[0]),
        mul(p, a[1], b[1]),
        mul(p, a[2], b[2]),
        mul(p, a[3], b[3]),
    ];
    add(p, add(p, t[0], t[1]), add(p, t[2], t[3]))
}

/// Three-component dot product: [`dp4`] with the fourth product replaced by
/// `+0.0`, i.e. `(p0 + p1) + (p2 + 0.0)` (note `p2 + 0.0` turns a `-0`
/// product into `+0`). `a[3]` and `b[3]` are ignored (even NaN / inf).
#[inline]
pub fn dp3(p: Precision, a: Vec4, b: Vec4) -> f32 {
    let t = [mul(p, a[0], b[0]), mul(p, a[1], b[1]), mul(p, a[2], b[2])];
    add(p, add(p, t[0], t[1]), add(p, t[2], 0.0))
}

/// Homogeneous dot product: [`dp4`] with `a[3]` replaced by `1.0`, i.e.
/// `p3 = mul(p, 1.0, b[3])`.
#[inline]
pub fn dph(p: Precision, a: Vec4, b: Vec4) -> f32 {
    dp4(p, [a[0], a[1], a[2], 1.0], b)
}

/// Distance vector: `[1.0, mul(p, a[1], b[1]), a[2], b[3]]`.
///
/// The `z` and `w` components are plain copies (bits preserved, no flush or
/// quantisation in either mode).
#[inline]
pub fn dst(p: Precision, a: Vec4, b: Vec4) -> Vec4 {
    [1.0, mul(p, a[1], b[1]), a[2], b[3]]
}
