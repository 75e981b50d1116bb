/*
 * etsim/sweep.h — design-space sweeps and parallelism planning.
 *
 * A sweep spec (YAML, docs/sweep.md) names a base run — a `sim` run on a
 * trace set or on a generator's output, or a `netsim` scenario — and axes
 * over keys of its inputs: the network YAML, the system JSON, the remote
 * memory JSON, the generator's flags, the simulator's options (backend,
 * congestion control ...) and netsim's config keys.  Axes combine as grids,
 * lists, zipped lists and seeded random samples; derived keys and a filter
 * are small arithmetic expressions over them.  The spec expands to a fixed,
 * ordered list of points, each with a stable id (a hash of its values).
 *
 * Points run in executors: processes that keep the traces they generated
 * (by generator arguments) and loaded (by prefix) for the next point, and
 * run the simulator in-process.  A scheduler hands points out as executors
 * free up, grouping points that share a generated trace set on one
 * executor; its rows stream to <dir>/points.jsonl and points.csv, one per
 * point (every axis value and the summary figures; a failing point is a
 * row with its error), a rerun skips finished points, and the files are
 * rewritten in point order at the end so that any number of executors,
 * local or over MPI (the etsim-sweep program), gives the same bytes.
 *
 * The planner searches DP x TP x PP (x SP x EP) x micro-batches x ZeRO x
 * recomputation for a transformer preset, prunes by the generator's memory
 * model, and writes the survivors as a sweep spec that the same machinery
 * simulates.
 */
#ifndef ETSIM_SWEEP_H
#define ETSIM_SWEEP_H

#include "etsim/base.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------- the spec */

typedef struct etsim_sweep_spec etsim_sweep_spec_t;

/* Read and expand a spec.  Paths inside it are taken from the spec's
 * folder.  Errors name the file, the line and the key.  *out is owned
 * (etsim_sweep_spec_free). */
int etsim_sweep_spec_load(const char *path, etsim_sweep_spec_t **out, etsim_error_t *err);
void etsim_sweep_spec_free(etsim_sweep_spec_t *s);

/* The expanded points; a point's values for each column (axis keys, then
 * derived keys) as compact JSON text ("8", "\"ring\"", "[50, 100]"). */
size_t etsim_sweep_n_points(const etsim_sweep_spec_t *s);
size_t etsim_sweep_n_columns(const etsim_sweep_spec_t *s);
const char *etsim_sweep_column(const etsim_sweep_spec_t *s, size_t col);
const char *etsim_sweep_value(const etsim_sweep_spec_t *s, size_t point, size_t col);
/* "0f3a..." (16 hex digits): a hash of the point's values. */
const char *etsim_sweep_point_id(const etsim_sweep_spec_t *s, size_t point);
/* Points that share a generated trace set share a group (0 .. n_groups-1,
 * in order of first appearance). */
size_t etsim_sweep_point_group(const etsim_sweep_spec_t *s, size_t point);
size_t etsim_sweep_n_groups(const etsim_sweep_spec_t *s);
/* A hash of the base run and of the input files it names: results made
 * from another base are not resumed. */
uint64_t etsim_sweep_fingerprint(const etsim_sweep_spec_t *s);
/* Options the spec itself sets (its `options:` map): 0 when absent. */
double etsim_sweep_spec_timeout_s(const etsim_sweep_spec_t *s);
int etsim_sweep_spec_keep_traces(const etsim_sweep_spec_t *s);

/* ----------------------------------------------------------- executing */

typedef struct etsim_sweep_exec etsim_sweep_exec_t;

/* Where an executor works. */
typedef struct etsim_sweep_exec_opts {
  /* a folder of its own for the traces it generates and the configs it
   * edits (created; removed when it ends) */
  const char *scratch;
  /* NULL: generated sets live in scratch, the last two kept; else a
   * folder shared by every executor and every rerun that keeps them all
   * (<dir>/traces with keep-traces) */
  const char *traces;
  const char *etsim_exe; /* the etsim program: generators run as `etsim gen ...` */
} etsim_sweep_exec_opts_t;

/* An executor of points of `spec` (borrowed; it must outlive the
 * executor).  o's strings are copied. */
int etsim_sweep_exec_create(etsim_sweep_exec_t **out, const etsim_sweep_spec_t *spec,
                            const etsim_sweep_exec_opts_t *o, etsim_error_t *err);
void etsim_sweep_exec_free(etsim_sweep_exec_t *x);

/* Run point `point` and return its row: one line of JSON without the
 * newline, owned by the caller (free with etsim_free).  A point that fails
 * gives a row with "status": "failed" and its error; only running out of
 * memory fails the call. */
int etsim_sweep_exec_point(etsim_sweep_exec_t *x, size_t point, char **row_out);

/* An executor's loop: read point indices, one per line ("<index>\n"), from
 * in_fd, answer each with "<cpu seconds> <row>\n" on out_fd, until "q" or
 * end of input.  Returns 0, or an error when a pipe fails. */
int etsim_sweep_serve(const etsim_sweep_spec_t *spec, const etsim_sweep_exec_opts_t *o, int in_fd,
                      int out_fd, etsim_error_t *err);

/* The row of a point that did not run to the end (its executor died or
 * ran out of time): "status": "failed" and `why`; owned by the caller. */
char *etsim_sweep_failed_row(const etsim_sweep_spec_t *s, size_t point, const char *why);

/* -------------------------------------------------- the executor process */

typedef struct etsim_sweep_proc etsim_sweep_proc_t;

/*
 * Start an executor process.  With argv NULL it is a fork of this process
 * running etsim_sweep_serve (for programs without MPI); otherwise the
 * program argv names, which must serve on its stdin and stdout (`etsim
 * sweep --serve`; fork-then-exec is what MPI programs may do).
 */
int etsim_sweep_proc_start(etsim_sweep_proc_t **out, const etsim_sweep_spec_t *spec,
                           const etsim_sweep_exec_opts_t *o, char *const *argv, etsim_error_t *err);
/* Hand it a point. */
int etsim_sweep_proc_send(etsim_sweep_proc_t *p, size_t point, etsim_error_t *err);
/* The file descriptor to poll for its answer. */
int etsim_sweep_proc_fd(const etsim_sweep_proc_t *p);
/*
 * Collect the answer to the point last sent.  Returns 1 with *row_out
 * (owned) and *cpu_s when it came, 0 when it has not come yet (a
 * non-blocking check: wait on etsim_sweep_proc_fd), or when the process
 * died or ran past timeout_s (> 0) since the point was sent: then 1 with a
 * failed row saying so, the process restarted.  Negative on an error.
 */
int etsim_sweep_proc_collect(etsim_sweep_proc_t *p, double timeout_s, char **row_out, double *cpu_s,
                             etsim_error_t *err);
/* Seconds since the point last sent was sent. */
double etsim_sweep_proc_busy_s(const etsim_sweep_proc_t *p);
/* Stop and reap it; adds the CPU seconds its processes used. */
void etsim_sweep_proc_stop(etsim_sweep_proc_t *p, double *cpu_s);

/* ------------------------------------------------------- the scheduler */

typedef struct etsim_sweep_sched etsim_sweep_sched_t;

typedef struct etsim_sweep_sched_opts {
  int restart;      /* discard earlier results in the folder */
  int retry_failed; /* run again the points that failed before */
  size_t limit;     /* run at most this many points now (0: all) */
} etsim_sweep_sched_opts_t;

/*
 * Open the results folder `dir` (created) for `spec` (borrowed): read the
 * rows of an earlier run (a row whose point id is in the spec is finished;
 * a malformed last line, as a killed run leaves, is dropped), refuse
 * results of a different base run unless opts->restart, and rewrite
 * points.jsonl and points.csv with the finished rows before appending.
 */
int etsim_sweep_sched_open(etsim_sweep_sched_t **out, const etsim_sweep_spec_t *spec,
                           const char *dir, const etsim_sweep_sched_opts_t *opts,
                           etsim_error_t *err);
/* Points left to run, and points finished before this run. */
size_t etsim_sweep_sched_todo(const etsim_sweep_sched_t *s);
size_t etsim_sweep_sched_resumed(const etsim_sweep_sched_t *s);
/*
 * The next point for executor `slot` (0 ..), or -1 when none is left.  An
 * executor keeps to the group (trace set) it worked on last while the
 * group has points; then it takes the group nobody works on with the most
 * points left; then it shares the largest group.
 */
long etsim_sweep_sched_next(etsim_sweep_sched_t *s, size_t slot);
/* A point's row came back (cpu_s: what it cost, for times.csv). */
int etsim_sweep_sched_done(etsim_sweep_sched_t *s, size_t point, const char *row, double cpu_s,
                           etsim_error_t *err);
/* Progress: points done in this run, failed (in this run and before),
 * running; seconds since open. */
void etsim_sweep_sched_progress(const etsim_sweep_sched_t *s, size_t *done, size_t *failed,
                                size_t *running, double *elapsed_s);
/* One line in the house's progress wording (etsim_progress_line), no
 * newline, into buf: "[etsim sweep]  12 % | 12 of 100 points, 1 failed,
 * 2 running | 41.0 s, about 5 min 02 s left".  The share and the time left
 * count this run's points only (not those finished before it). */
void etsim_sweep_sched_progress_line(const etsim_sweep_sched_t *s, char *buf, size_t cap);
/* Rewrite points.jsonl and points.csv in point order, write sweep.json
 * (counts, the fingerprint, cpu_s and wall_s given) and close.  Frees s. */
int etsim_sweep_sched_close(etsim_sweep_sched_t *s, double cpu_s, int workers, const char *how,
                            etsim_error_t *err);
/* Free without finishing (after an error); the streamed rows stay. */
void etsim_sweep_sched_abort(etsim_sweep_sched_t *s);

/* --------------------------------------------------- a local sweep, whole */

typedef struct etsim_sweep_run_opts {
  etsim_sweep_sched_opts_t sched;
  int jobs;              /* executors (0: the CPUs this process may use) */
  double timeout_s;      /* per point (0: the spec's, else none) */
  const char *etsim_exe; /* the etsim program (for generators) */
  int keep_traces;       /* keep generated traces (also the spec's option) */
  /* progress: called about once a second and at the end with a line
   * (etsim_sweep_sched_progress_line); NULL for none */
  void (*progress)(void *user, const char *line, int final);
  void *user;
} etsim_sweep_run_opts_t;

typedef struct etsim_sweep_summary {
  size_t points, ran, resumed, ok, failed;
  double wall_s, cpu_s;
} etsim_sweep_summary_t;

/* Run every unfinished point of spec into dir with local executors. */
int etsim_sweep_run_local(const etsim_sweep_spec_t *spec, const char *dir,
                          const etsim_sweep_run_opts_t *o, etsim_sweep_summary_t *sum,
                          etsim_error_t *err);

/* Number of CPUs this process may run on (at least 1). */
int etsim_sweep_cpus(void);

/* ------------------------------------------------------------ planning */

typedef struct etsim_sweep_plan_opts {
  const char *preset; /* gen llm preset (or "custom" with the model below) */
  uint64_t layers, hidden, heads, kv_heads, ffn, vocab, seq, experts, top_k;
  int gated;             /* -1: the preset's */
  uint32_t npus;         /* NPUs to fill exactly */
  uint32_t global_batch; /* sequences per iteration (0: the preset's published) */
  double hbm_gib;        /* memory per NPU (0: 80) */
  int flash;             /* flash attention (memory model) */
  int schedule;          /* ETSIM_GEN_SCHED_* */
  double peak_tflops, mem_gbps;
  uint32_t max_tp, max_pp, max_sp, max_mbs; /* 0: no bound beyond the model's */
  int exhaustive;                           /* keep dominated candidates (checks) */
  /* the platform, for the spec */
  const char *network, *system, *memory;
  const char *backend;
} etsim_sweep_plan_opts_t;

/* One candidate configuration. */
typedef struct etsim_sweep_cand {
  uint32_t dp, tp, pp, sp, ep, microbatches, mbs;
  int zero, recompute;
  uint64_t mem_bytes; /* the generator's model: the largest stage's total */
} etsim_sweep_cand_t;

typedef struct etsim_sweep_plan_stats {
  size_t layouts;     /* DP x TP x PP x SP x EP splits that divide the model */
  size_t considered;  /* with micro-batching, ZeRO and recomputation */
  size_t over_memory; /* pruned: over hbm by the generator's model */
  size_t dominated;   /* pruned: another candidate has the same traffic and
                         less work (a lower ZeRO stage or no recomputation that fits) */
  size_t kept;
  uint32_t global_batch;
  double hbm_gib;
} etsim_sweep_plan_stats_t;

/* The candidates (owned array), pruned as etsim_sweep_plan_stats_t says. */
int etsim_sweep_plan_candidates(const etsim_sweep_plan_opts_t *o, etsim_sweep_cand_t **out,
                                size_t *n_out, etsim_sweep_plan_stats_t *st, etsim_error_t *err);
/* Write them as a sweep spec at `path` (a zipped axis over gen.dp, gen.tp,
 * ... of a `gen llm --tensors` base run on o's platform). */
int etsim_sweep_plan_write_spec(const etsim_sweep_plan_opts_t *o, const etsim_sweep_cand_t *c,
                                size_t n, const char *path, etsim_error_t *err);

#ifdef __cplusplus
}
#endif
#endif /* ETSIM_SWEEP_H */
