/*
 * test_pkt_evq.c — the packet engine's event queue (calendar in front of a
 * heap) hands out events in exactly (time, insertion sequence) order, the
 * order the heap alone gives, whatever its bucket width and window: a
 * random discrete-event run is checked pop by pop against a plain list
 * searched for its minimum.  The mix of delays covers ties at one instant,
 * bursts that overflow a bucket, events beyond the window and events far
 * behind the calendar's latest one, and events queued with a sequence
 * number taken earlier (as the engine does for ns-3's tie order).
 */
#include "test_util.h"

#include "net/pkt_int.h"

typedef struct {
  int64_t t;
  uint64_t seq;
  uint32_t a;
} ref_ev_t;

typedef struct {
  ref_ev_t *v;
  size_t n, cap;
  uint64_t next_seq;
} ref_t;

static void ref_push(ref_t *r, int64_t t, uint32_t a) {
  if (r->n == r->cap) {
    r->cap = r->cap ? 2 * r->cap : 256;
    r->v = realloc(r->v, r->cap * sizeof *r->v);
  }
  r->v[r->n++] = (ref_ev_t){t, r->next_seq++, a};
}

static void ref_push_seq(ref_t *r, int64_t t, uint64_t seq, uint32_t a) {
  if (r->n == r->cap) {
    r->cap = r->cap ? 2 * r->cap : 256;
    r->v = realloc(r->v, r->cap * sizeof *r->v);
  }
  r->v[r->n++] = (ref_ev_t){t, seq, a};
}

static ref_ev_t ref_pop(ref_t *r) {
  size_t best = 0;
  for (size_t i = 1; i < r->n; i++)
    if (r->v[i].t < r->v[best].t || (r->v[i].t == r->v[best].t && r->v[i].seq < r->v[best].seq))
      best = i;
  ref_ev_t e = r->v[best];
  r->v[best] = r->v[--r->n];
  return e;
}

/* One random run: pops until `events` were handed out, each pop pushing
 * 0-2 events at now + a delay drawn from a mix. */
static void run(uint32_t shift, uint32_t nb_log, uint64_t seed, size_t events) {
  pk_evq_t q;
  assert_int_equal(etsim_net__pkt_evq_init(&q, shift, nb_log), 0);
  ref_t r = {0};
  etsim_rng_t rng;
  etsim_rng_seed(&rng, seed);
  uint32_t tag = 0;
  for (int i = 0; i < 64; i++) {
    int64_t t = (int64_t)etsim_rng_below(&rng, 5000);
    assert_int_equal(pk_evq_push(&q, t, 1, tag, tag), 0);
    ref_push(&r, t, tag++);
  }
  size_t popped = 0;
  int64_t now = 0;
  /* sequence numbers taken now and used by a later push */
  uint64_t held[8];
  int n_held = 0;
  while (popped < events && r.n) {
    /* (a walk over the calendar: every 256th pop) */
    if (popped % 256 == 0) assert_int_equal(pk_evq_size(&q), r.n);
    ref_ev_t want = ref_pop(&r);
    const pk_ev_t *head = pk_evq_peek(&q); /* the very event popped next */
    assert_non_null(head);
    assert_int_equal(head->t, want.t);
    assert_int_equal(head->seq, want.seq);
    pk_ev_t got = {0};
    if (want.t > 0) /* an earlier limit leaves the event queued */
      assert_int_equal(pk_evq_pop_until(&q, want.t - 1, &got), 0);
    assert_int_equal(pk_evq_pop_until(&q, want.t, &got), 1);
    if (got.t != want.t || got.seq != want.seq || got.a != want.a)
      print_message("pop %zu: got (%lld, %llu, %u) want (%lld, %llu, %u)\n", popped,
                    (long long)got.t, (unsigned long long)got.seq, got.a, (long long)want.t,
                    (unsigned long long)want.seq, want.a);
    assert_int_equal(got.t, want.t);
    assert_int_equal(got.seq, want.seq);
    assert_int_equal(got.a, want.a);
    assert_int_equal(got.b, want.a);
    TU_GE(got.t, now);
    now = got.t;
    popped++;
    int k = (int)etsim_rng_below(&rng, 100);
    int pushes = k < 20 ? 0 : k < 80 ? 1 : 2;
    if (r.n < 16) pushes = 2;
    for (int j = 0; j < pushes; j++) {
      uint64_t m = etsim_rng_below(&rng, 100);
      int64_t d = m < 10   ? 0                                 /* same instant */
                  : m < 15 ? (int64_t)etsim_rng_below(&rng, 3) /* near ties */
                  : m < 70 ? (int64_t)etsim_rng_below(&rng, 100000)
                  : m < 99 ? 1000000 + (int64_t)etsim_rng_below(&rng, 100000)
                           : (int64_t)etsim_rng_below(&rng, 10000000);
      assert_int_equal(pk_evq_push(&q, now + d, 1, tag, tag), 0);
      ref_push(&r, now + d, tag++);
    }
    /* take a number now, queue its event later (at or after that time) */
    if (n_held < 8 && etsim_rng_below(&rng, 100) < 20) {
      assert_int_equal(q.next_seq, r.next_seq);
      held[n_held++] = q.next_seq++;
      r.next_seq++;
    }
    if (n_held && etsim_rng_below(&rng, 100) < 20) {
      uint64_t seq = held[--n_held];
      int64_t d = (int64_t)etsim_rng_below(&rng, 3) * 500;
      assert_int_equal(pk_evq_push_seq(&q, now + d, seq, 1, tag, tag), 0);
      ref_push_seq(&r, now + d, seq, tag++);
    }
    /* a burst at one instant overflows its bucket into the heap */
    if (popped % 5000 == 0)
      for (int j = 0; j < 100; j++) {
        assert_int_equal(pk_evq_push(&q, now + 777, 1, tag, tag), 0);
        ref_push(&r, now + 777, tag++);
      }
  }
  assert_int_equal(popped, events);
  while (r.n) { /* drain */
    ref_ev_t want = ref_pop(&r);
    pk_ev_t got;
    assert_int_equal(pk_evq_pop_until(&q, INT64_MAX, &got), 1);
    assert_int_equal(got.seq, want.seq);
  }
  pk_ev_t none;
  assert_int_equal(pk_evq_size(&q), 0);
  assert_null(pk_evq_peek(&q));
  assert_int_equal(pk_evq_pop_until(&q, INT64_MAX, &none), 0);
  free(r.v);
  etsim_net__pkt_evq_free(&q);
}

static void order_matches_heap(void **s) {
  (void)s;
  run(10, 13, 1, 200000); /* the sizes a 100 Gb/s fabric gets */
  run(0, 6, 2, 100000);   /* 64 ps window: nearly all in the heap */
  run(6, 8, 3, 100000);   /* buckets shared by wrap-around */
  run(17, 6, 4, 100000);  /* wide buckets: long sorted lists */
  run(20, 20, 5, 50000);  /* everything in one window */
  run(22, 8, 6, 100000);  /* hundreds of events a bucket: many chunks each */
}

/* A latency-bound run (etsim sim's rings): one event pending at a time,
 * each pop queueing the next a link delay later, and a watchdog far
 * beyond the window.  The watchdog goes to the heap, not into the empty
 * calendar, where it would hold the window 10 ms ahead and send every
 * nearer event to the heap; and after a gap that only the heap spans (an
 * event 1 ms on), the calendar takes events again from the time reached. */
static void sparse_run_keeps_calendar(void **s) {
  (void)s;
  pk_evq_t q;
  assert_int_equal(etsim_net__pkt_evq_init(&q, 9, 14), 0); /* 512 ps buckets, 8.4 us window */
  const int64_t delay = 1000000, dog = 10000000000;
  int64_t now = 0;
  pk_ev_t e;
  assert_int_equal(pk_evq_push(&q, now, 1, 1, 0), 0);
  for (int i = 0; i < 3000; i++) {
    assert_int_equal(pk_evq_pop_until(&q, INT64_MAX, &e), 1);
    assert_int_equal(e.t, now);
    assert_int_equal(e.a, 1);
    if (i == 0) assert_int_equal(pk_evq_push(&q, dog, 1, 2, 0), 0);
    now += i == 1000 ? 1000 * delay : delay;
    assert_int_equal(pk_evq_push(&q, now, 1, 1, 0), 0);
    if (i == 1000) { /* beyond the window from the last event: the heap */
      assert_int_equal(q.n_bkt, 0);
      assert_int_equal(q.far.n, 2);
      continue;
    }
    assert_int_equal(pk_evq_size(&q) - q.far.n, 1); /* the next event */
    assert_int_equal(q.n_bkt, 1);
    assert_int_equal(q.far.n, 1); /* the watchdog */
    assert_int_equal(q.far.v[0].a, 2);
  }
  assert_int_equal(pk_evq_pop_until(&q, INT64_MAX, &e), 1);
  assert_int_equal(e.a, 1);
  assert_int_equal(pk_evq_pop_until(&q, INT64_MAX, &e), 1);
  assert_int_equal(e.t, dog);
  etsim_net__pkt_evq_free(&q);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(order_matches_heap),
      cmocka_unit_test(sparse_run_keeps_calendar),
  };
  return TU_RUN(tests, NULL, NULL);
}
