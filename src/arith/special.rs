//! `rcp`, `rsq`, `flr`, `mova` and `litp`.

use super::Vec4;
use super::precision::{Precision, arith_input, arith_result};
use super::select::{max, min};

/// Reciprocal.
///
/// 1. `x = arith_input(p, x)` (F24: flush < 2^-62 to +0);
/// 2. `r = if x == 0.0 { +inf } else { 1.0 / x }` (correctly rounded IEEE
///    division; `x == 0.0` is true for both zeros);
/// 3. `arith_result(p, r)`.
///
/// `rcp(±0) = +inf`, `rcp(+inf) = +0`, `rcp(-inf) = -0` (F32) / `+0` (F24),
/// `rcp(NaN) = CANONICAL_NAN`.
#[inline]
pub fn rcp(p: Precision, x: f32) -> f32 {
    let x = arith_input(p, x);
    let r = if x == 0.0 { f32::INFINITY } else { 1.0 / x };
    arith_result(p, r)
}

/// Reciprocal square root, two roundings (never a fused/estimate sequence).
///
/// 1. `x = arith_input(p, x)`;
/// 2. `r = if x == 0.0 { +inf } else { 1.0 / sqrt(x) }` (IEEE `sqrtss` /
///    `fsqrt`, then IEEE division);
/// 3. `arith_result(p, r)`.
///
/// `rsq(±0) = +inf`, `rsq(-2) = NaN`, `rsq(+inf) = +0`, `rsq(-inf) = NaN`,
/// all NaN results are [`CANONICAL_NAN`](super::CANONICAL_NAN).
#[inline]
pub fn rsq(p: Precision, x: f32) -> f32 {
    let x = arith_input(p, x);
    let r = if x == 0.0 {
        f32::INFINITY
    } else {
        1.0 / x.sqrt()
    };
    arith_result(p, r)
}

/// Floor (round toward -inf): `arith_result(p, floor(arith_input(p, x)))`,
/// with IEEE floor (`roundps` mode 1 / `frintm`).
///
/// `flr(-0.5) = -1.0`, `flr(2.5) = 2.0`; `flr(-0.0) = -0.0` in F32 but `+0`
/// in F24 (the input flush and the result step both map -0 to +0).
#[inline]
pub fn flr(p: Precision, x: f32) -> f32 {
    arith_result(p, arith_input(p, x).floor())
}

/// `mova` conversion of one component to an address-register value:
/// truncation toward zero, saturating, NaN → 0 (identical in both modes).
///
/// 1. `x` NaN → `0`;
/// 2. `x >= 2^31` (includes +inf) → `i32::MAX`;
/// 3. `x <= -2^31` (includes -inf) → `i32::MIN`;
/// 4. otherwise truncate toward zero.
///
/// This equals Rust's `x as i32`. SIMD: `t = cvttps2dq(x)` (gives
/// `0x8000_0000` for NaN and out-of-range), then
/// `blend(t, i32::MAX, x >= 2^31)` and `blend(t, 0, x != x)`; on NEON
/// `fcvtzs` already saturates and maps NaN to 0.
#[inline]
pub fn mova(x: f32) -> i32 {
    const TWO_POW_31: f32 = 2_147_483_648.0;
    if x.is_nan() {
        0
    } else if x >= TWO_POW_31 {
        i32::MAX
    } else if x <= -TWO_POW_31 {
        i32::MIN
    } else {
        x as i32 // |x| < 2^31: plain truncation toward zero
    }
}

/// The `y` clamp bound of [`litp`]: `127.99609375 = 128 - 2^-8`.
pub const LITP_CLAMP: f32 = 128.0 - 1.0 / 256.0;

/// `litp` (partial lighting): returns the result vector and the new
/// condition flags `[cmp.x, cmp.y]`, using the PICA [`max`] / [`min`]:
///
/// * `x = max(a.x, 0.0)` (NaN → 0),
/// * `y = max(min(a.y, 127.99609375), -127.99609375)` (NaN → 127.99609375),
/// * `z = 0.0`,
/// * `w = max(a.w, 0.0)` (NaN → 0),
/// * flags `[a.x >= 0.0, a.w >= 0.0]` (false for NaN).
///
/// No flushing in either mode (a positive subnormal passes unchanged).
#[inline]
pub fn litp(a: Vec4) -> (Vec4, [bool; 2]) {
    // Opaque bounds: with a constant (never-NaN) operand LLVM may lower the
    // selects to AArch64 `fmaxnm`/`fminnm`, which quiet a signalling NaN instead
    // of returning the bound, so optimised builds would disagree with the rule.
    let [zero, clamp, neg_clamp] = std::hint::black_box([0.0f32, LITP_CLAMP, -LITP_CLAMP]);
    let r = [
        max(a[0], zero),
        max(min(a[1], clamp), neg_clamp),
        0.0,
        max(a[3], zero),
    ];
    (r, [a[0] >= 0.0, a[3] >= 0.0])
}
