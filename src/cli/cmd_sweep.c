/* cmd_sweep.c: `scm sweep` (random-initialisation sweeps written as JSON
 * lines, resumable and shardable) and `scm merge` (shard files -> one
 * summary with Wilson intervals).  The library (sweep.h) does the runs; this
 * file owns the files, the progress line and the exit codes.  Records go to
 * the runs file in index order, each flushed and fsync'ed as it is written
 * (--fsync-interval: fsync'ed at most every S seconds, each still flushed),
 * so a killed sweep loses at most the line being written, which --resume
 * drops and rewrites. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli_util.h"
#include "commands.h"
#include "scm/config.h"
#include "scm/init.h"
#include "scm/output.h"
#include "scm/stability.h"
#include "scm/sweep.h"
#include "sweep_exec.h"

#define MAX_SETS 256






/* ---- scm sweep --------------------------------------------------------- */

static void sweep_usage(FILE *f)
{
    fprintf(f,
            "usage: scm sweep CONFIG.json --runs N [--seed S] [--threads T] [-o RUNS.jsonl]\n"
            "                 [--resume] [--shard i/n] [--families FP.json] [--summary FILE]\n"
            "                 [--set key=value]... [--loose-grad-stop G] [--dead-q Q]\n"
            "                 [--match-rtol R] [--fsync-interval S] [--certify | --certify-global]\n"
            "                 [--quiet]\n"
            "\n"
            "Run N random initialisations of the configured model (init.type random):\n"
            "run i draws its initial state with a seed derived from the base seed S\n"
            "(default: init.seed of the config) and i, integrates to its end and is\n"
            "classified; one JSON line per run is appended to RUNS.jsonl in index order\n"
            "(default: CONFIG's name with .runs.jsonl).  See docs/sweeps.md.\n"
            "\n"
            "  --runs N           number of runs of the whole sweep (>= 1)\n"
            "  --threads T        worker threads (default 1); output does not depend on T\n"
            "  --resume           continue an existing RUNS.jsonl (a truncated last line\n"
            "                     is dropped and rewritten); without it an existing file\n"
            "                     is an error\n"
            "  --shard i/n        only the runs with index = i mod n (0 <= i < n)\n"
            "  --families FILE    families to match final losses against (an array of\n"
            "                     {\"family\", \"k1\", \"loss\"}, or scm fixed-points output)\n"
            "  --summary FILE     also write the summary JSON (as scm merge would)\n"
            "  --loose-grad-stop G  two-stage stopping: stop at max|dy/dtau| < G when the\n"
            "                     state matches a family with k1 = anti-aligned count,\n"
            "                     else go on to integrator.grad_stop (default 0: off)\n"
            "  --dead-q Q         a student with Q_kk < Q counts as dead (default 1e-3)\n"
            "  --match-rtol R     relative loss tolerance of a family match (default 1e-8)\n"
            "  --fsync-interval S fsync the runs file at most every S seconds (default 0:\n"
            "                     after every record); each record is still flushed, so a\n"
            "                     killed sweep loses nothing more, a crashed machine at\n"
            "                     most S seconds of records (--resume redoes them)\n"
            "  --certify          early stop: end a run once it is certified to converge to\n"
            "                     a listed strict minimum, or its loss is below 1e-3 times\n"
            "                     the lowest positive family loss (docs/sweeps.md)\n"
            "  --certify-global   the early stop by the loss rule only (both rules rest\n"
            "                     on nothing more than the classification; the basin\n"
            "                     radii, proved from a Lipschitz bound of the Hessian,\n"
            "                     are small and their certificates cost time)\n"
            "  -q, --quiet        no progress line and no final summary on stderr\n"
            "\n"
            "exit status: 0 done, 1 an I/O failure during the sweep, 2 bad input.\n");
}

typedef struct {
    FILE *f;
    const char *path;
    scm_sweep_summary *sum;
    long total, done0, done;
    int progress;
    double t0, last;
    double sync_every, last_sync; /* --fsync-interval; time of the last fsync */
    int io_failed;
    char io_msg[512];
} emit_ctx;

static void progress_line(emit_ctx *e, int final)
{
    double t = cli_now();
    if (!final && t - e->last < 0.2)
        return;
    e->last = t;
    long new_runs = e->done - e->done0;
    double rate = t > e->t0 ? (double)new_runs / (t - e->t0) : 0.0;
    double eta = rate > 0.0 ? (double)(e->total - e->done) / rate : 0.0;
    char brief[200];
    scm_sweep_summary_brief(e->sum, brief, sizeof brief);
    fprintf(stderr, "\r\033[K%ld/%ld  %.2f runs/s  ETA %.0f s  %s%s", e->done, e->total, rate,
            eta, brief, final ? "\n" : "");
    fflush(stderr);
}

static int emit_record(const scm_sweep_record *r, void *user)
{
    emit_ctx *e = user;
    char *line = scm_sweep_record_json(r);
    if (!line) {
        snprintf(e->io_msg, sizeof e->io_msg, "out of memory");
        e->io_failed = 1;
        return 1;
    }
    int ok = fputs(line, e->f) >= 0 && fputc('\n', e->f) != EOF && fflush(e->f) == 0;
    if (ok && e->sync_every > 0.0) {
        double t = cli_now();
        if (t - e->last_sync >= e->sync_every) {
            ok = fsync(fileno(e->f)) == 0;
            e->last_sync = t;
        }
    } else if (ok) {
        ok = fsync(fileno(e->f)) == 0;
    }
    free(line);
    if (!ok) {
        snprintf(e->io_msg, sizeof e->io_msg, "cannot write '%s': %s", e->path, strerror(errno));
        e->io_failed = 1;
        return 1;
    }
    if (scm_sweep_summary_add(e->sum, r)) {
        snprintf(e->io_msg, sizeof e->io_msg, "out of memory");
        e->io_failed = 1;
        return 1;
    }
    e->done++;
    if (e->progress)
        progress_line(e, 0);
    return 0;
}

/* Validate an existing runs file for --resume: the header must equal
 * header, the records must be the first *ndone of idx with the right seeds.
 * A last line without its newline (a kill mid-write) is dropped; *keep is
 * the length of the valid prefix (0: rewrite from scratch, the header itself
 * was cut).  Records found are added to sum.  Returns 0 or an exit code 2
 * with a message printed. */
static int resume_scan(const char *path, const char *header, uint64_t base, const long *idx,
                       long nidx, scm_sweep_summary *sum, long *ndone, off_t *keep)
{
    size_t len;
    char *text = cli_read_all(path, &len);
    *ndone = 0;
    *keep = 0;
    if (!text) {
        fprintf(stderr, "scm sweep: cannot read '%s' to resume: %s\n", path, strerror(errno));
        return 2;
    }
    int rc = 0;
    char *p = text, *end = text + len;
    long lineno = 0;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) {
            /* Cut by a kill: drop it. */
            break;
        }
        *nl = '\0';
        lineno++;
        if (lineno == 1) {
            if (strcmp(p, header) != 0) {
                fprintf(stderr,
                        "scm sweep: '%s' was written by a different sweep (its header "
                        "differs: config, seed, runs, shard or families); not resuming\n",
                        path);
                rc = 2;
                goto out;
            }
        } else {
            scm_sweep_record r;
            scm_error err;
            if (scm_sweep_record_parse(p, &r, &err)) {
                fprintf(stderr, "scm sweep: '%s' line %ld: %s\n", path, lineno, err.msg);
                rc = 2;
                goto out;
            }
            if (*ndone >= nidx || r.index != idx[*ndone]) {
                fprintf(stderr, "scm sweep: '%s' line %ld: run index %ld, expected %ld\n", path,
                        lineno, r.index, *ndone < nidx ? idx[*ndone] : -1L);
                rc = 2;
                goto out;
            }
            if (r.seed != scm_sweep_seed(base, r.index)) {
                fprintf(stderr, "scm sweep: '%s' line %ld: seed %lu is not that of run %ld\n",
                        path, lineno, r.seed, r.index);
                rc = 2;
                goto out;
            }
            if (scm_sweep_summary_add(sum, &r)) {
                fprintf(stderr, "scm sweep: out of memory\n");
                rc = 2;
                goto out;
            }
            (*ndone)++;
        }
        *keep = (off_t)(nl + 1 - text);
        p = nl + 1;
    }
out:
    free(text);
    return rc;
}

static void print_final_summary(const scm_sweep_summary *sum, long total, long new_runs,
                                double secs, int width)
{
    cJSON *js = scm_sweep_summary_json(sum);
    if (!js)
        return;
    const cJSON *done = cJSON_GetObjectItemCaseSensitive(js, "done");
    const cJSON *conv = cJSON_GetObjectItemCaseSensitive(js, "converged");
    fprintf(stderr, "sweep      %.0f of %ld runs done, %.0f converged\n", done->valuedouble,
            total, conv->valuedouble);
    const cJSON *cl = cJSON_GetObjectItemCaseSensitive(js, "classes");
    const cJSON *c;
    cJSON_ArrayForEach(c, cl)
    {
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(c, "wilson95");
        fprintf(stderr, "  %-28s %6.0f  %.4f  [%.4f, %.4f]\n",
                cJSON_GetObjectItemCaseSensitive(c, "class")->valuestring,
                cJSON_GetObjectItemCaseSensitive(c, "count")->valuedouble,
                cJSON_GetObjectItemCaseSensitive(c, "fraction")->valuedouble,
                cJSON_GetArrayItem(w, 0)->valuedouble, cJSON_GetArrayItem(w, 1)->valuedouble);
    }
    fprintf(stderr, "timing     %ld runs in %.3f s on %d %s%s: %.3f runs/s, %.4f s per run\n",
            new_runs, secs, width, cli_sweep_exec_unit(), width == 1 ? "" : "s",
            secs > 0 ? (double)new_runs / secs : 0.0,
            new_runs > 0 ? secs * width / (double)new_runs : 0.0);
    cJSON_Delete(js);
}

int scm_cmd_sweep(int argc, char **argv)
{
    const char *config = NULL, *out = NULL, *fam_path = NULL, *sum_path = NULL;
    const char *sets[MAX_SETS];
    int nsets = 0, quiet = 0, resume = 0, have_seed = 0;
    long runs = -1, threads = 1, shard_i = 0, shard_n = 1;
    double seedd = 0, sync_every = 0.0;
    scm_sweep_opts so;
    scm_sweep_opts_default(&so);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            sweep_usage(stdout);
            return 0;
        } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            quiet = 1;
        } else if (strcmp(a, "--resume") == 0) {
            resume = 1;
        } else if (strcmp(a, "--certify") == 0) {
            so.certify = 1;
        } else if (strcmp(a, "--certify-global") == 0) {
            so.certify = 2;
        } else if (strcmp(a, "-o") == 0 || strcmp(a, "--runs") == 0 || strcmp(a, "--seed") == 0 ||
                   strcmp(a, "--threads") == 0 || strcmp(a, "--shard") == 0 ||
                   strcmp(a, "--families") == 0 || strcmp(a, "--summary") == 0 ||
                   strcmp(a, "--set") == 0 || strcmp(a, "--loose-grad-stop") == 0 ||
                   strcmp(a, "--dead-q") == 0 || strcmp(a, "--match-rtol") == 0 ||
                   strcmp(a, "--fsync-interval") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "scm sweep: option %s needs an argument\n", a);
                return 2;
            }
            const char *v = argv[++i];
            if (strcmp(a, "-o") == 0) {
                out = v;
            } else if (strcmp(a, "--runs") == 0) {
                if (!cli_parse_long(v, 1, 1000000000L, &runs)) {
                    fprintf(stderr, "scm sweep: --runs must be an integer in [1, 1e9], got '%s'\n", v);
                    return 2;
                }
            } else if (strcmp(a, "--seed") == 0) {
                long s;
                if (!cli_parse_long(v, 0, 9007199254740991L, &s)) {
                    fprintf(stderr, "scm sweep: --seed must be an integer in [0, 2^53), got '%s'\n", v);
                    return 2;
                }
                seedd = (double)s;
                have_seed = 1;
            } else if (strcmp(a, "--threads") == 0) {
                if (!cli_parse_long(v, 1, 1024, &threads)) {
                    fprintf(stderr, "scm sweep: --threads must be an integer in [1, 1024], got '%s'\n", v);
                    return 2;
                }
            } else if (strcmp(a, "--shard") == 0) {
                char buf[64];
                snprintf(buf, sizeof buf, "%s", v);
                char *slash = strchr(buf, '/');
                if (slash)
                    *slash = '\0';
                if (!slash || !cli_parse_long(buf, 0, 1000000, &shard_i) ||
                    !cli_parse_long(slash + 1, 1, 1000000, &shard_n) || shard_i >= shard_n) {
                    fprintf(stderr, "scm sweep: --shard must be i/n with 0 <= i < n, got '%s'\n", v);
                    return 2;
                }
            } else if (strcmp(a, "--families") == 0) {
                fam_path = v;
            } else if (strcmp(a, "--summary") == 0) {
                sum_path = v;
            } else if (strcmp(a, "--set") == 0) {
                if (nsets >= MAX_SETS) {
                    fprintf(stderr, "scm sweep: more than %d --set options\n", MAX_SETS);
                    return 2;
                }
                sets[nsets++] = v;
            } else {
                double x;
                if (!cli_parse_double(v, &x) || x < 0) {
                    fprintf(stderr, "scm sweep: %s must be a number >= 0, got '%s'\n", a, v);
                    return 2;
                }
                if (strcmp(a, "--fsync-interval") == 0)
                    sync_every = x;
                else if (strcmp(a, "--loose-grad-stop") == 0)
                    so.loose_grad_stop = x;
                else if (strcmp(a, "--dead-q") == 0)
                    so.dead_q = x;
                else
                    so.match_rtol = x;
            }
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "scm sweep: unknown option '%s' (see scm sweep --help)\n", a);
            return 2;
        } else if (!config) {
            config = a;
        } else {
            fprintf(stderr, "scm sweep: more than one config file ('%s' and '%s')\n", config, a);
            return 2;
        }
    }
    if (!config) {
        sweep_usage(stderr);
        return 2;
    }
    if (runs < 0) {
        fprintf(stderr, "scm sweep: --runs N is required\n");
        return 2;
    }
    char why[256];
    if (cli_sweep_exec_check((int)threads, why, sizeof why) != 0) {
        fprintf(stderr, "scm sweep: %s\n", why);
        return 2;
    }

    scm_error err;
    scm_error_clear(&err);
    scm_config *c = NULL;
    scm_sweep_families fams = {0, NULL, NULL};
    scm_sweep_summary *sum = NULL;
    char *header = NULL, *out_alloc = NULL;
    long *idx = NULL;
    FILE *f = NULL;
    int rc = 2;

    if (scm_sweep_opts_check(&so, &err)) {
        fprintf(stderr, "scm sweep: %s\n", err.msg);
        goto done;
    }
    if (scm_config_load(config, sets, nsets, &c, &err)) {
        fprintf(stderr, "scm sweep: %s\n", err.msg);
        goto done;
    }
    if (c->init != SCM_INIT_RANDOM) {
        fprintf(stderr, "scm sweep: %s: a sweep needs init.type = \"random\"\n", config);
        goto done;
    }
    uint64_t base = have_seed ? (uint64_t)seedd : (uint64_t)c->seed;
    if (fam_path && cli_load_families(fam_path, &fams, &err)) {
        fprintf(stderr, "scm sweep: %s\n", err.msg);
        goto done;
    }
    if (!out)
        out = out_alloc = cli_output_name(config, ".runs.jsonl");
    header = scm_sweep_header_json_opts(c, base, runs, (int)shard_i, (int)shard_n, &fams, &so);
    long nidx = shard_i < runs ? (runs - 1 - shard_i) / shard_n + 1 : 0;
    idx = malloc(sizeof *idx * (size_t)(nidx > 0 ? nidx : 1));
    sum = scm_sweep_summary_alloc(nidx);
    if (!out || !header || !idx || !sum) {
        fprintf(stderr, "scm sweep: out of memory\n");
        goto done;
    }
    for (long j = 0; j < nidx; j++)
        idx[j] = shard_i + j * shard_n;

    long ndone = 0;
    off_t keep = 0;
    struct stat sb;
    int exists = stat(out, &sb) == 0;
    if (exists && !resume) {
        fprintf(stderr, "scm sweep: '%s' exists: continue it with --resume, or remove it\n", out);
        goto done;
    }
    if (exists && (rc = resume_scan(out, header, base, idx, nidx, sum, &ndone, &keep)) != 0)
        goto done;
    rc = 2;
    if (exists && truncate(out, keep) != 0) {
        fprintf(stderr, "scm sweep: cannot truncate '%s': %s\n", out, strerror(errno));
        rc = 1;
        goto done;
    }
    f = fopen(out, "ab");
    if (!f) {
        fprintf(stderr, "scm sweep: cannot open '%s': %s\n", out, strerror(errno));
        rc = 1;
        goto done;
    }
    if (keep == 0 && (fputs(header, f) < 0 || fputc('\n', f) == EOF || fflush(f) != 0 ||
                      fsync(fileno(f)) != 0)) {
        fprintf(stderr, "scm sweep: cannot write '%s': %s\n", out, strerror(errno));
        rc = 1;
        goto done;
    }

    emit_ctx e;
    memset(&e, 0, sizeof e);
    e.f = f;
    e.path = out;
    e.sum = sum;
    e.total = nidx;
    e.done0 = e.done = ndone;
    e.progress = !quiet && isatty(2);
    e.t0 = e.last = e.last_sync = cli_now();
    e.sync_every = sync_every;
    if (!quiet && ndone > 0)
        fprintf(stderr, "scm sweep: resuming '%s' after %ld of %ld runs\n", out, ndone, nidx);
    scm_status st = cli_sweep_exec(c, base, idx + ndone, nidx - ndone, (int)threads, &fams, &so,
                                   emit_record, &e, &err);
    double secs = cli_now() - e.t0;
    if (e.progress)
        progress_line(&e, 1);
    if (e.io_failed) {
        fprintf(stderr, "scm sweep: %s\n", e.io_msg);
        rc = 1;
        goto done;
    }
    if (sync_every > 0.0 && fsync(fileno(f)) != 0 && !st) { /* the records since the last */
        fprintf(stderr, "scm sweep: cannot write '%s': %s\n", out, strerror(errno));
        rc = 1;
        goto done;
    }
    if (st) {
        fprintf(stderr, "scm sweep: %s\n", err.msg);
        rc = st == SCM_ENOMEM ? 1 : 2;
        goto done;
    }
    if (fclose(f) != 0) {
        f = NULL;
        fprintf(stderr, "scm sweep: cannot close '%s': %s\n", out, strerror(errno));
        rc = 1;
        goto done;
    }
    f = NULL;
    rc = 0;
    if (sum_path) {
        cJSON *js = scm_sweep_summary_json(sum);
        if (!js || scm_output_write_json(sum_path, js, 0, &err)) {
            fprintf(stderr, "scm sweep: %s\n", js ? err.msg : "out of memory");
            rc = 1;
        }
        cJSON_Delete(js);
    }
    if (!quiet)
        print_final_summary(sum, nidx, nidx - ndone, secs, cli_sweep_exec_width((int)threads));
done:
    if (f)
        fclose(f);
    free(idx);
    free(header);
    free(out_alloc);
    scm_sweep_summary_free(sum);
    scm_sweep_families_free(&fams);
    scm_config_free(c);
    return rc;
}

/* ---- scm merge --------------------------------------------------------- */

static void merge_usage(FILE *f)
{
    fprintf(f,
            "usage: scm merge RUNS.jsonl... -o SUMMARY.json [--quiet]\n"
            "\n"
            "Combine the runs files of one sweep (its shards, or a single file) into a\n"
            "summary: counts and fractions per class with 95%% Wilson intervals, runs by\n"
            "anti-aligned count, distinct unmatched losses, the loss histogram, solver\n"
            "work.  The files must come from the same sweep (config, seed, runs and\n"
            "families); a run present twice is an error; missing runs are reported.\n"
            "\n"
            "exit status: 0 merged, 1 the summary could not be written, 2 bad input.\n");
}

typedef struct {
    scm_sweep_record *r;
    const char *file;
} merge_rec;

static int merge_cmp(const void *a, const void *b)
{
    const merge_rec *x = a, *y = b;
    return (x->r->index > y->r->index) - (x->r->index < y->r->index);
}

int scm_cmd_merge(int argc, char **argv)
{
    const char *out = NULL;
    const char **files = calloc((size_t)argc, sizeof *files);
    int nfiles = 0, quiet = 0;
    if (!files) {
        fprintf(stderr, "scm merge: out of memory\n");
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            merge_usage(stdout);
            free(files);
            return 0;
        } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            quiet = 1;
        } else if (strcmp(a, "-o") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "scm merge: option -o needs an argument\n");
                free(files);
                return 2;
            }
            out = argv[++i];
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "scm merge: unknown option '%s' (see scm merge --help)\n", a);
            free(files);
            return 2;
        } else {
            files[nfiles++] = a;
        }
    }
    if (nfiles == 0 || !out) {
        merge_usage(stderr);
        free(files);
        return 2;
    }

    int rc = 2;
    cJSON *ref = NULL, *summary = NULL;
    char *ref_text = NULL;
    long runs = 0, nrec = 0, caprec = 0;
    uint64_t base = 0;
    merge_rec *recs = NULL;
    int *shard_i = calloc((size_t)nfiles, sizeof *shard_i);
    int *shard_n = calloc((size_t)nfiles, sizeof *shard_n);
    scm_sweep_summary *sum = NULL;
    if (!shard_i || !shard_n)
        goto nomem;

    for (int fi = 0; fi < nfiles; fi++) {
        size_t len;
        char *text = cli_read_all(files[fi], &len);
        if (!text) {
            fprintf(stderr, "scm merge: cannot read '%s': %s\n", files[fi], strerror(errno));
            goto done;
        }
        char *p = text, *end = text + len;
        long lineno = 0;
        int bad = 0;
        while (p < end && !bad) {
            char *nl = memchr(p, '\n', (size_t)(end - p));
            lineno++;
            if (!nl) {
                fprintf(stderr,
                        "scm merge: '%s' line %ld: truncated line (no newline; a killed sweep? "
                        "finish it with scm sweep --resume)\n",
                        files[fi], lineno);
                bad = 1;
                break;
            }
            *nl = '\0';
            if (lineno == 1) {
                cJSON *h = cJSON_Parse(p);
                const cJSON *tag = cJSON_GetObjectItemCaseSensitive(h, "scm_sweep");
                const cJSON *sh = cJSON_GetObjectItemCaseSensitive(h, "shard");
                const cJSON *rn = cJSON_GetObjectItemCaseSensitive(h, "runs");
                const cJSON *sd = cJSON_GetObjectItemCaseSensitive(h, "seed");
                if (!cJSON_IsObject(h) || !cJSON_IsNumber(tag) || tag->valuedouble != 1 ||
                    !cJSON_IsArray(sh) || cJSON_GetArraySize(sh) != 2 || !cJSON_IsNumber(rn) ||
                    !cJSON_IsNumber(sd)) {
                    fprintf(stderr, "scm merge: '%s' line 1: not a scm sweep header\n", files[fi]);
                    cJSON_Delete(h);
                    bad = 1;
                    break;
                }
                shard_i[fi] = (int)cJSON_GetArrayItem(sh, 0)->valuedouble;
                shard_n[fi] = (int)cJSON_GetArrayItem(sh, 1)->valuedouble;
                cJSON_DeleteItemFromObjectCaseSensitive(h, "shard");
                char *ht = scm_output_print(h, 1);
                if (!ht) {
                    cJSON_Delete(h);
                    free(text);
                    goto nomem;
                }
                if (!ref) {
                    ref = h;
                    ref_text = ht;
                    runs = (long)rn->valuedouble;
                    base = (uint64_t)sd->valuedouble;
                } else {
                    int same = strcmp(ht, ref_text) == 0;
                    free(ht);
                    cJSON_Delete(h);
                    if (!same) {
                        fprintf(stderr,
                                "scm merge: '%s' is from a different sweep than '%s' (config, "
                                "seed, runs or families differ)\n",
                                files[fi], files[0]);
                        bad = 1;
                        break;
                    }
                }
                for (int fj = 0; fj < fi; fj++)
                    if (shard_n[fj] == shard_n[fi] && shard_i[fj] == shard_i[fi]) {
                        fprintf(stderr, "scm merge: '%s' and '%s' are the same shard %d/%d\n",
                                files[fj], files[fi], shard_i[fi], shard_n[fi]);
                        bad = 1;
                    }
            } else {
                if (nrec == caprec) {
                    long cap = caprec ? 2 * caprec : 1024;
                    merge_rec *nr = realloc(recs, sizeof *nr * (size_t)cap);
                    if (!nr) {
                        free(text);
                        goto nomem;
                    }
                    recs = nr;
                    caprec = cap;
                }
                scm_sweep_record *r = malloc(sizeof *r);
                if (!r) {
                    free(text);
                    goto nomem;
                }
                scm_error err;
                if (scm_sweep_record_parse(p, r, &err)) {
                    fprintf(stderr, "scm merge: '%s' line %ld: %s\n", files[fi], lineno, err.msg);
                    free(r);
                    bad = 1;
                    break;
                }
                if (r->index >= runs || r->index % shard_n[fi] != shard_i[fi] ||
                    r->seed != scm_sweep_seed(base, r->index)) {
                    fprintf(stderr,
                            "scm merge: '%s' line %ld: run %ld does not belong to this sweep "
                            "(runs %ld, shard %d/%d, or its seed)\n",
                            files[fi], lineno, r->index, runs, shard_i[fi], shard_n[fi]);
                    free(r);
                    bad = 1;
                    break;
                }
                recs[nrec].r = r;
                recs[nrec].file = files[fi];
                nrec++;
            }
            p = nl + 1;
        }
        if (!bad && lineno == 0) {
            fprintf(stderr, "scm merge: '%s' is empty\n", files[fi]);
            bad = 1;
        }
        free(text);
        if (bad)
            goto done;
    }
    qsort(recs, (size_t)nrec, sizeof *recs, merge_cmp);
    for (long j = 1; j < nrec; j++)
        if (recs[j].r->index == recs[j - 1].r->index) {
            fprintf(stderr, "scm merge: run %ld appears twice ('%s' and '%s')\n",
                    recs[j].r->index, recs[j - 1].file, recs[j].file);
            goto done;
        }
    sum = scm_sweep_summary_alloc(runs);
    if (!sum)
        goto nomem;
    for (long j = 0; j < nrec; j++)
        if (scm_sweep_summary_add(sum, recs[j].r))
            goto nomem;
    summary = cJSON_CreateObject();
    if (!summary)
        goto nomem;
    cJSON_AddStringToObject(summary, "command", "merge");
    cJSON_AddItemToObject(summary, "sweep", ref);
    ref = NULL;
    cJSON *sj = scm_sweep_summary_json(sum);
    if (!sj)
        goto nomem;
    cJSON_AddItemToObject(summary, "summary", sj);
    /* Missing runs: indices in [0, runs) not present. */
    cJSON *mi = cJSON_AddObjectToObject(sj, "missing");
    cJSON_AddNumberToObject(mi, "count", (double)(runs - nrec));
    cJSON *first = cJSON_AddArrayToObject(mi, "first");
    long j = 0, listed = 0;
    for (long i = 0; i < runs && listed < 20; i++) {
        while (j < nrec && recs[j].r->index < i)
            j++;
        if (j >= nrec || recs[j].r->index != i) {
            cJSON_AddItemToArray(first, cJSON_CreateNumber((double)i));
            listed++;
        }
    }
    scm_error err;
    if (scm_output_write_json(out, summary, 0, &err)) {
        fprintf(stderr, "scm merge: %s\n", err.msg);
        rc = 1;
        goto done;
    }
    if (runs - nrec > 0)
        fprintf(stderr, "scm merge: %ld of %ld runs missing (first: run %.0f)\n", runs - nrec,
                runs, cJSON_GetArrayItem(first, 0)->valuedouble);
    if (!quiet) {
        char brief[400];
        scm_sweep_summary_brief(sum, brief, sizeof brief);
        fprintf(stderr, "merged     %ld runs from %d file%s: %s\nwrote      %s\n", nrec, nfiles,
                nfiles == 1 ? "" : "s", brief, out);
    }
    rc = 0;
    goto done;
nomem:
    fprintf(stderr, "scm merge: out of memory\n");
    rc = 2;
done:
    for (long k = 0; k < nrec; k++)
        free(recs[k].r);
    free(recs);
    cJSON_Delete(ref);
    cJSON_Delete(summary);
    free(ref_text);
    free(shard_i);
    free(shard_n);
    free(files);
    scm_sweep_summary_free(sum);
    return rc;
}
