//! The labels of the code a compiled x86-64 function shares between its
//! instructions: dispatch, exits, the flow stubs and constants.
//!
//! They are dynasm's dynamic labels (an index into a table) rather than named
//! labels (`->name`, `name:`), which dynasm hashes by name at every
//! definition and reference: with a reference or two per instruction, the
//! named labels were a noticeable part of compiling a short shader.

use super::Asm;
use dynasmrt::DynamicLabel;

/// The shared labels of one compiled function.
#[derive(Clone, Copy, Debug)]
pub(super) struct Labels {
    /// `eax` = a PC below the program's length: jump to its code.
    pub dispatch: DynamicLabel,
    /// `eax` = a helper's result: a PC or a stop code.
    pub after_helper: DynamicLabel,
    /// Leave: execution ran off the end of the code.
    pub past_end: DynamicLabel,
    /// Leave with the stop code `eax - STOP_BASE`.
    pub stop: DynamicLabel,
    /// `eax` = a PC without compiled entry: the interpreter continues there.
    pub resume: DynamicLabel,
    /// Leave with the exit code in `eax`.
    pub epilogue: DynamicLabel,
    /// The dispatch table.
    pub table: DynamicLabel,
    /// The frame's `progress` initialiser (called).
    pub init_progress: DynamicLabel,
    /// The flow stubs the after-instruction checks jump to.
    pub slow_check: DynamicLabel,
    pub loop_match: DynamicLabel,
    pub if_match: DynamicLabel,
    pub call_match: DynamicLabel,
    /// The call into Rust (`rax` = the helper, `ecx` = its PC argument).
    pub call_rust: DynamicLabel,
    /// The constant `(1, 1, 1, 1)` (a relative constant read beyond `c95`).
    pub ones: DynamicLabel,
}

impl Labels {
    /// Fresh labels in `ops`, each to be bound once.
    pub fn new(ops: &mut Asm) -> Labels {
        let mut label = || ops.new_dynamic_label();
        Labels {
            dispatch: label(),
            after_helper: label(),
            past_end: label(),
            stop: label(),
            resume: label(),
            epilogue: label(),
            table: label(),
            init_progress: label(),
            slow_check: label(),
            loop_match: label(),
            if_match: label(),
            call_match: label(),
            call_rust: label(),
            ones: label(),
        }
    }
}
