//! The IR evaluator: runs whole invocations from the [`Ir`] in plain Rust.
//!
//! It is a verification engine ([`EngineKind::Ir`](crate::EngineKind::Ir)), not a
//! fast one: every suite that runs on every engine, the differential proptests
//! and the `diff_interp_jit` fuzz target compare it with the interpreter, so a
//! wrong recipe fails a test before any backend lowers it.
//!
//! Each primitive's scalar definition is here, in terms of
//! [`arith`] where a PICA rule is involved. Control flow reuses the machine
//! model the interpreter and the JIT share: the stacks are its `FlowState` (pushed
//! and popped as the block's [`Exit`] says, checked with `FlowState::advance`),
//! and the budget is charged per instruction span with the interpreter's stop order (PC outside
//! the program → `EndOfCode`, then budget spent → `BudgetExceeded`), so budget
//! stops inside a block are exact.

use super::{AddrReg, BinOp, Block, Exit, InstrSpan, Ir, Op, UnOp, Value};
use crate::arith::{self, Precision, f24};
use crate::isa::{CmpOp, DstReg, FLOAT_UNIFORM_COUNT};
use crate::machine::flow::{CallEntry, FlowState, IfEntry, LoopEntry};
use crate::machine::{EmitConfig, Progress, Stop};
use crate::state::{EmitSink, EmittedVertex, Uniforms, UnitState};

/// What [`Op::ReadConstAt`] reads for a slot that names no register.
pub const MISSING_CONSTANT: [f32; 4] = [1.0; 4];

/// Lane bits of one value (`f32` bits, `i32` two's complement, `bool` 0 or not 0).
type Bits = [u32; 4];

/// Runs one invocation of `ir` on `state` with at most `budget` instructions.
///
/// ```
/// use pica_jit::ir::{Ir, eval};
/// use pica_jit::isa::{encode, DstReg, Instruction, OperandDescriptor, Source, SrcReg, Swizzle, UnaryOp, WriteMask};
/// use pica_jit::{Precision, Program, ShaderKind, Stop, Uniforms, UnitState};
///
/// let rcp = Instruction::Unary { op: UnaryOp::Rcp, dst: DstReg::Output(0), src: Source::direct(SrcReg::Input(0)), desc: 0 };
/// let id = (false, Swizzle::IDENTITY);
/// let desc = OperandDescriptor::new(WriteMask::ALL, [id, id, id]);
/// let program = Program::new(vec![encode(&rcp).unwrap(), encode(&Instruction::End).unwrap()], vec![desc.0]).unwrap();
/// let ir = Ir::build(&program, 0, ShaderKind::Vertex, Precision::F32);
/// let mut state = UnitState::default();
/// state.inputs[0] = [4.0, 0.0, 0.0, 0.0];
/// assert_eq!(eval::run(&ir, 100, &Uniforms::default(), &mut state, &mut ()), Stop::End);
/// assert_eq!(state.outputs[0], [0.25; 4]);
/// // A budget of one instruction stops before `end`.
/// assert_eq!(eval::run(&ir, 1, &Uniforms::default(), &mut state, &mut ()), Stop::BudgetExceeded);
/// ```
pub fn run(
    ir: &Ir,
    budget: u64,
    uniforms: &Uniforms,
    state: &mut UnitState,
    sink: &mut dyn EmitSink,
) -> Stop {
    run_with_fallback(ir, ir, budget, uniforms, state, sink)
}

/// Runs one invocation of `optimised` (an [`opt::optimize`](super::opt::optimize)d
/// IR of `base`), running every block that is entered in the middle or that
/// the budget cannot cover from `base` instead (an optimised block must run
/// whole). Gives the same result as [`run`] on `base`.
///
/// ```
/// use pica_jit::ir::{Ir, eval, opt};
/// use pica_jit::shbin::Shbin;
/// use pica_jit::{Precision, Program, ShaderKind, Uniforms, UnitState};
/// let shbin = Shbin::parse(pica_jit::DEFAULT_SHADER).unwrap();
/// let program = Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone()).unwrap();
/// let ir = Ir::build(&program, shbin.dvles[0].main, ShaderKind::Vertex, Precision::F24);
/// let optimised = opt::optimize(&ir);
/// let (mut a, mut b) = (UnitState::default(), UnitState::default());
/// let stop = eval::run(&ir, 1000, &Uniforms::default(), &mut a, &mut ());
/// assert_eq!(eval::run_optimized(&optimised, &ir, 1000, &Uniforms::default(), &mut b, &mut ()), stop);
/// assert_eq!(format!("{a:?}"), format!("{b:?}"));
/// ```
pub fn run_optimized(
    optimised: &Ir,
    base: &Ir,
    budget: u64,
    uniforms: &Uniforms,
    state: &mut UnitState,
    sink: &mut dyn EmitSink,
) -> Stop {
    run_with_fallback(optimised, base, budget, uniforms, state, sink)
}

fn run_with_fallback(
    ir: &Ir,
    base: &Ir,
    budget: u64,
    uniforms: &Uniforms,
    state: &mut UnitState,
    sink: &mut dyn EmitSink,
) -> Stop {
    let mut machine = Machine {
        uniforms,
        state,
        values: Vec::new(),
    };
    machine.spans(&ir.prologue, &ir.prologue.instrs);
    let mut progress = Progress {
        flow: FlowState::at(ir.entry),
        ..Progress::default()
    };
    loop {
        let pc = progress.flow.pc;
        let Some((mut block, first)) = ir.locate(pc) else {
            return Stop::EndOfCode;
        };
        let partial =
            budget.saturating_sub(progress.executed) < (block.instrs.len() - first) as u64;
        if (first != 0 || partial) && ir.values_cross_spans {
            match base.locate(pc) {
                Some((whole, _)) => block = whole,
                None => return Stop::EndOfCode,
            }
        }
        let spans = &block.instrs[first..];
        let remaining = budget.saturating_sub(progress.executed);
        if remaining < spans.len() as u64 {
            // The budget runs out inside the block: exactly `remaining` more
            // instructions execute.
            machine.spans(block, &spans[..remaining as usize]);
            return Stop::BudgetExceeded;
        }
        machine.spans(block, spans);
        progress.executed += spans.len() as u64;
        let jump = match machine.exit(block, &mut progress, sink) {
            Ok(jump) => jump,
            Err(stop) => return stop,
        };
        progress.flow.pc = if block.stack_check {
            progress
                .flow
                .advance(block.last, jump, &mut machine.state.al)
        } else {
            jump.unwrap_or(block.last + 1)
        };
    }
}

struct Machine<'a> {
    uniforms: &'a Uniforms,
    state: &'a mut UnitState,
    /// Value of every node of the current block evaluated so far.
    values: Vec<Bits>,
}

fn float(bits: u32) -> f32 {
    f32::from_bits(bits)
}

fn truth(b: bool) -> u32 {
    if b { u32::MAX } else { 0 }
}

fn lanes(a: Bits, f: impl Fn(u32) -> u32) -> Bits {
    a.map(f)
}

fn lanes2(a: Bits, b: Bits, f: impl Fn(u32, u32) -> u32) -> Bits {
    std::array::from_fn(|i| f(a[i], b[i]))
}

fn float_lanes(a: Bits, f: impl Fn(f32) -> f32) -> Bits {
    a.map(|x| f(float(x)).to_bits())
}

fn float_lanes2(a: Bits, b: Bits, f: impl Fn(f32, f32) -> f32) -> Bits {
    std::array::from_fn(|i| f(float(a[i]), float(b[i])).to_bits())
}

/// The signed integer comparison of [`Op::ICmp`].
pub(crate) fn int_compare(op: CmpOp, a: i32, b: i32) -> bool {
    match op {
        CmpOp::Eq => a == b,
        CmpOp::Ne => a != b,
        CmpOp::Lt => a < b,
        CmpOp::Le => a <= b,
        CmpOp::Gt => a > b,
        CmpOp::Ge => a >= b,
        CmpOp::True6 | CmpOp::True7 => true,
    }
}

impl Machine<'_> {
    /// Evaluates the nodes of `spans` (consecutive spans of `block`).
    fn spans(&mut self, block: &Block, spans: &[InstrSpan]) {
        let (Some(first), Some(last)) = (spans.first(), spans.last()) else {
            return;
        };
        if self.values.len() < block.nodes.len() {
            self.values.resize(block.nodes.len(), [0; 4]);
        }
        for index in first.first..last.end {
            let bits = node(
                &block.nodes[index as usize].op,
                self.uniforms,
                self.state,
                &self.values,
            );
            self.values[index as usize] = bits;
        }
    }
}

/// Evaluates one node against the state; `values` holds the earlier nodes' values.
fn node(op: &Op, uniforms: &Uniforms, state: &mut UnitState, values: &[Bits]) -> Bits {
    let get = |v: Value| values[v.0 as usize];
    let reg_bits = |v: [f32; 4]| v.map(f32::to_bits);
    match *op {
        Op::Const { bits, .. } => bits,
        Op::ReadInput(n) => reg_bits(state.inputs[n as usize]),
        Op::ReadTemp(n) => reg_bits(state.temps[n as usize]),
        Op::ReadConst(n) => reg_bits(uniforms.f[n as usize]),
        Op::ReadConstAt(slot) => {
            let slot = get(slot)[0] as i32;
            match usize::try_from(slot) {
                Ok(slot) if slot < FLOAT_UNIFORM_COUNT => reg_bits(uniforms.f[slot]),
                _ => reg_bits(MISSING_CONSTANT),
            }
        }
        Op::ReadAddr(reg) => {
            let v = match reg {
                AddrReg::A0X => state.a0[0],
                AddrReg::A0Y => state.a0[1],
                AddrReg::AL => state.al,
            };
            [v as u32, 0, 0, 0]
        }
        Op::ReadFlag(flag) => [truth(state.cmp[flag as usize & 1]), 0, 0, 0],
        Op::ReadBoolUniform(n) => [truth(uniforms.b[n as usize & 15]), 0, 0, 0],
        Op::ReadIntUniform { id, field } => [
            uniforms.i[id as usize & 3][field as usize & 3] as u32,
            0,
            0,
            0,
        ],
        Op::Store { dst, mask, value } => {
            let value = get(value);
            let reg = match dst {
                DstReg::Output(n) => &mut state.outputs[n as usize],
                DstReg::Temp(n) => &mut state.temps[n as usize],
            };
            for (lane, out) in reg.iter_mut().enumerate() {
                if mask.writes(lane) {
                    *out = float(value[lane]);
                }
            }
            [0; 4]
        }
        Op::WriteAddr(reg, value) => {
            let v = get(value)[0] as i32;
            match reg {
                AddrReg::A0X => state.a0[0] = v,
                AddrReg::A0Y => state.a0[1] = v,
                AddrReg::AL => state.al = v,
            }
            [0; 4]
        }
        Op::WriteFlag(flag, value) => {
            state.cmp[flag as usize & 1] = get(value)[0] != 0;
            [0; 4]
        }
        Op::Swizzle(v, select) => {
            let v = get(v);
            select.map(|lane| v[lane as usize & 3])
        }
        Op::Extract(v, lane) => [get(v)[lane as usize & 3], 0, 0, 0],
        Op::Splat(v) => [get(v)[0]; 4],
        Op::Blend { a, b, take_b } => {
            let (a, b) = (get(a), get(b));
            std::array::from_fn(|i| if take_b.writes(i) { b[i] } else { a[i] })
        }
        Op::Select { cond, a, b } => {
            let (cond, a, b) = (get(cond), get(a), get(b));
            std::array::from_fn(|i| if cond[i] != 0 { a[i] } else { b[i] })
        }
        Op::Unary(op, v) => unary(op, get(v)),
        Op::Binary(op, a, b) => binary(op, get(a), get(b)),
        Op::FCmp(op, a, b) => lanes2(get(a), get(b), |x, y| {
            truth(arith::compare(op, float(x), float(y)))
        }),
        Op::ICmp(op, a, b) => lanes2(get(a), get(b), |x, y| {
            truth(int_compare(op, x as i32, y as i32))
        }),
    }
}

impl Machine<'_> {
    /// Applies the block's exit; returns the exit's own jump, or why the
    /// invocation stops.
    fn exit(
        &mut self,
        block: &Block,
        progress: &mut Progress,
        sink: &mut dyn EmitSink,
    ) -> Result<Option<u32>, Stop> {
        let (values, state) = (&self.values, &mut *self.state);
        apply_exit(
            &block.exit,
            &|v| values[v.0 as usize][0] != 0,
            &|v| values[v.0 as usize][0],
            progress,
            &mut |event| match event {
                EmitterEvent::Set(config) => state.emit = config,
                EmitterEvent::Emit => sink.emit(&EmittedVertex {
                    vertex_id: state.emit.vertex_id,
                    primitive: state.emit.primitive,
                    winding: state.emit.winding,
                    outputs: state.outputs,
                }),
            },
        )
    }
}

/// What a block's exit asks of the geometry emitter (whose state lives in
/// [`UnitState::emit`], which `apply_exit` does not hold).
pub(crate) enum EmitterEvent {
    /// `setemit`: the new parameters.
    Set(EmitConfig),
    /// `emit`: deliver a vertex with the current parameters.
    Emit,
}

/// Applies a block's exit to `progress` (pushes and pops the stacks as the
/// interpreter does); returns the exit's own jump, or why the invocation
/// stops. `holds` gives a condition's truth, `int` an `i32` value's bits, and
/// `emitter` carries out `setemit` and `emit`. Every engine that runs from
/// the IR applies exits with this one function.
pub(crate) fn apply_exit(
    exit: &Exit,
    holds: &dyn Fn(Value) -> bool,
    int: &dyn Fn(Value) -> u32,
    progress: &mut Progress,
    emitter: &mut dyn FnMut(EmitterEvent),
) -> Result<Option<u32>, Stop> {
    let taken = |taken: Option<Value>| taken.is_none_or(holds);
    let flow = &mut progress.flow;
    Ok(match *exit {
        Exit::Next => None,
        Exit::End => return Err(Stop::End),
        Exit::Jump { taken: t, target } => holds(t).then_some(target),
        Exit::Call {
            taken: t,
            target,
            check,
            ret,
        } => taken(t).then(|| {
            flow.calls.push(CallEntry { check, ret });
            target
        }),
        Exit::If {
            taken: t,
            target,
            next,
        } => {
            if holds(t) {
                flow.ifs.push(IfEntry {
                    check: target,
                    next,
                });
                None
            } else {
                Some(target)
            }
        }
        Exit::Loop {
            count,
            increment,
            start,
            check,
        } => {
            flow.loops.push(LoopEntry {
                check,
                start,
                remaining: int(count),
                increment: int(increment),
            });
            None
        }
        Exit::Break { taken: t } => {
            if taken(t) {
                match flow.loops.pop() {
                    Some(entry) => Some(entry.check),
                    // The hardware hangs here; the invocation can never finish.
                    None => return Err(Stop::BreakOutsideLoop),
                }
            } else {
                None
            }
        }
        Exit::Emit => {
            emitter(EmitterEvent::Emit);
            None
        }
        Exit::SetEmit {
            vertex_id,
            primitive,
            winding,
        } => {
            emitter(EmitterEvent::Set(EmitConfig {
                vertex_id,
                primitive,
                winding,
            }));
            None
        }
    })
}

/// Scalar definitions of the unary primitives.
pub(crate) fn unary(op: UnOp, a: Bits) -> Bits {
    match op {
        UnOp::Floor => float_lanes(a, f32::floor),
        UnOp::Sqrt => float_lanes(a, f32::sqrt),
        UnOp::FlipSign => float_lanes(a, |x| arith::negate(Precision::F32, x)),
        UnOp::Canonicalize => float_lanes(a, arith::canonicalize),
        UnOp::F24Load => float_lanes(a, f24::load),
        UnOp::F24Flush => float_lanes(a, f24::flush_input),
        UnOp::F24Quantize => float_lanes(a, f24::quantize_result),
        UnOp::ToI32 => lanes(a, |x| arith::mova(float(x)) as u32),
        UnOp::ToF32 => lanes(a, |x| (x as i32 as f32).to_bits()),
        UnOp::Bits | UnOp::FromBits => a,
        UnOp::Shl(n) => lanes(a, |x| x.wrapping_shl(n as u32)),
        UnOp::Sar(n) => lanes(a, |x| (x as i32).wrapping_shr(n as u32) as u32),
        UnOp::Shr(n) => lanes(a, |x| x.wrapping_shr(n as u32)),
        UnOp::Not => lanes(a, |x| truth(x == 0)),
    }
}

/// Scalar definitions of the binary primitives.
pub(crate) fn binary(op: BinOp, a: Bits, b: Bits) -> Bits {
    match op {
        BinOp::FAdd => float_lanes2(a, b, |x, y| x + y),
        BinOp::FSub => float_lanes2(a, b, |x, y| x - y),
        BinOp::FMul => float_lanes2(a, b, |x, y| x * y),
        BinOp::FDiv => float_lanes2(a, b, |x, y| x / y),
        BinOp::PicaMul => float_lanes2(a, b, arith::mul_rule),
        BinOp::PicaMulF24 => float_lanes2(a, b, |x, y| {
            arith::f24::quantize_result(arith::mul_rule(x, y))
        }),
        BinOp::PicaMax => float_lanes2(a, b, arith::max),
        BinOp::PicaMin => float_lanes2(a, b, arith::min),
        BinOp::IAdd => lanes2(a, b, u32::wrapping_add),
        BinOp::ISub => lanes2(a, b, u32::wrapping_sub),
        BinOp::And => lanes2(a, b, |x, y| x & y),
        BinOp::Or => lanes2(a, b, |x, y| x | y),
        BinOp::BAnd => lanes2(a, b, |x, y| truth(x != 0 && y != 0)),
        BinOp::BOr => lanes2(a, b, |x, y| truth(x != 0 || y != 0)),
    }
}
