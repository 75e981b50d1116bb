/*
 * retarget.c — change the data-parallel degree (or the NPU count) of a
 * rank set.
 *
 * Nothing in a Chakra trace says "data parallel", so the replicas are
 * inferred from the communicators.  A layout is a factoring of the n ranks
 * as rank = i + I·(j + d·o): i an index inside a replica block (tensor,
 * sequence, expert parallel), j the replica (0..d-1), o an outer index
 * (pipeline stages) — the order Megatron and etsim's generator use.  A
 * layout fits when
 *   - every communicator a collective uses either stays in one replica
 *     (all members share j) or spans the replicas completely (for each
 *     (i, o) it touches, it holds that position in all d replicas);
 *   - sends and receives stay inside a replica;
 *   - ranks at the same (i, o) in different replicas run the same trace
 *     up to communicator names and peers (compared by a hash of every
 *     node's type, name, duration, sizes and dependencies);
 *   - collectives over spanning communicators are ones whose per-rank size
 *     a degree change can re-derive: all-reduce, reduce-scatter, reduce,
 *     broadcast, barrier keep their size (each rank's buffer), an
 *     all-gather's comm_size (each rank's input, as ASTRA-sim defines it)
 *     is a fixed whole divided by the group size, as ZeRO's parameters are.
 *     An all-to-all or gather over replicas depends on how the work is
 *     split, which the trace does not say: refused.
 * The layout with the most replicas that fits is taken; none fitting is an
 * error that gives the reason the plain data-parallel reading failed.
 *
 * The new set keeps every replica's work (weak scaling: the global batch
 * grows with the degree).  Replica j' of the new set runs old replica
 * j' mod d; a group inside a replica gets one copy per new replica, a
 * spanning group one group over all new replicas; ids are given in the
 * order of the old ids (copies of one group together), which is the order
 * etsim's generator uses, so retargeting its d-replica set gives its
 * d'-replica set.  Compute nodes named by --dp-sharded (the optimizer step
 * of ZeRO, for instance) have their work multiplied by d / d'.
 */
#include "edit_int.h"

#include <stdio.h>
#include <string.h>

/* What a file says that the inference needs. */
typedef struct {
  uint64_t sig;
  uint32_t *pg;      /* group ids used by collectives */
  uint16_t *pgtypes; /* per pg: bit per comm_type */
  uint64_t *pgcount; /* per pg: collectives */
  uint64_t world_count;
  size_t n_pg, cap_pg;
  uint16_t world_types; /* world collectives' comm_types */
  int32_t *peers;
  size_t n_peers, cap_peers;
  char bad_pg[64];
  uint64_t bad_node;
  int have_bad;
} facts_t;

static void facts_free(facts_t *f) {
  etsim_free(f->pg);
  etsim_free(f->pgtypes);
  etsim_free(f->pgcount);
  etsim_free(f->peers);
}

static uint64_t mix(uint64_t h, uint64_t v) {
  return etsim_hash_u64(h ^ (v + 0x9e3779b97f4a7c15ULL));
}

static int attr_i(const etsim_et_node_t *v, const char *name, int64_t *out) {
  const etsim_attr_t *a = etsim_et_node_attr(v, name);
  return a && etsim_attr_as_int(a, out) == 0;
}

static int scan_facts(const char *path, facts_t *f, etsim_error_t *err) {
  memset(f, 0, sizeof *f);
  etsim_et_reader_t *r;
  int rc = etsim_et_reader_open(&r, path, 0, err);
  if (rc) return rc;
  const etsim_et_node_t *v;
  uint64_t h = 0;
  while ((rc = etsim_et_reader_next(r, &v, err)) == 1) {
    int64_t x;
    h = mix(h, v->id);
    h = mix(h, (uint64_t)v->type);
    h = mix(h, etsim_hash_bytes(v->name, strlen(v->name)));
    h = mix(h, v->duration_micros);
    for (size_t i = 0; i < v->n_data_deps; i++) h = mix(h, v->data_deps[i]);
    for (size_t i = 0; i < v->n_ctrl_deps; i++) h = mix(h, ~v->ctrl_deps[i]);
    static const char *const sized[] = {"comm_type",   "comm_size",   "num_ops",
                                        "tensor_size", "duration_ns", "comm_tag"};
    for (size_t k = 0; k < sizeof sized / sizeof sized[0]; k++)
      if (attr_i(v, sized[k], &x)) h = mix(h, (uint64_t)x + k);
    if (v->type == ETSIM_ET_COMM_COLL_NODE) {
      int64_t ct = -1;
      attr_i(v, "comm_type", &ct);
      uint16_t bit = ct >= 0 && ct < ETSIM_COLL_TYPE_COUNT ? (uint16_t)(1u << ct) : 0;
      const etsim_attr_t *a = etsim_et_node_attr(v, "pg_name");
      const char *pg = a && a->kind == ETSIM_ATTR_STRING ? a->v.s : NULL;
      uint32_t id;
      if (etsim_edit__pg_world(pg)) {
        f->world_types |= bit;
        f->world_count++;
      } else if (etsim_edit__pg_id(pg, &id)) {
        size_t k = 0;
        while (k < f->n_pg && f->pg[k] != id) k++;
        if (k == f->n_pg) {
          size_t c2 = f->cap_pg, c3 = f->cap_pg;
          if (etsim_grow((void **)&f->pgtypes, &c2, k + 1, sizeof *f->pgtypes) ||
              etsim_grow((void **)&f->pgcount, &c3, k + 1, sizeof *f->pgcount) ||
              etsim_grow((void **)&f->pg, &f->cap_pg, k + 1, sizeof *f->pg)) {
            rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
            break;
          }
          f->pg[k] = id;
          f->pgtypes[k] = 0;
          f->pgcount[k] = 0;
          f->n_pg++;
        }
        f->pgtypes[k] |= bit;
        f->pgcount[k]++;
      } else if (!f->have_bad) {
        f->have_bad = 1;
        snprintf(f->bad_pg, sizeof f->bad_pg, "%s", pg);
        f->bad_node = v->id;
      }
    } else if (v->type == ETSIM_ET_COMM_SEND_NODE || v->type == ETSIM_ET_COMM_RECV_NODE) {
      static const char *const pn[] = {"comm_src", "comm_dst"};
      for (int k = 0; k < 2; k++)
        if (attr_i(v, pn[k], &x)) {
          if (etsim_grow((void **)&f->peers, &f->cap_peers, f->n_peers + 1, sizeof *f->peers)) {
            rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
            break;
          }
          f->peers[f->n_peers++] = (int32_t)x;
        }
      if (rc < 0) break;
    }
  }
  etsim_et_reader_close(r);
  f->sig = h;
  return rc < 0 ? rc : 0;
}

/* Collectives whose size a degree change can re-derive. */
#define SPAN_OK                                                                               \
  ((1u << ETSIM_COLL_ALL_REDUCE) | (1u << ETSIM_COLL_REDUCE_SCATTER) |                        \
   (1u << ETSIM_COLL_ALL_GATHER) | (1u << ETSIM_COLL_REDUCE) | (1u << ETSIM_COLL_BROADCAST) | \
   (1u << ETSIM_COLL_BARRIER))

typedef struct {
  size_t n, inner, d, outer;
  const ed_groups_t *g;
  facts_t *facts;
  const uint32_t *rank_file;
  uint8_t *used; /* per group index */
  long *rep;     /* per group: replica, or -1 spanning, -2 unfit */
  char why[512];
} fit_t;

static size_t j_of(const fit_t *F, size_t r) { return (r / F->inner) % F->d; }
static size_t proj(const fit_t *F, size_t r) {
  return (r % F->inner) + F->inner * (r / (F->inner * F->d));
}

/* Does the layout (inner, d) fit?  On failure F->why says why. */
static int fits(fit_t *F, uint32_t *cnt) {
  const ed_groups_t *g = F->g;
  for (size_t k = 0; k < g->n; k++) {
    size_t b = g->off[k], e = g->off[k + 1];
    size_t j0 = b < e ? j_of(F, g->mem[b]) : 0;
    int same = 1;
    for (size_t q = b; q < e && same; q++) same = j_of(F, g->mem[q]) == j0;
    if (same) {
      F->rep[k] = (long)j0;
      continue;
    }
    /* Spanning: every position it touches, in all d replicas. */
    size_t np = F->n / F->d;
    memset(cnt, 0, np * sizeof *cnt);
    for (size_t q = b; q < e; q++) cnt[proj(F, g->mem[q])]++;
    int ok = 1;
    for (size_t q = b; q < e && ok; q++) ok = cnt[proj(F, g->mem[q])] == F->d;
    if (ok) {
      F->rep[k] = -1;
      continue;
    }
    F->rep[k] = -2;
    if (F->used[k]) {
      snprintf(F->why, sizeof F->why,
               "communicator %u (%zu ranks) neither stays inside one replica nor spans all %zu "
               "of them",
               g->id[k], e - b, F->d);
      return 0;
    }
  }
  for (size_t r = 0; r < F->n; r++) {
    const facts_t *f = &F->facts[F->rank_file[r]];
    for (size_t q = 0; q < f->n_peers; q++) {
      int32_t peer = f->peers[q];
      if (peer < 0 || (size_t)peer >= F->n) continue;
      if (j_of(F, (size_t)peer) != j_of(F, r)) {
        snprintf(F->why, sizeof F->why,
                 "rank %zu sends to or receives from rank %d, in another "
                 "replica",
                 r, peer);
        return 0;
      }
    }
    /* Replicas run the same trace. */
    size_t r0 = (r % F->inner) + F->inner * (F->d * (r / (F->inner * F->d)));
    if (F->facts[F->rank_file[r0]].sig != f->sig) {
      snprintf(F->why, sizeof F->why,
               "ranks %zu and %zu would be replicas but run different traces", r0, r);
      return 0;
    }
  }
  return 1;
}

/* Every communicator a collective uses must be in the group file and hold
 * the ranks that use it; marks F->used. */
static int check_usage(fit_t *F, char **paths, ed_plan_t *p, const char *what, etsim_error_t *err) {
  for (size_t r = 0; r < F->n; r++) {
    const facts_t *f = &F->facts[F->rank_file[r]];
    const char *path = paths[F->rank_file[r]];
    if (f->have_bad)
      return etsim_error_set(err, ETSIM_EINVAL,
                             "%s: node %llu: %s: communicator \"%s\" is not a group id, so the "
                             "parallelism cannot be inferred",
                             path, (unsigned long long)f->bad_node, what, f->bad_pg);
    for (size_t q = 0; q < f->n_pg; q++) {
      long g = etsim_edit__groups_find(&p->groups, f->pg[q]);
      if (g < 0)
        return etsim_error_set(err, ETSIM_EINVAL,
                               "%s: %s: communicator %u is not in the communicator-group file%s, "
                               "so the parallelism cannot be inferred",
                               path, what, f->pg[q],
                               p->had_groups ? "" : " (none found: give --comm-group)");
      F->used[g] = 1;
      int member = 0;
      for (size_t m = p->groups.off[g]; m < p->groups.off[g + 1] && !member; m++)
        member = p->groups.mem[m] == r;
      if (!member)
        return etsim_error_set(err, ETSIM_EINVAL,
                               "%s: %s: rank %zu uses communicator %u but is not one of its ranks",
                               path, what, r, f->pg[q]);
    }
  }
  return 0;
}

/* Collectives over the replicas, as a layout reads them. */
static uint64_t spanning_collectives(const fit_t *F) {
  uint64_t c = 0;
  for (size_t r = 0; r < F->n; r++) {
    const facts_t *f = &F->facts[F->rank_file[r]];
    c += f->world_count;
    for (size_t q = 0; q < f->n_pg; q++) {
      long g = etsim_edit__groups_find(F->g, f->pg[q]);
      if (g >= 0 && F->rep[g] == -1) c += f->pgcount[q];
    }
  }
  return c;
}

/* The layout with the most replicas that fits (F set to it): 1, or 0 with
 * `why` saying why the first layout tried failed. */
static int choose_layout(fit_t *F, uint32_t *cnt, size_t stride, etsim_edit_report_t *rep,
                         const char *set, char *why, size_t wn) {
  size_t n = F->n;
  why[0] = 0;
  for (size_t d = n; d >= 1; d--) {
    if (n % d) continue;
    /* Every layout with d replicas that fits; when several do (tensor and
     * data parallel groups of one size look alike), the data-parallel one
     * is taken to be the one whose spanning communicators carry the fewest
     * collectives: gradients are synchronised once an iteration, tensor,
     * sequence and expert parallel traffic flows every micro-batch.  On a
     * tie the replicas are the outermost blocks that fit (Megatron's
     * order). */
    size_t best = 0, n_fit = 0;
    uint64_t best_cnt = UINT64_MAX;
    for (size_t in = 1; in <= n / d; in++) {
      if ((n / d) % in || (stride && in != stride)) continue;
      F->d = d;
      F->inner = in;
      F->outer = n / (d * in);
      if (!fits(F, cnt)) {
        if (!why[0]) snprintf(why, wn, "%s", F->why);
        continue;
      }
      uint64_t c = spanning_collectives(F);
      n_fit++;
      if (c <= best_cnt) {
        best_cnt = c;
        best = in;
      }
    }
    if (!n_fit) continue;
    F->d = d;
    F->inner = best;
    F->outer = n / (d * best);
    if (n_fit > 1)
      etsim_edit__note(rep,
                       "%s: %zu ways to read the ranks as %zu replicas fit; the one with the "
                       "fewest collectives across replicas (replicas %zu ranks apart) is taken "
                       "(--dp-stride chooses another)",
                       set, n_fit, d, best);
    return fits(F, cnt);
  }
  return 0;
}

/* Member `r` of an old group, in new replica jn. */
static uint32_t moved(const fit_t *F, size_t r, size_t jn, size_t d_new) {
  size_t in = r % F->inner, o = r / (F->inner * F->d);
  return (uint32_t)(in + F->inner * (jn + d_new * o));
}

/* The new groups, in the order of the old ids (copies of one group
 * together, each new replica in turn), into *ng; dp's tables say where
 * each old group went.  *dropped counts unused groups that fit no layout. */
static int derive_groups(const fit_t *F, ed_dp_t *dp, const ed_groups_t *old, ed_groups_t *ng,
                         size_t *dropped) {
  size_t d_new = dp->d_new, ng_old = old->n;
  size_t n_new = F->inner * F->outer * d_new;
  int rc = ETSIM_ENOMEM;
  size_t *ord = etsim_edit__groups_by_id(old);
  uint32_t *mem = etsim_malloc((n_new + 1) * sizeof *mem);
  etsim_u64map_t cls_by;
  etsim_u64map_init(&cls_by);
  dp->cls = etsim_malloc((ng_old + 1) * sizeof *dp->cls);
  dp->rep = etsim_malloc((ng_old + 1) * sizeof *dp->rep);
  dp->cls_base = etsim_malloc((ng_old + 1) * sizeof *dp->cls_base);
  dp->span_new = etsim_malloc((ng_old + 1) * sizeof *dp->span_new);
  if (!ord || !mem || !dp->cls || !dp->rep || !dp->cls_base || !dp->span_new) goto done;
  uint32_t next = 1, got;
  *dropped = 0;
  if (dp->world_intra) {
    /* The world of each new replica first: it had id 0, below the rest. */
    dp->world_base = next;
    for (size_t jn = 0; jn < d_new; jn++) {
      size_t nm = 0;
      for (size_t o = 0; o < F->outer; o++)
        for (size_t in = 0; in < F->inner; in++)
          mem[nm++] = (uint32_t)(in + F->inner * (jn + d_new * o));
      if (etsim_edit__groups_add(ng, next++, mem, nm, &got)) goto done;
    }
  }
  for (size_t oi = 0; oi < ng_old; oi++) {
    size_t g = ord[oi];
    size_t b = old->off[g], en = old->off[g + 1];
    dp->rep[g] = F->rep[g];
    dp->cls[g] = -1;
    dp->span_new[g] = 0;
    if (F->rep[g] == -2) {
      (*dropped)++;
      continue;
    }
    if (F->rep[g] == -1) {
      /* Over the replicas: one group over all the new ones. */
      size_t nm = 0;
      for (size_t q = b; q < en; q++)
        if (j_of(F, old->mem[q]) == 0)
          for (size_t jn = 0; jn < d_new; jn++) mem[nm++] = moved(F, old->mem[q], jn, d_new);
      if (etsim_edit__groups_add(ng, next, mem, nm, &got)) goto done;
      dp->span_new[g] = next++;
      continue;
    }
    /* Inside a replica: its class is its member positions; the first
     * group of a class gives a copy per new replica. */
    uint64_t h = 0x51ed27;
    for (size_t q = b; q < en; q++) h = mix(h, proj(F, old->mem[q]));
    uint32_t c;
    if (etsim_u64map_get(&cls_by, h, &c)) {
      dp->cls[g] = c;
      continue;
    }
    c = (uint32_t)dp->n_cls++;
    if (etsim_u64map_put(&cls_by, h, c, NULL) < 0) goto done;
    dp->cls[g] = c;
    dp->cls_base[c] = next;
    for (size_t jn = 0; jn < d_new; jn++) {
      size_t nm = 0;
      for (size_t q = b; q < en; q++) mem[nm++] = moved(F, old->mem[q], jn, d_new);
      if (etsim_edit__groups_add(ng, next++, mem, nm, &got)) goto done;
    }
  }
  rc = 0;
done:
  etsim_free(ord);
  etsim_free(mem);
  etsim_u64map_free(&cls_by);
  return rc;
}

/* New rank r runs old rank tmpl[r] as replica param[r] (0 for files that
 * are the same in every replica: no replica-local group, no peer). */
static int assign_ranks(const fit_t *F, const ed_dp_t *dp, uint32_t **out_tmpl,
                        int64_t **out_param) {
  size_t d_new = dp->d_new, n_new = F->inner * F->outer * d_new;
  uint32_t *tmpl = etsim_malloc((n_new + 1) * sizeof *tmpl);
  int64_t *param = etsim_malloc((n_new + 1) * sizeof *param);
  if (!tmpl || !param) {
    etsim_free(tmpl);
    etsim_free(param);
    return ETSIM_ENOMEM;
  }
  for (size_t r = 0; r < n_new; r++) {
    size_t in = r % F->inner, rest = r / F->inner, jn = rest % d_new, o = rest / d_new;
    size_t t = in + F->inner * ((jn % F->d) + F->d * o);
    tmpl[r] = (uint32_t)t;
    const facts_t *f = &F->facts[F->rank_file[t]];
    int local = f->n_peers > 0 || (dp->world_intra && f->world_count > 0);
    for (size_t q = 0; q < f->n_pg && !local; q++) {
      long g = etsim_edit__groups_find(&dp->old, f->pg[q]);
      local = g >= 0 && dp->rep[g] >= 0;
    }
    param[r] = local ? (int64_t)jn : 0;
  }
  *out_tmpl = tmpl;
  *out_param = param;
  return 0;
}

/* The comm_types collectives use over the replicas under layout F. */
static uint16_t spanning_types(const fit_t *F, const ed_groups_t *g, int world_intra) {
  uint16_t t = 0;
  for (size_t r = 0; r < F->n; r++) {
    const facts_t *f = &F->facts[F->rank_file[r]];
    if (!world_intra) t |= f->world_types;
    for (size_t q = 0; q < f->n_pg; q++) {
      long k = etsim_edit__groups_find(g, f->pg[q]);
      if (k >= 0 && F->rep[k] == -1) t |= f->pgtypes[q];
    }
  }
  return t;
}

int etsim_edit__retarget(etsim_edit_t *e, size_t k, ed_plan_t *p, char **paths, size_t n_paths,
                         const uint32_t *rank_file, size_t n, uint32_t **out_tmpl,
                         int64_t **out_param, size_t *out_n, etsim_edit_report_t *rep,
                         etsim_error_t *err) {
  const ed_op_t *op = &e->ops[k];
  const char *what = op->kind == ED_DP ? "--dp" : "--npus";
  const char *set = paths[0];
  ed_rankop_t *ro = &p->rank[k];
  ed_dp_t *dp = &ro->dp;
  ed_groups_t ng = {0};
  fit_t F = {.n = n, .g = &p->groups, .rank_file = rank_file};
  F.facts = etsim_calloc(n_paths ? n_paths : 1, sizeof *F.facts);
  F.used = etsim_calloc(p->groups.n + 1, 1);
  F.rep = etsim_calloc(p->groups.n + 1, sizeof *F.rep);
  uint32_t *cnt = etsim_malloc((n + 1) * sizeof *cnt);
  int rc = 0;
  char why[512];
  if (!F.facts || !cnt || !F.used || !F.rep) goto oom;
  for (size_t i = 0; i < n_paths; i++)
    if ((rc = scan_facts(paths[i], &F.facts[i], err))) goto done;
  if ((rc = check_usage(&F, paths, p, what, err))) goto done;
  if (!choose_layout(&F, cnt, e->opts.dp_stride, rep, set, why, sizeof why)) {
    rc = etsim_error_set(err, ETSIM_EINVAL,
                         "%s: %s: no split of the %zu ranks into data-parallel replicas fits its "
                         "communicators (read as %zu replicas: %s)",
                         set, what, n, n, why);
    goto done;
  }
  /* One replica of n > 1 ranks: its world collectives are the replica's
   * own (a model-parallel job to replicate).  One file alone is a rank of
   * a data-parallel world whose size it does not say. */
  uint64_t world_used = 0;
  uint16_t world_types = 0;
  for (size_t r = 0; r < n; r++) {
    world_used += F.facts[rank_file[r]].world_count;
    world_types |= F.facts[rank_file[r]].world_types;
  }
  dp->world_intra = F.d == 1 && n > 1 && world_used > 0;
  if (F.d == 1 && n > 1)
    etsim_edit__note(rep,
                     "%s: no split into two or more replicas fits (%s): the %zu ranks are read "
                     "as one replica",
                     set, why, n);
  size_t m = F.inner * F.outer; /* ranks per replica */
  size_t d_new = op->n;
  if (op->kind == ED_NPUS) {
    if (op->n % m) {
      rc = etsim_error_set(err, ETSIM_EINVAL,
                           "%s: --npus %llu: each data-parallel replica has %zu ranks (%zu "
                           "replicas of %zu found), and %llu is not a multiple of %zu",
                           set, (unsigned long long)op->n, m, F.d, m, (unsigned long long)op->n, m);
      goto done;
    }
    d_new = op->n / m;
  }
  if (m * d_new > ETSIM_ET_MAX_RANKS) {
    rc = etsim_error_set(err, ETSIM_ERANGE, "%s: %s: %zu ranks is more than a set may have", set,
                         what, m * d_new);
    goto done;
  }
  /* Collectives over replicas must have sizes a degree change can derive. */
  uint16_t span_types = spanning_types(&F, &p->groups, dp->world_intra);
  if (d_new != F.d && (span_types & ~SPAN_OK)) {
    int c = 0;
    while (!((span_types & ~SPAN_OK) >> c & 1)) c++;
    rc = etsim_error_set(err, ETSIM_EINVAL,
                         "%s: %s: %s runs over the data-parallel replicas; its size depends on "
                         "how the work is split, which the trace does not say",
                         set, what, etsim_coll_type_name(c));
    goto done;
  }
  if (n == 1 && d_new != 1 && (world_types & (1u << ETSIM_COLL_ALL_GATHER))) {
    rc = etsim_error_set(err, ETSIM_EINVAL,
                         "%s: %s: one file does not say how many replicas it was recorded with, "
                         "which its ALL_GATHER sizes depend on",
                         set, what);
    goto done;
  }
  dp->inner = F.inner;
  dp->d = F.d;
  dp->outer = F.outer;
  dp->d_new = d_new;
  dp->old_n = n;
  ro->have_dp = 1;
  size_t dropped = 0;
  if (derive_groups(&F, dp, &p->groups, &ng, &dropped)) goto oom;
  dp->old = p->groups;
  p->groups = ng;
  memset(&ng, 0, sizeof ng);
  p->had_groups = p->had_groups || p->groups.n > 0;
  if (assign_ranks(&F, dp, out_tmpl, out_param)) goto oom;
  *out_n = m * d_new;
  etsim_edit__note(rep,
                   "%s: %zu rank(s) read as %zu data-parallel replica(s) of %zu (%zu inside x %zu "
                   "outside); now %zu replica(s), %zu rank(s), %zu communicator(s)%s",
                   set, n, F.d, m, F.inner, F.outer, d_new, m * d_new, p->groups.n,
                   dropped ? " (unused groups that fit no layout dropped)" : "");
  if (d_new != F.d && (span_types & (1u << ETSIM_COLL_ALL_GATHER)))
    etsim_edit__note(rep,
                     "%s: all-gathers over the replicas scaled by %zu/%zu (each rank's input of "
                     "a fixed whole, as ZeRO's parameters)",
                     set, F.d, d_new);
  if (d_new != F.d && !e->have_sharded &&
      (span_types & ((1u << ETSIM_COLL_REDUCE_SCATTER) | (1u << ETSIM_COLL_ALL_GATHER))))
    etsim_edit__note(rep,
                     "%s: the set shards over its replicas (reduce-scatter/all-gather); compute "
                     "on a shard (ZeRO's optimizer) keeps its size unless --dp-sharded names it",
                     set);
  goto done;
oom:
  rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
done:
  etsim_edit__groups_free(&ng);
  for (size_t i = 0; F.facts && i < n_paths; i++) facts_free(&F.facts[i]);
  etsim_free(F.facts);
  etsim_free(cnt);
  etsim_free(F.used);
  etsim_free(F.rep);
  return rc;
}
