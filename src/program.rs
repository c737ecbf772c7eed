//! A shader program: code words, their decoded form and the operand descriptors.

use crate::isa::{self, Instruction, MAX_CODE_WORDS, MAX_DESCRIPTORS, OperandDescriptor, SrcReg};
use thiserror::Error;

/// Which kind of shader unit runs a program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ShaderKind {
    /// Vertex shader: `emit`/`setemit` are no-ops.
    #[default]
    Vertex,
    /// Geometry shader: `emit` delivers vertices to the caller's sink.
    Geometry,
}

impl ShaderKind {
    /// The kind stored as DVLE type byte `raw` (0 or 1), `None` for anything else.
    pub const fn from_raw(raw: u8) -> Option<Self> {
        match raw {
            0 => Some(ShaderKind::Vertex),
            1 => Some(ShaderKind::Geometry),
            _ => None,
        }
    }

    /// The DVLE type byte this kind is stored as.
    pub const fn raw(self) -> u8 {
        match self {
            ShaderKind::Vertex => 0,
            ShaderKind::Geometry => 1,
        }
    }
}

/// Why a program cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ProgramError {
    /// More code than the 12-bit program counter can address.
    #[error("program has {words} code words; the limit is {MAX_CODE_WORDS}")]
    TooMuchCode {
        /// Words supplied.
        words: usize,
    },
    /// More operand descriptors than the 7-bit descriptor field can address.
    #[error("program has {count} operand descriptors; the limit is {MAX_DESCRIPTORS}")]
    TooManyDescriptors {
        /// Descriptors supplied.
        count: usize,
    },
}

/// A loaded shader program, shared by every entry point and engine that runs it.
///
/// Descriptors that the program does not supply read as the word `0` (empty write
/// mask, `.xxxx` selectors): the hardware's descriptor memory always has 128 entries.
///
/// ```
/// use pica_jit::isa::{encode, Instruction};
/// use pica_jit::Program;
/// let code = vec![encode(&Instruction::End).unwrap()];
/// let program = Program::new(code, vec![]).unwrap();
/// assert_eq!(program.instructions(), &[Instruction::End]);
/// assert!(Program::new(vec![0; 5000], vec![]).is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    code: Vec<u32>,
    instructions: Vec<Instruction>,
    descriptors: Vec<OperandDescriptor>,
    supplied_descriptors: usize,
    /// Bit `n`: some instruction reads `v{n}`.
    inputs_read: u16,
    /// Bit `n`: some instruction reads `r{n}`.
    temps_read: u16,
}

impl Program {
    /// Builds a program from code words and operand descriptor words.
    pub fn new(code: Vec<u32>, descriptors: Vec<u32>) -> Result<Program, ProgramError> {
        if code.len() > MAX_CODE_WORDS {
            return Err(ProgramError::TooMuchCode { words: code.len() });
        }
        if descriptors.len() > MAX_DESCRIPTORS {
            return Err(ProgramError::TooManyDescriptors {
                count: descriptors.len(),
            });
        }
        let instructions: Vec<Instruction> = code.iter().map(|&w| isa::decode(w)).collect();
        let (mut inputs_read, mut temps_read) = (0u16, 0u16);
        for source in instructions.iter().flat_map(Instruction::sources) {
            match source.reg {
                SrcReg::Input(n) => inputs_read |= 1 << (n & 15),
                SrcReg::Temp(n) => temps_read |= 1 << (n & 15),
                SrcReg::Const(_) => {}
            }
        }
        let supplied_descriptors = descriptors.len();
        let mut table: Vec<OperandDescriptor> =
            descriptors.into_iter().map(OperandDescriptor).collect();
        table.resize(MAX_DESCRIPTORS, OperandDescriptor(0));
        Ok(Program {
            code,
            instructions,
            descriptors: table,
            supplied_descriptors,
            inputs_read,
            temps_read,
        })
    }

    /// The input registers some instruction reads: bit `n` for `v{n}`.
    pub fn inputs_read(&self) -> u16 {
        self.inputs_read
    }

    /// The temporaries some instruction reads: bit `n` for `r{n}`. In F24 exactly
    /// these are converted to float24 when an invocation starts
    /// (`docs/semantics.md`, "F24 entry conversion").
    ///
    /// ```
    /// use pica_jit::isa::{encode, BinaryOp, DstReg, Instruction, Source, SrcReg};
    /// use pica_jit::Program;
    /// let add = Instruction::Binary {
    ///     op: BinaryOp::Add, inverted: false, dst: DstReg::Temp(0),
    ///     src1: Source::direct(SrcReg::Temp(3)), src2: Source::direct(SrcReg::Input(1)), desc: 0,
    /// };
    /// let program = Program::new(vec![encode(&add).unwrap()], vec![0]).unwrap();
    /// assert_eq!(program.temps_read(), 1 << 3);
    /// assert_eq!(program.inputs_read(), 1 << 1);
    /// ```
    pub fn temps_read(&self) -> u16 {
        self.temps_read
    }

    /// The raw code words.
    pub fn code(&self) -> &[u32] {
        &self.code
    }

    /// The decoded instructions, one per code word.
    pub fn instructions(&self) -> &[Instruction] {
        &self.instructions
    }

    /// The operand descriptor at `index` (0 when not supplied).
    pub fn descriptor(&self, index: u8) -> OperandDescriptor {
        self.descriptors[index as usize & (MAX_DESCRIPTORS - 1)]
    }

    /// The descriptor words the program supplied (without the zero padding).
    pub fn descriptor_words(&self) -> Vec<u32> {
        self.descriptors[..self.supplied_descriptors]
            .iter()
            .map(|d| d.0)
            .collect()
    }

    /// Number of code words.
    pub fn len(&self) -> usize {
        self.code.len()
    }

    /// Whether the program has no code.
    pub fn is_empty(&self) -> bool {
        self.code.is_empty()
    }
}
