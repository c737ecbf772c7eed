//! Loading SHBINs and describing their entry points.

use crate::error::{Failure, PicaStatus, guard};
use crate::handle::{borrow, free, into_handle};
use crate::objects::{PicaProgram, ProgramData, store};
use crate::types::{PicaEntryInfo, PicaShaderKind};
use pica_jit::shbin::Shbin;
use pica_jit::{Program, ShaderKind};
use std::sync::Arc;

fn load(bytes: &[u8]) -> Result<ProgramData, Failure> {
    let shbin = Shbin::parse(bytes)
        .map_err(|e| Failure::new(PicaStatus::Parse, format!("invalid SHBIN: {e}")))?;
    let program = Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone())
        .map_err(|e| Failure::new(PicaStatus::Parse, format!("invalid SHBIN program: {e}")))?;
    Ok(ProgramData {
        dvles: shbin.dvles,
        program: Arc::new(program),
    })
}

/// Parses SHBIN (DVLB) bytes into `*out`. The bytes are copied; any bytes give a
/// handle or `PICA_STATUS_PARSE` with a message, never a crash.
///
/// # Safety
/// `bytes` must be readable for `len` bytes (may be null when `len` is 0); `out`
/// must be writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_program_load(
    bytes: *const u8,
    len: usize,
    out: *mut *mut PicaProgram,
) -> PicaStatus {
    guard(|| {
        let bytes: &[u8] = if len == 0 {
            &[]
        } else if bytes.is_null() {
            return Err(Failure::null("bytes"));
        } else {
            // SAFETY: non-null, readable for `len` bytes by the caller's contract.
            unsafe { std::slice::from_raw_parts(bytes, len) }
        };
        let data = load(bytes)?;
        // SAFETY: `out` is writable by the caller's contract.
        unsafe { store(out, "out", into_handle(data)) }
    })
}

/// Loads pica-jit's embedded default shader (transform + Blinn-Phong lighting)
/// into `*out`.
///
/// # Safety
/// `out` must be writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_program_load_default(out: *mut *mut PicaProgram) -> PicaStatus {
    guard(|| {
        let data = load(pica_jit::DEFAULT_SHADER)?;
        // SAFETY: `out` is writable by the caller's contract.
        unsafe { store(out, "out", into_handle(data)) }
    })
}

/// Builds a program from raw code words and operand descriptor words, as an
/// emulator receives them through the GPU's shader upload registers (at most
/// 4096 code words and 128 descriptors). Such a program has no DVLEs: prepare
/// shaders with `pica_shader_new_at_entry`. The words are copied.
///
/// # Safety
/// `code` must be readable for `code_len` words and `descriptors` for
/// `descriptor_count` words (either may be null when its count is 0); `out`
/// must be writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_program_from_words(
    code: *const u32,
    code_len: usize,
    descriptors: *const u32,
    descriptor_count: usize,
    out: *mut *mut PicaProgram,
) -> PicaStatus {
    guard(|| {
        // SAFETY: forwarded contract.
        let code = unsafe { words(code, code_len, "code")? };
        // SAFETY: forwarded contract.
        let descriptors = unsafe { words(descriptors, descriptor_count, "descriptors")? };
        let program = Program::new(code, descriptors)
            .map_err(|e| Failure::invalid(format!("invalid program: {e}")))?;
        let data = ProgramData {
            dvles: Vec::new(),
            program: Arc::new(program),
        };
        // SAFETY: `out` is writable by the caller's contract.
        unsafe { store(out, "out", into_handle(data)) }
    })
}

/// Copies `len` words from `ptr`, refusing more than any program can hold
/// before reading.
///
/// # Safety
/// `ptr` must be readable for `len` words, or null with `len` 0.
unsafe fn words(ptr: *const u32, len: usize, what: &str) -> Result<Vec<u32>, Failure> {
    if len == 0 {
        return Ok(Vec::new());
    }
    if ptr.is_null() {
        return Err(Failure::null(what));
    }
    if len > pica_jit::isa::MAX_CODE_WORDS {
        return Err(Failure::invalid(format!(
            "`{what}` has {len} words; no program holds more than {}",
            pica_jit::isa::MAX_CODE_WORDS
        )));
    }
    if !ptr.is_aligned() {
        return Err(Failure::invalid(format!(
            "`{what}` is not aligned for 32-bit words"
        )));
    }
    // SAFETY: non-null, aligned, and readable for `len` words by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) }.to_vec())
}

/// Frees a program (null does nothing). Shaders made from it stay valid.
///
/// # Safety
/// `program` must be null or a live program handle, not used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_program_free(program: *mut PicaProgram) -> PicaStatus {
    // SAFETY: forwarded contract.
    guard(|| unsafe { free::<ProgramData, _>(program, "program") })
}

/// The number of DVLEs (entry points) in the program.
///
/// # Safety
/// `program` must be null or a live program handle; `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_program_entry_count(
    program: *const PicaProgram,
    out: *mut usize,
) -> PicaStatus {
    guard(|| {
        // SAFETY: forwarded contract.
        let data = unsafe { borrow::<ProgramData, _>(program, "program")? };
        // SAFETY: forwarded contract.
        unsafe { store(out, "out", data.dvles.len()) }
    })
}

/// Describes DVLE `index` of the program.
///
/// # Safety
/// `program` must be null or a live program handle; `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pica_program_entry(
    program: *const PicaProgram,
    index: usize,
    out: *mut PicaEntryInfo,
) -> PicaStatus {
    guard(|| {
        // SAFETY: forwarded contract.
        let data = unsafe { borrow::<ProgramData, _>(program, "program")? };
        let dvle = dvle(data, index)?;
        let info = PicaEntryInfo {
            main: dvle.main,
            kind: match dvle.kind {
                ShaderKind::Vertex => PicaShaderKind::Vertex as u32,
                ShaderKind::Geometry => PicaShaderKind::Geometry as u32,
            },
        };
        // SAFETY: forwarded contract.
        unsafe { store(out, "out", info) }
    })
}

pub(crate) fn dvle(data: &ProgramData, index: usize) -> Result<&pica_jit::shbin::Dvle, Failure> {
    data.dvles.get(index).ok_or_else(|| {
        Failure::invalid(format!(
            "DVLE {index} does not exist: the program has {}",
            data.dvles.len()
        ))
    })
}
