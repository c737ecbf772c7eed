//! The float24 uniform cache of single-vertex code (x86-64).
//!
//! `Shader::run` receives raw uniforms on every call, and float24 code must
//! read them through `arith::f24::load` (and, where an operation reads them
//! flushed, `f24::flush` after it): converted at every read, that was about
//! a third of what float24 code executes beyond float32 code. Each thread
//! keeps one [`UniformCache`] instead: per float row the raw bits it was last
//! converted from, the loaded row and the flushed row, invariantly
//! `converted = load(raw)`, `flushed = flush(load(raw))` (true of the
//! all-zero block it starts as, and kept by every refresh, which writes the
//! three together). The code's prologue compares the rows the program reads
//! directly with their raw copies, converts again out of line the rows of a
//! call whose uniforms changed, copies the integer and boolean uniforms, and
//! then reads the block where it read the uniforms: the converted rows as
//! [`crate::jit::Features::preconverted_uniforms`] code reads prepared
//! ones, the flushed rows as plain loads. Relative reads (any row) keep
//! converting at the read, so code that can run one does not use the cache.
//!
//! A block is used by one invocation at a time: an invocation that finds
//! its thread's block in use (a shader run from inside another's emit sink)
//! gets a zeroed block of its own for the call.

use crate::state::Uniforms;
use std::cell::{Cell, UnsafeCell};

/// Float uniform rows.
const ROWS: usize = crate::isa::FLOAT_UNIFORM_COUNT;

/// One thread's converted uniforms (see the module documentation). Laid
/// out as [`Uniforms`] first, so that code reading the block with the
/// uniforms' offsets finds the converted float rows and the integer and
/// boolean uniforms where it expects them.
#[repr(C, align(64))]
pub struct UniformCache {
    /// `load(raw)` of every float row, then the integer and boolean
    /// uniforms of the current call, as [`Uniforms`] lays them out.
    converted: [[u32; 4]; ROWS + 2],
    /// The raw bits each row was last converted from.
    raw: [[u32; 4]; ROWS],
    /// `flush(load(raw))` of every row.
    flushed: [[u32; 4]; ROWS],
}

/// Offset of the raw copies in the block.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub const OFFSET_RAW: i32 = std::mem::offset_of!(UniformCache, raw) as i32;
/// Offset of the flushed rows in the block.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub const OFFSET_FLUSHED: i32 = std::mem::offset_of!(UniformCache, flushed) as i32;
/// Offset and length of the integer and boolean uniforms (in the block as
/// in [`Uniforms`]).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub const INT_BOOL: (i32, i32) = (
    std::mem::offset_of!(Uniforms, i) as i32,
    (std::mem::size_of::<Uniforms>() - std::mem::offset_of!(Uniforms, i)) as i32,
);

const _: () = {
    // The converted part has the uniforms' layout: floats at 0, the 16
    // bytes of integers and the 16 of booleans after them.
    assert!(std::mem::offset_of!(Uniforms, f) == 0);
    assert!(std::mem::offset_of!(Uniforms, i) == 16 * ROWS);
    assert!(std::mem::offset_of!(Uniforms, b) == 16 * ROWS + 16);
    assert!(std::mem::size_of::<Uniforms>() == 16 * (ROWS + 2));
    assert!(INT_BOOL.1 == 32);
    assert!(OFFSET_RAW % 16 == 0 && OFFSET_FLUSHED % 16 == 0);
};

impl UniformCache {
    /// The block every thread starts with: all rows +0, which `load` and
    /// `flush` keep.
    const ZERO: UniformCache = UniformCache {
        converted: [[0; 4]; ROWS + 2],
        raw: [[0; 4]; ROWS],
        flushed: [[0; 4]; ROWS],
    };
}

struct Slot {
    in_use: Cell<bool>,
    block: UnsafeCell<UniformCache>,
}

thread_local! {
    static SLOT: Slot = const {
        Slot {
            in_use: Cell::new(false),
            block: UnsafeCell::new(UniformCache::ZERO),
        }
    };
}

/// Releases the thread's block when the call that claimed it ends.
struct Release<'a>(&'a Cell<bool>);

impl Drop for Release<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

/// Calls `f` with a uniform cache no other invocation uses meanwhile: the
/// thread's block when it is free, else a zeroed one of the call's own.
#[inline]
pub(crate) fn with_uniform_cache<R>(f: impl FnOnce(*mut UniformCache) -> R) -> R {
    let mut f = Some(f);
    // (One access to the thread's slot, the release included.)
    let done = SLOT.try_with(|slot| {
        if slot.in_use.replace(true) {
            return None;
        }
        let _release = Release(&slot.in_use);
        f.take().map(|f| f(slot.block.get()))
    });
    match (done, f) {
        (Ok(Some(result)), _) => result,
        // In use (or the thread exiting): `f` was not called.
        (_, Some(f)) => own_block(f),
        (_, None) => unreachable!("the closure returns what it called"),
    }
}

/// [`with_uniform_cache`] when the thread's block is in use (or gone, the
/// thread exiting): a fresh block for this call alone.
#[cold]
#[inline(never)]
fn own_block<R>(f: impl FnOnce(*mut UniformCache) -> R) -> R {
    let mut block = Box::new(UniformCache::ZERO);
    f(&mut *block)
}

/// Whether this thread's block is claimed (tests check that nested calls
/// fall back and that every call releases it).
#[cfg(test)]
pub(crate) fn thread_block_in_use() -> bool {
    SLOT.with(|slot| slot.in_use.get())
}

/// The raw copy of row `n` in this thread's block (tests check when the code
/// refreshes it).
#[cfg(test)]
pub(crate) fn thread_raw_row(n: usize) -> [u32; 4] {
    // SAFETY: tests read the block between calls, when no code writes it.
    SLOT.with(|slot| unsafe { (*slot.block.get()).raw[n] })
}
