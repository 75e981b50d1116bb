/*
 * pkt_int.h — private structures of the packet-level network: the event
 * heap, packets, ports (egress queues, PFC state, MMU ingress counters),
 * nodes, queue pairs and the congestion-control method table.
 *
 * Everything is addressed by 32-bit indices into arrays that grow by
 * doubling (packets, events, flows), so nothing is malloc'ed per event and
 * growing an array never invalidates a stored reference.
 */
#ifndef ETSIM_PKT_INT_H
#define ETSIM_PKT_INT_H

#include "etsim/netpkt.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define PK_NPRIO 8
#define PK_MAX_HOPS 5
#define PK_NONE UINT32_MAX

/* ------------------------------------------------------------ event heap */

enum {
  EV_TX_DONE = 1, /* a: port: serialisation finished */
  EV_ARRIVE,      /* a: sending port; the packet at its wire's head arrives;
                     b: for prefetching only (pk_arrive_b) */
  EV_NIC_WAKE,    /* a: host port, b: generation */
  EV_FLOW_START,  /* a: flow */
  EV_CC_TIMER,    /* a: flow, b: (generation << 8) | timer id */
  EV_QLEN,        /* queue-length sample */
  EV_WATCHDOG     /* progress check */
};

typedef struct pk_ev {
  int64_t t;
  uint64_t seq;
  uint32_t kind, a;
  uint64_t b;
  /* for prefetching only, never dereferenced: what the event will read
   * first that its own fields do not name (pk_evq_push_hint) */
  const void *hint;
} pk_ev_t;

/* (t, seq) order, branch-free: a heap pop then picks among 4 children with
 * conditional moves instead of hard-to-predict jumps. */
static inline int pk_ev_less(const pk_ev_t *a, const pk_ev_t *b) {
  return (a->t < b->t) | ((a->t == b->t) & (a->seq < b->seq));
}

/* A 4-ary min-heap of events on (t, seq), stored by value: pk_heap_push,
 * pk_heap_pop, pk_heap_free (base.h's typed heap). */
ETSIM_HEAP_DEFINE(pk_heap, pk_ev_t, pk_ev_less)

/* The packet engine's event queue: a calendar of time buckets for the near
 * future, the heap for the rest; pops in (t, seq) order (pkt_evq.c).  A
 * bucket is a list of chunks, each an array of events in order, so a pop
 * reads memory in sequence and the events after the next are found by
 * index: on a 1,024-host fabric a bucket holds about 200 events, and with
 * one linked node per event the walk to the ones ahead (to prefetch what
 * they touch) missed the cache at every step.  25 events make a chunk
 * 1 KB, so a chunk's address is a shift from its index (with 15, 640 bytes,
 * the 128-host all-to-all took 0.9 % more instructions: multiplies, and a
 * full chunk more often). */
#define PK_EVQ_CHUNK 25

typedef struct pk_evq_chunk {
  _Alignas(64) uint32_t next; /* the bucket's next chunk, PK_NONE at its tail */
  uint32_t head, n;           /* live events: ev[head .. n), never empty */
  pk_ev_t ev[PK_EVQ_CHUNK];
} pk_evq_chunk_t;

_Static_assert(sizeof(pk_evq_chunk_t) == 1024, "an event chunk is 1 KB");

typedef struct pk_evq_bucket {
  uint32_t head, tail; /* chunks */
} pk_evq_bucket_t;

typedef struct pk_evq {
  pk_evq_bucket_t *bkt; /* mask + 1 buckets of 2^shift ps */
  uint64_t *bits;       /* non-empty buckets */
  pk_evq_chunk_t *ch;   /* chunk pool, 64-byte aligned inside ch_mem */
  void *ch_mem;
  size_t n_ch, cap_ch;
  uint32_t free; /* free chunks, linked by next */
  uint32_t shift;
  uint64_t mask;
  uint64_t cur; /* absolute bucket of the earliest event; with none, the last popped
                 * one's (pkt_evq.c) */
  uint32_t hch; /* bucket cur's head chunk, while the calendar holds events: a pop
                 * reads it rather than the bucket (5 instructions a pop) */
  /* non-empty buckets (the calendar holds events while not 0): counted
   * per bucket, not per event, a pop and a push save an update each */
  size_t n_bkt;
  pk_heap_t far;  /* the others */
  int64_t far_t;  /* time of far's first event, INT64_MAX when empty */
  pk_ev_t popped; /* pk_evq_pop_ref's copy of an event it took off the heap */
  uint64_t next_seq;
} pk_evq_t;

/* shift: log2 of the bucket width in ps; nb_log: log2 of the bucket count
 * (6..30, less counts as 6).  0 or ETSIM_ENOMEM. */
int etsim_net__pkt_evq_init(pk_evq_t *q, uint32_t shift, uint32_t nb_log);

/* Double an array of n elem-byte records (at old) kept 64-byte aligned
 * inside a block *mem with huge pages asked for: the event chunks and the
 * queue pairs, whose records are read one cache line each.  The records
 * are copied, the old block freed, *cap doubled (first when 0).  The new
 * records, or NULL past max records or out of memory (nothing changed). */
void *etsim_net__pkt_grow_lines(void **mem, size_t *cap, const void *old, size_t n, size_t elem,
                                size_t first, size_t max);
void etsim_net__pkt_evq_free(pk_evq_t *q);
/* The general cases of push and pop (pkt_evq.c); the inline versions below
 * handle the common ones without a call. */
int etsim_net__pkt_evq_push_slow(pk_evq_t *q, int64_t t, uint64_t seq, uint32_t kind, uint32_t a,
                                 uint64_t b, const void *hint);
int etsim_net__pkt_evq_pop_slow(pk_evq_t *q, int64_t t_max, pk_ev_t *out);
/* The case of push_slow the inline push meets most (one push in 11 on the
 * 128-host all-to-all): the event's bucket is in the window and empty. */
int etsim_net__pkt_evq_push_new(pk_evq_t *q, int64_t t, uint64_t seq, uint32_t kind, uint32_t a,
                                uint64_t b, const void *hint);
/* Bucket cur's head chunk is used up: free it, and when it was the last,
 * move cur to the next non-empty bucket. */
void etsim_net__pkt_evq_chunk_done(pk_evq_t *q);

/* Event x's fields, one store each (the calendar's two append paths). */
static inline void pk_ev_set(pk_ev_t *x, int64_t t, uint64_t seq, uint32_t kind, uint32_t a,
                             uint64_t b, const void *hint) {
  x->t = t;
  x->seq = seq;
  x->kind = kind;
  x->a = a;
  x->b = b;
  x->hint = hint;
}

/* Queue an event at t (>= the last popped time) with sequence number seq,
 * taken from q->next_seq now or earlier: it runs after every queued event
 * of time t with a smaller sequence, before those with a larger one (the
 * engine takes numbers early to break ties as ns-3 does, see pk_tie_mark).
 * hint: an address the run loop may prefetch a few events ahead (the
 * record the event reads first, when its other fields do not name it).
 * 0 or ETSIM_ENOMEM. */
static inline int pk_evq_push_hint(pk_evq_t *q, int64_t t, uint64_t seq, uint32_t kind, uint32_t a,
                                   uint64_t b, const void *hint) {
  uint64_t bn = (uint64_t)t >> q->shift;
  /* common case: a bucket within the window at or after the earliest one,
   * already holding events, all before this one, and room in its last
   * chunk (append).  One unsigned test covers bn < cur too, and keeps
   * the events within the window from cur; a bucket holding events means a calendar
   * that does (an empty bucket's tail is PK_NONE, and cur is meaningful). */
  if (bn - q->cur > q->mask) return etsim_net__pkt_evq_push_slow(q, t, seq, kind, a, b, hint);
  uint32_t c = q->bkt[bn & q->mask].tail;
  if (c == PK_NONE) return etsim_net__pkt_evq_push_new(q, t, seq, kind, a, b, hint);
  pk_evq_chunk_t *ch = &q->ch[c];
  uint32_t k = ch->n;
  if (k == PK_EVQ_CHUNK) return etsim_net__pkt_evq_push_slow(q, t, seq, kind, a, b, hint);
  /* the new slot first, the last event just before it (one address) */
  pk_ev_t *x = &ch->ev[k];
  if (x[-1].t > t || (x[-1].t == t && x[-1].seq > seq))
    return etsim_net__pkt_evq_push_slow(q, t, seq, kind, a, b, hint);
  ch->n = k + 1;
  pk_ev_set(x, t, seq, kind, a, b, hint);
  return 0;
}

static inline int pk_evq_push_seq(pk_evq_t *q, int64_t t, uint64_t seq, uint32_t kind, uint32_t a,
                                  uint64_t b) {
  return pk_evq_push_hint(q, t, seq, kind, a, b, 0);
}

/* Queue an event at t with the next sequence number: after every queued
 * event of time t. */
static inline int pk_evq_push(pk_evq_t *q, int64_t t, uint32_t kind, uint32_t a, uint64_t b) {
  return pk_evq_push_seq(q, t, q->next_seq++, kind, a, b);
}

/* 1 when the calendar's head event e is due by t_max and runs before the
 * heap's first (far_t is INT64_MAX when the heap is empty; an event at
 * that very time then goes to the slow path, which handles it). */
static inline int pk_evq_head_due(const pk_evq_t *q, const pk_ev_t *e, int64_t t_max) {
  return e->t <= t_max &&
         (e->t < q->far_t || (e->t == q->far_t && q->far.n && e->seq < q->far.v->seq));
}

/* Pop the earliest event if its time is <= t_max: the event, or NULL (none
 * due, or empty; it stays queued), valid only until the next push (its
 * chunk may be reused), and for the run loop's look-ahead the events after
 * it in the calendar's head chunk: *m of them (maybe 0) from *ahead.
 * Cheaper than pk_evq_ahead4 (no array, no look into the next chunk), for
 * a look-ahead of a few events into buckets that hold a dozen. */
static inline const pk_ev_t *pk_evq_pop_ref(pk_evq_t *q, int64_t t_max, const pk_ev_t **ahead,
                                            uint32_t *m) {
  const pk_ev_t *r;
  if (q->n_bkt) {
    pk_evq_chunk_t *ch = &q->ch[q->hch];
    const pk_ev_t *e = &ch->ev[ch->head];
    if (pk_evq_head_due(q, e, t_max)) {
      *ahead = e + 1;
      if ((*m = ch->n - ++ch->head)) return e;
      etsim_net__pkt_evq_chunk_done(q);
      r = e;
      goto look;
    }
  }
  if (!etsim_net__pkt_evq_pop_slow(q, t_max, &q->popped)) return 0;
  r = &q->popped;
look:
  *m = 0;
  if (q->n_bkt) {
    const pk_evq_chunk_t *ch = &q->ch[q->hch];
    *ahead = &ch->ev[ch->head];
    *m = ch->n - ch->head;
  }
  return r;
}

/* pk_evq_pop_ref with a copy into *out: 1, or 0 when none is due. */
static inline int pk_evq_pop_until(pk_evq_t *q, int64_t t_max, pk_ev_t *out) {
  const pk_ev_t *ahead, *e;
  uint32_t m;
  if (!(e = pk_evq_pop_ref(q, t_max, &ahead, &m))) return 0;
  *out = *e;
  return 1;
}

/* The calendar events 0 .. 3 places after the calendar's next one, into
 * x[k] when in the same bucket and at most one chunk further, else NULL.
 * A heap event may come first: for prefetching only. */
static inline void pk_evq_ahead4(const pk_evq_t *q, const pk_ev_t *x[4]) {
  x[0] = x[1] = x[2] = x[3] = 0;
  if (!q->n_bkt) return;
  const pk_evq_chunk_t *ch = &q->ch[q->hch];
  const pk_ev_t *e = &ch->ev[ch->head];
  uint32_t m = ch->n - ch->head; /* >= 1 */
  for (uint32_t k = 0; k < 4 && k < m; k++) x[k] = e + k;
  if (m >= 4 || ch->next == PK_NONE) return;
  ch = &q->ch[ch->next];
  for (uint32_t k = m; k < 4 && k - m < ch->n; k++) x[k] = &ch->ev[k - m];
}

/* Events queued (a walk over the calendar's buckets: for tests). */
size_t etsim_net__pkt_evq_size(const pk_evq_t *q);
static inline size_t pk_evq_size(const pk_evq_t *q) { return etsim_net__pkt_evq_size(q); }

/* The earliest event (the next pop's), NULL when empty; valid until the
 * next push or pop. */
static inline const pk_ev_t *pk_evq_peek(const pk_evq_t *q) {
  const pk_ev_t *f = q->far.n ? q->far.v : 0;
  if (!q->n_bkt) return f;
  const pk_evq_chunk_t *ch = &q->ch[q->hch];
  const pk_ev_t *x = &ch->ev[ch->head];
  return !f || pk_ev_less(x, f) ? x : f;
}

/* --------------------------------------------------------------- packets */

enum { PK_DATA = 1, PK_ACK, PK_NACK, PK_PFC };

typedef struct pk_hop {
  int64_t ts_ps;
  uint64_t tx_bytes;
  uint64_t qlen_bytes;
  uint64_t rate_bps;
} pk_hop_t;

/* A packet, carried by value from hop to hop: in its link's wire and in
 * switch queues.  It holds all that switches and end hosts read or write,
 * with the ports it leaves its first PK_HDR_OUT switches by, so a hop
 * touches no per-packet or per-flow record: on a 128-host fabric such a
 * record sits cold a link delay after its last use, and the first read of
 * one at each hop was a third of the run.  Only HPCC's telemetry lives
 * apart (pk_net_t.hops, PK_MAX_HOPS per INT slot). */
#define PK_HDR_OUT 6

typedef struct pk_hdr {
  uint64_t seq;             /* data: first byte; ACK: next expected */
  int64_t ts_ps;            /* sender's time stamp, echoed by the ACK (TIMELY) */
  uint32_t flow;            /* queue pair; PK_NONE for a pause frame */
  uint32_t ints;            /* INT slot (HPCC data and ACKs), else PK_NONE */
  uint32_t route;           /* offset in pk_net_t.routes (local ports, one per hop) */
  uint16_t size;            /* wire bytes */
  uint16_t in_port;         /* local port index it entered the current switch by */
  uint16_t hop;             /* links crossed so far (index into its route) */
  uint8_t flags;            /* type (PK_HDR_TYPE), priority, ECN mark / CNP, pause */
  uint8_t nhop;             /* INT hops stamped (HPCC) */
  uint16_t out[PK_HDR_OUT]; /* routes[route + 1 ..]: local port at each switch */
} pk_hdr_t;

#define PK_HDR_TYPE 7u
#define PK_HDR_PG_SHIFT 3
#define PK_HDR_ECN 0x40u   /* data: marked; ACK: echoes a mark (CNP) */
#define PK_HDR_PAUSE 0x80u /* a pause frame: pause (else resume) */

static inline unsigned pk_hdr_type(const pk_hdr_t *h) { return h->flags & PK_HDR_TYPE; }
static inline unsigned pk_hdr_pg(const pk_hdr_t *h) { return (h->flags >> PK_HDR_PG_SHIFT) & 7u; }
static inline uint8_t pk_hdr_flags(unsigned type, unsigned pg) {
  return (uint8_t)(type | pg << PK_HDR_PG_SHIFT);
}

/* ----------------------------------------------------------------- ports */

/* An egress queue: a ring of headers (cap a power of two, grown by
 * doubling). */
typedef struct pk_ring {
  pk_hdr_t *v;
  uint32_t head, n, cap;
  uint64_t bytes;
} pk_ring_t;

/* Copies of what a NIC's round-robin scan reads of a queue pair besides
 * its key (pk_port_t.rr_key, .rrs): the scan reads arrays in order rather
 * than a cold record per queue pair (HPCC on 128 hosts passed over 72 a
 * scan, most of them window-bound or waiting to be paced).  The copies
 * are taken by pk_rr_sync after each change to the queue pair's sending
 * state (a send, an ACK, congestion control, its completion). */
typedef struct pk_rr {
  int64_t na;     /* the queue pair's next_avail */
  uint32_t route; /* its route_data (for the look-ahead of nic_send) */
  uint8_t pg;
  uint8_t fin; /* finished (it leaves when a scan passes it) */
} pk_rr_t;

/* A port: the egress side of a node's end of a link.  Fields are grouped
 * by when a packet hop reads them, hottest first (the first two cache lines
 * at every hop, the MMU line at switches), since on a large fabric every
 * port is cold when its next packet comes. */
typedef struct pk_port {
  /* serialisation and the wire: every hop */
  _Alignas(64) int64_t busy_until; /* end of the current serialisation (line-aligned) */
  uint64_t done_seq;               /* heap sequence taken when the serialisation began */
  pk_hdr_t *wire;                  /* packets in flight on the link, oldest first: a
                                      ring of wire_cap (a power of two) headers */
  uint32_t wire_head, wire_n, wire_cap;
  uint32_t tx_gen;     /* generation of the pending EV_TX_DONE */
  uint32_t peer_gport; /* global index of the peer's port on this link */
  uint32_t node;       /* node id */
  uint8_t is_switch;   /* of node */
  uint8_t done_pending, paused, rr;
  uint8_t qmask;     /* one bit per non-empty egress queue */
  uint8_t peer_host; /* the peer is a host (see pk_arrive_b) */
  /* switch egress: min(kmin, kmax) >> 10, at most 65,535, so that a queue
   * of e bytes can mark only when e >> 10 >= ecn_kb (switch_dequeue) */
  uint16_t ecn_kb;
  int64_t tx_mtu_ps; /* serialisation of a full packet */
  int64_t tx_ack_ps; /* of an ACK */
  uint64_t qbytes_total, qbytes_peak;
  uint64_t tx_bytes;
  double err; /* loss at this port's receiver */
  /* ECN (switch egress); without it both UINT64_MAX, so nothing marks */
  uint64_t kmin, kmax;
  double pmax;
  /* MMU ingress (switch): the byte counts are in pk_net_t.mmu */
  uint64_t headroom;
  uint32_t pfc_shift;
  uint32_t peer_port0; /* the peer node's first global port (pk_arrive_b) */
  uint64_t arr_b;      /* pk_arrive_b's high word for this port's arrivals */
  int64_t delay_ps;
  /* egress queues */
  pk_ring_t q[PK_NPRIO]; /* switch: 8 priorities; host: q[0] = ACK queue */
  /* pause statistics */
  int64_t paused_since[PK_NPRIO];
  int64_t paused_ps;
  uint64_t pauses_rx;
  /* host NIC (and a switch's packets of other sizes than the two above) */
  uint64_t rate_bps;
  /* The round robin: queue pairs (indices into pk_net_t.qps), and at the
   * same index each one's key, its pacing time when it has data it may
   * send (not all sent, not window-bound) else INT64_MAX, so it may send
   * now when key <= now, and the rest the scan reads (pk_rr_t).  Three
   * arrays: a send usually reads only the first two, and on a 1,024-host
   * fabric, where each NIC's list is cold at its next send, one array of
   * all the fields (32 MB for the 1,047,552 queue pairs) ran slower than
   * these 12 bytes a queue pair do. */
  uint32_t *qps;
  int64_t *rr_key;
  pk_rr_t *rrs;
  size_t n_qps, cap_rr, qp_rr; /* cap_rr: the three arrays' room, grown together */
  /* No queue pair can send until one changes (see nic_kick_).  Whatever
   * may let a queue pair send (ACK, timer, rate or window change, resume)
   * must end with nic_kick(), which clears it. */
  uint8_t qps_blocked;
  /* Shortcuts for a NIC whose every queue pair is paused (PFC), where each
   * ACK used to cost two passes over all of them: queue pairs in the list
   * per priority, finished ones not yet removed, and the earliest pacing
   * time of the unfinished ones (valid while wake_min_ok: no queue pair has
   * sent, changed rate, started or finished since it was taken). */
  uint8_t wake_min_ok;
  uint8_t pg_mask;   /* bit g set while pg_cnt[g] != 0 (pk_pg_add, pk_pg_sub) */
  uint32_t ready_qp; /* a queue pair seen unfinished with its pacing time
                        past (so no wake-up is due), or PK_NONE; cleared
                        when it sends, changes rate or finishes, so it
                        holds without reading the queue pair's record */
  uint32_t n_fin;
  uint32_t pg_cnt[PK_NPRIO];
  uint32_t wake_gen;
  int64_t wake_min;
  int64_t wake_t;
  /* queue-length histogram, 1 KB bins */
  uint32_t *hist;
  size_t n_hist;
  uint16_t ifindex; /* 1-based */
  /* the cable failed (pkt_fail.c): routes avoid it and the port sends
   * nothing more (every priority held paused) */
  uint8_t down;
  uint32_t peer;  /* node id (set-up, routes, reports) */
  char pad_[384]; /* to 1 KB, see below */
} pk_port_t;

/* A queue pair of priority pg joins / leaves port p's round robin. */
static inline void pk_pg_add(pk_port_t *p, unsigned pg) {
  p->pg_cnt[pg]++;
  p->pg_mask |= (uint8_t)(1u << pg);
}
static inline void pk_pg_sub(pk_port_t *p, unsigned pg) {
  if (!--p->pg_cnt[pg]) p->pg_mask &= (uint8_t) ~(1u << pg);
}

/* Each egress ring's fields in one cache line (a field added above once
 * made every ring straddle two, and the 128-host run 10 % slower). */
_Static_assert(offsetof(pk_port_t, q) % 32 == 0 && sizeof(pk_ring_t) == 32,
               "pk_port_t.q line-aligned");
/* 1 KB: a port's address from its index is a shift (at 640 bytes a
 * multiply by 5 and a shift, at 704 two multiplies).  The ports' first
 * lines then fall in a sixteenth of the cache sets, which was feared and
 * measured harmless: the 128-host all-to-all runs 1.2 % fewer
 * instructions and 1-4 % less CPU time than at 640 bytes (interleaved
 * pairs, bench/netsim_ab.sh), the 1,024-host one the same time. */
_Static_assert(sizeof(pk_port_t) == 1024, "pk_port_t is 1 KB");

typedef struct pk_node {
  uint8_t is_switch;
  uint32_t port0, nports; /* global port indices port0 .. port0+nports-1 */
  uint32_t host_idx;      /* dense host index or PK_NONE */
  uint32_t sw_idx;        /* dense switch index or PK_NONE */
  /* switch MMU */
  uint64_t buffer, total_hdrm, shared_used, peak_used;
  /* the buffer less all ports' headroom and reserve, fixed at set-up
   * (which checks the buffer holds both): what pfc_thresh starts from */
  uint64_t pfc_base;
} pk_node_t;

/* A switch's ingress counts for one (port, priority): bytes held in the
 * reserve and shared buffer, and in the headroom.  Kept apart from the
 * ports, by priority then global port (pk_net_t.mmu_row[prio][port]), so a
 * dequeue that gives a packet's bytes back to the port it came in by reads
 * a line shared by the switch's neighbouring ports, not that port's cold
 * record: on a 1,024-host fabric that read was a sixth of a dequeue.  (Per
 * switch by priority then port, the index took a multiply and two loads
 * from the switch's record, 2 % of the 128-host all-to-all's
 * instructions.) */
typedef struct pk_mmu {
  uint32_t ing, hdrm;
} pk_mmu_t;

/* ------------------------------------------------------------- flows */

/* ns-3's random numbers (pkt_rng.c): ns-3 draws each from a new random
 * variable, the next automatic stream; s is the seed moved on to stream
 * `stream`, next* move it to the following stream, sub* to the run's
 * substream (row-major 3 x 3 matrices modulo each component's modulus). */
typedef struct pk_rng {
  uint64_t s[6];
  uint64_t next1[9], next2[9], sub1[9], sub2[9];
  uint64_t stream;
} pk_rng_t;

/* Start at stream first_stream of run `run` (ns-3's RngRun; RngSeed 1). */
void etsim_net__pkt_rng_init(pk_rng_t *r, uint64_t first_stream, uint64_t run);
/* The first value in [0, 1) of the next stream, as ns-3's
 * UniformRandomVariable gives it. */
double etsim_net__pkt_rng_fresh(pk_rng_t *r);
/* A stream ns-3 takes for a variable whose value does not matter. */
void etsim_net__pkt_rng_skip(pk_rng_t *r);
/* MRG32k3a's two component matrices to the power 2^log2_steps (tests). */
void etsim_net__pkt_rng_jump(uint64_t out1[9], uint64_t out2[9], int log2_steps);

typedef struct pk_qp pk_qp_t;
typedef struct pk_net pk_net_t;

typedef struct pk_cc_ops {
  uint32_t int_bytes; /* extra header bytes on data packets */
  void (*init)(pk_net_t *, pk_qp_t *);
  void (*on_ack)(pk_net_t *, pk_qp_t *, const pk_hdr_t *ack);
  void (*on_timer)(pk_net_t *, pk_qp_t *, int id);
} pk_cc_ops_t;

struct pk_qp {
  /* What a NIC's round robin reads of each queue pair it passes over, and
   * what a send and an ACK update: one cache line (records are 64-byte
   * aligned), since a NIC may pass over dozens per packet and each is cold
   * after a round of its NIC's other queue pairs. */
  _Alignas(64) uint64_t size;
  uint64_t snd_nxt, snd_una;
  int64_t next_avail;
  uint64_t rate;  /* bits/s */
  uint64_t win;   /* bytes, 0 = none */
  uint32_t gport; /* sender NIC port */
  /* offsets in pk_net_t.routes of the ports the data and the ACKs leave
   * by, one per hop (local port indices of the node at that hop) */
  uint32_t route_data;
  uint32_t last_pkt_size;
  uint8_t pg, started, finished;
  uint8_t held; /* no route left (a failure): sends nothing, never completes */
  /* the receiver, on every data packet: a line of its own */
  _Alignas(64) uint64_t rcv_nxt;
  uint64_t milestone;
  int64_t nack_timer;
  uint64_t last_nack;
  uint64_t rcv_size; /* size, for the receiver */
  uint32_t rx_gport; /* receiver NIC port for ACKs */
  uint32_t route_ack;
  uint8_t delivered;
  /* routes[route_ack + 1 ..], the ACK header's out ports: the ACK is made
   * from this line alone (on a large fabric the routes array is cold) */
  uint16_t ack_out[PK_HDR_OUT];
  /* the rest */
  uint64_t max_rate; /* bits/s */
  int64_t base_rtt_ps;
  /* the VAR_WIN window and the rate and window it was scaled from */
  uint64_t var_win, var_win_rate, var_win_base;
  uint32_t src, dst, sip, dip;
  uint16_t sport, dport;
  int64_t start_ps, delivered_ps, acked_ps, standalone_ps;
  /* timers; their generations live on when the record is reused */
  uint32_t tgen[3];
  /* entries of pk_net_t.routes this record's routes may fill (route_data
   * onwards): kept when the record is reused, as are the entries */
  uint32_t route_cap;
  uint64_t id; /* the message's id (pk_net_t.msgs) */
  /* its place in its NIC's round robin (pk_port_t.qps), PK_NONE when in none */
  uint32_t rr_pos;
  /* CC state */
  union {
    struct {
      double alpha;
      uint64_t target;
      uint32_t stage;
      uint8_t alpha_cnp, dec_cnp, first_cnp;
    } dcqcn;
    struct {
      uint64_t last_seq, cur_rate;
      uint32_t inc_stage;
      double u;
      uint32_t nhop; /* hops remembered in pk_net_t.qp_hops */
    } hpcc;
    struct {
      uint64_t last_seq, cur_rate;
      uint32_t inc_stage;
      int64_t last_rtt;
      double rtt_diff;
    } timely;
    struct {
      uint64_t last_seq, high_seq, batch, ecn_cnt;
      double alpha;
      uint8_t cwr;
    } dctcp;
  } cc;
  etsim_netpkt_done_fn fn;
  void *ctx;
};

/* What a route's walk reads of a port (pk_port_t is 1 KB and these
 * fields sit on two of its lines): the node and port at the far end, that
 * node's switch index (PK_NONE for a host), the port's local index on its
 * own node (what a route stores), and whether the cable is down.  Kept by
 * pkt_route.c's build_graph, which every failure runs. */
typedef struct pk_rlink {
  uint32_t peer, peer_gport, peer_sw;
  uint16_t local, down;
} pk_rlink_t;

/* A host pair (src, dst): the next message's source port and, cached, the
 * RTT and bottleneck rate of the path ns-3's search finds first
 * (etsim_net__pkt_pair); rtt_ps < 0 until worked out since the routes last
 * changed.  A ring sends thousands of messages over each pair. */
typedef struct pk_pair {
  int64_t rtt_ps;
  uint64_t bw;
  uint32_t sport;
} pk_pair_t;

/* A message, by the id etsim_netpkt_send gave it: while it has a queue
 * pair (slot) that record holds its state; once the queue pair is released
 * (qp_release) the fields here hold what etsim_netpkt_msg_stat reports (a
 * released message is never held).  The flow level keeps its messages the
 * same way.  80 bytes: 8.4 M of them for a 1,024-NPU ring all-reduce,
 * unless the config's forget_done drops them (pk_msgs_t). */
typedef struct pk_msg {
  int64_t start_ps, delivered_ps, acked_ps, standalone_ps, base_rtt_ps;
  uint64_t bytes, win;
  uint32_t src, dst;
  uint32_t slot; /* its queue pair, PK_NONE once released */
  uint16_t sport, dport;
} pk_msg_t;

/* A released message's statistics into m (slot becomes PK_NONE), and back. */
static inline void pk_msg_keep(pk_msg_t *m, const etsim_netpkt_msg_stat_t *o) {
  m->start_ps = o->start_ps;
  m->delivered_ps = o->delivered_ps;
  m->acked_ps = o->acked_ps;
  m->standalone_ps = o->standalone_ps;
  m->base_rtt_ps = o->base_rtt_ps;
  m->bytes = o->bytes;
  m->win = o->win_bytes;
  m->src = o->src;
  m->dst = o->dst;
  m->sport = o->sport;
  m->dport = o->dport;
  m->slot = PK_NONE;
}

static inline void pk_msg_get(const pk_msg_t *m, etsim_netpkt_msg_stat_t *o) {
  o->src = m->src;
  o->dst = m->dst;
  o->sport = m->sport;
  o->dport = m->dport;
  o->bytes = m->bytes;
  o->start_ps = m->start_ps;
  o->delivered_ps = m->delivered_ps;
  o->acked_ps = m->acked_ps;
  o->standalone_ps = m->standalone_ps;
  o->win_bytes = m->win;
  o->base_rtt_ps = m->base_rtt_ps;
  o->held = 0;
}

/* The messages of a level by id (0, 1, ... in the order sent): a record
 * each (pk_msg_t), or, with the config's forget_done, only a map from the
 * ids of messages that still have a queue pair (flow record) to it, so
 * that memory follows the messages in flight. */
typedef struct pk_msgs {
  pk_msg_t *v;
  size_t n, cap;
  etsim_u64map_t live; /* forget_done: id -> slot */
  int forget;
} pk_msgs_t;

/* Room for one more message: 0 or ETSIM_ENOMEM. */
static inline int pk_msgs_room(pk_msgs_t *ms) {
  if (ms->forget) return etsim_u64map_reserve(&ms->live, ms->live.count + 1);
  return etsim_grow((void **)&ms->v, &ms->cap, ms->n + 1, sizeof *ms->v);
}

/* The next message, carried by slot (after pk_msgs_room): its id. */
static inline uint64_t pk_msgs_add(pk_msgs_t *ms, uint32_t slot) {
  if (ms->forget) etsim_u64map_put(&ms->live, ms->n, slot, NULL); /* room reserved */
  else {
    memset(&ms->v[ms->n], 0, sizeof ms->v[ms->n]);
    ms->v[ms->n].slot = slot;
  }
  return ms->n++;
}

/* Message id's slot, PK_NONE once released (or id unknown). */
static inline uint32_t pk_msgs_slot(const pk_msgs_t *ms, uint64_t id) {
  uint32_t s = PK_NONE;
  if (id >= ms->n) return PK_NONE;
  if (!ms->forget) return ms->v[id].slot;
  return etsim_u64map_get(&ms->live, id, &s) ? s : PK_NONE;
}

/* Message id leaves its slot with statistics o (forgotten with forget). */
static inline void pk_msgs_release(pk_msgs_t *ms, uint64_t id, const etsim_netpkt_msg_stat_t *o) {
  if (ms->forget) etsim_u64map_del(&ms->live, id);
  else pk_msg_keep(&ms->v[id], o);
}

/* What a level's msg_stat reports of message id whose slot is released
 * or unknown: its kept statistics, ETSIM_ENOTFOUND once forgotten,
 * ETSIM_ERANGE past the last id. */
static inline int pk_msgs_gone(const pk_msgs_t *ms, uint64_t id, etsim_netpkt_msg_stat_t *o) {
  if (id >= ms->n) return ETSIM_ERANGE;
  if (ms->forget) return ETSIM_ENOTFOUND;
  pk_msg_get(&ms->v[id], o);
  return 0;
}

static inline void pk_msgs_free(pk_msgs_t *ms) {
  etsim_free(ms->v);
  etsim_u64map_free(&ms->live);
}

/* An arrival event's b, for prefetching only (never read for anything
 * else): the receiving port, and what the packet will touch there, so the
 * run loop can fetch it a few events ahead from the event alone, without
 * reading the sending port and the header at its wire's head first (each
 * a miss on a large fabric, and that read of the header, one event ahead,
 * was a tenth of the 128-host all-to-all's time): for a packet that
 * arrives at a host its queue pair (PK_NONE for a pause frame), for one
 * that arrives at a switch (PK_ARR_SW) the egress port and queue it will
 * be queued in (pk_arrive_sw), PK_NONE when its route is past the
 * header's out ports. */
#define PK_ARR_SW (1ull << 63)

static inline uint64_t pk_arrive_b(uint32_t rx_gport, uint32_t qp) {
  return (uint64_t)rx_gport << 32 | qp;
}

/* The low word of a switch arrival's b: global egress port gp (below
 * 2^29, else PK_NONE: only prefetching is lost) and queue qi. */
static inline uint32_t pk_arrive_sw(uint32_t gp, unsigned qi) {
  return gp < (1u << 29) ? gp << 3 | qi : PK_NONE;
}

/* Rings of headers (switch and NIC queues, wires) are carved from large
 * blocks with huge pages asked for (pkt_engine.c, hring_alloc): on a
 * 1,024-host fabric ten thousand rings hold 120 MB, and with each one
 * malloc'ed on 4 KB pages the prefetches of queue heads and wire slots
 * waited on page walks.  A ring of 2^k headers that grew is kept in
 * free[k] for the next ring of that size. */
typedef struct pk_hpool {
  char **blk; /* blocks as allocated, freed with the network */
  size_t n_blk, cap_blk;
  char *cur, *end;   /* the newest block's unused part */
  size_t next_bytes; /* the next block's size (doubles, see hring_alloc) */
  void *free[32];    /* rings of 2^k headers, linked by their first bytes */
} pk_hpool_t;

struct pk_net {
  uint64_t cur_seq; /* queue sequence of the event being handled */
  etsim_netpkt_cfg_t cfg;
  const pk_cc_ops_t *cc;
  uint32_t n_nodes, n_hosts, n_ports;
  pk_node_t *nodes;
  pk_port_t *ports; /* 64-byte aligned inside ports_mem */
  void *ports_mem;
  pk_mmu_t *mmu;               /* switch ingress counts (pk_mmu_t), PK_NPRIO rows of n_ports */
  pk_mmu_t *mmu_row[PK_NPRIO]; /* row of each priority in mmu, by global port */
  uint8_t *ing_paused;         /* per port: we told the upstream to pause (bit per prio) */
  uint32_t *hosts;             /* host index -> node id */
  /* routing (pkt_route.c) */
  uint32_t n_sw;
  uint32_t *sw_node;    /* switch index -> node id */
  uint32_t *nbr;        /* per port slot: local port indices in ns-3's neighbour order */
  uint32_t *sw_adj_off; /* switch index -> first entry in sw_adj (n_sw + 1) */
  uint32_t *sw_adj;     /* (neighbour switch index, global port) pairs, ns-3 order */
  uint32_t *host_key;   /* host index -> key */
  uint32_t *key_root;   /* key -> root node: a switch, or a host with several links */
  uint32_t **key_d;     /* key -> per switch (distance, rank), NULL until needed */
  /* key -> per switch: its next hops towards the key's hosts (more than one
   * link away), found once: 0 unknown, else 1 + the offset in nh_pool of
   * (count, local ports in ns-3's order); NULL until needed (next_hops) */
  uint32_t **key_nh;
  uint16_t *nh_pool;
  size_t n_nh_pool, cap_nh_pool;
  uint32_t n_keys;
  uint32_t *bfs_q;         /* scratch: n_sw + 1 */
  uint64_t *route_scratch; /* scratch: largest node degree */
  pk_rlink_t *rlink;       /* per port (global index) */
  uint64_t max_bdp;        /* over all host pairs, only with GLOBAL_T */
  int64_t max_rtt_ps;
  uint64_t nic_rate;
  /* INT slots (HPCC): PK_MAX_HOPS hops each; a free slot's first hop's
   * tx_bytes links the free list */
  pk_hop_t *hops;
  size_t n_ints, cap_hops; /* slots handed out so far, hops allocated */
  uint32_t free_int;
  /* HPCC: the INT stack of each queue pair's last ACK, PK_MAX_HOPS per
   * queue pair, only when CC is HPCC (inside the queue pair record it made
   * every record 128 bytes larger, 134 MB with a million of them) */
  pk_hop_t *qp_hops;
  size_t cap_qp_hops;
  /* flows */
  uint16_t *routes; /* local ports, see pk_qp_t.route_data */
  size_t n_routes, cap_routes;
  uint32_t *path_buf; /* scratch: a route's global ports */
  size_t cap_path_buf;
  pk_qp_t *qps; /* 64-byte aligned inside qps_mem */
  void *qps_mem;
  size_t n_qps, cap_qps;
  /* Queue pairs done with and free for a new message (pk_qp_release), and
   * whether that is still safe: once a packet was dropped, a NACK sent or
   * a cable failed, a finished queue pair may still have packets in
   * flight, so from then on none is released. */
  uint32_t *free_qps;
  size_t n_free_qps, cap_free_qps;
  int lossy;
  pk_msgs_t msgs;
  size_t n_active;         /* started or pending, not acked */
  etsim_u64map_t pair_map; /* (src << 32 | dst) -> index in pairs */
  pk_pair_t *pairs;
  size_t n_pairs, cap_pairs;
  /* time */
  pk_evq_t evq;
  int64_t now;
  int64_t last_progress;
  int watchdog_on;
  int qlen_on;
  uint8_t deep;     /* the run loop's deep look-ahead is on (PK_DEEP_BYTES) */
  etsim_rng_t rng;  /* packet loss (ERROR_RATE_PER_LINK) */
  pk_rng_t ecn_rng; /* ECN marks and PFC frames as ns-3 draws them (pkt_rng.c) */
  pk_hpool_t hpool;
  uint32_t data_hdr, ack_size, pfc_size, mtu_wire;
  FILE *fct, *pfc, *qlen;
  /* PK_RUNNING; PK_STOP_TIME once an event that does not run lies at or
   * past SIMULATOR_STOP_TIME (the run ends there, see pk_stop_due); PK_STOP_OOM after an allocation
   * failed inside an event (the state is no longer whole: every later call fails). */
  enum { PK_RUNNING, PK_STOP_TIME, PK_STOP_OOM } stopped;
  /* the queue's next sequence number when set-up ended: of the events at
   * SIMULATOR_STOP_TIME itself, only those numbered below it run
   * (pk_stop_due) */
  uint64_t setup_seq;
  etsim_netpkt_stats_t st;
  uint64_t tx_pkts[PK_HDR_TYPE + 1]; /* packets sent by type, for st (get_stats) */
};

/* engine helpers the CC modules use */
static inline const pk_hop_t *pk_hops(const pk_net_t *n, const pk_hdr_t *k) {
  return n->hops + (size_t)k->ints * PK_MAX_HOPS;
}
/* What congestion control may do to the engine, here rather than in
 * pkt_engine.c so that pkt_cc.c, which the engine calls through
 * pk_cc_ops_t, does not call back into it: change a queue pair's rate,
 * start or cancel one of its timers. */

/* GCC's and Clang's 128-bit integers, for ns-3's 64.64 fixed point */
__extension__ typedef unsigned __int128 pk_u128_t;

/* Serialisation time of bytes at rate (b/s), in ps. */
static inline int64_t pk_tx_time(const pk_net_t *n, uint64_t bytes, uint64_t rate) {
  uint64_t r = n->cfg.tx_round_ps > 1 ? (uint64_t)n->cfg.tx_round_ps : 1;
  if (r == 1000) {
    /* whole ns as ns-3's DataRate::CalculateBytesTxTime gives them:
     * bits / rate in 64.64 fixed point (the fraction truncated), times
     * 10^9, rounded half up.  So an exact half (8,288 bits at 64 Gb/s:
     * 129.5 ns) comes out 129 wherever bits 2^64 / rate is not whole,
     * where plain rounding gave 130 (a DCTCP sender then paced 1 ns a
     * packet slower than ns-3's). */
    pk_u128_t q = ((pk_u128_t)(bytes * 8) << 64) / rate;
    return (int64_t)((q * 1000000000u + ((pk_u128_t)1 << 63)) >> 64) * 1000;
  }
  /* Any other step (exact ps, the library's default, or a caller's own):
   * one rounding of the exact quotient straight to the step (rounding to
   * ps first turned e.g. 606.4996 ns into 607).  A step too large for that
   * product (over 7 us at 2.4 Tb/s) rounds in two steps. */
  uint64_t num = bytes * 8000000000000ull;
  if (rate <= UINT64_MAX / r) {
    uint64_t den = rate * r;
    return (int64_t)((num + den / 2) / den * r);
  }
  uint64_t t = (num + rate / 2) / rate;
  return (int64_t)((t + r / 2) / r * r);
}

static inline void pk_change_rate(pk_net_t *n, pk_qp_t *q, uint64_t new_rate) {
  if (q->last_pkt_size) {
    n->ports[q->gport].wake_min_ok = 0;
    if (n->ports[q->gport].ready_qp == (uint32_t)(q - n->qps))
      n->ports[q->gport].ready_qp = PK_NONE;
    int64_t old_t = pk_tx_time(n, q->last_pkt_size, q->rate);
    int64_t new_t = pk_tx_time(n, q->last_pkt_size, new_rate);
    q->next_avail += new_t - old_t;
    /* ns-3's QbbNetDevice::UpdateNextAvail: a pending wake-up later than
     * the new pacing time is moved to it (at once if that has passed). */
    pk_port_t *p = &n->ports[q->gport];
    if (p->wake_t >= 0 && q->next_avail < p->wake_t) {
      p->wake_gen++;
      p->wake_t = q->next_avail > n->now ? q->next_avail : n->now;
      if (pk_evq_push(&n->evq, p->wake_t, EV_NIC_WAKE, q->gport, p->wake_gen))
        n->stopped = PK_STOP_OOM;
    }
  }
  q->rate = new_rate;
}

/* 1 when q has as many bytes in flight as its window allows (VAR_WIN:
 * the window scaled by rate / max_rate, kept until either changes). */
static inline int pk_win_bound(const pk_net_t *n, pk_qp_t *q) {
  if (!q->win) return 0;
  uint64_t w = q->win;
  if (n->cfg.var_win) {
    if (__builtin_expect(q->rate != q->var_win_rate || q->win != q->var_win_base, 0)) {
      w = (uint64_t)((double)q->win * (double)q->rate / (double)q->max_rate);
      q->var_win = w ? w : 1;
      q->var_win_rate = q->rate;
      q->var_win_base = q->win;
    }
    w = q->var_win;
  }
  return q->snd_nxt - q->snd_una >= w;
}

/* The round-robin key of q (pk_port_t.rr_key). */
static inline int64_t pk_rr_key(const pk_net_t *n, pk_qp_t *q) {
  return ((q->snd_nxt < q->size) & !pk_win_bound(n, q)) ? q->next_avail : INT64_MAX;
}

/* q's entry in its NIC's round robin takes q's pacing time and key;
 * nothing when q is in no list. */
static inline void pk_rr_sync(pk_net_t *n, pk_qp_t *q) {
  if (q->rr_pos == PK_NONE) return;
  pk_port_t *p = &n->ports[q->gport];
  p->rrs[q->rr_pos].na = q->next_avail;
  p->rr_key[q->rr_pos] = pk_rr_key(n, q);
}

/* Append queue pair id (started, not finished) to NIC port p's round
 * robin.  0 or ETSIM_ENOMEM. */
static inline int pk_rr_add(pk_net_t *n, pk_port_t *p, uint32_t id) {
  size_t k = p->n_qps + 1;
  /* the same growth from the same room: the three caps stay equal (one
   * that grew before another failed is only larger than recorded) */
  size_t c0 = p->cap_rr, c1 = c0, c2 = c0;
  if (etsim_grow((void **)&p->qps, &c0, k, sizeof *p->qps) ||
      etsim_grow((void **)&p->rr_key, &c1, k, sizeof *p->rr_key) ||
      etsim_grow((void **)&p->rrs, &c2, k, sizeof *p->rrs))
    return ETSIM_ENOMEM;
  p->cap_rr = c0;
  pk_qp_t *q = &n->qps[id];
  pk_rr_t *e = &p->rrs[p->n_qps];
  p->qps[p->n_qps] = id;
  e->route = q->route_data;
  e->pg = q->pg;
  e->fin = q->finished;
  q->rr_pos = (uint32_t)p->n_qps++;
  pk_rr_sync(n, q);
  return 0;
}

/* Timer id of q fires after after_ps (an EV_CC_TIMER, dropped if the
 * timer is cancelled or restarted first). */
static inline void pk_timer(pk_net_t *n, pk_qp_t *q, int id, int64_t after_ps) {
  if (pk_evq_push(&n->evq, n->now + after_ps, EV_CC_TIMER, (uint32_t)(q - n->qps),
                  ((uint64_t)q->tgen[id] << 8) | (uint64_t)id))
    n->stopped = PK_STOP_OOM;
}

static inline void pk_timer_cancel(pk_qp_t *q, int id) { q->tgen[id]++; }

extern const pk_cc_ops_t etsim_net__pkt_cc_none, etsim_net__pkt_cc_dcqcn, etsim_net__pkt_cc_hpcc,
    etsim_net__pkt_cc_timely, etsim_net__pkt_cc_dctcp;
/* The rules of ETSIM_NETPKT_CC_* mode, from net.c's table of schemes; NULL
 * for a mode etsim does not have. */
const pk_cc_ops_t *etsim_net__pkt_cc_ops(int mode);
/* "0 none, 1 dcqcn, ..." for error messages, into buf of n bytes. */
const char *etsim_net__pkt_cc_modes(char *buf, size_t n);

/* Routes (pkt_route.c).  route_init orders neighbours and assigns keys
 * (linear in links) and checks that every host reaches every other; 0 or
 * a negative code with err set.  route_ready runs the search a host's key
 * needs (once), before any of the calls below names that host as a
 * destination; 0 or ETSIM_ENOMEM. */
int etsim_net__pkt_route_init(pk_net_t *n, const char *topo_name, etsim_error_t *err);
/* After ports went down (pk_port_t.down): the searches are redone over the
 * cables left, as they are needed.  0 or ETSIM_ENOMEM. */
int etsim_net__pkt_route_rebuild(pk_net_t *n);
void etsim_net__pkt_route_free(pk_net_t *n);
int etsim_net__pkt_route_ready(pk_net_t *n, uint32_t host);
uint32_t etsim_net__pkt_murmur12(uint32_t w0, uint32_t w1, uint32_t w2, uint32_t seed);
/* Links from host src to host dst (route_ready(dst)). */
uint32_t etsim_net__pkt_hops(pk_net_t *n, uint32_t src, uint32_t dst);
/* The directed links (global port indices) a packet of (src, dst, sport,
 * dport) crosses, chosen exactly as the packet engine routes: writes up to
 * max of them and returns the hop count (0: no route; more than max: call
 * again with room).  route_ready(dst).  Used by the flow-level model too. */
uint32_t etsim_net__pkt_path(pk_net_t *n, uint32_t src, uint32_t dst, uint16_t sport,
                             uint16_t dport, uint32_t *out, uint32_t max);
/* The same for the ACKs of that flow, dst back to src (route_ready(src)):
 * the receiver's NIC picks its port with the data's own tuple, switches
 * hash the reversed one. */
uint32_t etsim_net__pkt_ack_path(pk_net_t *n, uint32_t src, uint32_t dst, uint16_t sport,
                                 uint16_t dport, uint32_t *out, uint32_t max);
/* The same walk from node v (a host or a switch on the way) to the data's
 * destination (ack 0) or back to its source (ack 1), hashing the flow's
 * tuples as the two calls above do: a route that continues from v after a
 * failure (pkt_fail.c).  route_ready of the far end. */
uint32_t etsim_net__pkt_path_from(pk_net_t *n, uint32_t v, uint32_t src, uint32_t dst,
                                  uint16_t sport, uint16_t dport, int ack, uint32_t *out,
                                  uint32_t max);

/* Failures (pkt_fail.c, with helpers in pkt_engine.c).  hold_new: a queue
 * pair created with no route (never starts); inline so that the engine
 * does not call back into pkt_fail.c, which sits on top of it.  The others
 * move packets and give back a dropped packet's buffer as a dequeue
 * would. */
static inline void etsim_net__pkt_hold_new(pk_net_t *n, pk_qp_t *q) {
  q->held = 1;
  q->gport = q->rx_gport = n->nodes[q->src].nports ? n->nodes[q->src].port0 : 0;
  q->route_data = q->route_ack = 0;
}
int etsim_net__pkt_port_kick(pk_net_t *n, uint32_t gp);
int etsim_net__pkt_enqueue(pk_net_t *n, uint32_t gp, int qi, const pk_hdr_t *h);
int etsim_net__pkt_drop_queued(pk_net_t *n, uint32_t gp, int qi, const pk_hdr_t *h);

/* ns-3's base RTT (2 delay + one payload's serialisation per link, in ps)
 * and bottleneck of the pair (index `pair`), on the path its search found
 * first (route_ready(dst)); worked out once per pair while routes stay. */
void etsim_net__pkt_pair(pk_net_t *n, uint32_t src, uint32_t dst, uint32_t pair, int64_t *rtt_ps,
                         uint64_t *bw);
/* Host pair (src, dst)'s index in n->pairs, made on first use (source
 * ports from 10000); PK_NONE out of memory. */
uint32_t etsim_net__pkt_pair_index(pk_net_t *n, uint32_t src, uint32_t dst);
/* The largest base RTT and BDP over all host pairs (for GLOBAL_T): runs
 * every key's search.  0 or ETSIM_ENOMEM. */
int etsim_net__pkt_route_global(pk_net_t *n, uint64_t *max_bdp, int64_t *max_rtt_ps);

/* parse helpers shared by the readers */
int etsim_net__pkt_parse_u64(const char *s, uint64_t *out);
int etsim_net__pkt_parse_double(const char *s, double *out);

/* Whitespace tokenizer that remembers lines ('#' starts a comment). */
typedef struct pk_tok {
  const char *p, *name;
  uint32_t line, tok_line;
  char tok[256];
} pk_tok_t;

static inline void pk_tok_init(pk_tok_t *t, const char *text, const char *name) {
  t->p = text;
  t->name = name;
  t->line = 1;
  t->tok_line = 1;
  t->tok[0] = 0;
}

/* Next token into t->tok (truncated at 255 chars); 0 at the end. */
static inline int pk_tok_next(pk_tok_t *t) {
  for (;;) {
    while (*t->p == ' ' || *t->p == '\t' || *t->p == '\r' || *t->p == '\n') {
      if (*t->p == '\n') t->line++;
      t->p++;
    }
    if (*t->p == '#') {
      while (*t->p && *t->p != '\n') t->p++;
      continue;
    }
    break;
  }
  if (!*t->p) return 0;
  size_t n = 0;
  t->tok_line = t->line;
  while (*t->p && *t->p != ' ' && *t->p != '\t' && *t->p != '\r' && *t->p != '\n') {
    if (n < sizeof t->tok - 1) t->tok[n++] = *t->p;
    t->p++;
  }
  t->tok[n] = 0;
  return 1;
}

/* Whole file, NUL-terminated, owned by the caller (etsim_free). */
int etsim_net__pkt_read_file(const char *path, char **out, etsim_error_t *err);

#endif /* ETSIM_PKT_INT_H */
