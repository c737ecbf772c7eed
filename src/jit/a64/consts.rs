//! The constant pool near the start of every compiled shader (16-byte vectors
//! addressed as `[x23, #offset]`), and the constants kept in registers.
//!
//! All [`PINNED`] entries are loaded into `v16..v25` by `->dispatch` (every
//! path into compiled code from outside goes through it, and those registers
//! are caller-saved, so nothing else has to preserve them). `Ones` is also
//! read from memory, as the value of a constant read beyond `c95`.

use super::Asm;
use crate::arith::f24;
use dynasmrt::{DynasmApi, DynasmLabelApi, dynasm};

/// Constants of the pool, in pool order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum K {
    SignMask,
    AbsMask,
    Ones,
    Inf,
    CanonNan,
    F24MantMask,
    F24MinNormal,
    F24Overflow,
    F24SubScale,
    F24SubQuantum,
}

/// How many constants live in `v16..`: all of them.
pub(super) const PINNED: usize = K::F24SubQuantum as usize + 1;

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
fn values() -> [[u32; 4]; PINNED] {
    [
        splat(0x8000_0000),
        splat(0x7FFF_FFFF),
        splat(1.0f32.to_bits()),
        splat(0x7F80_0000),
        splat(0x7FC0_0000),
        splat(f24::MANTISSA_MASK),
        splat(f24::MIN_NORMAL_BITS),
        splat(f24::OVERFLOW_BITS),
        splat(f24::SUBNORMAL_SCALE.to_bits()),
        splat(f24::SUBNORMAL_QUANTUM.to_bits()),
    ]
}

/// Emits the constants (16-byte aligned, starting at label `->consts`).
pub fn emit(ops: &mut Asm) {
    dynasm!(ops ; .arch aarch64 ; .align 16 ; ->consts:);
    for v in values() {
        dynasm!(ops ; .arch aarch64 ; .u32 v[0], v[1], v[2], v[3]);
    }
}
