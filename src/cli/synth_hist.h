/*
 * synth_hist.h — the distributions `etsim synth eval --json` adds for the
 * HTML report: real against generated histograms of what the metrics
 * compare (layers, nodes and edges per DAG; layer sizes, in- and
 * out-degrees over all nodes; the first attribute channel's categories).
 */
#ifndef ETSIM_CLI_SYNTH_HIST_H
#define ETSIM_CLI_SYNTH_HIST_H

#include "etsim/synth.h"

#include <jansson.h>

/* {"layers": {"lo": [...], "width": w, "real": [...], "generated": [...]},
 *  "nodes", "edges", "layer_size", "in_degree", "out_degree", "category"}:
 * counts per bin, bin k covering [lo[k], lo[k] + width).  NULL when out of
 * memory. */
json_t *cli_synth_histograms(const etsim_synth_data_t *real, const etsim_synth_data_t *gen);

#endif
