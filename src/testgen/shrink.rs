//! Greedy shrinking of a failing [`TestCase`].

use super::TestCase;
use super::program::{IDENTITY_DESCRIPTOR, NOP};
use crate::state::UnitState;
use crate::{EngineKind, Shader, ShaderKind};

/// Shrinks `case` while `still_fails` holds, and returns the smallest case found.
///
/// Tried repeatedly until nothing changes: fewer invocations (and no state
/// carrying), a shorter program (trailing words removed), instructions replaced
/// by `nop`, descriptors simplified to `xyzw`, vertex instead of geometry unit,
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
/// assert_eq!(small.program.code(), &[nop, nop, end]);
/// ```
pub fn minimize(case: &TestCase, mut still_fails: impl FnMut(&TestCase) -> bool) -> TestCase {
    let mut best = case.clone();
    let mut try_it = |candidate: TestCase, best: &mut TestCase| {
        if candidate != *best && still_fails(&candidate) {
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
