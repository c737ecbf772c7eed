//! Making freshly written code visible to instruction fetch.

/// Makes the instruction stream see the bytes just written (AArch64 has no
/// coherence between data stores and instruction fetch).
#[cfg(all(target_arch = "aarch64", not(windows)))]
pub(super) fn flush_icache(ptr: *const u8, len: usize) {
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
pub(super) fn flush_icache(ptr: *const u8, len: usize) {
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
pub(super) fn flush_icache(_ptr: *const u8, _len: usize) {
    // x86-64 keeps instruction fetch coherent with stores.
}
