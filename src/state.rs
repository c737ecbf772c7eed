//! The data an invocation reads and writes: uniforms, unit state, emitted vertices.

use crate::arith::Vec4;
use crate::isa::{FLOAT_UNIFORM_COUNT, REGISTER_COUNT};
use crate::shbin::{ConstantEntry, ConstantValue};

/// Uniform (constant) registers shared by all invocations of a draw.
///
/// ```
/// use pica_jit::Uniforms;
/// let mut u = Uniforms::default();
/// u.f[4] = [1.0, 2.0, 3.0, 4.0];
/// u.i[0] = [3, 0, 1, 0]; // loop 4 times, aL from 0 step 1
/// u.b[2] = true;
/// ```
#[derive(Clone, Debug, PartialEq)]
#[repr(C, align(16))]
pub struct Uniforms {
    /// Float constants `c0`–`c95`.
    pub f: [Vec4; FLOAT_UNIFORM_COUNT],
    /// Integer constants `i0`–`i3` as (x, y, z, w) bytes: loop count, initial `aL`,
    /// `aL` increment, unused.
    pub i: [[u8; 4]; 4],
    /// Boolean constants `b0`–`b15`.
    pub b: [bool; 16],
}

impl Uniforms {
    /// Loads a DVLE's constant table (`Shbin` files carry these per entry point).
    ///
    /// Entries naming a register that does not exist (e.g. `c120`) are ignored.
    ///
    /// ```
    /// use pica_jit::shbin::{ConstantEntry, ConstantValue};
    /// use pica_jit::Uniforms;
    /// let mut u = Uniforms::default();
    /// u.apply_constants(&[
    ///     ConstantEntry { register: 95, value: ConstantValue::Float([0.0, 1.0, 0.5, 2.0]) },
    ///     ConstantEntry { register: 0, value: ConstantValue::Int([1, 0, 2, 0]) },
    ///     ConstantEntry { register: 3, value: ConstantValue::Bool(true) },
    /// ]);
    /// assert_eq!(u.f[95], [0.0, 1.0, 0.5, 2.0]);
    /// assert_eq!(u.i[0], [1, 0, 2, 0]);
    /// assert!(u.b[3]);
    /// ```
    pub fn apply_constants(&mut self, constants: &[ConstantEntry]) {
        for entry in constants {
            let n = entry.register as usize;
            match entry.value {
                ConstantValue::Float(v) => {
                    if let Some(slot) = self.f.get_mut(n) {
                        *slot = v;
                    }
                }
                ConstantValue::Int(v) => {
                    if let Some(slot) = self.i.get_mut(n) {
                        *slot = v;
                    }
                }
                ConstantValue::Bool(v) => {
                    if let Some(slot) = self.b.get_mut(n) {
                        *slot = v;
                    }
                }
            }
        }
    }
}

impl Uniforms {
    /// The uniforms as the unit sees them in `precision`: in F24 every float
    /// constant converted to float24 (`arith::load`); in F32 unchanged.
    /// Converting twice changes nothing.
    pub fn converted(&self, precision: crate::Precision) -> Uniforms {
        let mut out = self.clone();
        if precision == crate::Precision::F24 {
            for reg in out.f.iter_mut() {
                *reg = reg.map(|x| crate::arith::load(precision, x));
            }
        }
        out
    }

    /// Does the per-draw work once: the uniforms converted for `precision`, for
    /// [`Shader::run_prepared`](crate::Shader::run_prepared) and the batch runs,
    /// which then never convert a uniform again.
    ///
    /// ```
    /// use pica_jit::{Precision, Uniforms};
    /// let mut u = Uniforms::default();
    /// u.f[0] = [1.0 + f32::EPSILON, 2.0, 3.0, 4.0];
    /// let prepared = u.prepare(Precision::F24);
    /// assert_eq!(prepared.precision(), Precision::F24);
    /// assert_eq!(prepared.converted().f[0][0], 1.0); // truncated to float24
    /// assert_eq!(prepared.original(), &u);
    /// ```
    pub fn prepare(&self, precision: crate::Precision) -> PreparedUniforms {
        PreparedUniforms {
            original: self.clone(),
            converted: self.converted(precision),
            precision,
        }
    }

    /// Whether `self` and `other` hold the same bits (`==` compares floats:
    /// `-0.0 == 0.0`, and NaN differs from itself).
    ///
    /// ```
    /// use pica_jit::Uniforms;
    /// let (mut a, mut b) = (Uniforms::default(), Uniforms::default());
    /// b.f[3][1] = -0.0;
    /// assert!(a == b && !a.same_bits(&b));
    /// a.f[3][1] = -0.0;
    /// assert!(a.same_bits(&b));
    /// ```
    pub fn same_bits(&self, other: &Uniforms) -> bool {
        self.as_bytes() == other.as_bytes()
    }

    /// The uniforms' bytes (one `memcmp` compares two sets).
    fn as_bytes(&self) -> &[u8] {
        const SIZE: usize = size_of::<[Vec4; FLOAT_UNIFORM_COUNT]>() + 16 + 16;
        const _: () = assert!(size_of::<Uniforms>() == SIZE, "no padding bytes");
        // SAFETY: `Uniforms` is `repr(C)` with no padding (asserted above: its
        // fields' sizes add up to its size), so all `SIZE` bytes are
        // initialised field bytes (floats, integers, `bool`s), readable as
        // `u8` for as long as `self` is borrowed.
        unsafe { std::slice::from_raw_parts((self as *const Uniforms).cast::<u8>(), SIZE) }
    }

    /// [`prepare`](Self::prepare), reused from this thread's previous call
    /// when the uniforms have the same bits and precision: an emulator calls
    /// the batch paths chunk after chunk of one draw with the same uniforms,
    /// and converting all of them to float24 costs as much as shading a few
    /// vertices.
    pub(crate) fn prepare_cached(
        &self,
        precision: crate::Precision,
    ) -> std::rc::Rc<PreparedUniforms> {
        self.prepare_cached_for(precision, u128::MAX)
    }

    /// [`prepare_cached`](Self::prepare_cached) for a program that reads only
    /// the float uniforms `rows` (bit `n`: `c{n}`;
    /// [`Program::float_uniforms_read`](crate::Program::float_uniforms_read)):
    /// the previous call's preparation is reused when those rows, the
    /// integer and the boolean uniforms have the same bits, so a call
    /// compares a few rows instead of all 1568 bytes (all of them, with one
    /// `memcmp`, when `rows` names every row). The result is exact in
    /// those rows and in `i` and `b` only: its other float rows (original
    /// and converted) may be an earlier call's, which no instruction of such
    /// a program reads.
    pub(crate) fn prepare_cached_for(
        &self,
        precision: crate::Precision,
        rows: u128,
    ) -> std::rc::Rc<PreparedUniforms> {
        std::thread_local! {
            static LAST: std::cell::RefCell<Option<std::rc::Rc<PreparedUniforms>>> =
                const { std::cell::RefCell::new(None) };
        }
        LAST.with(|last| {
            let mut last = last.borrow_mut();
            if let Some(prepared) = last.as_ref()
                && prepared.precision == precision
                && prepared.original.same_bits_in(self, rows)
            {
                return prepared.clone();
            }
            PREPARATIONS.with(|n| n.set(n.get() + 1));
            let prepared = std::rc::Rc::new(self.prepare(precision));
            *last = Some(prepared.clone());
            prepared
        })
    }

    /// Whether `self` and `other` hold the same bits in the float rows
    /// `rows` (bit `n`: `c{n}`) and in every integer and boolean uniform.
    fn same_bits_in(&self, other: &Uniforms, rows: u128) -> bool {
        const ALL: u128 = (1 << FLOAT_UNIFORM_COUNT) - 1;
        let rows = rows & ALL;
        if rows == ALL {
            return self.same_bits(other);
        }
        if self.i != other.i || self.b != other.b {
            return false;
        }
        let (a, b) = (self.as_bytes(), other.as_bytes());
        let row = |bytes: &[u8], n: usize| -> u128 {
            let at = n * size_of::<Vec4>();
            bytes
                .get(at..at + size_of::<Vec4>())
                .and_then(|row| row.try_into().ok())
                .map_or(0, u128::from_ne_bytes)
        };
        // (Branch-free over the rows: they are few, and usually all equal.)
        let mut differ = 0u128;
        for half in [0, 64] {
            let mut left = (rows >> half) as u64;
            while left != 0 {
                let n = half + left.trailing_zeros() as usize;
                left &= left - 1;
                differ |= row(a, n) ^ row(b, n);
            }
        }
        differ == 0
    }
}

std::thread_local! {
    /// Preparations the batch paths made on this thread (see
    /// [`uniform_preparations`]).
    static PREPARATIONS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many times the batch paths on this thread prepared (copied and, in
/// F24, converted) uniforms instead of reusing the previous call's. Tests
/// read the difference around a call to know that a call reused them, or
/// (F32 `run_vertices`) never prepared any.
pub fn uniform_preparations() -> u64 {
    PREPARATIONS.with(std::cell::Cell::get)
}

/// Uniforms prepared once per draw for one precision (see [`Uniforms::prepare`]).
///
/// Keeps the original values too, so a shader of the other precision can still
/// use it (converting on read, as [`Shader::run`](crate::Shader::run) does).
#[derive(Clone, Debug, PartialEq)]
pub struct PreparedUniforms {
    original: Uniforms,
    converted: Uniforms,
    precision: crate::Precision,
}

impl PreparedUniforms {
    /// The precision the uniforms were converted for.
    pub fn precision(&self) -> crate::Precision {
        self.precision
    }

    /// The uniforms as given.
    pub fn original(&self) -> &Uniforms {
        &self.original
    }

    /// The uniforms as the unit sees them in [`precision`](Self::precision).
    pub fn converted(&self) -> &Uniforms {
        &self.converted
    }
}

impl Default for Uniforms {
    fn default() -> Self {
        Uniforms {
            f: [[0.0; 4]; FLOAT_UNIFORM_COUNT],
            i: [[0; 4]; 4],
            b: [false; 16],
        }
    }
}

/// The registers of one vertex: `v0`–`v15` on input, `o0`–`o15` on output.
pub type VertexRegisters = [Vec4; REGISTER_COUNT];

/// Per-invocation register state.
///
/// The hardware keeps temporaries, address registers, condition flags and (in the
/// geometry unit) the emitter's `setemit` parameters between invocations; an
/// embedder decides whether to carry a `UnitState` over or to reset it
/// (`UnitState::default()`, or only the part it wants fresh), and sets `inputs`
/// for each vertex.
#[derive(Clone, Debug, PartialEq)]
#[repr(C, align(16))]
pub struct UnitState {
    /// Inputs `v0`–`v15`.
    pub inputs: [Vec4; REGISTER_COUNT],
    /// Temporaries `r0`–`r15`.
    pub temps: [Vec4; REGISTER_COUNT],
    /// Outputs `o0`–`o15`.
    pub outputs: [Vec4; REGISTER_COUNT],
    /// Address registers `a0.x`, `a0.y`.
    pub a0: [i32; 2],
    /// Loop counter `aL`.
    pub al: i32,
    /// Condition flags `cmp.x`, `cmp.y`.
    pub cmp: [bool; 2],
    /// The geometry emitter's parameters, set by `setemit` and used by every
    /// later `emit`. Like the registers they are carried from one invocation
    /// to the next (a caller that wants each invocation to start from
    /// `setemit 0` resets them to [`EmitConfig::default`]); vertex shaders
    /// never change them. See `docs/semantics.md`, "Geometry shaders".
    pub emit: EmitConfig,
}

/// The geometry emitter's state: what `setemit` sets and `emit` uses.
///
/// ```
/// use pica_jit::{EmitConfig, UnitState};
/// let mut state = UnitState::default();
/// assert_eq!(state.emit, EmitConfig { vertex_id: 0, primitive: false, winding: false });
/// // An emulator that starts every invocation from a fresh emitter:
/// state.emit = EmitConfig::default();
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct EmitConfig {
    /// Vertex slot 0–3 the next `emit` writes.
    pub vertex_id: u8,
    /// The next `emit` completes a primitive.
    pub primitive: bool,
    /// That primitive's winding flag (`inv`).
    pub winding: bool,
}

impl Default for UnitState {
    fn default() -> Self {
        UnitState {
            inputs: [[0.0; 4]; REGISTER_COUNT],
            temps: [[0.0; 4]; REGISTER_COUNT],
            outputs: [[0.0; 4]; REGISTER_COUNT],
            a0: [0; 2],
            al: 0,
            cmp: [false; 2],
            emit: EmitConfig::default(),
        }
    }
}

impl UnitState {
    /// Loads one vertex the way a vertex loader does: input register `v{i}`
    /// becomes `vertex[i]` for every bit `i` of `mask`; the other inputs keep
    /// their values.
    ///
    /// ```
    /// use pica_jit::{UnitState, VertexRegisters};
    /// let mut vertex: VertexRegisters = [[0.0; 4]; 16];
    /// vertex[0] = [1.0, 2.0, 3.0, 1.0];
    /// vertex[1] = [9.0; 4];
    /// let mut state = UnitState::default();
    /// state.load_inputs(&vertex, 0b01); // v0 only
    /// assert_eq!(state.inputs[0], [1.0, 2.0, 3.0, 1.0]);
    /// assert_eq!(state.inputs[1], [0.0; 4]);
    /// ```
    #[inline]
    pub fn load_inputs(&mut self, vertex: &VertexRegisters, mask: u16) {
        copy_masked(&mut self.inputs, vertex, mask);
    }

    /// Stores one vertex's results: `vertex[o]` becomes output register
    /// `o{o}` for every bit `o` of `mask`; the other elements of `vertex` are
    /// not touched.
    ///
    /// ```
    /// use pica_jit::{UnitState, VertexRegisters};
    /// let mut state = UnitState::default();
    /// state.outputs[2] = [0.5; 4];
    /// let mut vertex: VertexRegisters = [[7.0; 4]; 16];
    /// state.store_outputs(&mut vertex, 0b100); // o2 only
    /// assert_eq!(vertex[2], [0.5; 4]);
    /// assert_eq!(vertex[0], [7.0; 4]);
    /// ```
    #[inline]
    pub fn store_outputs(&self, vertex: &mut VertexRegisters, mask: u16) {
        copy_masked(vertex, &self.outputs, mask);
    }
}

/// Copies the registers `mask` names (bit `i`: register `i`).
#[inline]
fn copy_masked(to: &mut VertexRegisters, from: &VertexRegisters, mask: u16) {
    if mask == u16::MAX {
        *to = *from;
        return;
    }
    for (i, (to, from)) in to.iter_mut().zip(from).enumerate() {
        if mask >> i & 1 != 0 {
            *to = *from;
        }
    }
}

/// One vertex delivered by a geometry shader's `emit`.
#[derive(Clone, Debug, PartialEq)]
pub struct EmittedVertex {
    /// Slot 0..=3 set by the last `setemit`.
    pub vertex_id: u8,
    /// Whether this vertex completes a primitive.
    pub primitive: bool,
    /// The primitive's winding flag.
    pub winding: bool,
    /// The output registers at the time of the `emit`.
    pub outputs: [Vec4; REGISTER_COUNT],
}

/// Receives the vertices a geometry shader emits, in order.
pub trait EmitSink {
    /// Called once per executed `emit`.
    fn emit(&mut self, vertex: &EmittedVertex);
}

impl EmitSink for Vec<EmittedVertex> {
    fn emit(&mut self, vertex: &EmittedVertex) {
        self.push(vertex.clone());
    }
}

/// A sink that discards emitted vertices (vertex shaders never emit).
impl EmitSink for () {
    fn emit(&mut self, _vertex: &EmittedVertex) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Precision;

    /// Loading and storing copy exactly the registers the mask names, the
    /// first and the last register included, and leave the others alone.
    #[test]
    fn loads_and_stores_only_masked_registers() {
        let numbered: VertexRegisters = std::array::from_fn(|i| [i as f32 + 1.0; 4]);
        let mask = 0b1000_0000_0000_0101;
        let mut state = UnitState::default();
        state.load_inputs(&numbered, mask);
        let expected: Vec<f32> = (0..16)
            .map(|i| {
                if mask >> i & 1 != 0 {
                    i as f32 + 1.0
                } else {
                    0.0
                }
            })
            .collect();
        let got: Vec<f32> = state.inputs.iter().map(|r| r[0]).collect();
        assert_eq!(got, expected);
        assert_eq!(state.inputs[15], [16.0; 4]);

        state.outputs = numbered;
        let mut vertex: VertexRegisters = [[-1.0; 4]; 16];
        state.store_outputs(&mut vertex, mask);
        assert_eq!(vertex[0], [1.0; 4]);
        assert_eq!(vertex[1], [-1.0; 4]);
        assert_eq!(vertex[2], [3.0; 4]);
        assert_eq!(vertex[14], [-1.0; 4]);
        assert_eq!(vertex[15], [16.0; 4]);
    }

    /// The per-thread reuse never hands out a stale conversion: any bit
    /// change, including `0.0` → `-0.0`, and a precision change convert again.
    #[test]
    fn cached_preparation_follows_every_bit_and_precision() {
        let mut u = Uniforms::default();
        u.f[7] = [1.0 + f32::EPSILON, -3.5, 0.0, 1e-30];
        let changes: [fn(&mut Uniforms); 6] = [
            |_| {},
            |u| u.f[7][2] = -0.0,
            |u| u.f[95][3] = f32::from_bits(0x7FC0_0001),
            |u| u.i[2][1] = 9,
            |u| u.b[15] = true,
            |u| u.f[0][0] = 1.0 + 2.0 * f32::EPSILON,
        ];
        for change in &changes {
            change(&mut u);
            for precision in [Precision::F24, Precision::F32, Precision::F24] {
                let cached = u.prepare_cached(precision);
                let fresh = u.prepare(precision);
                assert_eq!(cached.precision(), precision);
                assert!(cached.original().same_bits(fresh.original()));
                assert!(cached.converted().same_bits(fresh.converted()));
                // Again: the reused value.
                assert!(
                    u.prepare_cached(precision)
                        .converted()
                        .same_bits(fresh.converted())
                );
            }
        }
    }

    /// The reuse for a program's rows: a change to a row read (any bit,
    /// `0.0` → `-0.0` included, in either half of the row set), to `i`, to
    /// `b` or to the precision prepares again; a change only to rows not
    /// read reuses the previous preparation, whose rows read, `i` and `b`
    /// are exactly a fresh one's. (Comparing every row instead fails the
    /// reuse; skipping the second half of the set fails the changes to
    /// `c64` and `c95`.)
    #[test]
    fn preparation_for_rows_read_follows_exactly_those_rows() {
        let rows: u128 = 1 | 1 << 63 | 1 << 64 | 1 << 95;
        let mut u = Uniforms::default();
        u.f[64] = [1.0 + f32::EPSILON, -3.5, 0.0, 1e-30];
        let exact = |p: &PreparedUniforms, u: &Uniforms| {
            let fresh = u.prepare(p.precision());
            for n in [0, 63, 64, 95] {
                assert_eq!(
                    p.converted().f[n].map(f32::to_bits),
                    fresh.converted().f[n].map(f32::to_bits),
                    "c{n}"
                );
            }
            assert_eq!((p.converted().i, p.converted().b), (u.i, u.b));
        };
        let mut last = u.prepare_cached_for(Precision::F24, rows);
        exact(&last, &u);
        let read: [fn(&mut Uniforms); 7] = [
            |u| u.f[0][0] = -0.0,
            |u| u.f[63][3] = 2.0,
            |u| u.f[64][0] = 1.0 + 2.0 * f32::EPSILON,
            |u| u.f[95][2] = f32::from_bits(0x7FC0_0001),
            |u| u.i[3][3] = 1,
            |u| u.b[15] = true,
            |u| u.f[64][3] = -1e-30,
        ];
        let unread: [fn(&mut Uniforms); 4] = [
            |u| u.f[1][0] = 5.0,
            |u| u.f[62][3] = -0.0,
            |u| u.f[65][1] = 7.0,
            |u| u.f[94][0] = f32::NAN,
        ];
        for (n, change) in read.iter().enumerate() {
            let before = uniform_preparations();
            change(&mut u);
            let prepared = u.prepare_cached_for(Precision::F24, rows);
            assert_eq!(uniform_preparations() - before, 1, "change {n} read");
            exact(&prepared, &u);
            last = prepared;
        }
        for (n, change) in unread.iter().enumerate() {
            let before = uniform_preparations();
            change(&mut u);
            let prepared = u.prepare_cached_for(Precision::F24, rows);
            assert_eq!(uniform_preparations(), before, "change {n} not read");
            assert!(std::rc::Rc::ptr_eq(&prepared, &last), "change {n}: reused");
            exact(&prepared, &u);
        }
        let before = uniform_preparations();
        let f32_prepared = u.prepare_cached_for(Precision::F32, rows);
        assert_eq!(uniform_preparations() - before, 1, "another precision");
        exact(&f32_prepared, &u);
    }
}
