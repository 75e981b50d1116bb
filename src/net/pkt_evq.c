/*
 * pkt_evq.c — the packet engine's event queue: a calendar of time buckets
 * in front of the 4-ary heap.
 *
 * Nearly every packet-level event lands a serialisation time or one link
 * delay after now, so the pending events of a busy fabric sit in a window
 * about one link delay wide.  A calendar of 2^nb_log buckets, each 2^shift
 * ps wide, keeps them in time order at a cost that does not grow with the
 * number of pending events: a push appends to (or, rarely, walks back along) a short
 * bucket list kept sorted by (time, sequence), a pop takes the head of the
 * first non-empty bucket, found through a bitmap.  Events outside the
 * window (timers, the watchdog, flows that start later) and inserts that
 * would walk far into a crowded bucket go to the heap.  Pop compares the two
 * heads, so the queue hands out events in exactly the (time, sequence) order
 * the heap alone would: the calendar only makes it cheaper, and results do not
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

/* An insertion that would walk back past this many events of its bucket
 * goes to the heap instead.  The ones that walk are ends of serialisation
 * queued late with the number taken when the serialisation began, and on
 * a 1,024-host fabric dozens of ports start one at the same instant: a
 * short walk, then the heap (which holds few events once the flows have
 * started), was faster there than walks of 16. */
#define EVQ_WALK_MAX 4

int etsim_net__pkt_evq_init(pk_evq_t *q, uint32_t shift, uint32_t nb_log) {
  memset(q, 0, sizeof *q);
  if (nb_log < 6) /* bucket b's bit is b & 63 in word (b & mask) >> 6 */
    nb_log = 6;
  q->shift = shift;
  q->mask = ((uint64_t)1 << nb_log) - 1;
  size_t nb = (size_t)1 << nb_log;
  q->bkt = etsim_malloc(nb * sizeof *q->bkt);
  q->bits = etsim_calloc(nb / 64 ? nb / 64 : 1, sizeof *q->bits);
  if (!q->bkt || !q->bits) {
    etsim_net__pkt_evq_free(q);
    return ETSIM_ENOMEM;
  }
  for (size_t i = 0; i < nb; i++) q->bkt[i].head = q->bkt[i].tail = PK_NONE;
  q->free = PK_NONE;
  return 0;
}

void etsim_net__pkt_evq_free(pk_evq_t *q) {
  etsim_free(q->bkt);
  etsim_free(q->bits);
  etsim_free(q->node);
  pk_heap_free(&q->far);
  memset(q, 0, sizeof *q);
}

void etsim_net__pkt_evq_settle(pk_evq_t *q) {
  uint64_t i = q->cur & q->mask;
  size_t w = (size_t)(i >> 6), nw = ((size_t)q->mask >> 6) + 1;
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

/* 1 when queued event e runs before a new event (t, seq). */
static inline int runs_before(const pk_ev_t *e, int64_t t, uint64_t seq) {
  return e->t < t || (e->t == t && e->seq < seq);
}

int etsim_net__pkt_evq_push_slow(pk_evq_t *q, int64_t t, uint64_t seq, uint32_t kind, uint32_t a,
                                 uint64_t b) {
  uint64_t bn = (uint64_t)t >> q->shift;
  pk_evq_bucket_t *bk = &q->bkt[bn & q->mask];
  /* The calendar spans buckets cur..hi; an event may widen that span (also
   * backwards: cur always names the earliest event's bucket) as long as it
   * stays within the window. */
  uint64_t lo = bn, hi = bn;
  if (q->n_cal) {
    lo = bn < q->cur ? bn : q->cur;
    hi = bn > q->hi ? bn : q->hi;
  }
  /* The bucket is kept in (time, sequence) order: the event goes after
   * the last one that runs before it, looked for from the tail, since
   * nearly every event comes with the newest number and the few others
   * (an end of serialisation queued late, with the number taken when it
   * began) are at most a packet time old. */
  uint32_t prev = PK_NONE; /* insert after this node; NONE: at the head */
  if (hi - lo > q->mask) goto far;
  if (bk->head != PK_NONE) {
    uint32_t p = bk->tail, steps = 0;
    while (!runs_before(&q->node[p].ev, t, seq)) {
      if (p == bk->head) {
        p = PK_NONE;
        break;
      }
      p = q->node[p].prev;
      if (++steps == EVQ_WALK_MAX) goto far;
    }
    prev = p;
  }
  uint32_t i = q->free;
  if (i != PK_NONE) q->free = q->node[i].next;
  else {
    if (q->n_node == q->cap_node &&
        (q->n_node >= PK_NONE - 1 ||
         etsim_grow((void **)&q->node, &q->cap_node, q->n_node + 1, sizeof *q->node)))
      return ETSIM_ENOMEM;
    i = (uint32_t)q->n_node++;
  }
  pk_evq_node_t *x = &q->node[i];
  x->ev.t = t;
  x->ev.seq = seq;
  x->ev.kind = kind;
  x->ev.a = a;
  x->ev.b = b;
  if (bk->head == PK_NONE) {
    x->next = PK_NONE;
    bk->head = bk->tail = i;
    q->bits[(bn & q->mask) >> 6] |= (uint64_t)1 << (bn & 63);
  } else if (prev == PK_NONE) {
    x->next = bk->head;
    q->node[bk->head].prev = i;
    bk->head = i;
  } else {
    x->prev = prev;
    x->next = q->node[prev].next;
    q->node[prev].next = i;
    if (prev == bk->tail) bk->tail = i;
    else q->node[x->next].prev = i;
  }
  q->cur = lo;
  q->hi = hi;
  q->n_cal++;
  return 0;
far:;
  pk_ev_t e = {t, seq, kind, a, b};
  return pk_heap_push(&q->far, &e);
}

int etsim_net__pkt_evq_pop_slow(pk_evq_t *q, int64_t t_max, pk_ev_t *out) {
  if (q->n_cal) {
    pk_evq_bucket_t *bk = &q->bkt[q->cur & q->mask];
    uint32_t i = bk->head;
    pk_evq_node_t *x = &q->node[i];
    const pk_ev_t *f = q->far.v;
    if (!q->far.n || x->ev.t < f->t || (x->ev.t == f->t && x->ev.seq < f->seq)) {
      if (x->ev.t > t_max) return 0;
      *out = x->ev;
      bk->head = x->next;
      x->next = q->free;
      q->free = i;
      if (--q->n_cal && bk->head != PK_NONE) return 1;
      if (bk->head == PK_NONE) {
        uint64_t j = q->cur & q->mask;
        bk->tail = PK_NONE;
        q->bits[j >> 6] &= ~((uint64_t)1 << (j & 63));
      }
      if (q->n_cal) etsim_net__pkt_evq_settle(q);
      return 1;
    }
  }
  if (!q->far.n || q->far.v[0].t > t_max) return 0;
  pk_heap_pop(&q->far, out);
  return 1;
}
