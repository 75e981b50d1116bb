/* etsim reports: what a simulation says, for people and for programs.
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
 * Files are written through a temporary name and renamed when complete.
 */
#ifndef ETSIM_REPORT_H
#define ETSIM_REPORT_H

#include "etsim/et.h"
#include "etsim/sim.h"

#include <stdio.h>

void etsim_report_astra_lines(FILE *f, const etsim_sim_result_t *r);
void etsim_report_summary(FILE *f, const etsim_sim_result_t *r, const etsim_topo_t *topo);
int etsim_report_json(const char *path, const etsim_sim_result_t *r, const etsim_et_set_t *set,
                      etsim_error_t *err);
int etsim_report_csv(const char *path, const etsim_sim_result_t *r, const etsim_et_set_t *set,
                     etsim_error_t *err);
int etsim_report_timeline(const char *path, const etsim_sim_result_t *r, const etsim_et_set_t *set,
                          etsim_error_t *err);

/* Per-link statistics (a run with link_stats): the summary's line naming
 * the three busiest links; a CSV "link,bytes,busy_ns,busy_fraction" with
 * one row per link. */
void etsim_report_links_summary(FILE *f, const etsim_sim_result_t *r);
int etsim_report_links_csv(const char *path, const etsim_sim_result_t *r, etsim_error_t *err);

#endif
