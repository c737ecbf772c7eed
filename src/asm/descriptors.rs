//! The operand descriptor table, shared by every file of one SHBIN.
//!
//! A request says which bits it needs (`mask`) and their values. An existing
//! entry is reused when it agrees on every bit both care about; the bits only
//! the request cares about are then filled in. This is how picasso shares
//! descriptors, and it decides the bytes: the lanes an instruction does not
//! read keep whatever an earlier user left there.

use crate::isa::{MAD_DESCRIPTORS, MAX_DESCRIPTORS};

#[derive(Debug, Default, Clone)]
pub(crate) struct DescriptorTable {
    values: Vec<u32>,
    masks: Vec<u32>,
}

impl DescriptorTable {
    /// The index of a compatible entry (added if none), or `None` when the
    /// table (or, for `mad`, its first 32 slots) is full.
    pub fn find_or_add(&mut self, value: u32, mask: u32, mad: bool) -> Option<u8> {
        let limit = if mad {
            MAD_DESCRIPTORS
        } else {
            MAX_DESCRIPTORS
        };
        for (i, (v, m)) in self
            .values
            .iter_mut()
            .zip(&mut self.masks)
            .enumerate()
            .take(limit)
        {
            if (*v ^ value) & *m & mask == 0 {
                let new_bits = mask & !*m;
                *v = (*v & !new_bits) | (value & new_bits);
                *m |= mask;
                return u8::try_from(i).ok();
            }
        }
        if self.values.len() >= limit {
            return None;
        }
        self.values.push(value);
        self.masks.push(mask);
        u8::try_from(self.values.len() - 1).ok()
    }

    /// The descriptor words.
    pub fn words(&self) -> &[u32] {
        &self.values
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compatible_requests_share_and_fill_in() {
        let mut t = DescriptorTable::default();
        assert_eq!(t.find_or_add(0x36E, 0x1FEF, false), Some(0));
        // Same mask and src1, now also src2: shares slot 0 and fills src2 in.
        assert_eq!(t.find_or_add(0x6C36E, 0x3F_FFEF, false), Some(0));
        assert_eq!(t.words(), &[0x6C36E]);
        // Different mask: new slot.
        assert_eq!(t.find_or_add(0x361, 0x1FEF, false), Some(1));
    }

    #[test]
    fn mad_reaches_only_the_first_32_slots() {
        let mut t = DescriptorTable::default();
        for i in 0..32u32 {
            assert_eq!(t.find_or_add(i << 5, 0x1FE0, false), Some(i as u8));
        }
        assert_eq!(t.find_or_add(99 << 5, 0x1FE0, true), None);
        assert_eq!(t.find_or_add(99 << 5, 0x1FE0, false), Some(32));
    }
}
