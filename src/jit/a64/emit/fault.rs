//! Test-only faults injected into the shared primitives, so that a test can
//! show that both lowerings run them: with a fault active on a thread,
//! code compiled on that thread breaks the primitive in both engines.

use std::cell::Cell;

/// A deliberately broken primitive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    /// The PICA multiply's `0 × inf = +0` rule is left out (the product
    /// stays NaN).
    ZeroTimesInf,
    /// `f24_flush` flushes nothing.
    F24Flush,
}

thread_local! {
    static ACTIVE: Cell<Option<Fault>> = const { Cell::new(None) };
}

/// Whether `fault` is active on this thread.
pub(crate) fn active(fault: Fault) -> bool {
    ACTIVE.with(|a| a.get() == Some(fault))
}

/// Runs `f` with `fault` active on this thread (also cleared when `f`
/// panics).
pub(crate) fn with<R>(fault: Fault, f: impl FnOnce() -> R) -> R {
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            ACTIVE.with(|a| a.set(None));
        }
    }
    ACTIVE.with(|a| a.set(Some(fault)));
    let _clear = Clear;
    f()
}
