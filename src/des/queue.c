/* The event queue: FIFO buckets per distinct time, a 4-ary heap of times
 * (base's ETSIM_HEAP_DEFINE, as the packet engine's and replay's).
 *
 * A bucket is a growable array of 16-byte slots (type, a, b) drained from
 * `head`; its time is kept once.  The heap holds (time, bucket) pairs of
 * every pending time except the bucket being drained, which is `cur`.
 * Pushes for the time being drained (zero-delay events) append to `cur` and
 * so run after everything scheduled earlier for that instant, as the
 * (time, sequence) order requires.  A drained bucket leaves the hash and
 * the heap only when the next pop moves on, so late pushes for its instant
 * still find it.
 */
#include "etsim/des.h"

#include "etsim/base.h"

#include <string.h>

struct etsim_des_slot {
  uint32_t type, a;
  uint64_t b;
};

/* Provenance of a slot (only when tracking). */
typedef struct prov {
  int64_t push_ps;
  uint32_t pusher;
} prov_t;

struct etsim_des_bucket {
  int64_t t;
  etsim_des_slot_t *v;
  prov_t *pv; /* parallel to v when tracking */
  uint32_t n, cap, head;
  uint32_t next_free;
};

#define NONE UINT32_MAX

void etsim_des_init(etsim_des_t *q) {
  memset(q, 0, sizeof *q);
  q->free_bk = q->cur = q->last_bk = NONE;
}

void etsim_des_track(etsim_des_t *q) { q->track = 1; }

void etsim_des_free(etsim_des_t *q) {
  for (size_t i = 0; i < q->n_bk; i++) {
    etsim_free(q->bk[i].v);
    etsim_free(q->bk[i].pv);
  }
  etsim_free(q->bk);
  etsim_des__theap_free(&q->th);
  etsim_free(q->hkey);
  etsim_free(q->hval);
  etsim_des_init(q);
}

/* ------------------------------------------------------- time -> bucket */

static size_t hslot(int64_t t, size_t cap) { return etsim_hash_u64((uint64_t)t) & (cap - 1); }

static int hgrow(etsim_des_t *q) {
  size_t cap = q->hcap ? q->hcap * 2 : 64;
  int64_t *k = etsim_malloc(cap * sizeof *k);
  uint32_t *v = etsim_calloc(cap, sizeof *v);
  if (!k || !v) {
    etsim_free(k);
    etsim_free(v);
    return ETSIM_ENOMEM;
  }
  for (size_t i = 0; i < q->hcap; i++) {
    if (!q->hval[i]) continue;
    size_t j = hslot(q->hkey[i], cap);
    while (v[j]) j = (j + 1) & (cap - 1);
    k[j] = q->hkey[i];
    v[j] = q->hval[i];
  }
  etsim_free(q->hkey);
  etsim_free(q->hval);
  q->hkey = k;
  q->hval = v;
  q->hcap = cap;
  return 0;
}

static uint32_t hget(const etsim_des_t *q, int64_t t) {
  if (!q->hcap) return NONE;
  size_t m = q->hcap - 1, j = hslot(t, q->hcap);
  while (q->hval[j]) {
    if (q->hkey[j] == t) return q->hval[j] - 1;
    j = (j + 1) & m;
  }
  return NONE;
}

/* Remove t (present), shifting later members of its probe run back. */
static void hdel(etsim_des_t *q, int64_t t) {
  size_t m = q->hcap - 1, j = hslot(t, q->hcap);
  while (q->hkey[j] != t || !q->hval[j]) j = (j + 1) & m;
  for (;;) {
    q->hval[j] = 0;
    size_t k = j;
    for (;;) {
      k = (k + 1) & m;
      if (!q->hval[k]) return;
      size_t home = hslot(q->hkey[k], q->hcap);
      /* k may move into the hole at j unless its home lies in (j, k]. */
      if (j <= k ? (home <= j || home > k) : (home <= j && home > k)) break;
    }
    q->hkey[j] = q->hkey[k];
    q->hval[j] = q->hval[k];
    j = k;
  }
}

/* ------------------------------------------------------------- buckets */

/* The bucket for time t, created (and entered in the heap and hash) when
 * absent.  NONE on allocation failure, with nothing changed. */
static uint32_t bucket_for(etsim_des_t *q, int64_t t) {
  if (t == q->last_t && q->last_bk != NONE) return q->last_bk;
  uint32_t b = hget(q, t);
  if (b == NONE) {
    size_t live = q->th.n + (q->cur != NONE);
    if ((live + 1) * 2 > q->hcap && hgrow(q)) return NONE;
    if (etsim_des__theap_reserve(&q->th, q->th.n + 1)) return NONE; /* so the push cannot fail */
    if (q->free_bk != NONE) {
      b = q->free_bk;
      q->free_bk = q->bk[b].next_free;
    } else {
      if (q->n_bk == q->cap_bk &&
          etsim_grow((void **)&q->bk, &q->cap_bk, q->n_bk + 1, sizeof *q->bk))
        return NONE;
      b = (uint32_t)q->n_bk++;
      memset(&q->bk[b], 0, sizeof q->bk[b]);
    }
    q->bk[b].t = t;
    q->bk[b].n = q->bk[b].head = 0;
    size_t m = q->hcap - 1, j = hslot(t, q->hcap);
    while (q->hval[j]) j = (j + 1) & m;
    q->hkey[j] = t;
    q->hval[j] = b + 1;
    etsim_des__theap_push(&q->th, &(etsim_des_tkey_t){t, b});
    if (q->th.n + 1 > q->max_times) q->max_times = q->th.n + 1;
  }
  q->last_t = t;
  q->last_bk = b;
  return b;
}

int etsim_des_push(etsim_des_t *q, int64_t t_ps, uint32_t type, uint32_t a, uint64_t b) {
  if (t_ps > ETSIM_DES_HORIZON_PS) return ETSIM_ERANGE;
  ETSIM_ASSERT(t_ps >= q->now_ps); /* no event is scheduled in the past */
  uint32_t k = bucket_for(q, t_ps);
  if (k == NONE) return ETSIM_ENOMEM;
  etsim_des_bucket_t *bk = &q->bk[k];
  if (bk->n == bk->cap) {
    size_t cap = bk->cap;
    if (etsim_grow((void **)&bk->v, &cap, (size_t)bk->n + 1, sizeof *bk->v)) return ETSIM_ENOMEM;
    if (q->track) {
      prov_t *pv = etsim_realloc(bk->pv, cap * sizeof *pv);
      if (!pv) return ETSIM_ENOMEM;
      bk->pv = pv;
    }
    bk->cap = (uint32_t)cap;
  }
  if (q->track) bk->pv[bk->n] = (prov_t){q->now_ps, q->pusher};
  bk->v[bk->n++] = (etsim_des_slot_t){type, a, b};
  if (++q->n > q->max_pending) q->max_pending = q->n;
  return 0;
}

int etsim_des_pop(etsim_des_t *q, etsim_des_event_t *out) {
  for (;;) {
    if (q->cur != NONE) {
      etsim_des_bucket_t *bk = &q->bk[q->cur];
      if (bk->head < bk->n) {
        if (q->track) {
          q->popped_push_ps = bk->pv[bk->head].push_ps;
          q->popped_pusher = bk->pv[bk->head].pusher;
        }
        etsim_des_slot_t s = bk->v[bk->head++];
        ETSIM_ASSERT(bk->t >= q->now_ps); /* the clock never runs backwards */
        out->t_ps = bk->t;
        out->seq = q->n_popped++;
        out->type = s.type;
        out->a = s.a;
        out->b = s.b;
        q->now_ps = bk->t;
        q->n--;
        return 1;
      }
      /* Drained: retire it (its array stays for the next time). */
      hdel(q, bk->t);
      if (q->last_bk == q->cur) q->last_bk = NONE;
      bk->next_free = q->free_bk;
      q->free_bk = q->cur;
      q->cur = NONE;
    }
    if (q->th.n == 0) return 0;
    etsim_des_tkey_t top;
    etsim_des__theap_pop(&q->th, &top);
    q->cur = top.bucket;
  }
}

int64_t etsim_des_next_time(const etsim_des_t *q) {
  if (q->cur != NONE && q->bk[q->cur].head < q->bk[q->cur].n) return q->bk[q->cur].t;
  return q->th.n ? q->th.v[0].t : INT64_MAX;
}

int etsim_des_peek(const etsim_des_t *q, uint32_t k, uint32_t *type, uint64_t *b) {
  if (q->cur == NONE) return 0;
  const etsim_des_bucket_t *bk = &q->bk[q->cur];
  if ((uint64_t)bk->head + k >= bk->n) return 0;
  const etsim_des_slot_t *s = &bk->v[bk->head + k];
  *type = s->type;
  *b = s->b;
  return 1;
}
