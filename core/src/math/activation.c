/*
 * activation.c: the scalar nonlinearities of NequIP-family models and e3nn-jax's normalisation
 * constant: act is divided by c = sqrt(mean(act(z)^2)) over the deterministic "normalspace"
 * z_i = sqrt(2) erfinv(linspace(-1, 1, n + 2)[1:-1]), n = 1,000,001 (e3nn-jax
 * normalize_function, in float64). The Nequix weights were trained with this constant; the
 * exact Gaussian integral differs in the 5th digit, enough to miss the published energies.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "model/model.h"

static const double sqrt1_2 = 0.70710678118654752440, inv_sqrt_2pi = 0.39894228040143267794;

/* log(1 + e^x) without overflow */
static double softplus(double x) { return x > 20.0 ? x : log1p(exp(x)); }

double fnq__act_apply(struct fnq_activation a, double x)
{
    double v;
    switch (a.kind) {
    case FNQ_ACT_SILU: v = x / (1.0 + exp(-x)); break;
    case FNQ_ACT_TANH: v = tanh(x); break;
    case FNQ_ACT_SSP: v = softplus(x) - log(2.0); break;
    case FNQ_ACT_ABS: v = fabs(x); break;
    case FNQ_ACT_SIGMOID: v = 1.0 / (1.0 + exp(-x)); break;
    case FNQ_ACT_MISH: v = x * tanh(softplus(x)); break;
    case FNQ_ACT_GELU: v = 0.5 * x * (1.0 + erf(x * sqrt1_2)); break;
    case FNQ_ACT_SOFTPLUS: v = softplus(x); break;
    default: v = x; break;
    }
    return v * a.scale;
}

double fnq__act_derivative(struct fnq_activation a, double x)
{
    double d;
    switch (a.kind) {
    case FNQ_ACT_SILU: {
        double s = 1.0 / (1.0 + exp(-x));
        d = s * (1.0 + x * (1.0 - s));
        break;
    }
    case FNQ_ACT_TANH: {
        double t = tanh(x);
        d = 1.0 - t * t;
        break;
    }
    case FNQ_ACT_SSP: d = 1.0 / (1.0 + exp(-x)); break;
    case FNQ_ACT_ABS: d = (x > 0.0) ? 1.0 : (x < 0.0 ? -1.0 : 0.0); break;
    case FNQ_ACT_SIGMOID: {
        double s = 1.0 / (1.0 + exp(-x));
        d = s * (1.0 - s);
        break;
    }
    case FNQ_ACT_MISH: {
        const double t = tanh(softplus(x)), s = 1.0 / (1.0 + exp(-x));
        d = t + x * (1.0 - t * t) * s;
        break;
    }
    case FNQ_ACT_GELU:
        d = 0.5 * (1.0 + erf(x * sqrt1_2)) + x * exp(-0.5 * x * x) * inv_sqrt_2pi;
        break;
    case FNQ_ACT_SOFTPLUS: d = 1.0 / (1.0 + exp(-x)); break;
    default: d = 1.0; break;
    }
    return d * a.scale;
}

/* Inverse error function: a rational first guess refined by Newton steps on erf. */
static double erfinv(double y)
{
    if (y <= -1.0) return -INFINITY;
    if (y >= 1.0) return INFINITY;
    double w = -log((1.0 - y) * (1.0 + y)), x;
    if (w < 5.0) { /* Giles' single-precision approximation as the starting point */
        w -= 2.5;
        double p = 2.81022636e-08;
        p = 3.43273939e-07 + p * w; p = -3.5233877e-06 + p * w; p = -4.39150654e-06 + p * w;
        p = 0.00021858087 + p * w; p = -0.00125372503 + p * w; p = -0.00417768164 + p * w;
        p = 0.246640727 + p * w; p = 1.50140941 + p * w;
        x = p * y;
    } else {
        w = sqrt(w) - 3.0;
        double p = -0.000200214257;
        p = 0.000100950558 + p * w; p = 0.00134934322 + p * w; p = -0.00367342844 + p * w;
        p = 0.00573950773 + p * w; p = -0.0076224613 + p * w; p = 0.00943887047 + p * w;
        p = 1.00167406 + p * w; p = 2.83297682 + p * w;
        x = p * y;
    }
    for (int it = 0; it < 3; it++) { /* Newton: d/dx erf = 2/sqrt(pi) exp(-x^2) */
        double err = erf(x) - y;
        x -= err / (1.1283791670955126 * exp(-x * x));
    }
    return x;
}

/* The constant takes a million samples (~90 ms, most of a .nqx load): computed once per kind
 * and process, kept as its bit pattern (0 = not yet). Threads that load models at the same
 * time may both compute it; they store the same bits. */
static double act_normalization_sampled(enum fnq_act kind);

double fnq__act_normalization(enum fnq_act kind)
{
    static _Atomic uint64_t memo[FNQ_ACT_SIGMOID + 1];
    if ((int)kind < 0 || (int)kind > FNQ_ACT_SIGMOID)
        return act_normalization_sampled(kind);
    uint64_t bits = atomic_load(&memo[kind]);
    double c;
    if (bits) {
        memcpy(&c, &bits, sizeof(c));
        return c;
    }
    c = act_normalization_sampled(kind);
    memcpy(&bits, &c, sizeof(c)); /* c is never 0.0, whose bits would read as "not yet" */
    atomic_store(&memo[kind], bits);
    return c;
}

static double act_normalization_sampled(enum fnq_act kind)
{
    const int64_t n = 1000001;
    const double step = 2.0 / (double)(n + 1);
    struct fnq_activation a = {kind, 1.0};
    double sum = 0.0;
    for (int64_t i = 1; i <= n; i++) {
        double z = sqrt(2.0) * erfinv(-1.0 + (double)i * step);
        double v = fnq__act_apply(a, z);
        sum += v * v;
    }
    double c = sqrt(sum / (double)n);
    return fabs(c - 1.0) < 1e-5 ? 1.0 : 1.0 / c;
}
