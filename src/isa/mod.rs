//! The PICA200 shader instruction set: registers, operand descriptors, typed
//! instructions, decoding, encoding and disassembly.
//!
//! Everything downstream (interpreter, analysis, JIT backends) consumes these
//! types; nothing else looks at raw instruction bits.

mod decode;
mod disasm;
mod encode;
mod instruction;
mod opdesc;
mod register;

#[cfg(test)]
mod tests;

pub use decode::decode;
pub use disasm::{Disasm, ListingEntry, label_name, listing, resolve_descriptor};
pub use encode::{EncodeError, encode};
pub use instruction::{BinaryOp, CmpOp, CondOp, Condition, Guard, Instruction, UnaryOp};
pub use opdesc::{OperandDescriptor, Swizzle, WriteMask};
pub use register::{AddrIndex, DstReg, FLOAT_UNIFORM_COUNT, REGISTER_COUNT, Source, SrcReg};

/// Most instruction words a program may have (12-bit flow-control targets).
pub const MAX_CODE_WORDS: usize = 4096;
/// Most operand descriptors a program may have (7-bit descriptor fields).
pub const MAX_DESCRIPTORS: usize = 128;
/// Descriptors reachable from `mad`/`madi` (5-bit descriptor field).
pub const MAD_DESCRIPTORS: usize = 32;
