//! Where the single-vertex backend keeps the shared constant pool
//! ([`emit::consts`](super::emit::consts)): near the start of every compiled
//! shader, 16-byte aligned at label `->consts` and addressed as
//! `[x5, #offset]`. All [`PINNED`] entries are loaded into `v16..v25` by the
//! prologue and again by `->dispatch` after a runtime helper (those
//! registers are caller-saved, so nothing else has to preserve them). `K::Ones` is also read from memory, as the value of a constant
//! read beyond `c95`.

use super::Asm;
pub(super) use super::emit::consts::PINNED;
use dynasmrt::{DynasmApi, DynasmLabelApi, dynasm};

/// Emits the constants (16-byte aligned, starting at label `->consts`).
pub fn emit(ops: &mut Asm) {
    dynasm!(ops ; .arch aarch64 ; .align 16 ; ->consts:);
    for v in super::emit::consts::values() {
        dynasm!(ops ; .arch aarch64 ; .u32 v[0], v[1], v[2], v[3]);
    }
}
