//! Executable memory through `memmap2` (every host but Apple Silicon): the
//! code is copied in while the mapping is read+write, then the whole mapping
//! is switched to read+execute with one protection change (`mprotect` on Unix,
//! `VirtualProtect` on Windows), and back to read+write when it is retired.

use super::{Backend, MemoryError};

/// The `memmap2` backend (stateless).
pub struct Portable;

impl Portable {
    pub const HOST: Portable = Portable;
}

impl Backend for Portable {
    type Blank = memmap2::MmapMut;
    type Code = memmap2::Mmap;

    fn map(&self, len: usize) -> Result<memmap2::MmapMut, MemoryError> {
        memmap2::MmapMut::map_anon(len).map_err(MemoryError::Map)
    }

    fn install(
        &self,
        mut blank: memmap2::MmapMut,
        code: &[u8],
    ) -> Result<memmap2::Mmap, MemoryError> {
        assert!(blank.len() >= code.len(), "mapping smaller than its code");
        blank[..code.len()].copy_from_slice(code);
        let map = blank.make_exec().map_err(MemoryError::Protect)?;
        flush_icache(map.as_ptr(), code.len());
        Ok(map)
    }

    fn code_ptr(code: &memmap2::Mmap) -> *const u8 {
        code.as_ptr()
    }

    fn mapping_len(code: &memmap2::Mmap) -> usize {
        code.len()
    }

    fn retire(&self, code: memmap2::Mmap) -> Option<memmap2::MmapMut> {
        code.make_mut().ok()
    }
}

/// Makes the instruction stream see the bytes just written (AArch64 has no
/// coherence between data stores and instruction fetch).
#[cfg(all(target_arch = "aarch64", not(windows)))]
fn flush_icache(ptr: *const u8, len: usize) {
    unsafe extern "C" {
        fn __clear_cache(start: *mut std::ffi::c_char, end: *mut std::ffi::c_char);
    }
    // SAFETY: the range is inside a live mapping; __clear_cache (compiler-rt /
    // libgcc) only performs cache maintenance on it.
    unsafe {
        __clear_cache(
            ptr as *mut std::ffi::c_char,
            ptr.add(len) as *mut std::ffi::c_char,
        )
    };
}

/// Windows on ARM: the documented way is `FlushInstructionCache` on the
/// current process.
#[cfg(all(target_arch = "aarch64", windows))]
fn flush_icache(ptr: *const u8, len: usize) {
    use std::ffi::c_void;
    #[link(name = "kernel32")]
    unsafe extern "system" {
        fn GetCurrentProcess() -> *mut c_void;
        fn FlushInstructionCache(process: *mut c_void, base: *const c_void, size: usize) -> i32;
    }
    // SAFETY: GetCurrentProcess returns a pseudo-handle and cannot fail;
    // FlushInstructionCache only performs cache maintenance on a range inside
    // a live mapping of this process. It cannot fail for such a range, so its
    // result is not checked.
    unsafe {
        FlushInstructionCache(GetCurrentProcess(), ptr.cast(), len);
    }
}

#[cfg(not(target_arch = "aarch64"))]
fn flush_icache(_ptr: *const u8, _len: usize) {
    // x86-64 keeps instruction fetch coherent with stores.
}
