//! Every real-world shader (the `../shared/corpus` SHBINs plus the embedded default
//! shader), every DVLE, both precisions, on every engine this host has: 1,000
//! random vertices each, with random uniforms, and the engines must agree bit for
//! bit on outputs, temporaries, `a0`, `aL`, `cmp`, emitted vertices and the stop
//! reason after every vertex. On hosts where the JIT uses optional instructions
//! (AVX), its baseline variant (SSE4.1) is compared too.
//!
//! Inputs are mostly ordinary numbers, so the shaders' real paths run, with
//! special values mixed in (±0, ±inf, NaNs with payloads, float24 and float32
//! subnormals, values too large for float24). The unit state is carried across
//! vertices in one variant (the hardware keeps temporaries, `a0`, `aL` and `cmp`
//! between invocations) and reset for every vertex in another; a third variant
//! runs with tiny budgets so budget stops land in the middle of programs.
//!
//! The corpus is skipped, with a note, when the folder is absent.

#[path = "support/corpus_skip.rs"]
mod corpus_skip;

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use pica_jit::jit::{self, CompiledShader, Features};
use pica_jit::shbin::{ConstantValue, Dvle, Shbin};
use pica_jit::{
    EmittedVertex, EngineKind, Precision, Program, Shader, ShaderConfig, Stop, Uniforms, UnitState,
};

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus");

/// Vertices per (file, DVLE, precision) in the carried-state and reset variants.
const VERTICES: usize = 1000;
/// Vertices per budget in the tiny-budget variant.
const BUDGET_VERTICES: usize = 100;
/// Budgets of the tiny-budget variant (instructions per invocation).
const TINY_BUDGETS: [u64; 3] = [1, 7, 23];
/// A new set of random uniforms every this many vertices (one "draw call").
const DRAW: usize = 10;

// ---------------------------------------------------------------------------
// Deterministic random numbers

/// xorshift64* — tiny, deterministic, good enough for test inputs.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        // Never zero; mix the seed so nearby seeds diverge at once.
        let mut rng = Rng((seed ^ 0x9e37_79b9_7f4a_7c15) | 1);
        for _ in 0..4 {
            rng.next();
        }
        rng
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn u32(&mut self) -> u32 {
        (self.next() >> 32) as u32
    }

    /// Uniform in `0..n` (n > 0).
    fn below(&mut self, n: u32) -> u32 {
        ((self.u32() as u64 * n as u64) >> 32) as u32
    }

    /// True with probability `percent`/100.
    fn chance(&mut self, percent: u32) -> bool {
        self.below(100) < percent
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f32 {
        (self.u32() >> 8) as f32 / (1u32 << 24) as f32
    }

    fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.unit()
    }

    fn sign(&mut self) -> u32 {
        self.u32() & 0x8000_0000
    }
}

/// FNV-1a, so seeds depend on file names, not directory order.
fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// An ordinary number of the kind real vertex data holds.
fn ordinary(rng: &mut Rng) -> f32 {
    match rng.below(10) {
        0..=3 => rng.range(-100.0, 100.0),
        4..=6 => rng.range(-1.0, 1.0),
        7 => rng.range(0.0, 1.0),
        // Small integers: flr, cmp and address-register paths.
        8 => rng.below(17) as f32 - 8.0,
        _ => [0.0, 1.0, -1.0, 0.5, 2.0][rng.below(5) as usize],
    }
}

/// A value that exercises a special case of the arithmetic.
fn special(rng: &mut Rng) -> f32 {
    let bits = match rng.below(12) {
        0 => 0x0000_0000,
        1 => 0x8000_0000,
        2 => 0x7f80_0000,
        3 => 0xff80_0000,
        // NaNs: canonical, signalling, with payloads, either sign.
        4 => 0x7fc0_0000 | rng.sign(),
        5 => 0x7f80_0000 | rng.sign() | (1 + rng.below(0x007f_ffff)),
        // float32 subnormals.
        6 => rng.sign() | (1 + rng.below(0x007f_ffff)),
        // Normal float32 values below float24's smallest normal (2^-62): exponent
        // 2^-126 .. 2^-63.
        7 => rng.sign() | ((1 + rng.below(63)) << 23) | rng.below(0x0080_0000),
        // Around float24's smallest normal, 2^-64 .. 2^-60.
        8 => rng.sign() | ((127 - 64 + rng.below(5)) << 23) | rng.below(0x0080_0000),
        // Too large for float24 (> ~1.8e19) but finite in float32.
        9 => rng.sign() | ((127 + 64 + rng.below(63)) << 23) | rng.below(0x0080_0000),
        // Extremes of float32.
        10 => {
            [0x7f7f_ffff, 0x0080_0000, 0x3f80_0001, 0x5f00_0000][rng.below(4) as usize] | rng.sign()
        }
        // Anything at all.
        _ => rng.u32(),
    };
    f32::from_bits(bits)
}

/// A four-component value; `dirty` mixes special values in.
fn vec4(rng: &mut Rng, dirty: bool) -> [f32; 4] {
    // Plain loop rather than `array::from_fn`: this runs ~100 times per vertex and
    // the suite must stay fast in debug builds.
    let mut v = [0.0; 4];
    for x in &mut v {
        *x = if dirty && rng.chance(10) {
            special(rng)
        } else {
            ordinary(rng)
        };
    }
    v
}

/// Random uniforms for one draw: the DVLE's constants, then random values over
/// some or all of them (sometimes the constants are kept, sometimes overwritten).
fn random_uniforms(rng: &mut Rng, dvle: &Dvle) -> Uniforms {
    let mut u = Uniforms::default();
    let keep_constants = rng.chance(70);
    let dirty = rng.chance(15);
    for n in 0..u.f.len() {
        u.f[n] = vec4(rng, dirty);
    }
    for i in &mut u.i {
        // Mostly short loops; sometimes the full 8-bit range (256 iterations).
        let count = if rng.chance(85) {
            rng.below(6)
        } else {
            rng.below(256)
        } as u8;
        let start = if rng.chance(70) {
            rng.below(4)
        } else {
            rng.below(256)
        } as u8;
        let step = match rng.below(4) {
            0 => 0,
            1 | 2 => 1 + rng.below(2),
            _ => rng.below(256),
        } as u8;
        *i = [count, start, step, rng.below(256) as u8];
    }
    for b in &mut u.b {
        *b = rng.chance(50);
    }
    u.apply_constants(&dvle.constants);
    if !keep_constants {
        // Overwrite about half of the DVLE's constants with random values.
        for entry in &dvle.constants {
            if !rng.chance(50) {
                continue;
            }
            let n = entry.register as usize;
            match entry.value {
                ConstantValue::Float(_) if n < u.f.len() => u.f[n] = vec4(rng, true),
                ConstantValue::Int(_) if n < u.i.len() => {
                    u.i[n] = std::array::from_fn(|_| rng.below(256) as u8)
                }
                ConstantValue::Bool(_) if n < u.b.len() => u.b[n] = !u.b[n],
                _ => {}
            }
        }
    }
    u
}

// ---------------------------------------------------------------------------
// Comparison

/// The observable result of one invocation on one engine.
struct Run {
    stop: Stop,
    state: UnitState,
    emits: Vec<EmittedVertex>,
}

/// Everything observable, as bits (the fast path of the comparison).
fn fingerprint(r: &Run) -> Vec<u32> {
    let s = &r.state;
    let mut v = Vec::with_capacity(140 + r.emits.len() * 67);
    v.push(r.stop as u32);
    for reg in s.outputs.iter().chain(&s.temps) {
        for x in reg {
            v.push(x.to_bits());
        }
    }
    v.extend([s.a0[0] as u32, s.a0[1] as u32, s.al as u32]);
    v.extend([s.cmp[0] as u32, s.cmp[1] as u32, r.emits.len() as u32]);
    for e in &r.emits {
        v.extend([e.vertex_id as u32, e.primitive as u32, e.winding as u32]);
        for reg in &e.outputs {
            for x in reg {
                v.push(x.to_bits());
            }
        }
    }
    v
}

/// Everything observable as (name, bits) pairs, in a fixed order.
fn observables(r: &Run) -> Vec<(String, u64)> {
    const XYZW: [char; 4] = ['x', 'y', 'z', 'w'];
    let s = &r.state;
    let mut v = vec![("stop".to_owned(), r.stop as u64)];
    for (prefix, regs) in [("o", &s.outputs), ("r", &s.temps)] {
        for (n, reg) in regs.iter().enumerate() {
            for (c, x) in reg.iter().enumerate() {
                v.push((format!("{prefix}{n}.{}", XYZW[c]), x.to_bits() as u64));
            }
        }
    }
    v.push(("a0.x".to_owned(), s.a0[0] as u32 as u64));
    v.push(("a0.y".to_owned(), s.a0[1] as u32 as u64));
    v.push(("aL".to_owned(), s.al as u32 as u64));
    v.push(("cmp.x".to_owned(), s.cmp[0] as u64));
    v.push(("cmp.y".to_owned(), s.cmp[1] as u64));
    v.push(("emit count".to_owned(), r.emits.len() as u64));
    for (k, e) in r.emits.iter().enumerate() {
        v.push((format!("emit[{k}].vertex_id"), e.vertex_id as u64));
        v.push((format!("emit[{k}].primitive"), e.primitive as u64));
        v.push((format!("emit[{k}].winding"), e.winding as u64));
        for (n, reg) in e.outputs.iter().enumerate() {
            for (c, x) in reg.iter().enumerate() {
                v.push((format!("emit[{k}].o{n}.{}", XYZW[c]), x.to_bits() as u64));
            }
        }
    }
    v
}

/// `None` when the runs agree, else a description of the first difference.
fn first_difference(reference: &Run, other: &Run) -> Option<String> {
    if fingerprint(reference) == fingerprint(other) {
        return None;
    }
    let (a, b) = (observables(reference), observables(other));
    for ((name, x), (_, y)) in a.iter().zip(&b) {
        if x != y {
            return Some(match name.as_str() {
                "stop" => format!("stop: {:?} vs {:?}", reference.stop, other.stop),
                "emit count" | "aL" | "a0.x" | "a0.y" | "cmp.x" | "cmp.y" => {
                    format!("{name}: {} vs {}", *x as i64 as i32, *y as i64 as i32)
                }
                _ => format!(
                    "{name}: {:#010x} ({}) vs {:#010x} ({})",
                    x,
                    f32::from_bits(*x as u32),
                    y,
                    f32::from_bits(*y as u32)
                ),
            });
        }
    }
    (a.len() != b.len()).then(|| "different number of emitted vertices".to_owned())
}

fn inputs_text(inputs: &[[f32; 4]; 16]) -> String {
    let mut s = String::new();
    for (n, reg) in inputs.iter().enumerate() {
        let bits = reg.map(f32::to_bits);
        let _ = write!(
            s,
            "\n      v{n} = [{:08x} {:08x} {:08x} {:08x}]",
            bits[0], bits[1], bits[2], bits[3]
        );
    }
    s
}

// ---------------------------------------------------------------------------
// Driver

/// One way of running a shader: an engine, or a JIT code variant other than the
/// one the host picks.
enum Runner {
    Engine(Shader),
    /// A JIT code variant other than the host's (`Features::test_variants`:
    /// the baseline instruction set).
    Variant(&'static str, CompiledShader),
}

impl Runner {
    fn name(&self) -> String {
        match self {
            Runner::Engine(shader) => shader.engine().to_string(),
            Runner::Variant(name, _) => format!("jit ({name})"),
        }
    }

    fn run(
        &self,
        program: &Program,
        config: &ShaderConfig,
        uniforms: &Uniforms,
        state: &mut UnitState,
        sink: &mut Vec<EmittedVertex>,
    ) -> Stop {
        match self {
            Runner::Engine(shader) => shader.run(uniforms, state, sink),
            Runner::Variant(_, code) => code.run(program, config, uniforms, state, sink),
        }
    }
}

/// Every engine in `engines` (the interpreter first) plus the baseline JIT
/// variant when it differs from the host's. JIT shaders are compiled here: a
/// compilation failure would otherwise fall back to the interpreter silently.
fn runners(
    program: &Arc<Program>,
    config: ShaderConfig,
    engines: &[EngineKind],
) -> Result<Vec<Runner>, String> {
    let mut runners = Vec::new();
    for &engine in engines {
        let shader = Shader::new(program.clone(), config, engine)
            .map_err(|e| format!("cannot create a {engine} shader: {e}"))?;
        shader
            .prepare()
            .map_err(|e| format!("cannot prepare the {engine} shader: {e}"))?;
        runners.push(Runner::Engine(shader));
    }
    if engines.contains(&EngineKind::Jit) {
        for (name, features) in Features::test_variants() {
            let code = jit::compile_with(program, &config, features)
                .map_err(|e| format!("cannot compile the JIT variant ({name}): {e}"))?;
            check_generator(&code, name)?;
            runners.push(Runner::Variant(name, code));
        }
        // The host's own variant (run through `Shader` above) too.
        let host = Features::host();
        let code = jit::compile_with(program, &config, host)
            .map_err(|e| format!("cannot compile the host's JIT variant: {e}"))?;
        check_generator(&code, "host")?;
    }
    Ok(runners)
}

/// Every variant's data instructions were lowered from the shared IR (the
/// only code generator on every host: none falls back to anything else).
fn check_generator(code: &CompiledShader, name: &str) -> Result<(), String> {
    if !code.lowered_from_ir() {
        return Err(format!(
            "the JIT variant ({name}) was not lowered from the IR"
        ));
    }
    Ok(())
}

#[derive(Clone, Copy, Debug)]
enum Variant {
    /// One `UnitState` per engine for the whole batch (hardware behaviour).
    Carry,
    /// Every vertex starts from `UnitState::default()`.
    Reset,
    /// Reset state, tiny budget: stops land mid-program, and the JIT's hand-over
    /// to the interpreter runs.
    TinyBudget(u64),
}

struct Totals {
    invocations: usize,
    failures: Vec<String>,
}

/// Runs one (program, DVLE, precision, variant) batch on every engine.
#[allow(clippy::too_many_arguments)]
fn run_batch(
    file: &str,
    dvle_index: usize,
    dvle: &Dvle,
    program: &Arc<Program>,
    precision: Precision,
    variant: Variant,
    engines: &[EngineKind],
    totals: &mut Totals,
) {
    let (budget, vertices) = match variant {
        Variant::TinyBudget(b) => (b, BUDGET_VERTICES),
        _ => (pica_jit::DEFAULT_BUDGET, VERTICES),
    };
    let config = ShaderConfig {
        entry: dvle.main,
        kind: dvle.kind,
        precision,
        budget,
    };
    let context = format!("{file}, DVLE {dvle_index}, {precision:?}, {variant:?}");
    let runners = match runners(program, config, engines) {
        Ok(r) => r,
        Err(e) => {
            totals.failures.push(format!("{context}: {e}"));
            return;
        }
    };
    let seed = fnv(file)
        ^ ((dvle_index as u64) << 40)
        ^ ((precision as u64) << 48)
        ^ fnv(&format!("{variant:?}"));
    let mut rng = Rng::new(seed);
    let mut states: Vec<UnitState> = vec![UnitState::default(); runners.len()];
    let mut uniforms = Uniforms::default();
    for vertex in 0..vertices {
        if vertex % DRAW == 0 {
            uniforms = random_uniforms(&mut rng, dvle);
        }
        let dirty = rng.chance(25);
        let mut inputs = [[0.0f32; 4]; 16];
        for reg in &mut inputs {
            *reg = vec4(&mut rng, dirty);
        }
        let mut runs = Vec::with_capacity(runners.len());
        for (runner, state) in runners.iter().zip(&mut states) {
            if !matches!(variant, Variant::Carry) {
                *state = UnitState::default();
            }
            state.inputs = inputs;
            let mut emits = Vec::new();
            let stop = runner.run(program, &config, &uniforms, state, &mut emits);
            runs.push(Run {
                stop,
                state: state.clone(),
                emits,
            });
        }
        totals.invocations += runs.len();
        for (k, run) in runs.iter().enumerate().skip(1) {
            if let Some(diff) = first_difference(&runs[0], run) {
                totals.failures.push(format!(
                    "{context}, vertex {vertex} (seed {seed:#018x}): {} vs {} differ at {diff}\n    \
                     uniforms: i = {:?}, b = {:?}\n    inputs:{}",
                    runners[0].name(),
                    runners[k].name(),
                    uniforms.i,
                    uniforms.b,
                    inputs_text(&inputs)
                ));
                // One report per batch: later vertices would only repeat it (and in
                // the carried variant the states have diverged anyway).
                return;
            }
        }
    }
}

/// Runs every DVLE of one SHBIN in both precisions and all variants.
fn check_file(file: &str, bytes: &[u8], engines: &[EngineKind], totals: &mut Totals) {
    let shbin = match Shbin::parse(bytes) {
        Ok(s) => s,
        Err(e) => {
            totals.failures.push(format!("{file}: does not parse: {e}"));
            return;
        }
    };
    let program = match Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone()) {
        Ok(p) => Arc::new(p),
        Err(e) => {
            totals.failures.push(format!("{file}: bad program: {e}"));
            return;
        }
    };
    for (dvle_index, dvle) in shbin.dvles.iter().enumerate() {
        if dvle.main as usize >= program.len() {
            println!(
                "{file}: DVLE {dvle_index} entry {:#x} is outside the code; skipped",
                dvle.main
            );
            continue;
        }
        for precision in [Precision::F24, Precision::F32] {
            let variants = [Variant::Carry, Variant::Reset]
                .into_iter()
                .chain(TINY_BUDGETS.map(Variant::TinyBudget));
            for variant in variants {
                run_batch(
                    file, dvle_index, dvle, &program, precision, variant, engines, totals,
                );
            }
        }
    }
}

fn engines() -> Vec<EngineKind> {
    let engines = EngineKind::available();
    assert_eq!(
        engines[0],
        EngineKind::Interpreter,
        "the interpreter is the reference"
    );
    if engines.len() == 1 {
        println!("only the interpreter is available on this host; nothing to compare it with");
    }
    engines
}

fn finish(what: &str, totals: Totals) {
    println!("{what}: {} invocations compared", totals.invocations);
    if !totals.failures.is_empty() {
        panic!(
            "{what}: engines disagree in {} batch(es):\n  {}",
            totals.failures.len(),
            totals.failures.join("\n  ")
        );
    }
}

#[test]
fn default_shader_on_every_engine() {
    let engines = engines();
    let mut totals = Totals {
        invocations: 0,
        failures: Vec::new(),
    };
    check_file(
        "<embedded default shader>",
        pica_jit::DEFAULT_SHADER,
        &engines,
        &mut totals,
    );
    finish("default shader", totals);
}

#[test]
fn corpus_on_every_engine() {
    let dir = Path::new(CORPUS);
    if !dir.is_dir() {
        corpus_skip::corpus_absent("corpus_on_every_engine", CORPUS);
        return;
    }
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("corpus dir")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "shbin"))
        .collect();
    files.sort();
    let engines = engines();
    // Files are independent: check them on every core (the suite stays fast in
    // debug builds), then report in file order.
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(files.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut per_file: Vec<(usize, Totals)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(path) = files.get(k) else { break };
                        let name = path.file_name().unwrap().to_string_lossy();
                        let bytes = std::fs::read(path).expect("read corpus file");
                        let mut totals = Totals {
                            invocations: 0,
                            failures: Vec::new(),
                        };
                        check_file(&name, &bytes, &engines, &mut totals);
                        done.push((k, totals));
                    }
                    done
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("corpus worker panicked"))
            .collect()
    });
    per_file.sort_by_key(|(k, _)| *k);
    let mut totals = Totals {
        invocations: 0,
        failures: Vec::new(),
    };
    for (_, t) in per_file {
        totals.invocations += t.invocations;
        totals.failures.extend(t.failures);
    }
    println!("corpus: {} files", files.len());
    finish("corpus", totals);
}
