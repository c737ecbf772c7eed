//! Control flow in generated code: guards, inline pushes and pops of the
//! hardware stacks, and the after-instruction stack check.
//!
//! The stacks live in the frame (`machine::flow::FlowState`) and are manipulated
//! here with exactly the interpreter's ring-buffer semantics. Only the common,
//! single-stack cases are inline; whenever more than one stack matches, or the
//! CALL stack would pop more than once, the exact Rust implementation
//! (`frame::stack_check`) decides.

use super::Emitter;
use super::operands::CMP;
use crate::isa::{CondOp, Guard};
use crate::jit::frame::{self, CALLS, IFS, LOOPS, NO_CHECK, OFFSET_TOP_CHECKS, RingLayout};
use crate::state::Uniforms;
use dynasmrt::{DynasmApi, DynasmLabelApi, dynasm};
use std::mem::offset_of;

const TOP_LOOP: i32 = OFFSET_TOP_CHECKS;
const TOP_IF: i32 = OFFSET_TOP_CHECKS + 4;
const TOP_CALL: i32 = OFFSET_TOP_CHECKS + 8;
const BOOLS: i32 = offset_of!(Uniforms, b) as i32;
const INTS: i32 = offset_of!(Uniforms, i) as i32;

/// A value stored into a stack entry.
#[derive(Clone, Copy)]
pub(super) enum Word {
    Imm(u32),
    /// A zero-extended byte of the uniforms at this offset.
    UniformByte(i32),
}

impl Emitter<'_> {
    /// `ecx` = 1 when the guard holds, else 0.
    pub fn guard(&mut self, guard: Guard) {
        match guard {
            Guard::Always => dynasm!(self.ops ; .arch x64 ; mov ecx, 1),
            Guard::Bool(id) => {
                let off = BOOLS + (id & 15) as i32;
                dynasm!(self.ops ; .arch x64 ; movzx ecx, BYTE [r13 + off]);
            }
            Guard::Cond(c) => {
                let x_test = |e: &mut Self, reg_is_ecx: bool, lane: i32, reference: bool| {
                    let off = CMP + lane;
                    if reg_is_ecx {
                        dynasm!(e.ops ; .arch x64 ; movzx ecx, BYTE [r12 + off]);
                        if !reference {
                            dynasm!(e.ops ; .arch x64 ; xor ecx, 1);
                        }
                    } else {
                        dynasm!(e.ops ; .arch x64 ; movzx edx, BYTE [r12 + off]);
                        if !reference {
                            dynasm!(e.ops ; .arch x64 ; xor edx, 1);
                        }
                    }
                };
                match c.op {
                    CondOp::X => x_test(self, true, 0, c.ref_x),
                    CondOp::Y => x_test(self, true, 1, c.ref_y),
                    CondOp::And | CondOp::Or => {
                        x_test(self, true, 0, c.ref_x);
                        x_test(self, false, 1, c.ref_y);
                        if c.op == CondOp::And {
                            dynasm!(self.ops ; .arch x64 ; and ecx, edx);
                        } else {
                            dynasm!(self.ops ; .arch x64 ; or ecx, edx);
                        }
                    }
                }
            }
        }
    }

    /// The after-instruction stack check for `pc` (only where analysis says a
    /// stack can pop). Falls through when no stack top matches `pc + 1`;
    /// preserves `ecx`.
    pub fn checkpoint(&mut self, pc: u32) {
        // With no reachable push the stacks stay empty: no top can match.
        if !self.analysis.check_after[pc as usize] || !self.may_push {
            return;
        }
        self.uses_flow_state = true;
        let next = (pc + 1) as i32;
        dynasm!(self.ops
            ; .arch x64
            ; mov eax, next
            ; cmp [rbx + TOP_LOOP], eax
            ; je ->loop_match
            ; cmp [rbx + TOP_IF], eax
            ; je ->if_match
            ; cmp [rbx + TOP_CALL], eax
            ; je ->call_match
        );
    }

    /// Jumps to the code of `target` (a leader), or leaves the program.
    pub fn jump_to(&mut self, target: u32) {
        match self.pc_labels.get(target as usize).copied() {
            Some(label) => dynasm!(self.ops ; .arch x64 ; jmp =>label),
            None => dynasm!(self.ops ; .arch x64 ; jmp ->past_end),
        }
    }

    /// Pushes an entry onto a ring stack (overwriting the oldest when full) and
    /// records its check address as the stack's top.
    pub(super) fn push(&mut self, ring: RingLayout, top: i32, words: &[Word]) {
        self.uses_flow_state = true;
        self.ensure_progress();
        let shift = ring.stride.trailing_zeros() as i8;
        let mask = ring.slots - 1;
        dynasm!(self.ops
            ; .arch x64
            ; mov eax, [rbx + ring.next]
            ; mov edx, eax
            ; shl edx, shift
            ; lea rdx, [rbx + rdx + ring.entries]
        );
        for (i, word) in words.iter().enumerate() {
            let off = 4 * i as i32;
            match *word {
                Word::Imm(v) => dynasm!(self.ops ; .arch x64 ; mov DWORD [rdx + off], v as i32),
                Word::UniformByte(u) => dynasm!(self.ops
                    ; .arch x64
                    ; movzx r8d, BYTE [r13 + u]
                    ; mov [rdx + off], r8d
                ),
            }
        }
        let Word::Imm(check) = words[0] else {
            unreachable!("check addresses are static")
        };
        dynasm!(self.ops
            ; .arch x64
            ; inc eax
            ; and eax, mask
            ; mov [rbx + ring.next], eax
            ; mov eax, [rbx + ring.len]
            ; cmp eax, ring.slots
            ; adc eax, 0
            ; mov [rbx + ring.len], eax
            ; mov DWORD [rbx + top], check as i32
        );
    }

    /// `jmpc`/`jmpu` at `pc`.
    pub fn flow_jmp(&mut self, pc: u32, guard: Guard, target: u16, invert: bool) {
        self.guard(guard);
        if invert {
            dynasm!(self.ops ; .arch x64 ; xor ecx, 1);
        }
        self.checkpoint(pc);
        let not_taken = self.ops.new_dynamic_label();
        dynasm!(self.ops ; .arch x64 ; test ecx, ecx ; jz =>not_taken);
        self.jump_to(target as u32);
        dynasm!(self.ops ; .arch x64 ; =>not_taken);
        self.jump_to(pc + 1);
    }

    /// `ifc`/`ifu` at `pc`: true pushes an IF entry, false jumps to `target`.
    pub fn flow_if(&mut self, pc: u32, guard: Guard, target: u16, num: u8) {
        self.guard(guard);
        let false_path = self.ops.new_dynamic_label();
        dynasm!(self.ops ; .arch x64 ; test ecx, ecx ; jz =>false_path);
        let target = target as u32;
        self.push(
            IFS,
            TOP_IF,
            &[Word::Imm(target), Word::Imm(target + num as u32)],
        );
        self.checkpoint(pc);
        self.jump_to(pc + 1);
        dynasm!(self.ops ; .arch x64 ; =>false_path);
        self.checkpoint(pc);
        self.jump_to(target);
    }

    /// `call`/`callc`/`callu` at `pc`.
    pub fn flow_call(&mut self, pc: u32, guard: Guard, target: u16, num: u8) {
        let target = target as u32;
        if guard != Guard::Always {
            self.guard(guard);
        }
        let not_taken = self.ops.new_dynamic_label();
        if guard != Guard::Always {
            dynasm!(self.ops ; .arch x64 ; test ecx, ecx ; jz =>not_taken);
        }
        self.push(
            CALLS,
            TOP_CALL,
            &[Word::Imm(target + num as u32), Word::Imm(pc + 1)],
        );
        self.checkpoint(pc);
        self.jump_to(target);
        dynasm!(self.ops ; .arch x64 ; =>not_taken);
        self.checkpoint(pc);
        self.jump_to(pc + 1);
    }

    /// `loop iN, end` at `pc`.
    pub fn flow_loop(&mut self, pc: u32, int_id: u8, end: u16) {
        let base = INTS + 4 * (int_id & 3) as i32;
        dynasm!(self.ops
            ; .arch x64
            ; movzx eax, BYTE [r13 + base + 1]
            ; mov [r12 + super::operands::AL], eax
        );
        self.push(
            LOOPS,
            TOP_LOOP,
            &[
                Word::Imm(end as u32 + 1),
                Word::Imm(pc + 1),
                Word::UniformByte(base),
                Word::UniformByte(base + 2),
            ],
        );
        self.checkpoint(pc);
        self.jump_to(pc + 1);
    }

    /// The shared pop paths the checkpoints jump to (with `eax` = `pc + 1`).
    pub fn flow_stubs(&mut self) {
        let helper = frame::stack_check as *const () as usize as i64;
        dynasm!(self.ops
            ; .arch x64
            // More than one stack involved, or a CALL chain: the exact Rust version.
            ; ->slow_check:
            ; lea esi, [rax - 1]
            ; mov rdi, rbx
            ; mov rax, QWORD helper
            ; call rax
            ; jmp ->after_helper

            ; ->loop_match:
            ; cmp [rbx + TOP_IF], eax
            ; je ->slow_check
            ; cmp [rbx + TOP_CALL], eax
            ; je ->slow_check
            ; mov ecx, [rbx + LOOPS.next]
            ; dec ecx
            ; and ecx, LOOPS.slots - 1
            ; shl ecx, 4
            ; lea rdx, [rbx + rcx + LOOPS.entries]
            ; mov ecx, [rdx + 12]
            ; add [r12 + super::operands::AL], ecx
            ; mov ecx, [rdx + 8]
            ; test ecx, ecx
            ; jz >exit
            ; dec ecx
            ; mov [rdx + 8], ecx
            ; mov eax, [rdx + 4]
            ; jmp ->dispatch
            ; exit:
        );
        self.pop(LOOPS, TOP_LOOP);
        dynasm!(self.ops
            ; .arch x64
            ; jmp ->dispatch

            ; ->if_match:
            ; cmp [rbx + TOP_CALL], eax
            ; je ->slow_check
            ; mov ecx, [rbx + IFS.next]
            ; dec ecx
            ; and ecx, IFS.slots - 1
            ; mov eax, [rbx + rcx * 8 + IFS.entries + 4]
        );
        self.pop(IFS, TOP_IF);
        dynasm!(self.ops
            ; .arch x64
            ; jmp ->dispatch

            ; ->call_match:
            ; mov ecx, [rbx + CALLS.next]
            ; dec ecx
            ; and ecx, CALLS.slots - 1
            ; mov edx, [rbx + rcx * 8 + CALLS.entries + 4]   // ret
            // A second pop in the same check (ret is the next entry's exit)?
            ; cmp DWORD [rbx + CALLS.len], 2
            ; jb >single
            ; lea r8d, [rcx - 1]
            ; and r8d, CALLS.slots - 1
            ; cmp [rbx + r8 * 8 + CALLS.entries], edx
            ; je ->slow_check
            ; single:
            ; mov eax, edx
        );
        self.pop(CALLS, TOP_CALL);
        dynasm!(self.ops ; .arch x64 ; jmp ->dispatch);
    }

    /// Removes the top entry of `ring` and refreshes its cached top check.
    /// Preserves `eax`.
    fn pop(&mut self, ring: RingLayout, top: i32) {
        let shift = ring.stride.trailing_zeros() as i8;
        let mask = ring.slots - 1;
        dynasm!(self.ops
            ; .arch x64
            ; mov ecx, [rbx + ring.next]
            ; dec ecx
            ; and ecx, mask
            ; mov [rbx + ring.next], ecx
            ; dec DWORD [rbx + ring.len]
            ; mov edx, NO_CHECK as i32
            ; jz >empty
            ; dec ecx
            ; and ecx, mask
            ; shl ecx, shift
            ; mov edx, [rbx + rcx + ring.entries]
            ; empty:
            ; mov [rbx + top], edx
        );
    }
}
