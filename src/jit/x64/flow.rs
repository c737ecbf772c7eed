//! Control flow in generated code: guards, inline pushes and pops of the
//! hardware stacks, and the after-instruction stack check.
//!
//! What each flow instruction does and which stack checks are inline is
//! decided in `jit::inline_flow` (shared with the AArch64 backend); this is
//! its x86-64 code. The stacks live in the frame (`machine::flow::FlowState`)
//! and are manipulated with exactly the interpreter's ring-buffer semantics.

use super::Emitter;
use super::offsets::{AL, CMP};
use crate::analysis::static_flow::StaticNext;
use crate::isa::{CondOp, Guard};
use crate::jit::flow_dispatch::FlowTarget;
use crate::jit::frame::{self, CALLS, IFS, LOOPS, NO_CHECK, RingLayout};
use crate::jit::inline_flow::{self, Push, Stack, Word};
use dynasmrt::{DynamicLabel, DynasmApi, DynasmLabelApi, dynasm};

const TOP_LOOP: i32 = Stack::Loop.top_check();
const TOP_IF: i32 = Stack::If.top_check();
const TOP_CALL: i32 = Stack::Call.top_check();

impl FlowTarget for Emitter<'_> {
    type Reloc = dynasmrt::x64::X64Relocation;

    /// `ecx` = 1 when the guard holds, else 0.
    fn guard(&mut self, guard: Guard) {
        match guard {
            Guard::Always => dynasm!(self.ops ; .arch x64 ; mov ecx, 1),
            Guard::Bool(id) => {
                let off = inline_flow::bool_uniform(id) as i32;
                dynasm!(self.ops ; .arch x64 ; movzx ecx, BYTE [rdx + off]);
            }
            Guard::Cond(c) => {
                let x_test = |e: &mut Self, reg_is_ecx: bool, lane: i32, reference: bool| {
                    let off = CMP + lane;
                    if reg_is_ecx {
                        dynasm!(e.ops ; .arch x64 ; movzx ecx, BYTE [rsi + off]);
                        if !reference {
                            dynasm!(e.ops ; .arch x64 ; xor ecx, 1);
                        }
                    } else {
                        dynasm!(e.ops ; .arch x64 ; movzx r9d, BYTE [rsi + off]);
                        if !reference {
                            dynasm!(e.ops ; .arch x64 ; xor r9d, 1);
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
                            dynasm!(self.ops ; .arch x64 ; and ecx, r9d);
                        } else {
                            dynasm!(self.ops ; .arch x64 ; or ecx, r9d);
                        }
                    }
                }
            }
        }
    }

    /// The after-instruction stack check for `pc` (only where analysis says a
    /// stack can pop). Falls through when no stack top matches `pc + 1`;
    /// preserves `ecx`.
    fn checkpoint(&mut self, pc: u32) {
        if let Some(flow) = &self.static_flow {
            // The check's outcome is known: a pop is a jump.
            if let StaticNext::Next(to) = flow[pc as usize]
                && to != pc + 1
            {
                self.jump_to(to);
            }
            return;
        }
        // With no reachable push the stacks stay empty: no top can match.
        if !self.cx.analysis.check_after[pc as usize] || !self.may_push {
            return;
        }
        self.uses_flow_state = true;
        let next = (pc + 1) as i32;
        dynasm!(self.ops
            ; .arch x64
            ; mov eax, next
            ; cmp [rdi + TOP_LOOP], eax
            ; je =>self.labels.loop_match
            ; cmp [rdi + TOP_IF], eax
            ; je =>self.labels.if_match
            ; cmp [rdi + TOP_CALL], eax
            ; je =>self.labels.call_match
        );
    }

    /// Jumps to the code of `target` (a leader), or leaves the program.
    fn jump_to(&mut self, target: u32) {
        match self.cx.pc_labels.get(target as usize).copied() {
            Some(label) => dynasm!(self.ops ; .arch x64 ; jmp =>label),
            None => dynasm!(self.ops ; .arch x64 ; jmp =>self.labels.past_end),
        }
    }

    /// Pushes `push` onto its ring stack (overwriting the oldest entry when
    /// full) and records its check address as the stack's top.
    fn push(&mut self, push: &Push) {
        self.uses_flow_state = true;
        self.ensure_progress();
        let ring = push.stack.ring();
        let top = push.stack.top_check();
        let shift = ring.stride.trailing_zeros() as i8;
        let mask = ring.slots - 1;
        dynasm!(self.ops
            ; .arch x64
            ; mov eax, [rdi + ring.next]
            ; mov r9d, eax
            ; shl r9d, shift
            ; lea r9, [rdi + r9 + ring.entries]
        );
        for (i, word) in push.words().iter().enumerate() {
            let off = 4 * i as i32;
            match *word {
                Word::Imm(v) => dynasm!(self.ops ; .arch x64 ; mov DWORD [r9 + off], v as i32),
                Word::UniformByte(u) => dynasm!(self.ops
                    ; .arch x64
                    ; movzx r8d, BYTE [rdx + u as i32]
                    ; mov [r9 + off], r8d
                ),
            }
        }
        let check = push.check();
        dynasm!(self.ops
            ; .arch x64
            ; inc eax
            ; and eax, mask
            ; mov [rdi + ring.next], eax
            ; mov eax, [rdi + ring.len]
            ; cmp eax, ring.slots
            ; adc eax, 0
            ; mov [rdi + ring.len], eax
            ; mov DWORD [rdi + top], check as i32
        );
    }

    /// The guard, then the check (which preserves `ecx`).
    fn jump_condition(&mut self, pc: u32, guard: Guard, invert: bool) -> bool {
        self.guard(guard);
        if invert {
            dynasm!(self.ops ; .arch x64 ; xor ecx, 1);
        }
        self.checkpoint(pc);
        true
    }

    fn asm(&mut self) -> &mut super::Asm {
        &mut self.ops
    }

    fn branch_unless(&mut self, label: DynamicLabel) {
        dynasm!(self.ops ; .arch x64 ; test ecx, ecx ; jz =>label);
    }

    fn branch_if(&mut self, label: DynamicLabel) {
        dynasm!(self.ops ; .arch x64 ; test ecx, ecx ; jnz =>label);
    }

    fn load_al(&mut self, al_from: u32) {
        dynasm!(self.ops
            ; .arch x64
            ; movzx eax, BYTE [rdx + al_from as i32]
            ; mov [rsi + AL], eax
        );
    }

    fn static_targets(&self, pc: u32) -> Option<(u32, u32)> {
        match self.static_flow.as_ref()?[pc as usize] {
            StaticNext::Branch {
                when_true,
                when_false,
            } => Some((when_true, when_false)),
            _ => None,
        }
    }

    /// The code of `pc + 1` follows: one conditional jump, a second only
    /// where neither target is `pc + 1`.
    fn static_branch(&mut self, pc: u32, guard: Guard, on_guard: u32, on_not: u32) {
        let after = pc + 1;
        if on_guard == on_not || guard == Guard::Always {
            if on_guard != after {
                self.jump_to(on_guard);
            }
            return;
        }
        // The flags: ZF clear when the guard holds (`holds_if_nonzero`), or
        // set. Booleans and flags are bytes 0 or 1.
        let holds_if_nonzero = match guard {
            Guard::Bool(id) => {
                let off = inline_flow::bool_uniform(id) as i32;
                dynasm!(self.ops ; .arch x64 ; cmp BYTE [rdx + off], 0);
                true
            }
            Guard::Cond(c) if matches!(c.op, CondOp::X | CondOp::Y) => {
                let (lane, reference) = if c.op == CondOp::X {
                    (0, c.ref_x)
                } else {
                    (1, c.ref_y)
                };
                let off = CMP + lane;
                dynasm!(self.ops ; .arch x64 ; cmp BYTE [rsi + off], reference as i8);
                false
            }
            _ => {
                self.guard(guard);
                dynasm!(self.ops ; .arch x64 ; test ecx, ecx);
                true
            }
        };
        let (taken, not_taken) = (self.pc_label(on_guard), self.pc_label(on_not));
        match (holds_if_nonzero, on_guard == after) {
            (true, true) => dynasm!(self.ops ; .arch x64 ; jz =>not_taken),
            (false, true) => dynasm!(self.ops ; .arch x64 ; jnz =>not_taken),
            (true, false) => dynasm!(self.ops ; .arch x64 ; jnz =>taken),
            (false, false) => dynasm!(self.ops ; .arch x64 ; jz =>taken),
        }
        if on_guard != after && on_not != after {
            dynasm!(self.ops ; .arch x64 ; jmp =>not_taken);
        }
    }

    fn runtime_step(&mut self, pc: u32) {
        self.call_helper(frame::runtime_step as *const () as usize, pc);
    }
}

impl Emitter<'_> {
    /// The code of `target`, or the exit when it is past the end.
    fn pc_label(&self, target: u32) -> DynamicLabel {
        self.cx
            .pc_labels
            .get(target as usize)
            .copied()
            .unwrap_or(self.labels.past_end)
    }

    /// The shared pop paths the checkpoints jump to (with `eax` = `pc + 1`).
    pub fn flow_stubs(&mut self) {
        let helper = frame::stack_check as *const () as usize as i64;
        dynasm!(self.ops
            ; .arch x64
            // More than one stack involved, or a CALL chain: the exact Rust version.
            ; =>self.labels.slow_check
            ; lea ecx, [rax - 1]
            ; mov rax, QWORD helper
            ; jmp =>self.labels.call_rust

            ; =>self.labels.loop_match
            ; cmp [rdi + TOP_IF], eax
            ; je =>self.labels.slow_check
            ; cmp [rdi + TOP_CALL], eax
            ; je =>self.labels.slow_check
            ; mov ecx, [rdi + LOOPS.next]
            ; dec ecx
            ; and ecx, LOOPS.slots - 1
            ; shl ecx, 4
            ; lea r9, [rdi + rcx + LOOPS.entries]
            ; mov ecx, [r9 + 12]
            ; add [rsi + AL], ecx
            ; mov ecx, [r9 + 8]
            ; test ecx, ecx
            ; jz >exit
            ; dec ecx
            ; mov [r9 + 8], ecx
            ; mov eax, [r9 + 4]
            ; jmp =>self.labels.dispatch
            ; exit:
        );
        self.pop(LOOPS, TOP_LOOP);
        dynasm!(self.ops
            ; .arch x64
            ; jmp =>self.labels.dispatch

            ; =>self.labels.if_match
            ; cmp [rdi + TOP_CALL], eax
            ; je =>self.labels.slow_check
            ; mov ecx, [rdi + IFS.next]
            ; dec ecx
            ; and ecx, IFS.slots - 1
            ; mov eax, [rdi + rcx * 8 + IFS.entries + 4]
        );
        self.pop(IFS, TOP_IF);
        dynasm!(self.ops
            ; .arch x64
            ; jmp =>self.labels.dispatch

            ; =>self.labels.call_match
            ; mov ecx, [rdi + CALLS.next]
            ; dec ecx
            ; and ecx, CALLS.slots - 1
            ; mov r9d, [rdi + rcx * 8 + CALLS.entries + 4]   // ret
            // A second pop in the same check (ret is the next entry's exit)?
            ; cmp DWORD [rdi + CALLS.len], 2
            ; jb >single
            ; lea r8d, [rcx - 1]
            ; and r8d, CALLS.slots - 1
            ; cmp [rdi + r8 * 8 + CALLS.entries], r9d
            ; je =>self.labels.slow_check
            ; single:
            ; mov eax, r9d
        );
        self.pop(CALLS, TOP_CALL);
        dynasm!(self.ops ; .arch x64 ; jmp =>self.labels.dispatch);
    }

    /// Removes the top entry of `ring` and refreshes its cached top check.
    /// Preserves `eax`.
    fn pop(&mut self, ring: RingLayout, top: i32) {
        let shift = ring.stride.trailing_zeros() as i8;
        let mask = ring.slots - 1;
        let empty = self.ops.new_dynamic_label();
        dynasm!(self.ops
            ; .arch x64
            ; mov ecx, [rdi + ring.next]
            ; dec ecx
            ; and ecx, mask
            ; mov [rdi + ring.next], ecx
            ; dec DWORD [rdi + ring.len]
            ; mov r9d, NO_CHECK as i32
            ; jz =>empty
            ; dec ecx
            ; and ecx, mask
            ; shl ecx, shift
            ; mov r9d, [rdi + rcx + ring.entries]
            ; =>empty
            ; mov [rdi + top], r9d
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::{Precision, Program, ShaderConfig};

    fn compiled(source: &str, budget: u64) -> crate::jit::CompiledShader {
        let source = format!(".proc main\n{source}\n.end\n");
        let shbin = crate::asm::assemble_str("t.pica", &source).expect("assembles");
        let program = Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone())
            .expect("a program");
        let config = ShaderConfig {
            precision: Precision::F32,
            budget,
            ..ShaderConfig::default()
        };
        crate::jit::compile_with(&program, &config, crate::jit::Features::host()).expect("compiles")
    }

    const IF_ELSE: &str = "
        ifu b0, else, 1
        add r0, c1, r0
        jmpc cmp.x, done
    else:
        add r1, c1, r1
    done:
        ifc !cmp.y, end, 0
        add r2, c1, r2
    end:
        end
    ";

    /// Structured `if`/`else` with forward jumps and enough budget: the
    /// stacks are static, so the code pushes and checks nothing (no flow
    /// state in the frame). With a budget the code counts, a budget stop
    /// would hand the stacks over: the stack code is back.
    #[test]
    fn static_stacks_need_no_flow_state() {
        assert!(!compiled(IF_ELSE, 1000).uses_flow_state);
        assert!(compiled(IF_ELSE, 3).uses_flow_state);
        // A jump into a then part: not static.
        let into = "
            jmpu b1, then
            ifu b0, else, 1
        then:
            add r0, c1, r0
        else:
            add r1, c1, r1
            end
        ";
        assert!(compiled(into, 1000).uses_flow_state);
    }
}
