//! The few fixed constants every compiled shader carries, addressed
//! RIP-relative by their labels (`Labels`; the IR lowering's own constants
//! live in its per-shader pool).

use super::Asm;
use dynasmrt::{DynamicLabel, DynasmApi, DynasmLabelApi, dynasm};

/// Emits every constant the backend references by label (`ones`: 1.0 in
/// every lane).
pub fn emit(ops: &mut Asm, ones: DynamicLabel) {
    let one = 1.0f32.to_bits();
    dynasm!(ops
        ; .arch x64
        ; .align 16
        // What a relative constant read beyond c95 gives.
        ; =>ones
        ; .u32 one, one, one, one
    );
}
