//! Running a [`TestCase`] on every engine and comparing what they observably do.

use super::TestCase;
use crate::arith::Vec4;
use crate::jit::{self, CompiledShader, Features};
use crate::state::{EmitSink, EmittedVertex, UnitState};
use crate::{EngineKind, Shader, Stop};
use std::fmt::{self, Write as _};

/// Two engines disagreed (or one could not prepare the program).
///
/// `Display` prints the full report: which engine, which invocation, the first
/// differing item with both values (bits and value), every other differing
/// item, the configuration, the initial state and the program listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// The engine that disagrees with the interpreter.
    pub engine: EngineKind,
    /// How it ran: `host` ([`Shader::run`]), `host batch` ([`Shader::run_batch`]
    /// with one state), `whole batch` (all states in one `run_batch`), or for the
    /// JIT an explicit code variant (`baseline`, `baseline preconverted`), or
    /// the wide engine at a width (`wide4`, `wide8`).
    pub variant: String,
    /// The invocation (0-based) where it first disagreed; `None` when the
    /// engine failed to prepare the shader.
    pub invocation: Option<usize>,
    /// The first differing item (`stop`, `o3`, `r0`, `v2`, `a0`, `aL`, `cmp`,
    /// `emits`), or `prepare`.
    pub first: String,
    /// The full report.
    pub report: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.report)
    }
}

impl std::error::Error for Mismatch {}

/// Order-sensitive 64-bit digest of the emitted vertices (no allocation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct EmitDigest {
    count: u64,
    hash: u64,
}

impl EmitDigest {
    fn mix(&mut self, word: u32) {
        self.hash = (self.hash.rotate_left(5) ^ word as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

impl EmitSink for EmitDigest {
    fn emit(&mut self, v: &EmittedVertex) {
        self.count += 1;
        self.mix(v.vertex_id as u32 | (v.primitive as u32) << 8 | (v.winding as u32) << 9);
        for reg in &v.outputs {
            for x in reg {
                self.mix(x.to_bits());
            }
        }
    }
}

struct Observation {
    start: UnitState,
    stop: Stop,
    state: UnitState,
    emits: EmitDigest,
}

/// Feeds two digests: one invocation's and the whole sequence's.
struct Tee<'a>(&'a mut EmitDigest, &'a mut EmitDigest);

impl EmitSink for Tee<'_> {
    fn emit(&mut self, v: &EmittedVertex) {
        self.0.emit(v);
        self.1.emit(v);
    }
}

/// One way of running one invocation of the case.
enum Runner {
    /// [`Shader::run`]: the interpreter, or an engine as embedders get it.
    Shader(Shader),
    /// [`Shader::run_batch`] with a one-state batch.
    Batch(Shader),
    /// An explicitly compiled JIT code variant; with `Some(uniforms)`, the
    /// pre-converted uniforms it was compiled for.
    Variant(CompiledShader, Option<Box<crate::Uniforms>>),
    /// The IR evaluator on the optimised IR (`ir::opt`, the passes every code
    /// generator lowers from), with the IR as built for the blocks it cannot
    /// run whole: `(as built, optimised)`.
    OptimisedIr(Box<(crate::ir::Ir, crate::ir::Ir)>),
}

impl Runner {
    fn run(&self, case: &TestCase, state: &mut UnitState, sink: &mut dyn EmitSink) -> Stop {
        match self {
            Runner::Shader(shader) => shader.run(&case.uniforms, state, sink),
            Runner::Batch(shader) => {
                shader.run_batch(&case.uniforms, std::slice::from_mut(state), sink)[0]
            }
            Runner::Variant(code, uniforms) => {
                let uniforms = uniforms.as_deref().unwrap_or(&case.uniforms);
                code.run(&case.program, &case.config, uniforms, state, sink)
            }
            Runner::OptimisedIr(irs) => crate::ir::eval::run_optimized(
                &irs.1,
                &irs.0,
                case.config.budget,
                &case.uniforms,
                state,
                sink,
            ),
        }
    }
}

fn observe(runner: &Runner, case: &TestCase, start: UnitState) -> Observation {
    let mut state = start.clone();
    let mut emits = EmitDigest::default();
    let stop = runner.run(case, &mut state, &mut emits);
    Observation {
        start,
        stop,
        state,
        emits,
    }
}

/// The initial state of invocation `k`, given the previous final state.
fn start_state(case: &TestCase, k: usize, previous: Option<&UnitState>) -> UnitState {
    match previous {
        Some(prev) if case.carry_state => {
            let mut s = prev.clone();
            s.inputs = case.states[k].inputs;
            s
        }
        _ => case.states[k].clone(),
    }
}

fn vec_bits_eq(a: &Vec4, b: &Vec4) -> bool {
    a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

fn fmt_vec(v: &Vec4) -> String {
    let lanes: Vec<String> = v
        .iter()
        .map(|x| format!("{:08x} ({x:e})", x.to_bits()))
        .collect();
    format!("[{}]", lanes.join(", "))
}

/// Every differing item, in report order, as (name, reference, other).
fn differences(r: &Observation, o: &Observation) -> Vec<(String, String, String)> {
    let mut d = Vec::new();
    if r.stop != o.stop {
        d.push((
            "stop".into(),
            format!("{:?}", r.stop),
            format!("{:?}", o.stop),
        ));
    }
    let files: [(&str, &[Vec4; 16], &[Vec4; 16]); 3] = [
        ("o", &r.state.outputs, &o.state.outputs),
        ("r", &r.state.temps, &o.state.temps),
        ("v", &r.state.inputs, &o.state.inputs),
    ];
    for (prefix, a, b) in files {
        for n in 0..16 {
            if !vec_bits_eq(&a[n], &b[n]) {
                d.push((format!("{prefix}{n}"), fmt_vec(&a[n]), fmt_vec(&b[n])));
            }
        }
    }
    if r.state.a0 != o.state.a0 {
        d.push((
            "a0".into(),
            format!("{:?}", r.state.a0),
            format!("{:?}", o.state.a0),
        ));
    }
    if r.state.al != o.state.al {
        d.push(("aL".into(), r.state.al.to_string(), o.state.al.to_string()));
    }
    if r.state.cmp != o.state.cmp {
        d.push((
            "cmp".into(),
            format!("{:?}", r.state.cmp),
            format!("{:?}", o.state.cmp),
        ));
    }
    if r.emits != o.emits {
        d.push((
            "emits".into(),
            format!("{} vertices", r.emits.count),
            format!("{} vertices", o.emits.count),
        ));
    }
    d
}

fn agree(r: &Observation, o: &Observation) -> bool {
    r.stop == o.stop
        && r.emits == o.emits
        && r.state.a0 == o.state.a0
        && r.state.al == o.state.al
        && r.state.cmp == o.state.cmp
        && [
            (&r.state.outputs, &o.state.outputs),
            (&r.state.temps, &o.state.temps),
            (&r.state.inputs, &o.state.inputs),
        ]
        .iter()
        .all(|(a, b)| a.iter().zip(b.iter()).all(|(x, y)| vec_bits_eq(x, y)))
}

/// Re-runs one invocation with a recording sink and describes the first
/// differing emitted vertex.
fn emit_diff(case: &TestCase, reference: &Runner, other: &Runner, start: &UnitState) -> String {
    let run = |runner: &Runner| {
        let mut state = start.clone();
        let mut sink: Vec<EmittedVertex> = Vec::new();
        runner.run(case, &mut state, &mut sink);
        sink
    };
    let (a, b) = (run(reference), run(other));
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        let same = x.vertex_id == y.vertex_id
            && x.primitive == y.primitive
            && x.winding == y.winding
            && x.outputs
                .iter()
                .zip(&y.outputs)
                .all(|(p, q)| vec_bits_eq(p, q));
        if !same {
            let mut s = format!(
                "first differing emit #{i}: interp (vtx {}, prim {}, inv {}), other (vtx {}, prim {}, inv {})\n",
                x.vertex_id, x.primitive, x.winding, y.vertex_id, y.primitive, y.winding
            );
            for n in 0..16 {
                if !vec_bits_eq(&x.outputs[n], &y.outputs[n]) {
                    let _ = writeln!(
                        s,
                        "    o{n}: interp {} vs {}",
                        fmt_vec(&x.outputs[n]),
                        fmt_vec(&y.outputs[n])
                    );
                }
            }
            return s;
        }
    }
    format!(
        "emit counts differ: interp {}, other {}\n",
        a.len(),
        b.len()
    )
}

fn describe_state(s: &UnitState) -> String {
    let mut out = String::new();
    for (prefix, regs) in [("v", &s.inputs), ("r", &s.temps), ("o", &s.outputs)] {
        for (n, v) in regs.iter().enumerate() {
            if v.iter().any(|x| x.to_bits() != 0) {
                let _ = writeln!(out, "    {prefix}{n} = {}", fmt_vec(v));
            }
        }
    }
    let _ = writeln!(out, "    a0 = {:?}, aL = {}, cmp = {:?}", s.a0, s.al, s.cmp);
    out
}

/// The JIT feature sets worth comparing on this host besides the host's own
/// (run through [`Shader`]): the SSE4.1/NEON baseline and, in F24, the
/// pre-converted-uniform variant with it (the host's is run through
/// [`Shader::run_batch`]), each unless it is one of the host's.
fn jit_variants(precision: crate::Precision) -> Vec<(String, Features)> {
    let host = Features::host();
    let batch = Features {
        preconverted_uniforms: true,
        ..host
    };
    let mut variants: Vec<(String, Features)> = Vec::new();
    let mut add = |name: &str, f: Features| {
        if f != host && f != batch && !variants.iter().any(|(_, g)| *g == f) {
            variants.push((name.to_string(), f));
        }
    };
    add("baseline", Features::baseline());
    if precision == crate::Precision::F24 {
        add(
            "baseline preconverted",
            Features {
                preconverted_uniforms: true,
                ..Features::baseline()
            },
        );
    }
    variants
}

fn prepare_failure(case: &TestCase, engine: EngineKind, variant: &str, err: String) -> Mismatch {
    Mismatch {
        engine,
        variant: variant.to_string(),
        invocation: None,
        first: "prepare".into(),
        report: format!(
            "engine {engine} ({variant}) cannot prepare the program: {err}\n{}",
            context(case)
        ),
    }
}

/// Runs `case` on the interpreter and on every other engine this host has
/// ([`EngineKind::available`]: the JIT where the host has one, and the IR
/// evaluator [`EngineKind::Ir`] everywhere) and compares, bit for bit, after every
/// invocation: the stop reason, all outputs, temporaries and inputs, `a0`, `aL`,
/// the `cmp` flags and the sequence of emitted vertices.
///
/// Each engine runs through [`Shader::run`] (for the JIT after
/// [`Shader::prepare`], so a compilation failure is reported instead of silently
/// falling back to the interpreter) and through [`Shader::run_batch`] — the
/// interpreter too, whose batch path reads pre-converted uniforms — with one
/// batch of all states when they are independent, one-state batches when
/// [`TestCase::carry_state`] is set. The JIT also runs every smaller feature set
/// ([`jit::compile_with`]: the baseline and, in F24, the baseline with
/// pre-converted uniforms, where they differ from the host's), and vertex shaders run
/// on the wide engine at every width the host has (`check_wide`: one
/// `run_batch` of all states, or with carried state one `run_vertices` batch;
/// with `PICA_WIDE_SAMPLE=N`, only the cases whose program hashes to 0 mod
/// `N`, which keeps emulated hosts' suites short).
///
/// Cheap: apart from compiling the program, each invocation copies one
/// [`UnitState`] and digests emitted vertices without storing them; the report is
/// only built on a mismatch.
pub fn run_all_engines(case: &TestCase) -> Result<(), Mismatch> {
    let reference = Runner::Shader(
        Shader::new(case.program.clone(), case.config, EngineKind::Interpreter)
            .expect("the generated entry point is inside the program"),
    );
    let mut expected: Vec<Observation> = Vec::with_capacity(case.states.len());
    let mut total = EmitDigest::default();
    for k in 0..case.states.len() {
        let start = start_state(case, k, expected.last().map(|o| &o.state));
        let mut state = start.clone();
        let mut emits = EmitDigest::default();
        let stop = reference.run(case, &mut state, &mut Tee(&mut emits, &mut total));
        expected.push(Observation {
            start,
            stop,
            state,
            emits,
        });
    }
    for engine in EngineKind::available() {
        let mut runners: Vec<(String, Runner)> = Vec::new();
        let new_shader = || {
            Shader::new(case.program.clone(), case.config, engine)
                .map_err(|e| prepare_failure(case, engine, "host", e.to_string()))
        };
        if engine != EngineKind::Interpreter {
            let shader = new_shader()?;
            shader
                .prepare()
                .map_err(|e| prepare_failure(case, engine, "host", e.to_string()))?;
            runners.push(("host".into(), Runner::Shader(shader)));
        }
        // `run_batch` silently falls back to the interpreter if the batch variant
        // does not compile: compile it here (and keep it cached meanwhile).
        let _batch_code = if engine == EngineKind::Jit {
            Some(
                jit::compile_batch(&case.program, &case.config)
                    .map_err(|e| prepare_failure(case, engine, "host batch", e.to_string()))?,
            )
        } else {
            None
        };
        if case.carry_state || case.states.len() == 1 {
            runners.push(("host batch".into(), Runner::Batch(new_shader()?)));
        } else {
            let batch = (engine, "whole batch");
            check_whole_batch(case, batch, &new_shader()?, &expected, total, &reference)?;
        }
        if engine == EngineKind::Jit
            && case.config.kind == crate::ShaderKind::Vertex
            && wide_sampled(case)
        {
            check_wide(case, &expected, total, &reference)?;
        }
        if engine == EngineKind::Ir {
            let c = &case.config;
            let built = crate::ir::Ir::build(&case.program, c.entry, c.kind, c.precision);
            let optimised = crate::ir::opt::optimize(&built);
            runners.push((
                "optimised".into(),
                Runner::OptimisedIr(Box::new((built, optimised))),
            ));
        }
        if engine == EngineKind::Jit {
            for (name, features) in jit_variants(case.config.precision) {
                let code = jit::compile_with(&case.program, &case.config, features)
                    .map_err(|e| prepare_failure(case, engine, &name, e.to_string()))?;
                let uniforms = features
                    .preconverted_uniforms
                    .then(|| Box::new(case.uniforms.converted(case.config.precision)));
                runners.push((name, Runner::Variant(code, uniforms)));
            }
        }
        for (variant, runner) in &runners {
            let mut previous: Option<UnitState> = None;
            for (k, reference_obs) in expected.iter().enumerate() {
                let start = start_state(case, k, previous.as_ref());
                let got = observe(runner, case, start);
                if !agree(reference_obs, &got) {
                    return Err(report(
                        case,
                        (engine, variant),
                        k,
                        reference_obs,
                        &got,
                        &reference,
                        runner,
                    ));
                }
                previous = Some(got.state);
            }
        }
    }
    Ok(())
}

/// The wide engine at every width this host has: all states in one
/// [`Shader::run_batch`] when they are independent, else one
/// [`Shader::run_vertices`] batch with carried state (the case's inputs per
/// vertex). Fails if the wide engine did not run.
/// Whether `check_wide` runs on `case`: every case, or with
/// `PICA_WIDE_SAMPLE=N` one in `N`, chosen by a hash of the program (the same
/// cases on every run of a seed).
fn wide_sampled(case: &TestCase) -> bool {
    use std::hash::{Hash, Hasher};
    static EVERY: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let every = *EVERY.get_or_init(|| {
        std::env::var("PICA_WIDE_SAMPLE")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(1)
    });
    if every <= 1 {
        return true;
    }
    // Fixed keys: the same choice on every run of this build.
    let mut h = std::collections::hash_map::DefaultHasher::new();
    case.program.code().hash(&mut h);
    case.config.entry.hash(&mut h);
    h.finish().is_multiple_of(every)
}

fn check_wide(
    case: &TestCase,
    expected: &[Observation],
    expected_total: EmitDigest,
    reference: &Runner,
) -> Result<(), Mismatch> {
    let engine = EngineKind::Jit;
    for width in jit::wide::Width::available() {
        let variant = format!("wide{}", width.lanes());
        let shader = Shader::new(case.program.clone(), case.config, engine)
            .and_then(|s| s.with_batch_width(Some(width)))
            .map_err(|e| prepare_failure(case, engine, &variant, e.to_string()))?;
        if shader.batch_width() != Some(width) {
            let err = "the wide engine did not compile a vertex shader".to_string();
            return Err(prepare_failure(case, engine, &variant, err));
        }
        let before = jit::wide::vertices_shaded();
        if !case.carry_state {
            let batch = (engine, variant.as_str());
            check_whole_batch(case, batch, &shader, expected, expected_total, reference)?;
            if jit::wide::vertices_shaded() - before != case.states.len() as u64 {
                let err = "run_batch did not shade every vertex on the wide engine".to_string();
                return Err(prepare_failure(case, engine, &variant, err));
            }
            check_whole_groups(case, &shader, width.lanes(), &variant)?;
            continue;
        }
        let inputs: Vec<_> = case.states.iter().map(|s| s.inputs).collect();
        let mut outputs = vec![[[0.0f32; 4]; 16]; inputs.len()];
        let mut state = case.states[0].clone();
        let summary = shader
            .run_vertices(
                &case.uniforms,
                &inputs,
                0xffff,
                &mut outputs,
                0xffff,
                crate::StatePolicy::Carry,
                &mut state,
                &mut (),
            )
            .expect("equal lengths");
        let mismatch = |k: usize, first: &str| Mismatch {
            engine,
            variant: variant.clone(),
            invocation: Some(k),
            first: first.into(),
            report: format!(
                "engine {engine} ({variant}, run_vertices with carried state) disagrees with the interpreter at vertex {k}: {first}\n{}",
                context(case)
            ),
        };
        for (k, (got, reference_obs)) in outputs.iter().zip(expected).enumerate() {
            let same = got
                .iter()
                .zip(&reference_obs.state.outputs)
                .all(|(x, y)| vec_bits_eq(x, y));
            if !same {
                return Err(mismatch(k, "outputs"));
            }
        }
        let last = expected.len() - 1;
        let final_obs = Observation {
            start: case.states[last].clone(),
            stop: expected[last].stop,
            state,
            emits: expected[last].emits,
        };
        if !agree(&expected[last], &final_obs) {
            return Err(mismatch(last, "final state"));
        }
        let stops = expected.iter().map(|o| o.stop);
        let count = |stop: Stop| stops.clone().filter(|s| *s == stop).count();
        if summary.ended != count(Stop::End)
            || summary.budget_exceeded != count(Stop::BudgetExceeded)
            || summary.ended_at_end_of_code != count(Stop::EndOfCode)
            || summary.break_outside_loop != count(Stop::BreakOutsideLoop)
        {
            return Err(mismatch(last, "stops"));
        }
    }
    Ok(())
}

/// [`Shader::run_batch`] over whole groups of `lanes` states and a tail (the
/// case's states over and over), where the batch kernel runs, against the
/// interpreter's run of each.
fn check_whole_groups(
    case: &TestCase,
    shader: &Shader,
    lanes: usize,
    variant: &str,
) -> Result<(), Mismatch> {
    let states: Vec<UnitState> = (0..2 * lanes + 1)
        .map(|k| case.states[k % case.states.len()].clone())
        .collect();
    let interp = Shader::new(case.program.clone(), case.config, EngineKind::Interpreter)
        .expect("the interpreter runs every program");
    let mut expected = states.clone();
    let mut expected_emits = EmitDigest::default();
    let expected_stops = interp.run_batch(&case.uniforms, &mut expected, &mut expected_emits);
    let mut got = states.clone();
    let mut got_emits = EmitDigest::default();
    let stops = shader.run_batch(&case.uniforms, &mut got, &mut got_emits);
    for k in 0..states.len() {
        let observe = |stop: Stop, state: &UnitState, emits: EmitDigest| Observation {
            start: states[k].clone(),
            stop,
            state: state.clone(),
            emits,
        };
        let reference_obs = observe(expected_stops[k], &expected[k], expected_emits);
        let got_obs = observe(stops[k], &got[k], got_emits);
        if !agree(&reference_obs, &got_obs) {
            let first = differences(&reference_obs, &got_obs)
                .first()
                .map_or_else(String::new, |(name, _, _)| name.clone());
            return Err(Mismatch {
                engine: EngineKind::Jit,
                variant: variant.into(),
                invocation: Some(k),
                first: first.clone(),
                report: format!(
                    "engine jit ({variant}, run_batch of {} states: whole groups and a tail) disagrees with the interpreter at state {k} ({first})\n{}",
                    states.len(),
                    context(case)
                ),
            });
        }
    }
    Ok(())
}

/// [`Shader::run_batch`] over all (independent) states at once: per-state stops
/// and states, and the emitted sequence as a whole.
fn check_whole_batch(
    case: &TestCase,
    (engine, variant): (EngineKind, &str),
    shader: &Shader,
    expected: &[Observation],
    expected_total: EmitDigest,
    reference: &Runner,
) -> Result<(), Mismatch> {
    let mut states = case.states.clone();
    let mut total = EmitDigest::default();
    let stops = shader.run_batch(&case.uniforms, &mut states, &mut total);
    assert_eq!(
        stops.len(),
        states.len(),
        "run_batch returns one stop per state"
    );
    for (k, ((stop, state), reference_obs)) in
        stops.into_iter().zip(states).zip(expected).enumerate()
    {
        let got = Observation {
            start: case.states[k].clone(),
            stop,
            state,
            // Emits are only available for the batch as a whole (below).
            emits: reference_obs.emits,
        };
        if !agree(reference_obs, &got) {
            let runner = Runner::Batch(
                Shader::new(case.program.clone(), case.config, engine).expect("shader"),
            );
            return Err(report(
                case,
                (engine, variant),
                k,
                reference_obs,
                &got,
                reference,
                &runner,
            ));
        }
    }
    if total != expected_total {
        return Err(Mismatch {
            engine,
            variant: variant.into(),
            invocation: None,
            first: "emits".into(),
            report: format!(
                "engine {engine} ({variant}) emits {} vertices over the batch, the interpreter (one run per state) {}, or different ones\n{}",
                total.count,
                expected_total.count,
                context(case)
            ),
        });
    }
    Ok(())
}

fn context(case: &TestCase) -> String {
    let c = &case.config;
    let mut s = format!(
        "config: entry {}, {:?} unit, {:?}, budget {}, {} invocation(s){}\n",
        c.entry,
        c.kind,
        c.precision,
        c.budget,
        case.states.len(),
        if case.carry_state {
            " carrying state"
        } else {
            ""
        }
    );
    s += "program:\n";
    for line in case.listing().lines() {
        let _ = writeln!(s, "    {line}");
    }
    s
}

fn report(
    case: &TestCase,
    (engine, variant): (EngineKind, &str),
    k: usize,
    r: &Observation,
    o: &Observation,
    reference: &Runner,
    other: &Runner,
) -> Mismatch {
    let diffs = differences(r, o);
    let first = diffs
        .first()
        .map(|d| d.0.clone())
        .unwrap_or_else(|| "?".into());
    let mut s = format!(
        "engine {engine} ({variant} code) disagrees with the interpreter on invocation {k} (of {}): first difference {first}\n",
        case.states.len()
    );
    for (name, a, b) in &diffs {
        let _ = writeln!(s, "  {name}:\n    interp: {a}\n    {engine:<6}: {b}");
    }
    let _ = writeln!(s, "  stop: interp {:?}, {engine} {:?}", r.stop, o.stop);
    if r.emits != o.emits {
        s += "  ";
        s += &emit_diff(case, reference, other, &o.start);
    }
    s += &context(case);
    let _ = writeln!(s, "initial state of invocation {k}:");
    s += &describe_state(&o.start);
    s += "uniforms (non-zero):\n";
    for (n, v) in case.uniforms.f.iter().enumerate() {
        if v.iter().any(|x| x.to_bits() != 0) {
            let _ = writeln!(s, "    c{n} = {}", fmt_vec(v));
        }
    }
    let _ = writeln!(
        s,
        "    i = {:?}, b = {:?}",
        case.uniforms.i,
        case.uniforms
            .b
            .iter()
            .enumerate()
            .filter(|(_, b)| **b)
            .map(|(n, _)| n)
            .collect::<Vec<_>>()
    );
    Mismatch {
        engine,
        variant: variant.to_string(),
        invocation: Some(k),
        first,
        report: s,
    }
}
