//! Executable memory: a pool of mappings with W^X discipline, through
//! `memmap2`'s portable mapping and protection API (`mmap`/`mprotect` on Unix,
//! `VirtualAlloc`-style views and `VirtualProtect` on Windows).
//!
//! Each compiled shader gets a mapping of its own: the code is copied into it
//! while it is read+write, then the whole mapping is switched to read+execute
//! with one protection change; no mapping is ever writable and executable at
//! once. When a shader is dropped its mapping is switched back to read+write and
//! kept, by size class, for later compilations, so compiling usually costs a
//! copy and one protection change rather than a fresh map/unmap cycle. What each
//! operating system needs is in `docs/executable-memory.md`.

use std::collections::HashMap;
use std::sync::Mutex;

/// Mappings come in power-of-two sizes of at least this many bytes (a multiple
/// of every page size in use: 4 KiB, and 16 KiB on Apple Silicon), so a freed
/// mapping fits any later code of the same class.
const MIN_CLASS_BYTES: usize = 16 * 1024;

/// Freed mappings kept per size class; beyond this they are unmapped.
const MAX_FREE_PER_CLASS: usize = 64;

/// Read+write mappings waiting for code, by size in bytes.
static FREE: Mutex<Option<HashMap<usize, Vec<memmap2::MmapMut>>>> = Mutex::new(None);

/// Errors from the operating system while providing executable memory.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// Mapping memory failed.
    #[error("cannot map memory for generated code: {0}")]
    Map(std::io::Error),
    /// Changing page protection failed.
    #[error(
        "cannot change protection of generated code: {0} (see docs/executable-memory.md for what this OS needs)"
    )]
    Protect(std::io::Error),
    /// This operating system needs a kind of executable memory pica-jit does not
    /// provide.
    #[error("executable memory is not supported here: {0}")]
    Unsupported(&'static str),
}

/// Whether this OS can give generated code executable memory the way this module
/// does, and if not, why (the JIT is then unavailable and `auto` picks the
/// interpreter).
pub fn host_support() -> Result<(), &'static str> {
    if cfg!(all(target_vendor = "apple", target_arch = "aarch64")) {
        // Apple Silicon refuses to make ordinary pages executable in hardened
        // processes; JIT pages need MAP_JIT and per-thread write protection
        // (pthread_jit_write_protect_np), which memmap2 does not offer.
        Err("Apple Silicon needs MAP_JIT pages, which pica-jit does not allocate yet")
    } else if cfg!(all(windows, target_arch = "aarch64")) {
        Err("Windows on ARM needs an instruction-cache flush pica-jit does not perform yet")
    } else if cfg!(any(unix, windows)) {
        Ok(())
    } else {
        Err("no memory-mapping API on this operating system")
    }
}

/// A read+execute region holding one compiled shader; its mapping goes back to
/// the pool on drop.
#[derive(Debug)]
pub struct ExecRegion {
    /// `None` only while being dropped.
    map: Option<memmap2::Mmap>,
    len: usize,
}

impl ExecRegion {
    /// Copies `code` into a fresh or recycled mapping and makes it executable.
    pub fn new(code: &[u8]) -> Result<ExecRegion, MemoryError> {
        host_support().map_err(MemoryError::Unsupported)?;
        let class = size_class(code.len());
        let recycled = FREE
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
            .and_then(|free| free.get_mut(&class))
            .and_then(Vec::pop);
        let mut writable = match recycled {
            Some(map) => map,
            None => memmap2::MmapMut::map_anon(class).map_err(MemoryError::Map)?,
        };
        debug_assert!(writable.len() >= code.len());
        // SAFETY: `writable` is a read+write mapping of at least `code.len()` bytes
        // owned by this function alone (fresh, or taken out of the free list): no
        // other thread reads or executes it, and no reference to its bytes exists,
        // so writing through the raw pointer aliases nothing.
        unsafe {
            std::ptr::copy_nonoverlapping(code.as_ptr(), writable.as_mut_ptr(), code.len());
        }
        // On failure the mapping is dropped (unmapped): it never held running code.
        let map = writable.make_exec().map_err(MemoryError::Protect)?;
        flush_icache(map.as_ptr(), code.len());
        Ok(ExecRegion {
            map: Some(map),
            len: code.len(),
        })
    }

    /// Start of the code.
    pub fn as_ptr(&self) -> *const u8 {
        self.map
            .as_ref()
            .map_or(std::ptr::null(), |map| map.as_ptr())
    }

    /// Length of the code in bytes.
    pub fn code_len(&self) -> usize {
        self.len
    }
}

fn size_class(len: usize) -> usize {
    len.max(1).next_power_of_two().max(MIN_CLASS_BYTES)
}

impl Drop for ExecRegion {
    fn drop(&mut self) {
        let Some(map) = self.map.take() else { return };
        let class = map.len();
        // The region is being dropped, so no code runs from it any more. If the
        // protection change fails, `make_mut` drops (unmaps) the mapping instead.
        if let Ok(writable) = map.make_mut() {
            let mut free = FREE.lock().unwrap_or_else(|e| e.into_inner());
            let list = free
                .get_or_insert_with(HashMap::new)
                .entry(class)
                .or_default();
            if list.len() < MAX_FREE_PER_CLASS {
                list.push(writable);
            }
        }
    }
}

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

#[cfg(not(all(target_arch = "aarch64", not(windows))))]
fn flush_icache(_ptr: *const u8, _len: usize) {
    // x86-64 keeps instruction fetch coherent with stores (and Windows on ARM is
    // refused by `host_support`).
}

#[cfg(test)]
mod tests {
    use super::*;

    fn free_mappings() -> usize {
        FREE.lock()
            .unwrap()
            .as_ref()
            .map_or(0, |free| free.values().map(Vec::len).sum())
    }

    /// The permissions of the mapping holding `addr`, from `/proc/self/maps`
    /// (x86-64 only: under qemu-user the file is the emulator's rendering).
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    fn permissions(addr: usize) -> String {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        maps.lines()
            .find_map(|line| {
                let (range, rest) = line.split_once(' ')?;
                let (start, end) = range.split_once('-')?;
                let start = usize::from_str_radix(start, 16).ok()?;
                let end = usize::from_str_radix(end, 16).ok()?;
                (start <= addr && addr < end).then(|| rest[..4].to_string())
            })
            .unwrap_or_else(|| panic!("{addr:#x} is not mapped"))
    }

    #[test]
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    fn code_is_read_execute_never_writable() {
        assert_eq!(host_support(), Ok(()));
        let region = ExecRegion::new(&[0xC3; 100]).unwrap();
        assert_eq!(permissions(region.as_ptr() as usize), "r-xp");
        // The whole mapping, not only the code's first page.
        let last = region.as_ptr() as usize + MIN_CLASS_BYTES - 1;
        assert_eq!(permissions(last), "r-xp");
    }

    #[test]
    fn size_classes_are_powers_of_two_of_at_least_16_kib() {
        assert_eq!(size_class(0), 16 * 1024);
        assert_eq!(size_class(10), 16 * 1024);
        assert_eq!(size_class(16 * 1024), 16 * 1024);
        assert_eq!(size_class(16 * 1024 + 1), 32 * 1024);
        assert_eq!(size_class(100_000), 128 * 1024);
    }

    #[test]
    fn regions_are_read_execute_and_mappings_are_reused() {
        let a = ExecRegion::new(&[0xC3; 10]).unwrap();
        let b = ExecRegion::new(&[0x90; 5000]).unwrap();
        assert_eq!(a.code_len(), 10);
        // SAFETY: reading bytes of a live read+execute region.
        assert_eq!(unsafe { *a.as_ptr() }, 0xC3);
        // SAFETY: as above.
        assert_eq!(unsafe { *b.as_ptr().add(4999) }, 0x90);
        assert_ne!(a.as_ptr(), b.as_ptr());
        drop(b);
        // A dropped region's mapping serves the next compilation of its class,
        // with the new code in it.
        let mut addresses = std::collections::HashSet::new();
        for i in 0..2000u32 {
            let r = ExecRegion::new(&vec![i as u8; 16 * 1024]).unwrap();
            // SAFETY: as above.
            assert_eq!(unsafe { *r.as_ptr().add(100) }, i as u8);
            addresses.insert(r.as_ptr() as usize);
        }
        // Other tests in this process compile too, so allow a few addresses.
        assert!(
            addresses.len() <= 8,
            "{} distinct mappings: freed mappings are not reused",
            addresses.len()
        );
        assert!(free_mappings() >= 1);
    }
}
