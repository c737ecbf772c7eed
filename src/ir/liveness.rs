//! Which nodes of a block a code generator must compute, and where each value is
//! last read: the facts register allocation needs, the same for every target.

use super::{Block, Value};
use std::mem::MaybeUninit;

/// Per node of a block: whether it runs, and the last node that reads its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Liveness {
    /// Node `k` runs: it is a write (a node without a value) of a lowered span, or
    /// a node that runs reads its value.
    pub needed: Vec<bool>,
    /// Index of the last running node that reads value `k` (`u32::MAX`: none).
    pub last_use: Vec<u32>,
}

impl Liveness {
    /// Computes liveness for `block`, where `lowered[s]` says whether span `s` is
    /// lowered from the IR (the other spans are emitted some other way) and
    /// `operands(k)` lists the values node `k` reads at run time (a backend may
    /// fold some operands away).
    ///
    /// ```
    /// use pica_jit::ir::{Ir, liveness::Liveness};
    /// use pica_jit::isa::{encode, BinaryOp, DstReg, Instruction, OperandDescriptor, Source, SrcReg, Swizzle, WriteMask};
    /// use pica_jit::{Precision, Program, ShaderKind};
    /// let add = Instruction::Binary {
    ///     op: BinaryOp::Add, inverted: false, dst: DstReg::Output(0),
    ///     src1: Source::direct(SrcReg::Input(0)), src2: Source::direct(SrcReg::Temp(1)), desc: 0,
    /// };
    /// let id = (false, Swizzle::IDENTITY);
    /// let desc = OperandDescriptor::new(WriteMask::ALL, [id, id, id]);
    /// let program = Program::new(vec![encode(&add).unwrap(), encode(&Instruction::End).unwrap()], vec![desc.0]).unwrap();
    /// let ir = Ir::build(&program, 0, ShaderKind::Vertex, Precision::F32);
    /// let block = &ir.blocks[0];
    /// let all = vec![true; block.instrs.len()];
    /// let live = Liveness::of(block, &all, |k| pica_jit::ir::opt::operands(&block.nodes[k].op));
    /// assert!(live.needed.iter().all(|&n| n)); // reads, add, canonicalize, store
    /// assert_eq!(live.last_use[0], 2); // v0 is last read by the add
    /// let none = vec![false; block.instrs.len()];
    /// let live = Liveness::of(block, &none, |k| pica_jit::ir::opt::operands(&block.nodes[k].op));
    /// assert!(live.needed.iter().all(|&n| !n));
    /// ```
    pub fn of<I: IntoIterator<Item = Value>>(
        block: &Block,
        lowered: &[bool],
        operands: impl Fn(usize) -> I,
    ) -> Liveness {
        let n = block.nodes.len();
        let mut needed = vec![false; n];
        // The writes of lowered spans run (marked before the walk: a node's
        // operands come before it, so the walk below still sees every reader
        // of a value before the value).
        for (span, &on) in block.instrs.iter().zip(lowered) {
            if on {
                let span = span.first as usize..span.end as usize;
                for (need, node) in needed[span.clone()].iter_mut().zip(&block.nodes[span]) {
                    if node.ty.is_none() {
                        *need = true;
                    }
                }
            }
        }
        let mut last_use = vec![u32::MAX; n];
        for k in (0..n).rev() {
            if needed[k] {
                for v in operands(k) {
                    needed[v.0 as usize] = true;
                    let last = &mut last_use[v.0 as usize];
                    if *last == u32::MAX {
                        *last = k as u32;
                    }
                }
            }
        }
        Liveness { needed, last_use }
    }
}

/// How many spill slots allocating the values of a block in node order can
/// need, with `registers` value registers, a register freed after its value's
/// last use and the value read last evicted when none is free. `last_use` is
/// [`Liveness::last_use`]; `occupies(v)` says whether value `v` takes a
/// register at all (`None`: it has no value, or the backend folds it away) and
/// if so whether evicting it takes a slot (`Some(true)`; `Some(false)` for a
/// value the backend can compute again from the state instead).
///
/// A value takes a slot only while it is live (computed, read again later) and
/// cannot be reloaded, so the most such values live at one node is enough. And
/// nothing is evicted at all while fewer values than there are registers are
/// live: at node `k`, every register holds a value computed before `k` and
/// read at or after `k`, so reloading an operand (itself one of them) or
/// placing the result needs such values in every register.
///
/// ```
/// use pica_jit::ir::liveness::spill_slots;
/// // v0 and v1 are read by node 2, v2 by node 3: two live at once at most.
/// let last_use = [2, 2, 3, u32::MAX];
/// assert_eq!(spill_slots(&last_use, 2, |_| Some(true)), 2);
/// assert_eq!(spill_slots(&last_use, 3, |_| Some(true)), 0);
/// assert_eq!(spill_slots(&last_use, 2, |v| Some(v != 0)), 1);
/// ```
pub fn spill_slots(
    last_use: &[u32],
    registers: usize,
    occupies: impl Fn(usize) -> Option<bool>,
) -> usize {
    let n = last_use.len();
    let mut live = LiveCounts::new(n);
    for (v, &last) in last_use.iter().enumerate() {
        let Some(spillable) = occupies(v) else {
            continue;
        };
        if last == u32::MAX || last as usize >= n {
            continue;
        }
        live.add(v, last as usize, spillable);
    }
    live.spill_slots(registers)
}

/// The counting behind [`spill_slots`], for a backend that learns each value's
/// live range during a walk of its own: [`LiveCounts::add`] per value, then
/// [`LiveCounts::spill_slots`].
///
/// ```
/// use pica_jit::ir::liveness::LiveCounts;
/// // The values of nodes 0 and 1 are read by node 2, that of node 2 by node 3.
/// let mut live = LiveCounts::new(4);
/// live.add(0, 2, true);
/// live.add(1, 2, false);
/// live.add(2, 3, true);
/// assert_eq!(live.spill_slots(2), 1); // node 1's value is computed again
/// assert_eq!(live.spill_slots(3), 0);
/// ```
pub struct LiveCounts {
    /// Per node: the change in the number of values live there (all; those
    /// that cannot be reloaded), a value being live at its readers. On the
    /// stack for the usual block (most have a few dozen nodes); only the
    /// first `nodes + 1` entries are initialised (clearing all 128 for every
    /// block cost more than the counting in a small one).
    on_stack: [MaybeUninit<(i32, i32)>; STACK_NODES],
    on_heap: Vec<(i32, i32)>,
    nodes: usize,
}

/// Blocks of fewer nodes count on the stack.
const STACK_NODES: usize = 128;

impl LiveCounts {
    /// Counts for a block of `nodes` nodes, none live yet.
    pub fn new(nodes: usize) -> LiveCounts {
        let mut on_heap = Vec::new();
        let mut on_stack = [const { MaybeUninit::uninit() }; STACK_NODES];
        if nodes >= STACK_NODES {
            on_heap.resize(nodes + 1, (0, 0));
        } else {
            for delta in &mut on_stack[..=nodes] {
                delta.write((0, 0));
            }
        }
        LiveCounts {
            on_stack,
            on_heap,
            nodes,
        }
    }

    fn delta(&mut self) -> &mut [(i32, i32)] {
        if self.nodes >= STACK_NODES {
            &mut self.on_heap[..]
        } else {
            let used = &mut self.on_stack[..=self.nodes];
            // SAFETY: `new` initialised the first `nodes + 1` entries when
            // `nodes < STACK_NODES` (and nothing de-initialises them), and
            // `MaybeUninit<T>` has the layout of `T`.
            unsafe { &mut *(std::ptr::from_mut(used) as *mut [(i32, i32)]) }
        }
    }

    /// The value of node `defined` is live until node `last_use` (`< nodes`)
    /// reads it; `spillable`: evicting it takes a slot (it cannot be computed
    /// again instead).
    pub fn add(&mut self, defined: usize, last_use: usize, spillable: bool) {
        let spillable = i32::from(spillable);
        let delta = self.delta();
        delta[defined + 1].0 += 1;
        delta[defined + 1].1 += spillable;
        delta[last_use + 1].0 -= 1;
        delta[last_use + 1].1 -= spillable;
    }

    /// The spill slots the added values can need with `registers` value
    /// registers (the reasoning is [`spill_slots`]'s).
    pub fn spill_slots(&mut self, registers: usize) -> usize {
        slots_for_deltas(self.delta(), registers)
    }
}

/// The spill slots a block whose live counts change by `delta` per node
/// (all values, values that cannot be emitted again) can need with
/// `registers` value registers: the most values that cannot be emitted
/// again live at once (the reasoning is [`spill_slots`]'s).
pub(crate) fn slots_for_deltas(delta: &[(i32, i32)], registers: usize) -> usize {
    let (mut live, mut spillable) = (0i32, 0i32);
    let (mut most_live, mut most_spillable) = (0i32, 0i32);
    for &(all, unloadable) in delta {
        live += all;
        spillable += unloadable;
        most_live = most_live.max(live);
        most_spillable = most_spillable.max(spillable);
    }
    // Nothing is evicted while fewer values than registers are live.
    if (most_live as usize) < registers {
        0
    } else {
        most_spillable as usize
    }
}

#[cfg(test)]
mod tests {
    use super::spill_slots;

    /// `live` values read last by the final node, then `n` nodes in all:
    /// counted the same whether the per-node counts fit the stack buffer or
    /// not.
    fn many_live(live: usize, n: usize) -> Vec<u32> {
        (0..n)
            .map(|v| if v < live { n as u32 - 1 } else { u32::MAX })
            .collect()
    }

    #[test]
    fn spill_slots_count_the_same_for_short_and_long_blocks() {
        for n in [20, 127, 128, 129, 300, 1000] {
            let last_use = many_live(n / 2, n);
            assert_eq!(spill_slots(&last_use, 4, |_| Some(true)), n / 2, "n = {n}");
            // Only every other value must be spilled; the others are loaded again.
            let half = (n / 2).div_ceil(2);
            assert_eq!(
                spill_slots(&last_use, 4, |v| Some(v % 2 == 0)),
                half,
                "n = {n}"
            );
            // Fewer live values than registers: nothing is spilled.
            assert_eq!(
                spill_slots(&last_use, n / 2 + 1, |_| Some(true)),
                0,
                "n = {n}"
            );
            // Values without a register take no slot.
            assert_eq!(spill_slots(&last_use, 1, |_| None), 0, "n = {n}");
        }
    }
}
