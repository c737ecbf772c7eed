//! What the benchmarks share: the clock timed loops read, deterministic vertex
//! data, the embedded default shader's demo uniforms and the corpus files.

// Each benchmark binary uses its own part of this module.
#![allow(dead_code)]

use criterion::Bencher;
use pica_jit::Uniforms;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus");

/// Whether timed loops use wall-clock time (`PICA_BENCH_WALL=1`) rather than the
/// benchmark thread's CPU time.
fn wall_clock() -> bool {
    static WALL: OnceLock<bool> = OnceLock::new();
    *WALL.get_or_init(|| std::env::var_os("PICA_BENCH_WALL").is_some_and(|v| v == "1"))
}

/// The clock timed loops read. By default this thread's CPU time
/// (`CLOCK_THREAD_CPUTIME_ID`, user + system): on a shared, loaded machine it
/// leaves out the time other processes hold the core, which wall-clock time would
/// charge to whichever benchmark happened to be running.
pub fn clock() -> Duration {
    if wall_clock() {
        static ORIGIN: OnceLock<Instant> = OnceLock::new();
        return ORIGIN.get_or_init(Instant::now).elapsed();
    }
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Times `iters` calls of `routine` with [`clock`].
pub fn measure(b: &mut Bencher<'_>, mut routine: impl FnMut()) {
    b.iter_custom(|iters| {
        let start = clock();
        for _ in 0..iters {
            routine();
        }
        clock() - start
    });
}

/// xorshift64*: deterministic vertex data without extra dependencies.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `[lo, hi)`.
    pub fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * ((self.next() >> 40) as f32 / (1u64 << 24) as f32)
    }

    /// A vertex for a shader whose inputs mean nothing in particular: every
    /// register in `[0, 1)`, then `v0` a position in `[-1, 1)³` with `w = 1`.
    pub fn generic_vertex(&mut self) -> [pica_jit::Vec4; 16] {
        let mut v = [[0.0; 4]; 16];
        for reg in v.iter_mut() {
            *reg = std::array::from_fn(|_| self.range(0.0, 1.0));
        }
        v[0] = [
            self.range(-1.0, 1.0),
            self.range(-1.0, 1.0),
            self.range(-1.0, 1.0),
            1.0,
        ];
        v
    }

    /// A plausible vertex for the embedded default shader: a position in front
    /// of the camera, a unit normal, a colour, a texture coordinate.
    pub fn demo_vertex(&mut self) -> [pica_jit::Vec4; 16] {
        let mut v = [[0.0; 4]; 16];
        v[0] = [
            self.range(-1.0, 1.0),
            self.range(-1.0, 1.0),
            self.range(0.5, 1.5),
            1.0,
        ];
        v[1] = self.normal();
        v[2] = [
            self.range(0.0, 1.0),
            self.range(0.0, 1.0),
            self.range(0.0, 1.0),
            1.0,
        ];
        v[3] = [self.range(0.0, 1.0), self.range(0.0, 1.0), 0.0, 0.0];
        v
    }

    /// A unit vector in `(x, y, z)` with `w = 0`, z away from the viewer.
    pub fn normal(&mut self) -> [f32; 4] {
        let n = [
            self.range(-1.0, 1.0),
            self.range(-1.0, 1.0),
            self.range(0.1, 1.0),
        ];
        let len = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
        [n[0] / len, n[1] / len, n[2] / len, 0.0]
    }
}

/// The embedded default shader's uniforms as `examples/demo.json` sets them (two
/// lights after the DVLE's `i0 = (1, 0, 2, 0)`), on top of `uniforms`.
pub fn apply_demo_uniforms(u: &mut Uniforms) {
    let f: [(usize, [f32; 4]); 13] = [
        (0, [1.0, 0.0, 0.0, 0.0]),
        (1, [0.0, 1.0, 0.0, 0.0]),
        (2, [0.0, 0.0, -1.002002, 2.8058058]),
        (3, [0.0, 0.0, -1.0, 3.0]),
        (4, [1.0, 0.0, 0.0, 0.0]),
        (5, [0.0, 1.0, 0.0, 0.0]),
        (6, [0.0, 0.0, 1.0, 0.0]),
        (7, [0.1, 0.1, 0.1, 1.0]),
        (8, [0.577_350_26, 0.577_350_26, 0.577_350_26, 0.0]),
        (9, [0.8, 0.8, 0.8, 0.0]),
        (10, [0.0, 0.0, 1.0, 0.0]),
        (11, [0.3, 0.2, 0.1, 0.0]),
        (16, [0.5, 0.5, 0.5, 16.0]),
    ];
    for (n, v) in f {
        u.f[n] = v;
    }
}

/// Corpus files, sorted; empty (with a visible note) when the folder is absent.
pub fn corpus_files() -> Vec<PathBuf> {
    let dir = Path::new(CORPUS);
    if !dir.is_dir() {
        eprintln!("shbin corpus not found at {CORPUS}; corpus benchmarks skipped");
        return Vec::new();
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("corpus dir")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "shbin"))
        .collect();
    files.sort();
    files
}
