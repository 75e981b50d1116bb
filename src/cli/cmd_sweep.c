/*
 * cmd_sweep.c — `etsim sweep SPEC -o DIR`: run every point of a sweep spec
 * (docs/sweep.md).
 *
 * Locally the points run on one executor process per CPU.  Under mpirun
 * (`mpirun -np N etsim sweep SPEC`) every rank execs etsim-sweep, the MPI
 * program built next to etsim (etsim itself does not link MPI), which
 * spreads the points over the ranks; `--np N` starts that mpirun itself.
 * `--serve` is the executor those ranks start: it reads point indices on
 * stdin and answers with rows on stdout.
 */
#include "cli/cli.h"

#include "etsim/sweep.h"

#include <jansson.h>

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *spec_path, *out_dir = "results";
static uint64_t jobs, limit, n_procs;
static double timeout_s;
static int restart, retry_failed, keep_traces, quiet, force_progress, serve, list, json_out,
    np_given;

static const cli_opt_t opts[] = {
    CLI_O_STR("--output", "-o", &out_dir, "DIR",
              "results folder (default results): points.csv, points.jsonl,\n"
              "sweep.json, times.csv; rerunning into it resumes"),
    CLI_O_UINT("--jobs", "-j", &jobs, "N", 1, 4096,
               "executors on this machine (default: every CPU it may use)"),
    CLI_O_NP(&n_procs, &np_given, "run under 'mpirun -np N' (the same as starting etsim with it)"),
    CLI_O_REAL("--timeout", NULL, &timeout_s, "S", 0, 1e9,
               "give up on a point after S seconds (recorded as failed;\n"
               "default: the spec's options.timeout, else none)"),
    CLI_O_FLAG("--restart", NULL, &restart, "discard the results already in DIR"),
    CLI_O_FLAG("--retry-failed", NULL, &retry_failed, "run again the points that failed before"),
    CLI_O_FLAG("--keep-traces", NULL, &keep_traces,
               "keep every generated trace set in DIR/traces (shared by\n"
               "executors and reruns; default: each executor keeps its last two)"),
    CLI_O_UINT("--limit", NULL, &limit, "N", 1, 1e12,
               "run at most N of the points left now (resume later)"),
    CLI_O_FLAG("--list", NULL, &list, "print the points (id and values) and exit"),
    CLI_O_FLAG("--json", NULL, &json_out, "print the summary as JSON"),
    CLI_O_FLAG("--progress", NULL, &force_progress,
               "show progress even when stderr is not a terminal (mpirun)"),
    CLI_O_FLAG("--quiet", "-q", &quiet, "no progress"),
    CLI_O_FLAG("--serve", NULL, &serve, NULL),
    CLI_O_END};

static const cli_cmd_t cmd = {
    "sweep",
    "SPEC.yaml [-o DIR] [-j N] [options]",
    "Run every point of a sweep spec: a base run (a generator command or a\n"
    "workload, with network, system and memory files; or a netsim scenario)\n"
    "and axes over their keys (grid, list, zip, random).  One row per point\n"
    "streams to DIR/points.csv and DIR/points.jsonl (every axis value and the\n"
    "summary figures, or the point's error); a rerun skips finished points.\n"
    "Across hosts: mpirun -np N etsim sweep SPEC.yaml -o DIR (Open MPI; rank 0\n"
    "hands out points as ranks free up).  See docs/sweep.md.",
    opts,
    1,
    1,
    "SPEC",
    "exit: 0 the sweep ran (failed points are rows, not errors), 2 bad spec or\n"
    "input, 3 internal error"};

static void progress(void *user, const char *line, int final) {
  (void)user;
  fprintf(stderr, "\r%s\033[K%s", line, final ? "\n" : "");
  fflush(stderr);
}

/* Progress on stderr: on a terminal or with ETSIM_PROGRESS=1, as every
 * long command (cli_progress_wanted), or with --progress; never with
 * --quiet. */
static int show_progress(void) {
  return (force_progress && !quiet) || cli_progress_wanted(quiet, NULL);
}

/* Under mpirun: become etsim-sweep with the options spelled out. */
static int exec_mpi_worker(const char *self) {
  char runner[PATH_MAX];
  if (!cli_sibling("ETSIM_SWEEP_BIN", "etsim-sweep", runner, sizeof runner))
    return cli_usage_error(
        "sweep: %s not found or not executable (etsim built without MPI? set "
        "ETSIM_SWEEP_BIN)",
        runner[0] ? runner : "etsim-sweep");
  static char t[64], r1[8], r2[8], k[8], p[8], l[32];
  snprintf(t, sizeof t, "%.17g", timeout_s);
  snprintf(r1, sizeof r1, "%d", restart);
  snprintf(r2, sizeof r2, "%d", retry_failed);
  snprintf(k, sizeof k, "%d", keep_traces);
  snprintf(p, sizeof p, "%d", show_progress());
  snprintf(l, sizeof l, "%llu", (unsigned long long)limit);
  char *argv[] = {runner,
                  "--spec",
                  (char *)spec_path,
                  "--out",
                  (char *)out_dir,
                  "--etsim",
                  (char *)self,
                  "--timeout",
                  t,
                  "--restart",
                  r1,
                  "--retry-failed",
                  r2,
                  "--keep-traces",
                  k,
                  "--progress",
                  p,
                  "--limit",
                  l,
                  NULL};
  fflush(NULL);
  execv(runner, argv);
  fprintf(stderr, "etsim: sweep: cannot run %s\n", runner);
  return ETSIM_EXIT_INTERNAL;
}

static int list_points(const etsim_sweep_spec_t *s) {
  size_t nc = etsim_sweep_n_columns(s);
  printf("point,id");
  for (size_t k = 0; k < nc; k++) printf(",%s", etsim_sweep_column(s, k));
  printf("\n");
  for (size_t p = 0; p < etsim_sweep_n_points(s); p++) {
    printf("%zu,%s", p, etsim_sweep_point_id(s, p));
    for (size_t k = 0; k < nc; k++) {
      const char *v = etsim_sweep_value(s, p, k);
      int q = strchr(v, ',') != NULL;
      printf(q ? ",'%s'" : ",%s", v);
    }
    printf("\n");
  }
  fprintf(stderr, "%s: %zu points over %zu trace set(s)\n", spec_path, etsim_sweep_n_points(s),
          etsim_sweep_n_groups(s));
  return ETSIM_EXIT_OK;
}

int etsim_cmd_sweep(int argc, char **argv) {
  int code = cli_parse(&cmd, argc, argv, &spec_path, NULL);
  if (code >= 0) return code;
  char self[PATH_MAX];
  int have_self = cli_self_path(self, sizeof self) == 0;
  if (!have_self) snprintf(self, sizeof self, "etsim");
  if (np_given && !cli_inside_mpirun() && !serve) {
    /* the same command line, minus --np, on every rank */
    if (!have_self) return cli_usage_error("sweep: cannot find the etsim program");
    return cli_exec_mpirun("sweep", n_procs, self, argc, argv, NULL, 0);
  }
  if (cli_inside_mpirun() && !serve && !list) return exec_mpi_worker(self);
  etsim_error_t err = {0};
  etsim_sweep_spec_t *spec;
  if (etsim_sweep_spec_load(spec_path, &spec, &err)) return cli_fail(&err);
  size_t dl = strlen(out_dir) + 16;
  char *work = malloc(dl), *traces = malloc(dl);
  if (!work || !traces) {
    free(work);
    free(traces);
    etsim_sweep_spec_free(spec);
    return ETSIM_EXIT_INTERNAL;
  }
  snprintf(work, dl, "%s/.work", out_dir);
  snprintf(traces, dl, "%s/traces", out_dir);
  int keep = keep_traces || etsim_sweep_spec_keep_traces(spec);
  if (list) {
    code = list_points(spec);
  } else if (serve) {
    /* an executor for an MPI rank: quiet on stderr, rows on stdout */
    etsim_sweep_exec_opts_t xo = {work, keep ? traces : NULL, self};
    if (etsim_sweep_serve(spec, &xo, 0, 1, &err)) code = cli_fail(&err);
    else code = ETSIM_EXIT_OK;
  } else {
    etsim_sweep_run_opts_t o = {
        .sched = {restart, retry_failed, (size_t)limit},
        .jobs = (int)jobs,
        .timeout_s = timeout_s,
        .etsim_exe = self,
        .keep_traces = keep,
        .progress = show_progress() ? progress : NULL,
    };
    etsim_sweep_summary_t sum;
    if (etsim_sweep_run_local(spec, out_dir, &o, &sum, &err)) {
      code = cli_fail(&err);
    } else if (json_out) {
      printf(
          "{\"results\": \"%s\", \"points\": %zu, \"ran\": %zu, \"resumed\": %zu, "
          "\"ok\": %zu, \"failed\": %zu, \"cpu_s\": %.3f}\n",
          out_dir, sum.points, sum.ran, sum.resumed, sum.ok, sum.failed, sum.cpu_s);
      code = ETSIM_EXIT_OK;
    } else {
      printf("%s: %zu points: %zu run now, %zu from before, %zu failed, %zu left; %.1f CPU s\n",
             out_dir, sum.points, sum.ran, sum.resumed, sum.failed,
             sum.points - sum.ok - sum.failed, sum.cpu_s);
      code = ETSIM_EXIT_OK;
    }
  }
  free(work);
  free(traces);
  etsim_sweep_spec_free(spec);
  return code;
}
