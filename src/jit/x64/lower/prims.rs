//! One lowering per IR primitive (SSE4.1, or the VEX three-operand forms when
//! the host has AVX). Register roles: see the module above; `d` is the
//! result register (never an operand's), `xmm0` and `xmm13..=xmm15` are
//! scratch, and so are `rax`, `rcx`, `rdx`.

use super::Form;
use crate::ir::{AddrReg, BinOp, Elem, Op, UnOp};
use crate::isa::{CmpOp, DstReg};
use crate::jit::JitError;
use crate::jit::frame::OFFSET_CONVERTED_INPUTS;
use crate::jit::x64::Emitter;
use crate::jit::x64::offsets::{A0, AL, BOOLS, CMP, FLOATS, INPUTS, INTS, OUTPUTS, TEMPS};
use dynasmrt::{DynasmApi, DynasmLabelApi, dynasm};

/// Scratch registers.
const S1: u8 = 13;
const S2: u8 = 14;
const S3: u8 = 15;

/// A two-source vector instruction (`d = a op b`).
#[derive(Clone, Copy)]
enum V {
    Addps,
    Subps,
    Mulps,
    Divps,
    Andps,
    Andnps,
    Orps,
    Xorps,
    Maxps,
    Minps,
    Paddd,
    Psubd,
    Pcmpeqd,
    Pcmpgtd,
    Cmpps(i8),
    Blendps(i8),
}

fn addr_offset(reg: AddrReg) -> i32 {
    match reg {
        AddrReg::A0X => A0,
        AddrReg::A0Y => A0 + 4,
        AddrReg::AL => AL,
    }
}

fn shuffle_imm(lanes: [u8; 4]) -> i8 {
    (lanes[0] & 3 | (lanes[1] & 3) << 2 | (lanes[2] & 3) << 4 | (lanes[3] & 3) << 6) as i8
}

impl Emitter<'_> {
    /// `d = a op b`; `d` may equal `a` but not `b` (unless `a == b`).
    fn v3(&mut self, op: V, d: u8, a: u8, b: u8) {
        if self.avx {
            match op {
                V::Addps => dynasm!(self.ops ; .arch x64 ; vaddps Rx(d), Rx(a), Rx(b)),
                V::Subps => dynasm!(self.ops ; .arch x64 ; vsubps Rx(d), Rx(a), Rx(b)),
                V::Mulps => dynasm!(self.ops ; .arch x64 ; vmulps Rx(d), Rx(a), Rx(b)),
                V::Divps => dynasm!(self.ops ; .arch x64 ; vdivps Rx(d), Rx(a), Rx(b)),
                V::Andps => dynasm!(self.ops ; .arch x64 ; vandps Rx(d), Rx(a), Rx(b)),
                V::Andnps => dynasm!(self.ops ; .arch x64 ; vandnps Rx(d), Rx(a), Rx(b)),
                V::Orps => dynasm!(self.ops ; .arch x64 ; vorps Rx(d), Rx(a), Rx(b)),
                V::Xorps => dynasm!(self.ops ; .arch x64 ; vxorps Rx(d), Rx(a), Rx(b)),
                V::Maxps => dynasm!(self.ops ; .arch x64 ; vmaxps Rx(d), Rx(a), Rx(b)),
                V::Minps => dynasm!(self.ops ; .arch x64 ; vminps Rx(d), Rx(a), Rx(b)),
                V::Paddd => dynasm!(self.ops ; .arch x64 ; vpaddd Rx(d), Rx(a), Rx(b)),
                V::Psubd => dynasm!(self.ops ; .arch x64 ; vpsubd Rx(d), Rx(a), Rx(b)),
                V::Pcmpeqd => dynasm!(self.ops ; .arch x64 ; vpcmpeqd Rx(d), Rx(a), Rx(b)),
                V::Pcmpgtd => dynasm!(self.ops ; .arch x64 ; vpcmpgtd Rx(d), Rx(a), Rx(b)),
                // dynasm encodes the two sources of `vcmpps` and `vblendps`
                // in the opposite order (checked by `vex_source_order` below).
                V::Cmpps(p) => dynasm!(self.ops ; .arch x64 ; vcmpps Rx(d), Rx(b), Rx(a), p),
                V::Blendps(m) => dynasm!(self.ops ; .arch x64 ; vblendps Rx(d), Rx(b), Rx(a), m),
            }
            return;
        }
        debug_assert!(d != b || a == b, "xmm{d} = xmm{a} op xmm{b}");
        if d != a {
            dynasm!(self.ops ; .arch x64 ; movaps Rx(d), Rx(a));
        }
        match op {
            V::Addps => dynasm!(self.ops ; .arch x64 ; addps Rx(d), Rx(b)),
            V::Subps => dynasm!(self.ops ; .arch x64 ; subps Rx(d), Rx(b)),
            V::Mulps => dynasm!(self.ops ; .arch x64 ; mulps Rx(d), Rx(b)),
            V::Divps => dynasm!(self.ops ; .arch x64 ; divps Rx(d), Rx(b)),
            V::Andps => dynasm!(self.ops ; .arch x64 ; andps Rx(d), Rx(b)),
            V::Andnps => dynasm!(self.ops ; .arch x64 ; andnps Rx(d), Rx(b)),
            V::Orps => dynasm!(self.ops ; .arch x64 ; orps Rx(d), Rx(b)),
            V::Xorps => dynasm!(self.ops ; .arch x64 ; xorps Rx(d), Rx(b)),
            V::Maxps => dynasm!(self.ops ; .arch x64 ; maxps Rx(d), Rx(b)),
            V::Minps => dynasm!(self.ops ; .arch x64 ; minps Rx(d), Rx(b)),
            V::Paddd => dynasm!(self.ops ; .arch x64 ; paddd Rx(d), Rx(b)),
            V::Psubd => dynasm!(self.ops ; .arch x64 ; psubd Rx(d), Rx(b)),
            V::Pcmpeqd => dynasm!(self.ops ; .arch x64 ; pcmpeqd Rx(d), Rx(b)),
            V::Pcmpgtd => dynasm!(self.ops ; .arch x64 ; pcmpgtd Rx(d), Rx(b)),
            V::Cmpps(p) => dynasm!(self.ops ; .arch x64 ; cmpps Rx(d), Rx(b), p),
            V::Blendps(m) => dynasm!(self.ops ; .arch x64 ; blendps Rx(d), Rx(b), m),
        }
    }

    /// `d = a op c` with `c` a broadcast constant from the pool (a memory
    /// operand); `d` may equal `a`.
    fn v3m(&mut self, op: V, d: u8, a: u8, bits: u32) {
        let label = self.pool_label([bits; 4]);
        if self.avx {
            match op {
                V::Andps => dynasm!(self.ops ; .arch x64 ; vandps Rx(d), Rx(a), [=>label]),
                V::Orps => dynasm!(self.ops ; .arch x64 ; vorps Rx(d), Rx(a), [=>label]),
                V::Xorps => dynasm!(self.ops ; .arch x64 ; vxorps Rx(d), Rx(a), [=>label]),
                V::Mulps => dynasm!(self.ops ; .arch x64 ; vmulps Rx(d), Rx(a), [=>label]),
                V::Pcmpgtd => dynasm!(self.ops ; .arch x64 ; vpcmpgtd Rx(d), Rx(a), [=>label]),
                _ => {
                    dynasm!(self.ops ; .arch x64 ; vmovaps Rx(S1), [=>label]);
                    self.v3(op, d, a, S1);
                }
            }
            return;
        }
        self.copy(d, a);
        match op {
            V::Andps => dynasm!(self.ops ; .arch x64 ; andps Rx(d), [=>label]),
            V::Orps => dynasm!(self.ops ; .arch x64 ; orps Rx(d), [=>label]),
            V::Xorps => dynasm!(self.ops ; .arch x64 ; xorps Rx(d), [=>label]),
            V::Mulps => dynasm!(self.ops ; .arch x64 ; mulps Rx(d), [=>label]),
            V::Pcmpgtd => dynasm!(self.ops ; .arch x64 ; pcmpgtd Rx(d), [=>label]),
            _ => {
                dynasm!(self.ops ; .arch x64 ; movaps Rx(S1), [=>label]);
                self.v3(op, d, d, S1);
            }
        }
    }

    /// `d = mask ? b : a` lane-wise (`mask` lanes all ones or zero); `d` may
    /// equal `a` but no other operand. Clobbers `xmm0` (SSE).
    fn select(&mut self, d: u8, a: u8, b: u8, mask: u8) {
        if self.avx {
            dynasm!(self.ops ; .arch x64 ; vblendvps Rx(d), Rx(a), Rx(b), Rx(mask));
            return;
        }
        if mask != 0 {
            dynasm!(self.ops ; .arch x64 ; movaps xmm0, Rx(mask));
        }
        if d != a {
            dynasm!(self.ops ; .arch x64 ; movaps Rx(d), Rx(a));
        }
        dynasm!(self.ops ; .arch x64 ; blendvps Rx(d), Rx(b));
    }

    /// `d = mask ? c : a` lane-wise with `c` a broadcast constant from the
    /// pool; `d` may equal `a`. Clobbers `xmm0` (SSE).
    fn select_const(&mut self, d: u8, a: u8, bits: u32, mask: u8) {
        let label = self.pool_label([bits; 4]);
        if self.avx {
            dynasm!(self.ops ; .arch x64 ; vblendvps Rx(d), Rx(a), [=>label], Rx(mask));
            return;
        }
        if mask != 0 {
            dynasm!(self.ops ; .arch x64 ; movaps xmm0, Rx(mask));
        }
        self.copy(d, a);
        dynasm!(self.ops ; .arch x64 ; blendvps Rx(d), [=>label]);
    }

    fn copy(&mut self, d: u8, a: u8) {
        if d != a {
            dynasm!(self.ops ; .arch x64 ; movaps Rx(d), Rx(a));
        }
    }

    /// Scratch `s` = a broadcast 32-bit constant from the shared pool.
    fn splat_const(&mut self, s: u8, bits: u32) {
        self.const_vector(s, [bits; 4]);
    }

    /// `d` = a 16-byte constant from the per-shader pool (zero by `xorps`).
    fn const_vector(&mut self, d: u8, bits: [u32; 4]) {
        if bits == [0; 4] {
            dynasm!(self.ops ; .arch x64 ; xorps Rx(d), Rx(d));
            return;
        }
        if bits == [u32::MAX; 4] {
            dynasm!(self.ops ; .arch x64 ; pcmpeqd Rx(d), Rx(d));
            return;
        }
        let label = self.pool_label(bits);
        dynasm!(self.ops ; .arch x64 ; movaps Rx(d), [=>label]);
    }

    /// The label of a 16-byte constant in the per-shader pool.
    fn pool_label(&mut self, bits: [u32; 4]) -> dynasmrt::DynamicLabel {
        match self.pool.iter().find(|(b, _)| *b == bits) {
            Some(&(_, label)) => label,
            None => {
                let label = self.ops.new_dynamic_label();
                self.pool.push((bits, label));
                label
            }
        }
    }

    /// Broadcasts lane 0 of `d` to every lane.
    fn broadcast(&mut self, d: u8) {
        dynasm!(self.ops ; .arch x64 ; pshufd Rx(d), Rx(d), 0);
    }

    /// Emits the code of one node; `regs` holds its operands' registers (in
    /// the form's order) and `d` receives the value.
    pub(super) fn emit_node(
        &mut self,
        op: Op,
        form: Form,
        d: u8,
        regs: &[u8],
    ) -> Result<(), JitError> {
        match form {
            Form::Folded => return Ok(()),
            Form::ConvertedInput(n) => {
                let off = OFFSET_CONVERTED_INPUTS + 16 * (n & 15) as i32;
                dynasm!(self.ops ; .arch x64 ; movaps Rx(d), [rbx + off]);
                return Ok(());
            }
            Form::Same(_) => {
                self.copy(d, regs[0]);
                return Ok(());
            }
            Form::QuantizeOf(_) => {
                self.unary(UnOp::F24Quantize, d, regs[0]);
                return Ok(());
            }
            Form::Relative { base, offset, reg } => {
                match offset {
                    Some(_) => dynasm!(self.ops ; .arch x64 ; movd eax, Rx(regs[0])),
                    None => {
                        let off = addr_offset(reg);
                        dynasm!(self.ops ; .arch x64 ; mov eax, [r12 + off]);
                    }
                }
                dynasm!(self.ops
                    ; .arch x64
                    // offset outside -128..=127 → 0
                    ; lea ecx, [rax + 128]
                    ; xor edx, edx
                    ; cmp ecx, 255
                    ; cmova eax, edx
                    ; add eax, base as i32
                    ; and eax, 0x7F
                );
                self.read_const_at_eax(d);
                return Ok(());
            }
            Form::Own => {}
        }
        let r = |k: usize| regs[k];
        match op {
            Op::Const { ty, bits } => {
                let mut lanes = if ty.lanes == 1 { [bits[0]; 4] } else { bits };
                if ty.elem == Elem::Bool {
                    lanes = lanes.map(|b| if b != 0 { u32::MAX } else { 0 });
                }
                self.const_vector(d, lanes);
            }
            Op::ReadInput(n) => {
                let off = INPUTS + 16 * (n & 15) as i32;
                dynasm!(self.ops ; .arch x64 ; movaps Rx(d), [r12 + off]);
            }
            Op::ReadTemp(n) => {
                let off = TEMPS + 16 * (n & 15) as i32;
                dynasm!(self.ops ; .arch x64 ; movaps Rx(d), [r12 + off]);
            }
            Op::ReadConst(n) => {
                let off = FLOATS + 16 * n.min(95) as i32;
                dynasm!(self.ops ; .arch x64 ; movaps Rx(d), [r13 + off]);
            }
            Op::ReadConstAt(_) => {
                dynasm!(self.ops ; .arch x64 ; movd eax, Rx(r(0)));
                self.read_const_at_eax(d);
            }
            Op::ReadAddr(reg) => {
                let off = addr_offset(reg);
                dynasm!(self.ops ; .arch x64 ; movd Rx(d), [r12 + off]);
                self.broadcast(d);
            }
            Op::ReadFlag(f) => {
                let off = CMP + (f & 1) as i32;
                dynasm!(self.ops ; .arch x64 ; movzx eax, BYTE [r12 + off]);
                self.splat_eax(d, true);
            }
            Op::ReadBoolUniform(n) => {
                let off = BOOLS + (n & 15) as i32;
                dynasm!(self.ops ; .arch x64 ; movzx eax, BYTE [r13 + off]);
                self.splat_eax(d, true);
            }
            Op::ReadIntUniform { id, field } => {
                let off = INTS + 4 * (id & 3) as i32 + (field & 3) as i32;
                dynasm!(self.ops ; .arch x64 ; movzx eax, BYTE [r13 + off]);
                self.splat_eax(d, false);
            }
            Op::Store { dst, mask, .. } => {
                let off = match dst {
                    DstReg::Temp(n) => TEMPS + 16 * (n & 15) as i32,
                    DstReg::Output(n) => OUTPUTS + 16 * (n & 15) as i32,
                };
                let m = mask.0 & 0xF;
                if m == 0xF {
                    dynasm!(self.ops ; .arch x64 ; movaps [r12 + off], Rx(r(0)));
                } else if m != 0 {
                    let imm = mask.lane_bits() as i8;
                    dynasm!(self.ops ; .arch x64 ; movaps Rx(S1), [r12 + off]);
                    self.v3(V::Blendps(imm), S1, S1, r(0));
                    dynasm!(self.ops ; .arch x64 ; movaps [r12 + off], Rx(S1));
                }
            }
            Op::WriteAddr(reg, _) => {
                let off = addr_offset(reg);
                dynasm!(self.ops ; .arch x64 ; movd [r12 + off], Rx(r(0)));
            }
            Op::WriteFlag(f, _) => {
                let off = CMP + (f & 1) as i32;
                dynasm!(self.ops
                    ; .arch x64
                    ; movd eax, Rx(r(0))
                    ; and eax, 1
                    ; mov BYTE [r12 + off], al
                );
            }
            Op::Swizzle(_, lanes) => {
                let imm = shuffle_imm(lanes);
                dynasm!(self.ops ; .arch x64 ; pshufd Rx(d), Rx(r(0)), imm);
            }
            Op::Extract(_, lane) => {
                let imm = shuffle_imm([lane; 4]);
                dynasm!(self.ops ; .arch x64 ; pshufd Rx(d), Rx(r(0)), imm);
            }
            Op::Splat(_) => self.copy(d, r(0)),
            Op::Blend { take_b, .. } => {
                self.v3(V::Blendps(take_b.lane_bits() as i8), d, r(0), r(1));
            }
            Op::Select { .. } => self.select(d, r(2), r(1), r(0)),
            Op::Unary(u, _) => self.unary(u, d, r(0)),
            Op::Binary(b, _, _) => self.binary(b, d, r(0), r(1)),
            Op::FCmp(c, _, _) => {
                let (swap, p) = match c {
                    CmpOp::True6 | CmpOp::True7 => {
                        self.const_vector(d, [u32::MAX; 4]);
                        return Ok(());
                    }
                    CmpOp::Eq => (false, 0),
                    CmpOp::Ne => (false, 4), // unordered or not equal
                    CmpOp::Lt => (false, 1),
                    CmpOp::Le => (false, 2),
                    CmpOp::Gt => (true, 1),
                    CmpOp::Ge => (true, 2),
                };
                let (a, b) = if swap { (r(1), r(0)) } else { (r(0), r(1)) };
                self.v3(V::Cmpps(p), d, a, b);
            }
            Op::ICmp(c, _, _) => {
                let (a, b) = (r(0), r(1));
                let (op, x, y, invert) = match c {
                    CmpOp::True6 | CmpOp::True7 => {
                        self.const_vector(d, [u32::MAX; 4]);
                        return Ok(());
                    }
                    CmpOp::Eq => (V::Pcmpeqd, a, b, false),
                    CmpOp::Ne => (V::Pcmpeqd, a, b, true),
                    CmpOp::Gt => (V::Pcmpgtd, a, b, false),
                    CmpOp::Lt => (V::Pcmpgtd, b, a, false),
                    CmpOp::Le => (V::Pcmpgtd, a, b, true),
                    CmpOp::Ge => (V::Pcmpgtd, b, a, true),
                };
                self.v3(op, d, x, y);
                if invert {
                    self.not(d);
                }
            }
        }
        Ok(())
    }

    /// `d` = `eax` in every lane; with `as_mask` a boolean byte (0 or 1)
    /// becomes a lane mask (all ones or zero).
    fn splat_eax(&mut self, d: u8, as_mask: bool) {
        if as_mask {
            dynasm!(self.ops ; .arch x64 ; neg eax);
        }
        dynasm!(self.ops ; .arch x64 ; movd Rx(d), eax);
        self.broadcast(d);
    }

    /// `d = c[eax]`, or (1, 1, 1, 1) when `eax` (unsigned) is above 95.
    fn read_const_at_eax(&mut self, d: u8) {
        dynasm!(self.ops
            ; .arch x64
            ; mov ecx, eax
            ; shl ecx, 4
            ; lea rcx, [r13 + rcx + FLOATS]
            ; lea rdx, [->ones]
            ; cmp eax, 95
            ; cmova rcx, rdx
            ; movaps Rx(d), [rcx]
        );
    }

    /// `d = !d` (all bits).
    fn not(&mut self, d: u8) {
        dynasm!(self.ops ; .arch x64 ; pcmpeqd Rx(S1), Rx(S1) ; pxor Rx(d), Rx(S1));
    }

    fn unary(&mut self, u: UnOp, d: u8, a: u8) {
        match u {
            UnOp::Floor => dynasm!(self.ops ; .arch x64 ; roundps Rx(d), Rx(a), 9),
            UnOp::Sqrt => dynasm!(self.ops ; .arch x64 ; sqrtps Rx(d), Rx(a)),
            UnOp::FlipSign => {
                self.v3m(V::Xorps, d, a, 0x8000_0000);
            }
            UnOp::Canonicalize => {
                self.copy(d, a);
                self.ir_canonicalize(d);
            }
            UnOp::F24Load => {
                self.copy(d, a);
                self.ir_f24_load(d);
            }
            UnOp::F24Flush => {
                // |x| < 2^-62 → +0, everything else unchanged.
                self.v3m(V::Andps, S1, a, 0x7FFF_FFFF);
                self.v3m(V::Pcmpgtd, S1, S1, 0x207F_FFFF);
                self.v3(V::Andps, d, a, S1);
            }
            UnOp::F24Quantize => {
                // S2 = |bits|; d = truncated mantissa, +0 below 2^-62 (the sign
                // stays on the other lanes). Lanes of 2^64 and above (±inf, NaN
                // included) are rare: they take the tail out of line.
                self.copy(d, a);
                self.v3m(V::Andps, S2, d, 0x7FFF_FFFF);
                self.v3m(V::Pcmpgtd, S1, S2, 0x207F_FFFF);
                self.v3m(V::Andps, d, d, 0xFFFF_FF80);
                self.v3(V::Andps, d, d, S1);
                self.v3m(V::Pcmpgtd, S3, S2, 0x5F7F_FFFF);
                let label = self.ops.new_dynamic_label();
                let back = self.ops.new_dynamic_label();
                if self.avx {
                    dynasm!(self.ops ; .arch x64 ; vptest Rx(S3), Rx(S3));
                } else {
                    dynasm!(self.ops ; .arch x64 ; ptest Rx(S3), Rx(S3));
                }
                dynasm!(self.ops ; .arch x64 ; jnz =>label ; =>back);
                self.cold
                    .push(crate::jit::x64::Cold::F24Overflow { label, back, d });
            }
            UnOp::ToI32 => {
                // Truncate; out of range or NaN → i32::MIN, then x ≥ 2^31 →
                // i32::MAX and NaN → 0 (`arith::mova`).
                dynasm!(self.ops ; .arch x64 ; cvttps2dq Rx(d), Rx(a));
                self.splat_const(S1, 0x4F00_0000);
                self.v3(V::Cmpps(2), S1, S1, a); // 2^31 <= x
                self.select_const(d, d, 0x7FFF_FFFF, S1);
                self.v3(V::Cmpps(7), S1, a, a); // ordered
                self.v3(V::Andps, d, d, S1);
            }
            UnOp::ToF32 => dynasm!(self.ops ; .arch x64 ; cvtdq2ps Rx(d), Rx(a)),
            UnOp::Bits | UnOp::FromBits => self.copy(d, a),
            UnOp::Shl(n) => {
                self.copy(d, a);
                dynasm!(self.ops ; .arch x64 ; pslld Rx(d), n as i8);
            }
            UnOp::Sar(n) => {
                self.copy(d, a);
                dynasm!(self.ops ; .arch x64 ; psrad Rx(d), n as i8);
            }
            UnOp::Shr(n) => {
                self.copy(d, a);
                dynasm!(self.ops ; .arch x64 ; psrld Rx(d), n as i8);
            }
            UnOp::Not => {
                self.copy(d, a);
                self.not(d);
            }
        }
    }

    /// NaN lanes of `d` → the canonical NaN.
    fn ir_canonicalize(&mut self, d: u8) {
        self.v3(V::Cmpps(3), S1, d, d);
        self.select_const(d, d, 0x7FC0_0000, S1);
    }

    /// `arith::f24::load` in place (the prologue's entry conversion too).
    pub(in crate::jit::x64) fn ir_f24_load(&mut self, d: u8) {
        // S2 = |bits|; S3 = normal path (truncated mantissa); S1 = subnormal
        // path trunc(x * 2^78) * 2^-78.
        self.v3m(V::Andps, S2, d, 0x7FFF_FFFF);
        self.v3m(V::Andps, S3, d, 0xFFFF_FF80);
        self.v3m(
            V::Mulps,
            S1,
            d,
            crate::arith::f24::SUBNORMAL_SCALE.to_bits(),
        );
        dynasm!(self.ops ; .arch x64 ; cvttps2dq Rx(S1), Rx(S1) ; cvtdq2ps Rx(S1), Rx(S1));
        self.v3m(
            V::Mulps,
            S1,
            S1,
            crate::arith::f24::SUBNORMAL_QUANTUM.to_bits(),
        );
        // At or above 2^-62: the normal path.
        self.v3m(V::Pcmpgtd, 0, S2, 0x207F_FFFF);
        self.select(S1, S1, S3, 0);
        self.ir_f24_tail(d, S1, S3);
    }

    /// Shared tail of the float24 conversions: `S2` = |bits of d|, `fin` = the
    /// finite result, `tmp` a free scratch register; writes `d` = ±inf for
    /// |x| ≥ 2^64, canonical NaN for NaN, else `fin`.
    fn ir_f24_tail(&mut self, d: u8, fin: u8, tmp: u8) {
        // tmp = ±inf with d's sign.
        self.v3m(V::Andps, tmp, d, 0x8000_0000);
        self.v3m(V::Orps, tmp, tmp, 0x7F80_0000);
        self.v3m(V::Pcmpgtd, 0, S2, 0x5F7F_FFFF);
        self.select(fin, fin, tmp, 0);
        self.v3m(V::Pcmpgtd, 0, S2, 0x7F80_0000);
        self.select_const(d, fin, 0x7FC0_0000, 0);
    }

    /// The out-of-line tail of `f24_quantize` in `d`, with `S2` = |bits| of
    /// the value: ±inf (its sign is still in `d`) for |x| ≥ 2^64, the
    /// canonical NaN for NaN.
    pub(in crate::jit::x64) fn f24_overflow_tail(&mut self, d: u8) {
        self.ir_f24_tail(d, d, S3);
    }

    /// `d = mul_rule(a, b)`: NaN product from non-NaN operands (inf * 0) →
    /// +0, any other NaN → the canonical NaN.
    pub(in crate::jit::x64) fn exact_pica_mul(&mut self, d: u8, a: u8, b: u8) {
        self.v3(V::Mulps, d, a, b);
        self.v3(V::Cmpps(7), S2, a, b); // neither operand NaN
        self.v3(V::Cmpps(3), S1, d, d); // product NaN
        self.v3(V::Andps, S2, S2, S1); // inf * 0
        self.select_const(d, d, 0x7FC0_0000, S1);
        if self.avx {
            self.v3(V::Andnps, d, S2, d);
        } else {
            self.v3(V::Andnps, S2, S2, d);
            self.copy(d, S2);
        }
    }

    fn binary(&mut self, op: BinOp, d: u8, a: u8, b: u8) {
        match op {
            BinOp::FAdd => self.v3(V::Addps, d, a, b),
            BinOp::FSub => self.v3(V::Subps, d, a, b),
            BinOp::FMul => self.v3(V::Mulps, d, a, b),
            BinOp::FDiv => self.v3(V::Divps, d, a, b),
            BinOp::PicaMul => {
                // The IEEE product is the PICA one unless a lane is NaN: then
                // the exact sequence runs out of line (operands are still live).
                self.v3(V::Mulps, d, a, b);
                self.v3(V::Cmpps(3), S1, d, d);
                let label = self.ops.new_dynamic_label();
                let back = self.ops.new_dynamic_label();
                if self.avx {
                    dynasm!(self.ops ; .arch x64 ; vptest Rx(S1), Rx(S1));
                } else {
                    dynasm!(self.ops ; .arch x64 ; ptest Rx(S1), Rx(S1));
                }
                dynasm!(self.ops ; .arch x64 ; jnz =>label ; =>back);
                self.cold.push(crate::jit::x64::Cold::PicaMul {
                    label,
                    back,
                    d,
                    a,
                    b,
                });
            }
            // maxps(a, b) = a > b ? a : b: `arith::max` exactly (min likewise).
            BinOp::PicaMax => self.v3(V::Maxps, d, a, b),
            BinOp::PicaMin => self.v3(V::Minps, d, a, b),
            BinOp::IAdd => self.v3(V::Paddd, d, a, b),
            BinOp::ISub => self.v3(V::Psubd, d, a, b),
            BinOp::And | BinOp::BAnd => self.v3(V::Andps, d, a, b),
            BinOp::Or | BinOp::BOr => self.v3(V::Orps, d, a, b),
        }
    }
}

#[cfg(test)]
mod tests {
    use dynasmrt::x64::X64Relocation;
    use dynasmrt::{DynasmApi, VecAssembler, dynasm};

    /// The assembler writes `vcmpps`/`vblendps` with their sources swapped
    /// (ModRM.rm holds the written first source, VEX.vvvv the second), which
    /// `v3` compensates: pin the encoding so an assembler fix shows up here.
    #[test]
    fn vex_source_order() {
        let mut ops: VecAssembler<X64Relocation> = VecAssembler::new(0);
        let (d, a, b) = (13u8, 2u8, 5u8);
        dynasm!(ops ; .arch x64 ; vcmpps Rx(d), Rx(a), Rx(b), 1 ; vsubps Rx(d), Rx(a), Rx(b));
        let code = ops.finalize().unwrap();
        // vcmpltps xmm13, xmm5, xmm2: vvvv = !5, rm = 2.
        assert_eq!(code[..6], [0xC4, 0x61, 0x50, 0xC2, 0xEA, 0x01]);
        // vsubps xmm13, xmm2, xmm5: vvvv = !2, rm = 5 (the written order).
        assert_eq!(code[6..], [0xC4, 0x61, 0x68, 0x5C, 0xED]);
    }
}
