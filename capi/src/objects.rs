//! The opaque handle types, the Rust values behind them, and the checks every
//! entry point applies to pointers and register indices.

use crate::error::Failure;
use crate::handle::HandleData;
use pica_jit::shbin::Dvle;
use pica_jit::{Program, Shader, Uniforms, UnitState};
use std::sync::Arc;

/// A loaded program: code and operand descriptors, with the DVLEs (entry points)
/// when it came from a SHBIN.
pub struct PicaProgram {
    _opaque: [u8; 0],
}
/// A shader prepared for one DVLE, precision and engine.
pub struct PicaShader {
    _opaque: [u8; 0],
}
/// The uniforms of one draw (`c0`–`c95`, `i0`–`i3`, `b0`–`b15`).
pub struct PicaUniforms {
    _opaque: [u8; 0],
}
/// The unit's registers (inputs, temporaries, outputs, `a0`, `aL`, `cmp`).
pub struct PicaState {
    _opaque: [u8; 0],
}

pub(crate) struct ProgramData {
    /// Empty for a program made from raw words.
    pub dvles: Vec<Dvle>,
    pub program: Arc<Program>,
}
impl HandleData for ProgramData {
    const TAG: u64 = 0x5049_4341_5052_4f47; // "PICAPROG"
    const NAME: &'static str = "PicaProgram";
}

pub(crate) struct ShaderData(pub Shader);
impl HandleData for ShaderData {
    const TAG: u64 = 0x5049_4341_5348_4452; // "PICASHDR"
    const NAME: &'static str = "PicaShader";
}

pub(crate) struct UniformsData(pub Uniforms);
impl HandleData for UniformsData {
    const TAG: u64 = 0x5049_4341_554e_4946; // "PICAUNIF"
    const NAME: &'static str = "PicaUniforms";
}

pub(crate) struct StateData(pub UnitState);
impl HandleData for StateData {
    const TAG: u64 = 0x5049_4341_5354_4154; // "PICASTAT"
    const NAME: &'static str = "PicaState";
}

/// Stores `value` through `out`, which must not be null.
///
/// # Safety
/// `out` must be null or valid for a write of `T`.
pub(crate) unsafe fn store<T>(out: *mut T, what: &str, value: T) -> Result<(), Failure> {
    if out.is_null() {
        return Err(Failure::null(what));
    }
    // SAFETY: non-null and, by the caller's contract, valid for writes.
    unsafe { out.write_unaligned(value) };
    Ok(())
}

/// Reads four values from `ptr`.
///
/// # Safety
/// `ptr` must be null or valid for reads of four `T`.
pub(crate) unsafe fn read4<T: Copy>(ptr: *const T, what: &str) -> Result<[T; 4], Failure> {
    if ptr.is_null() {
        return Err(Failure::null(what));
    }
    // SAFETY: non-null and readable for four elements by the caller's contract.
    Ok(unsafe { ptr.cast::<[T; 4]>().read_unaligned() })
}

pub(crate) fn register(index: u32, count: usize, what: &str) -> Result<usize, Failure> {
    let n = index as usize;
    if n < count {
        Ok(n)
    } else {
        Err(Failure::invalid(format!(
            "{what} register {index} does not exist (0-{})",
            count - 1
        )))
    }
}
