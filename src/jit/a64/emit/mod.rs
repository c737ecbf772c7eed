//! The AArch64 backend's one NEON primitive emitter: every IR primitive
//! ([`UnOp`](crate::ir::UnOp), [`BinOp`](crate::ir::BinOp), the comparison
//! predicates of `FCmp`/`ICmp`, `Select`, constants, uniform reads) is lowered
//! here exactly once, on 128-bit vectors of four 32-bit lanes, for both
//! lowerings above it:
//!
//! - the single-vertex lowering (`../lower.rs`, `../operands.rs`): one
//!   vertex's `x, y, z, w` in one register; swizzles, blends, write masks and
//!   the `UnitState` frame stay there;
//! - the wide lowering (`../wide/`): one vertex per lane; rows of the
//!   register file, gathers, exit masks and the batch kernel stay there.
//!
//! Where the PICA rules live: the IR recipes (`crate::ir::recipes`) and their
//! scalar definitions (`crate::ir::eval`, checked against this emitter bit
//! for bit in `tests.rs`). NEON rules kept: compares are ordered
//! (`fcmeq`/`fcmgt`/`fcmge` are false on NaN, as in Rust), no fused
//! multiply-add, `fdiv`/`fsqrt` rather than estimates, max/min as compare +
//! select, sign flips with `eor`, selects bitwise (`bsl`/`bit`/`bif`). Every
//! sequence assumes FPCR = 0 (round to nearest, no flush to zero, no default
//! NaN), which both backends set on entry.
//!
//! Register contract: the constants of [`consts::K`] are pinned in `v16..`
//! (the callers load them); `v0` and `v4..=v6` are scratch inside one
//! primitive, `w9..=w11`/`x9..=x11` are scratch; a destination `d` may equal
//! its operand only for the in-place forms the methods say accept it.

mod compare;
pub(crate) mod consts;
#[cfg(test)]
pub(crate) mod fault;
mod float24;
mod math;

pub(crate) use float24::DotTerms;
#[cfg(test)]
pub(super) mod tests;

use super::Asm;
use consts::K;
use dynasmrt::{DynasmApi, dynasm};

/// Byte offset of `Uniforms::f` (the float constants `c0..c95`).
const FLOATS: u32 = std::mem::offset_of!(crate::state::Uniforms, f) as u32;

/// Emits NEON primitives into an assembler.
pub(crate) struct Neon<'a> {
    a: &'a mut Asm,
}

impl<'a> Neon<'a> {
    pub fn new(a: &'a mut Asm) -> Neon<'a> {
        Neon { a }
    }

    /// `v{d}` = `v{a}` (nothing when they are the same register).
    pub fn copy(&mut self, d: u8, a: u8) {
        if d != a {
            dynasm!(self.a ; .arch aarch64 ; mov V(d).b16, V(a).b16);
        }
    }

    /// `w9` = `bits`.
    fn w9(&mut self, bits: u32) {
        let (lo, hi) = (bits & 0xFFFF, bits >> 16);
        if lo == 0 {
            dynasm!(self.a ; .arch aarch64 ; movz w9, hi, lsl #16);
        } else {
            dynasm!(self.a ; .arch aarch64 ; movz w9, lo);
            if hi != 0 {
                dynasm!(self.a ; .arch aarch64 ; movk w9, hi, lsl #16);
            }
        }
    }

    /// `v{d}` = `bits` in every lane.
    pub fn constant(&mut self, d: u8, bits: u32) {
        match bits {
            0 => dynasm!(self.a ; .arch aarch64 ; movi V(d).d2, #0),
            u32::MAX => dynasm!(self.a ; .arch aarch64 ; movi V(d).d2, #u64::MAX),
            _ => {
                self.w9(bits);
                dynasm!(self.a ; .arch aarch64 ; dup V(d).s4, w9);
            }
        }
    }

    /// `v{d}` = `lanes`.
    pub fn constant_lanes(&mut self, d: u8, lanes: [u32; 4]) {
        if lanes.iter().all(|&l| l == lanes[0]) {
            return self.constant(d, lanes[0]);
        }
        for (lane, bits) in lanes.into_iter().enumerate() {
            self.w9(bits);
            let lane = lane as u32;
            dynasm!(self.a ; .arch aarch64 ; mov V(d).s[lane], w9);
        }
    }

    /// `v{d}` = the 32-bit word at `[x{base}, off]` in every lane.
    pub fn word_to_lanes(&mut self, d: u8, base: u8, off: u32) {
        dynasm!(self.a
            ; .arch aarch64
            ; ldr S(d), [XSP(base), off]
            ; dup V(d).s4, V(d).s[0]
        );
    }

    /// `v{d}` = the byte at `[x{base}, off]` in every lane; as a lane mask
    /// (`0` or all ones, from a `bool` byte) when `as_mask`.
    pub fn byte_to_lanes(&mut self, d: u8, base: u8, off: u32, as_mask: bool) {
        dynasm!(self.a ; .arch aarch64 ; ldrb w9, [XSP(base), off]);
        if as_mask {
            dynasm!(self.a ; .arch aarch64 ; neg w9, w9);
        }
        dynasm!(self.a ; .arch aarch64 ; dup V(d).s4, w9);
    }

    /// `x10` = the address of float constant `c[n]`, `n` the `i32` in lane
    /// `lane` of `v{slot}`, given the uniforms at `x{uniforms}`; for `n`
    /// outside `0..=95` the address of [`K::Ones`] in the pool at
    /// `x{pool}` (what the hardware reads there). Clobbers `x9`, `x11`.
    pub fn uniform_address(&mut self, slot: u8, lane: u32, uniforms: u8, pool: u8) {
        let ones = K::Ones.offset();
        dynasm!(self.a
            ; .arch aarch64
            ; umov w9, V(slot).s[lane]
            ; add x10, XSP(uniforms), x9, uxtx #4
            ; add x10, x10, FLOATS
            ; add x11, XSP(pool), ones
            ; cmp w9, #95
            ; csel x10, x10, x11, ls
        );
    }
}
