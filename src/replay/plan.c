/*
 * plan.c — map a rank's trace to replay operations.
 *
 * One pass over the nodes decides what each becomes (see the table in
 * docs/replay.md), a second builds the dependency CSR (data and control
 * edges together, duplicates between the two kept once), and Kahn's
 * algorithm rejects cycles up front so that the runner can never wait for a
 * node that cannot start.
 */
#include "etsim/replay.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[ETSIM_REPLAY_KIND_COUNT] = {"nop",  "gemm", "stream", "busy",
                                                                "coll", "send", "recv"};
static const char *const cat_names[ETSIM_REPLAY_CAT_COUNT] = {"gemm", "memory", "busy", "comm",
                                                              "other"};

const char *etsim_replay_kind_name(int kind) {
  return kind >= 0 && kind < ETSIM_REPLAY_KIND_COUNT ? kind_names[kind] : "?";
}

const char *etsim_replay_cat_name(int cat) {
  return cat >= 0 && cat < ETSIM_REPLAY_CAT_COUNT ? cat_names[cat] : "?";
}

int etsim_replay_kind_cat(int kind) {
  switch (kind) {
    case ETSIM_REPLAY_GEMM:
      return ETSIM_REPLAY_CAT_GEMM;
    case ETSIM_REPLAY_STREAM:
      return ETSIM_REPLAY_CAT_MEMORY;
    case ETSIM_REPLAY_BUSY:
      return ETSIM_REPLAY_CAT_BUSY;
    case ETSIM_REPLAY_COLL:
    case ETSIM_REPLAY_SEND:
    case ETSIM_REPLAY_RECV:
      return ETSIM_REPLAY_CAT_COMM;
    default:
      return ETSIM_REPLAY_CAT_OTHER;
  }
}

void etsim_replay_opts_init(etsim_replay_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->world = 1;
  o->compute_scale = 1.0;
  o->comm_scale = 1.0;
  o->deps = ETSIM_REPLAY_DEPS_DATA | ETSIM_REPLAY_DEPS_CTRL;
}

/* ------------------------------------------------------------ groups */

void etsim_replay_groups_free(etsim_replay_groups_t *g) {
  if (!g) return;
  for (size_t i = 0; i < g->n; i++) {
    etsim_free(g->g[i].name);
    etsim_free(g->g[i].ranks);
  }
  etsim_free(g->g);
  g->g = NULL;
  g->n = 0;
}

int etsim_replay_groups_load(etsim_replay_groups_t *out, const char *path, int world,
                             etsim_error_t *err) {
  memset(out, 0, sizeof *out);
  json_t *root;
  int rc0 = etsim_json_load(path, JSON_DECODE_ANY, &root, err);
  if (rc0) return rc0;
  int rc = 0;
  if (!json_is_object(root)) {
    rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: expected an object {pg_name: [ranks...]}", path);
    goto done;
  }
  size_t n = json_object_size(root);
  out->g = etsim_calloc(n ? n : 1, sizeof *out->g);
  if (!out->g) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
    goto done;
  }
  const char *key;
  json_t *val;
  json_object_foreach(root, key, val) {
    etsim_replay_group_t *g = &out->g[out->n];
    if (!json_is_array(val) || json_array_size(val) == 0) {
      rc = etsim_error_set(err, ETSIM_EFORMAT,
                           "%s: group \"%s\": expected a non-empty list of "
                           "ranks",
                           path, key);
      goto done;
    }
    g->name = etsim_strdup(key);
    g->n_ranks = json_array_size(val);
    g->ranks = etsim_calloc(g->n_ranks, sizeof *g->ranks);
    out->n++;
    if (!g->name || !g->ranks) {
      rc = etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
      goto done;
    }
    for (size_t i = 0; i < g->n_ranks; i++) {
      json_t *r = json_array_get(val, i);
      json_int_t v = json_is_integer(r) ? json_integer_value(r) : -1;
      if (v < 0 || v >= world) {
        rc = etsim_error_set(err, ETSIM_EFORMAT,
                             "%s: group \"%s\": entry %zu is not a rank in "
                             "[0, %d)",
                             path, key, i, world);
        goto done;
      }
      for (size_t j = 0; j < i; j++)
        if (g->ranks[j] == v) {
          rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: group \"%s\": rank %d listed twice", path,
                               key, (int)v);
          goto done;
        }
      g->ranks[i] = (int)v;
    }
  }
done:
  json_decref(root);
  if (rc) etsim_replay_groups_free(out);
  return rc;
}

/* ------------------------------------------------------------ shapes */

void etsim_replay_gemm_dims(double flops, int64_t *m, int64_t *n, int64_t *k) {
  if (!(flops > 2.0)) flops = 2.0;
  double s = cbrt(flops / 2.0);
  int64_t mm = (int64_t)llround(s);
  if (mm < 1) mm = 1;
  int64_t kk = (int64_t)llround(flops / (2.0 * (double)mm * (double)mm));
  if (kk < 1) kk = 1;
  *m = mm;
  *n = mm;
  *k = kk;
}

static const char *skip_ws(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\n') p++;
  return p;
}

int etsim_replay_parse_shapes(const char *s, int64_t (*dims)[8], int *n_dims, int max_t) {
  const char *p = skip_ws(s);
  if (*p != '[') return ETSIM_EFORMAT;
  p = skip_ws(p + 1);
  int nt = 0;
  if (*p == ']') return 0;
  for (;;) {
    /* A tensor: [d0, d1, ...]; a scalar argument may appear as [] or as a
     * bare number, which counts as a 0-dim tensor. */
    int nd = 0;
    int64_t d[8];
    if (*p == '[') {
      p = skip_ws(p + 1);
      while (*p != ']') {
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p || v < 0 || nd == 8) return ETSIM_EFORMAT;
        d[nd++] = v;
        p = skip_ws(end);
        if (*p == ',') p = skip_ws(p + 1);
        else if (*p != ']') return ETSIM_EFORMAT;
      }
      p = skip_ws(p + 1);
    } else {
      /* A bare scalar: a number, or a word such as false / None. */
      char *end;
      (void)strtod(p, &end);
      if (end == p) {
        const char *q = p;
        while ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || *q == '_') q++;
        end = (char *)q;
      }
      if (end == p) return ETSIM_EFORMAT;
      p = skip_ws(end);
    }
    if (nt < max_t) {
      n_dims[nt] = nd;
      memcpy(dims[nt], d, (size_t)nd * sizeof d[0]);
    }
    nt++;
    if (*p == ',') {
      p = skip_ws(p + 1);
      continue;
    }
    if (*p == ']') break;
    return ETSIM_EFORMAT;
  }
  return nt < max_t ? nt : max_t;
}

/* GEMM shape of a PyTorch operator from its input shapes: 1 and the shape,
 * 0 when the name is not a matrix product, ETSIM_EFORMAT when it is one but
 * the shapes do not fit. */
static int pytorch_gemm(const char *name, const char *shapes, int64_t *m, int64_t *n, int64_t *k,
                        int64_t *batch) {
  const char *op = strncmp(name, "aten::", 6) == 0 ? name + 6 : NULL;
  if (!op) return 0;
  int is_mm = !strcmp(op, "mm") || !strcmp(op, "matmul");
  int is_addmm = !strcmp(op, "addmm");
  int is_linear = !strcmp(op, "linear");
  int is_bmm = !strcmp(op, "bmm") || !strcmp(op, "baddbmm");
  if (!is_mm && !is_addmm && !is_linear && !is_bmm) return 0;
  int64_t d[4][8];
  int nd[4];
  int nt = etsim_replay_parse_shapes(shapes, d, nd, 4);
  if (nt < 0) return ETSIM_EFORMAT;
  int a = is_addmm || !strcmp(op, "baddbmm") ? 1 : 0; /* skip the bias */
  if (nt < a + 2) return ETSIM_EFORMAT;
  const int64_t *x = d[a], *y = d[a + 1];
  int nx = nd[a], ny = nd[a + 1];
  *batch = 1;
  if (is_bmm) {
    if (nx != 3 || ny != 3 || x[0] != y[0] || x[2] != y[1]) return ETSIM_EFORMAT;
    *batch = x[0], *m = x[1], *k = x[2], *n = y[2];
  } else if (is_linear) {
    /* input [..., K], weight [N, K] */
    if (nx < 1 || ny != 2 || x[nx - 1] != y[1]) return ETSIM_EFORMAT;
    int64_t rows = 1;
    for (int i = 0; i < nx - 1; i++) rows *= x[i];
    *m = rows, *k = y[1], *n = y[0];
  } else {
    if (nx != 2 || ny != 2 || x[1] != y[0]) return ETSIM_EFORMAT;
    *m = x[0], *k = x[1], *n = y[1];
  }
  return 1;
}

/* Convolution as its implicit GEMM: M = N * (output positions), N = Cout/g,
 * K = (C/g) * (kernel positions), g groups as the batch.  Forward ops take
 * the output shape from the node's outputs; convolution_backward has
 * (grad_output, input, weight) as inputs and is two such GEMMs (dX, dW).
 * Returns 1, 0 (not a convolution, or shapes missing), ETSIM_EFORMAT. */
static int pytorch_conv(const char *name, const char *in_shapes, const char *out_shapes, int64_t *m,
                        int64_t *n, int64_t *k, int64_t *batch) {
  const char *op = strncmp(name, "aten::", 6) == 0 ? name + 6 : NULL;
  if (!op) return 0;
  int bwd = !strcmp(op, "convolution_backward");
  if (!bwd && strcmp(op, "convolution") && strcmp(op, "_convolution") && strcmp(op, "conv1d") &&
      strcmp(op, "conv2d") && strcmp(op, "conv3d") && strcmp(op, "cudnn_convolution"))
    return 0;
  int64_t d[4][8], o[2][8];
  int nd[4], no[2];
  int nt = etsim_replay_parse_shapes(in_shapes, d, nd, 4);
  if (nt < 0) return ETSIM_EFORMAT;
  const int64_t *x, *w, *y;
  int nx, nw, ny;
  if (bwd) {
    if (nt < 3) return ETSIM_EFORMAT;
    y = d[0], ny = nd[0], x = d[1], nx = nd[1], w = d[2], nw = nd[2];
  } else {
    if (nt < 2) return ETSIM_EFORMAT;
    if (!out_shapes || !out_shapes[0]) return 0;
    int nto = etsim_replay_parse_shapes(out_shapes, o, no, 2);
    if (nto < 1) return ETSIM_EFORMAT;
    x = d[0], nx = nd[0], w = d[1], nw = nd[1], y = o[0], ny = no[0];
  }
  if (nx < 3 || nw != nx || ny != nx || w[1] < 1 || x[1] % w[1] || y[0] != x[0] || y[1] != w[0])
    return ETSIM_EFORMAT;
  int64_t g = x[1] / w[1];
  if (w[0] % g) return ETSIM_EFORMAT;
  int64_t pos = 1, kpos = 1;
  for (int i = 2; i < nx; i++) pos *= y[i], kpos *= w[i];
  *m = x[0] * pos;
  *n = w[0] / g;
  *k = w[1] * kpos;
  *batch = g * (bwd ? 2 : 1);
  return 1;
}

/* ------------------------------------------------------------ build */

void etsim_replay_plan_free(etsim_replay_plan_t *p) {
  if (!p) return;
  etsim_free(p->ops);
  etsim_free(p->par_off);
  etsim_free(p->par);
  etsim_free(p->chd_off);
  etsim_free(p->chd);
  etsim_free(p->splits);
  etsim_free(p);
}

/* Interned ids of the attribute names the mapping reads (UINT32_MAX when a
 * name occurs nowhere in the trace), looked up once per plan. */
typedef struct {
  uint32_t comm_size, comm_tag, comm_type, comm_src, comm_dst, gemm_m, gemm_n, gemm_k, num_ops,
      tensor_size, in_split, out_split;
} keys_t;

static uint32_t key_id(const etsim_et_trace_t *t, const char *name) {
  int64_t id = etsim_intern_find(&t->strings, name);
  return id < 0 ? UINT32_MAX : (uint32_t)id;
}

static void keys_init(keys_t *k, const etsim_et_trace_t *t) {
  k->comm_size = key_id(t, "comm_size");
  k->comm_tag = key_id(t, "comm_tag");
  k->comm_type = key_id(t, "comm_type");
  k->comm_src = key_id(t, "comm_src");
  k->comm_dst = key_id(t, "comm_dst");
  k->gemm_m = key_id(t, "gemm_m");
  k->gemm_n = key_id(t, "gemm_n");
  k->gemm_k = key_id(t, "gemm_k");
  k->num_ops = key_id(t, "num_ops");
  k->tensor_size = key_id(t, "tensor_size");
  k->in_split = key_id(t, "in_split");
  k->out_split = key_id(t, "out_split");
}

static int int_attr(const etsim_et_trace_t *t, size_t i, uint32_t id, const char *name, int64_t *v,
                    int *have, etsim_error_t *err) {
  *have = 0;
  *v = 0;
  int rc = etsim_et_trace_attr_int(t, i, id, v);
  if (rc < 0)
    return etsim_error_set(err, ETSIM_EFORMAT, "%s: node %llu: attribute %s is not an integer",
                           t->path, (unsigned long long)t->id[i], name);
  *have = rc == 1;
  return 0;
}

/* Integer list attribute `id` of node i: 1 with *a filled, 0 when absent,
 * -1 when present but not an integer list. */
static int int_list(const etsim_et_trace_t *t, size_t i, uint32_t id, etsim_attr_t *a) {
  if (id == UINT32_MAX) return 0;
  int64_t k = etsim_et_trace_attr_find(t, i, id);
  if (k < 0) return 0;
  etsim_et_trace_attr(t, (size_t)k, a);
  switch (a->kind) {
    case ETSIM_ATTR_INT32_LIST:
    case ETSIM_ATTR_SINT32_LIST:
    case ETSIM_ATTR_SFIXED32_LIST:
    case ETSIM_ATTR_INT64_LIST:
    case ETSIM_ATTR_SINT64_LIST:
    case ETSIM_ATTR_SFIXED64_LIST:
    case ETSIM_ATTR_UINT32_LIST:
    case ETSIM_ATTR_FIXED32_LIST:
    case ETSIM_ATTR_UINT64_LIST:
    case ETSIM_ATTR_FIXED64_LIST:
      return 1;
    default:
      return -1;
  }
}

static int64_t list_at(const etsim_attr_t *a, size_t j) {
  switch (a->kind) {
    case ETSIM_ATTR_INT32_LIST:
    case ETSIM_ATTR_SINT32_LIST:
    case ETSIM_ATTR_SFIXED32_LIST:
      return ((const int32_t *)a->v.list.v)[j];
    case ETSIM_ATTR_UINT32_LIST:
    case ETSIM_ATTR_FIXED32_LIST:
      return ((const uint32_t *)a->v.list.v)[j];
    case ETSIM_ATTR_UINT64_LIST:
    case ETSIM_ATTR_FIXED64_LIST: {
      uint64_t u = ((const uint64_t *)a->v.list.v)[j];
      return u > INT64_MAX ? -1 : (int64_t)u;
    }
    default:
      return ((const int64_t *)a->v.list.v)[j];
  }
}

#define NODE_ERR(code, ...)                                             \
  do {                                                                  \
    char m_[512];                                                       \
    snprintf(m_, sizeof m_, __VA_ARGS__);                               \
    rc = etsim_error_set(err, code, "%s: node %llu (%s): %s", t->path,  \
                         (unsigned long long)t->id[i], t->name[i], m_); \
    goto fail;                                                          \
  } while (0)

/* v x s, saturated at 2^62 ns (the plan then refuses the trace: see
 * PLAN_MAX_TOTAL_NS). */
static int64_t scaled(int64_t v, double s) {
  double x = (double)v * s;
  if (!(x < 0x1p62)) return x < 0 ? 0 : (int64_t)1 << 62;
  return x < 0 ? 0 : (int64_t)llround(x);
}

/* The scaled recorded times of one rank's trace add up to at most this, so
 * no path through it, and no clock advanced along one, can wrap. */
#define PLAN_MAX_TOTAL_NS 0x1p62

/* A collective's process group from its pg_name: this rank and the root
 * must be members. */
static int coll_group(etsim_replay_plan_t *p, size_t i, const etsim_replay_opts_t *o,
                      etsim_error_t *err) {
  const etsim_et_trace_t *t = p->trace;
  etsim_replay_op_t *op = &p->ops[i];
  int rc = 0;
  const char *pg = etsim_et_trace_attr_str(t, i, t->k_pg_name);
  if (!pg || !o->groups) return 0;
  size_t g;
  for (g = 0; g < o->groups->n; g++)
    if (!strcmp(o->groups->g[g].name, pg)) break;
  if (g == o->groups->n)
    NODE_ERR(ETSIM_EFORMAT,
             "pg_name \"%s\" is not in the "
             "communicator-group file",
             pg);
  const etsim_replay_group_t *gr = &o->groups->g[g];
  int member = 0, root_in = op->peer < 0;
  for (size_t r = 0; r < gr->n_ranks; r++) {
    member |= gr->ranks[r] == o->rank;
    root_in |= gr->ranks[r] == op->peer;
  }
  if (!member) NODE_ERR(ETSIM_EFORMAT, "rank %d is not in process group \"%s\"", o->rank, pg);
  if (!root_in) NODE_ERR(ETSIM_EFORMAT, "root %d is not in process group \"%s\"", op->peer, pg);
  op->group = (int32_t)g;
  return 0;
fail:
  return rc;
}

/* An uneven all-to-all's in_split and out_split, one entry per group
 * rank, appended to p->splits. */
static int coll_splits(etsim_replay_plan_t *p, size_t i, const keys_t *K,
                       const etsim_replay_opts_t *o, etsim_error_t *err) {
  const etsim_et_trace_t *t = p->trace;
  etsim_replay_op_t *op = &p->ops[i];
  int rc = 0;
  etsim_attr_t in, out;
  int hi = int_list(t, i, K->in_split, &in);
  int ho = int_list(t, i, K->out_split, &out);
  if (hi < 0 || ho < 0)
    NODE_ERR(ETSIM_EFORMAT, "%s is not an integer list", hi < 0 ? "in_split" : "out_split");
  if (!hi && !ho) return 0;
  size_t P = op->group >= 0 ? o->groups->g[op->group].n_ranks : (size_t)o->world;
  if (op->coll != ETSIM_COLL_ALL_TO_ALL)
    NODE_ERR(ETSIM_EFORMAT,
             "in_split/out_split on a %s (only "
             "ALL_TO_ALL takes splits)",
             etsim_coll_type_name(op->coll));
  if (!hi || !ho) NODE_ERR(ETSIM_EFORMAT, "in_split and out_split go together");
  if (in.v.list.n != P || out.v.list.n != P)
    NODE_ERR(ETSIM_EFORMAT,
             "in_split has %zu and out_split %zu "
             "entries, the group has %zu ranks",
             in.v.list.n, out.v.list.n, P);
  if ((rc =
           etsim_grow((void **)&p->splits, &p->cap_splits, p->n_splits + 2 * P, sizeof *p->splits)))
    NODE_ERR(ETSIM_ENOMEM, "out of memory");
  op->n_split = (uint32_t)P;
  op->split_off = (uint32_t)p->n_splits;
  for (size_t j = 0; j < 2 * P; j++) {
    int64_t b = list_at(j < P ? &in : &out, j % P);
    if (b < 0)
      NODE_ERR(ETSIM_EFORMAT, "%s[%zu] is negative", j < P ? "in_split" : "out_split", j % P);
    p->splits[p->n_splits++] = scaled(b, o->comm_scale);
  }
  return 0;
fail:
  return rc;
}

/* A collective: its type, root, process group and splits. */
static int map_coll(etsim_replay_plan_t *p, size_t i, const keys_t *K, const etsim_replay_opts_t *o,
                    etsim_error_t *err) {
  const etsim_et_trace_t *t = p->trace;
  etsim_replay_op_t *op = &p->ops[i];
  int rc = 0, have = 0;
  int64_t v = 0;
  if ((rc = int_attr(t, i, K->comm_type, "comm_type", &v, &have, err))) return rc;
  if (!have) NODE_ERR(ETSIM_EFORMAT, "collective without comm_type");
  if (v < 0 || v >= ETSIM_COLL_TYPE_COUNT)
    NODE_ERR(ETSIM_EFORMAT, "unknown collective comm_type %lld", (long long)v);
  op->kind = ETSIM_REPLAY_COLL;
  op->coll = (uint8_t)v;
  /* Rooted collectives: the root as a world rank (comm_src when given,
   * as the Chakra converter records it for broadcast), else 0. */
  if (v == ETSIM_COLL_REDUCE || v == ETSIM_COLL_GATHER || v == ETSIM_COLL_SCATTER ||
      v == ETSIM_COLL_BROADCAST) {
    if ((rc = int_attr(t, i, K->comm_src, "comm_src", &v, &have, err))) return rc;
    op->peer = have ? (int32_t)v : 0;
  }
  if ((rc = coll_group(p, i, o, err))) return rc;
  if (op->peer >= o->world) NODE_ERR(ETSIM_EFORMAT, "root %d outside [0, %d)", op->peer, o->world);
  return coll_splits(p, i, K, o, err);
fail:
  return rc;
}

/* A send or a receive: its peer. */
static int map_p2p(etsim_replay_plan_t *p, size_t i, const keys_t *K, const etsim_replay_opts_t *o,
                   etsim_error_t *err) {
  const etsim_et_trace_t *t = p->trace;
  etsim_replay_op_t *op = &p->ops[i];
  int rc = 0, have = 0, send = t->type[i] == ETSIM_ET_COMM_SEND_NODE;
  int64_t v = 0;
  const char *which = send ? "comm_dst" : "comm_src";
  if ((rc = int_attr(t, i, send ? K->comm_dst : K->comm_src, which, &v, &have, err))) return rc;
  if (!have) NODE_ERR(ETSIM_EFORMAT, "%s without %s", send ? "send" : "receive", which);
  if (v < 0 || v >= o->world)
    NODE_ERR(ETSIM_EFORMAT, "%s %lld outside [0, %d)", which, (long long)v, o->world);
  if (v == o->rank) NODE_ERR(ETSIM_EFORMAT, "%s %lld is the rank itself", which, (long long)v);
  op->kind = send ? ETSIM_REPLAY_SEND : ETSIM_REPLAY_RECV;
  op->peer = (int32_t)v;
  return 0;
fail:
  return rc;
}

/* A communication node: size and tag, then the collective or the
 * point-to-point part. */
static int map_comm(etsim_replay_plan_t *p, size_t i, const keys_t *K, const etsim_replay_opts_t *o,
                    etsim_error_t *err) {
  const etsim_et_trace_t *t = p->trace;
  etsim_replay_op_t *op = &p->ops[i];
  int rc = 0, have = 0, have_type;
  int64_t v = 0, size, ctype;
  if ((rc = int_attr(t, i, K->comm_size, "comm_size", &size, &have, err)) ||
      (rc = int_attr(t, i, K->comm_type, "comm_type", &ctype, &have_type, err)))
    return rc;
  if (!have && !have_type) {
    /* PyTorch-derived traces carry host-side launchers (c10d::*) as
     * communication nodes with neither attribute; the collective itself
     * is a separate kernel node.  Replay the launcher's recorded host
     * time and report it as unmapped. */
    op->kind = op->rec_ns > 0 ? ETSIM_REPLAY_BUSY : ETSIM_REPLAY_NOP;
    op->busy_ns = scaled(op->rec_ns, o->compute_scale);
    op->mapped = 0;
    p->n_unmapped++;
    return 0;
  }
  if (!have) NODE_ERR(ETSIM_EFORMAT, "communication node without comm_size");
  if (size < 0) NODE_ERR(ETSIM_EFORMAT, "comm_size %lld is negative", (long long)size);
  op->bytes = (uint64_t)scaled(size, o->comm_scale);
  if ((rc = int_attr(t, i, K->comm_tag, "comm_tag", &v, &have, err))) return rc;
  op->tag = have ? (int32_t)v : 0;
  if (have && (v < 0 || v > 32767))
    NODE_ERR(ETSIM_EFORMAT, "comm_tag %lld outside [0, 32767]", (long long)v);
  if (t->type[i] == ETSIM_ET_COMM_COLL_NODE) rc = map_coll(p, i, K, o, err);
  else rc = map_p2p(p, i, K, o, err);
  if (!rc) p->n_comm++;
  return rc;
fail:
  return rc;
}

/* A compute or memory node: a GEMM from gemm_m/n/k, from PyTorch input
 * shapes or from num_ops above the ridge; else a stream of tensor_size
 * bytes; else busy for the recorded time. */
static int map_compute(etsim_replay_plan_t *p, size_t i, const keys_t *K,
                       const etsim_replay_opts_t *o, etsim_error_t *err) {
  const etsim_et_trace_t *t = p->trace;
  etsim_replay_op_t *op = &p->ops[i];
  int rc = 0;
  double cs = o->compute_scale;
  int64_t gm, gn, gk;
  int hm = 0, hn = 0, hk = 0;
  if ((rc = int_attr(t, i, K->gemm_m, "gemm_m", &gm, &hm, err)) ||
      (rc = int_attr(t, i, K->gemm_n, "gemm_n", &gn, &hn, err)) ||
      (rc = int_attr(t, i, K->gemm_k, "gemm_k", &gk, &hk, err)))
    return rc;
  if (hm || hn || hk) {
    if (!(hm && hn && hk) || gm < 1 || gn < 1 || gk < 1)
      NODE_ERR(ETSIM_EFORMAT,
               "gemm_m/gemm_n/gemm_k must all be given and "
               "positive");
    op->kind = ETSIM_REPLAY_GEMM;
    op->m = cs == 1.0 ? gm : (scaled(gm, cs) > 0 ? scaled(gm, cs) : 1);
    op->n = gn, op->k = gk, op->batch = 1;
    op->flops = 2.0 * (double)op->m * (double)op->n * (double)op->k;
    return 0;
  }
  const etsim_et_io_t *io = t->io[i] ? &t->ios[t->io[i]] : NULL;
  if (io && (io->flags & 1) && io->in.shapes[0]) {
    int64_t bt;
    int g = pytorch_gemm(t->name[i], io->in.shapes, &gm, &gn, &gk, &bt);
    if (g == 0)
      g = pytorch_conv(t->name[i], io->in.shapes, (io->flags & 2) ? io->out.shapes : NULL, &gm, &gn,
                       &gk, &bt);
    if (g < 0)
      NODE_ERR(ETSIM_EFORMAT,
               "input shapes %s do not fit a matrix "
               "product or convolution",
               io->in.shapes);
    if (g == 1) {
      op->kind = ETSIM_REPLAY_GEMM;
      op->m = cs == 1.0 ? gm : (scaled(gm, cs) > 0 ? scaled(gm, cs) : 1);
      op->n = gn, op->k = gk, op->batch = bt;
      op->flops = 2.0 * (double)op->m * (double)op->n * (double)op->k * (double)bt;
      return 0;
    }
  }
  int64_t num_ops, tsize;
  int hops = 0, hts = 0;
  if ((rc = int_attr(t, i, K->num_ops, "num_ops", &num_ops, &hops, err)) ||
      (rc = int_attr(t, i, K->tensor_size, "tensor_size", &tsize, &hts, err)))
    return rc;
  if (hops && num_ops < 0) NODE_ERR(ETSIM_EFORMAT, "num_ops %lld is negative", (long long)num_ops);
  if (hts && tsize < 0) NODE_ERR(ETSIM_EFORMAT, "tensor_size %lld is negative", (long long)tsize);
  if (hops && num_ops == 0) hops = 0;
  if (hts && tsize == 0) hts = 0;
  int gemm = hops && (!hts || o->ridge_flop_per_byte <= 0 ||
                      (double)num_ops / (double)tsize >= o->ridge_flop_per_byte);
  if (gemm) {
    op->kind = ETSIM_REPLAY_GEMM;
    etsim_replay_gemm_dims((double)num_ops * cs, &op->m, &op->n, &op->k);
    op->batch = 1;
    op->flops = 2.0 * (double)op->m * (double)op->n * (double)op->k;
    return 0;
  }
  if (hts) {
    op->kind = ETSIM_REPLAY_STREAM;
    /* Whole floats, 12 bytes each (two read, one written). */
    uint64_t b = (uint64_t)scaled(tsize, cs);
    op->bytes = (b + 11) / 12 * 12;
    return 0;
  }
  if (op->rec_ns > 0) {
    op->kind = ETSIM_REPLAY_BUSY;
    op->busy_ns = scaled(op->rec_ns, cs);
    return 0;
  }
  op->kind = ETSIM_REPLAY_NOP;
  /* A compute node with no work and no duration: nothing to map. */
  op->mapped = t->type[i] == ETSIM_ET_COMP_NODE ? 0 : 1;
  p->n_unmapped += !op->mapped;
  return 0;
fail:
  return rc;
}

/* Node i of the trace as replay op i: its recorded times, then what it
 * does by node type. */
static int map_node(etsim_replay_plan_t *p, size_t i, const keys_t *K, const etsim_replay_opts_t *o,
                    etsim_error_t *err) {
  const etsim_et_trace_t *t = p->trace;
  etsim_replay_op_t *op = &p->ops[i];
  memset(op, 0, sizeof *op);
  op->id = t->id[i];
  op->name = t->name[i];
  op->node_type = t->type[i];
  op->group = -1;
  op->peer = -1;
  op->mapped = 1;
  /* Recorded times up to 2^61 ns (73 years), so start + duration fits. */
  const uint64_t max_us = ((uint64_t)1 << 61) / 1000;
  if (t->dur_us[i] > max_us || t->start_us[i] > max_us)
    return etsim_error_set(err, ETSIM_ERANGE,
                           "%s: node %llu: start_time_micros %llu or duration_micros %llu is "
                           "beyond %llu us",
                           t->path, (unsigned long long)t->id[i],
                           (unsigned long long)t->start_us[i], (unsigned long long)t->dur_us[i],
                           (unsigned long long)max_us);
  op->rec_ns = (int64_t)t->dur_us[i] * 1000;
  op->rec_start_ns = (int64_t)t->start_us[i] * 1000;
  int type = t->type[i];
  if (type == ETSIM_ET_COMM_COLL_NODE || type == ETSIM_ET_COMM_SEND_NODE ||
      type == ETSIM_ET_COMM_RECV_NODE)
    return map_comm(p, i, K, o, err);
  if (type == ETSIM_ET_METADATA_NODE || type == ETSIM_ET_INVALID_NODE) {
    op->kind = ETSIM_REPLAY_NOP;
    return 0;
  }
  return map_compute(p, i, K, o, err);
}

/* Append unique parents of node i (data then control) to par. */
static size_t node_parents(const etsim_et_trace_t *t, size_t i, unsigned deps, uint32_t *out) {
  size_t n = 0;
  for (uint32_t e = t->data_off[i]; (deps & ETSIM_REPLAY_DEPS_DATA) && e < t->data_off[i + 1];
       e++) {
    uint32_t q = t->data_par[e];
    if (q & ETSIM_ET_DANGLING) continue;
    out[n++] = q;
  }
  for (uint32_t e = t->ctrl_off[i]; (deps & ETSIM_REPLAY_DEPS_CTRL) && e < t->ctrl_off[i + 1];
       e++) {
    uint32_t q = t->ctrl_par[e];
    if (q & ETSIM_ET_DANGLING) continue;
    int dup = 0;
    for (size_t j = 0; j < n && !dup; j++) dup = out[j] == q;
    if (!dup) out[n++] = q;
  }
  /* Data parents may repeat too. */
  size_t w = 0;
  for (size_t a = 0; a < n; a++) {
    int dup = 0;
    for (size_t b = 0; b < w && !dup; b++) dup = out[b] == out[a];
    if (!dup) out[w++] = out[a];
  }
  return w;
}

int etsim_replay_plan_build(etsim_replay_plan_t **out, const etsim_et_trace_t *t,
                            const etsim_replay_opts_t *o, etsim_error_t *err) {
  int rc = 0;
  size_t n = t->n_nodes;
  size_t i = 0;
  etsim_replay_plan_t *p = etsim_calloc(1, sizeof *p);
  uint32_t *tmp = NULL, *indeg = NULL, *queue = NULL;
  if (!p) return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", t->path);
  p->trace = t;
  p->rank = o->rank;
  p->world = o->world;
  p->n_ops = n;
  size_t max_edges = t->n_data_edges + t->n_ctrl_edges;
  p->ops = etsim_calloc(n ? n : 1, sizeof *p->ops);
  p->par_off = etsim_calloc(n + 1, sizeof *p->par_off);
  p->chd_off = etsim_calloc(n + 1, sizeof *p->chd_off);
  p->par = etsim_calloc(max_edges ? max_edges : 1, sizeof *p->par);
  p->chd = etsim_calloc(max_edges ? max_edges : 1, sizeof *p->chd);
  size_t tmp_n = (max_edges > n ? max_edges : n) + 1;
  tmp = etsim_calloc(tmp_n, sizeof *tmp);
  indeg = etsim_calloc(n ? n : 1, sizeof *indeg);
  queue = etsim_calloc(n ? n : 1, sizeof *queue);
  if (!p->ops || !p->par_off || !p->chd_off || !p->par || !p->chd || !tmp || !indeg || !queue) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", t->path);
    goto fail;
  }
  int64_t t0 = INT64_MAX, t1 = 0;
  double total_ns = 0;
  keys_t K;
  keys_init(&K, t);
  for (i = 0; i < n; i++) {
    if ((rc = map_node(p, i, &K, o, err))) goto fail;
    if (t->start_us[i]) {
      int64_t s = (int64_t)t->start_us[i] * 1000;
      if (s < t0) t0 = s;
      if (s + p->ops[i].rec_ns > t1) t1 = s + p->ops[i].rec_ns;
    }
    /* What the replay should take: the recorded time scaled like the
     * node's work, so reports compare like with like. */
    etsim_replay_op_t *op = &p->ops[i];
    op->rec_ns =
        scaled(op->rec_ns, etsim_replay_kind_is_comm(op->kind) ? o->comm_scale : o->compute_scale);
    total_ns += (double)op->rec_ns;
  }
  if (total_ns > PLAN_MAX_TOTAL_NS) {
    rc = etsim_error_set(err, ETSIM_ERANGE,
                         "%s: the recorded durations, scaled, add up to %.3g ns, beyond 2^62 ns",
                         t->path, total_ns);
    goto fail;
  }
  p->rec_span_ns = t0 == INT64_MAX ? 0 : t1 - t0;
  p->n_dangling = ((o->deps & ETSIM_REPLAY_DEPS_DATA) ? t->n_dangling_data : 0) +
                  ((o->deps & ETSIM_REPLAY_DEPS_CTRL) ? t->n_dangling_ctrl : 0);
  /* Parents CSR. */
  size_t e = 0;
  for (i = 0; i < n; i++) {
    p->par_off[i] = (uint32_t)e;
    e += node_parents(t, i, o->deps, p->par + e);
  }
  p->par_off[n] = (uint32_t)e;
  p->n_edges = e;
  /* Children CSR by counting. */
  for (size_t q = 0; q < e; q++) p->chd_off[p->par[q] + 1]++;
  for (i = 0; i < n; i++) p->chd_off[i + 1] += p->chd_off[i];
  memcpy(tmp, p->chd_off, n * sizeof *tmp);
  for (i = 0; i < n; i++)
    for (uint32_t q = p->par_off[i]; q < p->par_off[i + 1]; q++)
      p->chd[tmp[p->par[q]]++] = (uint32_t)i;
  /* Kahn: every node must become ready. */
  size_t head = 0, tail = 0;
  for (i = 0; i < n; i++) {
    indeg[i] = p->par_off[i + 1] - p->par_off[i];
    if (!indeg[i]) queue[tail++] = (uint32_t)i;
  }
  while (head < tail) {
    uint32_t u = queue[head++];
    for (uint32_t q = p->chd_off[u]; q < p->chd_off[u + 1]; q++)
      if (--indeg[p->chd[q]] == 0) queue[tail++] = p->chd[q];
  }
  if (tail < n) {
    for (i = 0; i < n && !indeg[i]; i++)
      ;
    /* Walk parents that are still blocked until one repeats: on a cycle. */
    size_t u = i;
    for (size_t steps = 0; steps <= n; steps++) {
      size_t next = u;
      for (uint32_t q = p->par_off[u]; q < p->par_off[u + 1]; q++)
        if (indeg[p->par[q]]) {
          next = p->par[q];
          break;
        }
      u = next;
    }
    i = u;
    rc = etsim_error_set(err, ETSIM_EFORMAT,
                         "%s: node %llu (%s): on a dependency cycle (%zu "
                         "node(s) can never start)%s",
                         t->path, (unsigned long long)t->id[i], t->name[i], n - tail,
                         o->deps == (ETSIM_REPLAY_DEPS_DATA | ETSIM_REPLAY_DEPS_CTRL)
                             ? "; if ctrl_deps hold a call tree, try --deps data"
                             : "");
    goto fail;
  }
  etsim_free(tmp);
  etsim_free(indeg);
  etsim_free(queue);
  *out = p;
  return 0;
fail:
  etsim_free(tmp);
  etsim_free(indeg);
  etsim_free(queue);
  etsim_replay_plan_free(p);
  return rc;
}

/* ------------------------------------------------------------ critical path */

int etsim_replay_critical_path(const etsim_replay_plan_t *p, int64_t *len_ns, uint32_t *path,
                               size_t *path_len) {
  size_t n = p->n_ops;
  int64_t *fin = etsim_calloc(n ? n : 1, sizeof *fin);
  uint32_t *via = etsim_calloc(n ? n : 1, sizeof *via);
  uint32_t *order = etsim_calloc(n ? n : 1, sizeof *order);
  uint32_t *indeg = etsim_calloc(n ? n : 1, sizeof *indeg);
  if (!fin || !via || !order || !indeg) {
    etsim_free(fin), etsim_free(via), etsim_free(order), etsim_free(indeg);
    return ETSIM_ENOMEM;
  }
  size_t head = 0, tail = 0;
  for (size_t i = 0; i < n; i++) {
    indeg[i] = p->par_off[i + 1] - p->par_off[i];
    if (!indeg[i]) order[tail++] = (uint32_t)i;
  }
  while (head < tail) {
    uint32_t u = order[head++];
    for (uint32_t q = p->chd_off[u]; q < p->chd_off[u + 1]; q++)
      if (--indeg[p->chd[q]] == 0) order[tail++] = p->chd[q];
  }
  int64_t best = 0;
  uint32_t last = UINT32_MAX;
  for (size_t j = 0; j < tail; j++) {
    uint32_t u = order[j];
    int64_t s = 0;
    via[u] = UINT32_MAX;
    for (uint32_t q = p->par_off[u]; q < p->par_off[u + 1]; q++)
      if (via[u] == UINT32_MAX || fin[p->par[q]] > s) {
        s = fin[p->par[q]];
        via[u] = p->par[q];
      }
    fin[u] = s + p->ops[u].rec_ns;
    if (fin[u] > best || last == UINT32_MAX) {
      best = fin[u];
      last = u;
    }
  }
  *len_ns = best;
  if (path && path_len) {
    size_t k = 0;
    for (uint32_t u = last; u != UINT32_MAX; u = via[u]) path[k++] = u;
    for (size_t a = 0; a < k / 2; a++) {
      uint32_t x = path[a];
      path[a] = path[k - 1 - a];
      path[k - 1 - a] = x;
    }
    *path_len = k;
  }
  etsim_free(fin), etsim_free(via), etsim_free(order), etsim_free(indeg);
  return 0;
}
