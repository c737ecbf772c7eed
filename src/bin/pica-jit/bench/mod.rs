//! The `bench` command: ns/vertex and vertices/s of every engine and call path
//! this host has on one vertex DVLE, and the ratios between them.
//!
//! Every row shades the same deterministic draw ([`workload`]) with the state
//! carried from vertex to vertex, as the hardware does. A first pass from the
//! default state compiles native code, warms caches and checks that every row
//! gives the first row's outputs; then [`timing`] warms up and takes the median
//! of several samples.

mod progress;
mod report;
mod rows;
mod timing;
mod workload;

pub use rows::ENGINE_NAMES;

use crate::commands::load;
use crate::error::CliError;
use pica_jit::shbin::{Dvle, Shbin};
use pica_jit::{Precision, Program, ShaderConfig, ShaderKind, UnitState, VertexRegisters};
use progress::Progress;
use report::{Report, RowResult, precision_name};
use rows::Runner;
use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use workload::Workload;

pub struct BenchArgs<'a> {
    pub file: Option<&'a Path>,
    pub dvle: usize,
    /// `--engine` values (see [`ENGINE_NAMES`]); empty for the default.
    pub engines: &'a [String],
    /// `f24`, `f32` or `both`.
    pub precision: &'a str,
    pub vertices: usize,
    pub samples: usize,
    pub json: bool,
}

pub fn bench(args: BenchArgs<'_>) -> Result<String, CliError> {
    let precisions = match args.precision {
        "both" => vec![Precision::F24, Precision::F32],
        other => vec![other.parse()?],
    };
    let (name, shbin) = load(args.file)?;
    let dvle = vertex_dvle(&name, &shbin, args.dvle)?;
    let program = Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone()).map_err(
        |source| CliError::Program {
            path: name.clone(),
            source,
        },
    )?;
    let program = Arc::new(program);

    let host_jit = pica_jit::jit::host_support();
    let specs = rows::select(args.engines, host_jit.is_ok());
    let mut progress = Progress::new(specs.len() * precisions.len());
    let wants_every_engine = args.engines.is_empty() || args.engines.iter().any(|e| e == "all");
    if let (true, Err(reason)) = (wants_every_engine, host_jit) {
        progress.note(&format!(
            "pica-jit: note: no JIT on this host ({reason}); the jit and batch rows are left out"
        ));
    }

    let work = Workload::new(dvle, args.vertices);
    let mut rows = Vec::new();
    for precision in precisions {
        let config = ShaderConfig {
            entry: dvle.main,
            kind: dvle.kind,
            precision,
            budget: pica_jit::DEFAULT_BUDGET,
        };
        // The first row's outputs, one fingerprint per vertex (a copy of the
        // outputs would double the memory a large draw needs).
        let mut reference: Option<(&'static str, Vec<u64>)> = None;
        // The wide rows start every vertex from the pass's starting state:
        // their outputs are compared with the interpreter doing the same.
        let reset_reference = match specs.iter().any(|s| s.resets_state()) {
            true => Some((
                "interp (StatePolicy::Reset)",
                reset_prints(&program, config, &work, &name)?,
            )),
            false => None,
        };
        for &spec in &specs {
            progress.start(format!("{} {}", precision_name(precision), spec.id));
            let measured = Runner::new(spec, program.clone(), config, &name).and_then(|runner| {
                let row = RowContext {
                    precision,
                    reference: if spec.resets_state() {
                        &reset_reference
                    } else {
                        &reference
                    },
                    progress: &progress,
                    file: &name,
                };
                measure_row(&runner, &work, args.samples, row)
            });
            let (row, prints) = match measured {
                Ok(measured) => measured,
                Err(e) => {
                    progress.clear(); // the error starts its own line
                    return Err(e);
                }
            };
            if reference.is_none() {
                reference = Some((spec.id, prints));
            }
            rows.push(row);
        }
    }
    progress.clear();

    let report = Report {
        file: name,
        dvle: args.dvle,
        vertices: work.len(),
        samples: args.samples,
        rows,
    };
    Ok(if args.json {
        report.json()
    } else {
        report.table()
    })
}

/// The interpreter's output fingerprints for `work` under
/// `StatePolicy::Reset` from the default state.
fn reset_prints(
    program: &Arc<Program>,
    config: ShaderConfig,
    work: &Workload,
    file: &str,
) -> Result<Vec<u64>, CliError> {
    let runner = Runner::new(rows::RESET_REFERENCE, program.clone(), config, file)?;
    let mut outputs = vec![[[0.0f32; 4]; 16]; work.len()];
    runner
        .pass(work, &mut UnitState::default(), &mut outputs)
        .map_err(|e| CliError::EngineCannotRun {
            engine: rows::RESET_REFERENCE.id,
            path: file.to_string(),
            reason: e.to_string(),
        })?;
    Ok(fingerprints(&outputs))
}

/// DVLE `index` of `shbin`, which must exist and be a vertex shader.
fn vertex_dvle<'s>(name: &str, shbin: &'s Shbin, index: usize) -> Result<&'s Dvle, CliError> {
    let dvle = shbin.dvles.get(index).ok_or(CliError::NoSuchDvle {
        path: name.to_string(),
        index,
        count: shbin.dvles.len(),
    })?;
    if dvle.kind != ShaderKind::Vertex {
        return Err(CliError::NotAVertexShader {
            path: name.to_string(),
            index,
            vertex_dvles: shbin
                .dvles
                .iter()
                .enumerate()
                .filter(|(_, d)| d.kind == ShaderKind::Vertex)
                .map(|(n, _)| n)
                .collect(),
        });
    }
    Ok(dvle)
}

/// Slowest over fastest sample above which the report notes that the
/// machine was probably busy.
const NOISY_SPREAD: f64 = 1.5;

/// Whether the samples spread so far that the machine was probably busy.
fn noisy(timing: &timing::Timing) -> bool {
    timing.max_ns > NOISY_SPREAD * timing.min_ns
}

/// Where a row is measured: its precision, the first row's output
/// fingerprints (none for the first row), the progress line, the file name.
struct RowContext<'a> {
    precision: Precision,
    reference: &'a Option<(&'static str, Vec<u64>)>,
    progress: &'a Progress,
    file: &'a str,
}

/// One row: the checking pass from the default state (compared with the
/// reference, notes on stderr), then the timed samples continuing from its
/// final state. Returns the row and the checking pass's output fingerprints.
fn measure_row(
    runner: &Runner,
    work: &Workload,
    samples: usize,
    RowContext {
        precision,
        reference,
        progress,
        file,
    }: RowContext<'_>,
) -> Result<(RowResult, Vec<u64>), CliError> {
    let spec = runner.spec;
    let cannot = |reason: String| CliError::EngineCannotRun {
        engine: spec.id,
        path: file.to_string(),
        reason,
    };
    let label = progress.label();

    let mut state = UnitState::default();
    let mut outputs = vec![[[0.0f32; 4]; 16]; work.len()];
    let unfinished = runner
        .pass(work, &mut state, &mut outputs)
        .map_err(|e| cannot(e.to_string()))?;
    if unfinished > 0 {
        progress.note(&format!(
            "pica-jit: note: {label}: {unfinished} of {} vertices stopped without `end` \
             (budget or `break` outside a loop); their time counts as measured",
            work.len()
        ));
    }
    let prints = fingerprints(&outputs);
    let mut outputs_match = true;
    if let Some((first, expected)) = reference
        && let Some(vertex) = first_difference(expected, &prints)
    {
        outputs_match = false;
        progress.note(&format!(
            "pica-jit: warning: {label}: vertex {vertex} gives other outputs than `{first}` \
             (engines must agree bit for bit; please report this)"
        ));
    }

    let timing = timing::measure(
        work.len(),
        samples,
        || {
            let _ = black_box(runner.pass(work, &mut state, &mut outputs));
        },
        |phase| progress.phase(&phase),
    )
    .ok_or_else(|| cannot("no sample was taken".into()))?;
    if noisy(&timing) {
        progress.note(&format!(
            "pica-jit: note: {label}: samples range from {:.2} to {:.2} ns/vertex (a busy \
             machine?); more --samples steady the median, and JSON has the minimum",
            timing.min_ns, timing.max_ns
        ));
    }
    let row = RowResult {
        precision,
        engine: spec.id,
        description: spec.description,
        timing,
        unfinished,
        outputs_match,
    };
    Ok((row, prints))
}

/// Per vertex, a fingerprint of every bit of its output registers (FNV-1a
/// over the f32 bit patterns, so NaN payloads and signed zeros count).
fn fingerprints(outputs: &[VertexRegisters]) -> Vec<u64> {
    outputs
        .iter()
        .map(|vertex| {
            vertex
                .iter()
                .flatten()
                .flat_map(|x| x.to_bits().to_le_bytes())
                .fold(0xcbf2_9ce4_8422_2325u64, |h, byte| {
                    (h ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
                })
        })
        .collect()
}

/// The first vertex whose fingerprint differs from `expected`'s.
fn first_difference(expected: &[u64], got: &[u64]) -> Option<usize> {
    expected.iter().zip(got).position(|(a, b)| a != b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_are_fnv1a_of_the_output_bits() {
        // FNV-1a of 256 zero bytes, computed independently (Python):
        // h = 0xcbf29ce484222325; for _ in range(256): h = (h * 0x100000001b3) % 2**64
        let zero = fingerprints(&[[[0.0f32; 4]; 16]]);
        assert_eq!(zero, [0xd80a_c658_736b_b725]);
    }

    #[test]
    fn a_wide_spread_of_samples_is_noisy() {
        let ms = std::time::Duration::from_millis;
        let steady = timing::Timing::from_samples(&[ms(10), ms(11), ms(14)], 1, 100).unwrap();
        assert!(!noisy(&steady));
        let busy = timing::Timing::from_samples(&[ms(10), ms(11), ms(16)], 1, 100).unwrap();
        assert!(noisy(&busy));
    }

    #[test]
    fn outputs_compare_by_bits() {
        let mut a = vec![[[0.0f32; 4]; 16]; 3];
        a[1][2] = [f32::NAN; 4];
        let mut b = a.clone();
        let first = |a: &[VertexRegisters], b: &[VertexRegisters]| {
            first_difference(&fingerprints(a), &fingerprints(b))
        };
        assert_eq!(first(&a, &b), None, "the same NaN bits match");
        b[2][0][3] = -0.0;
        assert_eq!(first(&a, &b), Some(2), "-0.0 differs from 0.0");
        b[1][2][0] = f32::from_bits(0x7fc0_0001);
        assert_eq!(first(&a, &b), Some(1), "NaN payloads count");
    }
}
