//! The x86-64 wide lowering: each block of lane operations
//! ([`crate::jit::wide::lanes`]) becomes one function
//! `(register file, uniforms) -> exit mask` that runs the block for every
//! lane at once (`xmm` for 4 lanes, `ymm` for 8, `zmm` for 16).
//!
//! Values live in registers 1–11, allocated linearly in operation order (a
//! register is freed at its value's last use; when none is free the value
//! used last is evicted: loaded again if it is a constant, a uniform or a row
//! the block does not write, else spilled to a spill row of the register
//! file). Registers 0 (the select mask) and 13–15 are scratch inside one
//! operation. Every IR primitive is lowered by the shared x86-64 emitter
//! ([`super::emit`]), the single-vertex lowering's too; this module lowers
//! what is the wide engine's alone: rows, uniforms, gathers, stores.

mod isa;
mod kernel;

use kernel::KernelShape;

use super::emit::{S1, S2, S3, V};
use crate::jit::JitError;
use crate::jit::wide::lanes::{LaneBlock, LaneOp, LaneRef};
use crate::jit::wide::layout;
use crate::jit::wide::plan::KernelPlan;
use crate::jit::wide::width::Width;
use crate::state::Uniforms;
use dynasmrt::{DynasmApi, DynasmLabelApi, dynasm};
use isa::WideAsm;
use std::mem::offset_of;

const FIRST_REG: u8 = 1;
const LAST_REG: u8 = 11;

/// The machine code of a wide shader.
pub(crate) struct WideCode {
    pub bytes: Vec<u8>,
    /// Offset of each block's function (`None`: the lowering gave up on it).
    pub entries: Vec<Option<usize>>,
    /// Offset of the F24 input conversion, when there is one.
    pub prologue: Option<usize>,
    /// Offset of the batch kernel, when one was asked for and lowered.
    pub kernel: Option<usize>,
    /// Offset of the batch kernel that shades two groups per pass (see
    /// `vertex_pair_kernel`).
    pub pair_kernel: Option<usize>,
    /// Offset of the batch kernel for the vertex layout.
    pub vertex_kernel: Option<usize>,
    /// Offset of the vertex-layout kernel that shades two groups per pass,
    /// each in its own register file ([`layout::file_bytes`] apart), when
    /// its loop is small enough.
    pub vertex_pair_kernel: Option<usize>,
}

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
    let prologue = (convert_inputs != 0).then(|| {
        let at = a.ops.offset().0;
        let mut f = Function::new(&mut a, mxcsr);
        f.enter();
        f.convert_inputs(convert_inputs);
        dynasm!(f.a.ops ; .arch x64 ; xor eax, eax);
        f.leave();
        at
    });
    let mut entries = Vec::with_capacity(blocks.len());
    for block in blocks {
        let at = a.ops.offset().0;
        let mut f = Function::new(&mut a, mxcsr);
        match f.block(block) {
            Ok(()) => entries.push(Some(at)),
            Err(JitError::Lowering(_)) => {
                // Nothing jumps here; the driver hands this block over.
                entries.push(None);
            }
            Err(e) => return Err(e),
        }
    }
    // Only over blocks that lowered on their own (the same lowering again
    // cannot fail half-way and leave a cold path's label undefined).
    let kernel = kernel.filter(|plan| {
        plan.steps
            .iter()
            .all(|s| s.block().is_none_or(|k| entries[k].is_some()))
    });
    // The kernel for `shape`, and where its one-group loop is small enough,
    // the one shading two groups per pass; `None` where one did not lower
    // (the driver runs the blocks one by one instead).
    let mut lower_kernels = |plan: &KernelPlan, shape| {
        let mut lower = |copies| {
            let at = a.ops.offset().0;
            let mut f = Function::new(&mut a, mxcsr);
            match f.kernel(plan, blocks, convert_inputs, shape, copies) {
                Ok(loop_bytes) => Ok(Some((at, loop_bytes))),
                Err(JitError::Lowering(_)) => Ok(None),
                Err(e) => Err(e),
            }
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
    a: &'a mut WideAsm,
    lanes: usize,
    mxcsr: super::fp_env::Constants,
    loc: Vec<Loc>,
    last_use: Vec<u32>,
    remat: Vec<bool>,
    holder: [Option<LaneRef>; 16],
    free_spills: Vec<u16>,
    gathered: Vec<bool>,
    /// The block's operations (to emit an evicted one again).
    ops: Vec<LaneOp>,
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

/// `last_use` of values the exit reads (after every operation).
const AT_EXIT: u32 = u32::MAX - 1;
const NEVER: u32 = u32::MAX;

impl<'a> Function<'a> {
    fn new(a: &'a mut WideAsm, mxcsr: super::fp_env::Constants) -> Function<'a> {
        let lanes = a.width.lanes();
        Function {
            a,
            lanes,
            mxcsr,
            loc: Vec::new(),
            last_use: Vec::new(),
            remat: Vec::new(),
            holder: [None; 16],
            free_spills: (0..layout::SPILL_SLOTS as u16).rev().collect(),
            gathered: Vec::new(),
            ops: Vec::new(),
            predicate: None,
            copy: GroupAt::default(),
        }
    }

    fn row(&self, row: usize) -> i32 {
        layout::row_offset(row, self.lanes)
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
        self.a.v().emit_slow_paths();
    }

    /// F24: the inputs of `mask`, converted (`f24::load`) into their
    /// `CONVERTED` rows.
    fn convert_inputs(&mut self, mask: u16) {
        for n in (0..16).filter(|n| mask >> n & 1 != 0) {
            for c in 0..4 {
                let off = self.row(layout::INPUT + 4 * n + c);
                self.a.load(1, off);
                self.a.v().f24_load(1);
                let off = self.row(layout::CONVERTED + 4 * n + c);
                self.a.store(off, 1);
            }
        }
    }

    /// A block's function: its operations, then its exit condition's lane
    /// mask in `eax` (and a `loop`'s values in the header).
    fn block(&mut self, block: &LaneBlock) -> Result<(), JitError> {
        self.enter();
        self.body(block)?;
        match block.exit_cond {
            Some(cond) => {
                let r = self.reg_of(cond, &[])?;
                self.a.movmsk(r);
            }
            None => dynasm!(self.a.ops ; .arch x64 ; xor eax, eax),
        }
        if let Some((count, increment)) = block.loop_values {
            let r = self.reg_of(count, &[])?;
            self.a.store_lane0(layout::LOOP_COUNT, r);
            let r = self.reg_of(increment, &[count])?;
            self.a.store_lane0(layout::LOOP_INCREMENT, r);
        }
        self.leave();
        Ok(())
    }

    /// A block's operations, from an empty register allocation; values its
    /// exit reads stay live.
    fn body(&mut self, block: &LaneBlock) -> Result<(), JitError> {
        self.a.forget_masks();
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
        self.holder = [None; 16];
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
        if let Some(r) = (FIRST_REG..=LAST_REG).find(|&r| self.holder[r as usize].is_none()) {
            return Ok(r);
        }
        let victim = (FIRST_REG..=LAST_REG)
            .filter_map(|r| self.holder[r as usize].map(|v| (r, v)))
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
            let off = self.row(layout::SPILL + slot as usize);
            self.a.store(off, r);
        }
        Ok(r)
    }

    /// The register holding `v`, loading it again if it was evicted.
    fn reg_of(&mut self, v: LaneRef, keep: &[LaneRef]) -> Result<u8, JitError> {
        match self.loc[v as usize] {
            Loc::Reg(r) => Ok(r),
            Loc::Spill(slot) => {
                let r = self.alloc(keep)?;
                let off = self.row(layout::SPILL + slot as usize);
                self.a.load(r, off);
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
        // A value nothing reads (the batch kernel's hoisting leaves those) is
        // not computed, unless it has an effect (stores, a gather's rows).
        if self.last_use[k as usize] == NEVER
            && !matches!(op, LaneOp::Store(..) | LaneOp::Gather { .. })
        {
            return Ok(());
        }
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
        if let LaneOp::Store(row, _) = op {
            let off = self.row(row as usize);
            match self.predicate {
                None => self.a.store(off, regs[0]),
                // Only the lanes whose saved condition is `when` take the
                // new value.
                Some(when) => {
                    let mask = self.row(layout::PREDICATE);
                    self.a.load(S1, mask);
                    self.a.load(S2, off);
                    if when {
                        self.a.select(S2, S2, regs[0], S1);
                        self.a.store(off, S2);
                    } else {
                        self.a.select(S3, regs[0], S2, S1);
                        self.a.store(off, S3);
                    }
                }
            }
            self.release(operands, k);
            return Ok(());
        }
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

    fn emit(&mut self, op: LaneOp, d: u8, r: &[u8]) -> Result<(), JitError> {
        match op {
            LaneOp::Const(bits) => self.a.v().constant(d, bits),
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
            LaneOp::Unary(u, _) => self.a.v().unary(u, d, r[0]),
            LaneOp::Binary(b, _, _) => self.a.v().binary(b, d, r[0], r[1]),
            LaneOp::FCmp(c, _, _) => self.a.v().fcmp(c, d, r[0], r[1]),
            LaneOp::ICmp(c, _, _) => self.a.v().icmp(c, d, r[0], r[1]),
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
        let ones = self.a.v().pool_label(one);
        // Every lane reading the same slot (a uniform `a0`, `aL` in a loop)
        // is the common case: one read, broadcast into each row.
        let (per_lane, done) = (
            self.a.ops.new_dynamic_label(),
            self.a.ops.new_dynamic_label(),
        );
        dynasm!(self.a.ops ; .arch x64 ; mov eax, [rdi + index]);
        self.a.broadcast_eax(S1);
        self.a.v().v3(V::Pcmpeqd, S1, S1, slot);
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
}
