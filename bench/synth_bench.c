/*
 * synth_bench.c — speed of the LayerDAG generator on one core.
 *
 *   bench_synth_bench [TPU_TILE_TXT|""] [EPOCHS] [LAYERS WIDTH]   ("" skips part 1)
 *
 * 1. Training epoch time on TPU Tile (default $ETSIM_SHARED/datasets/
 *    tpu_tile/val.txt, default configuration, 2 epochs).
 * 2. Sampling time per 400-node DAG (40 layers of 10 nodes, forced layer
 *    sizes; the size head still runs) with a model trained for one epoch on
 *    400-node layered random DAGs, default configuration (T = 64 / 16).
 *
 *   bench_synth_bench --chain N [EXACT]
 *
 * 3. CPU time of one training epoch (one graph; validation on the same
 *    graph) on a chain of N nodes with a skip edge into every third node,
 *    default configuration with exact_candidates = EXACT (default 256; 0
 *    scores every candidate pair, the cost before sampled candidates).
 */
#include "synth/synth_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static double cpu(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static int on_epoch(void *u, const etsim_synth_progress_t *p) {
  (void)u;
  printf("  epoch %d: %.3f s (train loss %.4f, val %.4f)\n", p->epoch, p->seconds, p->train_loss,
         p->val_loss);
  return 0;
}

static int chain(uint32_t n, int exact) {
  etsim_synth_data_t d;
  etsim_synth_data_init(&d);
  d.kind = ETSIM_SYNTH_KIND_TEXT;
  d.n_ch = 1;
  d.n_cls[0] = 3;
  uint32_t *x = malloc(sizeof(uint32_t) * n), *s = malloc(sizeof(uint32_t) * 2 * n);
  uint32_t *t = malloc(sizeof(uint32_t) * 2 * n), ne = 0;
  for (uint32_t i = 0; i < n; i++) {
    x[i] = i % 3;
    if (!i) continue;
    s[ne] = i - 1;
    t[ne++] = i;
    if (i % 3 == 0 && i >= 9) {
      s[ne] = i - 2 - (i % 7);
      t[ne++] = i;
    }
  }
  etsim_synth_dag_t g = {n, ne, x, s, t, 1.0, 0};
  etsim_synth_data_add(&d, &g);
  etsim_synth_config_t cfg;
  etsim_synth_config_default(&cfg);
  cfg.epochs = 1;
  cfg.exact_candidates = exact;
  etsim_error_t err = {0};
  etsim_synth_model_t *m;
  double c0 = cpu();
  if (etsim_synth_train(&d, &d, &cfg, NULL, NULL, &m, &err)) {
    fprintf(stderr, "%s\n", err.msg);
    return 3;
  }
  double dc = cpu() - c0;
  printf(
      "chain of %u nodes, %u edges, exact_candidates %d: %.3f s CPU per epoch (%.2f us per "
      "edge)\n",
      n, ne, exact, dc, 1e6 * dc / ne);
  etsim_synth_model_free(m);
  etsim_synth_data_free(&d);
  free(x);
  free(s);
  free(t);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 2 && !strcmp(argv[1], "--chain"))
    return chain((uint32_t)atol(argv[2]), argc > 3 ? atoi(argv[3]) : 256);
  char def[4096];
  const char *path = argc > 1 ? argv[1] : NULL;
  if (!path && getenv("ETSIM_SHARED")) {
    snprintf(def, sizeof def, "%s/datasets/tpu_tile/val.txt", getenv("ETSIM_SHARED"));
    path = def;
  }
  int epochs = argc > 2 ? atoi(argv[2]) : 2;
  etsim_error_t err = {0};
  etsim_synth_config_t cfg;
  etsim_synth_config_default(&cfg);
  cfg.epochs = epochs;
  if (path && *path) {
    etsim_synth_data_t d;
    etsim_synth_data_init(&d);
    if (etsim_synth_data_load_text(&d, path, 0, &err)) {
      fprintf(stderr, "%s\n", err.msg);
      return 2;
    }
    size_t nodes = 0;
    for (size_t i = 0; i < d.n_graphs; i++) nodes += d.g[i].n_nodes;
    printf("training on %s: %zu DAGs, %zu nodes, hidden %d, K %d\n", path, d.n_graphs, nodes,
           cfg.hidden, cfg.mp_layers);
    etsim_synth_model_t *m;
    double t0 = now();
    if (etsim_synth_train(&d, NULL, &cfg, on_epoch, NULL, &m, &err)) {
      fprintf(stderr, "%s\n", err.msg);
      return 3;
    }
    printf("  %.3f s per epoch incl. validation (%zu parameters)\n", (now() - t0) / epochs,
           m->n_params);
    etsim_synth_model_free(m);
    etsim_synth_data_free(&d);
  }
  /* 400-node layered DAGs for the sampling benchmark: LAYERS x WIDTH
   * (arguments 3 and 4, default 40 x 10). */
  enum { NG = 24 };
  const uint32_t LAYERS = argc > 3 ? (uint32_t)atoi(argv[3]) : 40;
  const uint32_t WIDTH = argc > 4 ? (uint32_t)atoi(argv[4]) : 10;
  if (LAYERS < 1 || WIDTH < 1 || LAYERS * WIDTH > 100000) {
    fprintf(stderr, "LAYERS x WIDTH must be in 1..100000\n");
    return 2;
  }
  etsim_synth_data_t big;
  etsim_synth_data_init(&big);
  big.kind = ETSIM_SYNTH_KIND_TEXT;
  big.n_ch = 1;
  big.n_cls[0] = 16;
  etsim_rng_t r;
  etsim_rng_seed(&r, 1);
  uint32_t *x = malloc(sizeof(uint32_t) * LAYERS * WIDTH);
  uint32_t *s = malloc(sizeof(uint32_t) * LAYERS * WIDTH * 2);
  uint32_t *t = malloc(sizeof(uint32_t) * LAYERS * WIDTH * 2);
  for (int gi = 0; gi < NG; gi++) {
    uint32_t ne = 0;
    for (uint32_t v = 0; v < LAYERS * WIDTH; v++) {
      x[v] = (uint32_t)etsim_rng_below(&r, 16);
      uint32_t l = v / WIDTH;
      if (!l) continue;
      s[ne] = (l - 1) * WIDTH + (uint32_t)etsim_rng_below(&r, WIDTH);
      t[ne++] = v;
      if (etsim_rng_uniform(&r) < 0.3) {
        uint32_t u = (uint32_t)etsim_rng_below(&r, (l - 1) * WIDTH + 1);
        if (u != s[ne - 1]) {
          s[ne] = u;
          t[ne++] = v;
        }
      }
    }
    etsim_synth_dag_t g = {LAYERS * WIDTH, ne, x, s, t, 1.0, 0};
    etsim_synth_data_add(&big, &g);
  }
  cfg.epochs = 1;
  etsim_synth_model_t *m;
  double t0 = now();
  if (etsim_synth_train(&big, NULL, &cfg, NULL, NULL, &m, &err)) {
    fprintf(stderr, "%s\n", err.msg);
    return 3;
  }
  printf("training on %d DAGs of %u nodes (%u layers): %.3f s per epoch\n", NG, LAYERS * WIDTH,
         LAYERS, now() - t0);
  uint32_t *sizes = malloc(sizeof(uint32_t) * (LAYERS + 1));
  for (uint32_t l = 0; l < LAYERS; l++) sizes[l] = WIDTH;
  sizes[LAYERS] = 0;
  etsim_synth_data_t out;
  const int reps = 5;
  t0 = now();
  double c0 = cpu();
  if (etsim_synth__sample_fixed(m, reps, sizes, 7, &out, &err)) {
    fprintf(stderr, "%s\n", err.msg);
    return 3;
  }
  double dt = (now() - t0) / reps, dc = (cpu() - c0) / reps;
  size_t nodes = 0, edges = 0;
  for (size_t i = 0; i < out.n_graphs; i++) {
    nodes += out.g[i].n_nodes;
    edges += out.g[i].n_edges;
  }
  printf(
      "sampling: %.4f s wall, %.4f s CPU per DAG (%zu nodes, %zu edges "
      "per DAG on average; T_attr %d, T_edge %d)\n",
      dt, dc, nodes / out.n_graphs, edges / out.n_graphs, cfg.t_attr, cfg.t_edge);
  etsim_synth_data_free(&out);
  etsim_synth_model_free(m);
  etsim_synth_data_free(&big);
  free(x);
  free(s);
  free(t);
  free(sizes);
  return 0;
}
