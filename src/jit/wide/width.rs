//! The widths of the wide engine.

/// How many lanes (vertices) one call of generated code shades, and with which
/// instruction set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Width {
    /// 4 lanes in `xmm` registers (SSE4.1).
    Sse41,
    /// 8 lanes in `ymm` registers (AVX2).
    Avx2,
    /// 16 lanes in `zmm` registers (AVX-512: the F and DQ subsets).
    Avx512,
    /// 4 lanes in 128-bit `v` registers (AArch64 NEON).
    Neon,
}

impl Width {
    /// Lanes per call.
    ///
    /// ```
    /// use pica_jit::jit::wide::Width;
    /// assert_eq!(Width::Sse41.lanes(), 4);
    /// assert_eq!(Width::Avx2.lanes(), 8);
    /// assert_eq!(Width::Avx512.lanes(), 16);
    /// assert_eq!(Width::Neon.lanes(), 4);
    /// ```
    pub fn lanes(self) -> usize {
        match self {
            Width::Sse41 | Width::Neon => 4,
            Width::Avx2 => 8,
            Width::Avx512 => 16,
        }
    }

    /// The widths this host can run, widest first (empty where the wide engine
    /// has no code generator).
    ///
    /// ```
    /// use pica_jit::jit::wide::Width;
    /// let widths = Width::available();
    /// // Widest first: `best` is the first one.
    /// assert_eq!(Width::best(), widths.first().copied());
    /// assert!(widths.windows(2).all(|w| w[0].lanes() > w[1].lanes()));
    /// ```
    pub fn available() -> Vec<Width> {
        #[cfg_attr(
            not(any(target_arch = "x86_64", target_arch = "aarch64")),
            allow(unused_mut)
        )]
        let mut out = Vec::new();
        #[cfg(target_arch = "x86_64")]
        {
            if crate::jit::memory::host_support().is_ok()
                && std::arch::is_x86_feature_detected!("sse4.1")
            {
                // `vpmovm2d`/`vpmovd2m` and `vandps` & co. are AVX512DQ.
                if std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512dq")
                {
                    out.push(Width::Avx512);
                }
                if std::arch::is_x86_feature_detected!("avx2") {
                    out.push(Width::Avx2);
                }
                out.push(Width::Sse41);
            }
        }
        #[cfg(target_arch = "aarch64")]
        {
            // NEON is the AArch64 baseline: the wide engine runs wherever the
            // single-vertex AArch64 JIT does.
            if crate::jit::host_support().is_ok() {
                out.push(Width::Neon);
            }
        }
        out
    }

    /// The widest width this host runs.
    pub fn best() -> Option<Width> {
        Width::available().first().copied()
    }
}
