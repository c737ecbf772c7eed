//! What the single-vertex backends (`x64/`, `a64/`: one vertex's `x, y, z, w`
//! in one vector register) share across ISAs: the per-instruction driver
//! ([`instruction`], written against the [`SingleTarget`] trait each ISA
//! implements), the value allocator ([`values`]), the IR blocks being
//! lowered ([`Lowering`]) and where the code finds the PICA registers
//! ([`state`]). The driver and the allocator run in the same order on every
//! ISA, so the lowering decisions are the same everywhere; each ISA's
//! `flow.rs` emits the flow primitives ([`crate::jit::flow_dispatch`]) and
//! its lowering the nodes.

pub(crate) mod dot_sums;
#[cfg(test)]
pub(crate) mod emit_tests;
#[cfg(test)]
pub(crate) mod plan_tests;
pub(crate) mod state;
pub(crate) mod values;

pub(crate) use values::{Planned, Values};

/// The lowering plan of a program whose blocks are lowered by this driver:
/// the spill plan with the register allocator's table of every block's values.
pub(crate) type Plan<S> = crate::jit::spill::Plan<S, crate::jit::regalloc::ValueState>;

use crate::analysis::{Analysis, InstrClass};
use crate::ir::{InstrSpan, Ir, Node, Value};
use crate::jit::JitError;
use crate::jit::flow_dispatch::FlowTarget;
use crate::jit::regalloc::{Alloc, Evict, NEVER, Registers};
use crate::jit::spill::SpillSlots;
use crate::program::Program;
use dynasmrt::DynamicLabel;

/// A compiled function: machine code, its entry at offset 0.
pub(crate) struct Compiled {
    pub code: Vec<u8>,
    /// Whether the code reads or writes the frame's `progress` (AArch64: always).
    pub uses_flow_state: bool,
    /// Whether the code reads the frame's `uniform_cache` (x86-64 F24
    /// vertex code; never on AArch64).
    pub uses_uniform_cache: bool,
}

/// One IR block's lowering plan.
pub(crate) struct BlockState<'p, X> {
    /// The block's nodes.
    pub nodes: &'p [Node],
    /// Its instruction spans.
    pub instrs: &'p [InstrSpan],
    /// Where its values' facts are in the program's table, and its spill
    /// slots.
    pub values: Planned,
    /// What the ISA's lowering keeps per block besides (x86-64: nothing,
    /// its forms are a table per program at `values.base`; AArch64: the
    /// float24 dot-product sums lowered whole).
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    pub own: X,
}

impl<X> SpillSlots for BlockState<'_, X> {
    fn spill_slots_needed(&self) -> usize {
        self.values.spill_slots
    }
}

/// The IR blocks of a program, lowered one at a time in address order.
pub(crate) struct Lowering<'p, X> {
    ir: &'p Ir,
    /// Per block of `ir`: its lowering plan, until the block is lowered
    /// (`None` for a block the plan does not lower).
    blocks: Vec<Option<BlockState<'p, X>>>,
    /// The facts of every planned block's values
    /// ([`crate::jit::spill::Plan::values`]).
    table: Vec<crate::jit::regalloc::ValueState>,
    /// The block being lowered.
    current: Option<BlockState<'p, X>>,
    /// The nodes of the block being lowered (none before the first) and
    /// where its entries start in the program's tables: what lowering a
    /// node reads, without the `Option` of `current`.
    nodes: &'p [Node],
    base: usize,
    /// The allocation of the block being lowered (one for the program,
    /// restarted per block).
    pub values: Values,
    /// The first error of the lowering.
    error: Option<JitError>,
    /// The index in the analysis' blocks of the first block that does not
    /// start before the last leader charged ([`block_len_at`]).
    block_cursor: usize,
}

impl<'p, X> Lowering<'p, X> {
    /// The lowering of `ir` by its `plan` ([`crate::jit::spill::plan`]),
    /// values in the ISA's registers `regs` (in the order the allocator
    /// takes them).
    pub fn new(ir: &'p Ir, plan: Plan<BlockState<'p, X>>, regs: &'static [u8]) -> Self {
        Lowering {
            ir,
            blocks: plan.blocks,
            table: plan.values,
            current: None,
            nodes: &[],
            base: 0,
            values: Values::new(regs),
            error: None,
            block_cursor: 0,
        }
    }

    /// The block being lowered.
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    pub fn block(&self) -> &BlockState<'p, X> {
        self.current.as_ref().expect("a block is being lowered")
    }

    /// The nodes of the block being lowered, and the index of its node 0
    /// in the program's tables.
    #[inline]
    #[cfg_attr(target_arch = "aarch64", allow(dead_code))]
    pub fn nodes(&self) -> (&'p [Node], usize) {
        (self.nodes, self.base)
    }

    /// At `pc`: takes up the IR block that starts there, if any.
    fn start_at(&mut self, pc: u32) {
        if let Some((block, 0)) = self.ir.locate(pc) {
            // `block` is an element of `ir.blocks`: its index from the
            // addresses (rather than a search of the blocks by start).
            let at = block as *const crate::ir::Block as usize;
            let index =
                (at - self.ir.blocks.as_ptr() as usize) / std::mem::size_of::<crate::ir::Block>();
            self.current = self.blocks.get_mut(index).and_then(Option::take);
            if let Some(state) = &self.current {
                self.values.start(&self.table, state.values);
                (self.nodes, self.base) = (state.nodes, state.values.base as usize);
            }
        }
    }

    /// The nodes of the span of the data instruction at `pc`.
    fn span(&self, pc: u32) -> Result<std::ops::Range<u32>, JitError> {
        let missing = || JitError::Lowering(format!("no IR block lowered at {pc}"));
        match (self.ir.locate(pc), &self.current) {
            (Some((_, k)), Some(state)) => {
                let span = state.instrs.get(k).ok_or_else(missing)?;
                Ok(span.first..span.end)
            }
            _ => Err(missing()),
        }
    }

    /// The first error of the lowering, if any.
    pub fn finish(&mut self) -> Result<(), JitError> {
        self.error.take().map_or(Ok(()), Err)
    }
}

/// What the driver reads and keeps while it generates one program's code
/// (each ISA's emitter holds one).
pub(crate) struct Context<'p, X> {
    /// The program the code is generated for.
    pub program: &'p Program,
    /// Its analysis for the entry point and unit kind.
    pub analysis: &'p Analysis,
    /// The code label of each instruction ([`pc_labels`]: a leader's own,
    /// one never bound for the others).
    pub pc_labels: Vec<DynamicLabel>,
    /// The IR blocks being lowered.
    pub lowering: Lowering<'p, X>,
}

/// One ISA's side of the single-vertex code: its flow primitives
/// ([`FlowTarget`]), its value registers and stack slots, and what the
/// driver emits around the instructions.
pub(crate) trait SingleTarget<'p>: FlowTarget {
    /// What the ISA's lowering keeps per block besides the values.
    type Own;

    /// Whether an instruction no path from the entry point reaches gets its
    /// code (otherwise it hands over to the interpreter, and the plan
    /// prepares no block there).
    const EMITS_UNREACHABLE: bool;

    /// The program, its analysis, labels and IR lowering.
    fn cx(&mut self) -> &mut Context<'p, Self::Own>;

    /// Leaves for the interpreter, which continues at `pc`.
    fn resume_at(&mut self, pc: u32);

    /// At the leader `pc` of a block of `len` instructions: charges the block
    /// to the budget, handing over to the interpreter at `pc` when it is too
    /// small.
    fn charge_budget(&mut self, pc: u32, len: u32);

    /// `end`: leaves the program.
    fn end(&mut self);

    /// Lowers node `v` of the current block (one that runs), with
    /// [`lower_value`].
    fn lower_node(&mut self, v: Value) -> Result<(), JitError>;

    /// Stack slot `slot` (16 bytes) = register `reg`.
    fn store_slot(&mut self, slot: u16, reg: u8);

    /// Register `reg` = stack slot `slot`.
    fn load_slot(&mut self, reg: u8, slot: u16);

    /// Emits value `v` (one [`Values::new`] says may be emitted again) into register
    /// `reg`.
    fn rematerialise(&mut self, v: Value, reg: u8) -> Result<(), JitError>;
}

/// The instructions' labels ([`Context::pc_labels`]) from `new_label`: a
/// label of its own for each leader, which [`instruction`] binds at its
/// code, and for every other instruction one label that is never bound.
/// Only leaders are jumped to (every flow target, return address and stack
/// pop starts a block) or in the dispatch table ([`table_entries`]), so
/// the other half of the instructions need no label to be made and bound;
/// a reference to one would fail to assemble rather than jump astray.
pub(crate) fn pc_labels(
    analysis: &Analysis,
    mut new_label: impl FnMut() -> DynamicLabel,
) -> Vec<DynamicLabel> {
    let never_bound = new_label();
    (analysis.leader.iter())
        .map(|&leader| if leader { new_label() } else { never_bound })
        .collect()
}

/// A single-vertex target as the register allocator sees it.
struct Allocating<'a, T>(&'a mut T);

impl<'a, 'p: 'a, T: SingleTarget<'p>> Evict for Allocating<'a, T> {
    type Value = Value;

    fn value_regs(&mut self) -> &'static [u8] {
        self.0.cx().lowering.values.value_regs()
    }

    fn registers(&mut self) -> &mut Registers<Value> {
        self.0.cx().lowering.values.registers()
    }

    fn spill(&mut self, slot: u16, reg: u8) {
        self.0.store_slot(slot, reg);
    }

    fn reload(&mut self, reg: u8, slot: u16) {
        self.0.load_slot(reg, slot);
    }

    fn rematerialise(&mut self, v: Value, reg: u8) -> Result<(), JitError> {
        self.0.rematerialise(v, reg)
    }
}

/// Lowers value `v` of the current block, which reads `operands` (at most
/// three) and has a result when `has_result`: `emit(t, d, regs)` emits its
/// code into register `d` (0 without a result) from the operands' registers
/// `regs`.
#[inline(always)]
pub(crate) fn lower_value<'p, T: SingleTarget<'p>>(
    t: &mut T,
    v: Value,
    operands: &[Value],
    has_result: bool,
    emit: impl FnOnce(&mut T, u8, &[u8]) -> Result<(), JitError>,
) -> Result<(), JitError> {
    let values = &mut t.cx().lowering.values;
    let value_regs = values.value_regs();
    // Mostly every operand is in a register and one is free: no spill,
    // reload or rematerialisation to emit, and the allocation is settled in
    // one look-up of the block before the code is emitted (which allocates
    // nothing).
    if let Some((regs, d)) = values
        .registers()
        .settle_in_registers(v, operands, has_result, value_regs)
    {
        return emit(t, d, &regs[..operands.len()]);
    }
    let (regs, d) = allocate(t, v, operands, has_result)?;
    emit(t, d, &regs[..operands.len()])?;
    let ra = t.cx().lowering.values.registers();
    ra.release(operands, v.0);
    if has_result && ra.last_use(v) == NEVER {
        // Computed for nothing (kept alive by a write of a span lowered
        // elsewhere): free at once.
        ra.drop_value(v);
    }
    Ok(())
}

/// [`lower_value`]'s registers where an operand must be reloaded or
/// emitted again, or a register freed: the operands' registers (in
/// order) and the result's (assigned to `v`; 0 without a result).
#[inline(never)]
fn allocate<'p, T: SingleTarget<'p>>(
    t: &mut T,
    v: Value,
    operands: &[Value],
    has_result: bool,
) -> Result<([u8; 3], u8), JitError> {
    let mut a = Allocating(t);
    let mut regs = [0u8; 3];
    for (k, &o) in operands.iter().enumerate() {
        regs[k] = a.reg_of(o, operands)?;
    }
    // The result never shares a register with an operand (sequences may
    // write it before reading every operand).
    let d = if has_result {
        let d = a.alloc(operands)?;
        a.registers().assign(v, d);
        d
    } else {
        0
    };
    Ok((regs, d))
}

/// The code of the instruction at `pc`: its label, the budget charge at a
/// block's start, then the instruction (`end`, a flow instruction, or the
/// data instruction's IR span) and the after-instruction stack check.
pub(crate) fn instruction<'p, T: SingleTarget<'p>>(t: &mut T, pc: u32) {
    let i = pc as usize;
    let analysis = t.cx().analysis;
    if analysis.leader[i] {
        let label = t.cx().pc_labels[i];
        t.bind(label);
    }
    if !T::EMITS_UNREACHABLE && !analysis.reachable[i] {
        // Never executed from this entry point (nothing falls or jumps into
        // it): no code, and no flow state its pushes would need. Should
        // control ever arrive, the interpreter continues here.
        t.resume_at(pc);
        return;
    }
    if analysis.leader[i] {
        let len = block_len_at(analysis, &mut t.cx().lowering.block_cursor, pc);
        t.charge_budget(pc, len);
    }
    t.cx().lowering.start_at(pc);
    match analysis.class[i] {
        InstrClass::End => {
            t.end();
            return;
        }
        InstrClass::Runtime => {
            let instr = t.cx().program.instructions()[i];
            t.flow(pc, crate::jit::inline_flow::plan(pc, &instr));
            return;
        }
        InstrClass::Nop => {}
        InstrClass::Data => {
            if let Err(err) = lower_span(t, pc) {
                t.cx().lowering.error.get_or_insert(err);
            }
        }
    }
    t.checkpoint(pc);
}

/// [`Analysis::block_len_at`] of the leader `pc`, with `cursor` the index
/// of the first of the analysis' blocks that does not start before the
/// last `pc` asked for (0 at first): [`instruction`] charges the leaders in
/// address order, so walking the blocks (in address order too) along with
/// them finds each in a step or two instead of a binary search per leader.
/// A `pc` at or before the last one is searched.
fn block_len_at(analysis: &Analysis, cursor: &mut usize, pc: u32) -> u32 {
    let blocks = &analysis.blocks;
    let mut k = *cursor;
    if k > 0 && blocks.get(k - 1).is_some_and(|b| b.start >= pc) {
        return analysis.block_len_at(pc);
    }
    while blocks.get(k).is_some_and(|b| b.start < pc) {
        k += 1;
    }
    *cursor = k;
    match blocks.get(k) {
        Some(b) if b.start == pc => b.len(),
        _ => 1,
    }
}

/// Lowers the nodes of the data instruction at `pc` that run.
fn lower_span<'p, T: SingleTarget<'p>>(t: &mut T, pc: u32) -> Result<(), JitError> {
    for index in t.cx().lowering.span(pc)? {
        if t.cx().lowering.values.needed(index as usize) {
            t.lower_node(Value(index))?;
        }
    }
    Ok(())
}

/// The dispatch table's entries: per PC, the offset of its code relative to
/// `table` (`resolve` gives a label's offset). PCs that do not start a block
/// go to `resume` (the interpreter continues there), which keeps the budget
/// exact.
pub(crate) fn table_entries(
    analysis: &Analysis,
    pc_labels: &[DynamicLabel],
    resume: DynamicLabel,
    table: usize,
    resolve: impl Fn(DynamicLabel) -> Result<usize, JitError>,
) -> Result<Vec<i32>, JitError> {
    let entry = |offset: usize| (offset as i64 - table as i64) as i32;
    // Most PCs go to `resume`: its entry is found once.
    let resume = entry(resolve(resume)?);
    let mut entries = Vec::with_capacity(pc_labels.len());
    for (&label, &leader) in pc_labels.iter().zip(&analysis.leader) {
        entries.push(if leader {
            entry(resolve(label)?)
        } else {
            resume
        });
    }
    Ok(entries)
}

#[cfg(test)]
mod label_tests {
    use crate::analysis;
    use crate::program::{Program, ShaderKind};
    use dynasmrt::VecAssembler;
    use dynasmrt::x64::X64Relocation;

    /// `source` assembled, and its analysis from entry 0 as a vertex shader.
    fn analysed(source: &str) -> (Program, analysis::Analysis) {
        let shbin = crate::asm::assemble_str("t.pica", source).expect("assembles");
        let program = Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone())
            .expect("a program");
        let analysis = analysis::analyse(&program, 0, ShaderKind::Vertex);
        (program, analysis)
    }

    /// A leader's label is its own (no other instruction has it), every
    /// other instruction shares the one label no leader has, and
    /// [`super::instruction`]'s binding of leaders alone leaves the code
    /// assembling with every jump and table entry resolved.
    #[test]
    fn leaders_have_labels_of_their_own_and_the_rest_share_one() {
        let source = "
            .proc main
                mov r0, v0
                ifu b0, else, 1
                add r0, c1, r0
                mul r1, c2, r0
                jmpc cmp.x, done
            else:
                add r1, c1, r1
                mov r2, r1
            done:
                end
            .end
        ";
        let (program, a) = analysed(source);
        let mut ops: VecAssembler<X64Relocation> = VecAssembler::new(0);
        let labels = super::pc_labels(&a, || ops.new_dynamic_label());
        assert_eq!(labels.len(), a.leader.len());
        let leaders = a.leader.iter().filter(|&&l| l).count();
        assert!(leaders > 1 && leaders < labels.len(), "{:?}", a.leader);
        for (pc, (&label, &leader)) in labels.iter().zip(&a.leader).enumerate() {
            let same = labels.iter().filter(|&&other| other == label).count();
            if leader {
                assert_eq!(same, 1, "leader {pc} shares its label");
            } else {
                assert_eq!(same, labels.len() - leaders, "pc {pc}");
            }
        }
        let compiled = crate::jit::compile_with(
            &program,
            &crate::ShaderConfig::default(),
            crate::jit::Features::host(),
        );
        assert!(compiled.is_ok(), "{:?}", compiled.err());
    }

    /// The block lengths the driver charges with its cursor are the
    /// analysis' own, at every PC in address order (leaders and the rest,
    /// past the last block too), and again out of order (the cursor then
    /// searches).
    #[test]
    fn the_cursor_gives_each_pcs_block_length() {
        let source = "
            .proc main
                mov r0, v0
                ifu b0, else, 2
                add r0, c1, r0
                mul r1, c2, r0
                jmpc cmp.x, done
            else:
                add r1, c1, r1
                mov r2, r1
                mov r3, r2
            done:
                end
            .end
        ";
        let (_, a) = analysed(source);
        assert!(a.blocks.iter().any(|b| b.len() > 1), "{:?}", a.blocks);
        let len = a.leader.len() as u32;
        let mut cursor = 0;
        let in_order: Vec<u32> = (0..len + 2)
            .map(|pc| super::block_len_at(&a, &mut cursor, pc))
            .collect();
        let expected: Vec<u32> = (0..len + 2).map(|pc| a.block_len_at(pc)).collect();
        assert_eq!(in_order, expected);
        assert!(expected.iter().any(|&l| l > 1), "{expected:?}");
        for pc in (0..len + 2).rev().chain([2, 0, 5, 3]) {
            let got = super::block_len_at(&a, &mut cursor, pc);
            assert_eq!(got, a.block_len_at(pc), "pc {pc}");
        }
    }
}
