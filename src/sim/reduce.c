/*
 * reduce.c — classes of equivalent NPUs, found before a run.
 *
 * A candidate symmetry is a "shift": a partition of the NPUs into cycles
 * of equal length, moving every NPU one step along its cycle.  Candidates
 * are the lines of each network dimension (in coordinate order) and every
 * family of communicator groups of one size that partitions the NPUs (in
 * the group file's member order: tensor-parallel groups, data-parallel
 * groups, ...), and under hierarchical phases, for a family of grid
 * communicators, one step along each dimension the grids span.  A shift g
 * is kept when it maps the run onto itself:
 *
 *   E1  NPU g(x) runs the same trace as x (up to labels, see et/share.c);
 *   E2  every communicator C has an image g(C) in the group file, with the
 *       same members in the same cyclic order (so rings map to rings;
 *       a grid under hierarchical phases in any order, see E6);
 *   E3  x's labels map to g(x)'s: a collective on C becomes one on g(C), a
 *       message to NPU p one to g(p);
 *   E4  with collectives on all NPUs, g maps each dimension's rings onto
 *       rings (true for dimension shifts; checked for group shifts);
 *   E5  NPU g(x) computes at x's speed (--npu-speed, docs/sim.md
 *       "What-if"): a straggler is in no class but its own orbit's, so a
 *       shift moving it onto a nominal NPU is dropped; likewise g(x)'s
 *       links have x's factors in every dimension (--link-degrade "D:N"):
 *       a degraded NPU's messages cost more than its image's would, which
 *       breaks the cost invariance the classes rest on (C below), so such
 *       a shift is dropped as a slow NPU's is;
 *   E6  under group-phases "hierarchical", every communicator C smaller
 *       than the world and its image D = g(C) run alike: both flat rings
 *       (not grids, see etsim_coll_comm_grid), or both grids with the same
 *       (phys, count, step) per spanned dimension k and one rotation r_k
 *       with pos_D,k(g(x)) = pos_C,k(x) + r_k (mod count_k) for every
 *       member x.
 *
 * Why E6 suffices.  Under hierarchical phases a grid C runs, for NPU x, one
 * ring per spanned dimension k (coll/ext.c, space()): the members of C that
 * agree with x off dimension phys_k, in order of pos_C,k, with count_k
 * NPUs, the implementation and queue level of phys_k.  Take y on x's ring
 * k.  For j != k, pos_C,j(y) = pos_C,j(x), so pos_D,j(g(y)) = pos_D,j(g(x))
 * (both moved by r_j), and g(y), g(x) share every coordinate D does not
 * span (D's members all do): g(y) is on g(x)'s ring k of D, at position
 * pos_C,k(y) + r_k.  So g maps x's ring k onto g(x)'s ring k, neighbours
 * to neighbours, rotated by r_k; the dimensions come in the same order
 * (lowest phys first) with the same sizes, algorithms and queue levels.
 * Ring and direct algorithms treat every position alike (each sends to
 * pos + 1, or to all, and receives from pos - 1, or from all): the phases
 * of x and g(x) are images of each other.  Rooted collectives through the
 * network are refused (barrier aside: a rootless all-gather of a token),
 * and halving-doubling and trees are refused, so nothing singles out
 * position 0.  Flat rings keep E2's argument.  A grid against a flat ring
 * runs different phases, so a shift mapping one onto the other is dropped.
 * The costs of the grid rings' neighbour pairs are checked with the other
 * pairs (costs_invariant), and the run checks every pair it used.
 *
 * Kept shifts that commute and keep each other's positions generate the
 * group G; each class is one G-orbit, of |G| NPUs, represented by its NPU
 * whose positions are all 0.  The proof that representatives suffice, and
 * the two conditions only the run can check (message costs invariant under
 * G, no order-sensitive ties), are in docs/sim.md.
 */
#include "sim_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

/* One candidate shift. */
typedef struct gen {
  uint32_t len;
  uint32_t *pos, *first, *members; /* owned until moved into sim_sym_t */
  char name[64];
} gen_t;

static void gen_free(gen_t *g) {
  etsim_free(g->pos);
  etsim_free(g->first);
  etsim_free(g->members);
  memset(g, 0, sizeof *g);
}

static inline uint32_t shift(const gen_t *g, uint32_t x, uint32_t k) {
  return g->members[g->first[x] + (g->pos[x] + k) % g->len];
}

/* Label values of one NPU in canonical order: pg names (s) or NPU ids. */
typedef struct lvec {
  const etsim_et_label_t *v;
  uint32_t n;
} lvec_t;

typedef struct ctx {
  const etsim_et_set_t *set;
  const etsim_topo_t *topo;
  const etsim_comm_groups_t *groups;
  uint32_t n;
  /* per distinct trace without set labels: its label values (shared by
   * every rank reading it), collected here */
  etsim_et_label_t **tvals;
  uint32_t *tn;
  etsim_intern_t strs;
  int world;          /* some trace has collectives on all NPUs */
  etsim_u64map_t gid; /* group id -> index */
  uint32_t *npu_off;  /* NPU -> its groups: grp[npu_off[x] .. npu_off[x+1]) */
  uint32_t *npu_grp;
  uint32_t *npu_gpos;  /* position of x in that group */
  const double *speed; /* --npu-speed, NULL: all alike */
  /* --link-degrade "D:N": per-NPU link factors; NULL arrays: all alike */
  etsim_net_npu_links_t links;
  /* group-phases hierarchical: per group its grid (n_dims 0: a flat ring,
   * also for groups of all NPUs); NULL under flat phases */
  etsim_coll_grid_t *grid;
} ctx_t;

static lvec_t labels_of(const ctx_t *c, uint32_t x) {
  const etsim_et_set_t *s = c->set;
  uint32_t t = s->rank_trace[x];
  if (s->attr_label && s->attr_label[t]) {
    /* et/share.c's slots: the file's values, n of them per trace shape */
    size_t f = s->rank_file[x];
    return (lvec_t){&s->labels[s->label_off[f]], c->tn[t]};
  }
  return (lvec_t){c->tvals[t], c->tn[t]};
}

static uint32_t group_of(const ctx_t *c, const char *pg);

/* Per distinct trace: labels in order of first appearance (as et/share.c
 * numbers them), whether it runs collectives on all NPUs, and why no
 * symmetry can hold at all (METADATA process groups, which are only known
 * when they run). */
static int scan_traces(ctx_t *c, int sys_rooted, char *why, size_t n_why) {
  const etsim_et_set_t *s = c->set;
  c->tvals = etsim_calloc(s->n_traces, sizeof *c->tvals);
  c->tn = etsim_calloc(s->n_traces, sizeof *c->tn);
  if (!c->tvals || !c->tn) return ETSIM_ENOMEM;
  for (size_t k = 0; k < s->n_traces; k++) {
    const etsim_et_trace_t *t = s->traces[k];
    const uint32_t *al = s->attr_label ? s->attr_label[k] : NULL;
    etsim_u64map_t seen_s, seen_i;
    etsim_u64map_init(&seen_s);
    etsim_u64map_init(&seen_i);
    size_t cap = 0;
    int rc = 0;
    for (size_t i = 0; i < t->n_nodes && !rc; i++) {
      if (t->type[i] == ETSIM_ET_METADATA_NODE && t->io && t->io[i] &&
          (t->ios[t->io[i]].flags & 1) && t->ios[t->io[i]].in.values &&
          strstr(t->ios[t->io[i]].in.values, "pg_name")) {
        snprintf(why, n_why, "%s: node %llu defines process groups while it runs", t->path,
                 (unsigned long long)t->id[i]);
        rc = 1;
        break;
      }
      if (t->type[i] == ETSIM_ET_COMM_COLL_NODE && sys_rooted) {
        /* a root singles one NPU out; the barrier has none (its ring and
         * direct forms are all-gathers of a token, its tree form is
         * refused with the other trees) */
        int64_t ct = -1, op;
        if (t->k_comm_type != UINT32_MAX &&
            etsim_et_trace_attr_int(t, i, t->k_comm_type, &ct) == 1 &&
            (op = etsim_sim__rooted_op((int)ct)) >= ETSIM_COP_ASTRA_N && op != ETSIM_COP_BARRIER) {
          snprintf(why, n_why, "%s: node %llu is a rooted collective (its root is singled out)",
                   t->path, (unsigned long long)t->id[i]);
          rc = 1;
          break;
        }
      }
      if (t->type[i] == ETSIM_ET_COMM_COLL_NODE) {
        /* on every NPU: no group, the world, or a group of all NPUs (which
         * the system layer runs over the dimensions, as the world) */
        const char *pg = etsim_et_trace_attr_str(t, i, t->k_pg_name);
        uint32_t g = group_of(c, pg);
        if (g == NONE - 1 || (g != NONE && c->groups->g[g].n == c->n)) c->world = 1;
      }
      for (uint32_t a = t->attr_off[i]; a < t->attr_off[i + 1] && !rc; a++) {
        const etsim_et_attrrec_t *r = &t->attrs[a];
        int kind = (int)(r->kind_doc & 0xff), str = r->name == t->k_pg_name;
        if (!str && r->name != t->k_comm_src && r->name != t->k_comm_dst) continue;
        if (al) {
          if (al[a] != NONE && al[a] + 1 > c->tn[k]) c->tn[k] = al[a] + 1;
          continue;
        }
        etsim_attr_t v;
        etsim_et_trace_attr(t, a, &v);
        int64_t iv = 0;
        if (str ? kind != ETSIM_ATTR_STRING : etsim_attr_as_int(&v, &iv) != 0) continue;
        uint64_t key;
        if (str) {
          int64_t id = etsim_intern_put(&c->strs, v.v.s, strlen(v.v.s));
          if (id < 0) rc = ETSIM_ENOMEM;
          key = (uint64_t)id;
        } else {
          key = (uint64_t)iv;
        }
        uint32_t slot = c->tn[k];
        int put = rc ? -1 : etsim_u64map_put(str ? &seen_s : &seen_i, key, slot, &slot);
        if (put < 0) rc = ETSIM_ENOMEM;
        else if (put == 1) {
          if (c->tn[k] == cap &&
              etsim_grow((void **)&c->tvals[k], &cap, c->tn[k] + 1, sizeof *c->tvals[k]))
            rc = ETSIM_ENOMEM;
          else
            c->tvals[k][c->tn[k]++] = (etsim_et_label_t){
                str ? 0 : iv, str ? etsim_intern_str(&c->strs, (uint32_t)key) : NULL};
        }
      }
    }
    etsim_u64map_free(&seen_s);
    etsim_u64map_free(&seen_i);
    if (rc) return rc; /* 1: no symmetry, why is set */
  }
  return 0;
}

static int index_groups(ctx_t *c) {
  const etsim_comm_groups_t *g = c->groups;
  c->npu_off = etsim_calloc(c->n + 1, sizeof *c->npu_off);
  if (!c->npu_off) return ETSIM_ENOMEM;
  size_t tot = 0;
  for (size_t k = 0; g && k < g->n; k++) {
    uint32_t one;
    if (etsim_u64map_put(&c->gid, g->g[k].id, (uint32_t)k, &one) < 0) return ETSIM_ENOMEM;
    for (uint32_t m = 0; m < g->g[k].n; m++) c->npu_off[g->g[k].members[m] + 1]++;
    tot += g->g[k].n;
  }
  for (uint32_t x = 0; x < c->n; x++) c->npu_off[x + 1] += c->npu_off[x];
  c->npu_grp = etsim_malloc((tot ? tot : 1) * sizeof *c->npu_grp);
  c->npu_gpos = etsim_malloc((tot ? tot : 1) * sizeof *c->npu_gpos);
  uint32_t *fill = etsim_malloc((c->n ? c->n : 1) * sizeof *fill);
  if (!c->npu_grp || !c->npu_gpos || !fill) {
    etsim_free(fill);
    return ETSIM_ENOMEM;
  }
  memcpy(fill, c->npu_off, c->n * sizeof *fill);
  for (size_t k = 0; g && k < g->n; k++)
    for (uint32_t m = 0; m < g->g[k].n; m++) {
      uint32_t x = g->g[k].members[m];
      c->npu_grp[fill[x]] = (uint32_t)k;
      c->npu_gpos[fill[x]++] = m;
    }
  etsim_free(fill);
  return 0;
}

/* The group a pg label names: its index, NONE - 1 for all NPUs, or NONE
 * when no group has that id. */
static uint32_t group_of(const ctx_t *c, const char *pg) {
  if (!pg || !*pg || strcmp(pg, "0") == 0) return NONE - 1;
  char *end;
  unsigned long id = strtoul(pg, &end, 10);
  uint32_t k;
  if (*end || !etsim_u64map_get(&c->gid, id, &k)) return NONE;
  return k;
}

/* Whether NPU x is in group k. */
static int in_group(const ctx_t *c, uint32_t x, uint32_t k) {
  for (uint32_t q = c->npu_off[x]; q < c->npu_off[x + 1]; q++)
    if (c->npu_grp[q] == k) return 1;
  return 0;
}

/* gmap[C] = g(C), the group with C's members moved by g in the same cyclic
 * order, or NONE.  Under hierarchical phases a grid's member order plays
 * no part (its rings follow coordinates; E6 checks them), so a grid's
 * image is the grid with the moved members in any order. */
static int group_images(const ctx_t *c, const gen_t *g, uint32_t *gmap) {
  const etsim_comm_groups_t *gs = c->groups;
  for (size_t k = 0; gs && k < gs->n; k++) {
    const etsim_comm_t *C = &gs->g[k];
    gmap[k] = NONE;
    if (C->n == c->n) { /* all NPUs: run over the dimensions, as the world */
      gmap[k] = (uint32_t)k;
      continue;
    }
    uint32_t m0 = shift(g, C->members[0], 1);
    for (uint32_t q = c->npu_off[m0]; q < c->npu_off[m0 + 1] && gmap[k] == NONE; q++) {
      const etsim_comm_t *D = &gs->g[c->npu_grp[q]];
      if (D->n != C->n) continue;
      if (c->grid && c->grid[k].n_dims && c->grid[c->npu_grp[q]].n_dims) {
        uint32_t i;
        for (i = 1; i < C->n && in_group(c, shift(g, C->members[i], 1), c->npu_grp[q]); i++) {}
        if (i == C->n) gmap[k] = c->npu_grp[q];
        continue;
      }
      uint32_t p0 = c->npu_gpos[q], i;
      for (i = 0; i < C->n; i++)
        if (D->members[(p0 + i) % D->n] != shift(g, C->members[i], 1)) break;
      if (i == C->n) gmap[k] = c->npu_grp[q];
    }
  }
  return 0;
}

/* x's neighbour one step up dimension d's ring. */
static uint32_t next_in_dim(const etsim_topo_t *t, uint32_t x, int d) {
  uint32_t cx = etsim_topo_coord(t, x, d);
  return cx + 1 < t->npus[d] ? x + t->stride[d] : x - cx * t->stride[d];
}

/* E6: under hierarchical phases every communicator and its image run
 * alike (flat rings both, or grids rotated onto each other per dimension;
 * the proof is at the top).  1 holds, 0 not (why). */
static int grids_map(const ctx_t *c, const gen_t *g, const uint32_t *gmap, char *why,
                     size_t n_why) {
  const etsim_topo_t *t = c->topo;
  for (size_t k = 0; k < c->groups->n; k++) {
    const etsim_comm_t *C = &c->groups->g[k];
    if (C->n == c->n || gmap[k] == NONE) continue;
    const etsim_comm_t *D = &c->groups->g[gmap[k]];
    const etsim_coll_grid_t *a = &c->grid[k], *b = &c->grid[gmap[k]];
    if (!a->n_dims != !b->n_dims) {
      snprintf(why, n_why,
               "communicator %u runs %s but its image %u runs %s (group-phases: hierarchical)",
               C->id, a->n_dims ? "per dimension (a grid)" : "one flat ring", D->id,
               b->n_dims ? "per dimension (a grid)" : "one flat ring");
      return 0;
    }
    int same = a->n_dims == b->n_dims;
    for (int j = 0; j < a->n_dims && same; j++)
      same = a->dim[j].phys == b->dim[j].phys && a->dim[j].count == b->dim[j].count &&
             a->dim[j].step == b->dim[j].step;
    if (!same) {
      snprintf(why, n_why,
               "communicator %u's grid is not its image %u's (dimensions, sizes or strides "
               "differ; group-phases: hierarchical)",
               C->id, D->id);
      return 0;
    }
    for (int j = 0; j < a->n_dims; j++) {
      const etsim_coll_grid_dim_t *p = &a->dim[j], *q = &b->dim[j];
      uint32_t r = 0;
      for (uint32_t i = 0; i < C->n; i++) {
        uint32_t x = C->members[i], gx = shift(g, x, 1);
        uint32_t pc = (etsim_topo_coord(t, x, p->phys) - p->c0) / p->step;
        uint32_t pd = (etsim_topo_coord(t, gx, q->phys) - q->c0) / q->step;
        uint32_t ri = (pd + p->count - pc) % p->count;
        if (i == 0) r = ri;
        else if (ri != r) {
          snprintf(why, n_why,
                   "the shift does not rotate communicator %u's rings along dimension %d onto "
                   "communicator %u's (NPU %u to %u; group-phases: hierarchical)",
                   C->id, p->phys, D->id, x, gx);
          return 0;
        }
      }
    }
  }
  return 1;
}

/* E5's second half: NPUs x and y have the same link factors in every
 * dimension (1), or not (0, why names the first dimension that differs). */
static int links_alike(const ctx_t *c, uint32_t x, uint32_t y, char *why, size_t n_why) {
  size_t nd = (size_t)c->topo->ndims;
  for (size_t d = 0; d < nd; d++) {
    size_t a = (size_t)x * nd + d, b = (size_t)y * nd + d;
    if (c->links.bw[a] != c->links.bw[b] || c->links.lat[a] != c->links.lat[b]) {
      snprintf(why, n_why,
               "NPU %u's links in dimension %zu run at bandwidth x%g, latency x%g, NPU %u's at "
               "x%g, x%g (--link-degrade)",
               x, d, c->links.bw[a], c->links.lat[a], y, c->links.bw[b], c->links.lat[b]);
      return 0;
    }
  }
  return 1;
}

/* E1-E6 for one candidate; 1 kept, 0 not (why), 2 not for E6 alone (a
 * reason worth naming first: the phases differ), <0 error. */
static int equivariant(const ctx_t *c, const gen_t *g, int is_dim, char *why, size_t n_why) {
  const etsim_et_set_t *s = c->set;
  size_t ng = c->groups ? c->groups->n : 0;
  uint32_t *gmap = etsim_malloc((ng ? ng : 1) * sizeof *gmap);
  if (!gmap) return ETSIM_ENOMEM;
  group_images(c, g, gmap);
  int ok = 1;
  for (uint32_t x = 0; x < c->n && ok; x++) {
    uint32_t gx = shift(g, x, 1);
    if (c->speed && c->speed[gx] != c->speed[x]) {
      snprintf(why, n_why, "NPU %u computes at speed %g, NPU %u at %g (--npu-speed)", x,
               c->speed[x], gx, c->speed[gx]);
      ok = 0;
      break;
    }
    if (c->links.bw && !links_alike(c, x, gx, why, n_why)) {
      ok = 0;
      break;
    }
    if (s->rank_trace[gx] != s->rank_trace[x]) {
      snprintf(why, n_why, "NPU %u's trace (%s) is not NPU %u's up to communicators and peers", gx,
               etsim_et_set_rank_path(s, gx), x);
      ok = 0;
      break;
    }
    lvec_t a = labels_of(c, x), b = labels_of(c, gx);
    for (uint32_t j = 0; j < a.n && ok; j++) {
      if ((a.v[j].s != NULL) != (b.v[j].s != NULL)) ok = 0;
      else if (a.v[j].s) {
        uint32_t ca = group_of(c, a.v[j].s), cb = group_of(c, b.v[j].s);
        if (ca == NONE || cb == NONE) ok = 0;
        else if (ca == NONE - 1 || cb == NONE - 1) ok = ca == cb;
        else ok = gmap[ca] == cb;
        if (!ok)
          snprintf(why, n_why,
                   "NPU %u's collectives on communicator %s do not map to NPU %u's on %s", x,
                   a.v[j].s, gx, b.v[j].s);
      } else {
        ok = a.v[j].i >= 0 && a.v[j].i < (int64_t)c->n &&
             (int64_t)shift(g, (uint32_t)a.v[j].i, 1) == b.v[j].i;
        if (!ok)
          snprintf(why, n_why, "NPU %u's messages with NPU %lld do not map to NPU %u's with %lld",
                   x, (long long)a.v[j].i, gx, (long long)b.v[j].i);
      }
    }
  }
  int e6 = 0;
  if (ok && c->grid && !grids_map(c, g, gmap, why, n_why)) ok = 0, e6 = 1;
  if (ok && c->world && !is_dim) {
    /* E4: dimension rings onto dimension rings. */
    const etsim_topo_t *t = c->topo;
    for (int d = 0; d < t->ndims && ok; d++) {
      if (t->npus[d] < 2) continue;
      for (uint32_t x = 0; x < c->n && ok; x++)
        if (shift(g, next_in_dim(t, x, d), 1) != next_in_dim(t, shift(g, x, 1), d)) {
          snprintf(why, n_why,
                   "with collectives on all NPUs, the shift must map dimension %d's rings onto "
                   "rings",
                   d);
          ok = 0;
        }
    }
  }
  etsim_free(gmap);
  return ok ? 1 : e6 ? 2 : 0;
}

/* The analytical cost's dependence on a pair: first differing dimension
 * and the hops within it, and under per-NPU link factors the route's
 * (etsim_net_route_factors: the slowest link's bandwidth factor, the sum
 * of the latency factors), which the intermediate NPUs of a Ring route
 * change even when the ends' factors are alike. */
typedef struct cost {
  uint64_t dh;
  double bw, lat;
} cost_t;

static cost_t cost_class(const etsim_topo_t *t, const etsim_net_npu_links_t *f, uint32_t a,
                         uint32_t b) {
  cost_t k = {UINT64_MAX, 0, 0};
  int d = etsim_topo_first_diff_dim(t, a, b);
  if (d < 0) return k;
  k.dh = (uint64_t)d << 32 | etsim_topo_hops(t, d, a, b);
  if (f->bw) etsim_net_route_factors(t, f, a, b, &k.bw, &k.lat);
  return k;
}

static int cost_eq(cost_t x, cost_t y) { return x.dh == y.dh && x.bw == y.bw && x.lat == y.lat; }

/* Whether g keeps the cost of every pair that can exchange messages:
 * neighbours on every communicator's ring (both ways; every pair of a
 * small communicator when direct algorithms run), on every dimension's
 * ring when collectives span all NPUs, and point-to-point peers.  The set
 * of such pairs maps onto itself under the kept shifts (E2-E4), so shifts
 * that each keep all of them generate a group that does. */
static int costs_invariant(const ctx_t *c, const gen_t *g, int direct, char *why, size_t n_why) {
  const etsim_topo_t *t = c->topo;
#define PAIR(a, b)                                                                                 \
  do {                                                                                             \
    uint32_t a_ = (a), b_ = (b);                                                                   \
    if (a_ != b_ && !cost_eq(cost_class(t, &c->links, shift(g, a_, 1), shift(g, b_, 1)),           \
                             cost_class(t, &c->links, a_, b_))) {                                  \
      snprintf(why, n_why, "a message from NPU %u to %u costs differently from one from %u to %u", \
               a_, b_, shift(g, a_, 1), shift(g, b_, 1));                                          \
      return 0;                                                                                    \
    }                                                                                              \
  } while (0)
  for (size_t k = 0; c->groups && k < c->groups->n; k++) {
    const etsim_comm_t *C = &c->groups->g[k];
    if (C->n == c->n) continue; /* runs as the world: below */
    if (c->grid && c->grid[k].n_dims) {
      /* hierarchical phases: one ring per spanned dimension */
      const etsim_coll_grid_t *gr = &c->grid[k];
      for (uint32_t i = 0; i < C->n; i++)
        for (int j = 0; j < gr->n_dims; j++) {
          const etsim_coll_grid_dim_t *dm = &gr->dim[j];
          uint32_t a = C->members[i], st = dm->step * t->stride[dm->phys];
          uint32_t p = (etsim_topo_coord(t, a, dm->phys) - dm->c0) / dm->step;
          uint32_t b = p + 1 < dm->count ? a + st : a - p * st;
          PAIR(a, b);
          PAIR(b, a);
          if (direct && dm->count <= 64)
            for (uint32_t m = 0; m < dm->count; m++) PAIR(a, a - p * st + m * st);
        }
      continue;
    }
    for (uint32_t i = 0; i < C->n; i++) {
      uint32_t a = C->members[i], b = C->members[(i + 1) % C->n];
      PAIR(a, b);
      PAIR(b, a);
      if (direct && C->n <= 64)
        for (uint32_t j = 0; j < C->n; j++) PAIR(a, C->members[j]);
    }
  }
  if (c->world)
    for (uint32_t x = 0; x < c->n; x++)
      for (int d = 0; d < t->ndims; d++) {
        if (t->npus[d] < 2) continue;
        uint32_t y = next_in_dim(t, x, d);
        PAIR(x, y);
        PAIR(y, x);
        if (direct && t->npus[d] <= 64)
          for (uint32_t k = 1; k < t->npus[d]; k++) PAIR(x, y = next_in_dim(t, y, d));
      }
  for (uint32_t x = 0; x < c->n; x++) {
    lvec_t l = labels_of(c, x);
    for (uint32_t j = 0; j < l.n; j++)
      if (!l.v[j].s && l.v[j].i >= 0 && l.v[j].i < (int64_t)c->n) {
        PAIR(x, (uint32_t)l.v[j].i);
        PAIR((uint32_t)l.v[j].i, x);
      }
  }
  return 1;
#undef PAIR
}

static int make_dim_gen(const etsim_topo_t *t, int d, gen_t *g) {
  uint32_t n = t->total, len = t->npus[d], st = t->stride[d];
  g->len = len;
  g->pos = etsim_malloc(n * sizeof *g->pos);
  g->first = etsim_malloc(n * sizeof *g->first);
  g->members = etsim_malloc(n * sizeof *g->members);
  if (!g->pos || !g->first || !g->members) return ETSIM_ENOMEM;
  for (uint32_t x = 0; x < n; x++) {
    uint32_t cx = etsim_topo_coord(t, x, d), base = x - cx * st;
    uint32_t line = base % st + base / (st * len) * st;
    g->pos[x] = cx;
    g->first[x] = line * len;
    g->members[line * len + cx] = x;
  }
  snprintf(g->name, sizeof g->name, "dimension %d (%u NPUs)", d, len);
  return 0;
}

/* A family of groups (fam[k] == f) that partitions the NPUs, as a shift;
 * 0 made, 1 not a partition, <0 error. */
static int make_group_gen(const ctx_t *c, const uint32_t *fam, uint32_t f, gen_t *g) {
  const etsim_comm_groups_t *gs = c->groups;
  uint32_t n = c->n, size = 0;
  g->pos = etsim_malloc(n * sizeof *g->pos);
  g->first = etsim_malloc(n * sizeof *g->first);
  g->members = etsim_malloc(n * sizeof *g->members);
  if (!g->pos || !g->first || !g->members) return ETSIM_ENOMEM;
  memset(g->pos, 0xff, n * sizeof *g->pos);
  uint32_t off = 0, lo = NONE, hi = 0;
  for (size_t k = 0; k < gs->n; k++) {
    const etsim_comm_t *C = &gs->g[k];
    if (fam[k] != f) continue;
    size = C->n;
    for (uint32_t m = 0; m < size; m++) {
      uint32_t x = C->members[m];
      if (g->pos[x] != NONE || off + m >= n) return 1;
      g->pos[x] = m;
      g->first[x] = off;
      g->members[off + m] = x;
    }
    off += size;
    if (C->id < lo) lo = C->id;
    if (C->id > hi) hi = C->id;
  }
  if (off != n || size < 2) return 1;
  g->len = size;
  snprintf(g->name, sizeof g->name, "communicators %u-%u (%u NPUs each)", lo, hi, size);
  return 0;
}

/* The shift moving every NPU one step along dimension j of its group's
 * grid in family f (hierarchical phases: the rings its collectives run
 * on).  0 made, 1 not applicable (a group is no grid, or the rings differ
 * in size or dimension), <0 error. */
static int make_grid_gen(const ctx_t *c, const uint32_t *fam, uint32_t f, int j, gen_t *g) {
  const etsim_comm_groups_t *gs = c->groups;
  const etsim_topo_t *t = c->topo;
  uint32_t n = c->n, len = 0, off = 0, lo = NONE, hi = 0;
  int phys = -1;
  g->pos = etsim_malloc(n * sizeof *g->pos);
  g->first = etsim_malloc(n * sizeof *g->first);
  g->members = etsim_malloc(n * sizeof *g->members);
  if (!g->pos || !g->first || !g->members) return ETSIM_ENOMEM;
  memset(g->pos, 0xff, n * sizeof *g->pos);
  for (size_t k = 0; k < gs->n; k++) {
    const etsim_comm_t *C = &gs->g[k];
    if (fam[k] != f) continue;
    if (C->n == n || j >= c->grid[k].n_dims) return 1;
    const etsim_coll_grid_dim_t *dm = &c->grid[k].dim[j];
    if ((len && dm->count != len) || (phys >= 0 && dm->phys != phys)) return 1;
    len = dm->count;
    phys = dm->phys;
    uint32_t st = dm->step * t->stride[phys];
    for (uint32_t i = 0; i < C->n; i++) {
      uint32_t x = C->members[i];
      if (etsim_topo_coord(t, x, phys) != dm->c0) continue; /* not a ring's start */
      for (uint32_t m = 0; m < len; m++) {
        uint32_t y = x + m * st;
        if (off + m >= n || g->pos[y] != NONE) return 1;
        g->pos[y] = m;
        g->first[y] = off;
        g->members[off + m] = y;
      }
      off += len;
    }
    if (C->id < lo) lo = C->id;
    if (C->id > hi) hi = C->id;
  }
  if (off != n || len < 2) return 1;
  g->len = len;
  snprintf(g->name, sizeof g->name, "communicators %u-%u along dimension %d (%u NPUs)", lo, hi,
           phys, len);
  return 0;
}

/* Sort the group file into families: groups of one size, each joining the
 * first family of its size none of whose groups shares an NPU with it (so
 * tensor- and data-parallel groups of equal size stay apart).  fam[k] is
 * group k's family; returns the number of families, or <0. */
static int group_families(const ctx_t *c, uint32_t *fam) {
  const etsim_comm_groups_t *gs = c->groups;
  uint32_t nf = 0, cap = 0;
  uint32_t *fsize = NULL;
  uint8_t **used = NULL; /* per family: NPU -> in it */
  int rc = 0;
  for (size_t k = 0; k < gs->n && !rc; k++) {
    const etsim_comm_t *C = &gs->g[k];
    uint32_t f;
    for (f = 0; f < nf; f++) {
      if (fsize[f] != C->n) continue;
      uint32_t m;
      for (m = 0; m < C->n && !used[f][C->members[m]]; m++) {}
      if (m == C->n) break;
    }
    if (f == nf) {
      if (nf == 64) { /* enough candidates: the rest stay out */
        fam[k] = NONE;
        continue;
      }
      size_t c1 = cap, c2 = cap;
      if (etsim_grow((void **)&fsize, &c1, nf + 1, sizeof *fsize) ||
          etsim_grow((void **)&used, &c2, nf + 1, sizeof *used) ||
          !(used[nf] = etsim_calloc(c->n, 1))) {
        rc = ETSIM_ENOMEM;
        break;
      }
      cap = (uint32_t)(c1 < c2 ? c1 : c2);
      fsize[nf++] = C->n;
    }
    for (uint32_t m = 0; m < C->n; m++) used[f][C->members[m]] = 1;
    fam[k] = f;
  }
  for (uint32_t f = 0; f < nf; f++) etsim_free(used[f]);
  etsim_free(used);
  etsim_free(fsize);
  return rc ? rc : (int)nf;
}

static int same_perm(const gen_t *a, const gen_t *b, uint32_t n) {
  if (a->len != b->len) return 0;
  for (uint32_t x = 0; x < n; x++)
    if (shift(a, x, 1) != shift(b, x, 1)) return 0;
  return 1;
}

/* Add to cand[*nc..cap) the group candidates: one per family of groups
 * that partitions the NPUs (in file order), and under hierarchical phases
 * a grid family's per-dimension rotations (whatever the file's order);
 * duplicates of earlier candidates are dropped.  0 or <0. */
static int group_candidates(const ctx_t *c, gen_t *cand, int *is_dim, int cap, int *nc) {
  uint32_t *fam = etsim_malloc(c->groups->n * sizeof *fam);
  int nfam = fam ? group_families(c, fam) : ETSIM_ENOMEM, rc = nfam < 0 ? nfam : 0;
  for (int f = 0; f < nfam && *nc < cap && !rc; f++)
    for (int j = -1; j < ETSIM_TOPO_MAX_DIMS && *nc < cap; j++) {
      if (j >= 0 && !c->grid) break;
      gen_t *g = &cand[*nc];
      is_dim[*nc] = 0;
      int m =
          j < 0 ? make_group_gen(c, fam, (uint32_t)f, g) : make_grid_gen(c, fam, (uint32_t)f, j, g);
      if (m < 0) {
        gen_free(g);
        rc = m;
        break;
      }
      int dup = m == 1;
      for (int i = 0; i < *nc && !dup; i++)
        if (same_perm(&cand[i], g, c->n)) dup = 1;
      if (dup) gen_free(g);
      else (*nc)++;
      if (m == 1 && j >= 0) break; /* no grid dimension j */
    }
  etsim_free(fam);
  return rc;
}

/* Commute and keep each other's positions. */
static int compatible(const gen_t *a, const gen_t *b, uint32_t n) {
  for (uint32_t x = 0; x < n; x++) {
    uint32_t ax = shift(a, x, 1), bx = shift(b, x, 1);
    if (shift(a, bx, 1) != shift(b, ax, 1) || a->pos[bx] != a->pos[x] || b->pos[ax] != b->pos[x])
      return 0;
  }
  return 1;
}

static uint32_t uf_find(uint32_t *p, uint32_t x) {
  while (p[x] != x) x = p[x] = p[p[x]];
  return x;
}

void etsim_sim__sym_free(sim_sym_t *s) {
  for (uint32_t i = 0; i < s->n_gen; i++) {
    etsim_free(s->pos[i]);
    etsim_free(s->first[i]);
    etsim_free(s->members[i]);
  }
  etsim_free(s->rep);
  etsim_free(s->reps);
  etsim_free(s->tag_id);
  memset(s, 0, sizeof *s);
}

/* Orbits of communicators under the kept shifts; tag ids = the smallest
 * id of each orbit.  0, 1 when an orbit has two groups sharing an NPU
 * (tags would clash), or <0. */
static int group_orbits(const ctx_t *c, gen_t *gens, uint32_t ng, sim_sym_t *out, char *why,
                        size_t n_why) {
  const etsim_comm_groups_t *gs = c->groups;
  size_t n = gs ? gs->n : 0;
  out->tag_id = etsim_malloc((n ? n : 1) * sizeof *out->tag_id);
  uint32_t *par = etsim_malloc((n ? n : 1) * sizeof *par);
  uint32_t *gmap = etsim_malloc((n ? n : 1) * sizeof *gmap);
  int rc = 0;
  if (!out->tag_id || !par || !gmap) {
    rc = ETSIM_ENOMEM;
    goto done;
  }
  for (size_t k = 0; k < n; k++) par[k] = (uint32_t)k;
  for (uint32_t i = 0; i < ng; i++) {
    group_images(c, &gens[i], gmap);
    for (size_t k = 0; k < n; k++)
      if (gmap[k] != NONE) {
        uint32_t a = uf_find(par, (uint32_t)k), b = uf_find(par, gmap[k]);
        if (a != b) par[a < b ? b : a] = a < b ? a : b;
      }
  }
  /* the smallest id of each orbit (par is reused: root -> that id) */
  for (size_t k = 0; k < n; k++) out->tag_id[k] = NONE;
  for (size_t k = 0; k < n; k++) {
    uint32_t r = uf_find(par, (uint32_t)k);
    if (gs->g[k].id < out->tag_id[r]) out->tag_id[r] = gs->g[k].id;
  }
  for (size_t k = 0; k < n; k++) gmap[k] = out->tag_id[uf_find(par, (uint32_t)k)];
  memcpy(out->tag_id, gmap, n * sizeof *gmap);
  for (uint32_t x = 0; x < c->n && !rc; x++)
    for (uint32_t q = c->npu_off[x]; q < c->npu_off[x + 1]; q++)
      for (uint32_t q2 = q + 1; q2 < c->npu_off[x + 1]; q2++)
        if (uf_find(par, c->npu_grp[q]) == uf_find(par, c->npu_grp[q2])) {
          snprintf(why, n_why, "NPU %u is in communicators %u and %u, which map onto each other", x,
                   gs->g[c->npu_grp[q]].id, gs->g[c->npu_grp[q2]].id);
          rc = 1;
          break;
        }
done:
  etsim_free(par);
  etsim_free(gmap);
  return rc;
}

/* A reducing switch waits for every member of its group: the reduced run
 * can stand in only where a representative's group is one class (the
 * others' contributions are images of its own, arriving with it) or all
 * representatives (coll/innet.c).  1 when that holds on every in-network
 * dimension, else 0 with why set. */
static int innet_groups_ok(const etsim_topo_t *topo, const etsim_sys_config_t *sys,
                           const sim_sym_t *out, char *why, size_t n_why) {
  for (int d = 0; d < topo->ndims; d++) {
    if (!sys->in_network[d] || topo->npus[d] < 2) continue;
    for (uint32_t k = 0; k < out->n_reps; k++) {
      uint32_t x = out->reps[k], st = topo->stride[d];
      uint32_t base = x - etsim_topo_coord(topo, x, d) * st, one = 1, all = 1;
      for (uint32_t j = 0; j < topo->npus[d]; j++) {
        uint32_t m = base + j * st;
        one &= out->rep[m] == x;
        all &= out->rep[m] == m;
      }
      if (!one && !all) {
        snprintf(why, n_why,
                 "in-network collectives on dimension %d: the switch of NPU %u's group would "
                 "wait for NPUs of other classes (%s)",
                 d, x, out->desc);
        return 0;
      }
    }
  }
  return 1;
}

/* Hierarchical phases change only communicators smaller than the world
 * (coll/ext.c); without communicator groups every collective is a world
 * one and runs as with flat.  With groups: each group's grid (E6), or
 * NULL when phases are flat; <0 error. */
static int hierarchical_groups(ctx_t *c, const etsim_sys_config_t *sys) {
  if (!sys->group_hierarchical || !c->groups) return 0;
  c->grid = etsim_calloc(c->groups->n, sizeof *c->grid);
  if (!c->grid) return ETSIM_ENOMEM;
  for (size_t k = 0; k < c->groups->n; k++)
    if (c->groups->g[k].n != c->n) etsim_coll_comm_grid(c->topo, &c->groups->g[k], &c->grid[k]);
  return 0;
}

#define MAX_CAND (ETSIM_TOPO_MAX_DIMS + 64 * 3)

/* find_symmetry, step 1: what rules a reduction out before any trace is
 * read, cheapest first.  1 when one may apply, else 0 with why. */
static int may_reduce(const etsim_topo_t *topo, const etsim_sys_config_t *sys,
                      const etsim_sim_opts_t *opts, char *why, size_t n_why) {
#define NO(...) (snprintf(why, n_why, __VA_ARGS__), 0)
  if (topo->total < 2) return NO("one NPU");
  const char *be = opts->backend ? opts->backend : "analytical";
  if (strcmp(be, "analytical") != 0 && strcmp(be, "congestion-unaware") != 0)
    return NO("the %s backend has shared state; only the analytical one is stateless", be);
  for (int t = 0; t < ETSIM_COP_N; t++)
    if (sys->custom[t]) return NO("custom %s collective", etsim_coll_op_name(t));
  for (int t = 0; t < ETSIM_COP_N; t++)
    for (int d = 0; d < sys->n_impl[t]; d++)
      if (sys->impl[t][d].kind != ETSIM_ALGO_RING && sys->impl[t][d].kind != ETSIM_ALGO_DIRECT)
        /* halving-doubling partners and trees are not invariant under shifts */
        return NO("%s uses %s", etsim_coll_op_name(t), etsim_algo_name(sys->impl[t][d].kind));
  if (opts->memory && opts->memory->type != ETSIM_MEM_NONE &&
      opts->memory->type != ETSIM_MEM_PER_NPU)
    return NO("remote memory shared between NPUs");
  if (opts->fail_set) return NO("--fail singles NPU %u out", opts->fail_npu);
  return 1;
#undef NO
}

/* find_symmetry, step 2: of the nc candidates, keep the equivariant ones,
 * longest cycles first, if compatible with those kept before; a kept one
 * moves from cand to kept[*nk].  0 (with why set when none is kept) or <0. */
static int keep_generators(const ctx_t *c, const etsim_sys_config_t *sys, gen_t *cand,
                           const int *is_dim, int nc, gen_t *kept, uint32_t *nk, char *why,
                           size_t n_why) {
  int order[MAX_CAND];
  for (int k = 0; k < nc; k++) order[k] = k;
  for (int a = 1; a < nc; a++)
    for (int b = a; b > 0 && cand[order[b]].len > cand[order[b - 1]].len; b--) {
      int t = order[b];
      order[b] = order[b - 1];
      order[b - 1] = t;
    }
  char first_why[320] = "";
  int e6_named = 0;
  int direct = 0;
  for (int t = 0; t < ETSIM_COP_N; t++)
    for (int d = 0; d < sys->n_impl[t]; d++) direct |= sys->impl[t][d].kind == ETSIM_ALGO_DIRECT;
  for (int a = 0; a < nc && *nk < SYM_MAX_GEN; a++) {
    gen_t *g = &cand[order[a]];
    char w[200];
    int e = equivariant(c, g, is_dim[order[a]], w, sizeof w);
    if (e < 0) return e;
    if (e == 2) { /* E6: the summary names the first such reason */
      if (!e6_named) snprintf(first_why, sizeof first_why, "%s: %s", g->name, w);
      e6_named = 1;
      continue;
    }
    if (e && !is_dim[order[a]]) e = costs_invariant(c, g, direct, w, sizeof w);
    if (!e) {
      if (!first_why[0]) snprintf(first_why, sizeof first_why, "%s: %s", g->name, w);
      continue;
    }
    int ok = 1;
    for (uint32_t k = 0; k < *nk && ok; k++) ok = compatible(&kept[k], g, c->n);
    if (!ok) continue;
    kept[(*nk)++] = *g;
    memset(g, 0, sizeof *g);
  }
  if (!*nk)
    snprintf(
        why, n_why,
        "no symmetry of the network and the communicators maps the traces onto each other (%s)",
        first_why[0] ? first_why : "no candidate");
  return 0;
}

/* find_symmetry, step 3: the group's order and name, and each NPU's class
 * representative (the image of x under the kept generators' canonical
 * powers).  0 or ETSIM_ENOMEM. */
static int name_classes(const gen_t *kept, uint32_t nk, uint32_t n, sim_sym_t *out) {
  out->rep = etsim_malloc(n * sizeof *out->rep);
  if (!out->rep) return ETSIM_ENOMEM;
  out->order = 1;
  size_t len = 0;
  for (uint32_t i = 0; i < nk; i++) {
    out->order *= kept[i].len;
    len += (size_t)snprintf(out->desc + len, len < sizeof out->desc ? sizeof out->desc - len : 0,
                            "%s%s", i ? " x " : "", kept[i].name);
    if (len >= sizeof out->desc) len = sizeof out->desc - 1;
  }
  for (uint32_t x = 0; x < n; x++) {
    uint32_t r = x;
    for (uint32_t i = 0; i < nk; i++) r = kept[i].members[kept[i].first[r]];
    out->rep[x] = r;
    if (r == x) out->n_reps++;
  }
  out->reps = etsim_malloc((out->n_reps ? out->n_reps : 1) * sizeof *out->reps);
  if (!out->reps) return ETSIM_ENOMEM;
  for (uint32_t x = 0, k = 0; x < n; x++)
    if (out->rep[x] == x) out->reps[k++] = x;
  return 0;
}

/* find_symmetry, step 4: the kept generators' arrays change owner (kept
 * is left zeroed) and the view the collective layer reads is built. */
static void adopt_generators(sim_sym_t *out, gen_t *kept, uint32_t nk) {
  out->n_gen = nk;
  for (uint32_t i = 0; i < nk; i++) {
    out->len[i] = kept[i].len;
    out->pos[i] = kept[i].pos;
    out->first[i] = kept[i].first;
    out->members[i] = kept[i].members;
    memset(&kept[i], 0, sizeof kept[i]);
  }
  out->cs = (etsim_coll_symmetry_t){out->n_gen,
                                    out->len,
                                    (const uint32_t *const *)out->pos,
                                    (const uint32_t *const *)out->first,
                                    (const uint32_t *const *)out->members,
                                    out->rep};
}

/* What find_symmetry's context owns. */
static void ctx_free(ctx_t *c, const etsim_et_set_t *set) {
  for (size_t k = 0; c->tvals && k < set->n_traces; k++) etsim_free(c->tvals[k]);
  etsim_free(c->tvals);
  etsim_free(c->tn);
  etsim_free(c->npu_off);
  etsim_free(c->npu_grp);
  etsim_free(c->npu_gpos);
  etsim_free(c->grid);
  etsim_u64map_free(&c->gid);
  etsim_intern_free(&c->strs);
}

int etsim_sim__find_symmetry(const etsim_et_set_t *set, const etsim_topo_t *topo,
                             const etsim_sys_config_t *sys, const etsim_sim_opts_t *opts,
                             sim_sym_t *out, char *why, size_t n_why) {
  memset(out, 0, sizeof *out);
  uint32_t n = topo->total;
  if (!may_reduce(topo, sys, opts, why, n_why)) return 0;
  ctx_t c;
  memset(&c, 0, sizeof c);
  c.set = set;
  c.topo = topo;
  c.groups = opts->groups && opts->groups->n ? opts->groups : NULL;
  c.n = n;
  c.speed = opts->npu_speed;
  if (opts->net) c.links = opts->net->npu_links;
  etsim_u64map_init(&c.gid);
  gen_t cand[MAX_CAND];
  int nc = 0, is_dim[MAX_CAND];
  memset(cand, 0, sizeof cand);
  gen_t kept[SYM_MAX_GEN];
  uint32_t nk = 0;
  int rc = ETSIM_ENOMEM;
  if (etsim_intern_init(&c.strs)) goto done;
  if ((rc = index_groups(&c))) goto done;
  if ((rc = hierarchical_groups(&c, sys))) goto done;
  rc = scan_traces(&c, sys->rooted_network, why, n_why);
  if (rc) {
    if (rc == 1) rc = 0;
    goto done;
  }
  for (int d = 0; d < topo->ndims; d++) {
    if (topo->npus[d] < 2) continue;
    is_dim[nc] = 1;
    if ((rc = make_dim_gen(topo, d, &cand[nc++]))) goto done;
  }
  if (c.groups && (rc = group_candidates(&c, cand, is_dim, MAX_CAND, &nc))) goto done;
  if ((rc = keep_generators(&c, sys, cand, is_dim, nc, kept, &nk, why, n_why)) || !nk) goto done;
  if ((rc = group_orbits(&c, kept, nk, out, why, n_why))) {
    if (rc == 1) rc = 0;
    etsim_free(out->tag_id);
    out->tag_id = NULL;
    goto done;
  }
  if ((rc = name_classes(kept, nk, n, out))) goto done;
  if (!innet_groups_ok(topo, sys, out, why, n_why)) goto done; /* rc is 0: no reduction */
  if ((uint64_t)out->n_reps * out->order != n) {
    rc = ETSIM_EINTERNAL;
    goto done;
  }
  adopt_generators(out, kept, nk);
  out->links = c.links;
  nk = 0;
  rc = 1;
done:
  if (rc != 1) {
    etsim_free(out->rep);
    etsim_free(out->reps);
    etsim_free(out->tag_id);
    out->rep = out->reps = out->tag_id = NULL;
  }
  for (int k = 0; k < nc; k++) gen_free(&cand[k]);
  for (uint32_t k = 0; k < nk; k++) gen_free(&kept[k]);
  ctx_free(&c, set);
  return rc;
}
#undef MAX_CAND

int etsim_sim__check_costs(const sim_sym_t *s, const etsim_topo_t *topo,
                           const etsim_u64map_t *pairs, char *why, size_t n_why) {
  uint32_t k[SYM_MAX_GEN];
  for (size_t i = 0; i < pairs->cap; i++) {
    if (!pairs->vals[i]) continue;
    uint32_t a = (uint32_t)(pairs->keys[i] >> 32), b = (uint32_t)pairs->keys[i];
    cost_t want = cost_class(topo, &s->links, a, b);
    /* every element of G: odometer over the generators' powers */
    memset(k, 0, sizeof k);
    for (;;) {
      uint32_t ga = a, gb = b;
      for (uint32_t g = 0; g < s->n_gen; g++) {
        uint32_t n = s->len[g];
        ga = s->members[g][s->first[g][ga] + (s->pos[g][ga] + k[g]) % n];
        gb = s->members[g][s->first[g][gb] + (s->pos[g][gb] + k[g]) % n];
      }
      if (!cost_eq(cost_class(topo, &s->links, ga, gb), want)) {
        snprintf(why, n_why,
                 "a message from NPU %u to %u costs differently from its image from %u to %u "
                 "(the shifts are not symmetries of the network)",
                 a, b, ga, gb);
        return 0;
      }
      uint32_t g = 0;
      while (g < s->n_gen && ++k[g] == s->len[g]) k[g++] = 0;
      if (g == s->n_gen) break;
    }
  }
  return 1;
}
