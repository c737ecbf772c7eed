//! One dispatch of the flow instructions for both single-vertex backends:
//! what `jit::inline_flow` planned becomes the backend's flow primitives
//! (guards, pushes, the after-instruction check point, jumps), in the same
//! order on every ISA. Each backend's `flow.rs` emits the primitives.

use crate::isa::Guard;
use crate::jit::inline_flow::{FlowPlan, Push};
use dynasmrt::relocations::Relocation;
use dynasmrt::{DynamicLabel, DynasmLabelApi, VecAssembler};

/// A backend's flow primitives.
pub(crate) trait FlowTarget {
    /// The backend's relocations (its instruction set).
    type Reloc: Relocation;

    /// The code being emitted.
    fn asm(&mut self) -> &mut VecAssembler<Self::Reloc>;

    /// The guard register = 1 when `guard` holds, else 0.
    fn guard(&mut self, guard: Guard);

    /// A new label.
    fn new_label(&mut self) -> DynamicLabel {
        self.asm().new_dynamic_label()
    }

    /// Places `label` here.
    fn bind(&mut self, label: DynamicLabel) {
        self.asm().dynamic_label(label);
    }

    /// Jumps to `label` when the guard register is 0.
    fn branch_unless(&mut self, label: DynamicLabel);

    /// Pushes `push` onto its ring stack (overwriting the oldest entry when
    /// full) and records its check address as the stack's top.
    fn push(&mut self, push: &Push);

    /// The after-instruction stack check for `pc` (only where analysis says
    /// a stack can pop): falls through when no stack top matches `pc + 1`.
    fn checkpoint(&mut self, pc: u32);

    /// Continues at `target` (a leader), or leaves the program.
    fn jump_to(&mut self, target: u32);

    /// `aL` = the uniform byte at `al_from`.
    fn load_al(&mut self, al_from: u32);

    /// The interpreter's own step of the instruction at `pc`
    /// (`frame::runtime_step`), continuing with its result.
    fn runtime_step(&mut self, pc: u32);

    /// Jumps to `label` when the guard register is not 0.
    fn branch_if(&mut self, label: DynamicLabel);

    /// A jump's condition at `pc`: the guard (inverted when `invert`) and
    /// the stack check after the instruction, in the order the backend's
    /// registers allow. Returns whether the jump is taken when the guard
    /// register is not 0 (else when it is 0).
    fn jump_condition(&mut self, pc: u32, guard: Guard, invert: bool) -> bool;

    /// `jmpc`/`jmpu` at `pc`.
    fn flow_jmp(&mut self, pc: u32, guard: Guard, target: u32, invert: bool) {
        let not_taken = self.new_label();
        if self.jump_condition(pc, guard, invert) {
            self.branch_unless(not_taken);
        } else {
            self.branch_if(not_taken);
        }
        self.jump_to(target);
        self.bind(not_taken);
        self.jump_to(pc + 1);
    }

    /// Where an `if` or `jmp` at `pc` goes when its guard holds and when it
    /// does not, where the backend knows the stacks there at compile time
    /// (`analysis::static_flow`): then it branches on the guard alone. `None`
    /// (the default): the stacks are kept at run time.
    fn static_targets(&self, _pc: u32) -> Option<(u32, u32)> {
        None
    }

    /// Continues at `on_guard` when `guard` holds at `pc`, else at `on_not`
    /// (static stacks, [`Self::static_targets`]: nothing else to do).
    fn static_branch(&mut self, _pc: u32, _guard: Guard, _on_guard: u32, _on_not: u32) {
        unreachable!("a backend with static targets branches on them")
    }

    /// The runtime-class instruction at `pc`, as `inline_flow` plans it.
    fn flow(&mut self, pc: u32, plan: FlowPlan) {
        if let Some((on_true, on_false)) = self.static_targets(pc) {
            match plan {
                FlowPlan::If { guard, .. } => {
                    return self.static_branch(pc, guard, on_true, on_false);
                }
                FlowPlan::Jump { guard, invert, .. } => {
                    let (on_guard, on_not) = if invert {
                        (on_false, on_true)
                    } else {
                        (on_true, on_false)
                    };
                    return self.static_branch(pc, guard, on_guard, on_not);
                }
                _ => {}
            }
        }
        match plan {
            FlowPlan::Jump {
                guard,
                invert,
                target,
            } => self.flow_jmp(pc, guard, target, invert),
            FlowPlan::If {
                guard,
                push,
                target,
            } => self.flow_if(pc, guard, &push, target),
            FlowPlan::Call {
                guard,
                push,
                target,
            } => self.flow_call(pc, guard, &push, target),
            FlowPlan::Loop { al_from, push } => self.flow_loop(pc, al_from, &push),
            // Rare or sink-bound: the interpreter's own step.
            FlowPlan::Runtime => self.runtime_step(pc),
        }
    }

    /// `ifc`/`ifu` at `pc`: true pushes an IF entry, false jumps to `target`.
    fn flow_if(&mut self, pc: u32, guard: Guard, push: &Push, target: u32) {
        self.guard(guard);
        let false_path = self.new_label();
        self.branch_unless(false_path);
        self.push(push);
        self.checkpoint(pc);
        self.jump_to(pc + 1);
        self.bind(false_path);
        self.checkpoint(pc);
        self.jump_to(target);
    }

    /// `call`/`callc`/`callu` at `pc`: pushes a CALL entry and jumps to
    /// `target` (a conditional call that is not taken continues at `pc + 1`).
    fn flow_call(&mut self, pc: u32, guard: Guard, push: &Push, target: u32) {
        let not_taken = self.new_label();
        let guarded = guard != Guard::Always;
        if guarded {
            self.guard(guard);
            self.branch_unless(not_taken);
        }
        self.push(push);
        self.checkpoint(pc);
        self.jump_to(target);
        if guarded {
            self.bind(not_taken);
            self.checkpoint(pc);
            self.jump_to(pc + 1);
        }
    }

    /// `loop iN, end` at `pc`.
    fn flow_loop(&mut self, pc: u32, al_from: u32, push: &Push) {
        self.load_al(al_from);
        self.push(push);
        self.checkpoint(pc);
        self.jump_to(pc + 1);
    }
}
