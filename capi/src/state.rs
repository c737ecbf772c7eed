//! The unit's register state.

use crate::error::{PicaStatus, guard};
use crate::handle::{borrow, borrow_mut, free, into_handle};
use crate::objects::{PicaState, StateData, read4, register, store};
use crate::types::{PicaEmitterState, PicaStateScalars};
use pica_jit::{EmitConfig, UnitState};

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

/// Resets every register to zero, every flag to false and the geometry
/// emitter to `setemit 0`.
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

/// Reads `a0`, `aL` and `cmp` into `*out`.
///
/// # Safety
/// `state` null or live; `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_state_get_scalars(
    state: *const PicaState,
    out: *mut PicaStateScalars,
) -> PicaStatus {
    guard(|| {
        // SAFETY: forwarded contract.
        let state = unsafe { borrow::<StateData, _>(state, "state")? };
        let scalars = PicaStateScalars {
            a0: state.0.a0,
            al: state.0.al,
            cmp: state.0.cmp.map(u8::from),
        };
        // SAFETY: forwarded contract.
        unsafe { store(out, "out", scalars) }
    })
}

/// Sets `a0`, `aL` and `cmp` from `*value`.
///
/// # Safety
/// `state` null or live and not in use elsewhere; `value` readable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_state_set_scalars(
    state: *mut PicaState,
    value: *const PicaStateScalars,
) -> PicaStatus {
    guard(|| {
        // SAFETY: forwarded contract.
        let state = unsafe { borrow_mut::<StateData, _>(state, "state")? };
        if value.is_null() {
            return Err(crate::error::Failure::null("value"));
        }
        // SAFETY: non-null and readable by the caller's contract.
        let value = unsafe { value.read_unaligned() };
        state.0.a0 = value.a0;
        state.0.al = value.al;
        state.0.cmp = value.cmp.map(|c| c != 0);
        Ok(())
    })
}

/// Reads the geometry emitter's state (what `setemit` last set) into `*out`.
/// It is carried from one run to the next in `state`, like the registers.
///
/// # Safety
/// `state` null or live; `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_state_get_emitter(
    state: *const PicaState,
    out: *mut PicaEmitterState,
) -> PicaStatus {
    guard(|| {
        // SAFETY: forwarded contract.
        let state = unsafe { borrow::<StateData, _>(state, "state")? };
        let emit = state.0.emit;
        let value = PicaEmitterState {
            vertex_id: emit.vertex_id,
            primitive: u8::from(emit.primitive),
            winding: u8::from(emit.winding),
        };
        // SAFETY: forwarded contract.
        unsafe { store(out, "out", value) }
    })
}

/// Sets the geometry emitter's state from `*value` (`vertex_id` 0–3), e.g. to
/// give a run a fresh emitter (all zero) or to restore a saved one.
///
/// # Safety
/// `state` null or live and not in use elsewhere; `value` readable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_state_set_emitter(
    state: *mut PicaState,
    value: *const PicaEmitterState,
) -> PicaStatus {
    guard(|| {
        // SAFETY: forwarded contract.
        let state = unsafe { borrow_mut::<StateData, _>(state, "state")? };
        if value.is_null() {
            return Err(crate::error::Failure::null("value"));
        }
        // SAFETY: non-null and readable by the caller's contract.
        let value = unsafe { value.read_unaligned() };
        if value.vertex_id > 3 {
            return Err(crate::error::Failure::invalid(format!(
                "emitter vertex id {} does not exist (0-3)",
                value.vertex_id
            )));
        }
        state.0.emit = EmitConfig {
            vertex_id: value.vertex_id,
            primitive: value.primitive != 0,
            winding: value.winding != 0,
        };
        Ok(())
    })
}
