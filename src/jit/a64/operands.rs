//! Destination stores (write masks), the float24 sequences of the IR's
//! `f24_load`/`f24_flush`/`f24_quantize` (the prologue's entry conversion
//! too) and NaN canonicalisation.
//!
//! Every select is a bitwise `bsl`/`bit`/`bif` on a mask from an integer
//! compare of the bits (`cmgt`/`cmge`/`cmeq`, exact for the absolute-value bits
//! whose top bit is clear) or from an ordered float compare (`fcmeq`/`fcmgt`/
//! `fcmge`, false for NaN exactly like Rust's `==`, `>`, `>=`). No scalar
//! `fcmp` + condition code is used anywhere.

use super::Emitter;
use super::consts::K;
use crate::arith::Precision;
use crate::isa::{DstReg, WriteMask};
use crate::state::UnitState;
use dynasmrt::{DynasmApi, dynasm};
use std::mem::offset_of;

const TEMPS: u32 = offset_of!(UnitState, temps) as u32;
const OUTPUTS: u32 = offset_of!(UnitState, outputs) as u32;
pub(super) const A0: u32 = offset_of!(UnitState, a0) as u32;
pub(super) const AL: u32 = offset_of!(UnitState, al) as u32;
pub(super) const CMP: u32 = offset_of!(UnitState, cmp) as u32;

// Pinned constant registers (see `consts::K`).
pub(super) const SIGN: u8 = K::SignMask as u8 + 16;
pub(super) const ABS: u8 = K::AbsMask as u8 + 16;
pub(super) const INF: u8 = K::Inf as u8 + 16;
pub(super) const NAN: u8 = K::CanonNan as u8 + 16;
const MANT: u8 = K::F24MantMask as u8 + 16;
const MIN_NORMAL: u8 = K::F24MinNormal as u8 + 16;
const OVERFLOW: u8 = K::F24Overflow as u8 + 16;
const SUB_SCALE: u8 = K::F24SubScale as u8 + 16;
const SUB_QUANTUM: u8 = K::F24SubQuantum as u8 + 16;

const _: () = assert!(SUB_QUANTUM == 25 && super::consts::PINNED == 10);

impl Emitter<'_> {
    /// Writes the lanes of `v{x}` selected by `mask` to `dst`.
    pub fn store(&mut self, x: u8, dst: DstReg, mask: WriteMask) {
        let off = match dst {
            DstReg::Output(n) => OUTPUTS + n as u32 * 16,
            DstReg::Temp(n) => TEMPS + n as u32 * 16,
        };
        match mask.0 & 0xF {
            0 => {}
            0xF => dynasm!(self.ops ; .arch aarch64 ; str Q(x), [x20, off]),
            _ => {
                dynasm!(self.ops ; .arch aarch64 ; ldr q7, [x20, off]);
                for lane in 0..4u32 {
                    if mask.writes(lane as usize) {
                        dynasm!(self.ops ; .arch aarch64 ; mov v7.s[lane], V(x).s[lane]);
                    }
                }
                dynasm!(self.ops ; .arch aarch64 ; str q7, [x20, off]);
            }
        }
    }

    /// F24: converts the temporaries the program reads, in place, exactly as
    /// `interp::enter` does (inputs and uniforms are converted when read). Runs in
    /// the prologue, before the first dispatch.
    pub fn f24_entry_conversion(&mut self, temps_read: u16) {
        if self.precision != Precision::F24 {
            return;
        }
        self.load_pinned();
        for n in (0..16).filter(|n| temps_read >> n & 1 != 0) {
            let off = TEMPS + n * 16;
            dynasm!(self.ops ; .arch aarch64 ; ldr q1, [x20, off]);
            self.f24_load(1);
            dynasm!(self.ops ; .arch aarch64 ; str q1, [x20, off]);
        }
    }

    /// Converts `v{x}` to float24 as a value entering the unit does
    /// (`arith::f24::load`).
    pub(super) fn f24_load(&mut self, x: u8) {
        dynasm!(self.ops
            ; .arch aarch64
            // v4 = |bits|
            ; and v4.b16, V(x).b16, V(ABS).b16
            // v5 = normal path: truncated mantissa
            ; and v5.b16, V(x).b16, V(MANT).b16
            // v6 = subnormal path: trunc(x * 2^78) * 2^-78 (signed conversions)
            ; fmul v6.s4, V(x).s4, V(SUB_SCALE).s4
            ; fcvtzs v6.s4, v6.s4
            ; scvtf v6.s4, v6.s4
            ; fmul v6.s4, v6.s4, V(SUB_QUANTUM).s4
            // |x| < 2^-62 → subnormal path
            ; cmgt v0.s4, V(MIN_NORMAL).s4, v4.s4
            ; bit v5.b16, v6.b16, v0.b16
        );
        self.f24_overflow_and_nan(x);
    }

    /// Shared tail of the float24 conversions: v4 = |bits of x|, v5 = the
    /// finite result; writes `x` = ±inf for |x| ≥ 2^64, canonical NaN for NaN.
    fn f24_overflow_and_nan(&mut self, x: u8) {
        dynasm!(self.ops
            ; .arch aarch64
            ; and v6.b16, V(x).b16, V(SIGN).b16
            ; orr v6.b16, v6.b16, V(INF).b16
            ; cmge v0.s4, v4.s4, V(OVERFLOW).s4
            ; bit v5.b16, v6.b16, v0.b16
            ; cmgt v0.s4, v4.s4, V(INF).s4
            ; bit v5.b16, V(NAN).b16, v0.b16
            ; mov V(x).b16, v5.b16
        );
    }

    /// `f24_flush` of `v{x}` (`arith::f24::flush_input`): |x| < 2^-62 becomes +0.
    pub(super) fn f24_flush(&mut self, x: u8) {
        dynasm!(self.ops
            ; .arch aarch64
            ; and v4.b16, V(x).b16, V(ABS).b16
            ; cmgt v0.s4, V(MIN_NORMAL).s4, v4.s4
            ; bic V(x).b16, V(x).b16, v0.b16
        );
    }

    /// `f24_quantize` of `v{x}`: truncated to float24 (`arith::f24::quantize_result`).
    pub(super) fn f24_quantize(&mut self, x: u8) {
        dynasm!(self.ops
            ; .arch aarch64
            ; and v4.b16, V(x).b16, V(ABS).b16
            ; and v5.b16, V(x).b16, V(MANT).b16
            // |r| < 2^-62 → +0
            ; cmgt v0.s4, V(MIN_NORMAL).s4, v4.s4
            ; bic v5.b16, v5.b16, v0.b16
        );
        self.f24_overflow_and_nan(x);
    }

    /// Replaces NaN lanes of `v{x}` with the canonical NaN.
    pub fn canonicalize(&mut self, x: u8) {
        dynasm!(self.ops
            ; .arch aarch64
            ; fcmeq v0.s4, V(x).s4, V(x).s4
            ; bif V(x).b16, V(NAN).b16, v0.b16
        );
    }
}
