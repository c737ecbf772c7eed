//! Opaque handles: boxed values behind a type tag, so that a null pointer, a
//! handle of another type or (while its memory is not reused) a freed handle is
//! an error code instead of undefined behaviour.

use crate::error::{Failure, PicaStatus};

/// A boxed value behind a tag. `repr(C)` puts the tag at offset 0, so the tag of
/// any handle can be read before its type is trusted.
#[repr(C)]
pub(crate) struct Tagged<T> {
    tag: u64,
    value: T,
}

/// A value a handle may hold, with its own tag.
pub(crate) trait HandleData: Sized {
    /// Distinct per type; never `FREED`.
    const TAG: u64;
    /// Name used in error messages (`PicaProgram`, …).
    const NAME: &'static str;
}

/// Written over the tag when a handle is freed.
const FREED: u64 = 0xDEAD_F4EE_D0DE_0000;

/// Boxes `value` and returns the handle pointer C sees.
pub(crate) fn into_handle<T: HandleData, H>(value: T) -> *mut H {
    Box::into_raw(Box::new(Tagged { tag: T::TAG, value })).cast()
}

fn check<T: HandleData, H>(handle: *const H, what: &str) -> Result<*mut Tagged<T>, Failure> {
    if handle.is_null() {
        return Err(Failure::null(what));
    }
    let tagged = handle.cast::<Tagged<T>>().cast_mut();
    if !tagged.is_aligned() {
        return Err(Failure::new(
            PicaStatus::InvalidHandle,
            format!("`{what}` is not a {} handle (misaligned pointer)", T::NAME),
        ));
    }
    // SAFETY: every handle pica-jit hands out is a `Tagged<_>` with the `u64` tag
    // at offset 0 (repr(C)); a non-null, aligned pointer the caller passes as a
    // handle is therefore readable there unless the caller broke the API
    // contract (a pointer that never was a handle, or freed memory since reused).
    let tag = unsafe { tagged.cast::<u64>().read() };
    match tag {
        t if t == T::TAG => Ok(tagged),
        FREED => Err(Failure::new(
            PicaStatus::InvalidHandle,
            format!("`{what}` is a {} handle that was already freed", T::NAME),
        )),
        _ => Err(Failure::new(
            PicaStatus::InvalidHandle,
            format!("`{what}` is not a {} handle", T::NAME),
        )),
    }
}

/// The value behind a handle, shared.
///
/// # Safety
/// `handle` must be null or a pointer obtained from [`into_handle`] (of any
/// type) that has not been freed, and no `&mut` to the same value may be live.
pub(crate) unsafe fn borrow<'a, T: HandleData, H>(
    handle: *const H,
    what: &str,
) -> Result<&'a T, Failure> {
    let tagged = check::<T, H>(handle, what)?;
    // SAFETY: the tag says this is a live `Tagged<T>`; the caller guarantees no
    // mutable borrow exists.
    Ok(unsafe { &(*tagged).value })
}

/// The value behind a handle, exclusive.
///
/// # Safety
/// As for [`borrow`], and no other reference to the same value may be live
/// (the C API documents that a `PicaState` or `PicaUniforms` being changed must
/// not be used by another thread at the same time).
pub(crate) unsafe fn borrow_mut<'a, T: HandleData, H>(
    handle: *mut H,
    what: &str,
) -> Result<&'a mut T, Failure> {
    let tagged = check::<T, H>(handle, what)?;
    // SAFETY: as above, exclusive by the caller's guarantee.
    Ok(unsafe { &mut (*tagged).value })
}

/// Frees a handle; null is allowed and does nothing.
///
/// # Safety
/// As for [`borrow_mut`]; the handle must not be used afterwards.
pub(crate) unsafe fn free<T: HandleData, H>(handle: *mut H, what: &str) -> Result<(), Failure> {
    if handle.is_null() {
        return Ok(());
    }
    let tagged = check::<T, H>(handle, what)?;
    // SAFETY: the tag says this is a live `Tagged<T>` from `Box::into_raw`; the
    // tag is overwritten first so a use after free that finds the memory
    // unchanged reports an error.
    unsafe {
        (*tagged).tag = FREED;
        drop(Box::from_raw(tagged));
    }
    Ok(())
}
