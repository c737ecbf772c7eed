//! Executable memory: a page pool with W^X discipline.
//!
//! Code is written into pages that are read+write, then the pages are switched
//! to read+execute with one `mprotect`; no page is ever writable and executable
//! at once. Chunks are mapped once and reused, so compiling a shader costs a
//! copy and one `mprotect`, not a fresh `mmap`/`mprotect`/`munmap` cycle. Freed
//! pages are switched back to read+write and handed to later compilations.

use std::sync::Mutex;

const CHUNK_BYTES: usize = 1 << 20;

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions; it only reads a system value.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 { size as usize } else { 4096 }
}

struct Chunk {
    /// Keeps the mapping alive for the life of the process.
    map: memmap2::MmapMut,
    /// Per page: in use by a live region.
    used: Vec<bool>,
}

struct Pool {
    page: usize,
    chunks: Vec<Chunk>,
}

// SAFETY: the pool only hands out disjoint page ranges; the raw mapping is never
// accessed concurrently without the mutex.
unsafe impl Send for Pool {}

static POOL: Mutex<Pool> = Mutex::new(Pool {
    page: 0,
    chunks: Vec::new(),
});

/// Errors from the operating system while providing executable memory.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// Mapping memory failed.
    #[error("cannot map memory for generated code: {0}")]
    Map(std::io::Error),
    /// Changing page protection failed.
    #[error("cannot change protection of generated code: {0}")]
    Protect(std::io::Error),
}

/// A read+execute region holding one compiled shader; returned to the pool on drop.
#[derive(Debug)]
pub struct ExecRegion {
    ptr: *const u8,
    len: usize,
    chunk: usize,
    first_page: usize,
    pages: usize,
}

// SAFETY: the region is immutable (read+execute) for its whole life.
unsafe impl Send for ExecRegion {}
// SAFETY: as above; shared references only read or execute it.
unsafe impl Sync for ExecRegion {}

impl ExecRegion {
    /// Copies `code` into fresh pages and makes them executable.
    pub fn new(code: &[u8]) -> Result<ExecRegion, MemoryError> {
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        if pool.page == 0 {
            pool.page = page_size();
        }
        let page = pool.page;
        let pages = code.len().div_ceil(page).max(1);
        let (chunk, first_page) = match pool.find(pages) {
            Some(found) => found,
            None => {
                let bytes = CHUNK_BYTES.max(pages * page);
                let map = memmap2::MmapMut::map_anon(bytes).map_err(MemoryError::Map)?;
                pool.chunks.push(Chunk {
                    map,
                    used: vec![false; bytes / page],
                });
                (pool.chunks.len() - 1, 0)
            }
        };
        let c = &mut pool.chunks[chunk];
        let start = first_page * page;
        c.map[start..start + code.len()].copy_from_slice(code);
        let ptr = c.map[start..].as_ptr();
        // SAFETY: `ptr..ptr + pages * page` lies inside this chunk's mapping and is
        // page aligned; no Rust reference to it outlives this call.
        let rc = unsafe {
            libc::mprotect(
                ptr as *mut libc::c_void,
                pages * page,
                libc::PROT_READ | libc::PROT_EXEC,
            )
        };
        if rc != 0 {
            return Err(MemoryError::Protect(std::io::Error::last_os_error()));
        }
        flush_icache(ptr, code.len());
        c.used[first_page..first_page + pages].fill(true);
        Ok(ExecRegion {
            ptr,
            len: code.len(),
            chunk,
            first_page,
            pages,
        })
    }

    /// Start of the code.
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr
    }

    /// Length of the code in bytes.
    pub fn code_len(&self) -> usize {
        self.len
    }
}

impl Pool {
    fn find(&self, pages: usize) -> Option<(usize, usize)> {
        for (ci, chunk) in self.chunks.iter().enumerate() {
            let mut run = 0;
            for (pi, &used) in chunk.used.iter().enumerate() {
                run = if used { 0 } else { run + 1 };
                if run == pages {
                    return Some((ci, pi + 1 - pages));
                }
            }
        }
        None
    }
}

impl Drop for ExecRegion {
    fn drop(&mut self) {
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        let page = pool.page;
        let c = &mut pool.chunks[self.chunk];
        // SAFETY: the pages belong to this region, which is being dropped, so no
        // code runs from them any more; they become plain read+write memory.
        let rc = unsafe {
            libc::mprotect(
                self.ptr as *mut libc::c_void,
                self.pages * page,
                libc::PROT_READ | libc::PROT_WRITE,
            )
        };
        if rc == 0 {
            c.used[self.first_page..self.first_page + self.pages].fill(false);
        }
        // On failure the pages stay marked used: leaked, never reused while executable.
    }
}

#[cfg(target_arch = "aarch64")]
fn flush_icache(ptr: *const u8, len: usize) {
    unsafe extern "C" {
        fn __clear_cache(start: *mut libc::c_char, end: *mut libc::c_char);
    }
    // SAFETY: the range is inside a live mapping; __clear_cache only performs cache
    // maintenance on it.
    unsafe { __clear_cache(ptr as *mut libc::c_char, ptr.add(len) as *mut libc::c_char) };
}

#[cfg(not(target_arch = "aarch64"))]
fn flush_icache(_ptr: *const u8, _len: usize) {
    // x86-64 keeps instruction fetch coherent with stores.
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_are_read_execute_and_pages_are_reused() {
        let a = ExecRegion::new(&[0xC3; 10]).unwrap();
        let b = ExecRegion::new(&[0x90; 5000]).unwrap();
        assert_eq!(a.code_len(), 10);
        // SAFETY: reading bytes of a live read+execute region.
        assert_eq!(unsafe { *a.as_ptr() }, 0xC3);
        // SAFETY: as above.
        assert_eq!(unsafe { *b.as_ptr().add(4999) }, 0x90);
        assert_ne!(a.as_ptr(), b.as_ptr());
        // 2000 regions of 16 KiB would need 32 chunks without reuse.
        for i in 0..2000u32 {
            let r = ExecRegion::new(&vec![i as u8; 16 * 1024]).unwrap();
            // SAFETY: as above.
            assert_eq!(unsafe { *r.as_ptr().add(100) }, i as u8);
        }
        let chunks = POOL.lock().unwrap().chunks.len();
        assert!(chunks <= 4, "{chunks} chunks: freed pages are not reused");
    }
}
