//! Preparing shaders.

use crate::error::{Failure, PicaStatus, guard};
use crate::handle::{borrow, free, into_handle};
use crate::objects::{PicaProgram, PicaShader, ProgramData, ShaderData, store};
use crate::program::dvle;
use crate::types::{PicaEngine, PicaPrecision, PicaShaderOptions};
use pica_jit::{EngineKind, Precision, Shader, ShaderConfig, ShaderKind};

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
        // SAFETY: forwarded contract.
        let options = unsafe { read_options(options)? };
        let dvle = dvle(data, options.dvle)?;
        let shader = prepare(data, dvle.main, dvle.kind, &options)?;
        // SAFETY: forwarded contract.
        unsafe { store(out, "out", into_handle(ShaderData(shader))) }
    })
}

/// Prepares `program` to start at code word `entry` on the unit `kind` (a
/// `PicaShaderKind`), as an emulator does with the entry point the game wrote to
/// the GPU; `options->dvle` is ignored. Compiles now, like `pica_shader_new`.
///
/// # Safety
/// As for `pica_shader_new`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_shader_new_at_entry(
    program: *const PicaProgram,
    entry: u32,
    kind: u32,
    options: *const PicaShaderOptions,
    out: *mut *mut PicaShader,
) -> PicaStatus {
    guard(|| {
        // SAFETY: forwarded contract.
        let data = unsafe { borrow::<ProgramData, _>(program, "program")? };
        // SAFETY: forwarded contract.
        let options = unsafe { read_options(options)? };
        let kind = match kind {
            0 => ShaderKind::Vertex,
            1 => ShaderKind::Geometry,
            other => return Err(Failure::invalid(format!("unknown shader kind {other}"))),
        };
        let shader = prepare(data, entry, kind, &options)?;
        // SAFETY: forwarded contract.
        unsafe { store(out, "out", into_handle(ShaderData(shader))) }
    })
}

/// # Safety
/// `options` must be null or readable.
unsafe fn read_options(options: *const PicaShaderOptions) -> Result<PicaShaderOptions, Failure> {
    if options.is_null() {
        return Err(Failure::null("options"));
    }
    // SAFETY: non-null and readable by the caller's contract.
    Ok(unsafe { options.read_unaligned() })
}

fn prepare(
    data: &ProgramData,
    entry: u32,
    kind: ShaderKind,
    options: &PicaShaderOptions,
) -> Result<Shader, Failure> {
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
        entry,
        kind,
        precision,
        budget: if options.budget == 0 {
            pica_jit::DEFAULT_BUDGET
        } else {
            options.budget
        },
    };
    let engine_error = |e: pica_jit::EngineError| Failure::new(PicaStatus::Engine, e.to_string());
    let shader = Shader::new(data.program.clone(), config, engine).map_err(engine_error)?;
    shader.prepare().map_err(engine_error)?;
    Ok(shader)
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
