/*
 * kernels.c — what compute nodes turn into: OpenBLAS sgemm, a STREAM-style
 * triad, a busy loop on the monotonic clock, and the start-up calibration
 * that measures this machine's GEMM rate and memory bandwidth (their ratio
 * is the ridge point that decides GEMM or streaming for num_ops nodes).
 */
#include "etsim/replay.h"

#include <cblas.h>
#include <time.h>

int64_t etsim_replay_clock_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void etsim_replay_gemm(int64_t m, int64_t n, int64_t k, const float *a, const float *b, float *c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)m, (blasint)n, (blasint)k, 1.0f,
              a, (blasint)k, b, (blasint)n, 0.0f, c, (blasint)n);
}

void etsim_replay_triad(float *a, const float *b, const float *c, size_t n, float s) {
  for (size_t i = 0; i < n; i++) a[i] = b[i] + s * c[i];
}

void etsim_replay_busy(int64_t ns) {
  int64_t end = etsim_replay_clock_ns() + ns;
  while (etsim_replay_clock_ns() < end)
    ;
}

int etsim_replay_calibrate(etsim_replay_machine_t *m) {
  /* 256^3 sgemm (33.5 MFLOP) and a 3 x 4 MiB triad: a few ms each, best of
   * five after a warm-up call, so neither start-up costs nor a context
   * switch decide the ridge. */
  enum { G = 256, S = 1 << 20 };
  float *a = etsim_malloc(sizeof(float) * G * G * 3);
  float *t = etsim_malloc(sizeof(float) * S * 3);
  if (!a || !t) {
    etsim_free(a);
    etsim_free(t);
    return ETSIM_ENOMEM;
  }
  for (size_t i = 0; i < (size_t)G * G * 3; i++) a[i] = (float)(i % 17) * 0.25f;
  for (size_t i = 0; i < (size_t)S * 3; i++) t[i] = (float)(i % 13);
  int64_t best_g = INT64_MAX, best_s = INT64_MAX;
  /* The first call starts BLAS's threads and touches the output pages. */
  etsim_replay_gemm(G, G, G, a, a + G * G, a + 2 * G * G);
  etsim_replay_triad(t, t + S, t + 2 * S, S, 1.5f);
  for (int r = 0; r < 5; r++) {
    int64_t t0 = etsim_replay_clock_ns();
    etsim_replay_gemm(G, G, G, a, a + G * G, a + 2 * G * G);
    int64_t t1 = etsim_replay_clock_ns();
    etsim_replay_triad(t, t + S, t + 2 * S, S, 1.5f);
    int64_t t2 = etsim_replay_clock_ns();
    if (t1 - t0 < best_g) best_g = t1 - t0;
    if (t2 - t1 < best_s) best_s = t2 - t1;
  }
  if (best_g < 1) best_g = 1;
  if (best_s < 1) best_s = 1;
  m->gemm_flops_per_s = 2.0 * G * G * G / ((double)best_g * 1e-9);
  m->stream_bytes_per_s = 12.0 * S / ((double)best_s * 1e-9);
  m->ridge_flop_per_byte = m->gemm_flops_per_s / m->stream_bytes_per_s;
  etsim_free(a);
  etsim_free(t);
  return 0;
}
