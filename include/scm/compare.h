/* compare.h: where training ends, for several K at one M (`scm compare`;
 * docs/sweeps.md).
 *
 * For each K: the configuration (a base config with --set overrides and
 * model.K, model.M) written to PREFIX.K<K>.config.json; the fixed-point
 * families, given or enumerated (fptable.h, into PREFIX.K<K>.families.json)
 * when the model is one the enumeration handles (T = I, v = v* = 1, rule
 * gd); a sweep of random starts run or resumed in PREFIX.K<K>.runs.jsonl
 * (sweepfile.h) and its summary PREFIX.K<K>.summary.json; the families the
 * runs reached with their stability verdicts (stability.h, K <= 20); the
 * unconverged runs by the point they sit near; loss-vs-time traces of the
 * first run of the most frequent classes.  Then one report: the fraction of
 * runs per k1 and K with 95% Wilson intervals and the rest, as the cJSON
 * object of PREFIX.json, and its Markdown (PREFIX.md).
 *
 * scm_compare_rules_table reads the summaries of one compare per training
 * rule (PREFIX.<rule>.K<K>.summary.json) into the table across rules
 * (PREFIX.rules.json, PREFIX.rules.md; docs/rules.md).
 *
 * Nothing here prints: progress reaches the caller through an event
 * callback; the caller writes PREFIX.json and PREFIX.md.  The sweeps run on
 * the executor the caller gives (sweepfile.h), the threads by default. */
#ifndef SCM_COMPARE_H
#define SCM_COMPARE_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "scm/status.h"
#include "scm/sweep.h"
#include "scm/sweepfile.h"

#define SCM_COMPARE_MAX_K 64
#define SCM_COMPARE_MAX_ANSATZ 16

typedef enum {
    SCM_COMPARE_NOTE,         /* text: a progress line ("K = 4, M = 4: ...") */
    SCM_COMPARE_SWEEP_START,  /* sweep, path: the runs file of K is open (resumed runs
                                 counted), its runs about to start */
    SCM_COMPARE_SWEEP_RECORD, /* sweep: one more record written */
    SCM_COMPARE_SWEEP_END     /* the sweep of K ended: status, err, ran, run_ok */
} scm_compare_event_kind;

typedef struct {
    scm_compare_event_kind kind;
    long K;
    const char *text;            /* NOTE */
    const char *path;            /* SWEEP_*: the runs file */
    const scm_sweep_file *sweep; /* SWEEP_START, _RECORD, and _END when ran */
    /* SWEEP_END: ran is 1 when the runs were started (after SWEEP_START);
     * run_ok 1 when every run is in the file and the summary written;
     * status and err the sweep's failure (SCM_OK otherwise), which
     * scm_compare_run then returns with part SCM_COMPARE_PART_SWEEP. */
    int ran, run_ok;
    scm_status status;
    const scm_error *err;
} scm_compare_event;

typedef void (*scm_compare_event_fn)(const scm_compare_event *e, void *user);

/* ---- jobs: what a comparison computes besides its sweeps ------------------
 *
 * The families of each K (the enumeration) and the stability verdicts of
 * the families reached are jobs: a job is a line of JSON text, and its
 * result (scm_compare_job_run) a pure function of that text, the same
 * bytes on any thread or MPI rank.  With an executor of jobs
 * (scm_compare_opts.jobs) a comparison hands out the enumerations of all
 * its K at once, before the first file is written, and the verdicts of one
 * K at once; without one it computes them in turn, as it always did.
 * Either way its files are the same (compare_jobs.c). */
typedef struct {
    char *in;  /* the job (made and freed by the comparison) */
    char *out; /* its result, set by the executor (malloc'd; the comparison frees it) */
} scm_compare_job;

/* Compute the job in: *out its result text (malloc'd, the caller frees it).
 * threads: the threads the job may use (>= 1; the result does not depend on
 * it).  A job's own failure (an enumeration that fails) is part of its
 * result; SCM_EINVAL for a text that is not a job, SCM_ENOMEM. */
scm_status scm_compare_job_run(const char *in, int threads, char **out, scm_error *err);

/* An executor of jobs: jobs[i].out = the result of scm_compare_job_run of
 * jobs[i].in for every i < n, computed in any order, anywhere; nthreads as
 * the sweeps' (scm_compare_opts.threads).  SCM_OK when every out is set;
 * otherwise the first failure (a job whose run failed, under MPI with its
 * rank in the message), and the outs that were set are the caller's to
 * free all the same. */
typedef scm_status (*scm_compare_jobs_fn)(scm_compare_job *jobs, int n, int nthreads,
                                          scm_error *err);

/* The executor of jobs of this process: min(nthreads, n) jobs at a time,
 * taken in index order (the caller puts the longest first), each with
 * nthreads / that many threads of its own; the first failure by index. */
scm_status scm_compare_jobs_exec(scm_compare_job *jobs, int n, int nthreads, scm_error *err);

typedef struct {
    long M;                 /* teachers (required, >= 1) */
    int nK;                 /* 1 .. SCM_COMPARE_MAX_K */
    long K[SCM_COMPARE_MAX_K];
    long runs;              /* per K (required, >= 1) */
    const char *config_text; /* the base configuration as JSON text; NULL: the
                                built-in one (ReLU, T = I, d = 1000, GMRES, two-stage
                                accuracy; scm compare --help) */
    const char *config_name; /* names config_text in messages; NULL: "(default config)" */
    const char *const *sets; /* --set overrides applied before model.K and model.M */
    int nsets;
    const char *prefix;     /* of every file (required) */
    const char *families[SCM_COMPARE_MAX_K]; /* per K: a families file, NULL: enumerate */
    const char *const *ansatz_files; /* n_ansatz (<= SCM_COMPARE_MAX_ANSATZ) ansatz files the
                                        enumeration takes besides the built-in ones, at
                                        the K where they apply (scm fixed-points --ansatz);
                                        a file named like a built-in ansatz is refused */
    int n_ansatz;
    int have_seed;          /* 1: seed is the sweeps' base seed; 0: init.seed */
    uint64_t seed;
    int threads;            /* of the sweeps (1) */
    int traces;             /* classes traced per K, 0 .. 100 (4) */
    int no_stability;       /* 1: no stability verdicts */
    int certify;            /* the sweeps' early stop: 0, 1, 2 (sweep.h) */
    scm_sweep_exec_fn exec; /* NULL: scm_sweep_exec */
    scm_compare_jobs_fn jobs; /* NULL: the enumerations and verdicts in turn, here */
    /* Jobs the caller computed ahead (scm_map: the next row's enumerations
     * while a row's sweeps run): a job of this comparison whose text is one
     * of these takes a copy of its result instead of being computed. */
    const scm_compare_job *done_jobs;
    int n_done_jobs;
    scm_compare_event_fn event; /* NULL: none */
    void *event_user;
} scm_compare_opts;

/* The ansatz files of scm_compare_opts read and checked as the enumeration
 * of (K, M) takes them: SCM_EINVAL naming a file that cannot be read or
 * parsed, or whose name is a built-in ansatz's or another file's. */
scm_status scm_compare_ansatz_check(long K, long M, const char *const *ansatz, int n_ansatz,
                                    scm_error *err);

/* M = -1, nK = 0, runs = -1, threads 1, traces 4, the rest 0 / NULL. */
void scm_compare_opts_default(scm_compare_opts *o);

/* The enumeration jobs scm_compare_run of o hands to its executor (one per
 * K whose families it enumerates, the largest K first), without running
 * them: *n of them into jobs[0 .. SCM_COMPARE_MAX_K - 1], each in malloc'd
 * (the caller frees it), out NULL.  A caller that computes them ahead gives
 * their results back through o->done_jobs.  SCM_EINVAL for a configuration
 * that does not parse (scm_compare_run would refuse it), SCM_ENOMEM. */
scm_status scm_compare_families_jobs(const scm_compare_opts *o, scm_compare_job *jobs, int *n,
                                     scm_error *err);

/* Whose failure stopped the comparison (what a program names in its
 * message: the comparison, the family enumeration, a sweep). */
typedef enum {
    SCM_COMPARE_PART_NONE = 0,
    SCM_COMPARE_PART_COMPARE,
    SCM_COMPARE_PART_ENUMERATION,
    SCM_COMPARE_PART_SWEEP
} scm_compare_part;

typedef struct {
    cJSON *report; /* PREFIX.json's object: command, M, K, runs, fractions,
                      families, families_reached, not_converged_near,
                      histograms, traces, files */
    int nK;
    cJSON *summaries[SCM_COMPARE_MAX_K]; /* per K, the sweep's summary as written */
    /* after a failure: */
    scm_compare_part failed_part;
    int failed_input;  /* 1: bad input (a config, a families file, eps_stop,
                          an existing runs file of another sweep), 0: a failed
                          computation or write */
    long failed_K;     /* the K being done, -1 for none */
} scm_compare_result;

/* Run the comparison o describes, writing the per-K files.  On SCM_OK res
 * holds the report; otherwise err says why and res where (a sweep's
 * failure was also passed to its SWEEP_END event).  Free res with
 * scm_compare_result_free in either case. */
scm_status scm_compare_run(const scm_compare_opts *o, scm_compare_result *res, scm_error *err);
void scm_compare_result_free(scm_compare_result *res);

/* The message of a failed scm_compare_run (res and err as it left them;
 * compare_util.c), into buf (n bytes): "K = <K>: the family enumeration
 * failed: <err>" for part SCM_COMPARE_PART_ENUMERATION, else err's
 * message.  Returns buf. */
const char *scm_compare_failure(const scm_compare_result *res, const scm_error *err, char *buf,
                                size_t n);

/* Before any file is touched (compare_opts.c): SCM_OK when no file the
 * comparison o writes (PREFIX.json, .md, and per K .config.json,
 * .runs.jsonl, .summary.json, .families.json) is one of its inputs
 * (o->config_name, o->families[]; a families file given as the very name
 * of K's is read, not written) and scm_output_check_path accepts them;
 * else SCM_EINVAL (or that refusal) naming the path. */
scm_status scm_compare_check_outputs(const scm_compare_opts *o, scm_error *err);

/* A --rule list "R1,R2,..." split in place (list is modified) into
 * rules[0 .. n-1], pointers into list: n, or -1 with err filled when a
 * name is not a rule (scm_rule_find), is given twice, or there are more
 * than cap. */
int scm_compare_rules_list(char *list, const char **rules, int cap, scm_error *err);

/* The Markdown report of res for the file prefix prefix (the text of
 * PREFIX.md); NULL on no memory, else the caller frees it. */
char *scm_compare_markdown(const scm_compare_result *res, const char *prefix);

/* Stamp a report (res->report) as the other commands' results: its first
 * key "scmode_version" (this library's version) and "status": "ok" after
 * "command" (a report exists only for a comparison that completed: runs
 * that did not converge are counted in it, not a failure).  Idempotent;
 * on no memory the report is left as it was. */
void scm_compare_report_stamp(cJSON *report);

/* The table across rules: for each rule rules[r] (r < nrules) and K, the
 * summary PREFIX.<rule>.K<K>.summary.json read into the fraction reaching
 * the global minimum, not converged, with no anti-aligned student, and the
 * most frequent other end class, with Wilson intervals.  *json is the
 * object of PREFIX.rules.json, *md the text of PREFIX.rules.md (the caller
 * frees both).  SCM_EIO when a summary cannot be read, SCM_EINVAL when it
 * is not a sweep summary, SCM_ENOMEM; *json and *md are then NULL. */
scm_status scm_compare_rules_table(const char *prefix, long M, const long *K, int nK,
                                   const char *const *rules, int nrules, cJSON **json,
                                   char **md, scm_error *err);

#endif
