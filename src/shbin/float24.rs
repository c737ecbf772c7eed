//! Conversions between `f32` and the PICA200's 24-bit float format.
//!
//! A float24 is stored in the low 24 bits of a `u32`:
//!
//! | bits  | field                      |
//! |-------|----------------------------|
//! | 23    | sign                       |
//! | 22–16 | exponent, 7 bits, bias 63  |
//! | 15–0  | mantissa, 16 bits          |
//!
//! Exponent 0 holds zero (mantissa 0) and subnormals (`m × 2^-78`);
//! exponent `0x7F` holds infinities (mantissa 0) and NaNs.

/// Mask of the bits a float24 occupies.
const F24_MASK: u32 = 0x00FF_FFFF;
const F24_SIGN: u32 = 0x80_0000;
const F24_EXP_MAX: u32 = 0x7F;
/// Float24 positive infinity.
const F24_INF: u32 = 0x7F_0000;
/// The NaN [`f32_to_f24`] produces (before the sign bit is added).
const F24_NAN: u32 = 0x7F_C000;

/// Difference between the f32 exponent bias (127) and the float24 bias (63).
const BIAS_DIFF: u32 = 127 - 63;

/// Decodes the float24 in the low 24 bits of `bits` (the high 8 bits are
/// ignored) into the `f32` with exactly the same value.
///
/// Every float24 value is exactly representable as an `f32`, so this is
/// lossless:
///
/// * exponent 1–0x7E: `±(1 + m/2^16) × 2^(e-63)`;
/// * exponent 0: `±m × 2^-78` (zero when `m == 0`, a float24 subnormal otherwise);
/// * exponent 0x7F, mantissa 0: `±∞`;
/// * exponent 0x7F, mantissa ≠ 0: a NaN that keeps the sign and has the 16
///   mantissa bits at the top of the `f32` mantissa (so [`f32::to_bits`] shows
///   the payload).
///
/// # Examples
///
/// ```
/// use pica_jit::shbin::f24_to_f32;
///
/// assert_eq!(f24_to_f32(0x3F_0000), 1.0);
/// assert_eq!(f24_to_f32(0xBF_8000), -1.5);
/// assert_eq!(f24_to_f32(0x00_0001), 2f32.powi(-78)); // smallest subnormal
/// assert_eq!(f24_to_f32(0x7F_0000), f32::INFINITY);
/// assert!(f24_to_f32(0x7F_8000).is_nan());
/// ```
pub fn f24_to_f32(bits: u32) -> f32 {
    let bits = bits & F24_MASK;
    let sign = (bits & F24_SIGN) << 8;
    let exponent = (bits >> 16) & F24_EXP_MAX;
    let mantissa = bits & 0xFFFF;
    let magnitude = match exponent {
        0 => {
            // m × 2^-78; both factors are exact in f32 and so is the product
            // (it lies between 2^-78 and 2^-62, far inside the normal range).
            let scale = f32::from_bits((127 - 78) << 23);
            (mantissa as f32 * scale).to_bits()
        }
        // Infinity when the mantissa is 0, a NaN keeping the payload otherwise.
        F24_EXP_MAX => (0xFF << 23) | (mantissa << 7),
        _ => ((exponent + BIAS_DIFF) << 23) | (mantissa << 7),
    };
    f32::from_bits(sign | magnitude)
}

/// Encodes an `f32` as a float24 (returned in the low 24 bits), rounding
/// toward zero.
///
/// The rules:
///
/// * NaN becomes `0x7FC000` with the input's sign bit (a float24 NaN:
///   exponent all ones, top mantissa bits set); NaN payloads are not kept.
/// * `±∞`, and every finite value with magnitude `>= 2^64`, becomes `±∞`
///   (`0x7F0000` / `0xFF0000`).
/// * Other values are **truncated** toward zero: the low 7 of the 23 `f32`
///   mantissa bits are dropped, never rounded.
/// * Magnitudes below `2^-62` (the smallest normal float24) become float24
///   subnormals `m × 2^-78`, again truncating; magnitudes below `2^-78`
///   become zero with the input's sign.
///
/// Consequently every value [`f24_to_f32`] returns, except NaNs, encodes back
/// to exactly the bits it came from.
///
/// # Examples
///
/// ```
/// use pica_jit::shbin::f32_to_f24;
///
/// assert_eq!(f32_to_f24(1.0), 0x3F_0000);
/// assert_eq!(f32_to_f24(-1.5), 0xBF_8000);
/// assert_eq!(f32_to_f24(1.0 + 2f32.powi(-17)), 0x3F_0000); // truncated
/// assert_eq!(f32_to_f24(2f32.powi(64)), 0x7F_0000); // overflows to +inf
/// assert_eq!(f32_to_f24(f32::NAN), 0x7F_C000);
/// ```
pub fn f32_to_f24(x: f32) -> u32 {
    let bits = x.to_bits();
    let sign = (bits >> 8) & F24_SIGN;
    if x.is_nan() {
        return sign | F24_NAN;
    }
    let exponent = (bits >> 23) & 0xFF;
    let mantissa = bits & 0x7F_FFFF;
    // Float24 biased exponent = f32 biased exponent - 64.
    if exponent >= F24_EXP_MAX + BIAS_DIFF {
        // |x| >= 2^64, including infinity.
        return sign | F24_INF;
    }
    if exponent > BIAS_DIFF {
        return sign | ((exponent - BIAS_DIFF) << 16) | (mantissa >> 7);
    }
    if exponent == 0 {
        // Zero or an f32 subnormal (< 2^-126): below the float24 range.
        return sign;
    }
    // |x| = (2^23 + M) × 2^(E-150) with E in 1..=64; the float24 subnormal
    // mantissa is floor(|x| / 2^-78) = (2^23 + M) >> (72 - E).
    let shift = 72 - exponent;
    let subnormal = (mantissa | 0x80_0000).checked_shr(shift).unwrap_or(0);
    sign | subnormal
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pow2(e: i32) -> f32 {
        2f32.powi(e)
    }

    #[test]
    fn decode_known_patterns() {
        assert_eq!(f24_to_f32(0x3F_0000), 1.0);
        assert_eq!(f24_to_f32(0xBF_0000), -1.0);
        assert_eq!(f24_to_f32(0x40_0000), 2.0);
        assert_eq!(f24_to_f32(0x3E_0000), 0.5);
        assert_eq!(f24_to_f32(0xBE_0000), -0.5);
        assert_eq!(f24_to_f32(0x3F_8000), 1.5);
        assert_eq!(f24_to_f32(0x3F_0001), 1.0 + pow2(-16));
        assert_eq!(f24_to_f32(0x00_0000).to_bits(), 0.0f32.to_bits());
        assert_eq!(f24_to_f32(0x80_0000).to_bits(), (-0.0f32).to_bits());
        // High byte is ignored.
        assert_eq!(f24_to_f32(0xAB3F_0000), 1.0);
    }

    #[test]
    fn decode_infinities() {
        assert_eq!(f24_to_f32(0x7F_0000), f32::INFINITY);
        assert_eq!(f24_to_f32(0xFF_0000), f32::NEG_INFINITY);
    }

    #[test]
    fn decode_subnormals_and_extremes() {
        assert_eq!(f24_to_f32(0x00_0001), pow2(-78));
        assert_eq!(f24_to_f32(0x80_0001), -pow2(-78));
        assert_eq!(f24_to_f32(0x00_FFFF), 65535.0 * pow2(-78));
        assert_eq!(f24_to_f32(0x00_FFFF), pow2(-62) - pow2(-78));
        assert_eq!(f24_to_f32(0x00_8000), pow2(-63));
        assert_eq!(f24_to_f32(0x01_0000), pow2(-62));
        assert_eq!(f24_to_f32(0x7E_FFFF), (2.0 - pow2(-16)) * pow2(63));
        assert_eq!(f24_to_f32(0xFE_FFFF), -(2.0 - pow2(-16)) * pow2(63));
    }

    #[test]
    fn decode_nans_keep_sign_and_payload() {
        let n = f24_to_f32(0x7F_8000);
        assert!(n.is_nan());
        assert_eq!(n.to_bits(), 0x7FC0_0000);
        let n = f24_to_f32(0xFF_0001);
        assert!(n.is_nan());
        assert_eq!(n.to_bits(), 0xFF80_0080);
        let n = f24_to_f32(0x7F_FFFF);
        assert_eq!(n.to_bits(), 0x7FFF_FF80);
        let n = f24_to_f32(0x7F_C000);
        assert_eq!(n.to_bits(), 0x7FE0_0000);
    }

    #[test]
    fn encode_exact_values() {
        assert_eq!(f32_to_f24(1.0), 0x3F_0000);
        assert_eq!(f32_to_f24(-1.0), 0xBF_0000);
        assert_eq!(f32_to_f24(2.0), 0x40_0000);
        assert_eq!(f32_to_f24(0.5), 0x3E_0000);
        assert_eq!(f32_to_f24(-1.5), 0xBF_8000);
        assert_eq!(f32_to_f24(0.0), 0x00_0000);
        assert_eq!(f32_to_f24(-0.0), 0x80_0000);
        assert_eq!(f32_to_f24(pow2(-62)), 0x01_0000);
        assert_eq!(f32_to_f24((2.0 - pow2(-16)) * pow2(63)), 0x7E_FFFF);
    }

    #[test]
    fn encode_truncates_toward_zero() {
        assert_eq!(f32_to_f24(1.0 + pow2(-17)), 0x3F_0000);
        assert_eq!(f32_to_f24(1.0 + pow2(-16)), 0x3F_0001);
        assert_eq!(f32_to_f24(1.0 + pow2(-16) + pow2(-17)), 0x3F_0001);
        assert_eq!(f32_to_f24(-(1.0 + pow2(-17))), 0xBF_0000);
        // Largest f32 below 2: all 23 mantissa bits set; keeps the top 16.
        assert_eq!(f32_to_f24(f32::from_bits(0x3FFF_FFFF)), 0x3F_FFFF);
        // 0.1 = 0x3DCCCCCD: mantissa 0x4CCCCD >> 7 = 0x9999, exponent 123-64.
        assert_eq!(f32_to_f24(0.1), 0x3B_9999);
        // Largest finite value below 2^64 stays finite.
        assert_eq!(f32_to_f24(f32::from_bits(0x5F7F_FFFF)), 0x7E_FFFF);
    }

    #[test]
    fn encode_overflow_to_infinity() {
        assert_eq!(f32_to_f24(pow2(64)), 0x7F_0000);
        assert_eq!(f32_to_f24(-pow2(64)), 0xFF_0000);
        assert_eq!(f32_to_f24(f32::MAX), 0x7F_0000);
        assert_eq!(f32_to_f24(f32::MIN), 0xFF_0000);
        assert_eq!(f32_to_f24(f32::INFINITY), 0x7F_0000);
        assert_eq!(f32_to_f24(f32::NEG_INFINITY), 0xFF_0000);
    }

    #[test]
    fn encode_underflow_and_subnormals() {
        assert_eq!(f32_to_f24(pow2(-79)), 0x00_0000);
        assert_eq!(f32_to_f24(-pow2(-79)), 0x80_0000);
        assert_eq!(f32_to_f24(pow2(-78) * 1.999), 0x00_0001);
        assert_eq!(f32_to_f24(pow2(-78)), 0x00_0001);
        assert_eq!(f32_to_f24(-pow2(-78)), 0x80_0001);
        assert_eq!(f32_to_f24(pow2(-63)), 0x00_8000);
        assert_eq!(f32_to_f24(pow2(-62) - pow2(-78)), 0x00_FFFF);
        // Just below 2^-62: truncates to the largest subnormal.
        assert_eq!(f32_to_f24(f32::from_bits(0x207F_FFFF)), 0x00_FFFF);
        // 3 × 2^-80 = 0.75 × 2^-78 truncates to zero; 5 × 2^-80 to 1.
        assert_eq!(f32_to_f24(3.0 * pow2(-80)), 0x00_0000);
        assert_eq!(f32_to_f24(5.0 * pow2(-80)), 0x00_0001);
        assert_eq!(f32_to_f24(f32::MIN_POSITIVE), 0x00_0000);
        assert_eq!(f32_to_f24(f32::from_bits(1)), 0x00_0000);
        assert_eq!(f32_to_f24(-f32::from_bits(1)), 0x80_0000);
    }

    #[test]
    fn encode_nan() {
        assert_eq!(f32_to_f24(f32::NAN), 0x7F_C000);
        assert_eq!(f32_to_f24(-f32::NAN), 0xFF_C000);
        assert_eq!(f32_to_f24(f32::from_bits(0x7F80_0001)), 0x7F_C000);
        assert_eq!(f32_to_f24(f32::from_bits(0xFFFF_FFFF)), 0xFF_C000);
        // The encoded NaN decodes to a NaN.
        assert!(f24_to_f32(0x7F_C000).is_nan());
        assert!(f24_to_f32(0xFF_C000).is_nan());
    }

    /// Every float24 pattern survives decode → encode (NaNs stay NaN).
    /// Exhaustive over all 2^24 patterns (about 0.5 s in a debug build).
    #[test]
    fn round_trip_all_patterns() {
        for b in 0..=F24_MASK {
            let f = f24_to_f32(b);
            let exponent = (b >> 16) & 0x7F;
            if exponent == 0x7F && b & 0xFFFF != 0 {
                assert!(f.is_nan(), "{b:#08x} must decode to NaN");
                assert_eq!(f32_to_f24(f), (b & F24_SIGN) | F24_NAN);
            } else {
                assert!(!f.is_nan(), "{b:#08x}");
                assert_eq!(f32_to_f24(f), b, "{b:#08x} -> {f:e}");
            }
        }
    }

    #[test]
    fn decode_is_monotonic_over_positive_non_nan_patterns() {
        // Positive patterns 0..=0x7F0000 are ordered like their values.
        let mut prev = f24_to_f32(0);
        for b in (1..F24_INF - 1).step_by(97).chain([F24_INF - 1, F24_INF]) {
            let f = f24_to_f32(b);
            assert!(f > prev, "{b:#08x}");
            prev = f;
        }
    }
}
