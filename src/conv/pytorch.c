/*
 * pytorch.c — PyTorch host execution trace (+ Kineto) to Chakra ET.
 *
 * Pass 1 streams the host JSON (pytorch_json.c) into compact records, one
 * per node: id, caller, names interned, the attributes that matter.  Only
 * nodes that may be converted (operators not yet known to sit under
 * another operator, and the process-group record) keep their inputs and
 * outputs, as the Python repr text Chakra writes, plus their tensor ids and
 * communication facts.  Pass 2 (pytorch_kineto.c, optional) streams the
 * Kineto trace and attaches times and GPU kernels.  Then the operators are
 * written in id order with their kernels right after them; every
 * dependency points to a node written earlier, so the graph is acyclic by
 * construction and never names an absent id.
 */
#include "conv/pytorch_conv_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------ helpers */

static int starts_with(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

/* "all_reduce", "allreduce_coalesced", "nccl:all_reduce" -> kind/coll. */
int etsim_conv__pt_comm_kind(const char *name, int *coll) {
  char buf[128];
  size_t n = 0;
  for (const char *p = name; *p && n + 1 < sizeof buf; p++) {
    char c = *p;
    if (c == '_' || c == '-') continue;
    if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
    buf[n++] = c;
  }
  buf[n] = '\0';
  static const struct {
    const char *key;
    int kind, coll;
  } tab[] = {
      {"allreduce", PTC_COLL, ETSIM_COLL_ALL_REDUCE},
      {"reducescatter", PTC_COLL, ETSIM_COLL_REDUCE_SCATTER},
      {"allgather", PTC_COLL, ETSIM_COLL_ALL_GATHER},
      {"alltoall", PTC_COLL, ETSIM_COLL_ALL_TO_ALL},
      {"broadcast", PTC_COLL, ETSIM_COLL_BROADCAST},
      {"barrier", PTC_COLL, ETSIM_COLL_BARRIER},
      {"sendrecv", PTC_UNKNOWN, 0},
      {"send", PTC_SEND, 0},
      {"recv", PTC_RECV, 0},
      {"reduce", PTC_COLL, ETSIM_COLL_REDUCE},
      {"gather", PTC_COLL, ETSIM_COLL_GATHER},
      {"scatter", PTC_COLL, ETSIM_COLL_SCATTER},
  };
  if (strcmp(buf, "wait") == 0) return PTC_WAIT;
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
    if (strstr(buf, tab[i].key)) {
      *coll = tab[i].coll;
      return tab[i].kind;
    }
  return PTC_UNKNOWN;
}

static int64_t jint(const ptv_t *v, int64_t dflt) {
  if (ptv_is_int(v)) return ptv_i(v);
  if (ptv_is_real(v)) return ptc_real_i64(ptv_d(v), dflt);
  if (ptv_is_true(v)) return 1;
  if (ptv_is_false(v)) return 0;
  return dflt;
}

/* Tensor tuple [tensor_id, storage_id, offset, numel, elem_bytes(, device)]. */
static int is_tensor_tuple(const ptv_t *v) {
  if (!ptv_is_arr(v)) return 0;
  size_t n = ptv_arr_len(v);
  if (n != 5 && n != 6) return 0;
  for (size_t i = 0; i < 5; i++)
    if (!ptv_is_int(ptv_at(v, i))) return 0;
  return 1;
}

static uint64_t tensor_key_ids(int64_t tensor_id, int64_t storage_id) {
  uint64_t tid = (uint64_t)tensor_id, sid = (uint64_t)storage_id;
  return etsim_hash_u64(tid * 0x9e3779b97f4a7c15ULL ^ sid) | 1;
}

static uint64_t tensor_key(const ptv_t *t) {
  return tensor_key_ids(ptv_i(ptv_at(t, 0)), ptv_i(ptv_at(t, 1)));
}

/* Walk a Tensor-typed value: add bytes and push tensor keys. */
static int walk_tensors(ptc_t *c, const ptv_t *v, uint64_t *bytes, int depth) {
  if (depth > 8) return 0;
  if (is_tensor_tuple(v)) {
    int64_t numel = ptv_i(ptv_at(v, 3));
    int64_t eb = ptv_i(ptv_at(v, 4));
    /* Saturated at INT64_MAX: absurd sizes stay absurd (and are refused by
     * sim's clock horizon) instead of wrapping to small or negative ones. */
    if (numel > 0 && eb > 0) {
      uint64_t b = (uint64_t)numel > (uint64_t)INT64_MAX / (uint64_t)eb
                       ? (uint64_t)INT64_MAX
                       : (uint64_t)numel * (uint64_t)eb;
      *bytes = *bytes > (uint64_t)INT64_MAX - b ? (uint64_t)INT64_MAX : *bytes + b;
    }
    if (c->n_tkeys + 1 > c->cap_tkeys &&
        etsim_grow((void **)&c->tkeys, &c->cap_tkeys, c->n_tkeys + 1, sizeof *c->tkeys))
      return ETSIM_ENOMEM;
    c->tkeys[c->n_tkeys++] = tensor_key(v);
    return 0;
  }
  if (ptv_is_arr(v)) {
    size_t n = ptv_arr_len(v);
    for (size_t i = 0; i < n; i++) {
      int rc = walk_tensors(c, ptv_at(v, i), bytes, depth + 1);
      if (rc) return rc;
    }
  }
  return 0;
}

/* Tensors of an IO block (values, types): bytes of the Tensor-typed ones. */
static int io_tensors(ptc_t *c, const ptv_t *values, const ptv_t *types, uint64_t *bytes) {
  size_t n = ptv_arr_len(values);
  for (size_t i = 0; i < n; i++) {
    const ptv_t *t = ptv_at(types, i);
    const char *ts = ptv_is_str(t) ? ptv_str(t) : "";
    if (!strstr(ts, "Tensor")) continue;
    int rc = walk_tensors(c, ptv_at(values, i), bytes, 0);
    if (rc) return rc;
  }
  return 0;
}

static const char *arena_repr(ptc_t *c, const ptv_t *v) {
  etsim_conv__pt_repr_reset(&c->tmp);
  if (v ? etsim_conv__pt_repr(&c->tmp, v) : etsim_conv__pt_repr_puts(&c->tmp, "[]")) return NULL;
  return etsim_arena_strndup(&c->arena, c->tmp.data, c->tmp.len);
}

static const char *arena_str(ptc_t *c, const char *s) {
  return etsim_arena_strndup(&c->arena, s, strlen(s));
}

static int intern(ptc_t *c, const char *s, uint32_t *out) {
  int64_t id = etsim_intern_put(&c->names, s, strlen(s));
  if (id < 0) return ETSIM_ENOMEM;
  *out = (uint32_t)id;
  return 0;
}

/* ------------------------------------------------------- process groups */

static int parse_pg_init(ptc_t *c, const ptv_t *values, const ptj_loc_t *loc, uint64_t id,
                         etsim_error_t *err) {
  const ptv_t *s = ptv_at(values, 0);
  if (!ptv_is_str(s)) {
    etsim_warn("%s:%" PRIu64 ":%" PRIu64 ": node %" PRIu64
               ": process_group:init has no String input; no groups read",
               c->host_path, loc->line, loc->col, id);
    return 0;
  }
  /* The input is JSON text inside a JSON string: parse a copy with a
   * parser of its own (the caller's value lives in the stream's). */
  size_t tl = s->n;
  char *copy = etsim_arena_alloc(&c->arena, tl + 1);
  if (!copy) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  memcpy(copy, ptv_str(s), tl + 1);
  ptv_parser_t pp;
  etsim_conv__pt_value_parser_init(&pp);
  ptv_t root;
  size_t epos = 0;
  const char *ewhat = "";
  int prc = etsim_conv__pt_value_parse(&pp, copy, tl, &root, &epos, &ewhat);
  if (prc == ETSIM_ENOMEM) {
    etsim_conv__pt_value_parser_free(&pp);
    return etsim_error_set(err, prc, "out of memory");
  }
  if (prc || !ptv_is_arr(&root)) {
    etsim_warn("%s:%" PRIu64 ":%" PRIu64 ": node %" PRIu64
               ": process_group:init input is not a JSON list (%s); no "
               "groups read",
               c->host_path, loc->line, loc->col, id, prc ? ewhat : "not a list");
    etsim_conv__pt_value_parser_free(&pp);
    return 0;
  }
  const ptv_t *list = &root;
  size_t n = ptv_arr_len(list);
  for (size_t i = 0; i < n; i++) {
    const ptv_t *g = ptv_at(list, i);
    if (!ptv_is_obj(g)) continue;
    const ptv_t *nm = etsim_conv__pt_value_get(g, "pg_name");
    char name[64];
    if (ptv_is_str(nm)) snprintf(name, sizeof name, "%s", ptv_str(nm));
    else if (ptv_is_int(nm)) snprintf(name, sizeof name, "%lld", (long long)ptv_i(nm));
    else continue;
    if (etsim_grow((void **)&c->pgs, &c->cap_pgs, c->n_pgs + 1, sizeof *c->pgs)) goto nomem;
    ptc_pg_t *pg = &c->pgs[c->n_pgs];
    memset(pg, 0, sizeof *pg);
    pg->name = arena_str(c, name);
    pg->backend_id = jint(etsim_conv__pt_value_get(g, "backend_id"), -1);
    pg->group_size = jint(etsim_conv__pt_value_get(g, "group_size"), 0);
    const ptv_t *ranks = etsim_conv__pt_value_get(g, "ranks");
    size_t nr = ptv_arr_len(ranks);
    if (nr) {
      pg->ranks = etsim_arena_alloc(&c->arena, nr * sizeof *pg->ranks);
      if (!pg->ranks) goto nomem;
      for (size_t k = 0; k < nr; k++) pg->ranks[k] = jint(ptv_at(ranks, k), 0);
      pg->n_ranks = nr;
    } else if (ptv_is_obj(ranks)) {
      /* Newer PyTorch writes {"global": local, ...}. */
      size_t no = ranks->n;
      pg->ranks = etsim_arena_alloc(&c->arena, (no ? no : 1) * sizeof(int64_t));
      if (!pg->ranks) goto nomem;
      for (size_t k = 0; k < no; k++)
        pg->ranks[pg->n_ranks++] = strtoll(ranks->u.items[2 * k].u.s, NULL, 10);
    }
    if (!pg->name) goto nomem;
    c->n_pgs++;
  }
  etsim_conv__pt_value_parser_free(&pp);
  /* A group without a rank list stands for ranks 0 .. group_size-1, which
   * the groups file spells out: 'group_size': 1e8 was a 989 MB file from a
   * few bytes.  Such groups may claim at most as many ranks, together, as
   * a rank set may have. */
  uint64_t implied = 0;
  for (size_t i = 0; i < c->n_pgs; i++) {
    const ptc_pg_t *pg = &c->pgs[i];
    if (pg->n_ranks) continue;
    if (pg->group_size < 0 || (uint64_t)pg->group_size > ETSIM_ET_MAX_RANKS - implied)
      return etsim_error_set(
          err, ETSIM_ERANGE,
          "%s:%" PRIu64 ":%" PRIu64 ": node %" PRIu64 ": process group '%s': group_size %" PRId64
          " without a rank list (with the groups before it, more than "
          "%zu ranks)",
          c->host_path, loc->line, loc->col, id, pg->name, pg->group_size, ETSIM_ET_MAX_RANKS);
    implied += (uint64_t)pg->group_size;
  }
  return 0;
nomem:
  etsim_conv__pt_value_parser_free(&pp);
  return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
}

static const char *pg_by_backend(const ptc_t *c, int64_t backend) {
  for (size_t i = 0; i < c->n_pgs; i++)
    if (c->pgs[i].backend_id == backend && backend >= 0) return c->pgs[i].name;
  return NULL;
}

/* --------------------------------------------------------- host nodes */

/* The attributes the converter reads, found in one pass over the node's
 * attrs list (or, in the 1.0.1 layout, its top-level keys). */
enum {
  A_RF_ID,
  A_FW_PARENT,
  A_SEQ_ID,
  A_SCOPE,
  A_TID,
  A_FW_TID,
  A_OP_SCHEMA,
  A_KERNEL_BACKEND,
  A_COLLECTIVE_NAME,
  A_PG_NAME,
  A_GLOBAL_RANK_START,
  A_GLOBAL_RANK_STRIDE,
  A_COUNT
};
static const char *const attr_names[A_COUNT] = {"rf_id",
                                                "fw_parent",
                                                "seq_id",
                                                "scope",
                                                "tid",
                                                "fw_tid",
                                                "op_schema",
                                                "kernel_backend",
                                                "collective_name",
                                                "pg_name",
                                                "global_rank_start",
                                                "global_rank_stride"};

typedef struct nodeview {
  const ptv_t *in_values, *in_shapes, *in_types;
  const ptv_t *out_values, *out_shapes, *out_types;
  const ptv_t *a[A_COUNT];
  int legacy;
} nodeview_t;

static void attr_note(nodeview_t *v, const char *name, const ptv_t *val) {
  for (int k = 0; k < A_COUNT; k++)
    if (name[0] == attr_names[k][0] && strcmp(name, attr_names[k]) == 0) {
      if (!v->a[k]) v->a[k] = val;
      return;
    }
}

static void attr_collect(nodeview_t *v, const ptv_t *node, const ptv_t *attrs) {
  if (v->legacy) {
    for (uint32_t i = 0; i < node->n; i++)
      attr_note(v, node->u.items[2 * i].u.s, &node->u.items[2 * i + 1]);
    return;
  }
  for (size_t i = 0; i < ptv_arr_len(attrs); i++) {
    const ptv_t *a = ptv_at(attrs, i);
    const char *nm = ptv_str(etsim_conv__pt_value_get(a, "name"));
    if (nm) attr_note(v, nm, etsim_conv__pt_value_get(a, "value"));
  }
}

static const ptv_t *attr_get(const nodeview_t *v, int which) { return v->a[which]; }

/* Communication facts of a record_param_comms / nccl:* node. */
static int comm_facts(ptc_t *c, ptc_ext_t *e, const nodeview_t *v, const char *name) {
  const ptv_t *cn = attr_get(v, A_COLLECTIVE_NAME);
  const ptv_t *pg = attr_get(v, A_PG_NAME);
  size_t n = ptv_arr_len(v->in_values), i = 0;
  const char *coll_name = ptv_is_str(cn) ? ptv_str(cn) : NULL;
  e->seq = -1;
  e->rank_arg = -1;
  e->grs = jint(attr_get(v, A_GLOBAL_RANK_START), -1);
  e->grstride = jint(attr_get(v, A_GLOBAL_RANK_STRIDE), -1);
  if (strcmp(name, "record_param_comms") == 0) {
    /* [tensors?, seq | [seq, isP2P], pg, rank, coll_name, ...] */
    while (i < n) {
      const ptv_t *t = ptv_at(v->in_types, i);
      if (ptv_is_str(t) && strstr(ptv_str(t), "Tensor")) i++;
      else break;
    }
    const ptv_t *x = ptv_at(v->in_values, i);
    if (ptv_is_arr(x)) x = ptv_at(x, 0);
    e->seq = jint(x, -1);
    x = ptv_at(v->in_values, i + 1);
    if (!ptv_is_str(pg)) {
      if (ptv_is_arr(x) && ptv_is_str(ptv_at(x, 0))) pg = ptv_at(x, 0);
      else if (ptv_is_int(x)) e->backend_id = ptv_i(x); /* named once all groups are read */
    }
    e->rank_arg = jint(ptv_at(v->in_values, i + 2), -1);
    x = ptv_at(v->in_values, i + 3);
    if (!coll_name && ptv_is_str(x)) coll_name = ptv_str(x);
  } else if (starts_with(name, "nccl:")) {
    coll_name = name + 5;
  }
  if (ptv_is_str(pg) && !e->pg_name) {
    e->pg_name = arena_str(c, ptv_str(pg));
    if (!e->pg_name) return ETSIM_ENOMEM;
  }
  e->coll_name = arena_str(c, coll_name ? coll_name : "");
  if (!e->coll_name) return ETSIM_ENOMEM;
  e->kind = coll_name ? etsim_conv__pt_comm_kind(coll_name, &e->coll) : PTC_UNKNOWN;
  return 0;
}

/* Record id -> idx: 1 inserted, 0 present (*old set), or ETSIM_ENOMEM. */
static int id_put(ptc_t *c, uint64_t id, uint32_t idx, uint32_t *old) {
  if (id >= PTC_DIRECT_IDS) return etsim_u64map_put(&c->by_id, id, idx, old);
  if (id >= c->id_cap) {
    size_t cap = c->id_cap;
    if (etsim_grow((void **)&c->id_tab, &cap, (size_t)id + 1, sizeof *c->id_tab))
      return ETSIM_ENOMEM;
    memset(c->id_tab + c->id_cap, 0, (cap - c->id_cap) * sizeof *c->id_tab);
    c->id_cap = cap;
  }
  if (c->id_tab[id]) {
    *old = c->id_tab[id] - 1;
    return 0;
  }
  c->id_tab[id] = idx + 1;
  return 1;
}

static int fail_node(ptc_t *c, const ptj_loc_t *loc, uint64_t index, int have_id, uint64_t id,
                     etsim_error_t *err, const char *fmt, const char *what) {
  char idtxt[64];
  if (have_id) snprintf(idtxt, sizeof idtxt, "node id %" PRIu64, id);
  else snprintf(idtxt, sizeof idtxt, "nodes[%" PRIu64 "]", index);
  char msg[400];
  snprintf(msg, sizeof msg, fmt, what);
  return etsim_error_set(err, ETSIM_EFORMAT, "%s:%" PRIu64 ":%" PRIu64 ": %s: %s", c->host_path,
                         loc->line, loc->col, idtxt, msg);
}

/* The parts of a node element both passes read: id, name, caller, and
 * the view of its inputs, outputs and attributes (checked). */
static int node_view(ptc_t *c, const ptv_t *n, uint64_t index, const ptj_loc_t *loc,
                     nodeview_t *vout, uint64_t *out_id, const char **out_name,
                     const ptv_t **out_par, etsim_error_t *err) {
  if (!ptv_is_obj(n)) return fail_node(c, loc, index, 0, 0, err, "%s", "is not a JSON object");
  const ptv_t *jid = etsim_conv__pt_value_get(n, "id");
  if (!ptv_is_int(jid) || ptv_i(jid) < 0)
    return fail_node(c, loc, index, 0, 0, err, "%s", "missing or non-integer 'id'");
  uint64_t id = (uint64_t)ptv_i(jid);
  const ptv_t *jname = etsim_conv__pt_value_get(n, "name");
  if (!ptv_is_str(jname))
    return fail_node(c, loc, index, 1, id, err, "%s", "missing or non-string 'name'");
  const char *name = ptv_str(jname);
  nodeview_t v = {0};
  const ptv_t *jpar = etsim_conv__pt_value_get(n, "ctrl_deps");
  if (!jpar && etsim_conv__pt_value_get(n, "parent")) {
    v.legacy = 1;
    jpar = etsim_conv__pt_value_get(n, "parent");
  }
  if (jpar && !ptv_is_int(jpar) && !ptv_is_null(jpar))
    return fail_node(c, loc, index, 1, id, err, "'%s' is not an integer",
                     v.legacy ? "parent" : "ctrl_deps");
  if (v.legacy) {
    attr_collect(&v, n, NULL);
    v.in_values = etsim_conv__pt_value_get(n, "inputs");
    v.in_shapes = etsim_conv__pt_value_get(n, "input_shapes");
    v.in_types = etsim_conv__pt_value_get(n, "input_types");
    v.out_values = etsim_conv__pt_value_get(n, "outputs");
    v.out_shapes = etsim_conv__pt_value_get(n, "output_shapes");
    v.out_types = etsim_conv__pt_value_get(n, "output_types");
  } else {
    const ptv_t *in = etsim_conv__pt_value_get(n, "inputs");
    const ptv_t *out = etsim_conv__pt_value_get(n, "outputs");
    if (in && !ptv_is_obj(in))
      return fail_node(c, loc, index, 1, id, err, "%s",
                       "'inputs' is not an object {values, shapes, types} "
                       "(schema 1.0.1 traces have 'parent' next to a list)");
    const ptv_t *attrs = etsim_conv__pt_value_get(n, "attrs");
    if (attrs && !ptv_is_arr(attrs))
      return fail_node(c, loc, index, 1, id, err, "%s", "'attrs' is not a list");
    attr_collect(&v, n, attrs);
    v.in_values = etsim_conv__pt_value_get(in, "values");
    v.in_shapes = etsim_conv__pt_value_get(in, "shapes");
    v.in_types = etsim_conv__pt_value_get(in, "types");
    v.out_values = etsim_conv__pt_value_get(out, "values");
    v.out_shapes = etsim_conv__pt_value_get(out, "shapes");
    v.out_types = etsim_conv__pt_value_get(out, "types");
  }
  if ((v.in_values && !ptv_is_arr(v.in_values)) || (v.in_types && !ptv_is_arr(v.in_types)) ||
      (v.out_values && !ptv_is_arr(v.out_values)) || (v.out_types && !ptv_is_arr(v.out_types)))
    return fail_node(c, loc, index, 1, id, err, "%s", "input/output values or types are not lists");
  *vout = v;
  *out_id = id;
  *out_name = name;
  *out_par = jpar;
  return 0;
}

/* A converted node's IO as pass 2's fast path prepares it from the text:
 * the six repr texts (inputs values, shapes, types, then outputs) at
 * text->data + off[k], and the tensor keys, the n_in of the inputs first. */
typedef struct ext_io {
  const ptr_buf_t *text;
  size_t off[6], len[6];
  const uint64_t *keys;
  size_t n_in, n_keys;
  uint64_t in_bytes; /* bytes of the input tensors */
} ext_io_t;

static int build_ext(ptc_t *c, ptc_node_t *h, const ptv_t *hts, const ptv_t *hdur, const ptv_t *itd,
                     const nodeview_t *v, const char *name, const ext_io_t *pre);

int etsim_conv__pt_no_fast = 0;

/* What pass 1 decides a node by, from its tree or from the fast scan. */
typedef struct hostfacts {
  uint64_t id;
  const char *name; /* NUL-terminated */
  int has_parent;   /* ctrl_deps / parent is an integer */
  uint64_t parent;
  int64_t rf_id;
  int has_schema; /* op_schema is a non-empty string */
  int triton;     /* kernel_backend is "triton" */
  int timed;      /* ts and inclusive_dur are numbers */
} hostfacts_t;

/*
 * Record a host node (pass 1).  `n` and `v` are its tree and view; with
 * n NULL (the fast path) the node has no `cat` and is not legacy, and
 * PTJ_SLOW is returned, before anything is changed, when the node needs
 * its tree after all (a converted operator whose caller is known, the
 * process-group record) or repeats an id (the tree path reports it).
 */
static int host_record(ptc_t *c, const hostfacts_t *f, const ptv_t *n, const nodeview_t *v,
                       uint64_t index, const ptj_loc_t *loc, etsim_error_t *err) {
  uint64_t id = f->id;
  const char *name = f->name;
  int has_parent = f->has_parent && f->parent != id;
  int rpc = strcmp(name, "record_param_comms") == 0;
  int nccl = starts_with(name, "nccl:");
  int pginit = strstr(name, "process_group:init") != NULL;
  int oplike = rpc || nccl || f->triton || (f->has_schema && !starts_with(name, "c10d::"));
  /* Is it under an operator?  Known when the caller was already seen. */
  int known = 0, inside = 0;
  if (!has_parent) {
    known = 1;
  } else {
    uint32_t pi;
    if (ptc_find(c, f->parent, &pi) && (c->nodes[pi].flags & PTC_F_KNOWN)) {
      known = 1;
      inside = (c->nodes[pi].flags & (PTC_F_OPLIKE | PTC_F_INSIDE)) != 0;
    }
  }
  if (!n) {
    uint32_t old;
    if (pginit || (oplike && known && !inside) || ptc_find(c, id, &old)) return PTJ_SLOW;
  }

  /* The record. */
  if (etsim_grow((void **)&c->nodes, &c->cap_nodes, c->n_nodes + 1, sizeof *c->nodes))
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  uint32_t idx = (uint32_t)c->n_nodes;
  uint32_t prev;
  int put = id_put(c, id, idx, &prev);
  if (put < 0) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  if (put == 0)
    return fail_node(c, loc, index, 1, id, err, "%s",
                     "the id repeats an earlier node's (ids must be unique)");
  ptc_node_t *h = &c->nodes[c->n_nodes++];
  memset(h, 0, sizeof *h);
  h->id = id;
  h->ext = UINT32_MAX;
  if (f->has_parent) {
    h->parent = f->parent;
    if (has_parent) h->flags |= PTC_F_HAS_PARENT;
  }
  int rc = intern(c, name, &h->name);
  if (rc) return etsim_error_set(err, rc, "out of memory");
  h->rf_id = f->rf_id;
  /* Times written by chakra_trace_link (ET+), used when Kineto is absent. */
  if (f->timed) h->flags |= PTC_F_TIMED;

  /* A GPU node added by chakra_trace_link (ET+): a kernel of its caller. */
  const ptv_t *cat = n ? etsim_conv__pt_value_get(n, "cat") : NULL;
  if (ptv_is_str(cat)) {
    const ptv_t *hts = etsim_conv__pt_value_get(n, "ts");
    const ptv_t *hdur = etsim_conv__pt_value_get(n, "inclusive_dur");
    if (etsim_grow((void **)&c->evs, &c->cap_evs, c->n_evs + 1, sizeof *c->evs))
      return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    ptk_ev_t *g = &c->evs[c->n_evs++];
    memset(g, 0, sizeof *g);
    g->cls = PTK_GPU;
    g->name = h->name;
    g->ts_ns = ptc_us_ok(hts) ? ptc_us_to_ns(hts) : 0;
    g->dur_ns = ptc_us_ok(hdur) ? ptc_us_to_ns(hdur) : 0;
    g->stream = jint(etsim_conv__pt_value_get(n, "stream"), 0);
    g->corr = -1;
    g->parent = g->op = UINT32_MAX;
    g->host = UINT32_MAX; /* the caller's index, settled after reading */
    g->key = (int64_t)h->parent;
    g->node_id = id;
    h->flags |= PTC_F_KNOWN | PTC_F_INSIDE; /* never converted itself */
    return 0;
  }

  if (pginit) h->flags |= PTC_F_PGINIT;
  if (starts_with(name, "ProfilerStep#")) c->host_profiler_steps++;
  if (oplike) h->flags |= PTC_F_OPLIKE;
  if (rpc || nccl) h->flags |= PTC_F_COMM;
  if (known) h->flags |= PTC_F_KNOWN | (inside ? PTC_F_INSIDE : 0);
  if (h->flags & PTC_F_PGINIT) {
    rc = parse_pg_init(c, v->in_values, loc, id, err);
    if (rc) return rc;
  }
  if ((h->flags & PTC_F_OPLIKE) && !known && !(h->flags & PTC_F_PGINIT)) {
    /* The caller comes later (PyTorch writes a node when it completes):
     * settled after reading, and read again if it is converted. */
    h->flags |= PTC_F_DEFER;
    if (loc->length < UINT32_MAX) {
      if (etsim_grow((void **)&c->defer, &c->cap_defer, c->n_defer + 1, sizeof *c->defer))
        return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
      struct ptc_defer *d = &c->defer[c->n_defer++];
      d->node = (uint32_t)(h - c->nodes);
      d->len = (uint32_t)loc->length;
      d->off = loc->offset;
    }
    return 0;
  }
  if (!(h->flags & PTC_F_PGINIT) && !((h->flags & PTC_F_OPLIKE) && !inside)) return 0;
  if ((rc = build_ext(c, h, etsim_conv__pt_value_get(n, "ts"),
                      etsim_conv__pt_value_get(n, "inclusive_dur"),
                      etsim_conv__pt_value_get(n, "inter_thread_dep"), v, name, NULL)))
    return etsim_error_set(err, rc, "out of memory");
  return 0;
}

static int on_host_node(void *user, const ptv_t *n, uint64_t index, const ptj_loc_t *loc,
                        etsim_error_t *err) {
  ptc_t *c = user;
  nodeview_t v;
  hostfacts_t f;
  const ptv_t *jpar;
  int rc = node_view(c, n, index, loc, &v, &f.id, &f.name, &jpar, err);
  if (rc) return rc;
  if (v.legacy) c->n_legacy++;
  f.has_parent = jpar && ptv_is_int(jpar);
  f.parent = f.has_parent ? (uint64_t)ptv_i(jpar) : 0;
  f.rf_id = jint(attr_get(&v, A_RF_ID), -1);
  const ptv_t *os = attr_get(&v, A_OP_SCHEMA);
  f.has_schema = ptv_is_str(os) && ptv_str(os)[0];
  const ptv_t *kb = attr_get(&v, A_KERNEL_BACKEND);
  f.triton = ptv_is_str(kb) && strcmp(ptv_str(kb), "triton") == 0;
  f.timed = ptv_is_num(etsim_conv__pt_value_get(n, "ts")) &&
            ptv_is_num(etsim_conv__pt_value_get(n, "inclusive_dur"));
  return host_record(c, &f, n, &v, index, loc, err);
}

/* 0 when a scanned node passes node_view's checks and has neither the
 * 1.0.1 layout nor a `cat` (an ET+ GPU node), else PTJ_SLOW. */
static int pts_view_ok(const pts_node_t *n) {
  uint32_t h = n->have;
  if (!(h & PTS_ID) || n->id.t != PTV_INT || n->id.u.i < 0 || !(h & PTS_NAME) ||
      n->name.t != PTV_STR)
    return PTJ_SLOW;
  if (!(h & PTS_CTRL_DEPS) && (h & PTS_PARENT)) return PTJ_SLOW; /* the 1.0.1 layout */
  if ((h & PTS_CTRL_DEPS) && n->ctrl_deps.t != PTV_INT && n->ctrl_deps.t != PTV_NULL)
    return PTJ_SLOW;
  if (((h & PTS_INPUTS) && n->inputs.t != PTV_OBJ) || ((h & PTS_ATTRS) && n->attrs.t != PTV_ARR) ||
      ((h & PTS_IN_VALUES) && n->in_values.t != PTV_ARR) ||
      ((h & PTS_IN_TYPES) && n->in_types.t != PTV_ARR) ||
      ((h & PTS_OUT_VALUES) && n->out_values.t != PTV_ARR) ||
      ((h & PTS_OUT_TYPES) && n->out_types.t != PTV_ARR))
    return PTJ_SLOW;
  if ((h & PTS_CAT) && n->cat.t == PTV_STR) return PTJ_SLOW; /* an ET+ GPU node */
  return 0;
}

/* jint of a scanned scalar (pts_node_t fields are never composites with
 * items, so this is jint's answer for the tree too). */
static int64_t pts_jint(uint32_t have, uint32_t bit, const ptv_t *v, int64_t dflt) {
  return have & bit ? jint(v, dflt) : dflt;
}

/* Pass 1's fast path (see ptj_fast_fn): the node read by etsim_conv__pt_scan_host_node
 * and checked as node_view checks it; anything node_view would refuse,
 * and the rare nodes that need their tree, go to the tree path. */
static int on_host_fast(void *user, const char *s, size_t avail, uint64_t index, uint64_t offset,
                        size_t *used, etsim_error_t *err) {
  ptc_t *c = user;
  (void)avail;
  pts_node_t n;
  if (etsim_conv__pt_scan_host_node(s, &n, used)) return PTJ_SLOW;
  if (pts_view_ok(&n)) return PTJ_SLOW;
  uint32_t h = n.have;
  char name[256];
  if (n.name.n >= sizeof name || memchr(n.name.u.s, '\0', n.name.n)) return PTJ_SLOW;
  memcpy(name, n.name.u.s, n.name.n);
  name[n.name.n] = '\0';
  hostfacts_t f;
  f.id = (uint64_t)n.id.u.i;
  f.name = name;
  f.has_parent = (h & PTS_CTRL_DEPS) && n.ctrl_deps.t == PTV_INT;
  f.parent = f.has_parent ? (uint64_t)n.ctrl_deps.u.i : 0;
  f.rf_id = pts_jint(h, PTS_RF_ID, &n.rf_id, -1);
  f.has_schema = (h & PTS_OP_SCHEMA) && n.op_schema.t == PTV_STR && n.op_schema.n > 0;
  f.triton = (h & PTS_KERNEL_BACKEND) && n.kernel_backend.t == PTV_STR && n.kernel_backend.n == 6 &&
             memcmp(n.kernel_backend.u.s, "triton", 6) == 0;
  f.timed = (h & PTS_TS) && (h & PTS_DUR) && ptv_is_num(&n.ts) && ptv_is_num(&n.dur);
  ptj_loc_t loc = {0, 0, offset, *used};
  return host_record(c, &f, NULL, NULL, index, &loc, err);
}

/* Keep what the output needs of a converted node: hts, hdur and itd are
 * its ts, inclusive_dur and inter_thread_dep (NULL when absent).  Strings
 * are read by their length (n), so scanned ones need no terminator. */
static int build_ext(ptc_t *c, ptc_node_t *h, const ptv_t *hts, const ptv_t *hdur, const ptv_t *itd,
                     const nodeview_t *v, const char *name, const ext_io_t *pre) {
  etsim_error_t *err = NULL;
  const ptv_t *os = attr_get(v, A_OP_SCHEMA);
  int timed = ptc_us_ok(hts) && ptc_us_ok(hdur); /* a time out of range is no time */
  if (etsim_grow((void **)&c->exts, &c->cap_exts, c->n_exts + 1, sizeof *c->exts))
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  ptc_ext_t *e = &c->exts[c->n_exts];
  memset(e, 0, sizeof *e);
  h->ext = (uint32_t)c->n_exts++;
  e->fw_parent = jint(attr_get(v, A_FW_PARENT), 0);
  e->seq_id = jint(attr_get(v, A_SEQ_ID), -1);
  e->scope = jint(attr_get(v, A_SCOPE), 0);
  e->tid = jint(attr_get(v, A_TID), 0);
  e->fw_tid = jint(attr_get(v, A_FW_TID), 0);
  e->itd = jint(itd, -1);
  if (timed) {
    e->ts_ns = ptc_us_to_ns(hts);
    e->dur_ns = ptc_us_to_ns(hdur);
  }
  e->op_schema = ptv_is_str(os) ? etsim_arena_strndup(&c->arena, os->u.s, os->n) : arena_str(c, "");
  if (pre) {
    const char **dst[6] = {&e->in_values,  &e->in_shapes,  &e->in_types,
                           &e->out_values, &e->out_shapes, &e->out_types};
    for (int k = 0; k < 6; k++)
      *dst[k] = etsim_arena_strndup(&c->arena, pre->text->data + pre->off[k], pre->len[k]);
  } else {
    e->in_values = arena_repr(c, v->in_values);
    e->in_shapes = arena_repr(c, v->in_shapes);
    e->in_types = arena_repr(c, v->in_types);
    e->out_values = arena_repr(c, v->out_values);
    e->out_shapes = arena_repr(c, v->out_shapes);
    e->out_types = arena_repr(c, v->out_types);
  }
  if (!e->op_schema || !e->in_values || !e->in_shapes || !e->in_types || !e->out_values ||
      !e->out_shapes || !e->out_types)
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  e->backend_id = -1;
  e->tin_off = (uint32_t)c->n_tkeys;
  uint64_t in_bytes = 0, out_bytes = 0;
  if (pre) {
    if (c->n_tkeys + pre->n_keys > c->cap_tkeys &&
        etsim_grow((void **)&c->tkeys, &c->cap_tkeys, c->n_tkeys + pre->n_keys, sizeof *c->tkeys))
      return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    if (pre->n_keys) memcpy(c->tkeys + c->n_tkeys, pre->keys, pre->n_keys * sizeof *c->tkeys);
    c->n_tkeys += pre->n_in;
    e->tin_n = (uint32_t)pre->n_in;
    e->tout_off = (uint32_t)c->n_tkeys;
    c->n_tkeys += pre->n_keys - pre->n_in;
    e->tout_n = (uint32_t)(pre->n_keys - pre->n_in);
    in_bytes = pre->in_bytes;
  } else {
    if (io_tensors(c, v->in_values, v->in_types, &in_bytes))
      return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    e->tin_n = (uint32_t)(c->n_tkeys - e->tin_off);
    e->tout_off = (uint32_t)c->n_tkeys;
    if (io_tensors(c, v->out_values, v->out_types, &out_bytes))
      return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    e->tout_n = (uint32_t)(c->n_tkeys - e->tout_off);
  }
  e->comm_bytes = in_bytes;
  if (h->flags & PTC_F_COMM) {
    if (comm_facts(c, e, v, name)) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  return 0;
}

/* Pass 2: the converted nodes whose caller came after them. */
static int on_host_node2(void *user, const ptv_t *n, uint64_t index, const ptj_loc_t *loc,
                         etsim_error_t *err) {
  ptc_t *c = user;
  nodeview_t v;
  uint64_t id;
  const char *name;
  const ptv_t *jpar;
  int rc = node_view(c, n, index, loc, &v, &id, &name, &jpar, err);
  if (rc) return rc;
  (void)jpar;
  if (index >= c->n_nodes || c->nodes[index].id != id)
    return etsim_error_set(err, ETSIM_EFORMAT,
                           "%s:%" PRIu64 ":%" PRIu64 ": node id %" PRIu64
                           ": the file changed while it was being read",
                           c->host_path, loc->line, loc->col, id);
  if ((rc = build_ext(c, &c->nodes[index], etsim_conv__pt_value_get(n, "ts"),
                      etsim_conv__pt_value_get(n, "inclusive_dur"),
                      etsim_conv__pt_value_get(n, "inter_thread_dep"), &v, name, NULL)))
    return etsim_error_set(err, rc, "out of memory");
  return 0;
}

static int collect_tensor(void *ctx, const int64_t t[5]) {
  fast2_t *f = ctx;
  if (t[3] > 0 && t[4] > 0) f->bytes += (uint64_t)t[3] * (uint64_t)t[4];
  if (f->n_keys + 1 > f->cap_keys &&
      etsim_grow((void **)&f->keys, &f->cap_keys, f->n_keys + 1, sizeof *f->keys))
    return ETSIM_ENOMEM;
  f->keys[f->n_keys++] = tensor_key_ids(t[0], t[1]);
  return 0;
}

/*
 * Pass 2's fast path: a deferred node that is converted, from its bytes
 * buf[0..len) (len 0: as long as the element at buf is, its length then
 * going to *used_out; the bytes end in a NUL; buf is not changed).  The scanner reads its
 * attributes, and its repr texts and tensors are made from the text of its
 * inputs and outputs, as the tree path makes them from the parsed values.
 * PTJ_SLOW, before anything is changed, when the tree path must take it
 * (communication records, anything the scanner declines, an id that is not
 * the one read in pass 1); ETSIM_ENOMEM.
 */
static int host_node2_fast(ptc_t *c, const char *buf, size_t len, size_t *used_out,
                           uint32_t index) {
  fast2_t *f = &c->f2;
  pts_node_t n;
  size_t used = 0;
  if (etsim_conv__pt_scan_host_node(buf, &n, &used) || (len && used != len) || pts_view_ok(&n) ||
      index >= c->n_nodes)
    return PTJ_SLOW;
  if (used_out) *used_out = used;
  ptc_node_t *h = &c->nodes[index];
  if ((uint64_t)n.id.u.i != h->id || (h->flags & (PTC_F_COMM | PTC_F_PGINIT))) return PTJ_SLOW;
  uint32_t have = n.have;
  nodeview_t v;
  memset(&v, 0, sizeof v);
  v.a[A_FW_PARENT] = have & PTS_FW_PARENT ? &n.fw_parent : NULL;
  v.a[A_SEQ_ID] = have & PTS_SEQ_ID ? &n.seq_id : NULL;
  v.a[A_SCOPE] = have & PTS_SCOPE ? &n.scope : NULL;
  v.a[A_TID] = have & PTS_TID ? &n.tid : NULL;
  v.a[A_FW_TID] = have & PTS_FW_TID ? &n.fw_tid : NULL;
  v.a[A_OP_SCHEMA] = have & PTS_OP_SCHEMA ? &n.op_schema : NULL;
  ext_io_t io;
  etsim_conv__pt_repr_reset(&f->text);
  for (int k = 0; k < 6; k++) {
    const char *at = n.io_at[k / 3][k % 3];
    io.off[k] = f->text.len;
    int rc = at ? etsim_conv__pt_scan_repr(&f->text, at, n.io_len[k / 3][k % 3])
                : etsim_conv__pt_repr_putn(&f->text, "[]", 2); /* absent, as arena_repr */
    if (rc) return rc == PTJ_SLOW ? PTJ_SLOW : ETSIM_ENOMEM;
    io.len[k] = f->text.len - io.off[k];
  }
  f->n_keys = 0;
  f->bytes = 0;
  int rc = etsim_conv__pt_scan_tensors(n.io_at[0][0], n.io_len[0][0], n.io_at[0][2], n.io_len[0][2],
                                       collect_tensor, f);
  io.n_in = f->n_keys;
  io.in_bytes = f->bytes;
  if (!rc)
    rc = etsim_conv__pt_scan_tensors(n.io_at[1][0], n.io_len[1][0], n.io_at[1][2], n.io_len[1][2],
                                     collect_tensor, f);
  if (rc) return rc == PTJ_SLOW ? PTJ_SLOW : ETSIM_ENOMEM;
  io.text = &f->text;
  io.keys = f->keys;
  io.n_keys = f->n_keys;
  rc = build_ext(c, h, have & PTS_TS ? &n.ts : NULL, have & PTS_DUR ? &n.dur : NULL,
                 have & PTS_ITD ? &n.itd : NULL, &v, "", &io);
  return rc ? ETSIM_ENOMEM : 0;
}

/* Pass 2 on a re-stream (gzip input): host_node2_fast as the stream's
 * fast path, for the wanted elements (the element index is the node's). */
static int on_host_fast2(void *user, const char *s, size_t avail, uint64_t index, uint64_t offset,
                         size_t *used, etsim_error_t *err) {
  ptc_t *c = user;
  (void)avail;
  (void)offset;
  if (index >= c->n_nodes) return PTJ_SLOW;
  int rc = host_node2_fast(c, s, 0, used, (uint32_t)index);
  if (rc == ETSIM_ENOMEM) return etsim_error_set(err, rc, "out of memory");
  return rc;
}

static int on_host_member(void *user, const char *key, const ptv_t *v, const ptj_loc_t *loc,
                          etsim_error_t *err) {
  ptc_t *c = user;
  (void)loc;
  (void)err;
  if (strcmp(key, "schema") == 0 && ptv_is_str(v)) {
    snprintf(c->schema, sizeof c->schema, "%s", ptv_str(v));
    c->have_schema = 1;
  } else if (strcmp(key, "pid") == 0) {
    c->pid = (uint64_t)jint(v, 0);
  } else if (strcmp(key, "time") == 0 && ptv_is_str(v)) {
    snprintf(c->time, sizeof c->time, "%s", ptv_str(v));
  } else if (strcmp(key, "start_ts") == 0) {
    c->start_ts = (uint64_t)jint(v, 0);
  } else if (strcmp(key, "finish_ts") == 0) {
    c->finish_ts = (uint64_t)jint(v, 0);
  }
  return 0;
}

/* Schema check: known versions pass; others are read as the closest known
 * one with a warning. */
static void check_schema(ptc_t *c, etsim_convpt_summary_t *s) {
  static const int known[][3] = {{1, 0, 1}, {1, 0, 2}, {1, 0, 3}, {1, 0, 4}, {1, 1, 0}, {1, 1, 1}};
  snprintf(s->schema, sizeof s->schema, "%s", c->schema);
  if (!c->have_schema) {
    etsim_warn("%s: no 'schema' member; reading nodes by their shape", c->host_path);
    s->schema_guessed = 1;
    return;
  }
  int a, b, d;
  if (sscanf(c->schema, "%d.%d.%d", &a, &b, &d) != 3) {
    etsim_warn(
        "%s: schema '%s' is not a version number; reading nodes by "
        "their shape",
        c->host_path, c->schema);
    s->schema_guessed = 1;
    return;
  }
  long want = a * 10000L + b * 100L + d, best = -1, bestd = 0;
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
    long k = known[i][0] * 10000L + known[i][1] * 100L + known[i][2];
    long dist = labs(k - want);
    if (best < 0 || dist < bestd) {
      best = k;
      bestd = dist;
    }
  }
  if (bestd != 0) {
    etsim_warn(
        "%s: unknown schema version '%s'; reading it as the closest "
        "known, %ld.%ld.%ld",
        c->host_path, c->schema, best / 10000, best / 100 % 100, best % 100);
    s->schema_guessed = 1;
  }
}

/* -------------------------------------------------------- tree resolve */

/* Settle INSIDE for nodes whose caller came later in the file, then mark
 * what is converted and find each node's converted top-level operator. */
static int resolve_tree(ptc_t *c, etsim_convpt_summary_t *s) {
  size_t n = c->n_nodes;
  for (size_t i = 0; i < n; i++) {
    ptc_node_t *h = &c->nodes[i];
    if (h->flags & PTC_F_HAS_PARENT) {
      uint32_t pi;
      if (!ptc_find(c, h->parent, &pi)) {
        s->orphans++;
        h->flags &= ~(uint32_t)PTC_F_HAS_PARENT;
        h->flags |= PTC_F_KNOWN;
        h->flags &= ~(uint32_t)PTC_F_INSIDE;
      }
    }
  }
  /* Iterative: climb to the first known ancestor, then settle the path. */
  uint32_t *path = NULL;
  size_t cap = 0;
  for (size_t i = 0; i < n; i++) {
    if (c->nodes[i].flags & PTC_F_KNOWN) continue;
    size_t np = 0;
    uint32_t cur = (uint32_t)i;
    while (!(c->nodes[cur].flags & PTC_F_KNOWN)) {
      if (np >= n) { /* a caller cycle: break it here */
        c->nodes[cur].flags |= PTC_F_KNOWN;
        c->nodes[cur].flags &= ~(uint32_t)PTC_F_INSIDE;
        s->orphans++;
        break;
      }
      if (etsim_grow((void **)&path, &cap, np + 1, sizeof *path)) {
        etsim_free(path);
        return ETSIM_ENOMEM;
      }
      path[np++] = cur;
      uint32_t pi = 0;
      ptc_find(c, c->nodes[cur].parent, &pi);
      cur = pi;
    }
    while (np > 0) {
      ptc_node_t *h = &c->nodes[path[--np]];
      uint32_t pi = 0;
      ptc_find(c, h->parent, &pi);
      const ptc_node_t *p = &c->nodes[pi];
      h->flags |= PTC_F_KNOWN;
      if (p->flags & (PTC_F_OPLIKE | PTC_F_INSIDE)) h->flags |= PTC_F_INSIDE;
    }
  }
  etsim_free(path);
  for (size_t i = 0; i < n; i++) {
    ptc_node_t *h = &c->nodes[i];
    if ((h->flags & PTC_F_PGINIT) || ((h->flags & PTC_F_OPLIKE) && !(h->flags & PTC_F_INSIDE)))
      h->flags |= PTC_F_EMIT;
  }
  return 0;
}

typedef struct idpair {
  uint64_t id;
  uint32_t idx;
} idpair_t;

static int cmp_idpair(const void *a, const void *b) {
  const idpair_t *x = a, *y = b;
  return x->id < y->id ? -1 : x->id > y->id;
}

/* ---------------------------------------------------------- the driver */

void etsim_conv__pt_free(ptc_t *c) {
  etsim_free(c->nodes);
  etsim_free(c->exts);
  etsim_free(c->tkeys);
  etsim_free(c->pgs);
  etsim_free(c->ops);
  etsim_free(c->defer);
  etsim_free(c->op_pos);
  etsim_u64map_free(&c->by_id);
  etsim_free(c->id_tab);
  etsim_intern_free(&c->names);
  etsim_arena_free(&c->arena);
  etsim_conv__pt_repr_free(&c->tmp);
  etsim_conv__pt_repr_free(&c->f2.text);
  etsim_free(c->f2.keys);
  etsim_conv__pt_kineto_free(c);
}

/* Pass 2 reads deferred nodes in windows of up to REREAD_WINDOW bytes:
 * the converted ones lie a few nodes apart, so one pread covers many, and
 * the unwanted bytes in a gap of up to REREAD_GAP are cheaper to copy than
 * a system call. */
enum { REREAD_WINDOW = 1 << 20, REREAD_GAP = 1 << 14 };

static int wanted(const ptc_t *c, const struct ptc_defer *d) {
  return (c->nodes[d->node].flags & PTC_F_EMIT) && c->nodes[d->node].ext == UINT32_MAX;
}

/* Pass 2 on a plain file: read back just the deferred nodes that are
 * converted, from the offsets noted in pass 1 (in file order). */
static int reread_plain(ptc_t *c, etsim_error_t *err) {
  int fd = open(c->host_path, O_RDONLY);
  if (fd < 0)
    return etsim_error_set(err, ETSIM_EIO, "%s: cannot open: %s", c->host_path, strerror(errno));
  ptv_parser_t pp;
  etsim_conv__pt_value_parser_init(&pp);

  char *buf = NULL;
  size_t cap = 0;
  int rc = 0;
  size_t k = 0;
  while (k < c->n_defer && !rc) {
    if (!wanted(c, &c->defer[k])) {
      k++;
      continue;
    }
    /* The window: defers k .. k_end - 1, bytes [w_off, w_end). */
    uint64_t w_off = c->defer[k].off;
    uint64_t w_end = w_off + c->defer[k].len;
    size_t k_end = k + 1;
    for (; k_end < c->n_defer; k_end++) {
      const struct ptc_defer *d = &c->defer[k_end];
      if (!wanted(c, d)) continue;
      if (d->off < w_end || d->off - w_end > REREAD_GAP || d->off + d->len - w_off > REREAD_WINDOW)
        break;
      w_end = d->off + d->len;
    }
    size_t w_len = (size_t)(w_end - w_off);
    if (w_len + 1 > cap && etsim_grow((void **)&buf, &cap, w_len + 1, 1)) {
      rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
      break;
    }
    if ((rc = etsim_conv__pt_json_pread(c->host_path, fd, w_off, w_len, buf, err))) break;
    for (; k < k_end && !rc; k++) {
      const struct ptc_defer *d = &c->defer[k];
      if (!wanted(c, d)) continue;
      char *s = buf + (d->off - w_off);
      char saved = s[d->len];
      s[d->len] = '\0'; /* the element alone, NUL-terminated */
      rc = etsim_conv__pt_no_fast ? PTJ_SLOW : host_node2_fast(c, s, d->len, NULL, d->node);
      if (rc == PTJ_SLOW) {
        ptv_t v;
        size_t epos;
        const char *what;
        if ((rc = etsim_conv__pt_value_parse(&pp, s, d->len, &v, &epos, &what))) {
          rc = etsim_error_set(err, rc == ETSIM_ENOMEM ? rc : ETSIM_EFORMAT,
                               "%s: offset %llu: node changed since it was "
                               "read",
                               c->host_path, (unsigned long long)d->off);
        } else {
          ptj_loc_t loc = {0, 0, d->off, d->len};
          rc = on_host_node2(c, &v, d->node, &loc, err);
        }
      } else if (rc) {
        rc = etsim_error_set(err, rc, "out of memory");
      }
      s[d->len] = saved;
    }
  }
  etsim_free(buf);
  etsim_conv__pt_value_parser_free(&pp);
  close(fd);
  return rc;
}

static int read_host(ptc_t *c, etsim_convpt_summary_t *s, etsim_error_t *err) {
  int found = 0;
  uint64_t bytes = 0;
  int rc = etsim_conv__pt_json_stream_ex(c->host_path, "nodes", on_host_member, on_host_node,
                                         etsim_conv__pt_no_fast ? NULL : on_host_fast, c, NULL,
                                         &bytes, &found, err);
  if (rc) return rc;
  c->host_bytes = bytes;
  if (!found)
    return etsim_error_set(err, ETSIM_EFORMAT, "%s: no 'nodes' list: not a PyTorch execution trace",
                           c->host_path);
  check_schema(c, s);
  s->legacy = c->n_legacy > 0;
  s->host_nodes = c->n_nodes;
  s->process_groups = c->n_pgs;
  if ((rc = resolve_tree(c, s))) return etsim_error_set(err, rc, "out of memory");
  /* Pass 2 reads again only the converted nodes read before their caller
   * (most of them: PyTorch writes a node when it completes, after its
   * callees); everything else is skipped without being parsed. */
  uint8_t *want = etsim_calloc(c->n_nodes / 8 + 1, 1);
  if (!want) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  size_t n_want = 0;
  for (size_t i = 0; i < c->n_nodes; i++)
    if ((c->nodes[i].flags & PTC_F_EMIT) && c->nodes[i].ext == UINT32_MAX) {
      want[i / 8] |= (uint8_t)(1u << (i % 8));
      n_want++;
    }
  if (n_want && !etsim_conv__pt_json_is_gzip(c->host_path) && c->n_defer) {
    rc = reread_plain(c, err); /* only the wanted bytes */
  } else if (n_want) {
    ptj_want_t w = {want, c->n_nodes};
    rc = etsim_conv__pt_json_stream_ex(c->host_path, "nodes", NULL, on_host_node2,
                                       etsim_conv__pt_no_fast ? NULL : on_host_fast2, c, &w, NULL,
                                       NULL, err);
  }
  etsim_free(want);
  if (rc) return rc;
  for (size_t i = 0; i < c->n_nodes; i++)
    if ((c->nodes[i].flags & PTC_F_EMIT) && c->nodes[i].ext == UINT32_MAX)
      return etsim_error_set(err, ETSIM_EFORMAT,
                             "%s: node id %" PRIu64
                             " vanished on the second "
                             "read (the file changed?)",
                             c->host_path, c->nodes[i].id);
  for (size_t k = 0; k < c->n_exts; k++) {
    ptc_ext_t *e = &c->exts[k];
    if (!e->pg_name && e->backend_id >= 0) e->pg_name = pg_by_backend(c, e->backend_id);
  }
  /* Converted nodes in id order. */
  size_t n_emit = 0;
  for (size_t i = 0; i < c->n_nodes; i++) n_emit += (c->nodes[i].flags & PTC_F_EMIT) != 0;
  idpair_t *pairs = etsim_malloc((n_emit ? n_emit : 1) * sizeof *pairs);
  c->ops = etsim_malloc((n_emit ? n_emit : 1) * sizeof *c->ops);
  if (!pairs || !c->ops) {
    etsim_free(pairs);
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < c->n_nodes; i++)
    if (c->nodes[i].flags & PTC_F_EMIT) {
      pairs[c->n_ops].id = c->nodes[i].id;
      pairs[c->n_ops++].idx = (uint32_t)i;
    }
  etsim_qsort(pairs, c->n_ops, sizeof *pairs, cmp_idpair);
  for (size_t k = 0; k < c->n_ops; k++) c->ops[k] = pairs[k].idx;
  etsim_free(pairs);
  c->op_pos = etsim_malloc((c->n_nodes ? c->n_nodes : 1) * sizeof *c->op_pos);
  if (!c->op_pos) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  for (size_t i = 0; i < c->n_nodes; i++) c->op_pos[i] = UINT32_MAX;
  for (size_t k = 0; k < c->n_ops; k++) c->op_pos[c->ops[k]] = (uint32_t)k;
  for (size_t i = 0; i < c->n_nodes; i++)
    if (c->nodes[i].id > c->max_id) c->max_id = c->nodes[i].id;
  /* ET+ GPU nodes: find their callers now that every node is known. */
  for (size_t i = 0; i < c->n_evs; i++) {
    uint32_t pi;
    if (ptc_find(c, (uint64_t)c->evs[i].key, &pi)) c->evs[i].host = pi;
  }
  return 0;
}

/* Infer the rank from the first communication record that names its own
 * rank in the group (not broadcast roots or p2p peers). */
static int64_t infer_rank(const ptc_t *c) {
  for (size_t k = 0; k < c->n_ops; k++) {
    const ptc_node_t *h = &c->nodes[c->ops[k]];
    if (!(h->flags & PTC_F_COMM) || h->ext == UINT32_MAX) continue;
    const ptc_ext_t *e = &c->exts[h->ext];
    int own =
        e->kind == PTC_WAIT ||
        (e->kind == PTC_COLL && e->coll != ETSIM_COLL_BROADCAST && e->coll != ETSIM_COLL_REDUCE &&
         e->coll != ETSIM_COLL_GATHER && e->coll != ETSIM_COLL_SCATTER);
    if (!own) continue;
    int64_t r = ptc_global_rank(e->grs, e->grstride, e->rank_arg);
    if (r >= 0) return r;
  }
  return -1;
}

static int ends_with(const char *s, const char *t) {
  size_t a = strlen(s), b = strlen(t);
  return a >= b && strcmp(s + a - b, t) == 0;
}

int etsim_convpt_convert(const char *host_path, const char *out, const etsim_convpt_opts_t *opts,
                         etsim_convpt_summary_t *sum, etsim_error_t *err) {
  etsim_convpt_opts_t dflt = {0};
  dflt.rank = -1;
  if (!opts) opts = &dflt;
  etsim_convpt_summary_t local;
  etsim_convpt_summary_t *s = sum ? sum : &local;
  memset(s, 0, sizeof *s);
  ptc_t c;
  memset(&c, 0, sizeof c);
  c.host_path = host_path;
  etsim_u64map_init(&c.by_id);
  etsim_arena_init(&c.arena, 1 << 20);
  int rc = etsim_intern_init(&c.names);
  if (rc) {
    etsim_intern_free(&c.names); /* safe on a half-made interner */
    etsim_arena_free(&c.arena);
    return etsim_error_set(err, rc, "out of memory");
  }
  if ((rc = read_host(&c, s, err))) goto done;
  if (opts->kineto_path) {
    if ((rc = etsim_conv__pt_kineto_read(&c, opts->kineto_path, s, err))) goto done;
  } else if ((rc = etsim_conv__pt_kineto_host_gpu(&c, s))) {
    rc = etsim_error_set(err, rc, "out of memory");
    goto done;
  }
  int64_t rank = opts->rank;
  if (rank < 0) {
    rank = infer_rank(&c);
    if (rank < 0) rank = 0;
  }
  s->rank = rank;
  c.rank = rank;
  /* Output names. */
  char path[1024], groups[1024];
  if (strcmp(out, "-") == 0 || ends_with(out, ".et") || ends_with(out, ".et.gz"))
    snprintf(path, sizeof path, "%s", out);
  else
    snprintf(path, sizeof path, "%s.%" PRId64 ".et%s", out, rank,
             (opts->write_flags & ETSIM_ET_WRITE_GZIP) ? ".gz" : "");
  if (opts->groups_path) {
    snprintf(groups, sizeof groups, "%s", opts->groups_path);
  } else if (strcmp(out, "-") == 0) {
    groups[0] = '\0'; /* the trace goes to stdout: no group file unless named */
  } else {
    size_t n = strlen(out);
    if (ends_with(out, ".et.gz")) n -= 6;
    else if (ends_with(out, ".et")) n -= 3;
    snprintf(groups, sizeof groups, "%.*s.comm_group.json", (int)n, out);
  }
  snprintf(s->out_path, sizeof s->out_path, "%s", path);
  rc = etsim_conv__pt_write(&c, path, groups, opts->write_flags, s, err);
done:
  etsim_conv__pt_free(&c);
  return rc;
}
