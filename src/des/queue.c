/* The event queue: a 4-ary min-heap on (t_ps, seq) stored by value.
 *
 * A 4-ary heap halves the depth of a binary one and keeps the four children
 * of a node in one cache line pair, which is what matters when the heap
 * holds a few thousand events (the common case in a simulation).
 */
#include "etsim/des.h"

#include "etsim/base.h"

#include <string.h>

void etsim_des_init(etsim_des_t *q) { memset(q, 0, sizeof *q); }

void etsim_des_free(etsim_des_t *q) {
  etsim_free(q->heap);
  memset(q, 0, sizeof *q);
}

static inline int before(const etsim_des_event_t *x, const etsim_des_event_t *y) {
  return x->t_ps < y->t_ps || (x->t_ps == y->t_ps && x->seq < y->seq);
}

int etsim_des_push(etsim_des_t *q, int64_t t_ps, uint32_t type, uint32_t a, uint64_t b) {
  if (t_ps > ETSIM_DES_HORIZON_PS) return ETSIM_ERANGE;
  ETSIM_ASSERT(t_ps >= q->now_ps); /* no event is scheduled in the past */
  if (q->n == q->cap) {
    int rc = etsim_grow((void **)&q->heap, &q->cap, q->n + 1, sizeof *q->heap);
    if (rc) return rc;
  }
  etsim_des_event_t ev = {t_ps, q->next_seq++, type, a, b};
  size_t i = q->n++;
  while (i > 0) {
    size_t p = (i - 1) / 4;
    if (!before(&ev, &q->heap[p])) break;
    q->heap[i] = q->heap[p];
    i = p;
  }
  q->heap[i] = ev;
  if (q->n > q->max_pending) q->max_pending = q->n;
  return 0;
}

int etsim_des_pop(etsim_des_t *q, etsim_des_event_t *out) {
  if (q->n == 0) return 0;
  *out = q->heap[0];
  ETSIM_ASSERT(out->t_ps >= q->now_ps); /* the clock never runs backwards */
  q->now_ps = out->t_ps;
  q->n_popped++;
  etsim_des_event_t last = q->heap[--q->n];
  size_t n = q->n, i = 0;
  for (;;) {
    size_t c = 4 * i + 1;
    if (c >= n) break;
    size_t best = c, end = c + 4 < n ? c + 4 : n;
    for (size_t k = c + 1; k < end; k++)
      if (before(&q->heap[k], &q->heap[best])) best = k;
    if (!before(&q->heap[best], &last)) break;
    q->heap[i] = q->heap[best];
    i = best;
  }
  if (n) q->heap[i] = last;
  return 1;
}
