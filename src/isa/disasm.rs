//! Disassembly: [`Instruction`] → picasso-style assembly text.
//!
//! Two renderings exist:
//!
//! - [`Disasm`] resolves the instruction's operand descriptor against a
//!   descriptor table and shows write masks, negation and swizzles:
//!   `dp4 o0.x, c4[a0.x], r1`.
//! - `impl Display for Instruction` has no table: it shows the bare registers
//!   and the descriptor index as a suffix: `dp4 o0, c4[a0.x], r1 (desc 5)`.
//!
//! [`listing`] renders a whole program, one line per word, with label and
//! entry-point lines.
//!
//! # Syntax
//!
//! - Destination: `o0`–`o15`, `r0`–`r15`, followed by `.` and the written
//!   lanes (`o0.xz`); nothing when all four lanes are written; `.none` when
//!   the mask is empty.
//! - Source: optional `-` (negation), the register, `[a0.x]`/`[a0.y]`/`[aL]`
//!   when the encoding carries a relative index (also on `v`/`r` registers,
//!   where hardware ignores it), then `.` and all four selector letters unless
//!   the selector is the identity `xyzw`: `-c4[aL].yyyy`.
//! - Inverted formats carry an `i` suffix: `dphi`, `dsti`, `sgei`, `slti`,
//!   `madi`. Operands are always printed in SRC1, SRC2(, SRC3) order.
//! - `mova` writes the address register: `mova a0.xy, c4` (the unused DST field
//!   is not shown; the mask is the descriptor's).
//! - `cmp src1, opx, opy, src2` with operators `eq ne lt le gt ge true6 true7`;
//!   the descriptor's write mask is not shown (`cmp` has no destination).
//! - Conditions: `cmp.x` when REFX = 1, `!cmp.x` when REFX = 0 (same for y),
//!   joined by `||` (CONDOP 0) or `&&` (CONDOP 1); CONDOP 2/3 show only the x/y
//!   term. Boolean uniforms are `b0`–`b15`.
//! - Flow control, with targets as labels (a caller-supplied name, else
//!   `l_XXXX`, four lowercase hex digits of the word address):
//!   `call l_0010, 4` / `callc cmp.x, l_0010, 4` / `callu b1, l_0010, 4`
//!   (the number is NUM, the subroutine length);
//!   `ifc cmp.x && !cmp.y, l_0008, l_000a` / `ifu b3, l_0008, l_000a`
//!   (else label = DST, end label = DST + NUM);
//!   `loop i2, l_0014` (last instruction of the body);
//!   `jmpc !cmp.x, l_0007` / `jmpu b3, l_0007`, and when bit 0 of NUM inverts
//!   the test: `jmpc !(cmp.x && cmp.y), l_0007` / `jmpu !b3, l_0007`
//!   (an inverted `jmpc` always gets the parentheses);
//!   `break` / `breakc cmp.y` / `nop` / `end` / `emit`.
//! - `setemit N` followed by `, prim` and `, inv` when those flags are set:
//!   `setemit 2, prim, inv`.
//! - Unassigned opcodes: `unk 0x14`.
//! - A descriptor index beyond the table reads as descriptor word 0 (mask
//!   `none`, selectors `xxxx`, no negation), the project-wide rule.

mod listing;
mod render;
#[cfg(test)]
mod tests;

pub use listing::{ListingEntry, listing};

use std::fmt;

use super::instruction::Instruction;
use super::opdesc::OperandDescriptor;
use render::Renderer;

/// The default name of the label at word address `address`: `l_XXXX`.
///
/// ```
/// assert_eq!(pica_jit::isa::label_name(0x1f), "l_001f");
/// ```
pub fn label_name(address: u16) -> String {
    format!("l_{address:04x}")
}

/// The descriptor word an index selects: word 0 when the index is beyond the
/// table (the project's rule for missing descriptors).
pub fn resolve_descriptor(descriptors: &[u32], index: u8) -> OperandDescriptor {
    OperandDescriptor(descriptors.get(index as usize).copied().unwrap_or(0))
}

/// Renders one instruction with its operand descriptor resolved.
///
/// ```
/// use pica_jit::isa::{decode, Disasm, OperandDescriptor, Swizzle, WriteMask};
/// // dp4 o0, c4[a0.x], r1 with descriptor 0
/// let word = (0x02 << 26) | (1 << 19) | (0x24 << 12) | (0x11 << 7);
/// let desc = OperandDescriptor::new(
///     WriteMask(0b1000),
///     [(false, Swizzle::IDENTITY), (false, Swizzle::IDENTITY), (false, Swizzle::IDENTITY)],
/// );
/// let instr = decode(word);
/// assert_eq!(Disasm::new(&instr, &[desc.0]).to_string(), "dp4 o0.x, c4[a0.x], r1");
///
/// // Flow-control targets use caller-supplied names where there are some.
/// let call = decode((0x24 << 26) | (0x10 << 10) | 3);
/// let names = |addr: u16| (addr == 0x10).then(|| "helper".to_string());
/// assert_eq!(Disasm::new(&call, &[]).with_labels(&names).to_string(), "call helper, 3");
/// assert_eq!(Disasm::new(&call, &[]).to_string(), "call l_0010, 3");
/// ```
#[derive(Clone, Copy)]
pub struct Disasm<'a> {
    instr: &'a Instruction,
    descriptors: &'a [u32],
    labels: Option<&'a dyn Fn(u16) -> Option<String>>,
}

impl<'a> Disasm<'a> {
    /// Renders `instr` with descriptors taken from `descriptors`.
    pub fn new(instr: &'a Instruction, descriptors: &'a [u32]) -> Disasm<'a> {
        Disasm {
            instr,
            descriptors,
            labels: None,
        }
    }

    /// Names flow-control targets with `labels` where it returns `Some`
    /// (otherwise [`label_name`]).
    pub fn with_labels(self, labels: &'a dyn Fn(u16) -> Option<String>) -> Disasm<'a> {
        Disasm {
            labels: Some(labels),
            ..self
        }
    }

    /// The instruction's operand descriptor, if it has one, resolved with
    /// [`resolve_descriptor`].
    pub fn descriptor(&self) -> Option<OperandDescriptor> {
        self.instr
            .descriptor()
            .map(|i| resolve_descriptor(self.descriptors, i))
    }
}

impl fmt::Debug for Disasm<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Disasm")
            .field("instr", self.instr)
            .field("descriptors", &self.descriptors)
            .field("labels", &self.labels.is_some())
            .finish()
    }
}

impl fmt::Display for Disasm<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Renderer {
            desc: self.descriptor(),
            labels: self.labels,
        }
        .instr(f, self.instr)
    }
}

/// Renders without a descriptor table: bare registers, `(desc N)` suffix.
///
/// ```
/// use pica_jit::isa::{Instruction, Guard};
/// let i = Instruction::Call { guard: Guard::Bool(1), target: 0x10, num: 4 };
/// assert_eq!(i.to_string(), "callu b1, l_0010, 4");
/// ```
impl fmt::Display for Instruction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Renderer {
            desc: None,
            labels: None,
        }
        .instr(f, self)?;
        match self.descriptor() {
            Some(d) => write!(f, " (desc {d})"),
            None => Ok(()),
        }
    }
}
