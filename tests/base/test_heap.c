/*
 * test_heap.c — the typed heap of base.h (ETSIM_HEAP_DEFINE): records come
 * out in (key, sequence) order whatever order they went in, heap order
 * holds after every operation, and a failed push leaves the heap as it was.
 */
#include "test_util.h"

#include "etsim/base.h"

typedef struct ev {
  int64_t t;
  uint64_t seq;
  uint32_t tag;
} ev_t;

static inline int ev_less(const ev_t *a, const ev_t *b) {
  return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

ETSIM_HEAP_DEFINE(evheap, ev_t, ev_less)

static int cmp_ev(const void *a, const void *b) {
  const ev_t *x = a, *y = b;
  return ev_less(x, y) ? -1 : ev_less(y, x);
}

/* Random pushes interleaved with pops: every pop returns what a sorted
 * reference list says is least, and the heap stays ordered. */
static void test_heap_order(void **s) {
  (void)s;
  enum { N = 20000 };
  etsim_rng_t r;
  etsim_rng_seed(&r, 7);
  evheap_t h = {0};
  ev_t *ref = malloc(N * sizeof *ref); /* what is in the heap, unsorted */
  size_t n_ref = 0;
  uint64_t seq = 0;
  for (int step = 0; step < 3 * N; step++) {
    int push = n_ref == 0 || (n_ref < N && etsim_rng_below(&r, 3) != 0);
    if (push) {
      /* few distinct times, so most comparisons fall to the sequence */
      ev_t e = {(int64_t)etsim_rng_below(&r, 50), seq++, (uint32_t)step};
      assert_int_equal(evheap_push(&h, &e), 0);
      ref[n_ref++] = e;
    } else {
      size_t best = 0;
      for (size_t k = 1; k < n_ref; k++)
        if (ev_less(&ref[k], &ref[best])) best = k;
      ev_t got;
      evheap_pop(&h, &got);
      assert_int_equal(got.t, ref[best].t);
      assert_int_equal(got.seq, ref[best].seq);
      assert_int_equal(got.tag, ref[best].tag);
      ref[best] = ref[--n_ref];
    }
    assert_int_equal(h.n, n_ref);
    if (step % 97 == 0) assert_int_equal(evheap_check(&h), 0);
  }
  free(ref);
  evheap_free(&h);
  assert_null(h.v);
}

/* Draining gives exactly qsort's order, for every heap size up to 70
 * (the partial last group of children included). */
static void test_heap_sizes(void **s) {
  (void)s;
  etsim_rng_t r;
  etsim_rng_seed(&r, 11);
  for (size_t n = 0; n <= 70; n++) {
    evheap_t h = {0};
    ev_t want[70];
    assert_int_equal(evheap_reserve(&h, n), 0);
    for (size_t k = 0; k < n; k++) {
      want[k] = (ev_t){(int64_t)etsim_rng_below(&r, 8) - 4, k, (uint32_t)k};
      assert_int_equal(evheap_push(&h, &want[k]), 0);
    }
    assert_int_equal(evheap_check(&h), 0);
    etsim_qsort(want, n, sizeof *want, cmp_ev);
    for (size_t k = 0; k < n; k++) {
      ev_t got;
      evheap_pop(&h, &got);
      assert_int_equal(got.t, want[k].t);
      assert_int_equal(got.seq, want[k].seq);
    }
    assert_int_equal(h.n, 0);
    evheap_free(&h);
  }
}

/* A check that can fail: a record moved above its parent is found. */
static void test_heap_check_finds_breach(void **s) {
  (void)s;
  evheap_t h = {0};
  for (uint64_t k = 0; k < 10; k++) {
    ev_t e = {(int64_t)k, k, 0};
    assert_int_equal(evheap_push(&h, &e), 0);
  }
  assert_int_equal(evheap_check(&h), 0);
  h.v[6].t = -1; /* child of record 1 */
  assert_int_equal(evheap_check(&h), 7);
  evheap_free(&h);
}

/* Out of memory: the push fails with ETSIM_ENOMEM and nothing changes. */
static void test_heap_nomem(void **s) {
  (void)s;
  evheap_t h = {0};
  ev_t e = {5, 0, 1};
  etsim_alloc_fail_after(1);
  assert_int_equal(evheap_push(&h, &e), ETSIM_ENOMEM);
  etsim_alloc_fail_after(0);
  assert_int_equal(h.n, 0);
  assert_int_equal(evheap_push(&h, &e), 0);
  size_t cap = h.cap;
  for (size_t k = 1; k < cap; k++) {
    ev_t f = {(int64_t)k, k, 0};
    assert_int_equal(evheap_push(&h, &f), 0);
  }
  etsim_alloc_fail_after(1);
  ev_t g = {-1, 99, 2};
  assert_int_equal(evheap_push(&h, &g), ETSIM_ENOMEM);
  etsim_alloc_fail_after(0);
  assert_int_equal(h.n, cap);
  assert_int_equal(h.v[0].t, 1); /* -1 did not go in */
  assert_int_equal(evheap_check(&h), 0);
  evheap_free(&h);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_heap_order),
      cmocka_unit_test(test_heap_sizes),
      cmocka_unit_test(test_heap_check_finds_breach),
      cmocka_unit_test(test_heap_nomem),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
