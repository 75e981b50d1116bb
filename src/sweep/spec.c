/* Reading a sweep spec and expanding it into points (docs/sweep.md).
 *
 *   base:   the run every point starts from (a generator command or a
 *           workload; network, system, memory files; simulator options;
 *           or a netsim scenario)
 *   axes:   a list of groups — grid (every combination), list (values of
 *           one key, or whole points), zip (lists side by side), random
 *           (n seeded draws) — combined as a product, first group slowest
 *   derived, where, vars: expressions over the axes
 *   options: timeout (s per point), keep-traces
 *
 * Every point gets its values as canonical compact JSON text, an id hashed
 * from them, and the trace set it needs (so points sharing one can share
 * the generation and the loading).
 */
#include "sweep/sweep_int.h"

#include "etsim/netpkt.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_POINTS 10000000

/* ------------------------------------------------------- JSON text */

typedef struct {
  char *p;
  size_t n, cap;
} sbuf_t;

static int sb_put(sbuf_t *b, const char *s, size_t n) {
  if (etsim_grow((void **)&b->p, &b->cap, b->n + n + 1, 1)) return ETSIM_ENOMEM;
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
  return 0;
}
static int sb_puts(sbuf_t *b, const char *s) { return sb_put(b, s, strlen(s)); }

/* The shortest text that reads back as the same double, with a '.' or an
 * exponent so that it stays a real. */
static void real_text(double v, char *buf, size_t cap) {
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(buf, cap, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) break;
  }
  if (!strpbrk(buf, ".eEn")) {
    size_t n = strlen(buf);
    if (n + 3 <= cap) memcpy(buf + n, ".0", 3);
  }
}

static int dump_into(sbuf_t *b, const json_t *v) {
  char num[64];
  switch (json_typeof(v)) {
    case JSON_OBJECT: {
      int rc = sb_puts(b, "{");
      const char *k;
      json_t *x;
      int first = 1;
      json_object_foreach((json_t *)v, k, x) {
        json_t *ks = json_string(k);
        if (!ks) return ETSIM_ENOMEM;
        if (!first) rc = rc ? rc : sb_puts(b, ", ");
        first = 0;
        rc = rc ? rc : dump_into(b, ks);
        json_decref(ks);
        rc = rc ? rc : sb_puts(b, ": ");
        rc = rc ? rc : dump_into(b, x);
      }
      return rc ? rc : sb_puts(b, "}");
    }
    case JSON_ARRAY: {
      int rc = sb_puts(b, "[");
      size_t i;
      json_t *x;
      json_array_foreach(v, i, x) {
        if (i) rc = rc ? rc : sb_puts(b, ", ");
        rc = rc ? rc : dump_into(b, x);
      }
      return rc ? rc : sb_puts(b, "]");
    }
    case JSON_REAL:
      real_text(json_real_value(v), num, sizeof num);
      return sb_puts(b, num);
    case JSON_INTEGER:
      snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
      return sb_puts(b, num);
    default: {
      char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
      if (!s) return ETSIM_ENOMEM;
      int rc = sb_puts(b, s);
      free(s);
      return rc;
    }
  }
}

char *etsim_sweep__dump(const json_t *v) {
  sbuf_t b = {0};
  if (dump_into(&b, v) || !b.p) {
    etsim_free(b.p);
    return NULL;
  }
  return b.p;
}

char *etsim_sweep__scalar_text(const json_t *v) {
  if (json_is_string(v)) return etsim_strdup(json_string_value(v));
  return etsim_sweep__dump(v);
}

/* ---------------------------------------------------------- helpers */

typedef struct {
  etsim_sweep_spec_t *s;
  sweep_lines_t lines;
  etsim_error_t *err;
} ctx_t;

/* "spec.yaml:12: " for a node (line 0: no line known). */
static int bad(ctx_t *c, const json_t *node, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int bad(ctx_t *c, const json_t *node, const char *fmt, ...) {
  char msg[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int line = etsim_sweep__line(&c->lines, node);
  if (line > 0) return etsim_error_set(c->err, ETSIM_EINVAL, "%s:%d: %s", c->s->path, line, msg);
  return etsim_error_set(c->err, ETSIM_EINVAL, "%s: %s", c->s->path, msg);
}

static char *resolve(const etsim_sweep_spec_t *s, const char *p) {
  if (!p) return NULL;
  if (p[0] == '/' || !s->dir[0] || !strcmp(s->dir, ".")) return etsim_strdup(p);
  size_t n = strlen(s->dir) + strlen(p) + 2;
  char *r = etsim_malloc(n);
  if (r) snprintf(r, n, "%s/%s", s->dir, p);
  return r;
}

static int only_keys(ctx_t *c, const json_t *obj, const char *what, const char *const *allowed) {
  const char *k;
  json_t *v;
  json_object_foreach((json_t *)obj, k, v) {
    int ok = 0;
    for (size_t i = 0; allowed[i] && !ok; i++) ok = !strcmp(allowed[i], k);
    if (!ok) {
      char list[512] = "";
      for (size_t i = 0; allowed[i]; i++) {
        strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
        strncat(list, allowed[i], sizeof list - strlen(list) - 1);
      }
      return bad(c, v, "%s: unknown key '%s' (known: %s)", what, k, list);
    }
  }
  return 0;
}

static int get_path(ctx_t *c, const json_t *obj, const char *key, char **out) {
  json_t *v = json_object_get(obj, key);
  if (!v || json_is_null(v)) return 0;
  if (!json_is_string(v) || !json_string_value(v)[0])
    return bad(c, v, "base.%s: expected a file name", key);
  *out = resolve(c->s, json_string_value(v));
  return *out ? 0 : ETSIM_ENOMEM;
}

/* ----------------------------------------------------- generator flags */

typedef struct {
  const char *name;
  int is_bool;
} flag_t;

static const flag_t llm_flags[] = {{"preset", 0},       {"model", 0},
                                   {"layers", 0},       {"hidden", 0},
                                   {"heads", 0},        {"kv-heads", 0},
                                   {"ffn", 0},          {"vocab", 0},
                                   {"seq", 0},          {"experts", 0},
                                   {"top-k", 0},        {"gated", 0},
                                   {"dp", 0},           {"tp", 0},
                                   {"pp", 0},           {"sp", 0},
                                   {"ep", 0},           {"npus", 0},
                                   {"microbatches", 0}, {"mbs", 0},
                                   {"schedule", 0},     {"zero", 0},
                                   {"recompute", 1},    {"memory", 1},
                                   {"tensors", 1},      {"flash-attention", 1},
                                   {"peak-tflops", 0},  {"mem-gbps", 0},
                                   {"dtype-bytes", 0},  {"out-format", 0},
                                   {"quiet", 1},        {NULL, 0}};
static const flag_t micro_flags[] = {{"coll", 0},    {"size", 0},  {"npus", 0}, {"count", 0},
                                     {"comp-ns", 0}, {"root", 0},  {"dims", 0}, {"out-format", 0},
                                     {"ids", 0},     {"quiet", 1}, {NULL, 0}};

/* 1 known (and *is_bool), 0 unknown, -1 for a generator whose flags are
 * not listed (dlrm: its own parser judges them). */
int etsim_sweep__gen_flag_known(const char *kind, const char *flag, int *is_bool) {
  const flag_t *t = !strcmp(kind, "llm") ? llm_flags : !strcmp(kind, "micro") ? micro_flags : NULL;
  *is_bool = 0;
  if (!t) return -1;
  for (; t->name; t++)
    if (!strcmp(t->name, flag)) {
      *is_bool = t->is_bool;
      return 1;
    }
  return 0;
}

static int check_gen_flag(ctx_t *c, const json_t *node, const char *kind, const char *flag,
                          const json_t *v) {
  static const char *const owned[] = {"o", "output", "comm-group", "help", "h", NULL};
  for (size_t i = 0; owned[i]; i++)
    if (!strcmp(flag, owned[i]))
      return bad(c, node, "gen.%s: the sweep chooses where traces go; leave this flag out", flag);
  int is_bool, k = etsim_sweep__gen_flag_known(kind, flag, &is_bool);
  if (k == 0) return bad(c, node, "gen.%s: 'etsim gen %s' has no flag --%s", flag, kind, flag);
  if (!v) return 0;
  if (json_is_array(v) || json_is_object(v))
    return bad(c, node, "gen.%s: a flag takes one value, not a list", flag);
  if (k == 1 && is_bool && !json_is_boolean(v) && !json_is_null(v))
    return bad(c, node, "gen.%s: a switch: true or false", flag);
  if (k == 1 && !is_bool && json_is_boolean(v))
    return bad(c, node, "gen.%s: --%s takes a value, not true/false", flag, flag);
  return 0;
}

/* "llm --preset x --tp 8 --recompute" (optionally after "etsim gen"). */
static int parse_gen_string(ctx_t *c, const json_t *node, const char *cmd) {
  etsim_sweep_spec_t *s = c->s;
  char *buf = etsim_strdup(cmd);
  if (!buf) return ETSIM_ENOMEM;
  char *words[256];
  size_t n = 0;
  for (char *save = NULL, *t = strtok_r(buf, " \t\n", &save); t;
       t = strtok_r(NULL, " \t\n", &save)) {
    if (n == 256) {
      etsim_free(buf);
      return bad(c, node, "base.gen: more than 256 words");
    }
    words[n++] = t;
  }
  size_t i = 0;
  if (i < n && !strcmp(words[i], "etsim")) i++;
  if (i < n && !strcmp(words[i], "gen")) i++;
  int rc = 0;
  if (i >= n || words[i][0] == '-') {
    rc = bad(c, node, "base.gen: name the generator first (llm, micro or dlrm)");
    goto out;
  }
  s->gen_kind = etsim_strdup(words[i++]);
  s->gen_flags = json_object();
  if (!s->gen_kind || !s->gen_flags) {
    rc = ETSIM_ENOMEM;
    goto out;
  }
  for (; i < n; i++) {
    const char *w = words[i];
    if (strncmp(w, "--", 2) || !w[2]) {
      rc = bad(c, node, "base.gen: '%s' is not a --flag", w);
      goto out;
    }
    char flag[128];
    const char *eq = strchr(w, '=');
    size_t fl = eq ? (size_t)(eq - w - 2) : strlen(w + 2);
    if (fl >= sizeof flag) {
      rc = bad(c, node, "base.gen: flag '%s' is too long", w);
      goto out;
    }
    memcpy(flag, w + 2, fl);
    flag[fl] = 0;
    int is_bool = 0;
    etsim_sweep__gen_flag_known(s->gen_kind, flag, &is_bool);
    json_t *v;
    if (eq) v = json_string(eq + 1);
    else if (!is_bool && i + 1 < n && strncmp(words[i + 1], "--", 2)) v = json_string(words[++i]);
    else v = json_true();
    if (!v || json_object_set_new(s->gen_flags, flag, v)) {
      rc = ETSIM_ENOMEM;
      goto out;
    }
    if ((rc = check_gen_flag(c, node, s->gen_kind, flag, v))) goto out;
  }
out:
  etsim_free(buf);
  return rc;
}

static int parse_gen(ctx_t *c, const json_t *g) {
  etsim_sweep_spec_t *s = c->s;
  if (json_is_string(g)) return parse_gen_string(c, g, json_string_value(g));
  if (!json_is_object(g))
    return bad(c, g, "base.gen: a command (\"llm --preset ...\") or a map with 'kind'");
  json_t *k = json_object_get(g, "kind");
  if (!json_is_string(k)) return bad(c, g, "base.gen: 'kind' (llm, micro or dlrm) is required");
  s->gen_kind = etsim_strdup(json_string_value(k));
  s->gen_flags = json_object();
  if (!s->gen_kind || !s->gen_flags) return ETSIM_ENOMEM;
  const char *key;
  json_t *v;
  json_object_foreach((json_t *)g, key, v) {
    if (!strcmp(key, "kind")) continue;
    const char *flag = !strncmp(key, "--", 2) ? key + 2 : key;
    int rc = check_gen_flag(c, v, s->gen_kind, flag, v);
    if (rc) return rc;
    if (json_object_set(s->gen_flags, flag, v)) return ETSIM_ENOMEM;
  }
  return 0;
}

/* --------------------------------------------------------------- keys */

typedef struct {
  const char *name;
  int type; /* 0 string, 1 bool, 2 number, 3 integer, 4 path */
} simopt_t;

static const simopt_t sim_opts[] = {{"backend", 0},
                                    {"cc", 0},
                                    {"exact", 1},
                                    {"multi-comm", 1},
                                    {"offload", 1},
                                    {"hbm-gb", 2},
                                    {"num-queues-per-dim", 3},
                                    {"ring-window", 3},
                                    {"injection-scale", 2},
                                    {"net-topology", 4},
                                    {"net-config", 4},
                                    {"workload", 4},
                                    {"comm-group", 4},
                                    {NULL, 0}};

static const simopt_t *sim_opt(const char *name) {
  for (const simopt_t *o = sim_opts; o->name; o++)
    if (!strcmp(o->name, name)) return o;
  return NULL;
}

static int check_sim_value(ctx_t *c, const json_t *node, const char *name, const json_t *v) {
  const simopt_t *o = sim_opt(name);
  if (!o) {
    char list[400] = "";
    for (const simopt_t *p = sim_opts; p->name; p++) {
      strncat(list, p == sim_opts ? "" : ", ", sizeof list - strlen(list) - 1);
      strncat(list, p->name, sizeof list - strlen(list) - 1);
    }
    return bad(c, node, "sim.%s: not a simulator option the sweep sets (known: %s)", name, list);
  }
  if (!v) return 0;
  int ok = o->type == 1   ? json_is_boolean(v)
           : o->type == 2 ? json_is_number(v)
           : o->type == 3 ? json_is_integer(v)
                          : json_is_string(v);
  if (!ok)
    return bad(c, node, "sim.%s: expected %s", name,
               o->type == 1   ? "true or false"
               : o->type == 2 ? "a number"
               : o->type == 3 ? "an integer"
                              : "a string");
  if (!strcmp(name, "backend")) {
    const char *b = json_string_value(v);
    if (strcmp(b, "analytical") && strcmp(b, "congestion") && strcmp(b, "flow") &&
        strcmp(b, "packet"))
      return bad(c, node, "sim.backend: '%s' is not analytical, congestion, flow or packet", b);
  }
  return 0;
}

static int check_netsim_value(ctx_t *c, const json_t *node, const char *name, const json_t *v) {
  if (!strcmp(name, "backend")) {
    if (v && (!json_is_string(v) ||
              (strcmp(json_string_value(v), "packet") && strcmp(json_string_value(v), "flow"))))
      return bad(c, node, "netsim.backend: packet or flow");
    return 0;
  }
  if (!strcmp(name, "cc") || !strcmp(name, "seed")) return 0;
  if (!v) return 0;
  /* a config key: the config's own parser judges it */
  etsim_netpkt_cfg_t cfg;
  etsim_netpkt_cfg_default(&cfg);
  char *t = etsim_sweep__scalar_text(v);
  if (!t) return ETSIM_ENOMEM;
  etsim_error_t e = {0};
  int rc = etsim_netpkt_cfg_set(&cfg, name, t, &e);
  etsim_free(t);
  /* files are not opened when set; other errors are the key's */
  if (rc) return bad(c, node, "netsim.%s: %s", name, e.msg);
  return 0;
}

/* Fill k from its name; node for messages. */
static int parse_key(ctx_t *c, const json_t *node, const char *name, int derived, sweep_key_t *k) {
  etsim_sweep_spec_t *s = c->s;
  memset(k, 0, sizeof *k);
  k->index = -1;
  k->name = etsim_strdup(name);
  if (!k->name) return ETSIM_ENOMEM;
  static const struct {
    const char *pfx;
    int dom;
  } doms[] = {{"gen.", SWEEP_DOM_GEN},       {"network.", SWEEP_DOM_NETWORK},
              {"system.", SWEEP_DOM_SYSTEM}, {"memory.", SWEEP_DOM_MEMORY},
              {"sim.", SWEEP_DOM_SIM},       {"netsim.", SWEEP_DOM_NETSIM},
              {"vars.", SWEEP_DOM_VAR}};
  const char *field = NULL;
  k->dom = -1;
  for (size_t i = 0; i < sizeof doms / sizeof *doms; i++) {
    size_t n = strlen(doms[i].pfx);
    if (!strncmp(name, doms[i].pfx, n) && name[n]) {
      k->dom = doms[i].dom;
      field = name + n;
    }
  }
  if (k->dom < 0 && (!strcmp(name, "backend") || !strcmp(name, "cc"))) {
    k->dom = s->kind == SWEEP_KIND_NETSIM ? SWEEP_DOM_NETSIM : SWEEP_DOM_SIM;
    field = name;
  }
  if (k->dom < 0) {
    if (!derived)
      return bad(c, node,
                 "axis key '%s': say what it edits: gen.FLAG, network.KEY[i], system.KEY, "
                 "memory.KEY, sim.OPTION, netsim.KEY, backend or cc",
                 name);
    k->dom = SWEEP_DOM_VAR;
    field = name;
  }
  /* KEY[i] */
  const char *br = strchr(field, '[');
  size_t fl = strlen(field);
  if (br) {
    char *end;
    errno = 0;
    long idx = strtol(br + 1, &end, 10);
    if (end == br + 1 || *end != ']' || end[1] || idx < 0 || idx > 1000000 || errno)
      return bad(c, node, "key '%s': expected KEY[index]", name);
    if (k->dom != SWEEP_DOM_NETWORK && k->dom != SWEEP_DOM_SYSTEM && k->dom != SWEEP_DOM_MEMORY)
      return bad(c, node, "key '%s': only network, system and memory keys take an index", name);
    k->index = (int)idx;
    fl = (size_t)(br - field);
  }
  k->field = etsim_malloc(fl + 1);
  if (!k->field) return ETSIM_ENOMEM;
  memcpy(k->field, field, fl);
  k->field[fl] = 0;
  switch (k->dom) {
    case SWEEP_DOM_GEN:
      if (!s->gen_kind) return bad(c, node, "key '%s': the base run has no generator", name);
      return check_gen_flag(c, node, s->gen_kind, k->field, NULL);
    case SWEEP_DOM_NETWORK:
    case SWEEP_DOM_SYSTEM:
    case SWEEP_DOM_MEMORY: {
      if (s->kind != SWEEP_KIND_SIM)
        return bad(c, node, "key '%s': a netsim base run has no such file", name);
      const json_t *tree = k->dom == SWEEP_DOM_NETWORK  ? s->net_tree
                           : k->dom == SWEEP_DOM_SYSTEM ? s->sys_tree
                                                        : s->mem_tree;
      if (!tree)
        return bad(c, node, "key '%s': the base run names no %s file", name,
                   k->dom == SWEEP_DOM_MEMORY ? "memory" : "such");
      if (k->index >= 0) {
        json_t *a = json_object_get(tree, k->field);
        if (!json_is_array(a) || json_array_size(a) <= (size_t)k->index)
          return bad(c, node, "key '%s': the base file's '%s' is not a list with an item %d", name,
                     k->field, k->index);
      }
      return 0;
    }
    case SWEEP_DOM_SIM:
      if (s->kind != SWEEP_KIND_SIM)
        return bad(c, node, "key '%s': the base run is a netsim scenario", name);
      return check_sim_value(c, node, k->field, NULL);
    case SWEEP_DOM_NETSIM:
      if (s->kind != SWEEP_KIND_NETSIM)
        return bad(c, node, "key '%s': the base run is not a netsim scenario", name);
      return 0;
    default:
      return 0;
  }
}

/* A value given for key k (from an axis or a derivation). */
static int check_value(ctx_t *c, const json_t *node, const sweep_key_t *k, const json_t *v) {
  switch (k->dom) {
    case SWEEP_DOM_GEN:
      return check_gen_flag(c, node, c->s->gen_kind, k->field, v);
    case SWEEP_DOM_SIM:
      return check_sim_value(c, node, k->field, v);
    case SWEEP_DOM_NETSIM:
      return check_netsim_value(c, node, k->field, v);
    case SWEEP_DOM_NETWORK:
      if (json_is_object(v)) return bad(c, node, "%s: a mapping is not a network value", k->name);
      if (k->index >= 0 && json_is_array(v))
        return bad(c, node, "%s: one item takes one value", k->name);
      return 0;
    default:
      return 0;
  }
}

/* ---------------------------------------------------------------- axes */

typedef struct {
  size_t n_keys, n_rows;
  size_t *col;     /* column of each key */
  json_t **values; /* n_rows x n_keys, borrowed from the tree or owned (random) */
  int owned;
} group_t;

static int add_col(ctx_t *c, const json_t *node, const char *name, int derived, size_t *out) {
  etsim_sweep_spec_t *s = c->s;
  for (size_t i = 0; i < s->n_cols; i++)
    if (!strcmp(s->cols[i].name, name)) return bad(c, node, "key '%s' is set twice", name);
  sweep_key_t *nc = etsim_realloc(s->cols, (s->n_cols + 1) * sizeof *nc);
  if (!nc) return ETSIM_ENOMEM;
  s->cols = nc;
  int rc = parse_key(c, node, name, derived, &s->cols[s->n_cols]);
  s->n_cols++; /* counted even on error, so that free finds its strings */
  if (rc) return rc;
  *out = s->n_cols - 1;
  return 0;
}

static int group_alloc(group_t *g, size_t n_keys, size_t n_rows) {
  g->n_keys = n_keys;
  g->n_rows = n_rows;
  g->col = etsim_calloc(n_keys ? n_keys : 1, sizeof *g->col);
  size_t cells = n_keys * n_rows;
  g->values = etsim_calloc(cells > 0 ? cells : 1, sizeof *g->values);
  return g->col && g->values ? 0 : ETSIM_ENOMEM;
}

static void group_free(group_t *g) {
  if (g->owned)
    for (size_t i = 0; i < g->n_keys * g->n_rows; i++) json_decref(g->values[i]);
  etsim_free(g->col);
  etsim_free(g->values);
}

static int nonempty_list(ctx_t *c, const json_t *v, const char *what, const char *key) {
  if (!json_is_array(v) || !json_array_size(v))
    return bad(c, v, "%s: '%s' needs a non-empty list of values", what, key);
  return 0;
}

static int axis_grid(ctx_t *c, const json_t *m, const char *what, int zip, group_t *g) {
  if (!json_is_object(m) || !json_object_size(m))
    return bad(c, m, "%s: expected a map of key: [values]", what);
  size_t nk = json_object_size(m), rows = 1, len0 = 0;
  const char *key;
  json_t *v;
  size_t k = 0;
  json_object_foreach((json_t *)m, key, v) {
    int rc = nonempty_list(c, v, what, key);
    if (rc) return rc;
    size_t n = json_array_size(v);
    if (zip) {
      if (k && n != len0)
        return bad(c, v, "%s: '%s' has %zu values where the first list has %zu", what, key, n,
                   len0);
      len0 = n;
      rows = n;
    } else {
      if (rows > MAX_POINTS / n) return bad(c, v, "%s: more than %d points", what, MAX_POINTS);
      rows *= n;
    }
    k++;
  }
  int rc = group_alloc(g, nk, rows);
  if (rc) return rc;
  k = 0;
  json_object_foreach((json_t *)m, key, v) {
    if ((rc = add_col(c, v, key, 0, &g->col[k]))) return rc;
    k++;
  }
  for (size_t r = 0; r < rows; r++) {
    /* grid: the first key slowest */
    size_t rem = r;
    for (size_t kk = nk; kk-- > 0;) {
      const char *kname = c->s->cols[g->col[kk]].name;
      json_t *list = json_object_get(m, kname);
      size_t n = json_array_size(list), pick = zip ? r : rem % n;
      if (!zip) rem /= n;
      json_t *x = json_array_get(list, pick);
      if ((rc = check_value(c, x, &c->s->cols[g->col[kk]], x))) return rc;
      g->values[r * nk + kk] = x;
    }
  }
  return 0;
}

/* list: {key: [values]} or [{key: v, ...}, ...] (whole points). */
static int axis_list(ctx_t *c, const json_t *m, const char *what, group_t *g) {
  if (json_is_object(m)) {
    if (json_object_size(m) != 1)
      return bad(c, m, "%s: a list axis is one key (use zip for lists side by side)", what);
    return axis_grid(c, m, what, 0, g);
  }
  if (!json_is_array(m) || !json_array_size(m))
    return bad(c, m, "%s: expected {key: [values]} or a list of points", what);
  json_t *first = json_array_get(m, 0);
  if (!json_is_object(first) || !json_object_size(first))
    return bad(c, first, "%s: each point is a map of key: value", what);
  size_t nk = json_object_size(first), rows = json_array_size(m);
  int rc = group_alloc(g, nk, rows);
  if (rc) return rc;
  const char *key;
  json_t *v;
  size_t k = 0;
  json_object_foreach(first, key, v) {
    if ((rc = add_col(c, v, key, 0, &g->col[k]))) return rc;
    k++;
  }
  for (size_t r = 0; r < rows; r++) {
    json_t *p = json_array_get(m, r);
    if (!json_is_object(p) || json_object_size(p) != nk)
      return bad(c, p, "%s: point %zu must set the same %zu keys as the first", what, r, nk);
    for (k = 0; k < nk; k++) {
      const sweep_key_t *sk = &c->s->cols[g->col[k]];
      json_t *x = json_object_get(p, sk->name);
      if (!x) return bad(c, p, "%s: point %zu does not set '%s'", what, r, sk->name);
      if ((rc = check_value(c, x, sk, x))) return rc;
      g->values[r * nk + k] = x;
    }
  }
  return 0;
}

/* Six significant digits: a drawn value is written where people read it. */
static double round6(double x) {
  if (x == 0 || !isfinite(x)) return x;
  char buf[64];
  snprintf(buf, sizeof buf, "%.6g", x);
  return strtod(buf, NULL);
}

/* random: {n: N, seed: S, keys: {key: [choices] | {min, max, log, int}}} */
static int axis_random(ctx_t *c, const json_t *m, const char *what, group_t *g) {
  static const char *const allowed[] = {"n", "seed", "keys", NULL};
  if (!json_is_object(m)) return bad(c, m, "%s: expected {n, seed, keys}", what);
  int rc = only_keys(c, m, what, allowed);
  if (rc) return rc;
  json_t *n = json_object_get(m, "n"), *seed = json_object_get(m, "seed"),
         *keys = json_object_get(m, "keys");
  if (!json_is_integer(n) || json_integer_value(n) < 1 || json_integer_value(n) > MAX_POINTS)
    return bad(c, n ? n : m, "%s: n (the number of draws, 1 to %d) is required", what, MAX_POINTS);
  if (seed && (!json_is_integer(seed) || json_integer_value(seed) < 0))
    return bad(c, seed, "%s: seed is a non-negative integer", what);
  if (!json_is_object(keys) || !json_object_size(keys))
    return bad(c, keys ? keys : m, "%s: keys: {key: [choices] or {min, max}} is required", what);
  size_t nk = json_object_size(keys), rows = (size_t)json_integer_value(n);
  if ((rc = group_alloc(g, nk, rows))) return rc;
  g->owned = 1;
  const char *key;
  json_t *v;
  size_t k = 0;
  json_object_foreach(keys, key, v) {
    if ((rc = add_col(c, v, key, 0, &g->col[k]))) return rc;
    if (json_is_array(v)) {
      if ((rc = nonempty_list(c, v, what, key))) return rc;
    } else if (json_is_object(v)) {
      static const char *const dk[] = {"min", "max", "log", "int", NULL};
      if ((rc = only_keys(c, v, key, dk))) return rc;
      json_t *lo = json_object_get(v, "min"), *hi = json_object_get(v, "max");
      if (!json_is_number(lo) || !json_is_number(hi) ||
          json_number_value(lo) > json_number_value(hi))
        return bad(c, v, "%s: '%s' needs numbers min <= max", what, key);
      json_t *lg = json_object_get(v, "log");
      if (lg && json_is_true(lg) && !(json_number_value(lo) > 0))
        return bad(c, v, "%s: '%s': a log scale needs min > 0", what, key);
    } else {
      return bad(c, v, "%s: '%s': a list of choices or {min, max[, log][, int]}", what, key);
    }
    k++;
  }
  etsim_rng_t rng;
  etsim_rng_seed(&rng, seed ? (uint64_t)json_integer_value(seed) : 0);
  for (size_t r = 0; r < rows; r++) {
    k = 0;
    json_object_foreach(keys, key, v) {
      json_t *x;
      if (json_is_array(v)) {
        x = json_array_get(v, etsim_rng_below(&rng, json_array_size(v)));
        json_incref(x);
      } else {
        double lo = json_number_value(json_object_get(v, "min")),
               hi = json_number_value(json_object_get(v, "max")), u = etsim_rng_uniform(&rng);
        int lg = json_is_true(json_object_get(v, "log"));
        int in = json_is_true(json_object_get(v, "int"));
        double val = lg ? exp(log(lo) + u * (log(hi) - log(lo))) : lo + u * (hi - lo);
        x = in ? json_integer((json_int_t)llround(val)) : json_real(round6(val));
      }
      if (!x) return ETSIM_ENOMEM;
      g->values[r * nk + k] = x;
      if ((rc = check_value(c, v, &c->s->cols[g->col[k]], x))) return rc;
      k++;
    }
  }
  return 0;
}

/* --------------------------------------------------------- expansion */

typedef struct {
  ctx_t *c;
  json_t **row; /* the point's values so far, by column */
  size_t n_known;
  const json_t *vars;
} look_t;

static int lookup(void *user, const char *name, size_t len, sweep_val_t *out) {
  look_t *l = user;
  const json_t *v = NULL;
  for (size_t i = 0; i < l->n_known && !v; i++) {
    const char *cn = l->c->s->cols[i].name;
    if (strlen(cn) == len && !strncmp(cn, name, len)) v = l->row[i];
  }
  if (!v && l->vars) {
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)l->vars, k, x) {
      size_t kl = strlen(k);
      if ((kl == len && !strncmp(k, name, len)) ||
          (len == kl + 5 && !strncmp(name, "vars.", 5) && !strncmp(name + 5, k, kl)))
        v = x;
    }
  }
  if (!v) return ETSIM_ENOTFOUND;
  if (json_is_number(v)) *out = (sweep_val_t){0, json_number_value(v), NULL};
  else if (json_is_boolean(v)) *out = (sweep_val_t){0, json_is_true(v) ? 1 : 0, NULL};
  else if (json_is_string(v)) *out = (sweep_val_t){1, 0, json_string_value(v)};
  else return ETSIM_ENOTFOUND;
  return 0;
}

static json_t *val_json(const sweep_val_t *v) {
  if (v->is_str) return json_stringn(v->str, (size_t)v->num);
  double x = v->num;
  if (x == floor(x) && fabs(x) < 9007199254740992.0) return json_integer((json_int_t)x);
  return json_real(x);
}

static int expand(ctx_t *c, group_t *groups, size_t n_groups, const json_t *derived,
                  const json_t *vars) {
  etsim_sweep_spec_t *s = c->s;
  size_t total = 1;
  for (size_t g = 0; g < n_groups; g++) {
    if (total > MAX_POINTS / groups[g].n_rows)
      return bad(c, NULL, "axes: more than %d points", MAX_POINTS);
    total *= groups[g].n_rows;
  }
  size_t nc = s->n_cols;
  json_t **row = etsim_calloc(nc ? nc : 1, sizeof *row);
  size_t *pick = etsim_calloc(n_groups ? n_groups : 1, sizeof *pick);
  size_t cap = 0;
  int rc = row && pick ? 0 : ETSIM_ENOMEM;
  look_t l = {c, row, 0, vars};
  char what[300];
  for (size_t p = 0; !rc && p < total; p++) {
    size_t rem = p;
    for (size_t g = n_groups; g-- > 0;) {
      pick[g] = rem % groups[g].n_rows;
      rem /= groups[g].n_rows;
    }
    for (size_t g = 0; g < n_groups; g++)
      for (size_t k = 0; k < groups[g].n_keys; k++)
        row[groups[g].col[k]] = groups[g].values[pick[g] * groups[g].n_keys + k];
    /* derived keys, in order, each seeing the ones before */
    size_t d = s->n_axis;
    const char *dk;
    json_t *dv;
    json_object_foreach((json_t *)derived, dk, dv) {
      l.n_known = d;
      sweep_val_t out;
      snprintf(what, sizeof what, "%s: derived '%s'", s->path, dk);
      if ((rc = etsim_sweep__expr_eval(json_string_value(dv), lookup, &l, what, &out, c->err)))
        break;
      row[d] = val_json(&out);
      if (!row[d]) rc = ETSIM_ENOMEM;
      else rc = check_value(c, dv, &s->cols[d], row[d]);
      if (rc) break;
      d++;
    }
    int keep = 1;
    if (!rc && s->where) {
      l.n_known = nc;
      sweep_val_t out;
      snprintf(what, sizeof what, "%s: where", s->path);
      rc = etsim_sweep__expr_eval(s->where, lookup, &l, what, &out, c->err);
      if (!rc && out.is_str) rc = bad(c, NULL, "where: the filter must be a number, not a string");
      keep = !rc && out.num != 0;
    }
    if (!rc && keep) {
      if (etsim_grow((void **)&s->vals, &cap, (s->n_points + 1) * nc + 1, sizeof *s->vals)) {
        rc = ETSIM_ENOMEM;
      } else {
        for (size_t k = 0; k < nc && !rc; k++) {
          s->vals[s->n_points * nc + k] = etsim_sweep__dump(row[k]);
          if (!s->vals[s->n_points * nc + k]) rc = ETSIM_ENOMEM;
        }
        s->n_points++;
      }
    }
    for (size_t k = s->n_axis; k < nc; k++) {
      json_decref(row[k]);
      row[k] = NULL;
    }
  }
  etsim_free(row);
  etsim_free(pick);
  if (!rc && !s->n_points)
    rc = bad(c, NULL, "no point is left (the 'where' filter removed them all)");
  return rc;
}

/* ----------------------------------------------------- points' identity */

json_t *etsim_sweep__value_json(const etsim_sweep_spec_t *s, size_t point, size_t col) {
  return json_loads(s->vals[point * s->n_cols + col], JSON_DECODE_ANY, NULL);
}

json_t *etsim_sweep__gen_flags(const etsim_sweep_spec_t *s, size_t point) {
  json_t *f = json_copy(s->gen_flags);
  if (!f) return NULL;
  for (size_t k = 0; k < s->n_cols; k++) {
    if (s->cols[k].dom != SWEEP_DOM_GEN) continue;
    json_t *v = etsim_sweep__value_json(s, point, k);
    if (!v || json_object_set_new(f, s->cols[k].field, v)) {
      json_decref(f);
      return NULL;
    }
  }
  return f;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

char *etsim_sweep__gen_canon(const char *kind, const json_t *flags) {
  size_t n = json_object_size(flags), k = 0;
  const char **keys = etsim_calloc(n ? n : 1, sizeof *keys);
  if (!keys) return NULL;
  const char *key;
  json_t *v;
  json_object_foreach((json_t *)flags, key, v) keys[k++] = key;
  etsim_qsort(keys, n, sizeof *keys, cmp_str);
  sbuf_t b = {0};
  int rc = sb_puts(&b, kind);
  for (k = 0; k < n && !rc; k++) {
    v = json_object_get(flags, keys[k]);
    if (json_is_false(v) || json_is_null(v)) continue;
    rc = sb_puts(&b, " --");
    rc = rc ? rc : sb_puts(&b, keys[k]);
    if (!rc && !json_is_true(v)) {
      char *t = etsim_sweep__scalar_text(v);
      rc = t ? sb_puts(&b, " ") : ETSIM_ENOMEM;
      rc = rc ? rc : sb_puts(&b, t);
      etsim_free(t);
    }
  }
  etsim_free(keys);
  if (rc) {
    etsim_free(b.p);
    return NULL;
  }
  return b.p;
}

static int identify(ctx_t *c) {
  etsim_sweep_spec_t *s = c->s;
  s->ids = etsim_calloc(s->n_points, sizeof *s->ids);
  s->group = etsim_calloc(s->n_points, sizeof *s->group);
  if (!s->ids || !s->group) return ETSIM_ENOMEM;
  etsim_u64map_t seen;
  etsim_u64map_init(&seen);
  char **canon = NULL;
  size_t n_canon = 0, cap = 0;
  int rc = 0;
  size_t wl_col = SIZE_MAX;
  for (size_t k = 0; k < s->n_cols; k++)
    if (s->cols[k].dom == SWEEP_DOM_SIM && !strcmp(s->cols[k].field, "workload")) wl_col = k;
  for (size_t p = 0; p < s->n_points && !rc; p++) {
    sbuf_t b = {0};
    for (size_t k = 0; k < s->n_cols && !rc; k++) {
      rc = sb_puts(&b, s->cols[k].name);
      rc = rc ? rc : sb_puts(&b, "=");
      rc = rc ? rc : sb_puts(&b, s->vals[p * s->n_cols + k]);
      rc = rc ? rc : sb_puts(&b, "\n");
    }
    uint64_t h = b.p ? etsim_hash_bytes(b.p, b.n) : 0;
    etsim_free(b.p);
    snprintf(s->ids[p], sizeof s->ids[p], "%016llx", (unsigned long long)h);
    /* the trace set */
    char *set = NULL;
    if (s->gen_kind) {
      json_t *f = etsim_sweep__gen_flags(s, p);
      set = f ? etsim_sweep__gen_canon(s->gen_kind, f) : NULL;
      json_decref(f);
    } else if (wl_col != SIZE_MAX) {
      set = etsim_strdup(s->vals[p * s->n_cols + wl_col]);
    } else {
      set = etsim_strdup(s->workload ? s->workload : "");
    }
    if (!set) {
      rc = ETSIM_ENOMEM;
      break;
    }
    uint64_t hs = etsim_hash_bytes(set, strlen(set));
    uint32_t g;
    /* a hash collision between two sets only costs sharing an executor */
    if (etsim_u64map_get(&seen, hs, &g)) {
      s->group[p] = g;
      etsim_free(set);
    } else {
      if (etsim_grow((void **)&canon, &cap, n_canon + 1, sizeof *canon) ||
          etsim_u64map_put(&seen, hs, (uint32_t)n_canon, NULL) < 0) {
        etsim_free(set);
        rc = ETSIM_ENOMEM;
        break;
      }
      canon[n_canon] = set;
      s->group[p] = n_canon++;
    }
  }
  for (size_t i = 0; i < n_canon; i++) etsim_free(canon[i]);
  etsim_free(canon);
  etsim_u64map_free(&seen);
  s->n_groups = n_canon;
  return rc;
}

/* The base run and its files, hashed. */
static int fingerprint(etsim_sweep_spec_t *s, const json_t *base, const json_t *derived,
                       const json_t *vars) {
  sbuf_t b = {0};
  int rc = 0;
  const json_t *parts[] = {base, derived, vars};
  for (int i = 0; i < 3 && !rc; i++) {
    char *t = parts[i] ? json_dumps(parts[i], JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    rc = sb_puts(&b, t ? t : "-");
    free(t);
  }
  if (!rc && s->where) rc = sb_puts(&b, s->where);
  const char *files[] = {s->network, s->system, s->memory, s->netsim_cfg, s->comm_group};
  for (int i = 0; i < 5 && !rc; i++) {
    if (!files[i]) continue;
    FILE *f = fopen(files[i], "rb");
    if (!f) continue; /* reported when the file is read */
    char buf[8192];
    size_t n;
    while (!rc && (n = fread(buf, 1, sizeof buf, f)) > 0) rc = sb_put(&b, buf, n);
    fclose(f);
  }
  s->fingerprint = !rc && b.p ? etsim_hash_bytes(b.p, b.n) : 0;
  etsim_free(b.p);
  return rc;
}

/* --------------------------------------------------------------- base */

static int load_json_file(ctx_t *c, const char *path, json_t **out) {
  json_error_t je;
  *out = json_load_file(path, 0, &je);
  if (!*out)
    return etsim_error_set(c->err, ETSIM_EFORMAT, "%s:%d:%d: %s", path, je.line, je.column,
                           je.text);
  if (!json_is_object(*out))
    return etsim_error_set(c->err, ETSIM_EFORMAT, "%s: expected a JSON object", path);
  return 0;
}

static int parse_base(ctx_t *c, const json_t *base) {
  etsim_sweep_spec_t *s = c->s;
  static const char *const allowed[] = {
      "gen",    "workload", "comm-group", "network",        "system",
      "memory", "sim",      "netsim",     "netsim-options", NULL};
  if (!json_is_object(base)) return bad(c, base, "base: expected a map (see docs/sweep.md)");
  int rc = only_keys(c, base, "base", allowed);
  if (rc) return rc;
  json_t *ns = json_object_get(base, "netsim");
  if (ns) {
    s->kind = SWEEP_KIND_NETSIM;
    static const char *const sim_only[] = {"gen",    "workload", "comm-group", "network",
                                           "system", "memory",   "sim",        NULL};
    for (size_t i = 0; sim_only[i]; i++)
      if (json_object_get(base, sim_only[i]))
        return bad(c, json_object_get(base, sim_only[i]),
                   "base: '%s' belongs to a sim run, and this base is a netsim scenario",
                   sim_only[i]);
    if ((rc = get_path(c, base, "netsim", &s->netsim_cfg))) return rc;
    etsim_netpkt_cfg_t cfg;
    etsim_netpkt_cfg_default(&cfg);
    if ((rc = etsim_netpkt_cfg_load(&cfg, s->netsim_cfg, c->err))) return rc;
    json_t *o = json_object_get(base, "netsim-options");
    if (o && !json_is_object(o)) return bad(c, o, "base.netsim-options: expected a map");
    s->netsim_opts = o ? json_copy(o) : json_object();
    if (!s->netsim_opts) return ETSIM_ENOMEM;
    const char *k;
    json_t *v;
    json_object_foreach(s->netsim_opts, k, v) if ((rc = check_netsim_value(c, v, k, v))) return rc;
    return 0;
  }
  s->kind = SWEEP_KIND_SIM;
  if (json_object_get(base, "netsim-options"))
    return bad(c, json_object_get(base, "netsim-options"),
               "base.netsim-options: the base names no netsim scenario");
  json_t *g = json_object_get(base, "gen");
  if (g && json_object_get(base, "workload"))
    return bad(c, g, "base: a generator or a workload, not both");
  if (g && (rc = parse_gen(c, g))) return rc;
  if ((rc = get_path(c, base, "workload", &s->workload)) ||
      (rc = get_path(c, base, "comm-group", &s->comm_group)) ||
      (rc = get_path(c, base, "network", &s->network)) ||
      (rc = get_path(c, base, "system", &s->system)) ||
      (rc = get_path(c, base, "memory", &s->memory)))
    return rc;
  if (!s->network) return bad(c, base, "base: 'network' (the network YAML) is required");
  if (!s->system) return bad(c, base, "base: 'system' (the system JSON) is required");
  if ((rc = etsim_sweep__yaml_load(s->network, &s->net_tree, NULL, c->err))) return rc;
  if (!json_is_object(s->net_tree))
    return etsim_error_set(c->err, ETSIM_EFORMAT, "%s: expected a mapping", s->network);
  if ((rc = load_json_file(c, s->system, &s->sys_tree))) return rc;
  if (s->memory && (rc = load_json_file(c, s->memory, &s->mem_tree))) return rc;
  json_t *o = json_object_get(base, "sim");
  if (o && !json_is_object(o)) return bad(c, o, "base.sim: expected a map of simulator options");
  s->sim_opts = o ? json_copy(o) : json_object();
  if (!s->sim_opts) return ETSIM_ENOMEM;
  const char *k;
  json_t *v;
  json_object_foreach(s->sim_opts, k, v) if ((rc = check_sim_value(c, v, k, v))) return rc;
  return 0;
}

/* ---------------------------------------------------------------- load */

/* s->path and s->dir, the folder relative paths in the spec start from. */
static int set_paths(etsim_sweep_spec_t *s, const char *path) {
  s->path = etsim_strdup(path);
  const char *slash = strrchr(path, '/');
  s->dir = slash ? etsim_malloc((size_t)(slash - path) + 1) : etsim_strdup(".");
  if (!s->path || !s->dir) return ETSIM_ENOMEM;
  if (slash) {
    memcpy(s->dir, path, (size_t)(slash - path));
    s->dir[slash - path] = 0;
    if (!s->dir[0]) strcpy(s->dir, "/");
  }
  return 0;
}

/* options: timeout and keep-traces. */
static int parse_options(ctx_t *c, const json_t *opts) {
  static const char *const ok[] = {"timeout", "keep-traces", NULL};
  if (!json_is_object(opts)) return bad(c, opts, "options: expected a map");
  int rc = only_keys(c, opts, "options", ok);
  if (rc) return rc;
  json_t *t = json_object_get(opts, "timeout"), *kt = json_object_get(opts, "keep-traces");
  if (t && (!json_is_number(t) || json_number_value(t) < 0))
    return bad(c, t, "options.timeout: seconds per point (0: none)");
  if (kt && !json_is_boolean(kt)) return bad(c, kt, "options.keep-traces: true or false");
  c->s->timeout_s = t ? json_number_value(t) : 0;
  c->s->keep_traces = kt && json_is_true(kt);
  return 0;
}

static int check_vars(ctx_t *c, const json_t *vars) {
  if (!json_is_object(vars)) return bad(c, vars, "vars: expected a map of name: number");
  const char *k;
  json_t *v;
  json_object_foreach((json_t *)vars, k, v) {
    if (!json_is_number(v) && !json_is_string(v))
      return bad(c, v, "vars.%s: a number or a string", k);
  }
  return 0;
}

/* axes: one group per entry, each a grid, zip, list or random.  *groups
 * and *n_groups are set as soon as the array is made, for the caller to
 * free whatever happens. */
static int parse_axes(ctx_t *c, const json_t *axes, group_t **groups, size_t *n_groups) {
  if (axes && !json_is_array(axes))
    return bad(c, axes, "axes: expected a list of groups (- grid: ..., - zip: ...)");
  size_t n = axes ? json_array_size(axes) : 0;
  group_t *g = etsim_calloc(n ? n : 1, sizeof *g);
  if (!g) return ETSIM_ENOMEM;
  *groups = g;
  *n_groups = n;
  for (size_t i = 0; i < n; i++) {
    json_t *a = json_array_get(axes, i);
    char what[64];
    snprintf(what, sizeof what, "axes[%zu]", i);
    if (!json_is_object(a) || json_object_size(a) != 1)
      return bad(c, a, "%s: one of grid, list, zip or random", what);
    const char *type = json_object_iter_key(json_object_iter(a));
    json_t *body = json_object_get(a, type);
    int rc;
    if (!strcmp(type, "grid")) rc = axis_grid(c, body, what, 0, &g[i]);
    else if (!strcmp(type, "zip")) rc = axis_grid(c, body, what, 1, &g[i]);
    else if (!strcmp(type, "list")) rc = axis_list(c, body, what, &g[i]);
    else if (!strcmp(type, "random")) rc = axis_random(c, body, what, &g[i]);
    else rc = bad(c, a, "%s: '%s' is not grid, list, zip or random", what, type);
    if (rc) return rc;
  }
  return 0;
}

/* derived: one column per key, its expression kept for expand(). */
static int parse_derived(ctx_t *c, const json_t *derived) {
  if (!json_is_object(derived))
    return bad(c, derived, "derived: expected a map of key: \"expression\"");
  const char *k;
  json_t *v;
  json_object_foreach((json_t *)derived, k, v) {
    size_t col;
    if (!json_is_string(v)) return bad(c, v, "derived.%s: expected an expression in quotes", k);
    int rc = add_col(c, v, k, 1, &col);
    if (rc) return rc;
    c->s->cols[col].expr = etsim_strdup(json_string_value(v));
    if (!c->s->cols[col].expr) return ETSIM_ENOMEM;
  }
  return 0;
}

static int parse_where(ctx_t *c, const json_t *where) {
  if (!json_is_string(where)) return bad(c, where, "where: expected an expression in quotes");
  c->s->where = etsim_strdup(json_string_value(where));
  return c->s->where ? 0 : ETSIM_ENOMEM;
}

/* A sim sweep needs a trace set: from base.gen, base.workload or an axis. */
static int check_workload(ctx_t *c, const json_t *base) {
  const etsim_sweep_spec_t *s = c->s;
  if (s->kind != SWEEP_KIND_SIM || s->gen_kind || s->workload) return 0;
  int wl = 0;
  for (size_t k = 0; k < s->n_cols; k++)
    wl |= s->cols[k].dom == SWEEP_DOM_SIM && !strcmp(s->cols[k].field, "workload");
  if (!wl)
    return bad(c, base, "base: 'gen' (a generator command) or 'workload' (a trace set) is needed");
  return 0;
}

/* The dimensions rows report: the most any point's network has (at most
 * 8). */
static void count_dims(etsim_sweep_spec_t *s) {
  if (!s->net_tree) return;
  json_t *t = json_object_get(s->net_tree, "topology");
  s->n_dims = json_is_array(t) ? (int)json_array_size(t) : 1;
  for (size_t k = 0; k < s->n_cols; k++) {
    const sweep_key_t *key = &s->cols[k];
    if (key->dom != SWEEP_DOM_NETWORK || key->index >= 0) continue;
    if (strcmp(key->field, "topology") && strcmp(key->field, "npus_count") &&
        strcmp(key->field, "bandwidth") && strcmp(key->field, "latency"))
      continue;
    for (size_t p = 0; p < s->n_points; p++) {
      json_t *v = etsim_sweep__value_json(s, p, k);
      if (json_is_array(v) && (int)json_array_size(v) > s->n_dims)
        s->n_dims = (int)json_array_size(v);
      json_decref(v);
    }
  }
  if (s->n_dims > 8) s->n_dims = 8;
}

/* The spec's sections in order (each checked before the next is read),
 * then the points expanded, named and fingerprinted. */
static int load_sections(ctx_t *c, json_t *root, group_t **groups, size_t *n_groups) {
  static const char *const top[] = {"name",  "base", "axes",    "derived",
                                    "where", "vars", "options", NULL};
  etsim_sweep_spec_t *s = c->s;
  int rc;
  if (!json_is_object(root))
    return bad(c, root, "expected a map with base and axes (see docs/sweep.md)");
  if ((rc = only_keys(c, root, "spec", top))) return rc;
  json_t *base = json_object_get(root, "base");
  if (!base) return bad(c, root, "'base' (the run every point starts from) is required");
  if ((rc = parse_base(c, base))) return rc;
  json_t *opts = json_object_get(root, "options");
  if (opts && (rc = parse_options(c, opts))) return rc;
  json_t *vars = json_object_get(root, "vars");
  if (vars && (rc = check_vars(c, vars))) return rc;
  if ((rc = parse_axes(c, json_object_get(root, "axes"), groups, n_groups))) return rc;
  s->n_axis = s->n_cols;
  json_t *derived = json_object_get(root, "derived");
  if (derived && (rc = parse_derived(c, derived))) return rc;
  json_t *where = json_object_get(root, "where");
  if (where && (rc = parse_where(c, where))) return rc;
  if ((rc = check_workload(c, base))) return rc;
  if ((rc = expand(c, *groups, *n_groups, derived, vars))) return rc;
  if ((rc = identify(c))) return rc;
  if ((rc = fingerprint(s, base, derived, vars))) return rc;
  count_dims(s);
  return 0;
}

int etsim_sweep_spec_load(const char *path, etsim_sweep_spec_t **out, etsim_error_t *err) {
  etsim_sweep_spec_t *s = etsim_calloc(1, sizeof *s);
  if (!s) return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
  ctx_t c = {s, {0}, err};
  json_t *root = NULL;
  group_t *groups = NULL;
  size_t n_groups = 0;
  int rc = set_paths(s, path);
  if (!rc) rc = etsim_sweep__yaml_load(path, &root, &c.lines, err);
  if (!rc) rc = load_sections(&c, root, &groups, &n_groups);
  if (rc == ETSIM_ENOMEM && (!err || !err->msg[0]))
    etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
  for (size_t i = 0; i < n_groups; i++) group_free(&groups[i]);
  etsim_free(groups);
  etsim_sweep__lines_free(&c.lines);
  json_decref(root);
  if (rc) {
    etsim_sweep_spec_free(s);
    return rc;
  }
  *out = s;
  return 0;
}

void etsim_sweep_spec_free(etsim_sweep_spec_t *s) {
  if (!s) return;
  for (size_t k = 0; k < s->n_cols; k++) {
    etsim_free(s->cols[k].name);
    etsim_free(s->cols[k].field);
    etsim_free(s->cols[k].expr);
  }
  etsim_free(s->cols);
  if (s->vals)
    for (size_t i = 0; i < s->n_points * s->n_cols; i++) etsim_free(s->vals[i]);
  etsim_free(s->vals);
  etsim_free(s->ids);
  etsim_free(s->group);
  json_decref(s->gen_flags);
  json_decref(s->net_tree);
  json_decref(s->sys_tree);
  json_decref(s->mem_tree);
  json_decref(s->sim_opts);
  json_decref(s->netsim_opts);
  etsim_free(s->gen_kind);
  etsim_free(s->workload);
  etsim_free(s->comm_group);
  etsim_free(s->network);
  etsim_free(s->system);
  etsim_free(s->memory);
  etsim_free(s->netsim_cfg);
  etsim_free(s->where);
  etsim_free(s->path);
  etsim_free(s->dir);
  etsim_free(s);
}

/* ------------------------------------------------------------ access */

size_t etsim_sweep_n_points(const etsim_sweep_spec_t *s) { return s->n_points; }
size_t etsim_sweep_n_columns(const etsim_sweep_spec_t *s) { return s->n_cols; }
const char *etsim_sweep_column(const etsim_sweep_spec_t *s, size_t col) {
  return col < s->n_cols ? s->cols[col].name : NULL;
}
const char *etsim_sweep_value(const etsim_sweep_spec_t *s, size_t point, size_t col) {
  return point < s->n_points && col < s->n_cols ? s->vals[point * s->n_cols + col] : NULL;
}
const char *etsim_sweep_point_id(const etsim_sweep_spec_t *s, size_t point) {
  return point < s->n_points ? s->ids[point] : NULL;
}
size_t etsim_sweep_point_group(const etsim_sweep_spec_t *s, size_t point) {
  return point < s->n_points ? s->group[point] : 0;
}
size_t etsim_sweep_n_groups(const etsim_sweep_spec_t *s) { return s->n_groups; }
uint64_t etsim_sweep_fingerprint(const etsim_sweep_spec_t *s) { return s->fingerprint; }
double etsim_sweep_spec_timeout_s(const etsim_sweep_spec_t *s) { return s->timeout_s; }
int etsim_sweep_spec_keep_traces(const etsim_sweep_spec_t *s) { return s->keep_traces; }
