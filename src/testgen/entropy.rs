//! Where the generator's random choices come from: the fuzzer's bytes
//! ([`Unstructured`]) or, for bulk register contents, a small PRNG seeded from them.

use arbitrary::Unstructured;

/// A source of random choices. Infallible: when the bytes run out every choice
/// becomes 0, so the generator's "first" option in each table is its default.
pub(crate) trait Entropy {
    /// A number in `0..n` (`n > 0`).
    fn below(&mut self, n: u32) -> u32;
    /// 32 random bits.
    fn bits(&mut self) -> u32;

    /// A number in `lo..=hi`.
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        debug_assert!(lo <= hi);
        let span = (hi - lo) as u64 + 1;
        if span > u32::MAX as u64 {
            lo + (((self.bits() as u64) << 32 | self.bits() as u64) % span) as i64
        } else {
            lo + self.below(span as u32) as i64
        }
    }

    /// True with probability `percent`/100 (false when the bytes have run out).
    fn chance(&mut self, percent: u32) -> bool {
        self.below(100) >= 100 - percent.min(100)
    }

    /// A random bool (false when the bytes have run out).
    fn flip(&mut self) -> bool {
        self.below(2) == 1
    }

    /// Picks one element of `items` (non-empty).
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u32) as usize]
    }

    /// Index into `weights`, chosen with probability proportional to the weight.
    fn weighted(&mut self, weights: &[u32]) -> usize {
        let total: u32 = weights.iter().sum();
        let mut roll = self.below(total);
        for (i, &w) in weights.iter().enumerate() {
            if roll < w {
                return i;
            }
            roll -= w;
        }
        weights.len() - 1
    }
}

impl Entropy for Unstructured<'_> {
    fn below(&mut self, n: u32) -> u32 {
        if n <= 1 {
            return 0;
        }
        self.int_in_range(0..=n - 1).unwrap_or(0)
    }

    fn bits(&mut self) -> u32 {
        self.arbitrary::<u32>().unwrap_or(0)
    }
}

/// SplitMix64: a tiny, fast, well-mixed PRNG used to fill the many register
/// lanes a case has without spending hundreds of fuzzer bytes on them.
#[derive(Clone, Debug)]
pub(crate) struct SplitMix(pub u64);

impl SplitMix {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

impl Entropy for SplitMix {
    fn below(&mut self, n: u32) -> u32 {
        if n <= 1 {
            return 0;
        }
        (((self.next_u64() >> 32) * n as u64) >> 32) as u32
    }

    fn bits(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }
}
