//! Running one vertex or a batch, with emits delivered to a C callback.

use crate::error::{Failure, PicaStatus, guard};
use crate::handle::{borrow, borrow_mut};
use crate::objects::{PicaShader, PicaState, PicaUniforms, ShaderData, StateData, UniformsData};
use crate::types::{PicaBatchSummary, PicaEmitCallback, PicaEmittedVertex, stop_code};
use pica_jit::{EmitSink, EmittedVertex, StatePolicy, VertexRegisters};
use std::ffi::c_void;

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
