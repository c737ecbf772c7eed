//! The AArch64 single-vertex lowering of the shared IR ([`crate::ir`]): one
//! vertex's `x, y, z, w` in one NEON register. What is particular to that
//! layout is here (swizzles, blends, lane extracts, reads of the `UnitState`
//! frame and the uniforms, the register allocator); every IR primitive is
//! the shared emitter's (`emit/`, also under the wide lowering). The
//! floating-point rules live in the IR recipes and the optimisations are the
//! shared IR passes ([`crate::ir::opt`]), as on x86-64 (`x64/lower/`).
//!
//! The backend around it (`mod.rs`, `flow.rs`) provides the frame, prologue,
//! epilogue, dispatch, budget and control flow: only the spans of data
//! instructions are lowered, and every write goes to memory at once, so the
//! state is exact at every instruction boundary. Blocks are entered only at
//! their start and run whole (the budget is charged per block), so a value may
//! live across the instructions of its block.
//!
//! **Values** live in `v1..=v3` and `v28..=v31`, allocated in node order: a
//! register is freed after its value's last use, and when none is free the
//! value used last is spilled to a stack slot.
//!
//! **The lowering is total.** Before any code is emitted, [`plan`] counts per
//! block the spill slots it can need (the rule x86-64 uses,
//! [`crate::ir::liveness::spill_slots`]; here every evicted value takes a
//! slot) and the prologue reserves the most any block needs; a block of the
//! optimised IR that would need more than
//! [`MAX_SPILL_SLOTS`](crate::jit::spill::MAX_SPILL_SLOTS) is lowered from the
//! unoptimised IR instead ([`crate::jit::spill::plan`]). `v0` and `v4..=v6`
//! are scratch inside one primitive, `v7` inside a masked store
//! (`operands.rs`); `v16..=v25` hold the pinned constants
//! (`emit::consts::K`). A scalar is held broadcast in all four lanes, a
//! `bool` as a lane mask.

use super::Emitter;
use super::emit::Neon;
use super::operands::{A0, AL, CMP};
use crate::ir::liveness::Liveness;
use crate::ir::{AddrReg, Block, Elem, InstrSpan, Node, Op, Value};
use crate::jit::JitError;
use crate::jit::spill::SpillSlots;
use crate::state::Uniforms;
use dynasmrt::{DynasmApi, dynasm};
use std::mem::offset_of;

const INPUTS: u32 = offset_of!(crate::state::UnitState, inputs) as u32;
const TEMPS: u32 = offset_of!(crate::state::UnitState, temps) as u32;
const FLOATS: u32 = offset_of!(Uniforms, f) as u32;
const BOOLS: u32 = offset_of!(Uniforms, b) as u32;
const INTS: u32 = offset_of!(Uniforms, i) as u32;

/// `x20` = `*mut UnitState`, `x21` = `*const Uniforms`, `x23` = the
/// constant pool (see `mod.rs`).
const STATE: u8 = 20;
const UNIFORMS: u8 = 21;
const POOL: u8 = 23;

/// Registers that hold values.
const VALUE_REGS: [u8; 7] = [1, 2, 3, 28, 29, 30, 31];

/// Where a value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Loc {
    /// Not computed yet, or no longer needed.
    None,
    /// In `v<n>`.
    Reg(u8),
    /// In spill slot `n`.
    Spill(u8),
}

/// Per-block lowering state.
pub(super) struct BlockState<'p> {
    nodes: &'p [Node],
    instrs: &'p [InstrSpan],
    /// Whether the node runs (a write of a lowered span, or read by one).
    needed: Vec<bool>,
    /// Index of the node that last reads each value (`u32::MAX`: none).
    last_use: Vec<u32>,
    /// Where each value is.
    loc: Vec<Loc>,
    /// Which value each `v` register holds.
    holder: [Option<Value>; 32],
    /// Free spill slots (as many as the block can need, see
    /// [`BlockState::spill_slots_needed`]).
    free_slots: Vec<u8>,
}

impl<'p> BlockState<'p> {
    /// Computes which nodes run and their last uses; `data[k]` says whether
    /// span `k` is lowered (the others are emitted by the flow code).
    pub fn new(block: &'p Block, data: &[bool]) -> BlockState<'p> {
        let n = block.nodes.len();
        let Liveness { needed, last_use } = Liveness::of(block, data, |k| {
            crate::ir::opt::operands(&block.nodes[k].op)
        });
        BlockState {
            nodes: &block.nodes,
            instrs: &block.instrs,
            needed,
            last_use,
            loc: vec![Loc::None; n],
            holder: [None; 32],
            free_slots: Vec::new(),
        }
    }
}

impl SpillSlots for BlockState<'_> {
    fn spill_slots_needed(&self) -> usize {
        crate::ir::liveness::spill_slots(&self.last_use, VALUE_REGS.len(), |v| {
            (self.needed[v] && self.nodes[v].ty.is_some()).then_some(true)
        })
    }

    fn free_slots(&mut self) -> &mut Vec<u8> {
        &mut self.free_slots
    }
}

impl<'p> Emitter<'p> {
    /// Lowers the nodes of span `k` of the current block.
    pub(super) fn lower_span(&mut self, k: usize) -> Result<(), JitError> {
        let Some(state) = self.lowering.as_ref() else {
            return Err(JitError::Lowering(
                "no IR block at a data instruction".into(),
            ));
        };
        let span = state
            .instrs
            .get(k)
            .copied()
            .ok_or_else(|| JitError::Lowering(format!("IR block has no span {k}")))?;
        for index in span.first..span.end {
            if self.state().needed[index as usize] {
                self.lower_node(Value(index))?;
            }
        }
        Ok(())
    }

    fn state(&self) -> &BlockState<'p> {
        self.lowering.as_ref().expect("a block is being lowered")
    }

    fn state_mut(&mut self) -> &mut BlockState<'p> {
        self.lowering.as_mut().expect("a block is being lowered")
    }

    /// A free value register, spilling the value whose last use is furthest
    /// away (never one of `keep`).
    fn alloc_reg(&mut self, keep: &[Value]) -> Result<u8, JitError> {
        let s = self.state();
        if let Some(r) = VALUE_REGS
            .iter()
            .copied()
            .find(|&r| s.holder[r as usize].is_none())
        {
            return Ok(r);
        }
        let victim = VALUE_REGS
            .iter()
            .filter_map(|&r| s.holder[r as usize].map(|v| (r, v)))
            .filter(|(_, v)| !keep.contains(v))
            .max_by_key(|(_, v)| s.last_use[v.0 as usize]);
        // At most three values are kept, so one of seven registers holds
        // another.
        let Some((r, v)) = victim else {
            return Err(JitError::Lowering("no register to spill".into()));
        };
        let s = self.state_mut();
        // `plan` gave the block as many slots as it can need.
        let slot = s.free_slots.pop().ok_or_else(|| {
            JitError::Lowering("more live values than the block's spill slots".into())
        })?;
        s.holder[r as usize] = None;
        s.loc[v.0 as usize] = Loc::Spill(slot);
        let off = 16 * u32::from(slot);
        dynasm!(self.ops ; .arch aarch64 ; str Q(r), [sp, off]);
        Ok(r)
    }

    /// The register holding `v`, reloading it if it was spilled.
    fn reg_of(&mut self, v: Value, keep: &[Value]) -> Result<u8, JitError> {
        match self.state().loc[v.0 as usize] {
            Loc::Reg(r) => Ok(r),
            Loc::Spill(slot) => {
                let r = self.alloc_reg(keep)?;
                let off = 16 * u32::from(slot);
                dynasm!(self.ops ; .arch aarch64 ; ldr Q(r), [sp, off]);
                let s = self.state_mut();
                s.free_slots.push(slot);
                s.loc[v.0 as usize] = Loc::Reg(r);
                s.holder[r as usize] = Some(v);
                Ok(r)
            }
            Loc::None => Err(JitError::Lowering(format!(
                "IR value {v} used before it is computed"
            ))),
        }
    }

    fn lower_node(&mut self, v: Value) -> Result<(), JitError> {
        let node = self.state().nodes[v.0 as usize];
        let operands: Vec<Value> = crate::ir::opt::operands(&node.op).collect();
        let mut regs = Vec::with_capacity(operands.len());
        for &o in &operands {
            regs.push(self.reg_of(o, &operands)?);
        }
        // The result never shares a register with an operand (sequences may
        // write it before reading every operand).
        let d = if node.ty.is_some() {
            let d = self.alloc_reg(&operands)?;
            let s = self.state_mut();
            s.holder[d as usize] = Some(v);
            s.loc[v.0 as usize] = Loc::Reg(d);
            d
        } else {
            0
        };
        self.emit_node(node.op, d, &regs)?;
        let s = self.state_mut();
        for &o in &operands {
            if s.last_use[o.0 as usize] == v.0 {
                match s.loc[o.0 as usize] {
                    Loc::Reg(r) => s.holder[r as usize] = None,
                    Loc::Spill(slot) => s.free_slots.push(slot),
                    Loc::None => {}
                }
                s.loc[o.0 as usize] = Loc::None;
            }
        }
        if node.ty.is_some() && s.last_use[v.0 as usize] == u32::MAX {
            // Computed for nothing: free at once.
            s.holder[d as usize] = None;
            s.loc[v.0 as usize] = Loc::None;
        }
        Ok(())
    }

    /// The shared primitive emitter, on this function's code.
    pub(super) fn neon(&mut self) -> Neon<'_> {
        Neon::new(&mut self.ops)
    }

    fn emit_node(&mut self, op: Op, d: u8, regs: &[u8]) -> Result<(), JitError> {
        let r = |k: usize| regs[k];
        match op {
            Op::Const { ty, bits } => {
                let mut lanes = if ty.lanes == 1 { [bits[0]; 4] } else { bits };
                if ty.elem == Elem::Bool {
                    lanes = lanes.map(|b| if b != 0 { u32::MAX } else { 0 });
                }
                self.neon().constant_lanes(d, lanes);
            }
            Op::ReadInput(n) => {
                let off = INPUTS + 16 * (n & 15) as u32;
                dynasm!(self.ops ; .arch aarch64 ; ldr Q(d), [x20, off]);
            }
            Op::ReadTemp(n) => {
                let off = TEMPS + 16 * (n & 15) as u32;
                dynasm!(self.ops ; .arch aarch64 ; ldr Q(d), [x20, off]);
            }
            Op::ReadConst(n) => {
                let off = FLOATS + 16 * n.min(95) as u32;
                dynasm!(self.ops ; .arch aarch64 ; ldr Q(d), [x21, off]);
            }
            Op::ReadConstAt(_) => {
                self.neon().uniform_address(r(0), 0, UNIFORMS, POOL);
                dynasm!(self.ops ; .arch aarch64 ; ldr Q(d), [x10]);
            }
            Op::ReadAddr(reg) => self.neon().word_to_lanes(d, STATE, addr_offset(reg)),
            Op::ReadFlag(f) => self
                .neon()
                .byte_to_lanes(d, STATE, CMP + (f & 1) as u32, true),
            Op::ReadBoolUniform(n) => {
                self.neon()
                    .byte_to_lanes(d, UNIFORMS, BOOLS + (n & 15) as u32, true)
            }
            Op::ReadIntUniform { id, field } => {
                let off = INTS + 4 * (id & 3) as u32 + (field & 3) as u32;
                self.neon().byte_to_lanes(d, UNIFORMS, off, false);
            }
            Op::Store { dst, mask, .. } => self.store(r(0), dst, mask),
            Op::WriteAddr(reg, _) => {
                let off = addr_offset(reg);
                dynasm!(self.ops ; .arch aarch64 ; umov w9, V(r(0)).s[0] ; str w9, [x20, off]);
            }
            Op::WriteFlag(f, _) => {
                let off = CMP + (f & 1) as u32;
                dynasm!(self.ops
                    ; .arch aarch64
                    ; umov w9, V(r(0)).s[0]
                    ; and w9, w9, #1
                    ; strb w9, [x20, off]
                );
            }
            Op::Swizzle(_, lanes) => {
                let a = r(0);
                if lanes.iter().all(|&l| l == lanes[0]) {
                    let lane = (lanes[0] & 3) as u32;
                    dynasm!(self.ops ; .arch aarch64 ; dup V(d).s4, V(a).s[lane]);
                } else {
                    for (to, &from) in lanes.iter().enumerate() {
                        let (to, from) = (to as u32, (from & 3) as u32);
                        dynasm!(self.ops ; .arch aarch64 ; mov V(d).s[to], V(a).s[from]);
                    }
                }
            }
            Op::Extract(_, lane) => {
                let lane = (lane & 3) as u32;
                dynasm!(self.ops ; .arch aarch64 ; dup V(d).s4, V(r(0)).s[lane]);
            }
            Op::Splat(_) => self.neon().copy(d, r(0)),
            Op::Blend { take_b, .. } => {
                self.neon().copy(d, r(0));
                for lane in 0..4u32 {
                    if take_b.writes(lane as usize) {
                        dynasm!(self.ops ; .arch aarch64 ; mov V(d).s[lane], V(r(1)).s[lane]);
                    }
                }
            }
            Op::Select { .. } => self.neon().select(d, r(0), r(1), r(2)),
            Op::Unary(u, _) => self.neon().unary(u, d, r(0)),
            Op::Binary(b, _, _) => self.neon().binary(b, d, r(0), r(1)),
            Op::FCmp(c, _, _) => self.neon().fcmp(c, d, r(0), r(1)),
            Op::ICmp(c, _, _) => self.neon().icmp(c, d, r(0), r(1)),
        }
        Ok(())
    }
}

fn addr_offset(reg: AddrReg) -> u32 {
    match reg {
        AddrReg::A0X => A0,
        AddrReg::A0Y => A0 + 4,
        AddrReg::AL => AL,
    }
}

/// How [`plan`] sizes the spill area and which IR it lowers per block (the
/// code it produces is checked against the interpreter in `tests.rs` and the
/// engine suites).
#[cfg(test)]
mod plan_tests {
    use super::BlockState;
    use crate::analysis::{self, InstrClass};
    use crate::arith::Precision;
    use crate::ir::{Ir, opt};
    use crate::jit::spill::{MAX_SPILL_SLOTS, SpillSlots};
    use crate::program::ShaderKind;

    #[cfg(feature = "testgen")]
    #[test]
    fn the_spill_area_fits_the_block_and_an_overfull_block_is_lowered_unoptimised() {
        for precision in [Precision::F32, Precision::F24] {
            for (distinct, optimised, slots) in [
                // Fewer live values than registers: no spill area at all.
                (4, true, 0..=0),
                // Each of the 60 negated constants needs a slot.
                (60, true, 60..=MAX_SPILL_SLOTS),
                // More than the largest spill area: the unoptimised block,
                // whose values die within their instruction, needs none.
                (192, false, 0..=0),
            ] {
                let program = crate::testgen::live_values(distinct);
                let a = analysis::analyse(&program, 0, ShaderKind::Vertex);
                let built = Ir::from_analysis(&program, &a, ShaderKind::Vertex, precision);
                let ir = opt::optimize(&built);
                let data = |pc: u32| a.class[pc as usize] == InstrClass::Data;
                let plan =
                    crate::jit::spill::plan(&ir, &built, data, |_| true, BlockState::new).unwrap();
                let what = format!("{distinct} values {precision:?}");
                assert_eq!(plan.blocks.len(), 1, "{what}");
                let state = plan.blocks[0].as_ref().unwrap();
                let chosen = if optimised { &ir } else { &built };
                assert!(
                    std::ptr::eq(state.nodes, &chosen.blocks[0].nodes[..]),
                    "{what}: lowered from the wrong IR"
                );
                assert!(
                    slots.contains(&plan.spill_slots),
                    "{what}: {}",
                    plan.spill_slots
                );
                assert_eq!(state.free_slots.len(), plan.spill_slots, "{what}");
            }
        }
    }

    /// The unoptimised IR a too-full block falls back to fits the spill area
    /// (here every evicted value takes a slot, and there are fewer registers
    /// than on x86-64).
    #[test]
    fn every_recipe_as_built_fits_the_spill_area() {
        let program = crate::jit::spill::every_recipe();
        let a = analysis::analyse(&program, 0, ShaderKind::Vertex);
        for precision in [Precision::F32, Precision::F24] {
            let built = Ir::from_analysis(&program, &a, ShaderKind::Vertex, precision);
            for block in &built.blocks {
                let data: Vec<bool> = (block.start..=block.last)
                    .map(|pc| a.class[pc as usize] == InstrClass::Data)
                    .collect();
                let slots = BlockState::new(block, &data).spill_slots_needed();
                assert!(
                    slots <= MAX_SPILL_SLOTS / 4,
                    "{precision:?}: the block at {} needs {slots} slots",
                    block.start
                );
            }
        }
    }
}
