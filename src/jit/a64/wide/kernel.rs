//! The batch kernel ([`KernelPlan`]) on NEON: one function
//! `(register file, uniforms, constant pool, states, groups) -> 0` that, for
//! each of `groups` whole groups of 4 consecutive `UnitState`s, transposes
//! the group into the register file, runs a straight run of blocks and
//! transposes the rows they wrote back (the x86-64 kernel's contract).
//!
//! A register moves with `ld4`/`st4` of single structures: one instruction
//! per lane moves that lane's `Vec4` to or from element `k` of four
//! registers (the transpose for free). The state of lane `k` of the current
//! group is at `x3 + k * size_of::<UnitState>()` and `x4` counts the groups
//! left (block code never touches `x3` or `x4`).

use super::{Function, row};
use crate::jit::JitError;
use crate::jit::wide::codegen::{Driver, KernelSource, StateRows, Target};
use crate::jit::wide::layout;
use crate::state::UnitState;
use dynasmrt::{DynasmApi, DynasmLabelApi, dynasm};
use std::mem::size_of;

fn state_offset(lane: usize, field: usize) -> u32 {
    (lane * size_of::<UnitState>() + field) as u32
}

// Every displacement from `x3` fits `add`'s and the scaled loads' 12 bits.
const _: () = assert!(4 * size_of::<UnitState>() < 4096);

impl Function<'_> {
    /// Emits the kernel of `source` (one group of the state layout per pass).
    pub(super) fn kernel(&mut self, source: KernelSource<'_>) -> Result<(), JitError> {
        let plan = source.plan;
        self.enter();
        let stride = (4 * size_of::<UnitState>()) as u32;
        let (group, done) = (self.a.new_dynamic_label(), self.a.new_dynamic_label());
        // Only unconditional branches span the blocks' code (any length).
        dynasm!(self.a
            ; .arch aarch64
            ; cbnz x4, >start
            ; b =>done
            ; start:
            ; =>group
        );
        self.load_states(plan);
        self.convert_inputs(source.convert_inputs);
        for n in (0..16).filter(|n| plan.convert_temps >> n & 1 != 0) {
            for c in 0..4 {
                let off = row(layout::TEMP + 4 * n + c);
                dynasm!(self.a ; .arch aarch64 ; ldr q1, [x0, off]);
                self.neon().f24_load(1, 1);
                dynasm!(self.a ; .arch aarch64 ; str q1, [x0, off]);
            }
        }
        for step in &plan.steps {
            // The driver hands NEON straight plans only (see `WideShader::compile`).
            let crate::jit::wide::plan::Step::Block(k) = *step else {
                return Err(JitError::Lowering(
                    "NEON kernels run straight code only".into(),
                ));
            };
            self.body(&source.blocks[k])?;
        }
        self.store_states(plan);
        dynasm!(self.a
            ; .arch aarch64
            ; add x3, x3, stride
            ; subs x4, x4, 1
            ; b.eq >last
            ; b =>group
            ; last:
            ; =>done
            ; movz w10, 0
        );
        self.leave();
        Ok(())
    }
}

impl StateRows for Function<'_> {
    fn load_register(&mut self, field: usize, first_row: usize) {
        for lane in 0..4u32 {
            let from = state_offset(lane as usize, field);
            dynasm!(self.a
                ; .arch aarch64
                ; add x9, x3, from
                ; ld4 {v0.s, v1.s, v2.s, v3.s}[lane], [x9]
            );
        }
        for c in 0..4u8 {
            let to = row(first_row + c as usize);
            dynasm!(self.a ; .arch aarch64 ; str Q(c), [x0, to]);
        }
    }

    fn store_register(&mut self, first_row: usize, field: usize) {
        for c in 0..4u8 {
            let from = row(first_row + c as usize);
            dynasm!(self.a ; .arch aarch64 ; ldr Q(c), [x0, from]);
        }
        for lane in 0..4u32 {
            let to = state_offset(lane as usize, field);
            dynasm!(self.a
                ; .arch aarch64
                ; add x9, x3, to
                ; st4 {v0.s, v1.s, v2.s, v3.s}[lane], [x9]
            );
        }
    }

    fn load_scalars(&mut self, r: usize, field: usize, flag: bool) {
        for lane in 0..4 {
            let from = state_offset(lane, field);
            let to = row(r) + 4 * lane as u32;
            if flag {
                dynasm!(self.a ; .arch aarch64 ; ldrb w9, [x3, from] ; neg w9, w9);
            } else {
                dynasm!(self.a ; .arch aarch64 ; ldr w9, [x3, from]);
            }
            dynasm!(self.a ; .arch aarch64 ; str w9, [x0, to]);
        }
    }

    fn store_scalars(&mut self, r: usize, field: usize, flag: bool) {
        for lane in 0..4 {
            let from = row(r) + 4 * lane as u32;
            let to = state_offset(lane, field);
            dynasm!(self.a ; .arch aarch64 ; ldr w9, [x0, from]);
            if flag {
                dynasm!(self.a ; .arch aarch64 ; and w9, w9, 1 ; strb w9, [x3, to]);
            } else {
                dynasm!(self.a ; .arch aarch64 ; str w9, [x3, to]);
            }
        }
    }
}
