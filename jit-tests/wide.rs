//! The wide engine (several vertices per call, one per SIMD lane) against the
//! interpreter, at every width this host has: random programs
//! (`pica_jit::testgen`) × random batches (per-vertex inputs, flags and
//! address registers, so flag-decided flow diverges and relative reads differ
//! per lane; random budgets, so some lanes stop on the budget), batch sizes
//! that are not multiples of the width, both state policies, both
//! precisions; `Shader::run_batch` too. Every comparison is bit for bit, and
//! every test checks that the wide engine ran (`jit::wide::vertices_shaded`,
//! `BatchSummary::wide_vertices`).
//!
//! `PICA_WIDE_CASES` sets the number of random programs (default
//! [`DEFAULT_CASES`]).

mod common;

use arbitrary::Unstructured;
use pica_jit::jit::wide::{self, Width};
use pica_jit::testgen::{TestCase, generate};
use pica_jit::{
    BatchSummary, EngineKind, Shader, ShaderKind, StatePolicy, Stop, UnitState, VertexRegisters,
};

const DEFAULT_CASES: u32 = 600;

/// `text` (picasso source) assembled as `name`: the program and its first
/// DVLE.
fn assembled(name: &str, text: &str) -> (std::sync::Arc<pica_jit::Program>, pica_jit::shbin::Dvle) {
    let shbin = pica_jit::asm::assemble_str(name, text).expect("assembles");
    let program = pica_jit::Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone())
        .expect("loads");
    let dvle = shbin.dvles.into_iter().next().expect("one DVLE");
    (std::sync::Arc::new(program), dvle)
}

fn case_count() -> u32 {
    std::env::var("PICA_WIDE_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_CASES)
}

/// xorshift64*: deterministic test inputs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// The widths this host runs. The wide engine has code generators for
/// x86-64 and AArch64: with `PICA_REQUIRE_JIT=1` such a host without a width
/// fails; other hosts skip with a note.
fn widths() -> Vec<Width> {
    let widths = Width::available();
    if widths.is_empty() {
        let has_generator = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));
        if has_generator && std::env::var("PICA_REQUIRE_JIT").as_deref() == Ok("1") {
            panic!("PICA_REQUIRE_JIT=1 but no wide width on this host");
        }
        eprintln!("SKIPPED: no wide engine on this host");
    }
    widths
}

/// Runs `check` at every wide width of this host ([`widths`]: none is a
/// failure under `PICA_REQUIRE_JIT=1` where there is a code generator).
/// `check` returns how many vertices it compared with the interpreter; a
/// width at which it compared none fails, so a check that returns early or
/// runs on no input cannot pass for one that ran.
fn for_each_width(mut check: impl FnMut(Width) -> usize) {
    for width in widths() {
        let compared = check(width);
        assert!(compared > 0, "{width:?}: no vertex compared");
    }
}

/// The 16-lane width is there whenever the CPU has what it needs (AVX-512F
/// and DQ), and `Width::best` picks it; with `PICA_REQUIRE_AVX512=1` (which
/// `.ci/run` sets on AVX-512 hosts) its absence fails, so a lost detection
/// cannot quietly leave the suites on 8 lanes.
#[test]
fn sixteen_lanes_where_the_cpu_has_avx512() {
    let available = Width::available();
    #[cfg(target_arch = "x86_64")]
    let has_avx512 = std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512dq");
    #[cfg(not(target_arch = "x86_64"))]
    let has_avx512 = false;
    // The variable is about the x86-64 host (`.ci/run` exports it to the
    // AArch64 run under qemu too, where there is no such width).
    if cfg!(target_arch = "x86_64") && std::env::var("PICA_REQUIRE_AVX512").as_deref() == Ok("1") {
        assert!(
            available.contains(&Width::Avx512),
            "PICA_REQUIRE_AVX512=1 but the 16-lane width is unavailable ({available:?})"
        );
    }
    if has_avx512 && !available.is_empty() {
        assert!(
            available.contains(&Width::Avx512),
            "the CPU has AVX-512F/DQ but Width::available() is {available:?}"
        );
        assert_eq!(Width::best(), Some(Width::Avx512));
    }
    if available.contains(&Width::Avx512) {
        assert_eq!(Width::Avx512.lanes(), 16);
    } else {
        eprintln!("NOTE: no 16-lane width on this host ({available:?})");
    }
}

fn state_bits(s: &UnitState) -> Vec<u32> {
    let regs = s.inputs.iter().chain(&s.temps).chain(&s.outputs);
    let mut out: Vec<u32> = regs.flat_map(|r| r.map(f32::to_bits)).collect();
    out.extend([s.a0[0] as u32, s.a0[1] as u32, s.al as u32]);
    out.extend(s.cmp.map(u32::from));
    out
}

/// The first difference between two bit vectors, named (`""` when equal).
fn first_difference(got: &[u32], expected: &[u32], names: &dyn Fn(usize) -> String) -> String {
    match got.iter().zip(expected).position(|(a, b)| a != b) {
        Some(i) => format!(
            "{}: got {:#010x}, expected {:#010x}",
            names(i),
            got[i],
            expected[i]
        ),
        None if got.len() != expected.len() => "lengths differ".into(),
        None => String::new(),
    }
}

/// Asserts that a `run_vertices` call gave the reference's outputs and final
/// state, bit for bit, naming the first difference.
fn assert_same_outputs_and_state(
    got: &[VertexRegisters],
    expected: &[VertexRegisters],
    got_state: &UnitState,
    expected_state: &UnitState,
    what: &dyn std::fmt::Display,
) {
    let diff = first_difference(&regs_bits(got), &regs_bits(expected), &regs_name);
    assert!(diff.is_empty(), "{what}: outputs ({diff})");
    let diff = first_difference(
        &state_bits(got_state),
        &state_bits(expected_state),
        &state_name,
    );
    assert!(diff.is_empty(), "{what}: state ({diff})");
}

/// Asserts that every vertex's outputs equal the reference's, bit for bit,
/// naming the first vertex that differs, its lane and its first inputs.
fn assert_same_vertices(
    got: &[VertexRegisters],
    expected: &[VertexRegisters],
    inputs: &[VertexRegisters],
    lanes: usize,
    what: &dyn std::fmt::Display,
) {
    assert_eq!(got.len(), expected.len(), "{what}: vertex counts");
    for (k, (g, e)) in got.iter().zip(expected).enumerate() {
        let diff = first_difference(&regs_bits(&[*g]), &regs_bits(&[*e]), &regs_name);
        assert!(
            diff.is_empty(),
            "{what}, vertex {k} (lane {}): {diff}\ninputs {:?}",
            k % lanes,
            &inputs[k][..3]
        );
    }
}

/// The float24 interpreter and wide JIT (at `width`) of `program`, after
/// asserting that `run_vertices` (`Reset`, every input and output) on
/// `inputs` gives the interpreter's bits with each of `uniform_sets`, every
/// vertex shaded by the wide engine.
fn assert_f24_vertices_match_for_each_uniform_set(
    program: &std::sync::Arc<pica_jit::Program>,
    width: Width,
    inputs: &[VertexRegisters],
    uniform_sets: &[pica_jit::Uniforms],
) -> (Shader, Shader) {
    let config = pica_jit::ShaderConfig {
        precision: pica_jit::Precision::F24,
        ..Default::default()
    };
    let interp =
        Shader::new(program.clone(), config, EngineKind::Interpreter).expect("interpreter");
    let jit = Shader::new(program.clone(), config, EngineKind::Jit)
        .expect("jit")
        .with_batch_width(Some(width))
        .expect("width available");
    for (u, uniforms) in uniform_sets.iter().enumerate() {
        let untouched = [[-7.5f32; 4]; 16];
        let mut expected = vec![untouched; inputs.len()];
        let mut got = vec![untouched; inputs.len()];
        let before = wide::vertices_shaded();
        for (shader, out) in [(&interp, &mut expected), (&jit, &mut got)] {
            let mut state = UnitState::default();
            shader
                .run_vertices(
                    uniforms,
                    inputs,
                    0xffff,
                    out,
                    0xffff,
                    StatePolicy::Reset,
                    &mut state,
                    &mut (),
                )
                .expect("batch");
        }
        assert_eq!(wide::vertices_shaded() - before, inputs.len() as u64);
        assert_same_vertices(
            &got,
            &expected,
            inputs,
            width.lanes(),
            &format_args!("{width:?}, uniforms {u}"),
        );
    }
    (interp, jit)
}

/// `run_batch` over states holding `inputs` (and defaults elsewhere) gives
/// the interpreter's stops and final states, bit for bit.
fn assert_run_batch_matches(
    interp: &Shader,
    jit: &Shader,
    uniforms: &pica_jit::Uniforms,
    inputs: &[VertexRegisters],
    width: Width,
) {
    let states: Vec<UnitState> = inputs
        .iter()
        .map(|r| UnitState {
            inputs: *r,
            ..Default::default()
        })
        .collect();
    let (expected_stops, expected, stops, got, _) = batch_on_both(interp, jit, uniforms, &states);
    assert_eq!(stops, expected_stops, "{width:?}");
    assert_same_states(&got, &expected, |k, diff| {
        format!("{width:?} run_batch, state {k}: {diff}")
    });
}

/// `run_batch` on copies of `states`, by the interpreter and by the wide
/// shader: the interpreter's stops and states, the wide shader's, and how many
/// vertices the vertex kernel shaded meanwhile.
fn batch_on_both(
    interp: &Shader,
    wide_shader: &Shader,
    uniforms: &pica_jit::Uniforms,
    states: &[UnitState],
) -> (Vec<Stop>, Vec<UnitState>, Vec<Stop>, Vec<UnitState>, u64) {
    let mut expected = states.to_vec();
    let expected_stops = interp.run_batch(uniforms, &mut expected, &mut ());
    let mut got = states.to_vec();
    let before = wide::kernel_vertices();
    let stops = wide_shader.run_batch(uniforms, &mut got, &mut ());
    let in_kernel = wide::kernel_vertices() - before;
    (expected_stops, expected, stops, got, in_kernel)
}
/// Asserts that each state of `got` equals the one of `expected` at its index,
/// bit for bit; `message(k, diff)` says which (state `k`, first difference).
fn assert_same_states(
    got: &[UnitState],
    expected: &[UnitState],
    message: impl Fn(usize, &str) -> String,
) {
    for (k, (a, b)) in got.iter().zip(expected).enumerate() {
        let diff = first_difference(&state_bits(a), &state_bits(b), &state_name);
        assert!(diff.is_empty(), "{}", message(k, &diff));
    }
}

fn state_name(i: usize) -> String {
    let file = ["v", "r", "o"];
    match i {
        i if i < 192 => format!(
            "{}{}.{}",
            file[i / 64],
            i % 64 / 4,
            ["x", "y", "z", "w"][i % 4]
        ),
        192 => "a0.x".into(),
        193 => "a0.y".into(),
        194 => "aL".into(),
        i => format!("cmp{}", i - 195),
    }
}

fn regs_name(i: usize) -> String {
    format!(
        "vertex {} o{}.{}",
        i / 64,
        i % 64 / 4,
        ["x", "y", "z", "w"][i % 4]
    )
}

fn regs_bits(r: &[VertexRegisters]) -> Vec<u32> {
    r.iter()
        .flat_map(|v| v.iter().flat_map(|c| c.map(f32::to_bits)))
        .collect()
}

/// A random vertex-shader case and a batch of `n` varied states: the case's
/// own states and states of other generated cases (random inputs, temps,
/// `a0`, `aL`, flags).
fn random_batch(rng: &mut Rng) -> Option<(TestCase, Vec<UnitState>)> {
    let case = generate(&mut Unstructured::new(&rng.bytes(2048))).ok()?;
    if case.config.kind != ShaderKind::Vertex {
        return None;
    }
    let n = 1 + rng.below(21) as usize;
    let mut states = case.states.clone();
    while states.len() < n {
        let other = generate(&mut Unstructured::new(&rng.bytes(2048))).ok()?;
        states.extend(other.states);
    }
    states.truncate(n);
    Some((case, states))
}

fn shaders(case: &TestCase, width: Width) -> (Shader, Shader) {
    let interp = Shader::new(case.program.clone(), case.config, EngineKind::Interpreter)
        .expect("interpreter");
    let wide = Shader::new(case.program.clone(), case.config, EngineKind::Jit)
        .expect("jit")
        .with_batch_width(Some(width))
        .expect("width available");
    assert_eq!(
        wide.batch_width(),
        Some(width),
        "the wide engine must compile every vertex shader"
    );
    (interp, wide)
}

#[test]
fn run_batch_matches_the_interpreter_at_every_width() {
    // Every vertex in lanes: this test is about the wide engine's own paths.
    wide::force_lanes(true);
    let mut rng = Rng(0x5eed_0001);
    let mut programs = 0;
    for width in widths() {
        let mut cases = 0;
        while cases < case_count() {
            let Some((case, states)) = random_batch(&mut rng) else {
                continue;
            };
            cases += 1;
            let (interp, wide_shader) = shaders(&case, width);
            let mut expected = states.clone();
            let expected_stops = interp.run_batch(&case.uniforms, &mut expected, &mut ());
            let mut got = states.clone();
            let before = wide::vertices_shaded();
            let stops = wide_shader.run_batch(&case.uniforms, &mut got, &mut ());
            assert_eq!(
                wide::vertices_shaded() - before,
                states.len() as u64,
                "every vertex of the batch starts in wide code"
            );
            assert_eq!(stops, expected_stops, "stops, {width:?}, {case:?}");
            assert_same_states(&got, &expected, |k, diff| {
                format!(
                    "vertex {k} of {} ({diff}), {width:?}: {case:?}\nstates: {states:?}",
                    states.len()
                )
            });
            programs += 1;
        }
    }
    eprintln!("run_batch: {programs} random programs compared");
}

/// One random batch in the emulator's layout under `policy`, on the wide
/// engine and on the interpreter; returns the wide run's summary.
fn compare_vertices(
    case: &TestCase,
    states: &[UnitState],
    width: Width,
    policy: StatePolicy,
    rng: &mut Rng,
) -> BatchSummary {
    let input_mask = if rng.below(3) == 0 {
        rng.next() as u16
    } else {
        0xffff
    };
    let output_mask = if rng.below(3) == 0 {
        rng.next() as u16
    } else {
        0xffff
    };
    compare_vertices_with_masks(case, states, width, policy, input_mask, output_mask)
}

/// `len` vertex records whose address is `shift` bytes past a 16-byte
/// boundary: the caller's slices need only `f32` alignment, so the engines
/// must not assume more.
struct ShiftedRecords {
    floats: Vec<f32>,
    start: usize,
    len: usize,
}

impl ShiftedRecords {
    fn new(records: &[VertexRegisters], shift: usize) -> ShiftedRecords {
        assert!(
            shift < 16 && shift.is_multiple_of(4),
            "a shift in f32 steps"
        );
        let floats = vec![0.0f32; records.len() * 64 + 4];
        let misalign = floats.as_ptr() as usize % 16;
        let start = ((16 + shift - misalign) % 16) / 4;
        let mut out = ShiftedRecords {
            floats,
            start,
            len: records.len(),
        };
        out.as_mut_slice().copy_from_slice(records);
        assert_eq!(out.as_slice().as_ptr() as usize % 16, shift);
        out
    }

    fn as_slice(&self) -> &[VertexRegisters] {
        let floats = &self.floats[self.start..self.start + self.len * 64];
        // SAFETY: `floats` holds `len * 64` initialised `f32`s;
        // `VertexRegisters` is `[[f32; 4]; 16]`, 64 `f32`s with `f32`'s
        // alignment, for which every bit pattern is valid.
        unsafe { std::slice::from_raw_parts(floats.as_ptr().cast(), self.len) }
    }

    fn as_mut_slice(&mut self) -> &mut [VertexRegisters] {
        let floats = &mut self.floats[self.start..self.start + self.len * 64];
        // SAFETY: as in `as_slice`, and `floats` is borrowed mutably for the
        // slice's lifetime.
        unsafe { std::slice::from_raw_parts_mut(floats.as_mut_ptr().cast(), self.len) }
    }
}

/// The next misalignment of the wide engine's records (0, 4, 8, 12 bytes in
/// turn).
fn next_shift() -> usize {
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 4 * 4
}

/// [`compare_vertices_with_masks`] with all inputs, under `policy`; under
/// `Reset` (which always has a vertex kernel for these programs) also
/// asserts that the kernel shaded every vertex, `what` naming the case.
fn compare_reset_in_kernel(
    case: &TestCase,
    states: &[UnitState],
    width: Width,
    policy: StatePolicy,
    output_mask: u16,
    what: &dyn std::fmt::Display,
) -> BatchSummary {
    let before = wide::kernel_vertices();
    let summary = compare_vertices_with_masks(case, states, width, policy, 0xffff, output_mask);
    if policy == StatePolicy::Reset {
        assert_eq!(
            wide::kernel_vertices() - before,
            states.len() as u64,
            "{what}: every vertex in the kernel"
        );
    }
    summary
}

/// [`compare_vertices`] with the given input and output masks; the wide
/// engine's records sit at each misalignment in turn ([`ShiftedRecords`]).
fn compare_vertices_with_masks(
    case: &TestCase,
    states: &[UnitState],
    width: Width,
    policy: StatePolicy,
    input_mask: u16,
    output_mask: u16,
) -> BatchSummary {
    let (interp, wide_shader) = shaders(case, width);
    let inputs: Vec<VertexRegisters> = states.iter().map(|s| s.inputs).collect();
    let untouched = [[-7.5f32; 4]; 16];
    let mut expected_out = vec![untouched; inputs.len()];
    let shift = next_shift();
    let shifted_inputs = ShiftedRecords::new(&inputs, shift);
    let mut got_out = ShiftedRecords::new(&expected_out, shift);
    let mut expected_state = states[0].clone();
    let mut got_state = states[0].clone();
    let expected = interp
        .run_vertices(
            &case.uniforms,
            &inputs,
            input_mask,
            &mut expected_out,
            output_mask,
            policy,
            &mut expected_state,
            &mut (),
        )
        .expect("batch");
    let got = wide_shader
        .run_vertices(
            &case.uniforms,
            shifted_inputs.as_slice(),
            input_mask,
            got_out.as_mut_slice(),
            output_mask,
            policy,
            &mut got_state,
            &mut (),
        )
        .expect("batch");
    let context = || {
        format!(
            "{policy:?}, {width:?}, masks {input_mask:#x}/{output_mask:#x}, {} vertices, \
             records {shift} bytes past 16-byte alignment: {case:?}",
            inputs.len()
        )
    };
    assert_same_outputs_and_state(
        got_out.as_slice(),
        &expected_out,
        &got_state,
        &expected_state,
        &context(),
    );
    let strip = |s: BatchSummary| BatchSummary {
        wide_vertices: 0,
        wide_lanes: 0,
        single_vertex_vertices: 0,
        ..s
    };
    assert_eq!(strip(got), strip(expected), "summary, {}", context());
    assert_eq!(
        expected.wide_vertices, 0,
        "the interpreter runs one vertex at a time"
    );
    got
}

#[test]
fn run_vertices_matches_the_interpreter_with_both_policies() {
    let mut rng = Rng(0x5eed_0002);
    for width in widths() {
        let (mut cases, mut carried_wide) = (0, 0);
        while cases < case_count() {
            let Some((case, states)) = random_batch(&mut rng) else {
                continue;
            };
            cases += 1;
            let reset = compare_vertices(&case, &states, width, StatePolicy::Reset, &mut rng);
            assert_eq!(reset.wide_vertices, states.len(), "Reset is always wide");
            assert_eq!(reset.wide_lanes, width.lanes());
            let carry = compare_vertices(&case, &states, width, StatePolicy::Carry, &mut rng);
            carried_wide += carry.wide_vertices;
        }
        // Random programs mostly read registers before writing them; enough
        // do not for the carried policy to run wide too.
        assert!(carried_wide > 0, "no Carry batch ran wide at {width:?}");
        eprintln!("{width:?}: {carried_wide} vertices with carried state ran wide");
    }
}

/// Directed: per-lane flags decide an `ifc` and a `breakc` inside a loop, so
/// lanes diverge, run different numbers of iterations, and the budget stops
/// some lanes only; `c[a0.x]` reads a different constant per lane.
#[test]
fn divergent_lanes_and_budget_stops_per_lane() {
    // Every vertex in lanes: this test is about the wide engine's own paths.
    wide::force_lanes(true);
    use common::assemble;
    let source = "
        mova a0.x, v1.x
        mov r1, c0[a0.x]
        loop i0, last
        add r0, r0, v0
        cmp c20, le, le, r0
        breakc cmp.x
    last:
        add r2, r2, c23
        ifc cmp.x, else, 1
        mov o1, c21
        jmpu b0, done
    else:
        mov o1, c22
    done:
        mov o0, r0
        mov o2, r1
        mov o3, r2
        end
    ";
    let program = std::sync::Arc::new(assemble(source).program());
    let mut uniforms = pica_jit::Uniforms::default();
    uniforms.i[0] = [15, 0, 1, 0];
    uniforms.f[20] = [10.0; 4];
    uniforms.f[21] = [1.0, 2.0, 3.0, 4.0];
    uniforms.f[22] = [-1.0, -2.0, -3.0, -4.0];
    uniforms.f[23] = [1.0; 4];
    uniforms.b[0] = true;
    for (k, c) in uniforms.f[..8].iter_mut().enumerate() {
        *c = [k as f32 * 10.0, 1.0, 2.0, 3.0];
    }
    for width in widths() {
        for precision in [pica_jit::Precision::F24, pica_jit::Precision::F32] {
            for budget in [5, 30, 60, 1000] {
                let config = pica_jit::ShaderConfig {
                    precision,
                    budget,
                    ..Default::default()
                };
                let interp = Shader::new(program.clone(), config, EngineKind::Interpreter).unwrap();
                let wide_shader = Shader::new(program.clone(), config, EngineKind::Jit)
                    .unwrap()
                    .with_batch_width(Some(width))
                    .unwrap();
                // 11 vertices: step sizes 0.5 .. 5.5 (different iteration
                // counts, lane 0 never reaches 10 within 15 iterations), a0.x
                // 0 .. 10 (slots beyond c7 read other constants).
                let states: Vec<UnitState> = (0..11)
                    .map(|k| {
                        let mut s = UnitState::default();
                        s.inputs[0] = [0.5 + k as f32 * 0.5, 0.0, 0.0, 0.0];
                        s.inputs[1] = [k as f32, 0.0, 0.0, 0.0];
                        s
                    })
                    .collect();
                let mut expected = states.clone();
                let expected_stops = interp.run_batch(&uniforms, &mut expected, &mut ());
                let mut got = states.clone();
                let before = wide::vertices_shaded();
                let stops = wide_shader.run_batch(&uniforms, &mut got, &mut ());
                if std::env::var_os("WIDE_DEBUG").is_some() {
                    eprintln!(
                        "{width:?} {precision:?} {budget}: got {stops:?}\n expected {expected_stops:?}"
                    );
                    for k in 0..11 {
                        eprintln!(
                            "  {k}: r0 {:?} {:?}  o1 {:?} {:?}",
                            got[k].temps[0],
                            expected[k].temps[0],
                            got[k].outputs[1],
                            expected[k].outputs[1]
                        );
                    }
                }
                assert_eq!(wide::vertices_shaded() - before, 11);
                assert_eq!(
                    stops, expected_stops,
                    "{width:?} {precision:?} budget {budget}"
                );
                assert_same_states(&got, &expected, |k, diff| {
                    format!("vertex {k}: {diff}, {width:?} {precision:?} budget {budget}")
                });
                if budget == 30 {
                    // Some lanes stop on the budget, others end.
                    assert!(stops.contains(&Stop::BudgetExceeded), "{stops:?}");
                    assert!(stops.contains(&Stop::End), "{stops:?}");
                }
                if budget == 1000 {
                    assert!(stops.iter().all(|s| *s == Stop::End));
                    // Real values: vertex 3 steps by 2.0 and stops at 10.
                    assert_eq!(got[3].outputs[0][0], 10.0);
                    assert_eq!(got[3].outputs[1], [1.0, 2.0, 3.0, 4.0]);
                    // Vertex 0 (step 0.5) never reaches 10: 16 iterations.
                    assert_eq!(got[0].outputs[0][0], 8.0);
                    assert_eq!(got[0].outputs[1], [-1.0, -2.0, -3.0, -4.0]);
                    // c[a0.x]: vertex 5 reads c5.
                    assert_eq!(got[5].outputs[2], [50.0, 1.0, 2.0, 3.0]);
                }
            }
        }
    }
}

/// Directed: relative reads `c[a0.x + n]` where every lane reads the same slot
/// (in range or not: the 16-lane code reads it once and broadcasts), where
/// lanes read different slots (a vector gather there), and a loop's `c[aL]`.
#[test]
fn relative_reads_with_one_slot_or_many() {
    use common::assemble;
    let source = "
        mova a0.x, v1.x
        mov o0, c0[a0.x]
        mov o1, c90[a0.x]
        mov o2, c2[a0.x]
        mov r0, c95
        for i0
        add r0, r0, c10[aL]
        .end
        mov o3, r0
        end
    ";
    let program = std::sync::Arc::new(assemble(source).program());
    let mut uniforms = pica_jit::Uniforms::default();
    for (k, c) in uniforms.f.iter_mut().enumerate() {
        let k = k as f32;
        *c = [k, k + 0.25, -k, k * 2.0];
    }
    uniforms.i[0] = [3, 0, 7, 0];
    // Per vertex a0.x: one slot for all (in range, then outside the 96
    // constants on either side), then a different slot per lane.
    type Case = (&'static str, fn(usize) -> f32);
    let cases: [Case; 5] = [
        ("one slot", |_| 3.0),
        ("one slot, too high for c90", |_| 7.0),
        ("one slot, negative", |_| -5.0),
        ("mixed", |k| (k % 13) as f32 - 4.0),
        ("mixed, all in range", |k| (k % 6) as f32),
    ];
    for width in widths() {
        for precision in [pica_jit::Precision::F24, pica_jit::Precision::F32] {
            let config = pica_jit::ShaderConfig {
                precision,
                ..Default::default()
            };
            let interp = Shader::new(program.clone(), config, EngineKind::Interpreter).unwrap();
            let wide_shader = Shader::new(program.clone(), config, EngineKind::Jit)
                .unwrap()
                .with_batch_width(Some(width))
                .unwrap();
            for (name, a0) in cases {
                // 2 full groups of every width, then a partial one.
                let states: Vec<UnitState> = (0..37)
                    .map(|k| {
                        let mut s = UnitState::default();
                        s.inputs[1] = [a0(k), 0.0, 0.0, 0.0];
                        s
                    })
                    .collect();
                let mut expected = states.clone();
                let expected_stops = interp.run_batch(&uniforms, &mut expected, &mut ());
                let mut got = states;
                let before = wide::vertices_shaded();
                let stops = wide_shader.run_batch(&uniforms, &mut got, &mut ());
                assert_eq!(wide::vertices_shaded() - before, 37, "{name}");
                assert_eq!(stops, expected_stops, "{name}");
                assert_same_states(&got, &expected, |k, diff| {
                    format!("{name}: vertex {k}: {diff}, {width:?} {precision:?}")
                });
                if name == "one slot, negative" {
                    assert_eq!(got[0].outputs[0], [1.0; 4], "outside: (1, 1, 1, 1)");
                }
            }
        }
    }
}

#[path = "support/corpus_skip.rs"]
mod corpus_skip;

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus");

/// A number of the kind vertex data holds, now and then a special value
/// (±0, ±inf, NaN with payload, float24-subnormal, too large for float24).
fn corpus_value(rng: &mut Rng) -> f32 {
    match rng.below(20) {
        0 => f32::from_bits(
            [
                0x8000_0000,
                0x7f80_0000,
                0xff80_0000,
                0x7fc0_1234,
                0x1000_0001,
                0x6000_0000,
            ][rng.below(6) as usize],
        ),
        1..=3 => rng.below(17) as f32 - 8.0,
        _ => (rng.below(1 << 20) as f32 / (1 << 19) as f32 - 1.0) * 100.0,
    }
}

fn corpus_vec4(rng: &mut Rng) -> [f32; 4] {
    [0; 4].map(|_| corpus_value(rng))
}

/// Every vertex-shader DVLE of the corpus (and the embedded default shader),
/// both precisions, every width: batches of random vertices through
/// `run_batch` and `run_vertices` with both state policies, against the
/// interpreter.
#[test]
fn corpus_matches_the_interpreter_at_every_width() {
    // Every vertex in lanes: this test is about the wide engine's own paths.
    wide::force_lanes(true);
    let mut files: Vec<(String, Vec<u8>)> =
        vec![("default".into(), pica_jit::DEFAULT_SHADER.to_vec())];
    match std::fs::read_dir(CORPUS) {
        Ok(dir) => {
            let mut paths: Vec<_> = dir
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "shbin"))
                .collect();
            paths.sort();
            for p in paths {
                files.push((
                    p.display().to_string(),
                    std::fs::read(&p).expect("read corpus file"),
                ));
            }
        }
        Err(_) => {
            corpus_skip::corpus_absent("corpus_matches_the_interpreter_at_every_width", CORPUS)
        }
    }
    let mut rng = Rng(0x5eed_0003);
    let (mut compared, mut in_vertex_kernel) = (0, 0);
    for (name, bytes) in &files {
        let Ok(shbin) = pica_jit::shbin::Shbin::parse(bytes) else {
            continue;
        };
        let Ok(program) =
            pica_jit::Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone())
        else {
            continue;
        };
        let program = std::sync::Arc::new(program);
        for (d, dvle) in shbin.dvles.iter().enumerate() {
            if dvle.kind != ShaderKind::Vertex || dvle.main as usize >= program.len() {
                continue;
            }
            for precision in [pica_jit::Precision::F24, pica_jit::Precision::F32] {
                let config = pica_jit::ShaderConfig {
                    entry: dvle.main,
                    kind: dvle.kind,
                    precision,
                    ..Default::default()
                };
                let mut uniforms = pica_jit::Uniforms::default();
                for c in uniforms.f.iter_mut() {
                    *c = corpus_vec4(&mut rng);
                }
                for i in uniforms.i.iter_mut() {
                    *i = [rng.below(6) as u8, rng.below(4) as u8, 1, 0];
                }
                for b in uniforms.b.iter_mut() {
                    *b = rng.below(2) == 0;
                }
                uniforms.apply_constants(&dvle.constants);
                let states: Vec<UnitState> = (0..37)
                    .map(|_| {
                        let mut s = UnitState::default();
                        for v in s.inputs.iter_mut() {
                            *v = corpus_vec4(&mut rng);
                        }
                        s
                    })
                    .collect();
                let case = TestCase {
                    program: program.clone(),
                    config,
                    uniforms,
                    states: states.clone(),
                    carry_state: false,
                };
                for width in widths() {
                    let what = format!("{name} DVLE {d} {precision:?} {width:?}");
                    let (interp, wide_shader) = shaders(&case, width);
                    let mut expected = states.clone();
                    let expected_stops = interp.run_batch(&case.uniforms, &mut expected, &mut ());
                    let mut got = states.clone();
                    let before = wide::vertices_shaded();
                    let before_kernel = wide::kernel_vertices();
                    let stops = wide_shader.run_batch(&case.uniforms, &mut got, &mut ());
                    assert_eq!(
                        wide::vertices_shaded() - before,
                        states.len() as u64,
                        "{what}"
                    );
                    let in_kernel = wide::kernel_vertices() - before_kernel;
                    assert_eq!(stops, expected_stops, "{what}");
                    assert_same_states(&got, &expected, |k, diff| {
                        format!("{what}: vertex {k}: {diff}")
                    });
                    for policy in [StatePolicy::Reset, StatePolicy::Carry] {
                        let summary = compare_vertices(&case, &states, width, policy, &mut rng);
                        if policy == StatePolicy::Reset {
                            assert_eq!(summary.wide_vertices, states.len(), "{what}");
                        }
                    }
                    // Every corpus shader (the branchy one with `end` in a
                    // branch included) shades every vertex in the kernels:
                    // `run_batch` and, in the emulator's layout with every
                    // input given, `run_vertices`, whole groups and the
                    // padded tail.
                    {
                        assert_eq!(in_kernel, states.len() as u64, "{what}: batch kernel");
                        let before = wide::kernel_vertices();
                        compare_vertices_with_masks(
                            &case,
                            &states,
                            width,
                            StatePolicy::Reset,
                            0xffff,
                            0xffff,
                        );
                        assert_eq!(
                            wide::kernel_vertices() - before,
                            states.len() as u64,
                            "{what}: run_vertices in the vertex-layout kernel"
                        );
                        in_vertex_kernel += 1;
                    }
                    compared += 1;
                }
            }
        }
    }
    assert!(compared > 0 || widths().is_empty());
    assert!(
        in_vertex_kernel > 0 || widths().is_empty(),
        "some corpus shader runs in the vertex-layout kernel"
    );
    eprintln!(
        "corpus: {compared} (shader, precision, width) combinations compared, \
         {in_vertex_kernel} of them in the vertex-layout kernel"
    );
}

/// A block the wide lowering gives up on (more distinct relative reads than
/// it has gather rows) is handed over to the interpreter lane by lane: same
/// bits, and the hand-over is visible as calls into Rust.
#[test]
fn blocks_the_lowering_gives_up_on_are_handed_over() {
    // Every vertex in lanes: this test is about the wide engine's own paths.
    wide::force_lanes(true);
    use common::assemble;
    let mut source = String::from("mova a0.x, v0.x\nmov r0, c0[a0.x]\n");
    for k in 1..40 {
        source += &format!("add r0, r0, c{k}[a0.x]\n");
    }
    source += "mov o0, r0\nend\n";
    let program = std::sync::Arc::new(assemble(&source).program());
    let mut uniforms = pica_jit::Uniforms::default();
    for (k, c) in uniforms.f.iter_mut().enumerate() {
        *c = [k as f32, 0.5, -(k as f32), 2.0];
    }
    for width in widths() {
        for precision in [pica_jit::Precision::F24, pica_jit::Precision::F32] {
            let config = pica_jit::ShaderConfig {
                precision,
                ..Default::default()
            };
            let interp = Shader::new(program.clone(), config, EngineKind::Interpreter).unwrap();
            let wide_shader = Shader::new(program.clone(), config, EngineKind::Jit)
                .unwrap()
                .with_batch_width(Some(width))
                .unwrap();
            let states: Vec<UnitState> = (0..13)
                .map(|k| {
                    let mut s = UnitState::default();
                    s.inputs[0] = [k as f32 * 7.0 - 20.0, 0.0, 0.0, 0.0];
                    s
                })
                .collect();
            let mut expected = states.clone();
            let expected_stops = interp.run_batch(&uniforms, &mut expected, &mut ());
            let mut got = states.clone();
            let calls = pica_jit::jit::rust_calls();
            let stops = wide_shader.run_batch(&uniforms, &mut got, &mut ());
            assert!(
                pica_jit::jit::rust_calls() - calls >= 13,
                "every lane is handed over"
            );
            assert_eq!(stops, expected_stops);
            assert_same_states(&got, &expected, |k, diff| {
                format!("vertex {k}: {diff}, {width:?} {precision:?}")
            });
            // Real values: vertex 3 has a0.x = 1, so it sums c1..c40 (.x).
            assert_eq!(got[3].outputs[0][0], (1..=40).sum::<i32>() as f32);
        }
    }
}

/// Whether the code from `entry` runs straight to an `end`: no flow
/// instruction on the way (the batch kernel's programs).
fn straight_from(program: &pica_jit::Program, entry: u32) -> bool {
    use pica_jit::isa::Instruction;
    for instr in program.instructions().iter().skip(entry as usize) {
        match instr {
            Instruction::End => return true,
            Instruction::Break { .. }
            | Instruction::Call { .. }
            | Instruction::If { .. }
            | Instruction::Loop { .. }
            | Instruction::Jmp { .. } => return false,
            _ => {}
        }
    }
    false
}

/// A state with every register, address register and flag random (bits the
/// program does not write must come back unchanged).
fn random_state(rng: &mut Rng) -> UnitState {
    let mut s = UnitState::default();
    for reg in s
        .inputs
        .iter_mut()
        .chain(&mut s.temps)
        .chain(&mut s.outputs)
    {
        *reg = corpus_vec4(rng);
    }
    s.a0 = [rng.below(256) as i32 - 128, rng.below(256) as i32 - 128];
    s.al = rng.below(256) as i32;
    s.cmp = [rng.below(2) == 0, rng.below(2) == 0];
    s
}

/// Straight-line programs (the default shader, most of the corpus, random
/// programs without flow) run the whole groups of a batch in one call of the
/// batch kernel, bit for bit as the interpreter, from states whose every
/// register is random; so do programs whose forward branches, `if`s and
/// calls the kernel runs under lane masks (the corpus's `ifu` and `jmpc`
/// shaders, random ones with flag-decided branches where lanes disagree).
#[test]
fn programs_run_whole_groups_in_the_batch_kernel() {
    let mut programs: Vec<(
        String,
        std::sync::Arc<pica_jit::Program>,
        pica_jit::ShaderConfig,
        pica_jit::Uniforms,
    )> = Vec::new();
    let mut files = vec![("default".to_string(), pica_jit::DEFAULT_SHADER.to_vec())];
    if let Ok(dir) = std::fs::read_dir(CORPUS) {
        let mut paths: Vec<_> = dir.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.retain(|p| p.extension().is_some_and(|x| x == "shbin"));
        paths.sort();
        for p in paths {
            files.push((
                p.display().to_string(),
                std::fs::read(&p).expect("read corpus file"),
            ));
        }
    } else {
        corpus_skip::corpus_absent("programs_run_whole_groups_in_the_batch_kernel", CORPUS);
    }
    let mut rng = Rng(0x5eed_0004);
    for (name, bytes) in &files {
        let shbin = pica_jit::shbin::Shbin::parse(bytes).expect("corpus files parse");
        let program = std::sync::Arc::new(
            pica_jit::Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone())
                .expect("corpus programs load"),
        );
        for (d, dvle) in shbin.dvles.iter().enumerate() {
            if dvle.kind != ShaderKind::Vertex || dvle.main as usize >= program.len() {
                continue;
            }
            for precision in [pica_jit::Precision::F24, pica_jit::Precision::F32] {
                let config = pica_jit::ShaderConfig {
                    entry: dvle.main,
                    kind: dvle.kind,
                    precision,
                    ..Default::default()
                };
                let mut uniforms = pica_jit::Uniforms::default();
                for c in uniforms.f.iter_mut() {
                    *c = corpus_vec4(&mut rng);
                }
                uniforms.apply_constants(&dvle.constants);
                programs.push((
                    format!("{name} DVLE {d} {precision:?}"),
                    program.clone(),
                    config,
                    uniforms,
                ));
            }
        }
    }
    let mut generated = 0;
    while generated < case_count() / 4 {
        let Ok(case) = generate(&mut Unstructured::new(&rng.bytes(2048))) else {
            continue;
        };
        if case.config.kind == ShaderKind::Vertex {
            generated += 1;
            programs.push((
                format!("{case:?}"),
                case.program,
                case.config,
                case.uniforms,
            ));
        }
    }
    let (mut straight, mut kernel_runs, mut branchy, mut carried) = (0, 0, 0, 0);
    for width in widths() {
        let lanes = width.lanes();
        for (what, program, config, uniforms) in &programs {
            let is_straight = straight_from(program, config.entry);
            let case = TestCase {
                program: program.clone(),
                config: *config,
                uniforms: uniforms.clone(),
                states: vec![],
                carry_state: false,
            };
            let (interp, wide_shader) = shaders(&case, width);
            // Whole groups and a tail run as one more group, padded: two
            // groups and 3 (a pass of two groups where the kernel has one,
            // the tail padded to one group), or three and 5 (the tail
            // padded to a pass of two groups).
            let len = if rng.below(2) == 0 {
                2 * lanes + 3
            } else {
                3 * lanes + 5
            };
            let states: Vec<UnitState> = (0..len).map(|_| random_state(&mut rng)).collect();
            let (expected_stops, expected, stops, got, in_kernel) =
                batch_on_both(&interp, &wide_shader, uniforms, &states);
            if is_straight && expected_stops.iter().all(|s| *s == Stop::End) {
                straight += 1;
                assert_eq!(
                    in_kernel,
                    states.len() as u64,
                    "{what} {width:?}: whole groups and the padded tail in the kernel"
                );
                kernel_runs += 1;
            } else if what.starts_with("default ") {
                // The default shader's loop, call and `ifu` all run in it.
                assert_eq!(
                    in_kernel,
                    states.len() as u64,
                    "{what} {width:?}: in the kernel"
                );
                branchy += 1;
            } else if in_kernel > 0 {
                assert_eq!(
                    in_kernel,
                    states.len() as u64,
                    "{what} {width:?}: whole groups and the padded tail in the kernel"
                );
                branchy += 1;
            }
            assert_eq!(stops, expected_stops, "{what} {width:?}");
            assert_same_states(&got, &expected, |k, diff| {
                format!("{what} {width:?}: vertex {k}: {diff}")
            });
            // The emulator's layout (every input from the batch, some
            // outputs): the kernel too, from one starting state.
            let before = wide::kernel_vertices();
            let output_mask = rng.next() as u16 | 1;
            compare_vertices_with_masks(
                &case,
                &states,
                width,
                StatePolicy::Reset,
                0xffff,
                output_mask,
            );
            // Every ISA's vertex-layout kernel runs what its batch kernel
            // runs.
            if in_kernel > 0 {
                assert_eq!(
                    wide::kernel_vertices() - before,
                    states.len() as u64,
                    "{what} {width:?}: run_vertices's whole groups and padded tail in the kernel"
                );
            }
            // Carried state: the kernel too where no vertex depends on the one
            // before.
            let before = wide::kernel_vertices();
            compare_vertices_with_masks(
                &case,
                &states,
                width,
                StatePolicy::Carry,
                0xffff,
                output_mask,
            );
            if wide::kernel_vertices() > before {
                carried += 1;
            }
        }
    }
    assert!(
        straight > 0 || widths().is_empty(),
        "some program is straight"
    );
    assert!(
        branchy > 0 || widths().is_empty(),
        "some program with branches runs in the kernel"
    );
    assert!(
        carried > 0 || widths().is_empty(),
        "some batch with carried state runs in the kernel"
    );
    eprintln!(
        "batch kernel: {kernel_runs} straight and {branchy} branching (program, width) pairs ran in it, {carried} with carried state"
    );
}

/// `Shader::run_batch_parallel` (feature `threads`) gives `run_batch`'s
/// results bit for bit with any number of threads, and refuses a geometry
/// shader.
#[test]
fn parallel_batches_equal_one_thread() {
    let shbin = pica_jit::shbin::Shbin::parse(pica_jit::DEFAULT_SHADER).expect("parses");
    let dvle = &shbin.dvles[0];
    let program = std::sync::Arc::new(
        pica_jit::Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone())
            .expect("loads"),
    );
    let mut rng = Rng(0x5eed_0005);
    for precision in [pica_jit::Precision::F24, pica_jit::Precision::F32] {
        let config = pica_jit::ShaderConfig {
            entry: dvle.main,
            kind: dvle.kind,
            precision,
            ..Default::default()
        };
        let shader = Shader::new(program.clone(), config, EngineKind::Auto).expect("shader");
        let mut uniforms = pica_jit::Uniforms::default();
        for c in uniforms.f.iter_mut() {
            *c = corpus_vec4(&mut rng);
        }
        uniforms.apply_constants(&dvle.constants);
        let states: Vec<UnitState> = (0..77).map(|_| random_state(&mut rng)).collect();
        let mut expected = states.clone();
        let expected_stops = shader.run_batch(&uniforms, &mut expected, &mut ());
        for threads in [1, 2, 3, 8] {
            let mut got = states.clone();
            let threads = std::num::NonZeroUsize::new(threads).expect("not zero");
            let stops = shader
                .run_batch_parallel(&uniforms, &mut got, threads)
                .expect("a vertex shader");
            assert_eq!(stops, expected_stops, "{threads} threads");
            assert_same_states(&got, &expected, |k, diff| {
                format!("{threads} threads, {precision:?}: state {k}: {diff}")
            });
        }
    }
    let geometry = pica_jit::ShaderConfig {
        kind: ShaderKind::Geometry,
        ..Default::default()
    };
    let shader = Shader::new(program, geometry, EngineKind::Interpreter).expect("shader");
    let mut states = vec![UnitState::default(); 4];
    let two = std::num::NonZeroUsize::new(2).expect("not zero");
    assert_eq!(
        shader.run_batch_parallel(&pica_jit::Uniforms::default(), &mut states, two),
        Err(pica_jit::BatchError::GeometryAcrossThreads)
    );
}

/// The real shaders whose flow depends on per-vertex values (issue 19): the
/// corpus's SNES/Mega Drive front-end shader (seven `jmpc` per vertex on
/// ranges of its packed inputs) and three of the picasso corpus (lighting
/// `ifc`s). Vertices spread across the ranges those branches test, so the
/// lanes of a group take different paths; `run_vertices` equals the
/// interpreter bit for bit at every width, in both precisions and both
/// state policies, and the summary says where each vertex ran.
#[test]
fn branchy_shaders_match_the_interpreter_and_count_where_vertices_ran() {
    const ASM_EXPECTED: &str =
        concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/asm-corpus/expected");
    let files = [
        format!("{CORPUS}/bubble2k16__emus3ds__src_cores_picodrive_3ds_shaderfast2.v.shbin"),
        format!(
            "{ASM_EXPECTED}/devkitPro__3ds-examples__graphics_gpu_normal_mapping_source_vshader.v.shbin"
        ),
        format!("{ASM_EXPECTED}/0x00002a__pican__test_cases_inputs_complex-mesh-shader.shbin"),
        format!("{ASM_EXPECTED}/wheremyfoodat__Panda3DS__tests_PICA_LITP_source_vshader.v.shbin"),
    ];
    let mut rng = Rng(0x5eed_0019);
    let (mut lanes_total, mut single_total) = (0, 0);
    for file in &files {
        let Ok(bytes) = std::fs::read(file) else {
            corpus_skip::corpus_absent(
                "branchy_shaders_match_the_interpreter_and_count_where_vertices_ran",
                file,
            );
            continue;
        };
        let shbin = pica_jit::shbin::Shbin::parse(&bytes).expect("parses");
        let program =
            pica_jit::Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone())
                .expect("loads");
        let program = std::sync::Arc::new(program);
        let dvle = &shbin.dvles[0];
        for precision in [pica_jit::Precision::F24, pica_jit::Precision::F32] {
            let config = pica_jit::ShaderConfig {
                entry: dvle.main,
                kind: dvle.kind,
                precision,
                ..Default::default()
            };
            let mut uniforms = pica_jit::Uniforms::default();
            for c in uniforms.f.iter_mut() {
                *c = corpus_vec4(&mut rng);
            }
            uniforms.apply_constants(&dvle.constants);
            // Values on both sides of the shaders' tests: signs, the packed
            // ranges (±8192, ±16384, ±24576, 32768) and the marker -1.
            let value = |rng: &mut Rng| match rng.below(4) {
                0 => -1.0,
                1 => rng.below(80_001) as f32 - 40_000.0,
                _ => corpus_value(rng),
            };
            let states: Vec<UnitState> = (0..77)
                .map(|_| {
                    let mut s = UnitState::default();
                    for v in s.inputs.iter_mut() {
                        *v = [0; 4].map(|_| value(&mut rng));
                    }
                    s
                })
                .collect();
            let case = TestCase {
                program: program.clone(),
                config,
                uniforms,
                states: states.clone(),
                carry_state: false,
            };
            for width in widths() {
                for policy in [StatePolicy::Reset, StatePolicy::Carry] {
                    let kernel_vertices_before = wide::kernel_vertices();
                    let summary =
                        compare_vertices_with_masks(&case, &states, width, policy, 0xffff, 0xffff);
                    let kernel_vertices_after = wide::kernel_vertices();
                    let what = format!("{file} {precision:?} {width:?} {policy:?}");
                    assert!(
                        summary.single_vertex_vertices <= summary.wide_vertices,
                        "{what}: {summary:?}"
                    );
                    // Every vertex in the vertex-layout kernel (its plans
                    // run `end` in some lanes and nested branches; under
                    // `Carry` no vertex reads what an earlier one wrote).
                    assert_eq!(
                        kernel_vertices_after - kernel_vertices_before,
                        states.len() as u64,
                        "{what}: run_vertices in the kernel"
                    );
                    assert_eq!(summary.wide_vertices, states.len(), "{what}");
                    if policy == StatePolicy::Reset {
                        assert!(
                            summary.single_vertex_vertices < summary.wide_vertices,
                            "{what}: some vertices finish in lanes: {summary:?}"
                        );
                        lanes_total += summary.wide_vertices - summary.single_vertex_vertices;
                        single_total += summary.single_vertex_vertices;
                    }
                    eprintln!(
                        "{what}: {} vertices, {} started in lanes, {} of them on the single-vertex JIT",
                        summary.vertices, summary.wide_vertices, summary.single_vertex_vertices
                    );
                }
            }
        }
    }
    eprintln!(
        "branchy shaders: {lanes_total} vertices finished in lanes, {single_total} on the single-vertex JIT"
    );
}

/// Lanes that split and meet again under execution masks: nested `ifc`s,
/// forward `jmpc`s to a shared target, a loop that `breakc` leaves in some
/// lanes only, a relative read with each lane's own `a0`, and budgets that
/// stop some lanes before the end; every width, both precisions and
/// policies, bit for bit against the interpreter.
#[test]
fn diverging_and_reconverging_lanes_match_the_interpreter() {
    let text = "\
.fvec table[8]
.constf k(0.5, -0.5, 2.0, 0.0)
.constf lim(0.0, 0.25, 3.0, 1.0)
.alias pos v0
.alias nrm v1
.out opos position
.out ocol color
.proc main
    mova a0.x, nrm.x
    mov r0, table[a0.x]
    mov r3, k
    cmp pos, lt, ge, r3.xx
    ifc cmp.x
        add r0, r0, k.x
        ifc cmp.y
            mul r0, r0, k.z
        .else
            add r0.xy, r0.yx, k.y
        .end
    .else
        mov r1, nrm
        mov r4, lim
        cmp r1, gt, lt, r4.yy
        jmpc cmp.x, skip
        add r0, r0, r1
        jmpc cmp.y, skip
        mul r0, r0, r1
skip:
        add r0.w, r0.w, k.x
    .end
    mov r2, lim.wwww
    for i0
        add r2, r2, k.x
        cmp r2, ge, ge, pos.yy
        breakc cmp.x
        add r0.z, r0.z, r2.x
    .end
    mov opos, r0
    mov ocol, r2
    end
.end
";
    let (program, dvle) = assembled("diverge.pica", text);
    let mut rng = Rng(0x5eed_0020);
    for precision in [pica_jit::Precision::F24, pica_jit::Precision::F32] {
        for budget in [u64::MAX, 40, 25] {
            let config = pica_jit::ShaderConfig {
                entry: dvle.main,
                kind: dvle.kind,
                precision,
                budget,
            };
            let mut uniforms = pica_jit::Uniforms::default();
            for (n, c) in uniforms.f.iter_mut().enumerate() {
                *c = [0, 1, 2, 3].map(|k| (n * 4 + k) as f32 * 0.125 - 3.0);
            }
            uniforms.i[0] = [6, 0, 1, 0];
            uniforms.apply_constants(&dvle.constants);
            let states: Vec<UnitState> = (0..45)
                .map(|_| {
                    let mut s = UnitState::default();
                    s.inputs[0] = [0; 4].map(|_| rng.below(9) as f32 * 0.5 - 1.0);
                    s.inputs[1] = [0; 4].map(|_| rng.below(13) as f32 * 0.25 - 1.0);
                    s
                })
                .collect();
            let case = TestCase {
                program: program.clone(),
                config,
                uniforms,
                states: states.clone(),
                carry_state: false,
            };
            for width in widths() {
                for policy in [StatePolicy::Reset, StatePolicy::Carry] {
                    let summary =
                        compare_vertices_with_masks(&case, &states, width, policy, 0xffff, 0xffff);
                    if policy == StatePolicy::Reset {
                        assert_eq!(summary.wide_vertices, states.len());
                    }
                    if budget == 25 {
                        assert!(summary.budget_exceeded > 0, "some lanes stop on the budget");
                        assert!(summary.ended > 0, "others end");
                    }
                }
            }
        }
    }
}

/// Where running in lanes does not pay (a short program whose lanes split
/// at every `jmpc` and leave a loop at different iterations), the batch driver runs two probe groups in lanes and
/// hands the rest of the batch to the single-vertex JIT, under both policies
/// of `run_vertices` and in `run_batch`, then remembers the verdict for the
/// shader and uniforms: a second batch goes to the single-vertex JIT whole.
/// Bit for bit against the interpreter, `Carry` included (an output written
/// on some paths only shows the previous vertex's value in the others, and
/// the final state is the last vertex's), and every vertex accounted for.
#[test]
fn vertices_lanes_do_not_pay_for_go_to_the_single_vertex_jit() {
    let text = "\
.constf k(0.5, -0.5, 2.0, 1.0)
.constf lim(0.0, 0.25, -0.25, 0.5)
.out opos position
.out ocol color
.out otex texcoord0
.proc main
    mov r0, v0
    mov r3, lim
    cmp v0, lt, lt, r3.xy
    jmpc cmp.x, a
    add r0, r0, k.x
a:
    jmpc cmp.y, b
    mul r0, r0, k.z
    mov ocol, r0
b:
    cmp v1, lt, ge, r3.zw
    jmpc cmp.x, c
    add r0.xy, r0.yx, k.y
c:
    jmpc cmp.y, d
    mov otex, v1
d:
    mov r2, r3.xxxx
    for i0
        add r2, r2, k.x
        cmp r2, ge, ge, v1
        breakc cmp.x
    .end
    add r0, r0, r2
    mov opos, r0
    end
.end
";
    let (program, dvle) = assembled("handover.pica", text);
    let mut uniforms = pica_jit::Uniforms::default();
    uniforms.apply_constants(&dvle.constants);
    uniforms.i[0] = [4, 0, 1, 0];
    let mut rng = Rng(0x5eed_4a4d);
    let inputs: Vec<VertexRegisters> = (0..77)
        .map(|_| {
            let mut v = [[0.0; 4]; 16];
            v[0] = [0; 4].map(|_| rng.below(2001) as f32 / 1000.0 - 1.0);
            v[1] = [0; 4].map(|_| rng.below(2001) as f32 / 1000.0 - 1.0);
            v
        })
        .collect();
    let mut start = UnitState::default();
    start.outputs[1] = [7.0, 8.0, 9.0, 10.0];
    start.outputs[2] = [-3.0; 4];
    start.temps[0] = [1.5; 4];
    for width in widths() {
        let lanes = width.lanes();
        let probed = 2 * lanes;
        for precision in [pica_jit::Precision::F24, pica_jit::Precision::F32] {
            let config = pica_jit::ShaderConfig {
                entry: dvle.main,
                precision,
                ..Default::default()
            };
            let interp = Shader::new(program.clone(), config, EngineKind::Interpreter).unwrap();
            for policy in [StatePolicy::Reset, StatePolicy::Carry] {
                let what = format!("{width:?} {precision:?} {policy:?}");
                let mut expected = vec![[[0.0; 4]; 16]; inputs.len()];
                let mut expected_state = start.clone();
                interp
                    .run_vertices(
                        &uniforms,
                        &inputs,
                        0b11,
                        &mut expected,
                        0b111,
                        policy,
                        &mut expected_state,
                        &mut (),
                    )
                    .unwrap();
                let shader = Shader::new(program.clone(), config, EngineKind::Jit)
                    .unwrap()
                    .with_batch_width(Some(width))
                    .unwrap();
                for call in 0..2 {
                    let mut got = vec![[[0.0; 4]; 16]; inputs.len()];
                    let mut state = start.clone();
                    let (shaded, handed) = (wide::vertices_shaded(), wide::vertices_handed_over());
                    let summary = shader
                        .run_vertices(
                            &uniforms,
                            &inputs,
                            0b11,
                            &mut got,
                            0b111,
                            policy,
                            &mut state,
                            &mut (),
                        )
                        .unwrap();
                    let shaded = wide::vertices_shaded() - shaded;
                    let handed = wide::vertices_handed_over() - handed;
                    assert_same_outputs_and_state(
                        &got,
                        &expected,
                        &state,
                        &expected_state,
                        &format_args!("{what} call {call}"),
                    );
                    assert_eq!(summary.vertices, inputs.len(), "{what}");
                    assert_eq!(summary.wide_vertices, inputs.len(), "{what}: {summary:?}");
                    assert_eq!(summary.single_vertex_vertices as u64, handed, "{what}");
                    if call == 0 {
                        // The probe groups in lanes (a side of a few lanes
                        // may leave them), the rest one at a time.
                        assert_eq!(shaded, probed as u64, "{what}: {summary:?}");
                        assert!(
                            summary.single_vertex_vertices >= inputs.len() - probed
                                && summary.single_vertex_vertices < inputs.len(),
                            "{what}: {summary:?}"
                        );
                    } else {
                        // The remembered verdict: no probe groups.
                        assert_eq!(shaded, 0, "{what}: {summary:?}");
                        assert_eq!(summary.single_vertex_vertices, inputs.len(), "{what}");
                    }
                }
                // A vertex with v0.y < 0.25 skips `mov ocol`: its `ocol` is
                // the given state's under Reset, the previous vertex's under
                // Carry (a value some earlier vertex wrote, for at least one).
                let skips = |n: usize| inputs[n][0][1] < 0.25;
                let mut carried = 0;
                for n in (1..inputs.len()).filter(|&n| skips(n)) {
                    match policy {
                        StatePolicy::Reset => {
                            assert_eq!(expected[n][1], [7.0, 8.0, 9.0, 10.0], "{what}")
                        }
                        StatePolicy::Carry => {
                            assert_eq!(expected[n][1], expected[n - 1][1], "{what}");
                            carried += usize::from(!skips(n - 1));
                        }
                    }
                }
                assert!(policy == StatePolicy::Reset || carried > 0, "{what}");
            }
            // run_batch on unit states: the same hand-over, the same verdict.
            let states: Vec<UnitState> = inputs
                .iter()
                .map(|v| {
                    let mut s = start.clone();
                    s.load_inputs(v, 0b11);
                    s
                })
                .collect();
            let mut expected = states.clone();
            let expected_stops = interp.run_batch(&uniforms, &mut expected, &mut ());
            let shader = Shader::new(program.clone(), config, EngineKind::Jit)
                .unwrap()
                .with_batch_width(Some(width))
                .unwrap();
            for call in 0..2 {
                let what = format!("{width:?} {precision:?} run_batch call {call}");
                let mut got = states.clone();
                let (shaded, handed) = (wide::vertices_shaded(), wide::vertices_handed_over());
                let stops = shader.run_batch(&uniforms, &mut got, &mut ());
                let shaded = wide::vertices_shaded() - shaded;
                let handed = wide::vertices_handed_over() - handed;
                assert_eq!(stops, expected_stops, "{what}");
                assert_same_states(&got, &expected, |k, diff| {
                    format!("{what}: state {k}: {diff}")
                });
                let (want_shaded, want_handed) = if call == 0 {
                    (probed, states.len() - probed)
                } else {
                    (0, states.len())
                };
                assert_eq!(shaded, want_shaded as u64, "{what}");
                assert_eq!(handed, want_handed as u64, "{what}");
            }
        }
    }
}

/// Random structured flow for the batch kernel's lane-mask plans: `ifc`
/// (with and without `.else`), `jmpc` over a part and `callc` of a
/// subroutine, nested up to three deep, decided by per-vertex comparisons,
/// with `end` inside parts (so lanes of a group finish at different points
/// while the others go on). Appends picasso source to `out` and
/// subroutines to `procs`.
fn flow_region(rng: &mut Rng, depth: u32, out: &mut String, procs: &mut String, labels: &mut u32) {
    flow_region_of(&straight_op, rng, depth, out, procs, labels);
}

/// One random straight-line instruction of [`flow_region`].
fn straight_op(rng: &mut Rng, out: &mut String) {
    out.push_str(&straight_line(rng, false));
}

/// A straight-line instruction of a program whose vertices stay
/// independent under `StatePolicy::Carry` ([`carry_flow_region`]): reads
/// only `r0`–`r3` (written for every vertex as it starts); writes those,
/// `o0`–`o3` (also written as it starts) and, on the paths that reach them,
/// `r4`, parts of `r5` and `a0`, which no instruction reads.
fn carry_straight_op(rng: &mut Rng, out: &mut String) {
    out.push_str(&straight_line(rng, true));
}

/// A random straight-line instruction over `r0`–`r3`, `o0`–`o3`, `c0`–`c7`
/// and `v0`–`v1`; with `write_only`, also writes of `r4`, halves of `r5`
/// and `a0` (rows no instruction here reads).
fn straight_line(rng: &mut Rng, write_only: bool) -> String {
    let (a, b, c, v, o) = (
        rng.below(4),
        rng.below(4),
        rng.below(8),
        rng.below(2),
        rng.below(4),
    );
    match rng.below(if write_only { 9 } else { 6 }) {
        0 => format!("    add r{a}, r{b}, c{c}\n"),
        1 => format!("    mul r{a}.xy, r{b}, v{v}\n"),
        2 => format!("    mov o{o}, r{b}\n"),
        3 => format!("    mad o{o}.zw, r{a}, c{c}, r{b}\n"),
        4 => format!("    cmp r{a}, lt, ge, v{v}\n"),
        5 => format!("    mov r{a}.x, v{v}.y\n"),
        6 => format!("    mov r4, r{b}\n"),
        7 => format!("    mov r5.{}, r{b}\n", ["xz", "yw"][rng.below(2) as usize]),
        _ => format!("    mova a0.xy, r{b}\n"),
    }
}

/// [`flow_region`] with [`carry_straight_op`]'s instructions.
fn carry_flow_region(
    rng: &mut Rng,
    depth: u32,
    out: &mut String,
    procs: &mut String,
    labels: &mut u32,
) {
    flow_region_of(&carry_straight_op, rng, depth, out, procs, labels);
}

/// [`flow_region`] with the straight-line instructions of `straight`.
fn flow_region_of(
    straight: &dyn Fn(&mut Rng, &mut String),
    rng: &mut Rng,
    depth: u32,
    out: &mut String,
    procs: &mut String,
    labels: &mut u32,
) {
    let items = 1 + rng.below(4);
    for _ in 0..items {
        let construct = if depth < 3 { rng.below(8) } else { 0 };
        let flag = if rng.below(2) == 0 { "cmp.x" } else { "cmp.y" };
        match construct {
            2 | 3 => {
                out.push_str(&format!("    ifc {flag}\n"));
                flow_region_of(straight, rng, depth + 1, out, procs, labels);
                if rng.below(2) == 0 {
                    out.push_str("    .else\n");
                    flow_region_of(straight, rng, depth + 1, out, procs, labels);
                }
                out.push_str("    .end\n");
            }
            4 | 5 => {
                *labels += 1;
                let label = format!("skip{labels}");
                out.push_str(&format!("    jmpc {flag}, {label}\n"));
                flow_region_of(straight, rng, depth + 1, out, procs, labels);
                out.push_str(&format!("{label}:\n"));
                straight(rng, out);
            }
            6 => {
                *labels += 1;
                let name = format!("sub{labels}");
                out.push_str(&format!("    callc {flag}, {name}\n"));
                let mut body = String::new();
                flow_region_of(straight, rng, depth + 1, &mut body, procs, labels);
                procs.push_str(&format!(".proc {name}\n{body}.end\n"));
            }
            7 if depth > 0 => out.push_str("    end\n"),
            _ => straight(rng, out),
        }
    }
    // A part's last instruction makes its flow-stack check: a plain one
    // (a branch there would race the check, which no plan runs).
    straight(rng, out);
}

/// The vertex shader `program` (entry `entry`) in both precisions with
/// random uniforms and, at every width, a batch of `groups` whole groups and
/// 3 more random states: `check` gets each case (`states` its batch).
fn random_batches(
    rng: &mut Rng,
    program: &std::sync::Arc<pica_jit::Program>,
    entry: u32,
    groups: usize,
    mut check: impl FnMut(&mut Rng, &TestCase, Width),
) {
    for precision in [pica_jit::Precision::F24, pica_jit::Precision::F32] {
        let config = pica_jit::ShaderConfig {
            entry,
            kind: ShaderKind::Vertex,
            precision,
            ..Default::default()
        };
        let mut uniforms = pica_jit::Uniforms::default();
        for c in uniforms.f.iter_mut() {
            *c = corpus_vec4(rng);
        }
        for width in widths() {
            let len = groups * width.lanes() + 3;
            let states: Vec<UnitState> = (0..len).map(|_| random_state(rng)).collect();
            let case = TestCase {
                program: program.clone(),
                config,
                uniforms: uniforms.clone(),
                states,
                carry_state: false,
            };
            check(rng, &case, width);
        }
    }
}

/// Programs whose lanes decide differently at nested branches and reach
/// `end` inside them ([`flow_region`]) run every vertex in the batch
/// kernels (`run_batch`, `run_vertices` with `Reset`), bit for bit as the
/// interpreter, at every width and in both precisions; `Carry` matches too.
#[test]
fn nested_branches_and_ends_in_some_lanes_run_in_the_kernel() {
    let mut rng = Rng(0x5eed_0021);
    let mut programs = 0;
    while programs < case_count() / 8 + 4 {
        let (mut body, mut procs, mut labels) = (String::new(), String::new(), 0);
        body.push_str("    mov r0, v0\n    mov r1, v1\n    cmp v0, lt, ge, v1\n");
        flow_region(&mut rng, 0, &mut body, &mut procs, &mut labels);
        body.push_str("    mov o0, r0\n    mov o1, r1\n    end\n");
        let text = format!(".proc main\n{body}.end\n{procs}");
        let (program, dvle) = assembled("flow.pica", &text);
        programs += 1;
        random_batches(&mut rng, &program, dvle.main, 2, |rng, case, width| {
            let (states, uniforms, len) = (&case.states, &case.uniforms, case.states.len());
            let precision = case.config.precision;
            let what = format!("{precision:?} {width:?}:\n{text}");
            let (interp, wide_shader) = shaders(case, width);
            let (expected_stops, expected, stops, got, in_kernel) =
                batch_on_both(&interp, &wide_shader, uniforms, states);
            assert_eq!(in_kernel, len as u64, "{what}: run_batch in the kernel");
            assert_eq!(stops, expected_stops, "{what}");
            assert_same_states(&got, &expected, |k, diff| {
                format!("{what}: vertex {k}: {diff}")
            });
            for policy in [StatePolicy::Reset, StatePolicy::Carry] {
                let before = wide::kernel_vertices();
                let output_mask = rng.next() as u16 | 1;
                compare_vertices_with_masks(case, states, width, policy, 0xffff, output_mask);
                if policy == StatePolicy::Reset {
                    assert_eq!(
                        wide::kernel_vertices() - before,
                        len as u64,
                        "{what}: run_vertices in the kernel"
                    );
                }
            }
        });
    }
}

/// `StatePolicy::Carry` in the vertex-layout kernel: random programs whose
/// lanes decide differently at nested branches and reach `end` inside them
/// ([`carry_flow_region`]), where no vertex reads what an earlier one wrote
/// but the paths write different rows (`r4`, halves of `r5`, `a0`). Every
/// vertex runs in the kernel, and the outputs and the final state (each of
/// those rows the value of the last vertex whose path wrote it) equal the
/// interpreter's vertex after vertex, bit for bit, at every width, in both
/// precisions, over batches of several kernel passes and a padded tail.
#[test]
fn carried_state_with_nested_branches_runs_in_the_kernel() {
    let mut rng = Rng(0x5eed_0022);
    let mut programs = 0;
    while programs < case_count() / 8 + 4 {
        let (mut body, mut procs, mut labels) = (String::new(), String::new(), 0);
        body.push_str("    mov r0, v0\n    mov r1, v1\n    mov r2, v0.yxwz\n    mov r3, v1.wzyx\n");
        for o in 0..4 {
            body.push_str(&format!("    mov o{o}, r{o}\n"));
        }
        body.push_str("    cmp v0, lt, ge, v1\n");
        carry_flow_region(&mut rng, 0, &mut body, &mut procs, &mut labels);
        body.push_str("    mov o0, r0\n    mov o1, r1\n    end\n");
        let text = format!(".proc main\n{body}.end\n{procs}");
        let (program, dvle) = assembled("carry.pica", &text);
        programs += 1;
        random_batches(&mut rng, &program, dvle.main, 5, |rng, case, width| {
            let (states, len) = (&case.states, case.states.len());
            let precision = case.config.precision;
            let before = wide::kernel_vertices();
            let output_mask = rng.next() as u16 | 1;
            let summary = compare_vertices_with_masks(
                case,
                states,
                width,
                StatePolicy::Carry,
                0xffff,
                output_mask,
            );
            let what = format!("{precision:?} {width:?}: {summary:?}\n{text}");
            assert_eq!(
                wide::kernel_vertices() - before,
                len as u64,
                "{what}: run_vertices under Carry in the kernel"
            );
            assert_eq!(summary.wide_vertices, len, "{what}");
        });
    }
}

/// Float24 arithmetic in lanes with edge values: dot products (`dp4`,
/// `dp3`, `dph`), `mad`, `mul` and `add` whose steps overflow one by one
/// (each product, each pairwise sum, the final sum), whose infinite steps
/// cancel (NaN where IEEE sums of the unquantised values would give 0), with
/// NaN inputs, `inf * 0`, products and sums that flush to +0 (from either
/// sign), values just below 2^64, float24 subnormal inputs and products
/// of `rcp`/`rsq` results that are infinite or NaN. Each such
/// lane sits among ordinary ones, in groups that hold one or several of them
/// and in groups that hold none, at every width: the wide engine's fast
/// float24 sequences, whose one range check per block sends a group to the
/// exact sequences, equal the interpreter bit for bit, and the batch kernel
/// shades every vertex; float24 subnormal, tiny, infinite and NaN inputs
/// likewise through the inputs' conversion, whose fast loads share one check
/// per group too. (Deleting a check's accumulation in `x64/wide`,
/// `pmaxsd_into` in `quantize_deferred` or `pminud_into` in
/// `f24_load_deferred`, or lowering its bound to the infinities, fails this
/// test.)
#[test]
fn f24_edge_values_in_dot_products_match_the_interpreter_at_every_width() {
    let source = "
        dp4 o0.x, v0, v1
        dp3 o0.y, v0, v1
        dph o0.z, v0, v1
        mad o0.w, v0.x, v1.x, v2.x
        mul r1, v0, v1
        add o1, r1, v2
        mul r2, v0, c0
        dp4 o2.x, c1, v0
        dp4 o2.y, r2, v1
        add o2.zw, r1.xy, r1.zw
        mad o3, v0, v1, v2
        mov o4, v0
        rcp r3.x, v2.x
        rsq r3.y, v2.y
        mul o5, r3.xyxy, v1
        dp4 o5.x, r3.xyxy, v0
        end
    ";
    let program = std::sync::Arc::new(common::assemble(source).program());
    let p = |e: i32| 2f32.powi(e);
    let ordinary = [
        [1.5, -2.25, 3.0, 0.5],
        [0.75, 1.25, -0.5, 2.0],
        [0.1, -7.0, 2.5, 1e3],
    ];
    let big = 1.5 * p(31); // big * 2^32 = 1.5 * 2^63: below 2^64, two of them above
    let mut cases: Vec<[[f32; 4]; 3]> = Vec::new();
    // A product at or above 2^64 in each position, either sign.
    for c in 0..4 {
        for sign in [1.0, -1.0] {
            let mut v = ordinary;
            v[0][c] = p(40);
            v[1][c] = sign * p(30);
            cases.push(v);
        }
    }
    // Each pairwise sum above 2^64 with products below it; the final sum.
    for (i, j) in [(0, 1), (2, 3), (0, 2), (1, 3)] {
        let mut v = ordinary;
        v[0] = [0.0; 4];
        v[1] = [0.0; 4];
        for c in [i, j] {
            v[0][c] = p(32);
            v[1][c] = big;
        }
        cases.push(v);
    }
    // Infinite steps that cancel: in one pair, and across the pairs.
    for (i, j) in [(0, 1), (2, 3), (0, 2), (1, 3)] {
        let mut v = ordinary;
        v[0][i] = p(40);
        v[1][i] = p(30);
        v[0][j] = -p(40);
        v[1][j] = p(30);
        cases.push(v);
    }
    // NaN inputs, infinities times zero, infinite inputs.
    for c in 0..4 {
        let mut v = ordinary;
        v[0][c] = f32::NAN;
        cases.push(v);
        let mut v = ordinary;
        v[0][c] = f32::INFINITY;
        v[1][c] = 0.0;
        cases.push(v);
        let mut v = ordinary;
        v[1][c] = f32::NEG_INFINITY;
        cases.push(v);
    }
    // Flush to +0: tiny products of either sign, -0 products and sums,
    // sums that cancel exactly, float24 subnormal and tiny inputs.
    cases.push([
        [p(-40), -p(-40), p(-35), p(-50)],
        [p(-40), p(-40), -p(-35), p(-20)],
        ordinary[2],
    ]);
    cases.push([
        [-1.0, 0.0, -0.0, 2.0],
        [0.0, -3.0, 5.0, -0.0],
        [-0.0, -0.0, 0.0, -0.0],
    ]);
    cases.push([
        [1.5, -1.5, 2.0, -2.0],
        [2.0, 2.0, 3.0, 3.0],
        [-2.0, 1.0, -1.0, 0.0],
    ]);
    cases.push([
        [p(-70), -p(-63), p(-62), -p(-80)],
        [1.0, 1.0, 1.0, 1.0],
        [p(-63), 0.0, 0.0, 0.0],
    ]);
    // Products and sums just below 2^64 (the largest float24 and above).
    let below = f32::from_bits(0x5F7F_FFFF);
    cases.push([
        [below, 1.0, 1.0, 0.0],
        [1.0, p(-1), 0.5, 0.0],
        [below, -below, 1.0, 0.0],
    ]);
    cases.push([
        [p(32), p(32), 0.0, 0.0],
        [p(31), p(31), 0.0, 0.0],
        [below, below, below, below],
    ]);
    let mut uniforms = pica_jit::Uniforms::default();
    uniforms.f[0] = [2.0, -p(40), p(-40), 0.5];
    uniforms.f[1] = [1.0, p(35), -0.25, p(-45)];
    for_each_width(|width| {
        let lanes = width.lanes();
        // Groups with one edge lane, groups with several and groups of
        // ordinary lanes only, then a partial group.
        let mut inputs: Vec<VertexRegisters> = Vec::new();
        let record = |v: &[[f32; 4]; 3]| {
            let mut r = [[0.0f32; 4]; 16];
            r[..3].copy_from_slice(v);
            r
        };
        for (k, case) in cases.iter().enumerate() {
            for n in 0..lanes {
                let mut v = ordinary;
                v[0][n % 4] += n as f32;
                inputs.push(record(if n == k % lanes { case } else { &v }));
            }
        }
        for chunk in cases.chunks(3) {
            for n in 0..lanes {
                inputs.push(record(chunk.get(n).unwrap_or(&ordinary)));
            }
        }
        for n in 0..lanes + lanes / 2 {
            let mut v = ordinary;
            v[2][n % 4] = n as f32 * 0.375;
            inputs.push(record(&v));
        }
        for precision in [pica_jit::Precision::F24, pica_jit::Precision::F32] {
            let config = pica_jit::ShaderConfig {
                precision,
                ..Default::default()
            };
            let interp =
                Shader::new(program.clone(), config, EngineKind::Interpreter).expect("interpreter");
            let jit = Shader::new(program.clone(), config, EngineKind::Jit)
                .expect("jit")
                .with_batch_width(Some(width))
                .expect("width available");
            let untouched = [[-7.5f32; 4]; 16];
            let mut expected = vec![untouched; inputs.len()];
            let mut got = vec![untouched; inputs.len()];
            let mut state = UnitState::default();
            interp
                .run_vertices(
                    &uniforms,
                    &inputs,
                    0xffff,
                    &mut expected,
                    0xffff,
                    StatePolicy::Reset,
                    &mut state,
                    &mut (),
                )
                .expect("batch");
            let before = wide::kernel_vertices();
            let mut state = UnitState::default();
            jit.run_vertices(
                &uniforms,
                &inputs,
                0xffff,
                &mut got,
                0xffff,
                StatePolicy::Reset,
                &mut state,
                &mut (),
            )
            .expect("batch");
            assert_eq!(
                wide::kernel_vertices() - before,
                inputs.len() as u64,
                "{width:?} {precision:?}: the batch kernel shades every vertex"
            );
            assert_same_vertices(
                &got,
                &expected,
                &inputs,
                lanes,
                &format_args!("{width:?} {precision:?}"),
            );
            if precision == pica_jit::Precision::F24 {
                // Spot checks of the rules themselves (lane 0 of the first
                // cases): an infinite product makes `dp4` infinite, and the
                // cancelling infinities make it the canonical NaN.
                assert_eq!(got[0][0][0].to_bits(), 0x7F80_0000, "{width:?}: +inf");
                assert_eq!(
                    got[lanes + 1][0][0].to_bits(),
                    0xFF80_0000,
                    "{width:?}: -inf"
                );
                let cancel = (8 + 4) * lanes + 12 % lanes;
                assert_eq!(got[cancel][0][0].to_bits(), 0x7FC0_0000, "{width:?}: NaN");
            }
        }
        inputs.len()
    });
}

/// A program that runs past its last instruction without `end` (as several
/// picasso test shaders do) runs in the batch kernels too: every vertex in
/// the kernel, each stopped at the end of the code, with the interpreter's
/// bits, under both policies (`run_vertices`) and in `run_batch`.
#[test]
fn programs_running_past_their_last_instruction_run_in_the_kernel() {
    // One `if`, then nested `if`s (the masked planner's shape).
    let programs = [
        "    ifc cmp.x
        add r0, r0, k
    .else
        dp4 r0.x, pos, k
    .end",
        "    ifc cmp.x
        ifc cmp.y
            add r0, r0, k
        .end
        mul r0.y, r0, r0
    .else
        dp4 r0.x, pos, k
    .end",
    ];
    for body in programs {
        programs_running_past_their_last_instruction(body);
    }
}

fn programs_running_past_their_last_instruction(body: &str) {
    let text = format!(
        "
.fvec k
.constf half(0.5, 0.25, -2.0, 1.0)
.out opos position
.out ocol color
.alias pos v0
.proc main
    mul r0, pos, half
    cmp half, gt, le, pos
{body}
    mov opos, r0
    mov ocol, pos
.end
"
    );
    let (program, dvle) = assembled("fall_off.pica", &text);
    let mut rng = Rng(0x5eed_0021);
    for precision in [pica_jit::Precision::F24, pica_jit::Precision::F32] {
        let config = pica_jit::ShaderConfig {
            entry: dvle.main,
            kind: dvle.kind,
            precision,
            ..Default::default()
        };
        let mut uniforms = pica_jit::Uniforms::default();
        for (n, c) in uniforms.f.iter_mut().enumerate() {
            *c = [0, 1, 2, 3].map(|k| (n * 4 + k) as f32 * 0.375 - 5.0);
        }
        uniforms.apply_constants(&dvle.constants);
        let states: Vec<UnitState> = (0..37)
            .map(|_| {
                let mut s = UnitState::default();
                s.inputs[0] = [0; 4].map(|_| rng.below(9) as f32 * 0.5 - 2.0);
                s
            })
            .collect();
        let case = TestCase {
            program: program.clone(),
            config,
            uniforms,
            states: states.clone(),
            carry_state: false,
        };
        for width in widths() {
            for policy in [StatePolicy::Reset, StatePolicy::Carry] {
                let summary = compare_reset_in_kernel(
                    &case,
                    &states,
                    width,
                    policy,
                    0xffff,
                    &format_args!("{precision:?} {width:?}"),
                );
                assert_eq!(
                    summary.ended_at_end_of_code,
                    states.len(),
                    "{precision:?} {width:?} {policy:?}: {summary:?}"
                );
            }
            let (interp, wide_shader) = shaders(&case, width);
            let (expected_stops, expected, stops, got, in_kernel) =
                batch_on_both(&interp, &wide_shader, &case.uniforms, &states);
            assert!(expected_stops.iter().all(|&s| s == Stop::EndOfCode));
            assert_eq!(
                in_kernel,
                states.len() as u64,
                "{precision:?} {width:?}: run_batch in the kernel"
            );
            assert_eq!(stops, expected_stops, "{precision:?} {width:?}");
            assert_same_states(&got, &expected, |k, diff| {
                format!("vertex {k} ({diff}), {precision:?} {width:?}")
            });
        }
    }
}

/// The vertex kernel loads a row's starting value only where a lane may see
/// it, skips an `if` part no lane of a group takes, and writes the outputs
/// the program never writes from the starting state: bit for bit against the
/// interpreter from a starting state whose every register is distinct (a
/// starting value left out shows as the previous group's). Covered: a row
/// the then- and else-parts both write (not loaded), one only the then-part
/// writes (`o1`, `r2`: the else lanes keep it and show it), one the else-part
/// reads after the then-part wrote it (`r3.x`), a part writing another
/// component (`o2`), uniform `ifu`s taken and not taken, `ifc`s whose lanes
/// agree in some groups and disagree in others, every output mask shape.
#[test]
fn starting_values_where_only_some_paths_write_match_the_interpreter() {
    let text = "\
.constf k(0.5, -0.5, 2.0, 0.25)
.alias pos v0
.out o_pos position
.out o_one color
.out o_two texcoord0
.out o_three texcoord1
.out o_four view
.proc main
    cmp k.xx, gt, le, pos
    ifc cmp.x
        mov o_pos, pos
        mov o_one, k
        mov r2, pos.yxwz
        mov r3, k.wzyx
        mov o_two.x, k.z
    .else
        add o_pos, k.y, pos
        add r3, r3.x, pos
        mov o_two.y, k.w
    .end
    ifu b0
        mul r4, k.z, pos
    .else
        mul r4, k.w, pos
        mov r5, k
    .end
    ifu b1
        add o_three, r2, r4
    .end
    add o_four, r3, r5
    end
.end
";
    let (program, dvle) = assembled("start_values.pica", text);
    let mut rng = Rng(0x5eed_0022);
    for precision in [pica_jit::Precision::F24, pica_jit::Precision::F32] {
        for (b0, b1) in [(true, false), (false, true), (true, true)] {
            let config = pica_jit::ShaderConfig {
                entry: dvle.main,
                kind: dvle.kind,
                precision,
                ..Default::default()
            };
            let mut uniforms = pica_jit::Uniforms::default();
            uniforms.b[0] = b0;
            uniforms.b[1] = b1;
            uniforms.apply_constants(&dvle.constants);
            // The first vertex's state is the start: every temporary and
            // output distinct.
            let mut start = random_state(&mut rng);
            for (n, reg) in start.temps.iter_mut().chain(&mut start.outputs).enumerate() {
                *reg = [0, 1, 2, 3].map(|c| 100.0 + (4 * n + c) as f32);
            }
            // Groups whose lanes all take the then-part, all the else-part,
            // and both.
            let states: Vec<UnitState> = (0..53)
                .map(|i| {
                    let mut s = if i == 0 {
                        start.clone()
                    } else {
                        UnitState::default()
                    };
                    let x = match i / 8 % 3 {
                        0 => 0.0,
                        1 => 1.0,
                        _ => rng.below(4) as f32 * 0.5 - 0.5,
                    };
                    s.inputs[0] = [x, rng.below(7) as f32 - 3.0, 1.5, -2.0];
                    s
                })
                .collect();
            let case = TestCase {
                program: program.clone(),
                config,
                uniforms,
                states: states.clone(),
                carry_state: false,
            };
            for width in widths() {
                for output_mask in [0xffff, 0x001f, 0x0013, 0xffe0] {
                    let before = wide::kernel_vertices();
                    compare_vertices_with_masks(
                        &case,
                        &states,
                        width,
                        StatePolicy::Reset,
                        0xffff,
                        output_mask,
                    );
                    assert_eq!(
                        wide::kernel_vertices() - before,
                        states.len() as u64,
                        "{precision:?} {width:?}: every vertex in the kernel"
                    );
                }
                compare_vertices_with_masks(
                    &case,
                    &states,
                    width,
                    StatePolicy::Carry,
                    0xffff,
                    0xffff,
                );
            }
        }
    }
}

/// Under `Reset` the vertex kernel loads the rows of the given state that
/// no step writes once per call, and leaves out of its loop the
/// temporaries, `a0` and `cmp` rows no step reads together with every
/// operation only they read (§9.35): bit for bit against the interpreter
/// at every width, both policies (`Carry`'s final state holds the unread
/// rows, which the kernel's last pass stores) and both precisions, and
/// `run_batch` (each lane from its own state) likewise, from random states
/// (float24 subnormals, infinities, NaNs and too large values among the
/// given temporaries). The programs read given temporaries and write
/// unread ones (the pican test cases' shape), beside outputs; set flags and
/// `a0` nobody reads; branch on the given flags (nested `ifc`) and on flags
/// they set (`jmpc`, `ifc`); read uniforms relative to the given `a0` and to
/// an `a0` they set.
#[test]
fn given_state_reads_and_unread_writes_match_the_interpreter() {
    let bodies = [
        "    mov r0, r1
    add r0, r1, r2
    mul o_a, r3, pos",
        "    cmp r0.xwww, le, ge, r1.zyyy
    mova a0.xy, r2
    mad r1, r2, k, r1
    dp4 r4.x, r0, r0
    rsq r4.x, r4
    add o_a, r5, pos",
        "    ifc cmp.x
        ifc cmp.y
            mul r5, r2, r3
        .end
        add o_a, r6, pos
    .else
        mov o_a, r7
    .end
    mul r10, r2, r1",
        "    mov r8, c0[a0.x]
    add o_a, c0[a0.y], r9
    cmp r8, lt, ge, pos
    jmpc cmp.x, skip
    dp4 r11.x, r8, r9
    mov o_b, r11
skip:
    rsq r12.x, r9
    mul r13, r12.x, pos",
        "    mova a0.x, r2.x
    mov o_a, c0[a0.x]
    cmp r3, gt, lt, r4
    ifc cmp.y
        mov o_b, r5
    .end
    mov r6, r7
    add r7, r6, k",
        // Rows read after a step stored them: the starting value again in
        // every group (`r7` where lanes skip the `ifc`, `r8` read by the
        // next step), and in a loop (`r3`, read by the next iteration).
        "    cmp k.xx, gt, le, pos
    ifc cmp.x
        mov r7, k
    .end
    add o_b, r7, pos
    mov r6, r8
    add r8, r6, pos
    mul o_a, r8, r8",
        "    for i0
        mul r4, r3, k
        mov r3, pos
    .end
    add o_b, r4, pos",
    ];
    let mut rng = Rng(0x5eed_0035);
    for body in bodies {
        let text = format!(
            "
.constf k(0.5, -0.5, 2.0, 0.25)
.alias pos v0
.out o_a position
.out o_b color
.proc main
{body}
    end
.end
"
        );
        let (program, dvle) = assembled("given_state.pica", &text);
        for precision in [pica_jit::Precision::F24, pica_jit::Precision::F32] {
            let config = pica_jit::ShaderConfig {
                entry: dvle.main,
                kind: dvle.kind,
                precision,
                ..Default::default()
            };
            let mut uniforms = pica_jit::Uniforms::default();
            for c in uniforms.f.iter_mut() {
                *c = corpus_vec4(&mut rng);
            }
            uniforms.i[0] = [2, 0, 1, 0];
            uniforms.apply_constants(&dvle.constants);
            // Every state random: the first is the given state of
            // `run_vertices`, each its lane's own in `run_batch`.
            let states: Vec<UnitState> = (0..37).map(|_| random_state(&mut rng)).collect();
            let case = TestCase {
                program: program.clone(),
                config,
                uniforms,
                states: states.clone(),
                carry_state: false,
            };
            for width in widths() {
                let what = format!("{precision:?} {width:?}:\n{body}");
                for policy in [StatePolicy::Reset, StatePolicy::Carry] {
                    for output_mask in [0xffff, 0x0001, 0x0002] {
                        compare_reset_in_kernel(&case, &states, width, policy, output_mask, &what);
                    }
                }
                let (interp, wide_shader) = shaders(&case, width);
                let (expected_stops, expected, stops, got, _) =
                    batch_on_both(&interp, &wide_shader, &case.uniforms, &states);
                assert_eq!(stops, expected_stops, "{what}");
                assert_same_states(&got, &expected, |k, diff| {
                    format!("run_batch vertex {k} ({diff}), {what}")
                });
            }
        }
    }
}

/// Outputs that copy an input unchanged move from the input records to the
/// output records in the vertex kernel (and the inputs only they read are
/// not transposed): bit for bit against the interpreter beside outputs that
/// look like copies and are not (swizzled, partial, negated, overwritten,
/// under a lane mask, from two inputs; F24: a copy of an input the blocks
/// read too, which the kernel leaves to the rows), with both policies (`Carry`'s final
/// state holds the last vertex's copies), every output mask shape, records
/// at every misalignment, inputs with NaN payloads and signed zeros, and
/// (F24, where the kernel converts the copies on the way) float24
/// subnormals, infinities and values that flush.
#[test]
fn outputs_copied_from_inputs_match_the_interpreter() {
    let straight = "\
.constf k(0.5, -0.5, 2.0, 0.25)
.out o_a position
.out o_b color
.proc main
    mov o_b, v2
    mul o_a, k, v0
    end
.end
";
    outputs_copied_from_inputs(straight);
    let text = "\
.constf k(0.5, -0.5, 2.0, 0.25)
.out o_a position
.out o_b color
.out o_c texcoord0
.out o_d texcoord1
.out o_e texcoord2
.out o_f view
.out o_g normalquat
.out o_h texcoord0w
.out o_i dummy
.proc main
    mov o_a, v1
    mov o_b, v2.yxzw
    mov o_c.xy, v3
    mov o_c.zw, v3
    mul r0, k, v4
    mov o_d, v4
    add o_d.y, r0.x, v0
    cmp k.xx, gt, le, v0
    ifc cmp.x
        mov o_e, v5
        mov o_h, v6
    .else
        mov o_e, v6
    .end
    mov o_f, v7
    mul o_i, k, v7
    mov o_g, -v1
    end
.end
";
    // (`o_h` is written in the then-part only: `Carry` fills it in.)
    outputs_copied_from_inputs(text);
}

fn outputs_copied_from_inputs(text: &str) {
    // A float24 subnormal, infinity and a NaN (each sends a group's F24
    // conversion of copied inputs out of line), and a negative value F24
    // flushes to +0.
    let rare = [
        f32::from_bits(0x1c80_0123),
        f32::NEG_INFINITY,
        f32::from_bits(0xffc0_0001),
        -1e-25,
    ];
    outputs_match_the_interpreter(&OutputsDrive {
        file: "copies.pica",
        text,
        seed: 0x5eed_0023,
        edge_inputs: &[
            EdgeInputs {
                period: 5,
                phase: 0,
                shift: 0,
                registers: 8,
                values: ODD_INPUT,
            },
            EdgeInputs {
                period: 7,
                phase: 3,
                shift: 1,
                registers: 8,
                values: rare,
            },
        ],
        states: 45,
        lens: &[45],
        with_dvle_mask: false,
        output_masks: &[0xffff, 0x0001, 0x00fe, 0x0005],
        every_vertex_in_kernel: true,
    });
}

/// A NaN with a payload, a negative zero, an f32 subnormal and a large value.
const ODD_INPUT: [f32; 4] = [
    f32::from_bits(0x7fc1_2345),
    -0.0,
    f32::from_bits(0x0000_0001),
    1e30,
];

/// Edge values written into one input register of every `period`-th state.
struct EdgeInputs {
    period: usize,
    phase: usize,
    /// Input `(i / period + shift) % registers` of state `i` gets `values`.
    shift: usize,
    registers: usize,
    values: [f32; 4],
}

/// How [`outputs_match_the_interpreter`] drives a program's outputs.
struct OutputsDrive<'a> {
    file: &'a str,
    text: &'a str,
    seed: u64,
    edge_inputs: &'a [EdgeInputs],
    states: usize,
    /// Runs over the first `len` states for each `len`: whole groups, two groups per pass,
    /// partial tails.
    lens: &'a [usize],
    /// Also runs with the DVLE's own output mask.
    with_dvle_mask: bool,
    output_masks: &'a [u16],
    /// Asserts that the vertex kernel shaded every vertex of every run.
    every_vertex_in_kernel: bool,
}

/// Random states (`v0.x` one of -0.5, 0, 0.5, 1: the branch condition of the
/// tests' programs) with edge inputs, run through `run_vertices` at every width,
/// both precisions and policies and every output mask of `drive`, bit for bit
/// against the interpreter.
fn outputs_match_the_interpreter(drive: &OutputsDrive) {
    let (program, dvle) = assembled(drive.file, drive.text);
    let mut rng = Rng(drive.seed);
    let mut output_masks = drive.output_masks.to_vec();
    if drive.with_dvle_mask {
        output_masks.insert(0, dvle.output_mask);
    }
    for precision in [pica_jit::Precision::F24, pica_jit::Precision::F32] {
        let config = pica_jit::ShaderConfig {
            entry: dvle.main,
            kind: dvle.kind,
            precision,
            ..Default::default()
        };
        let mut uniforms = pica_jit::Uniforms::default();
        uniforms.apply_constants(&dvle.constants);
        let all: Vec<UnitState> = (0..drive.states)
            .map(|i| {
                let mut s = random_state(&mut rng);
                for edge in drive.edge_inputs {
                    if i % edge.period == edge.phase {
                        s.inputs[(i / edge.period + edge.shift) % edge.registers] = edge.values;
                    }
                }
                s.inputs[0][0] = rng.below(4) as f32 * 0.5 - 0.5;
                s
            })
            .collect();
        for &len in drive.lens {
            let states = &all[..len];
            let case = TestCase {
                program: program.clone(),
                config,
                uniforms: uniforms.clone(),
                states: states.to_vec(),
                carry_state: false,
            };
            for width in widths() {
                for policy in [StatePolicy::Reset, StatePolicy::Carry] {
                    for &output_mask in &output_masks {
                        let before = wide::kernel_vertices();
                        compare_vertices_with_masks(
                            &case,
                            states,
                            width,
                            policy,
                            0xffff,
                            output_mask,
                        );
                        if drive.every_vertex_in_kernel {
                            assert_eq!(
                                wide::kernel_vertices() - before,
                                len as u64,
                                "{precision:?} {width:?} {policy:?}: every vertex in the kernel"
                            );
                        }
                    }
                }
            }
        }
    }
}

/// F24 outputs copying one input (`mov o_a, v1` three times, `mov o_b, v2`
/// twice), which the vertex kernel converts once per record for all of
/// them (on the usual output mask), with float24 edge values in the copied
/// inputs: signed zeros, f32 subnormals, float24 subnormals (2^-78 and just
/// below, just below 2^-62), 2^-62, just below and at 2^61 and 2^64,
/// infinities, NaNs with payloads, mantissa bits below float24's. Groups of
/// plain values (the fast conversion) and of edges (the exact one), both
/// policies, every output mask shape, every width, against the interpreter
/// bit for bit. (Storing every shared conversion to the first input's
/// outputs only — `v2`'s copies from `v1` — fails it.)
#[test]
fn outputs_copying_one_input_match_the_interpreter() {
    let text = "\
.constf k(0.5, -0.5, 2.0, 0.25)
.out o_a position
.out o_b color
.out o_c texcoord0
.out o_d texcoord1
.out o_e view
.out o_f normalquat
.proc main
    mov o_a, v1
    mov o_b, v2
    mov o_c, v1
    mul o_d, k, v0
    mov o_e, v1
    mov o_f, v2
    end
.end
";
    let (program, dvle) = assembled("one_input_copies.pica", text);
    let mut rng = Rng(0x5eed_0f24);
    let edges = [
        0x0000_0000u32,
        0x8000_0000,
        0x0000_0001,
        0x807f_ffff,
        0x1880_0000, // 2^-78
        0x187f_ffff,
        0x9880_0001,
        0x207f_ffff, // just below 2^-62
        0x2080_0000, // 2^-62
        0xa080_0000,
        0x5dff_ffff, // just below 2^61
        0x5e00_0000,
        0x5f7f_ffff, // just below 2^64
        0xdf80_0000, // -2^64
        0x7f80_0000,
        0xff80_0000,
        0x7fc1_2345,
        0xffc0_0001,
        0x3f80_00ff,
        0xbfc0_007f,
    ];
    for precision in [pica_jit::Precision::F24, pica_jit::Precision::F32] {
        let config = pica_jit::ShaderConfig {
            entry: dvle.main,
            kind: dvle.kind,
            precision,
            ..Default::default()
        };
        let mut uniforms = pica_jit::Uniforms::default();
        uniforms.apply_constants(&dvle.constants);
        let states: Vec<UnitState> = (0..53)
            .map(|i| {
                let mut s = random_state(&mut rng);
                // Vertices 16 to 40: edges in both copied inputs (every
                // width has groups of plain values before them).
                if (16..40).contains(&i) {
                    for c in 0..4 {
                        s.inputs[1][c] = f32::from_bits(edges[(4 * i + c) % edges.len()]);
                        s.inputs[2][c] = f32::from_bits(edges[(4 * i + c + 7) % edges.len()]);
                    }
                }
                s
            })
            .collect();
        let case = TestCase {
            program: program.clone(),
            config,
            uniforms,
            states: states.clone(),
            carry_state: false,
        };
        for width in widths() {
            for policy in [StatePolicy::Reset, StatePolicy::Carry] {
                for output_mask in [0xffff, 0x003f, 0x0001, 0x0006, 0x0000] {
                    let before = wide::kernel_vertices();
                    compare_vertices_with_masks(&case, &states, width, policy, 0xffff, output_mask);
                    assert_eq!(
                        wide::kernel_vertices() - before,
                        states.len() as u64,
                        "{precision:?} {width:?} {policy:?}: every vertex in the kernel"
                    );
                }
            }
        }
    }
}

/// `StatePolicy::Carry` in the vertex-layout kernel where an output is
/// written on some paths only (per-vertex `ifc` and `jmpc`, whole registers
/// and halves, in the then- or the else-part): a vertex that does not write
/// it copies out the value of the last earlier vertex that did (the
/// starting state's before any), and the state after the batch holds that
/// of the last writer. Lanes diverge at random with each rate of writers
/// (none, rare, half, most, every one), over batches of one group, several
/// passes and padded tails, at every width and in both precisions: every
/// vertex runs in the kernel, and outputs and final state equal the
/// interpreter's bit for bit.
#[test]
fn outputs_written_on_some_paths_carry_in_the_kernel() {
    let text = "\
.constf k(0.5, -0.5, 2.0, 0.25)
.out o_a position
.out o_b color
.out o_c texcoord0
.out o_d texcoord1
.out o_e view
.proc main
    mul o_a, k, v0
    cmp v0, lt, ge, v1
    ifc cmp.x
        mul o_b, k, v2
        mov o_c.xy, v3
    .else
        add o_e.yz, v2, -k
    .end
    jmpc cmp.y, skip
        mad o_d.zw, v2, k, v3
skip:
    mov o_c.w, v0.x
    end
.end
";
    let (program, dvle) = assembled("partial.pica", text);
    let mut rng = Rng(0x5eed_0024);
    for precision in [pica_jit::Precision::F24, pica_jit::Precision::F32] {
        let config = pica_jit::ShaderConfig {
            entry: dvle.main,
            kind: dvle.kind,
            precision,
            ..Default::default()
        };
        let mut uniforms = pica_jit::Uniforms::default();
        uniforms.apply_constants(&dvle.constants);
        for width in widths() {
            let lanes = width.lanes();
            for len in [lanes, 6 * lanes + 3, 4 * lanes, lanes - 1, 2 * lanes + 1] {
                // Per mille of vertices taking each branch's writing side.
                for rate in [0, 80, 500, 920, 1000] {
                    let states: Vec<UnitState> = (0..len)
                        .map(|_| {
                            let mut s = random_state(&mut rng);
                            let side = |rng: &mut Rng| {
                                if rng.below(1000) < rate { -1.0 } else { 1.0 }
                            };
                            (s.inputs[0][0], s.inputs[1][0]) = (0.0, side(&mut rng));
                            (s.inputs[0][1], s.inputs[1][1]) = (0.0, side(&mut rng));
                            s
                        })
                        .collect();
                    let case = TestCase {
                        program: program.clone(),
                        config,
                        uniforms: uniforms.clone(),
                        states: states.clone(),
                        carry_state: false,
                    };
                    let output_mask = [0xffff, 0x001e, 0x0006][rng.below(3) as usize];
                    let before = wide::kernel_vertices();
                    let summary = compare_vertices_with_masks(
                        &case,
                        &states,
                        width,
                        StatePolicy::Carry,
                        0xffff,
                        output_mask,
                    );
                    let what = format!("{precision:?} {width:?} {len} vertices, rate {rate}");
                    assert_eq!(
                        wide::kernel_vertices() - before,
                        len as u64,
                        "{what}: every vertex in the kernel"
                    );
                    assert_eq!(summary.wide_vertices, len, "{what}: {summary:?}");
                    assert_eq!(summary.single_vertex_vertices, 0, "{what}: {summary:?}");
                }
            }
        }
    }
}

/// A CALL that is the last instruction of its own subroutine pops its entry at
/// once (the stacks are checked after the CALL too; docs/semantics.md §3), and
/// one earlier in its body calls itself until the budget stops it: the wide
/// engine must not read either as a structured call (a random differential case
/// found the first: the kernel ran the body and stopped at its `end`).
#[test]
fn a_call_inside_its_own_subroutine_matches_the_interpreter() {
    use pica_jit::isa::{Guard, Instruction, encode};
    let call = |target, num| Instruction::Call {
        guard: Guard::Always,
        target,
        num,
    };
    let words = |code: &[Instruction]| code.iter().map(|i| encode(i).unwrap()).collect();
    let (nop, end) = (Instruction::Nop, Instruction::End);
    let programs: [(&str, u32, Vec<u32>); 3] = [
        // From 5: the CALL at 7 calls 2..8, its own end (the body would run
        // into the `end` at 4).
        (
            "pops itself",
            5,
            words(&[nop, nop, nop, nop, end, nop, nop, call(2, 6)]),
        ),
        // The CALL at 3 calls 1..4, its own end, with no `end` inside.
        (
            "pops itself, straight",
            0,
            words(&[nop, nop, nop, call(1, 3), end]),
        ),
        // The CALL at 2 calls 1..5, which holds it: it recurses.
        ("recurses", 0, words(&[nop, nop, call(1, 4), nop, end])),
    ];
    for (what, entry, code) in programs {
        for precision in [pica_jit::Precision::F24, pica_jit::Precision::F32] {
            for budget in [3, 11, 100] {
                let mut case = TestCase::new(code.clone(), vec![]);
                case.config.entry = entry;
                case.config.precision = precision;
                case.config.budget = budget;
                for width in widths() {
                    let (interp, wide_shader) = shaders(&case, width);
                    let states = vec![UnitState::default(); 5];
                    let mut expected = states.clone();
                    let want = interp.run_batch(&case.uniforms, &mut expected, &mut ());
                    let mut got = states;
                    let stops = wide_shader.run_batch(&case.uniforms, &mut got, &mut ());
                    let context = format!("{what}, {precision:?}, budget {budget}, {width:?}");
                    assert_eq!(stops, want, "{context}");
                    for (a, b) in got.iter().zip(&expected) {
                        assert_eq!(state_bits(a), state_bits(b), "{context}");
                    }
                }
            }
        }
    }
}

/// `run_vertices`'s short path (one kernel call for a `Reset` batch of whole
/// groups, without the general setup): taken exactly where it applies, and
/// every call, taken or not, gives the interpreter's bits, with a uniform
/// changed between calls (no stale uniforms), the other policy, a partial
/// group, an output mask, and a precision whose entry converts a temporary
/// (F24 reads `r0` first: no short path).
#[test]
fn run_vertices_short_path_is_exact_and_taken_where_it_applies() {
    let (program, dvle) = assembled(
        "short_path.pica",
        "\
.proc main
    mul o0, v0, c0
    add o1, v1, c1
    mov o2, r0
    end
.end
.out o0 position
.out o1 color
.out o2 texcoord0
",
    );
    for width in widths() {
        for precision in [pica_jit::Precision::F32, pica_jit::Precision::F24] {
            let config = pica_jit::ShaderConfig {
                entry: dvle.main,
                precision,
                ..Default::default()
            };
            let interp = Shader::new(program.clone(), config, EngineKind::Interpreter).unwrap();
            let jit = Shader::new(program.clone(), config, EngineKind::Jit)
                .unwrap()
                .with_batch_width(Some(width))
                .unwrap();
            let lanes = width.lanes();
            let mut uniforms = pica_jit::Uniforms::default();
            uniforms.f[0] = [1.5, -2.0, 0.25, 3.0];
            uniforms.f[1] = [0.125, 4.0, -1.0, 2.5];
            let mut state = UnitState::default();
            state.temps[0] = [0.1, 0.2, 0.3, 0.4];
            let vertex = |k: usize| -> VertexRegisters {
                let mut v = [[0.0; 4]; 16];
                v[0] = [k as f32 * 0.75, 1.0 - k as f32, 0.1 * k as f32, 1.0];
                v[1] = [k as f32, 2.0, -0.5 * k as f32, 7.0];
                v
            };
            // (call, vertices, output mask, policy, c0.x)
            let calls = [
                (4 * lanes, 0xffff, StatePolicy::Reset, 1.5),
                (4 * lanes, 0xffff, StatePolicy::Reset, -6.0),
                (4 * lanes + 1, 0xffff, StatePolicy::Reset, -6.0),
                (2 * lanes, 0xffff, StatePolicy::Carry, 2.0),
                (2 * lanes, 0b101, StatePolicy::Reset, 2.0),
                (2 * lanes, 0b101, StatePolicy::Reset, 3.0),
            ];
            let mut previous: Option<Vec<VertexRegisters>> = None;
            for (call, &(len, output_mask, policy, c0x)) in calls.iter().enumerate() {
                uniforms.f[0][0] = c0x;
                let inputs: Vec<VertexRegisters> = (0..len).map(vertex).collect();
                let untouched = [[-7.5f32; 4]; 16];
                let mut expected = vec![untouched; len];
                let mut got = vec![untouched; len];
                let (mut expected_state, mut got_state) = (state.clone(), state.clone());
                let expected_summary = interp
                    .run_vertices(
                        &uniforms,
                        &inputs,
                        0b11,
                        &mut expected,
                        output_mask,
                        policy,
                        &mut expected_state,
                        &mut (),
                    )
                    .unwrap();
                let before = wide::short_path_calls();
                let summary = jit
                    .run_vertices(
                        &uniforms,
                        &inputs,
                        0b11,
                        &mut got,
                        output_mask,
                        policy,
                        &mut got_state,
                        &mut (),
                    )
                    .unwrap();
                let short = wide::short_path_calls() - before;
                let what = format!("{width:?} {precision:?} call {call}");
                assert_same_outputs_and_state(&got, &expected, &got_state, &expected_state, &what);
                assert_eq!(summary.vertices, expected_summary.vertices, "{what}");
                assert_eq!(summary.ended, len, "{what}");
                assert_eq!(summary.wide_vertices, len, "{what}: the wide engine ran");
                // o0.x = v0.x * c0.x: the uniform of this call, not the last.
                assert_eq!(
                    got[1][0][0].to_bits(),
                    (0.75f32 * c0x).to_bits(),
                    "{what}: o0.x"
                );
                if output_mask & 0b10 == 0 {
                    assert_eq!(got[0][1], untouched[1], "{what}: o1 not asked for");
                }
                let applies = len % lanes == 0
                    && policy == StatePolicy::Reset
                    && precision == pica_jit::Precision::F32;
                assert_eq!(short, u64::from(applies), "{what}: short path");
                if let Some(previous) = previous.replace(got.clone())
                    && call == 1
                {
                    assert_ne!(previous[1][0], got[1][0], "{what}: new uniforms, new o0");
                }
            }
        }
    }
}

/// F24 inputs read only by arithmetic (`v0`, `v1`: their conversions are
/// stored flushed and their blocks' flushes become plain reads) beside one
/// also copied raw (`v2`, kept unflushed), with lanes at -0, +0, float24
/// subnormals of either sign (the group's load check fails and the exact
/// conversion runs), 2^-62 exactly and just below, tiny, large, infinite
/// and NaN values, mixed within one group, in groups of ordinary lanes only
/// and in a partial group: the batch kernel (`run_vertices`) and the block
/// functions after the prologue (`run_batch`) equal the interpreter bit for
/// bit at every width. (Dropping the exact conversion's flush,
/// `flush_converted_in_place` in `x64/wide`, fails it: a subnormal `v0`
/// lane reaches `add` unflushed.)
#[test]
fn f24_inputs_read_only_flushed_match_the_interpreter_at_every_width() {
    let source = "
        add o0, v0, v1
        mul o1, v0, v1
        dp4 o2.x, v0, v1
        add o2.yzw, v2.yzw, v0.yzw
        mad o3, v1, v0, v2
        mov o4, v2
        end
    ";
    let program = std::sync::Arc::new(common::assemble(source).program());
    let edges = F24_EDGES;
    let ordinary = |n: usize| {
        let x = n as f32 * 0.25 + 1.0;
        [[x, -x, 2.0, 0.5], [3.0, x, -0.75, 1.0], [0.5, 1.5, -x, 2.0]]
    };
    for_each_width(|width| {
        let inputs = every_edge_mixed(width.lanes(), &edges, ordinary);
        let config = pica_jit::ShaderConfig {
            precision: pica_jit::Precision::F24,
            ..Default::default()
        };
        let interp =
            Shader::new(program.clone(), config, EngineKind::Interpreter).expect("interpreter");
        let jit = Shader::new(program.clone(), config, EngineKind::Jit)
            .expect("jit")
            .with_batch_width(Some(width))
            .expect("width available");
        let untouched = [[-7.5f32; 4]; 16];
        let mut expected = vec![untouched; inputs.len()];
        let mut got = vec![untouched; inputs.len()];
        for (shader, out) in [(&interp, &mut expected), (&jit, &mut got)] {
            let mut state = UnitState::default();
            shader
                .run_vertices(
                    &Default::default(),
                    &inputs,
                    0xffff,
                    out,
                    0xffff,
                    StatePolicy::Reset,
                    &mut state,
                    &mut (),
                )
                .expect("batch");
        }
        assert_same_vertices(
            &got,
            &expected,
            &inputs,
            width.lanes(),
            &format_args!("{width:?}"),
        );
        assert_run_batch_matches(&interp, &jit, &Default::default(), &inputs, width);
        inputs.len()
    });
}

/// `run_vertices` prepares uniforms only where the unit sees them changed:
/// in F32 never (the kernel reads the caller's uniforms), in F24 when a
/// float uniform the program reads (`c0`, `c95`), an integer or a boolean
/// uniform changed since the previous call, and not when only rows it does
/// not read did. Every call gives the interpreter's bits at every width
/// (short path and general path: whole groups, a partial group, output
/// masks, both policies), and reads this call's uniforms. (Preparing in
/// F32 again, or comparing every row in F24, fails the counts; reusing a
/// preparation across a change to a row read fails the outputs.) The
/// expected results come from `Shader::run`, which prepares nothing.
#[test]
fn run_vertices_prepares_uniforms_only_when_the_rows_read_change() {
    let (program, dvle) = assembled(
        "rows_read.pica",
        "\
.proc main
    mul o0, v0, c0
    add o1, v1, c95
    end
.end
.out o0 position
.out o1 color
",
    );
    assert_eq!(program.float_uniforms_read(), 1 | 1 << 95);
    for width in widths() {
        for precision in [pica_jit::Precision::F32, pica_jit::Precision::F24] {
            let config = pica_jit::ShaderConfig {
                entry: dvle.main,
                precision,
                ..Default::default()
            };
            let interp = Shader::new(program.clone(), config, EngineKind::Interpreter).unwrap();
            let jit = Shader::new(program.clone(), config, EngineKind::Jit)
                .unwrap()
                .with_batch_width(Some(width))
                .unwrap();
            let lanes = width.lanes();
            let mut uniforms = pica_jit::Uniforms::default();
            uniforms.f[0] = [1.5, -2.0, 0.25, 3.0];
            uniforms.f[95] = [0.125, 4.0, -1.0, 2.5];
            let vertex = |k: usize| -> VertexRegisters {
                let mut v = [[0.0; 4]; 16];
                v[0] = [k as f32 * 0.75, 1.0 - k as f32, 0.1 * k as f32, 1.0];
                v[1] = [k as f32, 2.0, -0.5 * k as f32, 7.0];
                v
            };
            // (vertices, output mask, policy, change, whether the unit sees it)
            type Change = fn(&mut pica_jit::Uniforms);
            let calls: [(usize, u16, StatePolicy, Change, bool); 7] = [
                (
                    4 * lanes,
                    0xffff,
                    StatePolicy::Reset,
                    |u| u.f[0][0] = -6.0,
                    true,
                ),
                (
                    4 * lanes,
                    0xffff,
                    StatePolicy::Reset,
                    |u| u.f[5][1] = 9.0,
                    false,
                ),
                (
                    4 * lanes + 3,
                    0b10,
                    StatePolicy::Reset,
                    |u| u.f[95][3] = -1.0,
                    true,
                ),
                (
                    2 * lanes,
                    0xffff,
                    StatePolicy::Carry,
                    |u| u.f[94] = [7.0; 4],
                    false,
                ),
                (2 * lanes, 0b01, StatePolicy::Reset, |u| u.b[3] = true, true),
                (
                    2 * lanes,
                    0xffff,
                    StatePolicy::Reset,
                    |u| u.f[1][2] = -0.0,
                    false,
                ),
                (
                    2 * lanes,
                    0xffff,
                    StatePolicy::Reset,
                    |u| u.f[0][0] = 0.5,
                    true,
                ),
            ];
            let state = UnitState::default();
            for (call, &(len, output_mask, policy, change, seen)) in calls.iter().enumerate() {
                change(&mut uniforms);
                let inputs: Vec<VertexRegisters> = (0..len).map(vertex).collect();
                let untouched = [[-7.5f32; 4]; 16];
                let mut expected = vec![untouched; len];
                let mut got = vec![untouched; len];
                let (mut expected_state, mut got_state) = (state.clone(), state.clone());
                // Expected: one vertex at a time with `Shader::run`, which
                // converts uniforms as it reads them (no preparation).
                let before = pica_jit::uniform_preparations();
                for (vertex_in, vertex_out) in inputs.iter().zip(expected.iter_mut()) {
                    let mut one = match policy {
                        StatePolicy::Reset => state.clone(),
                        StatePolicy::Carry => expected_state.clone(),
                    };
                    one.load_inputs(vertex_in, 0b11);
                    interp.run(&uniforms, &mut one, &mut ());
                    one.store_outputs(vertex_out, output_mask);
                    if policy == StatePolicy::Carry {
                        expected_state = one;
                    }
                }
                let summary = jit
                    .run_vertices(
                        &uniforms,
                        &inputs,
                        0b11,
                        &mut got,
                        output_mask,
                        policy,
                        &mut got_state,
                        &mut (),
                    )
                    .unwrap();
                let prepared = pica_jit::uniform_preparations() - before;
                let what = format!("{width:?} {precision:?} call {call}");
                assert_same_outputs_and_state(&got, &expected, &got_state, &expected_state, &what);
                assert_eq!(summary.wide_vertices, len, "{what}: the wide engine ran");
                if output_mask & 1 != 0 {
                    // o0.x = v0.x * c0.x: this call's uniform.
                    assert_eq!(
                        got[1][0][0].to_bits(),
                        (0.75f32 * uniforms.f[0][0]).to_bits(),
                        "{what}: o0.x"
                    );
                }
                let expected_preparations = match precision {
                    pica_jit::Precision::F32 => 0,
                    pica_jit::Precision::F24 => u64::from(seen),
                };
                assert_eq!(prepared, expected_preparations, "{what}: preparations");
            }
        }
    }
}

/// §9.20: float24 products of bounded operands (inputs converted in the
/// AVX2 vertex kernel's fused conversion, uniforms hoisted per call) skip
/// their flush and record where every operand is zero or within
/// [2^-31, 2^29) (inputs: [2^-30, 2^29)); every value around those bounds
/// (and zeros of either sign, float24 subnormals, infinities, NaN) in
/// inputs and in uniforms, mixed within groups, gives the interpreter's
/// bits at every width: `run_vertices` and `run_batch`.
#[test]
fn bounded_products_match_the_interpreter_at_every_width() {
    let source = "
        dp4 o0.x, c0, v0
        dp4 o0.y, c1, v0
        dp4 o0.z, c2, v0
        dp4 o0.w, c3, v0
        mul o1, v0, c4
        mad o2, v1, c5, v2
        dp3 o3.x, v1, c6
        mul r0, v0, v1
        add o3.yzw, r0.yzw, v2.yzw
        max o4, r0, -v0
        end
    ";
    let program = std::sync::Arc::new(common::assemble(source).program());
    let p = |e: i32| 2f32.powi(e);
    let bits = f32::from_bits;
    // Bounded values that make a product overflow or need its flush with
    // an unbounded one (2^40, 2^-40).
    let (large, small) = (1.5 * p(28), p(-25));
    let edges = [
        0.0,
        -0.0,
        p(-31),
        -p(-31),
        bits(0x2FFF_FFFF), // just below 2^-31
        p(-30),
        bits(0x307F_FFFF), // just below 2^-30
        -bits(0x3080_0080),
        p(-40),
        -p(-40),
        p(-62),
        p(-70), // a float24 subnormal
        p(-100),
        bits(0x4DFF_FFFF), // just below 2^29
        -bits(0x4DFF_FF80),
        p(29),
        -p(29),
        p(40),
        -p(40),
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        large,
        small,
    ];
    let ordinary = |n: usize| {
        let x = n as f32 * 0.25 + 1.0;
        [
            [large, small, x, -x],
            [3.0, x, -0.75, small],
            [0.5, -large, -x, 2.0],
        ]
    };
    // Uniform sets: bounded (zeros of both signs, and `small` and `large`
    // in `c4` beside the inputs' `large` and `small`), then each edge in
    // a whole matrix row and in `c4`.
    let bounded = |k: usize| {
        let mut u = pica_jit::Uniforms::default();
        for (r, row) in u.f[..7].iter_mut().enumerate() {
            *row = std::array::from_fn(|c| match (r + c + k) % 5 {
                0 => 0.0,
                1 => -0.0,
                2 => 1.5 + r as f32,
                3 => -0.125 * (c + 1) as f32,
                _ => 1000.0,
            });
        }
        u.f[4] = [small, large, -0.0, 0.0];
        u
    };
    let mut uniform_sets = vec![bounded(0), bounded(1)];
    for (k, &e) in edges.iter().enumerate() {
        let mut u = bounded(k);
        u.f[k % 4] = [e; 4];
        u.f[4] = [e; 4];
        uniform_sets.push(u);
    }
    for_each_width(|width| {
        // Groups of bounded lanes; then one edge per group (so that the
        // other lanes' bounds do not decide the group's run), in a different
        // register and component per lane; then groups mixing every edge.
        let inputs = edge_groups(
            width.lanes(),
            &edges,
            (0..edges.len()).step_by(5),
            ordinary,
            |v, n, e| v[n % 3][n % 4] = e,
            |v, n, shift| v[n % 3] = std::array::from_fn(|c| edges[(n + shift + c) % edges.len()]),
        );
        let (interp, jit) =
            assert_f24_vertices_match_for_each_uniform_set(&program, width, &inputs, &uniform_sets);
        assert_run_batch_matches(&interp, &jit, &uniform_sets[0], &inputs, width);
        inputs.len()
    });
}

/// float24 edge values for input lanes: signed zeros, subnormals (2^-70,
/// 2^-63, 2^-100), the smallest normal 2^-62 and just below, values beyond
/// float24's range, infinities, NaNs and an ordinary 1.0.
const F24_EDGES: [f32; 16] = [
    -0.0,
    0.0,
    1.0 / (1u128 << 70) as f32,
    -1.0 / (1u128 << 70) as f32,
    1.0 / (1u128 << 63) as f32,
    1.0 / (1u128 << 62) as f32,
    -1.0 / (1u128 << 62) as f32,
    f32::from_bits(0x207F_FFFF), // just below 2^-62
    f32::from_bits(0x0D80_0000), // 2^-100
    (1u128 << 70) as f32,
    -1.5 * (1u128 << 63) as f32,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NAN,
    f32::from_bits(0xFFC0_1234),
    1.0,
];

/// Input records with every edge value in every input component, edges
/// mixed within each group (lane `n` of a group takes the edge `n + shift`,
/// one input in three of a lane left ordinary), then groups of `ordinary`
/// lanes and a partial group. The first `N` input registers come from
/// `ordinary`, the others are zero.
fn every_edge_mixed<const N: usize>(
    lanes: usize,
    edges: &[f32],
    ordinary: impl Fn(usize) -> [[f32; 4]; N],
) -> Vec<VertexRegisters> {
    let record = |v: [[f32; 4]; N]| {
        let mut r = [[0.0f32; 4]; 16];
        r[..N].copy_from_slice(&v);
        r
    };
    let mut inputs = Vec::new();
    for shift in 0..edges.len() {
        for n in 0..lanes {
            let e = |k: usize| edges[(n + shift + k) % edges.len()];
            let mut v = ordinary(n);
            for (i, reg) in v.iter_mut().enumerate() {
                if (n + shift + i) % 3 != 0 {
                    *reg = std::array::from_fn(|c| e(4 * i + c));
                }
            }
            inputs.push(record(v));
        }
    }
    inputs.extend((0..lanes + lanes / 2).map(|n| record(ordinary(n))));
    inputs
}

/// The input records of the bounded-product tests at `lanes` lanes: two
/// groups of `ordinary` lanes; for each edge value, a group with it placed
/// in every lane by `one_edge(lane, n, edge)`; for each of `shifts`, a group
/// whose lanes `mixed(lane, n, shift)` fills with several edges; then a
/// partial group of ordinary lanes. The first `N` input registers come from
/// `ordinary`, the others are zero.
fn edge_groups<const N: usize>(
    lanes: usize,
    edges: &[f32],
    shifts: impl Iterator<Item = usize>,
    ordinary: impl Fn(usize) -> [[f32; 4]; N],
    one_edge: impl Fn(&mut [[f32; 4]; N], usize, f32),
    mixed: impl Fn(&mut [[f32; 4]; N], usize, usize),
) -> Vec<VertexRegisters> {
    let record = |v: [[f32; 4]; N]| {
        let mut r = [[0.0f32; 4]; 16];
        r[..N].copy_from_slice(&v);
        r
    };
    let lane_with = |n: usize, place: &dyn Fn(&mut [[f32; 4]; N])| {
        let mut v = ordinary(n);
        place(&mut v);
        record(v)
    };
    let mut inputs: Vec<VertexRegisters> = (0..2 * lanes).map(|n| record(ordinary(n))).collect();
    for &e in edges {
        inputs.extend((0..lanes).map(|n| lane_with(n, &|v| one_edge(v, n, e))));
    }
    for shift in shifts {
        inputs.extend((0..lanes).map(|n| lane_with(n, &|v| mixed(v, n, shift))));
    }
    inputs.extend((0..lanes / 2 + 1).map(|n| record(ordinary(n + 3))));
    inputs
}

/// §9.24: products of a computed value (a `dp4` of bounded products,
/// quantised) by hoisted uniform rows are bounded products where the
/// region's check also finds every such value zero or within
/// [2^-31, 2^29). Computed values on and around those bounds (2^-31 and
/// just below, 2^-35 and 2^-62, which the products must flush, just below
/// 2^29, 2^29 and 2^35, whose products by 2^28 overflow in the sums),
/// zeros of both signs, one per group and mixed within groups, in every
/// component, give the interpreter's bits at every width.
#[test]
fn bounded_products_of_computed_values_match_the_interpreter_at_every_width() {
    let source = "
        dp4 r1.x, c0, v0
        dp4 r1.y, c1, v0
        dp4 r1.z, c2, v0
        dp4 r1.w, c3, v0
        dp4 o0.x, c4, r1
        dp4 o0.y, c5, r1
        dp4 o0.z, c4.wzyx, r1
        dp4 o0.w, c5.yxwz, r1
        mul o1, r1, c4
        mad o2, r1, c5, v1
        end
    ";
    let program = std::sync::Arc::new(common::assemble(source).program());
    let p = |e: i32| 2f32.powi(e);
    let bits = f32::from_bits;
    // Input components: in bounds for the inputs' own check, so that the
    // computed values (the input times the diagonal's scale) decide.
    let edges = [
        0.0,
        -0.0,
        1.0,
        -3.5,
        p(-4),
        p(-10),
        -p(-10),
        p(-6),
        bits(0x3AFF_FF80), // just below 2^-9
        p(20),
        -p(20),
        p(28),
        bits(0x4DFF_FF80), // just below 2^29
        1.75 * p(27),
    ];
    let ordinary = |n: usize| {
        let x = n as f32 * 0.25 + 1.0;
        [[x, -0.5 * x, 3.0, 0.75], [1.0, -x, 0.25, 2.0]]
    };
    // Uniform sets: a diagonal matrix of scale `s` (so `r1 = s * v0`
    // exactly: the other products are zeros), times factors `f`.
    let uniforms = |s: f32, f: [f32; 4]| {
        let mut u = pica_jit::Uniforms::default();
        for r in 0..4 {
            u.f[r] = std::array::from_fn(|c| if c == r { s } else { 0.0 });
        }
        u.f[4] = f;
        u.f[5] = [-f[2], f[3], 0.5, -0.0];
        u
    };
    let scales = [1.0, p(-22), p(-25), p(-52), p(1), p(15), -p(3)];
    let factors = [
        [1.0, -2.0, 0.5, 3.0],
        [p(28), -p(28), p(27), 1.0],
        [p(-28), p(-30), -p(-29), p(-31)],
        [0.0, -0.0, p(28), p(-31)],
    ];
    let mut uniform_sets = Vec::new();
    for &s in &scales {
        for &f in &factors {
            uniform_sets.push(uniforms(s, f));
        }
    }
    for_each_width(|width| {
        // One edge per group, in a different component per lane; then
        // groups mixing every edge.
        let inputs = edge_groups(
            width.lanes(),
            &edges,
            0..edges.len(),
            ordinary,
            |v, n, e| v[0][n % 4] = e,
            |v, n, shift| v[0] = std::array::from_fn(|c| edges[(n + shift + 3 * c) % edges.len()]),
        );
        assert_f24_vertices_match_for_each_uniform_set(&program, width, &inputs, &uniform_sets);
        inputs.len()
    });
}

/// §9.29: where every product operand is zero or within [2^-23, 2^29), a
/// bounded product is zero or a multiple of 2^-62, and so are the sums of
/// such products (`dp4`, `dp3`, `add` of two `mul`s): their quantisations
/// are truncations alone, with `+0` added where the sum is stored. Pairs
/// of operands one float24 ulp apart (`x` and `twin(x)`) times `s` and
/// `-s` cancel to `s * ulp(x)`: with operands at or above 2^-23 no such
/// sum lands in the float24 subnormal band; with operands in [2^-31,
/// 2^-23) (inputs or uniforms) it can (2^-31 · 2^-31 · 2^-16 = 2^-78), and
/// the group or the call must run the forms with flushes. Zero inputs
/// times negative uniforms make `-0` products whose sums must store `+0`.
/// Every width, `run_vertices` and `run_batch`, against the interpreter
/// bit for bit.
#[test]
fn sums_of_bounded_products_match_the_interpreter_at_every_width() {
    let source = "
        dp4 o0.x, c0, v0
        dp4 o0.y, c1, v0
        dp3 o0.z, c2, v0
        dph o0.w, v0, c3
        mul r0, v0, c4
        add o1, r0, r0.yxwz
        mul r2, v0, c5
        add o2, r2, r2.yxwz
        dp4 o3.x, v0, v1
        dp3 o3.y, v0, v0.yxwz
        end
    ";
    let program = std::sync::Arc::new(common::assemble(source).program());
    let p = |e: i32| 2f32.powi(e);
    let bits = f32::from_bits;
    // The value one float24 ulp (mantissa bit 7) away.
    let twin = |x: f32| bits(x.to_bits() ^ 0x80);
    let edges = [
        0.0,
        -0.0,
        p(-23),
        bits(0x3400_0080), // 2^-23 (1 + 2^-16)
        bits(0x33FF_FF80), // just below 2^-23
        p(-24),
        bits(0x3380_0080),
        p(-31),
        bits(0x3000_0080), // 2^-31 (1 + 2^-16)
        1.0,
        -1.5,
        bits(0x4DFF_FF80), // just below 2^29
        p(29),
        p(-70), // a float24 subnormal
    ];
    let ordinary = |n: usize| {
        let x = n as f32 * 0.25 + 1.0;
        [[x, -0.5 * x, 3.0, 0.75], [1.0, -x, 0.25, 2.0]]
    };
    let uniforms = |s: f32| {
        let mut u = pica_jit::Uniforms::default();
        u.f[0] = [s, -s, 0.5, -0.0];
        u.f[1] = [-1.0; 4];
        u.f[2] = [s, -s, s, 1.0];
        u.f[3] = [1.0, -s, s, 0.5];
        u.f[4] = [s, -s, s, -s];
        u.f[5] = [-1.0, -1.0, -s, -s];
        u
    };
    let scales = [
        1.0,
        p(-23),
        bits(0x3400_0080),
        p(-24),
        p(-31),
        bits(0x3000_0080),
        p(28),
    ];
    let uniform_sets: Vec<_> = scales.iter().map(|&s| uniforms(s)).collect();
    for_each_width(|width| {
        // One edge per group, beside its twin (in `x` and `y`); then
        // groups mixing the edges.
        let inputs = edge_groups(
            width.lanes(),
            &edges,
            0..edges.len(),
            ordinary,
            |v, _, e| {
                v[0][0] = e;
                v[0][1] = twin(e);
            },
            |v, n, shift| {
                let e = edges[(n + shift) % edges.len()];
                v[0] = [e, twin(e), edges[(n + shift + 5) % edges.len()], 0.0];
            },
        );
        let (interp, jit) =
            assert_f24_vertices_match_for_each_uniform_set(&program, width, &inputs, &uniform_sets);
        assert_run_batch_matches(&interp, &jit, &uniform_sets[1], &inputs, width);
        inputs.len()
    });
}

/// §9.33: the hoisted rows added to bounded products (a matrix's `w`
/// column times the uniform 1 of `mov r0.w`, `dph`'s `w`) are checked once
/// per call with the product operands; where every one is zero or within
/// [2^-23, 2^29) the sums they are added to are on the 2^-62 grid and
/// quantised by truncation. Translations at, just above and just below
/// 2^-23, 2^-24, 2^-46, just below 2^29, 2^29, -2^40, a float24 subnormal,
/// infinity, NaN, zeros of both signs, and `-(2^-46 - 2^-63)`, which
/// cancels a product of 2^-23 by 2^-23 to 2^-63, inside the float24
/// subnormal band (+0 in float24), times inputs with the same edges; the
/// position transformed twice (a checked computed value) and stored; an
/// input added to a uniform row (two bounded rows: on the grid where both
/// pass, and `2^-60 + -(2^-60 - 2^-70)` in the band where neither does);
/// both policies (outputs and final state), `run_batch`, every width,
/// against the interpreter bit for bit. (Taking a checked row for on the
/// grid in the run without bounded products too, where a failed check
/// sends such a group, fails it: `o4.x` 0x1c800000, 2^-70, for +0.)
#[test]
fn translations_added_to_bounded_products_match_the_interpreter_at_every_width() {
    let source = "
        mov r0.xyz, v0
        mov r0.w, c95.xxxx
        dp4 o0.x, c0, r0
        dp4 o0.y, c1, r0
        dp4 o0.z, c2, r0
        dp4 o0.w, c3, r0
        dph o1.x, v0, c4
        dph o1.y, v0, c5
        dp4 r1.x, c0, r0
        dp4 r1.y, c1, r0
        dp4 r1.z, c2, r0
        dp4 r1.w, c3, r0
        dp4 o2.x, c6, r1
        dp4 o2.y, c7, r1
        mov o3, r0
        add o4, v0, c8
        end
    ";
    let program = std::sync::Arc::new(common::assemble(source).program());
    let p = |e: i32| 2f32.powi(e);
    let bits = f32::from_bits;
    let edges = [
        0.0,
        -0.0,
        1.0,
        p(-23),
        bits(0x3400_0080), // 2^-23 (1 + 2^-16)
        bits(0x33FF_FF80), // just below 2^-23
        p(-24),
        p(-46),
        bits(0xA87F_FF80), // -(2^-46 - 2^-63)
        bits(0x4DFF_FF80), // just below 2^29
        p(29),
        -p(40),
        p(-70), // a float24 subnormal
        p(-60),
        f32::INFINITY,
        f32::NAN,
    ];
    let uniforms = |t: f32| {
        let mut u = pica_jit::Uniforms::default();
        u.f[0] = [1.0, -0.5, p(-23), t];
        u.f[1] = [0.25, 2.0, -p(-23), -t];
        u.f[2] = [p(-23), p(-23), 1.0, t];
        u.f[3] = [0.0, 0.0, 0.0, 1.0];
        u.f[4] = [1.0, 1.0, p(-23), t];
        u.f[5] = [-1.0, p(-23), p(-23), -t];
        u.f[6] = [1.0, 0.5, p(-23), 1.0];
        u.f[7] = [p(-23), -2.0, 0.75, -t];
        // `2^-60 - 2^-70` (a float24 normal): the input 2^-60 plus its
        // negation is 2^-70, in the float24 subnormal band.
        let near = bits(0x217F_C000);
        u.f[8] = [-near, near, t, -near];
        u.f[95] = [1.0, 0.0, 0.0, 0.0];
        u
    };
    let uniform_sets: Vec<_> = edges.iter().map(|&t| uniforms(t)).collect();
    for_each_width(|width| {
        let lanes = width.lanes();
        let record = |v0: [f32; 4]| {
            let mut r = [[0.0f32; 4]; 16];
            r[0] = v0;
            r
        };
        let ordinary = |n: usize| {
            let x = n as f32 * 0.25 + 1.0;
            [x, -0.5 * x, 0.75, 1.0]
        };
        // Ordinary groups; per edge a group with it in `z` alone (the
        // products of `x` and `y` zero, that of `z` by 2^-23 cancelling
        // against the translation) and one with it in every component;
        // groups mixing the edges; a partial group.
        let mut inputs: Vec<VertexRegisters> =
            (0..2 * lanes).map(|n| record(ordinary(n))).collect();
        for &e in &edges {
            inputs.extend((0..lanes).map(|_| record([0.0, 0.0, e, 1.0])));
            inputs.extend((0..lanes).map(|n| record([e, -e, e, ordinary(n)[3]])));
        }
        for shift in 0..edges.len() {
            let at = |n: usize| edges[(n + shift) % edges.len()];
            inputs.extend((0..lanes).map(|n| record([at(n + 3), at(n + 7), at(n), 1.0])));
        }
        inputs.extend((0..lanes / 2 + 1).map(|n| record(ordinary(n + 3))));
        let (interp, jit) =
            assert_f24_vertices_match_for_each_uniform_set(&program, width, &inputs, &uniform_sets);
        for (u, uniforms) in uniform_sets.iter().enumerate() {
            assert_carry_batch_matches(
                (&interp, &jit),
                uniforms,
                &inputs,
                &format_args!("{width:?}, Carry, uniforms {u}"),
            );
        }
        assert_run_batch_matches(&interp, &jit, &uniform_sets[8], &inputs, width);
        inputs.len()
    });
}

/// §9.33: `mov r0.xyz, v0` read by products only. The vertex kernel's
/// loop stores no `r0` (no step reads it), so it converts `v0` flushed and
/// its blocks read it without a flush; a carrying call runs its last pass
/// again after the loop with `r0` stored, from `v0` converted as loaded
/// (`f24::load` keeps float24 subnormals, so `r0` in the final state is
/// not `v0` flushed). `F24_EDGES` in `v0` (mixed within groups), uniforms
/// in and out of the product operand bounds, both policies, and under
/// `Carry` each edge in the last vertex of a whole and of a partial group
/// (the final state's `r0`), every width, against the interpreter bit for
/// bit. (Converting `v0` flushed in the last pass too, the loop's rows not
/// restored, fails it: `r0.x` of the final state 0x00000000 for 2^-70,
/// 0x1c800000.)
#[test]
fn f24_input_copies_read_by_products_match_the_interpreter_at_every_width() {
    let source = "
        mov r0.xyz, v0
        mov r0.w, c95.xxxx
        dp4 o0.x, c0, r0
        dp4 o0.y, c1, r0
        dp4 o0.z, c2, r0
        dp4 o0.w, c3, r0
        mul o1, r0, c4
        end
    ";
    let program = std::sync::Arc::new(common::assemble(source).program());
    let p = |e: i32| 2f32.powi(e);
    let uniforms = |s: f32| {
        let mut u = pica_jit::Uniforms::default();
        u.f[0] = [s, -0.5, 0.25, 3.0];
        u.f[1] = [1.0, s, -2.0, -0.75];
        u.f[2] = [0.5, 0.5, s, 0.0];
        u.f[3] = [0.0, 0.0, 0.0, 1.0];
        u.f[4] = [0.5, -2.0, 1.0, s];
        u.f[95] = [1.0, 0.0, 0.0, 0.0];
        u
    };
    // In the operand bounds, and not (the call's hoisted rows check fails).
    let uniform_sets = [uniforms(1.5), uniforms(p(-30))];
    let edges = F24_EDGES;
    let ordinary = |n: usize| {
        let x = n as f32 * 0.25 + 1.0;
        [[x, -0.5 * x, 0.75, 1.0]]
    };
    for_each_width(|width| {
        let lanes = width.lanes();
        let inputs = every_edge_mixed(lanes, &edges, ordinary);
        let (interp, jit) =
            assert_f24_vertices_match_for_each_uniform_set(&program, width, &inputs, &uniform_sets);
        let mut compared = inputs.len();
        for (u, uniforms) in uniform_sets.iter().enumerate() {
            for &e in &edges {
                let mut last = [[0.0f32; 4]; 16];
                last[0] = [e, -e, e, 1.0];
                // The edge in the last vertex of a whole group, and of a
                // partial one.
                compared += assert_carry_last_vertex_matches(
                    (&interp, &jit),
                    uniforms,
                    &inputs,
                    lanes,
                    last,
                    &format_args!(
                        "{width:?}, Carry, uniforms {u}, last v0.x {:#010x}",
                        e.to_bits()
                    ),
                );
            }
        }
        compared
    });
}

/// §9.34: converted input rows no step of the vertex kernel's loop reads
/// are neither converted nor stored there: `v0.w` after `mov r0.xyz, v0`,
/// `v2.xyz` beside an `add` of `v2.wwww`, and all of `v1`, copied whole
/// into `r1`, which no step reads (the loop does not store it; a carrying
/// call's last pass does, from `v1` converted). `F24_EDGES` in every input
/// component (mixed within groups), uniforms in and out of the product
/// operand bounds, `Reset` and `Carry` with each edge in the skipped and
/// the read components of the last vertex of a whole and a partial group
/// (the final state's `r1`), `run_batch`, every width, against the
/// interpreter bit for bit. (Skipping the rows no product reads instead,
/// so `v2.w` too, fails it; so does leaving the rows skipped in the
/// carrying call's last pass: `r1` of the final state.)
#[test]
fn f24_input_rows_no_step_reads_match_the_interpreter_at_every_width() {
    let source = "
        mov r0.xyz, v0
        mov r0.w, c95.xxxx
        dp4 o0.x, c0, r0
        dp4 o0.y, c1, r0
        dp4 o0.z, c2, r0
        dp4 o0.w, c3, r0
        mov r1, v1
        add o1, v2.wwww, c4
        end
    ";
    let program = std::sync::Arc::new(common::assemble(source).program());
    let p = |e: i32| 2f32.powi(e);
    let uniforms = |s: f32| {
        let mut u = pica_jit::Uniforms::default();
        u.f[0] = [s, -0.5, 0.25, 3.0];
        u.f[1] = [1.0, s, -2.0, -0.75];
        u.f[2] = [0.5, 0.5, s, 0.0];
        u.f[3] = [0.0, 0.0, 0.0, 1.0];
        u.f[4] = [0.5, -2.0, 1.0, s];
        u.f[95] = [1.0, 0.0, 0.0, 0.0];
        u
    };
    let uniform_sets = [uniforms(1.5), uniforms(p(-30))];
    let edges = F24_EDGES;
    let ordinary = |n: usize| {
        let x = n as f32 * 0.25 + 1.0;
        [
            [x, -0.5 * x, 0.75, 1.0],
            [0.5, x, -x, 2.0],
            [x, 3.0, -1.0, -x],
        ]
    };
    for_each_width(|width| {
        let lanes = width.lanes();
        let inputs = every_edge_mixed(lanes, &edges, ordinary);
        let (interp, jit) =
            assert_f24_vertices_match_for_each_uniform_set(&program, width, &inputs, &uniform_sets);
        let mut compared = inputs.len();
        for (u, uniforms) in uniform_sets.iter().enumerate() {
            for &e in &edges {
                let mut last = [[0.0f32; 4]; 16];
                // The edge in the skipped rows (v0.w, v2.xyz), in v1 (the
                // last pass's r1) and in the read v2.w.
                last[0] = [1.0, -2.0, 0.5, e];
                last[1] = [e, -e, 1.0, e];
                last[2] = [e, e, -e, e];
                compared += assert_carry_last_vertex_matches(
                    (&interp, &jit),
                    uniforms,
                    &inputs,
                    lanes,
                    last,
                    &format_args!("{width:?}, Carry, uniforms {u}, edge {:#010x}", e.to_bits()),
                );
            }
        }
        assert_run_batch_matches(&interp, &jit, &uniform_sets[0], &inputs, width);
        compared
    });
}

/// `run_vertices` over `batch` under `StatePolicy::Carry` from the default
/// state, on the interpreter and on the JIT: the same outputs and final
/// state bit for bit.
fn assert_carry_batch_matches(
    (interp, jit): (&Shader, &Shader),
    uniforms: &pica_jit::Uniforms,
    batch: &[[[f32; 4]; 16]],
    what: &dyn std::fmt::Display,
) {
    let untouched = [[-7.5f32; 4]; 16];
    let mut expected = vec![untouched; batch.len()];
    let mut got = vec![untouched; batch.len()];
    let mut expected_state = UnitState::default();
    let mut got_state = UnitState::default();
    for (shader, out, state) in [
        (interp, &mut expected, &mut expected_state),
        (jit, &mut got, &mut got_state),
    ] {
        shader
            .run_vertices(
                uniforms,
                batch,
                0xffff,
                out,
                0xffff,
                StatePolicy::Carry,
                state,
                &mut (),
            )
            .expect("batch");
    }
    assert_same_outputs_and_state(&got, &expected, &got_state, &expected_state, what);
}

/// `last` as the last vertex of a whole batch of two groups of `lanes`
/// and of a partial one (`lanes + 1` vertices), the other vertices from
/// `inputs`: `run_vertices` under `StatePolicy::Carry` on the JIT gives
/// the interpreter's outputs and final state bit for bit (the final state
/// is the last vertex's). Returns how many vertices it compared.
fn assert_carry_last_vertex_matches(
    (interp, jit): (&Shader, &Shader),
    uniforms: &pica_jit::Uniforms,
    inputs: &[[[f32; 4]; 16]],
    lanes: usize,
    last: [[f32; 4]; 16],
    what: &dyn std::fmt::Display,
) -> usize {
    let mut whole = inputs[..2 * lanes].to_vec();
    whole[2 * lanes - 1] = last;
    let mut partial = inputs[..lanes].to_vec();
    partial.push(last);
    let mut compared = 0;
    for batch in [whole, partial] {
        assert_carry_batch_matches(
            (interp, jit),
            uniforms,
            &batch,
            &format_args!("{what}, {} vertices", batch.len()),
        );
        compared += batch.len();
    }
    compared
}

/// Outputs the vertex kernel's last block writes whole are transposed into
/// the records straight from the registers holding them (under the DVLE's
/// own output mask, every output the program writes), the others from their
/// rows: outputs written whole in one block, in part in several blocks, on
/// one path of a branch, the same value in every component (`dp4`), more
/// than the registers kept for the direct path; every width, both
/// precisions and policies, whole groups, two groups per pass and partial
/// tails, the DVLE's mask and others, against the interpreter bit for bit,
/// every vertex shaded by the vertex kernel.
#[test]
fn outputs_stored_from_registers_match_the_interpreter() {
    let straight = "\
.constf k(0.5, -0.5, 2.0, 0.25)
.out o_a position
.out o_b color
.out o_c texcoord0
.out o_d texcoord1
.out o_e view
.proc main
    mul r0, k, v0
    add o_a, r0, v1
    dp4 o_c, v3, k
    mul o_b, v2, v1
    mov o_d.xy, v4
    mov o_d.zw, r0
    add o_e, v5.wzyx, -v0
    end
.end
";
    outputs_stored_from_registers(straight);
    let branchy = "\
.constf k(0.5, -0.5, 2.0, 0.25)
.out o_a position
.out o_b color
.out o_c texcoord0
.proc main
    mov o_a, v0
    cmp k.xx, gt, le, v0
    ifc cmp.x
        add o_b, v1, k
    .else
        mul o_b, v2, k
    .end
    add o_c, v3, v1
    mul o_a.x, v4.y, k
    end
.end
";
    outputs_stored_from_registers(branchy);
}

fn outputs_stored_from_registers(text: &str) {
    outputs_match_the_interpreter(&OutputsDrive {
        file: "direct.pica",
        text,
        seed: 0x5eed_0031,
        edge_inputs: &[EdgeInputs {
            period: 5,
            phase: 0,
            shift: 0,
            registers: 6,
            values: ODD_INPUT,
        }],
        states: 48,
        lens: &[8, 16, 32, 48, 13, 3],
        with_dvle_mask: true,
        output_masks: &[0xffff, 0x0001, 0x0006, 0x0005],
        every_vertex_in_kernel: true,
    });
}

/// §9.27: F24 inputs read only by additions (`v0`, `v1`: stored flushed,
/// read by no product, so their fast conversion records no lower bound)
/// beside inputs read by products (`v2`, `v3`: bounded product operands,
/// recorded, converted after `v0` and `v1` so the group's first lower-bound
/// record comes after rows without one), and a shader whose inputs all
/// skip the record (its check has no subnormal test) while a value computed
/// from them is a checked operand of bounded products by uniforms (the
/// group's bounds flag then made without a lower bound), with lanes at -0,
/// +0, float24 subnormals of either sign, 2^-62 exactly and just below,
/// 2^-23 (the operands' lower bound) and just below, 2^-45, tiny, large,
/// infinite and NaN values, mixed within one group, in groups of ordinary lanes and a partial group, with
/// uniforms in and out of the operand bounds: `run_vertices` and
/// `run_batch` equal the interpreter bit for bit at every width. (Skipping
/// the lower-bound record of every row stored flushed while keeping the
/// rows products read bounded, `f24_load_deferred_row` in `x64/wide`
/// passing `!flushed`, fails it: a `v2` lane of 2^-45 is taken as a
/// bounded operand and its product by `c1.x` = 2^-22 is not flushed.)
#[test]
fn f24_inputs_no_product_reads_match_the_interpreter_at_every_width() {
    let sources = [
        "
        add o0, v0, v1
        add o1, v1, v0
        mul o2, v2, c1
        dp4 o3.x, v3, c0
        mul o4, v2, v3
        add o3.yzw, v0.yzw, v2.yzw
        end
    ",
        "
        add r0, v0, v1
        mul o0, r0, c0
        mul o1, r0, c1
        dp4 o2.x, r0, c2
        add o3, v1, v0
        end
    ",
    ];
    let p = |e: i32| 2f32.powi(e);
    // The float24 edges and the product operands' lower bound (2^-23, §9.29).
    let edges: Vec<f32> = F24_EDGES
        .into_iter()
        .chain([p(-45), p(-23), f32::from_bits(0x33FF_FFFF)]) // just below 2^-23
        .collect();
    let ordinary = |n: usize| {
        let x = n as f32 * 0.25 + 1.0;
        [
            [x, -x, 2.0, 0.5],
            [3.0, x, -0.75, 1.0],
            [p(-45), 1.5, -x, 2.0],
            [p(-45), -x, 0.125, 4.0],
        ]
    };
    let mut uniforms_in = pica_jit::Uniforms::default();
    uniforms_in.f[0] = [1.5, -2.0, 0.25, 3.0];
    uniforms_in.f[1] = [p(-22), 0.5, -4.0, 1.0];
    uniforms_in.f[2] = [2.0, 0.75, -1.0, p(10)];
    let mut uniforms_out = uniforms_in.clone();
    uniforms_out.f[1][0] = p(-45);
    uniforms_out.f[2][3] = p(30);
    for source in sources {
        let program = std::sync::Arc::new(common::assemble(source).program());
        for_each_width(|width| {
            let inputs = every_edge_mixed(width.lanes(), &edges, ordinary);
            let uniform_sets = [uniforms_in.clone(), uniforms_out.clone()];
            let (interp, jit) = assert_f24_vertices_match_for_each_uniform_set(
                &program,
                width,
                &inputs,
                &uniform_sets,
            );
            for uniforms in &uniform_sets {
                assert_run_batch_matches(&interp, &jit, uniforms, &inputs, width);
            }
            inputs.len()
        });
    }
}

/// §9.36: float24 products of inputs by uniform components stored in
/// temporaries (`mul r2.x, c4.x, v1.x`, the particle shaders' scaled
/// matrix) are read by `dp3`s of uniform rows and by stored products
/// unflushed, as checked values: where the region's check finds every such
/// product zero or within [2^-23, 2^29), the products reading them are
/// bounded and their sums truncated; elsewhere the group runs the forms
/// with flushes. Products at 2^-23, just below, 2^-40 (whose products by
/// 2^-23 must flush), just below 2^29 and at 2^29, zeros of both signs,
/// and `F24_EDGES` (subnormals, infinities, NaN) in `v1`, mixed within
/// groups, with uniforms in and out of the operand bounds: `run_vertices`
/// under `Reset` and, with each edge in the last vertex, `Carry` (final
/// states), and `run_batch`, every width, against the interpreter bit for
/// bit. (Leaving out the checked bounded products' record in
/// `x64/wide`'s `quantize_product` fails it.)
#[test]
fn f24_products_read_by_uniform_products_match_the_interpreter_at_every_width() {
    let source = "
        mul r2.x, c4.x, v1.x
        mul r2.y, c5.x, v1.x
        mul r2.z, c6.x, v1.y
        mul r3, c4, v1
        dp3 o0.x, c0, r2
        dp3 o0.y, c1, r2
        dp3 o0.z, c2, r2
        dp3 o1.x, c0, r3
        dp3 o1.y, c1, r3
        dp4 o1.z, c2, r3
        mul o2, c2, r3
        mad o3, r3, c3, v0
        end
    ";
    let program = std::sync::Arc::new(common::assemble(source).program());
    let p = |e: i32| 2f32.powi(e);
    let bits = f32::from_bits;
    let edges: Vec<f32> = F24_EDGES
        .into_iter()
        .chain([
            p(-12),
            bits(0x397F_FF80), // just below 2^-12
            p(-20),
            -p(-11),
            p(-23),
            p(14),
            -p(15),
            bits(0x4DFF_FF80), // just below 2^29
        ])
        .collect();
    let ordinary = |n: usize| {
        let x = n as f32 * 0.25 + 1.0;
        [[x, -0.5, 2.0, 0.75], [x, -x, 0.5, 3.0]]
    };
    // Factors (c4–c6) that bring the products to the bounds, and rows
    // (c0–c3) that read them: 2^-11 · 2^-12 = 2^-23, 2^-20 · 2^-20 =
    // 2^-40 (then times 2^-23), 2^15 · 2^14 = 2^29, 1 · just below 2^29.
    let uniforms = |f: [f32; 4], r: [f32; 4]| {
        let mut u = pica_jit::Uniforms::default();
        u.f[0] = r;
        u.f[1] = [r[3], -r[2], r[1], r[0]];
        u.f[2] = [0.5, r[0], -0.0, 2.0];
        u.f[3] = [1.0, -r[1], 0.25, r[2]];
        u.f[4] = f;
        u.f[5] = [f[1], f[0], -f[3], f[2]];
        u.f[6] = [f[2], 1.0, f[0], -f[1]];
        u
    };
    let uniform_sets = [
        uniforms([p(-11), 1.0, p(15), -0.5], [p(-23), 1.0, -p(28), 0.5]),
        uniforms([p(-20), p(-11), 1.0, p(14)], [p(-23), -p(-22), 2.0, p(-23)]),
        uniforms([1.0, -p(15), p(-20), 0.0], [p(28), p(-23), -1.0, -0.0]),
        // Out of the operand bounds: every group runs without bounded
        // products.
        uniforms([p(-30), 1.0, 2.0, 0.5], [p(-23), 1.0, p(30), 0.5]),
    ];
    for_each_width(|width| {
        let lanes = width.lanes();
        let inputs = every_edge_mixed(lanes, &edges, ordinary);
        let (interp, jit) =
            assert_f24_vertices_match_for_each_uniform_set(&program, width, &inputs, &uniform_sets);
        let mut compared = inputs.len();
        for (u, uniforms) in uniform_sets.iter().enumerate() {
            for &e in &edges {
                let mut last = [[0.0f32; 4]; 16];
                last[0] = [1.0, e, -2.0, 0.5];
                last[1] = [e, -e, e, 1.5];
                compared += assert_carry_last_vertex_matches(
                    (&interp, &jit),
                    uniforms,
                    &inputs,
                    lanes,
                    last,
                    &format_args!("{width:?}, Carry, uniforms {u}, edge {:#010x}", e.to_bits()),
                );
            }
            assert_run_batch_matches(&interp, &jit, uniforms, &inputs, width);
        }
        compared
    });
}
