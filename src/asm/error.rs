//! Assembler errors: where (file, line, column) and what was expected.

use thiserror::Error;

/// An assembly error at a position in a source file.
///
/// Lines and columns are 1-based; the column is the byte column of the token
/// that could not be used (1 when the error concerns a whole line or file).
///
/// ```
/// use pica_jit::asm::{assemble_str};
/// let err = assemble_str("bad.pica", ".proc main\n  mov r0, q7\n.end\n").unwrap_err();
/// assert_eq!((err.line, err.column), (2, 11));
/// assert!(err.to_string().starts_with("bad.pica:2:11: error: "));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{file}:{line}:{column}: error: {kind}")]
pub struct AsmError {
    /// The source file's name as given to the assembler.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based byte column.
    pub column: usize,
    /// What went wrong.
    pub kind: AsmErrorKind,
}

/// Something picasso accepts and assembles, but that does not do what it
/// seems to say (e.g. an output register read as a source). The bytes are
/// picasso's either way; the warning says what the hardware will do.
///
/// ```
/// use pica_jit::asm::{assemble_with_warnings, SourceFile};
/// let src = ".out pos position\n.proc main\n  mov r0, pos\n  end\n.end\n";
/// let (_, warnings) = assemble_with_warnings(&[SourceFile::new("w.pica", src)])?;
/// assert_eq!((warnings[0].line, warnings[0].column), (3, 11));
/// assert!(warnings[0].to_string().starts_with("w.pica:3:11: warning: "));
/// # Ok::<(), pica_jit::asm::AsmError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{file}:{line}:{column}: warning: {message}")]
pub struct AsmWarning {
    /// The source file's name as given to the assembler.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based byte column.
    pub column: usize,
    /// What picasso does with it, and what the hardware will do.
    pub message: String,
}

/// What went wrong while assembling.
///
/// ```
/// use pica_jit::asm::{assemble_str, AsmErrorKind};
/// let err = assemble_str("t.pica", ".proc main\n  add r0, c1, c2\n.end\n").unwrap_err();
/// assert!(matches!(err.kind, AsmErrorKind::Encoding(_)));
/// assert_eq!(err.line, 2);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AsmErrorKind {
    /// A token did not have the expected form.
    #[error("expected {expected}, found `{found}`")]
    Expected {
        /// What the assembler wanted here.
        expected: String,
        /// What it found.
        found: String,
    },
    /// An operand is missing.
    #[error("missing operand: `{mnemonic}` expects {expected}")]
    MissingOperand {
        /// The instruction or directive.
        mnemonic: String,
        /// Its operands.
        expected: String,
    },
    /// More operands than the instruction takes.
    #[error("too many operands: `{mnemonic}` expects {expected}")]
    TooManyOperands {
        /// The instruction or directive.
        mnemonic: String,
        /// Its operands.
        expected: String,
    },
    /// Not an instruction mnemonic.
    #[error("unknown instruction `{0}` (expected a PICA200 mnemonic such as mov, dp4, ifc, end)")]
    UnknownInstruction(String),
    /// Not a directive.
    #[error("unknown directive `{0}` (expected .proc, .end, .alias, .fvec, .constf, .out, …)")]
    UnknownDirective(String),
    /// A name is used but never defined.
    #[error(
        "`{0}` is not defined (expected a register, an alias, a uniform, a constant or a label)"
    )]
    Undefined(String),
    /// A name is defined twice.
    #[error("`{0}` is already defined")]
    Redefined(String),
    /// A register number or register kind does not fit where it is used.
    #[error("invalid register: {0}")]
    InvalidRegister(String),
    /// An instruction outside `.proc … .end`.
    #[error("instruction outside of a procedure (expected `.proc NAME` before it)")]
    OutsideProc,
    /// `.else`/`.end` without an open block, or an open block at the end of the file.
    #[error("{0}")]
    Block(String),
    /// A register file has no room left.
    #[error("out of {0} registers")]
    OutOfRegisters(&'static str),
    /// More than 128 operand descriptors (or more than 32 reachable by `mad`).
    #[error("too many operand descriptors (the DVLP holds at most {0})")]
    TooManyDescriptors(usize),
    /// More than 4096 instruction words.
    #[error("program too long: at most 4096 instruction words")]
    TooMuchCode,
    /// The entry point's procedure does not exist.
    #[error("entry point `{0}` is undefined (expected `.proc {0}` in this file)")]
    EntryUndefined(String),
    /// The entry point's procedure has no instructions.
    #[error("entry point `{0}` has no instructions (expected at least `end`)")]
    EntryEmpty(String),
    /// No input file yields a shader.
    #[error(
        "no DVLE can be generated from the given input file(s): each has no instructions or says `.nodvle`"
    )]
    NoDvle,
    /// An instruction that has no encoding (for example two constant sources).
    #[error("cannot encode: {0}")]
    Encoding(String),
}
