"""e3nn's real Clebsch-Gordan coefficients (`wigner_3j`) in NumPy, built as the core's
core/src/math/cg.c builds them (Racah's formula for the complex coefficients, then e3nn's change
to the real basis with its factor (-i)^l), for a converter that must compare a file's stored
coefficients with the exact ones without importing e3nn."""
from math import factorial, sqrt

import numpy as np


def _su2(j1, m1, j2, m2, j3, m3):
    if m3 != m1 + m2:
        return 0.0
    vmin = max(-j1 + j2 + m3, -j1 + m1, 0)
    vmax = min(j2 + j3 + m1, j3 - j1 + j2, j3 + m3)
    pre = ((2 * j3 + 1) * factorial(j3 + j1 - j2) * factorial(j3 - j1 + j2)
           * factorial(j1 + j2 - j3) * factorial(j3 + m3) * factorial(j3 - m3)
           / (factorial(j1 + j2 + j3 + 1) * factorial(j1 - m1) * factorial(j1 + m1)
              * factorial(j2 - m2) * factorial(j2 + m2)))
    s = 0.0
    for v in range(vmin, vmax + 1):
        term = (factorial(j2 + j3 + m1 - v) * factorial(j1 - m1 + v)
                / (factorial(v) * factorial(j3 - j1 + j2 - v) * factorial(j3 + m3 - v)
                   * factorial(v + j1 - j2 - m3)))
        s += term if (v + j2 + m2) % 2 == 0 else -term
    return sqrt(pre) * s


def _real_to_complex(l):
    """Q[i, j]: row = complex index m + l, column = real index, times (-i)^l."""
    d = 2 * l + 1
    q = np.zeros((d, d), dtype=complex)
    r2 = 1 / sqrt(2)
    for m in range(-l, 0):
        q[l + m, l - m] = r2
        q[l + m, l + m] = -1j * r2
    q[l, l] = 1
    for m in range(1, l + 1):
        sign = 1 if m % 2 == 0 else -1
        q[l + m, l + m] = sign * r2
        q[l + m, l - m] = 1j * sign * r2
    return q * (-1j) ** l


def wigner_3j(l1, l2, l3):
    """[2l1+1, 2l2+1, 2l3+1], Frobenius norm 1, equal to e3nn.o3.wigner_3j(l1, l2, l3)."""
    d1, d2, d3 = 2 * l1 + 1, 2 * l2 + 1, 2 * l3 + 1
    su2 = np.zeros((d1, d2, d3))
    for m1 in range(-l1, l1 + 1):
        for m2 in range(-l2, l2 + 1):
            if abs(m1 + m2) <= l3:
                su2[l1 + m1, l2 + m2, l3 + m1 + m2] = _su2(l1, m1, l2, m2, l3, m1 + m2)
    su2 /= sqrt(d3)
    c = np.einsum("ij,kl,nm,ikn->jlm", _real_to_complex(l1), _real_to_complex(l2),
                  np.conj(_real_to_complex(l3)), su2)
    return np.real(c)
