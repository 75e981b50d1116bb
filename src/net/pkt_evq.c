/*
 * pkt_evq.c — the packet engine's event queue: a calendar of time buckets
 * in front of the 4-ary heap.
 *
 * Nearly every packet-level event lands a serialisation time or one link
 * delay after now, so the pending events of a busy fabric sit in a window
 * about one link delay wide.  A calendar of 2^nb_log buckets, each 2^shift
 * ps wide, keeps them in time order at a cost that does not grow with the
 * number of pending events: a push appends to (or, rarely, walks) a short
 * bucket list kept sorted by (time, sequence), a pop takes the head of the
 * first non-empty bucket, found through a bitmap.  Events outside the
 * window (timers, the watchdog, flows that start later) and events that
 * would crowd one bucket go to the heap.  Pop compares the two heads, so
 * the queue hands out events in exactly the (time, sequence) order the
 * heap alone would: the calendar only makes it cheaper, and results do not
 * depend on shift and nb_log.
 *
 * The window slides with time: bucket b (absolute, time >> shift) is
 * stored at b mod 2^nb_log.  cur is the bucket of the earliest calendar
 * event and hi an upper bound of the latest; an event joins the calendar
 * only if hi - cur stays below 2^nb_log, so no two live buckets share a
 * slot.
 */
#include "pkt_int.h"

#include <string.h>

/* A bucket list longer than this sends further events to the heap: a
 * burst at one instant (all flows starting together) then costs a heap
 * push each, never a quadratic walk. */
#define EVQ_BUCKET_MAX 24

int pk_evq_init(pk_evq_t *q, uint32_t shift, uint32_t nb_log) {
  memset(q, 0, sizeof *q);
  q->shift = shift;
  q->nb_log = nb_log;
  size_t nb = (size_t)1 << nb_log;
  q->bkt = etsim_malloc(nb * sizeof *q->bkt);
  q->bits = etsim_calloc(nb / 64 ? nb / 64 : 1, sizeof *q->bits);
  if (!q->bkt || !q->bits) {
    pk_evq_free(q);
    return ETSIM_ENOMEM;
  }
  for (size_t i = 0; i < nb; i++) {
    q->bkt[i].head = q->bkt[i].tail = PK_NONE;
    q->bkt[i].len = 0;
  }
  q->free = PK_NONE;
  return 0;
}

void pk_evq_free(pk_evq_t *q) {
  etsim_free(q->bkt);
  etsim_free(q->bits);
  etsim_free(q->node);
  etsim_free(q->far.v);
  memset(q, 0, sizeof *q);
}

static inline int key_less(int64_t t1, uint64_t s1, int64_t t2, uint64_t s2) {
  return t1 < t2 || (t1 == t2 && s1 < s2);
}

/* Advance cur to the first non-empty bucket (the calendar is not empty). */
static void settle(pk_evq_t *q) {
  uint64_t mask = ((uint64_t)1 << q->nb_log) - 1;
  uint64_t i = q->cur & mask;
  size_t w = (size_t)(i >> 6), nw = ((size_t)mask >> 6) + 1;
  uint64_t word = q->bits[w] & (~(uint64_t)0 << (i & 63));
  uint64_t skipped = 0; /* buckets passed, counted from word w's bit 0 */
  while (!word) {
    skipped += 64;
    w = w + 1 == nw ? 0 : w + 1;
    word = q->bits[w];
  }
  uint64_t bit = (uint64_t)__builtin_ctzll(word);
  q->cur += skipped + bit - (i & 63);
}

int pk_evq_push(pk_evq_t *q, int64_t t, uint32_t kind, uint32_t a, uint64_t b) {
  uint64_t seq = q->next_seq++;
  uint64_t bn = (uint64_t)t >> q->shift;
  uint64_t mask = ((uint64_t)1 << q->nb_log) - 1;
  pk_evq_bucket_t *bk = &q->bkt[bn & mask];
  /* The calendar spans buckets lo..hi; an event may widen that span (also
   * backwards: cur always names the earliest event's bucket) as long as it
   * stays within the window. */
  uint64_t lo = bn, hi = bn;
  if (q->n_cal) {
    lo = bn < q->cur ? bn : q->cur;
    hi = bn > q->hi ? bn : q->hi;
  }
  if (hi - lo > mask || bk->len >= EVQ_BUCKET_MAX) {
    pk_ev_t e = {t, seq, kind, a, b};
    return pk_heap_push_ev(&q->far, &e);
  }
  q->cur = lo;
  q->hi = hi;
  uint32_t i = q->free;
  if (i != PK_NONE)
    q->free = q->node[i].next;
  else {
    if (q->n_node == q->cap_node &&
        (q->n_node >= PK_NONE - 1 ||
         etsim_grow((void **)&q->node, &q->cap_node, q->n_node + 1,
                    sizeof *q->node)))
      return ETSIM_ENOMEM;
    i = (uint32_t)q->n_node++;
  }
  pk_evq_node_t *x = &q->node[i];
  x->ev.t = t;
  x->ev.seq = seq;
  x->ev.kind = kind;
  x->ev.a = a;
  x->ev.b = b;
  /* The newest sequence number goes after every event of its time: at the
   * tail unless a later time is already queued in this bucket. */
  if (bk->head == PK_NONE) {
    x->next = PK_NONE;
    bk->head = bk->tail = i;
    q->bits[(bn & mask) >> 6] |= (uint64_t)1 << (bn & 63);
  } else if (q->node[bk->tail].ev.t <= t) {
    x->next = PK_NONE;
    q->node[bk->tail].next = i;
    bk->tail = i;
  } else if (q->node[bk->head].ev.t > t) {
    x->next = bk->head;
    bk->head = i;
  } else {
    uint32_t p = bk->head;
    while (q->node[q->node[p].next].ev.t <= t)
      p = q->node[p].next;
    x->next = q->node[p].next;
    q->node[p].next = i;
  }
  bk->len++;
  q->n_cal++;
  return 0;
}

void pk_evq_pop(pk_evq_t *q, pk_ev_t *out) {
  if (q->n_cal) {
    pk_evq_bucket_t *bk = &q->bkt[q->cur & (((uint64_t)1 << q->nb_log) - 1)];
    pk_evq_node_t *x = &q->node[bk->head];
    if (!q->far.n ||
        key_less(x->ev.t, x->ev.seq, q->far.v[0].t, q->far.v[0].seq)) {
      *out = x->ev;
      uint32_t i = bk->head;
      bk->head = x->next;
      x->next = q->free;
      q->free = i;
      bk->len--;
      if (bk->head == PK_NONE) {
        uint64_t j = q->cur & (((uint64_t)1 << q->nb_log) - 1);
        bk->tail = PK_NONE;
        q->bits[j >> 6] &= ~((uint64_t)1 << (j & 63));
        if (--q->n_cal)
          settle(q);
      } else
        q->n_cal--;
      return;
    }
  }
  pk_heap_pop(&q->far, out);
}
