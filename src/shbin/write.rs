//! The SHBIN writer ([`Shbin::to_bytes`]) and [`Shbin::validate`].

use super::error::{EntryField, ShbinError};
use super::float24::f32_to_f24;
use super::layout::{
    DVLB_MAGIC, DVLE_HEADER_LEN, DVLE_MAGIC, DVLP_HEADER_LEN, DVLP_MAGIC, reference_limit,
};
use super::symbols::{append_symbol, find_symbol};
use super::types::{ConstantValue, Dvle, Shbin};
use crate::isa::{MAX_CODE_WORDS, MAX_DESCRIPTORS};

/// The part of a uniform name the writer can store: up to the first NUL.
fn storable_name(name: &str) -> &[u8] {
    let bytes = name.as_bytes();
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    &bytes[..end]
}

/// A length or offset as the `u32` the format stores (saturating; only
/// reachable with tables of 4 GiB and more, which [`Shbin::validate`] would
/// reject as exceeding the format's limits long before).
fn len32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The symbol table the writer emits for `dvle` and each uniform's name offset.
fn symbols_for(dvle: &Dvle) -> (Vec<u8>, Vec<u32>) {
    let mut symbols = dvle.symbols.clone();
    let offsets = dvle
        .uniforms
        .iter()
        .map(|u| {
            let name = storable_name(&u.name);
            find_symbol(&symbols, name).unwrap_or_else(|| append_symbol(&mut symbols, name))
        })
        .collect();
    (symbols, offsets)
}

struct Out(Vec<u8>);

impl Out {
    fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn usize(&mut self, v: usize) {
        self.u32(len32(v));
    }
    fn align4(&mut self) {
        while !self.0.len().is_multiple_of(4) {
            self.0.push(0);
        }
    }
    fn patch_u32(&mut self, at: usize, v: u32) {
        if let Some(slot) = self.0.get_mut(at..at + 4) {
            slot.copy_from_slice(&v.to_le_bytes());
        }
    }
}

impl Shbin {
    /// Writes the file.
    ///
    /// The layout is the one current picasso produces, whatever the version
    /// fields say (versions 0 and 0x1002 share header and table formats):
    /// `DVLB` header and DVLE offset table; `DVLP` with a 0x28-byte header,
    /// the code at +0x28 and the descriptor table after it (each entry the
    /// descriptor and its extra word, `0` where `descriptor_extras` is
    /// short), +0x18 pointing just past the descriptors and +0x1C..+0x28
    /// zero; then each DVLE: its 0x40-byte header followed by the constant,
    /// label, output and uniform tables and the symbol table, padded with
    /// zeros to a multiple of 4 bytes. All offsets are 4-byte aligned and the
    /// file length is a multiple of 4.
    ///
    /// Float constants are encoded with [`f32_to_f24`] (so values decoded
    /// from float24 are written back bit-exactly; NaNs become `0x7FC000`
    /// with their sign). Bool constants are written as the word 0 or 1, int
    /// constants as their four bytes, both zero-padded to 16 bytes.
    ///
    /// A DVLE's symbol table is [`Dvle::symbols`] verbatim; a uniform's name
    /// offset is the first place its name occurs there NUL-terminated, and
    /// names that do not occur are appended (so use [`Dvle::add_uniform`], or
    /// keep names in `symbols`, if you need `parse(to_bytes(x)) == x`). A name
    /// is stored only up to its first NUL.
    ///
    /// This never fails; if [`validate`](Self::validate) returns `Ok`, the
    /// result is accepted by [`parse`](Self::parse).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Out(Vec::new());
        let n = self.dvles.len();
        out.0.extend_from_slice(DVLB_MAGIC);
        out.usize(n);
        let offsets_at = out.0.len();
        for _ in 0..n {
            out.u32(0);
        }

        let dvlp = &self.dvlp;
        let code_off = DVLP_HEADER_LEN;
        let desc_off = code_off.saturating_add(dvlp.code.len().saturating_mul(4));
        let dvlp_end = desc_off.saturating_add(dvlp.descriptors.len().saturating_mul(8));
        out.0.extend_from_slice(DVLP_MAGIC);
        out.u32(dvlp.version);
        out.usize(code_off);
        out.usize(dvlp.code.len());
        out.usize(desc_off);
        out.usize(dvlp.descriptors.len());
        out.usize(dvlp_end); // "filename symbol table": empty, right after the descriptors
        for _ in 0..3 {
            out.u32(0);
        }
        for &word in &dvlp.code {
            out.u32(word);
        }
        for (i, &desc) in dvlp.descriptors.iter().enumerate() {
            out.u32(desc);
            out.u32(dvlp.descriptor_extras.get(i).copied().unwrap_or(0));
        }

        for (i, dvle) in self.dvles.iter().enumerate() {
            out.align4();
            let start = out.0.len();
            out.patch_u32(offsets_at + 4 * i, len32(start));
            write_dvle(&mut out, dvle);
        }
        out.align4();
        out.0
    }

    /// Checks that [`to_bytes`](Self::to_bytes) will write a file that
    /// [`parse`](Self::parse) accepts and that keeps every field: code at
    /// most [`MAX_CODE_WORDS`] words, at most [`MAX_DESCRIPTORS`]
    /// descriptors, as many descriptor extras as descriptors, every DVLE's
    /// `main < code words` and `end <= code words`, no NUL in uniform
    /// names, and no excessive sharing of names (see
    /// [`ShbinError::ExcessiveReferences`]).
    ///
    /// `parse(&x.to_bytes()) == x` then holds as well, provided every float
    /// constant is a non-NaN float24 value and every uniform name occurs in
    /// its DVLE's `symbols` (always true for parsed values).
    pub fn validate(&self) -> Result<(), ShbinError> {
        let dvlp_at = self.dvles.len().saturating_mul(4).saturating_add(8);
        let dvlp = &self.dvlp;
        if dvlp.code.len() > MAX_CODE_WORDS {
            return Err(ShbinError::TooMuchCode {
                offset: dvlp_at,
                words: dvlp.code.len() as u64,
                max: MAX_CODE_WORDS,
            });
        }
        if dvlp.descriptors.len() > MAX_DESCRIPTORS {
            return Err(ShbinError::TooManyDescriptors {
                offset: dvlp_at,
                count: dvlp.descriptors.len() as u64,
                max: MAX_DESCRIPTORS,
            });
        }
        if dvlp.descriptors.len() != dvlp.descriptor_extras.len() {
            return Err(ShbinError::DescriptorExtrasMismatch {
                descriptors: dvlp.descriptors.len(),
                extras: dvlp.descriptor_extras.len(),
            });
        }
        let code_words = dvlp.code.len();
        // What the parser will charge against its reference limit.
        let mut referenced =
            (dvlp_at + DVLP_HEADER_LEN + 4 * code_words) as u64 + 8 * dvlp.descriptors.len() as u64;
        for (i, dvle) in self.dvles.iter().enumerate() {
            if dvle.main as usize >= code_words {
                return Err(ShbinError::EntryOutOfRange {
                    dvle: i,
                    field: EntryField::Main,
                    value: dvle.main,
                    code_words,
                });
            }
            if dvle.end as usize > code_words {
                return Err(ShbinError::EntryOutOfRange {
                    dvle: i,
                    field: EntryField::End,
                    value: dvle.end,
                    code_words,
                });
            }
            if let Some(index) = dvle.uniforms.iter().position(|u| u.name.contains('\0')) {
                return Err(ShbinError::NameContainsNul {
                    dvle: i,
                    index,
                    name: dvle.uniforms[index].name.clone(),
                });
            }
            let (symbols, _) = symbols_for(dvle);
            let names: u64 = dvle.uniforms.iter().map(|u| u.name.len() as u64).sum();
            referenced += DVLE_HEADER_LEN as u64
                + 20 * dvle.constants.len() as u64
                + 16 * dvle.labels.len() as u64
                + 8 * dvle.outputs.len() as u64
                + 8 * dvle.uniforms.len() as u64
                + symbols.len() as u64
                + names;
        }
        let file_len = self.to_bytes().len();
        let limit = reference_limit(file_len);
        if referenced > limit {
            return Err(ShbinError::ExcessiveReferences {
                referenced,
                limit,
                file_len,
            });
        }
        Ok(())
    }
}

fn write_dvle(out: &mut Out, dvle: &Dvle) {
    let (symbols, name_offsets) = symbols_for(dvle);
    let tables = [
        (dvle.constants.len(), 20),
        (dvle.labels.len(), 16),
        (dvle.outputs.len(), 8),
        (dvle.uniforms.len(), 8),
        (symbols.len(), 1),
    ];

    out.0.extend_from_slice(DVLE_MAGIC);
    out.u16(dvle.version);
    out.0.push(dvle.kind.raw());
    out.0.push(dvle.merge_flag);
    out.u32(dvle.main);
    out.u32(dvle.end);
    out.u16(dvle.input_mask);
    out.u16(dvle.output_mask);
    out.0.extend_from_slice(&dvle.gs_mode);
    let mut offset = DVLE_HEADER_LEN;
    for (count, entry_size) in tables {
        out.usize(offset);
        out.usize(count);
        offset = offset.saturating_add(count.saturating_mul(entry_size));
    }

    for c in &dvle.constants {
        let (kind, data) = match c.value {
            ConstantValue::Bool(b) => (0u16, [u32::from(b), 0, 0, 0]),
            ConstantValue::Int(v) => (1, [u32::from_le_bytes(v), 0, 0, 0]),
            ConstantValue::Float(v) => (2, v.map(f32_to_f24)),
        };
        out.u16(kind);
        out.u16(c.register);
        for word in data {
            out.u32(word);
        }
    }
    for label in &dvle.labels {
        out.0.extend_from_slice(&label.raw);
    }
    for o in &dvle.outputs {
        out.u16(o.semantic);
        out.u16(o.register);
        out.u16(o.mask);
        out.u16(0);
    }
    for (u, &name_offset) in dvle.uniforms.iter().zip(&name_offsets) {
        out.u32(name_offset);
        out.u16(u.first);
        out.u16(u.last);
    }
    out.0.extend_from_slice(&symbols);
}
