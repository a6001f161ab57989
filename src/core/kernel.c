/* kernel.c: the closed forms of MATH.md section 2, written so that they keep
 * full relative precision at the edges: correlation near +-1 (ab - c^2 by an
 * fma determinant, atan2 instead of arccos, a series for the cancellation of
 * f at rho -> -1), tiny and huge norms (exact power-of-4 scaling). */
#include "scm/kernel.h"
#include "core/kernel_batch.h"

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

/* |rho| up to 1 + RHO_SLACK is clamped to 1: integration error of a state
 * whose neurons are aligned (a global minimum) lands there. */
#define RHO_SLACK 1e-6

/* t - atan(t) for t >= 0 without cancellation at small t. */
static double t_minus_atan(double t)
{
    if (t >= 0.5)
        return t - atan(t);
    double t2 = t * t, term = t * t2, sum = 0.0;
    for (int n = 1; n < 60; n++) {
        double add = term / (2.0 * n + 1.0);
        sum += (n % 2) ? add : -add;
        if (add < 1e-18 * sum)
            break;
        term *= t2;
    }
    return sum;
}

/* ab - c^2 without cancellation, as d * 2^e: a and b are scaled by powers
 * of 4 (exactly) to near 1, then the determinant is formed with Kahan's
 * fma algorithm, accurate to a few ulps of the result even when rho -> +-1,
 * where the naive form loses all digits.  Inside [2^-250, 2^250] nothing
 * can overflow or underflow, so the scaling (exact, hence without effect
 * on the result) is skipped there: it is most of the cost. */
#define DET2_SAFE_LO 0x1p-250
#define DET2_SAFE_HI 0x1p250
static double det2(double a, double b, double c, int *e)
{
    if (a >= DET2_SAFE_LO && a <= DET2_SAFE_HI && b >= DET2_SAFE_LO && b <= DET2_SAFE_HI &&
        fabs(c) <= DET2_SAFE_HI) {
        double p = a * b, q = c * c;
        *e = 0;
        return (p - q) + (fma(a, b, -p) - fma(c, c, -q));
    }
    int ea, eb;
    frexp(a, &ea);
    frexp(b, &eb);
    int ka = ea / 2, kb = eb / 2;
    double as = ldexp(a, -2 * ka), bs = ldexp(b, -2 * kb), cs = ldexp(c, -(ka + kb));
    double p = as * bs, q = cs * cs;
    *e = 2 * (ka + kb);
    return (p - q) + (fma(as, bs, -p) - fma(cs, cs, -q));
}

static int all_finite3(double a, double b, double c)
{
    return isfinite(a) && isfinite(b) && isfinite(c);
}

/* s = sqrt(ab - c^2) for a, b >= 0.  A c beyond the Cauchy-Schwarz bound
 * by at most RHO_SLACK (relative) is clamped onto it (*c is updated and
 * s = 0); beyond that, SCM_ENOTPSD. */
static scm_status gram_sqrt(double a, double b, double *c, double *s)
{
    int e;
    double d = det2(a, b, *c, &e);
    if (d >= 0.0) {
        *s = e ? ldexp(sqrt(d), e / 2) : sqrt(d);
        return SCM_OK;
    }
    double n = sqrt(a) * sqrt(b);
    if (!(fabs(*c) <= n * (1.0 + RHO_SLACK)))
        return SCM_ENOTPSD;
    *c = copysign(n, *c);
    *s = 0.0;
    return SCM_OK;
}

/* A result that overflowed (only at extreme inputs, e.g. df/da with
 * a ~ 1e-320 and b ~ 1e300) is reported, never returned as a number. */
static scm_status pair_finite(scm_pair *out)
{
    if (isfinite(out->f) && isfinite(out->fa) && isfinite(out->fb) && isfinite(out->fc))
        return SCM_OK;
    *out = (scm_pair){0.0, 0.0, 0.0, 0.0};
    return SCM_ENAN;
}

static scm_status relu_pair(double a, double b, double c, scm_pair *out)
{
    *out = (scm_pair){0.0, 0.0, 0.0, 0.0};
    if (isnan(a) || isnan(b) || isnan(c))
        return SCM_ENAN;
    if (!(a > 0.0) || !(b > 0.0))
        return SCM_EDEAD;
    if (!all_finite3(a, b, c))
        return SCM_ENAN;
    double s;
    scm_status st = gram_sqrt(a, b, &c, &s);
    if (st)
        return st;
    double theta = atan2(s, -c); /* = pi - arccos(rho) */
    double f;
    if (c >= 0.0 || s >= 0.5 * -c)
        f = s / (2.0 * M_PI) + c * (theta / (2.0 * M_PI)); /* no overflow at DBL_MAX */
    else /* c < 0, s / |c| < 1/2: s - |c| atan(s/|c|) cancels */
        f = -c * t_minus_atan(s / -c) / (2.0 * M_PI);
    out->f = f;
    out->fc = theta / (2.0 * M_PI);
    out->fa = s / sqrt(a) / (4.0 * M_PI) / sqrt(a);
    out->fb = s / sqrt(b) / (4.0 * M_PI) / sqrt(b);
    return pair_finite(out);
}

static int cov3_finite(const scm_cov3 *C)
{
    return all_finite3(C->uu, C->ww, C->zz) && all_finite3(C->uw, C->uz, C->wz);
}

/* E[Theta(u) w relu(z)] by Stein's lemma on w:
 * cov(u,w) E[delta(u) relu(z)] + cov(w,z) E[Theta(u) Theta(z)]. */
static scm_status relu_i3(const scm_cov3 *C, double *out)
{
    *out = 0.0;
    if (!cov3_finite(C))
        return SCM_ENAN;
    scm_pair p;
    scm_status st = relu_pair(C->uu, C->zz, C->uz, &p);
    if (!st)
        *out = C->uw * 2.0 * p.fa + C->wz * p.fc;
    return st;
}

/* D = (1 + a)(1 + b) - c^2 = 1 + a + b + (ab - c^2), every term >= 0, all
 * scaled by 4^(-2k) with 4^k ~ max(1, a, b) so that nothing overflows.
 * Fills the scaled c and sqrt(D), and k. */
static scm_status erf_gram(double a, double b, double c, double *cs, double *sDs, int *k)
{
    if (!all_finite3(a, b, c))
        return SCM_ENAN;
    if (!(a >= 0.0) || !(b >= 0.0))
        return SCM_ENOTPSD;
    double s;
    scm_status st = gram_sqrt(a, b, &c, &s);
    if (st)
        return st;
    int eg;
    frexp(fmax(1.0, fmax(a, b)), &eg);
    *k = eg / 2;
    if (*k == 0) { /* max(1, a, b) < 4: no scaling (ldexp by 0 is exact), most calls */
        *sDs = sqrt((1.0 + a + b) + s * s);
        *cs = c;
        return SCM_OK;
    }
    double Ds = ldexp(1.0, -4 * *k) + ldexp(a, -4 * *k) + ldexp(b, -4 * *k);
    double ss = ldexp(s, -2 * *k);
    *sDs = sqrt(Ds + ss * ss);
    *cs = ldexp(c, -2 * *k);
    return SCM_OK;
}

static scm_status erf_pair(double a, double b, double c, scm_pair *out)
{
    *out = (scm_pair){0.0, 0.0, 0.0, 0.0};
    double cs, sDs;
    int k;
    scm_status st = erf_gram(a, b, c, &cs, &sDs, &k);
    if (st)
        return st;
    out->f = (2.0 / M_PI) * atan2(cs, sDs); /* = (2/pi) asin(c / sqrt((1+a)(1+b))) */
    out->fc = (2.0 / M_PI) * (k ? ldexp(1.0 / sDs, -2 * k) : 1.0 / sDs);
    out->fa = -(cs / sDs) / (M_PI * (1.0 + a));
    out->fb = -(cs / sDs) / (M_PI * (1.0 + b));
    return pair_finite(out);
}

/* Saad & Solla (1995), I3 with g = erf(x / sqrt 2):
 * (2/pi) (C_wz (1 + C_uu) - C_uw C_uz) / ((1 + C_uu) sqrt(L3)),
 * L3 = (1 + C_uu)(1 + C_zz) - C_uz^2, where (2/pi) / sqrt(L3) is the pair
 * kernel's fc(C_uu, C_zz, C_uz) (which also validates the (u, z) pair). */
static scm_status erf_i3(const scm_cov3 *C, double *out)
{
    *out = 0.0;
    if (!cov3_finite(C))
        return SCM_ENAN;
    scm_pair p;
    scm_status st = erf_pair(C->uu, C->zz, C->uz, &p);
    if (!st)
        *out = p.fc * (C->wz - C->uw * C->uz / (1.0 + C->uu));
    return st;
}

static scm_status linear_pair(double a, double b, double c, scm_pair *out)
{
    *out = (scm_pair){c, 0.0, 0.0, 1.0};
    if (!all_finite3(a, b, c)) {
        *out = (scm_pair){0.0, 0.0, 0.0, 0.0};
        return SCM_ENAN;
    }
    if (!(a >= 0.0) || !(b >= 0.0) || fabs(c) > sqrt(a) * sqrt(b) * (1.0 + RHO_SLACK))
        return SCM_ENOTPSD;
    return SCM_OK;
}

static scm_status linear_i3(const scm_cov3 *C, double *out)
{
    *out = C->wz; /* E[1 * w * z] */
    return cov3_finite(C) ? SCM_OK : SCM_ENAN;
}

static double relu_g(double x) { return x > 0.0 ? x : 0.0; }
static double relu_dg(double x) { return x > 0.0 ? 1.0 : 0.0; }
static double erf_g(double x) { return erf(x / M_SQRT2); }
static double erf_dg(double x) { return sqrt(2.0 / M_PI) * exp(-0.5 * x * x); }
static double linear_g(double x) { return x; }
static double linear_dg(double x) { (void)x; return 1.0; }

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF /* (gcc's -std=c11 contracts nothing anyway) */
#endif
/* Lanes per pass of relu_pairs_fma (its arrays are on the stack). */
#define RELU_CHUNK 64

/* relu_pair on up to RELU_CHUNK pairs (a, b[i], c[i]): the common case
 * four lanes at a time, with the operations of relu_pair in the same
 * order (a vector sqrt, division, multiply, add and fused multiply-add
 * round each lane as the scalar ones and libm's fma do), atan2 lane by
 * lane from libm; any other lane through relu_pair itself. */
__attribute__((target("avx2,fma"))) static void relu_pairs_fma(double a, int n,
                                                               const double *restrict b,
                                                               const double *restrict c,
                                                               scm_pair *restrict out,
                                                               scm_status *restrict st)
{
    double bb[RELU_CHUNK], cc[RELU_CHUNK], s[RELU_CHUNK], th[RELU_CHUNK];
    int ok[RELU_CHUNK];
    const int n4 = (n + 3) & ~3;
    for (int i = 0; i < n4; i++) { /* padded with a harmless pair */
        bb[i] = i < n ? b[i] : 1.0;
        cc[i] = i < n ? c[i] : 0.0;
    }
    const int a_ok = a >= DET2_SAFE_LO && a <= DET2_SAFE_HI;
    const __m256d va = _mm256_set1_pd(a), lo = _mm256_set1_pd(DET2_SAFE_LO),
                  hi = _mm256_set1_pd(DET2_SAFE_HI), zero = _mm256_setzero_pd(),
                  sign = _mm256_set1_pd(-0.0), one = _mm256_set1_pd(1.0);
    for (int i = 0; i < n4; i += 4) { /* gram_sqrt on det2's unscaled path */
        const __m256d vb = _mm256_loadu_pd(bb + i), vc = _mm256_loadu_pd(cc + i);
        const __m256d p = _mm256_mul_pd(va, vb), q = _mm256_mul_pd(vc, vc);
        const __m256d d = _mm256_add_pd(_mm256_sub_pd(p, q),
                                        _mm256_sub_pd(_mm256_fmsub_pd(va, vb, p),
                                                      _mm256_fmsub_pd(vc, vc, q)));
        __m256d m = _mm256_and_pd(_mm256_cmp_pd(vb, lo, _CMP_GE_OQ),
                                  _mm256_cmp_pd(vb, hi, _CMP_LE_OQ));
        m = _mm256_and_pd(m, _mm256_cmp_pd(_mm256_andnot_pd(sign, vc), hi, _CMP_LE_OQ));
        m = _mm256_and_pd(m, _mm256_cmp_pd(d, zero, _CMP_GE_OQ));
        _mm256_storeu_pd(s + i, _mm256_sqrt_pd(_mm256_blendv_pd(zero, d, m)));
        const int bits = a_ok ? _mm256_movemask_pd(m) : 0;
        for (int q4 = 0; q4 < 4; q4++)
            ok[i + q4] = (bits >> q4) & 1;
    }
    for (int i = 0; i < n4; i++)
        th[i] = ok[i] && i < n ? atan2(s[i], -cc[i]) : 0.0;
    const __m256d twopi = _mm256_set1_pd(2.0 * M_PI), fourpi = _mm256_set1_pd(4.0 * M_PI),
                  half = _mm256_set1_pd(0.5),
                  ra = _mm256_set1_pd(sqrt(a_ok ? a : 1.0));
    for (int i = 0; i < n; i += 4) {
        const __m256d vs = _mm256_loadu_pd(s + i), vc = _mm256_loadu_pd(cc + i),
                      vt = _mm256_loadu_pd(th + i);
        const __m256d vb = _mm256_loadu_pd(bb + i);
        const __m256d rb = _mm256_sqrt_pd(_mm256_blendv_pd(one, vb,
                                          _mm256_cmp_pd(vb, lo, _CMP_GE_OQ)));
        const __m256d fc = _mm256_div_pd(vt, twopi);
        const __m256d f = _mm256_add_pd(_mm256_div_pd(vs, twopi), _mm256_mul_pd(vc, fc));
        const __m256d fa = _mm256_div_pd(_mm256_div_pd(_mm256_div_pd(vs, ra), fourpi), ra);
        const __m256d fb = _mm256_div_pd(_mm256_div_pd(_mm256_div_pd(vs, rb), fourpi), rb);
        /* relu_pair's branch: c >= 0 or s >= 1/2 (-c); else it cancels */
        const __m256d plain = _mm256_or_pd(
            _mm256_cmp_pd(vc, zero, _CMP_GE_OQ),
            _mm256_cmp_pd(vs, _mm256_mul_pd(half, _mm256_xor_pd(vc, sign)), _CMP_GE_OQ));
        const int bits = _mm256_movemask_pd(plain);
        double vf[4], vfa[4], vfb[4], vfc[4];
        _mm256_storeu_pd(vf, f);
        _mm256_storeu_pd(vfa, fa);
        _mm256_storeu_pd(vfb, fb);
        _mm256_storeu_pd(vfc, fc);
        for (int q4 = 0; q4 < 4 && i + q4 < n; q4++) {
            const int j = i + q4;
            ok[j] &= (bits >> q4) & 1;
            out[j] = (scm_pair){vf[q4], vfa[q4], vfb[q4], vfc[q4]};
            st[j] = ok[j] ? pair_finite(&out[j]) : SCM_OK;
            if (!ok[j] || st[j])
                st[j] = relu_pair(a, b[j], c[j], &out[j]);
        }
    }
}
/* relu_pairs_fma eight lanes at a time: the same operations on each lane
 * (AVX-512's sqrt, division, multiply, add and fused multiply-add round as
 * AVX2's do), the four values' finiteness tested side by side. */
__attribute__((target("avx512f"))) static void relu_pairs_avx512(double a, int n,
                                                                const double *restrict b,
                                                                const double *restrict c,
                                                                scm_pair *restrict out,
                                                                scm_status *restrict st)
{
    double bb[RELU_CHUNK], cc[RELU_CHUNK], s[RELU_CHUNK], th[RELU_CHUNK];
    __mmask8 ok[RELU_CHUNK / 8];
    const int n8 = (n + 7) & ~7;
    for (int i = 0; i < n8; i++) { /* padded with a harmless pair */
        bb[i] = i < n ? b[i] : 1.0;
        cc[i] = i < n ? c[i] : 0.0;
    }
    const int a_ok = a >= DET2_SAFE_LO && a <= DET2_SAFE_HI;
    const __m512d va = _mm512_set1_pd(a), lo = _mm512_set1_pd(DET2_SAFE_LO),
                  hi = _mm512_set1_pd(DET2_SAFE_HI), zero = _mm512_setzero_pd(),
                  one = _mm512_set1_pd(1.0), big = _mm512_set1_pd(DBL_MAX);
    for (int i = 0; i < n8; i += 8) { /* gram_sqrt on det2's unscaled path */
        const __m512d vb = _mm512_loadu_pd(bb + i), vc = _mm512_loadu_pd(cc + i);
        const __m512d p = _mm512_mul_pd(va, vb), q = _mm512_mul_pd(vc, vc);
        const __m512d d = _mm512_add_pd(_mm512_sub_pd(p, q),
                                        _mm512_sub_pd(_mm512_fmsub_pd(va, vb, p),
                                                      _mm512_fmsub_pd(vc, vc, q)));
        __mmask8 m = _mm512_cmp_pd_mask(vb, lo, _CMP_GE_OQ) &
                     _mm512_cmp_pd_mask(vb, hi, _CMP_LE_OQ) &
                     _mm512_cmp_pd_mask(_mm512_abs_pd(vc), hi, _CMP_LE_OQ) &
                     _mm512_cmp_pd_mask(d, zero, _CMP_GE_OQ);
        _mm512_storeu_pd(s + i, _mm512_sqrt_pd(_mm512_mask_blend_pd(m, zero, d)));
        ok[i / 8] = a_ok ? m : 0;
    }
    for (int i = 0; i < n8; i++)
        th[i] = (ok[i / 8] >> (i % 8) & 1) && i < n ? atan2(s[i], -cc[i]) : 0.0;
    const __m512d twopi = _mm512_set1_pd(2.0 * M_PI), fourpi = _mm512_set1_pd(4.0 * M_PI),
                  half = _mm512_set1_pd(0.5), ra = _mm512_set1_pd(sqrt(a_ok ? a : 1.0));
    for (int i = 0; i < n; i += 8) {
        const __m512d vs = _mm512_loadu_pd(s + i), vc = _mm512_loadu_pd(cc + i),
                      vt = _mm512_loadu_pd(th + i), vb = _mm512_loadu_pd(bb + i);
        const __m512d rb = _mm512_sqrt_pd(
            _mm512_mask_blend_pd(_mm512_cmp_pd_mask(vb, lo, _CMP_GE_OQ), one, vb));
        const __m512d fc = _mm512_div_pd(vt, twopi);
        const __m512d f = _mm512_add_pd(_mm512_div_pd(vs, twopi), _mm512_mul_pd(vc, fc));
        const __m512d fa = _mm512_div_pd(_mm512_div_pd(_mm512_div_pd(vs, ra), fourpi), ra);
        const __m512d fb = _mm512_div_pd(_mm512_div_pd(_mm512_div_pd(vs, rb), fourpi), rb);
        /* relu_pair's branch: c >= 0 or s >= 1/2 (-c); else it cancels */
        const __mmask8 plain =
            _mm512_cmp_pd_mask(vc, zero, _CMP_GE_OQ) |
            _mm512_cmp_pd_mask(vs, _mm512_mul_pd(half, _mm512_sub_pd(zero, vc)), _CMP_GE_OQ);
        const __mmask8 fin = _mm512_cmp_pd_mask(_mm512_abs_pd(f), big, _CMP_LE_OQ) &
                             _mm512_cmp_pd_mask(_mm512_abs_pd(fa), big, _CMP_LE_OQ) &
                             _mm512_cmp_pd_mask(_mm512_abs_pd(fb), big, _CMP_LE_OQ) &
                             _mm512_cmp_pd_mask(_mm512_abs_pd(fc), big, _CMP_LE_OQ);
        const __mmask8 good = ok[i / 8] & plain & fin;
        double vf[8], vfa[8], vfb[8], vfc[8];
        _mm512_storeu_pd(vf, f);
        _mm512_storeu_pd(vfa, fa);
        _mm512_storeu_pd(vfb, fb);
        _mm512_storeu_pd(vfc, fc);
        for (int q8 = 0; q8 < 8 && i + q8 < n; q8++) {
            const int j = i + q8;
            if (good >> q8 & 1) {
                out[j] = (scm_pair){vf[q8], vfa[q8], vfb[q8], vfc[q8]};
                st[j] = SCM_OK;
            } else {
                st[j] = relu_pair(a, b[j], c[j], &out[j]);
            }
        }
    }
}
#endif

static void relu_pairs_plain(double a, int n, const double *b, const double *c, scm_pair *out,
                             scm_status *st)
{
    for (int i = 0; i < n; i++)
        st[i] = relu_pair(a, b[i], c[i], &out[i]);
}

int scm_kernel_relu_pairs_copy(scm_linalg_isa isa, double a, int n, const double *b,
                               const double *c, scm_pair *out, scm_status *st)
{
    void (*pairs)(double, int, const double *, const double *, scm_pair *, scm_status *) = NULL;
    if (isa == SCM_LINALG_PLAIN)
        pairs = relu_pairs_plain;
#if defined(__x86_64__) && defined(__GNUC__)
    if (isa == SCM_LINALG_AVX2 && __builtin_cpu_supports("avx2") &&
        __builtin_cpu_supports("fma"))
        pairs = relu_pairs_fma;
    if (isa == SCM_LINALG_AVX512 && __builtin_cpu_supports("avx512f"))
        pairs = relu_pairs_avx512;
#endif
    if (!pairs)
        return -1;
    for (int i = 0; i < n; i += RELU_CHUNK)
        pairs(a, n - i < RELU_CHUNK ? n - i : RELU_CHUNK, b + i, c + i, out + i, st + i);
    return 0;
}

void scm_kernel_relu_pairs(double a, int n, const double *b, const double *c, scm_pair *out,
                           scm_status *st)
{
    const scm_linalg_isa widest[] = {SCM_LINALG_AVX512, SCM_LINALG_AVX2, SCM_LINALG_PLAIN};
    for (int q = 0; scm_kernel_relu_pairs_copy(widest[q], a, n, b, c, out, st) != 0; q++)
        ;
}

const scm_activation scm_act_relu = {"relu", relu_pair, relu_i3, relu_g, relu_dg};
const scm_activation scm_act_erf = {"erf", erf_pair, erf_i3, erf_g, erf_dg};
const scm_activation scm_act_linear = {"linear", linear_pair, linear_i3, linear_g, linear_dg};

const scm_activation *scm_activation_find(const char *name)
{
    static const scm_activation *const all[] = {&scm_act_relu, &scm_act_erf, &scm_act_linear};
    if (!name)
        return NULL;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (strcmp(all[i]->name, name) == 0)
            return all[i];
    return NULL;
}

/* Derivations in docs/stability.md. */
scm_status scm_kernel_pair2(const scm_activation *act, double srel_min, double a, double b, double c,
                            scm_pair2 *o)
{
    *o = (scm_pair2){0, 0, 0, 0, 0, 0};
    if (act == &scm_act_linear)
        return SCM_OK;
    if (act == &scm_act_relu) {
        if (!(a > 0.0) || !(b > 0.0))
            return SCM_EDEAD;
        double ab = a * b, s2 = ab - c * c;
        double s = sqrt(fmax(s2, 0.0));
        if (!(s >= srel_min * sqrt(ab)))
            return SCM_ESINGULAR;
        const double p4 = 4.0 * M_PI;
        o->cc = 1.0 / (2.0 * M_PI * s);
        o->ac = -c / (p4 * a * s);
        o->bc = -c / (p4 * b * s);
        o->ab = 1.0 / (2.0 * p4 * s);
        o->aa = (c * c - 0.5 * ab) / (p4 * a * a * s);
        o->bb = (c * c - 0.5 * ab) / (p4 * b * b * s);
        return SCM_OK;
    }
    if (act == &scm_act_erf) {
        double D = (1.0 + a) * (1.0 + b) - c * c;
        if (!(D > 0.0))
            return SCM_ENOTPSD;
        double D12 = sqrt(D), D32 = D * D12;
        o->cc = (2.0 / M_PI) * c / D32;
        o->ac = -(1.0 + b) / (M_PI * D32);
        o->bc = -(1.0 + a) / (M_PI * D32);
        o->ab = c / (2.0 * M_PI * D32);
        o->aa = (c / M_PI) * (1.0 / ((1.0 + a) * (1.0 + a) * D12) + (1.0 + b) / (2.0 * (1.0 + a) * D32));
        o->bb = (c / M_PI) * (1.0 / ((1.0 + b) * (1.0 + b) * D12) + (1.0 + a) / (2.0 * (1.0 + b) * D32));
        return SCM_OK;
    }
    return SCM_EINVAL;
}

