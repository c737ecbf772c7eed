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
use super::emit::{DotTerms, Neon};
use crate::ir::{Block, Ir, Op, UnOp, Value};
use crate::jit::JitError;
use crate::jit::regalloc::ValueState;
pub(crate) use crate::jit::single::dot_sums::{DotSum, dot_sums};
use crate::jit::single::state::{self, Base};
use crate::jit::single::values::LiveBuffer;
use crate::jit::single::{self, Values};
use dynasmrt::{DynasmApi, dynasm};

/// `x1` = `*mut UnitState`, `x2` = `*const Uniforms`, `x5` = the
/// constant pool (see `mod.rs`).
const STATE: u8 = 1;
const UNIFORMS: u8 = 2;
const POOL: u8 = 5;

/// Registers that hold values.
pub(super) const VALUE_REGS: [u8; 7] = [1, 2, 3, 28, 29, 30, 31];

/// Per-block lowering state: the values, and per node the float24
/// dot-product sum it ends, if it is lowered as one ([`dot_sums`]).
pub(super) type BlockState<'p> = single::BlockState<'p, Vec<Option<DotSum>>>;

/// Computes which nodes run and their last uses (appended to `table`, the
/// program's); `data[k]` says whether span
/// `k` is lowered (the others are emitted by the flow code). Every evicted
/// value takes a spill slot. A dot-product sum lowered whole reads its
/// terms' operands only, so the nodes inside it never run.
pub(super) fn block_state<'p>(
    block: &'p Block,
    data: &[bool],
    table: &mut Vec<ValueState>,
) -> BlockState<'p> {
    let sums = dot_sums(block);
    // AArch64 spills every evicted value.
    let settle = |k: usize, _runs: bool| (false, node_operands(block, &sums, k));
    let values = Values::plan(
        block,
        data,
        settle,
        &VALUE_REGS,
        &mut LiveBuffer::default(),
        table,
    );
    single::BlockState {
        nodes: &block.nodes,
        instrs: &block.instrs,
        values,
        own: sums,
    }
}

/// The values node `k` reads at run time: a dot-product sum lowered whole
/// reads its terms' operands, any other node its IR operands.
fn node_operands(block: &Block, sums: &[Option<DotSum>], k: usize) -> impl Iterator<Item = Value> {
    let mut operands = [Value(0); 3];
    let mut count = 0;
    let of_sum = sums[k].map(DotSum::operands);
    let of_node = sums[k]
        .is_none()
        .then(|| crate::ir::opt::operands(&block.nodes[k].op));
    for o in of_sum
        .into_iter()
        .flatten()
        .chain(of_node.into_iter().flatten())
    {
        operands[count] = o;
        count += 1;
    }
    operands.into_iter().take(count)
}

/// `ir` with every `f24_flush(f24_load(x))` replaced by `f24_quantize(x)`
/// (the same function: `f24::flush_input ∘ f24::load = f24::quantize_result`,
/// as a float24 subnormal loads to itself and the flush then makes it +0;
/// `tests::a_flushed_load_is_the_quantisation`), so that an operand read and
/// flushed costs one conversion; a load nothing else uses then goes away.
/// `None` when no block has such a pair.
pub(super) fn fuse_flushed_loads(ir: &Ir) -> Option<Ir> {
    #[cfg(test)]
    if super::emit::fault::active(super::emit::fault::Fault::F24Flush) {
        // The flush broken on purpose must be the one that runs.
        return None;
    }
    let fusable = |block: &Block, node: &crate::ir::Node| match node.op {
        Op::Unary(UnOp::F24Flush, v) => {
            matches!(block.nodes[v.0 as usize].op, Op::Unary(UnOp::F24Load, _))
        }
        _ => false,
    };
    if !ir
        .blocks
        .iter()
        .any(|b| b.nodes.iter().any(|n| fusable(b, n)))
    {
        return None;
    }
    let mut fused = ir.clone();
    for block in &mut fused.blocks {
        for k in 0..block.nodes.len() {
            if let Op::Unary(UnOp::F24Flush, v) = block.nodes[k].op
                && let Op::Unary(UnOp::F24Load, x) = block.nodes[v.0 as usize].op
            {
                block.nodes[k].op = Op::Unary(UnOp::F24Quantize, x);
            }
        }
    }
    Some(fused)
}

impl<'p> Emitter<'p> {
    /// Lowers node `v` of the current block (one that runs).
    pub(super) fn lower_ir_node(&mut self, v: Value) -> Result<(), JitError> {
        let block = self.cx.lowering.block();
        let node = block.nodes[v.0 as usize];
        if let Some(sum) = block.own[v.0 as usize] {
            let (operands, count) = match sum {
                DotSum::Products { a, b, .. } => ([a, b], 2),
                DotSum::Terms(t) => ([t, t], 1),
            };
            return single::lower_value(self, v, &operands[..count], true, |e, d, regs| {
                let terms = match sum {
                    DotSum::Products { clear_w, .. } => DotTerms::Products {
                        a: regs[0],
                        b: regs[1],
                        clear_w,
                    },
                    DotSum::Terms(_) => DotTerms::Terms(regs[0]),
                };
                e.neon().f24_dot_sum(d, terms);
                Ok(())
            });
        }
        let mut operands = [Value(0); 3];
        let mut count = 0;
        for o in crate::ir::opt::operands(&node.op) {
            operands[count] = o;
            count += 1;
        }
        let has_result = node.ty.is_some();
        single::lower_value(self, v, &operands[..count], has_result, |e, d, regs| {
            e.emit_node(node.op, d, regs)
        })
    }

    /// The shared primitive emitter, on this function's code.
    pub(super) fn neon(&mut self) -> Neon<'_> {
        Neon::new(&mut self.ops)
    }

    fn emit_node(&mut self, op: Op, d: u8, regs: &[u8]) -> Result<(), JitError> {
        let r = |k: usize| regs[k];
        match op {
            Op::Const { ty, bits } => {
                self.neon()
                    .constant_lanes(d, state::constant_lanes(ty, bits));
            }
            Op::ReadInput(_) | Op::ReadTemp(_) | Op::ReadConst(_) => {
                if let Some((base, off)) = state::vector_read(op) {
                    let base = match base {
                        Base::State => STATE,
                        Base::Uniforms => UNIFORMS,
                    };
                    dynasm!(self.ops ; .arch aarch64 ; ldr Q(d), [X(base), off]);
                }
            }
            Op::ReadConstAt(_) => {
                self.neon().uniform_address(r(0), 0, UNIFORMS, POOL);
                dynasm!(self.ops ; .arch aarch64 ; ldr Q(d), [x10]);
            }
            Op::ReadAddr(reg) => self.neon().word_to_lanes(d, STATE, state::addr(reg)),
            Op::ReadFlag(f) => self.neon().byte_to_lanes(d, STATE, state::flag(f), true),
            Op::ReadBoolUniform(n) => {
                self.neon()
                    .byte_to_lanes(d, UNIFORMS, state::bool_uniform(n), true)
            }
            Op::ReadIntUniform { id, field } => {
                let off = state::int_uniform(id, field);
                self.neon().byte_to_lanes(d, UNIFORMS, off, false);
            }
            Op::Store { dst, mask, .. } => self.store(r(0), dst, mask),
            Op::WriteAddr(reg, _) => {
                let off = state::addr(reg);
                dynasm!(self.ops ; .arch aarch64 ; umov w9, V(r(0)).s[0] ; str w9, [x1, off]);
            }
            Op::WriteFlag(f, _) => {
                let off = state::flag(f);
                dynasm!(self.ops
                    ; .arch aarch64
                    ; umov w9, V(r(0)).s[0]
                    ; and w9, w9, #1
                    ; strb w9, [x1, off]
                );
            }
            Op::Swizzle(_, lanes) => self.shuffle(d, r(0), lanes.map(|l| l & 3)),
            Op::Extract(_, lane) => {
                let lane = (lane & 3) as u32;
                dynasm!(self.ops ; .arch aarch64 ; dup V(d).s4, V(r(0)).s[lane]);
            }
            Op::Splat(_) => self.neon().copy(d, r(0)),
            Op::Blend { take_b, .. } => {
                // A copy of whichever operand gives more lanes, then the
                // other operand's lanes.
                let from_b = take_b.writes(0) as u8
                    + take_b.writes(1) as u8
                    + take_b.writes(2) as u8
                    + take_b.writes(3) as u8;
                let (base, other, other_is_b) = if from_b > 2 {
                    (r(1), r(0), false)
                } else {
                    (r(0), r(1), true)
                };
                self.neon().copy(d, base);
                for lane in 0..4u32 {
                    if take_b.writes(lane as usize) == other_is_b {
                        dynasm!(self.ops ; .arch aarch64 ; mov V(d).s[lane], V(other).s[lane]);
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

impl Emitter<'_> {
    /// `v{d}` = the lanes `lanes` of `v{a}` (`d` differs from `a`): one
    /// permute instruction where one gives the whole shuffle, else the one
    /// (or a broadcast or a copy) that leaves the fewest lanes to move
    /// singly, or four single-lane moves.
    fn shuffle(&mut self, d: u8, a: u8, lanes: [u8; 4]) {
        let moves = |p: Permute| (0..4).filter(|&l| p.lanes()[l] != lanes[l]).count();
        let best = Permute::ALL.into_iter().min_by_key(|&p| moves(p));
        let (from, singles) = match best {
            Some(p) if moves(p) < 3 => {
                self.permute(p, d, a);
                (p.lanes(), moves(p))
            }
            // The four lanes one by one.
            _ => ([4; 4], 4),
        };
        for to in (0..4).filter(|&l| from[l] != lanes[l]) {
            let (to, lane) = (to as u32, lanes[to] as u32);
            dynasm!(self.ops ; .arch aarch64 ; mov V(d).s[to], V(a).s[lane]);
        }
        debug_assert!(singles <= 4);
    }

    fn permute(&mut self, p: Permute, d: u8, a: u8) {
        match p {
            Permute::Copy => self.neon().copy(d, a),
            Permute::Dup(lane) => {
                dynasm!(self.ops ; .arch aarch64 ; dup V(d).s4, V(a).s[lane as u32]);
            }
            Permute::SwapPairs => dynasm!(self.ops ; .arch aarch64 ; rev64 V(d).s4, V(a).s4),
            Permute::Rotate(by) => {
                let bytes = 4 * by as u32;
                dynasm!(self.ops ; .arch aarch64 ; ext V(d).b16, V(a).b16, V(a).b16, bytes);
            }
            Permute::Zip1 => dynasm!(self.ops ; .arch aarch64 ; zip1 V(d).s4, V(a).s4, V(a).s4),
            Permute::Zip2 => dynasm!(self.ops ; .arch aarch64 ; zip2 V(d).s4, V(a).s4, V(a).s4),
            Permute::Uzp1 => dynasm!(self.ops ; .arch aarch64 ; uzp1 V(d).s4, V(a).s4, V(a).s4),
            Permute::Uzp2 => dynasm!(self.ops ; .arch aarch64 ; uzp2 V(d).s4, V(a).s4, V(a).s4),
            Permute::Trn1 => dynasm!(self.ops ; .arch aarch64 ; trn1 V(d).s4, V(a).s4, V(a).s4),
            Permute::Trn2 => dynasm!(self.ops ; .arch aarch64 ; trn2 V(d).s4, V(a).s4, V(a).s4),
            Permute::DupHalf(half) => {
                dynasm!(self.ops ; .arch aarch64 ; dup V(d).d2, V(a).d[half as u32]);
            }
        }
    }
}

/// One-instruction shuffles of a register's four lanes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Permute {
    Copy,
    Dup(u8),
    SwapPairs,
    /// Lane `l` of the result = lane `l + by` (mod 4).
    Rotate(u8),
    Zip1,
    Zip2,
    Uzp1,
    Uzp2,
    Trn1,
    Trn2,
    /// Both halves = half `0` or `1`.
    DupHalf(u8),
}

impl Permute {
    const ALL: [Permute; 17] = [
        Permute::Copy,
        Permute::Dup(0),
        Permute::Dup(1),
        Permute::Dup(2),
        Permute::Dup(3),
        Permute::SwapPairs,
        Permute::Rotate(1),
        Permute::Rotate(2),
        Permute::Rotate(3),
        Permute::Zip1,
        Permute::Zip2,
        Permute::Uzp1,
        Permute::Uzp2,
        Permute::Trn1,
        Permute::Trn2,
        Permute::DupHalf(0),
        Permute::DupHalf(1),
    ];

    /// Which lane of the source each result lane takes.
    const fn lanes(self) -> [u8; 4] {
        match self {
            Permute::Copy => [0, 1, 2, 3],
            Permute::Dup(l) => [l; 4],
            Permute::SwapPairs => [1, 0, 3, 2],
            Permute::Rotate(by) => [by, (by + 1) & 3, (by + 2) & 3, (by + 3) & 3],
            Permute::Zip1 => [0, 0, 1, 1],
            Permute::Zip2 => [2, 2, 3, 3],
            Permute::Uzp1 => [0, 2, 0, 2],
            Permute::Uzp2 => [1, 3, 1, 3],
            Permute::Trn1 => [0, 0, 2, 2],
            Permute::Trn2 => [1, 1, 3, 3],
            Permute::DupHalf(h) => [2 * h, 2 * h + 1, 2 * h, 2 * h + 1],
        }
    }
}

/// How the plan sizes the spill area and which IR it lowers per block (the
/// checks are the single-vertex backends' shared ones; here every evicted
/// value takes a slot, and there are fewer registers than on x86-64).
#[cfg(test)]
mod plan_tests {
    use super::block_state;
    use crate::analysis::InstrClass;
    use crate::jit::single::plan_tests;
    use crate::jit::spill::SpillSlots;

    #[cfg(feature = "testgen")]
    #[test]
    fn the_spill_area_fits_the_block_and_an_overfull_block_is_lowered_unoptimised() {
        plan_tests::spill_area_fits_the_block(4, &|ir, built, a, _| {
            let data = |pc: u32| a.class[pc as usize] == InstrClass::Data;
            crate::jit::spill::plan(ir, built, data, |_| true, block_state)
        });
    }

    #[test]
    fn every_recipe_as_built_fits_the_spill_area() {
        plan_tests::every_recipe_as_built_fits(|block, data, _| {
            vec![block_state(block, data, &mut Vec::new()).spill_slots_needed()]
        });
    }
}
