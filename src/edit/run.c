/*
 * run.c — an edit from start to end: building it from operations, then
 * running it stage by stage.
 *
 * A stage is a run of operations over one input set.  A retarget (--dp,
 * --npus) has to see the set as it is, so each one after the first op
 * starts a new stage, and the stage before it is written to a temporary
 * set next to the output first.  Within a stage, the plan (plan.c) gives
 * the jobs; each job writes one file under a temporary name; when all are
 * written, the collectives and point-to-point messages are compared across
 * ranks (the same check `etsim validate` makes) and only then is anything
 * renamed into place.
 */
#include "edit_int.h"
#include "etsim/etcheck.h"

#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------- the edit */

static char *dup_or_null(const char *s) { return s ? etsim_strdup(s) : NULL; }

int etsim_edit_new(etsim_edit_t **out, const etsim_edit_opts_t *opts, etsim_error_t *err) {
  etsim_edit_t *e = etsim_calloc(1, sizeof *e);
  if (!e) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  if (opts) {
    e->opts = *opts;
    e->opts.comm_group = dup_or_null(opts->comm_group);
    e->opts.iter_marker = dup_or_null(opts->iter_marker);
    e->opts.salt = dup_or_null(opts->salt);
    e->opts.dp_sharded = dup_or_null(opts->dp_sharded);
    /* A lost copy would silently change the edit (no salt: unkeyed hashes). */
    if ((opts->comm_group && !e->opts.comm_group) || (opts->iter_marker && !e->opts.iter_marker) ||
        (opts->salt && !e->opts.salt) || (opts->dp_sharded && !e->opts.dp_sharded)) {
      etsim_edit_free(e);
      return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    }
  }
  etsim_edit__anon_key(e);
  const char *mk = e->opts.iter_marker ? e->opts.iter_marker : "^ProfilerStep#";
  int rc = regcomp(&e->marker, mk, REG_EXTENDED | REG_NOSUB);
  if (rc) {
    char msg[256];
    regerror(rc, &e->marker, msg, sizeof msg);
    etsim_edit_free(e);
    return etsim_error_set(err, ETSIM_EINVAL, "--iter-marker %s: %s", mk, msg);
  }
  e->have_marker = 1;
  if (e->opts.dp_sharded) {
    rc = regcomp(&e->sharded, e->opts.dp_sharded, REG_EXTENDED | REG_NOSUB);
    if (rc) {
      char msg[256];
      regerror(rc, &e->sharded, msg, sizeof msg);
      etsim_error_set(err, ETSIM_EINVAL, "--dp-sharded %s: %s", e->opts.dp_sharded, msg);
      etsim_edit_free(e);
      return ETSIM_EINVAL;
    }
    e->have_sharded = 1;
  }
  *out = e;
  return 0;
}

void etsim_edit_free(etsim_edit_t *e) {
  if (!e) return;
  for (size_t k = 0; k < e->n_ops; k++) etsim_edit__op_free(&e->ops[k]);
  etsim_free(e->ops);
  if (e->have_marker) regfree(&e->marker);
  if (e->have_sharded) regfree(&e->sharded);
  etsim_free((char *)e->opts.comm_group);
  etsim_free((char *)e->opts.iter_marker);
  etsim_free((char *)e->opts.salt);
  etsim_free((char *)e->opts.dp_sharded);
  etsim_free(e);
}

int etsim_edit_add(etsim_edit_t *e, const char *name, const char *arg, etsim_error_t *err) {
  size_t n;
  const etsim_edit_op_info_t *info = etsim_edit_ops(&n);
  size_t kind = 0;
  while (kind < n && strcmp(info[kind].name, name) != 0) kind++;
  if (kind == n) return etsim_error_set(err, ETSIM_EINVAL, "unknown edit operation '%s'", name);
  if (e->n_ops >= 4096) return etsim_error_set(err, ETSIM_ERANGE, "more than 4,096 operations");
  if (etsim_grow((void **)&e->ops, &e->cap_ops, e->n_ops + 1, sizeof *e->ops))
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  ed_op_t *op = &e->ops[e->n_ops];
  int rc = etsim_edit__op_parse(op, (int)kind, arg, err);
  if (rc) return rc;
  int k = op->kind;
  if (k == ED_KEEP || k == ED_DROP || k == ED_ITER || k == ED_ITER_ONLY || k == ED_RANKS) {
    if (e->n_bits >= 64) {
      etsim_edit__op_free(op);
      return etsim_error_set(err, ETSIM_ERANGE, "more than 64 selections in one edit");
    }
    op->bit = e->n_bits++;
  }
  e->n_ops++;
  return 0;
}

void etsim_edit_report_free(etsim_edit_report_t *r) {
  if (!r) return;
  for (size_t i = 0; i < r->n_notes; i++) etsim_free(r->notes[i]);
  etsim_free(r->notes);
  memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------ profiles */

/* NAME,TIME lines; the time is the last comma-separated field, so names
 * may hold commas (C++ signatures do); a name may also be quoted CSV. */
static int load_profile(ed_op_t *op, etsim_error_t *err) {
  int rc0 = etsim_input_check(op->path, err);
  if (rc0) return rc0;
  FILE *fp = fopen(op->path, "r");
  if (!fp) return etsim_error_set(err, ETSIM_EIO, "%s: %s", op->path, strerror(errno));
  ed_profile_t *pr = etsim_calloc(1, sizeof *pr);
  if (!pr || etsim_intern_init(&pr->names)) {
    fclose(fp);
    etsim_free(pr);
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  op->profile = pr;
  char *line = NULL;
  size_t cap = 0, lineno = 0;
  ssize_t len;
  double unit = 1000.0; /* us */
  int rc = 0, rows = 0;
  while ((len = getline(&line, &cap, fp)) >= 0) {
    lineno++;
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
    if (len == 0 || line[0] == '#') continue;
    char *comma = strrchr(line, ',');
    if (!comma) {
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:%zu: expected NAME,TIME", op->path, lineno);
      break;
    }
    *comma = 0;
    char *tv = comma + 1, *end;
    while (*tv == ' ') tv++;
    errno = 0;
    double t = strtod(tv, &end);
    while (*end == ' ') end++;
    if (end == tv || *end || errno || !(t >= 0) || t > 1e15) {
      if (rows == 0 && lineno == 1) {
        /* A header: the time column's name may give the unit. */
        if (strstr(tv, "ns")) unit = 1.0;
        else if (strstr(tv, "ms")) unit = 1e6;
        continue;
      }
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:%zu: '%s' is not a time", op->path, lineno, tv);
      break;
    }
    char *name = line;
    size_t nl = strlen(name);
    if (nl >= 2 && name[0] == '"' && name[nl - 1] == '"') {
      /* "quoted ""CSV"" name" */
      size_t w = 0;
      for (size_t i = 1; i + 1 < nl; i++) {
        if (name[i] == '"' && name[i + 1] == '"') i++;
        name[w++] = name[i];
      }
      name[w] = 0;
      nl = w;
    }
    int64_t id = etsim_intern_put(&pr->names, name, nl);
    if (id < 0 || etsim_grow((void **)&pr->ns, &pr->cap, (size_t)id + 1, sizeof *pr->ns)) {
      rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
      break;
    }
    while (pr->n <= (size_t)id) pr->ns[pr->n++] = UINT64_MAX;
    if (pr->ns[id] != UINT64_MAX) {
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:%zu: '%s' is listed twice", op->path, lineno,
                           name);
      break;
    }
    pr->ns[id] = (uint64_t)(t * unit + 0.5);
    rows++;
  }
  free(line);
  fclose(fp);
  if (!rc && rows == 0)
    rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: no NAME,TIME lines", op->path);
  return rc;
}

/* ------------------------------------------------------------- output */

static int is_file(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  int n = vsnprintf(NULL, 0, f, ap);
  va_end(ap);
  char *s = etsim_malloc((size_t)n + 1);
  if (!s) return NULL;
  va_start(ap, f);
  vsnprintf(s, (size_t)n + 1, f, ap);
  va_end(ap);
  return s;
}

static const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

/* Copy a file (for ranks that share a job in per-rank output when a hard
 * link is not possible). */
static int copy_file(const char *from, const char *to, etsim_error_t *err) {
  FILE *a = fopen(from, "rb"), *b = a ? fopen(to, "wb") : NULL;
  if (!a || !b) {
    if (a) fclose(a);
    return etsim_error_set(err, ETSIM_EIO, "%s: %s", a ? to : from, strerror(errno));
  }
  char buf[1 << 16];
  size_t n;
  int bad = 0;
  while ((n = fread(buf, 1, sizeof buf, a)) > 0)
    if (fwrite(buf, 1, n, b) != n) bad = 1;
  if (ferror(a)) bad = 1;
  fclose(a);
  if (fclose(b)) bad = 1;
  return bad ? etsim_error_set(err, ETSIM_EIO, "%s: write error", to) : 0;
}

/* -------------------------------------------------- checks across ranks */

static int cmp_p2p(const void *x, const void *y) {
  const ed_p2p_t *a = x, *b = y;
  if (a->src != b->src) return a->src < b->src ? -1 : 1;
  if (a->dst != b->dst) return a->dst < b->dst ? -1 : 1;
  if (a->tag != b->tag) return a->tag < b->tag ? -1 : 1;
  if (a->size != b->size) return a->size < b->size ? -1 : 1;
  return 0;
}

/* The first rank seen on a communicator and its sequence there. */
typedef struct {
  size_t rank;
  const ed_pgseq_t *seq;
} pg_ref_t;

static int check_set(const ed_plan_t *p, const ed_jobout_t *jo, const char *out,
                     etsim_error_t *err) {
  /* Collectives: per communicator, every rank that uses it issues the
   * same sequence of (type, size) as the first rank on it.  Each job is
   * compared once (its first rank stands for the others), against the
   * first rank found by name: linear in ranks, where a search of the
   * earlier ranks was quadratic (65,536 ranks of TP pairs: 23 % of an
   * --npus run in strcmp). */
  etsim_intern_t names;
  if (etsim_intern_init(&names)) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  pg_ref_t *ref = NULL;
  size_t n_ref = 0, cap_ref = 0;
  uint8_t *done = etsim_calloc(p->n_jobs + 1, 1);
  int rc = done ? 0 : etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  for (size_t r = 0; r < p->n_ranks && !rc; r++) {
    if (done[p->rank_job[r]]) continue;
    done[p->rank_job[r]] = 1;
    const ed_jobout_t *o = &jo[p->rank_job[r]];
    for (size_t q = 0; q < o->n_seq && !rc; q++) {
      const ed_pgseq_t *s = &o->seq[q];
      int64_t id = etsim_intern_put(&names, s->pg, strlen(s->pg));
      if (id < 0 || etsim_grow((void **)&ref, &cap_ref, (size_t)id + 1, sizeof *ref)) {
        rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
        break;
      }
      while (n_ref <= (size_t)id) ref[n_ref++] = (pg_ref_t){0, NULL};
      const pg_ref_t *f = &ref[id];
      if (!f->seq) {
        ref[id] = (pg_ref_t){r, s};
        continue;
      }
      if (f->seq->count != s->count || f->seq->hash != s->hash)
        rc = etsim_error_set(err, ETSIM_EINVAL,
                             "%s: the edit leaves collectives unmatched: on communicator "
                             "'%s' rank %zu issues %llu collective(s) and rank %zu %llu%s "
                             "(give every rank the same selection)",
                             out, s->pg, f->rank, (unsigned long long)f->seq->count, r,
                             (unsigned long long)s->count,
                             f->seq->count == s->count ? ", of other types or sizes" : "");
    }
  }
  etsim_free(done);
  etsim_free(ref);
  etsim_intern_free(&names);
  if (rc) return rc;
  /* Sends and receives: equal multisets of (src, dst, tag, size). */
  size_t ns = 0, nr = 0;
  for (size_t r = 0; r < p->n_ranks; r++) {
    const ed_jobout_t *o = &jo[p->rank_job[r]];
    for (size_t i = 0; i < o->n_p2p; i++) {
      if (o->p2p[i].send) ns++;
      else nr++;
    }
  }
  if (!ns && !nr) return 0;
  ed_p2p_t *s = etsim_malloc((ns + 1) * sizeof *s), *v = etsim_malloc((nr + 1) * sizeof *v);
  if (!s || !v) {
    etsim_free(s);
    etsim_free(v);
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  size_t a = 0, b = 0;
  for (size_t r = 0; r < p->n_ranks; r++) {
    const ed_jobout_t *o = &jo[p->rank_job[r]];
    for (size_t i = 0; i < o->n_p2p; i++) {
      ed_p2p_t x = o->p2p[i];
      if (x.src == INT64_MIN) x.src = (int64_t)r;
      if (x.dst == INT64_MIN) x.dst = (int64_t)r;
      /* A peer outside the set (one stage's file of a pipeline) is not
       * this set's to match. */
      if (x.src < 0 || x.dst < 0 || x.src >= (int64_t)p->n_ranks || x.dst >= (int64_t)p->n_ranks)
        continue;
      if (x.send) s[a++] = x;
      else v[b++] = x;
    }
  }
  ns = a;
  nr = b;
  etsim_qsort(s, ns, sizeof *s, cmp_p2p);
  etsim_qsort(v, nr, sizeof *v, cmp_p2p);
  size_t i = 0, j = 0;
  rc = 0;
  while ((i < ns || j < nr) && !rc) {
    int c = i >= ns ? 1 : j >= nr ? -1 : cmp_p2p(&s[i], &v[j]);
    if (c == 0) {
      i++;
      j++;
      continue;
    }
    const ed_p2p_t *x = c < 0 ? &s[i] : &v[j];
    rc = etsim_error_set(err, ETSIM_EINVAL,
                         "%s: the edit leaves a %s unmatched: node %llu, %lld -> %lld, tag %lld, "
                         "%lld bytes",
                         out, c < 0 ? "send" : "receive", (unsigned long long)x->id,
                         (long long)x->src, (long long)x->dst, (long long)x->tag,
                         (long long)x->size);
  }
  etsim_free(s);
  etsim_free(v);
  return rc;
}

/* What the deadlock check said: its problem line, and its notes kept for
 * the report. */
typedef struct {
  const char *out;
  etsim_edit_report_t *rep;
  char line[1024];
} dl_sink_t;

static void on_dl_finding(void *user, int severity, const char *line) {
  dl_sink_t *k = user;
  /* The check names the first rank's file, a temporary name here: say the
   * output instead. */
  const char *what = strstr(line, ": ");
  what = what ? what + 2 : line;
  if (severity == ETSIM_CHECK_PROBLEM) {
    if (strncmp(what, "deadlock: ", 10) == 0) what += 10;
    if (!k->line[0]) snprintf(k->line, sizeof k->line, "%s", what);
  } else {
    etsim_edit__note(k->rep, "%s: %s", k->out, what);
  }
}

/*
 * check_set compares each communicator on its own and the messages as
 * multisets; it cannot see an order across communicators (or of sends
 * and receives) in which the ranks wait on each other: an all-reduce on
 * every rank inserted after each collective of a DP x TP set meets a TP
 * all-reduce on one rank and a DP one on another.  So the written set is
 * run through `etsim validate`'s own deadlock check before it is renamed
 * into place.  Only what can wait on another rank costs anything: a set
 * without collectives or messages, or whose ranks all run one file with
 * no messages (they go in lockstep), cannot deadlock across ranks and is
 * not read again; else each written file is read once.  A set whose
 * messages name ranks outside it (one stage of a pipeline, as check_set
 * allows) is not whole, so the check does not apply.
 */
static int check_deadlock(const ed_plan_t *p, const ed_jobout_t *jo, char *const *parts,
                          const char *out, etsim_edit_report_t *rep, etsim_error_t *err) {
  int comm = 0, p2p = 0;
  for (size_t ji = 0; ji < p->n_jobs; ji++) {
    comm |= jo[ji].n_seq > 0;
    for (size_t i = 0; i < jo[ji].n_p2p; i++) {
      const ed_p2p_t *x = &jo[ji].p2p[i];
      int64_t lim = (int64_t)p->n_ranks;
      if ((x->src != INT64_MIN && (x->src < 0 || x->src >= lim)) ||
          (x->dst != INT64_MIN && (x->dst < 0 || x->dst >= lim)))
        return 0; /* a part of a bigger set */
      p2p = 1;
    }
  }
  if (!p2p && (!comm || p->n_jobs < 2)) return 0;
  /* The check runs at most 2^28 nodes over all ranks and says so in a
   * note; a set past that is not loaded only to hear it. */
  uint64_t total = 0;
  for (size_t r = 0; r < p->n_ranks; r++) total += jo[p->rank_job[r]].nodes;
  if (total > ((uint64_t)1 << 28)) {
    etsim_edit__note(rep,
                     "%s: deadlock check skipped: %llu nodes over %zu ranks are more than it runs",
                     out, (unsigned long long)total, p->n_ranks);
    return 0;
  }
  /* The written files as one set, through a manifest next to them (the
   * set loader takes a name): ranks whose files differ only in
   * communicator names and peers share one trace, as sim loads them, so
   * 65,536 TP pairs are a few traces in memory, not one per rank. */
  char *prefix = fmt("%s.check.%ld", out, (long)getpid());
  char *mpath = prefix ? fmt("%s.manifest.json", prefix) : NULL;
  const char **names = etsim_malloc((p->n_jobs + 1) * sizeof *names);
  int rc = 0;
  etsim_et_set_t *set = NULL;
  if (!prefix || !mpath || !names) rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  for (size_t ji = 0; ji < p->n_jobs && !rc; ji++) names[ji] = base_name(parts[ji]);
  if (!rc) rc = etsim_et_manifest_write(prefix, p->n_ranks, names, p->n_jobs, p->rank_job, err);
  if (!rc) {
    rc = etsim_et_set_load(&set, prefix, ETSIM_ET_SET_SHARE_LABELS, err);
    remove(mpath);
  }
  if (!rc) {
    dl_sink_t k = {.out = out, .rep = rep};
    long probs =
        etsim_et_check_deadlock(set, ETSIM_ET_DEPS_DATA | ETSIM_ET_DEPS_CTRL, on_dl_finding, &k);
    if (probs < 0) rc = etsim_error_set(err, (int)probs, "out of memory");
    else if (probs > 0)
      rc = etsim_error_set(err, ETSIM_EDEADLOCK,
                           "%s: nothing written: the edited set would deadlock: %s", out, k.line);
  }
  etsim_et_set_free(set);
  etsim_free(names);
  etsim_free(mpath);
  etsim_free(prefix);
  return rc;
}

/* --------------------------------------------------------------- stages */

/* Remove a temporary folder of ours and everything in it. */
static void remove_tree(const char *dir) {
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *de;
    while ((de = readdir(d))) {
      if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
      char *p = fmt("%s/%s", dir, de->d_name);
      if (p) remove(p);
      etsim_free(p);
    }
    closedir(d);
  }
  rmdir(dir);
}

/* Per-rank files: ranks that share a job get a hard link (or a copy) of
 * its file; a stale manifest or rank files past the new count go. */
static int place_rank_files(const ed_plan_t *p, char **finals, const char *output, const char *ext,
                            etsim_edit_report_t *rep, etsim_error_t *err) {
  int rc = 0;
  for (size_t r = 0; r < p->n_ranks && !rc; r++) {
    const ed_job_t *j = &p->jobs[p->rank_job[r]];
    if (j->first_rank == r) continue;
    char *path = fmt("%s.%zu%s", output, r, ext);
    if (!path) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    remove(path);
    if (link(finals[j->out_file], path) != 0) rc = copy_file(finals[j->out_file], path, err);
    etsim_free(path);
    rep->files_out++;
  }
  if (rc) return rc;
  /* A manifest from an earlier run would shadow the rank files. */
  char *mp = fmt("%s.manifest.json", output);
  if (mp) remove(mp);
  etsim_free(mp);
  /* Rank files past the new rank count would be read as more ranks. */
  for (size_t r = p->n_ranks;; r++) {
    char *stale = fmt("%s.%zu.et", output, r), *stale_gz = fmt("%s.%zu.et.gz", output, r);
    int any = stale && is_file(stale), any_gz = stale_gz && is_file(stale_gz);
    if (any) remove(stale);
    if (any_gz) remove(stale_gz);
    etsim_free(stale);
    etsim_free(stale_gz);
    if (!any && !any_gz) break;
  }
  return 0;
}

static int place_manifest(const ed_plan_t *p, char **finals, const char *output,
                          etsim_error_t *err) {
  const char **names = etsim_malloc((p->n_jobs + 1) * sizeof *names);
  if (!names) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  for (size_t ji = 0; ji < p->n_jobs; ji++) names[ji] = base_name(finals[ji]);
  int rc = etsim_et_manifest_write(output, p->n_ranks, names, p->n_jobs, p->rank_job, err);
  etsim_free(names);
  return rc;
}

/* PREFIX.comm_group.json, or X.comm_group.json next to a file X.et. */
static int place_groups(const ed_plan_t *p, const char *output, int single, etsim_error_t *err) {
  char *gp;
  int rc = etsim_et_comm_groups_path(output, single, &gp, err);
  if (rc) return rc;
  rc = etsim_edit__groups_write(&p->groups, gp, err);
  etsim_free(gp);
  return rc;
}

/* Run ops [lo, hi) from `input` to `output`; `final` says whether this
 * is the user's output (else a temporary manifest set). */
static int run_stage(etsim_edit_t *e, size_t lo, size_t hi, const char *input, const char *output,
                     const char *groups_path, int final, etsim_edit_report_t *rep,
                     etsim_error_t *err) {
  ed_plan_t p;
  int rc = etsim_edit__plan(e, lo, hi, input, groups_path, &p, rep, err);
  if (rc) {
    etsim_edit__plan_free(&p, e->n_ops);
    return rc;
  }
  /* Where each job goes. */
  int single =
      final && p.input_single && p.n_ranks == 1 && e->opts.out_format == ETSIM_EDIT_OUT_AUTO;
  int format = !final                                      ? ETSIM_EDIT_OUT_MANIFEST
               : e->opts.out_format != ETSIM_EDIT_OUT_AUTO ? e->opts.out_format
               : p.input_format == ETSIM_EDIT_OUT_ET       ? ETSIM_EDIT_OUT_ET
                                                           : ETSIM_EDIT_OUT_MANIFEST;
  if (!single && strcmp(output, "-") == 0) {
    size_t nr = p.n_ranks;
    etsim_edit__plan_free(&p, e->n_ops);
    return etsim_error_set(err, ETSIM_EINVAL,
                           "-o -: the result is a set of %zu rank(s); standard output takes one "
                           "file",
                           nr);
  }
  const char *ext = e->opts.gzip ? ".et.gz" : ".et";
  size_t renamed = 0; /* trace files renamed into place */
  char **finals = etsim_calloc(p.n_jobs + 1, sizeof *finals);
  char **parts = etsim_calloc(p.n_jobs + 1, sizeof *parts);
  ed_jobout_t *jo = etsim_calloc(p.n_jobs + 1, sizeof *jo);
  if (!finals || !parts || !jo) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto done;
  }
  for (size_t ji = 0; ji < p.n_jobs && !rc; ji++) {
    if (single) finals[ji] = etsim_strdup(output);
    else if (format == ETSIM_EDIT_OUT_MANIFEST) finals[ji] = fmt("%s.c%zu%s", output, ji, ext);
    else finals[ji] = fmt("%s.%zu%s", output, p.jobs[ji].first_rank, ext);
    parts[ji] = strcmp(output, "-") == 0 ? etsim_strdup("-")
                                         : fmt("%s.part.%ld", finals[ji], (long)getpid());
    if (!finals[ji] || !parts[ji]) rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    p.jobs[ji].out_file = ji;
  }
  for (size_t ji = 0; ji < p.n_jobs && !rc; ji++) {
    rc = etsim_edit__job_run(e, &p, lo, hi, ji, parts[ji], &jo[ji], rep, err);
    if (!rc) {
      rep->files_out++;
      rep->nodes_out += jo[ji].nodes;
      rep->bytes_out += jo[ji].bytes;
    }
  }
  if (!rc) rc = check_set(&p, jo, output, err);
  if (!rc && final && strcmp(output, "-") != 0)
    rc = check_deadlock(&p, jo, parts, output, rep, err);
  if (rc || strcmp(output, "-") == 0) goto done;
  /* Everything is written: into place, but never over a file this run read
   * (the inputs are known by now: the reader registered each it opened). */
  for (size_t ji = 0; ji < p.n_jobs && !rc; ji++) rc = etsim_output_check(finals[ji], err);
  for (size_t ji = 0; ji < p.n_jobs && !rc; ji++)
    if (rename(parts[ji], finals[ji]) != 0)
      rc = etsim_error_set(err, ETSIM_EIO, "%s: cannot rename into place: %s", finals[ji],
                           strerror(errno));
    else {
      etsim_free(parts[ji]);
      parts[ji] = NULL;
      renamed = ji + 1;
    }
  if (rc) goto done;
  if (format == ETSIM_EDIT_OUT_ET && !single)
    rc = place_rank_files(&p, finals, output, ext, rep, err);
  else if (!single) rc = place_manifest(&p, finals, output, err);
  if (!rc && (p.had_groups || p.groups.n)) rc = place_groups(&p, output, single, err);
done:
  if (rc) {
    for (size_t ji = 0; ji < p.n_jobs; ji++)
      if (parts && parts[ji] && strcmp(parts[ji], "-") != 0) remove(parts[ji]);
    /* A set whose manifest, rank files or groups could not be placed is
     * not left half there: its trace files go too. */
    for (size_t ji = 0; ji < renamed; ji++) remove(finals[ji]);
  }
  for (size_t ji = 0; ji < p.n_jobs; ji++) {
    if (finals) etsim_free(finals[ji]);
    if (parts) etsim_free(parts[ji]);
    if (jo) etsim_edit__jobout_free(&jo[ji]);
  }
  etsim_free(finals);
  etsim_free(parts);
  etsim_free(jo);
  etsim_edit__plan_free(&p, e->n_ops);
  return rc;
}

/* Notes that say the same of many files ("FILE: message") are said once,
 * with a count: a 256-rank set would otherwise repeat each 256 times. */
static void collapse_notes(etsim_edit_report_t *rep) {
  size_t w = 0;
  size_t *count = etsim_calloc(rep->n_notes + 1, sizeof *count);
  if (!count) return;
  for (size_t i = 0; i < rep->n_notes; i++) {
    const char *mi = strstr(rep->notes[i], ": ");
    size_t k = 0;
    for (; mi && k < w; k++) {
      const char *mk = strstr(rep->notes[k], ": ");
      if (mk && strcmp(mi, mk) == 0) break;
    }
    if (mi && k < w) {
      count[k]++;
      etsim_free(rep->notes[i]);
      continue;
    }
    rep->notes[w++] = rep->notes[i];
  }
  rep->n_notes = w;
  for (size_t k = 0; k < w; k++)
    if (count[k]) {
      char *n = fmt("%s (and %zu more file(s) alike)", rep->notes[k], count[k]);
      if (n) {
        etsim_free(rep->notes[k]);
        rep->notes[k] = n;
      }
    }
  etsim_free(count);
}

int etsim_edit_run(etsim_edit_t *e, const char *input, const char *output, etsim_edit_report_t *rep,
                   etsim_error_t *err) {
  etsim_edit_report_t local = {0};
  if (!rep) rep = &local;
  memset(rep, 0, sizeof *rep);
  int rc = 0;
  for (size_t k = 0; k < e->n_ops && !rc; k++)
    if (e->ops[k].kind == ED_PROFILE && !e->ops[k].profile) rc = load_profile(&e->ops[k], err);
  if (rc) goto out;
  /* Stages: a retarget after the first op starts one. */
  size_t lo = 0, ranks_in = 0, files_in = 0;
  char *cur_in = etsim_strdup(input), *tmpdir = NULL;
  const char *groups = e->opts.comm_group;
  if (!cur_in) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto out;
  }
  for (size_t stage = 0;; stage++) {
    size_t hi = lo + 1;
    while (hi < e->n_ops && e->ops[hi].kind != ED_DP && e->ops[hi].kind != ED_NPUS) hi++;
    if (e->n_ops == 0) hi = 0;
    int final = hi >= e->n_ops;
    char *out = NULL;
    if (final) {
      out = etsim_strdup(output);
    } else {
      if (!tmpdir) {
        const char *slash = strrchr(output, '/');
        char *t = slash ? fmt("%.*s/.etsim-edit-XXXXXX", (int)(slash - output), output)
                        : fmt(".etsim-edit-XXXXXX");
        if (!t || !mkdtemp(t)) {
          rc = etsim_error_set(err, ETSIM_EIO, "cannot create a temporary folder next to %s: %s",
                               output, t ? strerror(errno) : "out of memory");
          etsim_free(t);
          break;
        }
        tmpdir = t;
      }
      out = fmt("%s/stage%zu", tmpdir, stage);
    }
    if (!out) {
      rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
      break;
    }
    size_t files_out = rep->files_out, notes0 = rep->n_notes;
    uint64_t nodes_out = rep->nodes_out, bytes_out = rep->bytes_out, nodes_in = rep->nodes_in;
    rc = run_stage(e, lo, hi, cur_in, out, groups, final, rep, err);
    if (!final) {
      /* Temporary files do not count as written. */
      rep->files_out = files_out;
      rep->nodes_out = nodes_out;
      rep->bytes_out = bytes_out;
    }
    if (stage > 0) {
      rep->nodes_in = nodes_in;
      /* Name the intermediate set by what it is, not by its temporary path. */
      char *label = fmt("%s (after operations 1-%zu)", input, lo);
      char *prefix = fmt("%s/stage%zu", tmpdir, stage - 1);
      for (size_t i = notes0; label && prefix && i < rep->n_notes; i++) {
        size_t pl = strlen(prefix);
        if (strncmp(rep->notes[i], prefix, pl) != 0) continue;
        const char *rest = strstr(rep->notes[i] + pl, ": ");
        char *n = rest ? fmt("%s%s", label, rest) : NULL;
        if (n) {
          etsim_free(rep->notes[i]);
          rep->notes[i] = n;
        }
      }
      etsim_free(label);
      etsim_free(prefix);
    }
    if (stage == 0) {
      ranks_in = rep->ranks_in;
      files_in = rep->files_in;
    }
    rep->ranks_in = ranks_in;
    rep->files_in = files_in;
    etsim_free(cur_in);
    cur_in = out;
    groups = NULL; /* later stages read the groups the stage wrote */
    if (rc || final) break;
    lo = hi;
  }
  etsim_free(cur_in);
  if (tmpdir) remove_tree(tmpdir);
  etsim_free(tmpdir);
  collapse_notes(rep);
out:
  /* On failure nothing was written, and nothing is reported either. */
  if (rep == &local || rc) etsim_edit_report_free(rep);
  return rc;
}
