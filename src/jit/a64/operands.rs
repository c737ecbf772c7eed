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
    /// Writes the lanes of `v{x}` selected by `mask` to `dst`: the whole
    /// register, or per half: `x` and `y` with one 8-byte store, `x` alone
    /// with a 4-byte store, any other lanes moved to the bottom of `v7` first.
    pub fn store(&mut self, x: u8, dst: DstReg, mask: WriteMask) {
        let off = state::destination(dst);
        let lanes = [0, 1, 2, 3].map(|l| mask.writes(l));
        if lanes == [true; 4] {
            dynasm!(self.ops ; .arch aarch64 ; str Q(x), [x1, off]);
            return;
        }
        match (lanes[0], lanes[1]) {
            (true, true) => dynasm!(self.ops ; .arch aarch64 ; str D(x), [x1, off]),
            (true, false) => dynasm!(self.ops ; .arch aarch64 ; str S(x), [x1, off]),
            (false, true) => self.store_lane(x, 1, off),
            (false, false) => {}
        }
        match (lanes[2], lanes[3]) {
            (true, true) => dynasm!(self.ops
                ; .arch aarch64
                ; dup d7, V(x).d[1]
                ; str d7, [x1, off + 8]
            ),
            (true, false) => self.store_lane(x, 2, off),
            (false, true) => self.store_lane(x, 3, off),
            (false, false) => {}
        }
    }

    /// Writes lane `lane` of `v{x}` to its place in the register at `off`.
    fn store_lane(&mut self, x: u8, lane: u32, off: u32) {
        dynasm!(self.ops
            ; .arch aarch64
            ; dup s7, V(x).s[lane]
            ; str s7, [x1, off + 4 * lane]
        );
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
