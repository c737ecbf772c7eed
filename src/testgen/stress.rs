//! Hand-shaped programs that stress one part of a code generator.

use crate::isa::{
    BinaryOp, DstReg, Instruction, OperandDescriptor, Source, SrcReg, Swizzle, WriteMask, encode,
};
use crate::program::Program;

/// A single basic block that keeps `distinct` values live at once: `r0 +=
/// -c<k>` for `distinct` different negated constants (`c0`–`c95` with two
/// swizzles, so up to 192), then the same instructions in reverse order, which
/// reuse each value (the IR passes share the repeated source reads), so every
/// value of the first half stays live until its second use and reaches `r0`.
///
/// ```
/// let program = pica_jit::testgen::live_values(100);
/// assert_eq!(program.len(), 201); // 2 × 100 adds and `end`
/// ```
///
/// # Panics
/// If `distinct > 192`.
pub fn live_values(distinct: usize) -> Program {
    assert!(distinct <= 192, "at most 192 distinct negated constants");
    let id = (false, Swizzle::IDENTITY);
    let descriptors = [Swizzle::IDENTITY, Swizzle::from_lanes([3, 2, 0, 1])]
        .map(|s| OperandDescriptor::new(WriteMask::ALL, [(true, s), id, id]).0);
    let add = |j: usize| Instruction::Binary {
        op: BinaryOp::Add,
        inverted: false,
        dst: DstReg::Temp(0),
        src1: Source::direct(SrcReg::Const((j % 96) as u8)),
        src2: Source::direct(SrcReg::Temp(0)),
        desc: (j / 96) as u8,
    };
    let mut code: Vec<Instruction> = (0..distinct).map(add).collect();
    code.extend((0..distinct).rev().map(add));
    code.push(Instruction::End);
    let words = code.iter().map(|i| encode(i).expect("encodable")).collect();
    Program::new(words, descriptors.to_vec()).expect("a valid program")
}
