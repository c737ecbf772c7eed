//! Control flow in generated code: guards, inline pushes and pops of the
//! hardware stacks, and the after-instruction stack check.
//!
//! What each flow instruction does and which stack checks are inline is
//! decided in `jit::inline_flow` (shared with the x86-64 backend); this is its
//! AArch64 code. The stacks live in the frame (`machine::flow::FlowState`)
//! and are manipulated with exactly the interpreter's ring-buffer semantics.
//!
//! Branch reach: a check point leaves for the shared pop paths with an
//! unconditional `b` (±128 MiB); every `b.cond`/`cbz` here targets a label a
//! few instructions away.

use super::Emitter;
use crate::isa::{CondOp, Guard};
use crate::jit::flow_dispatch::FlowTarget;
use crate::jit::frame::{self, RingLayout};
use crate::jit::inline_flow::{self, Push, Stack, Word};
use crate::jit::single::state::{AL, CMP};
use dynasmrt::{DynamicLabel, DynasmApi, DynasmLabelApi, dynasm};

const TOP_CHECKS: u32 = Stack::Loop.top_check() as u32;
const _: () = assert!(
    Stack::If.top_check() as u32 == TOP_CHECKS + 4
        && Stack::Call.top_check() as u32 == TOP_CHECKS + 8
        && frame::NO_CHECK == u32::MAX // `movn w, #0`
);

impl FlowTarget for Emitter<'_> {
    type Reloc = dynasmrt::aarch64::Aarch64Relocation;

    /// `w9` = 1 when the guard holds, else 0 (reads `cmp` and the boolean
    /// uniforms only, which no stack check changes).
    fn guard(&mut self, guard: Guard) {
        match guard {
            Guard::Always => dynasm!(self.ops ; .arch aarch64 ; movz w9, 1),
            Guard::Bool(id) => {
                let off = inline_flow::bool_uniform(id);
                dynasm!(self.ops ; .arch aarch64 ; ldrb w9, [x2, off]);
            }
            Guard::Cond(c) => {
                let lane = |e: &mut Self, into_w9: bool, lane: u32, reference: bool| {
                    let off = CMP + lane;
                    if into_w9 {
                        dynasm!(e.ops ; .arch aarch64 ; ldrb w9, [x1, off]);
                        if !reference {
                            dynasm!(e.ops ; .arch aarch64 ; eor w9, w9, #1);
                        }
                    } else {
                        dynasm!(e.ops ; .arch aarch64 ; ldrb w10, [x1, off]);
                        if !reference {
                            dynasm!(e.ops ; .arch aarch64 ; eor w10, w10, #1);
                        }
                    }
                };
                match c.op {
                    CondOp::X => lane(self, true, 0, c.ref_x),
                    CondOp::Y => lane(self, true, 1, c.ref_y),
                    CondOp::And | CondOp::Or => {
                        lane(self, true, 0, c.ref_x);
                        lane(self, false, 1, c.ref_y);
                        if c.op == CondOp::And {
                            dynasm!(self.ops ; .arch aarch64 ; and w9, w9, w10);
                        } else {
                            dynasm!(self.ops ; .arch aarch64 ; orr w9, w9, w10);
                        }
                    }
                }
            }
        }
    }

    /// The after-instruction stack check for `pc` (only where analysis says a
    /// stack can pop): when a cached top equals `pc + 1`, leaves for the shared
    /// pop paths with `w0` = `pc + 1`; otherwise falls through. Clobbers `w0`,
    /// `w9..w11`.
    fn checkpoint(&mut self, pc: u32) {
        // With no reachable push the stacks stay empty: no top can match.
        if !self.cx.analysis.check_after[pc as usize] || !self.may_push {
            return;
        }
        self.uses_flow_state = true;
        let next = pc + 1;
        dynasm!(self.ops
            ; .arch aarch64
            ; ldp w9, w10, [x3, TOP_CHECKS as i32]
            ; ldr w11, [x3, TOP_CHECKS + 8]
            ; movz w0, next
            ; cmp w9, w0
            ; ccmp w10, w0, #4, ne
            ; ccmp w11, w0, #4, ne
            ; b.ne >none
            ; b ->stack_match
            ; none:
        );
    }

    /// Continues at `target` (a leader), or leaves the program.
    fn jump_to(&mut self, target: u32) {
        match self.cx.pc_labels.get(target as usize).copied() {
            Some(label) => dynasm!(self.ops ; .arch aarch64 ; b =>label),
            None => dynasm!(self.ops ; .arch aarch64 ; b ->past_end),
        }
    }

    /// Pushes `push` onto its ring stack (overwriting the oldest entry when
    /// full) and records its check address as the stack's top (the frame's
    /// `progress` initialised first if this is the invocation's first push).
    fn push(&mut self, push: &Push) {
        self.uses_flow_state = true;
        self.ensure_progress();
        let ring = push.stack.ring();
        let mask = (ring.slots - 1) as u32;
        let (next, len, slots) = (ring.next as u32, ring.len as u32, ring.slots as u32);
        dynasm!(self.ops ; .arch aarch64 ; ldr w9, [x3, next]);
        self.entry_base(ring);
        for (i, word) in push.words().iter().enumerate() {
            let off = ring.entries as u32 + 4 * i as u32;
            match *word {
                Word::Imm(v) => self.mov_u32(11, v),
                Word::UniformByte(u) => dynasm!(self.ops ; .arch aarch64 ; ldrb w11, [x2, u]),
            }
            dynasm!(self.ops ; .arch aarch64 ; str w11, [x10, off]);
        }
        self.mov_u32(12, push.check());
        let top = push.stack.top_check() as u32;
        dynasm!(self.ops
            ; .arch aarch64
            ; add w9, w9, #1
            ; and w9, w9, mask
            ; str w9, [x3, next]
            ; ldr w9, [x3, len]
            ; cmp w9, slots
            ; cinc w9, w9, lo
            ; str w9, [x3, len]
            ; str w12, [x3, top]
        );
    }

    /// The check first (it clobbers `w9`; the guard reads nothing a stack
    /// check changes), then the guard.
    fn jump_condition(&mut self, pc: u32, guard: Guard, invert: bool) -> bool {
        self.checkpoint(pc);
        self.guard(guard);
        !invert
    }

    fn asm(&mut self) -> &mut super::Asm {
        &mut self.ops
    }

    fn branch_unless(&mut self, label: DynamicLabel) {
        dynasm!(self.ops ; .arch aarch64 ; cbz w9, =>label);
    }

    fn branch_if(&mut self, label: DynamicLabel) {
        dynasm!(self.ops ; .arch aarch64 ; cbnz w9, =>label);
    }

    fn load_al(&mut self, al_from: u32) {
        dynasm!(self.ops
            ; .arch aarch64
            ; ldrb w9, [x2, al_from]
            ; str w9, [x1, AL]
        );
    }

    fn runtime_step(&mut self, pc: u32) {
        self.call_helper(frame::runtime_step as *const () as usize, pc);
    }
}

impl Emitter<'_> {
    /// `x10` = frame + `w9` × the entry size of `ring` (add `ring.entries`
    /// for the entry's address).
    fn entry_base(&mut self, ring: RingLayout) {
        match ring.stride {
            8 => dynasm!(self.ops ; .arch aarch64 ; add x10, x3, x9, lsl #3),
            16 => dynasm!(self.ops ; .arch aarch64 ; add x10, x3, x9, lsl #4),
            other => unreachable!("stack entries of {other} bytes"),
        }
    }

    /// `w{reg}` = `value`.
    fn mov_u32(&mut self, reg: u8, value: u32) {
        dynasm!(self.ops ; .arch aarch64 ; movz W(reg), value & 0xFFFF);
        if value >> 16 != 0 {
            dynasm!(self.ops ; .arch aarch64 ; movk W(reg), value >> 16, lsl #16);
        }
    }

    /// Removes the top entry of `stack` and refreshes its cached top check.
    /// Preserves `w0`; clobbers `w9..w11`, `x10`.
    fn pop(&mut self, stack: Stack) {
        let ring = stack.ring();
        let mask = (ring.slots - 1) as u32;
        let (next, len, entries) = (ring.next as u32, ring.len as u32, ring.entries as u32);
        let top = stack.top_check() as u32;
        dynasm!(self.ops
            ; .arch aarch64
            ; ldr w9, [x3, next]
            ; sub w9, w9, #1
            ; and w9, w9, mask
            ; str w9, [x3, next]
            ; ldr w10, [x3, len]
            ; subs w10, w10, #1
            ; str w10, [x3, len]
            ; movn w11, 0
            ; b.eq >empty
            ; sub w9, w9, #1
            ; and w9, w9, mask
        );
        self.entry_base(ring);
        dynasm!(self.ops
            ; .arch aarch64
            ; ldr w11, [x10, entries]
            ; empty:
            ; str w11, [x3, top]
        );
    }

    /// The shared pop paths the check points leave for (`w0` = `pc + 1`, at
    /// least one cached top equal to it). They continue at `->jump_pc` (the
    /// pinned constants are intact: no helper ran).
    pub(super) fn flow_stubs(&mut self) {
        let (calls, ifs, loops) = (Stack::Call.ring(), Stack::If.ring(), Stack::Loop.ring());
        dynasm!(self.ops
            ; .arch aarch64
            ; ->stack_match:
            ; ldp w9, w10, [x3, TOP_CHECKS as i32]
            ; ldr w11, [x3, TOP_CHECKS + 8]
            ; cmp w9, w0
            ; cset w12, eq
            ; cmp w10, w0
            ; cinc w12, w12, eq
            ; cmp w11, w0
            ; cinc w12, w12, eq
            ; cmp w12, #1
            ; b.ne ->slow_check
            ; cmp w9, w0
            ; b.eq ->loop_match
            ; cmp w10, w0
            ; b.eq ->if_match
            ; b ->call_match

            // More than one stack involved, or a CALL chain: the exact Rust version.
            ; ->slow_check:
        );
        self.save_for_call();
        dynasm!(self.ops
            ; .arch aarch64
            ; sub w1, w0, #1
            ; mov x0, x3
        );
        self.call_then_after_helper(frame::stack_check as *const () as usize);
        dynasm!(self.ops
            ; .arch aarch64
            // aL += increment; iterate again (one fewer left) or pop and fall through.
            ; ->loop_match:
            ; ldr w9, [x3, loops.next as u32]
            ; sub w9, w9, #1
            ; and w9, w9, (loops.slots - 1) as u32
        );
        self.entry_base(loops);
        let entry = loops.entries as u32;
        dynasm!(self.ops
            ; .arch aarch64
            ; ldr w11, [x10, entry + 12]
            ; ldr w12, [x1, AL]
            ; add w12, w12, w11
            ; str w12, [x1, AL]
            ; ldr w11, [x10, entry + 8]
            ; cbz w11, >exit
            ; sub w11, w11, #1
            ; str w11, [x10, entry + 8]
            ; ldr w0, [x10, entry + 4]
            ; b ->jump_pc
            ; exit:
        );
        self.pop(Stack::Loop);
        dynasm!(self.ops
            ; .arch aarch64
            ; b ->jump_pc

            ; ->if_match:
            ; ldr w9, [x3, ifs.next as u32]
            ; sub w9, w9, #1
            ; and w9, w9, (ifs.slots - 1) as u32
        );
        self.entry_base(ifs);
        dynasm!(self.ops ; .arch aarch64 ; ldr w0, [x10, ifs.entries as u32 + 4]);
        self.pop(Stack::If);
        let entry = calls.entries as u32;
        let mask = (calls.slots - 1) as u32;
        dynasm!(self.ops
            ; .arch aarch64
            ; b ->jump_pc

            ; ->call_match:
            ; ldr w9, [x3, calls.next as u32]
            ; sub w9, w9, #1
            ; and w9, w9, mask
        );
        self.entry_base(calls);
        dynasm!(self.ops
            ; .arch aarch64
            ; ldr w12, [x10, entry + 4] // ret
            // A second pop in the same check (ret is the next entry's exit)?
            ; ldr w11, [x3, calls.len as u32]
            ; cmp w11, #2
            ; b.lo >single
            ; sub w9, w9, #1
            ; and w9, w9, mask
        );
        self.entry_base(calls);
        dynasm!(self.ops
            ; .arch aarch64
            ; ldr w11, [x10, entry]
            ; cmp w11, w12
            ; b.eq ->slow_check
            ; single:
            ; mov w0, w12
        );
        self.pop(Stack::Call);
        dynasm!(self.ops ; .arch aarch64 ; b ->jump_pc);
    }
}
