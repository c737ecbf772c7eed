//! Disassembly as assembler source: what [`assemble`](super::assemble) reads
//! back into the same program.

use crate::isa::{CondOp, Disasm, Guard, Instruction, decode, label_name};
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// Why a program has no source listing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ListingError {
    /// A flow-control instruction names an address past the end of the
    /// code, which no label in the source can stand for.
    #[error(
        "instruction {at:#06x} targets {target:#06x}, past the end of the code ({len:#06x} words)"
    )]
    TargetPastEnd {
        /// Address of the instruction.
        at: usize,
        /// The address it names.
        target: u32,
        /// Code length in words.
        len: usize,
    },
}

/// Whether the mnemonic form keeps every bit: a one-flag condition's unused
/// reference value is not written in assembler syntax (the assembler sets it
/// to 1, as picasso does).
fn spelled_by_mnemonic(instr: &Instruction) -> bool {
    let guard = match *instr {
        Instruction::Break { guard }
        | Instruction::Call { guard, .. }
        | Instruction::If { guard, .. }
        | Instruction::Jmp { guard, .. } => guard,
        _ => return true,
    };
    match guard {
        Guard::Cond(c) => match c.op {
            CondOp::X => c.ref_y,
            CondOp::Y => c.ref_x,
            CondOp::And | CondOp::Or => true,
        },
        _ => true,
    }
}

/// Renders `code` (with its descriptor table) as `.exact` and one `.proc main … .end`
/// in the disassembler's syntax (`l_XXXX` labels; flow control with explicit
/// targets such as `ifc cmp.x, l_0004, l_0007` and `call l_0010, 3`), which
/// the assembler accepts. A flow-control word whose condition has a
/// non-default unused reference bit is written as `.word 0x…` (with its
/// disassembly in a comment), since no mnemonic spells that bit.
///
/// Assembling the result gives the same instruction words, except that
/// descriptor indices may differ: the assembler shares descriptors, so the
/// new table holds, for each instruction, a descriptor that agrees with the
/// original on every bit the instruction reads; and `mova`'s destination
/// field, which the hardware ignores and no syntax names, comes back as 0.
///
/// ```
/// use pica_jit::asm::{assemble_str, source_listing};
/// let original = assemble_str("a.pica", ".proc main\n ifu b1\n  mov o0, v0.yxzw\n .end\n end\n.end\n")?;
/// let text = source_listing(&original.dvlp.code, &original.dvlp.descriptors).unwrap();
/// assert!(text.contains("ifu b1, l_0002, l_0002"));
/// let again = assemble_str("listing.pica", &text)?;
/// assert_eq!(again.dvlp.code, original.dvlp.code);
/// # Ok::<(), pica_jit::asm::AsmError>(())
/// ```
pub fn source_listing(code: &[u32], descriptors: &[u32]) -> Result<String, ListingError> {
    let instrs: Vec<Instruction> = code.iter().map(|&w| decode(w)).collect();
    let mut targets = BTreeSet::new();
    for (at, instr) in instrs.iter().enumerate() {
        let named: Vec<u32> = match *instr {
            Instruction::Call { target, .. } | Instruction::Jmp { target, .. } => {
                vec![target.into()]
            }
            Instruction::If { target, num, .. } => {
                vec![target.into(), u32::from(target) + u32::from(num)]
            }
            Instruction::Loop { end, .. } => vec![end.into()],
            _ => vec![],
        };
        for target in named {
            if target as usize > code.len() {
                return Err(ListingError::TargetPastEnd {
                    at,
                    target,
                    len: code.len(),
                });
            }
            targets.insert(target as usize);
        }
    }
    let labels = |a: u16| Some(label_name(a));
    // `.exact`: keep `dphi`/`sgei`/`slti`/`dsti`/`madi` in their inverted
    // format even where picasso would pick the normal one.
    let mut out = String::from(".exact\n.proc main\n");
    for (at, instr) in instrs.iter().enumerate() {
        if targets.contains(&at) {
            let _ = writeln!(out, "{}:", label_name(at as u16));
        }
        let text = Disasm::new(instr, descriptors).with_labels(&labels);
        if spelled_by_mnemonic(instr) {
            let _ = writeln!(out, "    {text}");
        } else {
            let word = crate::isa::encode(instr).unwrap_or(code[at]);
            let _ = writeln!(out, "    .word {word:#010x} ; {text}");
        }
    }
    if targets.contains(&code.len()) {
        let _ = writeln!(out, "{}:", label_name(code.len() as u16));
    }
    out.push_str(".end\n");
    Ok(out)
}
