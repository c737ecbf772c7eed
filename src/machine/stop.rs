//! Why an invocation stopped, and the coarse status the CLI reports.

/// Why an invocation stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stop {
    /// An `end` instruction ran.
    End,
    /// The program counter left the program (treated as `end`).
    EndOfCode,
    /// The budget ran out before the program ended.
    BudgetExceeded,
    /// A `break` ran with an empty LOOP stack; the hardware hangs forever there.
    BreakOutsideLoop,
}

/// The coarse outcome of an invocation, as the CLI reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RunStatus {
    /// The program finished.
    Ok,
    /// The program would not have finished within the budget.
    BudgetExceeded,
}

impl Stop {
    /// `Ok` for a finished program; a hang counts as an exceeded budget.
    pub fn status(self) -> RunStatus {
        match self {
            Stop::End | Stop::EndOfCode => RunStatus::Ok,
            Stop::BudgetExceeded | Stop::BreakOutsideLoop => RunStatus::BudgetExceeded,
        }
    }

    /// Stable snake_case name (`end`, `end_of_code`, `budget`, `break_outside_loop`).
    pub fn name(self) -> &'static str {
        match self {
            Stop::End => "end",
            Stop::EndOfCode => "end_of_code",
            Stop::BudgetExceeded => "budget",
            Stop::BreakOutsideLoop => "break_outside_loop",
        }
    }
}

impl RunStatus {
    /// Stable snake_case name (`ok`, `budget_exceeded`).
    pub fn name(self) -> &'static str {
        match self {
            RunStatus::Ok => "ok",
            RunStatus::BudgetExceeded => "budget_exceeded",
        }
    }
}
