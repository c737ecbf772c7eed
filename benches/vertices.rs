//! Shading a draw several ways: nanoseconds per vertex of the interpreter, the
//! JIT one vertex per call (`Shader::run`), the batch path
//! (`Shader::run_vertices`, one call for the whole draw) and the wide engine at
//! each width this host has (`wide-xN`: `run_vertices` with
//! `StatePolicy::Reset`, N vertices per SIMD instruction; its outputs are
//! checked against the interpreter under the same policy).
//!
//! Groups (run with `cargo bench --bench vertices`; `-- --test` runs each once):
//!
//! - `default`: the embedded default shader (transform + Blinn-Phong with a light
//!   loop) with `examples/demo.json`'s uniforms.
//! - `skinning`: `benches/skinning.pica`, assembled at start with
//!   `pica_jit::asm`: two bones per vertex picked with relative addressing
//!   (`bones[a0.x + k]`, `bones[a0.y + k]`), one light.
//! - `branchy`: `benches/branchy.pica`, assembled at start: each vertex's
//!   packed attribute picks one of five unpack paths (a `cmp` + `jmpc` chain on
//!   per-vertex values) and an `ifc` lights only vertices facing the light, so
//!   neighbouring vertices take different paths (the wide engine's lanes
//!   diverge and reconverge on every vertex).
//! - `corpus`: every vertex DVLE of every `../shared/corpus` SHBIN (skipped,
//!   with a note on stderr, when the folder is absent).
//!
//! Benchmark ids are `GROUP/PRECISION/PATH` (`corpus/FILE/dvleK/PRECISION/PATH`). Every iteration shades
//! [`DRAW`] vertices the way an emulator's vertex loader hands them over
//! (input registers in, output registers out, the DVLE's register masks) with
//! the unit state carried from vertex to vertex; criterion reports vertices per
//! second (`Throughput::Elements`), and time per iteration / `DRAW` is ns per
//! vertex. Shaders and their native code are prepared outside the timed loop,
//! and before timing, each path's outputs are checked bit for bit against the
//! interpreter's.
//!
//! Timing uses the benchmark thread's CPU time (`PICA_BENCH_WALL=1`: wall clock),
//! like `benches/engines.rs`.

mod support;

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{
    BenchmarkGroup, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main,
};
use pica_jit::jit::wide::Width;
use pica_jit::shbin::{Dvle, Shbin};
use pica_jit::{
    EngineKind, Precision, Program, Shader, ShaderConfig, ShaderKind, StatePolicy, Uniforms,
    UnitState, VertexRegisters,
};
use support::{Rng, corpus_files, measure};

/// Vertices per timed iteration (one draw).
const DRAW: usize = 1000;

const PRECISIONS: [Precision; 2] = [Precision::F24, Precision::F32];

/// The skinning shader's source (see its header for the register layout).
const SKINNING_SOURCE: &str = include_str!("skinning.pica");

/// The branchy shader's source (see its header for the register layout).
const BRANCHY_SOURCE: &str = include_str!("branchy.pica");

/// Bones of the skinning shader (`bones[60]`: three rows each).
const BONES: usize = 20;

fn precision_name(p: Precision) -> &'static str {
    match p {
        Precision::F24 => "f24",
        Precision::F32 => "f32",
    }
}

/// One vertex DVLE with a draw's uniforms and inputs.
struct Draw {
    /// For messages.
    name: String,
    /// Start of the benchmark ids inside the group (`""` or `FILE/dvleK/`).
    id_prefix: String,
    program: Arc<Program>,
    dvle: Dvle,
    uniforms: Uniforms,
    inputs: Vec<VertexRegisters>,
}

impl Draw {
    fn config(&self, precision: Precision) -> ShaderConfig {
        ShaderConfig {
            entry: self.dvle.main,
            kind: self.dvle.kind,
            precision,
            ..ShaderConfig::default()
        }
    }

    /// The DVLE's register masks (all registers where it declares none).
    fn masks(&self) -> (u16, u16) {
        let or_all = |m: u16| if m == 0 { 0xffff } else { m };
        (or_all(self.dvle.input_mask), or_all(self.dvle.output_mask))
    }
}

/// How a path hands the draw to the shader.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Call {
    /// `Shader::run` per vertex.
    PerVertex,
    /// `Shader::run_vertices` once per draw, `StatePolicy::Carry`.
    Batch,
    /// `Shader::run_vertices` once per draw on the wide engine at one width,
    /// `StatePolicy::Reset` (every vertex from the draw's starting state).
    Wide(Width),
}

/// One way to shade a draw: an id, the engine and the call.
struct PathSpec {
    id: &'static str,
    engine: EngineKind,
    call: Call,
}

/// The paths this host has, the reference interpreter first, then one
/// `wide-xN` path per width of the wide engine.
fn paths() -> Vec<PathSpec> {
    let mut paths = vec![PathSpec {
        id: "interp",
        engine: EngineKind::Interpreter,
        call: Call::PerVertex,
    }];
    if EngineKind::available().contains(&EngineKind::Jit) {
        paths.push(PathSpec {
            id: "jit",
            engine: EngineKind::Jit,
            call: Call::PerVertex,
        });
        paths.push(PathSpec {
            id: "batch",
            engine: EngineKind::Jit,
            call: Call::Batch,
        });
        for width in Width::available() {
            let id = match width.lanes() {
                4 => "wide-x4",
                8 => "wide-x8",
                16 => "wide-x16",
                _ => "wide",
            };
            paths.push(PathSpec {
                id,
                engine: EngineKind::Jit,
                call: Call::Wide(width),
            });
        }
    } else {
        eprintln!("no JIT on this host: only the interpreter is measured");
    }
    paths
}

/// Shades the whole draw once on `shader` by `call`, continuing from `state`.
fn shade(
    shader: &Shader,
    call: Call,
    draw: &Draw,
    state: &mut UnitState,
    outputs: &mut [VertexRegisters],
) {
    let (input_mask, output_mask) = draw.masks();
    match call {
        Call::PerVertex => {
            for (vertex_in, vertex_out) in draw.inputs.iter().zip(outputs.iter_mut()) {
                for (i, reg) in vertex_in.iter().enumerate() {
                    if input_mask & (1 << i) != 0 {
                        state.inputs[i] = *reg;
                    }
                }
                black_box(shader.run(&draw.uniforms, state, &mut ()));
                for (o, reg) in vertex_out.iter_mut().enumerate() {
                    if output_mask & (1 << o) != 0 {
                        *reg = state.outputs[o];
                    }
                }
            }
        }
        Call::Batch | Call::Wide(_) => {
            let policy = match call {
                Call::Wide(_) => StatePolicy::Reset,
                _ => StatePolicy::Carry,
            };
            let summary = shader
                .run_vertices(
                    &draw.uniforms,
                    &draw.inputs,
                    input_mask,
                    outputs,
                    output_mask,
                    policy,
                    state,
                    &mut (),
                )
                .expect("inputs and outputs have the same length");
            black_box(summary);
        }
    }
}

/// Bits of every output register of a draw, for comparing paths.
fn output_bits(outputs: &[VertexRegisters]) -> Vec<[[u32; 4]; 16]> {
    outputs
        .iter()
        .map(|v| v.map(|reg| reg.map(f32::to_bits)))
        .collect()
}

/// Benchmarks every path on `draw` in both precisions inside `group`.
fn bench_draw(group: &mut BenchmarkGroup<'_, WallTime>, draw: &Draw) {
    for precision in PRECISIONS {
        let config = draw.config(precision);
        let mut reference: Option<Vec<[[u32; 4]; 16]>> = None;
        for path in paths() {
            let made = Shader::new(draw.program.clone(), config, path.engine).and_then(|s| {
                match path.call {
                    Call::Wide(width) => s.with_batch_width(Some(width)),
                    _ => Ok(s),
                }
            });
            let shader = match made {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("{}: {} unavailable ({e}); skipped", draw.name, path.id);
                    continue;
                }
            };
            // Compile now, outside the timed loop; never time a silent fallback.
            if let Err(e) = shader.prepare() {
                eprintln!("{}: {} cannot prepare ({e}); skipped", draw.name, path.id);
                continue;
            }
            assert_eq!(shader.engine(), path.engine, "{}: {}", draw.name, path.id);

            let mut state = UnitState::default();
            let mut outputs = vec![[[0.0f32; 4]; 16]; draw.inputs.len()];
            shade(&shader, path.call, draw, &mut state, &mut outputs);
            let bits = output_bits(&outputs);
            if let Call::Wide(_) = path.call {
                // Each vertex from the draw's starting state: the interpreter
                // under the same policy is the reference.
                let interp = Shader::new(draw.program.clone(), config, EngineKind::Interpreter)
                    .expect("the interpreter runs every shader");
                let mut expected = vec![[[0.0f32; 4]; 16]; draw.inputs.len()];
                let reset = Call::Wide(Width::Sse41);
                shade(
                    &interp,
                    reset,
                    draw,
                    &mut UnitState::default(),
                    &mut expected,
                );
                assert!(
                    output_bits(&expected) == bits,
                    "{}/{}: {} gives other outputs than the interpreter",
                    draw.name,
                    precision_name(precision),
                    path.id
                );
            } else {
                match &reference {
                    None => reference = Some(bits),
                    Some(expected) => assert!(
                        *expected == bits,
                        "{}/{}: {} gives other outputs than the interpreter",
                        draw.name,
                        precision_name(precision),
                        path.id
                    ),
                }
            }

            let id = BenchmarkId::new(
                format!("{}{}", draw.id_prefix, precision_name(precision)),
                path.id,
            );
            group.bench_function(id, |b| {
                measure(b, || {
                    shade(&shader, path.call, draw, &mut state, &mut outputs);
                    black_box(&outputs);
                })
            });
        }
    }
}

fn load(name: &str, shbin: Shbin, dvle_index: usize) -> Option<(Arc<Program>, Dvle)> {
    let program = match Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone()) {
        Ok(p) => Arc::new(p),
        Err(e) => {
            eprintln!("{name}: bad program ({e}); skipped");
            return None;
        }
    };
    let dvle = shbin.dvles.into_iter().nth(dvle_index)?;
    Some((program, dvle))
}

/// The embedded default shader with the demo's uniforms: positions in front of
/// the camera, unit normals, colours, texture coordinates.
fn default_draw() -> Draw {
    let shbin = Shbin::parse(pica_jit::DEFAULT_SHADER).expect("default shader parses");
    let (program, dvle) = load("default", shbin, 0).expect("default shader loads");
    let mut uniforms = Uniforms::default();
    uniforms.apply_constants(&dvle.constants);
    support::apply_demo_uniforms(&mut uniforms);
    let mut rng = Rng(0x5eed_0101);
    let inputs = (0..DRAW).map(|_| rng.demo_vertex()).collect();
    Draw {
        name: "default".into(),
        id_prefix: String::new(),
        program,
        dvle,
        uniforms,
        inputs,
    }
}

/// `benches/skinning.pica`, assembled by the product assembler. Bones: rotations
/// about z by 0.3 rad steps with small translations; two bones per vertex with
/// weights summing to 1.
fn skinning_draw() -> Draw {
    let shbin = pica_jit::asm::assemble_str("benches/skinning.pica", SKINNING_SOURCE)
        .unwrap_or_else(|e| panic!("benches/skinning.pica does not assemble: {e}"));
    let (program, dvle) = load("skinning", shbin, 0).expect("skinning shader loads");
    let mut uniforms = Uniforms::default();
    uniforms.apply_constants(&dvle.constants);
    let mvp: [[f32; 4]; 4] = [
        [1.0, 0.0, 0.0, 0.0],
        [0.0, 1.0, 0.0, 0.0],
        [0.0, 0.0, -1.002002, 2.8058058],
        [0.0, 0.0, -1.0, 3.0],
    ];
    uniforms.f[..4].copy_from_slice(&mvp);
    for bone in 0..BONES {
        let (sin, cos) = (bone as f32 * 0.3).sin_cos();
        let t = bone as f32 * 0.05;
        let rows = [
            [cos, -sin, 0.0, t],
            [sin, cos, 0.0, -t],
            [0.0, 0.0, 1.0, 0.5 * t],
        ];
        uniforms.f[4 + 3 * bone..4 + 3 * bone + 3].copy_from_slice(&rows);
    }
    uniforms.f[64] = [0.577_350_26, 0.577_350_26, 0.577_350_26, 0.0];
    uniforms.f[65] = [0.9, 0.8, 0.7, 1.0];
    let mut rng = Rng(0x5eed_0102);
    let inputs = (0..DRAW)
        .map(|_| {
            let mut v: VertexRegisters = [[0.0; 4]; 16];
            v[0] = [
                rng.range(-1.0, 1.0),
                rng.range(-1.0, 1.0),
                rng.range(-1.0, 1.0),
                1.0,
            ];
            v[1] = rng.normal();
            let bone = |rng: &mut Rng| (rng.next() % BONES as u64) as f32;
            v[2] = [bone(&mut rng), bone(&mut rng), 0.0, 0.0];
            let w = rng.range(0.0, 1.0);
            v[3] = [w, 1.0 - w, 0.0, 0.0];
            v
        })
        .collect();
    Draw {
        name: "skinning".into(),
        id_prefix: String::new(),
        program,
        dvle,
        uniforms,
        inputs,
    }
}

/// `benches/branchy.pica`, assembled by the product assembler: the skinning
/// draw's camera, a light from the upper left, every vertex's kind drawn
/// uniformly from the five unpack paths.
fn branchy_draw() -> Draw {
    let shbin = pica_jit::asm::assemble_str("benches/branchy.pica", BRANCHY_SOURCE)
        .unwrap_or_else(|e| panic!("benches/branchy.pica does not assemble: {e}"));
    let (program, dvle) = load("branchy", shbin, 0).expect("branchy shader loads");
    let mut uniforms = Uniforms::default();
    uniforms.apply_constants(&dvle.constants);
    uniforms.f[..4].copy_from_slice(&[
        [1.0, 0.0, 0.0, 0.0],
        [0.0, 1.0, 0.0, 0.0],
        [0.0, 0.0, -1.002002, 2.8058058],
        [0.0, 0.0, -1.0, 3.0],
    ]);
    uniforms.f[4] = [-0.577_350_26, 0.577_350_26, 0.577_350_26, 0.0];
    uniforms.f[5] = [0.9, 0.8, 0.7, 1.0];
    uniforms.f[6] = [0.5, 0.25, 0.75, 1.0];
    uniforms.f[7] = [0.1, 0.2, 0.0, 0.0];
    let mut rng = Rng(0x5eed_0104);
    let inputs = (0..DRAW)
        .map(|_| {
            let mut v: VertexRegisters = [[0.0; 4]; 16];
            v[0] = [
                rng.range(-1.0, 1.0),
                rng.range(-1.0, 1.0),
                rng.range(-1.0, 1.0),
                1.0,
            ];
            v[1] = rng.normal();
            v[2] = [rng.range(0.0, 5.0), 0.0, 0.0, 0.0];
            v[3] = [
                rng.range(0.0, 1.0),
                rng.range(0.0, 1.0),
                rng.range(0.0, 1.0),
                1.0,
            ];
            v
        })
        .collect();
    Draw {
        name: "branchy".into(),
        id_prefix: String::new(),
        program,
        dvle,
        uniforms,
        inputs,
    }
}

/// Every vertex DVLE of every corpus file. Uniforms: identity-matrix rows in
/// every float register, four-pass loops, then the DVLE's constants. Inputs: a
/// position in `[-1, 1]` with `w = 1`, everything else in `[0, 1]`.
fn corpus_draws() -> Vec<Draw> {
    let mut draws = Vec::new();
    for path in corpus_files() {
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let shbin = match std::fs::read(&path).map(|b| Shbin::parse(&b)) {
            Ok(Ok(shbin)) => shbin,
            _ => {
                eprintln!("{stem}: unreadable or not a SHBIN; skipped");
                continue;
            }
        };
        for (k, dvle) in shbin.dvles.iter().enumerate() {
            if dvle.kind != ShaderKind::Vertex {
                continue;
            }
            let name = format!("{stem}/dvle{k}");
            let Some((program, dvle)) = load(&name, shbin.clone(), k) else {
                continue;
            };
            if dvle.main as usize >= program.len() {
                eprintln!("{name}: entry point outside the code; skipped");
                continue;
            }
            let mut uniforms = Uniforms::default();
            for (n, f) in uniforms.f.iter_mut().enumerate() {
                *f = [0.0; 4];
                f[n % 4] = 1.0;
            }
            uniforms.i = [[3, 0, 1, 0]; 4];
            uniforms.apply_constants(&dvle.constants);
            let mut rng = Rng(0x5eed_0103 ^ (draws.len() as u64) << 32);
            let inputs = (0..DRAW).map(|_| rng.generic_vertex()).collect();
            draws.push(Draw {
                id_prefix: format!("{name}/"),
                name,
                program,
                dvle,
                uniforms,
                inputs,
            });
        }
    }
    draws
}

fn default_shader(c: &mut Criterion) {
    let mut group = c.benchmark_group("default");
    group.throughput(Throughput::Elements(DRAW as u64));
    bench_draw(&mut group, &default_draw());
    group.finish();
}

fn skinning(c: &mut Criterion) {
    let mut group = c.benchmark_group("skinning");
    group.throughput(Throughput::Elements(DRAW as u64));
    bench_draw(&mut group, &skinning_draw());
    group.finish();
}

fn branchy(c: &mut Criterion) {
    let mut group = c.benchmark_group("branchy");
    group.throughput(Throughput::Elements(DRAW as u64));
    bench_draw(&mut group, &branchy_draw());
    group.finish();
}

fn corpus(c: &mut Criterion) {
    let draws = corpus_draws();
    if draws.is_empty() {
        return;
    }
    let mut group = c.benchmark_group("corpus");
    group
        .throughput(Throughput::Elements(DRAW as u64))
        .sample_size(10)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_millis(500));
    for draw in &draws {
        bench_draw(&mut group, draw);
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .without_plots()
        .nresamples(20_000)
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(1));
    targets = default_shader, skinning, branchy, corpus
}
criterion_main!(benches);
