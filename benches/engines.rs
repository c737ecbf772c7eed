//! Interpreter vs JIT: nanoseconds per vertex and compile time.
//!
//! Groups (run with `cargo bench --bench engines`; `-- --test` runs each once):
//!
//! - `default_shader`: the embedded default shader (transform + Blinn-Phong, one
//!   light loop over two lights, a subroutine, an `ifu`) with the uniforms of
//!   `examples/demo.json`, 1,000 vertices per iteration, both precisions, every
//!   engine on this host, and the JIT's baseline (SSE4.1) code variant when the
//!   host's own variant uses AVX (`jit-baseline`); `batch/*` through
//!   `Shader::run_batch`, and `vertices/*` through `Shader::run_vertices`
//!   (each vertex from the given state) one vertex at a time on the JIT
//!   (`single`) and on the wide engine at every width the host has
//!   (`wide4`, `wide8`).
//! - `overhead`: a program that is a single `end`, i.e. the fixed cost of one
//!   invocation (entry conversion, frame set-up, FP-environment switch).
//! - `corpus`: the first DVLE of every `../shared/corpus` SHBIN (skipped when the
//!   folder is absent), same batch, both precisions, every engine.
//! - `compile`: `pica_jit::jit::compile_uncached` (analysis, code generation,
//!   copy into executable pages; the dropped region goes back to the page pool
//!   inside the timed loop) for the default shader and every corpus file (F24),
//!   and in both precisions the default shader and the assembled corpus's
//!   programs slowest to compile (`SLOWEST_TO_COMPILE`: the tail compare.sh
//!   reports).
//!
//! Per-vertex groups report `Throughput::Elements(1000)`, so criterion prints
//! vertices per second; time per iteration / 1000 is ns per vertex. Every
//! `Shader` (and for the JIT its native code) is prepared outside the timed loop;
//! the unit state is carried across vertices as on hardware, and each vertex
//! copies its input registers into the state, as an embedder would.
//!
//! Timing uses the benchmark thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`) so
//! that numbers from a shared machine stay comparable; `PICA_BENCH_WALL=1`
//! switches to wall-clock time.

mod support;

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use pica_jit::isa::{Instruction, encode};
use pica_jit::jit::wide::Width;
use pica_jit::jit::{CompiledShader, Features};
use pica_jit::shbin::{Dvle, Shbin};
use pica_jit::{
    EmitSink, EmittedVertex, EngineKind, Precision, Program, Shader, ShaderConfig, ShaderKind,
    StatePolicy, Stop, Uniforms, UnitState, Vec4,
};
use support::{Rng, corpus_files, measure};

/// Vertices per timed iteration.
const BATCH: usize = 1000;

const PRECISIONS: [Precision; 2] = [Precision::F24, Precision::F32];

fn precision_name(p: Precision) -> &'static str {
    match p {
        Precision::F24 => "f24",
        Precision::F32 => "f32",
    }
}

type Vertex = [Vec4; 16];

/// One loaded DVLE, ready to benchmark.
struct Subject {
    name: String,
    program: Arc<Program>,
    dvle: Dvle,
    uniforms: Uniforms,
    vertices: Vec<Vertex>,
}

impl Subject {
    fn config(&self, precision: Precision) -> ShaderConfig {
        ShaderConfig {
            entry: self.dvle.main,
            kind: self.dvle.kind,
            precision,
            ..ShaderConfig::default()
        }
    }
}

fn load(name: &str, bytes: &[u8]) -> Option<(Arc<Program>, Dvle)> {
    let shbin = match Shbin::parse(bytes) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{name}: does not parse ({e}); skipped");
            return None;
        }
    };
    let program = match Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone()) {
        Ok(p) => Arc::new(p),
        Err(e) => {
            eprintln!("{name}: bad program ({e}); skipped");
            return None;
        }
    };
    let dvle = shbin.dvles.into_iter().next()?;
    Some((program, dvle))
}

/// The embedded default shader with `examples/demo.json`'s uniforms (two
/// lights after the DVLE's `i0 = (1, 0, 2, 0)`), and 1,000 plausible vertices:
/// positions in front of the camera, unit normals, colours, texture coordinates.
fn default_subject() -> Subject {
    let (program, dvle) = load("default shader", pica_jit::DEFAULT_SHADER).expect("default shader");
    let mut u = Uniforms::default();
    u.apply_constants(&dvle.constants);
    support::apply_demo_uniforms(&mut u);
    let mut rng = Rng(0x5eed_0001);
    let vertices = (0..BATCH).map(|_| rng.demo_vertex()).collect();
    Subject {
        name: "default".to_owned(),
        program,
        dvle,
        uniforms: u,
        vertices,
    }
}

/// The first DVLE of a corpus file. Uniforms: identity-matrix rows in every float
/// register (projection/modelview/texture matrices are the common layout), then
/// the DVLE's constants; short loops. Inputs: a position in `[-1, 1]` with w = 1,
/// everything else in `[0, 1]`.
fn corpus_subject(path: &Path) -> Option<Subject> {
    let name = path.file_stem()?.to_string_lossy().into_owned();
    let bytes = std::fs::read(path).ok()?;
    let (program, dvle) = load(&name, &bytes)?;
    if dvle.main as usize >= program.len() {
        eprintln!("{name}: entry point outside the code; skipped");
        return None;
    }
    let mut u = Uniforms::default();
    for (n, f) in u.f.iter_mut().enumerate() {
        let mut row = [0.0; 4];
        row[n % 4] = 1.0;
        *f = row;
    }
    u.i = [[3, 0, 1, 0]; 4];
    u.apply_constants(&dvle.constants);
    let mut rng = Rng(0x5eed_0002 ^ name.len() as u64);
    let vertices = (0..BATCH).map(|_| rng.generic_vertex()).collect();
    Some(Subject {
        name,
        program,
        dvle,
        uniforms: u,
        vertices,
    })
}

/// How a benchmark runs the shader: an engine's `Shader`, or the JIT compiled for
/// the baseline instruction set.
enum Runner {
    Engine(Shader),
    BaselineJit(CompiledShader),
}

impl Runner {
    #[inline(always)]
    fn run(
        &self,
        subject: &Subject,
        config: &ShaderConfig,
        state: &mut UnitState,
        sink: &mut dyn EmitSink,
    ) -> Stop {
        match self {
            Runner::Engine(shader) => shader.run(&subject.uniforms, state, sink),
            Runner::BaselineJit(code) => {
                code.run(&subject.program, config, &subject.uniforms, state, sink)
            }
        }
    }
}

/// Every engine on this host (JIT code compiled up front), and with `baseline`
/// the JIT's baseline (SSE4.1) variant when the host's own variant differs.
fn runners(subject: &Subject, config: ShaderConfig, baseline: bool) -> Vec<(String, Runner)> {
    let mut runners = Vec::new();
    // The IR evaluator is a verification engine, not worth measuring.
    for engine in EngineKind::available()
        .into_iter()
        .filter(|&e| e != EngineKind::Ir)
    {
        let shader = match Shader::new(subject.program.clone(), config, engine) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("{}: {engine} unavailable ({e}); skipped", subject.name);
                continue;
            }
        };
        // Compile now, outside the timed loop (a failure would otherwise fall back
        // to the interpreter silently).
        if let Err(e) = shader.prepare() {
            eprintln!("{}: {engine} cannot prepare ({e}); skipped", subject.name);
            continue;
        }
        runners.push((engine.name().to_owned(), Runner::Engine(shader)));
    }
    if baseline && pica_jit::jit::host_support().is_ok() && Features::host() != Features::baseline()
    {
        match pica_jit::jit::compile_with(&subject.program, &config, Features::baseline()) {
            Ok(code) => runners.push(("jit-baseline".to_owned(), Runner::BaselineJit(code))),
            Err(e) => eprintln!("{}: baseline JIT does not compile ({e})", subject.name),
        }
    }
    runners
}

/// Benchmarks `BATCH` invocations of `subject` per iteration on every engine and
/// precision, inside `group`.
fn bench_vertices(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    subject: &Subject,
    id_prefix: &str,
    baseline: bool,
) {
    for precision in PRECISIONS {
        let config = subject.config(precision);
        for (name, runner) in runners(subject, config, baseline) {
            let id = BenchmarkId::new(format!("{id_prefix}{}", precision_name(precision)), name);
            let geometry = subject.dvle.kind == ShaderKind::Geometry;
            group.bench_function(id, |b| {
                let mut state = UnitState::default();
                let mut emits: Vec<EmittedVertex> = Vec::new();
                measure(b, || {
                    for vertex in &subject.vertices {
                        state.inputs = *vertex;
                        let stop = if geometry {
                            emits.clear();
                            runner.run(subject, &config, &mut state, &mut emits)
                        } else {
                            runner.run(subject, &config, &mut state, &mut ())
                        };
                        black_box((stop, &state.outputs));
                    }
                });
            });
        }
    }
}

fn default_shader(c: &mut Criterion) {
    let subject = default_subject();
    let mut group = c.benchmark_group("default_shader");
    group
        .throughput(Throughput::Elements(BATCH as u64))
        .sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    bench_vertices(&mut group, &subject, "", true);
    // The same vertices through `Shader::run_batch` (per-draw work once).
    for precision in PRECISIONS {
        let config = subject.config(precision);
        for engine in EngineKind::available()
            .into_iter()
            .filter(|&e| e != EngineKind::Ir)
        {
            let Ok(shader) = Shader::new(subject.program.clone(), config, engine) else {
                continue;
            };
            if shader.prepare().is_err() {
                continue;
            }
            let id = BenchmarkId::new(
                format!("batch/{}", precision_name(precision)),
                engine.name(),
            );
            let mut states: Vec<UnitState> = subject
                .vertices
                .iter()
                .map(|v| UnitState {
                    inputs: *v,
                    ..UnitState::default()
                })
                .collect();
            group.bench_function(id, |b| {
                measure(b, || {
                    for (state, vertex) in states.iter_mut().zip(&subject.vertices) {
                        state.inputs = *vertex;
                    }
                    let stops = shader.run_batch(&subject.uniforms, &mut states, &mut ());
                    black_box((stops, &states[0].outputs));
                });
            });
        }
    }
    // The emulator's layout (`run_vertices`, each vertex from the given
    // state, the outputs the DVLE declares, as an emulator's output map asks
    // for them): one vertex at a time on the JIT, then the wide engine at
    // every width this host has.
    let output_mask = match subject.dvle.output_mask {
        0 => 0xffff,
        mask => mask,
    };
    if pica_jit::jit::host_support().is_ok() {
        for precision in PRECISIONS {
            let config = subject.config(precision);
            let mut widths: Vec<Option<Width>> = vec![None];
            widths.extend(Width::available().into_iter().map(Some));
            for width in widths {
                let shader = Shader::new(subject.program.clone(), config, EngineKind::Jit)
                    .and_then(|s| s.with_batch_width(width))
                    .expect("JIT shader");
                shader.prepare().expect("JIT compiles");
                assert_eq!(shader.batch_width(), width, "the width asked for must run");
                let name = match width {
                    None => "single".to_owned(),
                    Some(w) => format!("wide{}", w.lanes()),
                };
                let id = BenchmarkId::new(format!("vertices/{}", precision_name(precision)), name);
                let mut outputs = vec![[[0.0f32; 4]; 16]; subject.vertices.len()];
                let mut state = UnitState::default();
                group.bench_function(id, |b| {
                    measure(b, || {
                        let summary = shader
                            .run_vertices(
                                &subject.uniforms,
                                &subject.vertices,
                                0xffff,
                                &mut outputs,
                                output_mask,
                                StatePolicy::Reset,
                                &mut state,
                                &mut (),
                            )
                            .expect("equal lengths");
                        black_box((summary, &outputs[0]));
                    });
                });
            }
        }
    }
    group.finish();
}

/// The fixed cost of one invocation: a program that is a single `end`.
fn overhead(c: &mut Criterion) {
    let program = Program::new(vec![encode(&Instruction::End).expect("encode end")], vec![])
        .expect("program");
    let mut vertices = Vec::with_capacity(BATCH);
    let mut rng = Rng(0x5eed_0003);
    for _ in 0..BATCH {
        let mut v: Vertex = [[0.0; 4]; 16];
        v[0] = std::array::from_fn(|_| rng.range(-1.0, 1.0));
        vertices.push(v);
    }
    let subject = Subject {
        name: "end".to_owned(),
        program: Arc::new(program),
        dvle: Dvle::default(),
        uniforms: Uniforms::default(),
        vertices,
    };
    let mut group = c.benchmark_group("overhead");
    group.throughput(Throughput::Elements(BATCH as u64));
    bench_vertices(&mut group, &subject, "end/", false);
    group.finish();
}

fn corpus(c: &mut Criterion) {
    let subjects: Vec<Subject> = corpus_files()
        .iter()
        .filter_map(|p| corpus_subject(p))
        .collect();
    if subjects.is_empty() {
        return;
    }
    let mut group = c.benchmark_group("corpus");
    group
        .throughput(Throughput::Elements(BATCH as u64))
        .sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    for subject in &subjects {
        bench_vertices(&mut group, subject, &format!("{}/", subject.name), false);
    }
    group.finish();
}

/// The assembled corpus (`../shared/asm-corpus/expected`).
const ASM_CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/asm-corpus/expected");

/// The programs of the assembled corpus slowest to compile (callgrind, at
/// the change that added them): 197 instructions in 96 blocks, and the
/// longest F24 blocks.
const SLOWEST_TO_COMPILE: [&str; 2] = [
    "aroulin__3ds-gpu-tests__fp-tests_source_vshader.shbin",
    "0x00002a__pican__test_cases_inputs_complex-mesh-shader.shbin",
];

fn compile(c: &mut Criterion) {
    if let Err(reason) = pica_jit::jit::host_support() {
        eprintln!("no JIT on this host ({reason}); compile benchmarks skipped");
        return;
    }
    let mut subjects = vec![default_subject()];
    subjects.extend(corpus_files().iter().filter_map(|p| corpus_subject(p)));
    // The slowest programs to compile that `../shared/corpus` lacks (the
    // compile-time tail compare.sh reports): many small blocks, and long F24
    // blocks.
    let slowest: Vec<Subject> = SLOWEST_TO_COMPILE
        .iter()
        .filter_map(|name| corpus_subject(&Path::new(ASM_CORPUS).join(name)))
        .collect();
    let slowest_names: Vec<String> = slowest.iter().map(|s| s.name.clone()).collect();
    subjects.extend(slowest);
    let mut group = c.benchmark_group("compile");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    for subject in &subjects {
        // The default shader in both precisions; corpus files in f24 only (the
        // two precisions differ only in a few emitted sequences).
        let precisions: &[Precision] =
            if subject.name == "default" || slowest_names.contains(&subject.name) {
                &PRECISIONS
            } else {
                &PRECISIONS[..1]
            };
        for &precision in precisions {
            let config = subject.config(precision);
            let program = &*subject.program;
            match pica_jit::jit::compile_uncached(program, &config) {
                Ok(code) => eprintln!(
                    "compile/{}/{}: {} code words, {} bytes of native code",
                    subject.name,
                    precision_name(precision),
                    program.len(),
                    code.code_size()
                ),
                Err(e) => {
                    eprintln!("{}: does not compile ({e}); skipped", subject.name);
                    continue;
                }
            }
            group.bench_function(
                BenchmarkId::new(subject.name.as_str(), precision_name(precision)),
                |b| {
                    measure(b, || {
                        let code =
                            pica_jit::jit::compile_uncached(black_box(program), black_box(&config))
                                .expect("compile");
                        black_box(&code);
                    })
                },
            );
        }
    }
    group.finish();
}

criterion_group! {
    name = benches;
    // No plots and fewer bootstrap resamples: the analysis otherwise costs more
    // than the measurement for ~130 short benchmarks.
    config = Criterion::default()
        .without_plots()
        .nresamples(20_000)
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(1));
    targets = default_shader, overhead, corpus, compile
}
criterion_main!(benches);
