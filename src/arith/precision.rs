//! Precision modes, NaN canonicalisation and the common input / result steps
//! shared by every arithmetic instruction.

use super::f24;
use super::nan::canonicalize;

/// Arithmetic precision mode. The default is the hardware-faithful `F24`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Precision {
    /// Hardware-faithful float24 data path: values are float24 numbers held
    /// in `f32` (see [`f24`]). Arithmetic flushes inputs below 2^-62 to +0 and
    /// truncates results to float24; there is no -0.
    #[default]
    F24,
    /// IEEE binary32 (round to nearest even, subnormals kept, no flushing)
    /// plus the PICA special cases. Fastest; what most emulators do.
    F32,
}

/// A value entering the shader unit (vertex input attribute, float uniform,
/// initial temporary).
///
/// * `F32`: identity, bits preserved (NaN payloads included).
/// * `F24`: [`f24::load`] (truncation to float24, keeping float24
///   subnormals).
#[inline]
pub fn load(p: Precision, x: f32) -> f32 {
    match p {
        Precision::F24 => f24::load(x),
        Precision::F32 => x,
    }
}

/// Source-operand negation (the `-` source modifier).
///
/// * `F32`: flip the sign bit (`bits ^ 0x8000_0000`); NaN bits are
///   preserved apart from the sign, `-(+0) = -0`.
/// * `F24`: `canonicalize(0.0 - x)`, an IEEE subtraction: `+0` stays `+0`
///   (no -0 in float24), subnormals and normals are negated exactly, NaN is
///   [`CANONICAL_NAN`](super::CANONICAL_NAN) (for values in V24 the canonicalisation is a no-op:
///   `0 - NaN` returns the quiet NaN operand, and the only NaN in V24 is
///   the canonical one; it only matters for out-of-range inputs, whose NaN
///   payload propagation differs between hosts).
#[inline]
pub fn negate(p: Precision, x: f32) -> f32 {
    match p {
        Precision::F24 => canonicalize(0.0 - x),
        Precision::F32 => f32::from_bits(x.to_bits() ^ 0x8000_0000),
    }
}

/// The input step of every arithmetic instruction (add, mul, mad, dp*,
/// dst.y, rcp, rsq, ex2, lg2, flr), applied to each source value.
///
/// * `F32`: identity.
/// * `F24`: [`f24::flush_input`] (|x| < 2^-62 becomes +0).
#[inline]
pub fn arith_input(p: Precision, x: f32) -> f32 {
    match p {
        Precision::F24 => f24::flush_input(x),
        Precision::F32 => x,
    }
}

/// The result step of every arithmetic instruction, and in dot products of
/// every product and every partial sum.
///
/// * `F32`: [`canonicalize`] (NaN becomes [`CANONICAL_NAN`](super::CANONICAL_NAN)).
/// * `F24`: [`f24::quantize_result`] (NaN canonicalised, overflow to ±inf,
///   |r| < 2^-62 becomes +0, truncation to 16 mantissa bits).
#[inline]
pub fn arith_result(p: Precision, r: f32) -> f32 {
    match p {
        Precision::F24 => f24::quantize_result(r),
        Precision::F32 => canonicalize(r),
    }
}
