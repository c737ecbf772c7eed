//! The x86-64 single-vertex lowering of the shared IR ([`crate::ir`]): every
//! primitive is lowered by the x86-64 vector-primitive emitter
//! ([`super::emit`], shared with the wide engine), the nodes that are this
//! engine's own (frame operands, swizzles, blends, constants) by `prims.rs`;
//! the floating-point rules live in the IR recipes, and the optimisations are
//! the shared IR passes ([`crate::ir::opt`]).
//!
//! The backend around it (`x64/mod.rs`) provides the frame, prologue and
//! epilogue, dispatch table and budget scheme, and `flow.rs` the control flow:
//! the flow instruction that ends a block, `end`, and the stack checks (they
//! read the state from memory, which the lowered code keeps exact at every
//! instruction boundary: every write goes to memory at once). Blocks are
//! entered only at their start (other PCs resume in the interpreter) and run
//! whole or not at all (the budget is checked per block), so a value may live
//! across the instructions of its block.
//!
//! **Values** live in `xmm1..=xmm12`, allocated linearly in node order within
//! a block: a register is freed after its value's last use, and when none is
//! free the value used last is evicted (reloaded from the state if it is a read
//! of registers nobody writes in the block, else spilled to a stack slot).
//!
//! **The lowering is total.** Before any code is emitted, [`plan`] counts per
//! block the spill slots it can need (at most one per value that is live and
//! cannot be reloaded, none when no more values are live than there are
//! registers; the count is shared with AArch64, [`crate::ir::liveness`]), and
//! the prologue reserves the maximum. A block of the optimised IR that would
//! need more than [`MAX_SPILL_SLOTS`](crate::jit::spill::MAX_SPILL_SLOTS) is
//! lowered from the unoptimised IR instead ([`crate::jit::spill::plan`], also
//! shared), whose values never outlive their instruction (the same semantics,
//! checked by the IR evaluator; its recipes need few slots): the stack frame
//! stays far below a page, so no stack probing is needed.
//! `xmm0` (the `blendvps` mask) and `xmm13..=xmm15` are scratch inside one
//! primitive. A scalar is held broadcast in all four lanes (so `splat` is a
//! copy and every lane-wise primitive works on scalars unchanged); a `bool` is
//! a lane mask (all ones or zero).

mod dot;
mod prims;

use super::Emitter;
use crate::ir::{AddrReg, BinOp, Block, Elem, Ir, Op, UnOp, Value};
use crate::jit::JitError;
use crate::jit::regalloc::ValueState;
use crate::jit::single::Plan;
use crate::jit::single::state;
use crate::jit::single::values::Reads;
use crate::jit::single::{self, Values};

/// Allocatable value registers: `xmm1..=xmm12`.
pub(super) const VALUE_REGS: [u8; 12] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];

/// How a node is lowered after the block's patterns are matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Form {
    /// Its own primitive sequence.
    Own,
    /// Emits nothing: every use folds it into a pattern.
    Folded,
    /// `f24_load` of an input (F24): the copy the prologue converted.
    ConvertedInput(u8),
    /// `f24_load` of a uniform the caller already converted: the operand.
    Same(Value),
    /// `f24_flush(f24_load(read))` of a uniform, swizzled by `lanes` between
    /// the load and the flush: exactly `f24_quantize(swizzle(read))` (a
    /// flushed value cannot be a float24 subnormal, so the load's subnormal
    /// path never matters, and both steps work lane by lane), computed from
    /// the raw read.
    QuantizeOf(Value, [u8; 4]),
    /// [`Form::QuantizeOf`] of the directly addressed uniform `c<n>`, read
    /// from memory by the sequence itself.
    QuantizeConst(u8, [u8; 4]),
    /// `f24_flush(f24_load(c<n>))`, swizzled by `lanes` between the load and
    /// the flush: the flushed row of the thread's uniform cache
    /// ([`UniformReads::Cached`]).
    FlushedUniform(u8, [u8; 4]),
    /// `f24_flush(f24_load(v<n>))`, swizzled by `lanes` between the load and
    /// the flush: the flushed copy the prologue stored on the stack
    /// ([`input_uses`]).
    FlushedInput(u8, [u8; 4]),
    /// `read_const_at` of the relative-addressing slot `(base + offset) & 0x7F`
    /// with `offset` an address register outside `-128..=127` replaced by 0:
    /// computed with general-purpose registers.
    Relative {
        /// `c<base>`.
        base: u8,
        /// The address register's value, or `None` to read it from the state.
        offset: Option<Value>,
        /// Which register (when read from the state).
        reg: AddrReg,
    },
    /// The `f24_quantize` that ends a float24 dot product's pairwise sum,
    /// the whole sum emitted as one sequence (its inner nodes run nowhere
    /// else, [`dot::dot_sums`]).
    DotSum(dot::DotSum),
    /// A part of four dot products lowered together ([`dot::matrices_with`]).
    Matrix(dot::MatrixPart),
    /// F32: the [`dot::MatrixPart::Half`] of rows `b` of a matrix times the
    /// vector `a` (`dp4`s, [`dot::f32_dot_sum_at`]): both rows' products and
    /// their first sums in one register, one NaN test for all eight
    /// products; a row in memory is read by its multiply.
    F32Half { a: Value, b: [dot::Row; 2] },
    /// A swizzle (or lane extract) of a vector the block never writes, whose
    /// bits are in memory for the whole block: one `pshufd` from memory
    /// instead of a load and a shuffle (the read itself then runs only if
    /// something else reads it; [`Patterns::memory_of`]).
    ShuffleMem(Mem, [u8; 4]),
    /// `op(reg, mem)` (or `op(mem, reg)` for the multiply, whose result is
    /// the same both ways round), the vector in memory read by the
    /// operation itself ([`Patterns::memory_operand`]).
    BinaryMem { op: BinOp, reg: Value, mem: Mem },
}

/// Where float uniform reads find their values (F24; F32 code reads the
/// caller's uniforms whatever this says).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UniformReads {
    /// The caller's raw uniforms: each read converts.
    Raw,
    /// Uniforms the caller already converted (`Features::preconverted_uniforms`):
    /// a load is its read.
    Converted,
    /// The thread's uniform cache (`jit::uniform_cache`), where `rdx` points
    /// after the prologue: a load of a directly addressed uniform is its
    /// read, and its flushed load is the cache's flushed row. Only for
    /// programs without relative uniform reads.
    Cached,
}

impl UniformReads {
    fn converted(self) -> bool {
        self != UniformReads::Raw
    }
}

/// A 16-byte-aligned vector in memory that no node of the block writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mem {
    /// At this offset in `UnitState` (`rsi`).
    State(i32),
    /// At this offset in the uniforms (`rdx`).
    Uniforms(i32),
    /// Input `v<n>` as the prologue converted it (in the frame, `rdi`;
    /// [`input_uses`] counts it).
    ConvertedInput(u8),
}

impl Mem {
    /// The general-purpose register (`rsi`, `rdx`, `rdi`) and the offset
    /// from it.
    pub(crate) fn address(self) -> (u8, i32) {
        match self {
            Mem::State(off) => (6, off),
            Mem::Uniforms(off) => (2, off),
            Mem::ConvertedInput(n) => (
                7,
                crate::jit::frame::OFFSET_CONVERTED_INPUTS + 16 * i32::from(n & 15),
            ),
        }
    }
}

/// Per-block lowering plan: where its values' facts and its nodes' forms
/// are in the program's tables ([`Tables`]).
pub(super) type BlockState<'p> = single::BlockState<'p, ()>;

/// What planning decides per node of every planned block, for the whole
/// program (no allocation per block), indexed by the block's `values.base`
/// plus the node: besides the facts of its value
/// ([`crate::jit::spill::Plan::values`]), its form and operands here, one
/// entry per node ([`NodePlan`]: one table to size per block, one place
/// to look a node up when lowering it).
#[derive(Default)]
pub(super) struct Tables {
    pub nodes: Vec<NodePlan>,
}

/// A node's form, and the values it reads at run time given its form
/// ([`real_operands`], found as the form settles: lowering reads them here
/// instead of deciding them again).
#[derive(Clone, Copy, Debug)]
pub(super) struct NodePlan {
    pub form: Form,
    pub operands: Operands,
}

impl NodePlan {
    /// A node's entry before planning settles it.
    const OWN: NodePlan = NodePlan {
        form: Form::Own,
        operands: Operands::NONE,
    };

    /// The node keeps its form and reads `list[..len]`: noted here and to
    /// `reads`. Its value is not emitted again.
    #[inline(always)]
    fn own(&mut self, reads: &mut Reads<'_>, list: [Value; 3], len: u8) -> bool {
        self.operands = Operands { list, len };
        for &v in &list[..usize::from(len)] {
            reads.read(v);
        }
        false
    }

    /// The node is pattern `form`, reading no value: its value is in
    /// memory, emitted again (no spill).
    #[inline(always)]
    fn in_memory(&mut self, form: Form, inputs: &mut InputUses) -> bool {
        self.form = form;
        inputs.note(form);
        true
    }

    /// Node `op` is pattern `form`, reading [`pattern_operands`].
    #[inline(always)]
    fn pattern(
        &mut self,
        op: &Op,
        form: Form,
        inputs: &mut InputUses,
        reads: &mut Reads<'_>,
    ) -> bool {
        self.form = form;
        inputs.note(form);
        self.operands = pattern_operands(op, form);
        for v in self.operands {
            reads.read(v);
        }
        false
    }
}

/// Up to three operands, without allocating (16 bytes, copied as each
/// running node settles).
#[derive(Clone, Copy, Debug)]
pub(super) struct Operands {
    list: [Value; 3],
    len: u8,
}

/// The same values in the same order (what is past `len` is no operand).
impl PartialEq for Operands {
    fn eq(&self, other: &Operands) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Operands {
    /// No operand.
    const NONE: Operands = Operands {
        list: [Value(0); 3],
        len: 0,
    };

    fn from_iter(values: impl IntoIterator<Item = Value>) -> Operands {
        let mut out = Operands {
            list: [Value(0); 3],
            len: 0,
        };
        for v in values.into_iter().take(3) {
            out.list[usize::from(out.len)] = v;
            out.len += 1;
        }
        out
    }

    fn as_slice(&self) -> &[Value] {
        &self.list[..usize::from(self.len)]
    }
}

impl IntoIterator for Operands {
    type Item = Value;
    type IntoIter = OperandIter;
    fn into_iter(self) -> OperandIter {
        OperandIter {
            operands: self,
            next: 0,
        }
    }
}

/// The values of an [`Operands`] in order: a plain index (an array's
/// iterator under a `take` cost several times as much per operand, and
/// every running node's operands are walked once while planning).
pub(super) struct OperandIter {
    operands: Operands,
    next: u8,
}

impl Iterator for OperandIter {
    type Item = Value;

    #[inline]
    fn next(&mut self) -> Option<Value> {
        if self.next >= self.operands.len {
            return None;
        }
        let v = self.operands.list.get(usize::from(self.next)).copied();
        self.next += 1;
        v
    }
}

/// The operands a node reads at run time, given its form: what planning
/// stores per running node (`Tables::operands`; the tests' check of it).
#[cfg(test)]
fn real_operands(op: &Op, form: Form) -> Operands {
    match form {
        Form::Own => own_operands(op),
        Form::Folded => Operands::NONE,
        _ => pattern_operands(op, form),
    }
}

/// [`crate::ir::opt::operands`] of `op` (the operands of `Form::Own`).
#[inline]
fn own_operands(op: &Op) -> Operands {
    let (list, len) = crate::ir::opt::operand_array(op);
    Operands {
        list,
        len: len as u8,
    }
}

/// [`real_operands`] of the pattern forms.
fn pattern_operands(op: &Op, form: Form) -> Operands {
    match form {
        Form::Own => own_operands(op),
        Form::Folded
        | Form::ConvertedInput(_)
        | Form::FlushedInput(..)
        | Form::FlushedUniform(..)
        | Form::QuantizeConst(..)
        | Form::ShuffleMem(..) => Operands::NONE,
        Form::Same(v) | Form::QuantizeOf(v, _) | Form::BinaryMem { reg: v, .. } => {
            Operands::from_iter(Some(v))
        }
        Form::Relative { offset, .. } => Operands::from_iter(offset),
        Form::DotSum(sum) => Operands::from_iter(sum.operands()),
        Form::Matrix(dot::MatrixPart::Half { a, b0, b1 }) => Operands::from_iter([a, b0, b1]),
        Form::Matrix(dot::MatrixPart::Quad { h01, h23 }) => Operands::from_iter([h01, h23]),
        Form::F32Half { a, b } => Operands::from_iter(std::iter::once(a).chain(
            b.into_iter().filter_map(|row| match row {
                dot::Row::Value(v) => Some(v),
                dot::Row::Mem(_) => None,
            }),
        )),
    }
}

/// What planning decides for one block alone (the tests' view of it).
#[cfg(test)]
pub(super) struct TestState {
    /// Each node's form.
    pub own: Vec<Form>,
    /// Each node's value: whether it may be emitted again.
    pub remat: Vec<bool>,
    /// The spill slots the block can need.
    pub spill_slots: usize,
}

#[cfg(test)]
impl crate::jit::spill::SpillSlots for TestState {
    fn spill_slots_needed(&self) -> usize {
        self.spill_slots
    }
}

/// Matches the patterns of `block` and computes the last uses. `data[k]`
/// says whether span `k` is lowered (the others are emitted by the flow
/// code).
#[cfg(test)]
pub(super) fn block_state(
    block: &Block,
    data: &[bool],
    f24: bool,
    preconverted_uniforms: bool,
) -> TestState {
    let mut inputs = InputUses::default();
    let (mut values, mut tables) = (Vec::new(), Tables::default());
    let uniforms = if preconverted_uniforms {
        UniformReads::Converted
    } else {
        UniformReads::Raw
    };
    let state = block_state_in(
        block,
        data,
        f24,
        uniforms,
        &mut Buffers::default(),
        &mut inputs,
        (&mut values, &mut tables),
    );
    TestState {
        own: tables.nodes.iter().map(|node| node.form).collect(),
        remat: values.iter().map(|v| v.remat).collect(),
        spill_slots: state.values.spill_slots,
    }
}

/// What planning reuses from block to block of a program (most blocks
/// have a dozen nodes, and an allocation per block was a noticeable part of
/// their planning): the use counts, and the live counts of
/// [`Values::new_in`].
#[derive(Default)]
struct Buffers {
    uses: Vec<u32>,
    live: single::values::LiveBuffer,
}

/// [`block_state`] with [`Buffers`] reused across the blocks of a
/// program, its values' facts and its nodes' forms appended to the
/// program's tables (`values`, `tables`: the same length before and after).
/// Also writes the block's [`InputUses`] into `inputs`, found as each
/// node's form settles (no walk of its own).
///
/// Two walks over the nodes: the use count (with the block's [`Census`]),
/// and the walk back of [`Values::plan_reading`], which settles each node's
/// form (whether it runs is known only there) without a walk of its own,
/// the match that picks the form noting the operands it reads to the walk
/// ([`crate::jit::single::values::Reads`]). A
/// node's form depends only on its own node and its operands' nodes
/// ([`Patterns::settle`]), so the walk back can pick it; only the matrices
/// (a pattern across four sums) are found before, by a walk of their own
/// in the few blocks that can have one.
fn block_state_in<'p>(
    block: &'p Block,
    data: &[bool],
    f24: bool,
    uniforms: UniformReads,
    buffers: &mut Buffers,
    inputs: &mut InputUses,
    (values, tables): (&mut Vec<ValueState>, &mut Tables),
) -> BlockState<'p> {
    let Buffers { uses, live } = buffers;
    let nodes = &block.nodes[..];
    // How many times each node is read (one count for every pattern below),
    // the registers the block writes, and which patterns it can have at all.
    let census = Census::count(block, uses);
    let uses = &uses[..];
    let base = tables.nodes.len();
    debug_assert_eq!(base, values.len(), "the tables go in step");
    tables.nodes.resize(base + nodes.len(), NodePlan::OWN);
    let planned = &mut tables.nodes[base..];
    // A matrix is four sums blended into x, y, z, w: only where a blend
    // takes lane w. Its parts are noted first (the walk back settles them);
    // an F32 matrix is four sums, each of its own product (used by its sum
    // alone): a block with fewer multiplies has none.
    let mut matrices = false;
    if census.quads {
        let mut note = |k: usize, part| {
            planned[k].form = Form::Matrix(part);
            matrices = true;
        };
        if f24 && census.quantises {
            dot::matrices_with(
                nodes,
                uses,
                |s| single::dot_sums::dot_sum_at(nodes, uses, s.0 as usize),
                &mut note,
            );
        } else if !f24 && census.products >= 4 {
            dot::matrices_with(
                nodes,
                uses,
                |s| dot::f32_dot_sum_at(nodes, uses, s.0 as usize),
                &mut note,
            );
        }
    }
    let patterns = Patterns {
        block,
        uses,
        writes: census.writes,
        f24,
        uniforms,
        matrices,
    };
    // Which nodes run (writes of lowered spans and what they read; the
    // others fold away), their forms, and which values can be emitted
    // again.
    *inputs = InputUses::default();
    let settle = |k: usize, runs: bool, reads: &mut Reads<'_>| {
        let node = &mut planned[k];
        if !runs {
            node.form = Form::Folded;
            return false;
        }
        patterns.settle(k, node, inputs, reads)
    };
    let planned = Values::plan_reading(block, data, settle, &VALUE_REGS, live, values);
    single::BlockState {
        nodes: &block.nodes,
        instrs: &block.instrs,
        values: planned,
        own: (),
    }
}

/// What one walk over a block finds for its patterns: the registers it
/// writes, and whether it can have a dot-product sum or a matrix at all
/// (most blocks have none: no walk for those patterns then).
#[cfg_attr(test, derive(PartialEq, Debug))]
#[derive(Default)]
struct Census {
    writes: Writes,
    /// Some node is an `f24_quantize` (where every float24 sum ends).
    quantises: bool,
    /// How many PICA multiplies (F32: each row of a matrix has its own).
    products: usize,
    /// Some blend takes lane w alone (where every matrix ends).
    quads: bool,
}

impl Census {
    /// The census of `block`, and how many times each of its nodes is read
    /// (by nodes and the exit) into `uses` (a buffer reused across blocks;
    /// the counts of `single::dot_sums::uses`). One match on
    /// each node for both: the operands it reads (those of
    /// [`crate::ir::opt::operand_array`]) and what the census notes of it
    /// (the two matches each cost more than the counting itself).
    fn count(block: &Block, uses: &mut Vec<u32>) -> Census {
        let mut census = Census::default();
        uses.clear();
        uses.resize(block.nodes.len(), 0);
        let mut read = |v: Value| {
            if let Some(n) = uses.get_mut(v.0 as usize) {
                *n += 1;
            }
        };
        for node in &block.nodes {
            match node.op {
                Op::Const { .. }
                | Op::ReadInput(_)
                | Op::ReadTemp(_)
                | Op::ReadConst(_)
                | Op::ReadAddr(_)
                | Op::ReadFlag(_)
                | Op::ReadBoolUniform(_)
                | Op::ReadIntUniform { .. } => {}
                Op::Store { dst, value, .. } => {
                    read(value);
                    if let crate::isa::DstReg::Temp(t) = dst {
                        census.writes.write_temp(t);
                    }
                }
                Op::WriteAddr(r, v) => {
                    read(v);
                    census.writes.write_addr(r);
                }
                Op::WriteFlag(f, v) => {
                    read(v);
                    census.writes.write_flag(f);
                }
                Op::Unary(u, v) => {
                    read(v);
                    census.quantises |= u == UnOp::F24Quantize;
                }
                Op::ReadConstAt(v) | Op::Swizzle(v, _) | Op::Extract(v, _) | Op::Splat(v) => {
                    read(v)
                }
                Op::Binary(bin, a, b) => {
                    read(a);
                    read(b);
                    census.products += usize::from(bin == BinOp::PicaMul);
                }
                Op::Blend { a, b, take_b } => {
                    read(a);
                    read(b);
                    census.quads |= take_b.lane_bits() == 1 << 3;
                }
                Op::FCmp(_, a, b) | Op::ICmp(_, a, b) => {
                    read(a);
                    read(b);
                }
                Op::Select { cond, a, b } => {
                    read(cond);
                    read(a);
                    read(b);
                }
            }
        }
        for v in crate::ir::opt::exit_operands(&block.exit) {
            read(v);
        }
        census
    }

    /// What the census notes of `node` (the tests' check of [`Census::count`]).
    #[cfg(test)]
    fn note(&mut self, node: &crate::ir::Node) {
        match node.op {
            Op::Store {
                dst: crate::isa::DstReg::Temp(t),
                ..
            } => self.writes.write_temp(t),
            Op::WriteAddr(r, _) => self.writes.write_addr(r),
            Op::WriteFlag(f, _) => self.writes.write_flag(f),
            Op::Unary(UnOp::F24Quantize, _) => self.quantises = true,
            Op::Binary(BinOp::PicaMul, ..) => self.products += 1,
            Op::Blend { take_b, .. } => self.quads |= take_b.lane_bits() == 1 << 3,
            _ => {}
        }
    }
}

/// What picking a node's form needs to know of its block.
struct Patterns<'b> {
    block: &'b Block,
    uses: &'b [u32],
    writes: Writes,
    f24: bool,
    uniforms: UniformReads,
    /// Some node is a matrix part (most blocks have none: their nodes'
    /// entries are not asked).
    matrices: bool,
}

impl Patterns<'_> {
    fn op(&self, v: Value) -> Op {
        self.block.nodes[v.0 as usize].op
    }

    /// Settles the form of node `k` (one that runs) in its entry `node`
    /// (its form so far: [`Form::Matrix`] for a matrix part, else
    /// [`Form::Own`] with no operands): a function of its own node and its
    /// operands' nodes alone. Notes the operands it then reads
    /// ([`real_operands`]) in the entry and to `reads`, and the input it
    /// reads in `inputs`; returns whether its value can be emitted again (a
    /// read of state no node of the block writes, a constant, or a pattern
    /// read from memory). One match on the node for all of it, as every
    /// node asks it once; an entry that keeps [`Form::Own`] and reads
    /// nothing (a read, a constant) is not written at all.
    #[inline(always)]
    fn settle(
        &self,
        k: usize,
        node: &mut NodePlan,
        inputs: &mut InputUses,
        reads: &mut Reads<'_>,
    ) -> bool {
        let (f24, block) = (self.f24, self.block);
        let op = &block.nodes[k].op;
        if self.matrices
            && let Form::Matrix(part) = node.form
        {
            return node.pattern(op, self.matrix(part), inputs, reads);
        }
        match *op {
            Op::Const { .. }
            | Op::ReadInput(_)
            | Op::ReadConst(_)
            | Op::ReadIntUniform { .. }
            | Op::ReadBoolUniform(_) => true,
            Op::ReadTemp(t) => !self.writes.temp(t),
            Op::ReadAddr(r) => !self.writes.addr(r),
            Op::ReadFlag(f) => !self.writes.flag(f),
            Op::Unary(UnOp::F24Quantize, x) if f24 => {
                match single::dot_sums::dot_sum_at(&block.nodes, self.uses, k) {
                    Some(sum) => node.pattern(op, Form::DotSum(sum), inputs, reads),
                    None => node.own(reads, [x; 3], 1),
                }
            }
            Op::Unary(UnOp::F24Load, v) if f24 => match self.loaded(v) {
                form @ Form::ConvertedInput(_) => node.in_memory(form, inputs),
                form @ Form::Same(_) => {
                    node.form = form;
                    node.own(reads, [v; 3], 1)
                }
                _ => node.own(reads, [v; 3], 1),
            },
            Op::ReadConstAt(slot) => match relative(block, slot) {
                Some(form) => node.pattern(op, form, inputs, reads),
                None => node.own(reads, [slot; 3], 1),
            },
            Op::Unary(UnOp::F24Flush, v) if f24 => match flushed_load(block, v, self.uniforms) {
                Some(form @ (Form::FlushedInput(..) | Form::FlushedUniform(..))) => {
                    node.in_memory(form, inputs)
                }
                Some(form) => node.pattern(op, form, inputs, reads),
                None => node.own(reads, [v; 3], 1),
            },
            Op::Swizzle(v, lanes) => match self.memory_of(v) {
                Some(mem) => node.in_memory(Form::ShuffleMem(mem, lanes), inputs),
                None => node.own(reads, [v; 3], 1),
            },
            Op::Extract(v, lane) => match self.memory_of(v) {
                Some(mem) => node.in_memory(Form::ShuffleMem(mem, [lane; 4]), inputs),
                None => node.own(reads, [v; 3], 1),
            },
            Op::Binary(bin, a, b) => match self.memory_operand(bin, a, b) {
                Some(form) => node.pattern(op, form, inputs, reads),
                None => node.own(reads, [a, b, b], 2),
            },
            // The operands of `ir::opt::operand_array`, in its order.
            Op::Store { value: v, .. }
            | Op::WriteAddr(_, v)
            | Op::WriteFlag(_, v)
            | Op::Splat(v)
            | Op::Unary(_, v) => node.own(reads, [v; 3], 1),
            Op::Blend { a, b, .. } | Op::FCmp(_, a, b) | Op::ICmp(_, a, b) => {
                node.own(reads, [a, b, b], 2)
            }
            Op::Select { cond, a, b } => node.own(reads, [cond, a, b], 3),
        }
    }

    /// The form of `f24_load(v)` (F24).
    fn loaded(&self, v: Value) -> Form {
        match self.op(v) {
            Op::ReadInput(i) => Form::ConvertedInput(i),
            Op::ReadConst(_) | Op::ReadConstAt(_) if self.uniforms.converted() => Form::Same(v),
            _ => Form::Own,
        }
    }

    /// The form of a node with matrix part `part`.
    fn matrix(&self, part: dot::MatrixPart) -> Form {
        match part {
            dot::MatrixPart::Half { a, b0, b1 } if !self.f24 => {
                // A row nothing else reads, in memory for the whole block:
                // the multiply reads it there.
                let row = |b: Value| match self.memory_of(b) {
                    Some(mem) if self.uses[b.0 as usize] == 1 => dot::Row::Mem(mem),
                    _ => dot::Row::Value(b),
                };
                Form::F32Half {
                    a,
                    b: [row(b0), row(b1)],
                }
            }
            _ => Form::Matrix(part),
        }
    }

    /// Where value `v` is in memory for the whole block, if it is: a float
    /// uniform, an input, a temporary no node of the block writes, an input
    /// the prologue converted (F24, [`Form::ConvertedInput`]), or the
    /// float24 load of a uniform the caller converted (F24, [`Form::Same`]),
    /// or the flushed load of one the cache holds (F24,
    /// [`Form::FlushedUniform`] unswizzled). What `v`'s own form is then (the forms of reads and loads depend on
    /// their nodes alone, [`Patterns::settle`]).
    #[inline(always)]
    fn memory_of(&self, v: Value) -> Option<Mem> {
        let op = self.op(v);
        match op {
            Op::ReadTemp(t) if self.writes.temp(t) => None,
            Op::ReadInput(_) | Op::ReadTemp(_) | Op::ReadConst(_) => {
                match state::vector_read(op)? {
                    (state::Base::State, off) => Some(Mem::State(off as i32)),
                    (state::Base::Uniforms, off) => Some(Mem::Uniforms(off as i32)),
                }
            }
            Op::Unary(UnOp::F24Flush, x) if self.f24 && self.uniforms == UniformReads::Cached => {
                match flushed_load(self.block, x, self.uniforms) {
                    Some(Form::FlushedUniform(n, IDENTITY)) => Some(Mem::Uniforms(
                        crate::jit::uniform_cache::OFFSET_FLUSHED + state::float_uniform(n) as i32,
                    )),
                    _ => None,
                }
            }
            Op::Unary(UnOp::F24Load, read) if self.f24 => match self.loaded(read) {
                Form::ConvertedInput(n) => Some(Mem::ConvertedInput(n)),
                Form::Same(read) => match self.op(read) {
                    Op::ReadConst(n) => Some(Mem::Uniforms(state::float_uniform(n) as i32)),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        }
    }

    /// The form of `op(a, b)` with one operand read from memory by the
    /// operation: a float operation whose second operand, or a PICA multiply
    /// either of whose operands, is a vector in memory ([`Patterns::memory_of`])
    /// nothing else reads (a value other nodes read anyway stays in its
    /// register).
    fn memory_operand(&self, op: BinOp, a: Value, b: Value) -> Option<Form> {
        let alone = |v: Value| {
            if self.uses[v.0 as usize] == 1 {
                self.memory_of(v)
            } else {
                None
            }
        };
        match op {
            BinOp::FAdd | BinOp::FSub | BinOp::FMul | BinOp::PicaMax | BinOp::PicaMin => {
                alone(b).map(|mem| Form::BinaryMem { op, reg: a, mem })
            }
            BinOp::PicaMul => match alone(b) {
                Some(mem) => Some(Form::BinaryMem { op, reg: a, mem }),
                None => alone(a).map(|mem| Form::BinaryMem { op, reg: b, mem }),
            },
            _ => None,
        }
    }
}

/// The registers some node of a block writes ([`Census`]), so that asking
/// of each read costs no walk of its own. A register is named by the place
/// the lowering keeps it in the state ([`state::temp`], [`state::flag`]:
/// `r<n & 15>`, `cmp.<f & 1>`), so a read counts as written exactly when
/// its place in memory is; one bit each, the whole set in one word (it is
/// made and copied once per block, and every read of the block asks it).
#[cfg_attr(test, derive(PartialEq, Debug))]
#[derive(Clone, Copy, Default)]
struct Writes {
    temps: u16,
    addrs: u8,
    flags: u8,
}

impl Writes {
    fn write_temp(&mut self, t: u8) {
        self.temps |= 1 << (t & 15);
    }

    fn write_addr(&mut self, r: AddrReg) {
        self.addrs |= 1 << (r as u8 & 7);
    }

    fn write_flag(&mut self, f: u8) {
        self.flags |= 1 << (f & 1);
    }

    fn temp(self, t: u8) -> bool {
        self.temps >> (t & 15) & 1 != 0
    }

    fn addr(self, r: AddrReg) -> bool {
        self.addrs >> (r as u8 & 7) & 1 != 0
    }

    fn flag(self, f: u8) -> bool {
        self.flags >> (f & 1) & 1 != 0
    }
}

/// The lowering of a whole program ([`crate::jit::spill::plan`]), with the
/// block states of this backend. `data(pc)` says whether the instruction at
/// `pc` is lowered (the others are emitted by the flow code);
/// `reachable(pc)` whether a block starting there is ever entered. Also
/// returns which inputs the planned blocks read converted and flushed
/// ([`input_uses`], found while planning), and the program's [`Tables`].
pub(super) fn plan<'p>(
    ir: &'p Ir,
    unoptimised: &'p Ir,
    data: impl Fn(u32) -> bool,
    reachable: impl Fn(u32) -> bool,
    f24: bool,
    uniforms: UniformReads,
) -> Result<(Plan<BlockState<'p>>, InputUses, Tables), JitError> {
    let mut buffers = Buffers::default();
    let nodes: usize = ir.blocks.iter().map(|b| b.nodes.len()).sum();
    // Room for a few blocks planned again from the unoptimised IR.
    let room = nodes + nodes / 4;
    let mut tables = Tables {
        nodes: Vec::with_capacity(room),
    };
    // A block whose state needs too many spill slots is planned again from
    // its unoptimised IR: only the last state planned for a block (by its
    // start) counts.
    let (mut planned, mut last) = (InputUses::default(), None::<(u32, InputUses)>);
    let plan = crate::jit::spill::plan(
        ir,
        unoptimised,
        data,
        reachable,
        |block, lowered, values| {
            match last {
                Some((start, _)) if start == block.start => {}
                Some((_, done)) => planned.join(done),
                None => {}
            }
            let mut inputs = InputUses::default();
            let state = block_state_in(
                block,
                lowered,
                f24,
                uniforms,
                &mut buffers,
                &mut inputs,
                (values, &mut tables),
            );
            last = Some((block.start, inputs));
            state
        },
    )?;
    if let Some((_, done)) = last {
        planned.join(done);
    }
    Ok((plan, planned, tables))
}

/// The identity swizzle.
const IDENTITY: [u8; 4] = [0, 1, 2, 3];

/// The form of `f24_flush(v)` when `v` is, under at most one swizzle, the
/// float24 load of an input (always converted by the prologue), of a raw
/// uniform, or of a directly addressed uniform the cache holds flushed.
fn flushed_load(block: &Block, v: Value, uniforms: UniformReads) -> Option<Form> {
    let op = |v: Value| block.nodes[v.0 as usize].op;
    let (loaded, lanes) = match op(v) {
        Op::Swizzle(x, lanes) => (x, lanes),
        _ => (v, IDENTITY),
    };
    let Op::Unary(UnOp::F24Load, read) = op(loaded) else {
        return None;
    };
    match op(read) {
        Op::ReadInput(n) => Some(Form::FlushedInput(n & 15, lanes)),
        Op::ReadConst(n) => match uniforms {
            UniformReads::Raw => Some(Form::QuantizeConst(n, lanes)),
            UniformReads::Cached => Some(Form::FlushedUniform(n, lanes)),
            UniformReads::Converted => None,
        },
        Op::ReadConstAt(_) if uniforms == UniformReads::Raw => Some(Form::QuantizeOf(read, lanes)),
        _ => None,
    }
}

/// Which inputs lowered blocks read as converted by the prologue
/// (`Form::ConvertedInput`), and which flushed (`Form::FlushedInput`): one
/// bit per input.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub(super) struct InputUses {
    pub(super) loaded: u16,
    pub(super) flushed: u16,
}

impl InputUses {
    /// Records the input a node of form `form` reads, if any.
    fn note(&mut self, form: Form) {
        match form {
            Form::ConvertedInput(n)
            | Form::ShuffleMem(Mem::ConvertedInput(n), _)
            | Form::BinaryMem {
                mem: Mem::ConvertedInput(n),
                ..
            } => self.loaded |= 1 << (n & 15),
            Form::FlushedInput(n, _) => self.flushed |= 1 << (n & 15),
            _ => {}
        }
    }

    fn join(&mut self, other: InputUses) {
        self.loaded |= other.loaded;
        self.flushed |= other.flushed;
    }
}

/// The [`InputUses`] of the planned blocks of `plan`, by a walk over their
/// forms: what [`plan`] returns with the plan (a check of it).
#[cfg(test)]
pub(super) fn input_uses(plan: &Plan<BlockState<'_>>, tables: &Tables) -> InputUses {
    let mut uses = InputUses::default();
    for state in plan.blocks.iter().flatten() {
        for node in &tables.nodes[state.values.range()] {
            uses.note(node.form);
        }
    }
    uses
}

/// The stack offset of the flushed copy of input `n` among the `flushed`
/// ones, above `base` (the spill slots).
pub(super) fn flushed_input_offset(base: i32, flushed: u16, n: u8) -> i32 {
    let below = flushed & ((1u16 << (n & 15)) - 1);
    base + 16 * below.count_ones() as i32
}

/// The relative-addressing pattern of `ir::recipes` at `slot`, if it is one.
fn relative(block: &Block, slot: Value) -> Option<Form> {
    let op = |v: Value| block.nodes[v.0 as usize].op;
    let konst = |v: Value| match op(v) {
        Op::Const { ty, bits } if ty.elem == Elem::I32 && ty.lanes == 1 => Some(bits[0] as i32),
        _ => None,
    };
    let Op::Binary(BinOp::And, sum, wrap) = op(slot) else {
        return None;
    };
    let Op::Binary(BinOp::IAdd, base, offset) = op(sum) else {
        return None;
    };
    let Op::Select { cond, a, b } = op(offset) else {
        return None;
    };
    let Op::Binary(BinOp::BAnd, above, below) = op(cond) else {
        return None;
    };
    let (Op::ICmp(crate::isa::CmpOp::Ge, r1, lo), Op::ICmp(crate::isa::CmpOp::Le, r2, hi)) =
        (op(above), op(below))
    else {
        return None;
    };
    if konst(wrap)? != 0x7F
        || konst(lo)? != -128
        || konst(hi)? != 127
        || konst(b)? != 0
        || r1 != a
        || r2 != a
    {
        return None;
    }
    let base = u8::try_from(konst(base)?).ok()?;
    let (offset, reg) = match op(a) {
        Op::ReadAddr(reg) => (None, reg),
        _ => (Some(a), AddrReg::A0X),
    };
    Some(Form::Relative { base, offset, reg })
}

impl Emitter<'_> {
    /// Lowers node `v` of the current block (one that runs).
    #[inline(always)]
    pub(super) fn lower_ir_node(&mut self, v: Value) -> Result<(), JitError> {
        let (nodes, base) = self.cx.lowering.nodes();
        let k = v.0 as usize;
        let node = &nodes[k];
        // Its form and operands as planning settled them.
        let NodePlan { form, operands } = self.planned[base + k];
        let has_result = node.ty.is_some();
        single::lower_value(self, v, operands.as_slice(), has_result, |e, d, regs| {
            e.emit_node(&node.op, &form, d, regs);
            Ok(())
        })
    }

    /// Emits value `v` (a read of state the block does not write, or a
    /// constant) again into `reg`.
    pub(super) fn rematerialise_node(&mut self, v: Value, reg: u8) -> Result<(), JitError> {
        let (nodes, base) = self.cx.lowering.nodes();
        let form = self.planned[base + v.0 as usize].form;
        self.emit_node(&nodes[v.0 as usize].op, &form, reg, &[]);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
