//! The typed instruction set: one variant per instruction family.

use super::register::{DstReg, Source};

/// Two-source vector operations (formats 1 and 1i).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `add` (0x00).
    Add,
    /// `dp3` (0x01).
    Dp3,
    /// `dp4` (0x02).
    Dp4,
    /// `dph` (0x03) / `dphi` (0x18).
    Dph,
    /// `dst` (0x04) / `dsti` (0x19).
    Dst,
    /// `mul` (0x08).
    Mul,
    /// `sge` (0x09) / `sgei` (0x1A).
    Sge,
    /// `slt` (0x0A) / `slti` (0x1B).
    Slt,
    /// `max` (0x0C).
    Max,
    /// `min` (0x0D).
    Min,
}

impl BinaryOp {
    /// Whether an inverted (`…I`, format 1i) encoding of this operation exists.
    pub fn has_inverted_form(self) -> bool {
        matches!(
            self,
            BinaryOp::Dph | BinaryOp::Dst | BinaryOp::Sge | BinaryOp::Slt
        )
    }

    /// The opcode of the normal (format 1) or inverted (format 1i) encoding.
    pub fn opcode(self, inverted: bool) -> Option<u8> {
        Some(match (self, inverted) {
            (BinaryOp::Add, false) => 0x00,
            (BinaryOp::Dp3, false) => 0x01,
            (BinaryOp::Dp4, false) => 0x02,
            (BinaryOp::Dph, false) => 0x03,
            (BinaryOp::Dst, false) => 0x04,
            (BinaryOp::Mul, false) => 0x08,
            (BinaryOp::Sge, false) => 0x09,
            (BinaryOp::Slt, false) => 0x0A,
            (BinaryOp::Max, false) => 0x0C,
            (BinaryOp::Min, false) => 0x0D,
            (BinaryOp::Dph, true) => 0x18,
            (BinaryOp::Dst, true) => 0x19,
            (BinaryOp::Sge, true) => 0x1A,
            (BinaryOp::Slt, true) => 0x1B,
            _ => return None,
        })
    }

    /// Assembler mnemonic (without the `i` suffix).
    pub fn mnemonic(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Dp3 => "dp3",
            BinaryOp::Dp4 => "dp4",
            BinaryOp::Dph => "dph",
            BinaryOp::Dst => "dst",
            BinaryOp::Mul => "mul",
            BinaryOp::Sge => "sge",
            BinaryOp::Slt => "slt",
            BinaryOp::Max => "max",
            BinaryOp::Min => "min",
        }
    }

    /// Every binary operation, in opcode order.
    pub const ALL: [BinaryOp; 10] = [
        BinaryOp::Add,
        BinaryOp::Dp3,
        BinaryOp::Dp4,
        BinaryOp::Dph,
        BinaryOp::Dst,
        BinaryOp::Mul,
        BinaryOp::Sge,
        BinaryOp::Slt,
        BinaryOp::Max,
        BinaryOp::Min,
    ];
}

/// One-source operations (format 1u).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// `ex2` (0x05).
    Ex2,
    /// `lg2` (0x06).
    Lg2,
    /// `litp` (0x07).
    Litp,
    /// `flr` (0x0B).
    Flr,
    /// `rcp` (0x0E).
    Rcp,
    /// `rsq` (0x0F).
    Rsq,
    /// `mova` (0x12).
    Mova,
    /// `mov` (0x13).
    Mov,
}

impl UnaryOp {
    /// The opcode.
    pub fn opcode(self) -> u8 {
        match self {
            UnaryOp::Ex2 => 0x05,
            UnaryOp::Lg2 => 0x06,
            UnaryOp::Litp => 0x07,
            UnaryOp::Flr => 0x0B,
            UnaryOp::Rcp => 0x0E,
            UnaryOp::Rsq => 0x0F,
            UnaryOp::Mova => 0x12,
            UnaryOp::Mov => 0x13,
        }
    }

    /// Assembler mnemonic.
    pub fn mnemonic(self) -> &'static str {
        match self {
            UnaryOp::Ex2 => "ex2",
            UnaryOp::Lg2 => "lg2",
            UnaryOp::Litp => "litp",
            UnaryOp::Flr => "flr",
            UnaryOp::Rcp => "rcp",
            UnaryOp::Rsq => "rsq",
            UnaryOp::Mova => "mova",
            UnaryOp::Mov => "mov",
        }
    }

    /// Every unary operation, in opcode order.
    pub const ALL: [UnaryOp; 8] = [
        UnaryOp::Ex2,
        UnaryOp::Lg2,
        UnaryOp::Litp,
        UnaryOp::Flr,
        UnaryOp::Rcp,
        UnaryOp::Rsq,
        UnaryOp::Mova,
        UnaryOp::Mov,
    ];
}

/// A comparison operator of `cmp` (3-bit CMPX/CMPY field).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    /// 0: `==`.
    Eq,
    /// 1: `!=`.
    Ne,
    /// 2: `<`.
    Lt,
    /// 3: `<=`.
    Le,
    /// 4: `>`.
    Gt,
    /// 5: `>=`.
    Ge,
    /// 6: always true (undocumented encoding).
    True6,
    /// 7: always true (undocumented encoding).
    True7,
}

impl CmpOp {
    /// Decodes a 3-bit operator field.
    pub fn from_field(field: u32) -> CmpOp {
        match field & 7 {
            0 => CmpOp::Eq,
            1 => CmpOp::Ne,
            2 => CmpOp::Lt,
            3 => CmpOp::Le,
            4 => CmpOp::Gt,
            5 => CmpOp::Ge,
            6 => CmpOp::True6,
            _ => CmpOp::True7,
        }
    }

    /// The raw 3-bit field value.
    pub fn field(self) -> u32 {
        self as u32
    }

    /// Assembler spelling (`eq`, `ne`, `lt`, `le`, `gt`, `ge`, `true6`, `true7`).
    pub fn name(self) -> &'static str {
        match self {
            CmpOp::Eq => "eq",
            CmpOp::Ne => "ne",
            CmpOp::Lt => "lt",
            CmpOp::Le => "le",
            CmpOp::Gt => "gt",
            CmpOp::Ge => "ge",
            CmpOp::True6 => "true6",
            CmpOp::True7 => "true7",
        }
    }

    /// All eight operators in field order.
    pub const ALL: [CmpOp; 8] = [
        CmpOp::Eq,
        CmpOp::Ne,
        CmpOp::Lt,
        CmpOp::Le,
        CmpOp::Gt,
        CmpOp::Ge,
        CmpOp::True6,
        CmpOp::True7,
    ];
}

/// How a condition combines the two flag tests (CONDOP).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CondOp {
    /// 0: `cmp.x == REFX || cmp.y == REFY`.
    Or,
    /// 1: `cmp.x == REFX && cmp.y == REFY`.
    And,
    /// 2: `cmp.x == REFX`.
    X,
    /// 3: `cmp.y == REFY`.
    Y,
}

impl CondOp {
    /// All four CONDOP values in field order.
    pub const ALL: [CondOp; 4] = [CondOp::Or, CondOp::And, CondOp::X, CondOp::Y];
}

/// A condition on the `cmp.x`/`cmp.y` flags (format 2).
///
/// ```
/// use pica_jit::isa::{CondOp, Condition};
/// let c = Condition { op: CondOp::And, ref_x: true, ref_y: false };
/// assert!(c.eval([true, false]));
/// assert!(!c.eval([true, true]));
/// assert_eq!(c.to_string(), "cmp.x && !cmp.y");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Condition {
    /// How the two tests combine.
    pub op: CondOp,
    /// Value `cmp.x` is compared with.
    pub ref_x: bool,
    /// Value `cmp.y` is compared with.
    pub ref_y: bool,
}

impl Condition {
    /// Evaluates the condition against the flags `[cmp.x, cmp.y]`.
    pub fn eval(self, cmp: [bool; 2]) -> bool {
        let x = cmp[0] == self.ref_x;
        let y = cmp[1] == self.ref_y;
        match self.op {
            CondOp::Or => x || y,
            CondOp::And => x && y,
            CondOp::X => x,
            CondOp::Y => y,
        }
    }
}

/// What decides whether a flow-control instruction takes effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Guard {
    /// Unconditional (`call`, `break`).
    Always,
    /// A condition on the `cmp` flags (`…c` forms, format 2).
    Cond(Condition),
    /// A boolean uniform `b0`–`b15` (`…u` forms, format 3).
    Bool(u8),
}

/// One decoded instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Instruction {
    /// Two-source vector operation. `inverted` selects format 1i (the 7-bit
    /// field and the relative index belong to SRC2).
    Binary {
        /// The operation.
        op: BinaryOp,
        /// Format 1i (`dphi`, `dsti`, `sgei`, `slti`).
        inverted: bool,
        /// Destination register.
        dst: DstReg,
        /// First source.
        src1: Source,
        /// Second source.
        src2: Source,
        /// Operand descriptor index (0..128).
        desc: u8,
    },
    /// One-source operation (format 1u).
    Unary {
        /// The operation.
        op: UnaryOp,
        /// Destination register (ignored by `mova`, which writes `a0`).
        dst: DstReg,
        /// The source.
        src: Source,
        /// Operand descriptor index (0..128).
        desc: u8,
    },
    /// `cmp` (format 1c): sets `cmp.x`/`cmp.y`.
    Cmp {
        /// First source (7-bit field, may be relative).
        src1: Source,
        /// Second source (5-bit field).
        src2: Source,
        /// Operator for `cmp.x`.
        x: CmpOp,
        /// Operator for `cmp.y`.
        y: CmpOp,
        /// Operand descriptor index (0..128).
        desc: u8,
    },
    /// `mad` (format 5) or `madi` (format 5i): `dst = src1 * src2 + src3`.
    Mad {
        /// Format 5i: the 7-bit field and the relative index belong to SRC3.
        inverted: bool,
        /// Destination register.
        dst: DstReg,
        /// First factor.
        src1: Source,
        /// Second factor.
        src2: Source,
        /// Addend.
        src3: Source,
        /// Operand descriptor index (0..32).
        desc: u8,
    },
    /// `nop`.
    Nop,
    /// `end`.
    End,
    /// `emit` (geometry shaders).
    Emit,
    /// `setemit vtx, prim, inv`.
    SetEmit {
        /// Vertex slot 0..=3.
        vertex_id: u8,
        /// Emit a primitive with the vertex.
        primitive: bool,
        /// Winding flag of the primitive.
        winding: bool,
    },
    /// `break` ([`Guard::Always`]) or `breakc` ([`Guard::Cond`]).
    Break {
        /// When the break happens.
        guard: Guard,
    },
    /// `call`, `callc`, `callu`: run `target..target+num` and return.
    Call {
        /// When the call happens.
        guard: Guard,
        /// First instruction of the subroutine.
        target: u16,
        /// Number of instructions before the return point.
        num: u8,
    },
    /// `ifc`, `ifu`: true runs up to `target` then jumps to `target + num`;
    /// false jumps to `target`.
    If {
        /// The condition ([`Guard::Cond`] or [`Guard::Bool`]).
        guard: Guard,
        /// Start of the else part (end of the then part).
        target: u16,
        /// Length of the else part.
        num: u8,
    },
    /// `loop`: runs `pc+1..=end` `i.x + 1` times.
    Loop {
        /// Integer uniform `i0`–`i3` with the loop parameters.
        int_id: u8,
        /// Last instruction of the body.
        end: u16,
    },
    /// `jmpc`, `jmpu`: jump to `target` when the guard (inverted if `invert`) holds.
    Jmp {
        /// The condition ([`Guard::Cond`] or [`Guard::Bool`]).
        guard: Guard,
        /// Jump destination.
        target: u16,
        /// Bit 0 of NUM: jump when the guard is false instead.
        invert: bool,
    },
    /// An unassigned opcode (0x10, 0x11, 0x14–0x17, 0x1C–0x1F). Executes as a no-op.
    Unknown {
        /// The 6-bit opcode.
        opcode: u8,
    },
}

impl Instruction {
    /// The same instruction with operand descriptor `index` (unchanged if it has
    /// no descriptor field).
    ///
    /// ```
    /// use pica_jit::isa::Instruction;
    /// assert_eq!(Instruction::End.with_descriptor(5), Instruction::End);
    /// ```
    pub fn with_descriptor(self, index: u8) -> Instruction {
        let mut instr = self;
        match &mut instr {
            Instruction::Binary { desc, .. }
            | Instruction::Unary { desc, .. }
            | Instruction::Cmp { desc, .. }
            | Instruction::Mad { desc, .. } => *desc = index,
            _ => {}
        }
        instr
    }

    /// The source operands this instruction reads, in operand order.
    ///
    /// ```
    /// use pica_jit::isa::{Instruction, Source, SrcReg};
    /// assert_eq!(Instruction::End.sources().count(), 0);
    /// ```
    pub fn sources(&self) -> impl Iterator<Item = Source> {
        let operands = match *self {
            Instruction::Binary { src1, src2, .. } | Instruction::Cmp { src1, src2, .. } => {
                [Some(src1), Some(src2), None]
            }
            Instruction::Unary { src, .. } => [Some(src), None, None],
            Instruction::Mad {
                src1, src2, src3, ..
            } => [Some(src1), Some(src2), Some(src3)],
            _ => [None; 3],
        };
        operands.into_iter().flatten()
    }

    /// Whether this instruction can change the PC or the control-flow stacks.
    pub fn is_flow_control(&self) -> bool {
        matches!(
            self,
            Instruction::End
                | Instruction::Break { .. }
                | Instruction::Call { .. }
                | Instruction::If { .. }
                | Instruction::Loop { .. }
                | Instruction::Jmp { .. }
        )
    }

    /// The operand descriptor index this instruction uses, if any.
    pub fn descriptor(&self) -> Option<u8> {
        match *self {
            Instruction::Binary { desc, .. }
            | Instruction::Unary { desc, .. }
            | Instruction::Cmp { desc, .. }
            | Instruction::Mad { desc, .. } => Some(desc),
            _ => None,
        }
    }
}
