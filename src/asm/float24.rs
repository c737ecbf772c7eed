//! picasso's float24 encoding of constants: the `f32` value's mantissa is
//! truncated to 16 bits (not rounded), so `0.1` is stored as `0x3C9999`.

use crate::shbin::f24_to_f32;

/// The float24 word picasso stores for `value`.
///
/// Zero and f32 subnormals become (signed) zero; values too large become
/// infinity, too small zero; NaN keeps its sign and becomes `0x7FC000`.
///
/// ```
/// use pica_jit::asm::picasso_f24;
/// assert_eq!(picasso_f24(1.0), 0x3F_0000);
/// assert_eq!(picasso_f24(0.1), 0x3B_9999);
/// assert_eq!(picasso_f24(-2.0), 0xC0_0000);
/// ```
pub fn picasso_f24(value: f32) -> u32 {
    let bits = value.to_bits();
    let sign = (bits >> 31) << 23;
    let exponent = ((bits >> 23) & 0xFF) as i32;
    let mantissa = (bits & 0x7F_FFFF) >> 7;
    if value.is_nan() {
        return sign | 0x7F_C000;
    }
    if exponent == 0xFF {
        return sign | 0x7F_0000;
    }
    if exponent == 0 {
        return sign;
    }
    let e = exponent - 127 + 63;
    if e <= 0 {
        sign
    } else if e >= 0x7F {
        sign | 0x7F_0000
    } else {
        sign | ((e as u32) << 16) | mantissa
    }
}

/// The `f32` holding exactly the value picasso stores for `value` (what the
/// SHBIN writer then encodes without loss).
pub(crate) fn picasso_f32(value: f32) -> f32 {
    f24_to_f32(picasso_f24(value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shbin::f32_to_f24;

    #[test]
    fn truncates_like_picasso() {
        // 0.3 and 1/255 as picasso stores them (seen in its output).
        assert_eq!(picasso_f24(0.1), 0x3B_9999);
        assert!((picasso_f32(0.3) - 0.29999924).abs() < 1e-8);
        for v in [
            0.0f32,
            -0.0,
            1.0,
            0.1,
            0.3,
            -7.25,
            1.0 / 255.0,
            1e30,
            -1e-30,
        ] {
            assert_eq!(f32_to_f24(picasso_f32(v)), picasso_f24(v), "{v}");
        }
    }
}
