//! A picasso-compatible PICA200 shader assembler.
//!
//! [`assemble`] turns one or more `.pica` sources into a [`Shbin`] whose
//! bytes ([`Shbin::to_bytes`]) match what the reference assembler picasso
//! writes: the same instruction selection (inverted `…i` forms and operand
//! swaps for constants in the second source), the same operand descriptor
//! sharing, the same padding `nop`s, constants stored with picasso's float24
//! truncation, and the same DVLE tables. Each source file becomes one DVLE
//! (unless it says `.nodvle`); all share one code blob.
//!
//! Errors name the file, line and column and say what was expected; no input
//! makes the assembler panic.
//!
//! # Examples
//!
//! ```
//! use pica_jit::asm::{assemble, SourceFile};
//! let src = "\
//! .fvec projection[4]
//! .out outpos position
//! .alias inpos v0
//! .proc main
//!     dp4 outpos.x, projection[0], inpos
//!     dp4 outpos.y, projection[1], inpos
//!     dp4 outpos.z, projection[2], inpos
//!     dp4 outpos.w, projection[3], inpos
//!     end
//! .end
//! ";
//! let shbin = assemble(&[SourceFile::new("vshader.pica", src)])?;
//! assert_eq!(shbin.dvlp.code.len(), 5);
//! assert_eq!(shbin.dvles[0].uniforms[0].name, "projection");
//! # Ok::<(), pica_jit::asm::AsmError>(())
//! ```

mod assembler;
mod descriptors;
mod error;
mod float24;
mod syntax;

#[cfg(test)]
mod tests;

pub use error::{AsmError, AsmErrorKind};
pub use float24::picasso_f24;

use crate::shbin::Shbin;

/// One source file: its name (used in error messages) and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// Name shown in errors (`name:line:column: error: …`).
    pub name: String,
    /// The source text.
    pub text: String,
}

impl SourceFile {
    /// A source file from a name and its text.
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> SourceFile {
        SourceFile {
            name: name.into(),
            text: text.into(),
        }
    }
}

/// Assembles `files`, in order, into one SHBIN (one DVLE per file that has
/// code and no `.nodvle`).
pub fn assemble(files: &[SourceFile]) -> Result<Shbin, AsmError> {
    assembler::Assembler::new().run(files)
}

/// Assembles one source text.
///
/// ```
/// let shbin = pica_jit::asm::assemble_str("min.pica", ".proc main\n  end\n.end\n")?;
/// assert_eq!(shbin.dvlp.code, vec![0x8800_0000]);
/// # Ok::<(), pica_jit::asm::AsmError>(())
/// ```
pub fn assemble_str(name: &str, text: &str) -> Result<Shbin, AsmError> {
    assemble(&[SourceFile::new(name, text)])
}
