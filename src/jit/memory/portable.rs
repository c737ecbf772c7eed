//! Executable memory through `memmap2` (every host but Apple Silicon): the
//! code is copied in while the mapping is read+write, then the whole mapping
//! is switched to read+execute with one protection change (`mprotect` on Unix,
//! `VirtualProtect` on Windows), and back to read+write when it is retired.

use super::icache::flush_icache;
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
