//! SHBIN (`DVLB`/`DVLP`/`DVLE`) shader container: loader, writer and float24
//! conversions.
//!
//! A SHBIN file holds one `DVLP` — the code blob and operand descriptor
//! table, shared — and one or more `DVLE`s, each a shader (vertex or
//! geometry) with an entry point into that code and its constants, output
//! semantics, uniforms and names. [`Shbin::parse`] loads one defensively
//! (every offset and count is checked; any byte string gives `Ok` or a
//! [`ShbinError`], never a panic), [`Shbin::to_bytes`] writes one.
//!
//! Layout (little-endian; DVLP/DVLE offsets are relative to the block start):
//!
//! * `DVLB`: magic, `u32` DVLE count N, N `u32` absolute DVLE offsets; the
//!   `DVLP` follows at `8 + 4N`.
//! * `DVLP` (0x28-byte header): +0x04 version, +0x08 code offset, +0x0C code
//!   words, +0x10 descriptor table offset, +0x14 descriptor count (8-byte
//!   entries: descriptor, extra word).
//! * `DVLE` (0x40-byte header): +0x04 `u16` version, +0x06 type, +0x07 merge
//!   flag, +0x08 main, +0x0C end (words), +0x10/+0x12 input/output masks,
//!   +0x14 geometry mode bytes, then (offset, count) pairs for the constant
//!   (20-byte), label (16), output (8), uniform (8) and symbol (1) tables.
//!
//! See `docs/semantics.md` (section 7, "SHBIN files") for every decision the
//! loader and writer make.
//!
//! # Examples
//!
//! Build a file, write it and load it back:
//!
//! ```
//! use pica_jit::shbin::*;
//!
//! let mut dvle = Dvle {
//!     version: 0x1002,
//!     kind: ShaderKind::Vertex,
//!     end: 2,
//!     constants: vec![ConstantEntry {
//!         register: 95,
//!         value: ConstantValue::Float([0.0, 1.0, -1.0, 0.5]),
//!     }],
//!     outputs: vec![OutputEntry { semantic: 0, register: 0, mask: 0xF }],
//!     ..Dvle::default()
//! };
//! dvle.add_uniform("projection", 0x10, 0x13);
//!
//! let shbin = Shbin {
//!     dvlp: Dvlp {
//!         code: vec![0x8800_0000, 0x8400_0000], // nop; end
//!         descriptors: vec![0x0000_036F],
//!         descriptor_extras: vec![0],
//!         ..Dvlp::default()
//!     },
//!     dvles: vec![dvle],
//! };
//! shbin.validate()?;
//! let bytes = shbin.to_bytes();
//! assert_eq!(&bytes[..4], b"DVLB");
//! assert_eq!(bytes.len() % 4, 0);
//!
//! let loaded = Shbin::parse(&bytes)?;
//! assert_eq!(loaded, shbin);
//! let uniform = &loaded.dvles[0].uniforms[0];
//! assert_eq!(uniform.name, "projection");
//! assert_eq!(uniform.first_register(), Some(UniformRegister::Float(0)));
//! assert_eq!(uniform.last_register(), Some(UniformRegister::Float(3)));
//! assert_eq!(f32_to_f24(0.5), 0x3E_0000);
//! # Ok::<(), ShbinError>(())
//! ```

mod error;
mod float24;
mod layout;
mod read;
mod symbols;
mod types;
mod write;

#[cfg(test)]
mod tests;

pub use error::{Block, EntryField, ShbinError, Table};
pub use float24::{f24_to_f32, f32_to_f24};
pub use types::{
    ConstantEntry, ConstantValue, Dvle, Dvlp, LabelEntry, OutputEntry, ShaderKind, Shbin,
    UniformEntry, UniformRegister,
};
