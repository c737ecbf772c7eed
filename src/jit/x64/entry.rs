//! The F24 entry conversion of the prologue: the registers entering the unit
//! go through `arith::f24::load` exactly as `interp::enter` converts them,
//! with the IR lowering's own `f24_load` sequence (the rule is written once).

use super::Emitter;
use super::offsets::{INPUTS, TEMPS};
use crate::arith::Precision;
use crate::ir::UnOp;
use crate::jit::frame::OFFSET_CONVERTED_INPUTS;
use dynasmrt::{DynasmApi, dynasm};

impl Emitter<'_> {
    /// F24: converts the temporaries the program may read before writing them
    /// in place (as `interp::enter` does), and the inputs the lowered code
    /// reads: into the frame those it reads converted, onto the stack those it
    /// reads converted and flushed (`f24_flush(f24_load(v))`, computed once
    /// here instead of in every block that reads it), so that every read of an
    /// input is a plain load (the lowering's `Form::ConvertedInput` and
    /// `Form::FlushedInput`). Nothing else is live yet: any register may be
    /// used.
    pub fn f24_entry_conversion(&mut self, temps_read: u16) {
        if self.precision != Precision::F24 {
            return;
        }
        for n in 0..16u8 {
            // Loaded from `xmm1` into `xmm2`: the fast path writes its
            // result there directly (in place it would need a copy).
            if temps_read >> n & 1 != 0 {
                let off = TEMPS + n as i32 * 16;
                dynasm!(self.ops ; .arch x64 ; movaps xmm1, [rsi + off]);
                self.vector().f24_load_into(2, 1);
                dynasm!(self.ops ; .arch x64 ; movaps [rsi + off], xmm2);
            }
            let loaded = self.loaded_inputs >> n & 1 != 0;
            let flushed = self.flushed_inputs >> n & 1 != 0;
            if !loaded && !flushed {
                continue;
            }
            let from = INPUTS + n as i32 * 16;
            dynasm!(self.ops ; .arch x64 ; movaps xmm1, [rsi + from]);
            if loaded {
                self.vector().f24_load_into(2, 1);
                let to = OFFSET_CONVERTED_INPUTS + n as i32 * 16;
                dynasm!(self.ops ; .arch x64 ; movaps [rdi + to], xmm2);
                if flushed {
                    self.vector().unary(UnOp::F24Flush, 3, 2);
                    let to = self.flushed_input_offset(n);
                    dynasm!(self.ops ; .arch x64 ; movaps [rsp + to], xmm3);
                }
            } else {
                // `f24_flush(f24_load(x))` is `f24_quantize(x)` (see
                // `lower::Form::QuantizeOf`).
                self.vector().unary(UnOp::F24Quantize, 1, 1);
                let to = self.flushed_input_offset(n);
                dynasm!(self.ops ; .arch x64 ; movaps [rsp + to], xmm1);
            }
        }
    }
}
