//! Word → [`Instruction`]. Total: every 32-bit word decodes to something.

use super::instruction::{BinaryOp, CmpOp, CondOp, Condition, Guard, Instruction, UnaryOp};
use super::register::{AddrIndex, DstReg, Source, SrcReg};

fn bits(word: u32, offset: u32, width: u32) -> u32 {
    (word >> offset) & ((1 << width) - 1)
}

fn source(field: u32, index: AddrIndex) -> Source {
    Source {
        reg: SrcReg::from_field(field),
        index,
    }
}

fn condition(word: u32) -> Condition {
    Condition {
        op: CondOp::ALL[bits(word, 22, 2) as usize],
        ref_y: bits(word, 24, 1) != 0,
        ref_x: bits(word, 25, 1) != 0,
    }
}

fn flow_target(word: u32) -> u16 {
    bits(word, 10, 12) as u16
}

fn flow_num(word: u32) -> u8 {
    bits(word, 0, 8) as u8
}

fn bool_id(word: u32) -> u8 {
    bits(word, 22, 4) as u8
}

/// Decodes one instruction word.
///
/// ```
/// use pica_jit::isa::{decode, BinaryOp, DstReg, Instruction, SrcReg};
/// // dp4 o1, c2, r3 with descriptor 5
/// let word = (0x02 << 26) | (0x01 << 21) | (0x22 << 12) | (0x13 << 7) | 5;
/// match decode(word) {
///     Instruction::Binary { op, dst, src1, src2, desc, .. } => {
///         assert_eq!(op, BinaryOp::Dp4);
///         assert_eq!(dst, DstReg::Output(1));
///         assert_eq!((src1.reg, src2.reg), (SrcReg::Const(2), SrcReg::Temp(3)));
///         assert_eq!(desc, 5);
///     }
///     other => panic!("unexpected {other:?}"),
/// }
/// assert_eq!(decode(0x22 << 26), Instruction::End);
/// ```
pub fn decode(word: u32) -> Instruction {
    let opcode = (word >> 26) as u8;
    let desc7 = bits(word, 0, 7) as u8;
    let dst = DstReg::from_field(bits(word, 21, 5));
    let index = AddrIndex::from_field(bits(word, 19, 2));

    let binary = |op: BinaryOp| Instruction::Binary {
        op,
        inverted: false,
        dst,
        src1: source(bits(word, 12, 7), index),
        src2: source(bits(word, 7, 5), AddrIndex::None),
        desc: desc7,
    };
    let inverted = |op: BinaryOp| Instruction::Binary {
        op,
        inverted: true,
        dst,
        src1: source(bits(word, 14, 5), AddrIndex::None),
        src2: source(bits(word, 7, 7), index),
        desc: desc7,
    };
    let unary = |op: UnaryOp| Instruction::Unary {
        op,
        dst,
        src: source(bits(word, 12, 7), index),
        desc: desc7,
    };

    match opcode {
        0x00 => binary(BinaryOp::Add),
        0x01 => binary(BinaryOp::Dp3),
        0x02 => binary(BinaryOp::Dp4),
        0x03 => binary(BinaryOp::Dph),
        0x04 => binary(BinaryOp::Dst),
        0x05 => unary(UnaryOp::Ex2),
        0x06 => unary(UnaryOp::Lg2),
        0x07 => unary(UnaryOp::Litp),
        0x08 => binary(BinaryOp::Mul),
        0x09 => binary(BinaryOp::Sge),
        0x0A => binary(BinaryOp::Slt),
        0x0B => unary(UnaryOp::Flr),
        0x0C => binary(BinaryOp::Max),
        0x0D => binary(BinaryOp::Min),
        0x0E => unary(UnaryOp::Rcp),
        0x0F => unary(UnaryOp::Rsq),
        0x12 => unary(UnaryOp::Mova),
        0x13 => unary(UnaryOp::Mov),
        0x18 => inverted(BinaryOp::Dph),
        0x19 => inverted(BinaryOp::Dst),
        0x1A => inverted(BinaryOp::Sge),
        0x1B => inverted(BinaryOp::Slt),
        0x10 | 0x11 | 0x14..=0x17 | 0x1C..=0x1F => Instruction::Unknown { opcode },
        0x20 => Instruction::Break {
            guard: Guard::Always,
        },
        0x21 => Instruction::Nop,
        0x22 => Instruction::End,
        0x23 => Instruction::Break {
            guard: Guard::Cond(condition(word)),
        },
        0x24 => Instruction::Call {
            guard: Guard::Always,
            target: flow_target(word),
            num: flow_num(word),
        },
        0x25 => Instruction::Call {
            guard: Guard::Cond(condition(word)),
            target: flow_target(word),
            num: flow_num(word),
        },
        0x26 => Instruction::Call {
            guard: Guard::Bool(bool_id(word)),
            target: flow_target(word),
            num: flow_num(word),
        },
        0x27 => Instruction::If {
            guard: Guard::Bool(bool_id(word)),
            target: flow_target(word),
            num: flow_num(word),
        },
        0x28 => Instruction::If {
            guard: Guard::Cond(condition(word)),
            target: flow_target(word),
            num: flow_num(word),
        },
        0x29 => Instruction::Loop {
            // Only i0-i3 exist; the upper two bits of the 4-bit field are ignored.
            int_id: bits(word, 22, 2) as u8,
            end: flow_target(word),
        },
        0x2A => Instruction::Emit,
        0x2B => Instruction::SetEmit {
            winding: bits(word, 22, 1) != 0,
            primitive: bits(word, 23, 1) != 0,
            vertex_id: bits(word, 24, 2) as u8,
        },
        0x2C => Instruction::Jmp {
            guard: Guard::Cond(condition(word)),
            target: flow_target(word),
            invert: word & 1 != 0,
        },
        0x2D => Instruction::Jmp {
            guard: Guard::Bool(bool_id(word)),
            target: flow_target(word),
            invert: word & 1 != 0,
        },
        0x2E | 0x2F => Instruction::Cmp {
            src1: source(bits(word, 12, 7), index),
            src2: source(bits(word, 7, 5), AddrIndex::None),
            y: CmpOp::from_field(bits(word, 21, 3)),
            x: CmpOp::from_field(bits(word, 24, 3)),
            desc: desc7,
        },
        0x30..=0x37 => Instruction::Mad {
            inverted: true,
            dst: DstReg::from_field(bits(word, 24, 5)),
            src1: source(bits(word, 17, 5), AddrIndex::None),
            src2: source(bits(word, 12, 5), AddrIndex::None),
            src3: source(bits(word, 5, 7), AddrIndex::from_field(bits(word, 22, 2))),
            desc: bits(word, 0, 5) as u8,
        },
        0x38..=0x3F => Instruction::Mad {
            inverted: false,
            dst: DstReg::from_field(bits(word, 24, 5)),
            src1: source(bits(word, 17, 5), AddrIndex::None),
            src2: source(bits(word, 10, 7), AddrIndex::from_field(bits(word, 22, 2))),
            src3: source(bits(word, 5, 5), AddrIndex::None),
            desc: bits(word, 0, 5) as u8,
        },
        // `opcode` is 6 bits wide, so every value is covered above.
        0x40..=u8::MAX => Instruction::Unknown { opcode },
    }
}
