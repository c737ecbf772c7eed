//! The enumerations (passed as `uint32_t`) and plain structures of the C API.

use pica_jit::Stop;
use std::ffi::c_void;

/// Engines (`PicaShaderOptions::engine`, `pica_shader_engine`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PicaEngine {
    /// The JIT where the host has one, else the interpreter.
    Auto = 0,
    /// The reference interpreter.
    Interpreter = 1,
    /// The native recompiler (an error where the host has none).
    Jit = 2,
}

/// Arithmetic precision (`PicaShaderOptions::precision`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PicaPrecision {
    /// The hardware's float24 data path.
    F24 = 0,
    /// IEEE binary32 with the PICA rules.
    F32 = 1,
}

/// The unit a DVLE runs on (`PicaEntryInfo::kind`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PicaShaderKind {
    /// Vertex shader.
    Vertex = 0,
    /// Geometry shader (emits through the callback).
    Geometry = 1,
}

/// Where each vertex of a batch starts (see `pica_shader_run_vertices`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PicaStatePolicy {
    /// Every vertex starts from the state passed in, which is left unchanged.
    Reset = 0,
    /// Each vertex starts where the previous one ended (the hardware behaviour);
    /// the state holds the last vertex's final state on return.
    Carry = 1,
}

/// Why an invocation stopped (`pica_shader_run`'s `stop`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PicaStop {
    /// An `end` instruction ran.
    End = 0,
    /// The program counter left the program (treated as `end`).
    EndOfCode = 1,
    /// The budget ran out.
    BudgetExceeded = 2,
    /// A `break` with an empty LOOP stack (a hardware hang).
    BreakOutsideLoop = 3,
}

pub(crate) fn stop_code(stop: Stop) -> u32 {
    (match stop {
        Stop::End => PicaStop::End,
        Stop::EndOfCode => PicaStop::EndOfCode,
        Stop::BudgetExceeded => PicaStop::BudgetExceeded,
        Stop::BreakOutsideLoop => PicaStop::BreakOutsideLoop,
    }) as u32
}

/// One DVLE (entry point) of a loaded SHBIN.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PicaEntryInfo {
    /// Address of the entry point's first instruction.
    pub main: u32,
    /// A `PicaShaderKind`.
    pub kind: u32,
}

/// How to prepare a shader; fill with `pica_shader_options_default` first.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PicaShaderOptions {
    /// Index of the DVLE (entry point) to run (ignored by
    /// `pica_shader_new_at_entry`).
    pub dvle: usize,
    /// A `PicaPrecision` (default `PICA_PRECISION_F24`).
    pub precision: u32,
    /// A `PicaEngine` (default `PICA_ENGINE_AUTO`).
    pub engine: u32,
    /// Most instructions one invocation may execute (default 1,048,576; 0 is
    /// replaced by the default).
    pub budget: u64,
}

/// The geometry emitter's state (`pica_state_get_emitter` /
/// `pica_state_set_emitter`): what `setemit` last set, which the next `emit`
/// uses. Part of the unit state, so it is carried from one run to the next
/// like the registers; `pica_state_reset` (or setting all three to 0) gives
/// each run a fresh emitter.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PicaEmitterState {
    /// Vertex slot 0–3 the next `emit` writes.
    pub vertex_id: u8,
    /// 1 when the next `emit` completes a primitive (any non-zero value sets it).
    pub primitive: u8,
    /// That primitive's winding flag (0 or 1; any non-zero value sets it).
    pub winding: u8,
}

/// A vertex a geometry shader emitted, as the callback receives it.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PicaEmittedVertex {
    /// Slot 0–3 set by the last `setemit`.
    pub vertex_id: u8,
    /// 1 when this vertex completes a primitive.
    pub primitive: u8,
    /// The primitive's winding flag (0 or 1).
    pub winding: u8,
    /// Output registers `o0`–`o15` at the `emit`.
    pub outputs: [[f32; 4]; 16],
}

/// Receives emitted vertices: `user` is the pointer passed to the run function;
/// `vertex` is valid only during the call. Must not unwind.
pub type PicaEmitCallback =
    Option<unsafe extern "C" fn(user: *mut c_void, vertex: *const PicaEmittedVertex)>;

/// What a batch did, aggregated over its vertices.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PicaBatchSummary {
    /// Vertices run.
    pub vertices: usize,
    /// Stopped at `end`.
    pub ended: usize,
    /// Program counter left the program.
    pub ended_at_end_of_code: usize,
    /// Stopped by the budget.
    pub budget_exceeded: usize,
    /// Ran `break` outside a loop.
    pub break_outside_loop: usize,
    /// Index of the first vertex that did not finish, or -1.
    pub first_unfinished: i64,
}

/// The unit's non-vector registers (`pica_state_get_scalars` /
/// `pica_state_set_scalars`), which the hardware keeps between vertices.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PicaStateScalars {
    /// Address registers `a0.x`, `a0.y`.
    pub a0: [i32; 2],
    /// Loop counter `aL`.
    pub al: i32,
    /// Condition flags `cmp.x`, `cmp.y` (0 or 1; any non-zero value sets a flag).
    pub cmp: [u8; 2],
}
