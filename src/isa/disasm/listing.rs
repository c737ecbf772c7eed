//! Whole-program listings.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::Disasm;
use crate::isa::decode;
use crate::isa::instruction::Instruction;

/// A named address for [`listing`], typically a DVLE entry point.
///
/// The name replaces the default `l_XXXX` label of that address, both on its
/// label line and wherever a flow-control instruction targets it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct ListingEntry {
    /// Label text, e.g. `main`.
    pub name: String,
    /// Word address.
    pub address: u32,
    /// Free-form comment printed as `; comment` line(s) above the label (none
    /// if empty).
    pub comment: String,
}

impl ListingEntry {
    /// An entry without a comment.
    pub fn new(name: impl Into<String>, address: u32) -> ListingEntry {
        ListingEntry {
            name: name.into(),
            address,
            comment: String::new(),
        }
    }

    /// Sets the comment.
    pub fn with_comment(self, comment: impl Into<String>) -> ListingEntry {
        ListingEntry {
            comment: comment.into(),
            ..self
        }
    }
}

/// Addresses that flow-control instructions name: `call`/`if`/`jmp` targets,
/// `if` end addresses (target + NUM) and `loop` end addresses.
fn flow_targets(instrs: &[Instruction]) -> BTreeSet<u32> {
    let mut targets = BTreeSet::new();
    for instr in instrs {
        match *instr {
            Instruction::Call { target, .. } | Instruction::Jmp { target, .. } => {
                targets.insert(target as u32);
            }
            Instruction::If { target, num, .. } => {
                targets.insert(target as u32);
                targets.insert(target as u32 + num as u32);
            }
            Instruction::Loop { end, .. } => {
                targets.insert(end as u32);
            }
            _ => {}
        }
    }
    targets
}

/// Renders a program listing.
///
/// Each word becomes `XXXX: wwwwwwww  instruction` (word address, raw word,
/// [`Disasm`] rendering). Before an address named by `entries` come a blank
/// line (unless it is the first line), then for each entry its `; comment`
/// lines (if any) and `name:`; before any other address that a flow-control
/// instruction targets comes an `l_XXXX:` line. Instructions whose descriptor index lies beyond
/// `descriptors` get a trailing `; desc N beyond table (reads as 0)` comment.
/// Entries at or past the end of the code are listed at the end as
/// `; name: XXXX, past the last instruction` comments.
/// Lines end in `\n`; there is no trailing whitespace.
///
/// ```
/// use pica_jit::isa::{encode, listing, Guard, Instruction, ListingEntry};
/// let code = [
///     encode(&Instruction::Call { guard: Guard::Always, target: 2, num: 1 }).unwrap(),
///     encode(&Instruction::End).unwrap(),
///     encode(&Instruction::Nop).unwrap(),
/// ];
/// let entries = [ListingEntry::new("main", 0).with_comment("entry point")];
/// assert_eq!(
///     listing(&code, &[], &entries),
///     "; entry point\nmain:\n0000: 90000801  call l_0002, 1\n0001: 88000000  end\n\
///      l_0002:\n0002: 84000000  nop\n"
/// );
/// ```
pub fn listing(code: &[u32], descriptors: &[u32], entries: &[ListingEntry]) -> String {
    let instrs: Vec<Instruction> = code.iter().map(|&w| decode(w)).collect();
    let targets = flow_targets(&instrs);
    let mut named: BTreeMap<u32, Vec<&ListingEntry>> = BTreeMap::new();
    for e in entries {
        named.entry(e.address).or_default().push(e);
    }
    let names = |address: u16| named.get(&(address as u32)).map(|v| v[0].name.clone());

    let mut out = String::new();
    for (pc, (&word, instr)) in code.iter().zip(&instrs).enumerate() {
        let pc = pc as u32;
        if let Some(es) = named.get(&pc) {
            if !out.is_empty() {
                out.push('\n');
            }
            for e in es {
                for line in e.comment.lines() {
                    let _ = writeln!(out, "{}", format!("; {line}").trim_end());
                }
                let _ = writeln!(out, "{}:", e.name);
            }
        } else if targets.contains(&pc) {
            let _ = writeln!(out, "l_{pc:04x}:");
        }
        let text = Disasm::new(instr, descriptors)
            .with_labels(&names)
            .to_string();
        let _ = write!(out, "{pc:04x}: {word:08x}  {text}");
        if let Some(d) = instr
            .descriptor()
            .filter(|&d| d as usize >= descriptors.len())
        {
            let _ = write!(out, "  ; desc {d} beyond table (reads as 0)");
        }
        out.push('\n');
    }
    for e in named.range(code.len() as u32..).flat_map(|(_, es)| es) {
        let _ = write!(
            out,
            "; {}: {:04x}, past the last instruction",
            e.name, e.address
        );
        let comment: Vec<&str> = e.comment.split_whitespace().collect();
        if !comment.is_empty() {
            let _ = write!(out, " - {}", comment.join(" "));
        }
        out.push('\n');
    }
    out
}
