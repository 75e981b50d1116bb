/*
 * validate.c — problems in a trace and across a rank set.
 *
 * Per trace: duplicate ids, dependencies on absent ids (data and control
 * apart, with examples), cycles (one printed), empty messages, well-known
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
    /* Data edges are the execution order every simulator enforces: a cycle
     * there is a deadlock.  Control edges record the calling (parent) op in
     * PyTorch-derived traces; chakra.0.et has a node that is its own parent,
     * so a control cycle is reported as a note. */
    say(s, ctrl ? ETSIM_CHECK_NOTE : ETSIM_CHECK_PROBLEM,
        "%s: %s dependency cycle (%zu nodes cannot run; one cycle of %zu: "
        "%s)",
        t->path, ctrl ? "control" : "data", n - qt, len - first, line);
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
  size_t no_type = 0, no_size = 0, host = 0;
  uint64_t ex_type = 0, ex_size = 0, ex_host = 0;
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
    if (ty == ETSIM_ET_COMM_COLL_NODE && etsim_et_trace_attr_int(t, i, t->k_comm_type, &v) != 1 &&
        !no_type++)
      ex_type = t->id[i];
    if (etsim_et_trace_attr_int(t, i, t->k_comm_size, &v) != 1 && !no_size++) ex_size = t->id[i];
  }
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
  if (t->n_empty)
    say(s, ETSIM_CHECK_PROBLEM, "%s: %zu empty node message(s): Chakra's Python readers stop there",
        t->path, t->n_empty);
  check_kinds(t, s);
  check_comm_attrs(t, s);
  return 0;
}

long etsim_et_validate(const etsim_et_trace_t *t, etsim_et_finding_fn fn, void *user) {
  sink_t s = {fn, user, 0};
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
  size_t ns = 0, nr = 0, cs = 0, cr = 0;
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
    }
  }
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
          if (a < t->n_nodes || b < t0->n_nodes)
            say(s, ETSIM_CHECK_PROBLEM,
                "%s: rank %zu issues %s collectives on communicator '%s' than rank %u (first "
                "extra node %llu)",
                t->path, r, a < t->n_nodes ? "more" : "fewer", pg, ref,
                (unsigned long long)(a < t->n_nodes ? t->id[a] : t0->id[b]));
          break;
        }
        int64_t ty = attr_or(t, a, t->k_comm_type, -1), ty0 = attr_or(t0, b, t0->k_comm_type, -1);
        int64_t sz = attr_or(t, a, t->k_comm_size, -1), sz0 = attr_or(t0, b, t0->k_comm_size, -1);
        if (ty != ty0 || sz != sz0) {
          say(s, ETSIM_CHECK_PROBLEM,
              "%s: node %llu: rank %zu issues %s of %lld bytes on communicator '%s' where rank "
              "%u (node %llu) issues %s of %lld bytes",
              t->path, (unsigned long long)t->id[a], r, etsim_coll_type_name((int)ty),
              (long long)sz, pg, ref, (unsigned long long)t0->id[b], etsim_coll_type_name((int)ty0),
              (long long)sz0);
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

long etsim_et_validate_set(const etsim_et_set_t *set, etsim_et_finding_fn fn, void *user) {
  sink_t s = {fn, user, 0};
  for (size_t k = 0; k < set->n_traces; k++)
    if (validate_into(set->traces[k], &s) < 0) return ETSIM_ENOMEM;
  if (check_collectives(set, &s) < 0) return ETSIM_ENOMEM;
  if (check_p2p(set, &s)) return ETSIM_ENOMEM;
  return s.problems;
}
