//! The in-memory model of a SHBIN file.

/// A whole SHBIN file: one `DVLP` (code shared by all shaders) and the
/// `DVLE`s (shader entry points and their metadata), in file order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Shbin {
    /// The shared program.
    pub dvlp: Dvlp,
    /// The shaders, in DVLB offset-table order.
    pub dvles: Vec<Dvle>,
}

/// The `DVLP` block: the code blob and the operand descriptor table that
/// every DVLE of the file shares.
///
/// DVLP header fields past +0x18 (a "filename symbol table" offset followed
/// by words that are zero in every known file) are not kept; the writer
/// regenerates them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Dvlp {
    /// DVLP +0x04, kept as read (0 in every known file).
    pub version: u32,
    /// Instruction words (at most [`MAX_CODE_WORDS`](crate::isa::MAX_CODE_WORDS)).
    pub code: Vec<u32>,
    /// Operand descriptors: the low word of each 8-byte table entry (at most
    /// [`MAX_DESCRIPTORS`](crate::isa::MAX_DESCRIPTORS)).
    pub descriptors: Vec<u32>,
    /// The high word of each descriptor entry, kept as read (`0` from current
    /// picasso, `0x0000000F` from older assemblers). Same length as
    /// `descriptors`.
    pub descriptor_extras: Vec<u32>,
}

/// Shader stage of a DVLE (header byte +0x06); the crate-wide [`crate::ShaderKind`].
pub use crate::program::ShaderKind;

/// One `DVLE` block: a shader entry point into the shared code plus its
/// constants, outputs, uniforms and names.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Dvle {
    /// DVLE +0x04: `0` from older assemblers, `0x1002` from current picasso.
    pub version: u16,
    /// DVLE +0x06.
    pub kind: ShaderKind,
    /// DVLE +0x07: picasso's "merge output maps" flag for geometry shaders.
    pub merge_flag: u8,
    /// DVLE +0x08: entry point, in words from the start of the code.
    pub main: u32,
    /// DVLE +0x0C: end of `main`, in words.
    pub end: u32,
    /// DVLE +0x10: input register mask.
    pub input_mask: u16,
    /// DVLE +0x12: output register mask.
    pub output_mask: u16,
    /// DVLE +0x14..=+0x17: geometry-shader mode bytes (mode, first float
    /// register, fully-defined vertex count, variable vertex count), raw.
    pub gs_mode: [u8; 4],
    /// Constant register values to load before running.
    pub constants: Vec<ConstantEntry>,
    /// Code labels, raw.
    pub labels: Vec<LabelEntry>,
    /// Output register semantics.
    pub outputs: Vec<OutputEntry>,
    /// Named uniforms (register ranges).
    pub uniforms: Vec<UniformEntry>,
    /// The symbol table, raw: NUL-terminated names referenced by `labels`
    /// and `uniforms`.
    pub symbols: Vec<u8>,
}

impl Dvle {
    /// Name of an output semantic type, as picasso spells it.
    ///
    /// `0` position, `1` normalquat, `2` color, `3` texcoord0, `4` texcoord0w,
    /// `5` texcoord1, `6` texcoord2, `7` unused, `8` view; anything else is
    /// `"unknown"`.
    ///
    /// ```
    /// use pica_jit::shbin::Dvle;
    /// assert_eq!(Dvle::semantic_name(0), "position");
    /// assert_eq!(Dvle::semantic_name(8), "view");
    /// assert_eq!(Dvle::semantic_name(42), "unknown");
    /// ```
    pub const fn semantic_name(semantic: u16) -> &'static str {
        match semantic {
            0 => "position",
            1 => "normalquat",
            2 => "color",
            3 => "texcoord0",
            4 => "texcoord0w",
            5 => "texcoord1",
            6 => "texcoord2",
            7 => "unused",
            8 => "view",
            _ => "unknown",
        }
    }

    /// The NUL-terminated UTF-8 name at `offset` in [`symbols`](Self::symbols),
    /// or `None` if the offset is out of range, the name is unterminated or it
    /// is not UTF-8.
    pub fn symbol(&self, offset: u32) -> Option<&str> {
        let rest = self.symbols.get(usize::try_from(offset).ok()?..)?;
        let len = rest.iter().position(|&b| b == 0)?;
        std::str::from_utf8(&rest[..len]).ok()
    }

    /// The name of `label` (looked up with [`symbol`](Self::symbol)).
    pub fn label_name(&self, label: &LabelEntry) -> Option<&str> {
        self.symbol(label.symbol_offset())
    }

    /// Adds a uniform named `name` covering raw registers `first..=last`
    /// (see [`UniformRegister`]), appending the name to
    /// [`symbols`](Self::symbols) unless it is already there. Keeping names in
    /// the symbol table is what makes `Shbin::parse(&s.to_bytes()) == s` hold.
    pub fn add_uniform(&mut self, name: &str, first: u16, last: u16) {
        if super::symbols::find_symbol(&self.symbols, name.as_bytes()).is_none() {
            super::symbols::append_symbol(&mut self.symbols, name.as_bytes());
        }
        self.uniforms.push(UniformEntry {
            name: name.to_owned(),
            first,
            last,
        });
    }
}

/// A constant value from the DVLE constant table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ConstantValue {
    /// Type 0: a boolean register; true when the first data word is nonzero.
    Bool(bool),
    /// Type 1: an integer register's x, y, z, w bytes (the first four data bytes).
    Int([u8; 4]),
    /// Type 2: a float register; the four float24 words decoded exactly
    /// (see [`f24_to_f32`](super::f24_to_f32)).
    Float([f32; 4]),
}

/// One constant table entry (20 bytes in the file).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConstantEntry {
    /// Register index within its file (`b0–b15`, `i0–i3` or `c0–c95`,
    /// chosen by the value's type), as stored; not range-checked.
    pub register: u16,
    /// The value.
    pub value: ConstantValue,
}

/// One label table entry (16 bytes), kept raw.
///
/// On every known file the layout is: `u16` label id, 2 zero bytes, `u32`
/// location in words, `u32` unknown (0), `u32` name offset into the DVLE
/// symbol table; the accessors read those fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct LabelEntry {
    /// The 16 bytes as stored.
    pub raw: [u8; 16],
}

impl LabelEntry {
    fn word(&self, i: usize) -> u32 {
        let b = &self.raw[i * 4..i * 4 + 4];
        u32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }

    /// Label id (bytes 0–1).
    pub fn id(&self) -> u16 {
        u16::from_le_bytes([self.raw[0], self.raw[1]])
    }

    /// Location in words from the start of the code (bytes 4–7).
    pub fn location(&self) -> u32 {
        self.word(1)
    }

    /// The unknown word at bytes 8–11 (0 in every known file).
    pub fn unknown(&self) -> u32 {
        self.word(2)
    }

    /// Offset of the label's name in the DVLE symbol table (bytes 12–15);
    /// see [`Dvle::label_name`].
    pub fn symbol_offset(&self) -> u32 {
        self.word(3)
    }
}

/// One output table entry (8 bytes; the final `u16` is padding, written as 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct OutputEntry {
    /// Semantic type (see [`Dvle::semantic_name`]).
    pub semantic: u16,
    /// Output register index (`o0`–`o15`).
    pub register: u16,
    /// Component mask (bit 0 = x … bit 3 = w).
    pub mask: u16,
}

impl OutputEntry {
    /// [`Dvle::semantic_name`] of this entry's semantic.
    pub const fn semantic_name(&self) -> &'static str {
        Dvle::semantic_name(self.semantic)
    }
}

/// A register named by a uniform table entry, decoded from the raw numbering.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UniformRegister {
    /// `0x00–0x0F`: input register `v0–v15` (picasso emits these for named inputs).
    Input(u8),
    /// `0x10–0x6F`: float constant register `c0–c95`.
    Float(u8),
    /// `0x70–0x73`: integer register `i0–i3`.
    Int(u8),
    /// `0x78–0x87`: boolean register `b0–b15`.
    Bool(u8),
}

impl UniformRegister {
    /// Decodes a raw uniform register number; `None` for the unused ranges
    /// `0x74–0x77` and `0x88` and above.
    ///
    /// ```
    /// use pica_jit::shbin::UniformRegister;
    /// assert_eq!(UniformRegister::from_raw(0x13), Some(UniformRegister::Float(3)));
    /// assert_eq!(UniformRegister::from_raw(0x78), Some(UniformRegister::Bool(0)));
    /// assert_eq!(UniformRegister::from_raw(0x88), None);
    /// ```
    pub const fn from_raw(raw: u16) -> Option<Self> {
        // Every arm's value is < 0x60, so the `as u8` casts are lossless.
        match raw {
            0x00..=0x0F => Some(UniformRegister::Input(raw as u8)),
            0x10..=0x6F => Some(UniformRegister::Float((raw - 0x10) as u8)),
            0x70..=0x73 => Some(UniformRegister::Int((raw - 0x70) as u8)),
            0x78..=0x87 => Some(UniformRegister::Bool((raw - 0x78) as u8)),
            _ => None,
        }
    }

    /// The raw number of this register (inverse of [`from_raw`](Self::from_raw)
    /// for in-range indices).
    pub const fn raw(self) -> u16 {
        match self {
            UniformRegister::Input(i) => i as u16,
            UniformRegister::Float(i) => 0x10 + i as u16,
            UniformRegister::Int(i) => 0x70 + i as u16,
            UniformRegister::Bool(i) => 0x78 + i as u16,
        }
    }
}

/// One uniform table entry: a name and an inclusive raw register range.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct UniformEntry {
    /// The name, read from the DVLE symbol table.
    pub name: String,
    /// First register, raw numbering (see [`UniformRegister`]).
    pub first: u16,
    /// Last register (inclusive), raw numbering.
    pub last: u16,
}

impl UniformEntry {
    /// The first register, decoded; `None` if the raw number is in no known range.
    pub const fn first_register(&self) -> Option<UniformRegister> {
        UniformRegister::from_raw(self.first)
    }

    /// The last register, decoded; `None` if the raw number is in no known range.
    pub const fn last_register(&self) -> Option<UniformRegister> {
        UniformRegister::from_raw(self.last)
    }
}
