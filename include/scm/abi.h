/* abi.h: what bindings in other languages need of the library.
 *
 * The sizes of the public structs, for bindings that mirror them
 * (python/scmode declares a few with ctypes and checks every size at load,
 * so that a struct changed in C cannot be read with a stale layout).
 *
 * And every command's computation as one JSON-in/JSON-out call, so that a
 * binding needs no mirror of an option or result struct: scm_abi_call runs
 * the library entry point the command runs (fptable.h, stabpoint.h,
 * crosscheck.h, sweepfile.h, simulate.h, compare.h), with the command's
 * defaults and option ranges, and returns the object the command writes. */
#ifndef SCM_ABI_H
#define SCM_ABI_H

#include <stddef.h>

#include "scm/status.h"

/* sizeof the public struct named type ("scm_traj_opts", ...); 0 if the
 * name is not one of them. */
size_t scm_abi_sizeof(const char *type);

/* Run command cmd with the arguments args, a JSON object whose keys are
 * the command's long options with '_' for '-' (missing or null: the
 * command's default; values of the option's type and range, lists for
 * repeatable options).  The commands, their keys and the reply (a JSON
 * object; numbers printed exactly, scm_output_print):
 *
 *   "fixed_points"  K, M, k1, activation, starts, seed, sweep_passes, deflate,
 *                   polish_max_K, chain_from, continue_to, grow_from, probes,
 *                   fixed_k1, all, stability, max_residual, threads, ansatz [files],
 *                   seed_from [files]  (scm_fp_table_run)
 *                   -> result (the object of `scm fixed-points -o`), text (its
 *                   table), residual_ok, n_above, solutions, deferred_error
 *   "stability"     point + index | K, M, k1 [+ index | loss], ansatz, activation,
 *                   starts, threads, d, steps, trials, seed, eta, t_max,
 *                   verdict_sigma_max, sigma [numbers], flow, hessian
 *                   -> result (the object of `scm stability -o`)
 *   "crosscheck"    K, M, runs, seed, first, starts, fp_seed, deflate, sweep_passes,
 *                   gd_max_iter, threads, method, activation, ansatz [files]
 *                   -> result (`scm crosscheck -o`), text, unmatched
 *   "sweep"         config (JSON text), config_name, sets [strings], runs, seed,
 *                   threads, shard_i, shard_n, families (file), out (the runs file,
 *                   required), resume, certify (0, 1, 2), loose_grad_stop, dead_q,
 *                   match_rtol, fsync_interval
 *                   -> summary (`scm sweep --summary`), total, resumed
 *   "merge"         files [runs files] -> result (`scm merge -o`)
 *   "simulate"      config (JSON text), config_name, sets, d, seeds, mode, n, eta,
 *                   threads, t_max -> result (PREFIX.json), csv (PREFIX.csv)
 *   "compare"       M, K [integers], runs, config (JSON text; null: the built-in
 *                   one), config_name, sets, prefix (required), families {K: file},
 *                   seed, threads, traces, no_stability, certify
 *                   -> report (PREFIX.json), markdown (PREFIX.md), summaries
 *   "symstab"       ansatz (built-in name) | ansatz_file, K, M, Q, R (arrays of
 *                   arrays), k1 (the instance to try first), activation, d, jacobian
 *                   -> result: the exact spectrum of scm_stab_symmetric (Hessian) or
 *                   scm_stab_symmetric_jacobian, in the first k1 instance of the
 *                   ansatz that holds the point (scm_ansatz_project within sym_tol)
 *   "lintarget"     alpha [numbers in (0, 1)], c [numbers], t, t_max, d, seed, n_out
 *                   -> result (PREFIX.json), phases_csv, traces_csv
 *   "staircase"     K, M, alpha [numbers], d, seed, n_out, starts, t_max, rate_tol,
 *                   min_dur, match_tol, activation, rule, lr_v_ratio, T_diag [M
 *                   numbers], vstar [M numbers], threads -> result (`scm staircase -o`)
 *   "split"         K, M, k1 | index | loss, or point (file) [index]; neuron
 *                   (required), lambda [numbers] | lambda_grid | weights [numbers],
 *                   d, starts, polish, perturb, activation (erf), threads
 *                   -> result (`scm split -o`)
 *   "certify"       K, M, k1 (1) | all, every, or point (file) and index; starts,
 *                   max_radius -> result (`scm certify -o`)
 *
 * Files are written as the command writes them (compare: PREFIX.K*.*;
 * sweep: out).  Nothing is printed.  GSL's error handler must be switched
 * off by the program (gsl_set_error_handler_off(); python/scmode does).
 * On SCM_OK *out is the reply (free it with scm_abi_free); otherwise *out
 * is NULL and err says why, naming the key or file: SCM_EINVAL or SCM_EIO
 * for bad input (the CLI's exit status 2), another status for a failed
 * computation (exit status 1). */
scm_status scm_abi_call(const char *cmd, const char *args, char **out, scm_error *err);

/* Free a reply of scm_abi_call (NULL is allowed). */
void scm_abi_free(char *s);

#endif
