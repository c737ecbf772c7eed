//! A shader program: code words, their decoded form and the operand descriptors.

use crate::isa::{
    self, AddrIndex, DstReg, FLOAT_UNIFORM_COUNT, Instruction, MAX_CODE_WORDS, MAX_DESCRIPTORS,
    OperandDescriptor, SrcReg, UnaryOp,
};
use thiserror::Error;

/// Every float uniform `c0`–`c95`, as a [`Program::float_uniforms_read`] set.
const ALL_FLOAT_UNIFORMS: u128 = (1 << FLOAT_UNIFORM_COUNT) - 1;

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
    /// Bit `n`: some instruction may read `c{n}`.
    float_uniforms_read: u128,
    /// Per address: the temporaries an invocation starting there may read
    /// before writing them (see [`Program::temps_converted_on_entry`]).
    temps_read_first: Vec<u16>,
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
        let mut float_uniforms_read = 0u128;
        for source in instructions.iter().flat_map(Instruction::sources) {
            match source.reg {
                SrcReg::Input(n) => inputs_read |= 1 << (n & 15),
                SrcReg::Temp(n) => temps_read |= 1 << (n & 15),
                // A relatively addressed read may reach any of them.
                SrcReg::Const(_) if source.index != AddrIndex::None => {
                    float_uniforms_read = ALL_FLOAT_UNIFORMS
                }
                SrcReg::Const(n) => float_uniforms_read |= 1 << (n as usize % FLOAT_UNIFORM_COUNT),
            }
        }
        let supplied_descriptors = descriptors.len();
        let mut table: Vec<OperandDescriptor> =
            descriptors.into_iter().map(OperandDescriptor).collect();
        table.resize(MAX_DESCRIPTORS, OperandDescriptor(0));
        let temps_read_first = temps_read_first(&instructions, &table, temps_read);
        Ok(Program {
            code,
            instructions,
            descriptors: table,
            supplied_descriptors,
            inputs_read,
            temps_read,
            float_uniforms_read,
            temps_read_first,
        })
    }

    /// The temporaries an F24 invocation starting at `entry` converts to
    /// float24 as it starts (`docs/semantics.md`, "F24 entry conversion"):
    /// those it may read before writing all four of their components. A
    /// temporary that every path overwrites before any read keeps its bits
    /// until then, which no instruction can observe; converting it would only
    /// cost time. Bit `n` for `r{n}`; always a subset of
    /// [`temps_read`](Program::temps_read).
    ///
    /// ```
    /// use pica_jit::isa::{encode, BinaryOp, DstReg, Instruction, OperandDescriptor, Source,
    ///     SrcReg, Swizzle, WriteMask};
    /// use pica_jit::Program;
    /// let add = |dst, a| Instruction::Binary {
    ///     op: BinaryOp::Add, inverted: false, dst,
    ///     src1: Source::direct(a), src2: Source::direct(SrcReg::Input(0)), desc: 0,
    /// };
    /// let code = [
    ///     add(DstReg::Temp(0), SrcReg::Input(0)), // r0 = v0 + v0 (r0 written first)
    ///     add(DstReg::Temp(1), SrcReg::Temp(0)),  // r1 = r0 + v0
    ///     add(DstReg::Output(0), SrcReg::Temp(2)), // o0 = r2 + v0 (r2 read first)
    ///     Instruction::End,
    /// ];
    /// let full = OperandDescriptor::new(WriteMask::ALL, [(false, Swizzle::IDENTITY); 3]).0;
    /// let program = Program::new(code.map(|i| encode(&i).unwrap()).to_vec(), vec![full]).unwrap();
    /// assert_eq!(program.temps_read(), 0b101);
    /// assert_eq!(program.temps_converted_on_entry(0), 0b100);
    /// assert_eq!(program.temps_converted_on_entry(1), 0b101);
    /// ```
    pub fn temps_converted_on_entry(&self, entry: u32) -> u16 {
        self.temps_read_first
            .get(entry as usize)
            .copied()
            .unwrap_or(0)
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

    /// The float uniforms some instruction may read: bit `n` for `c{n}`; all
    /// of them (`c0`–`c95`) when some instruction reads one relative to an
    /// address register. Their values are the only float uniforms a result
    /// can depend on.
    ///
    /// ```
    /// use pica_jit::isa::{encode, AddrIndex, BinaryOp, DstReg, Instruction, Source, SrcReg};
    /// use pica_jit::Program;
    /// let add = |src1: Source| Instruction::Binary {
    ///     op: BinaryOp::Add, inverted: false, dst: DstReg::Temp(0),
    ///     src1, src2: Source::direct(SrcReg::Input(0)), desc: 0,
    /// };
    /// let code = [SrcReg::Const(4), SrcReg::Const(95)]
    ///     .map(|c| encode(&add(Source::direct(c))).unwrap());
    /// let program = Program::new(code.to_vec(), vec![0]).unwrap();
    /// assert_eq!(program.float_uniforms_read(), 1 << 4 | 1 << 95);
    /// let relative = add(Source { reg: SrcReg::Const(4), index: AddrIndex::A0X });
    /// let program = Program::new(vec![encode(&relative).unwrap()], vec![0]).unwrap();
    /// assert_eq!(program.float_uniforms_read(), (1 << 96) - 1);
    /// ```
    pub fn float_uniforms_read(&self) -> u128 {
        self.float_uniforms_read
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

/// Per address `pc`: the temporaries an invocation starting at `pc` may read
/// before writing all of their components (bit `n` for `r{n}`).
///
/// A backward pass over fall-through: an invocation starts with empty
/// control-flow stacks, so until its first flow instruction it runs straight
/// down the code, and no stack can pop there. Past a flow instruction anything
/// may run, so every temporary some instruction reads counts; past `end`
/// nothing does. Reads count all four components (a conservative choice that
/// keeps swizzles out of it); writes count the components of their mask.
fn temps_read_first(
    instructions: &[Instruction],
    descriptors: &[OperandDescriptor],
    temps_read: u16,
) -> Vec<u16> {
    let spread = |temps: u16| -> u64 {
        (0..16)
            .filter(|n| temps >> n & 1 != 0)
            .fold(0u64, |acc, n| acc | 0xF << (4 * n))
    };
    let anything = spread(temps_read);
    let mut first = vec![0u16; instructions.len()];
    // Components read before written from the next address on; running off
    // the end of the code stops the invocation.
    let mut after: u64 = 0;
    for (pc, instr) in instructions.iter().enumerate().rev() {
        let mut reads = 0u16;
        for source in instr.sources() {
            if let SrcReg::Temp(n) = source.reg {
                reads |= 1 << (n & 15);
            }
        }
        let written = |dst: DstReg, desc: u8| -> u64 {
            match dst {
                DstReg::Temp(n) => {
                    let mask = descriptors[desc as usize & (MAX_DESCRIPTORS - 1)].mask();
                    u64::from(mask.0 & 0xF) << (4 * (n as u64 & 15))
                }
                DstReg::Output(_) => 0,
            }
        };
        let needed = match *instr {
            Instruction::End => 0,
            Instruction::Nop => after,
            Instruction::Cmp { .. } => spread(reads) | after,
            Instruction::Unary {
                op: UnaryOp::Mova, ..
            } => spread(reads) | after,
            Instruction::Binary { dst, desc, .. }
            | Instruction::Unary { dst, desc, .. }
            | Instruction::Mad { dst, desc, .. } => spread(reads) | (after & !written(dst, desc)),
            _ => anything,
        };
        first[pc] = (0..16)
            .filter(|n| needed >> (4 * n) & 0xF != 0)
            .fold(0u16, |acc, n| acc | 1 << n);
        after = needed;
    }
    first
}
