//! The single-vertex lowering of the nodes whose code is its own: reads and
//! writes of the state (frame memory operands), swizzles, blends, constants
//! and the relative-addressing pattern. Every IR primitive (arithmetic,
//! comparisons, float24, `mova`) goes to the shared emitter
//! ([`crate::jit::x64::emit`]). Register roles: see the module above; `d` is
//! the result register (never an operand's), `xmm0` and `xmm13..=xmm15` are
//! scratch, and so are `rax`, `rcx`, `r8`, `r9`.

use super::Form;
use super::dot::{DotSum, MatrixPart, Row};
use crate::arith::Precision;
use crate::ir::{Op, UnOp};
use crate::jit::frame::OFFSET_CONVERTED_INPUTS;
use crate::jit::single::state::{self, Base};
use crate::jit::x64::Emitter;
use crate::jit::x64::emit::{
    DotTerms, MatrixRow, Mem, S1, Vector, movaps_load, movaps_store, pshufd, pshufd_mem, vblendps,
    write_flag,
};
use crate::jit::x64::offsets::FLOATS;
use dynasmrt::{DynasmApi, DynasmLabelApi, dynasm};

fn shuffle_imm(lanes: [u8; 4]) -> u8 {
    lanes[0] & 3 | (lanes[1] & 3) << 2 | (lanes[2] & 3) << 4 | (lanes[3] & 3) << 6
}

/// The frame's base registers, as the hand-written encodings name them.
const RDX: u8 = 2;
const RSP: u8 = 4;
const RSI: u8 = 6;
const RDI: u8 = 7;

impl Emitter<'_> {
    /// The shared vector emitter on this code.
    pub(in crate::jit::x64) fn vector(&mut self) -> Vector<'_> {
        self.vector.on(&mut self.ops)
    }

    /// `d = b` in the lanes of `imm`'s bits, else `a`; `d` may equal `a` but
    /// not `b`.
    #[inline(never)]
    fn blend(&mut self, d: u8, a: u8, b: u8, imm: i8) {
        if self.avx {
            // Encoded by hand, sources in the manual's order (`dynasm`
            // swaps them: `emit::tests::vex_source_order`).
            vblendps(d, a, b, imm as u8, false).put(&mut self.ops);
        } else {
            self.vector().copy(d, a);
            dynasm!(self.ops ; .arch x64 ; blendps Rx(d), Rx(b), imm);
        }
    }

    /// Broadcasts lane 0 of `d` to every lane.
    fn broadcast(&mut self, d: u8) {
        pshufd(d, d, 0).put(&mut self.ops);
    }

    /// Emits the code of one node; `regs` holds its operands' registers (in
    /// the form's order) and `d` receives the value.
    #[inline]
    pub(super) fn emit_node(&mut self, op: &Op, form: &Form, d: u8, regs: &[u8]) {
        // Most nodes are their own sequence: one test of the form, then the
        // operation's dispatch (each in a function of its own, saving only
        // the registers it needs).
        if let Form::Own = form {
            self.emit_own(op, d, regs);
        } else {
            self.emit_pattern(form, d, regs);
        }
    }

    /// Emits the code of a node of a pattern's form (not [`Form::Own`]).
    fn emit_pattern(&mut self, form: &Form, d: u8, regs: &[u8]) {
        match *form {
            Form::Folded => (),
            Form::ConvertedInput(n) => {
                let off = OFFSET_CONVERTED_INPUTS + 16 * (n & 15) as i32;
                movaps_load(d, Mem::named(RDI, off)).put(&mut self.ops);
            }
            Form::Same(_) => {
                self.vector().copy(d, regs[0]);
            }
            Form::QuantizeOf(_, lanes) => {
                if lanes == super::IDENTITY {
                    self.vector().unary(UnOp::F24Quantize, d, regs[0]);
                } else {
                    // The quantisation works in place.
                    let imm = shuffle_imm(lanes);
                    pshufd(d, regs[0], imm).put(&mut self.ops);
                    self.vector().unary(UnOp::F24Quantize, d, d);
                }
            }
            Form::QuantizeConst(n, lanes) => {
                let off = state::float_uniform(n) as i32;
                if lanes == super::IDENTITY {
                    movaps_load(d, Mem::named(RDX, off)).put(&mut self.ops);
                } else {
                    let imm = shuffle_imm(lanes);
                    pshufd_mem(d, Mem::named(RDX, off), imm).put(&mut self.ops);
                }
                // The quantisation works in place.
                self.vector().unary(UnOp::F24Quantize, d, d);
            }
            Form::FlushedUniform(n, lanes) => {
                let off =
                    crate::jit::uniform_cache::OFFSET_FLUSHED + state::float_uniform(n) as i32;
                if lanes == super::IDENTITY {
                    movaps_load(d, Mem::named(RDX, off)).put(&mut self.ops);
                } else {
                    let imm = shuffle_imm(lanes);
                    pshufd_mem(d, Mem::named(RDX, off), imm).put(&mut self.ops);
                }
            }
            Form::FlushedInput(n, lanes) => {
                let off = self.flushed_input_offset(n);
                if lanes == super::IDENTITY {
                    movaps_load(d, Mem::named(RSP, off)).put(&mut self.ops);
                } else {
                    let imm = shuffle_imm(lanes);
                    pshufd_mem(d, Mem::named(RSP, off), imm).put(&mut self.ops);
                }
            }
            Form::Relative { base, offset, reg } => {
                match offset {
                    Some(_) => dynasm!(self.ops ; .arch x64 ; movd eax, Rx(regs[0])),
                    None => {
                        let off = state::addr(reg) as i32;
                        dynasm!(self.ops ; .arch x64 ; mov eax, [rsi + off]);
                    }
                }
                dynasm!(self.ops
                    ; .arch x64
                    // offset outside -128..=127 → 0
                    ; lea ecx, [rax + 128]
                    ; xor r9d, r9d
                    ; cmp ecx, 255
                    ; cmova eax, r9d
                    ; add eax, base as i32
                    ; and eax, 0x7F
                );
                self.read_const_at_eax(d);
            }
            Form::DotSum(sum) => {
                let terms = match sum {
                    DotSum::Terms(_) => DotTerms::Terms(regs[0]),
                    DotSum::Products { clear_w, .. } => DotTerms::Products {
                        a: regs[0],
                        b: regs[1],
                        clear_w,
                    },
                };
                self.vector().f24_dot_sum(d, terms);
            }
            Form::Matrix(part) => match part {
                MatrixPart::Half { .. } => {
                    self.vector().f24_dot_pair(d, regs[0], regs[1], regs[2]);
                }
                MatrixPart::Quad { .. } if self.precision == Precision::F32 => {
                    self.vector().f32_dot_quad(d, regs[0], regs[1]);
                }
                MatrixPart::Quad { .. } => {
                    self.vector().f24_dot_quad(d, regs[0], regs[1]);
                }
            },
            Form::F32Half { b, .. } => {
                // The registers: `a`, then the rows not in memory.
                let mut next = 1;
                let rows = b.map(|row| match row {
                    Row::Value(_) => {
                        next += 1;
                        MatrixRow::Reg(regs[next - 1])
                    }
                    Row::Mem(mem) => {
                        let (base, off) = mem.address();
                        MatrixRow::Mem { base, off }
                    }
                });
                self.vector().f32_dot_pair(d, regs[0], rows);
            }
            Form::ShuffleMem(mem, lanes) => {
                let imm = shuffle_imm(lanes);
                let (base, off) = mem.address();
                pshufd_mem(d, Mem::dynamic(base, off), imm).put(&mut self.ops);
            }
            Form::BinaryMem { op, mem, .. } => {
                let (base, off) = mem.address();
                self.vector().binary_mem(op, d, regs[0], base, off);
            }
            // [`Self::emit_node`] tests it first.
            Form::Own => {}
        }
    }

    /// Emits the code of node `op` in its own form ([`Form::Own`]).
    ///
    /// Only a dispatch: every arm is a call in tail position with the
    /// arguments in registers, so it compiles to a jump and this function
    /// needs no stack frame. With the sequences inline it saved six
    /// registers and built a [`Vector`] on its stack for every node (a
    /// thousand times per large shader) whatever the arm needed.
    fn emit_own(&mut self, op: &Op, d: u8, regs: &[u8]) {
        match *op {
            Op::Unary(u, _) => self.own_unary(u, d, regs[0]),
            Op::Binary(b, _, _) => self.own_binary(b, d, regs[0], regs[1]),
            Op::Const { .. } => self.own_const(op, d),
            Op::Store { .. } => self.own_store(op, regs[0]),
            Op::Swizzle(..) | Op::Extract(..) => self.own_shuffle(op, d, regs[0]),
            Op::Blend { take_b, .. } => self.blend(d, regs[0], regs[1], take_b.lane_bits() as i8),
            Op::FCmp(c, _, _) => self.own_fcmp(c, d, regs[0], regs[1]),
            Op::ReadInput(_) | Op::ReadTemp(_) | Op::ReadConst(_) => self.read_vector(d, op),
            Op::Select { .. } => self.own_select(d, regs[2], regs[1], regs[0]),
            Op::WriteFlag(f, _) => self.own_write_flag(f, regs[0]),
            _ => self.own_other(op, d, regs),
        }
    }

    /// [`Self::emit_own`] of `Op::Unary`.
    #[inline(never)]
    fn own_unary(&mut self, u: UnOp, d: u8, a: u8) {
        self.vector().unary(u, d, a);
    }

    /// [`Self::emit_own`] of `Op::Binary`.
    #[inline(never)]
    fn own_binary(&mut self, b: crate::ir::BinOp, d: u8, x: u8, y: u8) {
        self.vector().binary(b, d, x, y);
    }

    /// [`Self::emit_own`] of `Op::FCmp`.
    #[inline(never)]
    fn own_fcmp(&mut self, c: crate::isa::CmpOp, d: u8, x: u8, y: u8) {
        self.vector().fcmp(c, d, x, y);
    }

    /// [`Self::emit_own`] of `Op::Select`: `d = mask ? b : a`.
    #[inline(never)]
    fn own_select(&mut self, d: u8, a: u8, b: u8, mask: u8) {
        self.vector().select(d, a, b, mask);
    }

    /// [`Self::emit_own`] of `Op::WriteFlag` of register `s`.
    #[inline(never)]
    fn own_write_flag(&mut self, f: u8, s: u8) {
        write_flag(s, state::flag(f) as i32).put(&mut self.ops);
    }

    /// [`Self::emit_own`] of `Op::Const`.
    #[inline(never)]
    fn own_const(&mut self, op: &Op, d: u8) {
        if let Op::Const { ty, bits } = *op {
            self.vector()
                .constant_lanes(d, state::constant_lanes(ty, bits));
        }
    }

    /// [`Self::emit_own`] of `Op::Store` of the value in register `s`.
    #[inline(never)]
    fn own_store(&mut self, op: &Op, s: u8) {
        let Op::Store { dst, mask, .. } = *op else {
            return;
        };
        let off = state::destination(dst) as i32;
        let m = mask.0 & 0xF;
        if m == 0xF {
            movaps_store(Mem::named(RSI, off), s).put(&mut self.ops);
        } else if m != 0 {
            let imm = mask.lane_bits() as i8;
            movaps_load(S1, Mem::named(RSI, off)).put(&mut self.ops);
            self.blend(S1, S1, s, imm);
            movaps_store(Mem::named(RSI, off), S1).put(&mut self.ops);
        }
    }

    /// [`Self::emit_own`] of `Op::Swizzle` and `Op::Extract` of register `a`.
    #[inline(never)]
    fn own_shuffle(&mut self, op: &Op, d: u8, a: u8) {
        let lanes = match *op {
            Op::Swizzle(_, lanes) => lanes,
            Op::Extract(_, lane) => [lane; 4],
            _ => return,
        };
        pshufd(d, a, shuffle_imm(lanes)).put(&mut self.ops);
    }

    /// [`Self::emit_own`] of the rarer operations.
    #[inline(never)]
    fn own_other(&mut self, op: &Op, d: u8, regs: &[u8]) {
        let r = |k: usize| regs[k];
        match *op {
            Op::ReadConstAt(_) => {
                dynasm!(self.ops ; .arch x64 ; movd eax, Rx(r(0)));
                self.read_const_at_eax(d);
            }
            Op::ReadAddr(reg) => {
                let off = state::addr(reg) as i32;
                dynasm!(self.ops ; .arch x64 ; movd Rx(d), [rsi + off]);
                self.broadcast(d);
            }
            Op::ReadFlag(f) => {
                let off = state::flag(f) as i32;
                dynasm!(self.ops ; .arch x64 ; movzx eax, BYTE [rsi + off]);
                self.splat_eax(d, true);
            }
            Op::ReadBoolUniform(n) => {
                let off = state::bool_uniform(n) as i32;
                dynasm!(self.ops ; .arch x64 ; movzx eax, BYTE [rdx + off]);
                self.splat_eax(d, true);
            }
            Op::ReadIntUniform { id, field } => {
                let off = state::int_uniform(id, field) as i32;
                dynasm!(self.ops ; .arch x64 ; movzx eax, BYTE [rdx + off]);
                self.splat_eax(d, false);
            }
            Op::WriteAddr(reg, _) => {
                let off = state::addr(reg) as i32;
                dynasm!(self.ops ; .arch x64 ; movd [rsi + off], Rx(r(0)));
            }
            Op::Splat(_) => self.vector().copy(d, r(0)),
            Op::ICmp(c, _, _) => self.vector().icmp(c, d, r(0), r(1)),
            // [`Self::emit_own`]'s own arms.
            Op::Const { .. }
            | Op::ReadInput(_)
            | Op::ReadTemp(_)
            | Op::ReadConst(_)
            | Op::Store { .. }
            | Op::Swizzle(..)
            | Op::Extract(..)
            | Op::Blend { .. }
            | Op::Select { .. }
            | Op::WriteFlag(..)
            | Op::Unary(..)
            | Op::Binary(..)
            | Op::FCmp(..) => self.emit_own(op, d, regs),
        }
    }

    /// `d` = the whole register `op` reads ([`state::vector_read`]).
    #[inline(never)]
    fn read_vector(&mut self, d: u8, op: &Op) {
        match state::vector_read(*op) {
            Some((Base::State, off)) => {
                movaps_load(d, Mem::named(RSI, off as i32)).put(&mut self.ops);
            }
            Some((Base::Uniforms, off)) => {
                movaps_load(d, Mem::named(RDX, off as i32)).put(&mut self.ops);
            }
            None => {}
        }
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
            ; lea rcx, [rdx + rcx + FLOATS]
            ; lea r9, [=>self.labels.ones]
            ; cmp eax, 95
            ; cmova rcx, r9
            ; movaps Rx(d), [rcx]
        );
    }
}
