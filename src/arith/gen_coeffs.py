#!/usr/bin/env python3
"""Derives the EX2 / LG2 polynomial coefficients used by `src/arith/exp_log.rs`.

Requires numpy (`python3 -m pip install numpy`).  Run: `python3 src/arith/gen_coeffs.py`.

Method: Lawson's iteratively-reweighted least squares converges to the
minimax (equi-ripple) fit of the *relative* error on a dense Chebyshev-like
grid.  Coefficients are then rounded to f32 one at a time, from the lowest
degree up, refitting the remaining (higher) ones after each rounding so they
absorb the rounding error.  Finally the f32 Horner evaluation (separate
multiply and add, as the Rust code does) is simulated with numpy.float32 to
report the error actually achieved by the f32 evaluation.
"""
import numpy as np


def lawson(A, b, iters=400):
    """argmin_c max_i |A c - b|_i (A, b already relative-error weighted)."""
    w = np.ones(len(b)) / len(b)
    c = None
    for _ in range(iters):
        sw = np.sqrt(w)
        c, *_ = np.linalg.lstsq(A * sw[:, None], b * sw, rcond=None)
        r = np.abs(A @ c - b)
        w = w * (r + 1e-300)
        w /= w.sum()
    return c


def fit_rounded(cols, target, weight, fixed_first):
    """Fit sum_k c_k cols[k] ~ target (relative weight), round c_k to f32 one
    by one (lowest first) and refit the rest.  `fixed_first` pre-fixes c_0."""
    n = len(cols)
    fixed = [] if fixed_first is None else [np.float32(fixed_first)]
    while len(fixed) < n:
        k = len(fixed)
        resid = target - sum(float(fixed[i]) * cols[i] for i in range(k))
        A = np.stack(cols[k:], axis=1) * weight[:, None]
        c = lawson(A, resid * weight)
        fixed.append(np.float32(c[0]))
    return fixed


def horner_f32(coeffs, x):
    """c0 + x*(c1 + x*(c2 + ...)) in f32 with separate mul and add."""
    x = x.astype(np.float32)
    acc = np.full_like(x, coeffs[-1])
    for c in reversed(coeffs[:-1]):
        acc = (acc * x).astype(np.float32)
        acc = (acc + np.float32(c)).astype(np.float32)
    return acc


def show(name, coeffs):
    for i, c in enumerate(coeffs):
        bits = np.array([c], dtype=np.float32).view(np.uint32)[0]
        print(f"{name}{i} = f32::from_bits(0x{bits:08X}) // {float(c):.9e}")


# ---------------------------------------------------------------- EX2 ----
# 2^f ~ P(f) = 1 + f*(c1 + f*(c2 + ... + f*c6)),  f in [0, 1].
EX2_DEGREE = 6
t = np.cos(np.linspace(0.0, np.pi, 40001)) * 0.5 + 0.5
exact = 2.0 ** t
cols = [t ** k for k in range(0, EX2_DEGREE + 1)]
ex2 = fit_rounded(cols, exact, 1.0 / exact, fixed_first=1.0)
show("EX2_C", ex2)
# Every f32 in [0, 1) (step 1 in the bit pattern above 2^-24, plus 1.0).
f = np.arange(0x33800000, 0x3F800001, 1, dtype=np.uint32).view(np.float32)
p = horner_f32(ex2, f)
err = np.max(np.abs(p.astype(np.float64) / 2.0 ** f.astype(np.float64) - 1.0))
print(f"ex2 polynomial, f32 Horner on every f32 f in [2^-24, 1]: max rel err 2^{np.log2(err):.2f}")
print("P(1.0) in f32 =", horner_f32(ex2, np.array([1.0]))[0])

# ---------------------------------------------------------------- LG2 ----
# log2(m) = s * Q(z), s = (m-1)/(m+1), z = s*s, m in [sqrt(2)/2, sqrt(2)].
LG2_DEGREE = 3
smax = (np.sqrt(2.0) - 1.0) / (np.sqrt(2.0) + 1.0)
s = np.cos(np.linspace(0.0, np.pi, 40001)) * 0.5 * smax + 0.5 * smax
s = np.where(s == 0.0, 1e-300, s)
Q = 2.0 * np.arctanh(s) / (s * np.log(2.0))
z = s * s
cols = [z ** k for k in range(0, LG2_DEGREE + 1)]
lg2 = fit_rounded(cols, Q, 1.0 / Q, fixed_first=None)
show("LG2_C", lg2)
m = np.arange(0x3F3504F3, 0x3FB504F4, 1, dtype=np.uint32).view(np.float32)  # [~0.7071, ~1.4142]
m = m[m != np.float32(1.0)]
one = np.float32(1.0)
sf = ((m - one).astype(np.float32) / (m + one).astype(np.float32)).astype(np.float32)
zf = (sf * sf).astype(np.float32)
r = (sf * horner_f32(lg2, zf)).astype(np.float32)
ref = np.log2(m.astype(np.float64))
err = np.max(np.abs(r.astype(np.float64) / ref - 1.0))
print(f"lg2 mantissa part, f32 evaluation on every f32 m in [sqrt2/2, sqrt2]: max rel err 2^{np.log2(err):.2f}")
