//! Executable memory on Unix (every Unix host but Apple Silicon): each mapping
//! lies between two inaccessible guard pages, so that switching it between
//! read+write and read+execute never merges it with, or splits it from, a
//! neighbouring mapping.
//!
//! Why: `mprotect` of a mapping whose neighbour has the protection it switches
//! to makes the kernel merge the two areas, and the next switch splits them
//! again. That bookkeeping was most of a protection change's cost (callgrind
//! cannot see it; thread CPU time on Linux 6.18, a 16 KiB mapping: 4.0–4.7 µs
//! a switch among read+write neighbours, 1.4–2.0 µs between guard pages),
//! and a compilation makes two switches (read+execute on install, read+write
//! when retired). The guards are `PROT_NONE`: no protection change ever makes
//! the mapping's area look like theirs.
//!
//! The discipline is `portable`'s: the code is copied in while the mapping is
//! read+write, then the whole mapping (never its guards) becomes read+execute
//! with one `mprotect`, and read+write again when its code is retired. No page
//! is ever writable and executable at once.

use super::icache::flush_icache;
use super::{Backend, MemoryError};
use std::io;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The guarded-mapping backend (stateless).
pub struct Guarded;

impl Guarded {
    pub const HOST: Guarded = Guarded;
}

/// A mapping of `len` bytes at `ptr` with one guard page on each side; the
/// whole reservation is unmapped on drop.
pub struct GuardedMapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by this value; moving the owner
// between threads changes nothing about who may write it (only the owner, and
// only while it is read+write).
unsafe impl Send for GuardedMapping {}
// SAFETY: a shared reference only reads the pointer and length.
unsafe impl Sync for GuardedMapping {}

impl GuardedMapping {
    /// Changes the protection of the mapping (not its guards).
    fn protect(&self, prot: libc::c_int) -> Result<(), MemoryError> {
        // SAFETY: `ptr..ptr + len` is exactly the accessible part of a live
        // reservation this value owns; changing its protection touches no
        // other memory.
        let result = unsafe { libc::mprotect(self.ptr.as_ptr().cast(), self.len, prot) };
        if result == 0 {
            Ok(())
        } else {
            Err(MemoryError::Protect(io::Error::last_os_error()))
        }
    }
}

impl Drop for GuardedMapping {
    fn drop(&mut self) {
        let page = page_size();
        // SAFETY: the reservation starts one guard page before `ptr` and ends
        // one after `ptr + len` (see `Guarded::map`); this value owns it and is
        // being dropped, so no code runs from it and nothing reads it.
        unsafe {
            libc::munmap(self.ptr.as_ptr().sub(page).cast(), self.len + 2 * page);
        }
    }
}

/// A mapping waiting for code: read+write, not executable.
pub struct Blank(GuardedMapping);

impl Blank {
    /// Start of the mapping (for the `/proc/self/maps` tests).
    #[cfg(all(test, target_os = "linux", target_arch = "x86_64"))]
    pub(crate) fn as_ptr(&self) -> *const u8 {
        self.0.ptr.as_ptr()
    }
}

/// A mapping holding code: read+execute, not writable.
pub struct Code(GuardedMapping);

impl Backend for Guarded {
    type Blank = Blank;
    type Code = Code;

    fn min_class(&self) -> usize {
        page_size()
    }

    fn map(&self, len: usize) -> Result<Blank, MemoryError> {
        let page = page_size();
        let total = len
            .checked_add(2 * page)
            .ok_or_else(|| MemoryError::Map(io::Error::from(io::ErrorKind::OutOfMemory)))?;
        // SAFETY: a fresh anonymous reservation at an address the kernel
        // chooses; it aliases nothing.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                total,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(MemoryError::Map(io::Error::last_os_error()));
        }
        // SAFETY: `base` is a reservation of `len + 2 * page` bytes, so one page
        // in stays inside it, and it is not null.
        let ptr = unsafe { NonNull::new_unchecked(base.cast::<u8>().add(page)) };
        // From here on, dropping the mapping unmaps the whole reservation.
        let mapping = GuardedMapping { ptr, len };
        mapping.protect(libc::PROT_READ | libc::PROT_WRITE)?;
        Ok(Blank(mapping))
    }

    fn install(&self, blank: Blank, code: &[u8]) -> Result<Code, MemoryError> {
        let mapping = blank.0;
        assert!(mapping.len >= code.len(), "mapping smaller than its code");
        // SAFETY: the mapping is read+write, at least `code.len()` bytes long
        // and owned by this function alone (fresh, or out of the pool): no
        // thread runs code from it and no reference to its bytes exists.
        unsafe {
            std::ptr::copy_nonoverlapping(code.as_ptr(), mapping.ptr.as_ptr(), code.len());
        }
        // On failure `mapping` is dropped (unmapped): it never held running code.
        mapping.protect(libc::PROT_READ | libc::PROT_EXEC)?;
        flush_icache(mapping.ptr.as_ptr(), code.len());
        Ok(Code(mapping))
    }

    fn code_ptr(code: &Code) -> *const u8 {
        code.0.ptr.as_ptr()
    }

    fn mapping_len(code: &Code) -> usize {
        code.0.len
    }

    fn retire(&self, code: Code) -> Option<Blank> {
        let mapping = code.0;
        mapping
            .protect(libc::PROT_READ | libc::PROT_WRITE)
            .ok()
            .map(|()| Blank(mapping))
    }
}

/// The host's page size (asked of the OS once): the smallest size class, and
/// the size of each guard.
fn page_size() -> usize {
    static PAGE: AtomicUsize = AtomicUsize::new(0);
    let known = PAGE.load(Ordering::Relaxed);
    if known != 0 {
        return known;
    }
    // SAFETY: `sysconf` only reads a system constant.
    let asked = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    // Page sizes are powers of two; should the OS not say, the pool's usual
    // smallest class (a multiple of every page size in use) is a safe guess:
    // a wrong one makes `mprotect` fail (a compile error), not misbehave.
    let page = usize::try_from(asked)
        .ok()
        .filter(|p| p.is_power_of_two())
        .unwrap_or(super::MIN_CLASS_BYTES);
    PAGE.store(page, Ordering::Relaxed);
    page
}

#[cfg(test)]
mod tests {
    // The permission tests are in `super::tests` (the host backend's regions).
    use super::*;

    #[test]
    fn the_smallest_class_is_the_page_size() {
        // SAFETY: as in `page_size`.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        assert_eq!(Guarded::HOST.min_class(), page);
        assert!(page.is_power_of_two());
    }
}
