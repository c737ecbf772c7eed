//! The AArch64 wide lowering (NEON, 4 lanes): each block of lane operations
//! ([`crate::jit::wide::lanes`]) becomes one function
//! `(register file, uniforms, constant pool) -> exit mask` that runs the block
//! for every lane at once, with the same contract as the x86-64 lowering
//! (`x64/wide/`): rows of the register file in, rows out, the exit
//! condition's lane mask returned (bit `k` = the sign bit of lane `k`) and a
//! `loop` exit's count and increment (lane 0) stored in the header.
//!
//! The constant pool sits at offset 0 of the code and its address is the
//! third argument (`x2`), so no function depends on the ±1 MiB reach of
//! `adr` however large the shader grows; every branch is local to a few
//! instructions or unconditional.
//!
//! Registers: `v16..=v27` hold the pool's constants (loaded on entry);
//! values live in `v1..=v3`, `v7`, `v28..=v31` and the callee-saved
//! `v8..=v15` (their low halves saved on entry), allocated by the wide
//! lowerings' shared allocator and driver ([`crate::jit::wide::codegen`]; this
//! module is the AArch64 [`Target`]); `v0` and `v4..=v6` are scratch inside
//! one operation. `x9..=x11` are scratch.
//!
//! Every rule of the PICA arithmetic is the single-vertex AArch64 lowering's
//! sequence (`lower.rs`, `operands.rs`), operation for operation: ordered
//! `fcmeq`/`fcmgt`/`fcmge` compares (false on NaN, like `cmpps`' ordered
//! predicates), max/min as compare + select (`maxps`/`minps`' "second operand
//! unless a > b"), the exact PICA multiply inline (NEON has no cheap lane
//! test to branch on, and the sequence is short), saturating `fcvtzs`
//! (`arith::mova`: NaN → 0), float24 conversions with integer compares on the
//! absolute bits. FPCR is 0 while generated code runs (round to nearest, no
//! flush to zero, no default NaN), as in the single-vertex backend.

mod kernel;
#[cfg(test)]
mod tests;

use super::{Asm, SYSREG_FPCR};
use crate::arith::f24;
use crate::ir::{BinOp, UnOp};
use crate::isa::CmpOp;
use crate::jit::JitError;
use crate::jit::wide::codegen::{self, Allocation, Functions, Module, Target, WideCode};
use crate::jit::wide::lanes::{LaneBlock, LaneOp};
use crate::jit::wide::layout;
use crate::jit::wide::plan::KernelPlan;
use crate::state::Uniforms;
use dynasmrt::{DynasmApi, DynasmLabelApi, dynasm};
use std::mem::offset_of;

/// The pool's constants, in order; constant `k` is pinned in `v{16 + k}`.
fn pool() -> [[u32; 4]; 12] {
    let s = |bits: u32| [bits; 4];
    [
        s(0x8000_0000),
        s(0x7FFF_FFFF),
        s(1.0f32.to_bits()),
        s(0x7F80_0000),
        s(crate::arith::CANONICAL_NAN.to_bits()),
        s(f24::MANTISSA_MASK),
        s(f24::MIN_NORMAL_BITS),
        s(f24::OVERFLOW_BITS),
        s(f24::SUBNORMAL_SCALE.to_bits()),
        s(f24::SUBNORMAL_QUANTUM.to_bits()),
        // Lane `k`'s bit of an exit mask.
        [1, 2, 4, 8],
        s(0),
    ]
}

const SIGN: u8 = 16;
const ABS: u8 = 17;
/// 1.0 (also what a gather outside `c0`–`c95` reads, from the pool).
const ONES: u8 = 18;
const INF: u8 = 19;
const NAN: u8 = 20;
const MANT: u8 = 21;
const MIN_NORMAL: u8 = 22;
const OVERFLOW: u8 = 23;
const SUB_SCALE: u8 = 24;
const SUB_QUANTUM: u8 = 25;
const LANE_BITS: u8 = 26;

/// Byte offset in the pool of pinned constant register `reg`.
fn pool_offset(reg: u8) -> u32 {
    16 * u32::from(reg - 16)
}

/// Registers that hold values, caller-saved ones first.
const VALUE_REGS: [u8; 16] = [1, 2, 3, 7, 28, 29, 30, 31, 8, 9, 10, 11, 12, 13, 14, 15];

/// Bytes of the stack frame that saves `d8..=d15`.
const FRAME: u32 = 64;

const FLOATS: u32 = offset_of!(Uniforms, f) as u32;

/// Compiles `blocks` for NEON (the one width AArch64 runs, the only one
/// `Width::available` offers there); `convert_inputs` (F24) is the mask of
/// the inputs the prologue converts.
pub(crate) fn compile(
    blocks: &[LaneBlock],
    convert_inputs: u16,
    kernel: Option<&KernelPlan>,
) -> Result<WideCode, JitError> {
    let mut a = Asm::new(0);
    dynasm!(a ; .arch aarch64 ; .align 16);
    for v in pool() {
        dynasm!(a ; .arch aarch64 ; .u32 v[0], v[1], v[2], v[3]);
    }
    let (Functions { prologue, entries }, kernel) =
        codegen::lower_blocks(&mut a, blocks, convert_inputs, kernel)?;
    let kernel = match kernel {
        Some(plan) => {
            let at = Module::offset(&a);
            let lowered = Function::new(&mut a).kernel(plan, blocks, convert_inputs);
            codegen::optional(lowered)?.map(|()| at)
        }
        None => None,
    };
    let bytes = a
        .finalize()
        .map_err(|e| JitError::Assemble(format!("{e:?}")))?;
    Ok(WideCode {
        bytes,
        entries,
        prologue,
        kernel,
        // NEON's kernel shades one group of the state layout per pass.
        pair_kernel: None,
        vertex_kernel: None,
        vertex_pair_kernel: None,
    })
}

/// One generated function.
pub(crate) struct Function<'a> {
    a: &'a mut Asm,
    allocation: Allocation,
    gathered: Vec<bool>,
}

/// Byte offset of row `row` (4 lanes).
fn row(row: usize) -> u32 {
    layout::row_offset(row, 4) as u32
}

impl Module for Asm {
    type Function<'m> = Function<'m>;

    fn offset(&self) -> usize {
        DynasmApi::offset(self).0
    }

    fn function(&mut self) -> Function<'_> {
        Function::new(self)
    }
}

impl Target for Function<'_> {
    const VALUE_REGS: &'static [u8] = &VALUE_REGS;

    fn allocation(&mut self) -> &mut Allocation {
        &mut self.allocation
    }

    fn load_row(&mut self, reg: u8, r: usize) {
        let off = row(r);
        dynasm!(self.a ; .arch aarch64 ; ldr Q(reg), [x0, off]);
    }

    fn store_row(&mut self, r: usize, reg: u8) {
        let off = row(r);
        dynasm!(self.a ; .arch aarch64 ; str Q(reg), [x0, off]);
    }

    fn lane_op(&mut self, op: LaneOp, d: u8, regs: &[u8]) -> Result<(), JitError> {
        self.emit(op, d, regs)
    }

    fn f24_load_in_place(&mut self, reg: u8) {
        self.f24_load(reg);
    }

    fn start_block(&mut self, gathers: usize) {
        self.gathered = vec![false; gathers];
    }

    /// Saves `d8..=d15`, sets FPCR = 0 (saving the host's in the header) and
    /// loads the pinned constants.
    fn enter(&mut self) {
        let saved = layout::SAVED_FP as u32;
        dynasm!(self.a
            ; .arch aarch64
            ; stp d8, d9, [sp, #-64]!
            ; stp d10, d11, [sp, #16]
            ; stp d12, d13, [sp, #32]
            ; stp d14, d15, [sp, #48]
            // Writing FPCR can be slow: only when the host's differs.
            ; mrs x9, SYSREG_FPCR
            ; str x9, [x0, saved]
            ; cbz x9, >fp_ok
            ; msr SYSREG_FPCR, xzr
            ; fp_ok:
            ; ldp q16, q17, [x2, #0]
            ; ldp q18, q19, [x2, #32]
            ; ldp q20, q21, [x2, #64]
            ; ldp q22, q23, [x2, #96]
            ; ldp q24, q25, [x2, #128]
            ; ldp q26, q27, [x2, #160]
        );
        const _: () = assert!(FRAME == 64);
    }

    /// Restores the host's FPCR and `d8..=d15` and returns `w10`.
    fn leave(&mut self) {
        let saved = layout::SAVED_FP as u32;
        dynasm!(self.a
            ; .arch aarch64
            ; ldr x9, [x0, saved]
            ; cbz x9, >fp_restored
            ; msr SYSREG_FPCR, x9
            ; fp_restored:
            ; mov w0, w10
            ; ldp d14, d15, [sp, #48]
            ; ldp d12, d13, [sp, #32]
            ; ldp d10, d11, [sp, #16]
            ; ldp d8, d9, [sp], #64
            ; ret
        );
    }

    fn exit_mask(&mut self, reg: u8) {
        // movmskps: the sign bit of each lane.
        dynasm!(self.a
            ; .arch aarch64
            ; cmlt v0.s4, V(reg).s4, 0
            ; and v0.b16, v0.b16, V(LANE_BITS).b16
            ; addv s0, v0.s4
            ; umov w10, v0.s[0]
        );
    }

    fn no_exit_mask(&mut self) {
        dynasm!(self.a ; .arch aarch64 ; movz w10, 0);
    }

    fn store_lane0(&mut self, offset: i32, reg: u8) {
        let off = offset as u32;
        dynasm!(self.a ; .arch aarch64 ; str S(reg), [x0, off]);
    }
}

impl<'a> Function<'a> {
    fn new(a: &'a mut Asm) -> Function<'a> {
        Function {
            a,
            allocation: Allocation::new(),
            gathered: Vec::new(),
        }
    }

    /// `v{d}` = `bits` in every lane.
    fn constant(&mut self, d: u8, bits: u32) {
        match bits {
            0 => dynasm!(self.a ; .arch aarch64 ; movi V(d).d2, 0),
            u32::MAX => dynasm!(self.a ; .arch aarch64 ; movi V(d).d2, u64::MAX),
            _ => dynasm!(self.a
                ; .arch aarch64
                ; movz w9, bits & 0xFFFF
                ; movk w9, bits >> 16, lsl 16
                ; dup V(d).s4, w9
            ),
        }
    }

    fn copy(&mut self, d: u8, a: u8) {
        if d != a {
            dynasm!(self.a ; .arch aarch64 ; mov V(d).b16, V(a).b16);
        }
    }

    fn emit(&mut self, op: LaneOp, d: u8, r: &[u8]) -> Result<(), JitError> {
        match op {
            LaneOp::Const(bits) => self.constant(d, bits),
            LaneOp::Row(rw) => {
                let off = row(rw as usize);
                dynasm!(self.a ; .arch aarch64 ; ldr Q(d), [x0, off]);
            }
            LaneOp::Uniform(off) => {
                let off = u32::from(off);
                dynasm!(self.a
                    ; .arch aarch64
                    ; ldr S(d), [x1, off]
                    ; dup V(d).s4, V(d).s[0]
                );
            }
            LaneOp::UniformByte { offset, mask } => {
                let off = u32::from(offset);
                dynasm!(self.a ; .arch aarch64 ; ldrb w9, [x1, off]);
                if mask {
                    dynasm!(self.a ; .arch aarch64 ; neg w9, w9);
                }
                dynasm!(self.a ; .arch aarch64 ; dup V(d).s4, w9);
            }
            LaneOp::Gather { comp, group, .. } => {
                if !self.gathered[group as usize] {
                    self.gather(r[0], group);
                    self.gathered[group as usize] = true;
                }
                let off = row(layout::GATHER + 4 * group as usize + comp as usize);
                dynasm!(self.a ; .arch aarch64 ; ldr Q(d), [x0, off]);
            }
            LaneOp::Unary(u, _) => self.unary(u, d, r[0]),
            LaneOp::Binary(b, _, _) => self.binary(b, d, r[0], r[1]),
            LaneOp::FCmp(c, _, _) => {
                let (a, b) = (r[0], r[1]);
                match c {
                    CmpOp::True6 | CmpOp::True7 => self.constant(d, u32::MAX),
                    CmpOp::Eq => {
                        dynasm!(self.a ; .arch aarch64 ; fcmeq V(d).s4, V(a).s4, V(b).s4)
                    }
                    // not (a == b): true when unordered (`cmpps` predicate 4).
                    CmpOp::Ne => dynasm!(self.a
                        ; .arch aarch64
                        ; fcmeq V(d).s4, V(a).s4, V(b).s4
                        ; mvn V(d).b16, V(d).b16
                    ),
                    CmpOp::Lt => {
                        dynasm!(self.a ; .arch aarch64 ; fcmgt V(d).s4, V(b).s4, V(a).s4)
                    }
                    CmpOp::Le => {
                        dynasm!(self.a ; .arch aarch64 ; fcmge V(d).s4, V(b).s4, V(a).s4)
                    }
                    CmpOp::Gt => {
                        dynasm!(self.a ; .arch aarch64 ; fcmgt V(d).s4, V(a).s4, V(b).s4)
                    }
                    CmpOp::Ge => {
                        dynasm!(self.a ; .arch aarch64 ; fcmge V(d).s4, V(a).s4, V(b).s4)
                    }
                }
            }
            LaneOp::ICmp(c, _, _) => {
                let (a, b) = (r[0], r[1]);
                let (x, y, invert) = match c {
                    CmpOp::True6 | CmpOp::True7 => {
                        self.constant(d, u32::MAX);
                        return Ok(());
                    }
                    CmpOp::Eq | CmpOp::Ne => {
                        dynasm!(self.a ; .arch aarch64 ; cmeq V(d).s4, V(a).s4, V(b).s4);
                        if c == CmpOp::Ne {
                            dynasm!(self.a ; .arch aarch64 ; mvn V(d).b16, V(d).b16);
                        }
                        return Ok(());
                    }
                    CmpOp::Gt => (a, b, false),
                    CmpOp::Lt => (b, a, false),
                    CmpOp::Le => (a, b, true),
                    CmpOp::Ge => (b, a, true),
                };
                dynasm!(self.a ; .arch aarch64 ; cmgt V(d).s4, V(x).s4, V(y).s4);
                if invert {
                    dynasm!(self.a ; .arch aarch64 ; mvn V(d).b16, V(d).b16);
                }
            }
            // d = cond ? a : b (conditions are whole-lane masks).
            LaneOp::Select(..) => {
                let (c, a, b) = (r[0], r[1], r[2]);
                dynasm!(self.a
                    ; .arch aarch64
                    ; mov V(d).b16, V(c).b16
                    ; bsl V(d).b16, V(a).b16, V(b).b16
                );
            }
            LaneOp::Store(..) => unreachable!("stores define no value"),
        }
        Ok(())
    }

    /// Gathers `c[slot]` per lane into the four rows of `group` (1.0 for a
    /// slot outside `0..96`, read from the pool).
    fn gather(&mut self, slot: u8, group: u16) {
        let rows = row(layout::GATHER + 4 * group as usize);
        let stride = 16;
        let ones = pool_offset(ONES);
        for lane in 0..4u32 {
            let out = rows + 4 * lane;
            dynasm!(self.a
                ; .arch aarch64
                ; umov w9, V(slot).s[lane]
                ; add x10, x1, x9, lsl 4
                ; add x10, x10, FLOATS
                ; add x11, x2, ones
                ; cmp w9, 95
                ; csel x10, x10, x11, ls
                ; ldp w9, w11, [x10]
                ; str w9, [x0, out]
                ; str w11, [x0, out + stride]
                ; ldp w9, w11, [x10, 8]
                ; str w9, [x0, out + 2 * stride]
                ; str w11, [x0, out + 3 * stride]
            );
        }
    }

    fn unary(&mut self, u: UnOp, d: u8, a: u8) {
        match u {
            UnOp::Floor => dynasm!(self.a ; .arch aarch64 ; frintm V(d).s4, V(a).s4),
            UnOp::Sqrt => dynasm!(self.a ; .arch aarch64 ; fsqrt V(d).s4, V(a).s4),
            UnOp::FlipSign => {
                dynasm!(self.a ; .arch aarch64 ; eor V(d).b16, V(a).b16, V(SIGN).b16)
            }
            UnOp::Canonicalize => {
                self.copy(d, a);
                self.canonicalize(d);
            }
            UnOp::F24Load => {
                self.copy(d, a);
                self.f24_load(d);
            }
            UnOp::F24Flush => {
                // |x| < 2^-62 → +0, everything else unchanged.
                dynasm!(self.a
                    ; .arch aarch64
                    ; and v4.b16, V(a).b16, V(ABS).b16
                    ; cmgt v0.s4, V(MIN_NORMAL).s4, v4.s4
                    ; bic V(d).b16, V(a).b16, v0.b16
                );
            }
            UnOp::F24Quantize => {
                self.copy(d, a);
                dynasm!(self.a
                    ; .arch aarch64
                    ; and v4.b16, V(d).b16, V(ABS).b16
                    ; and v5.b16, V(d).b16, V(MANT).b16
                    // |r| < 2^-62 → +0
                    ; cmgt v0.s4, V(MIN_NORMAL).s4, v4.s4
                    ; bic v5.b16, v5.b16, v0.b16
                );
                self.f24_tail(d);
            }
            // Saturating, NaN → 0: `arith::mova` exactly (what the x86-64
            // lowering builds from `cvttps2dq`).
            UnOp::ToI32 => dynasm!(self.a ; .arch aarch64 ; fcvtzs V(d).s4, V(a).s4),
            UnOp::ToF32 => dynasm!(self.a ; .arch aarch64 ; scvtf V(d).s4, V(a).s4),
            UnOp::Bits | UnOp::FromBits => self.copy(d, a),
            // The IR verifier keeps shift counts in 0..=31.
            UnOp::Shl(n) => {
                let n = u32::from(n.min(31));
                dynasm!(self.a ; .arch aarch64 ; shl V(d).s4, V(a).s4, n);
            }
            UnOp::Sar(n) => {
                if n == 0 {
                    self.copy(d, a);
                } else {
                    let n = u32::from(n.min(31));
                    dynasm!(self.a ; .arch aarch64 ; sshr V(d).s4, V(a).s4, n);
                }
            }
            UnOp::Shr(n) => {
                if n == 0 {
                    self.copy(d, a);
                } else {
                    let n = u32::from(n.min(31));
                    dynasm!(self.a ; .arch aarch64 ; ushr V(d).s4, V(a).s4, n);
                }
            }
            UnOp::Not => dynasm!(self.a ; .arch aarch64 ; mvn V(d).b16, V(a).b16),
        }
    }

    /// NaN lanes of `v{x}` → the canonical NaN.
    fn canonicalize(&mut self, x: u8) {
        dynasm!(self.a
            ; .arch aarch64
            ; fcmeq v0.s4, V(x).s4, V(x).s4
            ; bif V(x).b16, V(NAN).b16, v0.b16
        );
    }

    /// `arith::f24::load` in place.
    fn f24_load(&mut self, x: u8) {
        dynasm!(self.a
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
        self.f24_tail(x);
    }

    /// Shared tail of the float24 conversions: `v4` = |bits of x|, `v5` = the
    /// finite result; writes `x` = ±inf for |x| ≥ 2^64, canonical NaN for NaN.
    fn f24_tail(&mut self, x: u8) {
        dynasm!(self.a
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

    fn binary(&mut self, op: BinOp, d: u8, a: u8, b: u8) {
        match op {
            BinOp::FAdd => dynasm!(self.a ; .arch aarch64 ; fadd V(d).s4, V(a).s4, V(b).s4),
            BinOp::FSub => dynasm!(self.a ; .arch aarch64 ; fsub V(d).s4, V(a).s4, V(b).s4),
            BinOp::FMul => dynasm!(self.a ; .arch aarch64 ; fmul V(d).s4, V(a).s4, V(b).s4),
            BinOp::FDiv => dynasm!(self.a ; .arch aarch64 ; fdiv V(d).s4, V(a).s4, V(b).s4),
            // NaN product of non-NaN operands (inf * 0) → +0, any other NaN →
            // the canonical NaN (`arith::mul_rule`).
            BinOp::PicaMul => dynasm!(self.a
                ; .arch aarch64
                ; fmul V(d).s4, V(a).s4, V(b).s4
                ; fcmeq v4.s4, V(a).s4, V(a).s4
                ; fcmeq v5.s4, V(b).s4, V(b).s4
                ; and v4.b16, v4.b16, v5.b16
                ; fcmeq v5.s4, V(d).s4, V(d).s4
                ; bic v6.b16, v4.b16, v5.b16
                ; bif V(d).b16, V(NAN).b16, v5.b16
                ; bic V(d).b16, V(d).b16, v6.b16
            ),
            // a > b ? a : b (b when either is NaN): `arith::max`, as `maxps`.
            BinOp::PicaMax => dynasm!(self.a
                ; .arch aarch64
                ; fcmgt v0.s4, V(a).s4, V(b).s4
                ; mov V(d).b16, V(b).b16
                ; bit V(d).b16, V(a).b16, v0.b16
            ),
            // a < b ? a : b: `arith::min`, as `minps`.
            BinOp::PicaMin => dynasm!(self.a
                ; .arch aarch64
                ; fcmgt v0.s4, V(b).s4, V(a).s4
                ; mov V(d).b16, V(b).b16
                ; bit V(d).b16, V(a).b16, v0.b16
            ),
            BinOp::IAdd => dynasm!(self.a ; .arch aarch64 ; add V(d).s4, V(a).s4, V(b).s4),
            BinOp::ISub => dynasm!(self.a ; .arch aarch64 ; sub V(d).s4, V(a).s4, V(b).s4),
            BinOp::And | BinOp::BAnd => {
                dynasm!(self.a ; .arch aarch64 ; and V(d).b16, V(a).b16, V(b).b16)
            }
            BinOp::Or | BinOp::BOr => {
                dynasm!(self.a ; .arch aarch64 ; orr V(d).b16, V(a).b16, V(b).b16)
            }
        }
    }
}
