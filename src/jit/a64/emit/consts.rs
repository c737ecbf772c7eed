//! The constants the primitives read, pinned in `v16..` by both lowerings:
//! constant `k` of [`K`] is in `v{16 + k}` whenever generated code runs
//! a primitive, and at byte `16 * k` of the code's constant pool. The
//! single-vertex backend places the pool at `->consts` (its address in
//! `x5`), the wide backend at offset 0 of its code (its address in `x2`);
//! each loads the pinned registers on entry. Extra constants of one lowering
//! (the wide exit mask's lane bits) follow [`PINNED`].

use crate::arith::{CANONICAL_NAN_BITS, f24};

/// Constants of the pool, in pool order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum K {
    SignMask,
    AbsMask,
    /// 1.0: also what a read of a constant register beyond `c95` gives
    /// (read from memory, see [`super::Neon::uniform_address`]).
    Ones,
    Inf,
    CanonNan,
    F24MantMask,
    F24MinNormal,
    F24Overflow,
    F24SubScale,
    F24SubQuantum,
}

/// How many constants both lowerings pin (`v16..v16 + PINNED`).
pub(crate) const PINNED: usize = K::F24SubQuantum as usize + 1;

impl K {
    /// The vector register this constant is pinned in.
    pub const fn reg(self) -> u8 {
        16 + self as u8
    }

    /// Byte offset in the pool.
    pub const fn offset(self) -> u32 {
        self as u32 * 16
    }
}

/// The value of every constant, in pool order (each 32-bit value in all
/// four lanes).
pub(crate) fn values() -> [[u32; 4]; PINNED] {
    [
        0x8000_0000,
        0x7FFF_FFFF,
        1.0f32.to_bits(),
        0x7F80_0000,
        CANONICAL_NAN_BITS,
        f24::MANTISSA_MASK,
        f24::MIN_NORMAL_BITS,
        f24::OVERFLOW_BITS,
        f24::SUBNORMAL_SCALE.to_bits(),
        f24::SUBNORMAL_QUANTUM.to_bits(),
    ]
    .map(|bits| [bits; 4])
}
