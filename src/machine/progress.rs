//! Resumable execution progress: where an invocation is and what it has used.
//! Engines hand an invocation over to each other through it (the JIT continues in
//! the interpreter when the budget cannot cover a block).

use super::flow::FlowState;

pub use crate::state::EmitConfig;

/// Resumable execution progress: where the invocation is and what it has used.
/// (The `setemit` parameters are not here: they belong to the geometry unit's
/// emitter and live in [`UnitState::emit`](crate::UnitState::emit).)
#[derive(Clone, Copy, Debug, Default)]
pub struct Progress {
    /// The program counter and the control-flow stacks.
    pub flow: FlowState,
    /// Instructions executed so far (counted against the budget).
    pub executed: u64,
}
