//! The F24 entry conversion of the prologue: the registers entering the unit
//! go through `arith::f24::load` exactly as `interp::enter` converts them,
//! with the IR lowering's own `f24_load` sequence (the rule is written once).

use super::Emitter;
use super::offsets::{INPUTS, TEMPS};
use crate::arith::Precision;
use crate::jit::frame::OFFSET_CONVERTED_INPUTS;
use dynasmrt::{DynasmApi, dynasm};

impl Emitter<'_> {
    /// F24: converts the temporaries the program may read before writing them
    /// in place (as `interp::enter` does), and the inputs it reads into the
    /// frame, so that every read of an input is a plain load (the lowering's
    /// `Form::ConvertedInput`). Nothing else is live yet: any register may be
    /// used.
    pub fn f24_entry_conversion(&mut self, temps_read: u16, inputs_read: u16) {
        if self.precision != Precision::F24 {
            return;
        }
        for n in 0..16 {
            if temps_read >> n & 1 != 0 {
                let off = TEMPS + n * 16;
                dynasm!(self.ops ; .arch x64 ; movaps xmm1, [r12 + off]);
                self.vector().f24_load(1);
                dynasm!(self.ops ; .arch x64 ; movaps [r12 + off], xmm1);
            }
            if inputs_read >> n & 1 != 0 {
                let from = INPUTS + n * 16;
                let to = OFFSET_CONVERTED_INPUTS + n * 16;
                dynasm!(self.ops ; .arch x64 ; movaps xmm1, [r12 + from]);
                self.vector().f24_load(1);
                dynasm!(self.ops ; .arch x64 ; movaps [rbx + to], xmm1);
            }
        }
    }
}
