//! The SHBIN loader: bytes → [`Shbin`].
//!
//! Every offset and count is checked before it is used, with checked (or
//! 64-bit) arithmetic; nothing is allocated from a count that has not been
//! checked against the bytes actually present, and the total amount of data
//! the file makes us decode is capped (see [`ShbinError::ExcessiveReferences`]).

use super::error::{Block, EntryField, ShbinError, Table};
use super::float24::f24_to_f32;
use super::layout::{
    DVLB_MAGIC, DVLE_HEADER_LEN, DVLE_MAGIC, DVLP_HEADER_LEN, DVLP_MAGIC, reference_limit,
};
use super::types::{
    ConstantEntry, ConstantValue, Dvle, Dvlp, LabelEntry, OutputEntry, ShaderKind, Shbin,
    UniformEntry,
};
use crate::isa::{MAX_CODE_WORDS, MAX_DESCRIPTORS};

/// Little-endian `u16` at `at`; callers have checked the range (0 otherwise).
fn rd16(b: &[u8], at: usize) -> u16 {
    b.get(at..)
        .and_then(|s| s.first_chunk::<2>())
        .map_or(0, |c| u16::from_le_bytes(*c))
}

/// Little-endian `u32` at `at`; callers have checked the range (0 otherwise).
fn rd32(b: &[u8], at: usize) -> u32 {
    b.get(at..)
        .and_then(|s| s.first_chunk::<4>())
        .map_or(0, |c| u32::from_le_bytes(*c))
}

fn magic_at(b: &[u8], at: usize) -> [u8; 4] {
    b.get(at..)
        .and_then(|s| s.first_chunk::<4>())
        .copied()
        .unwrap_or_default()
}

struct Reader<'a> {
    bytes: &'a [u8],
    referenced: u64,
    limit: u64,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Reader {
            bytes,
            referenced: 0,
            limit: reference_limit(bytes.len()),
        }
    }

    fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Accounts for `n` more decoded bytes, failing past the limit.
    fn charge(&mut self, n: u64) -> Result<(), ShbinError> {
        self.referenced = self.referenced.saturating_add(n);
        if self.referenced > self.limit {
            return Err(ShbinError::ExcessiveReferences {
                referenced: self.referenced,
                limit: self.limit,
                file_len: self.len(),
            });
        }
        Ok(())
    }

    /// The `len`-byte header of `block` at `offset`, after checking its magic.
    fn header(
        &mut self,
        block: Block,
        offset: usize,
        len: usize,
        magic: &'static [u8; 4],
    ) -> Result<&'a [u8], ShbinError> {
        let truncated = |needed| ShbinError::Truncated {
            block,
            offset,
            needed,
            file_len: self.bytes.len(),
        };
        let available = self.bytes.get(offset..).unwrap_or_default();
        if available.len() < 4 {
            return Err(truncated(len));
        }
        let found = magic_at(available, 0);
        if &found != magic {
            return Err(ShbinError::BadMagic {
                block,
                offset,
                // The magics are ASCII; this never falls back.
                expected: std::str::from_utf8(magic).unwrap_or("?"),
                found,
            });
        }
        let header = available.get(..len).ok_or_else(|| truncated(len))?;
        self.charge(len as u64)?;
        Ok(header)
    }

    /// The bytes of a table of `count` entries at `offset` relative to
    /// `base`. Empty tables are not range-checked: nothing is read from them.
    fn table(
        &mut self,
        block: Block,
        base: usize,
        table: Table,
        offset: u32,
        count: u32,
    ) -> Result<&'a [u8], ShbinError> {
        if count == 0 {
            return Ok(&[]);
        }
        let start = (base as u64).saturating_add(u64::from(offset));
        let byte_len = u64::from(count).saturating_mul(table.entry_size() as u64);
        let end = start.saturating_add(byte_len);
        let slice = usize::try_from(start)
            .ok()
            .zip(usize::try_from(end).ok())
            .and_then(|(s, e)| self.bytes.get(s..e));
        let Some(slice) = slice else {
            return Err(ShbinError::TableOutOfRange {
                block,
                table,
                offset,
                count,
                start,
                end,
                file_len: self.len(),
            });
        };
        self.charge(byte_len)?;
        Ok(slice)
    }
}

impl Shbin {
    /// Parses a SHBIN (DVLB) file.
    ///
    /// Accepts everything seen in the wild: DVLE version 0 and 0x1002, files
    /// that are not padded to a multiple of 4 bytes (the last table may end
    /// exactly at the end of the file), label tables, descriptor extra words
    /// of `0x0000000F`, tables in any order or position. Bytes no header
    /// points at (padding, trailing data) are ignored.
    ///
    /// Fails with a [`ShbinError`] naming the block, table and byte offset
    /// when a magic is wrong, a header or table runs past the end of the
    /// file, the code exceeds [`MAX_CODE_WORDS`] words or the descriptor
    /// table [`MAX_DESCRIPTORS`] entries, a DVLE's `main` is not inside the
    /// code (`main < code words`, `end <= code words`), a DVLE's shader type
    /// or a constant's type is unknown, or a uniform name is out of range,
    /// unterminated or not UTF-8. Never panics and never allocates more than a
    /// small multiple of `bytes.len()`.
    ///
    /// # Examples
    ///
    /// ```
    /// use pica_jit::shbin::{ShbinError, Shbin};
    ///
    /// assert!(matches!(
    ///     Shbin::parse(b"DVLB\xff\xff\xff\xff"),
    ///     Err(ShbinError::DvleCount { count: 0xFFFF_FFFF, .. })
    /// ));
    /// ```
    pub fn parse(bytes: &[u8]) -> Result<Shbin, ShbinError> {
        let mut r = Reader::new(bytes);

        // DVLB header: magic, DVLE count, DVLE offsets.
        r.header(Block::Dvlb, 0, 8, DVLB_MAGIC)?;
        let count = rd32(bytes, 4);
        let table_len = u64::from(count) * 4;
        let dvlp_at = 8u64 + table_len;
        if dvlp_at > bytes.len() as u64 {
            return Err(ShbinError::DvleCount {
                count,
                needed: table_len,
                file_len: bytes.len(),
            });
        }
        // Bounded by the file length just checked.
        let dvlp_at = dvlp_at as usize;
        r.charge(table_len)?;

        let dvlp = parse_dvlp(&mut r, dvlp_at)?;

        let mut dvles = Vec::new();
        for index in 0..count as usize {
            let entry_at = 8 + 4 * index;
            let offset = rd32(bytes, entry_at);
            let start = usize::try_from(offset).ok().filter(|&o| o < bytes.len());
            let Some(start) = start else {
                return Err(ShbinError::DvleOffsetOutOfRange {
                    index,
                    offset,
                    entry_at,
                    file_len: bytes.len(),
                });
            };
            dvles.push(parse_dvle(&mut r, index, start, dvlp.code.len())?);
        }
        Ok(Shbin { dvlp, dvles })
    }
}

fn parse_dvlp(r: &mut Reader<'_>, at: usize) -> Result<Dvlp, ShbinError> {
    let h = r.header(Block::Dvlp, at, DVLP_HEADER_LEN, DVLP_MAGIC)?;
    let version = rd32(h, 0x04);
    let code_offset = rd32(h, 0x08);
    let code_words = rd32(h, 0x0C);
    let desc_offset = rd32(h, 0x10);
    let desc_count = rd32(h, 0x14);
    if code_words as usize > MAX_CODE_WORDS {
        return Err(ShbinError::TooMuchCode {
            offset: at,
            words: code_words.into(),
            max: MAX_CODE_WORDS,
        });
    }
    if desc_count as usize > MAX_DESCRIPTORS {
        return Err(ShbinError::TooManyDescriptors {
            offset: at,
            count: desc_count.into(),
            max: MAX_DESCRIPTORS,
        });
    }
    let code_bytes = r.table(Block::Dvlp, at, Table::Code, code_offset, code_words)?;
    let desc_bytes = r.table(
        Block::Dvlp,
        at,
        Table::OperandDescriptors,
        desc_offset,
        desc_count,
    )?;
    let code = code_bytes.chunks_exact(4).map(|w| rd32(w, 0)).collect();
    let descriptors = desc_bytes.chunks_exact(8).map(|e| rd32(e, 0)).collect();
    let descriptor_extras = desc_bytes.chunks_exact(8).map(|e| rd32(e, 4)).collect();
    Ok(Dvlp {
        version,
        code,
        descriptors,
        descriptor_extras,
    })
}

fn parse_dvle(
    r: &mut Reader<'_>,
    dvle: usize,
    at: usize,
    code_words: usize,
) -> Result<Dvle, ShbinError> {
    let block = Block::Dvle(dvle);
    let h = r.header(block, at, DVLE_HEADER_LEN, DVLE_MAGIC)?;
    let raw_kind = h.get(0x06).copied().unwrap_or_default();
    let kind = ShaderKind::from_raw(raw_kind).ok_or(ShbinError::UnknownShaderType {
        dvle,
        offset: at,
        found: raw_kind,
    })?;
    let main = rd32(h, 0x08);
    let end = rd32(h, 0x0C);
    let out_of_range = |field, value| ShbinError::EntryOutOfRange {
        dvle,
        field,
        value,
        code_words,
    };
    if main as usize >= code_words {
        return Err(out_of_range(EntryField::Main, main));
    }
    if end as usize > code_words {
        return Err(out_of_range(EntryField::End, end));
    }

    let mut table = |table, field_at| {
        let offset = rd32(h, field_at);
        let count = rd32(h, field_at + 4);
        r.table(block, at, table, offset, count)
    };
    let const_bytes = table(Table::Constants, 0x18)?;
    let label_bytes = table(Table::Labels, 0x20)?;
    let output_bytes = table(Table::Outputs, 0x28)?;
    let uniform_bytes = table(Table::Uniforms, 0x30)?;
    let symbols = table(Table::Symbols, 0x38)?.to_vec();

    let const_table_at = at.saturating_add(rd32(h, 0x18) as usize);
    let constants = const_bytes
        .chunks_exact(20)
        .enumerate()
        .map(|(index, e)| {
            parse_constant(e).ok_or_else(|| ShbinError::UnknownConstantType {
                dvle,
                index,
                offset: const_table_at.saturating_add(index * 20),
                found: rd16(e, 0),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;

    let labels = label_bytes
        .chunks_exact(16)
        .map(|e| LabelEntry {
            raw: e.first_chunk::<16>().copied().unwrap_or_default(),
        })
        .collect();

    let outputs = output_bytes
        .chunks_exact(8)
        .map(|e| OutputEntry {
            semantic: rd16(e, 0),
            register: rd16(e, 2),
            mask: rd16(e, 4),
        })
        .collect();

    let mut uniforms = Vec::with_capacity(uniform_bytes.len() / 8);
    for (index, e) in uniform_bytes.chunks_exact(8).enumerate() {
        let symbol_offset = rd32(e, 0);
        let name = read_name(&symbols, dvle, index, symbol_offset)?;
        r.charge(name.len() as u64)?;
        uniforms.push(UniformEntry {
            name: name.to_owned(),
            first: rd16(e, 4),
            last: rd16(e, 6),
        });
    }

    Ok(Dvle {
        version: rd16(h, 0x04),
        kind,
        merge_flag: h.get(0x07).copied().unwrap_or_default(),
        main,
        end,
        input_mask: rd16(h, 0x10),
        output_mask: rd16(h, 0x12),
        gs_mode: h
            .get(0x14..)
            .and_then(|s| s.first_chunk::<4>())
            .copied()
            .unwrap_or_default(),
        constants,
        labels,
        outputs,
        uniforms,
        symbols,
    })
}

/// Decodes one 20-byte constant entry; `None` for an unknown type.
fn parse_constant(e: &[u8]) -> Option<ConstantEntry> {
    let register = rd16(e, 2);
    let value = match rd16(e, 0) {
        0 => ConstantValue::Bool(rd32(e, 4) != 0),
        1 => ConstantValue::Int(magic_at(e, 4)),
        2 => ConstantValue::Float([
            f24_to_f32(rd32(e, 4)),
            f24_to_f32(rd32(e, 8)),
            f24_to_f32(rd32(e, 12)),
            f24_to_f32(rd32(e, 16)),
        ]),
        _ => return None,
    };
    Some(ConstantEntry { register, value })
}

/// The NUL-terminated, strictly UTF-8 name at `symbol_offset`.
fn read_name(
    symbols: &[u8],
    dvle: usize,
    index: usize,
    symbol_offset: u32,
) -> Result<&str, ShbinError> {
    let table_size = symbols.len();
    let rest = usize::try_from(symbol_offset)
        .ok()
        .and_then(|o| symbols.get(o..))
        .filter(|rest| !rest.is_empty())
        .ok_or(ShbinError::SymbolOutOfRange {
            dvle,
            index,
            symbol_offset,
            table_size,
        })?;
    let len = rest
        .iter()
        .position(|&b| b == 0)
        .ok_or(ShbinError::UnterminatedSymbol {
            dvle,
            index,
            symbol_offset,
            table_size,
        })?;
    let raw = rest.get(..len).unwrap_or_default();
    std::str::from_utf8(raw).map_err(|e| ShbinError::InvalidSymbolName {
        dvle,
        index,
        symbol_offset,
        valid_up_to: e.valid_up_to(),
    })
}
