//! F24 input rows stored flushed (issue 19 §4): a `CONVERTED` row that every
//! block reads only through [`UnOp::F24Flush`] (an arithmetic operand, never
//! a `mov` or a comparison of its raw bits) may hold
//! `f24::flush_input(f24::load(x))` instead of `f24::load(x)`; its blocks'
//! flushes are then the identity and become plain reads of the row.
//!
//! The conversion's fast form already stores that value wherever its range
//! check passes (it passes only where no lane is a float24 subnormal, and it
//! maps -0 to +0, so every stored value is +0 or at least 2^-62 in
//! magnitude: `flush_input` leaves it alone); the exact conversion, run for
//! the rare group it fails, flushes the rows of the set after loading them
//! ([`super::Target::flush_converted_in_place`]). The blocks' reads of such
//! a row then need no flush in either case, and the deferred regions of the
//! blocks are untouched.

// (The AArch64 backend keeps its flushes, for now.)
#![cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]

use crate::ir::{BinOp, UnOp};
use crate::jit::wide::lanes::{LaneBlock, LaneOp};
use crate::jit::wide::layout;
use crate::jit::wide::plan::{KernelPlan, ops_block};

/// The `CONVERTED` row `row` as a bit of a [`flushed_only_rows`] mask.
fn converted_bit(row: u16) -> Option<u64> {
    let at = (row as usize).checked_sub(layout::CONVERTED)?;
    (at < 64).then(|| 1u64 << at)
}

/// Bit `r`: row `CONVERTED + r` is read by some block of `blocks` and only
/// ever as the operand of an [`UnOp::F24Flush`] (no other operation, store,
/// exit value or kernel step of `plan` reads it).
pub(crate) fn flushed_only_rows(blocks: &[LaneBlock], plan: Option<&KernelPlan>) -> u64 {
    let (mut flushed, mut raw) = (0u64, 0u64);
    let steps = plan.into_iter().flat_map(|p| p.steps.iter());
    let step_blocks: Vec<LaneBlock> = steps.filter_map(|&s| ops_block(s)).collect();
    for block in blocks.iter().chain(&step_blocks) {
        let bit = |v: u32| match block.ops[v as usize] {
            LaneOp::Row(row) => converted_bit(row).unwrap_or(0),
            _ => 0,
        };
        for op in &block.ops {
            match *op {
                LaneOp::Unary(UnOp::F24Flush, v) => flushed |= bit(v),
                _ => raw |= op.operands().fold(0, |m, v| m | bit(v)),
            }
        }
        raw |= block.exit_values().fold(0, |m, v| m | bit(v));
    }
    flushed & !raw
}

/// Bit `r`: row `CONVERTED + r` is an operand of some float24 product
/// ([`BinOp::PicaMulF24`]) of `blocks` or of a kernel step of `plan`, read
/// directly or through an [`UnOp::F24Flush`]. Only such a row can be a
/// bounded product operand (§9.20), the one use of a fused conversion's
/// lower-bound record besides the float24 subnormal test, which a
/// [`flushed_only_rows`] row does not need (`flush_input ∘ load` is
/// `quantize_result`: a float24 subnormal becomes +0 either way).
pub(crate) fn product_rows(blocks: &[LaneBlock], plan: Option<&KernelPlan>) -> u64 {
    let mut rows = 0u64;
    let steps = plan.into_iter().flat_map(|p| p.steps.iter());
    let step_blocks: Vec<LaneBlock> = steps.filter_map(|&s| ops_block(s)).collect();
    for block in blocks.iter().chain(&step_blocks) {
        let bit = |v: u32| match block.ops[v as usize] {
            LaneOp::Row(row) => converted_bit(row).unwrap_or(0),
            LaneOp::Unary(UnOp::F24Flush, a) => match block.ops[a as usize] {
                LaneOp::Row(row) => converted_bit(row).unwrap_or(0),
                _ => 0,
            },
            _ => 0,
        };
        for op in &block.ops {
            if let LaneOp::Binary(BinOp::PicaMulF24, a, b) = *op {
                rows |= bit(a) | bit(b);
            }
        }
    }
    rows
}

/// Bit `r`: row `CONVERTED + r` is read (a [`LaneOp::Row`], whatever
/// reads it) by some block of `blocks` or kernel step of `plan`. A fused
/// input conversion need not convert or store the other rows (§9.34: the
/// `w` of `mov r0.xyz, v0` in a loop that does not store `r0`).
pub(crate) fn converted_rows_read(blocks: &[LaneBlock], plan: Option<&KernelPlan>) -> u64 {
    let steps = plan.into_iter().flat_map(|p| p.steps.iter());
    let step_blocks: Vec<LaneBlock> = steps.filter_map(|&s| ops_block(s)).collect();
    blocks
        .iter()
        .chain(&step_blocks)
        .flat_map(|b| &b.ops)
        .fold(0, |m, op| match *op {
            LaneOp::Row(row) => m | converted_bit(row).unwrap_or(0),
            _ => m,
        })
}

/// `blocks` with every flush of a row of `rows` (a [`flushed_only_rows`]
/// mask) replaced by a read of that row (the row it flushed, left unread,
/// is not computed).
pub(crate) fn skip_flushes(blocks: &[LaneBlock], rows: u64) -> Vec<LaneBlock> {
    let mut out = blocks.to_vec();
    for block in &mut out {
        for k in 0..block.ops.len() {
            if let LaneOp::Unary(UnOp::F24Flush, v) = block.ops[k]
                && let LaneOp::Row(row) = block.ops[v as usize]
                && converted_bit(row).is_some_and(|b| rows & b != 0)
            {
                block.ops[k] = LaneOp::Row(row);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(ops: Vec<LaneOp>, exit_cond: Option<u32>) -> LaneBlock {
        LaneBlock::of_ops(ops, exit_cond)
    }

    const C0: u16 = layout::CONVERTED as u16;

    /// A row flushed in one block and stored raw in another, or compared
    /// raw, keeps its flushes; one only ever flushed loses them. (Not
    /// counting stores, or comparisons, as raw reads fails it.)
    #[test]
    fn only_rows_every_block_flushes_qualify() {
        let arith = block(
            vec![
                LaneOp::Row(C0),
                LaneOp::Unary(UnOp::F24Flush, 0),
                LaneOp::Row(C0 + 1),
                LaneOp::Unary(UnOp::F24Flush, 2),
                LaneOp::Row(C0 + 5),
                LaneOp::Unary(UnOp::F24Flush, 4),
                LaneOp::Binary(BinOp::PicaMulF24, 1, 3),
                LaneOp::Binary(BinOp::PicaMulF24, 6, 5),
                LaneOp::Store(layout::OUTPUT as u16, 7),
            ],
            None,
        );
        let mov = block(
            vec![
                LaneOp::Row(C0 + 1),
                LaneOp::Store(layout::OUTPUT as u16 + 1, 0),
            ],
            None,
        );
        let cmp = block(
            vec![
                LaneOp::Row(C0 + 5),
                LaneOp::Const(0),
                LaneOp::FCmp(crate::isa::CmpOp::Lt, 0, 1),
            ],
            Some(2),
        );
        let blocks = [arith, mov, cmp];
        let rows = flushed_only_rows(&blocks, None);
        assert_eq!(rows, 0b1);
        let out = skip_flushes(&blocks, rows);
        assert_eq!(out[0].ops[1], LaneOp::Row(C0));
        assert_eq!(out[0].ops[3], LaneOp::Unary(UnOp::F24Flush, 2));
        assert_eq!(out[0].ops[5], LaneOp::Unary(UnOp::F24Flush, 4));
        assert_eq!(out[1..], blocks[1..]);
    }

    /// A row that is an exit value itself is read raw.
    #[test]
    fn exit_values_are_raw_reads() {
        let b = block(
            vec![LaneOp::Row(C0 + 2), LaneOp::Unary(UnOp::F24Flush, 0)],
            Some(0),
        );
        assert_eq!(flushed_only_rows(&[b], None), 0);
    }
}
