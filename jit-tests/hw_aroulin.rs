//! aroulin's PICA200 hardware tests (github.com/aroulin/3ds-gpu-tests), the
//! folders other than `fp-tests`: dph, dphi, ex2, lg2, rcp, rsq, sge, sgei, slt
//! and slti. Each test program draws with a one-instruction-under-test vertex
//! shader that writes the colour output, and its driver (or, for the drivers
//! that only draw a triangle, its README) states what a real console shows.
//!
//! Here the picasso-built SHBIN of each shader (from `../shared/asm-corpus`) runs
//! one vertex per case on every engine this host has, in both precisions; with
//! the JIT also on its baseline instruction-set variant (where the host's
//! differs) and, in F24, on the batch variant that reads preconverted uniforms.
//! The engines must agree bit for bit on everything observable, and the colour
//! output's `xyz` must match the hardware's expectation:
//!
//! - an expected 0 or 1 must come out exactly (as a value: the framebuffer cannot
//!   tell −0 from +0);
//! - any other expected value (0.75, 0.5, 0.1, …) is checked by the drivers only
//!   through the framebuffer byte, `(unsigned)(expected * 255)`, and the GPU's
//!   float-to-byte colour conversion is not pinned down by these tests; so the
//!   output must lie within one colour step, |x − expected| ≤ 1/255, which any
//!   such conversion maps to the expected byte or its neighbour.
//!
//! The GPU clamps colour outputs to [0, 1] before they reach the framebuffer.
//! No case here depends on that: every expected value lies in [0, 1] and is what
//! the instruction computes without clamping, so outputs are compared unclamped
//! (stricter: a result of 1.0001 for an expected 1 fails).
//!
//! Inputs and expected values are transcribed from the drivers as data. Register
//! numbers are not: the named uniforms and the colour output are looked up in the
//! SHBIN's DVLE tables, and the DVLE's constants are loaded first, as the
//! console's loader does.
//!
//! The corpus is skipped, with a note, when it is absent, unless
//! `PICA_REQUIRE_CORPUS=1`, which makes absence a failure.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pica_jit::jit::{self, CompiledShader, Features};
use pica_jit::shbin::{Dvle, Shbin, UniformRegister};
use pica_jit::{
    EmittedVertex, EngineKind, Precision, Program, Shader, ShaderConfig, Stop, Uniforms, UnitState,
};

const ASM_CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/asm-corpus");

/// One colour step of an 8-bit framebuffer channel.
const COLOUR_STEP: f32 = 1.0 / 255.0;

/// What the console showed for one colour component.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// Exactly this value (compared with `==`).
    Exact(f32),
    /// Within [`COLOUR_STEP`] of this value.
    Near(f32),
}

const ZERO: Expect = Expect::Exact(0.0);
const ONE: Expect = Expect::Exact(1.0);

impl Expect {
    fn accepts(self, x: f32) -> bool {
        match self {
            Expect::Exact(e) => x == e,
            Expect::Near(e) => (x - e).abs() <= COLOUR_STEP,
        }
    }
}

/// One vertex the hardware test draws, and the colour it expects.
struct Case {
    /// The driver's test function, or which vertex of a single-triangle driver.
    name: &'static str,
    /// The value of the folder's test uniform (see [`Folder::uniform`]).
    uniform: [f32; 4],
    /// Vertex input `v0` (position).
    position: [f32; 4],
    /// Vertex input `v1` (the colour attribute). A driver that declares it with
    /// three components gets `w = 1` from the GPU's attribute defaults.
    colour: [f32; 4],
    /// The colour output's `xyz` (`o1` in these shaders) as the console showed it.
    expected: [Expect; 3],
}

/// One folder of the hardware test repository.
struct Folder {
    /// The folder, without its `-tests` suffix.
    name: &'static str,
    /// The uniform the driver sets besides `projection`, if any.
    uniform: Option<&'static str>,
    cases: &'static [Case],
}

/// The quad drivers draw four vertices that share the colour under test; the
/// first one's position stands for all.
const QUAD_CORNER: [f32; 4] = [0.0, 1.0, 0.5, 1.0];
/// The triangle drivers set no test uniform.
const NO_UNIFORM: [f32; 4] = [0.0; 4];

const fn quad(
    name: &'static str,
    uniform: [f32; 4],
    colour: [f32; 4],
    expected: [Expect; 3],
) -> Case {
    Case {
        name,
        uniform,
        position: QUAD_CORNER,
        colour,
        expected,
    }
}

const fn vertex(
    name: &'static str,
    position: [f32; 3],
    colour: [f32; 3],
    expected: [Expect; 3],
) -> Case {
    Case {
        name,
        uniform: NO_UNIFORM,
        position: [position[0], position[1], position[2], 1.0],
        colour: [colour[0], colour[1], colour[2], 1.0],
        expected,
    }
}

const fn all(e: Expect) -> [Expect; 3] {
    [e, e, e]
}

// `dph outclr.xyz, src1_uniform, v1`: src1.xyz · src2.xyz + src2.w, written to
// every enabled component.
const DPH: Folder = Folder {
    name: "dph",
    uniform: Some("src1_uniform"),
    cases: &[
        quad(
            "DPH_Zeros",
            [0.0, 0.0, 0.0, 0.0],
            [0.0, 0.0, 0.0, 0.0],
            all(ZERO),
        ),
        quad(
            "DPH_Zeros2",
            [1.0, 0.0, 0.0, 0.0],
            [0.0, 1.0, 1.0, 0.0],
            all(ZERO),
        ),
        quad(
            "DPH_X",
            [1.0, 0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0, 0.0],
            all(ONE),
        ),
        quad(
            "DPH_Y",
            [0.0, 1.0, 0.0, 0.0],
            [0.0, 1.0, 0.0, 0.0],
            all(ONE),
        ),
        quad(
            "DPH_Z",
            [0.0, 0.0, 1.0, 0.0],
            [0.0, 0.0, 1.0, 0.0],
            all(ONE),
        ),
        quad(
            "DPH_W",
            [0.0, 0.0, 0.0, 0.0],
            [0.0, 0.0, 0.0, 1.0],
            all(ONE),
        ),
        quad(
            "DPH_W2",
            [0.0, 0.0, 0.0, 1.0],
            [0.0, 0.0, 0.0, 0.0],
            all(ZERO),
        ),
        quad(
            "DPH_Simple",
            [0.5, 0.0, 0.5, 0.0],
            [0.5, 0.0, 0.5, 0.5],
            all(ONE),
        ),
        quad(
            "DPH_Simple2",
            [0.0, 0.5, 0.0, 0.0],
            [0.0, 0.5, 0.0, 0.5],
            all(Expect::Near(0.75)),
        ),
        quad(
            "DPH_Simple3",
            [0.0, 0.0, 0.0, 0.5],
            [0.0, 0.0, 0.0, 1.0],
            all(ONE),
        ),
    ],
};

// `dphi outclr.xyz, v1, src2_uniform`: the same with the operands swapped, so the
// uniform's w is the one added.
const DPHI: Folder = Folder {
    name: "dphi",
    uniform: Some("src2_uniform"),
    cases: &[
        quad(
            "DPHI_Zeros",
            [0.0, 0.0, 0.0, 0.0],
            [0.0, 0.0, 0.0, 0.0],
            all(ZERO),
        ),
        quad(
            "DPHI_Zeros2",
            [1.0, 0.0, 0.0, 0.0],
            [0.0, 1.0, 1.0, 0.0],
            all(ZERO),
        ),
        quad(
            "DPHI_X",
            [1.0, 0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0, 0.0],
            all(ONE),
        ),
        quad(
            "DPHI_Y",
            [0.0, 1.0, 0.0, 0.0],
            [0.0, 1.0, 0.0, 0.0],
            all(ONE),
        ),
        quad(
            "DPHI_Z",
            [0.0, 0.0, 1.0, 0.0],
            [0.0, 0.0, 1.0, 0.0],
            all(ONE),
        ),
        quad(
            "DPHI_W",
            [0.0, 0.0, 0.0, 0.0],
            [0.0, 0.0, 0.0, 1.0],
            all(ZERO),
        ),
        quad(
            "DPHI_W2",
            [0.0, 0.0, 0.0, 1.0],
            [0.0, 0.0, 0.0, 0.0],
            all(ONE),
        ),
        quad(
            "DPHI_Simple",
            [0.5, 0.0, 0.5, 0.5],
            [0.5, 0.0, 0.5, 0.0],
            all(ONE),
        ),
        quad(
            "DPHI_Simple2",
            [0.0, 0.5, 0.0, 0.5],
            [0.0, 0.5, 0.0, 0.0],
            all(Expect::Near(0.75)),
        ),
        quad(
            "DPHI_Simple3",
            [0.0, 0.0, 0.0, 0.5],
            [0.0, 0.0, 0.0, 1.0],
            all(Expect::Near(0.5)),
        ),
    ],
};

// `ex2 outclr.xyz, v1`: only the first component is used, and its result goes to
// every enabled component. The README: a white triangle (per component it would
// be red, 2^-100 being black).
const EX2: Folder = Folder {
    name: "ex2",
    uniform: None,
    cases: &[vertex(
        "every vertex (same colour)",
        [7.0, 7.0, 0.5],
        [0.0, -100.0, -100.0],
        all(ONE),
    )],
};

// `lg2 outclr.xyz, v1`: as ex2. The README: a white triangle (per component it
// would be red).
const LG2: Folder = Folder {
    name: "lg2",
    uniform: None,
    cases: &[vertex(
        "every vertex (same colour)",
        [1.0, 1.0, 0.5],
        [2.0, 1.0, 1.0],
        all(ONE),
    )],
};

// `rcp outclr.xyz, src1_uniform`: only the first component is used.
const RCP: Folder = Folder {
    name: "rcp",
    uniform: Some("src1_uniform"),
    cases: &[
        quad(
            "RCP_UseOnlyFirstComponent",
            [1.0, 10.0, 10.0, 0.0],
            [0.0; 4],
            all(ONE),
        ),
        quad(
            "RCP_Simple",
            [10.0, 1.0, 1.0, 0.0],
            [0.0; 4],
            all(Expect::Near(0.1)),
        ),
    ],
};

// `rsq outclr.xyz, src1_uniform`: only the first component is used.
const RSQ: Folder = Folder {
    name: "rsq",
    uniform: Some("src1_uniform"),
    cases: &[
        quad(
            "RSQ_UseOnlyFirstComponent",
            [1.0, 100.0, 100.0, 0.0],
            [0.0; 4],
            all(ONE),
        ),
        quad(
            "RSQ_Simple",
            [100.0, 1.0, 1.0, 0.0],
            [0.0; 4],
            all(Expect::Near(0.1)),
        ),
    ],
};

// `sge outclr.xyz, test_vector, v1`: test_vector >= v1 per component. The
// colour attribute has three components.
const SGE: Folder = Folder {
    name: "sge",
    uniform: Some("test_vector"),
    cases: &[
        quad(
            "SGE_ThreeComponents_Greater",
            [1.0, 1.0, 1.0, 0.0],
            [0.0, 0.0, 0.0, 1.0],
            all(ONE),
        ),
        quad(
            "SGE_ThreeComponents_Equal",
            [1.0, 1.0, 1.0, 0.0],
            [1.0, 1.0, 1.0, 1.0],
            all(ONE),
        ),
        quad(
            "SGE_ThreeComponents_Less",
            [0.0, 0.0, 0.0, 0.0],
            [1.0, 1.0, 1.0, 1.0],
            all(ZERO),
        ),
        quad(
            "SGE_ThreeComponents_Mixed",
            [0.52, 0.82, 0.01, 0.0],
            [0.21, 0.82, 0.23, 1.0],
            [ONE, ONE, ZERO],
        ),
        // ±1e20 is beyond float24's range: in F24 these compare as ±inf, in F32
        // as themselves; the outcome is the same.
        quad(
            "SGE_ThreeComponents_BigNums",
            [-1e20, 1e20, 1e20, 0.0],
            [1e20, -1e20, 1e20, 1.0],
            [ZERO, ONE, ONE],
        ),
    ],
};

const RED: [Expect; 3] = [ONE, ZERO, ZERO];
const GREEN: [Expect; 3] = [ZERO, ONE, ZERO];
const BLUE: [Expect; 3] = [ZERO, ZERO, ONE];

// The three comparison drivers draw one triangle whose README says "top = red,
// left = green, right = blue": with the driver's projection the vertex at
// (128, 128) is the top one, (64, 32) the left and (256, 32) the right.
// The shaders compare against the constant `cmp` = (0.0, 0.5, 1.0, 0.0).

// `sgei outclr.xyz, v1, cmp`: v1 >= cmp.
const SGEI: Folder = Folder {
    name: "sgei",
    uniform: None,
    cases: &[
        vertex("top vertex", [128.0, 128.0, 0.5], [0.5, 0.0, 0.5], RED),
        vertex("left vertex", [64.0, 32.0, 0.5], [-1.0, 0.5, 0.8], GREEN),
        vertex("right vertex", [256.0, 32.0, 0.5], [-1.0, 0.2, 1.2], BLUE),
    ],
};

// `slt outclr.xyz, cmp, v1`: cmp < v1.
const SLT: Folder = Folder {
    name: "slt",
    uniform: None,
    cases: &[
        vertex("top vertex", [128.0, 128.0, 0.5], [0.1, 0.5, 1.0], RED),
        vertex("left vertex", [64.0, 32.0, 0.5], [0.0, 0.6, 0.8], GREEN),
        vertex("right vertex", [256.0, 32.0, 0.5], [-1.0, 0.5, 1.1], BLUE),
    ],
};

// `slti outclr.xyz, v1, cmp`: v1 < cmp.
const SLTI: Folder = Folder {
    name: "slti",
    uniform: None,
    cases: &[
        vertex("top vertex", [128.0, 128.0, 0.5], [-0.1, 0.5, 1.0], RED),
        vertex("left vertex", [64.0, 32.0, 0.5], [0.0, 0.4, 1.8], GREEN),
        vertex("right vertex", [256.0, 32.0, 0.5], [1.0, 0.6, 0.95], BLUE),
    ],
};

// ---------------------------------------------------------------------------
// Driver

/// The corpus folder, or `None` (with a note) when it is absent and not required.
fn corpus() -> Option<PathBuf> {
    let dir = Path::new(ASM_CORPUS);
    if dir.is_dir() {
        return Some(dir.to_path_buf());
    }
    if std::env::var("PICA_REQUIRE_CORPUS").is_ok_and(|v| v == "1") {
        panic!("PICA_REQUIRE_CORPUS=1 but the asm corpus is missing at {ASM_CORPUS}");
    }
    println!("asm corpus not found at {ASM_CORPUS}; skipping");
    None
}

/// The float register a DVLE's uniform table assigns to `name` (its first one).
fn float_uniform(dvle: &Dvle, name: &str) -> usize {
    let entry = dvle
        .uniforms
        .iter()
        .find(|u| u.name == name)
        .unwrap_or_else(|| panic!("the DVLE has no uniform `{name}`"));
    match entry.first_register() {
        Some(UniformRegister::Float(n)) => n as usize,
        other => panic!("uniform `{name}` is not a float register: {other:?}"),
    }
}

/// The output register the DVLE's output table names as the colour, which must
/// cover x, y and z.
fn colour_output(dvle: &Dvle) -> usize {
    let entry = dvle
        .outputs
        .iter()
        .find(|o| o.semantic_name() == "color")
        .expect("the DVLE declares no colour output");
    assert_eq!(
        entry.mask & 0b0111,
        0b0111,
        "the colour output does not cover xyz"
    );
    entry.register as usize
}

/// One way of running the shader: an engine, or a JIT code variant the host's
/// engine does not pick for single vertices.
enum Runner {
    Engine(Shader),
    Variant {
        name: &'static str,
        code: CompiledShader,
        /// The variant reads float uniforms already converted to float24, as
        /// [`Shader::run_batch`] hands them over.
        preconverted: bool,
    },
}

impl Runner {
    fn name(&self) -> String {
        match self {
            Runner::Engine(shader) => shader.engine().to_string(),
            Runner::Variant { name, .. } => (*name).to_owned(),
        }
    }

    fn run(
        &self,
        program: &Program,
        config: &ShaderConfig,
        uniforms: &Uniforms,
        state: &mut UnitState,
    ) -> Stop {
        let mut emits: Vec<EmittedVertex> = Vec::new();
        let stop = match self {
            Runner::Engine(shader) => shader.run(uniforms, state, &mut emits),
            Runner::Variant {
                code, preconverted, ..
            } => {
                let converted;
                let uniforms = if *preconverted {
                    converted = uniforms.converted(config.precision);
                    &converted
                } else {
                    uniforms
                };
                code.run(program, config, uniforms, state, &mut emits)
            }
        };
        assert!(emits.is_empty(), "a vertex shader emitted vertices");
        stop
    }
}

/// Every available engine, the interpreter first, each JIT compiled up front so
/// that a compilation failure fails the test instead of falling back to the
/// interpreter; then, with the JIT, its baseline instruction-set variant (when
/// the host's differs) and, in F24, the batch variant.
fn runners(program: &Arc<Program>, config: ShaderConfig) -> Vec<Runner> {
    let engines = EngineKind::available();
    assert_eq!(
        engines[0],
        EngineKind::Interpreter,
        "the interpreter is the reference"
    );
    let mut runners = Vec::new();
    for &engine in &engines {
        let shader = Shader::new(program.clone(), config, engine)
            .unwrap_or_else(|e| panic!("cannot create a {engine} shader: {e}"));
        if let Err(e) = shader.prepare() {
            panic!(
                "the {engine} shader does not compile ({:?}): {e}",
                config.precision
            );
        }
        runners.push(Runner::Engine(shader));
    }
    if !engines.contains(&EngineKind::Jit) {
        return runners;
    }
    let mut variant = |name, features, preconverted| {
        let code = jit::compile_with(program, &config, features)
            .unwrap_or_else(|e| panic!("cannot compile the {name}: {e}"));
        runners.push(Runner::Variant {
            name,
            code,
            preconverted,
        });
    };
    for (name, features) in Features::test_variants() {
        variant(name, features, false);
    }
    if config.precision == Precision::F24 {
        let batch = Features {
            preconverted_uniforms: true,
            ..Features::host()
        };
        variant("jit (batch variant, float24 uniforms)", batch, true);
        // The batch variant with the other instruction set (x86-64: SSE4.1
        // when the host's uses AVX; AArch64 has only one).
        let baseline = Features {
            preconverted_uniforms: true,
            ..Features::baseline()
        };
        if baseline != batch {
            variant(
                "jit (batch variant, baseline instruction set)",
                baseline,
                true,
            );
        }
    }
    runners
}

/// Everything observable after a vertex, as bits.
fn observable_bits(stop: Stop, state: &UnitState) -> Vec<u32> {
    let mut bits = vec![stop as u32];
    for reg in state.outputs.iter().chain(&state.temps) {
        bits.extend(reg.map(f32::to_bits));
    }
    bits.extend([state.a0[0] as u32, state.a0[1] as u32, state.al as u32]);
    bits.extend([state.cmp[0] as u32, state.cmp[1] as u32]);
    bits
}

/// Runs every case of `folder` on every engine and precision; panics with every
/// disagreement found.
fn check(folder: &Folder) {
    let Some(dir) = corpus() else { return };
    let file = format!(
        "aroulin__3ds-gpu-tests__{}-tests_source_vshader.shbin",
        folder.name
    );
    let path = dir.join("expected").join(&file);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let shbin = Shbin::parse(&bytes).unwrap_or_else(|e| panic!("{file}: does not parse: {e}"));
    assert_eq!(shbin.dvles.len(), 1, "{file}: expected one DVLE");
    let dvle = &shbin.dvles[0];
    let program = Arc::new(
        Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone())
            .unwrap_or_else(|e| panic!("{file}: bad program: {e}")),
    );

    let mut base = Uniforms::default();
    base.apply_constants(&dvle.constants);
    // Any projection will do: only the colour output is checked.
    let projection = float_uniform(dvle, "projection");
    for row in 0..4 {
        base.f[projection + row] = std::array::from_fn(|col| f32::from(u8::from(col == row)));
    }
    let test_uniform = folder.uniform.map(|name| float_uniform(dvle, name));
    let colour = colour_output(dvle);

    let mut failures = Vec::new();
    let mut runner_names = Vec::new();
    for precision in [Precision::F24, Precision::F32] {
        let config = ShaderConfig {
            entry: dvle.main,
            kind: dvle.kind,
            precision,
            ..ShaderConfig::default()
        };
        let runners = runners(&program, config);
        if precision == Precision::F24 {
            runner_names = runners.iter().map(Runner::name).collect();
        }
        for case in folder.cases {
            let context = format!("{} / {} ({precision:?})", folder.name, case.name);
            let mut uniforms = base.clone();
            if let Some(n) = test_uniform {
                uniforms.f[n] = case.uniform;
            }
            let mut start = UnitState::default();
            start.inputs[0] = case.position;
            start.inputs[1] = case.colour;

            let mut results = Vec::with_capacity(runners.len());
            for runner in &runners {
                let mut state = start.clone();
                let stop = runner.run(&program, &config, &uniforms, &mut state);
                if stop != Stop::End {
                    failures.push(format!(
                        "{context}: {} stopped with {stop:?}",
                        runner.name()
                    ));
                }
                results.push((observable_bits(stop, &state), state.outputs[colour]));
            }
            let (reference_bits, out) = &results[0];
            for (runner, (bits, other)) in runners.iter().zip(&results).skip(1) {
                if bits != reference_bits {
                    failures.push(format!(
                        "{context}: {} disagrees with the interpreter (colour {other:?} vs {out:?})",
                        runner.name()
                    ));
                }
            }
            for (c, (&x, &expect)) in out.iter().zip(&case.expected).enumerate() {
                if !expect.accepts(x) {
                    failures.push(format!(
                        "{context}: o{colour}.{} = {x} ({:#010x}); the hardware shows {expect:?}",
                        ['x', 'y', 'z'][c],
                        x.to_bits()
                    ));
                }
            }
        }
    }
    println!(
        "{}: {} case(s) x 2 precisions on {}",
        folder.name,
        folder.cases.len(),
        runner_names.join(", ")
    );
    assert!(
        failures.is_empty(),
        "{} disagreement(s):\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}

#[test]
fn dph() {
    check(&DPH);
}

#[test]
fn dphi() {
    check(&DPHI);
}

#[test]
fn ex2() {
    check(&EX2);
}

#[test]
fn lg2() {
    check(&LG2);
}

#[test]
fn rcp() {
    check(&RCP);
}

#[test]
fn rsq() {
    check(&RSQ);
}

#[test]
fn sge() {
    check(&SGE);
}

#[test]
fn sgei() {
    check(&SGEI);
}

#[test]
fn slt() {
    check(&SLT);
}

#[test]
fn slti() {
    check(&SLTI);
}
