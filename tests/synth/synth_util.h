/*
 * synth_util.h — the small fixed DAG set the synth tests share.
 */
#ifndef ETSIM_TESTS_SYNTH_UTIL_H
#define ETSIM_TESTS_SYNTH_UTIL_H

#include "test_util.h"

#include "synth/synth_int.h"

/* Two DAGs with two channels (3 and 4 classes), labels 2.5 and 0.7. */
static inline void toy_data(etsim_synth_data_t *d) {
  etsim_synth_data_init(d);
  d->kind = ETSIM_SYNTH_KIND_TEXT;
  d->n_ch = 2;
  d->n_cls[0] = 3;
  d->n_cls[1] = 4;
  /* g0: 0 -> 1, 0 -> 2, 1 -> 3, 2 -> 3, 0 -> 3 (skip edge), 3 -> 4 */
  uint32_t x0[10] = {0, 1, 1, 2, 2, 3, 0, 0, 1, 1};
  uint32_t s0[6] = {0, 0, 1, 2, 0, 3}, t0[6] = {1, 2, 3, 3, 3, 4};
  etsim_synth_dag_t g0 = {5, 6, x0, s0, t0, 2.5, 0};
  assert_int_equal(etsim_synth_data_add(d, &g0), 0);
  /* g1: two sources, 0 -> 2, 1 -> 2, 2 -> 3 */
  uint32_t x1[8] = {1, 0, 2, 1, 0, 3, 2, 2};
  uint32_t s1[3] = {0, 1, 2}, t1[3] = {2, 2, 3};
  etsim_synth_dag_t g1 = {4, 3, x1, s1, t1, 0.7, 0};
  assert_int_equal(etsim_synth_data_add(d, &g1), 0);
}

#endif
