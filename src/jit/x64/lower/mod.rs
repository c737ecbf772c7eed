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

mod prims;

use super::Emitter;
use crate::ir::liveness::Liveness;
use crate::ir::{AddrReg, BinOp, Block, Elem, InstrSpan, Ir, Node, Op, UnOp, Value};
use crate::jit::JitError;
use crate::jit::spill::{Plan, SpillSlots};
use dynasmrt::{DynasmApi, dynasm};

/// Allocatable value registers: `xmm1..=xmm12`.
const FIRST_REG: u8 = 1;
const LAST_REG: u8 = 12;
const VALUE_REGS: usize = (LAST_REG - FIRST_REG + 1) as usize;

/// Where a value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Loc {
    /// Not computed yet, or no longer needed.
    None,
    /// In `xmm<n>`.
    Reg(u8),
    /// In spill slot `n`.
    Spill(u8),
    /// Evicted; computed again from the state (a read nobody writes here).
    Remat,
}

/// How a node is lowered after the block's patterns are matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Form {
    /// Its own primitive sequence.
    Own,
    /// Emits nothing: every use folds it into a pattern.
    Folded,
    /// `f24_load` of an input (F24): the copy the prologue converted.
    ConvertedInput(u8),
    /// `f24_load` of a uniform the caller already converted: the operand.
    Same(Value),
    /// `f24_flush(f24_load(read))` of a uniform: exactly `f24_quantize(read)`
    /// (a flushed value cannot be a float24 subnormal, so the load's subnormal
    /// path never matters), computed from the raw read.
    QuantizeOf(Value),
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
}

/// Per-block lowering state.
pub(super) struct BlockState<'p> {
    /// The nodes being lowered (the block's).
    nodes: &'p [Node],
    /// Its instruction spans.
    instrs: &'p [InstrSpan],
    form: Vec<Form>,
    /// Index of the node that last reads each value (`u32::MAX`: none).
    last_use: Vec<u32>,
    loc: Vec<Loc>,
    /// Which value each `xmm` register holds.
    holder: [Option<Value>; 16],
    /// Free spill slots (as many as the block can need, see
    /// [`BlockState::spill_slots_needed`]).
    free_slots: Vec<u8>,
    /// Values that may be recomputed from the state instead of spilled.
    remat: Vec<bool>,
}

/// Up to three operands, without allocating.
#[derive(Clone, Copy)]
struct Operands {
    list: [Value; 3],
    len: usize,
}

impl Operands {
    fn from_iter(values: impl IntoIterator<Item = Value>) -> Operands {
        let mut out = Operands {
            list: [Value(0); 3],
            len: 0,
        };
        for v in values.into_iter().take(3) {
            out.list[out.len] = v;
            out.len += 1;
        }
        out
    }

    fn as_slice(&self) -> &[Value] {
        &self.list[..self.len]
    }
}

impl IntoIterator for Operands {
    type Item = Value;
    type IntoIter = std::iter::Take<std::array::IntoIter<Value, 3>>;
    fn into_iter(self) -> Self::IntoIter {
        self.list.into_iter().take(self.len)
    }
}

/// The operands a node reads at run time, given its form.
fn real_operands(op: &Op, form: Form) -> Operands {
    match form {
        Form::Own => Operands::from_iter(crate::ir::opt::operands(op)),
        Form::Folded | Form::ConvertedInput(_) => Operands::from_iter(None),
        Form::Same(v) | Form::QuantizeOf(v) => Operands::from_iter(Some(v)),
        Form::Relative { offset, .. } => Operands::from_iter(offset),
    }
}

impl<'p> BlockState<'p> {
    /// Matches the patterns of `block` and computes the last uses. `data[k]`
    /// says whether span `k` is lowered (the others are emitted by the
    /// flow code).
    pub fn new(
        block: &'p Block,
        data: &[bool],
        f24: bool,
        preconverted_uniforms: bool,
    ) -> BlockState<'p> {
        let n = block.nodes.len();
        let mut form = vec![Form::Own; n];
        let op = |v: Value| block.nodes[v.0 as usize].op;
        for (k, node) in block.nodes.iter().enumerate() {
            form[k] = match node.op {
                Op::Unary(UnOp::F24Load, v) if f24 => match op(v) {
                    Op::ReadInput(i) => Form::ConvertedInput(i),
                    Op::ReadConst(_) | Op::ReadConstAt(_) if preconverted_uniforms => Form::Same(v),
                    _ => Form::Own,
                },
                Op::ReadConstAt(slot) => relative(block, slot).unwrap_or(Form::Own),
                Op::Unary(UnOp::F24Flush, v) if f24 && !preconverted_uniforms => match op(v) {
                    Op::Unary(UnOp::F24Load, read)
                        if matches!(op(read), Op::ReadConst(_) | Op::ReadConstAt(_)) =>
                    {
                        Form::QuantizeOf(read)
                    }
                    _ => Form::Own,
                },
                _ => Form::Own,
            };
        }
        // Which nodes run: writes of lowered spans and what they read.
        let Liveness { needed, last_use } =
            Liveness::of(block, data, |k| real_operands(&block.nodes[k].op, form[k]));
        for k in 0..n {
            if !needed[k] {
                form[k] = Form::Folded;
            }
        }
        // Reads of state no node of this block writes can be loaded again.
        let written = |op: &Op| {
            block.nodes.iter().any(|node| match (node.op, op) {
                (Op::Store { dst, .. }, Op::ReadTemp(t)) => dst == crate::isa::DstReg::Temp(*t),
                (Op::WriteAddr(w, _), Op::ReadAddr(r)) => w == *r,
                (Op::WriteFlag(w, _), Op::ReadFlag(r)) => w == *r,
                _ => false,
            })
        };
        let remat = (0..n)
            .map(|k| match block.nodes[k].op {
                Op::Const { .. }
                | Op::ReadInput(_)
                | Op::ReadConst(_)
                | Op::ReadIntUniform { .. }
                | Op::ReadBoolUniform(_) => form[k] == Form::Own,
                ref read @ (Op::ReadTemp(_) | Op::ReadAddr(_) | Op::ReadFlag(_)) => {
                    form[k] == Form::Own && !written(read)
                }
                Op::Unary(UnOp::F24Load, _) => matches!(form[k], Form::ConvertedInput(_)),
                _ => false,
            })
            .collect();
        BlockState {
            nodes: &block.nodes,
            instrs: &block.instrs,
            form,
            last_use,
            loc: vec![Loc::None; n],
            holder: [None; 16],
            free_slots: Vec::new(),
            remat,
        }
    }
}

impl SpillSlots for BlockState<'_> {
    /// Values that can be recomputed from the state never take a slot.
    fn spill_slots_needed(&self) -> usize {
        crate::ir::liveness::spill_slots(&self.last_use, VALUE_REGS, |v| {
            (self.form[v] != Form::Folded && self.nodes[v].ty.is_some()).then_some(!self.remat[v])
        })
    }

    fn free_slots(&mut self) -> &mut Vec<u8> {
        &mut self.free_slots
    }
}

/// The lowering of a whole program ([`crate::jit::spill::plan`]), with the
/// block states of this backend. `data(pc)` says whether the instruction at
/// `pc` is lowered (the others are emitted by the flow code);
/// `reachable(pc)` whether a block starting there is ever entered.
pub(super) fn plan<'p>(
    ir: &'p Ir,
    unoptimised: &'p Ir,
    data: impl Fn(u32) -> bool,
    reachable: impl Fn(u32) -> bool,
    f24: bool,
    preconverted_uniforms: bool,
) -> Result<Plan<BlockState<'p>>, JitError> {
    crate::jit::spill::plan(ir, unoptimised, data, reachable, |block, lowered| {
        BlockState::new(block, lowered, f24, preconverted_uniforms)
    })
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

impl<'p> Emitter<'p> {
    /// Lowers the nodes of span `k` of the current block.
    pub(super) fn lower_span(&mut self, k: usize) -> Result<(), JitError> {
        let Some(state) = self.lowering.as_ref() else {
            return Ok(());
        };
        let span = state.instrs[k];
        for index in span.first..span.end {
            let form = self.state().form[index as usize];
            if form == Form::Folded {
                continue;
            }
            self.lower_node(Value(index), form)?;
        }
        Ok(())
    }

    fn state(&self) -> &BlockState<'p> {
        self.lowering.as_ref().expect("a block is being lowered")
    }

    fn state_mut(&mut self) -> &mut BlockState<'p> {
        self.lowering.as_mut().expect("a block is being lowered")
    }

    /// Frees the registers of operands whose last use is `at`.
    fn release_operands(&mut self, operands: &[Value], at: Value) {
        for &v in operands {
            let s = self.state_mut();
            if s.last_use[v.0 as usize] == at.0 {
                match s.loc[v.0 as usize] {
                    Loc::Reg(r) => s.holder[r as usize] = None,
                    Loc::Spill(slot) => s.free_slots.push(slot),
                    Loc::None | Loc::Remat => {}
                }
                s.loc[v.0 as usize] = Loc::None;
            }
        }
    }

    /// A free value register, evicting the value whose last use is furthest
    /// away (never one of `keep`).
    fn alloc_reg(&mut self, keep: &[Value]) -> Result<u8, JitError> {
        let s = self.state();
        if let Some(r) = (FIRST_REG..=LAST_REG).find(|&r| s.holder[r as usize].is_none()) {
            return Ok(r);
        }
        let victim = (FIRST_REG..=LAST_REG)
            .filter_map(|r| s.holder[r as usize].map(|v| (r, v)))
            .filter(|(_, v)| !keep.contains(v))
            .max_by_key(|(_, v)| (s.remat[v.0 as usize], s.last_use[v.0 as usize]));
        // At most three values are kept, so one of twelve registers holds
        // another.
        let Some((r, v)) = victim else {
            return Err(JitError::Lowering("no register to evict".into()));
        };
        let s = self.state_mut();
        s.holder[r as usize] = None;
        if s.remat[v.0 as usize] {
            s.loc[v.0 as usize] = Loc::Remat;
        } else {
            // `plan` gave the block as many slots as it can need.
            let slot = s.free_slots.pop().ok_or_else(|| {
                JitError::Lowering("more live values than the block's spill slots".into())
            })?;
            s.loc[v.0 as usize] = Loc::Spill(slot);
            let off = 16 * slot as i32;
            dynasm!(self.ops ; .arch x64 ; movaps [rsp + off], Rx(r));
        }
        Ok(r)
    }

    /// The register holding `v`, reloading it if it was evicted.
    fn reg_of(&mut self, v: Value, keep: &[Value]) -> Result<u8, JitError> {
        match self.state().loc[v.0 as usize] {
            Loc::Reg(r) => Ok(r),
            Loc::Spill(slot) => {
                let r = self.alloc_reg(keep)?;
                let off = 16 * slot as i32;
                dynasm!(self.ops ; .arch x64 ; movaps Rx(r), [rsp + off]);
                let s = self.state_mut();
                s.free_slots.push(slot);
                s.loc[v.0 as usize] = Loc::Reg(r);
                s.holder[r as usize] = Some(v);
                Ok(r)
            }
            Loc::Remat => {
                let r = self.alloc_reg(keep)?;
                let op = self.state().nodes[v.0 as usize].op;
                let form = self.state().form[v.0 as usize];
                self.emit_node(op, form, r, &[])?;
                let s = self.state_mut();
                s.loc[v.0 as usize] = Loc::Reg(r);
                s.holder[r as usize] = Some(v);
                Ok(r)
            }
            Loc::None => Err(JitError::Lowering(format!(
                "IR value {v} used before it is computed"
            ))),
        }
    }

    fn lower_node(&mut self, v: Value, form: Form) -> Result<(), JitError> {
        let node = self.state().nodes[v.0 as usize];
        let operands = real_operands(&node.op, form);
        let operands = operands.as_slice();
        let mut regs = [0u8; 3];
        for (k, &o) in operands.iter().enumerate() {
            regs[k] = self.reg_of(o, operands)?;
        }
        let regs = &regs[..operands.len()];
        if node.ty.is_none() {
            self.emit_node(node.op, form, 0, regs)?;
            self.release_operands(operands, v);
            return Ok(());
        }
        // The result never shares a register with an operand (sequences may
        // write it before reading every operand).
        let d = self.alloc_reg(operands)?;
        {
            let s = self.state_mut();
            s.holder[d as usize] = Some(v);
            s.loc[v.0 as usize] = Loc::Reg(d);
        }
        self.emit_node(node.op, form, d, regs)?;
        self.release_operands(operands, v);
        if self.state().last_use[v.0 as usize] == u32::MAX {
            // Computed for nothing (kept alive by a write of a span lowered
            // elsewhere): free at once.
            let s = self.state_mut();
            s.holder[d as usize] = None;
            s.loc[v.0 as usize] = Loc::None;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
