/* etsim's own collective machinery, beside ASTRA-sim's (coll.c).
 *
 * Three things ASTRA-sim 2.0 lacks are built here from the engine's parts
 * (streams, per-dimension queues, messages):
 *
 *  - rooted collectives (broadcast, reduce, gather, scatter) and the
 *    barrier, run through the network per dimension with a chain ("ring"),
 *    "direct" or binomial "tree" algorithm (rooted.c);
 *  - in-network reduction: a dimension whose switches reduce (innet.c);
 *  - topology-aware communicators: a group whose members form a grid over
 *    several dimensions runs one phase per dimension it spans (reduce-
 *    scatter up, all-reduce on the top, all-gather down), instead of
 *    ASTRA-sim's one flat ring over its members.
 *
 * Phases are ordered as for world collectives: spreading collectives
 * (broadcast, scatter) start in the root's group of the lowest dimension
 * and fan out upwards; converging ones (reduce, gather) start in every
 * lowest-dimension group and meet at the root's.  An NPU takes part in a
 * phase only where it sits in a group that holds (or gathers) data at that
 * point, so every NPU receives or sends each byte once.
 *
 * The algorithms' per-stream state lives in a side array indexed by the
 * stream's pool index (the engine's stream record stays as it is).
 */
#include "ext_int.h"

#include <string.h>

/* ------------------------------------------------------------ state */

static int ext_get(etsim_coll_t *c, coll_ext_t **out) {
  if (!c->ext) {
    c->ext = etsim_calloc(1, sizeof *c->ext);
    if (!c->ext) return ETSIM_ENOMEM;
    etsim_u64map_init(&c->ext->layout_of);
    etsim_u64map_init(&c->ext->sw_slot);
    c->ext->fifo_engines = strcmp(c->net->ops->name, "congestion") == 0;
  }
  *out = c->ext;
  return 0;
}

xst_t *etsim_coll__xst(etsim_coll_t *c, uint32_t si) { return &c->ext->st[si]; }

void etsim_coll__ext_destroy(etsim_coll_t *c) {
  coll_ext_t *x = c->ext;
  if (!x) return;
  etsim_free(x->st);
  for (size_t i = 0; i < x->n_layouts; i++) etsim_free(x->layouts[i].dims);
  etsim_free(x->layouts);
  etsim_u64map_free(&x->layout_of);
  etsim_free(x->sw);
  etsim_u64map_free(&x->sw_slot);
  etsim_free(x->sw_free_ps);
  etsim_free(x);
  c->ext = NULL;
}

/* ---------------------------------------------------- ring positions */

uint32_t etsim_coll__ring_at(const ringmap_t *r, uint32_t pos) {
  return r->members ? r->members[pos] : r->base + pos * r->stride;
}

/* ---------------------------------------- communicator layouts (grids) */

/*
 * A communicator is a grid when its members are exactly the NPUs whose
 * coordinate in every dimension d lies in an arithmetic progression
 * c0, c0 + step, ... (count values).  Then the members that differ from
 * an NPU only in dimension d form one ring along d, and the collective can
 * run per dimension.  Anything else keeps the flat ring.  Public: the
 * simulator's classes (sim/reduce.c) must see the same rings as the run.
 */
int etsim_coll_comm_grid(const etsim_topo_t *t, const etsim_comm_t *comm, etsim_coll_grid_t *out) {
  memset(out, 0, sizeof *out);
  if (!comm || !comm->n) return 0;
  uint32_t lo[ETSIM_TOPO_MAX_DIMS], hi[ETSIM_TOPO_MAX_DIMS];
  for (int d = 0; d < t->ndims; d++) {
    lo[d] = UINT32_MAX;
    hi[d] = 0;
  }
  for (uint32_t i = 0; i < comm->n; i++)
    for (int d = 0; d < t->ndims; d++) {
      uint32_t x = etsim_topo_coord(t, comm->members[i], d);
      if (x < lo[d]) lo[d] = x;
      if (x > hi[d]) hi[d] = x;
    }
  /* The step is the gcd of the offsets from the lowest coordinate. */
  uint32_t step[ETSIM_TOPO_MAX_DIMS] = {0};
  for (uint32_t i = 0; i < comm->n; i++)
    for (int d = 0; d < t->ndims; d++) {
      uint32_t a = etsim_topo_coord(t, comm->members[i], d) - lo[d], b = step[d];
      while (b) {
        uint32_t r = a % b;
        a = b;
        b = r;
      }
      step[d] = a;
    }
  uint64_t prod = 1;
  int nd = 0;
  for (int d = 0; d < t->ndims; d++) {
    uint32_t count = step[d] ? (hi[d] - lo[d]) / step[d] + 1 : 1;
    prod *= count;
    if (count > 1) out->dim[nd++] = (etsim_coll_grid_dim_t){d, count, lo[d], step[d]};
  }
  /* Distinct members inside the grid, as many as the grid has points:
   * they are the grid (the loader refuses repeated ranks). */
  if (prod != comm->n || nd == 0) return 0;
  for (uint32_t i = 0; i < comm->n; i++)
    for (int k = 0; k < nd; k++) {
      uint32_t x = etsim_topo_coord(t, comm->members[i], out->dim[k].phys);
      if ((x - out->dim[k].c0) % out->dim[k].step) return 0;
    }
  out->n_dims = nd;
  return 1;
}

static int layout_build(const etsim_coll_t *c, const etsim_comm_t *comm, layout_t *out) {
  memset(out, 0, sizeof *out);
  etsim_coll_grid_t g;
  if (!etsim_coll_comm_grid(c->topo, comm, &g)) return 0;
  out->dims = etsim_malloc((size_t)g.n_dims * sizeof *out->dims);
  if (!out->dims) return ETSIM_ENOMEM;
  memcpy(out->dims, g.dim, (size_t)g.n_dims * sizeof *out->dims);
  out->n_dims = g.n_dims;
  out->ok = 1;
  return 0;
}

/* The cached layout of a communicator (by address: communicators are
 * borrowed for the whole run). */
static int layout_of(etsim_coll_t *c, const etsim_comm_t *comm, const layout_t **out) {
  coll_ext_t *x;
  int rc = ext_get(c, &x);
  if (rc) return rc;
  uint64_t key = (uint64_t)(uintptr_t)comm;
  uint32_t slot;
  if (etsim_u64map_get(&x->layout_of, key, &slot)) {
    *out = &x->layouts[slot];
    return 0;
  }
  if (x->n_layouts == x->cap_layouts && (rc = etsim_grow((void **)&x->layouts, &x->cap_layouts,
                                                         x->n_layouts + 1, sizeof *x->layouts)))
    return rc;
  layout_t *l = &x->layouts[x->n_layouts];
  if ((rc = layout_build(c, comm, l))) return rc;
  slot = (uint32_t)x->n_layouts++;
  if (etsim_u64map_put(&x->layout_of, key, slot, NULL) < 0) return ETSIM_ENOMEM;
  *out = l;
  return 0;
}

/* --------------------------------------------------------- decisions */

int etsim_coll__ext_wants(etsim_coll_t *c, etsim_cop_t type, const etsim_comm_t *comm) {
  if (type >= ETSIM_COP_ASTRA_N) return 1;
  if (!comm || comm->n == c->n_npus || !c->cfg.group_hierarchical) return 0;
  const layout_t *l;
  if (layout_of(c, comm, &l)) return 0; /* out of memory: the flat ring needs none */
  return l->ok;
}

int etsim_coll__phase_algo(const etsim_coll_t *c, int t, int phys, int algo) {
  if (phys < 0 || !c->cfg.in_network[phys]) return algo;
  /* all-to-all, gather, scatter: the switch cannot combine */
  return etsim_coll__algo(ETSIM_ALGO_IN_NETWORK)->ops >> t & 1u ? ETSIM_ALGO_IN_NETWORK : algo;
}

/* ---------------------------------------------------------- the space */

/* One dimension a collective runs on, for one NPU: its ring and algorithm. */
typedef struct sdim {
  ringmap_t ring;
  etsim_coll_impl_t impl;
  int phys;      /* physical dimension, -1 all NPUs, -2 a communicator's ring */
  int level;     /* queue level */
  uint8_t fast;  /* a communicator's flat ring: ASTRA-sim's 10 ns local delay */
  uint32_t root; /* the root's position in this ring */
  int root_here; /* the NPU's coordinates elsewhere equal the root's */
} sdim_t;

static uint32_t pow2_ok(uint32_t n) { return n && !(n & (n - 1)); }

/* The implementation a type uses on entry i of its list: the list entry,
 * or ring where the list is absent or shorter (rooted types). */
static etsim_coll_impl_t impl_at(const etsim_coll_t *c, etsim_cop_t type, int i) {
  int n = c->cfg.n_impl[type];
  if (i < n) return c->cfg.impl[type][i];
  return (etsim_coll_impl_t){ETSIM_ALGO_RING, -1};
}

/* The dimensions of a collective for NPU npu with root R (an NPU id):
 * world (the type's list, or every dimension), a communicator's grid, or
 * its flat ring.  Returns the count (0 when nothing to do) or < 0. */
static int space(etsim_coll_t *c, uint32_t npu, etsim_cop_t type, uint32_t involved,
                 const etsim_comm_t *comm, uint32_t R, sdim_t *out, etsim_error_t *err) {
  const etsim_topo_t *t = c->topo;
  int n = 0;
  if (comm && comm->n != c->n_npus) {
    const layout_t *l = NULL;
    int rc = c->cfg.group_hierarchical ? layout_of(c, comm, &l) : 0;
    if (rc) return rc;
    if (l && l->ok) {
      for (int k = 0; k < l->n_dims; k++) {
        const xdim_t *x = &l->dims[k];
        uint32_t st = t->stride[x->phys], me = etsim_topo_coord(t, npu, x->phys);
        sdim_t *s = &out[n++];
        memset(s, 0, sizeof *s);
        s->ring.n = x->count;
        s->ring.stride = x->step * st;
        s->ring.base = npu - me * st + x->c0 * st;
        s->ring.pos = (me - x->c0) / x->step;
        s->root = (etsim_topo_coord(t, R, x->phys) - x->c0) / x->step;
        s->phys = x->phys;
        s->level = x->phys;
        s->impl = impl_at(c, type, x->phys);
      }
      return n;
    }
    /* ASTRA-sim's flat ring over the members in file order */
    sdim_t *s = &out[n++];
    memset(s, 0, sizeof *s);
    s->ring.n = comm->n;
    s->ring.members = comm->members;
    s->ring.pos = UINT32_MAX;
    for (uint32_t i = 0; i < comm->n; i++) {
      if (comm->members[i] == npu) s->ring.pos = i;
      if (comm->members[i] == R) s->root = i;
    }
    if (s->ring.pos == UINT32_MAX)
      return etsim_error_set(err, ETSIM_EINVAL,
                             "NPU %u issues a collective on communicator %u, which does not "
                             "contain it",
                             npu, comm->id);
    s->phys = -2;
    s->fast = 1;
    s->impl = impl_at(c, type, 0);
    if (type < ETSIM_COP_ASTRA_N && c->cfg.n_impl[type] > 1)
      s->impl = (etsim_coll_impl_t){ETSIM_ALGO_RING, -1};
    return n;
  }
  /* world: the type's implementation list, or every dimension */
  int n_list = c->cfg.n_impl[type] ? c->cfg.n_impl[type] : t->ndims;
  for (int i = 0; i < n_list; i++) {
    etsim_coll_impl_t im = impl_at(c, type, i);
    int one = (etsim_coll__algo(im.kind)->flags & AF_ONE) != 0;
    sdim_t *s = &out[n];
    memset(s, 0, sizeof *s);
    s->impl = im;
    s->level = i;
    if (one) {
      s->phys = -1;
      s->ring.n = c->n_npus;
      s->ring.stride = 1;
      s->ring.pos = npu;
      s->root = R;
      if ((involved >> i) & 1u) n++;
      break;
    }
    uint32_t st = t->stride[i], me = etsim_topo_coord(t, npu, i);
    s->phys = i;
    s->ring.n = t->npus[i];
    s->ring.stride = st;
    s->ring.pos = me;
    s->ring.base = npu - me * st;
    s->root = etsim_topo_coord(t, R, i);
    if ((involved >> i) & 1u) n++;
  }
  return n;
}

/* ------------------------------------------------------------ checks */

static int check_space(const etsim_coll_t *c, etsim_cop_t type, const sdim_t *sd, int n,
                       const etsim_comm_t *comm, etsim_error_t *err) {
  for (int k = 0; k < n; k++) {
    const etsim_coll__algo_t *a = etsim_coll__algo(sd[k].impl.kind);
    uint32_t m = sd[k].ring.n;
    if ((a->flags & AF_POW2) && m > 1 && !pow2_ok(m))
      return etsim_error_set(err, ETSIM_EUNSUPPORTED,
                             "%s: %s needs a power-of-two number of NPUs, not %u%s%s (ASTRA-sim "
                             "deadlocks on it): use ring or direct",
                             etsim_coll_op_name(type), a->name, m,
                             sd[k].phys >= 0 ? " in a dimension" : "",
                             comm && comm->n != c->n_npus ? " of the communicator" : "");
    if (a->flags & AF_WHOLE_DIM) {
      if (sd[k].phys < 0 || (comm && comm->n != c->n_npus))
        return etsim_error_set(err, ETSIM_EUNSUPPORTED,
                               "%s: %s on a communicator: trees need a whole "
                               "dimension (ASTRA-sim misreads this case)",
                               etsim_coll_op_name(type), a->name);
      if (m > 1 && !pow2_ok(m))
        return etsim_error_set(err, ETSIM_EUNSUPPORTED,
                               "%s: %s needs a power-of-two dimension, not %u NPUs "
                               "(ASTRA-sim crashes on it)",
                               etsim_coll_op_name(type), a->name, m);
    }
    if (!(a->ops >> type & 1u))
      return etsim_error_set(err, ETSIM_EUNSUPPORTED,
                             "%s cannot use %s (ASTRA-sim rejects it too): use ring or "
                             "direct",
                             etsim_coll_op_name(type), a->name);
  }
  return 0;
}

int etsim_coll_check(const etsim_coll_t *cc, etsim_cop_t type, const etsim_comm_t *comm,
                     etsim_error_t *err) {
  etsim_coll_t *c = (etsim_coll_t *)cc; /* layouts are cached on first sight */
  if ((unsigned)type >= ETSIM_COP_N)
    return etsim_error_set(err, ETSIM_EINVAL, "unknown collective type %d", (int)type);
  if (c->custom[type]) return 0;
  uint32_t npu = comm && comm->n ? comm->members[0] : 0;
  sdim_t sd[ETSIM_TOPO_MAX_DIMS];
  int n;
  if (type < ETSIM_COP_ASTRA_N && !etsim_coll__ext_wants(c, type, comm)) {
    /* ASTRA-sim's own layout: the list's dimensions, or one flat ring */
    n = 0;
    if (comm && comm->n != c->n_npus) {
      etsim_coll_impl_t im = c->cfg.impl[type][0];
      if (c->cfg.n_impl[type] > 1) im = (etsim_coll_impl_t){ETSIM_ALGO_RING, -1};
      sd[n++] = (sdim_t){.ring.n = comm->n, .impl = im, .phys = -2};
    } else {
      for (int i = 0; i < c->cfg.n_impl[type]; i++) {
        etsim_coll_impl_t im = c->cfg.impl[type][i];
        int one = (etsim_coll__algo(im.kind)->flags & AF_ONE) != 0;
        sd[n++] = (sdim_t){
            .ring.n = one ? c->n_npus : c->topo->npus[i], .impl = im, .phys = one ? -1 : i};
        if (one) break;
      }
    }
  } else {
    n = space(c, npu, type, ~0u, comm, npu, sd, err);
    if (n < 0) return n;
  }
  return check_space(c, type, sd, n, comm, err);
}

/* A configuration the engine cannot run at all: in-network reduction on a
 * dimension without a switch, or on a backend without switch messages. */
int etsim_coll__ext_create_check(const etsim_coll_t *c, etsim_error_t *err) {
  for (int d = 0; d < ETSIM_TOPO_MAX_DIMS; d++) {
    if (!c->cfg.in_network[d]) continue;
    if (d >= c->topo->ndims)
      return etsim_error_set(err, ETSIM_EINVAL,
                             "in-network-collectives names dimension %d but the network has %d", d,
                             c->topo->ndims);
    if (c->topo->kind[d] != ETSIM_TOPO_SWITCH)
      return etsim_error_set(err, ETSIM_EINVAL,
                             "in-network-collectives: dimension %d is a %s; only a Switch "
                             "dimension's switch can reduce",
                             d, etsim_topo_kind_name(c->topo->kind[d]));
    if (!c->net->ops->send_switch)
      return etsim_error_set(err, ETSIM_EUNSUPPORTED,
                             "in-network-collectives: the %s backend does not model switches "
                             "that reduce (use analytical or congestion)",
                             c->net->ops->name);
    if (c->topo->total > (1u << 27))
      return etsim_error_set(err, ETSIM_EUNSUPPORTED,
                             "in-network-collectives: more than 2^27 NPUs");
  }
  return 0;
}

/* ------------------------------------------------------------ phases */

typedef struct plan {
  phase_t ph[MAX_PHASES];
  int n;
} plan_t;

static void add(etsim_coll_t *c, uint32_t npu, plan_t *p, const sdim_t *s, int type, int algo,
                uint64_t size, int mode) {
  phase_t *ph = &p->ph[p->n++];
  memset(ph, 0, sizeof *ph);
  ph->type = (uint8_t)type;
  ph->algo = (uint8_t)etsim_coll__phase_algo(c, type, s->phys, algo);
  ph->window = s->impl.window;
  int dir = 1;
  ph->queue = etsim_coll__queue(c, npu, s->level, mode, &dir);
  ph->dir = (int8_t)dir;
  ph->fast = s->fast;
  ph->size = size;
  ph->ring = s->ring;
  ph->root = s->root;
  /* the dimensions its messages cross (per-dimension times) */
  ph->dims = (uint8_t)etsim_coll__phase_dims(c, npu, ph, s->phys);
}

/* The phases of one chunk of `chunk` bytes (a rank's share for gather and
 * scatter) on dimensions sd[0..n). */
static void plan_chunk(etsim_coll_t *c, uint32_t npu, etsim_cop_t type, uint64_t chunk,
                       const sdim_t *sd, int n, plan_t *p) {
  p->n = 0;
  /* only dimensions with more than one NPU run a phase */
  int idx[ETSIM_TOPO_MAX_DIMS], m = 0;
  for (int k = 0; k < n; k++)
    if (sd[k].ring.n > 1) idx[m++] = k;
  uint64_t remain = chunk;
  switch (type) {
    case ETSIM_COP_BROADCAST:
    case ETSIM_COP_SCATTER: {
      /* fan out from the root's lowest group: an NPU joins the phase of
       * dimension k when it agrees with the root above k */
      uint64_t below = 1; /* NPUs each member of a phase stands for */
      for (int j = 0; j < m; j++) below *= sd[idx[j]].ring.n;
      for (int j = 0; j < m; j++) {
        const sdim_t *s = &sd[idx[j]];
        below /= s->ring.n;
        int here = 1;
        for (int h = j + 1; h < m; h++)
          if (sd[idx[h]].ring.pos != sd[idx[h]].root) here = 0;
        if (!here) continue;
        add(c, npu, p, s, type, s->impl.kind, type == ETSIM_COP_SCATTER ? remain * below : remain,
            0);
      }
      break;
    }
    case ETSIM_COP_REDUCE:
    case ETSIM_COP_GATHER: {
      uint64_t before = 1;
      for (int j = 0; j < m; j++) {
        const sdim_t *s = &sd[idx[j]];
        int here = 1;
        for (int h = 0; h < j; h++)
          if (sd[idx[h]].ring.pos != sd[idx[h]].root) here = 0;
        if (here)
          add(c, npu, p, s, type, s->impl.kind, type == ETSIM_COP_GATHER ? remain * before : remain,
              0);
        before *= s->ring.n;
      }
      break;
    }
    case ETSIM_COP_BARRIER:
      for (int j = 0; j < m; j++) {
        const sdim_t *s = &sd[idx[j]];
        sdim_t z = *s;
        z.root = 0;
        if (s->impl.kind == ETSIM_ALGO_TREE) {
          /* every token up to position 0, then the release down from it */
          add(c, npu, p, &z, ETSIM_COP_REDUCE, ETSIM_ALGO_TREE, chunk, 0);
          add(c, npu, p, &z, ETSIM_COP_BROADCAST, ETSIM_ALGO_TREE, chunk, 0);
        } else {
          /* everyone hears from everyone: an all-gather of the token (the
           * one* names mean the same on a ring over all NPUs) */
          add(c, npu, p, &z, ETSIM_COP_ALL_GATHER, etsim_coll__algo(s->impl.kind)->base, chunk, 0);
        }
      }
      break;
    case ETSIM_COP_ALL_REDUCE: {
      /* reduce-scatter up, all-reduce on the top, all-gather down */
      for (int j = 0; j + 1 < m; j++) {
        const sdim_t *s = &sd[idx[j]];
        add(c, npu, p, s, ETSIM_COP_REDUCE_SCATTER, s->impl.kind, remain, 1);
        remain /= s->ring.n;
      }
      if (m)
        add(c, npu, p, &sd[idx[m - 1]], ETSIM_COP_ALL_REDUCE, sd[idx[m - 1]].impl.kind, remain, 1);
      for (int j = m - 2; j >= 0; j--) {
        const sdim_t *s = &sd[idx[j]];
        add(c, npu, p, s, ETSIM_COP_ALL_GATHER, s->impl.kind, remain, 2);
        remain *= s->ring.n;
      }
      break;
    }
    case ETSIM_COP_ALL_GATHER:
      for (int j = m - 1; j >= 0; j--) {
        const sdim_t *s = &sd[idx[j]];
        add(c, npu, p, s, type, s->impl.kind, remain, 0);
        remain *= s->ring.n;
      }
      break;
    default: /* reduce-scatter, all-to-all: every dimension upwards */
      for (int j = 0; j < m; j++) {
        const sdim_t *s = &sd[idx[j]];
        add(c, npu, p, s, type, s->impl.kind, remain, 0);
        if (type == ETSIM_COP_REDUCE_SCATTER) remain /= s->ring.n;
      }
      break;
  }
}

int etsim_coll__ext_issue(etsim_coll_t *c, uint32_t npu, etsim_cop_t type, uint64_t bytes,
                          uint32_t involved, const etsim_comm_t *comm, uint32_t root,
                          int32_t priority, uint64_t token, etsim_error_t *err) {
  coll_ext_t *x;
  int rc = ext_get(c, &x);
  if (rc) return rc;
  /* Only a communicator smaller than the network runs as a group (its
   * grid or flat ring); one of every NPU runs over the network's
   * dimensions, as ASTRA-sim's CommunicatorGroup plans it.  Its root is a
   * position all the same: in another member order it is not the NPU of
   * that id. */
  int grouped = comm && comm->n != c->n_npus;
  if (comm ? root >= comm->n : root >= c->n_npus)
    return etsim_error_set(err, ETSIM_EINVAL, "%s: root %u is not %s", etsim_coll_op_name(type),
                           root, comm ? "a position in the communicator" : "an NPU of the network");
  uint32_t R = comm ? comm->members[root] : root;
  sdim_t sd[ETSIM_TOPO_MAX_DIMS];
  int n = space(c, npu, type, grouped ? ~0u : involved, comm, R, sd, err);
  if (n < 0) return n;
  if ((rc = check_space(c, type, sd, n, comm, err))) return rc;
  /* Chunks: splits pieces of the buffer (no ASTRA-sim clamp: these
   * collectives have no ASTRA-sim numbers to keep); a barrier is one. */
  uint64_t chunk = bytes / c->cfg.splits, size = bytes;
  if (chunk == 0) chunk = bytes ? bytes : 0;
  uint32_t n_streams = type == ETSIM_COP_BARRIER ? 1 : (uint32_t)((size + chunk - 1) / chunk);
  if (type == ETSIM_COP_BARRIER) chunk = bytes;
  int32_t pri = etsim_coll__priority(c, npu, priority);
  uint32_t di;
  if ((rc = etsim_coll__new_dataset(c, npu, n_streams, token, &di))) return rc;
  uint32_t made = 0;
  for (uint32_t k = 0; k < n_streams; k++) {
    uint64_t this_chunk = type == ETSIM_COP_BARRIER ? chunk
                          : k + 1 < n_streams       ? chunk
                                                    : size - (uint64_t)k * chunk;
    plan_t p;
    plan_chunk(c, npu, type, this_chunk, sd, n, &p);
    if (p.n == 0) break;
    uint32_t si;
    if ((rc = etsim_coll__new_stream(c, npu, di, pri, p.n, &si))) return rc;
    for (int q = 0; q < p.n; q++) c->datasets[di].dims |= p.ph[q].dims;
    memcpy(PHASES(c, si), p.ph, (size_t)p.n * sizeof *p.ph);
    made++;
    if ((rc = etsim_coll__launch(c, si, comm))) return rc;
  }
  if (made == 0) etsim_coll__finish_empty(c, di, npu, token);
  else if (made != n_streams) c->datasets[di].total = made;
  return 0;
}

/* --------------------------------------------------------- dispatch */

static int state_for(etsim_coll_t *c, uint32_t si) {
  coll_ext_t *x;
  int rc = ext_get(c, &x);
  if (rc) return rc;
  if (si >= x->cap_st) {
    size_t cap = x->cap_st;
    if ((rc = etsim_grow((void **)&x->st, &cap, (size_t)si + 1, sizeof *x->st))) return rc;
    memset(x->st + x->cap_st, 0, (cap - x->cap_st) * sizeof *x->st);
    x->cap_st = cap;
  }
  memset(&x->st[si], 0, sizeof x->st[si]);
  return 0;
}

int etsim_coll__ext_start(etsim_coll_t *c, uint32_t si) {
  int rc = state_for(c, si);
  if (rc) return rc;
  if (XCP(&c->streams[si])->algo == ETSIM_ALGO_IN_NETWORK) return etsim_coll__innet_start(c, si);
  return etsim_coll__rooted_start(c, si);
}

int etsim_coll__ext_general(etsim_coll_t *c, uint32_t si) {
  if (XCP(&c->streams[si])->algo == ETSIM_ALGO_IN_NETWORK) return etsim_coll__innet_general(c, si);
  return etsim_coll__rooted_general(c, si);
}

int etsim_coll__ext_recv(etsim_coll_t *c, uint32_t si) {
  if (XCP(&c->streams[si])->algo == ETSIM_ALGO_IN_NETWORK) return etsim_coll__innet_recv(c, si);
  return etsim_coll__rooted_recv(c, si);
}

int etsim_coll__ext_sent(etsim_coll_t *c, uint32_t si) {
  if (XCP(&c->streams[si])->algo == ETSIM_ALGO_IN_NETWORK) return etsim_coll__innet_sent(c, si);
  return etsim_coll__rooted_sent(c, si);
}
