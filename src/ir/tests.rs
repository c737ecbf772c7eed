//! Builder shapes, verifier, and evaluator checks. The evaluator is also
//! compared with the interpreter by every engine suite in `jit-tests/` and by the
//! differential tests (it is `EngineKind::Ir`).

use super::*;
use crate::Stop;
use crate::arith::{self, f24};
use crate::isa::{
    AddrIndex, BinaryOp, CmpOp, CondOp, Condition, DstReg, Guard, Instruction, OperandDescriptor,
    Source, SrcReg, Swizzle, UnaryOp, encode,
};
use crate::program::Program;
use crate::state::{EmittedVertex, Uniforms, UnitState};

const ID: (bool, Swizzle) = (false, Swizzle::IDENTITY);

fn program(code: &[Instruction], descs: &[OperandDescriptor]) -> Program {
    Program::new(
        code.iter().map(|i| encode(i).expect("encodable")).collect(),
        descs.iter().map(|d| d.0).collect(),
    )
    .unwrap()
}

fn plain() -> OperandDescriptor {
    OperandDescriptor::new(WriteMask::ALL, [ID; 3])
}

fn unary(op: UnaryOp, dst: DstReg, src: SrcReg) -> Instruction {
    Instruction::Unary {
        op,
        dst,
        src: Source::direct(src),
        desc: 0,
    }
}

fn binary(op: BinaryOp, dst: DstReg, a: Source, b: Source) -> Instruction {
    Instruction::Binary {
        op,
        inverted: false,
        dst,
        src1: a,
        src2: b,
        desc: 0,
    }
}

fn mov(dst: u8, src: u8) -> Instruction {
    unary(UnaryOp::Mov, DstReg::Temp(dst), SrcReg::Temp(src))
}

fn build(p: &Program, precision: Precision) -> Ir {
    let ir = Ir::build(p, 0, ShaderKind::Vertex, precision);
    ir.verify().unwrap();
    ir
}

#[test]
fn f24_source_read_spells_out_load_relative_addressing_swizzle_and_negation() {
    // add o1.xy, -c4[a0.y].wzyx, v2
    let desc = OperandDescriptor::new(
        WriteMask(0b1100),
        [(true, Swizzle::from_lanes([3, 2, 1, 0])), ID, ID],
    );
    let add = binary(
        BinaryOp::Add,
        DstReg::Output(1),
        Source {
            reg: SrcReg::Const(4),
            index: AddrIndex::A0Y,
        },
        Source::direct(SrcReg::Input(2)),
    );
    let ir = build(&program(&[add, Instruction::End], &[desc]), Precision::F24);
    assert_eq!(
        ir.blocks[0].to_string(),
        "block 0000..=0001
0000:
  %0 = read_addr a0.y : i32
  %1 = const -128 : i32
  %2 = const 127 : i32
  %3 = icmp.ge %0, %1 : bool
  %4 = icmp.le %0, %2 : bool
  %5 = band %3, %4 : bool
  %6 = const 0 : i32
  %7 = select %5, %0, %6 : i32
  %8 = const 4 : i32
  %9 = iadd %8, %7 : i32
  %10 = const 127 : i32
  %11 = and %9, %10 : i32
  %12 = read_const_at %11 : f32x4
  %13 = f24_load %12 : f32x4
  %14 = swizzle %13.wzyx : f32x4
  %15 = const 0.0 : f32x4
  %16 = fsub %15, %14 : f32x4
  %17 = canonicalize %16 : f32x4
  %18 = read_input v2 : f32x4
  %19 = f24_load %18 : f32x4
  %20 = f24_flush %17 : f32x4
  %21 = f24_flush %19 : f32x4
  %22 = fadd %20, %21 : f32x4
  %23 = f24_quantize %22 : f32x4
  store o1.xy, %23
0001:
exit: end
"
    );
}

#[test]
fn dot_product_is_the_pairwise_vector_sequence() {
    // dp3 r0, r1, r2 in F32.
    let dp3 = binary(
        BinaryOp::Dp3,
        DstReg::Temp(0),
        Source::direct(SrcReg::Temp(1)),
        Source::direct(SrcReg::Temp(2)),
    );
    let ir = build(
        &program(&[dp3, Instruction::End], &[plain()]),
        Precision::F32,
    );
    let text = ir.blocks[0].to_string();
    let expected = "0000:
  %0 = read_temp r1 : f32x4
  %1 = read_temp r2 : f32x4
  %2 = pica_mul %0, %1 : f32x4
  %3 = canonicalize %2 : f32x4
  %4 = const 0.0 : f32x4
  %5 = blend %3, %4.w : f32x4
  %6 = swizzle %5.yxwz : f32x4
  %7 = fadd %5, %6 : f32x4
  %8 = canonicalize %7 : f32x4
  %9 = swizzle %8.zwxy : f32x4
  %10 = fadd %8, %9 : f32x4
  %11 = canonicalize %10 : f32x4
  store r0.xyzw, %11
";
    assert!(text.contains(expected), "{text}");
}

#[test]
fn scalar_operations_extract_lane_x_and_broadcast() {
    let rcp = unary(UnaryOp::Rcp, DstReg::Output(0), SrcReg::Temp(3));
    let ir = build(
        &program(&[rcp, Instruction::End], &[plain()]),
        Precision::F32,
    );
    let text = ir.blocks[0].to_string();
    assert!(
        text.contains(
            "  %1 = extract %0.x : f32
  %2 = const 1.0 : f32
  %3 = fdiv %2, %1 : f32
  %4 = const 0.0 : f32
  %5 = fcmp.eq %1, %4 : bool
  %6 = const inf : f32
  %7 = select %5, %6, %3 : f32
  %8 = canonicalize %7 : f32
  %9 = splat %8 : f32x4
  store o0.xyzw, %9"
        ),
        "{text}"
    );
}

#[test]
fn blocks_follow_the_analysis_with_flow_exits() {
    let ifc = Instruction::If {
        guard: Guard::Cond(Condition {
            op: CondOp::And,
            ref_x: true,
            ref_y: false,
        }),
        target: 4,
        num: 1,
    };
    let code = [
        Instruction::Loop { int_id: 2, end: 2 }, // 0
        mov(0, 1),                               // 1
        mov(1, 0),                               // 2: end of the loop body
        ifc,                                     // 3
        mov(2, 2),                               // 4: else part
        Instruction::Call {
            guard: Guard::Bool(3),
            target: 7,
            num: 1,
        }, // 5
        Instruction::End,                        // 6
        Instruction::Nop,                        // 7: subroutine
    ];
    let ir = build(&program(&code, &[plain()]), Precision::F32);
    let spans: Vec<(u32, u32, bool)> = ir
        .blocks
        .iter()
        .map(|b| (b.start, b.last, b.stack_check))
        .collect();
    assert_eq!(
        spans,
        vec![
            (0, 0, false),
            (1, 2, true),
            (3, 3, true),
            (4, 4, false),
            (5, 5, false),
            (6, 6, false),
            (7, 7, true)
        ]
    );
    let loop_text = ir.blocks[0].to_string();
    assert!(
        loop_text.contains(
            "  %0 = read_int i2.x : i32
  %1 = read_int i2.y : i32
  write_addr aL, %1
  %3 = read_int i2.z : i32
exit: loop count %0 step %3 (body 0001, check 0003)"
        ),
        "{loop_text}"
    );
    assert_eq!(ir.blocks[1].exit, Exit::Next);
    let if_text = ir.blocks[2].to_string();
    assert!(
        if_text.contains(
            "  %0 = read_flag cmp.x : bool
  %1 = read_flag cmp.y : bool
  %2 = not %1 : bool
  %3 = band %0, %2 : bool
exit: if %3 else 0004 (then until 0004, continue 0005)"
        ),
        "{if_text}"
    );
    assert_eq!(
        ir.blocks[4].exit,
        Exit::Call {
            taken: Some(Value(0)),
            target: 7,
            check: 8,
            ret: 6
        }
    );
    assert_eq!(ir.blocks[4].nodes[0].op, Op::ReadBoolUniform(3));
    assert_eq!(ir.blocks[5].exit, Exit::End);
    // Every instruction has its own span, `nop` included.
    assert_eq!(ir.blocks[6].instrs.len(), 1);
    assert_eq!(ir.locate(2).map(|(b, k)| (b.start, k)), Some((1, 1)));
    assert!(ir.locate(8).is_none());
}

#[test]
fn prologue_converts_the_temporaries_read_before_written_only_in_f24() {
    // mov r0, r5; add o0, r9, r0 (r0 is written before it is read)
    let add = binary(
        BinaryOp::Add,
        DstReg::Output(0),
        Source::direct(SrcReg::Temp(9)),
        Source::direct(SrcReg::Temp(0)),
    );
    let p = program(&[mov(0, 5), add, Instruction::End], &[plain()]);
    assert!(build(&p, Precision::F32).prologue.nodes.is_empty());
    let f24 = build(&p, Precision::F24).prologue;
    assert_eq!(
        f24.to_string(),
        "block 0000..=0000
0000:
  %0 = read_temp r5 : f32x4
  %1 = f24_load %0 : f32x4
  store r5.xyzw, %1
  %3 = read_temp r9 : f32x4
  %4 = f24_load %3 : f32x4
  store r9.xyzw, %4
exit: next
"
    );
}

#[test]
fn geometry_emits_are_exits_and_vertex_emits_are_nops() {
    let code = [
        Instruction::SetEmit {
            vertex_id: 2,
            primitive: true,
            winding: false,
        },
        Instruction::Emit,
        Instruction::End,
    ];
    let p = program(&code, &[]);
    let geometry = Ir::build(&p, 0, ShaderKind::Geometry, Precision::F32);
    assert_eq!(
        geometry.blocks.iter().map(|b| b.exit).collect::<Vec<_>>(),
        vec![
            Exit::SetEmit {
                vertex_id: 2,
                primitive: true,
                winding: false
            },
            Exit::Emit,
            Exit::End
        ]
    );
    let vertex = Ir::build(&p, 0, ShaderKind::Vertex, Precision::F32);
    assert_eq!(vertex.blocks.len(), 1);
    assert_eq!(vertex.blocks[0].instrs.len(), 3);
    assert!(vertex.blocks[0].nodes.is_empty());

    let mut state = UnitState::default();
    state.outputs[5] = [1.0, 2.0, 3.0, 4.0];
    let mut emits: Vec<EmittedVertex> = Vec::new();
    let stop = eval::run(&geometry, 10, &Uniforms::default(), &mut state, &mut emits);
    assert_eq!(stop, Stop::End);
    assert_eq!(emits.len(), 1);
    assert_eq!((emits[0].vertex_id, emits[0].primitive), (2, true));
    assert_eq!(emits[0].outputs[5], [1.0, 2.0, 3.0, 4.0]);
}

#[test]
fn verifier_rejects_broken_blocks() {
    let p = program(&[mov(0, 1), Instruction::End], &[plain()]);
    let ir = build(&p, Precision::F32);
    let mut bad = ir.blocks[0].clone();
    // Store an i32.
    bad.nodes.insert(
        0,
        Node {
            op: Op::Const {
                ty: Ty::I32,
                bits: [1, 0, 0, 0],
            },
            ty: Some(Ty::I32),
        },
    );
    bad.instrs[0].end += 1;
    bad.instrs[1].first += 1;
    bad.instrs[1].end += 1;
    bad.nodes[2].op = Op::Store {
        dst: DstReg::Temp(0),
        mask: WriteMask::ALL,
        value: Value(0),
    };
    let err = verify::block(&bad, true).unwrap_err();
    assert!(err.problem.contains("expected f32x4"), "{err}");

    // A value used by the next instruction.
    let mut crossing = ir.blocks[0].clone();
    crossing.instrs[0].end -= 1;
    crossing.instrs[1].first -= 1;
    let err = verify::block(&crossing, true).unwrap_err();
    assert!(
        err.problem
            .contains("not an earlier node of this instruction"),
        "{err}"
    );

    // A lost span.
    let mut short = ir.blocks[0].clone();
    short.instrs.pop();
    assert!(verify::block(&short, true).is_err());
}

#[test]
fn budget_stops_inside_a_block_after_exactly_budget_instructions() {
    let add_one = |n: u8| {
        binary(
            BinaryOp::Add,
            DstReg::Temp(n),
            Source::direct(SrcReg::Const(1)),
            Source::direct(SrcReg::Temp(n)),
        )
    };
    let code = [
        add_one(0),
        add_one(1),
        add_one(2),
        add_one(3),
        Instruction::End,
    ];
    let p = program(&code, &[plain()]);
    let ir = build(&p, Precision::F24);
    assert_eq!(ir.blocks.len(), 1);
    let mut uniforms = Uniforms::default();
    uniforms.f[1] = [1.0; 4];
    for budget in 0..=6u64 {
        let mut state = UnitState::default();
        let stop = eval::run(&ir, budget, &uniforms, &mut state, &mut ());
        let done = budget.min(4) as usize;
        for n in 0..4 {
            let want = if n < done { 1.0 } else { 0.0 };
            assert_eq!(state.temps[n], [want; 4], "budget {budget}, r{n}");
        }
        let want = if budget >= 5 {
            Stop::End
        } else {
            Stop::BudgetExceeded
        };
        assert_eq!(stop, want, "budget {budget}");
    }
}

#[test]
fn break_outside_a_loop_and_running_off_the_end_stop_as_documented() {
    let p = program(
        &[
            mov(0, 1),
            Instruction::Break {
                guard: Guard::Always,
            },
        ],
        &[plain()],
    );
    let ir = build(&p, Precision::F32);
    let mut state = UnitState::default();
    state.temps[1] = [5.0; 4];
    assert_eq!(
        eval::run(&ir, 100, &Uniforms::default(), &mut state, &mut ()),
        Stop::BreakOutsideLoop
    );
    assert_eq!(state.temps[0], [5.0; 4]);

    let p = program(&[mov(0, 1), mov(2, 0)], &[plain()]);
    let ir = build(&p, Precision::F32);
    let mut state = UnitState::default();
    state.temps[1] = [7.0; 4];
    assert_eq!(
        eval::run(&ir, 100, &Uniforms::default(), &mut state, &mut ()),
        Stop::EndOfCode
    );
    assert_eq!(state.temps[2], [7.0; 4]);
}

#[test]
fn loops_calls_and_ifs_run_through_the_flow_stacks() {
    // r0 += c1 four times (i0 = {3, 10, 2}): aL ends at 10 + 4 * 2 = 18; a taken
    // callu b1 runs the subroutine at 5 (r2 = r0) and returns.
    let add = binary(
        BinaryOp::Add,
        DstReg::Temp(0),
        Source::direct(SrcReg::Const(1)),
        Source::direct(SrcReg::Temp(0)),
    );
    let code = [
        Instruction::Loop { int_id: 0, end: 1 }, // 0
        add,                                     // 1
        Instruction::Call {
            guard: Guard::Bool(1),
            target: 5,
            num: 1,
        }, // 2
        Instruction::End,                        // 3
        Instruction::Nop,                        // 4
        mov(2, 0),                               // 5
    ];
    let ir = build(&program(&code, &[plain()]), Precision::F32);
    let mut uniforms = Uniforms::default();
    uniforms.f[1] = [1.0; 4];
    uniforms.i[0] = [3, 10, 2, 0];
    uniforms.b[1] = true;
    let mut state = UnitState::default();
    assert_eq!(
        eval::run(&ir, 100, &uniforms, &mut state, &mut ()),
        Stop::End
    );
    assert_eq!(state.temps[0], [4.0; 4]);
    assert_eq!(state.temps[2], [4.0; 4]);
    assert_eq!(state.al, 18);
}

/// An `arith` function of one value.
type ScalarFn = fn(Precision, f32) -> f32;

/// Runs `op` on lane x of `v0` through the IR evaluator.
fn eval_scalar(op: UnaryOp, precision: Precision, xs: &[f32]) -> Vec<f32> {
    let p = program(
        &[
            unary(op, DstReg::Output(0), SrcReg::Input(0)),
            Instruction::End,
        ],
        &[plain()],
    );
    let ir = build(&p, precision);
    xs.iter()
        .map(|&x| {
            let mut state = UnitState::default();
            state.inputs[0] = [x, 0.0, 0.0, 0.0];
            eval::run(&ir, 10, &Uniforms::default(), &mut state, &mut ());
            state.outputs[0][0]
        })
        .collect()
}

#[test]
fn ex2_lg2_rcp_rsq_recipes_equal_the_arith_functions_bit_for_bit() {
    // Special values plus every 2^20/3-th bit pattern (about 12,000 values).
    let mut xs: Vec<f32> = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::from_bits(0xFFC0_1234),
        f32::from_bits(0x7F80_0001),
        f24::MIN_NORMAL,
        f24::LARGEST_SUBNORMAL,
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        128.0,
        -149.0,
        -160.5,
        129.5,
        arith::LG2_SQRT2,
    ]
    .to_vec();
    xs.extend((0..u32::MAX / 349_525).map(|k| f32::from_bits(k.wrapping_mul(349_525))));
    for precision in [Precision::F24, Precision::F32] {
        // Inputs enter the unit through the load step, as in the interpreter.
        let loaded: Vec<f32> = xs.iter().map(|&x| arith::load(precision, x)).collect();
        let reference: [(UnaryOp, ScalarFn); 5] = [
            (UnaryOp::Ex2, arith::ex2),
            (UnaryOp::Lg2, arith::lg2),
            (UnaryOp::Rcp, arith::rcp),
            (UnaryOp::Rsq, arith::rsq),
            (UnaryOp::Flr, arith::flr),
        ];
        for (op, f) in reference {
            let got = eval_scalar(op, precision, &xs);
            for ((x, want), got) in loaded
                .iter()
                .zip(loaded.iter().map(|&x| f(precision, x)))
                .zip(got)
            {
                assert_eq!(
                    got.to_bits(),
                    want.to_bits(),
                    "{op:?} {precision:?} of {:#010x}",
                    x.to_bits()
                );
            }
        }
    }
}

#[test]
fn cmp_and_litp_write_both_flags() {
    let cmp = Instruction::Cmp {
        src1: Source::direct(SrcReg::Input(0)),
        src2: Source::direct(SrcReg::Input(1)),
        x: CmpOp::Ne,
        y: CmpOp::Lt,
        desc: 0,
    };
    let ir = build(
        &program(&[cmp, Instruction::End], &[plain()]),
        Precision::F32,
    );
    let mut state = UnitState::default();
    state.inputs[0] = [f32::NAN, 1.0, 0.0, 0.0];
    state.inputs[1] = [0.0, 2.0, 0.0, 0.0];
    eval::run(&ir, 10, &Uniforms::default(), &mut state, &mut ());
    assert_eq!(state.cmp, [true, true]);

    let litp = unary(UnaryOp::Litp, DstReg::Output(2), SrcReg::Input(0));
    let ir = build(
        &program(&[litp, Instruction::End], &[plain()]),
        Precision::F24,
    );
    let mut state = UnitState::default();
    state.inputs[0] = [-3.0, 1000.0, 5.0, f32::NAN];
    state.cmp = [true, true];
    eval::run(&ir, 10, &Uniforms::default(), &mut state, &mut ());
    assert_eq!(state.outputs[2], [0.0, arith::LITP_CLAMP, 0.0, 0.0]);
    assert_eq!(state.cmp, [false, false]);
}

/// In F24 a multiply is one `pica_mul_f24` node, and an arithmetic step
/// flushes only operands that may be off the float24 grid: the partial sums,
/// results of earlier steps, are not flushed again. The built IR computes
/// `arith::dp4` bit for bit.
#[test]
fn f24_dot_product_multiplies_in_one_node_and_flushes_only_its_inputs() {
    let dp4 = binary(
        BinaryOp::Dp4,
        DstReg::Temp(0),
        Source::direct(SrcReg::Temp(1)),
        Source::direct(SrcReg::Temp(2)),
    );
    let ir = build(
        &program(&[dp4, Instruction::End], &[plain()]),
        Precision::F24,
    );
    let text = ir.blocks[0].to_string();
    let expected = "0000:
  %0 = read_temp r1 : f32x4
  %1 = read_temp r2 : f32x4
  %2 = f24_flush %0 : f32x4
  %3 = f24_flush %1 : f32x4
  %4 = pica_mul_f24 %2, %3 : f32x4
  %5 = swizzle %4.yxwz : f32x4
  %6 = fadd %4, %5 : f32x4
  %7 = f24_quantize %6 : f32x4
  %8 = swizzle %7.zwxy : f32x4
  %9 = fadd %7, %8 : f32x4
  %10 = f24_quantize %9 : f32x4
  store r0.xyzw, %10
";
    assert!(text.contains(expected), "{text}");
    // Operands off the grid (denormal-range and many-bit mantissas).
    let a = [1.1e-20, 3.000_000_2, -7.25e12, 0.333_333_34];
    let b = [2.5e-21, -1.000_000_1, 1.5e-13, 3.0];
    let mut state = UnitState::default();
    state.temps[1] = a;
    state.temps[2] = b;
    let stop = eval::run(&ir, 100, &Uniforms::default(), &mut state, &mut ());
    assert_eq!(stop, Stop::End);
    let want = arith::dp4(Precision::F24, a, b);
    assert_eq!(state.temps[0].map(f32::to_bits), [want.to_bits(); 4]);
}

/// `mov r0.xyz, v0; ex2 r0.y, r0; mov r0.w, c1; mov o0, r0`: the `ex2` reads
/// lane x, which the first `mov` wrote, so after optimisation nothing reads
/// r0's earlier contents (the single-vertex code would otherwise wait for
/// the previous invocation's store of r0).
#[test]
fn reading_written_lanes_of_a_partly_written_register_reads_no_earlier_contents() {
    let xyz = OperandDescriptor::new(WriteMask(0b1110), [ID; 3]);
    let y = OperandDescriptor::new(WriteMask(0b0100), [ID; 3]);
    let w = OperandDescriptor::new(WriteMask(0b0001), [ID; 3]);
    let code = [
        Instruction::Unary {
            op: UnaryOp::Mov,
            dst: DstReg::Temp(0),
            src: Source::direct(SrcReg::Input(0)),
            desc: 1,
        },
        Instruction::Unary {
            op: UnaryOp::Ex2,
            dst: DstReg::Temp(0),
            src: Source::direct(SrcReg::Temp(0)),
            desc: 2,
        },
        Instruction::Unary {
            op: UnaryOp::Mov,
            dst: DstReg::Temp(0),
            src: Source::direct(SrcReg::Const(1)),
            desc: 3,
        },
        unary(UnaryOp::Mov, DstReg::Output(0), SrcReg::Temp(0)),
        Instruction::End,
    ];
    let p = program(&code, &[plain(), xyz, y, w]);
    for precision in [Precision::F32, Precision::F24] {
        let ir = build(&p, precision);
        let reads = |ir: &Ir| {
            ir.blocks[0]
                .nodes
                .iter()
                .filter(|n| matches!(n.op, Op::ReadTemp(0)))
                .count()
        };
        // As built, the instructions read r0 (its earlier contents included).
        assert!(reads(&ir) > 0, "{precision:?}");
        let optimised = opt::optimize(&ir);
        optimised.verify().unwrap();
        assert_eq!(reads(&optimised), 0, "{precision:?}");
        // Same results as the unoptimised IR.
        let mut uniforms = Uniforms::default();
        uniforms.f[1] = [0.25, 0.5, 0.75, 1.5];
        let mut a = UnitState::default();
        a.inputs[0] = [1.5, -2.0, 3.0, 4.0];
        a.temps[0] = [f32::NAN; 4];
        let mut b = a.clone();
        let sa = eval::run(&ir, 1000, &uniforms, &mut a, &mut ());
        let sb = eval::run_optimized(&optimised, &ir, 1000, &uniforms, &mut b, &mut ());
        assert_eq!(sa, Stop::End);
        assert_eq!(sa, sb);
        assert_eq!(a.temps[0].map(f32::to_bits), b.temps[0].map(f32::to_bits));
        assert_eq!(
            a.outputs[0].map(f32::to_bits),
            b.outputs[0].map(f32::to_bits)
        );
        assert_eq!(b.outputs[0][3], 1.5, "{precision:?}: r0.w = c1.w");
    }
}

/// Lane movement of lane movement is one step after optimisation: a swizzle
/// of a swizzle is one swizzle (lanes composed), an extract of a swizzle one
/// extract, an extract of a broadcast the scalar; so the two comparisons of
/// `cmp r0.xxxx, eq, eq, …` compare the same lanes and are one node.
/// `mov r0, v0.yzwx; mov o0, r0.wzxx; cmp r0.xxxx, eq, eq, v1.wwww;
/// rcp r1, v0; rsq o1, r1.y`.
#[test]
fn lane_movement_of_lane_movement_is_one_step_after_optimisation() {
    let swizzled =
        |lanes| OperandDescriptor::new(WriteMask::ALL, [(false, Swizzle::from_lanes(lanes)); 3]);
    let cmp_desc = OperandDescriptor::new(
        WriteMask::ALL,
        [
            (false, Swizzle::from_lanes([0; 4])),
            (false, Swizzle::from_lanes([3; 4])),
            ID,
        ],
    );
    let with = |i: Instruction, d: u8| match i {
        Instruction::Unary { op, dst, src, .. } => Instruction::Unary {
            op,
            dst,
            src,
            desc: d,
        },
        other => other,
    };
    let code = [
        with(unary(UnaryOp::Mov, DstReg::Temp(0), SrcReg::Input(0)), 1),
        with(unary(UnaryOp::Mov, DstReg::Output(0), SrcReg::Temp(0)), 2),
        Instruction::Cmp {
            src1: Source::direct(SrcReg::Temp(0)),
            src2: Source::direct(SrcReg::Input(1)),
            x: CmpOp::Eq,
            y: CmpOp::Eq,
            desc: 3,
        },
        unary(UnaryOp::Rcp, DstReg::Temp(1), SrcReg::Input(0)),
        with(unary(UnaryOp::Rsq, DstReg::Output(1), SrcReg::Temp(1)), 4),
        Instruction::End,
    ];
    let p = program(
        &code,
        &[
            plain(),
            swizzled([1, 2, 3, 0]),
            swizzled([3, 2, 0, 0]),
            cmp_desc,
            swizzled([1; 4]),
        ],
    );
    for precision in [Precision::F32, Precision::F24] {
        let ir = build(&p, precision);
        let optimised = opt::optimize(&ir);
        optimised.verify().unwrap();
        let nodes = &optimised.blocks[0].nodes;
        let op = |v: Value| nodes[v.0 as usize].op;
        for node in nodes {
            if let Op::Swizzle(v, _) | Op::Extract(v, _) = node.op {
                assert!(
                    !matches!(op(v), Op::Swizzle(..) | Op::Splat(_)),
                    "{precision:?}: {}",
                    optimised.blocks[0]
                );
            }
        }
        let compares = nodes
            .iter()
            .filter(|n| matches!(n.op, Op::FCmp(..)))
            .count();
        // One for the `cmp`, one for each of rcp's and rsq's zero tests.
        assert_eq!(compares, 3, "{precision:?}: {}", optimised.blocks[0]);
        let mut state = UnitState::default();
        state.inputs[0] = [4.0, 2.0, -1.0, 8.0];
        state.inputs[1] = [0.0, 0.0, 0.0, 2.0];
        let mut again = state.clone();
        let stop = eval::run(&ir, 100, &Uniforms::default(), &mut state, &mut ());
        let stop_optimised = eval::run_optimized(
            &optimised,
            &ir,
            100,
            &Uniforms::default(),
            &mut again,
            &mut (),
        );
        assert_eq!((stop, stop_optimised), (Stop::End, Stop::End));
        // o0 = v0.yzwx.wzxx = v0.xwyy; cmp: v0.y == v1.w in both lanes;
        // o1 = rsq(rcp(4)) = 2.
        let bits = |v: [f32; 4]| v.map(f32::to_bits);
        for s in [&state, &again] {
            assert_eq!(
                bits(s.outputs[0]),
                bits([4.0, 8.0, 2.0, 2.0]),
                "{precision:?}"
            );
            assert_eq!(s.cmp, [true, true], "{precision:?}");
            assert_eq!(bits(s.outputs[1]), [2.0f32.to_bits(); 4], "{precision:?}");
        }
    }
}

/// As built, an instruction reads a register its sources share once, a
/// recipe taking single lanes of an operand (`cmp`, the scalar operations)
/// extracts them from the register read without a swizzle node, and `cmp`
/// makes the same comparison of the same lanes once (sixteenth session: the
/// nodes the optimiser would drop again are not built). Different
/// comparisons of the same lanes stay two. `cmp r1.xxxx, eq, ne, r1.yyyy;
/// cmp r2.xxxx, lt, lt, v0.zzzz; rcp o0, c3.wwww`.
#[test]
fn shared_reads_and_single_lanes_build_no_repeated_nodes() {
    let lanes = |l: [usize; 4]| (false, Swizzle::from_lanes(l));
    let cmp_same = OperandDescriptor::new(WriteMask::ALL, [lanes([0; 4]), lanes([1; 4]), ID]);
    let cmp_mixed = OperandDescriptor::new(WriteMask::ALL, [lanes([0; 4]), lanes([2; 4]), ID]);
    let rcp_w = OperandDescriptor::new(WriteMask::ALL, [lanes([3; 4]), ID, ID]);
    let cmp = |a: SrcReg, b: SrcReg, x, y, desc| Instruction::Cmp {
        src1: Source::direct(a),
        src2: Source::direct(b),
        x,
        y,
        desc,
    };
    let code = [
        cmp(SrcReg::Temp(1), SrcReg::Temp(1), CmpOp::Eq, CmpOp::Ne, 0),
        cmp(SrcReg::Temp(2), SrcReg::Input(0), CmpOp::Lt, CmpOp::Lt, 1),
        Instruction::Unary {
            op: UnaryOp::Rcp,
            dst: DstReg::Output(0),
            src: Source::direct(SrcReg::Const(3)),
            desc: 2,
        },
        Instruction::End,
    ];
    let p = program(&code, &[cmp_same, cmp_mixed, rcp_w]);
    let ir = build(&p, Precision::F32);
    let text = ir.blocks[0].to_string();
    let expected = "0000:
  %0 = read_temp r1 : f32x4
  %1 = extract %0.x : f32
  %2 = extract %0.y : f32
  %3 = fcmp.eq %1, %2 : bool
  %4 = fcmp.ne %1, %2 : bool
  write_flag cmp.x, %3
  write_flag cmp.y, %4
0001:
  %7 = read_temp r2 : f32x4
  %8 = read_input v0 : f32x4
  %9 = extract %7.x : f32
  %10 = extract %8.z : f32
  %11 = fcmp.lt %9, %10 : bool
  write_flag cmp.x, %11
  write_flag cmp.y, %11
0002:
  %14 = read_const c3 : f32x4
  %15 = extract %14.w : f32
";
    assert!(text.contains(expected), "{text}");
    assert!(!text.contains("swizzle"), "{text}");
    for precision in [Precision::F32, Precision::F24] {
        let ir = build(&p, precision);
        let mut uniforms = Uniforms::default();
        uniforms.f[3] = [1.0, 2.0, 8.0, 4.0];
        let mut state = UnitState::default();
        state.temps[1] = [3.0, 3.0, 0.0, 0.0];
        state.temps[2] = [-1.0, 5.0, 0.0, 0.0];
        state.inputs[0] = [0.0, 0.0, 0.5, 0.0];
        // Stop before the `rcp`: the first `cmp`'s flags (3 == 3, not
        // 3 != 3).
        let mut first = state.clone();
        assert_eq!(
            eval::run(&ir, 1, &uniforms, &mut first, &mut ()),
            Stop::BudgetExceeded
        );
        assert_eq!(first.cmp, [true, false], "{precision:?}");
        assert_eq!(
            eval::run(&ir, 10, &uniforms, &mut state, &mut ()),
            Stop::End
        );
        // -1 < 0.5 in both lanes; rcp of c3.w = 4.
        assert_eq!(state.cmp, [true, true], "{precision:?}");
        assert_eq!(
            state.outputs[0].map(f32::to_bits),
            [0.25f32.to_bits(); 4],
            "{precision:?}"
        );
    }
}
