//! The constant pool near the start of every compiled shader (16-byte vectors
//! addressed as `[x23, #offset]`), and the constants kept in registers.
//!
//! The first [`PINNED`] entries are loaded into `v16..v27` by `->dispatch`
//! (every path into compiled code from outside goes through it, and those
//! registers are caller-saved, so nothing else has to preserve them). The
//! others are loaded where they are needed. Swizzle index vectors for `tbl`
//! follow the fixed constants (see [`super::Emitter::swizzle_offset`]).

use super::Asm;
use crate::arith::{
    EX2_COEFFS, EX2_INPUT_MAX, EX2_INPUT_MIN, LG2_COEFFS, LG2_SQRT2, LITP_CLAMP, f24,
};
use dynasmrt::{DynasmApi, DynasmLabelApi, dynasm};

/// Constants of the pool, in pool order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum K {
    // Pinned in v16..v27 (see `reg`).
    SignMask,
    AbsMask,
    Ones,
    Inf,
    NegInf,
    CanonNan,
    F24MantMask,
    F24MinNormal,
    F24Overflow,
    F24SubScale,
    F24SubQuantum,
    Zero,
    // Loaded on use.
    Half,
    LitpMax,
    LitpMin,
    Ex2Min,
    Ex2Max,
    Ex2C0,
    Ex2C1,
    Ex2C2,
    Ex2C3,
    Ex2C4,
    Ex2C5,
    Ex2C6,
    F32MinNormal,
    Two23,
    Mant23,
    Sqrt2,
    Lg2C0,
    Lg2C1,
    Lg2C2,
    Lg2C3,
}

/// How many constants (from the start of the pool) live in `v16..`.
pub(super) const PINNED: usize = 12;

/// Number of fixed constants.
pub(super) const COUNT: usize = K::Lg2C3 as usize + 1;

/// Bytes taken by the fixed constants.
pub(super) const BYTES: u32 = COUNT as u32 * 16;

impl K {
    /// Byte offset in the pool.
    pub fn offset(self) -> u32 {
        self as u32 * 16
    }
}

fn splat(bits: u32) -> [u32; 4] {
    [bits; 4]
}

/// The value of every constant, in pool order.
fn values() -> [[u32; 4]; COUNT] {
    let c = EX2_COEFFS.map(f32::to_bits);
    let l = LG2_COEFFS.map(f32::to_bits);
    [
        splat(0x8000_0000),
        splat(0x7FFF_FFFF),
        splat(1.0f32.to_bits()),
        splat(0x7F80_0000),
        splat(0xFF80_0000),
        splat(0x7FC0_0000),
        splat(f24::MANTISSA_MASK),
        splat(f24::MIN_NORMAL_BITS),
        splat(f24::OVERFLOW_BITS),
        splat(f24::SUBNORMAL_SCALE.to_bits()),
        splat(f24::SUBNORMAL_QUANTUM.to_bits()),
        splat(0),
        splat(0.5f32.to_bits()),
        splat(LITP_CLAMP.to_bits()),
        [0, (-LITP_CLAMP).to_bits(), 0, 0],
        splat(EX2_INPUT_MIN.to_bits()),
        splat(EX2_INPUT_MAX.to_bits()),
        splat(c[0]),
        splat(c[1]),
        splat(c[2]),
        splat(c[3]),
        splat(c[4]),
        splat(c[5]),
        splat(c[6]),
        splat(0x0080_0000),
        splat(0x4B00_0000),
        splat(0x007F_FFFF),
        splat(LG2_SQRT2.to_bits()),
        splat(l[0]),
        splat(l[1]),
        splat(l[2]),
        splat(l[3]),
    ]
}

/// Emits the fixed constants then the `tbl` index vector of every swizzle in
/// `swizzles` (16-byte aligned, starting at label `->consts`).
pub fn emit(ops: &mut Asm, swizzles: &[[usize; 4]]) {
    dynasm!(ops ; .arch aarch64 ; .align 16 ; ->consts:);
    for v in values() {
        dynasm!(ops ; .arch aarch64 ; .u32 v[0], v[1], v[2], v[3]);
    }
    for lanes in swizzles {
        for &lane in lanes {
            let first = (lane * 4) as u8;
            ops.push_u32(u32::from_le_bytes([first, first + 1, first + 2, first + 3]));
        }
    }
}
