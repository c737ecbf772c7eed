//! Building the IR: one [`Block`] per analysis block, each instruction through
//! its recipe (`recipes.rs`).

use super::builder::BlockBuilder;
use super::{Block, Exit, Ir, Op, UnOp, recipes};
use crate::analysis::{self, Analysis};
use crate::arith::Precision;
use crate::isa::{DstReg, REGISTER_COUNT, WriteMask};
use crate::program::{Program, ShaderKind};

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
