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
mod listing;
mod syntax;

#[cfg(test)]
mod tests;

pub use error::{AsmError, AsmErrorKind, AsmWarning};
pub use float24::picasso_f24;
pub use listing::{ListingError, source_listing};

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
///
/// ```
/// use pica_jit::asm::{assemble, SourceFile};
/// let vertex = SourceFile::new("v.pica", ".out p position\n.proc main\n  mov p, v0\n  end\n.end\n");
/// let library = SourceFile::new("lib.pica", ".nodvle\n.proc helper\n  nop\n.end\n");
/// let shbin = assemble(&[vertex, library])?;
/// assert_eq!(shbin.dvles.len(), 1);
/// assert_eq!(shbin.dvlp.code.len(), 3); // both files' code, one DVLP
/// # Ok::<(), pica_jit::asm::AsmError>(())
/// ```
pub fn assemble(files: &[SourceFile]) -> Result<Shbin, AsmError> {
    assemble_with_warnings(files).map(|(shbin, _)| shbin)
}

/// [`assemble`], also returning the warnings: constructs picasso accepts
/// whose effect differs from what they seem to say (the bytes are picasso's
/// all the same), in source order.
///
/// ```
/// use pica_jit::asm::{assemble_with_warnings, SourceFile};
/// let src = ".out pos position\n.proc main\n  mov pos, v0\n  end\n.end\n";
/// let (shbin, warnings) = assemble_with_warnings(&[SourceFile::new("v.pica", src)])?;
/// assert!(warnings.is_empty());
/// assert_eq!(shbin.dvles.len(), 1);
/// # Ok::<(), pica_jit::asm::AsmError>(())
/// ```
pub fn assemble_with_warnings(files: &[SourceFile]) -> Result<(Shbin, Vec<AsmWarning>), AsmError> {
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

/// The robustness check shared by the `asm` fuzz target and its replay
/// tests: `data` is split at NUL bytes into up to 8 source files (read as
/// lossy UTF-8) and assembled. An error must carry a 1-based position and
/// render; a success must validate, write a SHBIN that loads back, and load
/// as a [`Program`](crate::Program).
///
/// Panics (the fuzzer's signal) when one of those properties fails.
#[doc(hidden)]
pub fn check_arbitrary_source(data: &[u8]) {
    let files: Vec<SourceFile> = data
        .split(|&b| b == 0)
        .take(8)
        .enumerate()
        .map(|(i, part)| SourceFile::new(format!("f{i}.pica"), String::from_utf8_lossy(part)))
        .collect();
    match assemble(&files) {
        Ok(shbin) => {
            if let Err(e) = shbin.validate() {
                panic!("assembled SHBIN does not validate: {e}");
            }
            let bytes = shbin.to_bytes();
            match Shbin::parse(&bytes) {
                Ok(again) => assert_eq!(again.dvlp.code, shbin.dvlp.code),
                Err(e) => panic!("assembled SHBIN does not load: {e}"),
            }
            if let Err(e) =
                crate::Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone())
            {
                panic!("assembled code is not a valid program: {e}");
            }
        }
        Err(e) => {
            assert!(e.line >= 1 && e.column >= 1, "position of {e:?}");
            assert!(files.iter().any(|f| f.name == e.file), "file of {e:?}");
            let _ = e.to_string();
        }
    }
}
