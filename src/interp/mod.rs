//! The reference interpreter: a direct, readable transcription of the hardware
//! semantics. It is the oracle every other engine is tested against.

mod exec;
mod operands;

pub use crate::machine::EmitConfig;
/// The control-flow stacks (defined in [`crate::machine::flow`]).
pub use crate::machine::flow;
pub use operands::{OUT_OF_RANGE_CONSTANT, relative_constant_index};

use crate::machine::flow::FlowState;
use crate::machine::{Progress, ShaderConfig, Stop};
use crate::program::Program;
use crate::state::{EmitSink, Uniforms, UnitState};
pub(crate) use exec::{Invocation, enter};

/// Runs one invocation of `program` on `state` with the reference interpreter.
///
/// Most callers use [`Shader`](crate::Shader), which selects an engine; this is the
/// engine-independent oracle.
///
/// ```
/// use pica_jit::isa::{encode, BinaryOp, DstReg, Instruction, OperandDescriptor, Source, SrcReg, Swizzle, WriteMask};
/// use pica_jit::{interp, Program, ShaderConfig, Stop, UnitState, Uniforms};
///
/// let add = Instruction::Binary {
///     op: BinaryOp::Add, inverted: false, dst: DstReg::Output(0),
///     src1: Source::direct(SrcReg::Input(0)), src2: Source::direct(SrcReg::Input(1)), desc: 0,
/// };
/// let id = (false, Swizzle::IDENTITY);
/// let desc = OperandDescriptor::new(WriteMask::ALL, [id, id, id]);
/// let program = Program::new(vec![encode(&add).unwrap(), encode(&Instruction::End).unwrap()], vec![desc.0]).unwrap();
///
/// let mut state = UnitState::default();
/// state.inputs[0] = [1.0, 2.0, 3.0, 4.0];
/// state.inputs[1] = [0.5, 0.5, 0.5, 0.5];
/// let stop = interp::run(&program, &ShaderConfig::default(), &Uniforms::default(), &mut state, &mut ());
/// assert_eq!(stop, Stop::End);
/// assert_eq!(state.outputs[0], [1.5, 2.5, 3.5, 4.5]);
/// ```
pub fn run(
    program: &Program,
    config: &ShaderConfig,
    uniforms: &Uniforms,
    state: &mut UnitState,
    sink: &mut dyn EmitSink,
) -> Stop {
    enter(config.precision, program, config.entry, state);
    let invocation = Invocation {
        program,
        operands: operands::Operands {
            precision: config.precision,
            uniforms,
        },
        kind: config.kind,
        budget: config.budget,
    };
    let mut progress = Progress {
        flow: FlowState::at(config.entry),
        ..Progress::default()
    };
    invocation.run(state, sink, &mut progress)
}
