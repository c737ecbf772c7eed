//! Which nodes of a block a code generator must compute, and where each value is
//! last read: the facts register allocation needs, the same for every target.

use super::{Block, Value};

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
        let mut in_lowered_span = vec![false; n];
        for (span, &on) in block.instrs.iter().zip(lowered) {
            in_lowered_span[span.first as usize..span.end as usize].fill(on);
        }
        let mut needed = vec![false; n];
        let mut last_use = vec![u32::MAX; n];
        for k in (0..n).rev() {
            if block.nodes[k].ty.is_none() && in_lowered_span[k] {
                needed[k] = true;
            }
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
