//! PICA200 shader arithmetic: the single source of truth for every
//! floating-point semantic decision.
//!
//! The interpreter calls these scalar functions directly; the x86-64 and
//! AArch64 JIT backends mirror them lane-by-lane with SSE4.1 / NEON
//! sequences. Every function is built only from correctly rounded IEEE
//! binary32 operations (add, sub, mul, div, sqrt, compare, floor), f32 <-> i32
//! conversions and integer bit operations, so results are bit-identical on
//! every host:
//!
//! * no libm calls (`exp2`, `ln`, `powf`, ...), no fused multiply-add;
//! * every NaN an arithmetic instruction produces is [`CANONICAL_NAN`]
//!   (Rust, x86 and ARM disagree on NaN payload propagation, so payloads are
//!   never observable);
//! * data-dependent decisions are written as selects (`if c { a } else { b }`
//!   over already-computed values) that map to `blendvps` / `bsl`.
//!
//! Each function's doc comment spells out its algorithm step by step. The
//! same rules are summarised in `docs/semantics.md` (section 6, "Arithmetic").
//!
//! # Precision modes
//!
//! [`Precision::F32`] is IEEE binary32 (round to nearest even, subnormals
//! kept) plus the PICA special cases (`inf * 0 = +0`, `rcp(±0) = +inf`, the
//! asymmetric `min` / `max`, ...). [`Precision::F24`] additionally models the
//! hardware's float24 data path (see [`f24`]): arithmetic inputs below 2^-62
//! are flushed to +0 and results are truncated to float24.
//!
//! ```
//! use pica_jit::arith::{self, Precision};
//! assert_eq!(arith::max(f32::NAN, 0.0), 0.0);
//! assert!(arith::max(0.0, f32::NAN).is_nan());
//! assert_eq!(arith::mul(Precision::F32, f32::INFINITY, 0.0).to_bits(), 0);
//! assert_eq!(arith::rcp(Precision::F24, -0.0), f32::INFINITY);
//! ```

mod exp_log;
pub mod f24;
mod nan;
mod precision;
mod select;
mod special;
mod vector;

#[cfg(test)]
mod tests;

pub use exp_log::{EX2_COEFFS, EX2_INPUT_MAX, EX2_INPUT_MIN, LG2_COEFFS, LG2_SQRT2, ex2, lg2};
pub use nan::{CANONICAL_NAN, CANONICAL_NAN_BITS, canonicalize};
pub use precision::{Precision, arith_input, arith_result, load, negate};
pub use select::{compare, max, min, sge, slt};
pub use special::{LITP_CLAMP, flr, litp, mova, rcp, rsq};
pub use vector::{add, dp3, dp4, dph, dst, mad, mul, mul_rule};

/// A four-component shader register value (`x`, `y`, `z`, `w`).
pub type Vec4 = [f32; 4];
