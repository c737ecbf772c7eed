//! The shared renderer behind [`Disasm`](super::Disasm) and the `Display`
//! impls of [`Instruction`], [`Condition`] and [`Source`].

use std::fmt;

use crate::isa::instruction::{CondOp, Condition, Guard, Instruction, UnaryOp};
use crate::isa::opdesc::{OperandDescriptor, Swizzle, WriteMask};
use crate::isa::register::{AddrIndex, DstReg, Source};

/// `cmp.x && !cmp.y` style (see the module docs).
impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let term = |r: bool, lane: &str| format!("{}cmp.{lane}", if r { "" } else { "!" });
        let (x, y) = (term(self.ref_x, "x"), term(self.ref_y, "y"));
        match self.op {
            CondOp::Or => write!(f, "{x} || {y}"),
            CondOp::And => write!(f, "{x} && {y}"),
            CondOp::X => f.write_str(&x),
            CondOp::Y => f.write_str(&y),
        }
    }
}

/// The register plus `[a0.x]`/`[a0.y]`/`[aL]` when relatively addressed.
impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.reg)?;
        if self.index != AddrIndex::None {
            write!(f, "[{}]", self.index.name())?;
        }
        Ok(())
    }
}

/// Shared rendering; `desc: None` means "no descriptor information".
pub(super) struct Renderer<'a> {
    pub(super) desc: Option<OperandDescriptor>,
    pub(super) labels: Option<&'a dyn Fn(u16) -> Option<String>>,
}

impl Renderer<'_> {
    /// Wider than `u16` so that `target + num` of any typed `if` renders.
    fn label(&self, address: u32) -> String {
        let named = u16::try_from(address)
            .ok()
            .and_then(|a| self.labels.and_then(|l| l(a)));
        named.unwrap_or_else(|| format!("l_{address:04x}"))
    }

    fn mask(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.desc.map(|d| d.mask()) {
            None | Some(WriteMask::ALL) => Ok(()),
            Some(m) if m.0 & 0xF == 0 => f.write_str(".none"),
            Some(m) => write!(f, ".{m}"),
        }
    }

    fn dst(&self, f: &mut fmt::Formatter<'_>, dst: DstReg) -> fmt::Result {
        write!(f, "{dst}")?;
        self.mask(f)
    }

    /// Source operand `slot` (0 = SRC1).
    fn src(&self, f: &mut fmt::Formatter<'_>, src: Source, slot: usize) -> fmt::Result {
        let Some(d) = self.desc else {
            return write!(f, "{src}");
        };
        let neg = if d.negate(slot) { "-" } else { "" };
        write!(f, "{neg}{src}")?;
        match d.swizzle(slot) {
            Swizzle::IDENTITY => Ok(()),
            s => write!(f, ".{s}"),
        }
    }

    fn srcs(&self, f: &mut fmt::Formatter<'_>, srcs: &[Source]) -> fmt::Result {
        for (slot, &s) in srcs.iter().enumerate() {
            f.write_str(", ")?;
            self.src(f, s, slot)?;
        }
        Ok(())
    }

    /// `base` + suffix (`c`/`u`) + the guard operand.
    fn guarded(&self, f: &mut fmt::Formatter<'_>, base: &str, guard: Guard) -> fmt::Result {
        match guard {
            Guard::Always => f.write_str(base),
            Guard::Cond(c) => write!(f, "{base}c {c}"),
            Guard::Bool(b) => write!(f, "{base}u b{b}"),
        }
    }

    pub(super) fn instr(&self, f: &mut fmt::Formatter<'_>, instr: &Instruction) -> fmt::Result {
        let i = |inverted: bool| if inverted { "i" } else { "" };
        match *instr {
            Instruction::Binary {
                op,
                inverted,
                dst,
                src1,
                src2,
                ..
            } => {
                write!(f, "{}{} ", op.mnemonic(), i(inverted))?;
                self.dst(f, dst)?;
                self.srcs(f, &[src1, src2])
            }
            Instruction::Unary {
                op: UnaryOp::Mova,
                src,
                ..
            } => {
                f.write_str("mova a0")?;
                self.mask(f)?;
                self.srcs(f, &[src])
            }
            Instruction::Unary { op, dst, src, .. } => {
                write!(f, "{} ", op.mnemonic())?;
                self.dst(f, dst)?;
                self.srcs(f, &[src])
            }
            Instruction::Cmp {
                src1, src2, x, y, ..
            } => {
                f.write_str("cmp ")?;
                self.src(f, src1, 0)?;
                write!(f, ", {}, {}, ", x.name(), y.name())?;
                self.src(f, src2, 1)
            }
            Instruction::Mad {
                inverted,
                dst,
                src1,
                src2,
                src3,
                ..
            } => {
                write!(f, "mad{} ", i(inverted))?;
                self.dst(f, dst)?;
                self.srcs(f, &[src1, src2, src3])
            }
            Instruction::Nop => f.write_str("nop"),
            Instruction::End => f.write_str("end"),
            Instruction::Emit => f.write_str("emit"),
            Instruction::SetEmit {
                vertex_id,
                primitive,
                winding,
            } => {
                write!(f, "setemit {vertex_id}")?;
                if primitive {
                    f.write_str(", prim")?;
                }
                if winding {
                    f.write_str(", inv")?;
                }
                Ok(())
            }
            Instruction::Break { guard } => self.guarded(f, "break", guard),
            Instruction::Call { guard, target, num } => {
                self.guarded(f, "call", guard)?;
                let sep = if guard == Guard::Always { " " } else { ", " };
                write!(f, "{sep}{}, {num}", self.label(target.into()))
            }
            Instruction::If { guard, target, num } => {
                self.guarded(f, "if", guard)?;
                let sep = if guard == Guard::Always { " " } else { ", " };
                let end = target as u32 + num as u32;
                write!(f, "{sep}{}, {}", self.label(target.into()), self.label(end))
            }
            Instruction::Loop { int_id, end } => {
                write!(f, "loop i{int_id}, {}", self.label(end.into()))
            }
            Instruction::Jmp {
                guard,
                target,
                invert,
            } => {
                let target = self.label(target.into());
                match (guard, invert) {
                    (Guard::Cond(c), true) => write!(f, "jmpc !({c}), {target}"),
                    (Guard::Bool(b), true) => write!(f, "jmpu !b{b}, {target}"),
                    // Not encodable (no unconditional jmp); rendered for totality.
                    (Guard::Always, true) => write!(f, "jmp !true, {target}"),
                    (Guard::Always, false) => write!(f, "jmp {target}"),
                    (guard, false) => {
                        self.guarded(f, "jmp", guard)?;
                        write!(f, ", {target}")
                    }
                }
            }
            Instruction::Unknown { opcode } => write!(f, "unk {opcode:#04x}"),
        }
    }
}
