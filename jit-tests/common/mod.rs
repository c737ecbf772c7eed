//! Shared test support: the test assembler and engine-parameterised runners.
//! Every behavioural test runs on every engine the host has and checks that the
//! engines agree bit for bit before checking expected values.

#![allow(dead_code)]

pub mod asm;

use pica_jit::{
    EmittedVertex, EngineKind, Precision, Program, Shader, ShaderConfig, ShaderKind, Stop,
    Uniforms, UnitState,
};
use std::sync::Arc;

#[allow(unused_imports)]
pub use asm::{Assembled, assemble};

/// The engines exercised by the suites: every engine this host can run. With
/// `PICA_REQUIRE_JIT=1` (CI sets it) a host without a JIT is a failure, not a quiet
/// interpreter-only run.
pub fn engines() -> Vec<EngineKind> {
    let engines = EngineKind::available();
    if std::env::var("PICA_REQUIRE_JIT").as_deref() == Ok("1") {
        assert!(
            engines.contains(&EngineKind::Jit),
            "PICA_REQUIRE_JIT=1 but this host has no JIT: {:?}",
            pica_jit::jit::host_support()
        );
    }
    engines
}

/// Whether a test that exercises the JIT can run here. `PICA_REQUIRE_JIT=1`
/// makes a host without one a failure (see [`engines`]); elsewhere the skip is
/// printed, never silent.
pub fn jit_available(test: &str) -> bool {
    let available = engines().contains(&EngineKind::Jit);
    if !available {
        println!("SKIPPED {test}: this host has no JIT");
    }
    available
}

/// The result of one invocation.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub stop: Stop,
    pub state: UnitState,
    pub emits: Vec<EmittedVertex>,
}

impl Outcome {
    pub fn out(&self, n: usize) -> [f32; 4] {
        self.state.outputs[n]
    }
    pub fn temp(&self, n: usize) -> [f32; 4] {
        self.state.temps[n]
    }
    pub fn out_bits(&self, n: usize) -> [u32; 4] {
        self.state.outputs[n].map(f32::to_bits)
    }
    pub fn temp_bits(&self, n: usize) -> [u32; 4] {
        self.state.temps[n].map(f32::to_bits)
    }
}

/// Everything observable, as bits, for cross-engine comparison.
pub fn fingerprint(o: &Outcome) -> Vec<u64> {
    let s = &o.state;
    let mut v: Vec<u64> = Vec::new();
    v.push(o.stop as u64);
    for reg in s.outputs.iter().chain(s.temps.iter()) {
        v.extend(reg.iter().map(|x| x.to_bits() as u64));
    }
    v.extend([
        s.a0[0] as u32 as u64,
        s.a0[1] as u32 as u64,
        s.al as u32 as u64,
    ]);
    v.extend([s.cmp[0] as u64, s.cmp[1] as u64]);
    v.extend([
        s.emit.vertex_id as u64,
        s.emit.primitive as u64,
        s.emit.winding as u64,
    ]);
    for e in &o.emits {
        v.extend([e.vertex_id as u64, e.primitive as u64, e.winding as u64]);
        for reg in &e.outputs {
            v.extend(reg.iter().map(|x| x.to_bits() as u64));
        }
    }
    v
}

/// A test case: a program plus how to run it.
#[derive(Clone)]
pub struct Case {
    pub program: Arc<Program>,
    pub config: ShaderConfig,
    pub uniforms: Uniforms,
    pub state: UnitState,
}

impl Case {
    pub fn new(source: &str) -> Case {
        let assembled = assemble(source);
        Case::from_program(assembled.program())
    }

    pub fn from_program(program: Program) -> Case {
        let mut uniforms = Uniforms::default();
        // Conventional test constants: c0 = 0, c1 = 1.
        uniforms.f[1] = [1.0; 4];
        Case {
            program: Arc::new(program),
            config: ShaderConfig {
                precision: Precision::F32,
                ..ShaderConfig::default()
            },
            uniforms,
            state: UnitState::default(),
        }
    }

    pub fn precision(mut self, p: Precision) -> Case {
        self.config.precision = p;
        self
    }

    pub fn geometry(mut self) -> Case {
        self.config.kind = ShaderKind::Geometry;
        self
    }

    pub fn budget(mut self, budget: u64) -> Case {
        self.config.budget = budget;
        self
    }

    pub fn entry(mut self, entry: u32) -> Case {
        self.config.entry = entry;
        self
    }

    pub fn f(mut self, n: usize, v: [f32; 4]) -> Case {
        self.uniforms.f[n] = v;
        self
    }

    pub fn i(mut self, n: usize, v: [u8; 4]) -> Case {
        self.uniforms.i[n] = v;
        self
    }

    pub fn b(mut self, n: usize, v: bool) -> Case {
        self.uniforms.b[n] = v;
        self
    }

    pub fn input(mut self, n: usize, v: [f32; 4]) -> Case {
        self.state.inputs[n] = v;
        self
    }

    pub fn temp(mut self, n: usize, v: [f32; 4]) -> Case {
        self.state.temps[n] = v;
        self
    }

    pub fn with_state(mut self, f: impl FnOnce(&mut UnitState)) -> Case {
        f(&mut self.state);
        self
    }

    /// Runs on one engine; fails if a JIT shader does not compile (no silent
    /// interpreter fallback).
    pub fn run_on(&self, engine: EngineKind) -> Outcome {
        let shader = Shader::new(self.program.clone(), self.config, engine).expect("shader");
        if let Err(e) = shader.prepare() {
            panic!("{engine} cannot prepare the program: {e}");
        }
        assert_eq!(shader.engine(), engine, "the engine that runs");
        let mut state = self.state.clone();
        let mut emits = Vec::new();
        let stop = shader.run(&self.uniforms, &mut state, &mut emits);
        Outcome { stop, state, emits }
    }

    /// Runs every JIT code variant other than the host's
    /// ([`Features::test_variants`](pica_jit::jit::Features::test_variants):
    /// the baseline instruction set, the other x86-64 code generator).
    pub fn run_jit_variants(&self) -> Vec<(&'static str, Outcome)> {
        if pica_jit::jit::host_support().is_err() {
            return Vec::new();
        }
        let mut outcomes = Vec::new();
        for (name, features) in pica_jit::jit::Features::test_variants() {
            let code = pica_jit::jit::compile_with(&self.program, &self.config, features)
                .unwrap_or_else(|e| {
                    panic!("the JIT variant ({name}) cannot compile the program: {e}")
                });
            let mut state = self.state.clone();
            let mut emits = Vec::new();
            let stop = code.run(
                &self.program,
                &self.config,
                &self.uniforms,
                &mut state,
                &mut emits,
            );
            outcomes.push((name, Outcome { stop, state, emits }));
        }
        outcomes
    }

    /// Runs on every engine (and every JIT code variant), asserts they agree bit
    /// for bit, returns the result.
    pub fn run(&self) -> Outcome {
        let reference = self.run_on(EngineKind::Interpreter);
        for engine in engines() {
            let other = self.run_on(engine);
            assert_eq!(
                fingerprint(&reference),
                fingerprint(&other),
                "engine {engine} disagrees with the interpreter"
            );
        }
        for (name, outcome) in self.run_jit_variants() {
            assert_eq!(
                fingerprint(&reference),
                fingerprint(&outcome),
                "the JIT variant ({name}) disagrees with the interpreter"
            );
        }
        reference
    }
}

pub const ONES: [f32; 4] = [1.0; 4];
pub const ZEROS: [f32; 4] = [0.0; 4];
