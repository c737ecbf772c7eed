//! The C ABI of [pica-jit](https://docs.rs/pica-jit): load a SHBIN, prepare a
//! shader, set per-draw uniforms, and run one vertex or a batch of vertices from
//! C or C++, with geometry-shader emits delivered to a C callback.
//!
//! The header is `include/pica_jit.h`, generated from this crate by `cbindgen`
//! (the `header_is_current` test fails when it is stale; run it with
//! `PICA_BLESS_HEADER=1` to rewrite it). Build `libpica_jit_capi.a` / `.so` with
//! `cargo build -p pica-jit-capi --release`.
//!
//! # Contract
//! - Every function returns a [`PicaStatus`] (or a plain value that cannot fail);
//!   on an error, `pica_last_error()` returns the message on the same thread.
//! - No Rust panic crosses into C: every entry point catches them
//!   (`PICA_STATUS_PANIC`).
//! - Null pointers and handles of the wrong type are `PICA_STATUS_NULL_ARGUMENT` /
//!   `PICA_STATUS_INVALID_HANDLE`. A freed handle is reported while its memory is
//!   not reused, but using one is still a bug, as with any C API.
//! - Enumerations are passed as `uint32_t` and validated
//!   (`PICA_STATUS_INVALID_ARGUMENT` for an unknown value).
//! - Threads: `PicaProgram`, `PicaShader` and (unchanged) `PicaUniforms` may be
//!   used from several threads at once; a `PicaState` belongs to one run at a
//!   time. The emit callback runs on the calling thread and must not unwind
//!   (no C++ exception may leave it).

mod error;
mod handle;

use error::{Failure, guard};
use handle::{HandleData, borrow, borrow_mut, free, into_handle};
use pica_jit::shbin::Shbin;
use pica_jit::{
    EmitSink, EmittedVertex, EngineKind, Precision, Program, Shader, ShaderConfig, ShaderKind,
    StatePolicy, Stop, Uniforms, UnitState, VertexRegisters,
};
use std::ffi::{c_char, c_void};
use std::sync::Arc;

pub use error::{PicaStatus, pica_last_error};

// ---------------------------------------------------------------------------
// Enumerations (passed as uint32_t)

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

fn stop_code(stop: Stop) -> u32 {
    (match stop {
        Stop::End => PicaStop::End,
        Stop::EndOfCode => PicaStop::EndOfCode,
        Stop::BudgetExceeded => PicaStop::BudgetExceeded,
        Stop::BreakOutsideLoop => PicaStop::BreakOutsideLoop,
    }) as u32
}

// ---------------------------------------------------------------------------
// Plain structures

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
    /// Index of the DVLE (entry point) to run.
    pub dvle: usize,
    /// A `PicaPrecision` (default `PICA_PRECISION_F24`).
    pub precision: u32,
    /// A `PicaEngine` (default `PICA_ENGINE_AUTO`).
    pub engine: u32,
    /// Most instructions one invocation may execute (default 1,048,576; 0 is
    /// replaced by the default).
    pub budget: u64,
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

// ---------------------------------------------------------------------------
// Handles

/// A loaded SHBIN: the shared program and its DVLEs.
pub struct PicaProgram {
    _opaque: [u8; 0],
}
/// A shader prepared for one DVLE, precision and engine.
pub struct PicaShader {
    _opaque: [u8; 0],
}
/// The uniforms of one draw (`c0`–`c95`, `i0`–`i3`, `b0`–`b15`).
pub struct PicaUniforms {
    _opaque: [u8; 0],
}
/// The unit's registers (inputs, temporaries, outputs, `a0`, `aL`, `cmp`).
pub struct PicaState {
    _opaque: [u8; 0],
}

struct ProgramData {
    shbin: Shbin,
    program: Arc<Program>,
}
impl HandleData for ProgramData {
    const TAG: u64 = 0x5049_4341_5052_4f47; // "PICAPROG"
    const NAME: &'static str = "PicaProgram";
}

struct ShaderData(Shader);
impl HandleData for ShaderData {
    const TAG: u64 = 0x5049_4341_5348_4452; // "PICASHDR"
    const NAME: &'static str = "PicaShader";
}

struct UniformsData(Uniforms);
impl HandleData for UniformsData {
    const TAG: u64 = 0x5049_4341_554e_4946; // "PICAUNIF"
    const NAME: &'static str = "PicaUniforms";
}

struct StateData(UnitState);
impl HandleData for StateData {
    const TAG: u64 = 0x5049_4341_5354_4154; // "PICASTAT"
    const NAME: &'static str = "PicaState";
}

/// Stores `value` through `out`, which must not be null.
///
/// # Safety
/// `out` must be null or valid for a write of `T`.
unsafe fn store<T>(out: *mut T, what: &str, value: T) -> Result<(), Failure> {
    if out.is_null() {
        return Err(Failure::null(what));
    }
    // SAFETY: non-null and, by the caller's contract, valid for writes.
    unsafe { out.write_unaligned(value) };
    Ok(())
}

/// Reads four values from `ptr`.
///
/// # Safety
/// `ptr` must be null or valid for reads of four `T`.
unsafe fn read4<T: Copy>(ptr: *const T, what: &str) -> Result<[T; 4], Failure> {
    if ptr.is_null() {
        return Err(Failure::null(what));
    }
    // SAFETY: non-null and readable for four elements by the caller's contract.
    Ok(unsafe { ptr.cast::<[T; 4]>().read_unaligned() })
}

fn register(index: u32, count: usize, what: &str) -> Result<usize, Failure> {
    let n = index as usize;
    if n < count {
        Ok(n)
    } else {
        Err(Failure::invalid(format!(
            "{what} register {index} does not exist (0-{})",
            count - 1
        )))
    }
}

// ---------------------------------------------------------------------------
// Version

/// The library version, e.g. "0.1.0" (a static string; never free it).
#[unsafe(no_mangle)]
pub extern "C" fn pica_version() -> *const c_char {
    const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");
    VERSION.as_ptr().cast()
}

/// The library version as `major << 16 | minor << 8 | patch`.
#[unsafe(no_mangle)]
pub extern "C" fn pica_version_number() -> u32 {
    let part = |s: &str| s.parse::<u32>().unwrap_or(0);
    (part(env!("CARGO_PKG_VERSION_MAJOR")) << 16)
        | (part(env!("CARGO_PKG_VERSION_MINOR")) << 8)
        | part(env!("CARGO_PKG_VERSION_PATCH"))
}

// ---------------------------------------------------------------------------
// Programs

fn load(bytes: &[u8]) -> Result<ProgramData, Failure> {
    let shbin = Shbin::parse(bytes)
        .map_err(|e| Failure::new(PicaStatus::Parse, format!("invalid SHBIN: {e}")))?;
    let program = Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone())
        .map_err(|e| Failure::new(PicaStatus::Parse, format!("invalid SHBIN program: {e}")))?;
    Ok(ProgramData {
        shbin,
        program: Arc::new(program),
    })
}

/// Parses SHBIN (DVLB) bytes into `*out`. The bytes are copied; any bytes give a
/// handle or `PICA_STATUS_PARSE` with a message, never a crash.
///
/// # Safety
/// `bytes` must be readable for `len` bytes (may be null when `len` is 0); `out`
/// must be writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_program_load(
    bytes: *const u8,
    len: usize,
    out: *mut *mut PicaProgram,
) -> PicaStatus {
    guard(|| {
        let bytes: &[u8] = if len == 0 {
            &[]
        } else if bytes.is_null() {
            return Err(Failure::null("bytes"));
        } else {
            // SAFETY: non-null, readable for `len` bytes by the caller's contract.
            unsafe { std::slice::from_raw_parts(bytes, len) }
        };
        let data = load(bytes)?;
        // SAFETY: `out` is writable by the caller's contract.
        unsafe { store(out, "out", into_handle(data)) }
    })
}

/// Loads pica-jit's embedded default shader (transform + Blinn-Phong lighting)
/// into `*out`.
///
/// # Safety
/// `out` must be writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_program_load_default(out: *mut *mut PicaProgram) -> PicaStatus {
    guard(|| {
        let data = load(pica_jit::DEFAULT_SHADER)?;
        // SAFETY: `out` is writable by the caller's contract.
        unsafe { store(out, "out", into_handle(data)) }
    })
}

/// Frees a program (null does nothing). Shaders made from it stay valid.
///
/// # Safety
/// `program` must be null or a live program handle, not used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_program_free(program: *mut PicaProgram) -> PicaStatus {
    // SAFETY: forwarded contract.
    guard(|| unsafe { free::<ProgramData, _>(program, "program") })
}

/// The number of DVLEs (entry points) in the program.
///
/// # Safety
/// `program` must be null or a live program handle; `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_program_entry_count(
    program: *const PicaProgram,
    out: *mut usize,
) -> PicaStatus {
    guard(|| {
        // SAFETY: forwarded contract.
        let data = unsafe { borrow::<ProgramData, _>(program, "program")? };
        // SAFETY: forwarded contract.
        unsafe { store(out, "out", data.shbin.dvles.len()) }
    })
}

/// Describes DVLE `index` of the program.
///
/// # Safety
/// `program` must be null or a live program handle; `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_program_entry(
    program: *const PicaProgram,
    index: usize,
    out: *mut PicaEntryInfo,
) -> PicaStatus {
    guard(|| {
        // SAFETY: forwarded contract.
        let data = unsafe { borrow::<ProgramData, _>(program, "program")? };
        let dvle = dvle(data, index)?;
        let info = PicaEntryInfo {
            main: dvle.main,
            kind: match dvle.kind {
                ShaderKind::Vertex => PicaShaderKind::Vertex as u32,
                ShaderKind::Geometry => PicaShaderKind::Geometry as u32,
            },
        };
        // SAFETY: forwarded contract.
        unsafe { store(out, "out", info) }
    })
}

fn dvle(data: &ProgramData, index: usize) -> Result<&pica_jit::shbin::Dvle, Failure> {
    data.shbin.dvles.get(index).ok_or_else(|| {
        Failure::invalid(format!(
            "DVLE {index} does not exist: the program has {}",
            data.shbin.dvles.len()
        ))
    })
}

// ---------------------------------------------------------------------------
// Shaders

/// Fills `*out` with the defaults: DVLE 0, F24, automatic engine, default budget.
///
/// # Safety
/// `out` must be writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_shader_options_default(out: *mut PicaShaderOptions) -> PicaStatus {
    guard(|| {
        let options = PicaShaderOptions {
            dvle: 0,
            precision: PicaPrecision::F24 as u32,
            engine: PicaEngine::Auto as u32,
            budget: pica_jit::DEFAULT_BUDGET,
        };
        // SAFETY: forwarded contract.
        unsafe { store(out, "out", options) }
    })
}

/// Prepares DVLE `options->dvle` of `program` and compiles it now (so a
/// compilation failure is reported here, not hidden at the first run).
///
/// # Safety
/// `program` must be null or a live program handle; `options` readable; `out`
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_shader_new(
    program: *const PicaProgram,
    options: *const PicaShaderOptions,
    out: *mut *mut PicaShader,
) -> PicaStatus {
    guard(|| {
        // SAFETY: forwarded contract.
        let data = unsafe { borrow::<ProgramData, _>(program, "program")? };
        if options.is_null() {
            return Err(Failure::null("options"));
        }
        // SAFETY: non-null and readable by the caller's contract.
        let options = unsafe { options.read_unaligned() };
        let dvle = dvle(data, options.dvle)?;
        let precision = match options.precision {
            0 => Precision::F24,
            1 => Precision::F32,
            other => return Err(Failure::invalid(format!("unknown precision {other}"))),
        };
        let engine = match options.engine {
            0 => EngineKind::Auto,
            1 => EngineKind::Interpreter,
            2 => EngineKind::Jit,
            other => return Err(Failure::invalid(format!("unknown engine {other}"))),
        };
        let config = ShaderConfig {
            entry: dvle.main,
            kind: dvle.kind,
            precision,
            budget: if options.budget == 0 {
                pica_jit::DEFAULT_BUDGET
            } else {
                options.budget
            },
        };
        let engine_error =
            |e: pica_jit::EngineError| Failure::new(PicaStatus::Engine, e.to_string());
        let shader = Shader::new(data.program.clone(), config, engine).map_err(engine_error)?;
        shader.prepare().map_err(engine_error)?;
        // SAFETY: forwarded contract.
        unsafe { store(out, "out", into_handle(ShaderData(shader))) }
    })
}

/// The engine that runs the shader (`PICA_ENGINE_INTERPRETER` or `PICA_ENGINE_JIT`).
///
/// # Safety
/// `shader` must be null or a live shader handle; `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_shader_engine(
    shader: *const PicaShader,
    out: *mut u32,
) -> PicaStatus {
    guard(|| {
        // SAFETY: forwarded contract.
        let shader = unsafe { borrow::<ShaderData, _>(shader, "shader")? };
        let engine = match shader.0.engine() {
            EngineKind::Jit => PicaEngine::Jit,
            _ => PicaEngine::Interpreter,
        };
        // SAFETY: forwarded contract.
        unsafe { store(out, "out", engine as u32) }
    })
}

/// Frees a shader (null does nothing).
///
/// # Safety
/// `shader` must be null or a live shader handle, not used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_shader_free(shader: *mut PicaShader) -> PicaStatus {
    // SAFETY: forwarded contract.
    guard(|| unsafe { free::<ShaderData, _>(shader, "shader") })
}

// ---------------------------------------------------------------------------
// Uniforms

/// Creates uniforms with every register zero / false.
///
/// # Safety
/// `out` must be writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_uniforms_new(out: *mut *mut PicaUniforms) -> PicaStatus {
    guard(|| {
        let handle = into_handle(UniformsData(Uniforms::default()));
        // SAFETY: forwarded contract.
        unsafe { store(out, "out", handle) }
    })
}

/// Frees uniforms (null does nothing).
///
/// # Safety
/// `uniforms` must be null or a live uniforms handle, not used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_uniforms_free(uniforms: *mut PicaUniforms) -> PicaStatus {
    // SAFETY: forwarded contract.
    guard(|| unsafe { free::<UniformsData, _>(uniforms, "uniforms") })
}

/// Applies the constant table of DVLE `dvle` (what the shader expects before
/// the draw's own uniforms are set).
///
/// # Safety
/// Live handles (or null); `uniforms` not in use by another thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_uniforms_apply_constants(
    uniforms: *mut PicaUniforms,
    program: *const PicaProgram,
    dvle: usize,
) -> PicaStatus {
    guard(|| {
        // SAFETY: forwarded contract.
        let data = unsafe { borrow::<ProgramData, _>(program, "program")? };
        // SAFETY: forwarded contract.
        let uniforms = unsafe { borrow_mut::<UniformsData, _>(uniforms, "uniforms")? };
        uniforms
            .0
            .apply_constants(&self::dvle(data, dvle)?.constants);
        Ok(())
    })
}

/// Sets float uniform `c{index}` (0–95) to `value[0..4]` (x, y, z, w).
///
/// # Safety
/// `uniforms` null or live and not in use elsewhere; `value` readable for 4 floats.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_uniforms_set_float(
    uniforms: *mut PicaUniforms,
    index: u32,
    value: *const f32,
) -> PicaStatus {
    guard(|| {
        // SAFETY: forwarded contract.
        let uniforms = unsafe { borrow_mut::<UniformsData, _>(uniforms, "uniforms")? };
        let n = register(index, uniforms.0.f.len(), "float uniform")?;
        // SAFETY: forwarded contract.
        uniforms.0.f[n] = unsafe { read4(value, "value")? };
        Ok(())
    })
}

/// Sets integer uniform `i{index}` (0–3) to `value[0..4]` (loop count, initial
/// `aL`, increment, unused).
///
/// # Safety
/// `uniforms` null or live and not in use elsewhere; `value` readable for 4 bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_uniforms_set_int(
    uniforms: *mut PicaUniforms,
    index: u32,
    value: *const u8,
) -> PicaStatus {
    guard(|| {
        // SAFETY: forwarded contract.
        let uniforms = unsafe { borrow_mut::<UniformsData, _>(uniforms, "uniforms")? };
        let n = register(index, uniforms.0.i.len(), "integer uniform")?;
        // SAFETY: forwarded contract.
        uniforms.0.i[n] = unsafe { read4(value, "value")? };
        Ok(())
    })
}

/// Sets boolean uniform `b{index}` (0–15); any non-zero `value` is true.
///
/// # Safety
/// `uniforms` null or live and not in use elsewhere.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_uniforms_set_bool(
    uniforms: *mut PicaUniforms,
    index: u32,
    value: u8,
) -> PicaStatus {
    guard(|| {
        // SAFETY: forwarded contract.
        let uniforms = unsafe { borrow_mut::<UniformsData, _>(uniforms, "uniforms")? };
        let n = register(index, uniforms.0.b.len(), "boolean uniform")?;
        uniforms.0.b[n] = value != 0;
        Ok(())
    })
}

// ---------------------------------------------------------------------------
// Unit state

/// Creates a unit state with every register zero and every flag false.
///
/// # Safety
/// `out` must be writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_state_new(out: *mut *mut PicaState) -> PicaStatus {
    guard(|| {
        let handle = into_handle(StateData(UnitState::default()));
        // SAFETY: forwarded contract.
        unsafe { store(out, "out", handle) }
    })
}

/// Frees a unit state (null does nothing).
///
/// # Safety
/// `state` must be null or a live state handle, not used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_state_free(state: *mut PicaState) -> PicaStatus {
    // SAFETY: forwarded contract.
    guard(|| unsafe { free::<StateData, _>(state, "state") })
}

/// Resets every register to zero and every flag to false.
///
/// # Safety
/// `state` null or live and not in use elsewhere.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_state_reset(state: *mut PicaState) -> PicaStatus {
    guard(|| {
        // SAFETY: forwarded contract.
        let state = unsafe { borrow_mut::<StateData, _>(state, "state")? };
        state.0 = UnitState::default();
        Ok(())
    })
}

/// Sets input register `v{index}` (0–15).
///
/// # Safety
/// `state` null or live and not in use elsewhere; `value` readable for 4 floats.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_state_set_input(
    state: *mut PicaState,
    index: u32,
    value: *const f32,
) -> PicaStatus {
    guard(|| {
        // SAFETY: forwarded contract.
        let state = unsafe { borrow_mut::<StateData, _>(state, "state")? };
        let n = register(index, state.0.inputs.len(), "input")?;
        // SAFETY: forwarded contract.
        state.0.inputs[n] = unsafe { read4(value, "value")? };
        Ok(())
    })
}

/// Reads output register `o{index}` (0–15) into `out[0..4]`.
///
/// # Safety
/// `state` null or live; `out` writable for 4 floats.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_state_get_output(
    state: *const PicaState,
    index: u32,
    out: *mut f32,
) -> PicaStatus {
    guard(|| {
        // SAFETY: forwarded contract.
        let state = unsafe { borrow::<StateData, _>(state, "state")? };
        let n = register(index, state.0.outputs.len(), "output")?;
        // SAFETY: forwarded contract.
        unsafe { store(out.cast::<[f32; 4]>(), "out", state.0.outputs[n]) }
    })
}

/// Reads temporary register `r{index}` (0–15) into `out[0..4]`.
///
/// # Safety
/// `state` null or live; `out` writable for 4 floats.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_state_get_temp(
    state: *const PicaState,
    index: u32,
    out: *mut f32,
) -> PicaStatus {
    guard(|| {
        // SAFETY: forwarded contract.
        let state = unsafe { borrow::<StateData, _>(state, "state")? };
        let n = register(index, state.0.temps.len(), "temporary")?;
        // SAFETY: forwarded contract.
        unsafe { store(out.cast::<[f32; 4]>(), "out", state.0.temps[n]) }
    })
}

/// Sets temporary register `r{index}` (0–15).
///
/// # Safety
/// `state` null or live and not in use elsewhere; `value` readable for 4 floats.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_state_set_temp(
    state: *mut PicaState,
    index: u32,
    value: *const f32,
) -> PicaStatus {
    guard(|| {
        // SAFETY: forwarded contract.
        let state = unsafe { borrow_mut::<StateData, _>(state, "state")? };
        let n = register(index, state.0.temps.len(), "temporary")?;
        // SAFETY: forwarded contract.
        state.0.temps[n] = unsafe { read4(value, "value")? };
        Ok(())
    })
}

// ---------------------------------------------------------------------------
// Running

struct CallbackSink {
    callback: PicaEmitCallback,
    user: *mut c_void,
}

impl EmitSink for CallbackSink {
    fn emit(&mut self, vertex: &EmittedVertex) {
        if let Some(callback) = self.callback {
            let emitted = PicaEmittedVertex {
                vertex_id: vertex.vertex_id,
                primitive: vertex.primitive as u8,
                winding: vertex.winding as u8,
                outputs: vertex.outputs,
            };
            // SAFETY: the caller of the run function supplied `callback` and
            // `user` for exactly this use; `emitted` outlives the call.
            unsafe { callback(self.user, &emitted) };
        }
    }
}

/// Runs one invocation on `state` with `uniforms`; emitted vertices go to
/// `callback(user, vertex)` (`callback` may be null to discard them). `*stop`
/// (when `stop` is not null) receives a `PicaStop`.
///
/// # Safety
/// Live handles (or null); `state` not in use elsewhere; `callback`, if not null,
/// callable with `user`; `stop` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_shader_run(
    shader: *const PicaShader,
    uniforms: *const PicaUniforms,
    state: *mut PicaState,
    callback: PicaEmitCallback,
    user: *mut c_void,
    stop: *mut u32,
) -> PicaStatus {
    guard(|| {
        // SAFETY: forwarded contract.
        let (shader, uniforms, state) = unsafe {
            (
                borrow::<ShaderData, _>(shader, "shader")?,
                borrow::<UniformsData, _>(uniforms, "uniforms")?,
                borrow_mut::<StateData, _>(state, "state")?,
            )
        };
        let mut sink = CallbackSink { callback, user };
        let result = shader.0.run(&uniforms.0, &mut state.0, &mut sink);
        if !stop.is_null() {
            // SAFETY: non-null and writable by the caller's contract.
            unsafe { stop.write_unaligned(stop_code(result)) };
        }
        Ok(())
    })
}

/// A C buffer of `count` vertices of 16 registers × 4 floats, checked for null,
/// alignment and size.
fn vertex_buffer(ptr: *const f32, count: usize, what: &str) -> Result<(), Failure> {
    if count == 0 {
        return Ok(());
    }
    if ptr.is_null() {
        return Err(Failure::null(what));
    }
    if !ptr.cast::<VertexRegisters>().is_aligned() {
        return Err(Failure::invalid(format!(
            "`{what}` is not aligned for floats"
        )));
    }
    if count
        .checked_mul(size_of::<VertexRegisters>())
        .is_none_or(|bytes| bytes > isize::MAX as usize)
    {
        return Err(Failure::invalid(format!(
            "`{what}`: {count} vertices is too many"
        )));
    }
    Ok(())
}

/// Runs `count` vertices, in order, exactly as `count` calls of
/// `pica_shader_run` would (see `PicaStatePolicy` for where each vertex starts).
///
/// `inputs` holds `count × 16 × 4` floats: vertex `n`, register `v{i}`, component
/// `c` at `inputs[(n * 16 + i) * 4 + c]`; only the registers in `input_mask`
/// (bit `i` = `v{i}`) are loaded, the others keep the state's values. `outputs`
/// has the same layout; only the registers in `output_mask` are written, the
/// other floats are left untouched. The buffers must not overlap. Emitted
/// vertices of all invocations go to `callback` in order. `*summary` (when not
/// null) receives the aggregated stop reasons.
///
/// # Safety
/// Live handles (or null); `state` not in use elsewhere; `inputs` readable and
/// `outputs` writable for `count × 64` floats (either may be null when `count` is
/// 0); `callback` as for `pica_shader_run`; `summary` null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_shader_run_vertices(
    shader: *const PicaShader,
    uniforms: *const PicaUniforms,
    inputs: *const f32,
    count: usize,
    input_mask: u16,
    outputs: *mut f32,
    output_mask: u16,
    policy: u32,
    state: *mut PicaState,
    callback: PicaEmitCallback,
    user: *mut c_void,
    summary: *mut PicaBatchSummary,
) -> PicaStatus {
    guard(|| {
        // SAFETY: forwarded contract.
        let (shader, uniforms, state) = unsafe {
            (
                borrow::<ShaderData, _>(shader, "shader")?,
                borrow::<UniformsData, _>(uniforms, "uniforms")?,
                borrow_mut::<StateData, _>(state, "state")?,
            )
        };
        let policy = match policy {
            0 => StatePolicy::Reset,
            1 => StatePolicy::Carry,
            other => return Err(Failure::invalid(format!("unknown state policy {other}"))),
        };
        vertex_buffer(inputs, count, "inputs")?;
        vertex_buffer(outputs, count, "outputs")?;
        let (inputs, outputs): (&[VertexRegisters], &mut [VertexRegisters]) = if count == 0 {
            (&[], &mut [])
        } else {
            let bytes = count * size_of::<VertexRegisters>();
            let (a, b) = (inputs as usize, outputs as usize);
            if a < b + bytes && b < a + bytes {
                return Err(Failure::invalid("`inputs` and `outputs` overlap"));
            }
            // SAFETY: both checked non-null, aligned and not too large above,
            // disjoint, and valid for `count` vertices by the caller's contract.
            unsafe {
                (
                    std::slice::from_raw_parts(inputs.cast(), count),
                    std::slice::from_raw_parts_mut(outputs.cast(), count),
                )
            }
        };
        let mut sink = CallbackSink { callback, user };
        let result = shader
            .0
            .run_vertices(
                &uniforms.0,
                inputs,
                input_mask,
                outputs,
                output_mask,
                policy,
                &mut state.0,
                &mut sink,
            )
            .map_err(|e| Failure::invalid(e.to_string()))?;
        if !summary.is_null() {
            let out = PicaBatchSummary {
                vertices: result.vertices,
                ended: result.ended,
                ended_at_end_of_code: result.ended_at_end_of_code,
                budget_exceeded: result.budget_exceeded,
                break_outside_loop: result.break_outside_loop,
                first_unfinished: result.first_unfinished.map_or(-1, |n| n as i64),
            };
            // SAFETY: non-null and writable by the caller's contract.
            unsafe { summary.write_unaligned(out) };
        }
        Ok(())
    })
}
