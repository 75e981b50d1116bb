/*
 * etsim/report.h — what a simulation says, for people and for programs.
 *
 *   astra lines  "sys[N] finished, T cycles, exposed communication E cycles."
 *                (ASTRA-sim's shape, so existing scripts keep working)
 *   summary      iteration time, compute, exposed communication per type,
 *                bytes moved, wall time and events/s
 *   JSON         {"npus":[...], "total_ns", "wall_s", "events", "collectives"}
 *   CSV          one row per executed node (needs record_nodes)
 *   timeline     Perfetto / Chrome traceEvents JSON in us, one process per
 *                NPU, a compute and a communication track, flow arrows for
 *                dependencies (needs record_nodes)
 *   HTML         one self-contained page with plots of any etsim command's
 *                JSON (sim, netsim, sweep, shard, replay, synth eval)
 * Files are written through a temporary name and renamed when complete.
 */
#ifndef ETSIM_REPORT_H
#define ETSIM_REPORT_H

#include "etsim/et.h"
#include "etsim/sim.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Contracts shared by everything below: `r` is a finished run's result and
 * `set` the rank set it ran (both borrowed, read only; set gives the names,
 * types and attributes of recorded nodes).  Text goes to `f`; nothing
 * here closes it.  Files go to `path` ("-": stdout) through a temporary
 * name, renamed into place only when complete; the writers return 0 or a
 * negative ETSIM_E* code (ETSIM_EIO when the file cannot be created,
 * written or renamed) with err naming the path, and leave nothing at `path`
 * on failure.
 */

/* One line per NPU, "sys[N] finished, T cycles, exposed communication E
 * cycles." with T and E in whole ns, as ASTRA-sim prints them. */
void etsim_report_astra_lines(FILE *f, const etsim_sim_result_t *r);
/* The human summary: iteration time, compute, exposed communication by
 * collective type and dimension, bytes moved per dimension of `topo`
 * (borrowed), memory when tracked, and the run's wall time and events/s. */
void etsim_report_summary(FILE *f, const etsim_sim_result_t *r, const etsim_topo_t *topo);
/* The machine-readable report, one JSON object: per NPU times in ns,
 * totals, per collective type, the packet network's counters when it ran,
 * one record per communication node when nodes were recorded, per-link
 * counters when kept. */
int etsim_report_json(const char *path, const etsim_sim_result_t *r, const etsim_et_set_t *set,
                      etsim_error_t *err);
/* One row per executed node (needs record_nodes; else only the header). */
int etsim_report_csv(const char *path, const etsim_sim_result_t *r, const etsim_et_set_t *set,
                     etsim_error_t *err);
/* A Perfetto / Chrome traceEvents file in us (needs record_nodes): one
 * process per NPU, a compute track and one per communicator, dependency
 * arrows (left out above 4,000,000 records). */
int etsim_report_timeline(const char *path, const etsim_sim_result_t *r, const etsim_et_set_t *set,
                          etsim_error_t *err);

/* Per-link statistics (a run with link_stats): the summary's line naming
 * the three busiest links; a CSV "link,bytes,busy_ns,busy_fraction" with
 * one row per link. */
void etsim_report_links_summary(FILE *f, const etsim_sim_result_t *r);
int etsim_report_links_csv(const char *path, const etsim_sim_result_t *r, etsim_error_t *err);

/* ------------------------------------------------------------ HTML report */

/* One input of the HTML report: a file another command wrote, recognised by
 * its content (sim --json; netsim --json, netsim --timeline or sim
 * --net-timeline; sim --timeline, linked; sweep points.jsonl or points.csv;
 * shard -o plan.json and shard --json; replay --json, --csv and --dry-run
 * --json; synth eval --json).  `label` names it on the page (NULL: the
 * file's name). */
typedef struct etsim_report_input {
  const char *path;
  const char *label;
} etsim_report_input_t;

typedef struct etsim_report_html_opts {
  const char *title;    /* the page's heading (NULL: "etsim report") */
  const char *timeline; /* etsim_report_html_sim: the Perfetto file to link, or NULL */
  /* Sweeps: which columns are axes and which are results (comma lists; NULL:
   * guessed, and the page says how), the axis on the x axis and the one
   * drawn as separate lines, and the two results of the Pareto front, each
   * "NAME" (lower is better) or "NAME:max". */
  const char *axes, *metrics, *sweep_x, *sweep_series, *pareto;
} etsim_report_html_opts_t;

/* Write one HTML page to `path` (through a temporary name) from n inputs.
 * The page loads nothing from the network: charts are inline SVG.  Inputs
 * too large to draw mark by mark (many NPUs, ports, messages or points) are
 * aggregated, and the page says how.  Returns 0, or ETSIM_EIO / EFORMAT /
 * ENOMEM with the file and the key or line in err. */
int etsim_report_html(const char *path, const etsim_report_input_t *inputs, size_t n,
                      const etsim_report_html_opts_t *opts, etsim_error_t *err);
/* The same page for a simulation just run (etsim sim --report): the result
 * as etsim_report_json would write it plus the topology's dimensions. */
int etsim_report_html_sim(const char *path, const etsim_sim_result_t *r, const etsim_et_set_t *set,
                          const etsim_topo_t *topo, const char *label,
                          const etsim_report_html_opts_t *opts, etsim_error_t *err);

#ifdef __cplusplus
}
#endif
#endif
