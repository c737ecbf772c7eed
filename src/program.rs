//! A shader program: code words, their decoded form and the operand descriptors.

use crate::isa::{self, Instruction, MAX_CODE_WORDS, MAX_DESCRIPTORS, OperandDescriptor};
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
        let instructions = code.iter().map(|&w| isa::decode(w)).collect();
        let supplied_descriptors = descriptors.len();
        let mut table: Vec<OperandDescriptor> =
            descriptors.into_iter().map(OperandDescriptor).collect();
        table.resize(MAX_DESCRIPTORS, OperandDescriptor(0));
        Ok(Program {
            code,
            instructions,
            descriptors: table,
            supplied_descriptors,
        })
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
