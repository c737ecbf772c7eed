//! The x86-64 wide lowering: each block of lane operations
//! ([`crate::jit::wide::lanes`]) becomes one function
//! `(register file, uniforms) -> exit mask` that runs the block for every
//! lane at once (`xmm` for 4 lanes, `ymm` for 8, `zmm` for 16).
//!
//! The driver and the register allocator are the wide lowerings' shared ones
//! ([`crate::jit::wide::codegen`]); this module is the x86-64 [`Target`].
//! Values live in registers 1–11; registers 0 (the select mask, `isa::MASK`)
//! and 12–15 are scratch inside one operation. The float24 and PICA multiply sequences are the
//! single-vertex lowering's (`lower/prims.rs`) on whole rows: the same
//! operations and constants from [`crate::arith`] (bit-wise steps merged
//! where AVX-512 masking allows, which changes no bit).

mod isa;
mod kernel;

use kernel::KernelShape;

use crate::arith::f24;
use crate::ir::{BinOp, UnOp};
use crate::isa::CmpOp;
use crate::jit::JitError;
use crate::jit::wide::codegen::{self, Allocation, Functions, Module, Target, WideCode};
use crate::jit::wide::lanes::{LaneBlock, LaneOp};
use crate::jit::wide::layout;
use crate::jit::wide::plan::KernelPlan;
use crate::jit::wide::width::Width;
use crate::state::Uniforms;
use dynasmrt::{DynamicLabel, DynasmApi, DynasmLabelApi, dynasm};
use isa::{MASK, SCRATCH_CONST, U, V, WideAsm};
use std::mem::offset_of;

const S1: u8 = 12;
const S2: u8 = 13;
const S3: u8 = 14;
const _: () = assert!(SCRATCH_CONST > S3);

/// Compiles `blocks` for `width`; `convert_inputs` (F24) is the mask of the
/// inputs the prologue converts.
pub(crate) fn compile(
    blocks: &[LaneBlock],
    convert_inputs: u16,
    width: Width,
    kernel: Option<&KernelPlan>,
) -> Result<WideCode, JitError> {
    let mut a = WideAsm::new(width);
    let mxcsr = super::fp_env::Constants::new(&mut a.ops);
    let mut code = Code { a, mxcsr };
    let (Functions { prologue, entries }, kernel) =
        codegen::lower_blocks(&mut code, blocks, convert_inputs, kernel)?;
    // The kernel for `shape`, and where its one-group loop is small enough,
    // the one shading two groups per pass; `None` where one did not lower
    // (the driver runs the blocks one by one instead).
    let mut lower_kernels = |plan: &KernelPlan, shape| {
        let mut lower = |copies| {
            let at = code.offset();
            let lowered = code
                .function()
                .kernel(plan, blocks, convert_inputs, shape, copies);
            Ok::<_, JitError>(codegen::optional(lowered)?.map(|loop_bytes| (at, loop_bytes)))
        };
        let one = lower(1)?;
        let pair = match one {
            Some((_, bytes)) if bytes <= kernel::MAX_LOOP_BYTES_TO_INTERLEAVE => lower(2)?,
            _ => None,
        };
        Ok::<_, JitError>((one.map(|(at, _)| at), pair.map(|(at, _)| at)))
    };
    let ((states_kernel, pair_kernel), (vertex_kernel, vertex_pair_kernel)) = match kernel {
        Some(plan) => {
            // The vertex layout starts every lane from one state the caller
            // converted already.
            let reset = KernelPlan {
                convert_temps: 0,
                ..plan.clone()
            };
            (
                lower_kernels(plan, KernelShape::States)?,
                lower_kernels(&reset, KernelShape::Vertices)?,
            )
        }
        None => ((None, None), (None, None)),
    };
    let Code { mut a, mxcsr } = code;
    a.emit_pool();
    mxcsr.emit(&mut a.ops);
    let bytes = a
        .ops
        .finalize()
        .map_err(|e| JitError::Assemble(format!("{e:?}")))?;
    Ok(WideCode {
        bytes,
        entries,
        prologue,
        kernel: states_kernel,
        pair_kernel,
        vertex_kernel,
        vertex_pair_kernel,
    })
}

/// Out-of-line code of one function: rare lanes' slow paths, entered with
/// `jnz label` and returning to `back`.
enum Cold {
    /// The exact PICA multiply `d = a * b` (some lane's product is NaN).
    ExactMul {
        label: DynamicLabel,
        back: DynamicLabel,
        d: u8,
        a: u8,
        b: u8,
    },
    /// The float24 quantisation's tail in `d` (some lane is at or above
    /// 2^64, infinite or NaN), with `S2` = |bits|.
    F24Overflow {
        label: DynamicLabel,
        back: DynamicLabel,
        d: u8,
    },
}

/// One generated function.
struct Function<'a> {
    a: &'a mut WideAsm,
    lanes: usize,
    mxcsr: super::fp_env::Constants,
    allocation: Allocation,
    gathered: Vec<bool>,
    cold: Vec<Cold>,
    /// Batch kernel: stores keep the new value only in the lanes whose
    /// saved condition (`layout::PREDICATE`) is this.
    predicate: Option<bool>,
    /// Batch kernel: which of the groups of a pass `rdi` (its register
    /// file) and `r8`/`r11` (its records) point at now.
    copy: GroupAt,
}

/// Where the batch kernel's pointers are: at which of the groups it shades
/// per pass.
#[derive(Clone, Copy, Debug, Default)]
struct GroupAt {
    /// The group `rdi` points at (`layout::file_bytes` apart).
    file: usize,
    /// The group `r8` and `r11` point at (`records` bytes apart).
    records: usize,
    /// Bytes between the records of one group and the next.
    stride: i32,
}

/// The shader's code under construction.
struct Code {
    a: WideAsm,
    mxcsr: super::fp_env::Constants,
}

impl Module for Code {
    type Function<'m> = Function<'m>;

    fn offset(&self) -> usize {
        self.a.ops.offset().0
    }

    fn function(&mut self) -> Function<'_> {
        Function::new(&mut self.a, self.mxcsr)
    }
}

impl Target for Function<'_> {
    const VALUE_REGS: &'static [u8] = &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];

    fn allocation(&mut self) -> &mut Allocation {
        &mut self.allocation
    }

    fn load_row(&mut self, reg: u8, row: usize) {
        let off = self.row(row);
        self.a.load(reg, off);
    }

    fn store_row(&mut self, row: usize, reg: u8) {
        let off = self.row(row);
        self.a.store(off, reg);
    }

    fn store_value(&mut self, row: usize, reg: u8) {
        let off = self.row(row);
        match self.predicate {
            None => self.a.store(off, reg),
            // Only the lanes whose saved condition is `when` take the new
            // value.
            Some(when) => {
                let mask = self.row(layout::PREDICATE);
                self.a.load(S1, mask);
                self.a.load(S2, off);
                if when {
                    self.a.select(S2, S2, reg, S1);
                    self.a.store(off, S2);
                } else {
                    self.a.select(S3, reg, S2, S1);
                    self.a.store(off, S3);
                }
            }
        }
    }

    fn lane_op(&mut self, op: LaneOp, d: u8, regs: &[u8]) -> Result<(), JitError> {
        self.emit(op, d, regs)
    }

    fn f24_load_in_place(&mut self, reg: u8) {
        self.f24_load(reg);
    }

    fn start_block(&mut self, gathers: usize) {
        self.a.forget_masks();
        self.gathered = vec![false; gathers];
    }

    /// Runs with the default floating-point environment whatever the host set.
    fn enter(&mut self) {
        let vex = self.a.width != Width::Sse41;
        super::fp_env::enter(&mut self.a.ops, self.mxcsr, vex, 7, layout::SAVED_FP);
    }

    /// Restores the host's floating-point environment and returns `eax`.
    fn leave(&mut self) {
        super::fp_env::leave(&mut self.a.ops, 7, layout::SAVED_FP);
        self.a.leave();
        dynasm!(self.a.ops ; .arch x64 ; ret);
        for cold in std::mem::take(&mut self.cold) {
            let back = match cold {
                Cold::ExactMul {
                    label,
                    back,
                    d,
                    a,
                    b,
                } => {
                    self.a.bind(label);
                    self.exact_pica_mul(d, a, b);
                    back
                }
                Cold::F24Overflow { label, back, d } => {
                    self.a.bind(label);
                    self.f24_tail(d, d, d, S3);
                    back
                }
            };
            dynasm!(self.a.ops ; .arch x64 ; jmp =>back);
        }
    }

    fn exit_mask(&mut self, reg: u8) {
        self.a.movmsk(reg);
    }

    fn no_exit_mask(&mut self) {
        dynasm!(self.a.ops ; .arch x64 ; xor eax, eax);
    }

    fn store_lane0(&mut self, offset: i32, reg: u8) {
        self.a.store_lane0(offset, reg);
    }
}

impl<'a> Function<'a> {
    fn new(a: &'a mut WideAsm, mxcsr: super::fp_env::Constants) -> Function<'a> {
        let lanes = a.width.lanes();
        Function {
            a,
            lanes,
            mxcsr,
            allocation: Allocation::new(),
            gathered: Vec::new(),
            cold: Vec::new(),
            predicate: None,
            copy: GroupAt::default(),
        }
    }

    fn row(&self, row: usize) -> i32 {
        layout::row_offset(row, self.lanes)
    }

    fn emit(&mut self, op: LaneOp, d: u8, r: &[u8]) -> Result<(), JitError> {
        match op {
            LaneOp::Const(bits) => self.a.constant(d, bits),
            LaneOp::Row(row) => {
                let off = self.row(row as usize);
                self.a.load(d, off);
            }
            LaneOp::Uniform(off) => self.a.broadcast(d, off as i32),
            LaneOp::UniformByte { offset, mask } => {
                let off = offset as i32;
                dynasm!(self.a.ops ; .arch x64 ; movzx eax, BYTE [rsi + off]);
                if mask {
                    dynasm!(self.a.ops ; .arch x64 ; neg eax);
                }
                self.a.broadcast_eax(d);
            }
            LaneOp::Gather { comp, group, .. } => {
                if !self.gathered[group as usize] {
                    self.gather(r[0], group);
                    self.gathered[group as usize] = true;
                }
                let off = self.row(layout::GATHER + 4 * group as usize + comp as usize);
                self.a.load(d, off);
            }
            LaneOp::Unary(u, _) => self.unary(u, d, r[0]),
            LaneOp::Binary(b, _, _) => self.binary(b, d, r[0], r[1]),
            LaneOp::FCmp(c, _, _) => {
                let (swap, p) = match c {
                    CmpOp::True6 | CmpOp::True7 => {
                        self.a.constant(d, u32::MAX);
                        return Ok(());
                    }
                    CmpOp::Eq => (false, 0),
                    CmpOp::Ne => (false, 4), // unordered or not equal
                    CmpOp::Lt => (false, 1),
                    CmpOp::Le => (false, 2),
                    CmpOp::Gt => (true, 1),
                    CmpOp::Ge => (true, 2),
                };
                let (x, y) = if swap { (r[1], r[0]) } else { (r[0], r[1]) };
                self.a.v3(V::Cmpps(p), d, x, y);
            }
            LaneOp::ICmp(c, _, _) => {
                let (x, y) = (r[0], r[1]);
                let (op, x, y, invert) = match c {
                    CmpOp::True6 | CmpOp::True7 => {
                        self.a.constant(d, u32::MAX);
                        return Ok(());
                    }
                    CmpOp::Eq => (V::Pcmpeqd, x, y, false),
                    CmpOp::Ne => (V::Pcmpeqd, x, y, true),
                    CmpOp::Gt => (V::Pcmpgtd, x, y, false),
                    CmpOp::Lt => (V::Pcmpgtd, y, x, false),
                    CmpOp::Le => (V::Pcmpgtd, x, y, true),
                    CmpOp::Ge => (V::Pcmpgtd, y, x, true),
                };
                self.a.v3(op, d, x, y);
                if invert {
                    self.a.not(d);
                }
            }
            LaneOp::Select(..) => self.a.select(d, r[2], r[1], r[0]),
            LaneOp::Store(..) => unreachable!("stores define no value"),
        }
        Ok(())
    }

    /// Gathers `c[slot]` per lane into the four rows of `group` (1.0 for a
    /// slot outside `0..96`).
    fn gather(&mut self, slot: u8, group: u16) {
        let rows = self.row(layout::GATHER + 4 * group as usize);
        let stride = (4 * self.lanes) as i32;
        let floats = offset_of!(Uniforms, f) as i32;
        let one = 1.0f32.to_bits();
        let row_offs = [0, 1, 2, 3].map(|c| rows + c * stride);
        if self
            .a
            .gather_rows(slot, [S1, S2], row_offs, floats, 95, one)
        {
            return;
        }
        let index = self.row(layout::INDEX);
        self.a.store(index, slot);
        let ones = self.a.pool_label(one);
        // Every lane reading the same slot (a uniform `a0`, `aL` in a loop)
        // is the common case: one read, broadcast into each row.
        let (per_lane, done) = (
            self.a.ops.new_dynamic_label(),
            self.a.ops.new_dynamic_label(),
        );
        dynasm!(self.a.ops ; .arch x64 ; mov eax, [rdi + index]);
        self.a.broadcast_eax(S1);
        self.a.v3(V::Pcmpeqd, S1, S1, slot);
        self.a.movmsk(S1);
        let all = ((1u64 << self.lanes) - 1) as i32;
        dynasm!(self.a.ops
            ; .arch x64
            ; cmp eax, all
            ; jne =>per_lane
            ; mov eax, [rdi + index]
            ; mov ecx, eax
            ; shl ecx, 4
            ; lea rcx, [rsi + rcx + floats]
            ; lea rdx, [=>ones]
            ; cmp eax, 95
            ; cmova rcx, rdx
        );
        for (c, &off) in row_offs.iter().enumerate() {
            dynasm!(self.a.ops ; .arch x64 ; mov eax, [rcx + 4 * c as i32]);
            self.a.broadcast_eax(S1);
            self.a.store(off, S1);
        }
        dynasm!(self.a.ops ; .arch x64 ; jmp =>done);
        self.a.bind(per_lane);
        for lane in 0..self.lanes as i32 {
            let at = index + 4 * lane;
            let out = rows + 4 * lane;
            dynasm!(self.a.ops
                ; .arch x64
                ; mov eax, [rdi + at]
                ; mov ecx, eax
                ; shl ecx, 4
                ; lea rcx, [rsi + rcx + floats]
                ; lea rdx, [=>ones]
                ; cmp eax, 95
                ; cmova rcx, rdx
                ; mov eax, [rcx]
                ; mov [rdi + out], eax
                ; mov eax, [rcx + 4]
                ; mov [rdi + out + stride], eax
                ; mov eax, [rcx + 8]
                ; mov [rdi + out + 2 * stride], eax
                ; mov eax, [rcx + 12]
                ; mov [rdi + out + 3 * stride], eax
            );
        }
        self.a.bind(done);
    }

    fn unary(&mut self, u: UnOp, d: u8, a: u8) {
        match u {
            UnOp::Floor => self.a.u(U::Floor, d, a),
            UnOp::Sqrt => self.a.u(U::Sqrt, d, a),
            UnOp::FlipSign => self.a.v3c(V::Xorps, d, a, 0x8000_0000),
            UnOp::Canonicalize => {
                self.a.copy(d, a);
                self.canonicalize(d);
            }
            UnOp::F24Load => {
                self.a.copy(d, a);
                self.f24_load(d);
            }
            UnOp::F24Flush => {
                // |x| < 2^-62 → +0, everything else unchanged.
                self.a.v3c(V::Andps, S1, a, 0x7FFF_FFFF);
                self.a.v3c(V::Pcmpgtd, MASK, S1, f24::MIN_NORMAL_BITS - 1);
                self.a.keep_where(d, a, MASK);
            }
            UnOp::F24Quantize => {
                // S2 = |bits|; d = truncated mantissa, +0 below 2^-62 (the
                // sign stays on the other lanes). Lanes of 2^64 and above
                // (±inf, NaN included) are rare: the tail runs out of line.
                self.a.v3c(V::Andps, S2, a, 0x7FFF_FFFF);
                self.a.v3c(V::Pcmpgtd, MASK, S2, f24::MIN_NORMAL_BITS - 1);
                self.a.and_c_where(d, a, f24::MANTISSA_MASK, MASK);
                self.a.test_gt_c(S2, f24::OVERFLOW_BITS - 1, S3);
                let label = self.a.ops.new_dynamic_label();
                let back = self.a.ops.new_dynamic_label();
                dynasm!(self.a.ops ; .arch x64 ; jnz =>label);
                self.a.bind(back);
                self.cold.push(Cold::F24Overflow { label, back, d });
            }
            UnOp::ToI32 => {
                // Truncate; out of range or NaN → i32::MIN, then x ≥ 2^31 →
                // i32::MAX and NaN → 0 (`arith::mova`).
                self.a.u(U::Cvttps2dq, d, a);
                self.a.constant(S1, 0x4F00_0000);
                self.a.v3(V::Cmpps(2), MASK, S1, a); // 2^31 <= x
                self.a.select_c(d, d, 0x7FFF_FFFF, MASK);
                self.a.v3(V::Cmpps(7), S1, a, a); // ordered
                self.a.v3(V::Andps, d, d, S1);
            }
            UnOp::ToF32 => self.a.u(U::Cvtdq2ps, d, a),
            UnOp::Bits | UnOp::FromBits => self.a.copy(d, a),
            UnOp::Shl(n) => self.a.u(U::Pslld(n as i8), d, a),
            UnOp::Sar(n) => self.a.u(U::Psrad(n as i8), d, a),
            UnOp::Shr(n) => self.a.u(U::Psrld(n as i8), d, a),
            UnOp::Not => {
                self.a.copy(d, a);
                self.a.not(d);
            }
        }
    }

    /// NaN lanes of `d` → the canonical NaN.
    fn canonicalize(&mut self, d: u8) {
        self.a.v3(V::Cmpps(3), MASK, d, d);
        self.a
            .select_c(d, d, crate::arith::CANONICAL_NAN.to_bits(), MASK);
    }

    /// `arith::f24::load` in place.
    fn f24_load(&mut self, d: u8) {
        // S2 = |bits|; S3 = normal path (truncated mantissa); S1 = subnormal
        // path trunc(x * 2^78) * 2^-78.
        self.a.v3c(V::Andps, S2, d, 0x7FFF_FFFF);
        self.a.v3c(V::Andps, S3, d, f24::MANTISSA_MASK);
        self.a.v3c(V::Mulps, S1, d, f24::SUBNORMAL_SCALE.to_bits());
        self.a.u(U::Cvttps2dq, S1, S1);
        self.a.u(U::Cvtdq2ps, S1, S1);
        self.a
            .v3c(V::Mulps, S1, S1, f24::SUBNORMAL_QUANTUM.to_bits());
        // At or above 2^-62: the normal path.
        self.a.v3c(V::Pcmpgtd, MASK, S2, f24::MIN_NORMAL_BITS - 1);
        self.a.select(S1, S1, S3, MASK);
        self.f24_tail(d, d, S1, S3);
    }

    /// Shared tail of the float24 conversions of `x` (`d` or a register left
    /// unchanged): `S2` = |bits of x|, `fin` = the finite result, `tmp` a free
    /// scratch register; writes `d` = ±inf for |x| ≥ 2^64, canonical NaN for
    /// NaN, else `fin`.
    fn f24_tail(&mut self, d: u8, x: u8, fin: u8, tmp: u8) {
        self.a.v3c(V::Andps, tmp, x, 0x8000_0000);
        self.a.v3c(V::Orps, tmp, tmp, 0x7F80_0000);
        self.a.v3c(V::Pcmpgtd, MASK, S2, f24::OVERFLOW_BITS - 1);
        self.a.select(fin, fin, tmp, MASK);
        self.a.v3c(V::Pcmpgtd, MASK, S2, 0x7F80_0000);
        self.a
            .select_c(d, fin, crate::arith::CANONICAL_NAN.to_bits(), MASK);
    }

    /// `d = mul_rule(a, b)`: NaN product from non-NaN operands (inf * 0) →
    /// +0, any other NaN → the canonical NaN.
    fn exact_pica_mul(&mut self, d: u8, a: u8, b: u8) {
        self.a.v3(V::Mulps, d, a, b);
        self.a.v3(V::Cmpps(7), S2, a, b); // neither operand NaN
        self.a.v3(V::Cmpps(3), S1, d, d); // product NaN
        self.a.v3(V::Andps, S2, S2, S1); // inf * 0
        self.a
            .select_c(d, d, crate::arith::CANONICAL_NAN.to_bits(), S1);
        self.a.v3(V::Andnps, S2, S2, d);
        self.a.copy(d, S2);
    }

    fn binary(&mut self, op: BinOp, d: u8, a: u8, b: u8) {
        match op {
            BinOp::FAdd => self.a.v3(V::Addps, d, a, b),
            BinOp::FSub => self.a.v3(V::Subps, d, a, b),
            BinOp::FMul => self.a.v3(V::Mulps, d, a, b),
            BinOp::FDiv => self.a.v3(V::Divps, d, a, b),
            BinOp::PicaMul => {
                // The IEEE product is the PICA one unless a lane is NaN: then
                // the exact sequence runs out of line.
                self.a.v3(V::Mulps, d, a, b);
                self.a.test_nan(d, S1);
                let label = self.a.ops.new_dynamic_label();
                let back = self.a.ops.new_dynamic_label();
                dynasm!(self.a.ops ; .arch x64 ; jnz =>label);
                self.a.bind(back);
                self.cold.push(Cold::ExactMul {
                    label,
                    back,
                    d,
                    a,
                    b,
                });
            }
            // maxps(a, b) = a > b ? a : b: `arith::max` exactly (min likewise).
            BinOp::PicaMax => self.a.v3(V::Maxps, d, a, b),
            BinOp::PicaMin => self.a.v3(V::Minps, d, a, b),
            BinOp::IAdd => self.a.v3(V::Paddd, d, a, b),
            BinOp::ISub => self.a.v3(V::Psubd, d, a, b),
            BinOp::And | BinOp::BAnd => self.a.v3(V::Andps, d, a, b),
            BinOp::Or | BinOp::BOr => self.a.v3(V::Orps, d, a, b),
        }
    }
}
