//! pica-jit: PICA200 shader recompiler.
pub mod analysis;
pub mod arith;
mod batch;
mod describe;
mod engine;
pub mod interp;
pub mod isa;
pub mod jit;
mod program;
pub mod shbin;
mod state;
#[cfg(feature = "testgen")]
pub mod testgen;

pub use arith::{Precision, Vec4};
pub use batch::{BatchError, BatchSummary, StatePolicy, VertexRegisters};
pub use describe::describe_shbin;
pub use engine::{DEFAULT_BUDGET, EngineError, EngineKind, RunStatus, Shader, ShaderConfig, Stop};
pub use program::{Program, ProgramError, ShaderKind};
pub use state::{EmitSink, EmittedVertex, Uniforms, UnitState};

/// The embedded default shader (SHBIN bytes): a transform + Blinn-Phong lighting
/// vertex shader, assembled from `assets/default_shader.pica`.
pub const DEFAULT_SHADER: &[u8] = include_bytes!("../assets/default_shader.shbin");
