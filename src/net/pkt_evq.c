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
 * event, and every event in the calendar lies in buckets cur .. cur +
 * 2^nb_log - 1, so no two live buckets share a slot: an event joins only
 * within that window, or before cur when no live bucket lies beyond its
 * own window (the slots between it and cur are empty), becoming the new
 * cur.  (A bound of the latest bucket, kept at every push, cost 1.3 % of
 * the 128-host all-to-all's instructions; a push before cur came once in
 * 5,000 slow ones there.)
 */
#include "pkt_int.h"

#include <string.h>

void *etsim_net__pkt_grow_lines(void **mem, size_t *cap, const void *old, size_t n, size_t elem,
                                size_t first, size_t max) {
  size_t c = *cap ? 2 * *cap : first;
  if (c > max || c > (SIZE_MAX - 64) / elem) return NULL;
  void *m = etsim_malloc(c * elem + 64);
  if (!m) return NULL;
  etsim_advise_huge(m, c * elem + 64);
  void *v = (void *)(((uintptr_t)m + 63) & ~(uintptr_t)63);
  if (n) memcpy(v, old, n * elem);
  etsim_free(*mem);
  *mem = m;
  *cap = c;
  return v;
}

/* An insertion that would walk back past this many events of its bucket
 * goes to the heap instead.  The ones that walk are ends of serialisation
 * queued late with the number taken when the serialisation began, and on
 * a 1,024-host fabric dozens of ports start one at the same instant: a
 * short walk, then the heap (which holds few events once the flows have
 * started), was faster there than walks of 16.  A walk also stays in the
 * bucket's last chunk. */
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
  q->free = q->hch = PK_NONE;
  q->far_t = INT64_MAX;
  return 0;
}

void etsim_net__pkt_evq_free(pk_evq_t *q) {
  etsim_free(q->bkt);
  etsim_free(q->bits);
  etsim_free(q->ch_mem);
  pk_heap_free(&q->far);
  memset(q, 0, sizeof *q);
  q->far_t = INT64_MAX;
}

/* Move cur to the first non-empty bucket (the calendar is not empty). */
static void settle(pk_evq_t *q) {
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

void etsim_net__pkt_evq_chunk_done(pk_evq_t *q) {
  pk_evq_bucket_t *bk = &q->bkt[q->cur & q->mask];
  uint32_t c = bk->head;
  pk_evq_chunk_t *ch = &q->ch[c];
  bk->head = q->hch = ch->next;
  ch->next = q->free;
  q->free = c;
  if (bk->head != PK_NONE) {
    /* the next chunk's first lines, read from the next pop on */
    const char *nx = (const char *)&q->ch[bk->head];
    __builtin_prefetch(nx);
    __builtin_prefetch(nx + 64);
    __builtin_prefetch(nx + 128);
    return;
  }
  bk->tail = PK_NONE;
  uint64_t j = q->cur & q->mask;
  q->bits[j >> 6] &= ~((uint64_t)1 << (j & 63));
  if (--q->n_bkt) {
    settle(q);
    q->hch = q->bkt[q->cur & q->mask].head;
  }
}

/* A chunk from the free list, else a new one (the pool doubles; chunks are
 * addressed by index, so moving it is safe).  PK_NONE when out of memory. */
static uint32_t chunk_alloc(pk_evq_t *q) {
  uint32_t c = q->free;
  if (c != PK_NONE) {
    q->free = q->ch[c].next;
    return c;
  }
  if (q->n_ch == q->cap_ch) {
    pk_evq_chunk_t *v = etsim_net__pkt_grow_lines(&q->ch_mem, &q->cap_ch, q->ch, q->n_ch,
                                                  sizeof *q->ch, 64, PK_NONE - 1);
    if (!v) return PK_NONE;
    q->ch = v;
  }
  return (uint32_t)q->n_ch++;
}

/* Queue e in the heap (far_t follows its first event). */
static int far_push(pk_evq_t *q, const pk_ev_t *e) {
  int rc = pk_heap_push(&q->far, e);
  if (!rc && e->t < q->far_t) q->far_t = e->t;
  return rc;
}

/* 1 when one of the buckets a .. b - 1 (absolute, b - a within the
 * window) holds events. */
static int buckets_used(const pk_evq_t *q, uint64_t a, uint64_t b) {
  while (a < b) {
    uint64_t i = a & q->mask, nb = 64 - (i & 63); /* a word never wraps */
    uint64_t w = q->bits[i >> 6] >> (i & 63);
    if (b - a < nb) {
      nb = b - a;
      w &= ((uint64_t)1 << nb) - 1;
    }
    if (w) return 1;
    a += nb;
  }
  return 0;
}

/* 1 when queued event e runs before a new event (t, seq). */
static inline int runs_before(const pk_ev_t *e, int64_t t, uint64_t seq) {
  return e->t < t || (e->t == t && e->seq < seq);
}

int etsim_net__pkt_evq_push_slow(pk_evq_t *q, int64_t t, uint64_t seq, uint32_t kind, uint32_t a,
                                 uint64_t b, const void *hint) {
  pk_ev_t e = {t, seq, kind, a, b, hint};
  uint64_t bn = (uint64_t)t >> q->shift;
  pk_evq_bucket_t *bk = &q->bkt[bn & q->mask];
  /* The calendar's events lie in the window from cur; an event may join
   * within it, or widen it backwards (cur always names the earliest
   * event's bucket) when no live bucket is past the window from it: those
   * would lie in the slots of buckets bn .. cur - 1. */
  uint64_t lo = bn;
  if (q->n_bkt) {
    if (bn >= q->cur) {
      if (bn - q->cur > q->mask) return far_push(q, &e);
      lo = q->cur;
    } else if (q->cur - bn > q->mask || buckets_used(q, bn, q->cur)) return far_push(q, &e);
  } else if (bn - q->cur > q->mask) {
    /* An empty calendar's cur is the bucket of the last event popped (from
     * either side): an event beyond the window from there (the watchdog,
     * a timer) goes to the heap, or it would hold the window far ahead and
     * send every nearer event there (etsim sim's latency-bound rings,
     * whose calendar empties between messages, ran on the heap alone). */
    return far_push(q, &e);
  }
  if (bk->head == PK_NONE) {
    uint32_t c = chunk_alloc(q);
    if (c == PK_NONE) return ETSIM_ENOMEM;
    pk_evq_chunk_t *ch = &q->ch[c];
    ch->next = PK_NONE;
    ch->head = 0;
    ch->n = 1;
    ch->ev[0] = e;
    bk->head = bk->tail = c;
    q->bits[(bn & q->mask) >> 6] |= (uint64_t)1 << (bn & 63);
    q->n_bkt++;
  } else {
    /* The bucket is kept in (time, sequence) order: the event goes after
     * the last one that runs before it, looked for from the tail, since
     * nearly every event comes with the newest number and the few others
     * (an end of serialisation queued late, with the number taken when it
     * began) are at most a packet time old. */
    pk_evq_chunk_t *ch = &q->ch[bk->tail];
    uint32_t pos = ch->n, steps = 0;
    while (pos > ch->head && !runs_before(&ch->ev[pos - 1], t, seq)) {
      pos--;
      if (++steps == EVQ_WALK_MAX) return far_push(q, &e);
    }
    /* before the last chunk's first event, but earlier chunks exist */
    if (pos == ch->head && bk->head != bk->tail && steps) return far_push(q, &e);
    if (ch->n == PK_EVQ_CHUNK && ch->head > 0) {
      /* room at the front: shift the earlier ones down */
      memmove(&ch->ev[ch->head - 1], &ch->ev[ch->head], (pos - ch->head) * sizeof e);
      ch->head--;
      ch->ev[pos - 1] = e;
    } else {
      if (ch->n == PK_EVQ_CHUNK) {
        /* full: a new last chunk takes the last event (or the new one) */
        uint32_t c = chunk_alloc(q);
        if (c == PK_NONE) return ETSIM_ENOMEM;
        ch = &q->ch[bk->tail]; /* the pool may have moved */
        pk_evq_chunk_t *nc = &q->ch[c];
        nc->next = PK_NONE;
        nc->head = 0;
        nc->n = 1;
        ch->next = c;
        bk->tail = c;
        if (pos == PK_EVQ_CHUNK) {
          nc->ev[0] = e;
          goto done;
        }
        nc->ev[0] = ch->ev[PK_EVQ_CHUNK - 1];
        ch->n--;
      }
      memmove(&ch->ev[pos + 1], &ch->ev[pos], (ch->n - pos) * sizeof e);
      ch->ev[pos] = e;
      ch->n++;
    }
  }
done:
  q->cur = lo;
  q->hch = q->bkt[lo & q->mask].head;
  return 0;
}

int etsim_net__pkt_evq_push_new(pk_evq_t *q, int64_t t, uint64_t seq, uint32_t kind, uint32_t a,
                                uint64_t b, const void *hint) {
  uint32_t c = q->free;
  if (c == PK_NONE) /* the pool grows */
    return etsim_net__pkt_evq_push_slow(q, t, seq, kind, a, b, hint);
  /* bn is at or after cur and within the window from it (the inline
   * push's test): with no events in the calendar cur is the last popped
   * one's bucket, and bn becomes both ends of the span, as in push_slow */
  uint64_t bn = (uint64_t)t >> q->shift;
  pk_evq_chunk_t *ch = &q->ch[c];
  q->free = ch->next;
  ch->next = PK_NONE;
  ch->head = 0;
  ch->n = 1;
  pk_ev_t *x = &ch->ev[0];
  pk_ev_set(x, t, seq, kind, a, b, hint);
  pk_evq_bucket_t *bk = &q->bkt[bn & q->mask];
  bk->head = bk->tail = c;
  q->bits[(bn & q->mask) >> 6] |= (uint64_t)1 << (bn & 63);
  if (!q->n_bkt++) {
    q->cur = bn;
    q->hch = c;
  }
  return 0;
}

int etsim_net__pkt_evq_pop_slow(pk_evq_t *q, int64_t t_max, pk_ev_t *out) {
  if (q->n_bkt) {
    pk_evq_chunk_t *ch = &q->ch[q->hch];
    const pk_ev_t *x = &ch->ev[ch->head];
    const pk_ev_t *f = q->far.v;
    if (!q->far.n || x->t < f->t || (x->t == f->t && x->seq < f->seq)) {
      if (x->t > t_max) return 0;
      *out = *x;
      if (++ch->head == ch->n) etsim_net__pkt_evq_chunk_done(q);
      return 1;
    }
  }
  if (!q->far.n || q->far.v[0].t > t_max) return 0;
  pk_heap_pop(&q->far, out);
  q->far_t = q->far.n ? q->far.v[0].t : INT64_MAX;
  if (!q->n_bkt) q->cur = (uint64_t)out->t >> q->shift; /* see push_slow */
  return 1;
}

size_t etsim_net__pkt_evq_size(const pk_evq_t *q) {
  size_t n = q->far.n;
  for (size_t w = 0; q->n_bkt && w <= q->mask >> 6; w++)
    for (uint64_t word = q->bits[w]; word; word &= word - 1) {
      const pk_evq_bucket_t *bk = &q->bkt[w * 64 + (size_t)__builtin_ctzll(word)];
      for (uint32_t c = bk->head; c != PK_NONE; c = q->ch[c].next) n += q->ch[c].n - q->ch[c].head;
    }
  return n;
}
