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
//! `v8..=v15` (their low halves saved on entry), allocated linearly in
//! operation order as on x86-64 (a register is freed at its value's last use;
//! when none is free the value used last is evicted: emitted again if it is a
//! constant, a uniform or a row the block does not write, else spilled to a
//! spill row of the register file); `v0` and `v4..=v6` are scratch inside one
//! operation. `x9..=x11` are scratch.
//!
//! Every IR primitive is the shared NEON emitter's (`../emit/`, also under
//! the single-vertex lowering); what is particular to one vertex per lane
//! (rows of the register file, gathers, the exit mask, the batch kernel) is
//! here. FPCR is 0 while generated code runs (round to nearest, no flush to
//! zero, no default NaN), as in the single-vertex backend.

mod kernel;
#[cfg(test)]
mod tests;

use super::emit::Neon;
use super::emit::consts::{self, PINNED};
use super::{Asm, SYSREG_FPCR};
use crate::jit::JitError;
use crate::jit::wide::lanes::{LaneBlock, LaneOp, LaneRef};
use crate::jit::wide::layout;
use crate::jit::wide::plan::KernelPlan;
use crate::jit::wide::width::Width;
use dynasmrt::{DynasmApi, DynasmLabelApi, dynasm};

/// The pool: the shared constants (`emit::consts::K`, pinned in
/// `v16..=v25`), then the exit mask's lane bits (`v26`) and a zero (`v27`,
/// which keeps the loads paired); constant `k` is pinned in `v{16 + k}`.
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

/// The machine code of a wide shader.
pub(crate) struct WideCode {
    pub bytes: Vec<u8>,
    /// Offset of each block's function (`None`: the lowering gave up on it).
    pub entries: Vec<Option<usize>>,
    /// Offset of the F24 input conversion, when there is one.
    pub prologue: Option<usize>,
    /// Offset of the batch kernel, when one was asked for and lowered.
    pub kernel: Option<usize>,
}

/// Compiles `blocks` for `width` (NEON); `convert_inputs` (F24) is the mask
/// of the inputs the prologue converts.
pub(crate) fn compile(
    blocks: &[LaneBlock],
    convert_inputs: u16,
    width: Width,
    kernel: Option<&KernelPlan>,
) -> Result<WideCode, JitError> {
    if width != Width::Neon {
        return Err(JitError::Unsupported("AArch64 runs the NEON width only"));
    }
    let mut a = Asm::new(0);
    dynasm!(a ; .arch aarch64 ; .align 16);
    for v in pool() {
        dynasm!(a ; .arch aarch64 ; .u32 v[0], v[1], v[2], v[3]);
    }
    let prologue = (convert_inputs != 0).then(|| {
        let at = a.offset().0;
        let mut f = Function::new(&mut a);
        f.enter();
        f.convert_inputs(convert_inputs);
        dynasm!(f.a ; .arch aarch64 ; movz w10, 0);
        f.leave();
        at
    });
    let mut entries = Vec::with_capacity(blocks.len());
    for block in blocks {
        let at = a.offset().0;
        let mut f = Function::new(&mut a);
        match f.block(block) {
            Ok(()) => entries.push(Some(at)),
            Err(JitError::Lowering(_)) => {
                // Nothing calls this; the driver hands the block over. The
                // half-emitted code stays unreachable.
                entries.push(None);
            }
            Err(e) => return Err(e),
        }
    }
    let kernel = kernel.filter(|plan| {
        plan.steps
            .iter()
            .all(|s| s.block().is_none_or(|k| entries[k].is_some()))
    });
    let kernel = match kernel {
        Some(plan) => {
            let at = a.offset().0;
            let mut f = Function::new(&mut a);
            match f.kernel(plan, blocks, convert_inputs) {
                Ok(()) => Some(at),
                // The driver runs the blocks one by one instead.
                Err(JitError::Lowering(_)) => None,
                Err(e) => return Err(e),
            }
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
    })
}

/// Where a value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Loc {
    None,
    Reg(u8),
    Spill(u16),
    /// Evicted; emitted again when needed.
    Remat,
}

/// One generated function.
struct Function<'a> {
    a: &'a mut Asm,
    loc: Vec<Loc>,
    last_use: Vec<u32>,
    remat: Vec<bool>,
    holder: [Option<LaneRef>; 32],
    free_spills: Vec<u16>,
    gathered: Vec<bool>,
    /// The block's operations (to emit an evicted one again).
    ops: Vec<LaneOp>,
}

/// `last_use` of values the exit reads (after every operation).
const AT_EXIT: u32 = u32::MAX - 1;
const NEVER: u32 = u32::MAX;

/// Byte offset of row `row` (4 lanes).
fn row(row: usize) -> u32 {
    layout::row_offset(row, 4) as u32
}

impl<'a> Function<'a> {
    fn new(a: &'a mut Asm) -> Function<'a> {
        Function {
            a,
            loc: Vec::new(),
            last_use: Vec::new(),
            remat: Vec::new(),
            holder: [None; 32],
            free_spills: Vec::new(),
            gathered: Vec::new(),
            ops: Vec::new(),
        }
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

    /// F24: the inputs of `mask`, converted (`f24::load`) into their
    /// `CONVERTED` rows.
    fn convert_inputs(&mut self, mask: u16) {
        for n in (0..16).filter(|n| mask >> n & 1 != 0) {
            for c in 0..4 {
                let from = row(layout::INPUT + 4 * n + c);
                let to = row(layout::CONVERTED + 4 * n + c);
                dynasm!(self.a ; .arch aarch64 ; ldr q1, [x0, from]);
                self.neon().f24_load(1, 1);
                dynasm!(self.a ; .arch aarch64 ; str q1, [x0, to]);
            }
        }
    }

    /// A block's function: its operations, then its exit condition's lane
    /// mask in `w10` (and a `loop`'s values in the header).
    fn block(&mut self, block: &LaneBlock) -> Result<(), JitError> {
        self.enter();
        self.body(block)?;
        match block.exit_cond {
            Some(cond) => {
                let r = self.reg_of(cond, &[])?;
                // movmskps: the sign bit of each lane.
                dynasm!(self.a
                    ; .arch aarch64
                    ; cmlt v0.s4, V(r).s4, 0
                    ; and v0.b16, v0.b16, V(LANE_BITS).b16
                    ; addv s0, v0.s4
                    ; umov w10, v0.s[0]
                );
            }
            None => dynasm!(self.a ; .arch aarch64 ; movz w10, 0),
        }
        if let Some((count, increment)) = block.loop_values {
            let r = self.reg_of(count, &[])?;
            let off = layout::LOOP_COUNT as u32;
            dynasm!(self.a ; .arch aarch64 ; str S(r), [x0, off]);
            let r = self.reg_of(increment, &[count])?;
            let off = layout::LOOP_INCREMENT as u32;
            dynasm!(self.a ; .arch aarch64 ; str S(r), [x0, off]);
        }
        self.leave();
        Ok(())
    }

    /// A block's operations, from an empty register allocation; values its
    /// exit reads stay live.
    fn body(&mut self, block: &LaneBlock) -> Result<(), JitError> {
        if block.gathers as usize > layout::MAX_GATHERS {
            return Err(JitError::Lowering(
                "too many relative reads in a block".into(),
            ));
        }
        let n = block.ops.len();
        self.loc = vec![Loc::None; n];
        self.last_use = vec![NEVER; n];
        for (k, op) in block.ops.iter().enumerate() {
            for o in op.operands() {
                self.last_use[o as usize] = k as u32;
            }
        }
        let exit_values = block
            .exit_cond
            .into_iter()
            .chain(block.loop_values.into_iter().flat_map(|(a, b)| [a, b]));
        for v in exit_values {
            self.last_use[v as usize] = AT_EXIT;
        }
        self.remat = block
            .ops
            .iter()
            .map(|op| match *op {
                LaneOp::Const(_) | LaneOp::Uniform(_) | LaneOp::UniformByte { .. } => true,
                LaneOp::Row(row) => !block.writes.contains(row),
                _ => false,
            })
            .collect();
        self.gathered = vec![false; block.gathers as usize];
        self.ops = block.ops.clone();
        self.holder = [None; 32];
        self.free_spills = (0..layout::SPILL_SLOTS as u16).rev().collect();
        for (k, op) in block.ops.iter().enumerate() {
            self.lower(k as LaneRef, *op)?;
        }
        Ok(())
    }

    fn release(&mut self, operands: &[LaneRef], at: LaneRef) {
        for &v in operands {
            if self.last_use[v as usize] == at {
                match self.loc[v as usize] {
                    Loc::Reg(r) => self.holder[r as usize] = None,
                    Loc::Spill(slot) => self.free_spills.push(slot),
                    Loc::None | Loc::Remat => {}
                }
                self.loc[v as usize] = Loc::None;
            }
        }
    }

    /// A free register, evicting the value used last (never one of `keep`).
    fn alloc(&mut self, keep: &[LaneRef]) -> Result<u8, JitError> {
        if let Some(&r) = VALUE_REGS
            .iter()
            .find(|&&r| self.holder[r as usize].is_none())
        {
            return Ok(r);
        }
        let victim = VALUE_REGS
            .iter()
            .filter_map(|&r| self.holder[r as usize].map(|v| (r, v)))
            .filter(|(_, v)| !keep.contains(v))
            .max_by_key(|&(_, v)| (self.remat[v as usize], self.last_use[v as usize]));
        let Some((r, v)) = victim else {
            return Err(JitError::Lowering("no register to evict".into()));
        };
        self.holder[r as usize] = None;
        if self.remat[v as usize] {
            self.loc[v as usize] = Loc::Remat;
        } else {
            let slot = self
                .free_spills
                .pop()
                .ok_or_else(|| JitError::Lowering("too many live values in one block".into()))?;
            self.loc[v as usize] = Loc::Spill(slot);
            let off = row(layout::SPILL + slot as usize);
            dynasm!(self.a ; .arch aarch64 ; str Q(r), [x0, off]);
        }
        Ok(r)
    }

    /// The register holding `v`, loading it again if it was evicted.
    fn reg_of(&mut self, v: LaneRef, keep: &[LaneRef]) -> Result<u8, JitError> {
        match self.loc[v as usize] {
            Loc::Reg(r) => Ok(r),
            Loc::Spill(slot) => {
                let r = self.alloc(keep)?;
                let off = row(layout::SPILL + slot as usize);
                dynasm!(self.a ; .arch aarch64 ; ldr Q(r), [x0, off]);
                self.free_spills.push(slot);
                self.loc[v as usize] = Loc::Reg(r);
                self.holder[r as usize] = Some(v);
                Ok(r)
            }
            Loc::Remat => {
                let r = self.alloc(keep)?;
                self.emit(self.ops[v as usize], r, &[])?;
                self.loc[v as usize] = Loc::Reg(r);
                self.holder[r as usize] = Some(v);
                Ok(r)
            }
            Loc::None => Err(JitError::Lowering(format!(
                "lane value {v} used before it is computed"
            ))),
        }
    }

    fn lower(&mut self, k: LaneRef, op: LaneOp) -> Result<(), JitError> {
        let mut operands = [0; 3];
        let mut count = 0;
        for o in op.operands() {
            operands[count] = o;
            count += 1;
        }
        let operands = &operands[..count];
        let mut regs = [0u8; 3];
        for (i, &o) in operands.iter().enumerate() {
            regs[i] = self.reg_of(o, operands)?;
        }
        if let LaneOp::Store(r, _) = op {
            let off = row(r as usize);
            let s = regs[0];
            dynasm!(self.a ; .arch aarch64 ; str Q(s), [x0, off]);
            self.release(operands, k);
            return Ok(());
        }
        // The result never shares a register with an operand (sequences may
        // write it before reading every operand).
        let d = self.alloc(operands)?;
        self.holder[d as usize] = Some(k);
        self.loc[k as usize] = Loc::Reg(d);
        self.emit(op, d, &regs[..count])?;
        self.release(operands, k);
        if self.last_use[k as usize] == NEVER {
            self.holder[d as usize] = None;
            self.loc[k as usize] = Loc::None;
        }
        Ok(())
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
