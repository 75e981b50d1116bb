/* Running one point of a sweep, in the executor's own process.
 *
 * A point is the base run with the point's values written into it: its
 * generator flags (the trace set is generated once per distinct command
 * by running `etsim gen` — the CLI's own semantics — and kept for the next
 * points that need it), its network YAML, system and memory JSON (edited
 * copies in the executor's scratch folder, read by the simulator's own
 * loaders), its simulator options; or its netsim config keys.  The trace
 * set stays loaded between points that share it, so a sweep over the
 * platform pays the parse once.  The result is one row of JSON: the axis
 * values and the summary figures (etsim_sweep__result_names), or the error.
 */
#include "sweep/sweep_int.h"

#include "etsim/netpkt.h"
#include "etsim/sim.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

enum { HELD = 2, MAX_WARN = 8 };

typedef struct {
  char *canon; /* the generator command (sorted flags) */
  char *dir;   /* its folder; the prefix is dir/t */
  uint64_t used;
} held_t;

struct etsim_sweep_exec {
  const etsim_sweep_spec_t *spec;
  char *scratch, *traces, *exe;
  held_t held[HELD];
  uint64_t tick;
  char *set_key; /* the loaded set: its prefix and broadcast count */
  size_t set_bcast;
  etsim_et_set_t *set;
  char *warn[MAX_WARN];
  size_t n_warn, n_warn_more;
};

/* ----------------------------------------------------------- files */

static int is_file(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

int etsim_sweep__mkdirs(const char *path, etsim_error_t *err) {
  char buf[4096];
  if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
    return etsim_error_set(err, ETSIM_EINVAL, "%s: path too long", path);
  for (char *p = buf + 1;; p++) {
    if (*p == '/' || !*p) {
      char c = *p;
      *p = 0;
      if (mkdir(buf, 0777) && errno != EEXIST)
        return etsim_error_set(err, ETSIM_EIO, "%s: %s", buf, strerror(errno));
      *p = c;
      if (!c) break;
    }
  }
  return 0;
}

void etsim_sweep__remove_tree(const char *path) {
  DIR *d = opendir(path);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d))) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      char sub[4096];
      if (snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) >= (int)sizeof sub) continue;
      if (is_dir(sub)) etsim_sweep__remove_tree(sub);
      else unlink(sub);
    }
    closedir(d);
  }
  rmdir(path);
}

static char *join(const char *a, const char *b) {
  size_t n = strlen(a) + strlen(b) + 2;
  char *r = etsim_malloc(n);
  if (r) snprintf(r, n, "%s/%s", a, b);
  return r;
}

/* ------------------------------------------------------------ warnings */

static void collect_warning(void *user, const char *line) {
  etsim_sweep_exec_t *x = user;
  for (size_t i = 0; i < x->n_warn; i++)
    if (!strcmp(x->warn[i], line)) return;
  if (x->n_warn == MAX_WARN) {
    x->n_warn_more++;
    return;
  }
  char *c = etsim_strdup(line);
  if (c) x->warn[x->n_warn++] = c;
}

static void warnings_clear(etsim_sweep_exec_t *x) {
  for (size_t i = 0; i < x->n_warn; i++) etsim_free(x->warn[i]);
  x->n_warn = x->n_warn_more = 0;
}

/* ------------------------------------------------------------- create */

int etsim_sweep_exec_create(etsim_sweep_exec_t **out, const etsim_sweep_spec_t *spec,
                            const etsim_sweep_exec_opts_t *o, etsim_error_t *err) {
  etsim_sweep_exec_t *x = etsim_calloc(1, sizeof *x);
  if (!x) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  x->spec = spec;
  x->scratch = etsim_strdup(o->scratch);
  x->exe = etsim_strdup(o->etsim_exe ? o->etsim_exe : "etsim");
  x->traces = o->traces ? etsim_strdup(o->traces) : NULL;
  if (!x->scratch || !x->exe || (o->traces && !x->traces)) {
    etsim_sweep_exec_free(x);
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  int rc = etsim_sweep__mkdirs(x->scratch, err);
  if (!rc && x->traces) rc = etsim_sweep__mkdirs(x->traces, err);
  /* absolute: generators run in the spec's folder */
  char **dirs[2] = {&x->scratch, &x->traces};
  for (int i = 0; i < 2 && !rc; i++) {
    if (!*dirs[i]) continue;
    char *a = realpath(*dirs[i], NULL);
    if (!a) {
      rc = etsim_error_set(err, ETSIM_EIO, "%s: %s", *dirs[i], strerror(errno));
      break;
    }
    char *c = etsim_strdup(a);
    free(a);
    if (!c) rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    else {
      etsim_free(*dirs[i]);
      *dirs[i] = c;
    }
  }
  if (rc) {
    etsim_sweep_exec_free(x);
    return rc;
  }
  *out = x;
  return 0;
}

void etsim_sweep_exec_free(etsim_sweep_exec_t *x) {
  if (!x) return;
  for (int i = 0; i < HELD; i++) {
    if (x->held[i].dir) etsim_sweep__remove_tree(x->held[i].dir);
    etsim_free(x->held[i].dir);
    etsim_free(x->held[i].canon);
  }
  etsim_et_set_free(x->set);
  etsim_free(x->set_key);
  warnings_clear(x);
  if (x->scratch) etsim_sweep__remove_tree(x->scratch);
  etsim_free(x->scratch);
  etsim_free(x->traces);
  etsim_free(x->exe);
  etsim_free(x);
}

/* ---------------------------------------------------------- generating */

/* The last line of what the generator printed on stderr, without the
 * "etsim: " in front. */
static void last_line(const char *path, char *out, size_t cap) {
  out[0] = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return;
  char line[2048];
  while (fgets(line, sizeof line, f)) {
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
    if (!n || strstr(line, "warning:")) continue;
    const char *t = strncmp(line, "etsim: ", 7) ? line : line + 7;
    size_t tl = strlen(t) < cap - 1 ? strlen(t) : cap - 1;
    memcpy(out, t, tl);
    out[tl] = 0;
  }
  fclose(f);
}

/* Run `etsim gen KIND FLAGS -o prefix --quiet` in the spec's folder (so
 * relative paths in flags mean what they mean in the spec). */
static int run_gen(etsim_sweep_exec_t *x, const json_t *flags, const char *prefix,
                   etsim_error_t *err) {
  const etsim_sweep_spec_t *s = x->spec;
  size_t nf = json_object_size(flags);
  char **argv = etsim_calloc(2 * nf + 10, sizeof *argv);
  char **owned = etsim_calloc(2 * nf + 2, sizeof *owned);
  size_t n = 0, no = 0;
  int rc = argv && owned ? 0 : ETSIM_ENOMEM;
  if (!rc) {
    argv[n++] = x->exe;
    argv[n++] = "gen";
    argv[n++] = s->gen_kind;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)flags, k, v) {
      if (json_is_false(v) || json_is_null(v)) continue;
      char *f = etsim_malloc(strlen(k) + 3);
      if (!f) {
        rc = ETSIM_ENOMEM;
        break;
      }
      snprintf(f, strlen(k) + 3, "--%s", k);
      argv[n++] = owned[no++] = f;
      if (!json_is_true(v)) {
        char *t = etsim_sweep__scalar_text(v);
        if (!t) {
          rc = ETSIM_ENOMEM;
          break;
        }
        argv[n++] = owned[no++] = t;
      }
    }
    argv[n++] = "-o";
    argv[n++] = (char *)prefix;
    argv[n++] = "--quiet";
    argv[n] = NULL;
  }
  char *errpath = x->scratch ? join(x->scratch, "gen.err") : NULL;
  if (!rc && !errpath) rc = ETSIM_ENOMEM;
  if (!rc) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
      rc = etsim_error_set(err, ETSIM_EIO, "gen %s: cannot start %s: %s", s->gen_kind, x->exe,
                           strerror(errno));
    } else if (pid == 0) {
      int devnull = open("/dev/null", O_RDWR);
      int ef = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0666);
      if (devnull >= 0) {
        dup2(devnull, 0);
        dup2(devnull, 1);
      }
      if (ef >= 0) dup2(ef, 2);
      if (chdir(s->dir) != 0) _exit(126);
      execv(x->exe, argv);
      _exit(127);
    } else {
      int st = 0;
      while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
      if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        char msg[900];
        last_line(errpath, msg, sizeof msg);
        if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
          rc = etsim_error_set(err, ETSIM_EIO, "gen %s: cannot run %s", s->gen_kind, x->exe);
        else if (WIFSIGNALED(st))
          rc = etsim_error_set(err, ETSIM_EINTERNAL, "gen %s: killed by signal %d", s->gen_kind,
                               WTERMSIG(st));
        else if (!strncmp(msg, "gen ", 4)) rc = etsim_error_set(err, ETSIM_EINVAL, "%s", msg);
        else
          rc = etsim_error_set(err, ETSIM_EINVAL, "gen %s: %s", s->gen_kind,
                               msg[0] ? msg : "failed");
      }
    }
  }
  if (rc == ETSIM_ENOMEM) etsim_error_set(err, rc, "out of memory");
  for (size_t i = 0; i < no; i++) etsim_free(owned[i]);
  etsim_free(owned);
  etsim_free(argv);
  etsim_free(errpath);
  return rc;
}

/* The prefix of the point's generated trace set, generating it when no
 * executor has (kept traces) or this one does not hold it. *prefix owned. */
static int generated(etsim_sweep_exec_t *x, size_t point, char **prefix, etsim_error_t *err) {
  const etsim_sweep_spec_t *s = x->spec;
  json_t *flags = etsim_sweep__gen_flags(s, point);
  char *canon = flags ? etsim_sweep__gen_canon(s->gen_kind, flags) : NULL;
  int rc = 0;
  char hex[17], name[64];
  if (!canon) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto out;
  }
  snprintf(hex, sizeof hex, "%016llx", (unsigned long long)etsim_hash_bytes(canon, strlen(canon)));
  if (x->traces) {
    /* shared: traces/<hash>/ appears whole (renamed from a temporary
     * folder), so whoever sees it may use it */
    char *dir = join(x->traces, hex);
    char *pfx = dir ? join(dir, "t") : NULL;
    if (!pfx) {
      etsim_free(dir);
      rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
      goto out;
    }
    if (!is_dir(dir)) {
      char host[64] = "h";
      gethostname(host, sizeof host - 1);
      snprintf(name, sizeof name, ".tmp-%s-%.20s-%ld", hex, host, (long)getpid());
      char *tmp = join(x->traces, name);
      char *tpfx = tmp ? join(tmp, "t") : NULL;
      if (!tpfx) rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
      if (!rc) {
        etsim_sweep__remove_tree(tmp);
        rc = etsim_sweep__mkdirs(tmp, err);
      }
      if (!rc) rc = run_gen(x, flags, tpfx, err);
      if (!rc) {
        char *cmdf = join(tmp, "command.txt");
        FILE *f = cmdf ? fopen(cmdf, "w") : NULL;
        if (f) {
          fprintf(f, "etsim gen %s\n", canon);
          fclose(f);
        }
        etsim_free(cmdf);
        if (rename(tmp, dir) != 0) etsim_sweep__remove_tree(tmp); /* another executor won */
      } else if (tmp) {
        etsim_sweep__remove_tree(tmp);
      }
      etsim_free(tpfx);
      etsim_free(tmp);
    }
    etsim_free(dir);
    if (rc) etsim_free(pfx);
    else *prefix = pfx;
    goto out;
  }
  /* private: the last HELD sets this executor generated */
  held_t *h = NULL, *lru = &x->held[0];
  for (int i = 0; i < HELD; i++) {
    if (x->held[i].canon && !strcmp(x->held[i].canon, canon)) h = &x->held[i];
    if (x->held[i].used < lru->used) lru = &x->held[i];
  }
  if (!h) {
    h = lru;
    if (h->dir) {
      /* its traces may be the loaded set: drop that first */
      if (x->set_key && !strncmp(x->set_key, h->dir, strlen(h->dir))) {
        etsim_et_set_free(x->set);
        x->set = NULL;
        etsim_free(x->set_key);
        x->set_key = NULL;
      }
      etsim_sweep__remove_tree(h->dir);
    }
    etsim_free(h->dir);
    etsim_free(h->canon);
    h->canon = NULL;
    snprintf(name, sizeof name, "gen-%s", hex);
    h->dir = join(x->scratch, name);
    if (!h->dir) {
      rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
      goto out;
    }
    etsim_sweep__remove_tree(h->dir);
    char *pfx = join(h->dir, "t");
    rc = pfx ? etsim_sweep__mkdirs(h->dir, err)
             : etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    if (!rc) rc = run_gen(x, flags, pfx, err);
    etsim_free(pfx);
    if (rc) {
      etsim_sweep__remove_tree(h->dir);
      etsim_free(h->dir);
      h->dir = NULL;
      h->used = 0;
      goto out;
    }
    h->canon = canon;
    canon = NULL;
  }
  h->used = ++x->tick;
  *prefix = join(h->dir, "t");
  if (!*prefix) rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
out:
  etsim_free(canon);
  json_decref(flags);
  return rc;
}

/* ------------------------------------------------------------- configs */

/* Replace the scratch file's name in an error message by what it stands
 * for, so that the row names the user's file. */
static void rename_in_error(etsim_error_t *err, const char *tmp, const char *shown) {
  char *at = strstr(err->msg, tmp);
  if (!at) return;
  char buf[sizeof err->msg];
  snprintf(buf, sizeof buf, "%.*s%s (as this point edits it)%s", (int)(at - err->msg), err->msg,
           shown, at + strlen(tmp));
  memcpy(err->msg, buf, sizeof buf);
}

/* The point's copy of a config tree, edited by its columns of `dom`; NULL
 * (and *edited 0) when the point changes nothing there. */
static int edited_tree(const etsim_sweep_spec_t *s, size_t point, int dom, const json_t *base,
                       json_t **out, etsim_error_t *err) {
  *out = NULL;
  for (size_t k = 0; k < s->n_cols; k++) {
    const sweep_key_t *key = &s->cols[k];
    if (key->dom != dom) continue;
    if (!*out && !(*out = json_deep_copy(base)))
      return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    json_t *v = etsim_sweep__value_json(s, point, k);
    if (!v) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    if (key->index >= 0) {
      json_t *a = json_object_get(*out, key->field);
      if (!json_is_array(a) || json_array_set_new(a, (size_t)key->index, v))
        return etsim_error_set(err, ETSIM_EINVAL, "%s: '%s' has no item %d", key->name, key->field,
                               key->index);
    } else if (json_object_set_new(*out, key->field, v)) {
      return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    }
  }
  return 0;
}

static int write_json(const char *path, const json_t *tree, etsim_error_t *err) {
  etsim_outfile_t o;
  int rc = etsim_outfile_open(&o, path, err);
  if (rc) return rc;
  char *t = etsim_sweep__dump(tree);
  if (!t) {
    etsim_outfile_abort(&o);
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  fputs(t, o.fp);
  fputc('\n', o.fp);
  etsim_free(t);
  return etsim_outfile_commit(&o, err);
}

/* The options of a point: the base's, then its own. */
static json_t *options(const etsim_sweep_spec_t *s, size_t point, int dom, const json_t *base) {
  json_t *o = json_copy((json_t *)base);
  for (size_t k = 0; o && k < s->n_cols; k++) {
    if (s->cols[k].dom != dom) continue;
    json_t *v = etsim_sweep__value_json(s, point, k);
    if (!v || json_object_set_new(o, s->cols[k].field, v)) {
      json_decref(o);
      return NULL;
    }
  }
  return o;
}

static char *resolve_in(const char *dir, const char *p) {
  if (p[0] == '/' || !strcmp(dir, ".")) return etsim_strdup(p);
  return join(dir, p);
}

/* ------------------------------------------------------------- results */

static const char *const op_cols[] = {"exposed_allreduce_ns", "exposed_reducescatter_ns",
                                      "exposed_allgather_ns", "exposed_alltoall_ns",
                                      "exposed_rooted_ns",    "exposed_p2p_ns",
                                      "exposed_mem_ns"};
static const char *const sim_head[] = {"npus", "iteration_ns", "compute_ns", "exposed_comm_ns",
                                       "exposed_comm_idle_ns"};
static const char *const sim_tail[] = {"comm_bytes", "peak_mem_bytes", "offload_bytes",
                                       "offload_ns", "events"};
static const char *const netsim_cols[] = {
    "flows",        "flows_done", "last_done_ns",     "slowdown_median", "slowdown_p99",
    "slowdown_max", "pauses",     "paused_us",        "drops_buffer",    "drops_error",
    "ecn_marks",    "cnps",       "max_buffer_bytes", "packets",         "events"};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

size_t etsim_sweep__result_names(const etsim_sweep_spec_t *s, const char ***out) {
  size_t n = 0;
  const char **v;
  if (s->kind == SWEEP_KIND_NETSIM) {
    v = etsim_calloc(NELEM(netsim_cols), sizeof *v);
    if (!v) return 0;
    for (size_t i = 0; i < NELEM(netsim_cols); i++) v[n++] = etsim_strdup(netsim_cols[i]);
  } else {
    size_t cap = NELEM(sim_head) + NELEM(op_cols) + 2 * (size_t)s->n_dims + NELEM(sim_tail);
    v = etsim_calloc(cap, sizeof *v);
    if (!v) return 0;
    for (size_t i = 0; i < NELEM(sim_head); i++) v[n++] = etsim_strdup(sim_head[i]);
    for (size_t i = 0; i < NELEM(op_cols); i++) v[n++] = etsim_strdup(op_cols[i]);
    for (int d = 0; d < s->n_dims; d++) {
      char b[40];
      snprintf(b, sizeof b, "exposed_dim%d_ns", d);
      v[n++] = etsim_strdup(b);
    }
    for (int d = 0; d < s->n_dims; d++) {
      char b[40];
      snprintf(b, sizeof b, "busy_dim%d_ns", d);
      v[n++] = etsim_strdup(b);
    }
    for (size_t i = 0; i < NELEM(sim_tail); i++) v[n++] = etsim_strdup(sim_tail[i]);
  }
  for (size_t i = 0; i < n; i++)
    if (!v[i]) {
      etsim_sweep__result_names_free(v, n);
      return 0;
    }
  *out = v;
  return n;
}

void etsim_sweep__result_names_free(const char **names, size_t n) {
  for (size_t i = 0; names && i < n; i++) etsim_free((void *)names[i]);
  etsim_free((void *)names);
}

static int set_num(json_t *o, const char *k, double v) {
  if (v == floor(v) && fabs(v) < 9007199254740992.0)
    return json_object_set_new(o, k, json_integer((json_int_t)v));
  return json_object_set_new(o, k, json_real(v));
}

/* ps to ns, kept to the ps (three decimals). */
static double ns(double ps) { return ps / 1000.0; }

static json_t *sim_results(const etsim_sweep_spec_t *s, const etsim_sim_result_t *r) {
  json_t *o = json_object();
  if (!o) return NULL;
  double n = r->n_npus ? (double)r->n_npus : 1;
  double comp = 0, exp_ = 0, idle = 0, bytes = 0, by_op[ETSIM_COP_N + 2] = {0};
  double dim_exp[ETSIM_TOPO_MAX_DIMS] = {0}, dim_busy[ETSIM_TOPO_MAX_DIMS] = {0};
  uint64_t peak = 0, off_b = 0;
  int64_t off_ps = 0;
  for (uint32_t i = 0; i < r->n_npus; i++) {
    const etsim_sim_npu_t *u = &r->npu[i];
    comp += (double)u->gpu_comp_ps;
    exp_ += (double)u->exposed_ps;
    idle += (double)u->exposed_true_ps;
    bytes += (double)u->comm_bytes;
    for (int k = 0; k < ETSIM_COP_N + 2; k++) by_op[k] += (double)u->exposed_by_op[k];
    for (int d = 0; d < ETSIM_TOPO_MAX_DIMS; d++) {
      dim_exp[d] += (double)u->coll_exposed_by_dim[d];
      dim_busy[d] += (double)u->coll_busy_by_dim[d];
    }
    if (u->peak_mem_bytes > peak) peak = u->peak_mem_bytes;
    if (u->offload_bytes > off_b) off_b = u->offload_bytes;
    if (u->offload_ps > off_ps) off_ps = u->offload_ps;
  }
  int rc = set_num(o, "npus", r->n_npus);
  rc |= set_num(o, "iteration_ns", ns((double)r->total_ps));
  /* averages per NPU, rounded to the ps */
  rc |= set_num(o, "compute_ns", ns(round(comp / n)));
  rc |= set_num(o, "exposed_comm_ns", ns(round(exp_ / n)));
  rc |= set_num(o, "exposed_comm_idle_ns", ns(round(idle / n)));
  double rooted = 0;
  for (int k = ETSIM_COP_ASTRA_N; k < ETSIM_COP_N; k++) rooted += by_op[k];
  double ops[7] = {by_op[ETSIM_COP_ALL_REDUCE],
                   by_op[ETSIM_COP_REDUCE_SCATTER],
                   by_op[ETSIM_COP_ALL_GATHER],
                   by_op[ETSIM_COP_ALL_TO_ALL],
                   rooted,
                   by_op[ETSIM_COP_N],
                   by_op[ETSIM_COP_N + 1]};
  for (size_t k = 0; k < NELEM(op_cols); k++) rc |= set_num(o, op_cols[k], ns(round(ops[k] / n)));
  char b[40];
  for (int d = 0; d < s->n_dims; d++) {
    snprintf(b, sizeof b, "exposed_dim%d_ns", d);
    rc |= d < r->ndims ? set_num(o, b, ns(round(dim_exp[d] / n)))
                       : json_object_set_new(o, b, json_null());
  }
  for (int d = 0; d < s->n_dims; d++) {
    snprintf(b, sizeof b, "busy_dim%d_ns", d);
    rc |= d < r->ndims ? set_num(o, b, ns(round(dim_busy[d] / n)))
                       : json_object_set_new(o, b, json_null());
  }
  rc |= set_num(o, "comm_bytes", round(bytes / n));
  rc |= r->mem_tracked ? set_num(o, "peak_mem_bytes", (double)peak)
                       : json_object_set_new(o, "peak_mem_bytes", json_null());
  rc |= r->hbm_bytes > 0 ? set_num(o, "offload_bytes", (double)off_b)
                         : json_object_set_new(o, "offload_bytes", json_null());
  rc |= r->offload_priced ? set_num(o, "offload_ns", ns((double)off_ps))
                          : json_object_set_new(o, "offload_ns", json_null());
  rc |= set_num(o, "events", (double)r->events);
  if (rc) {
    json_decref(o);
    return NULL;
  }
  return o;
}

/* The options that edit the system layer, applied as `etsim sim` applies
 * them. */
static int sys_options(const json_t *opt, etsim_sys_config_t *sys, etsim_error_t *err) {
  json_t *v;
  if ((v = json_object_get(opt, "num-queues-per-dim"))) {
    json_int_t q = json_integer_value(v);
    if (q < 1 || q > 64)
      return etsim_error_set(err, ETSIM_EINVAL, "sim.num-queues-per-dim: must be 1 to 64");
    sys->queues_per_dim = (uint32_t)q;
  }
  if ((v = json_object_get(opt, "ring-window"))) {
    json_int_t w = json_integer_value(v);
    if (w < 1 || w > 1000000)
      return etsim_error_set(err, ETSIM_EINVAL, "sim.ring-window: must be 1 to 1000000");
    sys->ring_window = (uint32_t)w;
  }
  if ((v = json_object_get(opt, "injection-scale"))) {
    double d = (double)sys->endpoint_delay_ns * json_number_value(v);
    if (!(d >= 0 && d <= ETSIM_COLL_MAX_DELAY_NS))
      return etsim_error_set(err, ETSIM_EINVAL,
                             "sim.injection-scale: makes the endpoint delay %g ns (0 to %g)", d,
                             ETSIM_COLL_MAX_DELAY_NS);
    sys->endpoint_delay_ns = (int64_t)d;
  }
  return 0;
}

/* The file a point reads for one config: the base file (a copy of its
 * path) when the point edits nothing there, else the edited tree written
 * into the executor's scratch folder under `name`.  *out is owned. */
static int point_file(etsim_sweep_exec_t *x, size_t point, int dom, const json_t *tree,
                      const char *name, const char *base, char **out, etsim_error_t *err) {
  json_t *ed = NULL;
  *out = NULL;
  int rc = edited_tree(x->spec, point, dom, tree, &ed, err);
  if (!rc && !ed && !(*out = etsim_strdup(base)))
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  if (rc || !ed) {
    json_decref(ed);
    return rc;
  }
  char *path = join(x->scratch, name);
  if (!path) rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  else if (dom == SWEEP_DOM_NETWORK) rc = etsim_sweep__yaml_write(path, ed, err);
  else rc = write_json(path, ed, err);
  json_decref(ed);
  if (rc) etsim_free(path);
  else *out = path;
  return rc;
}

/* An edited system file lives in scratch, but its custom collectives'
 * relative paths are the base file's: point sys->dir at the base's folder. */
static int base_dir(const char *base, etsim_sys_config_t *sys) {
  const char *slash = strrchr(base, '/');
  char *dir = slash ? etsim_malloc((size_t)(slash - base) + 1) : etsim_strdup(".");
  if (!dir) return ETSIM_ENOMEM;
  if (slash) {
    memcpy(dir, base, (size_t)(slash - base));
    dir[slash - base] = 0;
  }
  etsim_free(sys->dir);
  sys->dir = dir;
  return 0;
}

/* ---------------------------------------------------------------- sim */

static int run_sim(etsim_sweep_exec_t *x, size_t point, json_t **out, etsim_error_t *err) {
  const etsim_sweep_spec_t *s = x->spec;
  etsim_topo_t topo;
  etsim_sys_config_t sys;
  etsim_mem_config_t mem;
  etsim_comm_groups_t cg = {0};
  etsim_sim_result_t *res = NULL;
  json_t *opt = NULL;
  char *prefix = NULL, *groups = NULL, *tmp = NULL, *ntopo = NULL, *ncfg = NULL;
  int have_sys = 0, rc;
  opt = options(s, point, SWEEP_DOM_SIM, s->sim_opts);
  if (!opt) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  /* the network, the system and the remote memory, each the base file or
   * the point's edited copy */
  if ((rc = point_file(x, point, SWEEP_DOM_NETWORK, s->net_tree, "network.yml", s->network, &tmp,
                       err)))
    goto out;
  rc = etsim_topo_load_yaml(tmp, &topo, err);
  if (rc && strcmp(tmp, s->network)) rename_in_error(err, tmp, s->network);
  etsim_free(tmp);
  tmp = NULL;
  if (rc) goto out;
  if ((rc = point_file(x, point, SWEEP_DOM_SYSTEM, s->sys_tree, "system.json", s->system, &tmp,
                       err)))
    goto out;
  rc = etsim_sys_config_load(tmp, &sys, err);
  have_sys = !rc;
  if (rc && strcmp(tmp, s->system)) rename_in_error(err, tmp, s->system);
  else if (strcmp(tmp, s->system) && (rc = base_dir(s->system, &sys))) goto oom;
  etsim_free(tmp);
  tmp = NULL;
  if (rc) goto out;
  if (s->mem_tree) {
    if ((rc = point_file(x, point, SWEEP_DOM_MEMORY, s->mem_tree, "memory.json", s->memory, &tmp,
                         err)))
      goto out;
    rc = etsim_mem_config_load(tmp, &mem, err);
    if (rc && strcmp(tmp, s->memory)) rename_in_error(err, tmp, s->memory);
    etsim_free(tmp);
    tmp = NULL;
    if (rc) goto out;
  }
  if ((rc = sys_options(opt, &sys, err))) goto out;
  json_t *v;
  double hbm_gib = 0;
  if ((v = json_object_get(opt, "hbm-gb"))) {
    hbm_gib = json_number_value(v);
    if (!(hbm_gib > 0 && hbm_gib < 1e9)) {
      rc = etsim_error_set(err, ETSIM_EINVAL, "sim.hbm-gb: a capacity in GiB above 0");
      goto out;
    }
  }
  int offload = json_is_true(json_object_get(opt, "offload"));
  if (offload && !(hbm_gib > 0)) {
    rc = etsim_error_set(err, ETSIM_EINVAL, "sim.offload needs sim.hbm-gb");
    goto out;
  }
  const char *backend = json_string_value(json_object_get(opt, "backend"));
  if (!backend) backend = "analytical";
  const char *cc = json_string_value(json_object_get(opt, "cc"));
  if ((v = json_object_get(opt, "net-topology")) &&
      !(ntopo = resolve_in(s->dir, json_string_value(v))))
    goto oom;
  if ((v = json_object_get(opt, "net-config")) &&
      !(ncfg = resolve_in(s->dir, json_string_value(v))))
    goto oom;
  if ((cc || ntopo || ncfg) && strcmp(backend, "flow") && strcmp(backend, "packet")) {
    rc = etsim_error_set(err, ETSIM_EINVAL,
                         "cc, net-topology and net-config need backend flow or packet");
    goto out;
  }
  /* the workload */
  if (s->gen_kind) {
    if ((rc = generated(x, point, &prefix, err))) goto out;
    if ((rc = etsim_et_comm_groups_path(prefix, 0, &groups, err))) goto out;
    if (!is_file(groups)) {
      etsim_free(groups);
      groups = NULL;
    }
  } else {
    v = json_object_get(opt, "workload");
    if (!(prefix = v ? resolve_in(s->dir, json_string_value(v)) : etsim_strdup(s->workload)))
      goto oom;
  }
  if ((v = json_object_get(opt, "comm-group"))) {
    etsim_free(groups);
    if (!(groups = resolve_in(s->dir, json_string_value(v)))) goto oom;
  } else if (s->comm_group) {
    etsim_free(groups);
    if (!(groups = etsim_strdup(s->comm_group))) goto oom;
  }
  size_t bcast = is_file(prefix) ? topo.total : 0;
  if (!x->set || strcmp(x->set_key, prefix) || x->set_bcast != bcast) {
    etsim_et_set_free(x->set);
    x->set = NULL;
    etsim_free(x->set_key);
    x->set_key = NULL;
    etsim_et_set_t *set;
    /* as etsim sim loads it: ranks equal up to their labels share one
     * trace, which also lets the simulator run one NPU per class */
    if ((rc = etsim_et_set_load(&set, prefix, ETSIM_ET_SET_SHARE_LABELS, err))) goto out;
    if (set->n_ranks == 1 && bcast > 1 && (rc = etsim_et_set_broadcast(set, bcast, err))) {
      etsim_et_set_free(set);
      goto out;
    }
    x->set = set;
    x->set_bcast = bcast;
    if (!(x->set_key = etsim_strdup(prefix))) goto oom;
  }
  if (groups && (rc = etsim_comm_groups_load(groups, topo.total, &cg, err))) goto out;
  etsim_net_opts_t nopt = {ntopo, ncfg, cc, NULL, NULL, NULL, 1000000, NULL, 0, {NULL, NULL}};
  etsim_sim_opts_t o = {.backend = backend,
                        .multi_comm = json_is_true(json_object_get(opt, "multi-comm")),
                        .exact = json_is_true(json_object_get(opt, "exact")),
                        .memory = s->mem_tree ? &mem : NULL,
                        .groups = groups ? &cg : NULL,
                        .net = &nopt,
                        .hbm_bytes = hbm_gib * 1073741824.0,
                        .offload = offload};
  if ((rc = etsim_sim_run(x->set, &topo, &sys, &o, &res, err))) goto out;
  if (!(*out = sim_results(s, res))) goto oom;
  goto out;
oom:
  rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
out:
  etsim_sim_result_free(res);
  etsim_comm_groups_free(&cg);
  if (have_sys) etsim_sys_config_free(&sys);
  json_decref(opt);
  etsim_free(prefix);
  etsim_free(groups);
  etsim_free(tmp);
  etsim_free(ntopo);
  etsim_free(ncfg);
  return rc;
}

/* ------------------------------------------------------------- netsim */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* A netsim point's keys applied over the scenario's config: cc by name,
 * the backend (packet, or flow), the seed, and any config key (a relative
 * *_FILE is the spec's). */
static int netsim_options(const etsim_sweep_spec_t *s, json_t *opt, etsim_netpkt_cfg_t *cfg,
                          int *packet, etsim_error_t *err) {
  int rc = 0;
  const char *k;
  json_t *v;
  json_object_foreach(opt, k, v) {
    char *t = etsim_sweep__scalar_text(v);
    if (!t) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    if (!strcmp(k, "backend")) {
      *packet = strcmp(t, "flow") != 0;
    } else if (!strcmp(k, "cc")) {
      static const char *names[] = {"none", "dcqcn", "hpcc", "timely", "dctcp"};
      static const char *modes[] = {"0", "1", "3", "7", "8"};
      const char *m = t;
      for (int i = 0; i < 5; i++)
        if (!strcmp(t, names[i])) m = modes[i];
      rc = etsim_netpkt_cfg_set(cfg, "CC_MODE", m, err);
    } else if (!strcmp(k, "seed")) {
      char *end;
      errno = 0;
      unsigned long long sd = strtoull(t, &end, 10);
      if (errno || *end || !*t) rc = etsim_error_set(err, ETSIM_EINVAL, "netsim.seed: '%s'", t);
      else cfg->seed = sd;
    } else {
      /* files named in values are the spec's, as the spec's own paths */
      size_t kl = strlen(k);
      char *val = t;
      char *res = NULL;
      if (kl > 5 && !strcmp(k + kl - 5, "_FILE") && t[0] && t[0] != '/') {
        res = resolve_in(s->dir, t);
        if (res) val = res;
      }
      rc = etsim_netpkt_cfg_set(cfg, k, val, err);
      etsim_free(res);
    }
    etsim_free(t);
    if (rc) {
      etsim_error_prefix(err, "netsim.%s", k);
      return rc;
    }
  }
  return 0;
}

static int run_netsim(etsim_sweep_exec_t *x, size_t point, json_t **out, etsim_error_t *err) {
  const etsim_sweep_spec_t *s = x->spec;
  json_t *opt = options(s, point, SWEEP_DOM_NETSIM, s->netsim_opts);
  if (!opt) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  etsim_netpkt_cfg_t cfg;
  etsim_netpkt_cfg_default(&cfg);
  cfg.tx_round_ps = 1000; /* ns-3 keeps time in whole ns, as `etsim netsim` */
  etsim_netpkt_topo_t topo;
  int have_topo = 0, packet = 1, rc;
  etsim_netpkt_flow_t *flows = NULL;
  size_t n_flows = 0;
  const etsim_netpkt_level_t *lv = NULL;
  void *net = NULL;
  double *slow = NULL;
  if ((rc = etsim_netpkt_cfg_load(&cfg, s->netsim_cfg, err))) goto out;
  if ((rc = netsim_options(s, opt, &cfg, &packet, err))) goto out;
  if (!cfg.topology_file[0] || !cfg.flow_file[0]) {
    rc = etsim_error_set(err, ETSIM_EINVAL, "%s: TOPOLOGY_FILE and FLOW_FILE must be set",
                         s->netsim_cfg);
    goto out;
  }
  if ((rc = etsim_netpkt_topo_load(&topo, cfg.topology_file, err))) goto out;
  have_topo = 1;
  if ((rc = etsim_netpkt_flows_load(cfg.flow_file, &flows, &n_flows, err))) goto out;
  lv = etsim_netpkt_level_find(packet ? "packet" : "flow");
  if ((rc = lv->create(&net, &topo, &cfg, err))) goto out;
  if ((rc = etsim_netpkt_flows_send(lv, net, &topo, flows, n_flows, cfg.flow_file, err))) goto out;
  json_t *o = json_object();
  if (!o) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto out;
  }
  lv->set_outputs(net, NULL, NULL, NULL);
  /* a PFC deadlock is a result of the point, not an input error; its
   * message says where the pause cycle formed */
  if ((rc = lv->run_until(net, INT64_MAX, err))) {
    json_decref(o);
    goto out;
  }
  lv->finish(net);
  slow = etsim_calloc(n_flows ? n_flows : 1, sizeof *slow);
  if (!slow) {
    json_decref(o);
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto out;
  }
  size_t nsl = 0;
  for (size_t i = 0; i < n_flows; i++) {
    etsim_netpkt_msg_stat_t ms;
    if (lv->msg_stat(net, i, &ms)) continue;
    if (ms.acked_ps >= 0 && ms.standalone_ps > 0)
      slow[nsl++] = (double)(ms.acked_ps - ms.start_ps) / (double)ms.standalone_ps;
  }
  etsim_qsort(slow, nsl, sizeof *slow, cmp_double);
  int e = 0;
  etsim_netpkt_stats_t st;
  lv->get_stats(net, &st);
  uint64_t msgs = st.msgs, done = st.msgs_done, events = st.events;
  int64_t last = st.last_done_ps;
  e |= set_num(o, "flows", (double)msgs);
  e |= set_num(o, "flows_done", (double)done);
  e |= set_num(o, "last_done_ns", ns((double)last));
  /* four decimals, as `etsim netsim --json` prints them */
  double q[3] = {nsl ? slow[nsl / 2] : 0,
                 nsl ? slow[(nsl * 99) / 100 < nsl ? (nsl * 99) / 100 : nsl - 1] : 0,
                 nsl ? slow[nsl - 1] : 0};
  const char *qn[3] = {"slowdown_median", "slowdown_p99", "slowdown_max"};
  for (int i = 0; i < 3; i++)
    e |= nsl ? set_num(o, qn[i], round(q[i] * 10000) / 10000)
             : json_object_set_new(o, qn[i], json_null());
  if (lv->queues) {
    e |= set_num(o, "pauses", (double)st.pauses);
    e |= set_num(o, "paused_us", round((double)st.paused_ps / 1e3) / 1e3);
    e |= set_num(o, "drops_buffer", (double)st.drops_buffer);
    e |= set_num(o, "drops_error", (double)st.drops_error);
    e |= set_num(o, "ecn_marks", (double)st.ecn_marks);
    e |= set_num(o, "cnps", (double)st.cnps);
    e |= set_num(o, "max_buffer_bytes", (double)st.max_switch_buffer_bytes);
    e |= set_num(o, "packets", (double)(st.data_pkts + st.ack_pkts + st.pfc_frames));
  } else {
    static const char *none[] = {"pauses",    "paused_us", "drops_buffer",     "drops_error",
                                 "ecn_marks", "cnps",      "max_buffer_bytes", "packets"};
    for (size_t i = 0; i < NELEM(none); i++) e |= json_object_set_new(o, none[i], json_null());
  }
  e |= set_num(o, "events", (double)events);
  if (e) {
    json_decref(o);
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto out;
  }
  if (done < msgs) {
    json_decref(o);
    rc =
        etsim_error_set(err, ETSIM_EDEADLOCK, "%s: %llu of %llu flows never finished",
                        s->netsim_cfg, (unsigned long long)(msgs - done), (unsigned long long)msgs);
    goto out;
  }
  *out = o;
out:
  etsim_free(slow);
  if (net) lv->destroy(net);
  etsim_free(flows);
  if (have_topo) etsim_netpkt_topo_free(&topo);
  json_decref(opt);
  return rc;
}

/* ---------------------------------------------------------------- rows */

static char *make_row(const etsim_sweep_spec_t *s, size_t point, const char *error, json_t *results,
                      etsim_sweep_exec_t *x) {
  json_t *row = json_object(), *axes = json_object();
  int e = !row || !axes;
  e |= json_object_set_new(row, "point", json_integer((json_int_t)point));
  e |= json_object_set_new(row, "id", json_string(s->ids[point]));
  e |= json_object_set_new(row, "status", json_string(error ? "failed" : "ok"));
  e |= json_object_set_new(row, "error", error ? json_string(error) : json_null());
  for (size_t k = 0; !e && k < s->n_cols; k++) {
    json_t *v = etsim_sweep__value_json(s, point, k);
    e |= !v || json_object_set_new(axes, s->cols[k].name, v);
  }
  e |= json_object_set_new(row, "axes", axes);
  axes = NULL;
  if (!e && !results) {
    /* a failed point has every figure, as null: one shape for all rows */
    const char **names;
    size_t n = etsim_sweep__result_names(s, &names);
    results = json_object();
    e |= !n || !results;
    for (size_t i = 0; !e && i < n; i++) e |= json_object_set_new(results, names[i], json_null());
    if (n) etsim_sweep__result_names_free(names, n);
  } else if (results) {
    json_incref(results);
  }
  e |= json_object_set_new(row, "results", results);
  if (x && x->n_warn) {
    json_t *w = json_array();
    e |= !w;
    for (size_t i = 0; !e && i < x->n_warn; i++)
      e |= json_array_append_new(w, json_string(x->warn[i]));
    if (!e && x->n_warn_more) {
      char b[64];
      snprintf(b, sizeof b, "... and %zu more", x->n_warn_more);
      e |= json_array_append_new(w, json_string(b));
    }
    e |= json_object_set_new(row, "warnings", w);
  }
  char *text = e ? NULL : etsim_sweep__dump(row);
  json_decref(axes);
  json_decref(row);
  return text;
}

char *etsim_sweep_failed_row(const etsim_sweep_spec_t *s, size_t point, const char *why) {
  return make_row(s, point, why, NULL, NULL);
}

int etsim_sweep_exec_point(etsim_sweep_exec_t *x, size_t point, char **row_out) {
  const etsim_sweep_spec_t *s = x->spec;
  if (point >= s->n_points) return ETSIM_EINVAL;
  warnings_clear(x);
  etsim_set_warn_handler(collect_warning, x);
  /* Each point is a run of its own: the files an earlier point read (its
   * generated workload, its network file) are this one's to rewrite. */
  etsim_inputs_forget();
  etsim_error_t e = {0};
  json_t *results = NULL;
  int rc = s->kind == SWEEP_KIND_NETSIM ? run_netsim(x, point, &results, &e)
                                        : run_sim(x, point, &results, &e);
  etsim_set_warn_handler(NULL, NULL);
  if (rc && !e.msg[0]) snprintf(e.msg, sizeof e.msg, "%s", etsim_strerror(rc));
  char *row = make_row(s, point, rc ? e.msg : NULL, rc ? NULL : results, x);
  json_decref(results);
  warnings_clear(x);
  if (!row) return ETSIM_ENOMEM;
  *row_out = row;
  return 0;
}
