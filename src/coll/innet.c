/* In-network collectives: the switch of a dimension reduces.
 *
 * A dimension marked in "in-network-collectives" (a Switch dimension) runs
 * its all-reduce, reduce-scatter, all-gather, broadcast and reduce phases
 * through the switch of each group, as NVLink SHARP and InfiniBand SHARP
 * do: every member sends its data up once; when the last contribution has
 * arrived the switch reduces it at "in-network-reduction-bw" (GB/s of
 * result, 2^30 bytes as link bandwidth; 0 = no reduction time) and sends
 * the result down once.  So each NPU sends each byte up once and receives
 * it once, instead of 2(p-1)/p times over p-1 steps on a ring.
 *
 *   phase          up (each member)   down (each member)   reduced
 *   all-reduce     S                  S                    S
 *   reduce-scatter S                  S/n                  S
 *   all-gather     S (its share)      (n-1) S              -
 *   broadcast      S (root only)      S (all but root)     -
 *   reduce         S                  S (root only)        S
 *
 * One chunk alone: e + T(up) + S/R + T(down) + e, with T(b) =
 * floor(L + b/beta) one link (the switch is one hop away) and e the
 * endpoint delay.  The links are the network backend's own (stateless on
 * the analytical backend, FIFO on the congestion backend, shared with
 * every other message there); the reduction engine of a switch is a FIFO
 * server on the congestion backend and unlimited (each reduction alone) on
 * the analytical one, in keeping with each backend's model.
 *
 * With classes of equivalent NPUs (sim/reduce.c) only representatives
 * run.  sim/reduce.c admits a run only when every switch group holding a
 * representative is either one class (its members' contributions are
 * images of the representative's, so they arrive with it) or all
 * representatives; the switch then waits for the simulated members alone
 * and sends down to them alone.
 */
#include "ext_int.h"

#include <math.h>
#include <string.h>

enum { I_UP = 1, I_WAIT, I_DONE, I_SENT };

static int receives(const phase_t *p) {
  if (p->type == ETSIM_COP_BROADCAST) return p->ring.pos != p->root;
  if (p->type == ETSIM_COP_REDUCE) return p->ring.pos == p->root;
  return 1;
}

static int sends_up(const phase_t *p) {
  return p->type != ETSIM_COP_BROADCAST || p->ring.pos == p->root;
}

static uint64_t down_bytes(const phase_t *p) {
  switch (p->type) {
    case ETSIM_COP_REDUCE_SCATTER:
      return p->size / p->ring.n;
    case ETSIM_COP_ALL_GATHER:
      return (uint64_t)(p->ring.n - 1) * p->size;
    default:
      return p->size;
  }
}

/* The bytes a switch reduces for a phase of `type` on `size` bytes. */
static uint64_t reduced_bytes(int type, uint64_t size) {
  return type == ETSIM_COP_ALL_REDUCE || type == ETSIM_COP_REDUCE_SCATTER ||
                 type == ETSIM_COP_REDUCE
             ? size
             : 0;
}

/* The physical dimension: in-network phases sit on one, whose queue level
 * is its number on every path that builds them. */
static int dim_of(const etsim_coll_t *c, const phase_t *p) { return (int)(p->queue / c->qpd); }

static uint32_t switch_of(const etsim_coll_t *c, uint32_t npu, int d) {
  return ETSIM_COLL_SWITCH_ID(d, npu - etsim_topo_coord(c->topo, npu, d) * c->topo->stride[d]);
}

/* ------------------------------------------------------- the member */

int etsim_coll__innet_start(etsim_coll_t *c, uint32_t si) {
  stream_t *s = &c->streams[si];
  const phase_t *p = XCP(s);
  xst_t *x = etsim_coll__xst(c, si);
  if (receives(p)) {
    int rc =
        etsim_coll__recv(c, s->npu, switch_of(c, s->npu, dim_of(c, p)), down_bytes(p), s->tag, si);
    if (rc) return rc;
  }
  if (!sends_up(p)) {
    x->state = I_WAIT;
    return 0;
  }
  x->state = I_UP;
  return etsim_coll__wake(c, si, etsim_coll__eps(c, p));
}

int etsim_coll__innet_general(etsim_coll_t *c, uint32_t si) {
  stream_t *s = &c->streams[si];
  const phase_t *p = XCP(s);
  xst_t *x = etsim_coll__xst(c, si);
  if (x->state == I_DONE) return etsim_coll__phase_end(c, si);
  x->state = I_SENT;
  return etsim_coll__send_switch(c, s->npu, dim_of(c, p), 1, p->size, s->tag, si);
}

int etsim_coll__innet_sent(etsim_coll_t *c, uint32_t si) {
  const phase_t *p = XCP(&c->streams[si]);
  xst_t *x = etsim_coll__xst(c, si);
  if (!receives(p)) return etsim_coll__phase_end(c, si);
  x->state = I_WAIT;
  return 0;
}

int etsim_coll__innet_recv(etsim_coll_t *c, uint32_t si) {
  const phase_t *p = XCP(&c->streams[si]);
  xst_t *x = etsim_coll__xst(c, si);
  x->state = I_DONE;
  return etsim_coll__wake(c, si, etsim_coll__eps(c, p));
}

/* ------------------------------------------------------- the switch */

static uint64_t sw_hash(uint32_t sw, uint64_t tag) {
  return etsim_hash_u64(etsim_hash_u64(tag ^ 0x51ed270b27b1f3a5ull) ^ sw);
}

/* Find the record of (sw, tag); create it when `create`.  NULL when absent
 * (or out of memory when creating: *rc says). */
static swrec_t *sw_find(coll_ext_t *x, uint32_t sw, uint64_t tag, int create, int *rc) {
  *rc = 0;
  /* Rehash when live records and tombstones fill half the table: probing
   * stops only at an empty slot, so tombstones count (a long run retires
   * a record per switch and chunk; without this the table filled with
   * tombstones and the probe never ended). */
  if (create && (x->sw_used + x->sw_tomb + 1) * 2 > x->sw_cap) {
    size_t cap = x->sw_cap ? x->sw_cap : 64;
    while ((x->sw_used + 1) * 4 > cap) cap *= 2;
    swrec_t *nt = etsim_calloc(cap, sizeof *nt);
    if (!nt) {
      *rc = ETSIM_ENOMEM;
      return NULL;
    }
    for (size_t i = 0; i < x->sw_cap; i++) {
      if (x->sw[i].used != 1) continue;
      size_t j = sw_hash(x->sw[i].sw, x->sw[i].tag) & (cap - 1);
      while (nt[j].used) j = (j + 1) & (cap - 1);
      nt[j] = x->sw[i];
    }
    etsim_free(x->sw);
    x->sw = nt;
    x->sw_cap = cap;
    x->sw_tomb = 0;
  }
  if (!x->sw_cap) return NULL;
  size_t mask = x->sw_cap - 1, j = sw_hash(sw, tag) & mask, tomb = SIZE_MAX;
  for (;;) {
    swrec_t *e = &x->sw[j];
    if (e->used == 0) break;
    if (e->used == 2 && tomb == SIZE_MAX) tomb = j;
    if (e->used == 1 && e->sw == sw && e->tag == tag) return e;
    j = (j + 1) & mask;
  }
  if (!create) return NULL;
  if (tomb != SIZE_MAX) {
    j = tomb;
    x->sw_tomb--;
  }
  swrec_t *e = &x->sw[j];
  memset(e, 0, sizeof *e);
  e->used = 1;
  e->sw = sw;
  e->tag = tag;
  x->sw_used++;
  return e;
}

/* The time the switch's reduction engine is free (congestion backend). */
static int64_t *engine(coll_ext_t *x, uint32_t sw, int *rc) {
  uint32_t slot = (uint32_t)x->n_sw_free;
  int r = etsim_u64map_put(&x->sw_slot, sw, slot, &slot);
  *rc = 0;
  if (r < 0) {
    *rc = r;
    return NULL;
  }
  if (r == 1) {
    if (x->n_sw_free == x->cap_sw_free &&
        (*rc = etsim_grow((void **)&x->sw_free_ps, &x->cap_sw_free, x->n_sw_free + 1,
                          sizeof *x->sw_free_ps)))
      return NULL;
    x->sw_free_ps[x->n_sw_free++] = 0;
  }
  return &x->sw_free_ps[slot];
}

int etsim_coll__ext_at_switch(etsim_coll_t *c, uint32_t si, uint32_t sw, uint64_t bytes,
                              uint64_t tag) {
  (void)bytes;
  coll_ext_t *x = c->ext;
  const phase_t *p = XCP(&c->streams[si]);
  int rc;
  swrec_t *e = sw_find(x, sw, tag, 1, &rc);
  if (!e) return rc ? rc : ETSIM_EINTERNAL;
  if (e->arrived == 0) {
    e->type = p->type;
    e->d = dim_of(c, p);
    e->ring = p->ring;
    e->root = p->root;
    e->size = p->size;
    e->need = p->type == ETSIM_COP_BROADCAST ? 1 : p->ring.n;
    if (c->sym && e->need > 1) {
      /* classes: the simulated members stand for the rest (see above) */
      uint32_t m = 0;
      for (uint32_t k = 0; k < p->ring.n; k++) {
        uint32_t id = etsim_coll__ring_at(&p->ring, k);
        m += c->sym->rep[id] == id;
      }
      e->need = m ? m : 1;
    }
  }
  if (++e->arrived < e->need) return 0;
  /* All in: reduce, then send the result down (an event at its end). */
  double beta = c->cfg.in_network_bw_gbps[e->d] * 1073741824.0 / 1e9; /* bytes/ns */
  int64_t red = 0;
  uint64_t rb = reduced_bytes(e->type, e->size);
  if (beta > 0 && rb) {
    double ns = floor((double)rb / beta);
    if (!etsim_des_ns_ok(ns)) return ETSIM_ERANGE;
    red = (int64_t)ns;
  }
  int64_t start = c->q->now_ps;
  if (x->fifo_engines) {
    int64_t *freep = engine(x, sw, &rc);
    if (!freep) return rc;
    if (*freep > start) start = *freep;
    *freep = start + red * ETSIM_PS_PER_NS;
  }
  int64_t at = start + red * ETSIM_PS_PER_NS;
  if (at > ETSIM_DES_HORIZON_PS) return ETSIM_ERANGE;
  return etsim_des_push(c->q, at, ETSIM_COLL_EV_EXT, sw, tag);
}

/* The switch finished reducing: send the result down. */
int etsim_coll__ext_event(etsim_coll_t *c, const etsim_des_event_t *ev) {
  coll_ext_t *x = c->ext;
  int rc;
  swrec_t *e = x ? sw_find(x, ev->a, ev->b, 0, &rc) : NULL;
  if (!e) return ETSIM_EINTERNAL;
  swrec_t r = *e;
  e->used = 2; /* a tombstone */
  x->sw_used--;
  x->sw_tomb++;
  phase_t p = {0};
  p.type = r.type;
  p.ring = r.ring;
  p.root = r.root;
  p.size = r.size;
  uint64_t down = down_bytes(&p);
  for (uint32_t k = 0; k < r.ring.n; k++) {
    uint32_t npu = etsim_coll__ring_at(&r.ring, k);
    p.ring.pos = k;
    if (!receives(&p)) continue;
    if (c->sym && c->sym->rep[npu] != npu) continue; /* not simulated */
    if ((rc = etsim_coll__send_switch(c, npu, r.d, 0, down, r.tag, NIL))) return rc;
  }
  return 0;
}
