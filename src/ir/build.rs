//! Building the IR: one [`Block`] per analysis block, each instruction through
//! its recipe (`recipes.rs`).

use super::builder::BlockBuilder;
use super::{Block, Exit, Ir, Op, UnOp, recipes};
use crate::analysis::{self, Analysis};
use crate::arith::Precision;
use crate::isa::{DstReg, REGISTER_COUNT, WriteMask};
use crate::program::{Program, ShaderKind};
use std::cell::RefCell;

impl Ir {
    /// Builds the IR of `program` for invocations starting at `entry` on a `kind`
    /// unit in `precision`, from [`analysis::analyse`] and the decoded
    /// instructions. Total: every instruction word has a recipe.
    pub fn build(program: &Program, entry: u32, kind: ShaderKind, precision: Precision) -> Ir {
        let analysis = analysis::analyse(program, entry, kind);
        Ir::from_analysis(program, &analysis, kind, precision)
    }

    /// Builds the IR from an analysis of `program` already made for `kind`.
    pub fn from_analysis(
        program: &Program,
        analysis: &Analysis,
        kind: ShaderKind,
        precision: Precision,
    ) -> Ir {
        let code = program.instructions();
        let mut block_of = vec![0u32; code.len()];
        // The blocks of the last IR built on this thread and recycled: block
        // `k` is built into the buffers of its block `k`.
        let mut old = take_built().into_iter();
        let blocks: Vec<Block> = analysis
            .blocks
            .iter()
            .enumerate()
            .map(|(index, span)| {
                for slot in &mut block_of[span.start as usize..=span.last as usize] {
                    *slot = index as u32;
                }
                let mut b = BlockBuilder::for_instructions(
                    precision,
                    (span.last - span.start) as usize + 1,
                    old.next(),
                );
                let mut exit = Exit::Next;
                for pc in span.start..=span.last {
                    // Only a block's last instruction can affect control flow.
                    debug_assert_eq!(exit, Exit::Next, "flow effect inside the block at {pc:#x}");
                    b.begin(pc);
                    exit = recipes::instruction(&mut b, program, kind, pc, code[pc as usize]);
                }
                b.finish(
                    span.start,
                    span.last,
                    exit,
                    analysis.check_after[span.last as usize],
                )
            })
            .collect();
        let ir = Ir {
            entry: analysis.entry,
            kind,
            precision,
            prologue: prologue(program, analysis.entry, precision),
            blocks,
            values_cross_spans: false,
            block_of,
        };
        debug_assert_eq!(ir.verify(), Ok(()));
        ir
    }

    /// Drops an IR as built, keeping its blocks (their buffers) for the next
    /// IR this thread builds, which builds its block `k` into block `k`'s
    /// buffers: one visit of the thread's buffers per IR instead of a fetch
    /// and a return per block (`spare`'s buffers, which the optimised IR
    /// keeps using, serve the built IR's prologue and its blocks beyond
    /// those kept). The same as dropping it but for the allocations saved;
    /// an IR whose blocks have room for more than [`MAX_BUILT_ROOM`] nodes
    /// is dropped.
    pub(crate) fn recycle_built(self) {
        let Ir {
            prologue, blocks, ..
        } = self;
        super::spare::keep_block(prologue);
        let room: usize = blocks.iter().map(|b| b.nodes.capacity()).sum();
        if room <= MAX_BUILT_ROOM {
            // Where the thread is exiting, the blocks are simply dropped.
            let _ = BUILT.try_with(|built| *built.borrow_mut() = blocks);
        }
    }
}

/// The node room of the blocks a thread keeps for its next built IR, at
/// most (as `spare`'s bound: a thread that once built a huge program does
/// not keep its memory).
const MAX_BUILT_ROOM: usize = 1 << 16;

thread_local! {
    /// The blocks of the last IR this thread built and recycled
    /// ([`Ir::recycle_built`]).
    static BUILT: RefCell<Vec<Block>> = const { RefCell::new(Vec::new()) };
}

/// The blocks [`Ir::recycle_built`] kept (none after the first take).
fn take_built() -> Vec<Block> {
    BUILT
        .try_with(|built| std::mem::take(&mut *built.borrow_mut()))
        .unwrap_or_default()
}

/// The F24 entry conversion: the temporaries the program may read before
/// writing them, through `f24::load` (the others, and the outputs, keep their
/// bits).
fn prologue(program: &Program, entry: u32, precision: Precision) -> Block {
    let mut b = BlockBuilder::new(precision);
    b.begin(entry);
    if precision == Precision::F24 {
        let read = program.temps_converted_on_entry(entry);
        for n in (0..REGISTER_COUNT as u8).filter(|n| read >> n & 1 != 0) {
            let raw = b.push(Op::ReadTemp(n));
            let value = b.unary(UnOp::F24Load, raw);
            b.store(DstReg::Temp(n), WriteMask::ALL, value);
        }
    }
    b.finish(entry, entry, Exit::Next, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn default_program() -> (Program, u32) {
        let shbin = crate::shbin::Shbin::parse(crate::DEFAULT_SHADER).unwrap();
        let program =
            Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone()).unwrap();
        (program, shbin.dvles[0].main)
    }

    /// Each block's node and span buffers.
    fn buffers(ir: &Ir) -> Vec<(*const super::super::Node, *const super::super::InstrSpan)> {
        ir.blocks
            .iter()
            .map(|b| (b.nodes.as_ptr(), b.instrs.as_ptr()))
            .collect()
    }

    #[test]
    fn a_recycled_built_ir_gives_block_k_its_buffers_and_builds_the_same() {
        // On a thread of its own: nothing kept from another test.
        std::thread::spawn(|| {
            let (program, entry) = default_program();
            let build = || Ir::build(&program, entry, ShaderKind::Vertex, Precision::F24);
            let first = build();
            assert!(first.blocks.len() > 2, "several blocks");
            let (copy, seen) = (first.clone(), buffers(&first));
            first.recycle_built();
            let again = build();
            // Emptied before reuse: the same IR as from fresh buffers.
            assert_eq!(again, copy);
            assert_eq!(buffers(&again), seen);
            // Taken: a build without a recycle in between keeps nothing.
            assert!(take_built().is_empty());
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_built_ir_with_more_room_than_the_bound_is_not_kept() {
        std::thread::spawn(|| {
            let (program, entry) = default_program();
            let build = || Ir::build(&program, entry, ShaderKind::Vertex, Precision::F32);
            let mut big = build();
            big.blocks[0].nodes.reserve(MAX_BUILT_ROOM + 1);
            big.recycle_built();
            assert!(take_built().is_empty());
            let small = build();
            let blocks = small.blocks.len();
            small.recycle_built();
            assert_eq!(take_built().len(), blocks);
        })
        .join()
        .unwrap();
    }
}
