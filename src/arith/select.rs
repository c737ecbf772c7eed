//! Selections and comparisons: `max`, `min`, `cmp`, `sge`, `slt`.
//!
//! These are identical in both precision modes and never flush inputs or
//! outputs: they return one of their operands bit-for-bit (NaN payloads and
//! subnormals included), or a boolean.

use crate::isa::CmpOp;

/// PICA `max`: `if a > b { a } else { b }` (x86 `maxps(a, b)` exactly).
///
/// `max(NaN, 0) = 0`, `max(0, NaN) = NaN`, `max(0, -inf) = 0`,
/// `max(0, +inf) = +inf`, `max(-inf, +inf) = +inf`, as measured on hardware
/// (aroulin's `fp-tests`, case 10). The 3dbrew table's `max(0, -inf) = -inf`
/// is deliberately not followed; see `docs/semantics.md`. The result is one of
/// the operands, bits preserved.
///
/// ```
/// assert_eq!(pica_jit::arith::max(f32::NAN, 0.0), 0.0);
/// assert_eq!(pica_jit::arith::max(0.0, f32::NEG_INFINITY).to_bits(), 0);
/// ```
#[inline]
pub fn max(a: f32, b: f32) -> f32 {
    if a > b { a } else { b }
}

/// PICA `min`: `if a < b { a } else { b }` (x86 `minps(a, b)` exactly).
///
/// `min(0, NaN) = NaN`, `min(NaN, 0) = 0`, `min(0, -inf) = -inf`,
/// `min(-inf, +inf) = -inf`. The result is one of the operands, bits
/// preserved.
#[inline]
pub fn min(a: f32, b: f32) -> f32 {
    if a < b { a } else { b }
}

/// `cmp` comparison: `Eq` `a == b`, `Ne` `a != b` (true if either is NaN),
/// `Lt`/`Le`/`Gt`/`Ge` ordered IEEE compares (false if either is NaN),
/// `True6`/`True7` always true. No flushing: a float24 subnormal compares
/// unequal to 0; `+0 == -0`.
#[inline]
pub fn compare(op: CmpOp, a: f32, b: f32) -> bool {
    match op {
        CmpOp::Eq => a == b,
        CmpOp::Ne => a != b,
        CmpOp::Lt => a < b,
        CmpOp::Le => a <= b,
        CmpOp::Gt => a > b,
        CmpOp::Ge => a >= b,
        CmpOp::True6 | CmpOp::True7 => true,
    }
}

/// `sge`: `if a >= b { 1.0 } else { 0.0 }` (ordered: NaN gives `0.0`).
#[inline]
pub fn sge(a: f32, b: f32) -> f32 {
    if a >= b { 1.0 } else { 0.0 }
}

/// `slt`: `if a < b { 1.0 } else { 0.0 }` (ordered: NaN gives `0.0`).
#[inline]
pub fn slt(a: f32, b: f32) -> f32 {
    if a < b { 1.0 } else { 0.0 }
}
