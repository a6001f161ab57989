/* compare_internal.h: what the files of the comparison (compare.h) share:
 * the families the runs of one K reached with their stability, the
 * unconverged runs by the point they sit near, the traces. */
#ifndef SCM_STUDIES_COMPARE_INTERNAL_H
#define SCM_STUDIES_COMPARE_INTERNAL_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "scm/compare.h"
#include "scm/config.h"
#include "scm/fptable.h"
#include "scm/model.h"

/* The file as JSON, or NULL (unreadable or not JSON). */
cJSON *scm_compare_read_json(const char *path);

/* A NOTE event of o's callback (printf-formatted). */
void scm_compare_note(const scm_compare_opts *o, long K, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The families the sweep of one K reached (its summary S's matched
 * classes), each with its fixed point from the families file and, unless
 * no_stab, the verdict of scm_stab_analyse.  Appends to out; SCM_EIO when
 * the families file cannot be read back, SCM_ENOMEM. */
scm_status scm_compare_reached(const scm_compare_opts *o, const char *fam_path, const cJSON *S,
                               const scm_config *c, long K, cJSON *out, scm_error *err);

/* The unconverged runs of every K grouped by the listed point they sit
 * nearest, each with a stability verdict.  A new array (NULL without
 * memory). */
cJSON *scm_compare_near_rows(cJSON *const *summ, const long *Ks, int nK, const cJSON *reached);

/* Loss-vs-time traces of the first run of each of the n most frequent
 * classes of the runs file (compare_trace.c), appended to out: each run
 * integrated again from its initial state with scm_compare_trace_opts and
 * classified against the families of fam_path (NULL: none) as the sweep
 * does.  SCM_EIO when a file cannot be read back. */
scm_status scm_compare_traces(const char *runs_path, const char *fam_path, int n,
                              const scm_config *c, uint64_t base, long K, cJSON *out,
                              scm_error *err);

/* The traces' integrator: c's, without a loose stage, rtol <= 1e-10,
 * atol <= 1e-12, eps_stop <= 1e-12 (when on), no early stop, and the tail
 * stage (traj.h) from eps = 1e-4 for the gd rule; recording. */
void scm_compare_trace_opts(const scm_config *c, scm_traj_opts *to);

/* Those options as the report's "traces_integrator" object. */
cJSON *scm_compare_trace_integrator_json(const scm_config *c);

/* What differs between the first line old_line of a runs file and the
 * header want a sweep would write, for a message: the first of runs, seed,
 * config, families, classify, shard that differs (with both values when
 * numbers), into out (n bytes). */
void scm_compare_header_diff(const char *old_line, const char *want, char *out, size_t n);

/* A growing text buffer (oom: an allocation failed, later output dropped). */
typedef struct {
    char *p;
    size_t len, cap;
    int oom;
} md_buf;

/* Append printf output to b. */
void scm_compare_md_printf(md_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---- jobs (compare_jobs.c) ---------------------------------------------- */

/* The families of one K as `scm fixed-points --K K --M M --activation NAME
 * --polish-max-K 0 --max-residual 1e-9 -q -o name` computes them: status
 * SCM_OK and text (the file's text, with its final newline; owned), or the
 * failure in status and err, input 1 when it is bad input (SCM_EINVAL,
 * SCM_EIO of the enumeration).  above: the listed points whose residual is
 * not below 1e-9 (0: all fine). */
typedef struct {
    scm_status status;
    int input;
    scm_error err;
    char *text;
    int above;
} scm_compare_fams;

/* The options of the enumeration of K (scm fixed-points --polish-max-K 0
 * --max-residual 1e-9, the built-in ansätze and these files). */
void scm_compare_fams_opts(scm_fp_table_opts *fo, long K, long M, const scm_activation *act,
                           const char *const *ansatz, int n_ansatz);

/* Compute r (threads: the enumeration's, 0 for the processors online; the
 * result does not depend on it); name only appears in messages.  ansatz:
 * n_ansatz ansatz files enumerated besides the built-in ones
 * (scm_compare_opts.ansatz_files), those that do not apply skipped. */
void scm_compare_fams_compute(long K, long M, const scm_activation *act, const char *name,
                              const char *const *ansatz, int n_ansatz, int threads,
                              scm_compare_fams *r);
void scm_compare_fams_free(scm_compare_fams *r);

/* The job text of scm_compare_fams_compute (NULL on no memory). */
char *scm_compare_job_fams(long K, long M, const scm_activation *act, const char *name,
                           const char *const *ansatz, int n_ansatz);

/* r from the result out of a families job (out is modified).  SCM_EINVAL
 * when it is no such result, SCM_ENOMEM; r->text owned by r. */
scm_status scm_compare_fams_read(char *out, scm_compare_fams *r, scm_error *err);

/* The stability verdict of the point (Q, R) of m as the fields compare's
 * families_reached entry gets (verdict, hessian_verdict, tests_agree, ...,
 * escapes_to; or verdict "error" with why): a new object, NULL on no
 * memory. */
cJSON *scm_compare_stab_fields(const scm_model *m, const double *Q, const double *R);

/* The job text of scm_compare_stab_fields (NULL on no memory). */
char *scm_compare_job_stab(const scm_model *m, const double *Q, const double *R);

/* json printed as scm_output_write_json writes it (with a final newline),
 * or NULL on no memory. */
char *scm_compare_json_text(const cJSON *json, int compact);

#endif
