/* cmd_run.c: `scm run CONFIG.json`: one trajectory of the (Q, R) flow,
 * a short summary on the terminal and a JSON result file (plus a CSV of
 * the trajectory on request), both written atomically.  What is printed
 * and written is built by trajout.h, the outputs checked there first
 * (scm_traj_out_check_paths). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_opts.h"
#include "cli_util.h"
#include "commands.h"
#include "scm/config.h"
#include "scm/output.h"
#include "scm/traj.h"
#include "scm/trajout.h"

#define MAX_SETS 256

int scm_cmd_run(int argc, char **argv)
{
    const char *config = NULL, *out = NULL, *csv = NULL, *sets[MAX_SETS], *unsets[MAX_SETS];
    cli_strs pos = {&config, 0, 1}, set = {sets, 0, MAX_SETS}, unset = {unsets, 0, MAX_SETS};
    int quiet = 0;
    const cli_opt opts[] = {
        CLI_O("-o", CLI_STR, &out, 0, 0, "FILE",
              "result file (default: CONFIG's name with .result.json,\nin the current directory)"),
        CLI_O("--csv", CLI_STR, &csv, 0, 0, "FILE", "also write the trajectory as CSV"),
        CLI_OPT_SET(&set), CLI_OPT_UNSET(&unset), CLI_OPT_QUIET(&quiet, "no summary on the terminal"),
        CLI_OPT_END};
    const cli_cmd cmd = {
        "scm run",
        "usage: scm run CONFIG.json [-o RESULT.json] [--csv TRAJ.csv] [--set key=value]...\n"
        "\n"
        "Integrate the order-parameter flow of the configured model from its\n"
        "initial condition until t_max, eps < eps_stop or a fixed point.\n",
        opts, CLI_EXIT_TEXT("0 the run finished, 1 it failed numerically (the result\nfile says why)"),
        &pos, 0};
    int prc = cli_parse(&cmd, argc, argv);
    if (prc >= 0)
        return prc;
    if (!config)
        return cli_usage_error(cmd.me, "CONFIG.json is required");

    scm_error err;
    scm_error_clear(&err);
    scm_config *c = NULL;
    char *out_alloc = NULL;
    cJSON *res_json = NULL;
    scm_traj_result r;
    memset(&r, 0, sizeof r);
    int rc = 2;

    if (cli_config_load(cmd.me, config, sets, set.n, unsets, unset.n, &c))
        goto done;
    if (!out && !(out = out_alloc = cli_output_name(config, ".result.json"))) {
        fprintf(stderr, "scm run: %s: out of memory\n", config);
        goto done;
    }
    if (scm_traj_out_check_paths(config, out, csv, &err)) {
        fprintf(stderr, "scm run: %s\n", err.msg);
        goto done;
    }
    double t0 = cli_now();
    if (scm_config_run(c, &r, &err)) {
        fprintf(stderr, "scm run: %s: %s\n", config, err.msg);
        goto done;
    }
    double secs = cli_now() - t0;

    res_json = scm_traj_out_json(c, &r);
    if (!res_json) {
        fprintf(stderr, "scm run: out of memory building the result\n");
        rc = 1;
        goto done;
    }
    size_t clen = 0;
    char *ctext = csv ? scm_traj_out_csv(c, &r, &clen) : NULL;
    rc = cli_write_json_with(cmd.me, out, res_json, 0, csv, ctext, clen);
    free(ctext);
    if (rc)
        goto done;
    if (!quiet && cli_print(cmd.me, scm_traj_out_text(c, &r, secs)) == 0)
        printf("wrote      %s%s%s\n", out, csv ? ", " : "", csv ? csv : "");
    if (r.stop == SCM_STOP_FAILED) {
        fprintf(stderr, "scm run: the run failed: %s (result in %s)\n", r.err.msg, out);
        rc = 1;
    } else {
        rc = 0;
    }
done:
    cJSON_Delete(res_json);
    scm_traj_result_free(&r);
    free(out_alloc);
    scm_config_free(c);
    return rc;
}
