/*
 * pkt_engine.c — the packet-level RoCE network: event loop, switches with
 * a shared-buffer MMU, PFC and ECN, RDMA NICs with round-robin queue pairs,
 * rate pacing, windows, per-packet ACKs and go-back-N.
 *
 * The rules follow the ns-3 RDMA model (HPCC repository) as described in
 * docs/netsim.md ("Switch", "NIC"): ingress admission and
 * XOFF on enqueue, ECN/INT/XON on dequeue, pause frames queued in the
 * strict-priority queue of the port facing the upstream (no preemption),
 * "paused until resume".  Time is int64 picoseconds; each packet costs two
 * events per hop (end of serialisation, arrival at the far end).
 */
#include "pkt_int.h"
/* How many events ahead prefetch_deep fetches each step (4/2/1 and 5/3/2
 * measured no better on the 1,024-host window). */
#ifndef PK_AH_HINT
#define PK_AH_HINT 3
#define PK_AH_RX 2
#define PK_AH_STAGE 1
#endif

#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define PK_RESERVE 4096u
#define PK_RESUME_OFFSET 3072u
/* A pause frame on the wire as ns-3 builds it: PPP 2 + IPv4 20 + pause
 * header 9 (time, queue length, class).  A real 802.1Qbb frame is 64 B;
 * the 3 ns difference at 100 Gb/s shifts every pause, and on the 16-host
 * all-to-all it changed the count by 14 %. */
#define PK_PFC_BYTES 31u
#define PK_DATA_HDR 36u /* PPP 2 + IP 20 + UDP 8 + seq/pg 6 */
#define PK_STANDALONE_HDR 48u

/* ------------------------------------------------------------- small bits */

/* Serialisation time on port p: full data packets and ACKs are nearly all
 * the traffic, so their times are worked out once per port (a 64-bit
 * division each, twice with rounding, is the dearest step of a hop). */
static inline int64_t port_tx_time(const pk_net_t *n, const pk_port_t *p, uint32_t bytes) {
  /* data and ACKs alternate unpredictably: a conditional move between
   * the two, and one test, nearly always false, for any other size (as
   * two tests, the first was a twentieth of the 128-host run's
   * mispredicted branches) */
  int64_t t = bytes == n->mtu_wire ? p->tx_mtu_ps : p->tx_ack_ps;
  if (__builtin_expect((bytes != n->mtu_wire) & (bytes != n->ack_size), 0))
    t = pk_tx_time(n, bytes, p->rate_bps);
  return t;
}

/* The FCT and PFC lines, formatted by hand: fprintf took about 3,400
 * instructions a line, 2 % of a PFC-heavy run.  Bytes as printf's "%u",
 * "%" PRId64 and "%08x" give them. */
static char *put_u64(char *o, uint64_t v) {
  char d[20];
  int k = 0;
  do d[k++] = (char)('0' + v % 10);
  while (v /= 10);
  while (k) *o++ = d[--k];
  return o;
}

static char *put_i64(char *o, int64_t v) {
  if (v < 0) {
    *o++ = '-';
    return put_u64(o, 0 - (uint64_t)v);
  }
  return put_u64(o, (uint64_t)v);
}

static char *put_hex8(char *o, uint32_t v) {
  for (int k = 7; k >= 0; k--) *o++ = "0123456789abcdef"[(v >> (4 * k)) & 15u];
  return o;
}

static int oom(pk_net_t *n) {
  n->stopped = PK_STOP_OOM;
  return ETSIM_ENOMEM;
}

/* An INT slot for an HPCC packet (its telemetry travels apart from its
 * header): from the free list, else a new one. */
static uint32_t int_alloc(pk_net_t *n) {
  if (n->free_int != PK_NONE) {
    uint32_t i = n->free_int;
    n->free_int = (uint32_t)n->hops[(size_t)i * PK_MAX_HOPS].tx_bytes;
    return i;
  }
  if (n->n_ints >= PK_NONE - 1) return PK_NONE;
  size_t want = (n->n_ints + 1) * PK_MAX_HOPS;
  if (want > n->cap_hops && etsim_grow((void **)&n->hops, &n->cap_hops, want, sizeof *n->hops))
    return PK_NONE;
  return (uint32_t)n->n_ints++;
}

/* The end of a packet's life: its INT slot, if any, is free again. */
static inline void pkt_free(pk_net_t *n, const pk_hdr_t *h) {
  if (h->ints == PK_NONE) return;
  n->hops[(size_t)h->ints * PK_MAX_HOPS].tx_bytes = n->free_int;
  n->free_int = h->ints;
}

/* A ring of cap (a power of two, >= 16) headers from the pool (see
 * pk_hpool_t): a freed one of that size, else the current block's next
 * bytes, else a new block.  Blocks start at 64 KB and double up to 32 MB,
 * so a small fabric takes little; from 4 MB on they are 2 MB-aligned and
 * asked for huge pages.  NULL out of memory. */
#define PK_HPOOL_FIRST ((size_t)64 << 10)
#define PK_HPOOL_MAX ((size_t)32 << 20)
#define PK_HUGE ((size_t)2 << 20)

/* Under AddressSanitizer each ring is an allocation of its own: in a pool
 * block rings touch, so an overflow into the next one would go unseen. */
#if defined(__SANITIZE_ADDRESS__)
#define PK_HPOOL_OWN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PK_HPOOL_OWN 1
#endif
#endif

#ifdef PK_HPOOL_OWN
static pk_hdr_t *hring_alloc(pk_hpool_t *h, uint32_t cap) {
  (void)h;
  return etsim_malloc((size_t)cap * sizeof(pk_hdr_t));
}

static void hring_free(pk_hpool_t *h, pk_hdr_t *v, uint32_t cap) {
  (void)h, (void)cap;
  etsim_free(v);
}
#else
static pk_hdr_t *hring_alloc(pk_hpool_t *h, uint32_t cap) {
  unsigned k = (unsigned)__builtin_ctz(cap);
  if (h->free[k]) {
    void *v = h->free[k];
    memcpy(&h->free[k], v, sizeof(void *));
    return v;
  }
  size_t bytes = (size_t)cap * sizeof(pk_hdr_t); /* a multiple of 64 */
  if ((size_t)(h->end - h->cur) < bytes) {
    size_t sz = h->next_bytes ? h->next_bytes : PK_HPOOL_FIRST;
    while (sz < bytes) sz *= 2;
    size_t align = sz >= 2 * PK_HUGE ? PK_HUGE : 64;
    if (h->n_blk == h->cap_blk &&
        etsim_grow((void **)&h->blk, &h->cap_blk, h->n_blk + 1, sizeof *h->blk))
      return NULL;
    char *raw = etsim_malloc(sz + align);
    if (!raw) return NULL;
    h->blk[h->n_blk++] = raw;
    h->cur = (char *)(((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1));
    h->end = h->cur + sz;
    if (align == PK_HUGE) etsim_advise_huge(h->cur, sz);
    h->next_bytes = sz < PK_HPOOL_MAX ? 2 * sz : sz;
  }
  void *v = h->cur;
  h->cur += bytes;
  return v;
}

static void hring_free(pk_hpool_t *h, pk_hdr_t *v, uint32_t cap) {
  if (!v) return;
  unsigned k = (unsigned)__builtin_ctz(cap);
  memcpy(v, &h->free[k], sizeof(void *));
  h->free[k] = v;
}
#endif

static void hpool_free(pk_hpool_t *h) {
  for (size_t i = 0; i < h->n_blk; i++) etsim_free(h->blk[i]);
  etsim_free(h->blk);
  memset(h, 0, sizeof *h);
}

/* Egress queue qi of port p, a ring of headers; qmask keeps one bit per
 * non-empty queue so the scheduler finds the next priority without looking
 * at all eight. */
static int ring_grow(pk_net_t *n, pk_ring_t *f) {
  uint32_t cap = f->cap ? 2 * f->cap : 16;
  if (cap < f->cap) return ETSIM_ENOMEM;
  pk_hdr_t *v = hring_alloc(&n->hpool, cap);
  if (!v) return ETSIM_ENOMEM;
  for (uint32_t i = 0; i < f->n; i++) v[i] = f->v[(f->head + i) & (f->cap - 1)];
  hring_free(&n->hpool, f->v, f->cap);
  f->v = v;
  f->head = 0;
  f->cap = cap;
  return 0;
}

/* Headers are written into their ring slots (queues, wires) whole, with
 * three 16-byte stores of words composed in registers (hdr_put), never
 * built or changed there field by field: a header stored by 1- to 8-byte
 * stores and read back soon after by a load that spans two of them (the
 * next hop's copy, the dequeue of a packet that found its queue empty)
 * waits for those stores to retire, a failed store-to-load forward; perf
 * put a tenth of the 128-host all-to-all's time on such loads.  The words
 * are the header's bytes in order (x86-64 and the other little-endian
 * targets): */
#define HW_ROUTE_SIZE_INPORT 3 /* route (bits 0-31), size (32-47), in_port (48-63) */
#define HW_HOP_FLAGS_OUT 4     /* hop (0-15), flags (16-23), nhop (24-31), out[0..1] */
_Static_assert(sizeof(pk_hdr_t) == 48 && offsetof(pk_hdr_t, route) == 24 &&
                   offsetof(pk_hdr_t, size) == 28 && offsetof(pk_hdr_t, in_port) == 30 &&
                   offsetof(pk_hdr_t, hop) == 32 && offsetof(pk_hdr_t, flags) == 34 &&
                   offsetof(pk_hdr_t, nhop) == 35 && offsetof(pk_hdr_t, out) == 36 &&
                   __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "hdr_put's word layout");

typedef uint64_t hdr_v2_t __attribute__((vector_size(16)));

static inline void hdr_get(uint64_t w[6], const pk_hdr_t *h) { memcpy(w, h, 6 * sizeof *w); }

static inline void hdr_put(pk_hdr_t *d, const uint64_t w[6]) {
  hdr_v2_t a = {w[0], w[1]}, b = {w[2], w[3]}, c = {w[4], w[5]};
  memcpy((char *)d, &a, 16);
  memcpy((char *)d + 16, &b, 16);
  memcpy((char *)d + 32, &c, 16);
}

/* Store into d the header h with its words 3 and 4 replaced by w3 and w4:
 * the other words go from h to d as they are, without the trip through a
 * word array on the stack that hdr_get and hdr_put take (a switch's copy of
 * each packet it queues, some 10 instructions fewer). */
static inline void hdr_put_mid(pk_hdr_t *d, const pk_hdr_t *h, uint64_t w3, uint64_t w4) {
  hdr_v2_t a;
  uint64_t w2, w5;
  memcpy(&a, h, 16);
  memcpy(&w2, (const char *)h + 16, 8);
  memcpy(&w5, (const char *)h + 40, 8);
  hdr_v2_t b = {w2, w3}, c = {w4, w5};
  memcpy((char *)d, &a, 16);
  memcpy((char *)d + 16, &b, 16);
  memcpy((char *)d + 32, &c, 16);
}

/* Point the header of words w at the route r, with the ports it leaves
 * its first PK_HDR_OUT switches by, out (routes[r + 1 ..], see
 * pk_hdr_t.out). */
static inline void hdr_route_words(uint64_t w[6], uint32_t r, const uint16_t *out) {
  uint32_t o01;
  memcpy(&o01, out, 4);
  memcpy(&w[5], out + 2, 8);
  w[HW_ROUTE_SIZE_INPORT] = (w[HW_ROUTE_SIZE_INPORT] & ~0xffffffffull) | r;
  w[HW_HOP_FLAGS_OUT] = (w[HW_HOP_FLAGS_OUT] & 0xffffffffull) | (uint64_t)o01 << 32;
}

/* The slot of a packet of size bytes appended to queue qi, for the caller
 * to fill (hdr_put); NULL when the ring cannot grow. */
static inline pk_hdr_t *fifo_slot(pk_net_t *n, pk_port_t *p, int qi, uint32_t size) {
  pk_ring_t *f = &p->q[qi];
  if (f->n == f->cap && ring_grow(n, f)) return NULL;
  p->qmask |= (uint8_t)(1u << qi);
  pk_hdr_t *d = &f->v[(f->head + f->n++) & (f->cap - 1)];
  /* the next push's slot, for writing: long queues are cold.  Not on a
   * large fabric (see PK_DEEP_BYTES), where that slot is evicted again
   * before the next push, a packet time later, and the prefetch only
   * adds to the misses in flight (the 1,024-host window ran faster
   * without it). */
  if (!n->deep) __builtin_prefetch(&f->v[(f->head + f->n) & (f->cap - 1)], 1);
  f->bytes += size;
  return d;
}

static inline int fifo_push(pk_net_t *n, pk_port_t *p, int qi, const pk_hdr_t *h) {
  pk_hdr_t *d = fifo_slot(n, p, qi, h->size);
  if (!d) return ETSIM_ENOMEM;
  uint64_t w[6];
  hdr_get(w, h);
  hdr_put(d, w);
  return 0;
}

/* The head of queue qi, taken off it: its slot, whose bytes stay as they
 * are until the next push to that queue (the caller sends it first, see
 * transmit_copy), and its words 3 and 4 into *w3, *w4. */
static inline const pk_hdr_t *fifo_take(pk_port_t *p, int qi, uint64_t *w3, uint64_t *w4) {
  pk_ring_t *f = &p->q[qi];
  const pk_hdr_t *h = &f->v[f->head];
  memcpy(w3, (const char *)h + 8 * HW_ROUTE_SIZE_INPORT, 8);
  memcpy(w4, (const char *)h + 8 * HW_HOP_FLAGS_OUT, 8);
  f->head = (f->head + 1) & (f->cap - 1);
  if (!--f->n) p->qmask &= (uint8_t) ~(1u << qi);
  else { /* the next one, sent a packet time later (a header spans two lines) */
    __builtin_prefetch(&f->v[f->head]);
    __builtin_prefetch((const char *)&f->v[f->head] + 47);
  }
  f->bytes -= (uint16_t)(*w3 >> 32);
  return h;
}

/* ------------------------------------------------------------ transmit */

static int port_kick(pk_net_t *n, uint32_t gp);

/* ns-3 schedules a port's end of serialisation and then the packet's
 * arrival at the far end when the serialisation starts, and runs events of
 * equal time in the order they were scheduled.  etsim queues the arrival
 * then too, but the end event only when another packet waits (possibly
 * later), so it takes both sequence numbers now: ties then break as in
 * ns-3, e.g. a packet arriving at a switch port at the very time the port
 * finishes a packet is queued before the port picks its next one, which is
 * what the next packet's INT queue length shows. */
static inline uint64_t pk_tie_mark(pk_net_t *n, pk_port_t *p) {
  p->done_seq = n->evq.next_seq++;
  return n->evq.next_seq++; /* the packet's arrival */
}

/* Double a port's wire ring (only while traffic first builds up). */
static int wire_grow(pk_net_t *n, pk_port_t *p) {
  uint32_t cap = p->wire_cap ? 2 * p->wire_cap : 16;
  if (cap < p->wire_cap) return ETSIM_ENOMEM;
  pk_hdr_t *v = hring_alloc(&n->hpool, cap);
  if (!v) return ETSIM_ENOMEM;
  for (uint32_t i = 0; i < p->wire_n; i++) v[i] = p->wire[(p->wire_head + i) & (p->wire_cap - 1)];
  hring_free(&n->hpool, p->wire, p->wire_cap);
  p->wire = v;
  p->wire_head = 0;
  p->wire_cap = cap;
  return 0;
}

/* The wire slot of the packet port p starts sending now, for the caller to
 * fill before transmit_ (see fifo_slot for why not a copy of a header
 * built elsewhere); NULL out of memory. */
static inline pk_hdr_t *wire_slot(pk_net_t *n, pk_port_t *p) {
  if (p->wire_n == p->wire_cap && wire_grow(n, p)) return NULL;
  return &p->wire[(p->wire_head + p->wire_n++) & (p->wire_cap - 1)];
}

/* Port gp starts serialising the packet (queue pair flow) of size bytes
 * and type just put in its wire slot d: the end of serialisation and its
 * arrival.  The events name what they will read first, for the run loop
 * to fetch a few events ahead (pk_ev_t.hint): the arrival its wire slot,
 * the end of serialisation next, the record the port will most likely
 * send from then (the head of a switch queue, a NIC's next queue pair). */
static inline __attribute__((always_inline)) int transmit_(pk_net_t *n, uint32_t gp, uint32_t size,
                                                           unsigned type, uint32_t arr,
                                                           const pk_hdr_t *d, const void *next) {
  pk_port_t *p = &n->ports[gp];
  int64_t t = port_tx_time(n, p, size);
  p->busy_until = n->now + t;
  p->tx_bytes += size;
  n->tx_pkts[type]++; /* no branch: data and ACKs alternate unpredictably */
  /* A switch port with nothing left to send needs no end-of-transmission
   * event: whoever queues the next packet sees busy_until and asks for one
   * (port_busy).  NICs always look for their next packet. */
  int more = !p->is_switch || p->qbytes_total > 0;
  p->tx_gen++; /* an older end event (same-instant race) is now stale */
  p->done_pending = (uint8_t)more;
  uint64_t arr_seq = pk_tie_mark(n, p);
  if (more && pk_evq_push_hint(&n->evq, n->now + t, p->done_seq, EV_TX_DONE, gp, p->tx_gen, next))
    return oom(n);
  /* The wire is a FIFO (constant delay, in-order serialisation): a ring
   * of headers, and each arrival event takes the one at its head.  The
   * event is queued now, as ns-3 does, with the newest sequence number, so
   * the calendar appends it; queued when the packet before it arrived (one
   * event per busy link), it carried a number a link delay old and had to
   * be sorted in among the events of its instant, a walk that on a
   * 1,024-host fabric passed dozens of them or fell back on the heap. */
  uint64_t b = p->arr_b | arr;
  if (pk_evq_push_hint(&n->evq, n->now + t + p->delay_ps, arr_seq, EV_ARRIVE, gp, b, d))
    return oom(n);
  return 0;
}

/* Port gp sends the header of words w2 .. w5 just stored in its wire slot
 * d; next: see transmit_. */
static inline __attribute__((always_inline)) int transmit_w(pk_net_t *n, uint32_t gp,
                                                            const pk_hdr_t *d, uint64_t w2,
                                                            uint64_t w3, uint64_t w4, uint64_t w5,
                                                            const void *next) {
  const pk_port_t *p = &n->ports[gp];
  unsigned flags = (uint8_t)(w4 >> 16), type = flags & PK_HDR_TYPE;
  /* what the arrival will touch (pk_arrive_b): at a host the queue pair,
   * at a switch the port and queue the packet leaves by, out[hop] (the
   * header's hop counts the links crossed before this one) */
  uint32_t arr = (uint32_t)w2;
  if (!p->peer_host) {
    /* out[hop] from the words, without branches (reading it back from
     * the slot just stored waited for the store: 7 % of the run in perf);
     * a pause frame's out ports are 0: a useless prefetch, no harm */
    unsigned hop = (uint16_t)w4;
    uint64_t o03 = w4 >> 32 | w5 << 32, o45 = w5 >> 32;
    uint32_t o = (uint16_t)((hop < 4 ? o03 : o45) >> (16 * (hop & 3)));
    arr = hop < PK_HDR_OUT ? pk_arrive_sw(p->peer_port0 + o, (flags >> PK_HDR_PG_SHIFT) & 7u)
                           : PK_NONE;
  }
  return transmit_(n, gp, (uint16_t)(w3 >> 32), type, arr, d, next);
}

/* Port gp sends the header of words w (see hdr_put); next: see transmit_. */
static inline __attribute__((always_inline)) int transmit(pk_net_t *n, uint32_t gp,
                                                          const uint64_t w[6], const void *next) {
  pk_hdr_t *d = wire_slot(n, &n->ports[gp]);
  if (!d) return oom(n);
  hdr_put(d, w);
  return transmit_w(n, gp, d, w[2], w[3], w[4], w[5], next);
}

/* Port gp sends the header in slot h (a queue's head just taken, see
 * fifo_take) with its words 3 and 4 replaced by w3 and w4: copied into the
 * wire slot without a trip through a word array (hdr_put_mid). */
static inline __attribute__((always_inline)) int transmit_copy(pk_net_t *n, uint32_t gp,
                                                               const pk_hdr_t *h, uint64_t w3,
                                                               uint64_t w4, const void *next) {
  const pk_port_t *p = &n->ports[gp];
  pk_hdr_t *d = wire_slot(n, &n->ports[gp]);
  if (!d) return oom(n);
  hdr_put_mid(d, h, w3, w4);
  /* as transmit_w, with the next switch's out port read from h, written
   * long before (or by 16-byte stores that hold it whole), rather than
   * picked out of the words */
  unsigned flags = (uint8_t)(w4 >> 16), type = flags & PK_HDR_TYPE, hop = (uint16_t)w4;
  uint32_t arr = h->flow;
  if (!p->peer_host)
    arr = hop < PK_HDR_OUT
              ? pk_arrive_sw(p->peer_port0 + h->out[hop], (flags >> PK_HDR_PG_SHIFT) & 7u)
              : PK_NONE;
  return transmit_(n, gp, (uint16_t)(w3 >> 32), type, arr, d, next);
}

/* 1 when the port is still serialising (an end event is then pending).
 * At the very end of a serialisation the port is still busy for events that
 * ns-3 would run before its end event (see pk_tie_mark). */
static int port_busy(pk_net_t *n, uint32_t gp) {
  pk_port_t *p = &n->ports[gp];
  if (p->busy_until < n->now || (p->busy_until == n->now && p->done_seq <= n->cur_seq)) return 0;
  if (!p->done_pending) {
    p->done_pending = 1;
    if (pk_evq_push_seq(&n->evq, p->busy_until, p->done_seq, EV_TX_DONE, gp, ++p->tx_gen)) oom(n);
  }
  return 1;
}

/* ---------------------------------------------------------------- MMU */

/* ns-3's threshold: the free buffer (what headroom, reserve and the shared
 * use leave) shifted by the port's pfc_shift; pfc_base holds the first
 * two taken off already (the same value: buffer > hdrm + rsrv + used
 * exactly when pfc_base > used). */
static uint64_t pfc_thresh(const pk_node_t *s, const pk_port_t *p) {
  uint64_t free_ = s->pfc_base > s->shared_used ? s->pfc_base - s->shared_used : 0;
  return free_ >> p->pfc_shift;
}

static uint64_t shared_used(const pk_mmu_t *m) {
  return m->ing > PK_RESERVE ? m->ing - PK_RESERVE : 0;
}

/* The ingress counts of switch port gp (global index) for priority qi. */
static inline pk_mmu_t *mmu_at(pk_net_t *n, uint32_t gp, int qi) { return &n->mmu_row[qi][gp]; }

static int send_pfc(pk_net_t *n, uint32_t gp, int q, int pause) {
  if (n->ports[gp].down) return 0; /* the cable failed: nobody to tell */
  pk_port_t *p = &n->ports[gp];
  pk_hdr_t h;
  memset(&h, 0, sizeof h);
  h.flow = h.ints = h.route = PK_NONE;
  h.size = (uint16_t)n->pfc_size;
  h.flags = (uint8_t)(pk_hdr_flags(PK_PFC, (unsigned)q) | (pause ? PK_HDR_PAUSE : 0));
  etsim_net__pkt_rng_skip(&n->ecn_rng); /* ns-3 draws the frame's IP identification */
  if (fifo_push(n, p, 0, &h)) return oom(n);
  p->qbytes_total += n->pfc_size;
  return port_kick(n, gp);
}

/* ----------------------------------------------------------- switches */

static int switch_dequeue(pk_net_t *n, uint32_t gp);

/* A packet of sz bytes leaves switch s, having come in by the port and
 * priority of counts m: its bytes are given back to the headroom first,
 * then to the port's ingress count and the shared buffer. */
static inline void ingress_release(pk_node_t *s, pk_mmu_t *m, uint32_t sz) {
  uint32_t from_hdrm = m->hdrm < sz ? m->hdrm : sz;
  uint64_t sh = shared_used(m);
  uint64_t from_shared = sz - from_hdrm < sh ? sz - from_hdrm : sh;
  m->hdrm -= from_hdrm;
  m->ing -= sz - from_hdrm;
  s->shared_used -= from_shared;
}

/* After a release: resume the upstream of s's port in_port for priority
 * qi when its headroom is empty and its shared use is back under the
 * threshold by the resume offset. */
static inline int ingress_resume(pk_net_t *n, pk_node_t *s, uint32_t in_port, int qi,
                                 const pk_mmu_t *m) {
  uint32_t gin = s->port0 + in_port;
  if (!(n->ing_paused[gin] & (1u << qi)) || m->hdrm != 0) return 0;
  uint64_t su = shared_used(m);
  if (su != 0 && su + PK_RESUME_OFFSET > pfc_thresh(s, &n->ports[gin])) return 0;
  n->ing_paused[gin] &= (uint8_t) ~(1u << qi);
  return send_pfc(n, gin, qi, 0);
}

/* Start the port's next packet unless it is serialising one.  The busy
 * case (about half the calls) is kept apart from the dequeue so it does
 * not pay for the larger function's setup. */
static inline int switch_kick(pk_net_t *n, uint32_t gp) {
  if (port_busy(n, gp)) return n->stopped == PK_STOP_OOM ? ETSIM_ENOMEM : 0;
  return switch_dequeue(n, gp);
}

static int switch_dequeue(pk_net_t *n, uint32_t gp) {
  pk_port_t *p = &n->ports[gp];
  int qi;
  if (p->qmask & 1u) qi = 0;
  else {
    /* round robin over 1..7: the first ready queue after rr, else the
     * first from the bottom (rr itself comes last) */
    unsigned ready = p->qmask & ~p->paused & 0xfeu;
    if (!ready) return 0;
    unsigned after = ready & (0xffu << (p->rr + 1));
    qi = __builtin_ctz(after ? after : ready);
    p->rr = (uint8_t)qi;
  }
  uint64_t w3, w4;
  const pk_hdr_t *h = fifo_take(p, qi, &w3, &w4);
  uint32_t size = (uint16_t)(w3 >> 32);
  uint32_t in_port = (uint16_t)(w3 >> 48);
  unsigned flags = (uint8_t)(w4 >> 16), type = flags & PK_HDR_TYPE;
  p->qbytes_total -= size;
  if (qi) {
    pk_node_t *s = &n->nodes[p->node];
    pk_mmu_t *m = mmu_at(n, s->port0 + in_port, qi);
    ingress_release(s, m, size);
    /* one test, nearly always false, instead of one on the type (data
     * and ACKs alternate unpredictably): marking is possible only above
     * a threshold (ecn_kb: at or under min(kmin, kmax); a queue between
     * the two passes in vain), and a mark from an earlier hop is counted
     * again (a data packet carries one only with ECN on).  ns-3 asks
     * ShouldSendCN of ACKs too, and between Kmin and Kmax that takes a
     * draw (pkt_rng.c) whose mark nothing reads */
    uint64_t e = p->q[qi].bytes;
    if (((e >> 10) >= p->ecn_kb) |
        ((flags & (PK_HDR_TYPE | PK_HDR_ECN)) == (PK_DATA | PK_HDR_ECN))) {
      int mark = 0;
      if (e > p->kmax) mark = 1;
      else if (e > p->kmin && p->kmax > p->kmin) {
        double pr = p->pmax * (double)(e - p->kmin) / (double)(p->kmax - p->kmin);
        mark = etsim_net__pkt_rng_fresh(&n->ecn_rng) < pr;
      }
      if (type == PK_DATA) {
        if (mark) flags |= PK_HDR_ECN;
        if (flags & PK_HDR_ECN) n->st.ecn_marks++;
        w4 = (w4 & ~(0xffull << 16)) | (uint64_t)flags << 16;
      }
    }
    int rc = ingress_resume(n, s, in_port, qi, m);
    if (rc) return rc;
  }
  uint32_t nhop = (uint8_t)(w4 >> 24);
  if (n->cc == &etsim_net__pkt_cc_hpcc && type == PK_DATA && nhop < PK_MAX_HOPS) {
    /* ns-3's IntHop keeps time in ns, bytes in 128 B units and queue
     * length in 80 B units (times INT_MULTI); the HPCC rate law sees those
     * steps, so they are kept here too. */
    uint32_t ints = h->ints;
    pk_hop_t *x = n->hops + (size_t)ints * PK_MAX_HOPS + nhop++;
    uint64_t bu = 128ull * n->cfg.int_multi, qu = 80ull * n->cfg.int_multi;
    x->ts_ps = n->now / 1000 * 1000;
    x->tx_bytes = p->tx_bytes / bu * bu;
    x->qlen_bytes = p->qbytes_total / qu * qu;
    x->rate_bps = p->rate_bps;
    w4 = (w4 & ~(0xffull << 24)) | (uint64_t)nhop << 24;
  }
  const pk_ring_t *f = &p->q[qi];
  return transmit_copy(n, gp, h, w3, w4, f->n ? &f->v[f->head] : NULL);
}

static int switch_receive(pk_net_t *n, uint32_t gp, const pk_hdr_t *h) {
  pk_port_t *inp = &n->ports[gp];
  pk_node_t *s = &n->nodes[inp->node];
  uint32_t hop = h->hop + 1u;
  uint32_t out = s->port0 + (hop <= PK_HDR_OUT ? h->out[hop - 1] : n->routes[h->route + hop]);
  /* ACKs and NACKs queue with the data of their priority group, first in
   * first out: ns-3's ACK_HIGH_PRIO is a host setting (which pause blocks
   * the NIC's ACK queue), and the switches' own AckHighPrio is never set,
   * so queue 0 carries pause frames only. */
  int qi = (int)pk_hdr_pg(h);
  pk_mmu_t *m = mmu_at(n, gp, qi);
  /* the counts, with this packet, call for a pause (headroom in use, or
   * the shared use at the threshold): worked out in each case below from
   * what it already knows, not from the counts again after the copy */
  int xoff = 0;
  if (qi) {
    uint32_t sz = h->size;
    uint64_t th = pfc_thresh(s, inp);
    if (sz + m->hdrm > inp->headroom && sz + shared_used(m) > th) {
      pkt_free(n, h);
      n->st.drops_buffer++;
      n->lossy = 1;
      return 0;
    }
    uint64_t nb = (uint64_t)m->ing + sz;
    if (nb <= PK_RESERVE) {
      m->ing += sz;
      xoff = m->hdrm > 0 || th == 0; /* no shared use, threshold th */
    } else if (nb - PK_RESERVE > th) {
      m->hdrm += sz;
      xoff = 1;
    } else {
      m->ing += sz;
      s->shared_used += sz < nb - PK_RESERVE ? sz : nb - PK_RESERVE;
      xoff = m->hdrm > 0 || nb - PK_RESERVE >= pfc_thresh(s, inp);
    }
    uint64_t occ = s->shared_used;
    if (occ > s->peak_used) s->peak_used = occ;
  }
  pk_port_t *op = &n->ports[out];
  pk_hdr_t *d = fifo_slot(n, op, qi, h->size);
  if (!d) return oom(n);
  uint64_t w3, w4;
  memcpy(&w3, (const char *)h + 8 * HW_ROUTE_SIZE_INPORT, 8);
  memcpy(&w4, (const char *)h + 8 * HW_HOP_FLAGS_OUT, 8);
  w3 = (w3 & 0xffffffffffffull) | (uint64_t)(uint16_t)(gp - s->port0) << 48;
  w4 = (w4 & ~0xffffull) | (uint16_t)hop;
  hdr_put_mid(d, h, w3, w4);
  op->qbytes_total += h->size;
  if (op->qbytes_total > op->qbytes_peak) op->qbytes_peak = op->qbytes_total;
  if (xoff && !(n->ing_paused[gp] & (1u << qi))) {
    n->ing_paused[gp] |= (uint8_t)(1u << qi);
    int rc = send_pfc(n, gp, qi, 1);
    if (rc) return rc;
  }
  return switch_kick(n, out);
}

/* ---------------------------------------------------------------- NICs */

/* Send the NIC's next packet if it is idle: an ACK, else the next queue
 * pair in round-robin order that may send now; otherwise a wake-up by
 * ns-3's rule (see the end of nic_send).  qps_same: the caller changed no queue pair and no
 * pause state since the last call (the end of a transmission, an ACK
 * queued), so a previous finding that every queue pair is blocked until
 * such a change (done, window-bound or paused) still holds and the scan
 * is skipped.  Any other call forgets that finding.  The scan (rr_scan)
 * reads the round robin's own arrays, not the queue pairs' records: with
 * windows most queue pairs are window-bound or waiting for their pacing
 * time (HPCC on 128 hosts: 72 passed a scan). */
static int nic_send(pk_net_t *n, uint32_t gp);

/* Checked builds: NIC p's round robin holds its queue pairs' state. */
static void rr_check(pk_net_t *n, const pk_port_t *p) {
#ifdef ETSIM_CHECKS
  for (size_t i = 0; i < p->n_qps; i++) {
    const pk_rr_t *e = &p->rrs[i];
    pk_qp_t *q = &n->qps[p->qps[i]];
    ETSIM_ASSERT(q->rr_pos == i && &n->ports[q->gport] == p);
    ETSIM_ASSERT(e->na == q->next_avail && e->fin == q->finished && e->pg == q->pg &&
                 e->route == q->route_data);
    ETSIM_ASSERT(p->rr_key[i] == pk_rr_key(n, q));
  }
#else
  (void)n;
  (void)p;
#endif
}

/* The first position at or after `from` and before `to` in NIC p's round
 * robin whose queue pair may send now (its priority not paused), or
 * SIZE_MAX.  While no priority in the list is paused, one test of the
 * keys per queue pair. */
static inline size_t rr_find(const pk_port_t *p, size_t from, size_t to, int64_t now) {
  const int64_t *key = p->rr_key;
  unsigned paused = p->paused & p->pg_mask;
  if (!paused) {
    for (size_t i = from; i < to; i++)
      if (key[i] <= now) return i;
    return SIZE_MAX;
  }
  for (size_t i = from; i < to; i++)
    if (key[i] <= now && !((paused >> p->rrs[i].pg) & 1u)) return i;
  return SIZE_MAX;
}

/* Queue pair q, at position i of NIC p's round robin, moves to position j. */
static inline void rr_move(pk_port_t *p, pk_qp_t *q, size_t i, size_t j) {
  q->rr_pos = (uint32_t)j;
  p->qps[j] = p->qps[i];
  p->rr_key[j] = p->rr_key[i];
  p->rrs[j] = p->rrs[i];
}

/* The first finished queue pair at or after `from` and before `to`, or
 * SIZE_MAX. */
static inline size_t rr_first_fin(const pk_port_t *p, size_t from, size_t to) {
  for (size_t i = from; i < to; i++)
    if (p->rrs[i].fin) return i;
  return SIZE_MAX;
}

/* ns-3's RdmaEgressQueue::GetNextQindex on NIC p (see nic_send): the
 * position of the first queue pair after the last one served (qp_rr) that
 * may send now, or SIZE_MAX; *min_fin: the lowest position of a finished
 * one the scan passed (SIZE_MAX: none).  On a full pass (none found),
 * *waiting: whether one of them only waits for its pacing time. */
static size_t rr_scan(pk_net_t *n, const pk_port_t *p, size_t *min_fin, int *waiting) {
  rr_check(n, p);
  /* qp_rr can be past the end of a list that shrank */
  size_t cnt = p->n_qps, start = p->qp_rr % cnt + 1;
  if (start == cnt) start = 0;
  /* The first candidate from its record, which the run loop has fetched
   * (nic_next's hint): on a large fabric its key's line would be one more
   * miss at nearly every send, where that candidate nearly always sends. */
  pk_qp_t *q0 = &n->qps[p->qps[start]];
  size_t res = SIZE_MAX;
  if (pk_rr_key(n, q0) <= n->now && !((p->paused >> q0->pg) & 1u)) res = start;
  else {
    res = rr_find(p, start + 1, cnt, n->now);
    if (res == SIZE_MAX) res = rr_find(p, 0, start, n->now);
  }
  *min_fin = SIZE_MAX;
  if (p->n_fin) { /* the passed ones: start .. res, wrapping; a finished one never sends */
    if (res == SIZE_MAX) *min_fin = rr_first_fin(p, 0, cnt);
    else if (res >= start) *min_fin = rr_first_fin(p, start, res);
    else if ((*min_fin = rr_first_fin(p, 0, res)) == SIZE_MAX)
      *min_fin = rr_first_fin(p, start, cnt);
  }
  if (res != SIZE_MAX) return res;
  /* one with data it may send, its priority not paused: it waits (none
   * is due); OR of key ^ INT64_MAX, which GCC vectorises */
  unsigned paused = p->paused & p->pg_mask;
  uint64_t acc = 0;
  if (!paused)
    for (size_t i = 0; i < cnt; i++) acc |= (uint64_t)(p->rr_key[i] ^ INT64_MAX);
  else
    for (size_t i = 0; i < cnt; i++)
      acc |= (uint64_t)(p->rr_key[i] ^ INT64_MAX) & -(uint64_t) !((paused >> p->rrs[i].pg) & 1u);
  *waiting = acc != 0;
  return SIZE_MAX;
}

/* What etsim_netpkt_msg_stat reports of the message queue pair q carries. */
static void qp_stat(const pk_qp_t *q, etsim_netpkt_msg_stat_t *o) {
  o->src = q->src;
  o->dst = q->dst;
  o->sport = q->sport;
  o->dport = q->dport;
  o->bytes = q->size;
  o->start_ps = q->start_ps;
  o->delivered_ps = q->delivered_ps;
  o->acked_ps = q->acked_ps;
  o->standalone_ps = q->standalone_ps;
  o->win_bytes = q->win;
  o->base_rtt_ps = q->base_rtt_ps;
  o->held = q->held;
}

/* Finished queue pair `slot` has left its NIC's round robin (the last place
 * that names it): unless the run has lost a packet, sent a NACK or cut a
 * cable (n->lossy), nothing refers to it any more.  Its data arrived once
 * each, its ACKs, which take one path first in first out, ended with the
 * one that finished it, and its timers' generations have moved on.  So its
 * record takes a later message (etsim_netpkt_send), and what
 * etsim_netpkt_msg_stat reports of it moves to its message.  A long ring
 * all-reduce sends millions of messages, a few hundred thousand at a time
 * at most.  Out of line: it is rare, and the run loop is at GCC's inlining
 * limit. */
static __attribute__((noinline)) void qp_release(pk_net_t *n, uint32_t slot) {
  pk_qp_t *q = &n->qps[slot];
  if (n->lossy || q->held || !q->delivered) return;
  if (etsim_grow((void **)&n->free_qps, &n->cap_free_qps, n->n_free_qps + 1, sizeof *n->free_qps))
    return; /* kept: it only costs memory */
  etsim_netpkt_msg_stat_t o;
  qp_stat(q, &o);
  pk_msgs_release(&n->msgs, q->id, &o);
  n->free_qps[n->n_free_qps++] = slot;
}

static inline int nic_kick_(pk_net_t *n, uint32_t gp, int qps_same) {
  if (!qps_same) n->ports[gp].qps_blocked = 0;
  if (port_busy(n, gp)) return n->stopped == PK_STOP_OOM ? ETSIM_ENOMEM : 0;
  return nic_send(n, gp);
}

/* What NIC p will most likely send from after its current packet (see
 * transmit_): the head of its ACK queue, else the queue pair after the last
 * one served (where nic_send's scan starts). */
static inline const void *nic_next(const pk_net_t *n, const pk_port_t *p) {
  if (p->q[0].n) return &p->q[0].v[p->q[0].head];
  size_t cnt = p->n_qps;
  if (!cnt) return NULL;
  size_t k = p->qp_rr < cnt ? p->qp_rr : p->qp_rr % cnt;
  if (++k == cnt) k = 0;
  return &n->qps[p->qps[k]];
}

static int nic_send(pk_net_t *n, uint32_t gp) {
  pk_port_t *p = &n->ports[gp];
  int ack_prio = n->cfg.ack_high_prio ? 0 : 3;
  if (p->q[0].n && !(p->paused & (1u << ack_prio))) {
    uint64_t w3, w4;
    const pk_hdr_t *h = fifo_take(p, 0, &w3, &w4);
    p->qbytes_total -= (uint16_t)(w3 >> 32);
    return transmit_copy(n, gp, h, w3, w4, nic_next(n, p));
  }
  size_t cnt = p->n_qps;
  if (p->qps_blocked) goto wake;
  /* Every queue pair paused (each priority in the list is): the scan below
   * would find none and remove every finished one; do just that. */
  if (!(p->pg_mask & 0xfeu & ~(unsigned)p->paused)) {
    if (p->n_fin) {
      size_t nxt = 0;
      for (size_t i = 0; i < cnt; i++) {
        pk_qp_t *q = &n->qps[p->qps[i]];
        if (p->rrs[i].fin) {
          pk_pg_sub(p, p->rrs[i].pg);
          q->rr_pos = PK_NONE;
          qp_release(n, p->qps[i]);
        } else rr_move(p, q, i, nxt++);
      }
      p->n_qps = cnt = nxt;
      p->n_fin = 0;
    }
    goto wake;
  }
  /* ns-3's RdmaEgressQueue::GetNextQindex: the first queue pair after the
   * last one served that may send now.  Finished queue pairs stay in the
   * list until a scan passes one of them; then every finished one from the
   * first passed onwards leaves, and the last-served position (qp_rr, ns-3's
   * m_rrlast) is not adjusted, so the next scan starts from the same index
   * in the shorter list.  After a pass that finds none, the wake-up below
   * takes the earliest pacing time of those left. */
  size_t min_fin;
  int waiting = 0;
  size_t res = rr_scan(n, p, &min_fin, &waiting);
  if (min_fin != SIZE_MAX) {
    size_t nxt = min_fin;
    for (size_t i = min_fin; i < cnt; i++) {
      pk_qp_t *q = &n->qps[p->qps[i]];
      if (p->rrs[i].fin) {
        pk_pg_sub(p, p->rrs[i].pg);
        p->n_fin--;
        q->rr_pos = PK_NONE;
        qp_release(n, p->qps[i]);
        continue;
      }
      if (i == res) res = nxt;
      rr_move(p, q, i, nxt++);
    }
    p->n_qps = cnt = nxt;
  }
  if (res != SIZE_MAX) {
    pk_qp_t *q = &n->qps[p->qps[res]];
    p->qp_rr = res;
    /* The next scan starts at the one after, a packet time from now: the
     * record of the one after that, and the route of the one after (its
     * record was fetched at the last send, the route is the next miss).
     * Not on a large fabric: a packet time is some 9,000 events there,
     * the lines are evicted again before use; the run loop fetches the
     * next queue pair from the end event's hint.  (k1's route is read
     * from the round robin: from k1's record it waited on a miss whenever
     * k1 did not send last, as with windows.) */
    if (!n->deep) {
      size_t k1 = res + 1 < cnt ? res + 1 : 0, k2 = k1 + 1 < cnt ? k1 + 1 : 0;
      __builtin_prefetch(&n->qps[p->qps[k2]]);
      __builtin_prefetch(n->routes + p->rrs[k1].route + 1);
    }
    uint64_t left = q->size - q->snd_nxt;
    uint32_t pay = left < n->cfg.payload_bytes ? (uint32_t)left : n->cfg.payload_bytes;
    uint32_t ints = PK_NONE;
    if (n->cc == &etsim_net__pkt_cc_hpcc && (ints = int_alloc(n)) == PK_NONE) return oom(n);
    uint32_t size = pay + n->data_hdr;
    uint64_t w[6];
    w[0] = q->snd_nxt;
    w[1] = (uint64_t)n->now;
    w[2] = (uint32_t)(q - n->qps) | (uint64_t)ints << 32;
    w[HW_ROUTE_SIZE_INPORT] = (uint64_t)size << 32;                     /* in_port 0 */
    w[HW_HOP_FLAGS_OUT] = (uint64_t)pk_hdr_flags(PK_DATA, q->pg) << 16; /* hop, nhop 0 */
    hdr_route_words(w, q->route_data, n->routes + q->route_data + 1);
    q->snd_nxt += pay;
    q->last_pkt_size = size;
    if (p->ready_qp == p->qps[res]) p->ready_qp = PK_NONE;
    uint64_t pace = n->cfg.rate_bound ? q->rate : q->max_rate;
    q->next_avail =
        n->now + (pace == p->rate_bps ? port_tx_time(n, p, size) : pk_tx_time(n, size, pace));
    p->rrs[res].na = q->next_avail; /* pk_rr_sync, without the cold read of rr_pos */
    p->rr_key[res] = pk_rr_key(n, q);
    p->wake_min_ok = 0;
    n->last_progress = n->now;
    return transmit(n, gp, w, nic_next(n, p)); /* (the queue pair at k1 when no ACK waits) */
  }
  /* A full pass: every finished queue pair is gone, so the wake-up below
   * takes the earliest pacing time of the rest, and only if none is
   * pending (often one is: a wake-up for the next pacing time while ACKs
   * come in). */
  p->wake_min_ok = 0;
  /* No queue pair can send until one of them changes (all done, paused
   * or window-bound, none only waiting for its pacing time): later kicks
   * that change no queue pair skip the scan (nic_kick_). */
  if (!waiting) p->qps_blocked = 1;
wake:
  /* As ns-3's QbbNetDevice::DequeueAndTransmit: with nothing to send, wake
   * at the earliest pacing time of all the NIC's queue pairs (window-bound
   * and paused ones too), and only when no wake-up is pending and that time
   * is still ahead; pk_change_rate moves a pending one earlier. */
  if (p->wake_t >= 0) return 0;
  if (!p->wake_min_ok) {
    /* The earliest time matters only when it is ahead: a queue pair known
     * to be due already (and still in the list) settles it without a pass
     * over all of them. */
    if (p->ready_qp != PK_NONE) return 0;
    int64_t t_wake = INT64_MAX;
    for (size_t i = 0; i < cnt; i++) {
      const pk_rr_t *e = &p->rrs[i];
      int64_t t = e->na;
      if (t <= n->now && !e->fin) p->ready_qp = p->qps[i];
      if (t < t_wake) t_wake = t;
    }
    p->wake_min = t_wake;
    p->wake_min_ok = 1;
  }
  int64_t t_wake = p->wake_min;
  if (t_wake != INT64_MAX && t_wake > n->now) {
    p->wake_gen++;
    p->wake_t = t_wake;
    if (pk_evq_push(&n->evq, t_wake, EV_NIC_WAKE, gp, p->wake_gen)) return oom(n);
  }
  return 0;
}

static int nic_kick(pk_net_t *n, uint32_t gp) { return nic_kick_(n, gp, 0); }

static int port_kick(pk_net_t *n, uint32_t gp) {
  return n->ports[gp].is_switch ? switch_kick(n, gp) : nic_kick(n, gp);
}

static void qp_complete(pk_net_t *n, pk_qp_t *q) {
  q->finished = 1;
  if (q->rr_pos != PK_NONE) {
    pk_rr_sync(n, q); /* HPCC may have moved its pacing time (host_receive) */
    n->ports[q->gport].rrs[q->rr_pos].fin = 1;
  }
  q->acked_ps = n->now;
  for (int i = 0; i < 3; i++) q->tgen[i]++;
  /* it stays in its NIC's round robin until a scan passes it (nic_send) */
  n->ports[q->gport].n_fin++;
  n->ports[q->gport].wake_min_ok = 0;
  if (n->ports[q->gport].ready_qp == (uint32_t)(q - n->qps)) n->ports[q->gport].ready_qp = PK_NONE;
  n->n_active--;
  n->st.msgs_done++;
  n->st.last_done_ps = n->now;
  if (n->fct) {
    char line[160], *o = line;
    o = put_hex8(o, q->sip);
    *o++ = ' ';
    o = put_hex8(o, q->dip);
    *o++ = ' ';
    o = put_u64(o, q->sport);
    *o++ = ' ';
    o = put_u64(o, q->dport);
    *o++ = ' ';
    o = put_u64(o, q->size);
    *o++ = ' ';
    o = put_i64(o, q->start_ps / 1000);
    *o++ = ' ';
    o = put_i64(o, (n->now - q->start_ps) / 1000);
    *o++ = ' ';
    o = put_i64(o, q->standalone_ps / 1000);
    *o++ = '\n';
    fwrite(line, 1, (size_t)(o - line), n->fct);
  }
  if (q->fn) q->fn(q->ctx, q->id, ETSIM_NETPKT_ACKED, n->now);
}

static int host_receive(pk_net_t *n, uint32_t gp, const pk_hdr_t *h) {
  (void)gp;
  uint32_t fid = h->flow;
  pk_qp_t *q = &n->qps[fid];
  unsigned type = pk_hdr_type(h);
  if (type == PK_DATA) {
    int x;
    uint32_t chunk = n->cfg.l2_chunk_size;
    if (h->seq == q->rcv_nxt) {
      q->rcv_nxt += h->size - n->data_hdr; /* the payload */
      n->last_progress = n->now;
      if (q->rcv_nxt >= q->milestone) {
        /* one step per ACK, as ns-3: a milestone far behind (interval 1)
         * means an ACK for every packet */
        q->milestone += n->cfg.l2_ack_interval;
        x = 1;
      } else if (chunk && q->rcv_nxt % chunk == 0) x = 1;
      else x = 5;
    } else if (h->seq > q->rcv_nxt) {
      if (n->now >= q->nack_timer || q->last_nack != q->rcv_nxt) {
        q->nack_timer = n->now + (int64_t)(n->cfg.nack_interval_us * 1e6);
        q->last_nack = q->rcv_nxt;
        if (n->cfg.l2_back_to_zero && chunk) q->rcv_nxt = q->rcv_nxt / chunk * chunk;
        n->lossy = 1; /* a go-back-N resend can duplicate packets */
        x = 2;
      } else x = 4;
    } else x = 3;
    if (!q->delivered && q->rcv_nxt >= q->rcv_size) {
      q->delivered = 1;
      q->delivered_ps = n->now;
      if (q->fn) {
        q->fn(q->ctx, q->id, ETSIM_NETPKT_DELIVERED, n->now);
        q = &n->qps[fid]; /* the callback may have grown the arrays */
      }
    }
    if (x == 1 || x == 2) {
      /* The data packet turns into its ACK: same flow, INT stack and time
       * stamp; the ECN mark becomes the CNP flag.  Copied whole into the
       * ACK queue, then changed there (see fifo_slot). */
      if (h->flags & PK_HDR_ECN) n->st.cnps++;
      pk_port_t *rp = &n->ports[q->rx_gport];
      pk_hdr_t *d = fifo_slot(n, rp, 0, n->ack_size);
      if (!d) return oom(n);
      uint64_t w[6];
      hdr_get(w, h);
      unsigned flags = (unsigned)(pk_hdr_flags(x == 1 ? PK_ACK : PK_NACK, pk_hdr_pg(h)) |
                                  (h->flags & PK_HDR_ECN));
      w[0] = q->rcv_nxt;
      w[HW_ROUTE_SIZE_INPORT] =
          (w[HW_ROUTE_SIZE_INPORT] & 0xffff000000000000ull) | (uint64_t)n->ack_size << 32;
      /* hop 0, nhop kept */
      w[HW_HOP_FLAGS_OUT] = (w[HW_HOP_FLAGS_OUT] & 0xff000000ull) | (uint64_t)flags << 16;
      hdr_route_words(w, q->route_ack, q->ack_out);
      hdr_put(d, w);
      rp->qbytes_total += n->ack_size;
      return nic_kick_(n, q->rx_gport, 1);
    }
    pkt_free(n, h);
    return 0;
  }
  /* ACK or NACK at the sender (a held one no longer sends) */
  if (q->finished | q->held) {
    pkt_free(n, h);
    return 0;
  }
  uint64_t seq = h->seq;
  if (n->cfg.l2_back_to_zero && n->cfg.l2_chunk_size)
    seq = seq / n->cfg.l2_chunk_size * n->cfg.l2_chunk_size;
  if (seq > q->snd_una) {
    q->snd_una = seq;
    n->last_progress = n->now;
  }
  if (q->snd_una >= q->size) {
    uint32_t gport = q->gport;
    /* ns-3 runs congestion control on the ACK that completes a queue pair
     * too (RdmaHw::ReceiveAck: QpComplete, then HandleAckHp; the order
     * does not matter here, where a completion's callback sends nothing
     * at once).  Only HPCC's update reaches what the NIC does next: its
     * ChangeRate moves the finished pair's pacing time, which the NIC's
     * wake-up reads until the pair leaves its list, and can bring a
     * pending wake-up forward.  TIMELY and DCTCP only set the finished
     * pair's rate; DCQCN's timers are cancelled first. */
    if (n->cc == &etsim_net__pkt_cc_hpcc) n->cc->on_ack(n, q, h);
    pkt_free(n, h);
    qp_complete(n, q); /* q may move: its callback can send */
    return nic_kick(n, gport);
  }
  if (type == PK_NACK) q->snd_nxt = q->snd_una;
  /* the round robin's copy changes with the window's room (and, with
   * VAR_WIN, the rate) and with the pacing time; only then is rr_pos, on
   * a cold line, read */
  int64_t na = q->next_avail;
  if (n->cc->on_ack) n->cc->on_ack(n, q, h);
  if (q->win | (type == PK_NACK) | (q->next_avail != na)) pk_rr_sync(n, q);
  pkt_free(n, h);
  if (n->stopped == PK_STOP_OOM) return ETSIM_ENOMEM;
  return nic_kick(n, q->gport);
}

/* Inlined by force into the run loop, its only caller (with the switch
 * and host receive paths): as a function of its own, its entry and exit
 * (six saved registers, a large frame) and the call were some 16
 * instructions an arrival, 3 % of the 128-host all-to-all's. */
static inline __attribute__((always_inline)) int on_arrive(pk_net_t *n, uint32_t gp,
                                                           const pk_hdr_t *h) {
  pk_port_t *p = &n->ports[gp];
  if (pk_hdr_type(h) == PK_PFC) {
    if (p->down) return 0; /* a failed port stays held (pkt_fail.c) */
    unsigned q = pk_hdr_pg(h);
    uint8_t bit = (uint8_t)(1u << q);
    int pause = (h->flags & PK_HDR_PAUSE) != 0;
    if (pause) {
      if (!(p->paused & bit)) {
        p->paused |= bit;
        p->paused_since[q] = n->now;
      }
      p->pauses_rx++;
      n->st.pauses++;
    } else {
      if (p->paused & bit) {
        p->paused &= (uint8_t)~bit;
        p->paused_ps += n->now - p->paused_since[q];
        n->st.paused_ps += n->now - p->paused_since[q];
      }
      n->st.resumes++;
    }
    if (n->pfc) {
      char line[80], *o = line;
      o = put_i64(o, n->now / 1000);
      *o++ = ' ';
      o = put_u64(o, p->node);
      *o++ = ' ';
      *o++ = n->nodes[p->node].is_switch ? '1' : '0';
      *o++ = ' ';
      o = put_u64(o, p->ifindex);
      *o++ = ' ';
      *o++ = pause ? '1' : '0';
      *o++ = '\n';
      fwrite(line, 1, (size_t)(o - line), n->pfc);
    }
    return pause ? 0 : port_kick(n, gp);
  }
  double er = p->err;
  if (er > 0 && etsim_rng_uniform(&n->rng) < er) {
    pkt_free(n, h);
    n->st.drops_error++;
    n->lossy = 1;
    return 0;
  }
  if (p->is_switch) return switch_receive(n, gp, h);
  /* h is the slot at the head of the sending port's wire, which nothing a
   * switch does with the packet can reuse; a host's completion callbacks
   * can (a link failure moves packets), so the host gets a copy */
  pk_hdr_t c = *h;
  return host_receive(n, gp, &c);
}

/* ------------------------------------------------------------- deadlock */

static int stall_report(pk_net_t *n, etsim_error_t *err) {
  /* Waits-for graph: node A waits on B when A's port towards B is paused
   * on a priority that still holds packets. */
  uint32_t nn = n->n_nodes;
  uint8_t *color = etsim_calloc(nn, 1);
  uint32_t *parent = etsim_malloc(nn * sizeof *parent);
  uint32_t *stack = etsim_malloc(nn * sizeof *stack);
  uint32_t *pit = etsim_malloc(nn * sizeof *pit);
  char cyc[512] = "";
  if (color && parent && stack && pit) {
    for (uint32_t s0 = 0; s0 < nn && !cyc[0]; s0++) {
      if (color[s0]) continue;
      size_t sp = 0;
      stack[sp++] = s0;
      pit[s0] = 0;
      color[s0] = 1;
      while (sp && !cyc[0]) {
        uint32_t u = stack[sp - 1];
        pk_node_t *nd = &n->nodes[u];
        if (pit[u] >= nd->nports) {
          color[u] = 2;
          sp--;
          continue;
        }
        pk_port_t *p = &n->ports[nd->port0 + pit[u]++];
        int waits = 0;
        for (int q = 1; q < PK_NPRIO; q++)
          if ((p->paused & (1u << q)) && p->q[q].n) waits = 1;
        if (!waits) continue;
        uint32_t v = p->peer;
        if (color[v] == 1) {
          int len = 0;
          uint32_t path[64];
          size_t k = sp;
          while (k > 0 && len < 63) {
            path[len++] = stack[--k];
            if (stack[k] == v) break;
          }
          size_t off = 0;
          for (int i = len - 1; i >= 0 && off < sizeof cyc - 16; i--)
            off += (size_t)snprintf(cyc + off, sizeof cyc - off, "%u -> ", path[i]);
          snprintf(cyc + off, sizeof cyc - off, "%u", v);
        } else if (!color[v]) {
          color[v] = 1;
          pit[v] = 0;
          parent[v] = u;
          stack[sp++] = v;
        }
      }
    }
  }
  etsim_free(color);
  etsim_free(parent);
  etsim_free(stack);
  etsim_free(pit);
  size_t stuck = 0, first = SIZE_MAX;
  for (size_t i = 0; i < n->n_qps; i++)
    if (n->qps[i].started && !n->qps[i].finished) {
      stuck++;
      if (first == SIZE_MAX) first = i;
    }
  if (cyc[0])
    return etsim_error_set(err, ETSIM_EDEADLOCK,
                           "PFC deadlock at %.3f us: pause cycle %s; %zu "
                           "flow(s) can never finish",
                           (double)n->now / 1e6, cyc, stuck);
  if (first != SIZE_MAX) {
    pk_qp_t *q = &n->qps[first];
    return etsim_error_set(err, ETSIM_EDEADLOCK,
                           "no progress for %.3f us at %.3f us: %zu flow(s) unfinished, e.g. "
                           "flow %zu (%u -> %u) acked %" PRIu64 " of %" PRIu64
                           " bytes (lost packet and no retransmission timeout?)",
                           (double)n->cfg.stall_ps / 1e6, (double)n->now / 1e6, stuck,
                           (size_t)q->id, q->src, q->dst, q->snd_una, q->size);
  }
  return 0;
}

/* ------------------------------------------------------------ run loop */

static int qlen_sample(pk_net_t *n) {
  for (uint32_t i = 0; i < n->n_ports; i++) {
    pk_port_t *p = &n->ports[i];
    if (!n->nodes[p->node].is_switch) continue;
    uint64_t eb = 0;
    for (int q = 1; q < PK_NPRIO; q++) eb += p->q[q].bytes;
    size_t kb = (size_t)(eb / 1000);
    if (kb >= p->n_hist) {
      size_t cap = p->n_hist;
      if (etsim_grow((void **)&p->hist, &cap, kb + 1, sizeof *p->hist)) return oom(n);
      memset(p->hist + p->n_hist, 0, (cap - p->n_hist) * sizeof *p->hist);
      p->n_hist = cap;
    }
    p->hist[kb]++;
  }
  int64_t nt = n->now + n->cfg.qlen_interval_ns * 1000;
  if (nt <= n->cfg.qlen_mon_end_ns * 1000 && pk_evq_push(&n->evq, nt, EV_QLEN, 0, 0)) return oom(n);
  return 0;
}

/* An event of kind with fields a and b (pk_ev_t), taken out of the queue
 * before anything is queued (its slot may then be reused). */
static int on_event(pk_net_t *n, uint32_t kind, uint32_t a, uint64_t b, etsim_error_t *err) {
  /* the two kinds of nearly every event first, without the jump table */
  if (kind == EV_ARRIVE) {
    pk_port_t *p = &n->ports[a];
    const pk_hdr_t *h = &p->wire[p->wire_head];
    p->wire_head = (p->wire_head + 1) & (p->wire_cap - 1);
    p->wire_n--;
    return on_arrive(n, p->peer_gport, h);
  }
  if (kind == EV_TX_DONE) {
    /* A live end event (its generation is the port's) was queued at the
     * port's busy_until with its done_seq (transmit_, port_busy), so the
     * port is idle now and the kick's port_busy test is skipped; as the end
     * of a transmission it changed no queue pair (nic_kick_'s qps_same). */
    pk_port_t *p = &n->ports[a];
    if ((uint32_t)b != p->tx_gen) return 0;
    p->done_pending = 0;
    return p->is_switch ? switch_dequeue(n, a) : nic_send(n, a);
  }
  switch (kind) {
    case EV_NIC_WAKE: {
      pk_port_t *p = &n->ports[a];
      if ((uint32_t)b != p->wake_gen) return 0;
      p->wake_t = -1;
      return nic_kick(n, a);
    }
    case EV_FLOW_START: {
      pk_qp_t *q = &n->qps[a];
      if (q->held) return 0; /* lost its route before it started */
      pk_port_t *p = &n->ports[q->gport];
      q->started = 1;
      if (pk_rr_add(n, p, a)) return oom(n);
      pk_pg_add(p, q->pg);
      p->wake_min_ok = 0;
      if (!n->watchdog_on) {
        n->watchdog_on = 1;
        n->last_progress = n->now;
        if (pk_evq_push(&n->evq, n->now + n->cfg.stall_ps, EV_WATCHDOG, 0, 0)) return oom(n);
      }
      return nic_kick(n, q->gport);
    }
    case EV_CC_TIMER: {
      pk_qp_t *q = &n->qps[a];
      int id = (int)(b & 0xff);
      if (q->finished || (uint32_t)(b >> 8) != q->tgen[id]) return 0;
      if (n->cc->on_timer) n->cc->on_timer(n, q, id);
      pk_rr_sync(n, q);
      if (n->stopped == PK_STOP_OOM) return ETSIM_ENOMEM;
      /* ns-3's DCQCN timers change the rate and nothing else: the NIC looks
       * again at its next end of transmission, ACK, resume or wake-up.  A
       * rate change can grow a VAR_WIN window, so the next look must scan. */
      n->ports[q->gport].qps_blocked = 0;
      return 0;
    }
    case EV_QLEN:
      return qlen_sample(n);
    case EV_WATCHDOG: {
      if (!n->n_active) {
        n->watchdog_on = 0;
        return 0;
      }
      int running = 0;
      for (size_t i = 0; i < n->n_qps && !running; i++)
        running = n->qps[i].started && !n->qps[i].finished && !n->qps[i].held;
      if (!running) n->last_progress = n->now;
      else if (n->now - n->last_progress >= n->cfg.stall_ps) {
        int rc = stall_report(n, err);
        if (rc) return rc;
      }
      if (pk_evq_push(&n->evq, n->now + n->cfg.stall_ps, EV_WATCHDOG, 0, 0)) return oom(n);
      return 0;
    }
  }
  return etsim_error_set(err, ETSIM_EINTERNAL, "unknown event kind %u", kind);
}

/* Pieces of the run loop's look-ahead, each for an arrival event x (they
 * only prefetch, and read nothing but the event).  The queue pair of a
 * packet for a host, or the port and egress ring a switch will queue it in
 * (pk_arrive_b): */
static inline __attribute__((always_inline)) void pf_dst(const pk_net_t *n, const pk_ev_t *x) {
  uint32_t lo = (uint32_t)x->b;
  if (lo == PK_NONE) return;
  if (x->b & PK_ARR_SW) {
    const pk_port_t *op = &n->ports[lo >> 3];
    __builtin_prefetch(op);
    __builtin_prefetch(&op->q[lo & 7]);
  } else {
    __builtin_prefetch(&n->qps[lo]);
    __builtin_prefetch(&n->qps[lo].rcv_nxt);
  }
}
/* the first three lines of the port the packet arrives at: */
static inline __attribute__((always_inline)) void pf_rx_port(const pk_net_t *n, const pk_ev_t *x) {
  const char *rx = (const char *)&n->ports[(uint32_t)(x->b >> 32) & 0x7fffffffu];
  __builtin_prefetch(rx);
  __builtin_prefetch(rx + 64);
  __builtin_prefetch(rx + 128);
}
/* a header-sized record at h (a wire slot, a queue's head slot): */
static inline __attribute__((always_inline)) void pf_hdr(const void *h) {
  __builtin_prefetch(h);
  __builtin_prefetch((const char *)h + sizeof(pk_hdr_t) - 1);
}

/* How many events ahead the look-ahead fetches each record: the port of
 * an end of serialisation or an arrival; for an arrival, the packet's
 * wire slot (its hint, see pk_ev_t.hint) and the port it arrives at; and
 * what it touches there (pf_dst).  Deep: on a large fabric (see
 * PK_DEEP_BYTES), with also the hint of an end of serialisation (the head
 * of the queue its port will most likely send from next). */
#ifndef PK_NEAR_PORT
#define PK_NEAR_PORT 2
#define PK_NEAR_RX 1
#define PK_NEAR_DST 0
#endif
#ifndef PK_DEEP_PORT
#define PK_DEEP_PORT 3
#define PK_DEEP_RX 2
#define PK_DEEP_DST 1
#endif

/* The run loop's prefetches, on a fabric whose records fit in the caches
 * (a few instructions per event).  All are inlined by force: as functions
 * of prefetches only, GCC found them free of effects and dropped the
 * calls.  Every address comes from an event's own fields, so no prefetch
 * waits on a read. */
static inline __attribute__((always_inline)) void prefetch_near(const pk_net_t *n, const pk_ev_t *x,
                                                                uint32_t m) {
  if (m > PK_NEAR_DST && x[PK_NEAR_DST].kind == EV_ARRIVE) pf_dst(n, &x[PK_NEAR_DST]);
  if (m > PK_NEAR_RX && x[PK_NEAR_RX].kind == EV_ARRIVE) {
    pf_hdr(x[PK_NEAR_RX].hint);
    pf_rx_port(n, &x[PK_NEAR_RX]);
  }
  if (m > PK_NEAR_PORT && x[PK_NEAR_PORT].kind <= EV_ARRIVE)
    __builtin_prefetch(&n->ports[x[PK_NEAR_PORT].a]);
}

/* The same on a large fabric, where nearly every record an event reads
 * is cold: further ahead, and with the hints of ends of serialisation
 * too (the hint itself is never read: a ring that grew since has
 * moved). */
static inline __attribute__((always_inline)) void prefetch_deep(const pk_net_t *n,
                                                                const pk_ev_t *const x[4]) {
  const pk_ev_t *y = x[PK_DEEP_PORT];
  if (y && y->kind <= EV_ARRIVE) {
    __builtin_prefetch(&n->ports[y->a]);
    if (y->hint) pf_hdr(y->hint);
  }
  if ((y = x[PK_DEEP_RX]) && y->kind == EV_ARRIVE) pf_rx_port(n, y);
  if ((y = x[PK_DEEP_DST]) && y->kind == EV_ARRIVE) pf_dst(n, y);
}

/* Queue-pair bytes above which the run loop fetches deeper (a 1,024-host
 * all-to-all has 335 MB of them, the 128-host one 5 MB).  There the
 * events' hints (pk_ev_t.hint) cut the 0.5 ms window's CPU time by about
 * a quarter; on the small fabric the extra look-ahead cost 5-10 %. */
#ifndef PK_DEEP_BYTES
#define PK_DEEP_BYTES (64u << 20)
#endif

/* SIMULATOR_STOP_TIME as ns-3 keeps it: Simulator::Stop(t), called once
 * the network and its flows are set up, queues an event at t that runs
 * before every event of that instant queued after it, and ends the run.
 * So a run takes every event before stop_ps and, of those at stop_ps
 * itself, only the ones queued at set-up (the queue-length monitor's first
 * sample): a packet arriving at that very instant does not arrive.  (Run
 * side by side at 1,024 hosts, a window ending at 200 us gave one pause
 * frame more than ns-3's, sent at 200,000 ns.)  1 when e is an event at
 * stop_ps that still runs. */
static inline int pk_stop_due(const pk_net_t *n, const pk_ev_t *e) {
  return e->t == n->cfg.stop_ps && e->seq < n->setup_seq;
}

int etsim_netpkt_run_until(etsim_netpkt_t *net, int64_t t_ps, etsim_error_t *err) {
  pk_net_t *n = (pk_net_t *)net;
  if (n->stopped == PK_STOP_OOM)
    return etsim_error_set(err, ETSIM_ENOMEM, "network: out of memory");
  /* the last instant whose every event runs (pk_stop_due) */
  int64_t stop = n->cfg.stop_ps, t_max = t_ps < stop ? t_ps : stop - (stop != INT64_MAX);
  int deep = n->n_qps * sizeof *n->qps > PK_DEEP_BYTES;
  n->deep = (uint8_t)deep;
  for (;;) {
    pk_ev_t e;
    const pk_ev_t *x[4], *ahead = 0, *ep = &e;
    uint32_t m = 0;
    /* the look-ahead's prefetches right away: one test of deep an event
     * (with them after the clock's update, two were 0.5 % of the 128-host
     * all-to-all's instructions); with none due they are in vain */
    if (deep) {
      if (!pk_evq_pop_until(&n->evq, t_max, &e)) ep = 0;
      pk_evq_ahead4(&n->evq, x);
      prefetch_deep(n, x);
    } else {
      ep = pk_evq_pop_ref(&n->evq, t_max, &ahead, &m);
      prefetch_near(n, ahead, m);
    }
    if (!ep) { /* none due by t_max: done, unless at the stop instant */
      const pk_ev_t *h = pk_evq_peek(&n->evq);
      if (!h || h->t > t_ps) return 0;
      if (!pk_stop_due(n, h)) {
        n->stopped = PK_STOP_TIME;
        return 0;
      }
      pk_evq_pop_until(&n->evq, h->t, &e);
      ep = &e;
    }
    uint32_t kind = ep->kind, a = ep->a;
    uint64_t b = ep->b;
    if (kind == EV_WATCHDOG && !n->n_active) {
      n->watchdog_on = 0; /* idle: the clock stays at the last real event */
      continue;
    }
    n->now = ep->t;
    n->cur_seq = ep->seq;
    n->st.events++;
    int rc = on_event(n, kind, a, b, err);
    if (rc) {
      if (rc == ETSIM_ENOMEM) etsim_error_set(err, rc, "network: out of memory");
      return rc;
    }
  }
}

int64_t etsim_netpkt_next_time(const etsim_netpkt_t *net) {
  const pk_net_t *n = (const pk_net_t *)net;
  const pk_ev_t *h = pk_evq_peek(&n->evq);
  if (n->stopped || !h || (h->t >= n->cfg.stop_ps && !pk_stop_due(n, h))) return INT64_MAX;
  return h->t;
}

int64_t etsim_netpkt_now(const etsim_netpkt_t *net) { return ((const pk_net_t *)net)->now; }

/* --------------------------------------------------------------- setup */

/* Size the calendar from the fabric.  A busy port has an end of
 * serialisation and one arrival per packet on its wire pending, so one
 * bucket per packet time / ports holds a few events (no narrower than the
 * serialisation rounding, which leaves narrower buckets empty).  The window covers four link delays
 * plus a packet time, so a first arrival on an idle link and timers of a few link delays stay in
 * the calendar too.  Only speed depends on this, never the order of events. */
static int evq_setup(pk_net_t *n, uint32_t mtu_wire) {
  int64_t span = 1, tx_min = INT64_MAX;
  for (uint32_t i = 0; i < n->n_ports; i++) {
    const pk_port_t *p = &n->ports[i];
    int64_t tx = pk_tx_time(n, mtu_wire, p->rate_bps);
    if (p->delay_ps + tx > span) span = p->delay_ps + tx;
    if (tx < tx_min) tx_min = tx;
  }
  uint64_t width = (uint64_t)(tx_min > 0 ? tx_min : 1) / (n->n_ports + 1);
  if (n->cfg.tx_round_ps > 0 && width < (uint64_t)n->cfg.tx_round_ps)
    width = (uint64_t)n->cfg.tx_round_ps;
  uint32_t shift = 0, nb_log = 6;
  while (shift < 40 && ((uint64_t)2 << shift) <= width) shift++;
  while (nb_log < 20 && ((uint64_t)1 << (nb_log + shift)) < 4 * (uint64_t)span) nb_log++;
  return etsim_net__pkt_evq_init(&n->evq, shift, nb_log);
}

/* Set-up, step 1: every host needs a link; checked before the per-node
 * tables are allocated, so a header that claims millions of nodes and gives
 * no links costs a byte per node, not the tables' hundreds of MB. */
static int check_links(const etsim_netpkt_topo_t *t, const char *tn, etsim_error_t *err) {
  uint8_t *linked = etsim_calloc(t->n_nodes ? t->n_nodes : 1, 1);
  if (!linked) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  for (size_t i = 0; i < t->n_links; i++) linked[t->links[i].a] = linked[t->links[i].b] = 1;
  for (uint32_t v = 0; v < t->n_nodes; v++)
    if (!t->is_switch[v] && !linked[v]) {
      etsim_free(linked);
      return etsim_error_set(err, ETSIM_EINVAL, "%s: host %u has no link", tn, v);
    }
  etsim_free(linked);
  return 0;
}

/* Step 2: nodes and the dense host index. */
static int setup_nodes(pk_net_t *n, const etsim_netpkt_topo_t *t, const char *tn,
                       etsim_error_t *err) {
  for (uint32_t v = 0; v < t->n_nodes; v++) {
    n->nodes[v].is_switch = t->is_switch[v];
    n->nodes[v].host_idx = PK_NONE;
    if (!t->is_switch[v]) {
      n->nodes[v].host_idx = n->n_hosts;
      n->hosts[n->n_hosts++] = v;
    }
  }
  if (n->n_hosts == 0) return etsim_error_set(err, ETSIM_EINVAL, "%s: no hosts", tn);
  return 0;
}

/* Step 3: ports, counted per node, then assigned in link order (ns-3
 * ifindex), with each link's rate, delay and loss on both ends. */
static int setup_ports(pk_net_t *n, const etsim_netpkt_topo_t *t, const char *tn,
                       etsim_error_t *err) {
  for (size_t i = 0; i < t->n_links; i++) {
    n->nodes[t->links[i].a].nports++;
    n->nodes[t->links[i].b].nports++;
  }
  uint32_t acc = 0;
  for (uint32_t v = 0; v < t->n_nodes; v++) {
    if (n->nodes[v].nports > 65535)
      return etsim_error_set(err, ETSIM_EINVAL, "%s: node %u has more than 65535 links", tn, v);
    n->nodes[v].port0 = acc;
    acc += n->nodes[v].nports;
    n->nodes[v].nports = 0;
  }
  n->n_ports = acc;
  for (size_t i = 0; i < t->n_links; i++) {
    const etsim_netpkt_link_t *l = &t->links[i];
    uint32_t ga = n->nodes[l->a].port0 + n->nodes[l->a].nports++;
    uint32_t gb = n->nodes[l->b].port0 + n->nodes[l->b].nports++;
    double er = l->error_rate > 0 ? l->error_rate : n->cfg.error_rate_per_link;
    pk_port_t *pa = &n->ports[ga], *pb = &n->ports[gb];
    pa->node = l->a;
    pa->is_switch = t->is_switch[l->a];
    pb->is_switch = t->is_switch[l->b];
    pa->peer = l->b;
    pa->peer_gport = gb;
    pb->node = l->b;
    pb->peer = l->a;
    pb->peer_gport = ga;
    pa->peer_host = !t->is_switch[l->b];
    pb->peer_host = !t->is_switch[l->a];
    pa->peer_port0 = n->nodes[l->b].port0;
    pb->peer_port0 = n->nodes[l->a].port0;
    pa->arr_b = pk_arrive_b(gb, 0) | (pa->peer_host ? 0 : PK_ARR_SW);
    pb->arr_b = pk_arrive_b(ga, 0) | (pb->peer_host ? 0 : PK_ARR_SW);
    pa->ifindex = (uint16_t)(ga - n->nodes[l->a].port0 + 1);
    pb->ifindex = (uint16_t)(gb - n->nodes[l->b].port0 + 1);
    pa->rate_bps = pb->rate_bps = l->rate_bps;
    pa->delay_ps = pb->delay_ps = l->delay_ps;
    pa->err = pb->err = er;
    pa->wake_t = pb->wake_t = -1;
    pa->ready_qp = pb->ready_qp = PK_NONE;
  }
  /* NIC rate: the first host's first port (ns-3 get_nic_rate) */
  n->nic_rate = n->ports[n->nodes[n->hosts[0]].port0].rate_bps;
  for (uint32_t i = 0; i < n->n_ports; i++) {
    n->ports[i].tx_mtu_ps = pk_tx_time(n, n->mtu_wire, n->ports[i].rate_bps);
    n->ports[i].tx_ack_ps = pk_tx_time(n, n->ack_size, n->ports[i].rate_bps);
  }
  return 0;
}

/* Step 4: each switch's MMU (buffer, headroom and reserve per port, PFC
 * threshold shift) and ECN thresholds. */
static int setup_switches(pk_net_t *n, etsim_error_t *err) {
  const etsim_netpkt_cfg_t *cfg = &n->cfg;
  /* a row per priority over all ports (hosts' entries unused: a sixth of
   * a fat-tree's ports) */
  size_t n_mmu = (size_t)PK_NPRIO * (n->n_ports ? n->n_ports : 1);
  n->mmu = etsim_calloc(n_mmu, sizeof *n->mmu);
  for (int qi = 0; n->mmu && qi < PK_NPRIO; qi++)
    n->mmu_row[qi] = n->mmu + (size_t)qi * (n->n_ports ? n->n_ports : 1);
  n->ing_paused = etsim_calloc(n->n_ports ? n->n_ports : 1, 1);
  if (!n->mmu || !n->ing_paused) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  for (uint32_t v = 0; v < n->n_nodes; v++) {
    pk_node_t *s = &n->nodes[v];
    if (!s->is_switch) continue;
    s->buffer = (uint64_t)cfg->buffer_mb * 1024 * 1024;
    uint64_t total_rsrv = 0;
    for (uint32_t k = 0; k < s->nports; k++) {
      pk_port_t *p = &n->ports[s->port0 + k];
      uint64_t rate = p->rate_bps;
      if (cfg->enable_qcn) {
        uint32_t e;
        for (e = 0; e < cfg->n_ecn; e++)
          if (cfg->ecn_rate_bps[e] == rate) break;
        if (e == cfg->n_ecn)
          return etsim_error_set(err, ETSIM_EINVAL,
                                 "KMIN_MAP/KMAX_MAP/PMAX_MAP: no entry for link "
                                 "rate %" PRIu64 " b/s (switch %u port %u)",
                                 rate, v, p->ifindex);
        p->kmin = (uint64_t)cfg->kmin_kb[e] * 1000;
        p->kmax = (uint64_t)cfg->kmax_kb[e] * 1000;
        p->pmax = cfg->pmax[e];
      } else p->kmin = p->kmax = UINT64_MAX;
      uint64_t from = (p->kmin < p->kmax ? p->kmin : p->kmax) >> 10;
      p->ecn_kb = (uint16_t)(from < UINT16_MAX ? from : UINT16_MAX);
      p->headroom = rate * (uint64_t)(p->delay_ps / 1000) / 8 / 1000000000ull * 3;
      p->pfc_shift = 3;
      while (rate > n->nic_rate && p->pfc_shift > 0) {
        p->pfc_shift--;
        rate /= 2;
      }
      s->total_hdrm += p->headroom;
      total_rsrv += PK_RESERVE;
    }
    if (s->buffer < s->total_hdrm + total_rsrv + n->mtu_wire)
      return etsim_error_set(err, ETSIM_EINVAL,
                             "BUFFER_SIZE: %u MiB is too small for switch %u "
                             "(headroom %" PRIu64 " + reserve %" PRIu64
                             " bytes + one %u-byte packet)",
                             cfg->buffer_mb, v, s->total_hdrm, total_rsrv, n->mtu_wire);
    s->pfc_base = s->buffer - s->total_hdrm - total_rsrv;
  }
  return 0;
}

int etsim_netpkt_create(etsim_netpkt_t **out, const etsim_netpkt_topo_t *t,
                        const etsim_netpkt_cfg_t *cfg, etsim_error_t *err) {
  const char *tn = t->name ? t->name : "topology";
  const pk_cc_ops_t *cc = etsim_net__pkt_cc_ops(cfg->cc_mode);
  if (!cc) return etsim_error_set(err, ETSIM_EINVAL, "CC_MODE %d unknown", cfg->cc_mode);
  if (cfg->payload_bytes < 1 || cfg->payload_bytes > 65000)
    return etsim_error_set(err, ETSIM_EINVAL, "PACKET_PAYLOAD_SIZE %u not in 1..65000",
                           cfg->payload_bytes);
  int rc = check_links(t, tn, err);
  if (rc) return rc;
  pk_net_t *n = etsim_calloc(1, sizeof *n);
  if (!n) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  n->cfg = *cfg;
  n->cc = cc;
  n->msgs.forget = cfg->forget_done != 0;
  n->free_int = PK_NONE;
  n->n_nodes = t->n_nodes;
  n->data_hdr = PK_DATA_HDR + n->cc->int_bytes;
  uint32_t qbb = 12 + n->cc->int_bytes;
  n->ack_size = (qbb < 26 ? 26 - qbb : 0) + qbb + 22;
  n->pfc_size = PK_PFC_BYTES;
  n->mtu_wire = cfg->payload_bytes + n->data_hdr;
  etsim_rng_seed(&n->rng, cfg->seed);
  /* ns-3's driver (examples/netsim/ns3/rdma_run.cc) creates 9 random
   * variables a node and 2 more while it sets up (its stream numbers,
   * logged on fabrics of 3, 10, 22 and 144 nodes), so the first draw of
   * the run takes the stream after them */
  etsim_net__pkt_rng_init(&n->ecn_rng, 9 * (uint64_t)t->n_nodes + 2, cfg->seed);
  etsim_u64map_init(&n->pair_map);
  size_t ports_bytes = (2 * t->n_links + 1) * sizeof *n->ports + 64;
  n->nodes = etsim_calloc(t->n_nodes ? t->n_nodes : 1, sizeof *n->nodes);
  n->ports_mem = etsim_calloc(1, ports_bytes);
  if (n->ports_mem) etsim_advise_huge(n->ports_mem, ports_bytes);
  n->ports = n->ports_mem ? (pk_port_t *)(((uintptr_t)n->ports_mem + 63) & ~(uintptr_t)63) : NULL;
  n->hosts = etsim_calloc(t->n_nodes ? t->n_nodes : 1, sizeof *n->hosts);
  if (!n->nodes || !n->ports || !n->hosts) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto fail;
  }
  if ((rc = setup_nodes(n, t, tn, err)) || (rc = setup_ports(n, t, tn, err)) ||
      (rc = setup_switches(n, err)) || (rc = etsim_net__pkt_route_init(n, tn, err)))
    goto fail;
  /* ns-3: the largest BDP and RTT over all host pairs, for GLOBAL_T */
  if (cfg->global_t && etsim_net__pkt_route_global(n, &n->max_bdp, &n->max_rtt_ps)) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto fail;
  }
  if ((rc = evq_setup(n, n->mtu_wire))) {
    rc = etsim_error_set(err, rc, "out of memory");
    goto fail;
  }
  if (cfg->qlen_mon_end_ns > cfg->qlen_mon_start_ns && cfg->qlen_interval_ns > 0) {
    n->qlen_on = 1;
    if (pk_evq_push(&n->evq, cfg->qlen_mon_start_ns * 1000, EV_QLEN, 0, 0)) {
      rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
      goto fail;
    }
  }
  n->setup_seq = n->evq.next_seq;
  *out = (etsim_netpkt_t *)n;
  return 0;
fail:
  etsim_netpkt_free((etsim_netpkt_t *)n);
  return rc;
}

void etsim_netpkt_free(etsim_netpkt_t *net) {
  pk_net_t *n = (pk_net_t *)net;
  if (!n) return;
  etsim_net__pkt_route_free(n);
  if (n->ports)
    for (uint32_t i = 0; i < n->n_ports; i++) {
      pk_port_t *p = &n->ports[i];
      etsim_free(p->qps);
      etsim_free(p->rr_key);
      etsim_free(p->rrs);
      etsim_free(p->hist);
#ifdef PK_HPOOL_OWN /* each ring its own allocation; else the pool's blocks hold them */
      for (int k = 0; k < PK_NPRIO; k++) hring_free(&n->hpool, p->q[k].v, p->q[k].cap);
      hring_free(&n->hpool, p->wire, p->wire_cap);
#endif
    }
  hpool_free(&n->hpool); /* the queues' and wires' rings (pool blocks) */
  etsim_free(n->nodes);
  etsim_free(n->ports_mem);
  etsim_free(n->mmu);
  etsim_free(n->ing_paused);
  etsim_free(n->hosts);
  etsim_free(n->hops);
  etsim_free(n->qp_hops);
  etsim_free(n->qps_mem);
  etsim_free(n->free_qps);
  pk_msgs_free(&n->msgs);
  etsim_free(n->routes);
  etsim_free(n->path_buf);
  etsim_net__pkt_evq_free(&n->evq);
  etsim_u64map_free(&n->pair_map);
  etsim_free(n->pairs);
  etsim_free(n);
}

void etsim_netpkt_set_outputs(etsim_netpkt_t *net, FILE *fct, FILE *pfc, FILE *qlen) {
  pk_net_t *n = (pk_net_t *)net;
  n->fct = fct;
  n->pfc = pfc;
  n->qlen = qlen;
}

/* Room for one more queue pair.  The records are 64-byte aligned, so each
 * one's round-robin and receiver fields are one cache line each (see
 * pk_qp_t); grown by doubling, like etsim_grow. */
static int qps_grow(pk_net_t *n) {
  if (n->n_qps < n->cap_qps) return 0;
  pk_qp_t *v = etsim_net__pkt_grow_lines(&n->qps_mem, &n->cap_qps, n->qps, n->n_qps, sizeof *n->qps,
                                         16, SIZE_MAX);
  if (!v) return ETSIM_ENOMEM;
  n->qps = v;
  return 0;
}

/* The routes of new queue pair q (src, dst and ports set): the local port
 * at each hop of its data and of its ACKs, written into a released
 * record's own entries when they fit (reused), else appended.  0, or 1
 * when no route is left and the configuration allows that (the message is
 * held), or an error code (negative) set in err. */
static int qp_routes(pk_net_t *n, pk_qp_t *q, int reused, etsim_error_t *err) {
  if (etsim_net__pkt_route_ready(n, q->dst) || etsim_net__pkt_route_ready(n, q->src))
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  uint32_t nf = etsim_net__pkt_hops(n, q->src, q->dst), nr = etsim_net__pkt_hops(n, q->dst, q->src);
  /* Routes are kept as local port indices (2 bytes a hop), with
   * PK_HDR_OUT spare entries after the last so a header copies a fixed
   * block. */
  if ((nf > 65535 && nf != UINT32_MAX) || (nr > 65535 && nr != UINT32_MAX))
    return etsim_error_set(err, ETSIM_EINVAL,
                           "route between hosts %u and %u: %u links (at most 65535)", q->src,
                           q->dst, nf > nr ? nf : nr);
  if (!nf || !nr || nf == UINT32_MAX || nr == UINT32_MAX) {
    if (!n->cfg.allow_disconnected)
      return etsim_error_set(err, ETSIM_EINTERNAL, "no route between hosts %u and %u", q->src,
                             q->dst);
    return 1;
  }
  size_t need = nf > nr ? nf : nr;
  if (etsim_grow((void **)&n->path_buf, &n->cap_path_buf, need, sizeof *n->path_buf))
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  /* A released record's entries (and the PK_HDR_OUT after them, which were
   * spare or begin the next routes: read, never used) are its own. */
  size_t base = q->route_data, cap = q->route_cap;
  if (!reused || (size_t)nf + nr > cap) {
    size_t cap_routes = n->cap_routes;
    if (n->n_routes + nf + nr + PK_HDR_OUT >= PK_NONE ||
        etsim_grow((void **)&n->routes, &n->cap_routes, n->n_routes + nf + nr + PK_HDR_OUT,
                   sizeof *n->routes))
      return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    if (n->cap_routes != cap_routes)
      etsim_advise_huge(n->routes, n->cap_routes * sizeof *n->routes);
    base = n->n_routes;
    cap = nf + nr;
  }
  uint32_t *path = n->path_buf;
  uint16_t *rt = n->routes + base;
  if (etsim_net__pkt_path(n, q->src, q->dst, q->sport, q->dport, path, nf) != nf)
    return etsim_error_set(err, ETSIM_EINTERNAL, "no route from host %u to %u", q->src, q->dst);
  q->gport = path[0];
  for (uint32_t i = 0; i < nf; i++) rt[i] = n->rlink[path[i]].local;
  if (etsim_net__pkt_ack_path(n, q->src, q->dst, q->sport, q->dport, path, nr) != nr)
    return etsim_error_set(err, ETSIM_EINTERNAL, "no route from host %u to %u", q->dst, q->src);
  q->rx_gport = path[0];
  for (uint32_t i = 0; i < nr; i++) rt[nf + i] = n->rlink[path[i]].local;
  if (base == n->n_routes) {
    for (uint32_t i = 0; i < PK_HDR_OUT; i++) rt[nf + nr + i] = 0; /* spare */
    n->n_routes += nf + nr;
  } else
    for (size_t i = nf + nr; i < cap; i++) rt[i] = 0; /* the old routes' rest */
  memcpy(q->ack_out, rt + nf + 1, sizeof q->ack_out);
  q->route_data = (uint32_t)base;
  q->route_ack = (uint32_t)base + nf;
  q->route_cap = (uint32_t)cap;
  return 0;
}

/* Queue pair q, the released record on top of the free list or the next
 * new one, now carries message n->msgs.n. */
static void qp_take(pk_net_t *n, pk_qp_t *q, uint64_t *out_id) {
  uint32_t qi = (uint32_t)(q - n->qps);
  if (qi < n->n_qps) n->n_free_qps--;
  else n->n_qps++;
  uint64_t id = pk_msgs_add(&n->msgs, qi);
  if (out_id) *out_id = id;
}

/* A message refused after its record was filled in: a released record is
 * as it was (it stays on the free list); a new one is simply not taken. */
static void qp_untake(pk_net_t *n, uint32_t qi, const pk_qp_t *old) {
  if (qi < n->n_qps) n->qps[qi] = *old;
}

int etsim_netpkt_send(etsim_netpkt_t *net, const etsim_netpkt_msg_t *m, uint64_t *out_id,
                      etsim_error_t *err) {
  pk_net_t *n = (pk_net_t *)net;
  if (m->src >= n->n_nodes || n->nodes[m->src].is_switch)
    return etsim_error_set(err, ETSIM_EINVAL, "flow source %u is not a host", m->src);
  if (m->dst >= n->n_nodes || n->nodes[m->dst].is_switch)
    return etsim_error_set(err, ETSIM_EINVAL, "flow destination %u is not a host", m->dst);
  if (m->src == m->dst)
    return etsim_error_set(err, ETSIM_EINVAL, "flow from host %u to itself", m->src);
  if (!m->bytes) return etsim_error_set(err, ETSIM_EINVAL, "flow of 0 bytes");
  if (m->pg < 1 || m->pg > 7)
    return etsim_error_set(err, ETSIM_EINVAL, "priority group %u not in 1..7", m->pg);
  if (m->start_ps < n->now)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "flow starts at %" PRId64 " ps, before now (%" PRId64 ")", m->start_ps,
                           n->now);
  /* A released queue pair's record if there is one (the latest, still in
   * the cache), else a new one; taken for good only once the message is
   * accepted (qp_take), and given back as it was otherwise (qp_untake). */
  if (n->msgs.n >= PK_NONE - 1 || pk_msgs_room(&n->msgs) ||
      (!n->n_free_qps && (n->n_qps >= PK_NONE - 1 || qps_grow(n))))
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  uint32_t pair = etsim_net__pkt_pair_index(n, m->src, m->dst);
  if (pair == PK_NONE) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  uint32_t qi = n->n_free_qps ? n->free_qps[n->n_free_qps - 1] : (uint32_t)n->n_qps;
  if (n->cc == &etsim_net__pkt_cc_hpcc) {
    size_t want = ((size_t)qi + 1) * PK_MAX_HOPS;
    if (etsim_grow((void **)&n->qp_hops, &n->cap_qp_hops, want, sizeof *n->qp_hops))
      return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    memset(n->qp_hops + (size_t)qi * PK_MAX_HOPS, 0, PK_MAX_HOPS * sizeof *n->qp_hops);
  }
  uint32_t sport = n->pairs[pair].sport++;
  pk_qp_t *q = &n->qps[qi];
  pk_qp_t old; /* a released record: what it keeps, and what qp_untake restores */
  if (qi < n->n_qps) old = *q;
  memset(q, 0, sizeof *q);
  q->rr_pos = PK_NONE;
  if (qi < n->n_qps) {
    memcpy(q->tgen, old.tgen, sizeof q->tgen);
    q->route_data = old.route_data;
    q->route_cap = old.route_cap;
  }
  q->id = n->msgs.n;
  q->src = m->src;
  q->dst = m->dst;
  q->sip = etsim_netpkt_host_ip(m->src);
  q->dip = etsim_netpkt_host_ip(m->dst);
  q->sport = (uint16_t)sport;
  q->dport = m->dport;
  q->pg = m->pg;
  q->size = q->rcv_size = m->bytes;
  q->start_ps = m->start_ps;
  q->delivered_ps = q->acked_ps = -1;
  q->fn = m->fn;
  q->ctx = m->ctx;
  int rc = qp_routes(n, q, qi < n->n_qps, err);
  if (rc < 0) {
    qp_untake(n, qi, &old);
    return rc;
  }
  if (rc > 0) { /* cut off by a failure: held (pkt_fail.c) */
    etsim_net__pkt_hold_new(n, q);
    qp_take(n, q, out_id);
    n->st.msgs++;
    return 0;
  }
  q->max_rate = q->rate = n->ports[q->gport].rate_bps;
  int64_t rtt;
  uint64_t bw;
  etsim_net__pkt_pair(n, m->src, m->dst, pair, &rtt, &bw);
  uint64_t bdp = (uint64_t)(rtt / 1000) * bw / 1000000000ull / 8;
  q->win = n->cfg.has_win ? (n->cfg.global_t ? n->max_bdp : bdp) : 0;
  q->var_win_rate = UINT64_MAX; /* no scaled window worked out yet */
  q->base_rtt_ps = n->cfg.global_t ? n->max_rtt_ps : rtt;
  uint64_t pkts = (q->size - 1) / n->cfg.payload_bytes + 1;
  uint64_t total = q->size + pkts * PK_STANDALONE_HDR;
  q->standalone_ps = (rtt / 1000 + (int64_t)(total * 8000000000ull / bw)) * 1000;
  q->milestone = n->cfg.l2_ack_interval;
  n->cc->init(n, q);
  if (pk_evq_push(&n->evq, m->start_ps, EV_FLOW_START, qi, 0)) {
    qp_untake(n, qi, &old);
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  qp_take(n, q, out_id);
  n->n_active++;
  if (!n->st.msgs || m->start_ps < n->st.first_start_ps) n->st.first_start_ps = m->start_ps;
  n->st.msgs++;
  return 0;
}

void etsim_netpkt_finish(etsim_netpkt_t *net) {
  pk_net_t *n = (pk_net_t *)net;
  if (!n->qlen || !n->qlen_on) return;
  fprintf(n->qlen, "time: %" PRId64 "\n", n->now / 1000);
  for (uint32_t i = 0; i < n->n_ports; i++) {
    pk_port_t *p = &n->ports[i];
    if (!n->nodes[p->node].is_switch) continue;
    size_t last = p->n_hist;
    while (last > 0 && !p->hist[last - 1]) last--;
    fprintf(n->qlen, "%u %u", p->node, p->ifindex);
    for (size_t k = 0; k < last; k++) fprintf(n->qlen, " %u", p->hist[k]);
    fputc('\n', n->qlen);
  }
}

int etsim_netpkt_msg_stat(const etsim_netpkt_t *net, uint64_t id, etsim_netpkt_msg_stat_t *o) {
  const pk_net_t *n = (const pk_net_t *)net;
  uint32_t slot = pk_msgs_slot(&n->msgs, id);
  if (slot == PK_NONE) return pk_msgs_gone(&n->msgs, id, o); /* its queue pair was released */
  qp_stat(&n->qps[slot], o);
  return 0;
}

uint64_t etsim_netpkt_msg_rate(const etsim_netpkt_t *net, uint64_t id) {
  const pk_net_t *n = (const pk_net_t *)net;
  uint32_t slot = pk_msgs_slot(&n->msgs, id);
  if (slot == PK_NONE) return 0;
  const pk_qp_t *q = &n->qps[slot];
  return q->finished ? 0 : q->rate;
}

void etsim_netpkt_get_stats(const etsim_netpkt_t *net, etsim_netpkt_stats_t *s) {
  const pk_net_t *n = (const pk_net_t *)net;
  *s = n->st;
  s->data_pkts = n->tx_pkts[PK_DATA];
  s->pfc_frames = n->tx_pkts[PK_PFC];
  s->qp_records = n->n_qps;
  s->ack_pkts = 0; /* ACKs, NACKs (and any other type, as before) */
  for (unsigned k = 0; k <= PK_HDR_TYPE; k++)
    if (k != PK_DATA && k != PK_PFC) s->ack_pkts += n->tx_pkts[k];
  int64_t extra = 0;
  uint64_t peak = 0;
  for (uint32_t i = 0; i < n->n_ports; i++)
    for (int q = 0; q < PK_NPRIO; q++)
      if ((n->ports[i].paused & (1u << q)) && !n->ports[i].down)
        extra += n->now - n->ports[i].paused_since[q];
  for (uint32_t v = 0; v < n->n_nodes; v++)
    if (n->nodes[v].peak_used > peak) peak = n->nodes[v].peak_used;
  s->paused_ps += extra;
  s->max_switch_buffer_bytes = peak;
}

uint32_t etsim_netpkt_port_count(const etsim_netpkt_t *net, uint32_t node) {
  const pk_net_t *n = (const pk_net_t *)net;
  return node < n->n_nodes ? n->nodes[node].nports : 0;
}

int etsim_netpkt_port_stat(const etsim_netpkt_t *net, uint32_t node, uint32_t ifindex,
                           etsim_netpkt_port_stat_t *o) {
  const pk_net_t *n = (const pk_net_t *)net;
  if (node >= n->n_nodes || ifindex < 1 || ifindex > n->nodes[node].nports) return ETSIM_ERANGE;
  const pk_port_t *p = &n->ports[n->nodes[node].port0 + ifindex - 1];
  o->peer = p->peer;
  o->rate_bps = p->rate_bps;
  o->tx_bytes = p->tx_bytes;
  o->pauses_rx = p->pauses_rx;
  o->paused_ps = p->paused_ps;
  for (int q = 0; q < PK_NPRIO; q++)
    if ((p->paused & (1u << q)) && !p->down) o->paused_ps += n->now - p->paused_since[q];
  o->qbytes = p->qbytes_total;
  o->qbytes_peak = p->qbytes_peak;
  o->paused_prios = p->down ? 0 : p->paused;
  return 0;
}

/* ------------------------------------------------------------ failures */

/* For pkt_fail.c, which moves packets when a cable fails (rare, so these
 * stay out of the per-packet functions above). */
int etsim_net__pkt_port_kick(pk_net_t *n, uint32_t gp) { return port_kick(n, gp); }

int etsim_net__pkt_enqueue(pk_net_t *n, uint32_t gp, int qi, const pk_hdr_t *h) {
  pk_port_t *p = &n->ports[gp];
  if (fifo_push(n, p, qi, h)) return oom(n);
  p->qbytes_total += h->size;
  if (p->qbytes_total > p->qbytes_peak) p->qbytes_peak = p->qbytes_total;
  return 0;
}

/* A packet taken out of queue qi of switch port gp for good: its buffer is
 * given back as switch_dequeue gives it, resuming the upstream when that
 * lets it go, so a dropped packet never leaves a pause behind. */
int etsim_net__pkt_drop_queued(pk_net_t *n, uint32_t gp, int qi, const pk_hdr_t *h) {
  pk_port_t *p = &n->ports[gp];
  pkt_free(n, h);
  n->st.drops_buffer++;
  n->lossy = 1;
  if (!p->is_switch || !qi) return 0;
  pk_node_t *s = &n->nodes[p->node];
  pk_mmu_t *m = mmu_at(n, s->port0 + h->in_port, qi);
  ingress_release(s, m, h->size);
  return ingress_resume(n, s, h->in_port, qi, m);
}
