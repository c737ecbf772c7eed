//! Source loads (relative addressing, float24 load conversion, swizzle, negation),
//! destination stores (write masks) and the shared float24/NaN sequences.

use super::Emitter;
use crate::arith::Precision;
use crate::isa::{AddrIndex, DstReg, OperandDescriptor, Source, SrcReg, WriteMask};
use crate::jit::frame::OFFSET_CONVERTED_INPUTS;
use crate::state::{Uniforms, UnitState};
use dynasmrt::{DynasmApi, DynasmLabelApi, dynasm};
use std::mem::offset_of;

const INPUTS: i32 = offset_of!(UnitState, inputs) as i32;
const TEMPS: i32 = offset_of!(UnitState, temps) as i32;
pub(super) const A0: i32 = offset_of!(UnitState, a0) as i32;
pub(super) const AL: i32 = offset_of!(UnitState, al) as i32;
pub(super) const CMP: i32 = offset_of!(UnitState, cmp) as i32;
const FLOATS: i32 = offset_of!(Uniforms, f) as i32;

/// `pshufd` immediate for a selector (lane i of the result reads lane s_i).
fn shuffle_imm(lanes: [usize; 4]) -> i8 {
    (lanes[0] | lanes[1] << 2 | lanes[2] << 4 | lanes[3] << 6) as u8 as i8
}

impl Emitter<'_> {
    /// Loads source `slot` of `desc` into `xmm{x}` (x in 1..=3): fetch with the
    /// precision's load conversion, then swizzle, then negate.
    pub fn load_source(&mut self, x: u8, src: Source, desc: OperandDescriptor, slot: usize) {
        match src.reg {
            SrcReg::Input(n) => match self.precision {
                Precision::F32 => {
                    let off = INPUTS + n as i32 * 16;
                    dynasm!(self.ops ; .arch x64 ; movaps Rx(x), [r12 + off]);
                }
                // Converted once by the prologue.
                Precision::F24 => {
                    let off = OFFSET_CONVERTED_INPUTS + n as i32 * 16;
                    dynasm!(self.ops ; .arch x64 ; movaps Rx(x), [rbx + off]);
                }
            },
            SrcReg::Temp(n) => self.cached_load(x, super::regcache::Reg::temp(n)),
            SrcReg::Const(n) => {
                if src.index == AddrIndex::None {
                    let off = FLOATS + n as i32 * 16;
                    dynasm!(self.ops ; .arch x64 ; movaps Rx(x), [r13 + off]);
                } else {
                    self.relative_constant_address(n, src.index);
                    dynasm!(self.ops ; .arch x64 ; movaps Rx(x), [rcx]);
                }
                if !self.preconverted_uniforms {
                    self.f24_load(x);
                }
            }
        }
        let lanes = desc.swizzle(slot).lanes();
        if lanes != [0, 1, 2, 3] {
            let imm = shuffle_imm(lanes);
            dynasm!(self.ops ; .arch x64 ; pshufd Rx(x), Rx(x), imm);
        }
        if desc.negate(slot) {
            match self.precision {
                Precision::F32 => dynasm!(self.ops ; .arch x64 ; xorps Rx(x), [->sign_mask]),
                // 0 - x: no -0, and the canonical NaN stays canonical.
                Precision::F24 => dynasm!(self.ops
                    ; .arch x64
                    ; xorps xmm7, xmm7
                    ; subps xmm7, Rx(x)
                    ; movaps Rx(x), xmm7
                ),
            }
        }
    }

    /// `rcx` = address of `c<base>[index]`, or of (1, 1, 1, 1) when the slot is
    /// beyond c95 (spec, "Relative addressing").
    fn relative_constant_address(&mut self, base: u8, index: AddrIndex) {
        let reg = match index {
            AddrIndex::A0X => A0,
            AddrIndex::A0Y => A0 + 4,
            _ => AL,
        };
        dynasm!(self.ops
            ; .arch x64
            ; mov eax, [r12 + reg]
            // offset outside -128..=127 → 0
            ; lea ecx, [rax + 128]
            ; xor edx, edx
            ; cmp ecx, 255
            ; cmova eax, edx
            ; add eax, base as i32
            ; and eax, 0x7F
            ; mov ecx, eax
            ; shl ecx, 4
            ; lea rcx, [r13 + rcx + FLOATS]
            ; lea rdx, [->ones]
            ; cmp eax, 95
            ; cmova rcx, rdx
        );
    }

    /// Writes the lanes of `xmm{x}` selected by `mask` to `dst`.
    pub fn store(&mut self, x: u8, dst: DstReg, mask: WriteMask) {
        self.cached_store(x, dst, mask);
    }

    /// F24 prologue: converts the registers entering the unit as `interp::enter`
    /// does (the temporaries the program reads, in place), and the inputs the
    /// program reads into the frame (so every read of them is a plain load).
    pub fn f24_entry_conversion(&mut self, temps_read: u16, inputs_read: u16) {
        if self.precision != Precision::F24 {
            return;
        }
        let mut single = temps_read;
        if self.avx2 {
            // Two neighbouring registers per step where the program reads both.
            let mut paired = false;
            for pair in 0..8 {
                let both = 0b11 << (2 * pair);
                if temps_read & both == both {
                    self.f24_load_pair(TEMPS + pair * 32);
                    single &= !both;
                    paired = true;
                }
            }
            if paired {
                dynasm!(self.ops ; .arch x64 ; vzeroupper);
            }
        }
        for n in 0..16 {
            if single >> n & 1 != 0 {
                let off = TEMPS + n * 16;
                dynasm!(self.ops ; .arch x64 ; movaps xmm1, [r12 + off]);
                self.f24_load(1);
                dynasm!(self.ops ; .arch x64 ; movaps [r12 + off], xmm1);
            }
            if inputs_read >> n & 1 != 0 {
                let from = INPUTS + n * 16;
                let to = OFFSET_CONVERTED_INPUTS + n * 16;
                dynasm!(self.ops ; .arch x64 ; movaps xmm1, [r12 + from]);
                self.f24_load(1);
                dynasm!(self.ops ; .arch x64 ; movaps [rbx + to], xmm1);
            }
        }
    }

    /// AVX2: `arith::f24::load` in place on the two registers at `[r12 + off]`.
    fn f24_load_pair(&mut self, off: i32) {
        dynasm!(self.ops
            ; .arch x64
            ; vmovups ymm1, [r12 + off]
            ; vandps ymm4, ymm1, [->abs_mask8]
            ; vandps ymm5, ymm1, [->f24_mant_mask8]
            ; vmulps ymm6, ymm1, [->f24_sub_scale8]
            ; vcvttps2dq ymm6, ymm6
            ; vcvtdq2ps ymm6, ymm6
            ; vmulps ymm6, ymm6, [->f24_sub_quantum8]
            ; vpcmpgtd ymm0, ymm4, [->f24_min_normal_m1_8]
            ; vblendvps ymm5, ymm6, ymm5, ymm0
            ; vandps ymm6, ymm1, [->sign_mask8]
            ; vorps ymm6, ymm6, [->inf8]
            ; vpcmpgtd ymm0, ymm4, [->f24_overflow_m1_8]
            ; vblendvps ymm5, ymm5, ymm6, ymm0
            ; vpcmpgtd ymm0, ymm4, [->inf8]
            ; vblendvps ymm1, ymm5, [->canon_nan8], ymm0
            ; vmovups [r12 + off], ymm1
        );
    }

    /// F24: converts a value entering the unit to float24 (`arith::f24::load`).
    fn f24_load(&mut self, x: u8) {
        if self.precision != Precision::F24 {
            return;
        }
        if self.avx {
            dynasm!(self.ops
                ; .arch x64
                ; vandps xmm4, Rx(x), [->abs_mask]
                ; vandps xmm5, Rx(x), [->f24_mant_mask]
                ; vmulps xmm6, Rx(x), [->f24_sub_scale]
                ; vcvttps2dq xmm6, xmm6
                ; vcvtdq2ps xmm6, xmm6
                ; vmulps xmm6, xmm6, [->f24_sub_quantum]
                ; vpcmpgtd xmm0, xmm4, [->f24_min_normal_m1]   // normal range
                ; vblendvps xmm5, xmm6, xmm5, xmm0
            );
        } else {
            dynasm!(self.ops
                ; .arch x64
                // xmm4 = |bits|
                ; movaps xmm4, Rx(x)
                ; andps xmm4, [->abs_mask]
                // xmm5 = normal path: truncated mantissa
                ; movaps xmm5, Rx(x)
                ; andps xmm5, [->f24_mant_mask]
                // xmm6 = subnormal path: trunc(x * 2^78) * 2^-78
                ; movaps xmm6, Rx(x)
                ; mulps xmm6, [->f24_sub_scale]
                ; cvttps2dq xmm6, xmm6
                ; cvtdq2ps xmm6, xmm6
                ; mulps xmm6, [->f24_sub_quantum]
                ; movdqa xmm0, [->f24_min_normal]
                ; pcmpgtd xmm0, xmm4
                ; blendvps xmm5, xmm6
            );
        }
        self.f24_overflow_and_nan(x);
    }

    /// Shared tail of the float24 conversions: xmm4 = |bits of x|, xmm5 = the
    /// finite result; writes `x` = ±inf for |x| ≥ 2^64, canonical NaN for NaN.
    fn f24_overflow_and_nan(&mut self, x: u8) {
        if self.avx {
            dynasm!(self.ops
                ; .arch x64
                ; vandps xmm6, Rx(x), [->sign_mask]
                ; vorps xmm6, xmm6, [->inf]
                ; vpcmpgtd xmm0, xmm4, [->f24_overflow_m1]
                ; vblendvps xmm5, xmm5, xmm6, xmm0
                ; vpcmpgtd xmm0, xmm4, [->inf]
                ; vblendvps Rx(x), xmm5, [->canon_nan], xmm0
            );
            return;
        }
        dynasm!(self.ops
            ; .arch x64
            ; movaps xmm6, Rx(x)
            ; andps xmm6, [->sign_mask]
            ; orps xmm6, [->inf]
            ; movaps xmm0, xmm4
            ; pcmpgtd xmm0, [->f24_overflow_m1]
            ; blendvps xmm5, xmm6
            ; movaps xmm0, xmm4
            ; pcmpgtd xmm0, [->inf]
            ; blendvps xmm5, [->canon_nan]
            ; movaps Rx(x), xmm5
        );
    }

    /// Arithmetic input step: F24 flushes |x| < 2^-62 to +0; F32 does nothing.
    pub fn arith_input(&mut self, x: u8) {
        if self.precision != Precision::F24 {
            return;
        }
        if self.avx {
            dynasm!(self.ops
                ; .arch x64
                ; vandps xmm4, Rx(x), [->abs_mask]
                ; vpcmpgtd xmm4, xmm4, [->f24_min_normal_m1]
                ; vandps Rx(x), Rx(x), xmm4
            );
            return;
        }
        dynasm!(self.ops
            ; .arch x64
            ; movaps xmm4, Rx(x)
            ; andps xmm4, [->abs_mask]
            ; movdqa xmm0, [->f24_min_normal]
            ; pcmpgtd xmm0, xmm4
            ; andnps xmm0, Rx(x)
            ; movaps Rx(x), xmm0
        );
    }

    /// Arithmetic result step: F24 truncates to float24; F32 canonicalises NaN.
    pub fn arith_result(&mut self, x: u8) {
        match self.precision {
            Precision::F32 => self.canonicalize(x),
            Precision::F24 if self.avx => {
                dynasm!(self.ops
                    ; .arch x64
                    ; vandps xmm4, Rx(x), [->abs_mask]
                    ; vandps xmm5, Rx(x), [->f24_mant_mask]
                    // |r| < 2^-62 → +0
                    ; vpcmpgtd xmm0, xmm4, [->f24_min_normal_m1]
                    ; vandps xmm5, xmm5, xmm0
                );
                self.f24_overflow_and_nan(x);
            }
            Precision::F24 => {
                dynasm!(self.ops
                    ; .arch x64
                    ; movaps xmm4, Rx(x)
                    ; andps xmm4, [->abs_mask]
                    ; movaps xmm5, Rx(x)
                    ; andps xmm5, [->f24_mant_mask]
                    // |r| < 2^-62 → +0
                    ; movdqa xmm0, [->f24_min_normal]
                    ; pcmpgtd xmm0, xmm4
                    ; andnps xmm0, xmm5
                    ; movaps xmm5, xmm0
                );
                self.f24_overflow_and_nan(x);
            }
        }
    }

    /// Replaces NaN lanes of `xmm{x}` with the canonical NaN.
    pub fn canonicalize(&mut self, x: u8) {
        if self.avx {
            dynasm!(self.ops
                ; .arch x64
                ; vcmpps xmm0, Rx(x), Rx(x), 3
                ; vblendvps Rx(x), Rx(x), [->canon_nan], xmm0
            );
            return;
        }
        dynasm!(self.ops
            ; .arch x64
            ; movaps xmm0, Rx(x)
            ; cmpps xmm0, xmm0, 3
            ; blendvps Rx(x), [->canon_nan]
        );
    }
}
