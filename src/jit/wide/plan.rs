//! What the batch path moves between vertex states and the wide register
//! file, decided once per compiled program.

use super::lanes::RowSet;

/// The registers a batch of independent states moves into the wide register
/// file: only what some path may read before writing it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct StatePlan {
    /// Inputs the program reads (bit `n`: `v{n}`).
    pub inputs: u16,
    /// Temporaries some block reads before writing (whole registers).
    pub temps: u16,
    /// Outputs some block reads before writing.
    pub outputs: u16,
    /// Whether some block reads `a0`, `aL` or `cmp` before writing it.
    pub small: bool,
}

/// A batch kernel: one native function that loads a whole group of states
/// (`load`), runs `blocks` one after another (the program's only path from
/// its entry point: each block falls through to the next, the last ends the
/// invocation) and stores the rows they wrote (`store`) back. It replaces the
/// driver's per-block calls and the transposition loops for the commonest
/// shaders: straight-line code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct KernelPlan {
    /// Indices of the IR blocks, in order.
    pub blocks: Vec<usize>,
    /// What goes in.
    pub load: StatePlan,
    /// The rows that come out (every row the blocks write).
    pub store: RowSet,
    /// Instructions one invocation executes (the budget it needs).
    pub instructions: u64,
    /// F24: the temporaries converted as the invocation starts (loaded,
    /// converted in place, and stored back unless every component is
    /// written), so the caller does no entry conversion.
    pub convert_temps: u16,
}
