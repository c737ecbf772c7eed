//! The PICA canonical NaN, shared by both precisions and the float24 data path.

/// Bit pattern of [`CANONICAL_NAN`].
pub const CANONICAL_NAN_BITS: u32 = 0x7FC0_0000;

/// The only NaN an arithmetic instruction ever produces (bits `0x7FC0_0000`:
/// positive, quiet, zero payload).
pub const CANONICAL_NAN: f32 = f32::from_bits(CANONICAL_NAN_BITS);

/// Replaces any NaN by [`CANONICAL_NAN`]; other values keep their bits.
///
/// SIMD: `nan = cmpunord(x, x)` (`x != x`), `blend(x, CANONICAL_NAN, nan)`.
#[inline]
pub fn canonicalize(x: f32) -> f32 {
    if x.is_nan() { CANONICAL_NAN } else { x }
}
