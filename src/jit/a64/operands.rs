//! The single-vertex frame's operands: where the PICA registers live in
//! `UnitState`, destination stores with write masks, and the prologue's
//! float24 entry conversion (the primitive itself is the shared emitter's,
//! `emit/float24.rs`).

use super::Emitter;
use crate::arith::Precision;
use crate::isa::{DstReg, WriteMask};
use crate::jit::single::state::{self, TEMPS};
use dynasmrt::{DynasmApi, dynasm};

impl Emitter<'_> {
    /// Writes the lanes of `v{x}` selected by `mask` to `dst`.
    pub fn store(&mut self, x: u8, dst: DstReg, mask: WriteMask) {
        let off = state::destination(dst);
        match mask.0 & 0xF {
            0 => {}
            0xF => dynasm!(self.ops ; .arch aarch64 ; str Q(x), [x1, off]),
            _ => {
                dynasm!(self.ops ; .arch aarch64 ; ldr q7, [x1, off]);
                for lane in 0..4u32 {
                    if mask.writes(lane as usize) {
                        dynasm!(self.ops ; .arch aarch64 ; mov v7.s[lane], V(x).s[lane]);
                    }
                }
                dynasm!(self.ops ; .arch aarch64 ; str q7, [x1, off]);
            }
        }
    }

    /// F24: converts the temporaries the program reads, in place, exactly as
    /// `interp::enter` does (inputs and uniforms are converted when read). Runs in
    /// the prologue, with the pinned constants loaded.
    pub fn f24_entry_conversion(&mut self, temps_read: u16) {
        if self.precision != Precision::F24 {
            return;
        }
        for n in (0..16).filter(|n| temps_read >> n & 1 != 0) {
            let off = TEMPS + n * 16;
            dynasm!(self.ops ; .arch aarch64 ; ldr q1, [x1, off]);
            self.neon().f24_load(1, 1);
            dynasm!(self.ops ; .arch aarch64 ; str q1, [x1, off]);
        }
    }
}
