//! Register names as they appear in instruction fields.

use std::fmt;

/// Number of float constant registers (`c0`–`c95`).
pub const FLOAT_UNIFORM_COUNT: usize = 96;
/// Number of input, temporary and output registers of each kind.
pub const REGISTER_COUNT: usize = 16;

/// A source register: what a 5-bit or 7-bit source field names.
///
/// 5-bit fields can only name inputs and temporaries; 7-bit fields also reach the
/// float constants.
///
/// ```
/// use pica_jit::isa::SrcReg;
/// assert_eq!(SrcReg::from_field(0x25), SrcReg::Const(5));
/// assert_eq!(SrcReg::from_field(0x13).to_string(), "r3");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SrcReg {
    /// `v0`–`v15`, per-vertex inputs.
    Input(u8),
    /// `r0`–`r15`, temporaries.
    Temp(u8),
    /// `c0`–`c95`, float uniforms.
    Const(u8),
}

impl SrcReg {
    /// Decodes a source field (5 or 7 bits; higher bits must already be masked off).
    pub fn from_field(field: u32) -> SrcReg {
        match field {
            0x00..=0x0F => SrcReg::Input(field as u8),
            0x10..=0x1F => SrcReg::Temp((field - 0x10) as u8),
            _ => SrcReg::Const(((field - 0x20) & 0x7F) as u8),
        }
    }

    /// The raw field value that names this register.
    pub fn field(self) -> u32 {
        match self {
            SrcReg::Input(n) => n as u32,
            SrcReg::Temp(n) => 0x10 + n as u32,
            SrcReg::Const(n) => 0x20 + n as u32,
        }
    }

    /// Whether a 5-bit source field can name this register.
    pub fn fits_short_field(self) -> bool {
        !matches!(self, SrcReg::Const(_))
    }
}

impl fmt::Display for SrcReg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SrcReg::Input(n) => write!(f, "v{n}"),
            SrcReg::Temp(n) => write!(f, "r{n}"),
            SrcReg::Const(n) => write!(f, "c{n}"),
        }
    }
}

/// A destination register (5-bit field): outputs or temporaries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DstReg {
    /// `o0`–`o15`.
    Output(u8),
    /// `r0`–`r15`.
    Temp(u8),
}

impl DstReg {
    /// Decodes a 5-bit destination field.
    pub fn from_field(field: u32) -> DstReg {
        let field = field & 0x1F;
        if field < 0x10 {
            DstReg::Output(field as u8)
        } else {
            DstReg::Temp((field - 0x10) as u8)
        }
    }

    /// The raw field value that names this register.
    pub fn field(self) -> u32 {
        match self {
            DstReg::Output(n) => n as u32,
            DstReg::Temp(n) => 0x10 + n as u32,
        }
    }
}

impl fmt::Display for DstReg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DstReg::Output(n) => write!(f, "o{n}"),
            DstReg::Temp(n) => write!(f, "r{n}"),
        }
    }
}

/// Which address register (if any) offsets a source operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum AddrIndex {
    /// No relative addressing.
    #[default]
    None,
    /// `a0.x`.
    A0X,
    /// `a0.y`.
    A0Y,
    /// `aL`, the loop counter.
    AL,
}

impl AddrIndex {
    /// Decodes the 2-bit IDX field.
    pub fn from_field(field: u32) -> AddrIndex {
        match field & 3 {
            0 => AddrIndex::None,
            1 => AddrIndex::A0X,
            2 => AddrIndex::A0Y,
            _ => AddrIndex::AL,
        }
    }

    /// The raw 2-bit field value.
    pub fn field(self) -> u32 {
        match self {
            AddrIndex::None => 0,
            AddrIndex::A0X => 1,
            AddrIndex::A0Y => 2,
            AddrIndex::AL => 3,
        }
    }

    /// Assembler spelling (`a0.x`, `a0.y`, `aL`); empty for [`AddrIndex::None`].
    pub fn name(self) -> &'static str {
        match self {
            AddrIndex::None => "",
            AddrIndex::A0X => "a0.x",
            AddrIndex::A0Y => "a0.y",
            AddrIndex::AL => "aL",
        }
    }
}

/// A source operand: a register plus the address register that offsets it.
///
/// Only float constants honour the index; on `v`/`r` registers it is ignored
/// (spec, "Relative addressing"), but it is kept so that disassembly is faithful.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Source {
    /// The register named by the field.
    pub reg: SrcReg,
    /// The relative-address index applied to it.
    pub index: AddrIndex,
}

impl Source {
    /// A source without relative addressing.
    pub fn direct(reg: SrcReg) -> Source {
        Source {
            reg,
            index: AddrIndex::None,
        }
    }
}

impl From<SrcReg> for Source {
    fn from(reg: SrcReg) -> Source {
        Source::direct(reg)
    }
}
