/* sweepfile.h: a sweep run into a runs file, resumable, and the merge of
 * runs files into one summary (docs/sweeps.md).
 *
 * A runs file is the sweep's header line (scm_sweep_header_json_opts) and
 * then one record line per run (scm_sweep_record_json) in index order.
 * scm_sweep_file_open checks an existing file for --resume (same header,
 * records the first ones of this shard with their seeds; a last line cut by
 * a kill is dropped), or starts a new one; scm_sweep_file_run computes the
 * runs still missing and appends their records, each flushed and fsync'ed
 * as it is written (or fsync'ed at most every fsync_interval seconds), so a
 * killed sweep loses at most the line being written.
 *
 * The runs are computed by an executor with the contract of scm_sweep_exec
 * (sweep.h): the threads of this process by default, or one the caller
 * supplies (scm-mpi's ranks).  The records reach the file in index order
 * whatever the executor, so the file does not depend on it.
 *
 * Nothing here prints; errors come back as scm_error with the message the
 * CLI prints after "scm sweep: " or "scm merge: ". */
#ifndef SCM_SWEEPFILE_H
#define SCM_SWEEPFILE_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "scm/config.h"
#include "scm/sweep.h"

/* An executor of runs, with the contract of scm_sweep_exec. */
typedef scm_status (*scm_sweep_exec_fn)(const scm_config *c, uint64_t base, const long *indices,
                                        long n, int nthreads, const scm_sweep_families *fams,
                                        const scm_sweep_opts *o, scm_sweep_emit_fn emit,
                                        void *user, scm_error *err);

typedef struct scm_sweep_file scm_sweep_file;

/* Called after each record is written and counted (serialised), for a
 * progress line: scm_sweep_file_done and scm_sweep_file_summary are current. */
typedef void (*scm_sweep_file_progress_fn)(const scm_sweep_file *f, void *user);

typedef struct {
    long runs;             /* runs of the whole sweep (>= 1) */
    uint64_t seed;         /* base seed of scm_sweep_seed */
    int shard_i, shard_n;  /* only the runs with index = shard_i mod shard_n */
    int threads;           /* passed to the executor (>= 1) */
    int resume;            /* 1: continue an existing file; 0: an existing file is an error */
    double fsync_interval; /* 0: fsync after every record; S > 0: at most every S seconds */
    scm_sweep_opts sweep;  /* classification and early stop of each run */
    scm_sweep_exec_fn exec; /* NULL: scm_sweep_exec */
    scm_sweep_file_progress_fn progress; /* NULL: none */
    void *progress_user;
} scm_sweep_file_opts;

/* runs 1, seed 0, shard 0/1, threads 1, resume 0, fsync_interval 0,
 * sweep scm_sweep_opts_default, exec NULL, progress NULL. */
void scm_sweep_file_opts_default(scm_sweep_file_opts *o);

/* Open the runs file path of the sweep of c (init must be random; the
 * caller checks) with families fams (may be NULL or empty) and options o.
 * c, fams and o are borrowed and must outlive the handle.  Without
 * o->resume an existing file is SCM_EINVAL; with it, the file must hold
 * this sweep's header and the first records of this shard with their seeds
 * (else SCM_EINVAL, the message naming the line, and the file is left as
 * it was), its records are counted into the summary and a last line
 * without newline is dropped; an unreadable file, a directory or a device
 * is SCM_EINVAL too.  A file whose only line is a cut prefix of the header
 * is rewritten.  The file is read line by line (at most 16 MB a line).  The
 * open file holds an advisory write lock (fcntl) until it is closed: a
 * second process opening the same file gets SCM_EINVAL ("locked by another
 * process").  Families whose points have another shape than c's model are
 * SCM_EINVAL (scm_sweep_families_check_shape).  SCM_EIO when the file cannot be truncated, opened or its
 * header written; SCM_ENOMEM.  On success *out is the handle (free with
 * scm_sweep_file_free), else *out is NULL. */
scm_status scm_sweep_file_open(const char *path, const scm_config *c,
                               const scm_sweep_families *fams, const scm_sweep_file_opts *o,
                               scm_sweep_file **out, scm_error *err);

/* Compute the runs not yet in the file with o->exec and append their
 * records in index order.  SCM_EIO when a record could not be written or
 * synced or the file not closed, SCM_ENOMEM when a record could not be
 * made or counted; otherwise the executor's status (its message in err).
 * The file is closed on return either way; call at most once. */
scm_status scm_sweep_file_run(scm_sweep_file *f, scm_error *err);

/* Runs of this shard, records in the file now, records found by the resume. */
long scm_sweep_file_total(const scm_sweep_file *f);
long scm_sweep_file_done(const scm_sweep_file *f);
long scm_sweep_file_resumed(const scm_sweep_file *f);
/* The summary of the records in the file (owned by the handle). */
const scm_sweep_summary *scm_sweep_file_summary(const scm_sweep_file *f);
/* Before scm_sweep_file_open, as `scm sweep` and the Python call do
 * (sweep_setup.c): c (named name in messages) must start from random
 * states (SCM_EINVAL "<name>: a sweep needs init.type = \"random\""); the
 * families file fam_path (NULL: none) is read into fams
 * (scm_sweep_families_load, its errors); fo->seed is seed, or c's
 * init.seed when seed < 0. */
scm_status scm_sweep_file_setup(const scm_config *c, const char *name, const char *fam_path,
                                long seed, scm_sweep_families *fams, scm_sweep_file_opts *fo,
                                scm_error *err);

/* Closes the file if still open; NULL is allowed. */
void scm_sweep_file_free(scm_sweep_file *f);

/* The families file at path (a fixed-points result, or any list
 * scm_sweep_families_parse reads; at most 256 MB) into fams.  SCM_EIO
 * "families file: cannot read '<path>': <reason>", SCM_EINVAL for a
 * directory, a larger file or one holding a NUL byte, or the parse's
 * error. */
scm_status scm_sweep_families_load(const char *path, scm_sweep_families *fams, scm_error *err);

/* SCM_OK when every family that gives a point has shape (K, M), else
 * SCM_EINVAL naming source, the family and both shapes.  scm_sweep_file_open
 * checks it against its config's model. */
scm_status scm_sweep_families_check_shape(const scm_sweep_families *fams, int K, int M,
                                          const char *source, scm_error *err);

/* ---- merge -------------------------------------------------------------- */

typedef struct {
    cJSON *json;      /* {"command": "merge", "sweep": header less shard,
                         "summary": {... "missing": {count, first (up to 20)}}}; owned */
    scm_sweep_summary *summary; /* of the records merged; owned */
    long runs;        /* runs of the sweep (its header) */
    long records;     /* records read from all files */
    long missing;     /* runs - records */
    long first_missing; /* the lowest missing index, -1 when none */
} scm_sweep_merge_result;

/* Merge the runs files paths[0 .. n-1] (n >= 1) of one sweep: same header
 * but for the shard, distinct shards, every record of its shard with its
 * seed, no run twice, no truncated line, no empty file.  SCM_EINVAL naming
 * the file and line otherwise (an unreadable file too), SCM_ENOMEM.  On
 * success res holds the merged summary; free with
 * scm_sweep_merge_result_free (also after a failure: it is then empty). */
scm_status scm_sweep_merge(const char *const *paths, int n, scm_sweep_merge_result *res,
                           scm_error *err);
void scm_sweep_merge_result_free(scm_sweep_merge_result *res);

#endif
