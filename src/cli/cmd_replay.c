/*
 * cmd_replay.c — `etsim replay`: run a trace set as a benchmark.
 *
 * The etsim binary does not link MPI.  The replay itself is the MPI program
 * etsim-replay, built next to etsim; this command either
 *   - runs the dry run in-process (--dry-run: virtual clock, no MPI), or
 *   - execs etsim-replay directly when it is already inside mpirun
 *     (`mpirun -np 4 etsim replay PREFIX` works), or
 *   - execs `mpirun -np N ... etsim-replay ARGS` (N from --np, else the
 *     trace set's rank count).
 * See docs/replay.md.
 */
#include "cli/cli.h"

#include "etsim/etcheck.h"
#include "etsim/replay.h"

#include <jansson.h>

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Every option of replay, parsed here for both paths: the dry run uses
 * some, the MPI runner (etsim-replay, which parses them again) the rest, so
 * a typo is caught before mpirun starts. */
static const char *prefix, *csv, *groups_path, *timeline_path;
static double compute_scale = 1, comm_scale = 1, ridge = -1, timeout_s = 600;
static uint64_t n_procs, iterations = 1, warmup;
static int dry_only, json, want_path, quiet, check, deps_choice = 2, np_given, progress;
static const cli_opt_t opts[] = {
    CLI_O_FLAG("--dry-run", NULL, &dry_only,
               "no MPI: a virtual clock advanced by recorded durations; prints\n"
               "per rank the dry-run time, the critical path and the recorded span"),
    CLI_O_NP(&n_procs, &np_given, "MPI ranks (default: the trace set's rank count)"),
    CLI_O_UINT("--iterations", NULL, &iterations, "K", 1, 1000000, "timed iterations (default 1)"),
    CLI_O_UINT("--warmup", NULL, &warmup, "W", 0, 1000000, "untimed iterations first (default 0)"),
    CLI_O_REAL("--compute-scale", NULL, &compute_scale, "X", 1e-9, 1e9,
               "scale compute work (and recorded compute times)"),
    CLI_O_REAL("--comm-scale", NULL, &comm_scale, "Y", 1e-9, 1e9,
               "scale message sizes (and recorded communication times)"),
    CLI_O_REAL("--ridge", NULL, &ridge, "F", 0, 1e9,
               "FLOP/byte ridge point of the roofline (default: measured)"),
    CLI_O_STR("--comm-group", NULL, &groups_path, "FILE", "communicator groups {\"id\": [ranks]}"),
    CLI_O_CHOICE("--deps", NULL, &deps_choice, "D", "data|ctrl|all",
                 "which dependencies order the nodes (default all)"),
    CLI_O_FLAG("--check", NULL, &check, "MPI: verify every received byte"),
    CLI_O_REAL("--timeout", NULL, &timeout_s, "S", 1e-3, 1e7,
               "MPI: give up after S seconds (default 600)"),
    CLI_O_STR("--csv", NULL, &csv, "FILE", "one row per node"),
    CLI_O_STR("--timeline", NULL, &timeline_path, "FILE", "MPI: Perfetto timeline of the run"),
    CLI_O_FLAG("--path", NULL, &want_path, "dry run: list the nodes on the critical path"),
    CLI_O_FLAG("--json", NULL, &json, "the report as JSON"),
    CLI_O_FLAG("--quiet", "-q", &quiet, "MPI: no per-node table"),
    CLI_O_FLAG("--progress", NULL, &progress,
               "MPI: rank 0 says what it does on stderr (the default when stderr is\n"
               "a terminal and --quiet is not given)"),
    CLI_O_END};

static const cli_cmd_t cmd = {
    "replay",
    "[--np N | --dry-run] [options] PREFIX",
    "Replay a Chakra trace set as a benchmark on MPI + OpenBLAS: rank r runs\n"
    "<PREFIX>.<r>.et; compute nodes become sgemm / streaming / busy-loop\n"
    "kernels, communication nodes MPI collectives and messages, in dependency\n"
    "order; prints the fidelity report (measured against recorded times).\n"
    "Also: mpirun -np N etsim replay [options] PREFIX.  mpirun comes from\n"
    "$ETSIM_MPIRUN (default mpirun) with $ETSIM_MPIRUN_ARGS added; as root,\n"
    "--allow-run-as-root is passed.",
    opts,
    1,
    1,
    "PREFIX",
    "exit: 0 ok, 1 verification failed, 2 bad input, 3 internal/MPI error"};

static void print_problem(void *user, int sev, const char *line) {
  (void)user;
  if (sev == ETSIM_CHECK_PROBLEM) fprintf(stderr, "etsim: %s\n", line);
}

/* Before any MPI: a set whose ranks would wait on each other forever (a
 * receive before the send it needs, crossed collectives) is refused with
 * the ranks and nodes named, instead of a silent wait for --timeout.
 * Returns 0, or the exit status.  (ETSIM_ET_DEPS_* and ETSIM_REPLAY_DEPS_*
 * are the same bits.) */
static int precheck(const etsim_et_set_t *set) {
  unsigned deps = deps_choice == 0   ? ETSIM_ET_DEPS_DATA
                  : deps_choice == 1 ? ETSIM_ET_DEPS_CTRL
                                     : ETSIM_ET_DEPS_DATA | ETSIM_ET_DEPS_CTRL;
  long p = etsim_et_check_deadlock(set, deps, print_problem, NULL);
  if (p < 0) {
    etsim_error_t err = {0};
    etsim_error_set(&err, (int)p, "replay: %s", etsim_strerror((int)p));
    return cli_fail(&err);
  }
  return p ? ETSIM_EXIT_USAGE : 0;
}

/* ------------------------------------------------------------ dry run */

static int dry_run(void) {
  unsigned deps = deps_choice == 0   ? ETSIM_REPLAY_DEPS_DATA
                  : deps_choice == 1 ? ETSIM_REPLAY_DEPS_CTRL
                                     : ETSIM_REPLAY_DEPS_DATA | ETSIM_REPLAY_DEPS_CTRL;
  double cs = compute_scale, ms = comm_scale;
  if (ridge < 0) {
    etsim_replay_machine_t m;
    ridge = etsim_replay_calibrate(&m) == 0 ? m.ridge_flop_per_byte : 0;
  }
  etsim_error_t err = {0};
  etsim_et_set_t *set;
  if (etsim_et_set_load(&set, prefix, 0, &err)) return cli_fail(&err);
  int pre = precheck(set);
  if (pre) {
    etsim_et_set_free(set);
    return pre;
  }
  int world = (int)set->n_ranks;
  etsim_replay_groups_t groups = {0, NULL};
  if (groups_path && etsim_replay_groups_load(&groups, groups_path, world, &err)) {
    etsim_et_set_free(set);
    return cli_fail(&err);
  }
  etsim_outfile_t out;
  FILE *cfp = NULL;
  if (csv) {
    if (etsim_outfile_open(&out, csv, &err)) {
      etsim_replay_groups_free(&groups);
      etsim_et_set_free(set);
      return cli_fail(&err);
    }
    cfp = out.fp;
    fprintf(cfp, "rank,id,name,kind,start_us,end_us,recorded_us\n");
  }
  int code = ETSIM_EXIT_OK;
  int64_t max_dry = 0, max_cp = 0, max_span = 0;
  size_t nodes = 0, unmapped = 0;
  if (json) {
    json_t *js = json_string(prefix);
    char *q = js ? json_dumps(js, JSON_ENCODE_ANY) : NULL;
    printf("{\"prefix\": %s, \"ranks\": %d, \"per_rank\": [", q ? q : "null", world);
    free(q);
    json_decref(js);
  } else
    printf("%-6s %8s %8s %14s %14s %14s\n", "rank", "nodes", "unmapped", "dry_run_us",
           "crit_path_us", "recorded_us");
  for (int r = 0; r < world; r++) {
    etsim_replay_opts_t o;
    etsim_replay_opts_init(&o);
    o.rank = r, o.world = world, o.compute_scale = cs, o.comm_scale = ms;
    o.ridge_flop_per_byte = ridge;
    o.groups = groups_path ? &groups : NULL;
    o.deps = deps;
    etsim_replay_plan_t *p;
    if (etsim_replay_plan_build(&p, set->ranks[r], &o, &err)) {
      code = cli_fail(&err);
      break;
    }
    etsim_replay_sched_t s;
    int64_t dry = 0, cp = 0;
    uint32_t *path = want_path ? etsim_calloc(p->n_ops + 1, sizeof *path) : NULL;
    size_t np = 0;
    int rc = want_path && !path ? ETSIM_ENOMEM : 0;
    if (!rc) rc = etsim_replay_sched_init(&s, p);
    if (!rc) rc = etsim_replay_dry_run(&s, &dry, &err);
    if (!rc) rc = etsim_replay_critical_path(p, &cp, path, path ? &np : NULL);
    if (rc) {
      if (!err.msg[0]) etsim_error_set(&err, rc, "%s: %s", prefix, etsim_strerror(rc));
      code = cli_fail(&err);
      etsim_replay_sched_free(&s);
      etsim_replay_plan_free(p);
      etsim_free(path);
      break;
    }
    if (cfp)
      for (size_t i = 0; i < p->n_ops; i++)
        fprintf(cfp, "%d,%llu,%s,%s,%.3f,%.3f,%.3f\n", r, (unsigned long long)p->ops[i].id,
                p->ops[i].name, etsim_replay_kind_name(p->ops[i].kind), (double)s.start_ns[i] / 1e3,
                (double)s.end_ns[i] / 1e3, (double)p->ops[i].rec_ns / 1e3);
    if (json) {
      printf(
          "%s{\"rank\": %d, \"nodes\": %zu, \"unmapped\": %zu, "
          "\"dry_run_us\": %.3f, \"critical_path_us\": %.3f, "
          "\"recorded_span_us\": %.3f",
          r ? ", " : "", r, p->n_ops, p->n_unmapped, (double)dry / 1e3, (double)cp / 1e3,
          (double)p->rec_span_ns / 1e3);
      if (path) {
        printf(", \"critical_path\": [");
        for (size_t k = 0; k < np; k++)
          printf("%s%llu", k ? ", " : "", (unsigned long long)p->ops[path[k]].id);
        printf("]");
      }
      printf("}");
    } else {
      printf("%-6d %8zu %8zu %14.3f %14.3f %14.3f\n", r, p->n_ops, p->n_unmapped, (double)dry / 1e3,
             (double)cp / 1e3, (double)p->rec_span_ns / 1e3);
      for (size_t k = 0; k < np; k++)
        printf("  path %llu %s %.3f us %s\n", (unsigned long long)p->ops[path[k]].id,
               etsim_replay_kind_name(p->ops[path[k]].kind), (double)p->ops[path[k]].rec_ns / 1e3,
               p->ops[path[k]].name);
    }
    etsim_free(path);
    nodes += p->n_ops, unmapped += p->n_unmapped;
    if (dry > max_dry) max_dry = dry;
    if (cp > max_cp) max_cp = cp;
    if (p->rec_span_ns > max_span) max_span = p->rec_span_ns;
    etsim_replay_sched_free(&s);
    etsim_replay_plan_free(p);
  }
  if (code == ETSIM_EXIT_OK) {
    if (json)
      printf(
          "], \"nodes\": %zu, \"unmapped\": %zu, \"dry_run_us\": %.3f, "
          "\"critical_path_us\": %.3f, \"recorded_span_us\": %.3f}\n",
          nodes, unmapped, (double)max_dry / 1e3, (double)max_cp / 1e3, (double)max_span / 1e3);
    else
      printf("%-6s %8zu %8zu %14.3f %14.3f %14.3f\n", "max", nodes, unmapped, (double)max_dry / 1e3,
             (double)max_cp / 1e3, (double)max_span / 1e3);
  } else if (json) {
    printf("]}\n");
  }
  if (cfp) {
    if (code == ETSIM_EXIT_OK) {
      if (etsim_outfile_commit(&out, &err)) code = cli_fail(&err);
    } else {
      etsim_outfile_abort(&out);
    }
  }
  etsim_replay_groups_free(&groups);
  etsim_et_set_free(set);
  return code;
}

/* ------------------------------------------------------------ launch */

int etsim_cmd_replay(int argc, char **argv) {
  int code = cli_parse(&cmd, argc, argv, &prefix, NULL);
  if (code >= 0) return code;
  if (dry_only) return dry_run();
  char runner[PATH_MAX] = "";
  if (!cli_sibling("ETSIM_REPLAY_BIN", "etsim-replay", runner, sizeof runner))
    return cli_usage_error(
        "replay: %s not found or not executable (etsim "
        "built without MPI?  set ETSIM_REPLAY_BIN)",
        runner[0] ? runner : "etsim-replay");
  if (cli_inside_mpirun()) {
    /* Runner arguments: ours minus --np. */
    char **rargs = calloc((size_t)argc + 1, sizeof *rargs);
    if (!rargs) return ETSIM_EXIT_INTERNAL;
    rargs[0] = runner;
    rargs[1 + cli_args_minus_np(rargs + 1, argc - 1, argv + 1)] = NULL;
    execv(runner, rargs);
    fprintf(stderr, "etsim: replay: cannot run %s\n", runner);
    free(rargs);
    return ETSIM_EXIT_INTERNAL;
  }
  {
    /* The set is read here once more than the ranks read it, to refuse a
     * deadlock before launching (it was a silent wait of --timeout). */
    etsim_error_t err = {0};
    etsim_et_set_t *set;
    if (etsim_et_set_load(&set, prefix, 0, &err)) return cli_fail(&err);
    if (!np_given) n_procs = set->n_ranks;
    int pre = n_procs == set->n_ranks ? precheck(set) : 0;
    etsim_et_set_free(set);
    if (pre) return pre;
  }
  /* Under mpirun the ranks' stderr is a pipe: say from here whether to
   * show progress (minutes of silence looked like a hang). */
  int show = progress || (!quiet && isatty(2));
  return cli_exec_mpirun("replay", n_procs, runner, argc - 1, argv + 1,
                         show && !progress ? "--progress" : NULL, show);
}
