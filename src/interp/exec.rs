//! The instruction loop: one invocation, instruction by instruction.

use super::operands::{Operands, write};
use crate::arith::{self, Precision, Vec4};
use crate::isa::{BinaryOp, Guard, Instruction, UnaryOp};
use crate::machine::flow::{CallEntry, IfEntry, LoopEntry};
use crate::machine::{EmitConfig, Progress, ShaderConfig, Stop};
use crate::program::{Program, ShaderKind};
use crate::state::{EmitSink, EmittedVertex, UnitState};

/// Everything an invocation needs besides its mutable state.
pub(crate) struct Invocation<'a> {
    pub program: &'a Program,
    pub operands: Operands<'a>,
    pub kind: ShaderKind,
    pub budget: u64,
}

/// F24: converts to float24, as the invocation starting at `entry` starts, the
/// temporaries it may read before writing them (inputs and uniforms are
/// converted as they are read). The other temporaries and the outputs, which no
/// instruction reads, keep their bits.
pub(crate) fn enter(precision: Precision, program: &Program, entry: u32, state: &mut UnitState) {
    if precision == Precision::F24 {
        let read = program.temps_converted_on_entry(entry);
        for (n, reg) in state.temps.iter_mut().enumerate() {
            if read >> n & 1 != 0 {
                *reg = reg.map(|x| arith::load(precision, x));
            }
        }
    }
}

impl<'a> Invocation<'a> {
    /// The invocation of `program` configured by `config` over `uniforms`.
    pub fn new(
        program: &'a Program,
        config: &ShaderConfig,
        uniforms: &'a crate::Uniforms,
    ) -> Invocation<'a> {
        Invocation {
            program,
            operands: Operands {
                precision: config.precision,
                uniforms,
            },
            kind: config.kind,
            budget: config.budget,
        }
    }

    fn guard(&self, state: &UnitState, guard: Guard) -> bool {
        match guard {
            Guard::Always => true,
            Guard::Cond(cond) => cond.eval(state.cmp),
            Guard::Bool(id) => self.operands.uniforms.b[id as usize & 15],
        }
    }

    /// Runs from `progress` until the invocation stops.
    pub fn run(
        &self,
        state: &mut UnitState,
        sink: &mut dyn EmitSink,
        progress: &mut Progress,
    ) -> Stop {
        let code = self.program.instructions();
        loop {
            let pc = progress.flow.pc;
            let Some(&instr) = code.get(pc as usize) else {
                return Stop::EndOfCode;
            };
            if progress.executed >= self.budget {
                return Stop::BudgetExceeded;
            }
            progress.executed += 1;
            let jump = match self.step(state, sink, progress, pc, instr) {
                Ok(jump) => jump,
                Err(stop) => return stop,
            };
            progress.flow.pc = progress.flow.advance(pc, jump, &mut state.al);
        }
    }

    /// Executes the instruction at `pc` and chooses the next PC (`Err` when the
    /// invocation stops). Native engines call this for the instructions they
    /// delegate to the runtime, so both share one definition of control flow.
    pub fn step_and_advance(
        &self,
        state: &mut UnitState,
        sink: &mut dyn EmitSink,
        progress: &mut Progress,
        pc: u32,
    ) -> Result<u32, Stop> {
        let instr = self.program.instructions()[pc as usize];
        let jump = self.step(state, sink, progress, pc, instr)?;
        Ok(progress.flow.advance(pc, jump, &mut state.al))
    }

    /// Executes one instruction; returns its own PC change, or why the invocation stops.
    fn step(
        &self,
        state: &mut UnitState,
        sink: &mut dyn EmitSink,
        progress: &mut Progress,
        pc: u32,
        instr: Instruction,
    ) -> Result<Option<u32>, Stop> {
        match instr {
            Instruction::Binary {
                op,
                dst,
                src1,
                src2,
                desc,
                ..
            } => {
                let d = self.program.descriptor(desc);
                let a = self.operands.read(state, src1, d, 0);
                let b = self.operands.read(state, src2, d, 1);
                write(
                    state,
                    dst,
                    d.mask(),
                    binary(self.operands.precision, op, a, b),
                );
            }
            Instruction::Unary { op, dst, src, desc } => {
                let d = self.program.descriptor(desc);
                let a = self.operands.read(state, src, d, 0);
                let p = self.operands.precision;
                let broadcast = |x: f32| [x; 4];
                let value: Vec4 = match op {
                    UnaryOp::Mov => a,
                    UnaryOp::Flr => a.map(|x| arith::flr(p, x)),
                    UnaryOp::Ex2 => broadcast(arith::ex2(p, a[0])),
                    UnaryOp::Lg2 => broadcast(arith::lg2(p, a[0])),
                    UnaryOp::Rcp => broadcast(arith::rcp(p, a[0])),
                    UnaryOp::Rsq => broadcast(arith::rsq(p, a[0])),
                    UnaryOp::Litp => {
                        let (value, flags) = arith::litp(a);
                        state.cmp = flags;
                        value
                    }
                    UnaryOp::Mova => {
                        let mask = d.mask();
                        for (lane, register) in state.a0.iter_mut().enumerate() {
                            if mask.writes(lane) {
                                *register = arith::mova(a[lane]);
                            }
                        }
                        return Ok(None);
                    }
                };
                write(state, dst, d.mask(), value);
            }
            Instruction::Cmp {
                src1,
                src2,
                x,
                y,
                desc,
            } => {
                let d = self.program.descriptor(desc);
                let a = self.operands.read(state, src1, d, 0);
                let b = self.operands.read(state, src2, d, 1);
                state.cmp = [arith::compare(x, a[0], b[0]), arith::compare(y, a[1], b[1])];
            }
            Instruction::Mad {
                dst,
                src1,
                src2,
                src3,
                desc,
                ..
            } => {
                let d = self.program.descriptor(desc);
                let a = self.operands.read(state, src1, d, 0);
                let b = self.operands.read(state, src2, d, 1);
                let c = self.operands.read(state, src3, d, 2);
                let p = self.operands.precision;
                let value = std::array::from_fn(|i| arith::mad(p, a[i], b[i], c[i]));
                write(state, dst, d.mask(), value);
            }
            Instruction::Nop | Instruction::Unknown { .. } => {}
            Instruction::End => return Err(Stop::End),
            Instruction::Emit => {
                if self.kind == ShaderKind::Geometry {
                    sink.emit(&EmittedVertex {
                        vertex_id: state.emit.vertex_id,
                        primitive: state.emit.primitive,
                        winding: state.emit.winding,
                        outputs: state.outputs,
                    });
                }
            }
            Instruction::SetEmit {
                vertex_id,
                primitive,
                winding,
            } => {
                if self.kind == ShaderKind::Geometry {
                    state.emit = EmitConfig {
                        vertex_id,
                        primitive,
                        winding,
                    };
                }
            }
            Instruction::Break { guard } => {
                if self.guard(state, guard) {
                    let Some(entry) = progress.flow.loops.pop() else {
                        // The hardware hangs here; the invocation can never finish.
                        return Err(Stop::BreakOutsideLoop);
                    };
                    return Ok(Some(entry.check));
                }
            }
            Instruction::Call { guard, target, num } => {
                if self.guard(state, guard) {
                    let check = target as u32 + num as u32;
                    progress.flow.calls.push(CallEntry { check, ret: pc + 1 });
                    return Ok(Some(target as u32));
                }
            }
            Instruction::If { guard, target, num } => {
                if self.guard(state, guard) {
                    let next = target as u32 + num as u32;
                    progress.flow.ifs.push(IfEntry {
                        check: target as u32,
                        next,
                    });
                } else {
                    return Ok(Some(target as u32));
                }
            }
            Instruction::Loop { int_id, end } => {
                let [count, start_al, increment, _] = self.operands.uniforms.i[int_id as usize & 3];
                state.al = start_al as i32;
                progress.flow.loops.push(LoopEntry {
                    check: end as u32 + 1,
                    start: pc + 1,
                    remaining: count as u32,
                    increment: increment as u32,
                });
            }
            Instruction::Jmp {
                guard,
                target,
                invert,
            } => {
                if self.guard(state, guard) != invert {
                    return Ok(Some(target as u32));
                }
            }
        }
        Ok(None)
    }
}

fn binary(p: Precision, op: BinaryOp, a: Vec4, b: Vec4) -> Vec4 {
    let lanes = |f: &dyn Fn(f32, f32) -> f32| std::array::from_fn(|i| f(a[i], b[i]));
    match op {
        BinaryOp::Add => lanes(&|x, y| arith::add(p, x, y)),
        BinaryOp::Mul => lanes(&|x, y| arith::mul(p, x, y)),
        BinaryOp::Max => lanes(&arith::max),
        BinaryOp::Min => lanes(&arith::min),
        BinaryOp::Sge => lanes(&arith::sge),
        BinaryOp::Slt => lanes(&arith::slt),
        BinaryOp::Dp3 => [arith::dp3(p, a, b); 4],
        BinaryOp::Dp4 => [arith::dp4(p, a, b); 4],
        BinaryOp::Dph => [arith::dph(p, a, b); 4],
        BinaryOp::Dst => arith::dst(p, a, b),
    }
}
