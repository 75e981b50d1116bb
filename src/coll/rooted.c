/* Rooted collectives on one ring of NPUs: broadcast, reduce, gather and
 * scatter with a chain ("ring"), "direct" or binomial "tree" algorithm.
 *
 * Positions are counted from the root (vr = 0) round the phase's ring.
 * Every send is preceded by the endpoint delay and every receive is
 * followed by it (plus three local-memory passes over the message when a
 * reduce combines it), as in ASTRA-sim's ring steps.  Sends are blocking:
 * an NPU moves on when its message has been delivered, so a chain of
 * chunks is paced by its links (a pipeline), and a tree node serves its
 * children one after another (MPICH's binomial trees).
 *
 * Closed forms for one chunk of m bytes on a ring of n NPUs with message
 * time T(b) = floor(L + b/beta), endpoint delay e and reduction d(b)
 * (tests/sim/test_rooted.c checks them):
 *   chain broadcast, last NPU: (n-1)(T(m) + e) + e
 *   chain reduce, root:        (n-1)(T(m) + e + d(m)) + e
 *   chain gather, root:        sum_{j=1}^{n-1} T(j m) + n e
 *   chain scatter, last NPU:   sum_{j=1}^{n-1} T(j m) + n e
 *   direct broadcast, leaf:    T(m) + 2e
 *   direct reduce, root:       T(m) + 2e + d(m)
 *   tree broadcast, n = 2^k:   k (T(m) + e) + e at the deepest leaf
 *   tree reduce, n = 2^k:      k (T(m) + e + d(m)) + e at the root
 */
#include "ext_int.h"

enum { S_IDLE = 0, S_SEND, S_WAIT, S_SENT, S_END, S_REDUCED };

static int spreads(int type) { return type == ETSIM_COP_BROADCAST || type == ETSIM_COP_SCATTER; }

static uint32_t lowbit(uint32_t v) { return v & (~v + 1); }

static uint32_t pow2ceil(uint32_t n) {
  uint32_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

/* The NPU at relative position v. */
static uint32_t at(const phase_t *p, uint32_t v) {
  return etsim_coll__ring_at(&p->ring, (p->root + v) % p->ring.n);
}

/* NPUs a tree node stands for: itself and its subtree. */
static uint64_t subtree(uint32_t v, uint32_t n) {
  uint32_t lb = v ? lowbit(v) : pow2ceil(n);
  return lb < n - v ? lb : n - v;
}

/* The pause after a receive: the endpoint delay, and a reduce's passes. */
static int64_t after_recv(etsim_coll_t *c, const phase_t *p, uint64_t bytes) {
  return etsim_coll__eps(c, p) +
         (p->type == ETSIM_COP_REDUCE ? etsim_coll__reduce_ns(c, bytes) : 0);
}

/* Message sizes.  Chain: what enters and leaves position vr. */
static uint64_t chain_in(const phase_t *p, uint32_t vr) {
  uint64_t n = p->ring.n, m = p->size;
  switch (p->type) {
    case ETSIM_COP_SCATTER:
      return (n - vr) * m; /* its own piece and those beyond */
    case ETSIM_COP_GATHER:
      return (n - vr - 1) * m; /* the pieces from beyond */
    default:
      return m;
  }
}

static uint64_t chain_out(const phase_t *p, uint32_t vr) {
  uint64_t n = p->ring.n, m = p->size;
  switch (p->type) {
    case ETSIM_COP_SCATTER:
      return (n - vr - 1) * m;
    case ETSIM_COP_GATHER:
      return (n - vr) * m;
    default:
      return m;
  }
}

/* Tree: what travels between v and its parent. */
static uint64_t tree_edge(const phase_t *p, uint32_t v) {
  if (p->type == ETSIM_COP_SCATTER || p->type == ETSIM_COP_GATHER)
    return subtree(v, p->ring.n) * p->size;
  return p->size;
}

/* Tree children: spreading trees serve the largest subtree first, from
 * below `mask`; converging trees receive from the smallest first, from
 * `mask` up.  0 when there is none. */
static uint32_t child_down(uint32_t vr, uint32_t n, uint32_t mask) {
  for (mask >>= 1; mask; mask >>= 1)
    if (vr + mask < n) return mask;
  return 0;
}

static uint32_t child_up(uint32_t vr, uint32_t n, uint32_t mask) {
  uint32_t top = vr ? lowbit(vr) : pow2ceil(n);
  for (; mask < top; mask <<= 1)
    if (vr + mask < n) return mask;
  return 0;
}

/* ------------------------------------------------------------- start */

int etsim_coll__rooted_start(etsim_coll_t *c, uint32_t si) {
  stream_t *s = &c->streams[si];
  const phase_t *p = XCP(s);
  xst_t *x = etsim_coll__xst(c, si);
  uint32_t n = p->ring.n, vr = (p->ring.pos + n - p->root % n) % n;
  x->vr = vr;
  uint64_t tag = s->tag;
  uint32_t me = s->npu;
  int sp = spreads(p->type);
  switch (etsim_coll__algo(p->algo)->base) {
    case ETSIM_ALGO_DIRECT:
      if (sp == (vr == 0)) {
        /* the root spreads, the others converge: they start sending */
        x->state = S_SEND;
        return etsim_coll__wake(c, si, etsim_coll__eps(c, p));
      }
      if (!sp) {
        /* the root of a converging collective hears from everyone */
        x->state = S_WAIT;
        for (uint32_t v = 1; v < n; v++) {
          int rc = etsim_coll__recv(c, me, at(p, v), p->size, tag, si);
          if (rc) return rc;
        }
        return 0;
      }
      x->state = S_WAIT;
      return etsim_coll__recv(c, me, at(p, 0), p->size, tag, si);
    case ETSIM_ALGO_TREE:
      if (sp) {
        x->mask = child_down(vr, n, vr ? lowbit(vr) : pow2ceil(n));
        if (vr == 0) {
          x->state = S_SEND;
          return etsim_coll__wake(c, si, etsim_coll__eps(c, p));
        }
        x->state = S_WAIT;
        return etsim_coll__recv(c, me, at(p, vr - lowbit(vr)), tree_edge(p, vr), tag, si);
      }
      x->mask = child_up(vr, n, 1);
      if (x->mask) {
        x->state = S_WAIT;
        return etsim_coll__recv(c, me, at(p, vr + x->mask), tree_edge(p, vr + x->mask), tag, si);
      }
      x->state = S_SEND; /* a leaf */
      return etsim_coll__wake(c, si, etsim_coll__eps(c, p));
    default: /* chain: ring and oneRing */
      if ((sp && vr == 0) || (!sp && vr == n - 1)) {
        x->state = S_SEND;
        return etsim_coll__wake(c, si, etsim_coll__eps(c, p));
      }
      x->state = S_WAIT;
      return etsim_coll__recv(c, me, at(p, sp ? vr - 1 : vr + 1), chain_in(p, vr), tag, si);
  }
}

/* ----------------------------------------------------------- receive */

int etsim_coll__rooted_recv(etsim_coll_t *c, uint32_t si) {
  stream_t *s = &c->streams[si];
  const phase_t *p = XCP(s);
  xst_t *x = etsim_coll__xst(c, si);
  uint32_t n = p->ring.n, vr = x->vr;
  int sp = spreads(p->type);
  switch (etsim_coll__algo(p->algo)->base) {
    case ETSIM_ALGO_DIRECT:
      /* a leaf got the data, or the root got one contribution */
      if (sp) x->state = S_END;
      return etsim_coll__wake(c, si, after_recv(c, p, p->size));
    case ETSIM_ALGO_TREE:
      if (sp) {
        x->state = x->mask ? S_SEND : S_END;
        return etsim_coll__wake(c, si, etsim_coll__eps(c, p));
      }
      x->state = S_REDUCED;
      return etsim_coll__wake(c, si, after_recv(c, p, tree_edge(p, vr + x->mask)));
    default:
      x->state = (sp ? vr == n - 1 : vr == 0) ? S_END : S_SEND;
      return etsim_coll__wake(c, si, after_recv(c, p, chain_in(p, vr)));
  }
}

/* ---------------------------------------------- after a pause (wake) */

/* Post direct sends while the window allows. */
static int direct_post(etsim_coll_t *c, uint32_t si) {
  stream_t *s = &c->streams[si];
  const phase_t *p = XCP(s);
  xst_t *x = etsim_coll__xst(c, si);
  uint32_t n = p->ring.n;
  uint32_t w = p->window < 0 || (uint32_t)p->window > n - 1 ? n - 1 : (uint32_t)p->window;
  if (w < 1) w = 1;
  while (x->posted < n - 1 && x->posted - x->done < w) {
    uint32_t v = ++x->posted;
    int rc = etsim_coll__send(c, s->npu, at(p, v), p->size, s->tag, si);
    if (rc) return rc;
  }
  return 0;
}

int etsim_coll__rooted_general(etsim_coll_t *c, uint32_t si) {
  stream_t *s = &c->streams[si];
  const phase_t *p = XCP(s);
  xst_t *x = etsim_coll__xst(c, si);
  uint32_t n = p->ring.n, vr = x->vr, me = s->npu;
  uint64_t tag = s->tag;
  int sp = spreads(p->type);
  int rc;
  switch (etsim_coll__algo(p->algo)->base) {
    case ETSIM_ALGO_DIRECT:
      if (x->state == S_END) return etsim_coll__phase_end(c, si);
      if (x->state == S_SEND && sp) {
        x->state = S_SENT;
        return direct_post(c, si);
      }
      if (x->state == S_SEND) {
        x->state = S_SENT;
        return etsim_coll__send(c, me, at(p, 0), p->size, tag, si);
      }
      /* the converging root reduced one more contribution */
      if (++x->done == n - 1) return etsim_coll__phase_end(c, si);
      return 0;
    case ETSIM_ALGO_TREE:
      if (x->state == S_END) return etsim_coll__phase_end(c, si);
      if (sp) {
        x->state = S_SENT;
        uint32_t ch = vr + x->mask;
        return etsim_coll__send(c, me, at(p, ch), tree_edge(p, ch), tag, si);
      }
      if (x->state == S_REDUCED) {
        x->mask = child_up(vr, n, x->mask << 1);
        if (x->mask) {
          x->state = S_WAIT;
          return etsim_coll__recv(c, me, at(p, vr + x->mask), tree_edge(p, vr + x->mask), tag, si);
        }
        if (vr == 0) return etsim_coll__phase_end(c, si);
      }
      x->state = S_SENT;
      return etsim_coll__send(c, me, at(p, vr - lowbit(vr)), tree_edge(p, vr), tag, si);
    default:
      if (x->state == S_END) return etsim_coll__phase_end(c, si);
      x->state = S_SENT;
      rc = etsim_coll__send(c, me, at(p, sp ? vr + 1 : vr - 1), chain_out(p, vr), tag, si);
      return rc;
  }
}

/* ------------------------------------------------- a send delivered */

int etsim_coll__rooted_sent(etsim_coll_t *c, uint32_t si) {
  stream_t *s = &c->streams[si];
  const phase_t *p = XCP(s);
  xst_t *x = etsim_coll__xst(c, si);
  uint32_t n = p->ring.n;
  if (etsim_coll__algo(p->algo)->base == ETSIM_ALGO_DIRECT && spreads(p->type)) {
    if (++x->done == n - 1) return etsim_coll__phase_end(c, si);
    return direct_post(c, si);
  }
  if (p->algo == ETSIM_ALGO_TREE && spreads(p->type)) {
    x->mask = child_down(x->vr, n, x->mask);
    if (!x->mask) return etsim_coll__phase_end(c, si);
    x->state = S_SEND;
    return etsim_coll__wake(c, si, etsim_coll__eps(c, p));
  }
  return etsim_coll__phase_end(c, si);
}
