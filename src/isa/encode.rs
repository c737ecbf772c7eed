//! [`Instruction`] → word: the inverse of [`decode`](super::decode), for tests,
//! program generators and the SHBIN writer.

use super::instruction::{CondOp, Condition, Guard, Instruction};
use super::register::{AddrIndex, Source};
use thiserror::Error;

/// Why an [`Instruction`] has no encoding.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum EncodeError {
    /// A float constant was placed in a 5-bit source field.
    #[error("source {slot} names {reg}, but its 5-bit field can only name v0-v15 and r0-r15")]
    ConstantInShortField {
        /// 1-based source slot.
        slot: u8,
        /// The register written.
        reg: String,
    },
    /// A relative index was given for a source that has no index field.
    #[error("source {slot} cannot be relatively addressed in this format")]
    IndexNotEncodable {
        /// 1-based source slot.
        slot: u8,
    },
    /// A register number is out of range.
    #[error("register number out of range in {0}")]
    RegisterOutOfRange(String),
    /// The operand descriptor index does not fit the field.
    #[error("operand descriptor {desc} does not fit (limit {limit})")]
    DescriptorOutOfRange {
        /// The index given.
        desc: u8,
        /// Largest index + 1 the format can hold.
        limit: u8,
    },
    /// The operation has no inverted (format 1i) encoding.
    #[error("{0} has no inverted (…i) form")]
    NoInvertedForm(&'static str),
    /// The guard is not valid for this instruction.
    #[error("{0} does not take this kind of condition")]
    InvalidGuard(&'static str),
    /// A flow-control target does not fit in 12 bits.
    #[error("target {0:#x} does not fit in 12 bits")]
    TargetOutOfRange(u16),
    /// Some field is out of its range.
    #[error("field out of range: {0}")]
    FieldOutOfRange(&'static str),
}

fn long_source(src: Source, slot: u8) -> Result<u32, EncodeError> {
    check_register(src)?;
    let _ = slot;
    Ok(src.reg.field())
}

fn short_source(src: Source, slot: u8, index_allowed: bool) -> Result<u32, EncodeError> {
    check_register(src)?;
    if !src.reg.fits_short_field() {
        return Err(EncodeError::ConstantInShortField {
            slot,
            reg: src.reg.to_string(),
        });
    }
    if !index_allowed && src.index != AddrIndex::None {
        return Err(EncodeError::IndexNotEncodable { slot });
    }
    Ok(src.reg.field())
}

fn check_register(src: Source) -> Result<(), EncodeError> {
    use super::register::SrcReg;
    let ok = match src.reg {
        SrcReg::Input(n) | SrcReg::Temp(n) => n < 16,
        SrcReg::Const(n) => n < 96,
    };
    if ok {
        Ok(())
    } else {
        Err(EncodeError::RegisterOutOfRange(src.reg.to_string()))
    }
}

fn dst_field(dst: super::register::DstReg) -> Result<u32, EncodeError> {
    use super::register::DstReg;
    match dst {
        DstReg::Output(n) | DstReg::Temp(n) if n < 16 => Ok(dst.field()),
        _ => Err(EncodeError::RegisterOutOfRange(dst.to_string())),
    }
}

fn desc_field(desc: u8, limit: u8) -> Result<u32, EncodeError> {
    if desc < limit {
        Ok(desc as u32)
    } else {
        Err(EncodeError::DescriptorOutOfRange { desc, limit })
    }
}

fn target_field(target: u16) -> Result<u32, EncodeError> {
    if target < 0x1000 {
        Ok((target as u32) << 10)
    } else {
        Err(EncodeError::TargetOutOfRange(target))
    }
}

fn condition_fields(c: Condition) -> u32 {
    let op = match c.op {
        CondOp::Or => 0,
        CondOp::And => 1,
        CondOp::X => 2,
        CondOp::Y => 3,
    };
    (op << 22) | ((c.ref_y as u32) << 24) | ((c.ref_x as u32) << 25)
}

fn bool_field(id: u8) -> Result<u32, EncodeError> {
    if id < 16 {
        Ok((id as u32) << 22)
    } else {
        Err(EncodeError::FieldOutOfRange("bool uniform id"))
    }
}

/// Encodes an instruction into its 32-bit word.
///
/// Fields the instruction does not use are zero, so `decode(encode(i)) == i` for
/// every encodable `i` (tested by a property test).
///
/// ```
/// use pica_jit::isa::{decode, encode, Instruction, Guard};
/// let call = Instruction::Call { guard: Guard::Always, target: 0x40, num: 3 };
/// assert_eq!(decode(encode(&call).unwrap()), call);
/// ```
pub fn encode(instr: &Instruction) -> Result<u32, EncodeError> {
    let opcode = |op: u8| (op as u32) << 26;
    Ok(match *instr {
        Instruction::Binary {
            op,
            inverted,
            dst,
            src1,
            src2,
            desc,
        } => {
            let code = op
                .opcode(inverted)
                .ok_or(EncodeError::NoInvertedForm(op.mnemonic()))?;
            let common = opcode(code) | (dst_field(dst)? << 21) | desc_field(desc, 128)?;
            if inverted {
                common
                    | (short_source(src1, 1, false)? << 14)
                    | (src2.index.field() << 19)
                    | (long_source(src2, 2)? << 7)
            } else {
                common
                    | (long_source(src1, 1)? << 12)
                    | (src1.index.field() << 19)
                    | (short_source(src2, 2, false)? << 7)
            }
        }
        Instruction::Unary { op, dst, src, desc } => {
            opcode(op.opcode())
                | (dst_field(dst)? << 21)
                | (src.index.field() << 19)
                | (long_source(src, 1)? << 12)
                | desc_field(desc, 128)?
        }
        Instruction::Cmp {
            src1,
            src2,
            x,
            y,
            desc,
        } => {
            // CMP's opcode is 5 bits wide (0x2E/0x2F); bit 26 is the top bit of CMPX.
            (0x17 << 27)
                | (x.field() << 24)
                | (y.field() << 21)
                | (src1.index.field() << 19)
                | (long_source(src1, 1)? << 12)
                | (short_source(src2, 2, false)? << 7)
                | desc_field(desc, 128)?
        }
        Instruction::Mad {
            inverted,
            dst,
            src1,
            src2,
            src3,
            desc,
        } => {
            let common = (dst_field(dst)? << 24)
                | (short_source(src1, 1, false)? << 17)
                | desc_field(desc, 32)?;
            if inverted {
                (0x6 << 29)
                    | common
                    | (src3.index.field() << 22)
                    | (short_source(src2, 2, false)? << 12)
                    | (long_source(src3, 3)? << 5)
            } else {
                (0x7 << 29)
                    | common
                    | (src2.index.field() << 22)
                    | (long_source(src2, 2)? << 10)
                    | (short_source(src3, 3, false)? << 5)
            }
        }
        Instruction::Nop => opcode(0x21),
        Instruction::End => opcode(0x22),
        Instruction::Emit => opcode(0x2A),
        Instruction::SetEmit {
            vertex_id,
            primitive,
            winding,
        } => {
            if vertex_id > 3 {
                return Err(EncodeError::FieldOutOfRange("setemit vertex id"));
            }
            opcode(0x2B)
                | ((vertex_id as u32) << 24)
                | ((primitive as u32) << 23)
                | ((winding as u32) << 22)
        }
        Instruction::Break { guard } => match guard {
            Guard::Always => opcode(0x20),
            Guard::Cond(c) => opcode(0x23) | condition_fields(c),
            Guard::Bool(_) => return Err(EncodeError::InvalidGuard("break")),
        },
        Instruction::Call { guard, target, num } => {
            let body = target_field(target)? | num as u32;
            match guard {
                Guard::Always => opcode(0x24) | body,
                Guard::Cond(c) => opcode(0x25) | condition_fields(c) | body,
                Guard::Bool(b) => opcode(0x26) | bool_field(b)? | body,
            }
        }
        Instruction::If { guard, target, num } => {
            let body = target_field(target)? | num as u32;
            match guard {
                Guard::Always => return Err(EncodeError::InvalidGuard("if")),
                Guard::Cond(c) => opcode(0x28) | condition_fields(c) | body,
                Guard::Bool(b) => opcode(0x27) | bool_field(b)? | body,
            }
        }
        Instruction::Loop { int_id, end } => {
            if int_id > 3 {
                return Err(EncodeError::FieldOutOfRange("loop integer uniform id"));
            }
            opcode(0x29) | ((int_id as u32) << 22) | target_field(end)?
        }
        Instruction::Jmp {
            guard,
            target,
            invert,
        } => {
            let body = target_field(target)? | invert as u32;
            match guard {
                Guard::Always => return Err(EncodeError::InvalidGuard("jmp")),
                Guard::Cond(c) => opcode(0x2C) | condition_fields(c) | body,
                Guard::Bool(b) => opcode(0x2D) | bool_field(b)? | body,
            }
        }
        Instruction::Unknown { opcode: op } => {
            if !matches!(op, 0x10 | 0x11 | 0x14..=0x17 | 0x1C..=0x1F) {
                return Err(EncodeError::FieldOutOfRange("unknown opcode"));
            }
            opcode(op)
        }
    })
}
