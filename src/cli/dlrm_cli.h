/*
 * dlrm_cli.h — what `etsim shard` and `etsim gen dlrm` share: the flags of
 * the iteration techniques (precision, pipelining, memory levels), and the
 * glue between the planner and the simulator.
 *
 * The shard module sits beside gen above et and may not call the
 * simulator (DESIGN.md's rooms), so the CLI, which may use every module,
 * closes the loop: it simulates each collective on the target platform to
 * fill the planner's calibration table (etsim_shard_calib_t), and it
 * simulates the planner's finalists — written by gen dlrm to a temporary
 * folder — to keep the fastest.
 */
#ifndef ETSIM_CLI_DLRM_H
#define ETSIM_CLI_DLRM_H

#include "cli/cli.h"
#include "etsim/coll.h"
#include "etsim/shard.h"
#include "etsim/topo.h"

/* Technique flags as given on the command line: cli_dlrm_opts makes their
 * option-table entries, which parse into this; set[] says which were given. */
enum {
  DF_A2A_PREC,
  DF_AR_PREC,
  DF_PIPELINE,
  DF_ITERATIONS,
  DF_PEAK,
  DF_MEM,
  DF_BUCKET,
  DF_DDR_GB,
  DF_SSD_GB,
  DF_DDR_GBPS,
  DF_SSD_GBPS,
  DF_DDR_LAT,
  DF_SSD_LAT,
  DF_ZIPF,
  DF_ACCESS,
  DF_PREC_BOTH, /* --precision: both of the first two */
  DF_N
};
typedef struct cli_dlrm_flags {
  int set[DF_N];
  int prec[3];             /* --precision, --a2a-precision, --ar-precision */
  int pipeline;            /* --pipeline */
  uint64_t iterations;     /* --iterations */
  uint64_t bucket_mib;     /* --bucket-mib */
  double num[DF_N];        /* the real-valued flags, by DF_* */
  const char *access_path; /* --access-trace */
} cli_dlrm_flags_t;

/* "tw,rw,..." (--types) as a bit set of shard types; 0 after printing an
 * error.  In cmd_shard.c. */
unsigned cli_shard_types(const char *v);

/* The planner inputs both commands take.  Their table entries stay with
 * each command: gen dlrm's help says which apply only to --plan auto. */
typedef struct cli_dlrm_plan_args {
  const char *model;                     /* --model / --preset */
  const char *types;                     /* --types */
  const char *calib;                     /* --calib */
  uint64_t ranks, ranks_per_host, batch; /* 0: not given */
} cli_dlrm_plan_args_t;

/* --types, --ranks, --ranks-per-host (default: all ranks on one host) and
 * --batch onto o.  Returns 0, or ETSIM_EXIT_USAGE after printing why. */
int cli_dlrm_sizes(const cli_dlrm_plan_args_t *a, etsim_shard_opts_t *o);
/* The model a->model names: a JSON file when it has '/' or ".json", else
 * a preset. */
int cli_dlrm_model_load(const cli_dlrm_plan_args_t *a, etsim_shard_model_t *m, etsim_error_t *err);
/* Read the access trace (if access_path) onto o->tiers and the calibration
 * (if a->calib) into *cal and o->calib.  With `check`, a calibration
 * measured for other than o's ranks is refused: the planner would fall
 * back to closed forms without a word.  Returns 0 or the exit code after
 * printing the error. */
int cli_dlrm_inputs(const cli_dlrm_plan_args_t *a, const char *access_path, int check,
                    const etsim_shard_model_t *m, etsim_shard_opts_t *o, etsim_shard_calib_t *cal,
                    etsim_shard_access_t **acc);

/* How many entries cli_dlrm_opts writes. */
#define CLI_DLRM_N_OPTS 16
/* Write the technique flags' option-table entries (parsing into f) to
 * opts[*n ...] and advance *n; the help texts say what each prices. */
void cli_dlrm_opts(cli_dlrm_flags_t *f, cli_opt_t *opts, size_t *n);

/* Apply the given flags onto a step and tiers (memory capacities and skew
 * only when `placement` is true: a plan read from a file has decided
 * those).  Returns 0 or prints a usage error and returns -1. */
int cli_dlrm_apply(const cli_dlrm_flags_t *f, etsim_shard_step_t *step, etsim_shard_tiers_t *tiers,
                   int placement);

/* A platform to simulate on: ASTRA-sim network YAML and system JSON. */
typedef struct cli_platform {
  const char *network, *system, *backend;
  etsim_topo_t topo;
  etsim_sys_config_t sys;
  int have_topo, have_sys;
} cli_platform_t;

int cli_platform_load(cli_platform_t *pf, etsim_error_t *err);
void cli_platform_free(cli_platform_t *pf);

/* Fill a calibration for P ranks (Pl per host): world all-to-all,
 * reduce-scatter, all-gather, all-reduce and host reduce-scatter and
 * all-gather, each simulated alone at sizes from 4 KiB to 4 GiB. */
int cli_dlrm_calibrate(cli_platform_t *pf, size_t P, size_t Pl, etsim_shard_calib_t *out,
                       etsim_error_t *err);

typedef struct cli_simres {
  double iter_ns;           /* finish / iterations */
  double exposed_ns[4 + 2]; /* per collective type (sim.h slots), averaged over NPUs */
  double comp_ns;           /* GPU compute of the slowest NPU */
} cli_simres_t;

/* Write the plan's traces to a temporary folder and simulate them. */
int cli_dlrm_simulate(cli_platform_t *pf, const etsim_shard_model_t *m, const etsim_shard_plan_t *p,
                      cli_simres_t *out, etsim_error_t *err);

#endif
