//! Wall-clock timing: a warm-up, then the median of several passes.

use std::time::{Duration, Instant};

/// Least warm-up time (at least one pass runs whatever its length).
const WARM_UP: Duration = Duration::from_millis(50);
/// Least length of one timed sample: short passes are repeated within a
/// sample so that the clock's resolution does not dominate.
const MIN_SAMPLE: Duration = Duration::from_millis(2);

/// The measurement of one engine: nanoseconds per vertex over the samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Timing {
    /// Median over the samples (what the report calls ns/vertex).
    pub median_ns: f64,
    /// Fastest sample.
    pub min_ns: f64,
    /// Slowest sample.
    pub max_ns: f64,
    /// Timed samples (`--passes`).
    pub samples: usize,
    /// Passes over all vertices in each sample.
    pub repeats: usize,
}

impl Timing {
    /// From per-sample durations of `repeats` passes over `vertices` vertices.
    /// `None` for no sample or no vertex.
    pub fn from_samples(samples: &[Duration], repeats: usize, vertices: usize) -> Option<Timing> {
        let per_sample = (repeats * vertices) as f64;
        if samples.is_empty() || per_sample == 0.0 {
            return None;
        }
        let mut ns: Vec<f64> = samples
            .iter()
            .map(|d| d.as_nanos() as f64 / per_sample)
            .collect();
        ns.sort_by(f64::total_cmp);
        let mid = ns.len() / 2;
        let median_ns = if ns.len() % 2 == 1 {
            ns[mid]
        } else {
            (ns[mid - 1] + ns[mid]) / 2.0
        };
        Some(Timing {
            median_ns,
            min_ns: ns[0],
            max_ns: ns[ns.len() - 1],
            samples: samples.len(),
            repeats,
        })
    }

    /// Vertices per second at the median.
    pub fn vertices_per_second(&self) -> f64 {
        1e9 / self.median_ns
    }
}

/// What [`measure`] is doing, for the progress line.
pub enum Phase {
    WarmUp,
    Sample { done: usize, of: usize },
}

/// Warms up with `pass` (at least one pass and [`WARM_UP`]), then times
/// `samples` samples of enough passes each to last [`MIN_SAMPLE`]. A pass shades
/// `vertices` vertices. `progress` hears about each phase.
pub fn measure(
    vertices: usize,
    samples: usize,
    mut pass: impl FnMut(),
    mut progress: impl FnMut(Phase),
) -> Option<Timing> {
    progress(Phase::WarmUp);
    let start = Instant::now();
    let mut warm_passes = 0u32;
    while warm_passes == 0 || start.elapsed() < WARM_UP {
        pass();
        warm_passes += 1;
    }
    let per_pass = start.elapsed() / warm_passes;
    let repeats = repeats_for(per_pass);

    let mut durations = Vec::with_capacity(samples);
    for done in 0..samples {
        progress(Phase::Sample { done, of: samples });
        let t = Instant::now();
        for _ in 0..repeats {
            pass();
        }
        durations.push(t.elapsed());
    }
    Timing::from_samples(&durations, repeats, vertices)
}

/// Passes per sample so that a sample lasts at least [`MIN_SAMPLE`].
fn repeats_for(per_pass: Duration) -> usize {
    if per_pass >= MIN_SAMPLE {
        return 1;
    }
    let per_pass = per_pass.as_nanos().max(1);
    usize::try_from(MIN_SAMPLE.as_nanos().div_ceil(per_pass)).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn median_min_and_max_per_vertex() {
        // 1,000 vertices, 2 passes per sample: 2,000 vertices per sample.
        let t = Timing::from_samples(&[ms(6), ms(2), ms(4)], 2, 1000).unwrap();
        assert_eq!(t.median_ns, 2000.0);
        assert_eq!(t.min_ns, 1000.0);
        assert_eq!(t.max_ns, 3000.0);
        assert_eq!(t.samples, 3);
        assert_eq!(t.repeats, 2);
        assert_eq!(t.vertices_per_second(), 500_000.0);
        // An even count takes the mean of the middle two.
        let even = Timing::from_samples(&[ms(1), ms(4), ms(2), ms(3)], 1, 1000).unwrap();
        assert_eq!(even.median_ns, 2500.0);
    }

    #[test]
    fn no_samples_or_vertices_give_no_timing() {
        assert_eq!(Timing::from_samples(&[], 1, 10), None);
        assert_eq!(Timing::from_samples(&[ms(1)], 1, 0), None);
    }

    #[test]
    fn short_passes_are_repeated_to_fill_a_sample() {
        assert_eq!(repeats_for(ms(5)), 1);
        assert_eq!(repeats_for(MIN_SAMPLE), 1);
        assert_eq!(repeats_for(MIN_SAMPLE / 4), 4);
        assert_eq!(repeats_for(Duration::from_nanos(300_000)), 7);
        assert_eq!(
            repeats_for(Duration::ZERO),
            MIN_SAMPLE.as_nanos() as usize,
            "a pass too short to measure counts as 1 ns"
        );
    }

    #[test]
    fn measure_runs_the_warm_up_then_every_sample() {
        let passes = std::cell::Cell::new(0usize);
        let mut phases = Vec::new();
        let mut warm_passes = None;
        let start = Instant::now();
        let t = measure(
            10,
            3,
            || {
                passes.set(passes.get() + 1);
                std::thread::sleep(Duration::from_millis(3));
            },
            |p| {
                phases.push(match p {
                    Phase::WarmUp => "warm-up".to_string(),
                    Phase::Sample { done, of } => {
                        if done == 0 {
                            warm_passes = Some(passes.get());
                        }
                        format!("{done}/{of}")
                    }
                })
            },
        )
        .unwrap();
        let elapsed = start.elapsed();
        assert_eq!(phases, ["warm-up", "0/3", "1/3", "2/3"]);
        assert_eq!(t.samples, 3);
        assert_eq!(t.repeats, 1, "a 3 ms pass fills a sample on its own");
        let warm_passes = warm_passes.unwrap();
        assert!(
            warm_passes >= 2,
            "one 3 ms pass cannot fill the 50 ms warm-up"
        );
        assert_eq!(passes.get(), warm_passes + 3, "one pass per sample");
        assert!(elapsed >= WARM_UP + ms(9), "{elapsed:?}");
        // Each pass slept 3 ms over 10 vertices: at least 300 µs per vertex.
        assert!(t.min_ns >= 300_000.0, "{t:?}");
        assert!(t.min_ns <= t.median_ns && t.median_ns <= t.max_ns);
    }
}
