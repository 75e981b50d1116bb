/*
 * synth_roundtrip.c — what the trace projection alone keeps of real traces.
 *
 *   bench_synth_roundtrip OUTDIR TRACE.et...
 *
 * Loads every trace into one synth data set (the four channels and the
 * transitive reduction, as `synth train` does), then writes each one back
 * with the synthetic-trace writer as OUTDIR/<name>.0.et, the bins' values
 * taken from the whole set as a model trained on it would take them.
 * Simulating those next to the originals (bench/synth_traces.sh) measures
 * what the projection loses before any learning: the floor of how close a
 * perfect generator's traces could come.  Exit 2 on a bad trace or a trace
 * that needs more than one window.
 */
#include "etsim/synth.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: bench_synth_roundtrip OUTDIR TRACE.et...\n");
    return 2;
  }
  etsim_synth_data_t d;
  etsim_synth_data_init(&d);
  etsim_synth_trace_opts_t o;
  etsim_synth_trace_opts_default(&o);
  etsim_error_t err = {0};
  int rc = 0;
  for (int a = 2; a < argc && !rc; a++) {
    size_t before = d.n_graphs;
    if (etsim_synth_data_load_trace(&d, argv[a], &o, &err)) {
      fprintf(stderr, "bench_synth_roundtrip: %s\n", err.msg);
      rc = 2;
    } else if (d.n_graphs != before + 1) {
      fprintf(stderr, "bench_synth_roundtrip: %s: more than %u nodes a window\n", argv[a],
              o.max_nodes);
      rc = 2;
    }
  }
  for (int a = 2; a < argc && !rc; a++) {
    const char *base = strrchr(argv[a], '/');
    base = base ? base + 1 : argv[a];
    size_t n = strlen(base);
    if (n > 3 && !strcmp(base + n - 3, ".et")) n -= 3;
    char out[4096];
    snprintf(out, sizeof out, "%s/%.*s.0.et", argv[1], (int)n, base);
    if (etsim_synth_write_trace(&d, (size_t)(a - 2), out, &err)) {
      fprintf(stderr, "bench_synth_roundtrip: %s\n", err.msg);
      rc = 2;
    }
  }
  etsim_synth_data_free(&d);
  return rc;
}
