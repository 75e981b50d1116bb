/*
 * text.c — ASTRA-sim 1.0 text workloads to Chakra ET.
 *
 * The graphs follow Chakra's text converter (mlcommons/chakra
 * src/converter/text_converter.py, read for its semantics, not copied) mode
 * by mode, with these differences, all documented in docs/gen.md:
 *   - NONE means no collective.  Chakra's converter maps it to ALL_REDUCE
 *     and emits it (DATA's weight gradients, DLRM's input gradient); here
 *     the node is left out and whatever waited for it waits for the compute
 *     node that would have issued it.
 *   - HYBRID_TRANSFORMER (rejected by Chakra's converter) follows ASTRA-sim
 *     1.0's Workload::iterate_hybrid_parallel_Transformer: forward and
 *     input-gradient collectives block and run in the model-parallel group
 *     of `model_parallel_NPU_group` consecutive ranks, weight-gradient
 *     collectives run in the data-parallel group (ranks equal modulo G) and
 *     are waited for by the next pass's forward of that layer.  Groups go
 *     to pg_name and an ASTRA-sim communicator-group JSON.
 *   - HYBRID_DLRM: the layer after the last bottom layer waits for the
 *     embedding all-to-all, as ASTRA-sim 1.0 does (Chakra's converter makes
 *     the last bottom layer itself wait).
 *   - Node ids restart at 0 on every rank, so identical ranks share a file;
 *     every node carries is_cpu_op = false explicitly.
 * Malformed input fails with FILE:LINE:COLUMN and what was expected; the
 * whole file is parsed before anything is written.
 */
#include "etsim/convtext.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE_ID UINT64_MAX

enum {
  M_MICRO,
  M_DATA,
  M_MODEL,
  M_HYBRID_DATA_MODEL,
  M_HYBRID_MODEL_DATA,
  M_HYBRID_DLRM,
  M_HYBRID_TRANSFORMER
};

enum { PH_FWD = 0, PH_IG = 1, PH_WG = 2 };

typedef struct {
  char *name;
  uint64_t time[3];
  int type[3]; /* ETSIM_COLL_* or -1 for NONE */
  int64_t size[3];
  uint64_t update;
  char *comp_name[3], *comm_name[3], *ig_comm_hdm; /* node names */
} layer_t;

typedef struct {
  const char *path;
  const char *text;
  size_t len;
  int mode;
  int64_t arg; /* DLRM: last bottom layer; TRANSFORMER: model group size */
  size_t n;
  layer_t *layers;
  etsim_arena_t arena;
} textwl_t;

/* --------------------------------------------------------------- parser */

typedef struct {
  const char *s;
  size_t len;
  int col; /* 1-based */
} tok_t;

static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

/* Split one line into tokens; returns the count (at most max, and sets
 * *more when there were more). */
static size_t tokenize(const char *line, size_t len, tok_t *t, size_t max, int *more) {
  size_t n = 0, i = 0;
  *more = 0;
  while (i < len) {
    while (i < len && is_ws(line[i])) i++;
    if (i >= len) break;
    size_t b = i;
    while (i < len && !is_ws(line[i])) i++;
    if (n == max) {
      *more = 1;
      return n;
    }
    t[n].s = line + b;
    t[n].len = i - b;
    t[n].col = (int)b + 1;
    n++;
  }
  return n;
}

static int tok_is(const tok_t *t, const char *s) {
  return t->len == strlen(s) && memcmp(t->s, s, t->len) == 0;
}

/* Column of the first token after `n` tokens (for "expected end of line"). */
static int col_after(const char *line, size_t len, size_t n) {
  size_t i = 0, k = 0;
  for (;;) {
    while (i < len && is_ws(line[i])) i++;
    if (i >= len || k == n) return (int)i + 1;
    while (i < len && !is_ws(line[i])) i++;
    k++;
  }
}

static int bad(const textwl_t *w, etsim_error_t *err, int line, int col, const char *expected,
               const tok_t *found) {
  if (found)
    return etsim_error_set(err, ETSIM_EFORMAT,
                           "%s:%d:%d: expected %s, found "
                           "'%.*s'",
                           w->path, line, col, expected, (int)(found->len > 60 ? 60 : found->len),
                           found->s);
  return etsim_error_set(err, ETSIM_EFORMAT, "%s:%d:%d: expected %s, found the end of the line",
                         w->path, line, col, expected);
}

static int parse_uint(const tok_t *t, uint64_t *out) {
  if (!t->len || t->len > 18) return -1;
  uint64_t v = 0;
  for (size_t i = 0; i < t->len; i++) {
    if (t->s[i] < '0' || t->s[i] > '9') return -1;
    v = v * 10 + (uint64_t)(t->s[i] - '0');
  }
  *out = v;
  return 0;
}

static int parse_type(const tok_t *t) {
  if (tok_is(t, "ALLREDUCE")) return ETSIM_COLL_ALL_REDUCE;
  if (tok_is(t, "ALLGATHER")) return ETSIM_COLL_ALL_GATHER;
  if (tok_is(t, "ALLTOALL")) return ETSIM_COLL_ALL_TO_ALL;
  if (tok_is(t, "REDUCESCATTER")) return ETSIM_COLL_REDUCE_SCATTER;
  if (tok_is(t, "NONE")) return -1;
  return -2;
}

static const char *type_token(int type) {
  switch (type) {
    case ETSIM_COLL_ALL_REDUCE:
      return "ALLREDUCE";
    case ETSIM_COLL_ALL_GATHER:
      return "ALLGATHER";
    case ETSIM_COLL_ALL_TO_ALL:
      return "ALLTOALL";
    case ETSIM_COLL_REDUCE_SCATTER:
      return "REDUCESCATTER";
    default:
      return "NONE";
  }
}

static char *fmt_name(textwl_t *w, const char *a, const char *b, const char *c, const char *d) {
  size_t n = strlen(a) + strlen(b) + strlen(c) + strlen(d) + 1;
  char *p = etsim_arena_alloc(&w->arena, n);
  if (p) snprintf(p, n, "%s%s%s%s", a, b, c, d);
  return p;
}

static int parse_layer(textwl_t *w, layer_t *L, const char *line, size_t len, int ln,
                       etsim_error_t *err) {
  tok_t t[12];
  int more;
  size_t n = tokenize(line, len, t, 12, &more);
  static const char *const what[12] = {
      "a layer name",
      "the reserved field (an integer, usually -1)",
      "the forward compute time (a non-negative integer)",
      "the forward collective (ALLREDUCE, ALLGATHER, ALLTOALL, REDUCESCATTER "
      "or NONE)",
      "the forward collective size in bytes (a non-negative integer)",
      "the input-gradient compute time (a non-negative integer)",
      "the input-gradient collective (ALLREDUCE, ALLGATHER, ALLTOALL, "
      "REDUCESCATTER or NONE)",
      "the input-gradient collective size in bytes (a non-negative integer)",
      "the weight-gradient compute time (a non-negative integer)",
      "the weight-gradient collective (ALLREDUCE, ALLGATHER, ALLTOALL, "
      "REDUCESCATTER or NONE)",
      "the weight-gradient collective size in bytes (a non-negative integer)",
      "the update time (a non-negative integer)"};
  if (n < 12) return bad(w, err, ln, col_after(line, len, n), what[n], NULL);
  if (more) {
    tok_t x;
    int c = col_after(line, len, 12);
    size_t e = (size_t)c - 1;
    while (e < len && !is_ws(line[e])) e++;
    x.s = line + c - 1;
    x.len = e - (size_t)(c - 1);
    return bad(w, err, ln, c, "the end of the line after 12 columns", &x);
  }
  if (!(L->name = etsim_arena_strndup(&w->arena, t[0].s, t[0].len)))
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  /* reserved: an integer, sign allowed */
  {
    const tok_t *r = &t[1];
    size_t i = r->len && (r->s[0] == '-' || r->s[0] == '+') ? 1 : 0;
    int ok = r->len > i && r->len < 19;
    for (; ok && i < r->len; i++) ok = r->s[i] >= '0' && r->s[i] <= '9';
    if (!ok) return bad(w, err, ln, r->col, what[1], r);
  }
  for (int p = 0; p < 3; p++) {
    const tok_t *tt = &t[2 + 3 * p], *ty = &t[3 + 3 * p], *sz = &t[4 + 3 * p];
    uint64_t v;
    if (parse_uint(tt, &L->time[p])) return bad(w, err, ln, tt->col, what[2 + 3 * p], tt);
    if ((L->type[p] = parse_type(ty)) == -2) return bad(w, err, ln, ty->col, what[3 + 3 * p], ty);
    if (parse_uint(sz, &v)) return bad(w, err, ln, sz->col, what[4 + 3 * p], sz);
    /* A collective moves a byte at least: sim and validate refuse a size of
     * 0, so the trace would be written only to be refused (fuzz_text). */
    if (L->type[p] >= 0 && v == 0)
      return bad(w, err, ln, sz->col, "a size of 1 byte or more (or NONE before it)", sz);
    L->size[p] = (int64_t)v;
  }
  if (parse_uint(&t[11], &L->update)) return bad(w, err, ln, t[11].col, what[11], &t[11]);
  static const char *const comp_sfx[3] = {"_FWD", "_BWD_IG", "_BWD_WG"};
  for (int p = 0; p < 3; p++) {
    L->comp_name[p] = fmt_name(w, "COMP_NODE_", L->name, comp_sfx[p], "");
    L->comm_name[p] = fmt_name(w, "COMM_COLL_NODE_", L->name, "_", type_token(L->type[p]));
    if (!L->comp_name[p] || !L->comm_name[p])
      return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  L->ig_comm_hdm =
      fmt_name(w, "COMM_COLL_NODE_", L->name, "_IG_COMM__", type_token(L->type[PH_IG]));
  return L->ig_comm_hdm ? 0 : etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
}

/* Next line [*pos, end of line) without the newline; 0 at end of text. */
static int next_line(const textwl_t *w, size_t *pos, const char **line, size_t *len) {
  if (*pos >= w->len) return 0;
  const char *s = w->text + *pos;
  const char *nl = memchr(s, '\n', w->len - *pos);
  size_t n = nl ? (size_t)(nl - s) : w->len - *pos;
  *line = s;
  *len = n;
  *pos += n + (nl ? 1 : 0);
  return 1;
}

static int blank(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!is_ws(s[i])) return 0;
  return 1;
}

static int parse_header(textwl_t *w, const char *line, size_t len, etsim_error_t *err) {
  tok_t t[4];
  int more;
  size_t n = tokenize(line, len, t, 4, &more);
  static const char *modes =
      "a parallelism (MICRO, DATA, MODEL, HYBRID_DATA_MODEL, "
      "HYBRID_MODEL_DATA, HYBRID_DLRM <last bottom layer>, "
      "HYBRID_DLRM_ENHANCED <last bottom layer> or HYBRID_TRANSFORMER "
      "model_parallel_NPU_group: <G>)";
  if (n == 0) return bad(w, err, 1, col_after(line, len, 0), modes, NULL);
  size_t want = 1;
  if (tok_is(&t[0], "MICRO")) w->mode = M_MICRO;
  else if (tok_is(&t[0], "DATA")) w->mode = M_DATA;
  else if (tok_is(&t[0], "MODEL")) w->mode = M_MODEL;
  else if (tok_is(&t[0], "HYBRID_DATA_MODEL")) w->mode = M_HYBRID_DATA_MODEL;
  else if (tok_is(&t[0], "HYBRID_MODEL_DATA")) w->mode = M_HYBRID_MODEL_DATA;
  else if (tok_is(&t[0], "HYBRID_DLRM") || tok_is(&t[0], "HYBRID_DLRM_ENHANCED")) {
    w->mode = M_HYBRID_DLRM;
    uint64_t v;
    if (n < 2)
      return bad(w, err, 1, col_after(line, len, 1),
                 "the last bottom layer's index after HYBRID_DLRM", NULL);
    if (parse_uint(&t[1], &v))
      return bad(w, err, 1, t[1].col, "the last bottom layer's index (a non-negative integer)",
                 &t[1]);
    w->arg = (int64_t)v;
    want = 2;
  } else if (tok_is(&t[0], "HYBRID_TRANSFORMER")) {
    w->mode = M_HYBRID_TRANSFORMER;
    static const char *key = "model_parallel_NPU_group:";
    size_t kl = strlen(key);
    tok_t num;
    if (n < 2 || t[1].len < kl || memcmp(t[1].s, key, kl) != 0)
      return bad(w, err, 1, n < 2 ? col_after(line, len, 1) : t[1].col,
                 "'model_parallel_NPU_group: <G>' after HYBRID_TRANSFORMER", n < 2 ? NULL : &t[1]);
    if (t[1].len > kl) { /* "model_parallel_NPU_group:4" */
      num.s = t[1].s + kl;
      num.len = t[1].len - kl;
      num.col = t[1].col + (int)kl;
      want = 2;
    } else {
      if (n < 3)
        return bad(w, err, 1, col_after(line, len, 2), "the model-parallel group size", NULL);
      num = t[2];
      want = 3;
    }
    uint64_t v;
    if (parse_uint(&num, &v) || v == 0)
      return bad(w, err, 1, num.col, "the model-parallel group size (a positive integer)", &num);
    w->arg = (int64_t)v;
  } else if (tok_is(&t[0], "HYBRID_TRANSFORMER_FWD_IN_BCKWD") ||
             tok_is(&t[0], "HYBRID_CUSTOMIZED") || tok_is(&t[0], "DISTRIBUTED_INFERENCE")) {
    return etsim_error_set(err, ETSIM_EUNSUPPORTED,
                           "%s:1:%d: parallelism '%.*s' is not supported yet "
                           "(supported: MICRO, DATA, MODEL, HYBRID_DATA_MODEL, "
                           "HYBRID_MODEL_DATA, HYBRID_DLRM, "
                           "HYBRID_DLRM_ENHANCED, HYBRID_TRANSFORMER)",
                           w->path, t[0].col, (int)t[0].len, t[0].s);
  } else {
    return bad(w, err, 1, t[0].col, modes, &t[0]);
  }
  if (n > want) {
    return bad(w, err, 1, t[want].col, "the end of the first line", &t[want]);
  }
  return 0;
}

static void textwl_free(textwl_t *w) { etsim_arena_free(&w->arena); }

static int textwl_parse(textwl_t *w, etsim_error_t *err) {
  etsim_arena_init(&w->arena, 16 * 1024);
  size_t pos = 0, len;
  const char *line;
  int ln = 0;
  /* Line 1: the parallelism. */
  if (!next_line(w, &pos, &line, &len))
    return etsim_error_set(err, ETSIM_EFORMAT,
                           "%s:1:1: expected a parallelism (MICRO, DATA, ...), "
                           "found an empty file",
                           w->path);
  ln = 1;
  int rc = parse_header(w, line, len, err);
  if (rc) return rc;
  /* Line 2: the layer count. */
  if (!next_line(w, &pos, &line, &len))
    return etsim_error_set(err, ETSIM_EFORMAT,
                           "%s:2:1: expected the number of layers, found the "
                           "end of the file",
                           w->path);
  ln = 2;
  {
    tok_t t[2];
    int more;
    size_t n = tokenize(line, len, t, 2, &more);
    uint64_t v;
    if (n == 0)
      return bad(w, err, 2, col_after(line, len, 0), "the number of layers (a positive integer)",
                 NULL);
    if (parse_uint(&t[0], &v) || v == 0 || v > 10000000)
      return bad(w, err, 2, t[0].col, "the number of layers (a positive integer)", &t[0]);
    if (n > 1)
      return bad(w, err, 2, t[1].col,
                 "the end of the line after the number "
                 "of layers",
                 &t[1]);
    w->n = (size_t)v;
  }
  w->layers = etsim_arena_alloc(&w->arena, w->n * sizeof *w->layers);
  if (!w->layers) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  memset(w->layers, 0, w->n * sizeof *w->layers);
  size_t k = 0;
  while (next_line(w, &pos, &line, &len)) {
    ln++;
    if (blank(line, len)) continue;
    if (k == w->n) {
      tok_t x = {line, 0, 1};
      int more;
      tokenize(line, len, &x, 1, &more);
      return bad(w, err, ln, x.col,
                 "the end of the file (line 2 gives the "
                 "number of layers)",
                 &x);
    }
    if ((rc = parse_layer(w, &w->layers[k], line, len, ln, err))) return rc;
    k++;
  }
  if (k < w->n)
    return etsim_error_set(err, ETSIM_EFORMAT,
                           "%s:%d:1: expected %zu layer line(s) as line 2 "
                           "says, found %zu before the end of the file",
                           w->path, ln + 1, w->n, k);
  if (w->mode == M_HYBRID_DLRM && (w->arg < 0 || (size_t)w->arg + 1 >= w->n))
    return etsim_error_set(err, ETSIM_EFORMAT,
                           "%s:1: the last bottom layer (%lld) must be below "
                           "the last layer (index %zu): the top layers follow "
                           "it",
                           w->path, (long long)w->arg, w->n - 1);
  return 0;
}

/* -------------------------------------------------------------- emitter */

typedef struct {
  const textwl_t *w;
  etsim_et_buf_t *buf;
  etsim_et_nb_t *b;
  uint64_t next_id;
  int unit;
  const char *pg[3]; /* pg_name per phase, or NULL */
  int drop[3];       /* phase's collectives need no communication */
  etsim_error_t *err;
  int rc;
  etsim_et_set_writer_t *set; /* the buffer is flushed here as it fills */
} ectx_t;

enum { FLUSH_BYTES = 1 << 20 };

static int flush(ectx_t *c) {
  if (c->buf->n && !c->rc) c->rc = etsim_et_set_writer_write(c->set, c->buf->p, c->buf->n, c->err);
  c->buf->n = 0;
  return c->rc;
}

static void add_deps(ectx_t *c, const uint64_t *deps, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (deps[i] == NONE_ID) continue;
    int dup = 0;
    for (size_t j = 0; j < c->b->n.n_data_deps; j++) dup |= c->b->deps[j] == deps[i];
    if (!dup) etsim_et_nb_dep(c->b, deps[i]);
  }
}

static uint64_t emit(ectx_t *c) {
  if (c->rc) return NONE_ID;
  if ((c->rc = etsim_et_enc_node(c->buf, &c->b->n, c->err))) return NONE_ID;
  if (c->buf->n >= FLUSH_BYTES && flush(c)) return NONE_ID;
  return c->next_id++;
}

static uint64_t comp(ectx_t *c, const layer_t *L, int ph, uint64_t d0, uint64_t d1, uint64_t d2) {
  uint64_t deps[3] = {d0, d1, d2};
  etsim_et_nb_start(c->b, c->next_id, ETSIM_ET_COMP_NODE, L->comp_name[ph]);
  uint64_t t = L->time[ph];
  etsim_et_nb_bool(c->b, "is_cpu_op", 0);
  if (c->unit == ETSIM_TEXT_TIME_NS) {
    etsim_et_nb_time_ns(c->b, t);
  } else {
    c->b->n.duration_micros = t;
  }
  add_deps(c, deps, 3);
  return emit(c);
}

/* A collective of layer L's phase (or NONE_ID when its type is NONE). */
static uint64_t comm_as(ectx_t *c, const layer_t *L, int ph, const char *name, uint64_t d0) {
  if (L->type[ph] < 0 || c->drop[ph]) return NONE_ID;
  etsim_et_nb_start(c->b, c->next_id, ETSIM_ET_COMM_COLL_NODE, name);
  etsim_et_nb_bool(c->b, "is_cpu_op", 0);
  etsim_et_nb_i64(c->b, "comm_type", L->type[ph]);
  etsim_et_nb_i64(c->b, "comm_size", L->size[ph]);
  if (c->pg[ph]) etsim_et_nb_str(c->b, "pg_name", c->pg[ph]);
  add_deps(c, &d0, 1);
  return emit(c);
}

static uint64_t comm(ectx_t *c, const layer_t *L, int ph, uint64_t d0) {
  return comm_as(c, L, ph, L->comm_name[ph], d0);
}

static inline uint64_t out(uint64_t comm_id, uint64_t comp_id) {
  return comm_id != NONE_ID ? comm_id : comp_id;
}

/* Per-layer node ids of the current pass; wg_prev carries across passes. */
typedef struct {
  uint64_t fwd_comp, fwd_out, ig_comp, ig_out, wg_comp, wg_out;
} lstate_t;

static void emit_graph(ectx_t *c, size_t passes, lstate_t *s) {
  const textwl_t *w = c->w;
  size_t n = w->n;
  const layer_t *Ls = w->layers;
  for (size_t i = 0; i < n; i++) s[i].wg_comp = s[i].wg_out = NONE_ID;
  uint64_t ig_comm0 = NONE_ID;
  for (size_t p = 0; p < passes && !c->rc; p++) {
    switch (w->mode) {
      case M_MICRO:
        for (size_t i = 0; i < n; i++) comm(c, &Ls[i], PH_WG, NONE_ID);
        break;
      case M_DATA:
        for (size_t i = 0; i < n; i++)
          s[i].fwd_comp =
              comp(c, &Ls[i], PH_FWD, i ? s[i - 1].fwd_comp : NONE_ID, s[i].wg_out, NONE_ID);
        for (size_t i = n; i-- > 0;) {
          uint64_t wc = comp(c, &Ls[i], PH_WG, i == n - 1 ? s[n - 1].fwd_comp : s[i + 1].ig_comp,
                             NONE_ID, NONE_ID);
          s[i].wg_out = out(comm(c, &Ls[i], PH_WG, wc), wc);
          if (i) s[i].ig_comp = comp(c, &Ls[i], PH_IG, wc, NONE_ID, NONE_ID);
        }
        break;
      case M_MODEL:
      case M_HYBRID_DATA_MODEL:
      case M_HYBRID_MODEL_DATA: {
        int hybrid = w->mode != M_MODEL;
        for (size_t i = 0; i < n; i++) {
          /* Chakra's converter lists the cross-pass parent first for the
           * hybrids and second for MODEL; keep its order. */
          uint64_t prev = i ? s[i - 1].fwd_out : NONE_ID;
          uint64_t f = hybrid ? comp(c, &Ls[i], PH_FWD, s[i].wg_out, prev, NONE_ID)
                              : comp(c, &Ls[i], PH_FWD, prev, s[i].wg_out, NONE_ID);
          s[i].fwd_out = out(comm(c, &Ls[i], PH_FWD, f), f);
        }
        for (size_t i = n; i-- > 0;) {
          uint64_t ig = i == n - 1
                            ? comp(c, &Ls[i], PH_IG, s[n - 1].fwd_out, NONE_ID, NONE_ID)
                            : comp(c, &Ls[i], PH_IG, s[i + 1].wg_comp, s[i + 1].ig_out, NONE_ID);
          s[i].ig_out = ig;
          if (i)
            s[i].ig_out = out(
                comm_as(c, &Ls[i], PH_IG,
                        w->mode == M_HYBRID_DATA_MODEL ? Ls[i].ig_comm_hdm : Ls[i].comm_name[PH_IG],
                        ig),
                ig);
          uint64_t wc = comp(c, &Ls[i], PH_WG, ig, NONE_ID, NONE_ID);
          s[i].wg_comp = wc;
          s[i].wg_out = hybrid ? out(comm(c, &Ls[i], PH_WG, wc), wc) : wc;
        }
        break;
      }
      case M_HYBRID_TRANSFORMER:
        for (size_t i = 0; i < n; i++) {
          uint64_t f =
              comp(c, &Ls[i], PH_FWD, i ? s[i - 1].fwd_out : NONE_ID, s[i].wg_out, NONE_ID);
          s[i].fwd_out = out(comm(c, &Ls[i], PH_FWD, f), f);
        }
        for (size_t i = n; i-- > 0;) {
          uint64_t ig = comp(c, &Ls[i], PH_IG, i == n - 1 ? s[n - 1].fwd_out : s[i + 1].wg_comp,
                             NONE_ID, NONE_ID);
          s[i].ig_out = out(comm(c, &Ls[i], PH_IG, ig), ig);
          uint64_t wc = comp(c, &Ls[i], PH_WG, s[i].ig_out, NONE_ID, NONE_ID);
          s[i].wg_comp = wc;
          s[i].wg_out = out(comm(c, &Ls[i], PH_WG, wc), wc);
        }
        break;
      case M_HYBRID_DLRM: {
        size_t lbl = (size_t)w->arg;
        for (size_t i = 0; i < n; i++) {
          uint64_t f = comp(c, &Ls[i], PH_FWD, s[i].wg_out, i ? s[i - 1].fwd_comp : NONE_ID,
                            i == lbl + 1 ? s[0].fwd_out : NONE_ID);
          s[i].fwd_comp = f;
          s[i].fwd_out =
              Ls[i].type[PH_FWD] == ETSIM_COLL_ALL_TO_ALL ? out(comm(c, &Ls[i], PH_FWD, f), f) : f;
        }
        for (size_t i = n; i-- > 0;) {
          uint64_t wc = comp(c, &Ls[i], PH_WG, i == n - 1 ? s[n - 1].fwd_comp : s[i + 1].ig_comp,
                             i == 0 ? ig_comm0 : NONE_ID, NONE_ID);
          s[i].wg_comp = wc;
          s[i].wg_out = out(comm(c, &Ls[i], PH_WG, wc), wc);
          s[i].ig_comp = NONE_ID;
          if (i) s[i].ig_comp = comp(c, &Ls[i], PH_IG, wc, NONE_ID, NONE_ID);
          if (i == lbl + 1) ig_comm0 = comm(c, &Ls[0], PH_IG, s[i].ig_comp);
        }
        break;
      }
    }
  }
}

/* One rank's file, streamed into the set: metadata, then the graph. */
static int encode_rank(const textwl_t *w, const etsim_conv_text_opts_t *o, const char *const pg[3],
                       const int drop[3], etsim_et_set_writer_t *set, size_t rank,
                       etsim_et_buf_t *buf, etsim_et_nb_t *b, lstate_t *st, uint64_t *nodes,
                       etsim_error_t *err) {
  etsim_attr_t ma[2];
  memset(ma, 0, sizeof ma);
  ma[0].name = "schema";
  ma[0].doc = "";
  ma[0].kind = ETSIM_ATTR_STRING;
  ma[0].v.s = "1.0.2-chakra.1.0.0";
  ma[1].name = "input_file";
  ma[1].doc = "";
  ma[1].kind = ETSIM_ATTR_STRING;
  ma[1].v.s = w->text;
  etsim_et_meta_t meta = {"", 2, ma};
  buf->n = 0;
  int rc = etsim_et_set_writer_begin_rank(set, rank, err);
  if (rc || (rc = etsim_et_enc_meta(buf, &meta, err))) return rc;
  ectx_t c = {w,   buf, b,  0, o->time_unit, {pg[0], pg[1], pg[2]}, {drop[0], drop[1], drop[2]},
              err, 0,   set};
  emit_graph(&c, o->passes ? o->passes : 1, st);
  *nodes = c.next_id;
  if (flush(&c)) return c.rc;
  return etsim_et_set_writer_end_rank(set, err);
}

int etsim_conv_text_mem(const char *name, const char *text, size_t len,
                        const etsim_conv_text_opts_t *o, etsim_et_set_report_t *rep,
                        etsim_error_t *err) {
  if (!o->npus || !o->prefix)
    return etsim_error_set(err, ETSIM_EINVAL, "%s: need a positive NPU count and an output prefix",
                           name);
  if (memchr(text, '\0', len))
    return etsim_error_set(err, ETSIM_EFORMAT, "%s: contains a NUL byte: not a text workload",
                           name);
  /* Layer names and the whole text (kept as metadata) become protobuf
   * strings, which must be UTF-8. */
  size_t ok = etsim_utf8_valid(text, len);
  if (ok < len) {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < ok; i++)
      if (text[i] == '\n') line++, col = 1;
      else col++;
    return etsim_error_set(err, ETSIM_EFORMAT,
                           "%s:%zu:%zu: byte 0x%02x is not UTF-8 text (names become protobuf "
                           "strings, which must be)",
                           name, line, col, (unsigned char)text[ok]);
  }
  textwl_t w;
  memset(&w, 0, sizeof w);
  w.path = name;
  w.text = text;
  w.len = len;
  int rc = textwl_parse(&w, err);
  if (rc) {
    textwl_free(&w);
    return rc;
  }
  /* The metadata keeps the whole text as a string: `text` need not end in
   * a NUL (fuzz_text read past a caller's buffer through strlen). */
  char *whole = etsim_arena_strndup(&w.arena, text, len);
  if (!whole) {
    textwl_free(&w);
    return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", name);
  }
  w.text = whole;
  size_t npus = o->npus, G = 0;
  if (w.mode == M_HYBRID_TRANSFORMER) {
    G = (size_t)w.arg;
    if (npus % G) {
      textwl_free(&w);
      return etsim_error_set(err, ETSIM_EINVAL,
                             "%s:1: model_parallel_NPU_group %zu does not "
                             "divide the %zu NPUs",
                             name, G, npus);
    }
  }
  etsim_et_nb_t *b = etsim_malloc(sizeof *b);
  lstate_t *st = etsim_malloc(w.n * sizeof *st);
  etsim_et_set_writer_t *set = NULL;
  etsim_et_buf_t buf = {0};
  char *gpath = NULL;
  uint32_t *granks = NULL;
  size_t *goff = NULL;
  if (!b || !st) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto done;
  }
  if ((rc = etsim_et_set_writer_open(&set, o->prefix, npus, o->format, err))) goto done;
  uint64_t nodes = 0, per = 0, written = 0;
  if (w.mode != M_HYBRID_TRANSFORMER) {
    const char *pg[3] = {NULL, NULL, NULL};
    int drop[3] = {0, 0, 0};
    /* One graph for every rank: written once and shared, or once per
     * rank for plain per-rank files. */
    if ((rc = encode_rank(&w, o, pg, drop, set, 0, &buf, b, st, &per, err))) goto done;
    for (size_t r = 1; r < npus && !rc; r++)
      rc = o->format == ETSIM_ET_OUT_RANK_FILES
               ? encode_rank(&w, o, pg, drop, set, r, &buf, b, st, &per, err)
               : etsim_et_set_writer_rank_like(set, r, 0, NULL, 0, err);
    written = o->format == ETSIM_ET_OUT_RANK_FILES ? per * npus : per;
  } else {
    /* Model-parallel groups: G consecutive ranks, ids 1..npus/G; data-
     * parallel groups: ranks equal modulo G, ids npus/G+1 ..  Group 0 is
     * ASTRA-sim's "all ranks". */
    size_t nm = npus / G;
    for (size_t r = 0; r < npus && !rc; r++) {
      char mp[24], dp[24];
      snprintf(mp, sizeof mp, "%zu", r / G + 1);
      snprintf(dp, sizeof dp, "%zu", nm + 1 + r % G);
      const char *pg[3] = {mp, mp, dp};
      int drop[3] = {G == 1, G == 1, nm == 1};
      if ((rc = encode_rank(&w, o, pg, drop, set, r, &buf, b, st, &per, err))) goto done;
      written += per;
    }
    if (rc) goto done;
    granks = etsim_malloc(2 * npus * sizeof *granks);
    goff = etsim_malloc((nm + G + 1) * sizeof *goff);
    if (!granks || !goff) {
      rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
      goto done;
    }
    size_t k = 0, g = 0;
    for (size_t m = 0; m < nm; m++) {
      goff[g++] = k;
      for (size_t j = 0; j < G; j++) granks[k++] = (uint32_t)(m * G + j);
    }
    for (size_t j = 0; j < G; j++) {
      goff[g++] = k;
      for (size_t m = 0; m < nm; m++) granks[k++] = (uint32_t)(m * G + j);
    }
    goff[g] = k;
    const char *gp = o->comm_group_path;
    if (!gp) {
      if ((rc = etsim_et_comm_groups_path(o->prefix, 0, &gpath, err))) goto done;
      gp = gpath;
    }
    if ((rc = etsim_et_comm_groups_write(gp, nm + G, 1, goff, granks, err))) goto done;
  }
  if (rc) goto done;
  nodes = per * npus;
  etsim_et_set_report_t r = {npus, etsim_et_set_writer_n_files(set), written,
                             etsim_et_set_writer_bytes(set), nodes};
  rc = etsim_et_set_writer_commit(set, err);
  set = NULL;
  if (!rc && rep) *rep = r;
  if (rc && (gpath || o->comm_group_path)) remove(gpath ? gpath : o->comm_group_path);
done:
  etsim_et_set_writer_abort(set);
  etsim_et_buf_free(&buf);
  etsim_free(b);
  etsim_free(st);
  etsim_free(gpath);
  etsim_free(granks);
  etsim_free(goff);
  textwl_free(&w);
  return rc;
}

int etsim_conv_text(const char *path, const etsim_conv_text_opts_t *o, etsim_et_set_report_t *rep,
                    etsim_error_t *err) {
  /* ASTRA-sim text workloads take kilobytes; 64 MiB bounds a stream. */
  char *text;
  size_t n;
  int rc0 = etsim_read_text(path, (size_t)64 << 20, &text, &n, err);
  if (rc0) return rc0;
  int rc = etsim_conv_text_mem(path, text, n, o, rep, err);
  etsim_free(text);
  return rc;
}
