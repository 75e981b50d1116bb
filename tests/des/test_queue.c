/*
 * test_queue.c — the event queue pops in (time, insertion) order: checked
 * against a reference that sorts every event by that key, on random
 * workloads with many events per instant (the simulator's lock-step case),
 * with zero-delay pushes while an instant is being drained, and across
 * reuse of drained buckets.
 */
#include "test_util.h"

#include "etsim/base.h"
#include "etsim/des.h"

typedef struct ref {
  int64_t t;
  uint64_t seq;
  uint64_t id;
} ref_t;

static int ref_cmp(const void *x, const void *y) {
  const ref_t *a = x, *b = y;
  if (a->t != b->t) return a->t < b->t ? -1 : 1;
  return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Run `steps` pops; each popped event pushes 0-3 new ones at now + delay,
 * delays drawn from a few values (so instants repeat) with some zeros.  The
 * reference keeps every pushed event with its global sequence number; the
 * pops must come out exactly in sorted reference order. */
static void run_random(uint64_t seed, int n_delays, size_t steps) {
  etsim_rng_t rng;
  etsim_rng_seed(&rng, seed);
  etsim_des_t q;
  etsim_des_init(&q);
  size_t cap = 8 * steps + 64, n = 0;
  ref_t *all = malloc(cap * sizeof *all);
  uint64_t seq = 0, id = 0;
  for (int k = 0; k < 16; k++) {
    int64_t t = (int64_t)etsim_rng_below(&rng, 5) * 1000;
    assert_int_equal(etsim_des_push(&q, t, 1, 0, id), 0);
    all[n++] = (ref_t){t, seq++, id++};
  }
  ref_t *popped = malloc(cap * sizeof *popped);
  size_t np = 0;
  etsim_des_event_t ev;
  while (np < steps && etsim_des_pop(&q, &ev)) {
    assert_int_equal(ev.seq, np);
    assert_int_equal(q.now_ps, ev.t_ps);
    popped[np++] = (ref_t){ev.t_ps, 0, ev.b};
    int k = (int)etsim_rng_below(&rng, 4);
    for (int j = 0; j < k && n < cap; j++) {
      int64_t d = (int64_t)etsim_rng_below(&rng, (uint64_t)n_delays) * 500;
      assert_int_equal(etsim_des_push(&q, ev.t_ps + d, 2, 7, id), 0);
      all[n++] = (ref_t){ev.t_ps + d, seq++, id++};
    }
    assert_int_equal(etsim_des_pending(&q), n - np);
    if (etsim_des_pending(&q)) TU_GE(etsim_des_next_time(&q), ev.t_ps);
  }
  /* Drain the rest. */
  while (etsim_des_pop(&q, &ev)) popped[np++] = (ref_t){ev.t_ps, 0, ev.b};
  assert_int_equal(etsim_des_next_time(&q), INT64_MAX);
  assert_int_equal(np, n);
  qsort(all, n, sizeof *all, ref_cmp);
  for (size_t i = 0; i < n; i++) {
    if (all[i].t != popped[i].t || all[i].id != popped[i].id)
      fail_msg("seed %llu: pop %zu is (t=%lld, id=%llu), want (t=%lld, id=%llu)",
               (unsigned long long)seed, i, (long long)popped[i].t,
               (unsigned long long)popped[i].id, (long long)all[i].t,
               (unsigned long long)all[i].id);
  }
  TU_GE(q.max_pending, 16);
  free(all);
  free(popped);
  etsim_des_free(&q);
}

static void test_order_many_per_instant(void **state) {
  (void)state;
  /* Few distinct delays: hundreds of events share each instant. */
  for (uint64_t seed = 1; seed <= 20; seed++) run_random(seed, 3, 20000);
}

static void test_order_mostly_distinct(void **state) {
  (void)state;
  /* Many distinct delays: buckets of one or two events, many times. */
  for (uint64_t seed = 100; seed <= 110; seed++) run_random(seed, 5000, 20000);
}

static void test_zero_delay_runs_last_in_its_instant(void **state) {
  (void)state;
  etsim_des_t q;
  etsim_des_init(&q);
  assert_int_equal(etsim_des_push(&q, 10, 1, 0, 1), 0);
  assert_int_equal(etsim_des_push(&q, 10, 1, 0, 2), 0);
  assert_int_equal(etsim_des_push(&q, 20, 1, 0, 3), 0);
  etsim_des_event_t ev;
  assert_int_equal(etsim_des_pop(&q, &ev), 1);
  assert_int_equal(ev.b, 1);
  /* Scheduled now for now: after event 2, before time 20. */
  assert_int_equal(etsim_des_push(&q, 10, 1, 0, 4), 0);
  assert_int_equal(etsim_des_pop(&q, &ev), 1);
  assert_int_equal(ev.b, 2);
  assert_int_equal(etsim_des_pop(&q, &ev), 1);
  assert_int_equal(ev.b, 4);
  /* The instant is drained but not yet left: a push for it still runs
   * before time 20. */
  assert_int_equal(etsim_des_next_time(&q), 20);
  assert_int_equal(etsim_des_push(&q, 10, 1, 0, 5), 0);
  assert_int_equal(etsim_des_next_time(&q), 10);
  assert_int_equal(etsim_des_pop(&q, &ev), 1);
  assert_int_equal(ev.b, 5);
  assert_int_equal(etsim_des_pop(&q, &ev), 1);
  assert_int_equal(ev.b, 3);
  assert_int_equal(ev.t_ps, 20);
  assert_int_equal(etsim_des_pop(&q, &ev), 0);
  assert_int_equal(q.n_popped, 5);
  etsim_des_free(&q);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_order_many_per_instant),
      cmocka_unit_test(test_order_mostly_distinct),
      cmocka_unit_test(test_zero_delay_runs_last_in_its_instant),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
