//! Register contents that exercise the arithmetic's special cases.

use super::entropy::Entropy;
use crate::arith::Vec4;

const SIGN: u32 = 0x8000_0000;

fn signed(e: &mut impl Entropy, bits: u32) -> f32 {
    f32::from_bits(if e.flip() { bits | SIGN } else { bits })
}

/// `signed!(e, expr)` with `expr` (which draws from `e` too) evaluated first.
macro_rules! signed {
    ($e:ident, $bits:expr $(,)?) => {{
        let bits: u32 = $bits;
        signed($e, bits)
    }};
}

/// A float from a distribution dominated by special values:
/// ±0, ±inf, quiet and signalling NaNs with payloads (both signs), the canonical
/// NaN, f32 subnormals, float24 subnormals, values around 2^-62 (the float24
/// flush threshold), tiny and huge normals (≥ 2^64, near `f32::MAX`), values around
/// 2^64 and the float24 maximum, around ±2^31 (`mova` saturation), small exact
/// integers and fractions, address-like integers, values with the low 7 mantissa
/// bits set (float24 truncation), `litp`/`ex2`/`lg2` boundaries, moderate normals
/// and raw random bits. Exhausted entropy gives `+0.0`.
pub(crate) fn interesting_f32(e: &mut impl Entropy) -> f32 {
    match e.below(44) {
        0 => 0.0,
        1 => -0.0,
        2 => 1.0,
        3..=6 => e.range(-8, 8) as f32,
        7 | 8 => e.range(-64, 64) as f32 / 8.0,
        9 => signed!(e, 0x7F80_0000),
        // Quiet NaN with a payload.
        10 => signed!(e, 0x7FC0_0000 | (e.bits() & 0x003F_FFFF)),
        // Signalling NaN: quiet bit clear, payload non-zero.
        11 => signed!(e, 0x7F80_0000 | (e.bits() & 0x003F_FFFF).max(1)),
        12 => signed!(e, 0x7FC0_0000),
        // f32 subnormal (non-zero).
        13 => signed!(e, (e.bits() & 0x007F_FFFF).max(1)),
        // float24 subnormal: k * 2^-78.
        14 => {
            let k = e.range(1, 0xFFFF) as f32;
            let v = k * f32::from_bits(0x1880_0000);
            if e.flip() { -v } else { v }
        }
        // Around 2^-62 (0x2080_0000), both sides.
        15 => signed!(e, (0x2080_0000i64 + e.range(-400, 400)) as u32),
        // Tiny normals.
        16 => signed!(
            e,
            ((e.range(1, 64) as u32) << 23) | (e.bits() & 0x007F_FFFF)
        ),
        // Huge: >= 2^64.
        17 => signed!(
            e,
            ((e.range(191, 254) as u32) << 23) | (e.bits() & 0x007F_FFFF)
        ),
        18 => signed!(e, 0x7F7F_FFFF - e.below(64)),
        // Around 2^64 (float24 overflow) and the float24 maximum.
        19 => signed!(e, (0x5F80_0000i64 + e.range(-300, 300)) as u32),
        // Around 2^31 (mova saturation).
        20 => signed!(e, (0x4F00_0000i64 + e.range(-4, 4)) as u32),
        // Address-like integers (relative addressing, loop-ish values).
        21 => e.range(-260, 260) as f32,
        // Moderate values with the low 7 mantissa bits set.
        22 => signed!(
            e,
            ((e.range(110, 140) as u32) << 23) | (e.bits() & 0x007F_FF80) | e.below(128).max(1),
        ),
        // litp clamps.
        23 => e.pick(&[127.996_09, -127.996_09, 128.0, -128.0, 127.99, 127.997]),
        // ex2 domain edges.
        24 => {
            if e.flip() {
                e.pick(&[
                    -160.0, 129.0, -149.0, 128.0, -126.0, 127.0, -150.0, -161.5, 0.5,
                ])
            } else {
                e.range(-1700, 1400) as f32 / 10.0
            }
        }
        // Near 1 and near sqrt(2) (lg2's reduction).
        25 => {
            let base: u32 = if e.flip() { 0x3F80_0000 } else { 0x3FB5_04F3 };
            f32::from_bits((base as i64 + e.range(-64, 64)) as u32)
        }
        // Moderate normals.
        26..=33 => signed!(
            e,
            ((e.range(100, 154) as u32) << 23) | (e.bits() & 0x007F_FFFF)
        ),
        // Anything.
        _ => f32::from_bits(e.bits()),
    }
}

/// Four lanes, each either from `palette` or a fresh [`interesting_f32`].
pub(crate) fn vec4_from(e: &mut impl Entropy, palette: &[f32]) -> Vec4 {
    std::array::from_fn(|_| {
        if palette.is_empty() || e.below(4) == 0 {
            interesting_f32(e)
        } else {
            palette[e.below(palette.len() as u32) as usize]
        }
    })
}

/// An address-register value: mostly small (around the −128..=127 window and
/// the 96 constants), sometimes extreme.
pub(crate) fn address_value(e: &mut impl Entropy) -> i32 {
    match e.below(12) {
        0..=6 => e.range(-140, 140) as i32,
        7 => e.pick(&[127, 128, -128, -129, 95, 96, -96, 255, 256, -1]),
        8 => e.pick(&[i32::MIN, i32::MAX, i32::MIN + 1, i32::MAX - 1]),
        9 => e.range(-70_000, 70_000) as i32,
        _ => e.bits() as i32,
    }
}
