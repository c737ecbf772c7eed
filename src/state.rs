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

/// Per-invocation register state.
///
/// The hardware keeps temporaries, address registers and condition flags between
/// invocations; an embedder decides whether to carry a `UnitState` over or to
/// reset it (`UnitState::default()`), and sets `inputs` for each vertex.
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
