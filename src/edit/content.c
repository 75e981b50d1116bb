/*
 * content.c — the operations that change what a node says without
 * changing the graph: scaling, profiles, anonymization, rounding,
 * stripping, and the per-rank rewriting of communicators and peers that
 * the rank operations (--ranks, --remap-ranks, --dp, --beside, --concat)
 * need.
 *
 * Every change is a pure function of the node, the operation and the
 * rank's parameters, so the scan and the write pass agree and ranks that
 * share a file stay equal.  Integer attributes keep their kind.
 *
 * Names are anonymized with SipHash-2-4 (Aumasson and Bernstein's keyed
 * PRF, written here from its specification) keyed by --salt, so equal
 * names stay equal across ranks and files while the originals cannot be
 * recovered without the salt.
 */
#include "edit_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------- hashing */

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND       \
  do {                 \
    v0 += v1;          \
    v1 = ROTL(v1, 13); \
    v1 ^= v0;          \
    v0 = ROTL(v0, 32); \
    v2 += v3;          \
    v3 = ROTL(v3, 16); \
    v3 ^= v2;          \
    v0 += v3;          \
    v3 = ROTL(v3, 21); \
    v3 ^= v0;          \
    v2 += v1;          \
    v1 = ROTL(v1, 17); \
    v1 ^= v2;          \
    v2 = ROTL(v2, 32); \
  } while (0)

static uint64_t siphash24(uint64_t k0, uint64_t k1, const void *data, size_t n) {
  const unsigned char *p = data;
  uint64_t v0 = k0 ^ 0x736f6d6570736575ULL, v1 = k1 ^ 0x646f72616e646f6dULL;
  uint64_t v2 = k0 ^ 0x6c7967656e657261ULL, v3 = k1 ^ 0x7465646279746573ULL;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t m = 0;
    for (int b = 0; b < 8; b++) m |= (uint64_t)p[i + b] << (8 * b);
    v3 ^= m;
    SIPROUND;
    SIPROUND;
    v0 ^= m;
  }
  uint64_t last = (uint64_t)(n & 0xff) << 56;
  for (int b = 0; i + (size_t)b < n; b++) last |= (uint64_t)p[i + b] << (8 * b);
  v3 ^= last;
  SIPROUND;
  SIPROUND;
  v0 ^= last;
  v2 ^= 0xff;
  SIPROUND;
  SIPROUND;
  SIPROUND;
  SIPROUND;
  return v0 ^ v1 ^ v2 ^ v3;
}

void etsim_edit__anon_key(etsim_edit_t *e) {
  const char *salt = e->opts.salt ? e->opts.salt : "";
  e->anon_k0 = siphash24(0, 0, salt, strlen(salt));
  e->anon_k1 = siphash24(e->anon_k0, 0x657473696dULL, salt, strlen(salt));
}

const char *etsim_edit__anon(const etsim_edit_t *e, int mode, ed_node_t *x, const char *s) {
  if (mode == ED_ANON_STRIP || !*s) return "";
  uint64_t h = siphash24(e->anon_k0, e->anon_k1, s, strlen(s));
  char *out = etsim_arena_alloc(x->arena, 18);
  if (!out) return NULL;
  static const char hex[] = "0123456789abcdef";
  out[0] = 'h';
  for (int i = 0; i < 16; i++) out[1 + i] = hex[(h >> (60 - 4 * i)) & 15];
  out[17] = 0;
  return out;
}

/* ------------------------------------------------------------- helpers */

static int64_t scale_i64(int64_t v, double f) {
  double r = (double)v * f;
  if (r >= 9.2e18) return INT64_MAX;
  if (r <= -9.2e18) return INT64_MIN;
  return (int64_t)llround(r);
}

/* Scale an integer attribute in place (kind kept); a positive comm_size
 * stays positive (the simulators refuse 0). */
static int scale_attr(ed_node_t *x, const char *name, double f, int keep_positive) {
  etsim_attr_t *a = etsim_edit__node_attr(x, name);
  int64_t v;
  if (!a || etsim_attr_as_int(a, &v)) return 0;
  int64_t nv = scale_i64(v, f);
  if (keep_positive && v > 0 && nv < 1) nv = 1;
  if (nv == v) return 0;
  x->changed = 1;
  return etsim_edit__node_set_int(x, name, a->kind, nv);
}

static uint64_t round_up(uint64_t v, int mode, uint64_t bucket) {
  if (v == 0) return 0;
  if (mode == ED_ROUND_POW2) {
    if (v > (1ULL << 62)) return v;
    uint64_t p = 1;
    while (p < v) p <<= 1;
    return p;
  }
  uint64_t q = (v + bucket - 1) / bucket;
  return q > UINT64_MAX / bucket ? v : q * bucket;
}

static int round_attr(ed_node_t *x, const char *name, int mode, uint64_t bucket) {
  etsim_attr_t *a = etsim_edit__node_attr(x, name);
  int64_t v;
  if (!a || etsim_attr_as_int(a, &v) || v <= 0) return 0;
  uint64_t r = round_up((uint64_t)v, mode, bucket);
  if (r > (uint64_t)INT64_MAX || (int64_t)r == v) return 0;
  x->changed = 1;
  return etsim_edit__node_set_int(x, name, a->kind, (int64_t)r);
}

static int is_comm(int type) {
  return type == ETSIM_ET_COMM_COLL_NODE || type == ETSIM_ET_COMM_SEND_NODE ||
         type == ETSIM_ET_COMM_RECV_NODE;
}

/* What simulation reads (docs/edit.md, --strip-attrs). */
static const char *const sim_attrs[] = {
    "comm_type", "comm_size",   "comm_src", "comm_dst",     "comm_tag", "comm_priority",
    "is_cpu_op", "tensor_size", "pg_name",  "involved_dim", "num_ops",  "duration_ns",
};

static int keep_attr(const char *name, const char *extra) {
  for (size_t k = 0; k < sizeof sim_attrs / sizeof sim_attrs[0]; k++)
    if (strcmp(name, sim_attrs[k]) == 0) return 1;
  /* extra: "sim,NAME,NAME" */
  const char *p = strchr(extra, ',');
  size_t nl = strlen(name);
  while (p) {
    p++;
    const char *c = strchr(p, ',');
    size_t l = c ? (size_t)(c - p) : strlen(p);
    if (l == nl && strncmp(p, name, l) == 0) return 1;
    p = c;
  }
  return 0;
}

/* METADATA nodes of PyTorch origin carry process groups in their inputs,
 * which simulators read. */
static int io_defines_groups(const ed_node_t *x) {
  return x->n.type == ETSIM_ET_METADATA_NODE && x->n.inputs && x->n.inputs->values &&
         strstr(x->n.inputs->values, "pg_name") != NULL;
}

static int anonymize(const etsim_edit_t *e, int mode, ed_node_t *x) {
  const char *nm = etsim_edit__anon(e, mode, x, x->n.name);
  if (!nm) return ETSIM_ENOMEM;
  if (strcmp(nm, x->n.name) != 0) x->changed = 1;
  x->n.name = nm;
  for (size_t i = 0; i < x->n.n_attrs; i++) {
    etsim_attr_t *a = &x->attrs[i];
    if (a->doc && *a->doc && !(a->doc = etsim_edit__anon(e, mode, x, a->doc))) return ETSIM_ENOMEM;
    if (strcmp(a->name, "pg_name") == 0) continue; /* names a communicator */
    if (a->kind == ETSIM_ATTR_STRING) {
      if (*a->v.s) x->changed = 1;
      if (!(a->v.s = etsim_edit__anon(e, mode, x, a->v.s))) return ETSIM_ENOMEM;
    } else if (a->kind == ETSIM_ATTR_STRING_LIST && a->v.list.n) {
      const char **l = etsim_arena_alloc(x->arena, a->v.list.n * sizeof *l);
      if (!l) return ETSIM_ENOMEM;
      const char *const *old = a->v.list.v;
      for (size_t k = 0; k < a->v.list.n; k++)
        if (!(l[k] = etsim_edit__anon(e, mode, x, old[k]))) return ETSIM_ENOMEM;
      a->v.list.v = l;
      x->changed = 1;
    } else if (a->kind == ETSIM_ATTR_BYTES && a->v.bytes.len) {
      a->v.bytes.len = 0;
      x->changed = 1;
    } else if (a->kind == ETSIM_ATTR_BYTES_LIST && a->v.list.n) {
      a->v.list.n = 0;
      x->changed = 1;
    }
  }
  return 0;
}

static int strip(const ed_op_t *op, ed_node_t *x) {
  size_t k = 0;
  for (size_t i = 0; i < x->n.n_attrs; i++)
    if (keep_attr(x->attrs[i].name, op->arg)) x->attrs[k++] = x->attrs[i];
  if (k != x->n.n_attrs) x->changed = 1;
  x->n.n_attrs = k;
  if ((x->n.inputs || x->n.outputs) && !io_defines_groups(x)) {
    x->n.inputs = x->n.outputs = NULL;
    x->changed = 1;
  }
  return 0;
}

/* ---------------------------------------------------- ranks and groups */

static const char *fmt_id(ed_node_t *x, uint32_t id) {
  char *s = etsim_arena_alloc(x->arena, 12);
  if (s) snprintf(s, 12, "%u", id);
  return s;
}

/* The communicator a collective names, as a pg_name string (NULL: none). */
static const char *pg_of(ed_node_t *x) {
  etsim_attr_t *a = etsim_edit__node_attr(x, "pg_name");
  return a && a->kind == ETSIM_ATTR_STRING ? a->v.s : NULL;
}

static int remap_pg(ed_node_t *x, const ed_pgmap_t *m) {
  if (x->n.type != ETSIM_ET_COMM_COLL_NODE) return 0;
  const char *pg = pg_of(x);
  uint32_t id, to;
  if (etsim_edit__pg_world(pg)) {
    if (m->world_to == UINT32_MAX) return 0;
    to = m->world_to;
  } else if (!etsim_edit__pg_id(pg, &id) || !etsim_edit__pgmap_get(m, id, &to) || to == id) {
    return 0;
  }
  const char *s = fmt_id(x, to);
  if (!s) return ETSIM_ENOMEM;
  x->changed = 1;
  return etsim_edit__node_set_str(x, "pg_name", s);
}

/* The peers of a send (comm_dst, and comm_src when written) or receive. */
static int remap_peer_attr(ed_node_t *x, const char *name, const ed_rankop_t *ro, const ed_dp_t *dp,
                           int64_t jnew, int64_t shift) {
  etsim_attr_t *a = etsim_edit__node_attr(x, name);
  int64_t q;
  if (!a || etsim_attr_as_int(a, &q)) return 0;
  int64_t nq = q;
  if (dp) {
    size_t in = dp->inner;
    if (q < 0 || (size_t)q >= dp->old_n) return 0;
    size_t inner = (size_t)q % in, rest = (size_t)q / in, outer = rest / dp->d;
    nq = (int64_t)(inner + in * ((size_t)jnew + dp->d_new * outer));
  } else if (ro && ro->peer) {
    if (q < 0 || (size_t)q >= ro->n_before) return 0;
    nq = ro->peer[q];
  } else {
    nq = q + shift;
  }
  if (nq == q) return 0;
  x->changed = 1;
  return etsim_edit__node_set_int(x, name, a->kind, nq);
}

static int remap_peers(ed_node_t *x, const ed_rankop_t *ro, const ed_dp_t *dp, int64_t jnew,
                       int64_t shift) {
  if (x->n.type != ETSIM_ET_COMM_SEND_NODE && x->n.type != ETSIM_ET_COMM_RECV_NODE) return 0;
  int rc = remap_peer_attr(x, "comm_src", ro, dp, jnew, shift);
  if (!rc) rc = remap_peer_attr(x, "comm_dst", ro, dp, jnew, shift);
  return rc;
}

static int retarget_node(const etsim_edit_t *e, const ed_dp_t *dp, int64_t jnew, ed_node_t *x) {
  const ed_groups_t *old = &dp->old;
  int rc = remap_peers(x, NULL, dp, jnew, 0);
  if (rc) return rc;
  if (x->n.type == ETSIM_ET_COMM_COLL_NODE) {
    const char *pg = pg_of(x);
    uint32_t id;
    int spanning = 0;
    if (etsim_edit__pg_world(pg)) {
      spanning = !dp->world_intra;
      if (dp->world_intra) {
        const char *s = fmt_id(x, dp->world_base + (uint32_t)jnew);
        if (!s) return ETSIM_ENOMEM;
        if ((rc = etsim_edit__node_set_str(x, "pg_name", s))) return rc;
        x->changed = 1;
      }
    } else if (etsim_edit__pg_id(pg, &id)) {
      long k = etsim_edit__groups_find(old, id);
      if (k >= 0) {
        uint32_t to = dp->rep[k] >= 0 ? dp->cls_base[dp->cls[k]] + (uint32_t)jnew : dp->span_new[k];
        spanning = dp->rep[k] < 0;
        if (to != id) {
          const char *s = fmt_id(x, to);
          if (!s) return ETSIM_ENOMEM;
          if ((rc = etsim_edit__node_set_str(x, "pg_name", s))) return rc;
          x->changed = 1;
        }
      }
    }
    int64_t ct;
    /* An all-gather over replicas gathers a fixed whole (ZeRO's
     * parameters): each rank's input, comm_size, is the whole / P. */
    if (spanning && etsim_edit__node_int(x, "comm_type", &ct) && ct == ETSIM_COLL_ALL_GATHER &&
        dp->d != dp->d_new) {
      etsim_attr_t *a = etsim_edit__node_attr(x, "comm_size");
      int64_t v;
      if (a && !etsim_attr_as_int(a, &v) && v > 0) {
        /* floor(v * d / d_new), exactly: v = q * d_new + r. */
        int64_t dn = (int64_t)dp->d_new, q = v / dn, r = v % dn;
        int64_t nv = q > INT64_MAX / (int64_t)dp->d ? INT64_MAX
                                                    : q * (int64_t)dp->d + r * (int64_t)dp->d / dn;
        if (nv < 1) nv = 1;
        x->changed = 1;
        if ((rc = etsim_edit__node_set_int(x, "comm_size", a->kind, nv))) return rc;
      }
    }
  }
  if (e->have_sharded && x->n.type == ETSIM_ET_COMP_NODE && dp->d != dp->d_new &&
      regexec(&e->sharded, x->n.name, 0, NULL, 0) == 0) {
    /* Work a DP degree divides (ZeRO's optimizer shard). */
    double f = (double)dp->d / (double)dp->d_new;
    if ((rc = scale_attr(x, "num_ops", f, 0)) || (rc = scale_attr(x, "tensor_size", f, 0)))
      return rc;
    uint64_t ns = etsim_edit__node_ns(x);
    uint64_t nns = (uint64_t)llround((double)ns * f);
    if (nns != ns) {
      x->changed = 1;
      if ((rc = etsim_edit__node_set_ns(x, nns))) return rc;
    }
  }
  return 0;
}

/* ------------------------------------------------------------ dispatch */

int etsim_edit__content(etsim_edit_t *e, const ed_plan_t *p, const ed_job_t *j, size_t k,
                        int seg_is_b, ed_node_t *x, etsim_error_t *err) {
  const ed_op_t *op = &e->ops[k];
  const ed_rankop_t *ro = p->rank ? &p->rank[k] : NULL;
  int rc = 0;
  switch (op->kind) {
    case ED_SCALE_TIME:
      if (etsim_edit__pred_match(&op->pred, x)) {
        uint64_t ns = etsim_edit__node_ns(x);
        double r = (double)ns * op->factor;
        uint64_t nns = r >= 9.2e18 ? (uint64_t)INT64_MAX : (uint64_t)llround(r);
        if (nns != ns) {
          x->changed = 1;
          rc = etsim_edit__node_set_ns(x, nns);
        }
      }
      break;
    case ED_SCALE_FLOPS:
      if (etsim_edit__pred_match(&op->pred, x)) rc = scale_attr(x, "num_ops", op->factor, 0);
      break;
    case ED_SCALE_TENSOR:
      if (etsim_edit__pred_match(&op->pred, x)) rc = scale_attr(x, "tensor_size", op->factor, 0);
      break;
    case ED_SCALE_COMM:
      if (is_comm(x->n.type) && etsim_edit__pred_match(&op->pred, x))
        rc = scale_attr(x, "comm_size", op->factor, 1);
      break;
    case ED_PROFILE: {
      int64_t id = etsim_intern_find(&op->profile->names, x->n.name);
      if (id > 0 && (size_t)id < op->profile->n && op->profile->ns[id] != UINT64_MAX) {
        uint64_t ns = op->profile->ns[id];
        if (ns != etsim_edit__node_ns(x)) x->changed = 1;
        rc = etsim_edit__node_set_ns(x, ns);
      }
      break;
    }
    case ED_ANONYMIZE:
      rc = anonymize(e, op->mode, x);
      break;
    case ED_ROUND_SIZES:
      if (!(rc = round_attr(x, "comm_size", op->mode, op->bucket)) &&
          !(rc = round_attr(x, "tensor_size", op->mode, op->bucket)))
        rc = round_attr(x, "num_ops", op->mode, op->bucket);
      break;
    case ED_ROUND_TIMES: {
      uint64_t ns = etsim_edit__node_ns(x), r = ns;
      if (ns && op->mode == ED_ROUND_POW2) r = round_up((ns + 999) / 1000, ED_ROUND_POW2, 0) * 1000;
      else if (ns) r = round_up(ns, ED_ROUND_MULTIPLE, op->bucket);
      if (r != ns) {
        x->changed = 1;
        rc = etsim_edit__node_set_ns(x, r);
      }
      break;
    }
    case ED_STRIP_ATTRS:
      rc = strip(op, x);
      break;
    case ED_RANKS:
    case ED_REMAP:
      rc = remap_peers(x, ro, NULL, 0, 0);
      if (!rc) rc = remap_pg(x, &ro->map[0]);
      break;
    case ED_BESIDE:
      if (j->param[k] == 1) {
        rc = remap_peers(x, NULL, NULL, 0, (int64_t)ro->b_offset);
        if (!rc) rc = remap_pg(x, &ro->map[1]);
      } else {
        rc = remap_pg(x, &ro->map[0]);
      }
      break;
    case ED_CONCAT:
      if (seg_is_b) rc = remap_pg(x, &ro->map[1]);
      break;
    case ED_DP:
    case ED_NPUS:
      if (ro->have_dp && j->param[k] >= 0) rc = retarget_node(e, &ro->dp, j->param[k], x);
      break;
    default:
      break;
  }
  if (rc == ETSIM_ENOMEM) return etsim_error_set(err, rc, "out of memory");
  return rc;
}

int etsim_edit__meta(etsim_edit_t *e, size_t lo, size_t hi, const etsim_et_meta_t *in,
                     etsim_et_meta_t *out, etsim_attr_t **attrs, etsim_arena_t *arena) {
  *out = *in;
  etsim_attr_t *a = etsim_malloc((in->n_attrs ? in->n_attrs : 1) * sizeof *a);
  if (!a) return ETSIM_ENOMEM;
  if (in->n_attrs) memcpy(a, in->attrs, in->n_attrs * sizeof *a);
  out->attrs = a;
  *attrs = a;
  ed_node_t tmp = {0};
  tmp.arena = arena;
  for (size_t k = lo; k < hi; k++) {
    const ed_op_t *op = &e->ops[k];
    if (op->kind == ED_STRIP_ATTRS) {
      out->n_attrs = 0;
    } else if (op->kind == ED_ANONYMIZE) {
      for (size_t i = 0; i < out->n_attrs; i++) {
        if (a[i].kind == ETSIM_ATTR_STRING &&
            !(a[i].v.s = etsim_edit__anon(e, op->mode, &tmp, a[i].v.s)))
          return ETSIM_ENOMEM;
        if (a[i].kind == ETSIM_ATTR_STRING_LIST) a[i].v.list.n = 0;
        if (a[i].kind == ETSIM_ATTR_BYTES) a[i].v.bytes.len = 0;
        if (a[i].kind == ETSIM_ATTR_BYTES_LIST) a[i].v.list.n = 0;
      }
    }
  }
  return 0;
}
