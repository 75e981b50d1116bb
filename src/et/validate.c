/*
 * validate.c — problems in a trace and across a rank set.
 *
 * Per trace: duplicate ids, dependencies on absent ids (data and control
 * apart, with examples), cycles (one printed), well-known
 * attributes of the wrong kind, communication nodes without comm_type or
 * comm_size.  Across ranks: each communicator's collectives in the same
 * order, type and size on every member, and sends matched by receives.
 */
#include "etsim/etcheck.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXAMPLES 5

typedef struct {
  etsim_et_finding_fn fn;
  void *user;
  long problems;
  int cyclic; /* a trace has a data or control cycle */
} sink_t;

__attribute__((format(printf, 3, 4))) static void say(sink_t *s, int sev, const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (sev == ETSIM_CHECK_PROBLEM) s->problems++;
  if (s->fn) s->fn(s->user, sev, line);
}

static void check_dangling(const etsim_et_trace_t *t, sink_t *s, int ctrl) {
  size_t count = ctrl ? t->n_dangling_ctrl : t->n_dangling_data;
  if (!count) return;
  const uint32_t *off = ctrl ? t->ctrl_off : t->data_off;
  const uint32_t *par = ctrl ? t->ctrl_par : t->data_par;
  char ex[512];
  size_t used = 0, shown = 0;
  ex[0] = '\0';
  for (size_t i = 0; i < t->n_nodes && shown < EXAMPLES; i++)
    for (uint32_t e = off[i]; e < off[i + 1] && shown < EXAMPLES; e++)
      if (par[e] & ETSIM_ET_DANGLING) {
        used += (size_t)snprintf(ex + used, sizeof ex - used, "%s%llu -> %llu", shown ? ", " : "",
                                 (unsigned long long)t->id[i],
                                 (unsigned long long)t->dangling[par[e] & ~ETSIM_ET_DANGLING]);
        shown++;
      }
  say(s, ETSIM_CHECK_PROBLEM, "%s: %zu %s dependencies on ids absent from the file (e.g. node %s)",
      t->path, count, ctrl ? "control" : "data", ex);
}

/* Kahn's algorithm over one edge kind (data or control: consumers differ in
 * which they enforce, and the union of a real PyTorch-derived trace is not
 * acyclic); if nodes remain, walk resolved parents among them until one
 * repeats and print that cycle. */
static int check_cycles(const etsim_et_trace_t *t, sink_t *s, int ctrl) {
  const uint32_t *off = ctrl ? t->ctrl_off : t->data_off;
  const uint32_t *par = ctrl ? t->ctrl_par : t->data_par;
  const uint32_t *coff = ctrl ? t->ctrl_coff : t->data_coff;
  const uint32_t *chd = ctrl ? t->ctrl_chd : t->data_chd;
  size_t n = t->n_nodes;
  uint32_t *indeg = etsim_calloc(n + 1, sizeof *indeg);
  uint32_t *queue = etsim_malloc((n + 1) * sizeof *queue);
  if (!indeg || !queue) {
    etsim_free(indeg);
    etsim_free(queue);
    return ETSIM_ENOMEM;
  }
  size_t qh = 0, qt = 0;
  for (size_t i = 0; i < n; i++) {
    for (uint32_t e = off[i]; e < off[i + 1]; e++) indeg[i] += !(par[e] & ETSIM_ET_DANGLING);
    if (!indeg[i]) queue[qt++] = (uint32_t)i;
  }
  while (qh < qt) {
    uint32_t u = queue[qh++];
    for (uint32_t e = coff[u]; e < coff[u + 1]; e++)
      if (--indeg[chd[e]] == 0) queue[qt++] = chd[e];
  }
  if (qt < n) {
    /* Every node left has a parent that is left too. */
    size_t start = 0;
    while (indeg[start] == 0) start++;
    uint32_t *mark = queue; /* reuse: step at which a node was visited + 1 */
    memset(mark, 0, (n + 1) * sizeof *mark);
    uint32_t *path = etsim_malloc((n + 1) * sizeof *path);
    if (!path) {
      etsim_free(indeg);
      etsim_free(queue);
      return ETSIM_ENOMEM;
    }
    size_t len = 0, u = start;
    while (!mark[u]) {
      mark[u] = (uint32_t)++len;
      path[len - 1] = (uint32_t)u;
      size_t next = SIZE_MAX;
      for (uint32_t e = off[u]; e < off[u + 1] && next == SIZE_MAX; e++)
        if (!(par[e] & ETSIM_ET_DANGLING) && indeg[par[e]]) next = par[e];
      u = next;
    }
    /* The cycle is path[mark[u]-1 .. len), walked child -> parent; print it
     * in dependency order (parent first). */
    char line[768];
    size_t used = 0, first = mark[u] - 1, shown = 0;
    for (size_t k = len; k-- > first && used < sizeof line - 64;) {
      used += (size_t)snprintf(line + used, sizeof line - used, "%llu -> ",
                               (unsigned long long)t->id[path[k]]);
      shown++;
    }
    snprintf(line + used, sizeof line - used, "%llu%s", (unsigned long long)t->id[path[len - 1]],
             shown < len - first ? " (cut short)" : "");
    /* etsim sim and ASTRA-sim enforce data and control edges alike, so a
     * cycle in either is a deadlock there.  Control edges record the calling
     * (parent) op in PyTorch-derived traces (chakra.0.et has a node that is
     * its own parent): `sim --deps data` runs such a trace on its data
     * edges. */
    s->cyclic = 1;
    say(s, ETSIM_CHECK_PROBLEM,
        "%s: %s dependency cycle (%zu nodes cannot run; one cycle of %zu: "
        "%s)%s",
        t->path, ctrl ? "control" : "data", n - qt, len - first, line,
        ctrl ? "; etsim sim --deps data runs the trace on its data edges" : "");
    etsim_free(path);
  }
  etsim_free(indeg);
  etsim_free(queue);
  return 0;
}

/* Canonical kinds of the attributes ASTRA-sim reads. */
static const struct {
  const char *name;
  int kind;
  int integer; /* any integer kind is readable */
} canon[] = {
    {"comm_type", ETSIM_ATTR_INT64, 1},        {"comm_size", ETSIM_ATTR_INT64, 1},
    {"num_ops", ETSIM_ATTR_INT64, 1},          {"comm_src", ETSIM_ATTR_INT32, 1},
    {"comm_dst", ETSIM_ATTR_INT32, 1},         {"comm_tag", ETSIM_ATTR_INT32, 1},
    {"comm_priority", ETSIM_ATTR_INT32, 1},    {"tensor_size", ETSIM_ATTR_UINT64, 1},
    {"is_cpu_op", ETSIM_ATTR_BOOL, 0},         {"pg_name", ETSIM_ATTR_STRING, 0},
    {"involved_dim", ETSIM_ATTR_BOOL_LIST, 0},
};

static void check_kinds(const etsim_et_trace_t *t, sink_t *s) {
  for (size_t c = 0; c < sizeof canon / sizeof canon[0]; c++) {
    int64_t id = etsim_intern_find(&t->strings, canon[c].name);
    if (id < 0) continue;
    size_t bad = 0, odd = 0;
    uint64_t bad_node = 0, odd_node = 0;
    int bad_kind = 0, odd_kind = 0;
    for (size_t i = 0; i < t->n_nodes; i++)
      for (uint32_t k = t->attr_off[i]; k < t->attr_off[i + 1]; k++) {
        if (t->attrs[k].name != (uint32_t)id) continue;
        int kind = (int)(t->attrs[k].kind_doc & 0xff);
        if (kind == canon[c].kind) continue;
        if (canon[c].integer && etsim_attr_kind_is_int(kind)) {
          if (!odd++) {
            odd_node = t->id[i];
            odd_kind = kind;
          }
        } else if (!bad++) {
          bad_node = t->id[i];
          bad_kind = kind;
        }
      }
    if (bad)
      say(s, ETSIM_CHECK_PROBLEM, "%s: node %llu: attribute '%s' is %s, expected %s (%zu node(s))",
          t->path, (unsigned long long)bad_node, canon[c].name, etsim_attr_kind_name(bad_kind),
          etsim_attr_kind_name(canon[c].kind), bad);
    if (odd)
      say(s, ETSIM_CHECK_NOTE,
          "%s: node %llu: attribute '%s' is %s; readable, but Chakra writes "
          "%s (feeder v1 would read 0) (%zu node(s))",
          t->path, (unsigned long long)odd_node, canon[c].name, etsim_attr_kind_name(odd_kind),
          etsim_attr_kind_name(canon[c].kind), odd);
  }
}

static void check_comm_attrs(const etsim_et_trace_t *t, sink_t *s) {
  size_t no_type = 0, no_size = 0, host = 0, bad_type = 0, bad_size = 0;
  uint64_t ex_type = 0, ex_size = 0, ex_host = 0, ex_bt = 0, ex_bs = 0;
  int64_t v_bt = 0, v_bs = 0;
  for (size_t i = 0; i < t->n_nodes; i++) {
    int ty = t->type[i];
    if (ty != ETSIM_ET_COMM_COLL_NODE && ty != ETSIM_ET_COMM_SEND_NODE &&
        ty != ETSIM_ET_COMM_RECV_NODE)
      continue;
    int64_t v, cpu = 0;
    if (etsim_et_trace_attr_int(t, i, t->k_is_cpu_op, &cpu) == 1 && cpu &&
        etsim_et_trace_attr_int(t, i, t->k_comm_size, &v) != 1) {
      /* Host-side launchers (c10d::allreduce_ in PyTorch traces) carry no
       * payload; their GPU kernel node does. */
      if (!host++) ex_host = t->id[i];
      continue;
    }
    int64_t ct = -1;
    if (ty == ETSIM_ET_COMM_COLL_NODE && etsim_et_trace_attr_int(t, i, t->k_comm_type, &ct) != 1) {
      if (!no_type++) ex_type = t->id[i];
    } else if (ty == ETSIM_ET_COMM_COLL_NODE && (ct < 0 || ct >= ETSIM_COLL_TYPE_COUNT)) {
      if (!bad_type++) ex_bt = t->id[i], v_bt = ct;
    }
    if (etsim_et_trace_attr_int(t, i, t->k_comm_size, &v) != 1) {
      if (!no_size++) ex_size = t->id[i];
      continue;
    }
    /* What etsim sim refuses: a collective it simulates over the network
     * moves at least one byte; no message has a negative size. */
    int net = ct == ETSIM_COLL_ALL_REDUCE || ct == ETSIM_COLL_ALL_GATHER ||
              ct == ETSIM_COLL_REDUCE_SCATTER || ct == ETSIM_COLL_ALL_TO_ALL;
    if ((v < 0 || (v == 0 && ty == ETSIM_ET_COMM_COLL_NODE && net)) && !bad_size++)
      ex_bs = t->id[i], v_bs = v;
  }
  if (bad_type)
    say(s, ETSIM_CHECK_PROBLEM,
        "%s: node %llu: comm_type %lld is not a collective (0 to %d) (%zu node(s))", t->path,
        (unsigned long long)ex_bt, (long long)v_bt, ETSIM_COLL_TYPE_COUNT - 1, bad_type);
  if (bad_size)
    say(s, ETSIM_CHECK_PROBLEM,
        "%s: node %llu: comm_size %lld (a collective moves at least one byte; no size is "
        "negative) (%zu node(s))",
        t->path, (unsigned long long)ex_bs, (long long)v_bs, bad_size);
  if (host)
    say(s, ETSIM_CHECK_NOTE,
        "%s: node %llu: %zu host-side (is_cpu_op) communication node(s) "
        "without comm_size, taken as launchers",
        t->path, (unsigned long long)ex_host, host);
  if (no_type)
    say(s, ETSIM_CHECK_PROBLEM,
        "%s: node %llu: collective without an integer comm_type (%zu node(s))", t->path,
        (unsigned long long)ex_type, no_type);
  if (no_size)
    say(s, ETSIM_CHECK_PROBLEM,
        "%s: node %llu: communication node without an integer comm_size (%zu "
        "node(s))",
        t->path, (unsigned long long)ex_size, no_size);
}

/* Strings protobuf's string fields require to be UTF-8 (names, string
 * attributes, input and output descriptions, attribute names and docs):
 * Chakra's Python readers refuse a file that breaks this, and such names
 * come from PyTorch traces, which copy them byte for byte. */
static int utf8_ok(const char *s) { return etsim_utf8_valid(s, strlen(s)) == strlen(s); }

static void check_utf8(const etsim_et_trace_t *t, sink_t *s) {
  size_t bad = 0;
  uint64_t ex = 0;
  const char *what = "";
  for (size_t i = 0; i < t->n_nodes; i++) {
    const char *w = NULL;
    if (!utf8_ok(t->name[i])) w = "its name";
    for (uint32_t k = t->attr_off[i]; k < t->attr_off[i + 1] && !w; k++) {
      int kind = (int)(t->attrs[k].kind_doc & 0xff);
      if (kind != ETSIM_ATTR_STRING && kind != ETSIM_ATTR_STRING_LIST) continue;
      etsim_attr_t a;
      etsim_et_trace_attr(t, k, &a);
      if (kind == ETSIM_ATTR_STRING && !utf8_ok(a.v.s)) w = a.name;
      for (size_t j = 0; kind == ETSIM_ATTR_STRING_LIST && j < a.v.list.n && !w; j++)
        if (!utf8_ok(((const char *const *)a.v.list.v)[j])) w = a.name;
    }
    if (!w && t->io[i]) {
      const etsim_et_io_t *io = &t->ios[t->io[i]];
      const etsim_ioinfo_t *v[2] = {&io->in, &io->out};
      for (int k = 0; k < 2 && !w; k++)
        if (!utf8_ok(v[k]->values) || !utf8_ok(v[k]->shapes) || !utf8_ok(v[k]->types))
          w = k ? "its outputs" : "its inputs";
    }
    if (w && !bad++) ex = t->id[i], what = w;
  }
  for (size_t k = 0; k < t->strings.n && !bad; k++)
    if (!utf8_ok(t->strings.strs[k])) bad++, what = "an attribute name or doc string";
  if (bad)
    say(s, ETSIM_CHECK_PROBLEM,
        "%s: node %llu: %s is not valid UTF-8, which protobuf strings must be (Chakra's Python "
        "readers refuse the file) (%zu node(s))",
        t->path, (unsigned long long)ex, what, bad);
}

static long validate_into(const etsim_et_trace_t *t, sink_t *s) {
  if (t->n_dup) {
    char ex[256];
    size_t used = 0;
    ex[0] = '\0';
    for (size_t k = 0; k < t->n_dup && k < EXAMPLES; k++)
      used += (size_t)snprintf(ex + used, sizeof ex - used, "%s%llu", k ? ", " : "",
                               (unsigned long long)t->id[t->dup_idx[k]]);
    say(s, ETSIM_CHECK_PROBLEM, "%s: %zu duplicate node id(s) (e.g. %s)", t->path, t->n_dup, ex);
  }
  check_dangling(t, s, 0);
  check_dangling(t, s, 1);
  if (check_cycles(t, s, 0) || check_cycles(t, s, 1)) return ETSIM_ENOMEM;
  check_kinds(t, s);
  check_comm_attrs(t, s);
  check_utf8(t, s);
  return 0;
}

long etsim_et_validate(const etsim_et_trace_t *t, etsim_et_finding_fn fn, void *user) {
  sink_t s = {fn, user, 0, 0};
  long rc = validate_into(t, &s);
  return rc < 0 ? rc : s.problems;
}

/* ------------------------------------------------------------ across ranks */

typedef struct {
  int64_t src, dst, tag, size;
  uint32_t rank;
  uint64_t node;
} p2p_t;

static int cmp_p2p(const void *a, const void *b) {
  const p2p_t *x = a, *y = b;
  if (x->src != y->src) return x->src < y->src ? -1 : 1;
  if (x->dst != y->dst) return x->dst < y->dst ? -1 : 1;
  if (x->tag != y->tag) return x->tag < y->tag ? -1 : 1;
  if (x->size != y->size) return x->size < y->size ? -1 : 1;
  return 0;
}

static int64_t attr_or(const etsim_et_trace_t *t, size_t i, uint32_t k, int64_t dflt) {
  int64_t v;
  return etsim_et_trace_attr_int(t, i, k, &v) == 1 ? v : dflt;
}

static int check_p2p(const etsim_et_set_t *set, sink_t *s) {
  p2p_t *snd = NULL, *rcv = NULL;
  size_t ns = 0, nr = 0, cs = 0, cr = 0, misnamed = 0;
  p2p_t ex_m = {0};
  for (size_t r = 0; r < set->n_ranks; r++) {
    const etsim_et_trace_t *t = set->ranks[r];
    for (size_t i = 0; i < t->n_nodes; i++) {
      int ty = t->type[i];
      if (ty != ETSIM_ET_COMM_SEND_NODE && ty != ETSIM_ET_COMM_RECV_NODE) continue;
      p2p_t p;
      p.rank = (uint32_t)r;
      p.node = t->id[i];
      p.tag = attr_or(t, i, t->k_comm_tag, 0);
      p.size = attr_or(t, i, t->k_comm_size, -1);
      if (ty == ETSIM_ET_COMM_SEND_NODE) {
        p.src = attr_or(t, i, t->k_comm_src, (int64_t)r);
        p.dst = attr_or(t, i, t->k_comm_dst, -1);
        if (etsim_grow((void **)&snd, &cs, ns + 1, sizeof *snd)) goto oom;
        snd[ns++] = p;
      } else {
        p.src = attr_or(t, i, t->k_comm_src, -1);
        p.dst = attr_or(t, i, t->k_comm_dst, (int64_t)r);
        if (etsim_grow((void **)&rcv, &cr, nr + 1, sizeof *rcv)) goto oom;
        rcv[nr++] = p;
      }
      /* etsim sim refuses a message whose own end is not its rank or whose
       * other end is no other rank of the set. */
      int64_t self = ty == ETSIM_ET_COMM_SEND_NODE ? p.src : p.dst;
      int64_t peer = ty == ETSIM_ET_COMM_SEND_NODE ? p.dst : p.src;
      if ((self != (int64_t)r || peer < 0 || peer >= (int64_t)set->n_ranks || peer == self) &&
          !misnamed++)
        ex_m = p;
    }
  }
  if (misnamed && set->n_ranks > 1)
    say(s, ETSIM_CHECK_PROBLEM,
        "%s: node %llu: rank %u has a message from %lld to %lld: one end must be its rank, the "
        "other another of the %zu ranks (%zu message(s))",
        set->ranks[ex_m.rank]->path, (unsigned long long)ex_m.node, ex_m.rank, (long long)ex_m.src,
        (long long)ex_m.dst, set->n_ranks, misnamed);
  if (ns) etsim_qsort(snd, ns, sizeof *snd, cmp_p2p);
  if (nr) etsim_qsort(rcv, nr, sizeof *rcv, cmp_p2p);
  size_t i = 0, j = 0, lone_s = 0, lone_r = 0;
  const p2p_t *ex_s = NULL, *ex_r = NULL;
  while (i < ns || j < nr) {
    int c = i >= ns ? 1 : j >= nr ? -1 : cmp_p2p(&snd[i], &rcv[j]);
    if (c == 0) {
      i++;
      j++;
    } else if (c < 0) {
      if (!lone_s++) ex_s = &snd[i];
      i++;
    } else {
      if (!lone_r++) ex_r = &rcv[j];
      j++;
    }
  }
  if (lone_s)
    say(s, ETSIM_CHECK_PROBLEM,
        "%s: node %llu: %zu send(s) with no matching receive (e.g. rank %u -> "
        "%lld, tag %lld, %lld bytes)",
        set->ranks[ex_s->rank]->path, (unsigned long long)ex_s->node, lone_s, ex_s->rank,
        (long long)ex_s->dst, (long long)ex_s->tag, (long long)ex_s->size);
  if (lone_r)
    say(s, ETSIM_CHECK_PROBLEM,
        "%s: node %llu: %zu receive(s) with no matching send (e.g. rank %u <- "
        "%lld, tag %lld, %lld bytes)",
        set->ranks[ex_r->rank]->path, (unsigned long long)ex_r->node, lone_r, ex_r->rank,
        (long long)ex_r->src, (long long)ex_r->tag, (long long)ex_r->size);
  etsim_free(snd);
  etsim_free(rcv);
  return 0;
oom:
  etsim_free(snd);
  etsim_free(rcv);
  return ETSIM_ENOMEM;
}

/* Per communicator: the k-th collective of every member must agree with the
 * first member's k-th (type and size), and members must issue as many.  A
 * communicator is a pg_name ("" and "0" are all ranks); its first member is
 * the lowest rank with a collective on it. */
static const char *pg_of(const etsim_et_trace_t *t, size_t i) {
  const char *pg = etsim_et_trace_attr_str(t, i, t->k_pg_name);
  return pg && *pg && strcmp(pg, "0") != 0 ? pg : "";
}

/* How a message names communicator pg: "" is the world communicator, which
 * has no name of its own to quote. */
static const char *pg_label(const char *pg, char *buf, size_t cap) {
  if (!*pg) return "the world communicator";
  snprintf(buf, cap, "communicator '%s'", pg);
  return buf;
}

/* Next collective on communicator pg at or after i; n_nodes when none. */
static size_t next_on(const etsim_et_trace_t *t, size_t i, const char *pg) {
  while (i < t->n_nodes && (t->type[i] != ETSIM_ET_COMM_COLL_NODE || strcmp(pg_of(t, i), pg) != 0))
    i++;
  return i;
}

static int check_collectives(const etsim_et_set_t *set, sink_t *s) {
  if (set->n_ranks < 2) return 0;
  /* pg_name hash -> first rank using it (collisions: compared as strings,
   * a colliding name is then checked against that rank and may report a
   * count mismatch; 64-bit hashes make this vanishingly rare). */
  etsim_u64map_t first;
  etsim_u64map_init(&first);
  for (size_t r = 0; r < set->n_ranks; r++) {
    const etsim_et_trace_t *t = set->ranks[r];
    for (size_t i = 0; i < t->n_nodes; i++) {
      if (t->type[i] != ETSIM_ET_COMM_COLL_NODE) continue;
      const char *pg = pg_of(t, i);
      if (etsim_u64map_put(&first, etsim_hash_bytes(pg, strlen(pg)), (uint32_t)r, NULL) < 0) {
        etsim_u64map_free(&first);
        return ETSIM_ENOMEM;
      }
    }
  }
  for (size_t r = 1; r < set->n_ranks; r++) {
    const etsim_et_trace_t *t = set->ranks[r];
    /* Each communicator this rank uses, once: at its first collective. */
    etsim_u64map_t seen;
    etsim_u64map_init(&seen);
    for (size_t i = 0; i < t->n_nodes; i++) {
      if (t->type[i] != ETSIM_ET_COMM_COLL_NODE) continue;
      const char *pg = pg_of(t, i);
      int fresh = etsim_u64map_put(&seen, etsim_hash_bytes(pg, strlen(pg)), 0, NULL);
      if (fresh < 0) {
        etsim_u64map_free(&seen);
        etsim_u64map_free(&first);
        return ETSIM_ENOMEM;
      }
      if (!fresh) continue; /* not the first collective on pg */
      uint32_t ref = 0;
      etsim_u64map_get(&first, etsim_hash_bytes(pg, strlen(pg)), &ref);
      const etsim_et_trace_t *t0 = set->ranks[ref];
      if (ref == r || t0 == t) continue;
      size_t a = i, b = next_on(t0, 0, pg);
      for (;;) {
        if (a >= t->n_nodes || b >= t0->n_nodes) {
          char lb[160];
          if (a < t->n_nodes || b < t0->n_nodes)
            say(s, ETSIM_CHECK_PROBLEM,
                "%s: rank %zu issues %s collectives on %s than rank %u (first "
                "extra node %llu)",
                t->path, r, a < t->n_nodes ? "more" : "fewer", pg_label(pg, lb, sizeof lb), ref,
                (unsigned long long)(a < t->n_nodes ? t->id[a] : t0->id[b]));
          break;
        }
        int64_t ty = attr_or(t, a, t->k_comm_type, -1), ty0 = attr_or(t0, b, t0->k_comm_type, -1);
        int64_t sz = attr_or(t, a, t->k_comm_size, -1), sz0 = attr_or(t0, b, t0->k_comm_size, -1);
        if (ty != ty0 || sz != sz0) {
          char lb[160];
          say(s, ETSIM_CHECK_PROBLEM,
              "%s: node %llu: rank %zu issues %s of %lld bytes on %s where rank "
              "%u (node %llu) issues %s of %lld bytes",
              t->path, (unsigned long long)t->id[a], r, etsim_coll_type_name((int)ty),
              (long long)sz, pg_label(pg, lb, sizeof lb), ref, (unsigned long long)t0->id[b],
              etsim_coll_type_name((int)ty0), (long long)sz0);
          break;
        }
        a = next_on(t, a + 1, pg);
        b = next_on(t0, b + 1, pg);
      }
    }
    etsim_u64map_free(&seen);
  }
  etsim_u64map_free(&first);
  return 0;
}

/* ------------------------------------------------------------- deadlock */

/*
 * Run the set the way etsim sim issues it, with time left out: a node is
 * ready when its parents are done; compute and other local nodes finish at
 * once; a send finishes at once (eager, as sim's) and leaves a message for
 * its (src, dst, tag, size); a receive finishes when such a message is
 * there; a collective simulated over the network (all-reduce, all-gather,
 * reduce-scatter, all-to-all) finishes when every rank of its communicator
 * has reached the same one (the k-th on that pg_name), and until then holds
 * its resource (the GPU communication slot, or the CPU for is_cpu_op), so
 * that no other collective or send of its rank can start (ASTRA-sim's rule,
 * sim's default).  Whatever is left at the end is a deadlock sim would hit.
 * Communicator members are the ranks with a collective on it, as
 * check_collectives takes them; as in sim's system layer, the collectives
 * of communicators of every rank are matched in the rank's order of all of
 * them, others in the order on their communicator.
 */

enum { DL_LOCAL, DL_SEND, DL_RECV, DL_COLL };
#define DL_DONE UINT32_MAX

typedef struct {
  uint32_t rank, node, next;
} dl_waiter_t;

typedef struct {
  const etsim_et_set_t *set;
  unsigned deps;
  uint32_t **left;  /* per rank: parents not done per node; DL_DONE when done */
  uint32_t **ready; /* per rank: ring of ready nodes (a node is in one queue at a time) */
  size_t *rh, *rt;
  uint32_t **deferred; /* per rank and resource (0 CPU, 1 comm): ring */
  size_t *dh, *dt;
  uint8_t *held; /* per rank: bit 0 CPU, bit 1 comm held by a waiting collective */
  size_t *done;
  etsim_u64map_t slots; /* (pg, k) collective instance or (src, dst, tag, size) channel */
  struct dl_slot {
    uint32_t count;  /* ranks arrived / messages waiting */
    uint32_t head;   /* waiters (dl_waiter_t index + 1), 0: none */
    uint32_t target; /* ranks a collective needs */
  } * slot;
  size_t n_slot, cap_slot;
  dl_waiter_t *w;
  size_t n_w, cap_w;
  uint32_t *pg_members;    /* per pg index */
  etsim_u64map_t pg_index; /* pg_name hash -> pg index */
  size_t n_pg, cap_pg;
  /* Collectives each rank reached per communicator: (pg index << 24 |
   * rank) -> a counter in coll_n.  Sparse: a rank is on a few of the
   * communicators, and 65,536 ranks have 32 K TP pairs (a dense table per
   * rank was 8.6 GB). */
  etsim_u64map_t coll_k;
  uint32_t *coll_n;
  size_t n_coll_n, cap_coll_n;
  uint32_t *work; /* ranks with ready nodes */
  size_t n_work, cap_work;
  uint8_t *in_work;
} dl_t;

static int dl_kind(const etsim_et_trace_t *t, size_t i) {
  int ty = t->type[i];
  int64_t v;
  if (ty == ETSIM_ET_COMM_SEND_NODE) return DL_SEND;
  if (ty == ETSIM_ET_COMM_RECV_NODE) return DL_RECV;
  if (ty != ETSIM_ET_COMM_COLL_NODE) return DL_LOCAL;
  if (etsim_et_trace_attr_int(t, i, t->k_comm_size, &v) != 1) return DL_LOCAL; /* launcher */
  if (etsim_et_trace_attr_int(t, i, t->k_comm_type, &v) != 1) return DL_LOCAL;
  return v == ETSIM_COLL_ALL_REDUCE || v == ETSIM_COLL_ALL_GATHER ||
                 v == ETSIM_COLL_REDUCE_SCATTER || v == ETSIM_COLL_ALL_TO_ALL
             ? DL_COLL
             : DL_LOCAL;
}

static int dl_res(const etsim_et_trace_t *t, size_t i) {
  int64_t v = 0;
  return etsim_et_trace_attr_int(t, i, t->k_is_cpu_op, &v) == 1 && v ? 0 : 1;
}

static int dl_push_work(dl_t *d, uint32_t r) {
  if (d->in_work[r]) return 0;
  if (etsim_grow((void **)&d->work, &d->cap_work, d->n_work + 1, sizeof *d->work))
    return ETSIM_ENOMEM;
  d->work[d->n_work++] = r;
  d->in_work[r] = 1;
  return 0;
}

static size_t dl_ring(const dl_t *d, uint32_t r) {
  size_t n = d->set->ranks[r]->n_nodes;
  return n ? n : 1;
}

static int dl_ready(dl_t *d, uint32_t r, uint32_t i) {
  d->ready[r][d->rt[r]++ % dl_ring(d, r)] = i;
  return dl_push_work(d, r);
}

/* Slot for a key, created empty. */
static int dl_slot(dl_t *d, uint64_t key, struct dl_slot **out) {
  uint32_t k;
  if (!etsim_u64map_get(&d->slots, key, &k)) {
    if (etsim_grow((void **)&d->slot, &d->cap_slot, d->n_slot + 1, sizeof *d->slot))
      return ETSIM_ENOMEM;
    k = (uint32_t)d->n_slot++;
    memset(&d->slot[k], 0, sizeof d->slot[k]);
    if (etsim_u64map_put(&d->slots, key, k, NULL) < 0) return ETSIM_ENOMEM;
  }
  *out = &d->slot[k];
  return 0;
}

static int dl_wait(dl_t *d, struct dl_slot *sl, uint32_t r, uint32_t i) {
  if (etsim_grow((void **)&d->w, &d->cap_w, d->n_w + 1, sizeof *d->w)) return ETSIM_ENOMEM;
  d->w[d->n_w] = (dl_waiter_t){r, i, sl->head};
  sl->head = (uint32_t)++d->n_w;
  return 0;
}

static int dl_finish(dl_t *d, uint32_t r, uint32_t i) {
  const etsim_et_trace_t *t = d->set->ranks[r];
  d->done[r]++;
  d->left[r][i] = DL_DONE;
  if (d->deps & ETSIM_ET_DEPS_DATA)
    for (uint32_t e = t->data_coff[i]; e < t->data_coff[i + 1]; e++)
      if (--d->left[r][t->data_chd[e]] == 0 && dl_ready(d, r, t->data_chd[e])) return ETSIM_ENOMEM;
  if (d->deps & ETSIM_ET_DEPS_CTRL)
    for (uint32_t e = t->ctrl_coff[i]; e < t->ctrl_coff[i + 1]; e++)
      if (--d->left[r][t->ctrl_chd[e]] == 0 && dl_ready(d, r, t->ctrl_chd[e])) return ETSIM_ENOMEM;
  return 0;
}

static uint64_t dl_mix(uint64_t h, int64_t v) { return etsim_hash_u64(h ^ (uint64_t)v) * 31 + 7; }

/* Attributes are read through the set: in a set loaded with
 * ETSIM_ET_SET_SHARE_LABELS ranks share a trace and differ in their
 * pg_name, comm_src and comm_dst (etsim edit checks its output so). */
static int64_t dl_attr(const etsim_et_set_t *s, uint32_t r, size_t i, uint32_t k, int64_t dflt) {
  int64_t v;
  return etsim_et_set_attr_int(s, r, i, k, &v) == 1 ? v : dflt;
}

static const char *dl_pg_name(const etsim_et_set_t *s, uint32_t r, size_t i) {
  const char *pg = etsim_et_set_attr_str(s, r, i, s->ranks[r]->k_pg_name);
  return pg && *pg && strcmp(pg, "0") != 0 ? pg : ""; /* as pg_of */
}

static uint64_t dl_channel(const etsim_et_set_t *s, uint32_t r, size_t i, int send) {
  const etsim_et_trace_t *t = s->ranks[r];
  int64_t src = dl_attr(s, r, i, t->k_comm_src, send ? (int64_t)r : -1);
  int64_t dst = dl_attr(s, r, i, t->k_comm_dst, send ? -1 : (int64_t)r);
  uint64_t h = dl_mix(dl_mix(0x5ca1ab1eULL, src), dst);
  h = dl_mix(dl_mix(h, dl_attr(s, r, i, t->k_comm_tag, 0)), dl_attr(s, r, i, t->k_comm_size, -1));
  return h | 1; /* odd: never a collective's key */
}

static size_t dl_pg(const dl_t *d, uint32_t r, size_t i) {
  const char *pg = dl_pg_name(d->set, r, i);
  uint32_t k;
  return etsim_u64map_get(&d->pg_index, etsim_hash_bytes(pg, strlen(pg)), &k) ? k : SIZE_MAX;
}

/* A collective completes: finish every waiter, release their resources. */
static int dl_coll_done(dl_t *d, struct dl_slot *sl) {
  uint32_t h = sl->head;
  sl->head = 0;
  for (; h; h = d->w[h - 1].next) {
    uint32_t r = d->w[h - 1].rank, i = d->w[h - 1].node;
    int res = dl_res(d->set->ranks[r], i);
    d->held[r] &= (uint8_t) ~(1u << res);
    /* Nodes kept back by the resource go first, in the order they came. */
    size_t q = (size_t)r * 2 + (size_t)res;
    while (d->dh[q] < d->dt[q])
      if (dl_ready(d, r, d->deferred[q][d->dh[q]++ % dl_ring(d, r)])) return ETSIM_ENOMEM;
    if (dl_finish(d, r, i)) return ETSIM_ENOMEM;
  }
  return 0;
}

static int dl_step(dl_t *d, uint32_t r, uint32_t i) {
  const etsim_et_trace_t *t = d->set->ranks[r];
  int kind = dl_kind(t, i);
  struct dl_slot *sl;
  if (kind == DL_LOCAL) return dl_finish(d, r, i);
  if (kind == DL_RECV) {
    if (dl_slot(d, dl_channel(d->set, r, i, 0), &sl)) return ETSIM_ENOMEM;
    if (!sl->count) return dl_wait(d, sl, r, i);
    sl->count--;
    return dl_finish(d, r, i);
  }
  int res = dl_res(t, i);
  if (d->held[r] & (1u << res)) { /* a waiting collective holds the slot */
    size_t q = (size_t)r * 2 + (size_t)res;
    d->deferred[q][d->dt[q]++ % dl_ring(d, r)] = i;
    return 0;
  }
  if (kind == DL_SEND) {
    if (dl_slot(d, dl_channel(d->set, r, i, 1), &sl)) return ETSIM_ENOMEM;
    if (sl->head) { /* a receive waits: it takes the message */
      dl_waiter_t *w = &d->w[sl->head - 1];
      sl->head = w->next;
      if (dl_finish(d, w->rank, w->node)) return ETSIM_ENOMEM;
    } else {
      sl->count++;
    }
    return dl_finish(d, r, i);
  }
  /* As sim's system layer matches them: collectives on a communicator of
   * every rank (or none named) by the rank's count of all such, the others
   * by its count on that communicator. */
  size_t pg = dl_pg(d, r, i);
  if (d->pg_members[pg] == d->set->n_ranks) pg = d->n_pg;
  uint64_t ck = (uint64_t)pg << 24 | r; /* r < 2^24 (ETSIM_ET_MAX_RANKS) */
  uint32_t at;
  if (!etsim_u64map_get(&d->coll_k, ck, &at)) {
    if (etsim_grow((void **)&d->coll_n, &d->cap_coll_n, d->n_coll_n + 1, sizeof *d->coll_n))
      return ETSIM_ENOMEM;
    at = (uint32_t)d->n_coll_n++;
    d->coll_n[at] = 0;
    if (etsim_u64map_put(&d->coll_k, ck, at, NULL) < 0) return ETSIM_ENOMEM;
  }
  uint64_t key = ((uint64_t)pg << 40 | d->coll_n[at]++) << 1; /* even */
  if (dl_slot(d, key, &sl) || dl_wait(d, sl, r, i)) return ETSIM_ENOMEM;
  sl->target = pg == d->n_pg ? (uint32_t)d->set->n_ranks : d->pg_members[pg];
  d->held[r] |= (uint8_t)(1u << res);
  if (++sl->count == sl->target) return dl_coll_done(d, sl);
  return 0;
}

static void dl_free(dl_t *d, size_t n) {
  for (size_t r = 0; r < n; r++) {
    if (d->left) etsim_free(d->left[r]);
    if (d->ready) etsim_free(d->ready[r]);
    if (d->deferred) {
      etsim_free(d->deferred[2 * r]);
      etsim_free(d->deferred[2 * r + 1]);
    }
  }
  etsim_free(d->left);
  etsim_free(d->ready);
  etsim_u64map_free(&d->coll_k);
  etsim_free(d->coll_n);
  etsim_free(d->deferred);
  etsim_free(d->rh);
  etsim_free(d->rt);
  etsim_free(d->dh);
  etsim_free(d->dt);
  etsim_free(d->held);
  etsim_free(d->done);
  etsim_free(d->in_work);
  etsim_free(d->work);
  etsim_free(d->slot);
  etsim_free(d->w);
  etsim_free(d->pg_members);
  etsim_u64map_free(&d->pg_index);
  etsim_u64map_free(&d->slots);
}

/* One line about a rank that cannot finish: its first unfinished node and
 * what that node waits for. */
static size_t dl_describe(const dl_t *d, uint32_t r, char *buf, size_t cap) {
  const etsim_et_trace_t *t = d->set->ranks[r];
  size_t i = 0, best = SIZE_MAX;
  /* A node that was reached (no parents left) says most; else the first. */
  for (i = 0; i < t->n_nodes && best == SIZE_MAX; i++)
    if (d->left[r][i] == 0 && dl_kind(t, i) != DL_LOCAL) best = i;
  int waiting = best != SIZE_MAX;
  for (i = 0; !waiting && i < t->n_nodes && best == SIZE_MAX; i++)
    if (d->left[r][i] != DL_DONE) best = i;
  if (best == SIZE_MAX) best = 0;
  const char *what = "its parents";
  char tmp[160];
  if (waiting) {
    int kind = dl_kind(t, best);
    if (kind == DL_RECV)
      snprintf(tmp, sizeof tmp, "a send from rank %lld (tag %lld, %lld bytes)",
               (long long)dl_attr(d->set, r, best, t->k_comm_src, -1),
               (long long)dl_attr(d->set, r, best, t->k_comm_tag, 0),
               (long long)dl_attr(d->set, r, best, t->k_comm_size, -1));
    else if (kind == DL_COLL) {
      char lb[120];
      snprintf(tmp, sizeof tmp, "the other ranks of %s (%s)",
               pg_label(dl_pg_name(d->set, r, best), lb, sizeof lb),
               etsim_coll_type_name((int)dl_attr(d->set, r, best, t->k_comm_type, -1)));
    } else snprintf(tmp, sizeof tmp, "its rank's collective in flight to end");
    what = tmp;
  }
  return (size_t)snprintf(buf, cap, "rank %u node %llu (%s) waits for %s", r,
                          (unsigned long long)t->id[best], etsim_et_node_type_name(t->type[best]),
                          what);
}

long etsim_et_check_deadlock(const etsim_et_set_t *set, unsigned deps, etsim_et_finding_fn fn,
                             void *user) {
  sink_t s = {fn, user, 0, 0};
  size_t n = set->n_ranks, total = 0;
  for (size_t r = 0; r < n; r++) total += set->ranks[r]->n_nodes;
  /* Per node and rank a counter: a set too big for that is not run. */
  if (total > ((size_t)1 << 28)) {
    say(&s, ETSIM_CHECK_NOTE,
        "%s: deadlock check skipped: %zu nodes over %zu ranks are more than it runs",
        set->ranks[0]->path, total, n);
    return 0;
  }
  dl_t d;
  memset(&d, 0, sizeof d);
  d.set = set;
  d.deps = deps;
  etsim_u64map_init(&d.slots);
  etsim_u64map_init(&d.pg_index);
  d.left = etsim_calloc(n, sizeof *d.left);
  d.ready = etsim_calloc(n, sizeof *d.ready);
  etsim_u64map_init(&d.coll_k);
  d.deferred = etsim_calloc(2 * n, sizeof *d.deferred);
  d.rh = etsim_calloc(n, sizeof *d.rh);
  d.rt = etsim_calloc(n, sizeof *d.rt);
  d.dh = etsim_calloc(2 * n, sizeof *d.dh);
  d.dt = etsim_calloc(2 * n, sizeof *d.dt);
  d.held = etsim_calloc(n, 1);
  d.done = etsim_calloc(n, sizeof *d.done);
  d.in_work = etsim_calloc(n, 1);
  int rc = 0;
  if (!d.left || !d.ready || !d.deferred || !d.rh || !d.rt || !d.dh || !d.dt || !d.held ||
      !d.done || !d.in_work)
    goto oom;
  /* Communicators and their members (ranks with a network collective). */
  for (size_t r = 0; r < n; r++) {
    const etsim_et_trace_t *t = set->ranks[r];
    for (size_t i = 0; i < t->n_nodes; i++) {
      if (dl_kind(t, i) != DL_COLL) continue;
      if (dl_pg(&d, (uint32_t)r, i) != SIZE_MAX) continue;
      const char *pg = dl_pg_name(set, (uint32_t)r, i);
      if (etsim_grow((void **)&d.pg_members, &d.cap_pg, d.n_pg + 1, sizeof *d.pg_members) ||
          etsim_u64map_put(&d.pg_index, etsim_hash_bytes(pg, strlen(pg)), (uint32_t)d.n_pg, NULL) <
              0)
        goto oom;
      d.pg_members[d.n_pg++] = 0;
    }
  }
  /* The last rank counted on each communicator: no table cleared per rank
   * (ranks x communicators grows as the square of a TP x DP set). */
  uint32_t *last = etsim_malloc((d.n_pg ? d.n_pg : 1) * sizeof *last);
  if (!last) goto oom;
  memset(last, 0xff, (d.n_pg ? d.n_pg : 1) * sizeof *last);
  for (size_t r = 0; r < n; r++) {
    const etsim_et_trace_t *t = set->ranks[r];
    for (size_t i = 0; i < t->n_nodes; i++)
      if (dl_kind(t, i) == DL_COLL) {
        size_t k = dl_pg(&d, (uint32_t)r, i);
        if (last[k] != (uint32_t)r) d.pg_members[k]++;
        last[k] = (uint32_t)r;
      }
  }
  etsim_free(last);
  for (size_t r = 0; r < n; r++) {
    const etsim_et_trace_t *t = set->ranks[r];
    size_t m = t->n_nodes ? t->n_nodes : 1;
    d.left[r] = etsim_calloc(m, sizeof **d.left);
    d.ready[r] = etsim_malloc(m * sizeof **d.ready);
    d.deferred[2 * r] = etsim_malloc(m * sizeof **d.deferred);
    d.deferred[2 * r + 1] = etsim_malloc(m * sizeof **d.deferred);
    if (!d.left[r] || !d.ready[r] || !d.deferred[2 * r] || !d.deferred[2 * r + 1]) goto oom;
    for (size_t i = 0; i < t->n_nodes; i++) {
      uint32_t c = 0;
      if (deps & ETSIM_ET_DEPS_DATA)
        for (uint32_t e = t->data_off[i]; e < t->data_off[i + 1]; e++)
          c += !(t->data_par[e] & ETSIM_ET_DANGLING);
      if (deps & ETSIM_ET_DEPS_CTRL)
        for (uint32_t e = t->ctrl_off[i]; e < t->ctrl_off[i + 1]; e++)
          c += !(t->ctrl_par[e] & ETSIM_ET_DANGLING);
      d.left[r][i] = c;
      if (!c && dl_ready(&d, (uint32_t)r, (uint32_t)i)) goto oom;
    }
  }
  while (d.n_work) {
    uint32_t r = d.work[--d.n_work];
    d.in_work[r] = 0;
    while (d.rh[r] < d.rt[r])
      if (dl_step(&d, r, d.ready[r][d.rh[r]++ % dl_ring(&d, r)])) goto oom;
  }
  char line[900];
  size_t used = 0, stuck = 0;
  for (size_t r = 0; r < n; r++) {
    if (d.done[r] == set->ranks[r]->n_nodes) continue;
    if (stuck++ < 3 && used < sizeof line - 200) {
      used += (size_t)snprintf(line + used, sizeof line - used, "%s", stuck > 1 ? "; " : "");
      used += dl_describe(&d, (uint32_t)r, line + used, sizeof line - used);
    }
  }
  if (stuck)
    say(&s, ETSIM_CHECK_PROBLEM, "%s: deadlock: %zu of %zu rank(s) can never finish: %s%s",
        set->ranks[0]->path, stuck, n, line, stuck > 3 ? "; ..." : "");
  dl_free(&d, n);
  return s.problems;
oom:
  rc = ETSIM_ENOMEM;
  dl_free(&d, n);
  return rc;
}

long etsim_et_validate_set(const etsim_et_set_t *set, etsim_et_finding_fn fn, void *user) {
  sink_t s = {fn, user, 0, 0};
  for (size_t k = 0; k < set->n_traces; k++)
    if (validate_into(set->traces[k], &s) < 0) return ETSIM_ENOMEM;
  long before = s.problems;
  if (check_collectives(set, &s) < 0) return ETSIM_ENOMEM;
  if (check_p2p(set, &s)) return ETSIM_ENOMEM;
  /* A deadlock that no single finding above explains: an order of sends,
   * receives and collectives across ranks, or data and control edges that
   * are acyclic apart and cyclic together.  Ranks that all run one trace
   * without point-to-point nodes do the same thing in lockstep: one of them
   * stands for all. */
  if (s.cyclic || s.problems != before || !set->n_ranks) return s.problems;
  etsim_et_set_t one = *set;
  /* (Ranks that share a trace but not its labels are not in lockstep.) */
  int lockstep = !set->attr_label;
  for (size_t r = 1; r < set->n_ranks && lockstep; r++) lockstep = set->ranks[r] == set->ranks[0];
  for (size_t i = 0; lockstep && i < set->ranks[0]->n_nodes; i++)
    lockstep = set->ranks[0]->type[i] != ETSIM_ET_COMM_SEND_NODE &&
               set->ranks[0]->type[i] != ETSIM_ET_COMM_RECV_NODE;
  if (lockstep) one.n_ranks = 1;
  long dl = etsim_et_check_deadlock(&one, ETSIM_ET_DEPS_DATA | ETSIM_ET_DEPS_CTRL, fn, user);
  return dl < 0 ? dl : s.problems + dl;
}
