//! The error type of the SHBIN loader (and of [`Shbin::validate`](super::Shbin::validate)).

use std::fmt;

/// A block of the container, named in error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Block {
    /// The `DVLB` file header and its DVLE offset table.
    Dvlb,
    /// The `DVLP` block (shared code and operand descriptors).
    Dvlp,
    /// The DVLE with this index (0-based, in DVLB offset-table order).
    Dvle(usize),
}

impl fmt::Display for Block {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Block::Dvlb => f.write_str("DVLB"),
            Block::Dvlp => f.write_str("DVLP"),
            Block::Dvle(i) => write!(f, "DVLE #{i}"),
        }
    }
}

/// A table of the container, named in error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Table {
    /// DVLP: the shader code blob (4-byte words).
    Code,
    /// DVLP: the operand descriptor table (8-byte entries).
    OperandDescriptors,
    /// DVLE: the constant table (20-byte entries).
    Constants,
    /// DVLE: the label table (16-byte entries).
    Labels,
    /// DVLE: the output register table (8-byte entries).
    Outputs,
    /// DVLE: the uniform table (8-byte entries).
    Uniforms,
    /// DVLE: the symbol (name string) table (bytes).
    Symbols,
}

impl Table {
    /// Size in bytes of one entry of this table.
    pub const fn entry_size(self) -> usize {
        match self {
            Table::Code => 4,
            Table::OperandDescriptors => 8,
            Table::Constants => 20,
            Table::Labels => 16,
            Table::Outputs | Table::Uniforms => 8,
            Table::Symbols => 1,
        }
    }
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Table::Code => "code blob",
            Table::OperandDescriptors => "operand descriptor table",
            Table::Constants => "constant table",
            Table::Labels => "label table",
            Table::Outputs => "output table",
            Table::Uniforms => "uniform table",
            Table::Symbols => "symbol table",
        })
    }
}

/// Which code offset of a DVLE header an [`ShbinError::EntryOutOfRange`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryField {
    /// The entry point (`main`), DVLE header +0x08; must be `< code words`.
    Main,
    /// The end of `main`, DVLE header +0x0C; must be `<= code words`.
    End,
}

impl fmt::Display for EntryField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EntryField::Main => "main offset (+0x08) must be less than the code length",
            EntryField::End => "end offset (+0x0C) must not exceed the code length",
        })
    }
}

/// Everything that can be wrong with a SHBIN file.
///
/// Byte offsets in messages are absolute (from the start of the file) unless
/// they are called *relative*; DVLE indices are 0-based.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShbinError {
    /// A block does not start with its magic bytes.
    #[error(
        "{block} at byte offset {offset:#x} has bad magic: expected \"{expected}\", found \"{}\"",
        .found.escape_ascii()
    )]
    BadMagic {
        /// The block whose magic is wrong.
        block: Block,
        /// Where the magic was read.
        offset: usize,
        /// The magic that should be there (`DVLB`, `DVLP` or `DVLE`).
        expected: &'static str,
        /// The four bytes found instead.
        found: [u8; 4],
    },

    /// A fixed-size header runs past the end of the file.
    #[error(
        "file is truncated: the {block} header needs {needed} bytes at byte offset {offset:#x}, \
         but the file is only {file_len} bytes long"
    )]
    Truncated {
        /// The block whose header is cut off.
        block: Block,
        /// Where the header starts.
        offset: usize,
        /// How many bytes the header (or the part checked so far) needs.
        needed: usize,
        /// The length of the file.
        file_len: usize,
    },

    /// The DVLB header's DVLE count does not fit in the file.
    #[error(
        "DVLB header claims {count} DVLEs, whose offset table would need {needed} bytes at byte \
         offset 0x8, but the file is only {file_len} bytes long"
    )]
    DvleCount {
        /// The count read from DVLB +0x04.
        count: u32,
        /// Bytes the offset table would need (`4 × count`).
        needed: u64,
        /// The length of the file.
        file_len: usize,
    },

    /// An entry of the DVLB offset table points at or past the end of the file.
    #[error(
        "DVLE #{index}: its offset {offset:#x} (DVLB offset table entry at byte offset {entry_at:#x}) \
         points past the end of the file ({file_len} bytes)"
    )]
    DvleOffsetOutOfRange {
        /// Index of the DVLE.
        index: usize,
        /// The offset found.
        offset: u32,
        /// Where in the file that offset is stored.
        entry_at: usize,
        /// The length of the file.
        file_len: usize,
    },

    /// A table's (offset, count) pair describes bytes outside the file.
    #[error(
        "{block} {table} does not fit in the file: {count} entries of {} bytes at relative \
         offset {offset:#x} (byte offset {start:#x}) would end at byte offset {end:#x}, but the \
         file is only {file_len} bytes long",
        .table.entry_size()
    )]
    TableOutOfRange {
        /// The block that owns the table.
        block: Block,
        /// The table.
        table: Table,
        /// The offset as stored (relative to the block start).
        offset: u32,
        /// The entry count (bytes for the symbol table) as stored.
        count: u32,
        /// Absolute start of the table.
        start: u64,
        /// Absolute end (exclusive) the table would have.
        end: u64,
        /// The length of the file.
        file_len: usize,
    },

    /// The DVLP declares more code than the PICA200 can address.
    #[error(
        "DVLP at byte offset {offset:#x} declares {words} code words; at most {max} are allowed"
    )]
    TooMuchCode {
        /// Where the DVLP starts.
        offset: usize,
        /// The word count read from DVLP +0x0C.
        words: u64,
        /// [`MAX_CODE_WORDS`](crate::isa::MAX_CODE_WORDS).
        max: usize,
    },

    /// The DVLP declares more operand descriptors than instructions can index.
    #[error(
        "DVLP at byte offset {offset:#x} declares {count} operand descriptors; at most {max} are \
         allowed"
    )]
    TooManyDescriptors {
        /// Where the DVLP starts.
        offset: usize,
        /// The descriptor count read from DVLP +0x14.
        count: u64,
        /// [`MAX_DESCRIPTORS`](crate::isa::MAX_DESCRIPTORS).
        max: usize,
    },

    /// A DVLE's `main` or `end` offset lies outside the shared code blob.
    #[error("DVLE #{dvle}: {field}; found {value} but the code blob has {code_words} words")]
    EntryOutOfRange {
        /// Index of the DVLE.
        dvle: usize,
        /// Which offset.
        field: EntryField,
        /// The offset found (in words).
        value: u32,
        /// The number of code words in the DVLP.
        code_words: usize,
    },

    /// A DVLE's shader type byte (+0x06) is neither 0 (vertex) nor 1 (geometry).
    #[error(
        "DVLE #{dvle} at byte offset {offset:#x} has unknown shader type {found} (byte +0x06); \
         expected 0 (vertex) or 1 (geometry)"
    )]
    UnknownShaderType {
        /// Index of the DVLE.
        dvle: usize,
        /// Where the DVLE starts.
        offset: usize,
        /// The type byte found.
        found: u8,
    },

    /// A constant table entry has a type other than 0 (bool), 1 (int), 2 (float24).
    #[error(
        "DVLE #{dvle} constant table entry {index} (byte offset {offset:#x}) has unknown type \
         {found}; expected 0 (bool), 1 (int) or 2 (float24)"
    )]
    UnknownConstantType {
        /// Index of the DVLE.
        dvle: usize,
        /// Index of the entry in the constant table.
        index: usize,
        /// Where the entry starts.
        offset: usize,
        /// The type found.
        found: u16,
    },

    /// A uniform's name offset lies outside the DVLE's symbol table.
    #[error(
        "DVLE #{dvle} uniform table entry {index}: name offset {symbol_offset:#x} is outside the \
         {table_size}-byte symbol table"
    )]
    SymbolOutOfRange {
        /// Index of the DVLE.
        dvle: usize,
        /// Index of the entry in the uniform table.
        index: usize,
        /// The name offset found (relative to the symbol table).
        symbol_offset: u32,
        /// Size of the symbol table.
        table_size: usize,
    },

    /// A uniform's name runs to the end of the symbol table without a NUL.
    #[error(
        "DVLE #{dvle} uniform table entry {index}: the name at symbol offset {symbol_offset:#x} \
         has no NUL terminator before the end of the {table_size}-byte symbol table"
    )]
    UnterminatedSymbol {
        /// Index of the DVLE.
        dvle: usize,
        /// Index of the entry in the uniform table.
        index: usize,
        /// The name offset (relative to the symbol table).
        symbol_offset: u32,
        /// Size of the symbol table.
        table_size: usize,
    },

    /// A uniform's name is not valid UTF-8 (names are decoded strictly).
    #[error(
        "DVLE #{dvle} uniform table entry {index}: the name at symbol offset {symbol_offset:#x} is \
         not valid UTF-8 (bad byte {valid_up_to} bytes into the name)"
    )]
    InvalidSymbolName {
        /// Index of the DVLE.
        dvle: usize,
        /// Index of the entry in the uniform table.
        index: usize,
        /// The name offset (relative to the symbol table).
        symbol_offset: u32,
        /// Length of the valid UTF-8 prefix of the name.
        valid_up_to: usize,
    },

    /// The headers, tables and names the file references add up to far more
    /// than the file itself: DVLEs or entries point at the same bytes over
    /// and over. Rejected to bound memory use on hostile input.
    #[error(
        "the file's headers, tables and uniform names add up to {referenced} bytes, more than the \
         limit of {limit} bytes (4 × the {file_len}-byte file + 4096): its DVLEs or table entries \
         reference the same bytes over and over"
    )]
    ExcessiveReferences {
        /// Bytes referenced when the limit was crossed.
        referenced: u64,
        /// The limit.
        limit: u64,
        /// The length of the file (for [`Shbin::validate`](super::Shbin::validate):
        /// of the file [`Shbin::to_bytes`](super::Shbin::to_bytes) would write).
        file_len: usize,
    },

    /// ([`Shbin::validate`](super::Shbin::validate) only) `descriptors` and
    /// `descriptor_extras` differ in length.
    #[error(
        "DVLP has {descriptors} operand descriptors but {extras} descriptor extra words; both \
         lists must have the same length"
    )]
    DescriptorExtrasMismatch {
        /// `descriptors.len()`.
        descriptors: usize,
        /// `descriptor_extras.len()`.
        extras: usize,
    },

    /// ([`Shbin::validate`](super::Shbin::validate) only) a uniform name
    /// contains a NUL byte, so it cannot be stored in a symbol table.
    #[error("DVLE #{dvle} uniform entry {index}: the name {name:?} contains a NUL byte")]
    NameContainsNul {
        /// Index of the DVLE.
        dvle: usize,
        /// Index of the uniform.
        index: usize,
        /// The offending name.
        name: String,
    },
}

impl ShbinError {
    /// `true` for the errors that mean "the file ends too early" (a header
    /// or table runs past its end), as opposed to inconsistent contents.
    pub fn is_truncation(&self) -> bool {
        matches!(
            self,
            ShbinError::Truncated { .. }
                | ShbinError::DvleCount { .. }
                | ShbinError::DvleOffsetOutOfRange { .. }
                | ShbinError::TableOutOfRange { .. }
        )
    }
}
