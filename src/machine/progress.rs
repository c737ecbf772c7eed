//! Resumable execution progress: where an invocation is and what it has used.
//! Engines hand an invocation over to each other through it (the JIT continues in
//! the interpreter when the budget cannot cover a block).

use super::flow::FlowState;

/// The `setemit` parameters the next `emit` uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EmitConfig {
    /// Vertex slot.
    pub vertex_id: u8,
    /// Emit a primitive too.
    pub primitive: bool,
    /// Winding flag.
    pub winding: bool,
}

/// Resumable execution progress: where the invocation is and what it has used.
#[derive(Clone, Copy, Debug, Default)]
pub struct Progress {
    /// The program counter and the control-flow stacks.
    pub flow: FlowState,
    /// The `setemit` state.
    pub emit: EmitConfig,
    /// Instructions executed so far (counted against the budget).
    pub executed: u64,
}
