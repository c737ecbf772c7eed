//! How an invocation is configured: entry point, unit kind, precision, budget.

use crate::arith::Precision;
use crate::program::ShaderKind;

/// Default execution budget: instructions one invocation may execute.
///
/// Real shaders execute at most a few thousand instructions per invocation; 2^20
/// stops a runaway program in well under a second on every engine.
pub const DEFAULT_BUDGET: u64 = 1 << 20;

/// How to run a program: where it starts, what unit runs it, arithmetic and budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ShaderConfig {
    /// Address of the first instruction.
    pub entry: u32,
    /// Vertex or geometry unit.
    pub kind: ShaderKind,
    /// Arithmetic precision.
    pub precision: Precision,
    /// Most instructions one invocation may execute.
    pub budget: u64,
}

impl Default for ShaderConfig {
    fn default() -> Self {
        ShaderConfig {
            entry: 0,
            kind: ShaderKind::Vertex,
            precision: Precision::default(),
            budget: DEFAULT_BUDGET,
        }
    }
}
