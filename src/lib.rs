//! pica-jit: PICA200 shader recompiler.
pub mod arith;
pub mod isa;
pub mod shbin;
