/*
 * etsim/des.h — the discrete-event core: one priority queue of small
 * fixed-size events.
 *
 * Events are ordered by (time, insertion sequence), so a run is
 * deterministic: two events at the same time fire in the order they were
 * scheduled.  The queue does not call functions itself: the owner pops an
 * event and dispatches on `type`, which keeps the hot loop a switch instead
 * of an indirect call per event.
 *
 * Simulations of collectives schedule many events for one instant (every
 * NPU of a ring sends at the same time; 8,192 NPUs give about 8,000 events
 * per distinct time), so events are kept in one FIFO bucket per distinct
 * time: a push appends to its time's bucket (found through a one-entry
 * cache, else a hash of pending times) and a pop reads the current bucket
 * in order; only distinct times go through a 4-ary heap.  FIFO within a
 * bucket is insertion order, so the order is exactly (time, sequence).
 * Bucket arrays are reused, so nothing is allocated per event once the
 * queue has grown to its peak.
 *
 * Time is an int64 count of picoseconds.
 */
#ifndef ETSIM_DES_H
#define ETSIM_DES_H

#include "etsim/base.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ETSIM_PS_PER_NS 1000

/* The simulated clock's horizon, 2^62 ps (about 53 days of simulated time).
 * No event is queued beyond it, and every delay a model computes is checked
 * against it before it is added to a time, so the clock never wraps: two
 * values under the horizon sum below 2^63.  A run that would pass it stops
 * with ETSIM_ERANGE. */
#define ETSIM_DES_HORIZON_PS ((int64_t)1 << 62)
#define ETSIM_DES_HORIZON_NS (ETSIM_DES_HORIZON_PS / ETSIM_PS_PER_NS)

/* 1 when `ns` (a delay from a model's arithmetic in double) is a finite,
 * non-negative number of nanoseconds within the horizon, so that
 * (int64_t)ns * ETSIM_PS_PER_NS is defined and below ETSIM_DES_HORIZON_PS.
 * NaN and infinities give 0. */
static inline int etsim_des_ns_ok(double ns) {
  return ns >= 0 && ns <= (double)ETSIM_DES_HORIZON_NS;
}

typedef struct etsim_des_event {
  int64_t t_ps;  /* when it fires */
  uint64_t seq;  /* position in processing order (0, 1, ...) */
  uint32_t type; /* meaning chosen by the owner */
  uint32_t a;    /* owner's small argument (e.g. an NPU) */
  uint64_t b;    /* owner's large argument (e.g. a pool index) */
} etsim_des_event_t;

/* Internal records (see queue.c). */
typedef struct etsim_des_slot etsim_des_slot_t;
typedef struct etsim_des_bucket etsim_des_bucket_t;
typedef struct etsim_des_tkey {
  int64_t t;
  uint32_t bucket;
} etsim_des_tkey_t;
/* The heap of pending times: they are distinct (one bucket each), so the
 * time alone is a strict total order, as ETSIM_HEAP_DEFINE requires. */
static inline int etsim_des__tkey_less(const etsim_des_tkey_t *a, const etsim_des_tkey_t *b) {
  return a->t < b->t;
}
ETSIM_HEAP_DEFINE(etsim_des__theap, etsim_des_tkey_t, etsim_des__tkey_less)

typedef struct etsim_des {
  /* buckets: one per pending distinct time, recycled through a free list */
  etsim_des_bucket_t *bk;
  size_t n_bk, cap_bk;
  uint32_t free_bk;
  uint32_t cur;          /* bucket being drained, or UINT32_MAX */
  uint32_t last_bk;      /* bucket of the last push (cache), or UINT32_MAX */
  int64_t last_t;        /* its time */
  etsim_des__theap_t th; /* min-heap of pending times but cur's */
  /* time -> bucket: open addressing, linear probing, backward-shift delete */
  int64_t *hkey;
  uint32_t *hval; /* bucket + 1, 0 = empty */
  size_t hcap;
  size_t n;           /* events pending */
  int64_t now_ps;     /* time of the last popped event */
  uint64_t n_popped;  /* events processed so far */
  size_t max_pending; /* high-water mark of pending events */
  size_t max_times;   /* high-water mark of pending distinct times */
  /* Provenance (etsim_des_track): each event remembers when it was pushed
   * and `pusher` at that moment (an id the owner sets: the NPU whose work
   * is running); pop leaves them in popped_push_ps / popped_pusher. */
  int track;
  uint32_t pusher;
  int64_t popped_push_ps;
  uint32_t popped_pusher;
} etsim_des_t;

void etsim_des_init(etsim_des_t *q);
/* Record provenance from now on (call before the first push). */
void etsim_des_track(etsim_des_t *q);
void etsim_des_free(etsim_des_t *q);

/* Schedule an event at absolute time t_ps (>= now).  Returns 0,
 * ETSIM_ERANGE when t_ps is beyond ETSIM_DES_HORIZON_PS, or ETSIM_ENOMEM
 * (the queue is unchanged then). */
int etsim_des_push(etsim_des_t *q, int64_t t_ps, uint32_t type, uint32_t a, uint64_t b);

/* The time `ns` (>= 0) nanoseconds after now, in ps; a time past the horizon
 * comes out as ETSIM_DES_HORIZON_PS + 1, which etsim_des_push refuses, so
 * no sum of a clock and a delay can wrap. */
static inline int64_t etsim_des_at_ns(const etsim_des_t *q, int64_t ns) {
  if (ns > (ETSIM_DES_HORIZON_PS - q->now_ps) / ETSIM_PS_PER_NS) return ETSIM_DES_HORIZON_PS + 1;
  return q->now_ps + ns * ETSIM_PS_PER_NS;
}

/* Pop the earliest event into *out and advance the clock; returns 1, or 0
 * when the queue is empty. */
int etsim_des_pop(etsim_des_t *q, etsim_des_event_t *out);

/* The k-th event after the next one to pop, if it is in the instant being
 * drained: 1 with its type and arguments, else 0.  For prefetching the
 * records upcoming events will touch (the simulation is memory-bound). */
int etsim_des_peek(const etsim_des_t *q, uint32_t k, uint32_t *type, uint64_t *b);

static inline size_t etsim_des_pending(const etsim_des_t *q) { return q->n; }
/* Time of the earliest pending event, INT64_MAX when none. */
int64_t etsim_des_next_time(const etsim_des_t *q);

#ifdef __cplusplus
}
#endif
#endif
