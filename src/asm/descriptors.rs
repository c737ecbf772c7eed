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
    /// Slots (below 32) some `mad` uses: they must stay where they are.
    mad_slots: u32,
}

/// Where a request landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Placed {
    /// The slot the instruction uses.
    pub index: u8,
    /// For a `mad` whose entry was found or added at slot 32 or above: the
    /// entry moved down to `index` by swapping it with the entry that was
    /// there, `(index, old slot)`. Every instruction already using either
    /// slot must be renumbered the same way.
    pub swapped: Option<(u8, u8)>,
}

impl DescriptorTable {
    /// The slot of a compatible entry (added if none), or `None` when the
    /// table is full or a `mad` cannot be given one of the first 32 slots.
    ///
    /// picasso's rule: every request, `mad` included, takes the first
    /// compatible entry of the whole table (or a new one at the end). `mad`
    /// can only name slots 0–31, so a `mad` entry found or added above them is
    /// swapped with the first slot below 32 that no `mad` uses yet.
    pub fn find_or_add(&mut self, value: u32, mask: u32, mad: bool) -> Option<Placed> {
        let found = self
            .values
            .iter()
            .zip(&self.masks)
            .position(|(v, m)| (*v ^ value) & *m & mask == 0);
        let index = match found {
            Some(i) => {
                let new_bits = mask & !self.masks[i];
                self.values[i] = (self.values[i] & !new_bits) | (value & new_bits);
                self.masks[i] |= mask;
                i
            }
            None => {
                if self.values.len() >= MAX_DESCRIPTORS {
                    return None;
                }
                self.values.push(value);
                self.masks.push(mask);
                self.values.len() - 1
            }
        };
        if !mad {
            return Some(Placed {
                index: u8::try_from(index).ok()?,
                swapped: None,
            });
        }
        let mut placed = Placed {
            index: u8::try_from(index).ok()?,
            swapped: None,
        };
        if index >= MAD_DESCRIPTORS {
            let free = (0..MAD_DESCRIPTORS).find(|&slot| self.mad_slots & (1 << slot) == 0)?;
            self.values.swap(free, index);
            self.masks.swap(free, index);
            placed = Placed {
                index: u8::try_from(free).ok()?,
                swapped: Some((u8::try_from(free).ok()?, u8::try_from(index).ok()?)),
            };
        }
        self.mad_slots |= 1 << placed.index;
        Some(placed)
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
        let at = |i| {
            Some(Placed {
                index: i,
                swapped: None,
            })
        };
        assert_eq!(t.find_or_add(0x36E, 0x1FEF, false), at(0));
        // Same mask and src1, now also src2: shares slot 0 and fills src2 in.
        assert_eq!(t.find_or_add(0x6C36E, 0x3F_FFEF, false), at(0));
        assert_eq!(t.words(), &[0x6C36E]);
        // Different mask: new slot.
        assert_eq!(t.find_or_add(0x361, 0x1FEF, false), at(1));
    }

    /// A `mad` entry above slot 31 is swapped down into the first slot no
    /// `mad` uses; with all 32 taken by `mad`s there is no room.
    #[test]
    fn mad_entries_above_31_are_swapped_down() {
        let mut t = DescriptorTable::default();
        for i in 0..40u32 {
            assert_eq!(
                t.find_or_add(i << 5, 0x1FE0, false).map(|p| p.index),
                Some(i as u8)
            );
        }
        // Matches slot 35: swapped with slot 0, the first slot no mad uses.
        let placed = t.find_or_add(35 << 5, 0x1FE0, true).unwrap();
        assert_eq!(
            placed,
            Placed {
                index: 0,
                swapped: Some((0, 35))
            }
        );
        assert_eq!(t.words()[0], 35 << 5);
        assert_eq!(t.words()[35], 0);
        // A new entry (slot 40) goes to slot 1; slot 0 is a mad's now.
        let placed = t.find_or_add(99 << 5, 0x1FE0, true).unwrap();
        assert_eq!(
            placed,
            Placed {
                index: 1,
                swapped: Some((1, 40))
            }
        );
        // A mad matching a slot below 32 stays there.
        let placed = t.find_or_add(7 << 5, 0x1FE0, true).unwrap();
        assert_eq!(
            placed,
            Placed {
                index: 7,
                swapped: None
            }
        );
        // Fill every slot below 32 with mads: then no room is left.
        for i in 0..32u32 {
            let v = t.words()[i as usize];
            t.find_or_add(v, 0x1FE0, true).unwrap();
        }
        assert_eq!(t.find_or_add(1234 << 5, 0x1FE0, true), None);
        // A non-mad request still gets a slot.
        assert!(t.find_or_add(1234 << 5, 0x1FE0, false).is_some());
    }
}
