//! Executable memory: a pool of mappings with W^X discipline.
//!
//! Each compiled shader gets a mapping of its own; when the shader is dropped
//! the mapping is kept, by size class, for later compilations, so compiling
//! usually costs a copy and one protection change rather than a fresh map/unmap
//! cycle. No mapping is ever writable and executable at once for any thread.
//!
//! Three backends provide the mappings:
//! - [`guarded`] (every Unix host but Apple Silicon): `mmap`/`mprotect`; the
//!   code is copied in while the mapping is read+write, then the whole
//!   mapping is switched to read+execute. Each mapping lies between two
//!   inaccessible guard pages, so a protection change never merges or splits
//!   kernel memory areas (which made it cost twice as much).
//! - [`portable`] (other hosts, Windows): the same discipline through
//!   `memmap2`'s mapping and protection API (`VirtualProtect` on Windows).
//! - [`apple_jit`] (macOS on AArch64): `MAP_JIT` mappings whose write
//!   protection is switched per thread (`pthread_jit_write_protect_np`), as
//!   Apple Silicon requires of hardened processes.
//!
//! What each operating system needs is in `docs/executable-memory.md`.

#[cfg(any(test, all(target_os = "macos", target_arch = "aarch64")))]
mod apple_jit;
#[cfg(all(unix, not(all(target_os = "macos", target_arch = "aarch64"))))]
mod guarded;
#[cfg(any(test, not(all(target_os = "macos", target_arch = "aarch64"))))]
mod icache;
mod pool;
#[cfg(any(
    test,
    not(any(unix, all(target_os = "macos", target_arch = "aarch64")))
))]
mod portable;

use pool::Pool;
use std::sync::Mutex;

/// Mappings come in power-of-two sizes of at least this many bytes (a multiple
/// of every page size in use: 4 KiB, and 16 KiB on Apple Silicon), so a freed
/// mapping fits any later code of the same class; a backend that knows the
/// page size may start its classes there instead ([`Backend::min_class`]).
const MIN_CLASS_BYTES: usize = 16 * 1024;

/// Freed mappings kept per size class; beyond this they are unmapped.
const MAX_FREE_PER_CLASS: usize = 64;

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

/// One way of getting executable memory from the operating system: mappings
/// that wait for code in the pool, and mappings that hold code.
pub trait Backend: Sync + 'static {
    /// A mapping ready to receive code (what the pool keeps).
    type Blank: Send;
    /// A mapping holding code, executable.
    type Code: Send + Sync;

    /// The smallest size class (a power of two, a multiple of the page size).
    fn min_class(&self) -> usize {
        MIN_CLASS_BYTES
    }
    /// A fresh mapping of `len` bytes (a size class).
    fn map(&self, len: usize) -> Result<Self::Blank, MemoryError>;
    /// Copies `code` to the start of `blank` and makes it executable; on failure
    /// the mapping is dropped (unmapped): it never held running code.
    fn install(&self, blank: Self::Blank, code: &[u8]) -> Result<Self::Code, MemoryError>;
    /// Start of the code.
    fn code_ptr(code: &Self::Code) -> *const u8;
    /// Size of the mapping (its class).
    fn mapping_len(code: &Self::Code) -> usize;
    /// Makes a mapping whose code no longer runs ready for new code, or `None`
    /// when that failed (the mapping is then unmapped).
    fn retire(&self, code: Self::Code) -> Option<Self::Blank>;
}

/// A backend and its pool of blank mappings.
pub struct Provider<B: Backend> {
    backend: B,
    free: Mutex<Pool<B::Blank>>,
}

impl<B: Backend> Provider<B> {
    pub const fn new(backend: B) -> Provider<B> {
        Provider {
            backend,
            free: Mutex::new(Pool::new(MAX_FREE_PER_CLASS)),
        }
    }

    fn pool(&self) -> std::sync::MutexGuard<'_, Pool<B::Blank>> {
        self.free.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Copies `code` into a recycled or fresh mapping and makes it executable.
    pub fn region(&'static self, code: &[u8]) -> Result<Region<B>, MemoryError> {
        let class = size_class(code.len(), self.backend.min_class());
        let recycled = self.pool().take(class);
        let blank = match recycled {
            Some(blank) => blank,
            None => self.backend.map(class)?,
        };
        let code_in_place = self.backend.install(blank, code)?;
        Ok(Region {
            code: Some(code_in_place),
            len: code.len(),
            provider: self,
        })
    }

    /// Blank mappings currently kept.
    #[cfg(test)]
    pub(crate) fn pooled(&self) -> usize {
        self.pool().len()
    }
}

/// A read+execute region holding one compiled shader; its mapping goes back to
/// its provider's pool on drop.
pub struct Region<B: Backend> {
    /// `None` only while being dropped.
    code: Option<B::Code>,
    len: usize,
    provider: &'static Provider<B>,
}

impl<B: Backend> Region<B> {
    /// Start of the code.
    pub fn as_ptr(&self) -> *const u8 {
        self.code.as_ref().map_or(std::ptr::null(), B::code_ptr)
    }

    /// Length of the code in bytes.
    pub fn code_len(&self) -> usize {
        self.len
    }

    /// Size of the mapping holding the code (its class).
    #[cfg(test)]
    pub(crate) fn mapping_len(&self) -> usize {
        self.code.as_ref().map_or(0, B::mapping_len)
    }
}

impl<B: Backend> std::fmt::Debug for Region<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecRegion")
            .field("ptr", &self.as_ptr())
            .field("len", &self.len)
            .finish()
    }
}

impl<B: Backend> Drop for Region<B> {
    fn drop(&mut self) {
        let Some(code) = self.code.take() else { return };
        let class = B::mapping_len(&code);
        // The region is being dropped, so no code runs from it any more.
        if let Some(blank) = self.provider.backend.retire(code) {
            // A mapping the full pool hands back is dropped (unmapped) after
            // the lock is released.
            let rejected = self.provider.pool().put(class, blank);
            drop(rejected);
        }
    }
}

#[cfg(all(target_os = "macos", target_arch = "aarch64"))]
type HostBackend = apple_jit::AppleJit<apple_jit::Libc>;
#[cfg(all(unix, not(all(target_os = "macos", target_arch = "aarch64"))))]
type HostBackend = guarded::Guarded;
#[cfg(not(any(unix, all(target_os = "macos", target_arch = "aarch64"))))]
type HostBackend = portable::Portable;

static HOST: Provider<HostBackend> = Provider::new(HostBackend::HOST);

/// Executable memory of this host (see the module documentation).
pub type ExecRegion = Region<HostBackend>;

impl ExecRegion {
    /// Copies `code` into a fresh or recycled mapping and makes it executable.
    pub fn new(code: &[u8]) -> Result<ExecRegion, MemoryError> {
        host_support().map_err(MemoryError::Unsupported)?;
        HOST.region(code)
    }
}

/// Whether this OS can give generated code executable memory the way this module
/// does, and if not, why (the JIT is then unavailable and `auto` picks the
/// interpreter).
pub fn host_support() -> Result<(), &'static str> {
    #[cfg(all(target_os = "macos", target_arch = "aarch64"))]
    {
        apple_jit::host_support()
    }
    #[cfg(all(
        target_vendor = "apple",
        not(target_os = "macos"),
        target_arch = "aarch64"
    ))]
    {
        // iOS and tvOS: MAP_JIT needs the `dynamic-codesigning` entitlement,
        // which Apple grants to no App Store app, and the SDK declares the
        // per-thread write switch for macOS only (docs/executable-memory.md).
        Err("iOS and tvOS allow JIT pages only with the dynamic-codesigning entitlement")
    }
    #[cfg(not(all(target_vendor = "apple", target_arch = "aarch64")))]
    {
        if cfg!(any(unix, windows)) {
            Ok(())
        } else {
            Err("no memory-mapping API on this operating system")
        }
    }
}

/// The mapping size for `len` bytes of code: a power of two of at least
/// `min_class` bytes.
fn size_class(len: usize, min_class: usize) -> usize {
    len.max(1).next_power_of_two().max(min_class)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel memory area holding `addr` (start, end) and its permissions,
    /// from `/proc/self/maps` (x86-64 only: under qemu-user the file is the
    /// emulator's rendering).
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    fn area(addr: usize) -> (usize, usize, String) {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        maps.lines()
            .find_map(|line| {
                let (range, rest) = line.split_once(' ')?;
                let (start, end) = range.split_once('-')?;
                let start = usize::from_str_radix(start, 16).ok()?;
                let end = usize::from_str_radix(end, 16).ok()?;
                (start <= addr && addr < end).then(|| (start, end, rest[..4].to_string()))
            })
            .unwrap_or_else(|| panic!("{addr:#x} is not mapped"))
    }

    /// The permissions of the memory holding `addr`.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    fn permissions(addr: usize) -> String {
        area(addr).2
    }

    #[test]
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    fn code_is_read_execute_never_writable() {
        assert_eq!(host_support(), Ok(()));
        let region = ExecRegion::new(&[0xC3; 100]).unwrap();
        assert_eq!(permissions(region.as_ptr() as usize), "r-xp");
        // The whole mapping, not only the code's first page.
        let last = region.as_ptr() as usize + region.mapping_len() - 1;
        assert_eq!(permissions(last), "r-xp");
    }

    /// The Unix backend, with a pool of its own (other tests compile on other
    /// threads of this process and would take mappings from the host's pool).
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    static GUARDED: Provider<guarded::Guarded> = Provider::new(guarded::Guarded::HOST);

    #[test]
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    fn a_mapping_is_written_only_while_not_executable_and_sits_between_guards() {
        let page = guarded::Guarded::HOST.min_class();
        // Blank: read+write, not executable.
        let blank = guarded::Guarded::HOST.map(page).unwrap();
        let region = GUARDED.region(&[0xC3; 100]).unwrap();
        let start = region.as_ptr() as usize;
        let len = region.mapping_len();
        assert_eq!(len, page);
        // Code: read+execute over the whole mapping, inaccessible guards on
        // both sides.
        assert_eq!(area(start), (start, start + len, "r-xp".to_string()));
        assert_eq!(permissions(start - 1), "---p");
        assert_eq!(permissions(start + len), "---p");
        // SAFETY: the region holds `ret` at its start and is read+execute.
        let ret: extern "C" fn() = unsafe { std::mem::transmute(region.as_ptr()) };
        ret();
        // Retired: read+write again, not executable, guards unchanged.
        drop(region);
        assert_eq!(area(start), (start, start + len, "rw-p".to_string()));
        assert_eq!(permissions(start - 1), "---p");
        assert_eq!(permissions(start + len), "---p");
        drop(blank);
        // The next code of the class goes into the retired mapping.
        let again = GUARDED.region(&[0x90, 0xC3]).unwrap();
        assert_eq!(again.as_ptr() as usize, start);
        assert_eq!(area(start), (start, start + len, "r-xp".to_string()));
        // SAFETY: as above (`nop; ret`).
        let nop_ret: extern "C" fn() = unsafe { std::mem::transmute(again.as_ptr()) };
        nop_ret();
    }

    #[test]
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    fn neighbouring_mappings_stay_kernel_areas_of_their_own() {
        // Mapped one after the other, the kernel places them next to each
        // other; without the guards the two read+write areas would be merged
        // into one (and split again by the next protection change).
        let page = guarded::Guarded::HOST.min_class();
        let blanks: Vec<_> = (0..4)
            .map(|_| guarded::Guarded::HOST.map(2 * page).unwrap())
            .collect();
        let code: Vec<_> = blanks
            .into_iter()
            .map(|blank| guarded::Guarded::HOST.install(blank, &[0xC3]).unwrap())
            .collect();
        for c in &code {
            let start = guarded::Guarded::code_ptr(c) as usize;
            assert_eq!(area(start), (start, start + 2 * page, "r-xp".to_string()));
        }
        let blanks: Vec<_> = code
            .into_iter()
            .map(|c| guarded::Guarded::HOST.retire(c).unwrap())
            .collect();
        for b in &blanks {
            let start = b.as_ptr() as usize;
            assert_eq!(area(start), (start, start + 2 * page, "rw-p".to_string()));
        }
    }

    #[test]
    fn size_classes_are_powers_of_two_of_at_least_the_smallest_class() {
        assert_eq!(size_class(0, MIN_CLASS_BYTES), 16 * 1024);
        assert_eq!(size_class(10, MIN_CLASS_BYTES), 16 * 1024);
        assert_eq!(size_class(16 * 1024, MIN_CLASS_BYTES), 16 * 1024);
        assert_eq!(size_class(16 * 1024 + 1, MIN_CLASS_BYTES), 32 * 1024);
        assert_eq!(size_class(100_000, MIN_CLASS_BYTES), 128 * 1024);
        assert_eq!(size_class(10, 4096), 4096);
        assert_eq!(size_class(4097, 4096), 8192);
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
        assert!(HOST.pooled() >= 1);
    }

    #[test]
    fn the_memmap2_backend_copies_the_code_and_reuses_mappings() {
        static PORTABLE: Provider<portable::Portable> = Provider::new(portable::Portable::HOST);
        let a = PORTABLE.region(&[0xC3, 0x90, 0x17]).unwrap();
        let start = a.as_ptr();
        assert_eq!(a.mapping_len(), MIN_CLASS_BYTES);
        // SAFETY: reading bytes of a live read+execute region.
        assert_eq!(
            unsafe { std::slice::from_raw_parts(start, 3) },
            [0xC3, 0x90, 0x17]
        );
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        assert_eq!(permissions(start as usize), "r-xp");
        drop(a);
        let b = PORTABLE.region(&[0x42]).unwrap();
        assert_eq!(b.as_ptr(), start);
        // SAFETY: as above.
        assert_eq!(unsafe { *b.as_ptr() }, 0x42);
    }
}
