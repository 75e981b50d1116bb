/* Private to src/report. */
#ifndef ETSIM_REPORT_INT_H
#define ETSIM_REPORT_INT_H

#include "etsim/report.h"

#include <jansson.h>

/* Add "links": [{"link", "bytes", "busy_ns", "busy_fraction"}...] (links
 * with traffic) to a result object, when the run kept them. */
int etsim_report__links_json(json_t *root, const etsim_sim_result_t *r);

/* The summary's memory line: peak per NPU, the NPUs over capacity and
 * what offloading them costs (nothing when memory was not tracked). */
void etsim_report__mem_summary(FILE *f, const etsim_sim_result_t *r);

#endif
