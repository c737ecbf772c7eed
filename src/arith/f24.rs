//! The float24 data path of [`Precision::F24`](super::Precision::F24).
//!
//! float24 has 1 sign bit, 7 exponent bits (bias 63) and 16 explicit mantissa
//! bits. In this crate float24 values are held in `f32` (every float24 value
//! is exactly representable). The value set V24 (see [`is_v24`]) is:
//!
//! * `+0` (there is no -0),
//! * ± float24 subnormals: non-zero multiples of 2^-78 below 2^-62,
//! * ± normals in `[2^-62, (2 - 2^-16) * 2^63]` whose f32 mantissa has its
//!   low 7 bits clear,
//! * ±inf and [`CANONICAL_NAN`].
//!
//! All functions here are integer-bit based (compares on `bits & 0x7FFF_FFFF`)
//! so a JIT can mirror them with `pand` / `pcmpgtd` / `blendvps` (SSE4.1) or
//! `and` / `cmhi` / `bsl` (NEON). Unsigned compares of absolute-value bits are
//! safe as signed 32-bit compares because the top bit is clear.

use super::nan::{CANONICAL_NAN, CANONICAL_NAN_BITS};

/// Smallest positive float24 normal, 2^-62.
pub const MIN_NORMAL: f32 = f32::from_bits(MIN_NORMAL_BITS);
/// `MIN_NORMAL.to_bits()`.
pub const MIN_NORMAL_BITS: u32 = 0x2080_0000;
/// Largest finite float24, `(2 - 2^-16) * 2^63`.
pub const MAX: f32 = f32::from_bits(0x5F7F_FF80);
/// 2^64: magnitudes at or above this are ±inf in float24.
pub const OVERFLOW: f32 = f32::from_bits(OVERFLOW_BITS);
/// `OVERFLOW.to_bits()`.
pub const OVERFLOW_BITS: u32 = 0x5F80_0000;
/// Spacing of float24 subnormals, 2^-78.
pub const SUBNORMAL_QUANTUM: f32 = f32::from_bits(0x1880_0000);
/// 2^78, the inverse of [`SUBNORMAL_QUANTUM`].
pub const SUBNORMAL_SCALE: f32 = f32::from_bits(0x6680_0000);
/// Largest float24 subnormal, `0xFFFF * 2^-78` (raw float24 `0x00FFFF`).
pub const LARGEST_SUBNORMAL: f32 = f32::from_bits(0x207F_FF00);
/// Mask keeping the sign, exponent and top 16 mantissa bits of an f32
/// (truncation of a normal value to float24).
pub const MANTISSA_MASK: u32 = 0xFFFF_FF80;

const ABS_MASK: u32 = 0x7FFF_FFFF;
const SIGN_MASK: u32 = 0x8000_0000;
const INF_BITS: u32 = 0x7F80_0000;

/// Truncates a value of magnitude below 2^-62 to a multiple of 2^-78
/// (toward zero); a zero result is `+0`.
///
/// `(((x * 2^78) as i32) as f32) * 2^-78`: both scalings are exact (powers of
/// two, no overflow or underflow), `|x * 2^78| < 2^16` so the truncating
/// conversion (`cvttps2dq` / `fcvtzs`) is exact and in range, and the
/// integer 0 converts to `+0`.
#[inline]
fn truncate_subnormal(x: f32) -> f32 {
    (((x * SUBNORMAL_SCALE) as i32) as f32) * SUBNORMAL_QUANTUM
}

/// A value entering the shader unit in F24 mode (input attribute, uniform,
/// initial temporary): truncation toward zero onto the float24 grid.
///
/// With `abs = bits & 0x7FFF_FFFF`, `sign = bits & 0x8000_0000`:
/// 1. `abs > 0x7F80_0000` (NaN) → [`CANONICAL_NAN`];
/// 2. else `abs >= 0x5F80_0000` (|x| ≥ 2^64, includes ±inf) → `sign | 0x7F80_0000`;
/// 3. else `abs >= 0x2080_0000` (|x| ≥ 2^-62) → `bits & 0xFFFF_FF80`;
/// 4. else → `(((x * 2^78) as i32) as f32) * 2^-78` (float24 subnormals are
///    kept; zero of either sign becomes `+0`).
///
/// The result is always in V24 and `load(load(x)) == load(x)`.
///
/// ```
/// use pica_jit::arith::f24;
/// assert_eq!(f24::load(f24::LARGEST_SUBNORMAL), f24::LARGEST_SUBNORMAL);
/// assert_eq!(f24::load(-0.0).to_bits(), 0);
/// assert_eq!(f24::load(1.0e20), f32::INFINITY);
/// ```
#[inline]
pub fn load(x: f32) -> f32 {
    let bits = x.to_bits();
    let abs = bits & ABS_MASK;
    if abs > INF_BITS {
        CANONICAL_NAN
    } else if abs >= OVERFLOW_BITS {
        f32::from_bits((bits & SIGN_MASK) | INF_BITS)
    } else if abs >= MIN_NORMAL_BITS {
        f32::from_bits(bits & MANTISSA_MASK)
    } else {
        truncate_subnormal(x)
    }
}

/// Input flushing of arithmetic instructions in F24 mode: `|x| < 2^-62`
/// (`(bits & 0x7FFF_FFFF) < 0x2080_0000`, includes ±0 and all float24
/// subnormals) → `+0.0`; everything else (NaN included) unchanged.
#[inline]
pub fn flush_input(x: f32) -> f32 {
    if x.to_bits() & ABS_MASK < MIN_NORMAL_BITS {
        0.0
    } else {
        x
    }
}

/// Rounds an f32 arithmetic result to float24 (F24 mode result step; also
/// applied to every product and partial sum of a dot product).
///
/// With `abs = bits & 0x7FFF_FFFF`, `sign = bits & 0x8000_0000`:
/// 1. `abs > 0x7F80_0000` (NaN) → [`CANONICAL_NAN`];
/// 2. else `abs >= 0x5F80_0000` (|r| ≥ 2^64, includes ±inf) → `sign | 0x7F80_0000`;
/// 3. else `abs < 0x2080_0000` (|r| < 2^-62, includes ±0) → `+0.0`;
/// 4. else → `bits & 0xFFFF_FF80` (truncate the mantissa to 16 bits).
///
/// The result is always in V24 (never -0, never a subnormal) and
/// `quantize_result` is idempotent.
#[inline]
pub fn quantize_result(r: f32) -> f32 {
    let bits = r.to_bits();
    let abs = bits & ABS_MASK;
    if abs > INF_BITS {
        CANONICAL_NAN
    } else if abs >= OVERFLOW_BITS {
        f32::from_bits((bits & SIGN_MASK) | INF_BITS)
    } else if abs < MIN_NORMAL_BITS {
        0.0
    } else {
        f32::from_bits(bits & MANTISSA_MASK)
    }
}

/// Whether `x` (by its bits) belongs to the float24 value set V24: `+0`,
/// [`CANONICAL_NAN`], ±inf, ± non-zero multiples of 2^-78 below 2^-62, or
/// ± values in `[2^-62, 2^64)` with the low 7 mantissa bits clear.
pub fn is_v24(x: f32) -> bool {
    let bits = x.to_bits();
    let abs = bits & ABS_MASK;
    if bits == 0 || bits == CANONICAL_NAN_BITS || abs == INF_BITS {
        true
    } else if abs == 0 || abs >= OVERFLOW_BITS {
        false // -0, a non-canonical NaN, or finite but >= 2^64
    } else if abs >= MIN_NORMAL_BITS {
        bits & !MANTISSA_MASK == 0
    } else {
        let scaled = x * SUBNORMAL_SCALE; // exact
        scaled == scaled.floor()
    }
}

/// Decodes a raw 24-bit float24 (bit 23 sign, bits 22..16 exponent with
/// bias 63, bits 15..0 mantissa; upper 8 bits of `raw` ignored) to its exact
/// f32 value.
///
/// * exponent 0: subnormal `±mantissa * 2^-78` (a zero mantissa gives ±0;
///   apply [`load`] to obtain a V24 value);
/// * exponent 127: ±inf if the mantissa is 0, otherwise [`CANONICAL_NAN`];
/// * otherwise `sign | (exponent + 64) << 23 | mantissa << 7`.
pub fn from_raw(raw: u32) -> f32 {
    let sign = (raw & 0x80_0000) << 8;
    let exp = (raw >> 16) & 0x7F;
    let mant = raw & 0xFFFF;
    match exp {
        0 => {
            let magnitude = mant as f32 * SUBNORMAL_QUANTUM;
            f32::from_bits(magnitude.to_bits() | sign)
        }
        0x7F if mant != 0 => CANONICAL_NAN,
        0x7F => f32::from_bits(sign | INF_BITS),
        _ => f32::from_bits(sign | ((exp + 64) << 23) | (mant << 7)),
    }
}
