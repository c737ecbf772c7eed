//! The few fixed constants every compiled shader carries, addressed
//! RIP-relative as `[->name]` (the IR lowering's own constants live in its
//! per-shader pool).

use super::Asm;
use dynasmrt::{DynasmApi, DynasmLabelApi, dynasm};

/// Emits every constant the backend references by name.
pub fn emit(ops: &mut Asm) {
    let one = 1.0f32.to_bits();
    dynasm!(ops
        ; .arch x64
        ; .align 16
        // What a relative constant read beyond c95 gives.
        ; ->ones:
        ; .u32 one, one, one, one
    );
}
