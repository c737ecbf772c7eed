//! pica-jit recompiles Nintendo 3DS **PICA200 vertex and geometry shaders** to native
//! x86-64 (SSE4.1/AVX) and AArch64 (NEON) code at run time, bit-identical to a
//! hardware-exact reference interpreter that runs everywhere.
//!
//! # Overview
//!
//! - [`shbin::Shbin`] parses compiled shader binaries (DVLB/DVLP/DVLE); [`Program`]
//!   holds the shared code and operand descriptors.
//! - [`Shader`] prepares one entry point ([`ShaderConfig`]: entry, [`ShaderKind`],
//!   [`Precision`], budget) on an engine ([`EngineKind`]): the interpreter, the JIT,
//!   or `Auto` (the JIT where this host has one).
//! - [`Uniforms`] are a draw's constant registers; [`UnitState`] is the unit's
//!   register file. [`Shader::run`] runs one vertex, [`Shader::run_vertices`] a batch
//!   laid out as emulators load vertices ([`StatePolicy`] says whether state carries
//!   over between vertices, as on the hardware). Geometry shaders deliver emitted
//!   vertices to an [`EmitSink`].
//! - [`isa`] decodes, encodes and disassembles instructions; [`interp`] is the oracle.
//!
//! Every engine gives the same bits in every register, the same final state, the
//! same emits and the same [`Stop`] for every program, including irregular control
//! flow; `docs/semantics.md` is the contract. C and C++ callers use the `pica-jit-capi`
//! crate of the repository (`include/pica_jit.h`).
//!
//! # Example
//!
//! Run the embedded default shader (a transform + lighting vertex shader) on three
//! vertices, with the hardware's carried state:
//!
//! ```
//! use std::sync::Arc;
//! use pica_jit::shbin::Shbin;
//! use pica_jit::{EngineKind, Program, Shader, ShaderConfig, StatePolicy, Uniforms, UnitState};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let shbin = Shbin::parse(pica_jit::DEFAULT_SHADER)?;
//! let dvle = &shbin.dvles[0];
//! let program = Arc::new(Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone())?);
//! let config = ShaderConfig { entry: dvle.main, kind: dvle.kind, ..ShaderConfig::default() };
//! let shader = Shader::new(program, config, EngineKind::Auto)?;
//! shader.prepare()?; // compile now (the JIT) rather than at the first run
//!
//! let mut uniforms = Uniforms::default();
//! uniforms.apply_constants(&dvle.constants);
//! for row in 0..4 {
//!     uniforms.f[row] = [0.0; 4];
//!     uniforms.f[row][row] = 2.0; // c0-c3: the transform, here a uniform scale by 2
//! }
//!
//! let mut inputs = vec![[[0.0f32; 4]; 16]; 3];
//! for (n, vertex) in inputs.iter_mut().enumerate() {
//!     vertex[0] = [n as f32, 0.5, -1.0, 1.0]; // v0: position
//! }
//! let mut outputs = vec![[[0.0f32; 4]; 16]; 3];
//! let summary = shader.run_vertices(&uniforms, &inputs, 0b1, &mut outputs, 0xffff,
//!                                   StatePolicy::Carry, &mut UnitState::default(), &mut ())?;
//! assert!(summary.all_finished());
//! assert_eq!(outputs[2][0], [4.0, 1.0, -2.0, 2.0]); // o0 = 2 * v0
//! # Ok(())
//! # }
//! ```
//!
//! # Features
//!
//! - `cli` (default): the `pica-jit` command-line tool. Libraries use
//!   `default-features = false`.
//! - `testgen`: the random program generator (`pica_jit::testgen`) used by the differential
//!   tests and fuzzers.
//!
//! # Hosts
//!
//! The JIT needs executable memory the way `docs/executable-memory.md` describes
//! (Linux, Windows, macOS on x86-64); elsewhere [`EngineKind::available`] lists only
//! the interpreter and `Auto` picks it.
pub mod analysis;
pub mod arith;
pub mod asm;
mod describe;
mod engine;
pub mod interp;
pub mod ir;
pub mod isa;
pub mod jit;
pub mod machine;
mod program;
pub mod shbin;
mod state;
#[cfg(feature = "testgen")]
pub mod testgen;

pub use arith::{Precision, Vec4};
pub use describe::describe_shbin;
pub use engine::{BatchError, BatchSummary, EngineError, EngineKind, Shader, StatePolicy};
pub use machine::{DEFAULT_BUDGET, RunStatus, ShaderConfig, Stop};
pub use program::{Program, ProgramError, ShaderKind};
#[doc(hidden)]
pub use state::uniform_preparations;
pub use state::{
    EmitConfig, EmitSink, EmittedVertex, PreparedUniforms, Uniforms, UnitState, VertexRegisters,
};

/// The embedded default shader (SHBIN bytes): a transform + Blinn-Phong lighting
/// vertex shader, assembled from `assets/default_shader.pica`.
pub const DEFAULT_SHADER: &[u8] = include_bytes!("../assets/default_shader.shbin");

// The README's code blocks (the library snippet above all) compile and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
