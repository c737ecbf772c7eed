//! How [`super::plan`] sizes the spill area and which IR it lowers per block
//! (the checks are the single-vertex backends' shared ones).

use super::{block_state, plan};
use crate::analysis::InstrClass;
use crate::arith::Precision;
use crate::jit::single::plan_tests;
use crate::jit::spill::SpillSlots;
use crate::program::ShaderKind;

#[cfg(feature = "testgen")]
#[test]
fn the_spill_area_fits_the_block_and_an_overfull_block_is_lowered_unoptimised() {
    plan_tests::spill_area_fits_the_block(8, &|ir, built, a, precision| {
        plan(
            ir,
            built,
            |pc| a.class[pc as usize] == InstrClass::Data,
            |pc| a.reachable[pc as usize],
            precision == Precision::F24,
            super::UniformReads::Raw,
        )
        .map(|(plan, _, _)| plan)
    });
}

#[test]
fn the_inputs_found_while_planning_are_those_the_planned_forms_read() {
    // Input 1 in the first block, input 3 only after the `ifu` (a later
    // block): every planned block's reads count, the last one's too.
    let prog = program(
        "
        .proc main
        mov o0, v1
        ifu b0
            mul o1, v2, c0
        .end
        mov o2, v3
        .end",
    );
    for precision in [Precision::F24, Precision::F32] {
        let a = crate::analysis::analyse(&prog, 0, ShaderKind::Vertex);
        let built = crate::ir::Ir::from_analysis(&prog, &a, ShaderKind::Vertex, precision);
        let ir = crate::ir::opt::optimize(&built);
        assert!(ir.blocks.len() >= 3, "{}", ir.blocks.len());
        let (planned, found, tables) = plan(
            &ir,
            &built,
            |pc| a.class[pc as usize] == InstrClass::Data,
            |pc| a.reachable[pc as usize],
            precision == Precision::F24,
            super::UniformReads::Raw,
        )
        .expect("a plan");
        assert_eq!(found, super::input_uses(&planned, &tables), "{precision:?}");
        let expected = if precision == Precision::F24 {
            0b1010
        } else {
            0
        };
        assert_eq!(found.loaded & 0b1010, expected, "{precision:?}: {found:?}");
    }
}

#[test]
fn every_recipe_as_built_fits_the_spill_area() {
    plan_tests::every_recipe_as_built_fits(|block, data, precision| {
        [false, true]
            .map(|preconverted| {
                block_state(block, data, precision == Precision::F24, preconverted)
                    .spill_slots_needed()
            })
            .to_vec()
    });
}

/// `source` assembled into a program.
fn program(source: &str) -> std::sync::Arc<crate::Program> {
    let shbin = crate::asm::assemble_str("t.pica", source).expect("assembles");
    std::sync::Arc::new(
        crate::Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone())
            .expect("a program"),
    )
}

/// The interpreter, and the JIT for both instruction sets (VEX where the
/// host has AVX, SSE4.1).
fn interp_and_jits(
    prog: &std::sync::Arc<crate::Program>,
    config: crate::ShaderConfig,
) -> (crate::Shader, [crate::jit::CompiledShader; 2]) {
    let interp = crate::Shader::new(prog.clone(), config, crate::EngineKind::Interpreter).unwrap();
    let jits = [
        crate::jit::Features::host(),
        crate::jit::Features::baseline(),
    ]
    .map(|f| crate::jit::compile_with(prog, &config, f).expect("the JIT"));
    (interp, jits)
}

/// Runs `state` through the interpreter and through `run_jit`, asserts both stop
/// alike with the same bits in `outputs` and `temps`, and returns the JIT's final
/// state (`what` names the case in a failure).
fn assert_same_run(
    interp: &crate::Shader,
    uniforms: &crate::Uniforms,
    state: crate::UnitState,
    run_jit: impl FnOnce(&mut crate::UnitState) -> crate::Stop,
    (outputs, temps): (std::ops::RangeInclusive<usize>, &[usize]),
    what: &dyn std::fmt::Display,
) -> crate::UnitState {
    let bits = |r: [f32; 4]| r.map(f32::to_bits);
    let (mut a, mut b) = (state.clone(), state);
    let stop_a = interp.run(uniforms, &mut a, &mut Vec::new());
    let stop_b = run_jit(&mut b);
    assert_eq!(stop_a, stop_b, "{what}");
    for o in outputs {
        assert_eq!(bits(a.outputs[o]), bits(b.outputs[o]), "o{o} of {what}");
    }
    for &t in temps {
        assert_eq!(bits(a.temps[t]), bits(b.temps[t]), "r{t} of {what}");
    }
    b
}

/// A block's [`super::Writes`] holds a read as written exactly when the
/// place the lowering reads it from in the state is written (so an
/// out-of-range number names the register whose place it shares, as in
/// memory): every temporary, flag and address register number asked.
#[test]
fn writes_hold_exactly_the_places_written() {
    use crate::ir::AddrReg;
    use crate::jit::single::state;
    let (temps, flags) = ([3u8, 15, 16], [1u8]);
    let mut writes = super::Writes::default();
    for t in temps {
        writes.write_temp(t);
    }
    for f in flags {
        writes.write_flag(f);
    }
    writes.write_addr(AddrReg::AL);
    for n in 0..=255u8 {
        let temp = temps.iter().any(|&t| state::temp(t) == state::temp(n));
        assert_eq!(writes.temp(n), temp, "r{n}");
        let flag = flags.iter().any(|&f| state::flag(f) == state::flag(n));
        assert_eq!(writes.flag(n), flag, "cmp {n}");
    }
    // r0 (r16's place), r3 and r15; cmp.y.
    assert_eq!((0..16).filter(|&n| writes.temp(n)).count(), 3);
    assert!(writes.flag(1) && !writes.flag(0));
    for (reg, written) in [
        (AddrReg::A0X, false),
        (AddrReg::A0Y, false),
        (AddrReg::AL, true),
    ] {
        assert_eq!(writes.addr(reg), written, "{reg:?}");
    }
}

/// A read of a temporary the block also writes is reloaded from a spill
/// slot, never read again from the state (which the block changes); a read
/// of one it does not write is emitted again.
#[test]
fn only_reads_of_temporaries_the_block_does_not_write_are_emitted_again() {
    use crate::ir::{Ir, Op};
    use crate::isa::{
        BinaryOp, DstReg, Instruction, OperandDescriptor, Source, SrcReg, Swizzle, WriteMask,
        encode,
    };
    use crate::{Program, ShaderKind};
    let id = (false, Swizzle::IDENTITY);
    let desc = OperandDescriptor::new(WriteMask::ALL, [id, id, id]).0;
    // `sge`: an operation whose operands are always in registers (an add
    // may read its second operand from memory, `Form::BinaryMem`).
    let add = |dst, a, b| Instruction::Binary {
        op: BinaryOp::Sge,
        inverted: false,
        dst,
        src1: Source::direct(SrcReg::Temp(a)),
        src2: Source::direct(SrcReg::Temp(b)),
        desc: 0,
    };
    let code = [
        add(DstReg::Temp(1), 1, 2),
        add(DstReg::Output(0), 3, 4),
        add(DstReg::Temp(3), 5, 5),
        Instruction::End,
    ];
    let words = code.iter().map(|i| encode(i).unwrap()).collect();
    let program = Program::new(words, vec![desc]).unwrap();
    let ir = Ir::build(&program, 0, ShaderKind::Vertex, Precision::F32);
    let block = &ir.blocks[0];
    let lowered = vec![true; block.instrs.len()];
    let state = block_state(block, &lowered, false, false);
    let remat = state.remat;
    let mut reads: Vec<(u8, bool)> = block
        .nodes
        .iter()
        .enumerate()
        .filter_map(|(k, node)| match node.op {
            Op::ReadTemp(t) => Some((t, remat[k])),
            _ => None,
        })
        .collect();
    reads.sort();
    reads.dedup();
    // r1 and r3 are written in the block (r3 after its read), the others not.
    assert_eq!(
        reads,
        [(1, false), (2, true), (3, false), (4, true), (5, true)]
    );
}

/// A float24 `dp4`, `dp3` and `dph` are each lowered as one dot-product sum
/// over their products ([`super::dot::dot_sums`]), a `dp4` whose products a
/// `mul` shares as one over its terms, and every one gives the
/// interpreter's bits where one step of the sum reaches 2^64 and the fast
/// path's would differ.
#[test]
fn float24_dot_products_are_one_sum_and_exact_where_a_step_overflows() {
    use super::dot::{DotSum, dot_sums};
    use crate::isa::{
        BinaryOp, DstReg, Instruction, OperandDescriptor, Source, SrcReg, Swizzle, WriteMask,
        encode,
    };
    use crate::{EngineKind, Program, Shader, ShaderConfig, Uniforms, UnitState};
    let binary = |op, out: u8, a: u8, b: u8| Instruction::Binary {
        op,
        inverted: false,
        dst: DstReg::Output(out),
        src1: Source::direct(SrcReg::Input(a)),
        src2: Source::direct(SrcReg::Input(b)),
        desc: 0,
    };
    let code = [
        binary(BinaryOp::Dp4, 1, 3, 4),
        // Other operands: the same ones would share the products.
        binary(BinaryOp::Dp3, 2, 5, 6),
        binary(BinaryOp::Dph, 3, 3, 4),
        binary(BinaryOp::Mul, 4, 7, 8),
        binary(BinaryOp::Dp4, 5, 7, 8),
        Instruction::End,
    ];
    let words = code.iter().map(|i| encode(i).expect("encodable")).collect();
    let plain = OperandDescriptor::new(WriteMask(0xF), [(false, Swizzle::IDENTITY); 3]);
    let prog = std::sync::Arc::new(Program::new(words, vec![plain.0]).expect("valid program"));
    for p in [Precision::F32, Precision::F24] {
        let built = crate::ir::Ir::build(&prog, 0, crate::ShaderKind::Vertex, p);
        let optimised = crate::ir::opt::optimize(&built);
        let sums: Vec<DotSum> = dot_sums(&optimised.blocks[0])
            .into_iter()
            .flatten()
            .collect();
        let clear_w = |sum: &DotSum| match *sum {
            DotSum::Products { clear_w, .. } => Some(clear_w),
            DotSum::Terms(_) => None,
        };
        let got: Vec<_> = sums.iter().map(clear_w).collect();
        // In F32 nothing is quantised, so no sum matches.
        let want = match p {
            Precision::F24 => vec![Some(false), Some(true), Some(false), None],
            Precision::F32 => vec![],
        };
        assert_eq!(got, want, "{p:?}");
    }
    let config = ShaderConfig {
        precision: Precision::F24,
        ..ShaderConfig::default()
    };
    let interp = Shader::new(prog.clone(), config, EngineKind::Interpreter).unwrap();
    let jit = Shader::new(prog, config, EngineKind::Jit).expect("the JIT is available");
    assert_eq!(jit.engine(), EngineKind::Jit);
    let near_max = f32::from_bits(0x5F7F_0000);
    let big = f32::from_bits(0x5F00_0000); // 2^63
    let p = Precision::F24;
    for (x, y) in [
        // The first sums reach ±2^64 (±inf in float24): NaN.
        ([near_max, near_max, -near_max, -near_max], [1.0; 4]),
        // The last one only: +inf.
        ([big, 0.0, big, 0.0], [1.0; 4]),
        // A product: +inf.
        ([near_max, 1.0, 0.0, 0.0], [2.0, 1.0, 1.0, 1.0]),
        // Products that cancel: NaN.
        ([near_max, near_max, 0.0, 0.0], [2.0, -2.0, 1.0, 1.0]),
        // Nothing overflows.
        ([1.5, -2.0, 0.25, 3.0], [4.0, 0.5, -8.0, 1.0]),
    ] {
        let mut s = UnitState::default();
        (s.inputs[3], s.inputs[4]) = (x, y);
        (s.inputs[5], s.inputs[6]) = (x, y);
        (s.inputs[7], s.inputs[8]) = (x, y);
        let uniforms = Uniforms::default();
        let run_jit = |b: &mut UnitState| jit.run(&uniforms, b, &mut Vec::new());
        let what = format!("{x:?}, {y:?}");
        let b = assert_same_run(&interp, &uniforms, s, run_jit, (1..=5, &[]), &what);
        let bits = |r: [f32; 4]| r.map(f32::to_bits);
        let l = |v: [f32; 4]| v.map(|x| crate::arith::load(p, x));
        let (x, y) = (l(x), l(y));
        for (o, want) in [
            (1, crate::arith::dp4(p, x, y)),
            (2, crate::arith::dp3(p, x, y)),
            (3, crate::arith::dph(p, x, y)),
            (5, crate::arith::dp4(p, x, y)),
        ] {
            assert_eq!(
                bits(b.outputs[o]),
                [want.to_bits(); 4],
                "o{o} of {x:?}, {y:?}"
            );
        }
    }
}

/// Four float24 `dp4`s of one vector into x, y, z, w of one register are
/// lowered as a matrix ([`super::dot::matrices`]: two halves and their
/// sum), also into a temporary, not where the register is read between the
/// writes; every one gives the interpreter's bits, also where one step of
/// one row reaches 2^64.
#[test]
fn float24_matrix_rows_are_lowered_together_and_exact() {
    use super::dot::{MatrixPart, dot_sums, matrices};
    use crate::isa::{
        BinaryOp, DstReg, Instruction, OperandDescriptor, Source, SrcReg, Swizzle, UnaryOp,
        WriteMask, encode,
    };
    use crate::{EngineKind, Program, Shader, ShaderConfig, Uniforms, UnitState};
    // Each group its own vector (the same rows would share their sums).
    // The vector as the second operand into temporaries, as the first
    // into the output.
    let dp4 = |dst, lane: u8, b: u8| {
        let (vector, row) = match dst {
            DstReg::Temp(t) => (5 + t, b),
            _ => (0, b),
        };
        let (src1, src2) = match dst {
            DstReg::Temp(_) => (row, vector),
            _ => (vector, row),
        };
        Instruction::Binary {
            op: BinaryOp::Dp4,
            inverted: false,
            dst,
            src1: Source::direct(SrcReg::Input(src1)),
            src2: Source::direct(SrcReg::Input(src2)),
            desc: lane,
        }
    };
    let mov = |dst, src| Instruction::Unary {
        op: UnaryOp::Mov,
        dst,
        src: Source::direct(src),
        desc: 4,
    };
    let rows = |dst| (0..4).map(move |lane| dp4(dst, lane, 1 + lane));
    let mut code: Vec<Instruction> = rows(DstReg::Output(1)).collect();
    code.extend(rows(DstReg::Temp(0)));
    code.push(mov(DstReg::Output(2), SrcReg::Temp(0)));
    // r1 read between the stores: not a matrix.
    code.extend(rows(DstReg::Temp(1)).take(2));
    code.push(mov(DstReg::Output(3), SrcReg::Temp(1)));
    code.extend(rows(DstReg::Temp(1)).skip(2));
    code.push(mov(DstReg::Output(4), SrcReg::Temp(1)));
    // Rows in the order y, x, z, w (the vector v0 again, other rows): the
    // optimiser's blends are another shape, not grouped, and still exact.
    let later = [1u8, 0, 2, 3].map(|lane| dp4(DstReg::Output(5), lane, 8 + lane));
    code.extend(later);
    code.push(Instruction::End);
    let words = code.iter().map(|i| encode(i).expect("encodable")).collect();
    let id = [(false, Swizzle::IDENTITY); 3];
    let descs = [8, 4, 2, 1, 0xF].map(|m| OperandDescriptor::new(WriteMask(m), id).0);
    let prog = std::sync::Arc::new(Program::new(words, descs.to_vec()).expect("valid program"));
    let built = crate::ir::Ir::build(&prog, 0, crate::ShaderKind::Vertex, Precision::F24);
    let block = &crate::ir::opt::optimize(&built).blocks[0];
    let uses = crate::jit::single::dot_sums::uses(block);
    let parts = matrices(block, &dot_sums(block), &uses);
    let count = |want: fn(&MatrixPart) -> bool| parts.iter().flatten().filter(|p| want(p)).count();
    assert_eq!(count(|p| matches!(p, MatrixPart::Quad { .. })), 2);
    assert_eq!(count(|p| matches!(p, MatrixPart::Half { .. })), 4);
    // Planning finds the same parts and sums node by node, without a
    // vector of either per block: each running node's form is its part,
    // else the sum it ends.
    let lowered = vec![true; block.instrs.len()];
    let state = super::block_state(block, &lowered, true, false);
    let sums = dot_sums(block);
    let mut found = [0; 2];
    for (k, &form) in state.own.iter().enumerate() {
        let want = match (parts[k], sums[k]) {
            (Some(part), _) => super::Form::Matrix(part),
            (None, Some(sum)) => super::Form::DotSum(sum),
            (None, None) => continue,
        };
        if form != super::Form::Folded {
            assert_eq!(form, want, "node {k}");
            found[usize::from(parts[k].is_some())] += 1;
        }
    }
    // Both matrices (two halves and their sum each) and the eight lone
    // sums of r1 and o5 run.
    assert_eq!(found, [8, 6], "{:?}", state.own);
    let config = ShaderConfig {
        precision: Precision::F24,
        ..ShaderConfig::default()
    };
    let interp = Shader::new(prog.clone(), config, EngineKind::Interpreter).unwrap();
    let jit = Shader::new(prog, config, EngineKind::Jit).expect("the JIT is available");
    assert_eq!(jit.engine(), EngineKind::Jit);
    let near_max = f32::from_bits(0x5F7F_0000);
    let plain = [1.0, 2.0, -1.0, 0.5];
    let mut cases = vec![([1.5, -2.0, 0.25, 3.0], [plain; 4])];
    for row in 0..4 {
        for (x, bad) in [
            ([near_max, 1.0, 1.0, 1.0], [2.0, 0.0, 0.0, 0.0]),
            ([near_max, near_max, 1.0, 1.0], [1.0, 1.0, 0.0, 0.0]),
            ([near_max, near_max, 1.0, 1.0], [2.0, -2.0, 0.0, 0.0]),
        ] {
            let mut m = [plain; 4];
            m[row] = bad;
            cases.push((x, m));
        }
    }
    let bits = |r: [f32; 4]| r.map(f32::to_bits);
    for (x, m) in cases {
        let mut s = UnitState::default();
        (s.inputs[0], s.inputs[5], s.inputs[6]) = (x, x, x);
        s.inputs[1..5].copy_from_slice(&m);
        s.inputs[8..12].copy_from_slice(&m);
        let uniforms = Uniforms::default();
        let run_jit = |b: &mut UnitState| jit.run(&uniforms, b, &mut Vec::new());
        let what = format!("{x:?} · {m:?}");
        let b = assert_same_run(&interp, &uniforms, s, run_jit, (1..=5, &[0, 1]), &what);
        let p = Precision::F24;
        let l = |v: [f32; 4]| v.map(|x| crate::arith::load(p, x));
        let want: [u32; 4] = std::array::from_fn(|i| crate::arith::dp4(p, l(x), l(m[i])).to_bits());
        assert_eq!(bits(b.outputs[1]), want, "o1 of {x:?} · {m:?}");
        assert_eq!(bits(b.outputs[5]), want, "o5 of {x:?} · {m:?}");
    }
}

/// A swizzle or lane extract of a uniform, an input, a temporary the block
/// does not write, or a converted input (F24) is one `pshufd` from memory
/// ([`super::Form::ShuffleMem`]); of a temporary the block writes, it is
/// not. Every result has the interpreter's bits, on edge values (±0, ±inf,
/// NaN, the float24 range limits) placed so that a wrong lane shows.
#[test]
fn swizzles_of_unwritten_vectors_read_memory_and_are_exact() {
    use super::{Form, Mem};
    use crate::ir::Op;
    use crate::{ShaderConfig, ShaderKind, Uniforms, UnitState};
    let source = "
        .proc main
        mov o7, r1.yzwx
        mov r1, v1
        mov o0, c3.wzyx
        mul o1, v0.yxwz, c0.zzzz
        add o2, r2.zwxy, r1.yxzw
        mov o3, v2.wxzy
        rcp o4.x, c5.y
        mov o4.yzw, r2.wwzx
        mov r1, v3
        mov o5, r1.yzwx
        mov o6, v4
        .end";
    let prog = program(source);
    let edge = [
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::from_bits(0x7F80_0001),
        f32::from_bits(0x5F7F_FFFF),
        f32::from_bits(0x2080_0000),
        f32::from_bits(0x0000_0001),
        1.5,
        -3.25,
        f32::from_bits(0xDF80_0000),
    ];
    let vector = |k: usize| std::array::from_fn(|i| edge[(k + 5 * i) % edge.len()]);
    for precision in [Precision::F32, Precision::F24] {
        let ir = crate::ir::Ir::build(&prog, 0, ShaderKind::Vertex, precision);
        let ir = crate::ir::opt::optimize(&ir);
        let block = &ir.blocks[0];
        let lowered = vec![true; block.instrs.len()];
        let f24 = precision == Precision::F24;
        let state = block_state(block, &lowered, f24, false);
        let mems = |own: &[Form]| -> Vec<Mem> {
            own.iter()
                .filter_map(|f| match *f {
                    Form::ShuffleMem(mem, _) => Some(mem),
                    _ => None,
                })
                .collect()
        };
        let has = |mems: &[Mem], want: fn(&Mem) -> bool| mems.iter().any(want);
        let (plain, converted) = (
            mems(&state.own),
            mems(&block_state(block, &lowered, f24, true).own),
        );
        // Raw uniforms are read as they are only in F32; in F24 the ones
        // the caller converted.
        let is_uniform = |m: &Mem| matches!(m, Mem::Uniforms(_));
        assert_eq!(has(&plain, is_uniform), !f24, "{precision:?}: {plain:?}");
        assert!(has(&converted, is_uniform), "{precision:?}: {converted:?}");
        assert!(has(&plain, |m| matches!(m, Mem::State(_))), "{plain:?}");
        assert_eq!(
            has(&plain, |m| matches!(m, Mem::ConvertedInput(_))),
            f24,
            "{plain:?}"
        );
        // r1 is written in the block (after `o7` reads it): its swizzle
        // reads the register, which may be loaded again only before the write.
        let of_r1: Vec<Form> = (block.nodes.iter().zip(&state.own))
            .filter(|(node, _)| match node.op {
                Op::Swizzle(v, _) => block.nodes[v.0 as usize].op == Op::ReadTemp(1),
                _ => false,
            })
            .map(|(_, form)| *form)
            .collect();
        assert_eq!(of_r1, [Form::Own], "{precision:?}");
        let config = ShaderConfig {
            precision,
            ..ShaderConfig::default()
        };
        let (interp, jits) = interp_and_jits(&prog, config);
        for (shift, jit) in (0..edge.len()).flat_map(|s| jits.iter().map(move |j| (s, j))) {
            let mut uniforms = Uniforms::default();
            for (n, c) in uniforms.f.iter_mut().enumerate().take(8) {
                *c = vector(shift + 3 * n);
            }
            let mut s = UnitState::default();
            for (n, v) in s.inputs.iter_mut().enumerate().take(5) {
                *v = vector(shift + 7 * n + 1);
            }
            (s.temps[1], s.temps[2]) = (vector(shift + 4), vector(shift + 2));
            let run_jit =
                |b: &mut UnitState| jit.run(&prog, &config, &uniforms, b, &mut Vec::new());
            let what = format!("{precision:?}, shift {shift}");
            assert_same_run(&interp, &uniforms, s, run_jit, (0..=7, &[1]), &what);
        }
    }
}

/// An F32 multiply with a uniform or input operand nothing else reads (as
/// either operand), and an add or max with one as the second operand,
/// read it from memory ([`super::Form::BinaryMem`]), the multiply's exact
/// out-of-line sequence included (`0 × inf = +0`, NaN operands); every
/// result has the interpreter's bits.
#[test]
fn binary_operations_read_memory_operands_and_are_exact() {
    use super::{Form, Mem};
    use crate::ir::BinOp;
    use crate::{ShaderConfig, ShaderKind, Uniforms, UnitState};
    let source = "
        .proc main
        add r3, v5, v6
        mul o0, c0, r3
        mul o1, r3, v1
        add o2, r3, c2
        add o3, c3, r3
        max o4, r3, v4
        min o5, r3, c5
        dp4 o6, c6, r3
        mad o7, r3, c7, v7
        .end";
    let prog = program(source);
    let ir = crate::ir::Ir::build(&prog, 0, ShaderKind::Vertex, Precision::F32);
    let ir = crate::ir::opt::optimize(&ir);
    let block = &ir.blocks[0];
    let lowered = vec![true; block.instrs.len()];
    let state = block_state(block, &lowered, false, false);
    let mut folded: Vec<(BinOp, bool)> = state
        .own
        .iter()
        .filter_map(|f| match *f {
            Form::BinaryMem { op, mem, .. } => Some((op, matches!(mem, Mem::Uniforms(_)))),
            _ => None,
        })
        .collect();
    folded.sort_by_key(|&(op, uniform)| (format!("{op:?}"), uniform));
    // c0, c6 and c7 (first operands) and v1 multiplied; v6 and v7 added,
    // v4 compared. A uniform is always the first operand of an add or
    // `min` (the encoding has no other place for it): not folded, as those
    // do not commute on NaNs.
    assert_eq!(
        folded,
        [
            (BinOp::FAdd, false),
            (BinOp::FAdd, false),
            (BinOp::PicaMax, false),
            (BinOp::PicaMul, false),
            (BinOp::PicaMul, true),
            (BinOp::PicaMul, true),
            (BinOp::PicaMul, true),
        ]
    );
    let edge = [
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::from_bits(0xFF80_0001),
        f32::MAX,
        f32::from_bits(0x0000_0001),
        1.5,
        -3.25,
        f32::MIN_POSITIVE,
    ];
    let vector = |k: usize| std::array::from_fn(|i| edge[(k + 3 * i) % edge.len()]);
    let config = ShaderConfig {
        precision: Precision::F32,
        ..ShaderConfig::default()
    };
    let (interp, jits) = interp_and_jits(&prog, config);
    let mut zero_times_inf = 0;
    let shifts = 0..edge.len() * edge.len();
    for (shift, jit) in shifts.flat_map(|s| jits.iter().map(move |j| (s, j))) {
        let mut uniforms = Uniforms::default();
        for (n, c) in uniforms.f.iter_mut().enumerate().take(8) {
            *c = vector(shift / edge.len() + n);
        }
        let mut s = UnitState::default();
        for (n, v) in s.inputs.iter_mut().enumerate().take(8) {
            *v = vector(shift + 2 * n);
        }
        s.inputs[6] = [0.0; 4];
        let run_jit = |b: &mut UnitState| jit.run(&prog, &config, &uniforms, b, &mut Vec::new());
        let what = format!("shift {shift}");
        let b = assert_same_run(&interp, &uniforms, s, run_jit, (0..=7, &[3]), &what);
        let (r3, c0) = (b.temps[3], uniforms.f[0]);
        zero_times_inf += (0..4)
            .filter(|&i| r3[i] == 0.0 && c0[i].is_infinite() || r3[i].is_infinite() && c0[i] == 0.0)
            .count();
    }
    assert!(
        zero_times_inf > 0,
        "0 × inf reached the out-of-line multiply"
    );
}

/// Four F32 `dp4`s of one vector into x, y, z, w of one register are
/// lowered as a matrix (two [`super::Form::F32Half`]s and their sum), rows
/// nothing else reads taken from memory, the others from registers; every
/// result has the interpreter's bits, also where a product is `0 × inf`
/// (the PICA `+0`, found by the one NaN test of its half) in either row of
/// either half, and on NaN, infinite and signed-zero lanes.
#[test]
fn f32_matrix_rows_are_lowered_together_and_exact() {
    use super::Form;
    use super::dot::Row;
    use crate::{ShaderConfig, ShaderKind, Uniforms, UnitState};
    let source = "
        .proc main
        mov r0, v0
        dp4 o0.x, c0, r0
        dp4 o0.y, c1, r0
        dp4 o0.z, c2, r0
        dp4 o0.w, c3, r0
        dp4 r1.x, r0, v1
        dp4 r1.y, r0, v2
        dp4 r1.z, r0, v3
        dp4 r1.w, r0, v4
        mov o1, r1
        mov o2, v2
        .end";
    let prog = program(source);
    let ir = crate::ir::Ir::build(&prog, 0, ShaderKind::Vertex, Precision::F32);
    let ir = crate::ir::opt::optimize(&ir);
    let block = &ir.blocks[0];
    let lowered = vec![true; block.instrs.len()];
    let state = block_state(block, &lowered, false, false);
    let rows: Vec<Row> = state
        .own
        .iter()
        .filter_map(|f| match *f {
            Form::F32Half { b, .. } => Some(b),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(rows.len(), 8, "{:?}", state.own);
    let in_memory = rows.iter().filter(|r| matches!(r, Row::Mem(_))).count();
    // v2 is also moved to o2: its row stays in a register.
    assert_eq!(in_memory, 7, "{rows:?}");
    let config = ShaderConfig {
        precision: Precision::F32,
        ..ShaderConfig::default()
    };
    let (interp, jits) = interp_and_jits(&prog, config);
    let edge = [
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::from_bits(0x7F80_0001),
        f32::MAX,
        f32::from_bits(0x0000_0001),
        1.5,
        -3.25,
    ];
    let plain = [1.5f32, -2.0, 0.25, 3.0];
    // Rows that differ, so that a row's sum in another's lane shows.
    let matrix: [[f32; 4]; 4] = std::array::from_fn(|r| plain.map(|v| v * (r + 2) as f32));
    let mut cases: Vec<([f32; 4], [[f32; 4]; 4])> = vec![(plain, matrix)];
    // `0 × inf` in one row only, each row in turn (both rows of both halves).
    for row in 0..4 {
        for lane in 0..4 {
            let mut x = plain;
            x[lane] = 0.0;
            let mut m = matrix;
            m[row][lane] = f32::NEG_INFINITY;
            cases.push((x, m));
        }
    }
    let vector = |k: usize| std::array::from_fn(|i| edge[(k + 3 * i) % edge.len()]);
    for shift in 0..2 * edge.len() {
        cases.push((
            vector(shift),
            std::array::from_fn(|r| vector(shift + 7 * r + 1)),
        ));
    }
    for (x, m) in cases {
        for jit in &jits {
            let mut uniforms = Uniforms::default();
            uniforms.f[..4].copy_from_slice(&m);
            let mut s = UnitState::default();
            s.inputs[0] = x;
            s.inputs[1..5].copy_from_slice(&m);
            let run_jit =
                |b: &mut UnitState| jit.run(&prog, &config, &uniforms, b, &mut Vec::new());
            let what = format!("{x:?} · {m:?}");
            let b = assert_same_run(&interp, &uniforms, s, run_jit, (0..=2, &[0, 1]), &what);
            let p = Precision::F32;
            let want: [u32; 4] = std::array::from_fn(|i| crate::arith::dp4(p, x, m[i]).to_bits());
            assert_eq!(b.outputs[0].map(f32::to_bits), want, "o0 of {what}");
        }
    }
}

/// `ir::opt::operands` (which the optimiser's passes ask) and the lowering's
/// `own_operands` (its array, without the iterator) list every kind of
/// operation's operands in order (a wrong list would allocate, keep or free
/// the wrong registers).
#[test]
fn own_operands_are_the_ir_operands_of_every_operation() {
    use crate::ir::{AddrReg, BinOp, Op, Ty, UnOp, Value};
    use crate::isa::{CmpOp, DstReg, WriteMask};
    let (a, b, c) = (Value(7), Value(11), Value(13));
    // Every kind of operation with the values it reads, in order.
    let every_kind: [(Op, &[Value]); 21] = [
        (
            Op::Const {
                ty: Ty::F32X4,
                bits: [1, 2, 3, 4],
            },
            &[],
        ),
        (Op::ReadInput(3), &[]),
        (Op::ReadTemp(5), &[]),
        (Op::ReadConst(9), &[]),
        (Op::ReadConstAt(a), &[a]),
        (Op::ReadAddr(AddrReg::A0Y), &[]),
        (Op::ReadFlag(1), &[]),
        (Op::ReadBoolUniform(2), &[]),
        (Op::ReadIntUniform { id: 1, field: 2 }, &[]),
        (
            Op::Store {
                dst: DstReg::Temp(4),
                mask: WriteMask(0b1010),
                value: b,
            },
            &[b],
        ),
        (Op::WriteAddr(AddrReg::A0X, c), &[c]),
        (Op::WriteFlag(0, a), &[a]),
        (Op::Swizzle(b, [3, 2, 1, 0]), &[b]),
        (Op::Extract(c, 2), &[c]),
        (Op::Splat(a), &[a]),
        (
            Op::Blend {
                a: b,
                b: c,
                take_b: WriteMask(0b0110),
            },
            &[b, c],
        ),
        (Op::Select { cond: c, a, b }, &[c, a, b]),
        (Op::Unary(UnOp::Floor, b), &[b]),
        (Op::Binary(BinOp::FSub, c, a), &[c, a]),
        (Op::FCmp(CmpOp::Lt, a, c), &[a, c]),
        (Op::ICmp(CmpOp::Ge, b, a), &[b, a]),
    ];
    for (op, expected) in &every_kind {
        let ir: Vec<Value> = crate::ir::opt::operands(op).collect();
        assert_eq!(&ir[..], *expected, "IR operands of {op:?}");
        assert_eq!(
            super::own_operands(op).as_slice(),
            *expected,
            "own operands of {op:?}"
        );
    }
}

/// Plans the default shader and every recipe (built and optimised) in both
/// precisions, with each kind of uniform reads, and gives `check` each
/// plan: which instructions are lowered, the precision, the optimised IR,
/// the plan and its tables.
fn for_each_plan(
    mut check: impl FnMut(
        &dyn Fn(u32) -> bool,
        Precision,
        &crate::ir::Ir,
        &crate::jit::single::Plan<super::BlockState<'_>>,
        &super::Tables,
    ),
) {
    let shbin = crate::shbin::Shbin::parse(crate::DEFAULT_SHADER).expect("the default shader");
    let default = crate::Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone())
        .expect("a program");
    for prog in [default, crate::jit::spill::every_recipe()] {
        let a = crate::analysis::analyse(&prog, 0, ShaderKind::Vertex);
        let data = |pc: u32| a.class[pc as usize] == InstrClass::Data;
        for precision in [Precision::F24, Precision::F32] {
            let built = crate::ir::Ir::from_analysis(&prog, &a, ShaderKind::Vertex, precision);
            let ir = crate::ir::opt::optimize(&built);
            for uniforms in [
                super::UniformReads::Raw,
                super::UniformReads::Converted,
                super::UniformReads::Cached,
            ] {
                let (planned, _, tables) = plan(
                    &ir,
                    &built,
                    data,
                    |pc| a.reachable[pc as usize],
                    precision == Precision::F24,
                    uniforms,
                )
                .expect("a plan");
                check(&data, precision, &ir, &planned, &tables);
            }
        }
    }
}

/// The operands planning stores per running node (`Tables::nodes`, what
/// lowering reads) are those of the node's settled form (`real_operands`)
/// in every planned block of the default shader and of every recipe, in
/// both precisions, with and without converted uniforms; the pattern forms
/// among them read other values than their IR operands.
#[test]
fn the_operands_planning_stores_are_those_of_each_settled_form() {
    let mut patterns = 0;
    for_each_plan(|_, precision, _, planned, tables| {
        for state in planned.blocks.iter().flatten() {
            let base = state.values.base as usize;
            for (k, node) in state.nodes.iter().enumerate() {
                if !planned.values[base + k].needed {
                    continue;
                }
                let form = tables.nodes[base + k].form;
                let expected = super::real_operands(&node.op, form);
                assert_eq!(
                    tables.nodes[base + k].operands,
                    expected,
                    "{precision:?} node {k} {form:?}"
                );
                patterns += usize::from(expected != super::own_operands(&node.op));
            }
        }
    });
    assert!(patterns > 0, "no pattern form reads other values");
}

/// [`super::Census::count`]'s one match per node counts the uses
/// [`crate::jit::single::dot_sums::uses`] counts (every operand of
/// [`crate::ir::opt::operand_array`], and the exit's) and notes what
/// `Census::note` notes of each node, in every block of the default shader
/// and of every recipe, built and optimised, in both precisions; one buffer
/// serves every block.
#[test]
fn the_census_counts_the_uses_of_every_operand() {
    let shbin = crate::shbin::Shbin::parse(crate::DEFAULT_SHADER).expect("the default shader");
    let default = crate::Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone())
        .expect("a program");
    let mut uses = Vec::new();
    let (mut blocks, mut selects) = (0, 0);
    for prog in [default, crate::jit::spill::every_recipe()] {
        let a = crate::analysis::analyse(&prog, 0, ShaderKind::Vertex);
        for precision in [Precision::F24, Precision::F32] {
            let built = crate::ir::Ir::from_analysis(&prog, &a, ShaderKind::Vertex, precision);
            let optimised = crate::ir::opt::optimize(&built);
            for block in built.blocks.iter().chain(&optimised.blocks) {
                let census = super::Census::count(block, &mut uses);
                assert_eq!(
                    uses,
                    crate::jit::single::dot_sums::uses(block),
                    "{precision:?}"
                );
                let mut noted = super::Census::default();
                for node in &block.nodes {
                    noted.note(node);
                }
                assert_eq!(census, noted, "{precision:?}");
                blocks += 1;
                selects += block
                    .nodes
                    .iter()
                    .filter(|n| matches!(n.op, crate::ir::Op::Select { .. }))
                    .count();
            }
        }
    }
    assert!(
        blocks > 4 && selects > 0,
        "{blocks} blocks, {selects} selects"
    );
}

/// The value facts planning keeps per block (which nodes run, last uses,
/// the spill slots), where each node's operands are noted as its form
/// settles ([`crate::jit::single::Values::plan_reading`]), are those of the
/// plain walk back over the operands of each settled form
/// ([`super::real_operands`] given to [`crate::jit::single::Values::plan`]),
/// in every planned block of the default shader and of every recipe, both
/// precisions, with and without converted uniforms: no operand a form
/// reads is left unnoted, none it does not read is noted.
#[test]
fn the_facts_noted_as_forms_settle_are_those_of_their_operands() {
    let (mut blocks, mut selects) = (0, 0);
    for_each_plan(|data, precision, ir, planned, tables| {
        for (block, state) in ir.blocks.iter().zip(&planned.blocks) {
            let Some(state) = state else { continue };
            let range = state.values.range();
            let (facts, entries) = (&planned.values[range.clone()], &tables.nodes[range]);
            let lowered: Vec<bool> = (block.start..=block.last).map(data).collect();
            let mut expected = Vec::new();
            let walked = crate::jit::single::Values::plan(
                block,
                &lowered,
                |k, _| {
                    let op = &block.nodes[k].op;
                    (facts[k].remat, super::real_operands(op, entries[k].form))
                },
                &super::VALUE_REGS,
                &mut Default::default(),
                &mut expected,
            );
            assert_eq!(facts, &expected[..], "{precision:?} block {}", block.start);
            assert_eq!(state.values.spill_slots, walked.spill_slots);
            blocks += 1;
            selects += block
                .nodes
                .iter()
                .zip(facts)
                .filter(|(n, f)| f.needed && matches!(n.op, crate::ir::Op::Select { .. }))
                .count();
        }
    });
    // Three-operand nodes run among them.
    assert!(
        blocks > 4 && selects > 0,
        "{blocks} blocks, {selects} selects"
    );
}
