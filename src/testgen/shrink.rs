//! Greedy shrinking of a failing [`TestCase`].

use super::TestCase;
use super::program::{IDENTITY_DESCRIPTOR, NOP};
use crate::isa::{Instruction, encode};
use crate::state::UnitState;
use crate::{EngineKind, Shader, ShaderKind};

/// Shrinks `case` while `still_fails` holds, and returns the smallest case found.
///
/// Tried repeatedly until nothing changes: fewer invocations (and no state
/// carrying), a shorter program (trailing words removed, then any word deleted
/// with the flow targets behind it renumbered), descriptor indices set to 0,
/// instructions replaced by `nop`, descriptors simplified to `xyzw` and dropped, vertex instead of geometry unit,
/// entry point 0, the smallest failing budget, and registers, uniforms, `a0`,
/// `aL` and flags reset to zero (whole registers, then single lanes).
///
/// ```
/// use pica_jit::isa::{encode, Instruction};
/// use pica_jit::testgen::{minimize, TestCase};
/// let end = encode(&Instruction::End).unwrap();
/// let nop = encode(&Instruction::Nop).unwrap();
/// let case = TestCase::new(vec![nop, nop, end, nop], vec![]);
/// // "Fails" while the program still contains an `end`.
/// let small = minimize(&case, |c| c.program.code().contains(&end));
/// assert_eq!(small.program.code(), &[end]);
/// ```
pub fn minimize(case: &TestCase, mut still_fails: impl FnMut(&TestCase) -> bool) -> TestCase {
    let mut best = case.clone();
    let mut try_it = |candidate: TestCase, best: &mut TestCase| {
        if !same_bits(&candidate, best) && still_fails(&candidate) {
            *best = candidate;
            true
        } else {
            false
        }
    };
    loop {
        let mut progress = false;
        // Keeps the current program's native code in the JIT cache, so attempts
        // that only change values or the budget do not recompile.
        let _warm = Shader::new(best.program.clone(), best.config, EngineKind::Auto).ok();

        // Invocations.
        if best.states.len() > 1 {
            for k in 0..best.states.len() {
                let mut c = best.clone();
                c.states = vec![best.states[k].clone()];
                c.carry_state = false;
                if try_it(c, &mut best) {
                    progress = true;
                    break;
                }
            }
        }
        if best.states.len() > 1 {
            for k in (0..best.states.len()).rev() {
                if best.states.len() > 1 {
                    let mut c = best.clone();
                    c.states.remove(k);
                    progress |= try_it(c, &mut best);
                }
            }
        }
        if best.carry_state {
            let mut c = best.clone();
            c.carry_state = false;
            progress |= try_it(c, &mut best);
        }

        // Code length, then instructions.
        while best.program.len() > 1 {
            let code = best.program.code()[..best.program.len() - 1].to_vec();
            let c = best.with_code(code, best.program.descriptor_words());
            if !try_it(c, &mut best) {
                break;
            }
            progress = true;
        }
        let mut pc = 0;
        while pc < best.program.len() && best.program.len() > 1 {
            let deleted = delete_word(&best, pc).is_some_and(|c| try_it(c, &mut best));
            if deleted {
                progress = true;
            } else {
                pc += 1;
            }
        }
        for pc in 0..best.program.len() {
            if let Some(word) = descriptor_zero(best.program.instructions()[pc])
                && word != best.program.code()[pc]
            {
                let mut code = best.program.code().to_vec();
                code[pc] = word;
                let c = best.with_code(code, best.program.descriptor_words());
                progress |= try_it(c, &mut best);
            }
        }
        for pc in 0..best.program.len() {
            if best.program.code()[pc] != NOP {
                let mut code = best.program.code().to_vec();
                code[pc] = NOP;
                let c = best.with_code(code, best.program.descriptor_words());
                progress |= try_it(c, &mut best);
            }
        }
        let descs = best.program.descriptor_words();
        for (n, &d) in descs.iter().enumerate() {
            if d != IDENTITY_DESCRIPTOR {
                let mut ds = best.program.descriptor_words();
                ds[n] = IDENTITY_DESCRIPTOR;
                let c = best.with_code(best.program.code().to_vec(), ds);
                progress |= try_it(c, &mut best);
            }
        }
        while !best.program.descriptor_words().is_empty() {
            let mut ds = best.program.descriptor_words();
            ds.pop();
            let c = best.with_code(best.program.code().to_vec(), ds);
            if !try_it(c, &mut best) {
                break;
            }
            progress = true;
        }

        // Configuration.
        let _warm = Shader::new(best.program.clone(), best.config, EngineKind::Auto).ok();
        if best.config.kind == ShaderKind::Geometry {
            let mut c = best.clone();
            c.config.kind = ShaderKind::Vertex;
            progress |= try_it(c, &mut best);
        }
        if best.config.entry != 0 {
            let mut c = best.clone();
            c.config.entry = 0;
            progress |= try_it(c, &mut best);
        }
        {
            // Smallest failing budget: bisect downwards, then step.
            let (mut lo, mut hi) = (0u64, best.config.budget);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                let mut c = best.clone();
                c.config.budget = mid;
                if try_it(c, &mut best) {
                    progress = true;
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
        }

        // Values.
        let _warm = Shader::new(best.program.clone(), best.config, EngineKind::Auto).ok();
        for n in 0..best.uniforms.f.len() {
            progress |= zero_vec(&mut best, &mut try_it, |c| &mut c.uniforms.f[n]);
        }
        for n in 0..4 {
            if best.uniforms.i[n] != [0; 4] {
                let mut c = best.clone();
                c.uniforms.i[n] = [0; 4];
                progress |= try_it(c, &mut best);
            }
        }
        for n in 0..16 {
            if best.uniforms.b[n] {
                let mut c = best.clone();
                c.uniforms.b[n] = false;
                progress |= try_it(c, &mut best);
            }
        }
        for k in 0..best.states.len() {
            for n in 0..16 {
                progress |= zero_vec(&mut best, &mut try_it, |c| &mut c.states[k].inputs[n]);
                progress |= zero_vec(&mut best, &mut try_it, |c| &mut c.states[k].temps[n]);
                progress |= zero_vec(&mut best, &mut try_it, |c| &mut c.states[k].outputs[n]);
            }
            let mut c = best.clone();
            let st: &mut UnitState = &mut c.states[k];
            st.a0 = [0; 2];
            progress |= try_it(c, &mut best);
            let mut c = best.clone();
            c.states[k].al = 0;
            progress |= try_it(c, &mut best);
            let mut c = best.clone();
            c.states[k].cmp = [false; 2];
            progress |= try_it(c, &mut best);
        }

        if !progress {
            return best;
        }
    }
}

/// The program without the word at `at`: flow targets and the entry point
/// after it move down by one (every word is re-encoded from its decoding).
fn delete_word(case: &TestCase, at: usize) -> Option<TestCase> {
    let fix = |t: u16| if t as usize > at { t - 1 } else { t };
    let mut code = Vec::with_capacity(case.program.len() - 1);
    for (pc, instr) in case.program.instructions().iter().enumerate() {
        if pc == at {
            continue;
        }
        let moved = match *instr {
            Instruction::Call { guard, target, num } => Instruction::Call {
                guard,
                target: fix(target),
                num,
            },
            Instruction::If { guard, target, num } => Instruction::If {
                guard,
                target: fix(target),
                num,
            },
            Instruction::Jmp {
                guard,
                target,
                invert,
            } => Instruction::Jmp {
                guard,
                target: fix(target),
                invert,
            },
            Instruction::Loop { int_id, end } => Instruction::Loop {
                int_id,
                end: fix(end),
            },
            other => other,
        };
        code.push(encode(&moved).ok()?);
    }
    let mut c = case.with_code(code, case.program.descriptor_words());
    if case.config.entry as usize > at {
        c.config.entry = case.config.entry - 1;
    }
    Some(c)
}

/// `instr` re-encoded with operand descriptor 0 (`None` if it has none).
fn descriptor_zero(instr: Instruction) -> Option<u32> {
    let has_descriptor = matches!(
        instr,
        Instruction::Binary { .. }
            | Instruction::Unary { .. }
            | Instruction::Cmp { .. }
            | Instruction::Mad { .. }
    );
    has_descriptor
        .then(|| encode(&instr.with_descriptor(0)).ok())
        .flatten()
}

/// Bit-level equality (`PartialEq` on the float registers says NaN != NaN,
/// which would make a no-op look like progress).
fn same_bits(a: &TestCase, b: &TestCase) -> bool {
    fn regs(x: &[crate::Vec4], y: &[crate::Vec4]) -> bool {
        x.len() == y.len()
            && x.iter()
                .flatten()
                .zip(y.iter().flatten())
                .all(|(p, q)| p.to_bits() == q.to_bits())
    }
    a.program == b.program
        && a.config == b.config
        && a.carry_state == b.carry_state
        && a.uniforms.i == b.uniforms.i
        && a.uniforms.b == b.uniforms.b
        && regs(&a.uniforms.f, &b.uniforms.f)
        && a.states.len() == b.states.len()
        && a.states.iter().zip(&b.states).all(|(s, t)| {
            regs(&s.inputs, &t.inputs)
                && regs(&s.temps, &t.temps)
                && regs(&s.outputs, &t.outputs)
                && s.a0 == t.a0
                && s.al == t.al
                && s.cmp == t.cmp
        })
}

/// Zeroes the register `reg` selects, whole or lane by lane.
fn zero_vec(
    best: &mut TestCase,
    try_it: &mut impl FnMut(TestCase, &mut TestCase) -> bool,
    reg: impl Fn(&mut TestCase) -> &mut crate::Vec4,
) -> bool {
    let mut probe = best.clone();
    if reg(&mut probe).iter().all(|x| x.to_bits() == 0) {
        return false;
    }
    let mut c = best.clone();
    *reg(&mut c) = [0.0; 4];
    if try_it(c, best) {
        return true;
    }
    let mut progress = false;
    for lane in 0..4 {
        let mut c = best.clone();
        if reg(&mut c)[lane].to_bits() != 0 {
            reg(&mut c)[lane] = 0.0;
            progress |= try_it(c, best);
        }
    }
    progress
}
