/* fuzz_entry.c: hostile input for the parsers of user text.
 *   config: the bytes are a config file (scm_config_parse, no overrides);
 *   set:    a fixed valid config, the bytes split at newlines into up to 16
 *           "key=value" overrides (what `scm run --set` passes);
 *   ansatz: the bytes are an ansatz file; when it parses, it is evaluated
 *           at a few (K, M, k1), as `scm fixed-points` does.
 * The readers of user files (runs, families, seeds) are in fuzz_files.c.
 * Every accepted input must also yield a consistent object: a parsed
 * config builds its model and initial state, an error carries a message. */
#include "fuzz_entry.h"

#include <stdlib.h>
#include <string.h>

#include "scm/ansatz.h"
#include "scm/config.h"
#include "scm/model.h"

char *scm_fuzz_text_of(const uint8_t *data, size_t size)
{
    char *t = malloc(size + 1);
    if (!t) return NULL;
    memcpy(t, data, size);
    t[size] = '\0';
    return t;
}

void scm_fuzz_check_error(scm_status st, const scm_error *err)
{
    if (st != SCM_OK && err->msg[0] == '\0') abort();
}

/* Use a parsed config as `scm run` would up to the integration. */
static void exercise_config(const scm_config *c)
{
    scm_error err;
    scm_error_clear(&err);
    /* Large K, M or d are valid input whose cost (O(M^3 + d M^2) to
     * sample the initial state) is not the parsers' concern: skip them,
     * else libFuzzer reports them as timeouts. */
    if (c->K > 64 || c->M > 64 || c->d > 10000) return;
    scm_model *m = scm_config_model(c, &err);
    if (!m) {
        scm_fuzz_check_error(SCM_EINVAL, &err);
        return;
    }
    double *Q = malloc(sizeof(double) * (size_t)c->K * (size_t)c->K);
    double *R = malloc(sizeof(double) * (size_t)c->K * (size_t)c->M);
    if (Q && R) {
        scm_status st = scm_config_initial_state(c, m, Q, R, &err);
        scm_fuzz_check_error(st, &err);
    }
    free(Q);
    free(R);
    scm_model_free(m);
}

static void parse_and_use(const char *text, const char *const *sets, int nsets)
{
    scm_config *c = NULL;
    scm_error err;
    scm_error_clear(&err);
    scm_status st = scm_config_parse(text, "fuzz", sets, nsets, &c, &err);
    scm_fuzz_check_error(st, &err);
    if (st == SCM_OK) {
        exercise_config(c);
        scm_config_free(c);
    } else if (c) {
        abort(); /* a failed parse hands nothing back */
    }
}

int scm_fuzz_config(const uint8_t *data, size_t size)
{
    char *text = scm_fuzz_text_of(data, size);
    if (!text) return 0;
    parse_and_use(text, NULL, 0);
    free(text);
    return 0;
}

int scm_fuzz_set(const uint8_t *data, size_t size)
{
    static const char base[] = "{\"model\": {\"K\": 2, \"M\": 2}, \"init\": {\"d\": 50}}";
    enum { MAX_SETS = 16 };
    const char *sets[MAX_SETS];
    int nsets = 0;
    char *text = scm_fuzz_text_of(data, size);
    if (!text) return 0;
    for (char *p = text; p && nsets < MAX_SETS;) {
        sets[nsets++] = p;
        p = strchr(p, '\n');
        if (p) *p++ = '\0';
    }
    parse_and_use(base, sets, nsets);
    free(text);
    return 0;
}

int scm_fuzz_ansatz(const uint8_t *data, size_t size)
{
    scm_error err;
    scm_error_clear(&err);
    scm_ansatz *a = scm_ansatz_parse((const char *)data, size, "fuzz", &err);
    if (!a) {
        scm_fuzz_check_error(SCM_EINVAL, &err);
        return 0;
    }
    (void)scm_ansatz_name(a);
    (void)scm_ansatz_description(a);
    static const int KM[][2] = {{1, 1}, {2, 2}, {3, 2}, {5, 4}};
    for (size_t i = 0; i < sizeof KM / sizeof KM[0]; i++) {
        int lo = 0, hi = 0;
        if (scm_ansatz_applies(a, KM[i][0], KM[i][1], &lo, &hi) != 1) continue;
        if (hi - lo > 8) hi = lo + 8;
        for (int k1 = lo; k1 <= hi; k1++) {
            scm_ansatz_inst *in = scm_ansatz_instantiate(a, KM[i][0], KM[i][1], k1, &err);
            if (!in) {
                scm_fuzz_check_error(SCM_EINVAL, &err);
                continue;
            }
            int n = scm_ansatz_inst_nscalars(in);
            for (int s = 0; s < n; s++) {
                double g;
                if (scm_ansatz_inst_find(in, scm_ansatz_inst_scalar_name(in, s)) != s) abort();
                (void)scm_ansatz_guess(a, in, s, &g);
            }
            if (scm_ansatz_inst_integral(in) && n <= 4096) {
                int K = KM[i][0], M = KM[i][1];
                double *x = calloc((size_t)n + 1, sizeof(double));
                double *Q = calloc((size_t)K * K, sizeof(double));
                double *R = calloc((size_t)K * M, sizeof(double));
                if (x && Q && R) {
                    for (int s = 0; s < n; s++) x[s] = 0.25 + 0.125 * s;
                    if (scm_ansatz_to_full(in, x, Q, R) == SCM_OK) {
                        double dev;
                        (void)scm_ansatz_project(in, Q, R, x, &dev);
                        if (!(dev < 1e-12)) abort(); /* to_full lies on the ansatz */
                    }
                }
                free(x);
                free(Q);
                free(R);
            }
            scm_ansatz_inst_free(in);
        }
    }
    scm_ansatz_free(a);
    return 0;
}

scm_fuzz_fn scm_fuzz_lookup(const char *name)
{
    if (strcmp(name, "config") == 0) return scm_fuzz_config;
    if (strcmp(name, "set") == 0) return scm_fuzz_set;
    if (strcmp(name, "ansatz") == 0) return scm_fuzz_ansatz;
    if (strcmp(name, "runs") == 0) return scm_fuzz_runs;
    if (strcmp(name, "families") == 0) return scm_fuzz_families;
    if (strcmp(name, "seeds") == 0) return scm_fuzz_seeds;
    return NULL;
}
