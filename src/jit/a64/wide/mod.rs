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
//! Registers: `v16..=v26` hold the pool's constants (loaded on entry),
//! `v27` a deferred float24 range check's lanes (`deferred`);
//! values live in `v1..=v3`, `v7`, `v28..=v31` and the callee-saved
//! `v8..=v15` (their low halves saved on entry), allocated by the wide
//! lowerings' shared allocator and driver ([`crate::jit::wide::codegen`]; this
//! module is the AArch64 [`Target`]); `v0` and `v4..=v6` are scratch inside
//! one operation. `x9..=x11` are scratch.
//!
//! Every IR primitive is the shared NEON emitter's (`../emit/`, also under
//! the single-vertex lowering); what is particular to one vertex per lane
//! (rows of the register file, gathers, the exit mask, the batch kernel) is
//! here. FPCR is 0 while generated code runs (round to nearest, no flush to
//! zero, no default NaN), as in the single-vertex backend.

mod deferred;
mod kernel;
#[cfg(test)]
mod tests;

use super::emit::Neon;
use super::emit::consts::{self, PINNED};
use super::{Asm, SYSREG_FPCR};
use crate::ir::{BinOp, UnOp};
use crate::jit::JitError;
use crate::jit::wide::codegen::KernelShape;
use crate::jit::wide::codegen::{
    self, Allocation, KernelSource, Kernels, Module, Target, WideCode,
};
use crate::jit::wide::lanes::{LaneBlock, LaneOp};
use crate::jit::wide::layout;
use crate::jit::wide::plan::KernelPlan;
use dynasmrt::{DynamicLabel, DynasmApi, DynasmLabelApi, dynasm};

/// The pool: the shared constants (`emit::consts::K`, pinned in
/// `v16..=v25`), then the exit mask's lane bits (`v26`) and a zero (`v27`,
/// which keeps the loads paired; no operation reads it as a constant, the
/// deferred range checks use the register); constant `k` is pinned in
/// `v{16 + k}`.
fn pool() -> [[u32; 4]; 12] {
    let mut pool = [[0; 4]; 12];
    pool[..PINNED].copy_from_slice(&consts::values());
    // Lane `k`'s bit of an exit mask.
    pool[PINNED] = [1, 2, 4, 8];
    pool
}

/// Lane `k`'s bit, in lane `k` (after the shared constants).
const LANE_BITS: u8 = 16 + PINNED as u8;

/// The uniforms' and the pool's addresses (the function's second and third
/// arguments; the register file's is `x0`).
const UNIFORMS: u8 = 1;
const POOL: u8 = 2;

/// Registers that hold values, caller-saved ones first.
const VALUE_REGS: [u8; 16] = [1, 2, 3, 7, 28, 29, 30, 31, 8, 9, 10, 11, 12, 13, 14, 15];

/// Bytes of the stack frame that saves `d8..=d15`.
const FRAME: u32 = 64;

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
    let (functions, kernel) = codegen::lower_blocks(&mut a, blocks, convert_inputs, kernel)?;
    // The kernel of `plan` for `shape`; `None` where it did not lower (the
    // driver runs the blocks one by one instead).
    let mut lower_kernel = |plan: &KernelPlan, shape| {
        let at = Module::offset(&a);
        let source = KernelSource {
            plan,
            blocks,
            convert_inputs,
        };
        let lowered = Function::new(&mut a).kernel(source, shape);
        Ok::<_, JitError>(codegen::optional(lowered)?.map(|()| at))
    };
    let kernels = match kernel {
        Some(plan) => {
            // The vertex layout starts every lane from one state the caller
            // converted already.
            let reset = plan.for_vertices();
            // One group per pass: NEON has no pair kernels yet.
            Kernels {
                states: lower_kernel(plan, KernelShape::States)?,
                vertices: lower_kernel(&reset, KernelShape::Vertices)?,
                ..Kernels::default()
            }
        }
        None => Kernels::default(),
    };
    WideCode::new(a.finalize(), functions, kernels)
}

/// One generated function.
pub(crate) struct Function<'a> {
    a: &'a mut Asm,
    allocation: Allocation,
    gathered: Vec<bool>,
    /// Row stores keep the new value only in the lanes of the execution mask
    /// (the `layout::PREDICATE` row), for the lanes of a group that took one
    /// path while others wait at another.
    masked: bool,
    /// Inside a deferred region ([`Target::begin_deferred`]): its join.
    region: Option<DynamicLabel>,
    /// The fast forms are on (the region's first run).
    deferring: bool,
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

    fn store_value(&mut self, r: usize, reg: u8) {
        if !self.masked {
            return self.store_row(r, reg);
        }
        let (off, mask) = (row(r), row(layout::PREDICATE));
        // The old row with the new value's bits inserted where the mask is set.
        dynasm!(self.a
            ; .arch aarch64
            ; ldr q0, [x0, mask]
            ; ldr q4, [x0, off]
            ; bit v4.b16, V(reg).b16, v0.b16
            ; str q4, [x0, off]
        );
    }

    fn mask_stores(&mut self) -> bool {
        self.masked = true;
        true
    }

    fn lane_op(&mut self, op: LaneOp, d: u8, regs: &[u8]) -> Result<(), JitError> {
        self.emit(op, d, regs)
    }

    fn f24_load_in_place(&mut self, reg: u8) {
        self.neon().f24_load(reg, reg);
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

    /// The float24 product and quantisation: their range checks can wait
    /// for the region's end (`deferred`).
    fn defers_check(&self, op: LaneOp) -> bool {
        matches!(
            op,
            LaneOp::Binary(BinOp::PicaMulF24, ..) | LaneOp::Unary(UnOp::F24Quantize, _)
        )
    }

    fn begin_deferred(&mut self) -> bool {
        self.region = Some(self.begin_region());
        self.deferring = true;
        true
    }

    fn defer_next(&mut self, fast: bool) {
        if self.region.is_some() {
            self.deferring = fast;
        }
    }

    fn check_deferred(&mut self) {
        if let Some(join) = self.region {
            self.check_region(join);
            // The exact run's operations take their own sequences.
            self.deferring = false;
        }
    }

    fn join_deferred(&mut self) {
        if let Some(join) = self.region.take() {
            dynasm!(self.a ; .arch aarch64 ; =>join);
        }
    }

    fn begin_deferred_loads(&mut self) -> bool {
        self.region = Some(self.begin_region());
        true
    }

    fn f24_load_deferred(&mut self, reg: u8) {
        self.f24_load_deferred_in_place(reg);
    }
}

impl<'a> Function<'a> {
    fn new(a: &'a mut Asm) -> Function<'a> {
        Function {
            a,
            allocation: Allocation::new(),
            gathered: Vec::new(),
            masked: false,
            region: None,
            deferring: false,
        }
    }

    /// The shared primitive emitter, on this function's code.
    fn neon(&mut self) -> Neon<'_> {
        Neon::new(self.a)
    }

    fn emit(&mut self, op: LaneOp, d: u8, r: &[u8]) -> Result<(), JitError> {
        match op {
            LaneOp::Const(bits) => self.neon().constant(d, bits),
            LaneOp::Row(rw) => {
                let off = row(rw as usize);
                dynasm!(self.a ; .arch aarch64 ; ldr Q(d), [x0, off]);
            }
            LaneOp::Uniform(off) => self.neon().word_to_lanes(d, UNIFORMS, u32::from(off)),
            LaneOp::UniformByte { offset, mask } => {
                self.neon()
                    .byte_to_lanes(d, UNIFORMS, u32::from(offset), mask)
            }
            LaneOp::Gather { comp, group, .. } => {
                if !self.gathered[group as usize] {
                    self.gather(r[0], group);
                    self.gathered[group as usize] = true;
                }
                let off = row(layout::GATHER + 4 * group as usize + comp as usize);
                dynasm!(self.a ; .arch aarch64 ; ldr Q(d), [x0, off]);
            }
            // In a deferred region: the fast forms, checked at its end.
            LaneOp::Unary(UnOp::F24Quantize, _) if self.deferring => {
                self.quantize_deferred(d, r[0]);
            }
            LaneOp::Binary(BinOp::PicaMulF24, _, _) if self.deferring => {
                self.pica_mul_f24_deferred(d, r[0], r[1]);
            }
            LaneOp::Unary(u, _) => self.neon().unary(u, d, r[0]),
            LaneOp::Binary(b, _, _) => self.neon().binary(b, d, r[0], r[1]),
            LaneOp::FCmp(c, _, _) => self.neon().fcmp(c, d, r[0], r[1]),
            LaneOp::ICmp(c, _, _) => self.neon().icmp(c, d, r[0], r[1]),
            LaneOp::Select(..) => self.neon().select(d, r[0], r[1], r[2]),
            LaneOp::Store(..) => unreachable!("stores define no value"),
        }
        Ok(())
    }

    /// Gathers `c[slot]` per lane into the four rows of `group` (1.0 for a
    /// slot outside `0..96`, read from the pool).
    fn gather(&mut self, slot: u8, group: u16) {
        let rows = row(layout::GATHER + 4 * group as usize);
        let stride = 16;
        for lane in 0..4u32 {
            let out = rows + 4 * lane;
            self.neon().uniform_address(slot, lane, UNIFORMS, POOL);
            dynasm!(self.a
                ; .arch aarch64
                ; ldp w9, w11, [x10]
                ; str w9, [x0, out]
                ; str w11, [x0, out + stride]
                ; ldp w9, w11, [x10, 8]
                ; str w9, [x0, out + 2 * stride]
                ; str w11, [x0, out + 3 * stride]
            );
        }
    }
}
