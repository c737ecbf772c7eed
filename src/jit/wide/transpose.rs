//! Moving registers between vertices (a `Vec4` per vertex and register, the
//! layout of `UnitState` and of emulators' vertex buffers) and the wide
//! register file (one row of lanes per component): 4×4 transposes with SSE on
//! x86-64, element by element elsewhere. Lanes come in blocks of four.

use crate::Vec4;
use crate::state::UnitState;
use std::mem::offset_of;

/// Sets lanes `0..count` of the four rows `rows[c * lanes ..][..lanes]`
/// (component `c`) to `get(lane)`; lanes from `count` up to the next multiple
/// of four get zeros (inactive lanes, never read back).
pub(super) fn to_rows(rows: &mut [u32], lanes: usize, count: usize, get: impl Fn(usize) -> Vec4) {
    debug_assert!(rows.len() >= 4 * lanes && count <= lanes);
    for first in (0..count).step_by(4) {
        let v: [Vec4; 4] = std::array::from_fn(|k| {
            if first + k < count {
                get(first + k)
            } else {
                [0.0; 4]
            }
        });
        let t = transpose(v);
        for (c, row) in t.iter().enumerate() {
            let at = c * lanes + first;
            for (slot, x) in rows[at..at + 4].iter_mut().zip(row) {
                *slot = x.to_bits();
            }
        }
    }
}

/// Calls `put(lane, value)` for every lane of `mask` below `count` with the
/// lane's value of the four rows (component `c` in `rows[c * lanes ..]`).
pub(super) fn from_rows(
    rows: &[u32],
    lanes: usize,
    count: usize,
    mask: u32,
    mut put: impl FnMut(usize, Vec4),
) {
    debug_assert!(rows.len() >= 4 * lanes && count <= lanes);
    for first in (0..count).step_by(4) {
        if mask >> first & 0xF == 0 {
            continue;
        }
        let v: [Vec4; 4] = std::array::from_fn(|c| {
            let at = c * lanes + first;
            std::array::from_fn(|k| f32::from_bits(rows[at + k]))
        });
        for (k, value) in transpose(v).into_iter().enumerate() {
            let lane = first + k;
            if lane < count && mask >> lane & 1 != 0 {
                put(lane, value);
            }
        }
    }
}

/// A register file of [`UnitState`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum File {
    Input,
    Temp,
    Output,
}

impl File {
    /// Byte offset of register `reg` of this file in a `UnitState`.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    fn offset(self, reg: usize) -> usize {
        let base = match self {
            File::Input => offset_of!(UnitState, inputs),
            File::Temp => offset_of!(UnitState, temps),
            File::Output => offset_of!(UnitState, outputs),
        };
        base + reg * size_of::<Vec4>()
    }

    fn get(self, state: &UnitState, reg: usize) -> &Vec4 {
        match self {
            File::Input => &state.inputs[reg],
            File::Temp => &state.temps[reg],
            File::Output => &state.outputs[reg],
        }
    }

    fn get_mut(self, state: &mut UnitState, reg: usize) -> &mut Vec4 {
        match self {
            File::Input => &mut state.inputs[reg],
            File::Temp => &mut state.temps[reg],
            File::Output => &mut state.outputs[reg],
        }
    }
}

/// Sets the four rows `rows[c * lanes ..][..lanes]` of register `reg` of
/// `file` from `states` (lane `k` from `states[k]`); lanes from
/// `states.len()` up to the next multiple of four get zeros (inactive lanes,
/// never read back). The batch path's hot loop: whole blocks of four lanes
/// move with one 4×4 transpose straight between the states and the rows.
pub(super) fn states_to_rows(
    rows: &mut [u32],
    lanes: usize,
    states: &[UnitState],
    file: File,
    reg: usize,
) {
    let count = states.len();
    assert!(rows.len() >= 4 * lanes && count <= lanes && reg < 16);
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
    let mut first = 0;
    #[cfg(target_arch = "x86_64")]
    while first + 4 <= count {
        // SAFETY: lanes `first..first + 4` are states of the slice (checked
        // by the loop condition), so each load reads a 16-byte-aligned `Vec4`
        // inside `states[first + k]` (`UnitState` is `repr(C, align(16))`);
        // each store writes 4 lanes of row `c` at `c * lanes + first`, inside
        // `rows` because `first + 4 <= count <= lanes` and `c < 4`.
        unsafe {
            use std::arch::x86_64::{_mm_load_ps, _mm_storeu_ps};
            let at = |k: usize| {
                (states.as_ptr().add(first + k) as *const u8).add(file.offset(reg)) as *const f32
            };
            let t = transpose4([
                _mm_load_ps(at(0)),
                _mm_load_ps(at(1)),
                _mm_load_ps(at(2)),
                _mm_load_ps(at(3)),
            ]);
            let out = rows.as_mut_ptr().add(first) as *mut f32;
            for (c, v) in t.into_iter().enumerate() {
                _mm_storeu_ps(out.add(c * lanes), v);
            }
        }
        first += 4;
    }
    for lane in first..count.next_multiple_of(4).min(lanes) {
        let value = states.get(lane).map_or([0.0; 4], |s| *file.get(s, reg));
        for (c, x) in value.iter().enumerate() {
            rows[c * lanes + lane] = x.to_bits();
        }
    }
}

/// Writes the lanes of `mask` below `states.len()` of register `reg` of
/// `file` in `states` from the four rows (component `c` in
/// `rows[c * lanes ..]`), components `comps` only (bit `c`: component `c`).
pub(super) fn rows_to_states(
    rows: &[u32],
    lanes: usize,
    states: &mut [UnitState],
    mask: u32,
    file: File,
    reg: usize,
    comps: u8,
) {
    let count = states.len();
    assert!(rows.len() >= 4 * lanes && count <= lanes && reg < 16);
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
    let mut first = 0;
    #[cfg(target_arch = "x86_64")]
    if comps == 0xF {
        while first + 4 <= count && mask >> first & 0xF == 0xF {
            // SAFETY: as in `states_to_rows`, with loads and stores swapped:
            // each load reads 4 lanes of row `c` inside `rows`, each store
            // writes the aligned `Vec4` of register `reg` of `states[first + k]`,
            // a state of the slice (`first + 4 <= count`) borrowed mutably.
            unsafe {
                use std::arch::x86_64::{_mm_loadu_ps, _mm_store_ps};
                let src = rows.as_ptr().add(first) as *const f32;
                let v = [0, 1, 2, 3].map(|c| _mm_loadu_ps(src.add(c * lanes)));
                let t = transpose4(v);
                for (k, v) in t.into_iter().enumerate() {
                    let state = states.as_mut_ptr().add(first + k) as *mut u8;
                    _mm_store_ps(state.add(file.offset(reg)) as *mut f32, v);
                }
            }
            first += 4;
        }
    }
    for lane in first..count {
        if mask >> lane & 1 == 0 {
            continue;
        }
        let value = file.get_mut(&mut states[lane], reg);
        for (c, x) in value.iter_mut().enumerate() {
            if comps >> c & 1 != 0 {
                *x = f32::from_bits(rows[c * lanes + lane]);
            }
        }
    }
}

/// The 4×4 transpose of four SSE registers, bits preserved.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn transpose4(v: [std::arch::x86_64::__m128; 4]) -> [std::arch::x86_64::__m128; 4] {
    use std::arch::x86_64::{_mm_movehl_ps, _mm_movelh_ps, _mm_unpackhi_ps, _mm_unpacklo_ps};
    let [a, b, c, d] = v;
    // SAFETY: SSE is part of the x86-64 baseline; shuffles only move bits.
    unsafe {
        let ab_lo = _mm_unpacklo_ps(a, b);
        let cd_lo = _mm_unpacklo_ps(c, d);
        let ab_hi = _mm_unpackhi_ps(a, b);
        let cd_hi = _mm_unpackhi_ps(c, d);
        [
            _mm_movelh_ps(ab_lo, cd_lo),
            _mm_movehl_ps(cd_lo, ab_lo),
            _mm_movelh_ps(ab_hi, cd_hi),
            _mm_movehl_ps(cd_hi, ab_hi),
        ]
    }
}

/// The 4×4 transpose (rows become columns), bits preserved.
#[cfg(target_arch = "x86_64")]
fn transpose(v: [Vec4; 4]) -> [Vec4; 4] {
    use std::arch::x86_64::{
        __m128, _mm_loadu_ps, _mm_movehl_ps, _mm_movelh_ps, _mm_storeu_ps, _mm_unpackhi_ps,
        _mm_unpacklo_ps,
    };
    let mut out = [[0.0f32; 4]; 4];
    // SAFETY: SSE is part of the x86-64 baseline, so the intrinsics are
    // available on every host; each load reads a `[f32; 4]` and each store
    // writes one (16 bytes, unaligned forms). Shuffles move bits: no
    // arithmetic touches a NaN payload.
    unsafe {
        let [a, b, c, d]: [__m128; 4] = v.map(|x| _mm_loadu_ps(x.as_ptr()));
        let ab_lo = _mm_unpacklo_ps(a, b);
        let cd_lo = _mm_unpacklo_ps(c, d);
        let ab_hi = _mm_unpackhi_ps(a, b);
        let cd_hi = _mm_unpackhi_ps(c, d);
        let rows = [
            _mm_movelh_ps(ab_lo, cd_lo),
            _mm_movehl_ps(cd_lo, ab_lo),
            _mm_movelh_ps(ab_hi, cd_hi),
            _mm_movehl_ps(cd_hi, ab_hi),
        ];
        for (o, r) in out.iter_mut().zip(rows) {
            _mm_storeu_ps(o.as_mut_ptr(), r);
        }
    }
    out
}

/// The 4×4 transpose (rows become columns), bits preserved.
#[cfg(not(target_arch = "x86_64"))]
fn transpose(v: [Vec4; 4]) -> [Vec4; 4] {
    std::array::from_fn(|c| std::array::from_fn(|k| v[k][c]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_and_vectors_round_trip_bit_for_bit() {
        for lanes in [4usize, 8] {
            for count in 1..=lanes {
                let value = |lane: usize| -> Vec4 {
                    std::array::from_fn(|c| f32::from_bits(0x7FC0_0000 | (lane * 4 + c) as u32))
                };
                let mut rows = vec![0u32; 4 * lanes];
                to_rows(&mut rows, lanes, count, value);
                for lane in 0..count {
                    for c in 0..4 {
                        assert_eq!(rows[c * lanes + lane], value(lane)[c].to_bits());
                    }
                }
                let mut seen = vec![None; lanes];
                from_rows(&rows, lanes, count, 0b1011_0101, |lane, v| {
                    seen[lane] = Some(v)
                });
                for (lane, got) in seen.iter().enumerate() {
                    let expected =
                        (lane < count && 0b1011_0101 >> lane & 1 != 0).then(|| value(lane));
                    assert_eq!(
                        got.map(|v| v.map(f32::to_bits)),
                        expected.map(|v| v.map(f32::to_bits)),
                        "{lanes} lanes, {count} used, lane {lane}"
                    );
                }
            }
        }
    }
}
