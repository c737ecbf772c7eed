//! A draw's uniforms.

use crate::error::{PicaStatus, guard};
use crate::handle::{borrow, borrow_mut, free, into_handle};
use crate::objects::{
    PicaProgram, PicaUniforms, ProgramData, UniformsData, read4, register, store,
};
use pica_jit::Uniforms;

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
            .apply_constants(&crate::program::dvle(data, dvle)?.constants);
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
