//! pica-jit: PICA200 shader recompiler.
pub mod arith;
mod describe;
mod engine;
pub mod interp;
pub mod isa;
mod program;
pub mod shbin;
mod state;

pub use arith::{Precision, Vec4};
pub use describe::describe_shbin;
pub use engine::{EngineError, EngineKind, RunStatus, Shader, ShaderConfig, Stop, DEFAULT_BUDGET};
pub use program::{Program, ProgramError, ShaderKind};
pub use state::{EmitSink, EmittedVertex, UnitState, Uniforms};

/// The embedded default shader (SHBIN bytes): a transform + Blinn-Phong lighting
/// vertex shader, assembled from `assets/default_shader.pica`.
pub const DEFAULT_SHADER: &[u8] = include_bytes!("../assets/default_shader.shbin");
