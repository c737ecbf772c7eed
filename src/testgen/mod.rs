//! Random test cases for differential testing of the engines (feature `testgen`).
//!
//! A [`TestCase`] is a small program (at most [`MAX_LEN`] words) plus everything
//! needed to run it: the [`ShaderConfig`] (entry point, vertex/geometry unit,
//! precision, a small budget), the [`Uniforms`] and one initial [`UnitState`] per
//! invocation. [`generate`] (also the [`arbitrary::Arbitrary`] impl) builds one
//! from fuzzer bytes; [`run_all_engines`] runs it on every engine the host has and
//! compares everything observable bit for bit; [`minimize`] shrinks a failing
//! case; [`TestCase::reproducer`] prints Rust code that rebuilds it.
//!
//! ```
//! use arbitrary::Unstructured;
//! use pica_jit::testgen::{generate, run_all_engines};
//!
//! let bytes: Vec<u8> = (0..2048u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
//! let case = generate(&mut Unstructured::new(&bytes)).unwrap();
//! assert!(!case.program.is_empty() && !case.states.is_empty());
//! if let Err(mismatch) = run_all_engines(&case) {
//!     panic!("{mismatch}");
//! }
//! ```
//!
//! # What the generator covers
//!
//! - **Instructions:** every opcode — all binary operations in both normal and
//!   inverted (`dphi`, `dsti`, `sgei`, `slti`) forms, every unary operation
//!   including `mova`, `cmp` with all eight operators on each flag, `mad` and
//!   `madi`, `call`/`callc`/`callu`, `ifc`/`ifu` with and without an else part,
//!   `loop`, `jmpc`/`jmpu` with either value of the inversion bit, `break`/
//!   `breakc`, `end`, `nop`, `emit`, `setemit`, the unassigned opcodes, and raw
//!   random words (every word decodes to something; about 5% of programs are
//!   nothing else).
//! - **Operands:** random descriptor tables (0..=128 entries; every mask
//!   including 0, random and broadcast selectors, negation, raw words), indices
//!   beyond the table, `mad` descriptors 0..32, every source field kind, relative
//!   addressing through `a0.x`, `a0.y` and `aL` (also on `v`/`r` registers, where
//!   it is ignored) with in-range, out-of-window (< −128, > 127) and extreme
//!   offsets. `a0` is set by `mova` of generated values and by the initial state,
//!   `aL` by loops and the initial state.
//! - **Control flow:** flow targets biased to nearby addresses so structures
//!   form, plus templates written over the random code (see the `program`
//!   module): counted loops with `break`s and IFs inside, nested loops ending on
//!   the same instruction or nested more than four deep, IF/ELSE blocks (also
//!   with backward targets), nests of up to ten IFs, calls after an END, into
//!   fall-through code and backwards, subroutines that END or BREAK, chains of
//!   2..=5 calls whose returns pop on one instruction (the fourth-pop quirk),
//!   call nests deeper than four, data-dependent backward jumps (often infinite),
//!   emit sequences. Overlapping templates give jumps into and out of loop and IF
//!   bodies, BREAK with an empty LOOP stack, END inside calls, etc.
//! - **Runs:** vertex and (about 30%, with more emits) geometry units, both precisions,
//!   entry points other than 0, budgets mostly 20..=5000 (sometimes 0..=20 or up
//!   to 30000) so that budget stops land at many points inside blocks, and 1..=4
//!   invocations, either independent or carrying the state over (only the
//!   inputs replaced), as an embedder keeping hardware behaviour would.
//! - **Values:** uniforms, inputs, temporaries and outputs drawn from ±0, ±inf,
//!   quiet and signalling NaNs with payloads (both signs), the canonical NaN, f32
//!   and float24 subnormals, values around 2^-62, tiny and huge (≥ 2^64, near
//!   `f32::MAX`) normals, values around 2^64 and ±2^31, exact small integers and
//!   fractions, address-like integers, `litp`/`ex2`/`lg2` boundaries and random
//!   bits; integer uniforms over their full range (loop counts biased small);
//!   random boolean uniforms; initial `a0`/`aL` small or extreme; random flags.

mod entropy;
mod program;
mod run;
mod shrink;
mod stress;
mod values;

pub use program::MAX_LEN;
pub use run::{Mismatch, run_all_engines};
pub use shrink::minimize;
pub use stress::live_values;

use crate::arith::{Precision, Vec4};
use crate::isa::{ListingEntry, listing};
use crate::program::{Program, ShaderKind};
use crate::{ShaderConfig, Uniforms, UnitState};
use arbitrary::{Arbitrary, Unstructured};
use entropy::{Entropy, SplitMix};
use std::fmt::{self, Write as _};
use std::sync::Arc;

/// One differential test: a program and how to run it.
#[derive(Clone, PartialEq)]
pub struct TestCase {
    /// The program (code words and operand descriptors).
    pub program: Arc<Program>,
    /// Entry point, unit kind, precision and budget.
    pub config: ShaderConfig,
    /// Uniforms shared by every invocation.
    pub uniforms: Uniforms,
    /// One initial state per invocation (at least one).
    pub states: Vec<UnitState>,
    /// When set, invocation `k > 0` starts from the state invocation `k - 1`
    /// left behind, with only `inputs` taken from `states[k]`.
    pub carry_state: bool,
}

/// Builds a [`Vec4`] from four f32 bit patterns (for reproducers).
pub fn vec4_from_bits(bits: [u32; 4]) -> Vec4 {
    bits.map(f32::from_bits)
}

impl TestCase {
    /// A case running `code` with `descriptors`: entry 0, vertex unit, F24,
    /// budget 1000, default uniforms and one default state.
    ///
    /// # Panics
    /// If the program is invalid (too long, too many descriptors) or empty.
    pub fn new(code: Vec<u32>, descriptors: Vec<u32>) -> TestCase {
        assert!(
            !code.is_empty(),
            "a test case needs at least one instruction"
        );
        TestCase {
            program: Arc::new(Program::new(code, descriptors).expect("valid program")),
            config: ShaderConfig {
                budget: 1000,
                ..ShaderConfig::default()
            },
            uniforms: Uniforms::default(),
            states: vec![UnitState::default()],
            carry_state: false,
        }
    }

    /// Replaces the program, keeping everything else (the entry point is
    /// clamped into the new program).
    pub fn with_code(&self, code: Vec<u32>, descriptors: Vec<u32>) -> TestCase {
        let program = Program::new(code, descriptors).expect("valid program");
        let mut case = self.clone();
        case.config.entry = case.config.entry.min(program.len() as u32 - 1);
        case.program = Arc::new(program);
        case
    }

    /// The program listing (`pica_jit::isa::listing`) with the entry point named
    /// `entry`.
    pub fn listing(&self) -> String {
        listing(
            self.program.code(),
            &self.program.descriptor_words(),
            &[ListingEntry::new("entry", self.config.entry)],
        )
    }

    /// Rust statements that rebuild this case into a variable `case`
    /// (uses `pica_jit::testgen::{TestCase, vec4_from_bits}` and the crate-root
    /// types), with the program listing as a comment. Registers equal to the
    /// default (zero) are omitted.
    pub fn reproducer(&self) -> String {
        let mut s = String::new();
        for line in self.listing().lines() {
            let _ = writeln!(s, "// {line}");
        }
        let words = |ws: &[u32]| {
            ws.iter()
                .map(|w| format!("0x{w:08x}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            s,
            "let mut case = TestCase::new(vec![{}], vec![{}]);",
            words(self.program.code()),
            words(&self.program.descriptor_words())
        );
        let c = &self.config;
        let _ = writeln!(
            s,
            "case.config = ShaderConfig {{ entry: {}, kind: ShaderKind::{:?}, precision: Precision::{:?}, budget: {} }};",
            c.entry, c.kind, c.precision, c.budget
        );
        if self.carry_state {
            let _ = writeln!(s, "case.carry_state = true;");
        }
        let bits = |v: &Vec4| {
            format!(
                "vec4_from_bits([{}])",
                v.iter()
                    .map(|x| format!("0x{:08x}", x.to_bits()))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let nonzero = |v: &Vec4| v.iter().any(|x| x.to_bits() != 0);
        for (n, v) in self.uniforms.f.iter().enumerate() {
            if nonzero(v) {
                let _ = writeln!(s, "case.uniforms.f[{n}] = {};", bits(v));
            }
        }
        for (n, v) in self.uniforms.i.iter().enumerate() {
            if *v != [0; 4] {
                let _ = writeln!(s, "case.uniforms.i[{n}] = {v:?};");
            }
        }
        for (n, &b) in self.uniforms.b.iter().enumerate() {
            if b {
                let _ = writeln!(s, "case.uniforms.b[{n}] = true;");
            }
        }
        if self.states.len() != 1 {
            let _ = writeln!(
                s,
                "case.states = vec![UnitState::default(); {}];",
                self.states.len()
            );
        }
        for (k, st) in self.states.iter().enumerate() {
            for (name, regs) in [
                ("inputs", &st.inputs),
                ("temps", &st.temps),
                ("outputs", &st.outputs),
            ] {
                for (n, v) in regs.iter().enumerate() {
                    if nonzero(v) {
                        let _ = writeln!(s, "case.states[{k}].{name}[{n}] = {};", bits(v));
                    }
                }
            }
            if st.a0 != [0; 2] {
                let _ = writeln!(s, "case.states[{k}].a0 = {:?};", st.a0);
            }
            if st.al != 0 {
                let _ = writeln!(s, "case.states[{k}].al = {};", st.al);
            }
            if st.cmp != [false; 2] {
                let _ = writeln!(s, "case.states[{k}].cmp = {:?};", st.cmp);
            }
        }
        s
    }
}

/// Compact: the configuration and the reproducer (listing, non-zero registers).
impl fmt::Debug for TestCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "TestCase {{")?;
        for line in self.reproducer().lines() {
            writeln!(f, "    {line}")?;
        }
        write!(f, "}}")
    }
}

/// Builds a test case from fuzzer bytes. Never fails for lack of bytes: choices
/// past the end of the data take their first (plainest) option.
pub fn generate(u: &mut Unstructured<'_>) -> arbitrary::Result<TestCase> {
    let kind = if u.chance(30) {
        ShaderKind::Geometry
    } else {
        ShaderKind::Vertex
    };
    let (code, descriptors) = program::generate(u, kind == ShaderKind::Geometry);
    let program = Program::new(code, descriptors).expect("generated programs are valid");
    let len = program.len() as u32;

    let config = ShaderConfig {
        entry: if u.chance(20) { u.below(len) } else { 0 },
        kind,
        precision: if u.flip() {
            Precision::F32
        } else {
            Precision::F24
        },
        budget: match u.weighted(&[80, 5, 10, 5]) {
            0 => u.range(20, 2000),
            1 => u.range(0, 20),
            2 => u.range(2000, 5000),
            _ => u.range(5000, 30_000),
        } as u64,
    };

    // Register contents: a palette of special values chosen by the fuzzer, bulk
    // lanes filled by a seeded PRNG (cheap in fuzzer bytes), then explicit
    // fuzzer-chosen overrides.
    let palette: Vec<f32> = (0..1 + u.below(12))
        .map(|_| values::interesting_f32(u))
        .collect();
    let mut rng = SplitMix(u.bits() as u64 | (u.bits() as u64) << 32);
    let sparse = u.chance(30);
    let fill = |rng: &mut SplitMix, v: &mut Vec4| {
        if !sparse || rng.below(4) == 0 {
            *v = values::vec4_from(rng, &palette);
        }
    };

    let mut uniforms = Uniforms::default();
    for v in uniforms.f.iter_mut() {
        fill(&mut rng, v);
    }
    for i in uniforms.i.iter_mut() {
        *i = [
            if u.chance(80) {
                u.below(4) as u8
            } else {
                u.below(256) as u8
            },
            u.below(256) as u8,
            if u.chance(60) {
                u.below(4) as u8
            } else {
                u.below(256) as u8
            },
            u.below(256) as u8,
        ];
    }
    for b in uniforms.b.iter_mut() {
        *b = u.flip();
    }

    let invocations = if u.chance(40) { 2 + u.below(3) } else { 1 };
    let carry_state = u.flip();
    let mut states = Vec::with_capacity(invocations as usize);
    for _ in 0..invocations {
        let mut st = UnitState::default();
        for v in st.inputs.iter_mut() {
            fill(&mut rng, v);
        }
        if !u.chance(30) {
            for v in st.temps.iter_mut().chain(st.outputs.iter_mut()) {
                fill(&mut rng, v);
            }
        }
        if u.chance(50) {
            st.a0 = [values::address_value(u), values::address_value(u)];
        }
        if u.chance(40) {
            st.al = values::address_value(u);
        }
        st.cmp = [u.flip(), u.flip()];
        states.push(st);
    }

    // Fuzzer-chosen overrides (the mutator can steer these values directly).
    for _ in 0..u.below(12) {
        let value = values::interesting_f32(u);
        let lane = u.below(4) as usize;
        let n = u.below(16) as usize;
        let st = u.below(states.len() as u32) as usize;
        match u.below(4) {
            0 => uniforms.f[u.below(96) as usize][lane] = value,
            1 => uniforms.f[n][lane] = value,
            2 => states[st].inputs[n][lane] = value,
            _ => states[st].temps[n][lane] = value,
        }
    }

    Ok(TestCase {
        program: Arc::new(program),
        config,
        uniforms,
        states,
        carry_state,
    })
}

impl<'a> Arbitrary<'a> for TestCase {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        generate(u)
    }

    fn size_hint(_depth: usize) -> (usize, Option<usize>) {
        (64, Some(4096))
    }
}
