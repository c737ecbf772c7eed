//! Executable memory on Apple Silicon: `MAP_JIT` mappings with per-thread
//! write protection.
//!
//! macOS on AArch64 refuses to make ordinary pages executable in hardened
//! processes. A `MAP_JIT` mapping is instead mapped read+write+execute once,
//! and each *thread* sees it either writable or executable, never both:
//! `pthread_jit_write_protect_np(0)` makes JIT pages writable (and not
//! executable) for the calling thread only, `pthread_jit_write_protect_np(1)`
//! makes them executable again. Every thread starts executable. This module
//! opens a write window only around the copy of new code, on the compiling
//! thread, and closes it even if the copy unwinds; other threads keep running
//! other shaders' code meanwhile. Then `sys_icache_invalidate` makes the
//! instruction stream see the new bytes. Retiring a mapping needs no system
//! call at all: it simply waits in the pool.
//!
//! The operating-system calls go through [`JitOs`], so the switching and the
//! pool accounting are unit-tested on any host against a recording fake.

use super::{Backend, MemoryError};
use std::io;
use std::ptr::NonNull;

/// The system calls `MAP_JIT` memory needs.
pub trait JitOs: Clone + Send + Sync + 'static {
    /// Maps `len` bytes with `MAP_JIT`, read+write+execute.
    fn map_jit(&self, len: usize) -> io::Result<NonNull<u8>>;
    /// Unmaps a mapping `map_jit` returned.
    ///
    /// # Safety
    /// `ptr`/`len` are exactly a live mapping from `map_jit`, and nothing uses
    /// it any more.
    unsafe fn unmap(&self, ptr: NonNull<u8>, len: usize);
    /// `pthread_jit_write_protect_np`: for the calling thread only, JIT pages
    /// become executable (`true`) or writable (`false`).
    fn set_write_protect(&self, protect: bool);
    /// Makes instruction fetch see what was written to `ptr..ptr + len`.
    ///
    /// # Safety
    /// The range lies inside a live mapping.
    unsafe fn invalidate_icache(&self, ptr: NonNull<u8>, len: usize);
}

/// While alive, JIT pages are writable (and not executable) for the thread that
/// opened it; dropping it (also when unwinding) makes them executable again.
struct WriteWindow<'a, O: JitOs> {
    os: &'a O,
}

impl<'a, O: JitOs> WriteWindow<'a, O> {
    fn open(os: &'a O) -> WriteWindow<'a, O> {
        os.set_write_protect(false);
        WriteWindow { os }
    }
}

impl<O: JitOs> Drop for WriteWindow<'_, O> {
    fn drop(&mut self) {
        self.os.set_write_protect(true);
    }
}

/// One `MAP_JIT` mapping; unmapped on drop.
pub struct JitMapping<O: JitOs> {
    ptr: NonNull<u8>,
    len: usize,
    os: O,
}

// SAFETY: the mapping is plain memory owned by this value; which thread may
// write or execute it is governed by the per-thread protection, not by the
// thread that owns the value. Shared references only read the pointer.
unsafe impl<O: JitOs> Send for JitMapping<O> {}
// SAFETY: as above; `&JitMapping` gives no way to write.
unsafe impl<O: JitOs> Sync for JitMapping<O> {}

impl<O: JitOs> Drop for JitMapping<O> {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` came from `map_jit` and this value owns them; it
        // is being dropped, so nothing runs or reads from the mapping.
        unsafe { self.os.unmap(self.ptr, self.len) };
    }
}

/// The `MAP_JIT` backend over some [`JitOs`].
pub struct AppleJit<O: JitOs> {
    os: O,
}

impl<O: JitOs> AppleJit<O> {
    pub const fn with_os(os: O) -> AppleJit<O> {
        AppleJit { os }
    }
}

impl<O: JitOs> Backend for AppleJit<O> {
    type Blank = JitMapping<O>;
    type Code = JitMapping<O>;

    fn map(&self, len: usize) -> Result<JitMapping<O>, MemoryError> {
        let ptr = self.os.map_jit(len).map_err(MemoryError::Map)?;
        Ok(JitMapping {
            ptr,
            len,
            os: self.os.clone(),
        })
    }

    fn install(&self, blank: JitMapping<O>, code: &[u8]) -> Result<JitMapping<O>, MemoryError> {
        assert!(blank.len >= code.len(), "mapping smaller than its code");
        {
            let _window = WriteWindow::open(&self.os);
            // SAFETY: `blank` is a mapping of at least `code.len()` bytes owned
            // by this function alone (fresh, or out of the pool): no thread runs
            // code from it and no reference to its bytes exists. The open window
            // makes it writable for this thread.
            unsafe {
                std::ptr::copy_nonoverlapping(code.as_ptr(), blank.ptr.as_ptr(), code.len());
            }
        }
        // SAFETY: the range is the code just copied into the live mapping.
        unsafe { self.os.invalidate_icache(blank.ptr, code.len()) };
        Ok(blank)
    }

    fn code_ptr(code: &JitMapping<O>) -> *const u8 {
        code.ptr.as_ptr()
    }

    fn mapping_len(code: &JitMapping<O>) -> usize {
        code.len
    }

    fn retire(&self, code: JitMapping<O>) -> Option<JitMapping<O>> {
        // Protection is per thread, not per mapping: nothing to change.
        Some(code)
    }
}

#[cfg(all(target_os = "macos", target_arch = "aarch64"))]
pub use macos::{Libc, host_support};

#[cfg(all(target_os = "macos", target_arch = "aarch64"))]
mod macos {
    use super::{AppleJit, JitOs};
    use std::io;
    use std::ptr::NonNull;
    use std::sync::OnceLock;

    unsafe extern "C" {
        /// `<libkern/OSCacheControl.h>`, in libSystem.
        fn sys_icache_invalidate(start: *mut std::ffi::c_void, len: usize);
    }

    /// The real system calls (libSystem through the `libc` crate).
    #[derive(Clone, Copy)]
    pub struct Libc;

    impl AppleJit<Libc> {
        pub const HOST: AppleJit<Libc> = AppleJit::with_os(Libc);
    }

    impl JitOs for Libc {
        fn map_jit(&self, len: usize) -> io::Result<NonNull<u8>> {
            // SAFETY: an anonymous private mapping at an address the kernel
            // picks; no existing memory is affected.
            let ptr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE | libc::PROT_EXEC,
                    libc::MAP_PRIVATE | libc::MAP_ANON | libc::MAP_JIT,
                    -1,
                    0,
                )
            };
            if ptr == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            NonNull::new(ptr.cast()).ok_or_else(|| io::Error::other("mmap returned null"))
        }

        unsafe fn unmap(&self, ptr: NonNull<u8>, len: usize) {
            // SAFETY: the caller passes exactly a live mapping nothing uses.
            // Failure would leave the mapping in place (a leak, not a hazard).
            unsafe { libc::munmap(ptr.as_ptr().cast(), len) };
        }

        fn set_write_protect(&self, protect: bool) {
            // SAFETY: only switches the calling thread's view of JIT pages.
            unsafe { libc::pthread_jit_write_protect_np(i32::from(protect)) };
        }

        unsafe fn invalidate_icache(&self, ptr: NonNull<u8>, len: usize) {
            // SAFETY: the caller passes a range inside a live mapping; this is
            // cache maintenance only.
            unsafe { sys_icache_invalidate(ptr.as_ptr().cast(), len) };
        }
    }

    /// Whether this process may have JIT pages: the hardware switch exists and
    /// a `MAP_JIT` mapping is granted (a hardened-runtime app needs the
    /// `com.apple.security.cs.allow-jit` entitlement). Probed once.
    pub fn host_support() -> Result<(), &'static str> {
        static PROBE: OnceLock<Result<(), &'static str>> = OnceLock::new();
        *PROBE.get_or_init(|| {
            // SAFETY: a query without side effects.
            if unsafe { libc::pthread_jit_write_protect_supported_np() } == 0 {
                return Err("this Mac cannot switch JIT write protection per thread");
            }
            let len = super::super::MIN_CLASS_BYTES;
            match Libc.map_jit(len) {
                // SAFETY: the mapping just made, used by nothing.
                Ok(ptr) => unsafe { Libc.unmap(ptr, len) },
                Err(_) => {
                    return Err(
                        "MAP_JIT refused: a hardened-runtime app needs the com.apple.security.cs.allow-jit entitlement",
                    );
                }
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::Provider;
    use super::*;
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};
    use std::thread::ThreadId;

    /// What the fake saw, in order.
    #[derive(Clone, Debug, PartialEq, Eq)]
    enum Call {
        Map(usize),
        Unmap(usize),
        /// `set_write_protect(false)`: pages writable for this thread.
        OpenWrites,
        /// `set_write_protect(true)`: pages executable for this thread.
        CloseWrites,
        Invalidate(usize),
    }

    #[derive(Default)]
    struct FakeState {
        calls: Vec<(ThreadId, Call)>,
        /// Threads that currently see JIT pages writable (absent: executable,
        /// every thread's initial state).
        writable: HashMap<ThreadId, bool>,
        /// Mappings handed out and not unmapped, by address: their backing
        /// heap memory.
        live: HashMap<usize, Box<[u8]>>,
        refuse_maps: bool,
    }

    /// Plays the system: mappings are heap blocks, the protection state is
    /// kept per thread, and every call is recorded.
    #[derive(Clone, Default)]
    struct FakeOs(Arc<Mutex<FakeState>>);

    impl FakeOs {
        fn state(&self) -> std::sync::MutexGuard<'_, FakeState> {
            self.0.lock().unwrap()
        }
        fn record(&self, call: Call) {
            self.state().calls.push((std::thread::current().id(), call));
        }
        fn calls(&self) -> Vec<Call> {
            self.state().calls.iter().map(|(_, c)| c.clone()).collect()
        }
        fn writable_here(&self) -> bool {
            let me = std::thread::current().id();
            self.state().writable.get(&me).copied().unwrap_or(false)
        }
        fn live(&self) -> usize {
            self.state().live.len()
        }
    }

    impl JitOs for FakeOs {
        fn map_jit(&self, len: usize) -> io::Result<NonNull<u8>> {
            if self.state().refuse_maps {
                return Err(io::Error::from(io::ErrorKind::PermissionDenied));
            }
            let mut block = vec![0u8; len].into_boxed_slice();
            let ptr = NonNull::new(block.as_mut_ptr()).unwrap();
            self.state().live.insert(ptr.as_ptr() as usize, block);
            self.record(Call::Map(len));
            Ok(ptr)
        }
        unsafe fn unmap(&self, ptr: NonNull<u8>, len: usize) {
            let block = self.state().live.remove(&(ptr.as_ptr() as usize));
            assert_eq!(block.map(|b| b.len()), Some(len), "unmapping no mapping");
            self.record(Call::Unmap(len));
        }
        fn set_write_protect(&self, protect: bool) {
            let me = std::thread::current().id();
            self.state().writable.insert(me, !protect);
            self.record(if protect {
                Call::CloseWrites
            } else {
                Call::OpenWrites
            });
        }
        unsafe fn invalidate_icache(&self, ptr: NonNull<u8>, len: usize) {
            assert!(
                !self.writable_here(),
                "cache invalidated inside a write window"
            );
            assert!(self.state().live.contains_key(&(ptr.as_ptr() as usize)));
            self.record(Call::Invalidate(len));
        }
    }

    /// A provider of its own per test (leaked: regions refer to it for the
    /// rest of the process, as they do to the host's).
    fn provider(os: &FakeOs) -> &'static Provider<AppleJit<FakeOs>> {
        Box::leak(Box::new(Provider::new(AppleJit::with_os(os.clone()))))
    }

    fn bytes(ptr: *const u8, len: usize) -> Vec<u8> {
        // SAFETY: the tests read only inside a live fake mapping (heap memory).
        unsafe { std::slice::from_raw_parts(ptr, len).to_vec() }
    }

    #[test]
    fn code_is_copied_inside_one_write_window_then_the_cache_is_invalidated() {
        let os = FakeOs::default();
        let jit = provider(&os);
        let region = jit.region(&[1, 2, 3, 4, 5]).unwrap();
        assert_eq!(bytes(region.as_ptr(), 5), [1, 2, 3, 4, 5]);
        assert_eq!(region.code_len(), 5);
        assert_eq!(
            os.calls(),
            [
                Call::Map(16 * 1024),
                Call::OpenWrites,
                Call::CloseWrites,
                Call::Invalidate(5),
            ]
        );
        assert!(
            !os.writable_here(),
            "the compiling thread was left writable"
        );
    }

    #[test]
    fn a_retired_mapping_is_reused_without_mapping_or_unmapping() {
        let os = FakeOs::default();
        let jit = provider(&os);
        let first = jit.region(&[0xAA; 100]).unwrap();
        let address = first.as_ptr();
        drop(first);
        assert_eq!(jit.pooled(), 1);
        assert_eq!(os.live(), 1);
        let second = jit.region(&[0xBB; 7000]).unwrap();
        assert_eq!(
            second.as_ptr(),
            address,
            "the pooled mapping was not reused"
        );
        assert_eq!(bytes(second.as_ptr(), 7000), vec![0xBB; 7000]);
        assert_eq!(jit.pooled(), 0);
        let maps = os
            .calls()
            .iter()
            .filter(|c| matches!(c, Call::Map(_)))
            .count();
        assert_eq!(maps, 1);
        assert!(!os.calls().iter().any(|c| matches!(c, Call::Unmap(_))));
        // Every write window closed, in order.
        let windows: Vec<_> = os
            .calls()
            .into_iter()
            .filter(|c| matches!(c, Call::OpenWrites | Call::CloseWrites))
            .collect();
        assert_eq!(
            windows,
            [
                Call::OpenWrites,
                Call::CloseWrites,
                Call::OpenWrites,
                Call::CloseWrites
            ]
        );
    }

    #[test]
    fn size_classes_are_pooled_apart_and_a_full_class_unmaps_the_extra() {
        let os = FakeOs::default();
        let jit = provider(&os);
        let small: Vec<_> = (0..super::super::MAX_FREE_PER_CLASS + 3)
            .map(|_| jit.region(&[0; 10]).unwrap())
            .collect();
        let large = jit.region(&[0; 20_000]).unwrap();
        assert_eq!(os.live(), super::super::MAX_FREE_PER_CLASS + 4);
        drop(small);
        drop(large);
        assert_eq!(jit.pooled(), super::super::MAX_FREE_PER_CLASS + 1);
        assert_eq!(os.live(), super::super::MAX_FREE_PER_CLASS + 1);
        let unmapped: Vec<_> = os
            .calls()
            .into_iter()
            .filter(|c| matches!(c, Call::Unmap(_)))
            .collect();
        assert_eq!(unmapped, vec![Call::Unmap(16 * 1024); 3]);
        // The 32 KiB mapping serves 32 KiB code only.
        let again = jit.region(&[0; 17_000]).unwrap();
        assert_eq!(jit.pooled(), super::super::MAX_FREE_PER_CLASS);
        drop(again);
    }

    #[test]
    fn a_refused_mapping_is_an_error_and_leaves_the_thread_executable() {
        let os = FakeOs::default();
        os.state().refuse_maps = true;
        let jit = provider(&os);
        let err = jit.region(&[0; 10]).unwrap_err();
        assert!(matches!(err, MemoryError::Map(_)), "{err}");
        assert!(!os.writable_here());
        assert_eq!(os.calls(), []);
    }

    #[test]
    fn the_write_window_closes_when_the_copy_unwinds() {
        let os = FakeOs::default();
        let result = std::panic::catch_unwind(|| {
            let _window = WriteWindow::open(&os);
            assert!(os.writable_here());
            panic!("copy failed");
        });
        assert!(result.is_err());
        assert!(!os.writable_here());
        assert_eq!(os.calls(), [Call::OpenWrites, Call::CloseWrites]);
    }

    #[test]
    fn write_windows_are_per_thread() {
        let os = FakeOs::default();
        let jit = provider(&os);
        let window = WriteWindow::open(&os);
        assert!(os.writable_here());
        // Another thread compiles meanwhile: its window opens and closes on
        // that thread only; this thread's stays open.
        let other = std::thread::spawn({
            let os = os.clone();
            move || {
                assert!(!os.writable_here(), "a new thread starts executable");
                let region = jit.region(&[9; 3]).unwrap();
                assert!(!os.writable_here());
                (std::thread::current().id(), bytes(region.as_ptr(), 3))
            }
        });
        let (other_id, code) = other.join().unwrap();
        assert_eq!(code, [9, 9, 9]);
        assert!(
            os.writable_here(),
            "another thread closed this thread's window"
        );
        drop(window);
        assert!(!os.writable_here());
        let me = std::thread::current().id();
        let sequence: Vec<_> = os.state().calls.clone();
        let by = |id| {
            sequence
                .iter()
                .filter(|(t, c)| *t == id && !matches!(c, Call::Map(_) | Call::Unmap(_)))
                .map(|(_, c)| c.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(by(me), [Call::OpenWrites, Call::CloseWrites]);
        assert_eq!(
            by(other_id),
            [Call::OpenWrites, Call::CloseWrites, Call::Invalidate(3)]
        );
    }
}
