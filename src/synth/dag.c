/*
 * dag.c — DAG sets for the generator: the TPU Tile text format, Chakra
 * traces turned into windows of layers, the Kahn layer decomposition, and
 * sampled DAGs written back as Chakra traces.
 */
#include "synth/synth_int.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void etsim_synth_data_init(etsim_synth_data_t *d) { memset(d, 0, sizeof *d); }

void etsim_synth__dag_free(etsim_synth_dag_t *g) {
  etsim_free(g->x);
  etsim_free(g->src);
  etsim_free(g->dst);
  *g = (etsim_synth_dag_t){0};
}

void etsim_synth_data_free(etsim_synth_data_t *d) {
  for (size_t i = 0; i < d->n_graphs; i++) etsim_synth__dag_free(&d->g[i]);
  etsim_free(d->g);
  memset(d, 0, sizeof *d);
}

/* Append g taking ownership of its arrays (freed on failure). */
static int add_owned(etsim_synth_data_t *d, etsim_synth_dag_t *g) {
  if (etsim_grow((void **)&d->g, &d->cap, d->n_graphs + 1, sizeof *d->g)) {
    etsim_synth__dag_free(g);
    return ETSIM_ENOMEM;
  }
  d->g[d->n_graphs++] = *g;
  return 0;
}

int etsim_synth_data_add(etsim_synth_data_t *d, const etsim_synth_dag_t *g) {
  etsim_synth_dag_t c = *g;
  size_t nx = (size_t)g->n_nodes * (d->n_ch ? d->n_ch : 1);
  c.x = etsim_malloc(sizeof(uint32_t) * (nx ? nx : 1));
  c.src = etsim_malloc(sizeof(uint32_t) * (g->n_edges ? g->n_edges : 1));
  c.dst = etsim_malloc(sizeof(uint32_t) * (g->n_edges ? g->n_edges : 1));
  if (!c.x || !c.src || !c.dst) {
    etsim_synth__dag_free(&c);
    return ETSIM_ENOMEM;
  }
  memcpy(c.x, g->x, sizeof(uint32_t) * nx);
  memcpy(c.src, g->src, sizeof(uint32_t) * g->n_edges);
  memcpy(c.dst, g->dst, sizeof(uint32_t) * g->n_edges);
  return add_owned(d, &c);
}

/* ------------------------------------------------------------- layering */

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

int etsim_synth_layers(const etsim_synth_dag_t *g, uint32_t *layer, etsim_error_t *err) {
  uint32_t n = g->n_nodes;
  uint32_t *indeg = etsim_calloc(n + 1, sizeof *indeg);
  uint32_t *off = etsim_calloc(n + 1, sizeof *off);
  uint32_t *adj = etsim_malloc(sizeof *adj * (g->n_edges + 1));
  uint32_t *queue = etsim_malloc(sizeof *queue * (n + 1));
  int rc = 0;
  if (!indeg || !off || !adj || !queue) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto out;
  }
  for (uint32_t k = 0; k < g->n_edges; k++) {
    off[g->src[k] + 1]++;
    indeg[g->dst[k]]++;
  }
  for (uint32_t i = 0; i < n; i++) off[i + 1] += off[i];
  {
    uint32_t *pos = queue; /* reuse as a cursor array before the BFS */
    for (uint32_t i = 0; i < n; i++) pos[i] = off[i];
    for (uint32_t k = 0; k < g->n_edges; k++) adj[pos[g->src[k]]++] = g->dst[k];
  }
  uint32_t head = 0, tail = 0, depth = 0;
  for (uint32_t i = 0; i < n; i++)
    if (!indeg[i]) {
      queue[tail++] = i;
      layer[i] = 1;
    }
  while (head < tail) {
    uint32_t u = queue[head++];
    if (layer[u] > depth) depth = layer[u];
    for (uint32_t k = off[u]; k < off[u + 1]; k++) {
      uint32_t v = adj[k];
      if (--indeg[v] == 0) {
        layer[v] = layer[u] + 1;
        queue[tail++] = v;
      }
    }
  }
  if (tail < n) {
    uint32_t bad = 0;
    for (uint32_t i = 0; i < n; i++)
      if (indeg[i]) {
        bad = i;
        break;
      }
    rc = etsim_error_set(err, ETSIM_EFORMAT, "graph has a cycle (node %u is on or after one)", bad);
    goto out;
  }
  rc = (int)depth;
out:
  etsim_free(indeg);
  etsim_free(off);
  etsim_free(adj);
  etsim_free(queue);
  return rc;
}

/* ------------------------------------------------------------ text format */

typedef struct {
  FILE *fp;
  const char *path;
  char *line;
  size_t cap;
  long lineno;
  int bad;       /* a line that is no text: a NUL byte, endless, no memory */
  char why[128]; /* ... and why */
} lines_t;

/* The longest line read: an attribute line of 10^7 nodes takes 60 MB; a
 * stream without newlines (/dev/zero) was read forever. */
#define MAX_LINE ((size_t)256 << 20)

/* 1 and the next line (end of line removed), or 0 at the end of the file
 * or on a bad line (L->bad set). */
static int next_line(lines_t *L) {
  size_t n = 0;
  for (;;) {
    if (etsim_grow((void **)&L->line, &L->cap, n + 65536, 1)) {
      L->bad = ETSIM_ENOMEM;
      snprintf(L->why, sizeof L->why, "out of memory");
      return 0;
    }
    if (!fgets(L->line + n, (int)(L->cap - n), L->fp)) break;
    size_t got = strlen(L->line + n);
    /* fgets stops at a newline, a full buffer or the end of the file;
     * anything else means a NUL byte cut the string short. */
    if (got + 1 < L->cap - n && (got == 0 || L->line[n + got - 1] != '\n') && !feof(L->fp)) {
      L->bad = ETSIM_EFORMAT;
      snprintf(L->why, sizeof L->why, "a NUL byte: not a text file");
      return 0;
    }
    n += got;
    if (n && L->line[n - 1] == '\n') break;
    if (n > MAX_LINE) {
      L->bad = ETSIM_EFORMAT;
      snprintf(L->why, sizeof L->why, "a line longer than %zu MiB", MAX_LINE >> 20);
      return 0;
    }
  }
  if (n == 0 && (feof(L->fp) || ferror(L->fp))) return 0;
  L->lineno++;
  while (n > 0 && (L->line[n - 1] == '\n' || L->line[n - 1] == '\r')) L->line[--n] = 0;
  return 1;
}

static int parse_u32(char **p, uint32_t *out) {
  char *s = *p;
  while (*s == ' ' || *s == '\t') s++;
  if (!isdigit((unsigned char)*s)) return -1;
  errno = 0;
  char *end;
  unsigned long v = strtoul(s, &end, 10);
  if (errno || v > UINT32_MAX - 1) return -1;
  *out = (uint32_t)v;
  *p = end;
  return 0;
}

static int at_end(const char *s) {
  while (*s == ' ' || *s == '\t') s++;
  return *s == 0;
}

/* Room for `need` edges in both g->src and g->dst (*cap is the smaller). */
static int grow_edges(etsim_synth_dag_t *g, size_t *cap, size_t need) {
  size_t cs = *cap, cd = *cap;
  if (etsim_grow((void **)&g->src, &cs, need, sizeof *g->src) ||
      etsim_grow((void **)&g->dst, &cd, need, sizeof *g->dst))
    return ETSIM_ENOMEM;
  *cap = cs < cd ? cs : cd;
  return 0;
}

/* The 'g <nodes> <edges> <label>' line in L into g's counts and label. */
static int text_header(const lines_t *L, etsim_synth_dag_t *g, etsim_error_t *err) {
  const char *path = L->path;
  char *s = L->line;
  if (s[0] != 'g' || s[1] != ' ')
    return etsim_error_set(err, ETSIM_EFORMAT, "%s:%ld: expected 'g <nodes> <edges> <label>'", path,
                           L->lineno);
  s += 2;
  char *end;
  if (parse_u32(&s, &g->n_nodes) || parse_u32(&s, &g->n_edges))
    return etsim_error_set(err, ETSIM_EFORMAT, "%s:%ld: bad node or edge count", path, L->lineno);
  errno = 0;
  g->y = strtod(s, &end);
  if (end == s || errno || !at_end(end) || !isfinite(g->y))
    return etsim_error_set(err, ETSIM_EFORMAT, "%s:%ld: bad label", path, L->lineno);
  if (g->n_nodes == 0 || g->n_nodes > 10000000u || g->n_edges > 100000000u)
    return etsim_error_set(err, ETSIM_EFORMAT,
                           "%s:%ld: node count %u or edge count %u out of "
                           "range",
                           path, L->lineno, g->n_nodes, g->n_edges);
  return 0;
}

/* The node attribute line after a graph's header into g->x (and room for
 * the first edge); *maxx grows to the largest attribute.  Arrays as large
 * as the counts claim, but only once the attribute line is read: a
 * 'g 10000000 100000000' line alone was 840 MB.  Edges grow as they are
 * read. */
static int text_attrs(lines_t *L, etsim_synth_dag_t *g, size_t *cap_e, uint32_t *maxx,
                      etsim_error_t *err) {
  const char *path = L->path;
  if (!next_line(L))
    return etsim_error_set(err, ETSIM_EFORMAT, "%s:%ld: missing node attribute line", path,
                           L->lineno + 1);
  if (g->n_nodes > 4096 && strlen(L->line) / 2 + 1 < g->n_nodes)
    return etsim_error_set(err, ETSIM_EFORMAT,
                           "%s:%ld: node attribute line too short for %u values", path, L->lineno,
                           g->n_nodes);
  g->x = etsim_malloc(sizeof(uint32_t) * g->n_nodes);
  if (!g->x || grow_edges(g, cap_e, 1))
    return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
  char *s = L->line;
  for (uint32_t i = 0; i < g->n_nodes; i++) {
    if (parse_u32(&s, &g->x[i]) || g->x[i] > 65535)
      return etsim_error_set(err, ETSIM_EFORMAT,
                             "%s:%ld: node attribute %u missing or invalid "
                             "(expected %u values, categories 0..65535)",
                             path, L->lineno, i, g->n_nodes);
    if (g->x[i] > *maxx) *maxx = g->x[i];
  }
  if (!at_end(s))
    return etsim_error_set(err, ETSIM_EFORMAT, "%s:%ld: more than %u node attributes", path,
                           L->lineno, g->n_nodes);
  return 0;
}

/* g's n_edges edge lines into g->src, g->dst: in range, no self-loop. */
static int text_edges(lines_t *L, etsim_synth_dag_t *g, size_t *cap_e, etsim_error_t *err) {
  const char *path = L->path;
  for (uint32_t k = 0; k < g->n_edges; k++) {
    if (k + 1 >= *cap_e && grow_edges(g, cap_e, (size_t)k + 2))
      return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
    if (!next_line(L))
      return etsim_error_set(err, ETSIM_EFORMAT, "%s:%ld: file ends after %u of %u edges", path,
                             L->lineno, k, g->n_edges);
    char *s = L->line;
    if (parse_u32(&s, &g->src[k]) || parse_u32(&s, &g->dst[k]) || !at_end(s))
      return etsim_error_set(err, ETSIM_EFORMAT, "%s:%ld: expected an edge 'src dst'", path,
                             L->lineno);
    if (g->src[k] >= g->n_nodes || g->dst[k] >= g->n_nodes)
      return etsim_error_set(err, ETSIM_EFORMAT,
                             "%s:%ld: edge %u -> %u: node index out of range "
                             "(graph has %u nodes)",
                             path, L->lineno, g->src[k], g->dst[k], g->n_nodes);
    if (g->src[k] == g->dst[k])
      return etsim_error_set(err, ETSIM_EFORMAT, "%s:%ld: self-loop on node %u", path, L->lineno,
                             g->src[k]);
  }
  return 0;
}

/* Scratch of the whole-graph checks, kept from graph to graph. */
typedef struct {
  uint32_t *layer;
  size_t layer_cap;
  uint64_t *pairs; /* a graph's edges, sorted to find one given twice */
  size_t pairs_cap;
} text_scratch_t;

/* The checks that need all of g read (header at line gline): no edge
 * given twice, no cycle. */
static int text_check(const char *path, long gline, const etsim_synth_dag_t *g, text_scratch_t *sc,
                      etsim_error_t *err) {
  if (etsim_grow((void **)&sc->layer, &sc->layer_cap, g->n_nodes, sizeof *sc->layer) ||
      etsim_grow((void **)&sc->pairs, &sc->pairs_cap, (size_t)g->n_edges + 1, sizeof *sc->pairs))
    return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
  /* An edge given twice is no DAG LayerDAG makes, and evaluation counts
   * such a graph invalid: refuse it here, as a self-loop. */
  uint64_t *pairs = sc->pairs;
  for (uint32_t k = 0; k < g->n_edges; k++) pairs[k] = (uint64_t)g->src[k] << 32 | g->dst[k];
  etsim_qsort(pairs, g->n_edges, sizeof *pairs, cmp_u64);
  for (uint32_t k = 1; k < g->n_edges; k++)
    if (pairs[k] == pairs[k - 1])
      return etsim_error_set(err, ETSIM_EFORMAT, "%s:%ld: graph: edge %u -> %u given twice", path,
                             gline, (uint32_t)(pairs[k] >> 32), (uint32_t)pairs[k]);
  etsim_error_t e2 = {0};
  int lr = etsim_synth_layers(g, sc->layer, &e2);
  if (lr < 0) return etsim_error_set(err, lr, "%s:%ld: %s", path, gline, e2.msg);
  return 0;
}

/* One pass over the file, every check at the line it concerns (counts
 * bounded by what is read, ranges, self-loops, edges given twice, cycles),
 * so that each refusal names its line (issue 16). */
int etsim_synth_data_load_text(etsim_synth_data_t *d, const char *path, uint32_t min_classes,
                               etsim_error_t *err) {
  if (d->n_graphs && (d->kind != ETSIM_SYNTH_KIND_TEXT || d->n_ch != 1))
    return etsim_error_set(err, ETSIM_EINVAL, "%s: cannot mix text DAGs with trace DAGs", path);
  int rc0 = etsim_input_check(path, err);
  if (rc0) return rc0;
  FILE *fp = fopen(path, "r");
  if (!fp) return etsim_error_set(err, ETSIM_EIO, "%s: cannot open: %s", path, strerror(errno));
  lines_t L = {fp, path, NULL, 0, 0, 0, ""};
  int rc = 0, have = next_line(&L);
  uint32_t maxx = 0;
  size_t first = d->n_graphs;
  d->kind = ETSIM_SYNTH_KIND_TEXT;
  d->n_ch = 1;
  while (have && L.line[0] == '#') have = next_line(&L);
  text_scratch_t sc = {0};
  while (have) {
    if (at_end(L.line)) {
      have = next_line(&L);
      continue;
    }
    etsim_synth_dag_t g = {0};
    if ((rc = text_header(&L, &g, err))) goto out;
    long gline = L.lineno;
    size_t cap_e = 0;
    if ((rc = text_attrs(&L, &g, &cap_e, &maxx, err)) || (rc = text_edges(&L, &g, &cap_e, err)) ||
        (rc = text_check(path, gline, &g, &sc, err))) {
      etsim_synth__dag_free(&g);
      goto out;
    }
    if ((rc = add_owned(d, &g))) {
      rc = etsim_error_set(err, rc, "%s: out of memory", path);
      goto out;
    }
    have = next_line(&L);
  }
  if (d->n_graphs == first) {
    rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:%ld: no graphs", path, L.lineno);
    goto out;
  }
  if (d->n_cls[0] < maxx + 1) d->n_cls[0] = maxx + 1;
  if (d->n_cls[0] < min_classes) d->n_cls[0] = min_classes;
out:
  if (L.bad) /* what went wrong first, not what the reader made of an early end */
    rc = etsim_error_set(err, L.bad, "%s:%ld: %s", path, L.lineno + 1, L.why);
  if (rc) {
    while (d->n_graphs > first) {
      etsim_synth_dag_t *g = &d->g[--d->n_graphs];
      etsim_free(g->x);
      etsim_free(g->src);
      etsim_free(g->dst);
    }
  }
  etsim_free(sc.layer);
  etsim_free(sc.pairs);
  etsim_free(L.line);
  fclose(fp);
  return rc;
}

int etsim_synth_data_write_text(const etsim_synth_data_t *d, const char *path, const char *comment,
                                etsim_error_t *err) {
  etsim_outfile_t o;
  int rc = etsim_outfile_open(&o, path, err);
  if (rc) return rc;
  FILE *fp = o.fp;
  fprintf(fp, "# %s, graphs=%zu\n", comment ? comment : "etsim synth", d->n_graphs);
  fprintf(fp,
          "# block: 'g <num_nodes> <num_edges> <label_y>', then 1 line of "
          "<num_nodes> node attrs, then <num_edges> lines 'src dst' "
          "(0-based)\n");
  for (size_t i = 0; i < d->n_graphs; i++) {
    const etsim_synth_dag_t *g = &d->g[i];
    fprintf(fp, "g %u %u %.17g\n", g->n_nodes, g->n_edges, g->y);
    for (uint32_t v = 0; v < g->n_nodes; v++) {
      for (uint32_t c = 0; c < d->n_ch; c++)
        fprintf(fp, c ? ",%u" : "%u", g->x[(size_t)v * d->n_ch + c]);
      fputc(v + 1 < g->n_nodes ? ' ' : '\n', fp);
    }
    for (uint32_t k = 0; k < g->n_edges; k++) fprintf(fp, "%u %u\n", g->src[k], g->dst[k]);
  }
  if (ferror(fp)) {
    etsim_outfile_abort(&o);
    return etsim_error_set(err, ETSIM_EIO, "%s: write failed", path);
  }
  return etsim_outfile_commit(&o, err);
}

/* --------------------------------------------------------- Chakra traces */

void etsim_synth_trace_opts_default(etsim_synth_trace_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->max_nodes = 400;
  o->y = 1.0;
}

static uint32_t log2_bin(uint64_t v, uint32_t nbins) {
  if (v == 0) return 0;
  uint32_t b = 1;
  while (v > 1 && b + 1 < nbins) {
    v >>= 1;
    b++;
  }
  return b;
}

static int contains_ci(const char *s, const char *w) {
  size_t n = strlen(w);
  for (; *s; s++)
    if (strncasecmp(s, w, n) == 0) return 1;
  return 0;
}

/* Node class (channel 0); *coll gets 1 + the collective type for
 * collectives, else 0 (channel 1). */
static uint32_t op_class(const etsim_et_trace_t *t, size_t i, uint32_t *coll) {
  int64_t v;
  *coll = 0;
  switch (t->type[i]) {
    case ETSIM_ET_MEM_LOAD_NODE:
      return ETSIM_SYNTH_OP_MEM_LOAD;
    case ETSIM_ET_MEM_STORE_NODE:
      return ETSIM_SYNTH_OP_MEM_STORE;
    case ETSIM_ET_COMM_SEND_NODE:
      return ETSIM_SYNTH_OP_SEND;
    case ETSIM_ET_COMM_RECV_NODE:
      return ETSIM_SYNTH_OP_RECV;
    case ETSIM_ET_COMM_COLL_NODE:
      if (etsim_et_trace_attr_int(t, i, t->k_comm_type, &v) == 1 && v >= 0 &&
          v < ETSIM_COLL_TYPE_COUNT)
        *coll = 1 + (uint32_t)v;
      else *coll = 1 + ETSIM_COLL_ALL_REDUCE;
      return ETSIM_SYNTH_OP_COLL;
    default:
      break;
  }
  if (etsim_et_trace_attr_int(t, i, t->k_is_cpu_op, &v) == 1 && v) return ETSIM_SYNTH_OP_CPU;
  const char *nm = t->name[i];
  if (contains_ci(nm, "mm") || contains_ci(nm, "gemm") || contains_ci(nm, "linear") ||
      contains_ci(nm, "matmul"))
    return ETSIM_SYNTH_OP_GEMM;
  if (contains_ci(nm, "conv")) return ETSIM_SYNTH_OP_CONV;
  if (contains_ci(nm, "attn") || contains_ci(nm, "attention") || contains_ci(nm, "softmax"))
    return ETSIM_SYNTH_OP_ATTN;
  if (contains_ci(nm, "norm")) return ETSIM_SYNTH_OP_NORM;
  if (contains_ci(nm, "add") || contains_ci(nm, "mul") || contains_ci(nm, "relu") ||
      contains_ci(nm, "gelu") || contains_ci(nm, "copy") || contains_ci(nm, "fill") ||
      contains_ci(nm, "div") || contains_ci(nm, "sub"))
    return ETSIM_SYNTH_OP_ELEMWISE;
  return ETSIM_SYNTH_OP_COMP_OTHER;
}

int etsim_synth__is_comm(uint32_t c) {
  return c == ETSIM_SYNTH_OP_SEND || c == ETSIM_SYNTH_OP_RECV || c == ETSIM_SYNTH_OP_COLL;
}

/* Attribute rules of KIND_TRACE data (the four channels are diffused
 * independently, so nothing but learning keeps them consistent): the
 * collective type is "n/a" (0) exactly for non-collectives, and the size
 * bin exactly for the classes that do not communicate. */
int etsim_synth__attr_rule_ok(const uint32_t *x) {
  if (x[0] >= ETSIM_SYNTH_OP_COUNT || x[1] >= ETSIM_SYNTH_COLL_BINS ||
      x[2] >= ETSIM_SYNTH_DUR_BINS || x[3] >= ETSIM_SYNTH_SIZE_BINS)
    return 0;
  if ((x[0] == ETSIM_SYNTH_OP_COLL) != (x[1] != 0)) return 0;
  return etsim_synth__is_comm(x[0]) ? x[3] != 0 : x[3] == 0;
}

/* Size bin of node i of class cls (0 for classes that do not
 * communicate); its comm_size, at least 1, in *sz. */
static uint32_t size_bin(const etsim_et_trace_t *t, size_t i, uint32_t cls, int64_t *sz) {
  if (!etsim_synth__is_comm(cls)) return 0;
  if (etsim_et_trace_attr_int(t, i, t->k_comm_size, sz) != 1 || *sz < 1) *sz = 1;
  return log2_bin((uint64_t)*sz, ETSIM_SYNTH_SIZE_BINS);
}

/* Sums of the real values behind node i's duration and size bins: the
 * duration in ns (duration_ns when the node has it, as etsim sim reads
 * it) and the communication size.  Writing a bin back at its midpoint
 * (1.5 times its lower edge) was up to 50% off for the values that sit at
 * a bin's edge, and those are common (sizes of 2^k or 1.5 * 2^k bytes):
 * real traces written back lost 0.03 of their communication share. */
static void bin_values(etsim_synth_data_t *d, const etsim_et_trace_t *t, size_t i,
                       const uint32_t *x, int64_t sz) {
  int64_t ns = 0, k_ns = x[2] ? etsim_intern_find(&t->strings, "duration_ns") : -1;
  if (x[2]) {
    if (k_ns < 0 || etsim_et_trace_attr_int(t, i, (uint32_t)k_ns, &ns) != 1 || ns <= 0)
      ns = (int64_t)(t->dur_us[i] > (uint64_t)INT64_MAX / 1000 ? INT64_MAX : t->dur_us[i] * 1000);
    d->bin_sum[x[2]] += (double)ns;
    d->bin_n[x[2]]++;
  }
  if (x[3]) {
    d->bin_sum[ETSIM_SYNTH_DUR_BINS + x[3]] += (double)sz;
    d->bin_n[ETSIM_SYNTH_DUR_BINS + x[3]]++;
  }
}

enum { NC = ETSIM_SYNTH_TRACE_CH };

/* Every node of t into full: its categories (and their real values into
 * d's bin sums), its resolved data (and optionally control) parents as
 * edges.  0 or ETSIM_ENOMEM. */
static int trace_full(etsim_synth_data_t *d, const etsim_et_trace_t *t,
                      const etsim_synth_trace_opts_t *o, etsim_synth_dag_t *full) {
  size_t n = t->n_nodes, ecap = 0, dcap = 0;
  full->x = etsim_malloc(sizeof(uint32_t) * NC * (n + 1));
  if (!full->x) return ETSIM_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    uint32_t *x = full->x + NC * i;
    x[0] = op_class(t, i, &x[1]);
    x[2] = log2_bin(t->dur_us[i], ETSIM_SYNTH_DUR_BINS);
    int64_t sz = 0;
    x[3] = size_bin(t, i, x[0], &sz);
    bin_values(d, t, i, x, sz);
    for (int pass = 0; pass < (o->use_ctrl ? 2 : 1); pass++) {
      const uint32_t *off = pass ? t->ctrl_off : t->data_off;
      const uint32_t *par = pass ? t->ctrl_par : t->data_par;
      for (uint32_t k = off[i]; k < off[i + 1]; k++) {
        if (par[k] & ETSIM_ET_DANGLING || par[k] == i) continue;
        if (etsim_grow((void **)&full->src, &ecap, full->n_edges + 1, sizeof(uint32_t)))
          return ETSIM_ENOMEM;
        if (etsim_grow((void **)&full->dst, &dcap, full->n_edges + 1, sizeof(uint32_t)))
          return ETSIM_ENOMEM;
        full->src[full->n_edges] = par[k];
        full->dst[full->n_edges++] = (uint32_t)i;
      }
    }
  }
  return 0;
}

/* The n nodes ordered by layer, stable: order[new] = old, map[old] = new.
 * 0 or ETSIM_ENOMEM. */
static int order_by_layer(size_t n, const uint32_t *layer, uint32_t *order, uint32_t *map) {
  uint32_t maxl = 0;
  for (size_t i = 0; i < n; i++) maxl = layer[i] > maxl ? layer[i] : maxl;
  uint32_t *cnt = etsim_calloc(maxl + 2, sizeof *cnt);
  if (!cnt) return ETSIM_ENOMEM;
  for (size_t i = 0; i < n; i++) cnt[layer[i]]++;
  for (uint32_t l = 1, s = 0; l <= maxl + 1; l++) {
    uint32_t c = cnt[l];
    cnt[l] = s;
    s += c;
  }
  for (size_t i = 0; i < n; i++) {
    map[i] = cnt[layer[i]]++;
    order[map[i]] = (uint32_t)i;
  }
  etsim_free(cnt);
  return 0;
}

/* Parents of every node in the new numbering (CSR: node v's are
 * adj[off[v] .. off[v+1]]), and which of them stay edges. */
typedef struct {
  uint32_t *off, *adj;
  uint8_t *keep;
} parents_t;

static void parents_free(parents_t *P) {
  etsim_free(P->off);
  etsim_free(P->adj);
  etsim_free(P->keep);
}

/* P from full's edges renumbered by map, each parent kept once (the
 * first).  0 or ETSIM_ENOMEM (P freed by the caller either way). */
static int parents_build(parents_t *P, const etsim_synth_dag_t *full, const uint32_t *map,
                         size_t n) {
  P->off = etsim_calloc(n + 2, sizeof *P->off);
  P->adj = etsim_malloc(sizeof *P->adj * (full->n_edges + 1));
  P->keep = etsim_malloc(full->n_edges + 1);
  if (!P->off || !P->adj || !P->keep) return ETSIM_ENOMEM;
  uint32_t *poff = P->off, *padj = P->adj;
  uint8_t *keep = P->keep;
  for (uint32_t k = 0; k < full->n_edges; k++) poff[map[full->dst[k]] + 1]++;
  for (size_t i = 0; i < n; i++) poff[i + 1] += poff[i];
  uint32_t *cur = etsim_malloc(sizeof *cur * (n + 1));
  if (!cur) return ETSIM_ENOMEM;
  memcpy(cur, poff, sizeof *cur * n);
  for (uint32_t k = 0; k < full->n_edges; k++) padj[cur[map[full->dst[k]]]++] = map[full->src[k]];
  etsim_free(cur);
  memset(keep, 1, full->n_edges + 1);
  /* Duplicates: keep the first of each parent. */
  for (size_t v = 0; v < n; v++)
    for (uint32_t a = poff[v]; a < poff[v + 1]; a++)
      for (uint32_t b = poff[v]; b < a && keep[a]; b++)
        if (keep[b] && padj[b] == padj[a]) keep[a] = 0;
  return 0;
}

/* Drop the transitive edges of P's n nodes (in layer order): an edge
 * u -> v is implied when u is an ancestor of another parent of v.
 * 0 or ETSIM_ENOMEM. */
static int drop_transitive(parents_t *P, size_t n) {
  const uint32_t *poff = P->off, *padj = P->adj;
  uint8_t *keep = P->keep;
  size_t words = (n + 63) / 64;
  uint64_t *reach = etsim_calloc(words * n + 1, sizeof *reach);
  if (!reach) return ETSIM_ENOMEM;
  for (size_t v = 0; v < n; v++) {
    uint64_t *rv = reach + words * v;
    for (uint32_t a = poff[v]; a < poff[v + 1]; a++) {
      uint32_t u = padj[a];
      const uint64_t *ru = reach + words * u;
      for (size_t w = 0; w < words; w++) rv[w] |= ru[w];
      rv[u / 64] |= 1ull << (u % 64);
    }
    /* u is implied when some other parent w has u among its ancestors. */
    for (uint32_t a = poff[v]; a < poff[v + 1]; a++) {
      if (!keep[a]) continue;
      uint32_t u = padj[a];
      for (uint32_t b = poff[v]; b < poff[v + 1]; b++) {
        uint32_t w = padj[b];
        if (b != a && keep[b] && (reach[words * w + u / 64] >> (u % 64)) & 1) {
          keep[a] = 0;
          break;
        }
      }
    }
  }
  etsim_free(reach);
  return 0;
}

/* Nodes order[start .. end) as a DAG of their own, with the kept edges
 * among them, appended to d.  0 or ETSIM_ENOMEM. */
static int add_window(etsim_synth_data_t *d, double y, const etsim_synth_dag_t *full,
                      const uint32_t *order, const parents_t *P, size_t start, size_t end) {
  const uint32_t *poff = P->off, *padj = P->adj;
  const uint8_t *keep = P->keep;
  etsim_synth_dag_t g = {0};
  g.n_nodes = (uint32_t)(end - start);
  g.y = y;
  size_t ne = 0;
  for (size_t v = start; v < end; v++)
    for (uint32_t a = poff[v]; a < poff[v + 1]; a++) ne += keep[a] && padj[a] >= start;
  g.n_edges = (uint32_t)ne;
  g.x = etsim_malloc(sizeof(uint32_t) * NC * g.n_nodes);
  g.src = etsim_malloc(sizeof(uint32_t) * (ne + 1));
  g.dst = etsim_malloc(sizeof(uint32_t) * (ne + 1));
  if (!g.x || !g.src || !g.dst) {
    etsim_synth__dag_free(&g);
    return ETSIM_ENOMEM;
  }
  ne = 0;
  for (size_t v = start; v < end; v++) {
    memcpy(g.x + NC * (v - start), full->x + NC * order[v], NC * sizeof(uint32_t));
    for (uint32_t a = poff[v]; a < poff[v + 1]; a++)
      if (keep[a] && padj[a] >= start) {
        g.src[ne] = (uint32_t)(padj[a] - start);
        g.dst[ne++] = (uint32_t)(v - start);
      }
  }
  return add_owned(d, &g) ? ETSIM_ENOMEM : 0;
}

/* Windows of the n nodes: consecutive layers, at most maxn nodes (a layer
 * wider than maxn is cut into pieces of maxn).  0 or ETSIM_ENOMEM. */
static int add_windows(etsim_synth_data_t *d, double y, uint32_t maxn,
                       const etsim_synth_dag_t *full, const uint32_t *layer, const uint32_t *order,
                       const parents_t *P, size_t n) {
  size_t start = 0;
  while (start < n) {
    size_t end = start;
    while (end < n) {
      size_t lend = end;
      uint32_t l = layer[order[end]];
      while (lend < n && layer[order[lend]] == l) lend++;
      if (lend - start > maxn) {
        if (end == start) end = start + maxn;
        break;
      }
      end = lend;
    }
    if (add_window(d, y, full, order, P, start, end)) return ETSIM_ENOMEM;
    start = end;
  }
  return 0;
}

void etsim_synth__trace_layout(etsim_synth_data_t *d) {
  d->kind = ETSIM_SYNTH_KIND_TRACE;
  d->n_ch = ETSIM_SYNTH_TRACE_CH;
  d->n_cls[0] = ETSIM_SYNTH_OP_COUNT;
  d->n_cls[1] = ETSIM_SYNTH_COLL_BINS;
  d->n_cls[2] = ETSIM_SYNTH_DUR_BINS;
  d->n_cls[3] = ETSIM_SYNTH_SIZE_BINS;
}

int etsim_synth_data_load_trace(etsim_synth_data_t *d, const char *path,
                                const etsim_synth_trace_opts_t *o, etsim_error_t *err) {
  if (d->n_graphs && d->kind != ETSIM_SYNTH_KIND_TRACE)
    return etsim_error_set(err, ETSIM_EINVAL, "%s: cannot mix trace DAGs with text DAGs", path);
  etsim_synth__trace_layout(d);
  etsim_et_trace_t *t;
  int rc = etsim_et_trace_load(&t, path, ETSIM_ET_READ_SKIP_UNKNOWN, err);
  if (rc) return rc;
  size_t n = t->n_nodes;
  uint32_t maxn = o->max_nodes ? o->max_nodes : 400;
  /* Edges: resolved data (and optionally control) parents, deduplicated. */
  etsim_synth_dag_t full = {0};
  full.n_nodes = (uint32_t)n;
  uint32_t *layer = NULL, *order = NULL, *map = NULL;
  parents_t P = {0};
  if (trace_full(d, t, o, &full)) goto oom;
  layer = etsim_malloc(sizeof *layer * (n + 1));
  if (!layer) goto oom;
  {
    etsim_error_t e2 = {0};
    int lr = etsim_synth_layers(&full, layer, &e2);
    if (lr < 0) {
      rc = etsim_error_set(err, lr, "%s: %s", path, e2.msg);
      goto out;
    }
  }
  /* Order nodes by layer (stable), then drop transitive edges. */
  order = etsim_malloc(sizeof *order * (n + 1));
  map = etsim_malloc(sizeof *map * (n + 1));
  if (!order || !map || order_by_layer(n, layer, order, map)) goto oom;
  if (parents_build(&P, &full, map, n)) goto oom;
  if (!o->keep_transitive && n <= 40000 && drop_transitive(&P, n)) goto oom;
  size_t first = d->n_graphs;
  if (add_windows(d, o->y, maxn, &full, layer, order, &P, n)) goto oom;
  for (size_t i = first; i < d->n_graphs; i++) d->g[i].y2 = o->y2;
  rc = 0;
  goto out;
oom:
  rc = etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
out:
  parents_free(&P);
  etsim_free(order);
  etsim_free(map);
  etsim_free(layer);
  etsim_synth__dag_free(&full);
  etsim_et_trace_free(t);
  return rc;
}

/* ------------------------------------------------- writing a Chakra trace */

/* Value of entry k of d's bin tables (k = duration bin, or
 * ETSIM_SYNTH_DUR_BINS + size bin), in units of `unit` (1000 ns a us for
 * durations, 1 byte for sizes): the training mean of the bin's values when
 * the data have one, else the bin's midpoint 1.5 * 2^(b-1) units (0 for
 * bin 0). */
static int64_t bin_value(const etsim_synth_data_t *d, uint32_t k, uint32_t b, int64_t unit) {
  if (!b) return 0;
  if (d->bin_n[k] > 0) return llround(d->bin_sum[k] / d->bin_n[k]);
  return (int64_t)((3ull << (b - 1)) / 2) * unit;
}

int etsim_synth_write_trace(const etsim_synth_data_t *d, size_t gi, const char *path,
                            etsim_error_t *err) {
  if (d->kind != ETSIM_SYNTH_KIND_TRACE || d->n_ch != ETSIM_SYNTH_TRACE_CH)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "%s: only DAGs with Chakra categories can be "
                           "written as traces (write .txt instead)",
                           path);
  const etsim_synth_dag_t *g = &d->g[gi];
  uint32_t n = g->n_nodes;
  uint32_t *off = etsim_calloc(n + 1, sizeof *off);
  uint64_t *deps = etsim_malloc(sizeof *deps * (g->n_edges + 1));
  uint32_t *cur = etsim_malloc(sizeof *cur * (n + 1));
  uint32_t *layer = etsim_malloc(sizeof *layer * (n + 1));
  uint32_t *order = etsim_malloc(sizeof *order * (n + 1));
  etsim_et_writer_t *w = NULL;
  int rc;
  if (!off || !deps || !cur || !layer || !order) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto out;
  }
  if ((rc = etsim_synth_layers(g, layer, err)) < 0) goto out;
  for (uint32_t k = 0; k < g->n_edges; k++) off[g->dst[k] + 1]++;
  for (uint32_t i = 0; i < n; i++) off[i + 1] += off[i];
  memcpy(cur, off, sizeof *cur * n);
  for (uint32_t k = 0; k < g->n_edges; k++) deps[cur[g->dst[k]]++] = g->src[k];
  /* Write in layer order so every dependency precedes its user. */
  {
    uint32_t k = 0, maxl = (uint32_t)rc;
    for (uint32_t l = 1; l <= maxl; l++)
      for (uint32_t i = 0; i < n; i++)
        if (layer[i] == l) order[k++] = i;
  }
  if ((rc = etsim_et_writer_open(&w, path, 0, err))) goto out;
  etsim_attr_t meta_attr[1];
  meta_attr[0] = (etsim_attr_t){
      .name = "generator", .doc = "", .kind = ETSIM_ATTR_STRING, .v.s = "etsim synth (LayerDAG)"};
  etsim_et_meta_t meta = {"0.0.4", 1, meta_attr};
  if ((rc = etsim_et_writer_meta(w, &meta, err))) goto out;
  for (uint32_t k = 0; k < n; k++) {
    uint32_t i = order[k];
    const uint32_t *x = g->x + ETSIM_SYNTH_TRACE_CH * (size_t)i;
    etsim_attr_t at[4];
    size_t na = 0;
    char name[64];
    etsim_et_node_t nd = {0};
    nd.id = i;
    nd.data_deps = deps + off[i];
    nd.n_data_deps = off[i + 1] - off[i];
    uint32_t db = x[2] < ETSIM_SYNTH_DUR_BINS ? x[2] : 0;
    int64_t dur_ns = bin_value(d, db, db, 1000);
    nd.duration_micros = (uint64_t)(dur_ns + 500) / 1000;
    uint32_t cls = x[0] < ETSIM_SYNTH_OP_COUNT ? x[0] : ETSIM_SYNTH_OP_COMP_OTHER;
    int cpu = cls == ETSIM_SYNTH_OP_CPU;
    static const char *const comp_names[] = {
        "gemm", "conv", "attention", "norm", "elementwise_add", "compute", "cpu_op"};
    /* A collective whose type channel says n/a (an attribute-rule
     * violation) is written as an all-reduce, so the trace still runs. */
    int ctype = x[1] >= 1 && x[1] < ETSIM_SYNTH_COLL_BINS ? (int)x[1] - 1 : ETSIM_COLL_ALL_REDUCE;
    if (cls == ETSIM_SYNTH_OP_COLL) {
      nd.type = ETSIM_ET_COMM_COLL_NODE;
      snprintf(name, sizeof name, "synth_%s_%u", etsim_coll_type_name(ctype), i);
    } else if (cls == ETSIM_SYNTH_OP_SEND || cls == ETSIM_SYNTH_OP_RECV) {
      nd.type = cls == ETSIM_SYNTH_OP_SEND ? ETSIM_ET_COMM_SEND_NODE : ETSIM_ET_COMM_RECV_NODE;
      snprintf(name, sizeof name, "synth_%s_%u", cls == ETSIM_SYNTH_OP_SEND ? "send" : "recv", i);
    } else if (cls == ETSIM_SYNTH_OP_MEM_LOAD || cls == ETSIM_SYNTH_OP_MEM_STORE) {
      nd.type = cls == ETSIM_SYNTH_OP_MEM_LOAD ? ETSIM_ET_MEM_LOAD_NODE : ETSIM_ET_MEM_STORE_NODE;
      snprintf(name, sizeof name, "synth_%s_%u",
               cls == ETSIM_SYNTH_OP_MEM_LOAD ? "mem_load" : "mem_store", i);
    } else {
      nd.type = ETSIM_ET_COMP_NODE;
      snprintf(name, sizeof name, "synth_%s_%u", comp_names[cls], i);
    }
    nd.name = name;
    at[na++] = (etsim_attr_t){.name = "is_cpu_op", .doc = "", .kind = ETSIM_ATTR_BOOL, .v.b = cpu};
    if (etsim_synth__is_comm(cls)) {
      int64_t ct = cls == ETSIM_SYNTH_OP_COLL ? ctype : 0;
      uint32_t sb = x[3] && x[3] < ETSIM_SYNTH_SIZE_BINS ? x[3] : 1;
      int64_t bytes = bin_value(d, ETSIM_SYNTH_DUR_BINS + sb, sb, 1);
      /* A multiple of 64 bytes, inside the bin, as real sizes are (etsim
       * sim times an odd byte count's collective half as fast again). */
      if (sb >= 8) {
        bytes = (bytes + 32) / 64 * 64;
        if (bytes >= (int64_t)1 << sb) bytes = ((int64_t)1 << sb) - 64;
      }
      at[na++] =
          (etsim_attr_t){.name = "comm_type", .doc = "", .kind = ETSIM_ATTR_INT64, .v.i64 = ct};
      at[na++] =
          (etsim_attr_t){.name = "comm_size", .doc = "", .kind = ETSIM_ATTR_INT64, .v.i64 = bytes};
    }
    /* The exact mean, as etsim's generators write it (etsim/et.h). */
    if (db && (uint64_t)dur_ns != nd.duration_micros * 1000)
      at[na++] = (etsim_attr_t){
          .name = "duration_ns", .doc = "", .kind = ETSIM_ATTR_INT64, .v.i64 = dur_ns};
    nd.attrs = at;
    nd.n_attrs = na;
    if ((rc = etsim_et_writer_node(w, &nd, err))) goto out;
  }
  rc = etsim_et_writer_commit(w, err);
  w = NULL;
out:
  if (w) etsim_et_writer_abort(w);
  etsim_free(off);
  etsim_free(deps);
  etsim_free(cur);
  etsim_free(layer);
  etsim_free(order);
  return rc < 0 ? rc : 0;
}
