//! Operand descriptors: destination mask, per-source negation and swizzle.

use std::fmt;

/// A component selector: for each destination lane, which source lane it reads.
///
/// ```
/// use pica_jit::isa::Swizzle;
/// assert_eq!(Swizzle(0x1B), Swizzle::IDENTITY);
/// assert_eq!(Swizzle(0x55).lanes(), [1, 1, 1, 1]);
/// assert_eq!(Swizzle(0x1B).to_string(), "xyzw");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Swizzle(pub u8);

impl Swizzle {
    /// `.xyzw`.
    pub const IDENTITY: Swizzle = Swizzle(0x1B);

    /// The source lane read by destination lane `lane` (0 = x … 3 = w).
    pub fn lane(self, lane: usize) -> usize {
        ((self.0 >> (6 - 2 * lane)) & 3) as usize
    }

    /// All four selected source lanes, x first.
    pub fn lanes(self) -> [usize; 4] {
        [self.lane(0), self.lane(1), self.lane(2), self.lane(3)]
    }

    /// Builds a selector from four lane numbers (each 0..=3).
    pub fn from_lanes(lanes: [usize; 4]) -> Swizzle {
        Swizzle(lanes.iter().fold(0u8, |acc, &l| (acc << 2) | (l as u8 & 3)))
    }
}

impl fmt::Display for Swizzle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for lane in self.lanes() {
            f.write_str(LANE_NAMES[lane])?;
        }
        Ok(())
    }
}

pub(crate) const LANE_NAMES: [&str; 4] = ["x", "y", "z", "w"];

/// A destination write mask. Bit 3 is x, bit 0 is w (as encoded).
///
/// ```
/// use pica_jit::isa::WriteMask;
/// let m = WriteMask(0b1010);
/// assert!(m.writes(0) && !m.writes(1) && m.writes(2) && !m.writes(3));
/// assert_eq!(m.to_string(), "xz");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WriteMask(pub u8);

impl WriteMask {
    /// All four lanes.
    pub const ALL: WriteMask = WriteMask(0xF);

    /// Whether lane `lane` (0 = x … 3 = w) is written.
    pub fn writes(self, lane: usize) -> bool {
        self.0 & (8 >> lane) != 0
    }

    /// The written lanes as a bit set with lane `i` (0 = x) in bit `i`: the
    /// order SIMD blend immediates and lane masks use (the encoding has x in bit 3).
    ///
    /// ```
    /// use pica_jit::isa::WriteMask;
    /// assert_eq!(WriteMask(0b1000).lane_bits(), 0b0001); // .x
    /// assert_eq!(WriteMask(0b0011).lane_bits(), 0b1100); // .zw
    /// ```
    pub fn lane_bits(self) -> u8 {
        (0..4)
            .filter(|&lane| self.writes(lane))
            .fold(0, |acc, lane| acc | 1 << lane)
    }
}

impl fmt::Display for WriteMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (lane, name) in LANE_NAMES.iter().enumerate() {
            if self.writes(lane) {
                f.write_str(name)?;
            }
        }
        Ok(())
    }
}

/// One operand descriptor word.
///
/// ```
/// use pica_jit::isa::{OperandDescriptor, Swizzle, WriteMask};
/// // mask xyzw, src1 = -src.yyyy, src2 = .xyzw
/// let d = OperandDescriptor::new(WriteMask::ALL, [(true, Swizzle(0x55)), (false, Swizzle::IDENTITY), (false, Swizzle::IDENTITY)]);
/// assert!(d.negate(0));
/// assert_eq!(d.swizzle(0), Swizzle(0x55));
/// assert_eq!(d.mask(), WriteMask::ALL);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct OperandDescriptor(pub u32);

impl OperandDescriptor {
    /// Bit offsets of each source's negation bit; the selector follows it.
    const SOURCE_SHIFT: [u32; 3] = [4, 13, 22];

    /// Builds a descriptor from a mask and (negate, swizzle) for sources 1..=3.
    pub fn new(mask: WriteMask, sources: [(bool, Swizzle); 3]) -> OperandDescriptor {
        let mut word = (mask.0 & 0xF) as u32;
        for (i, (neg, swz)) in sources.iter().enumerate() {
            let shift = Self::SOURCE_SHIFT[i];
            word |= (*neg as u32) << shift;
            word |= (swz.0 as u32) << (shift + 1);
        }
        OperandDescriptor(word)
    }

    /// The destination write mask.
    pub fn mask(self) -> WriteMask {
        WriteMask((self.0 & 0xF) as u8)
    }

    /// Whether source `i` (0-based: 0 = SRC1) is negated.
    pub fn negate(self, i: usize) -> bool {
        (self.0 >> Self::SOURCE_SHIFT[i]) & 1 != 0
    }

    /// The component selector of source `i` (0-based).
    pub fn swizzle(self, i: usize) -> Swizzle {
        Swizzle(((self.0 >> (Self::SOURCE_SHIFT[i] + 1)) & 0xFF) as u8)
    }
}
