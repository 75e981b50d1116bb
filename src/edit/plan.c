/*
 * plan.c — the set level of an edit: which output ranks there are and
 * what each one is made of.
 *
 * Every rank starts as one segment: its input file, entering the chain at
 * the stage's first op.  The rank operations then change the list of
 * ranks in op order — --ranks keeps some, --remap-ranks permutes,
 * --beside appends another set's ranks (their segments enter at the
 * --beside itself, which renames their communicators and peers),
 * --concat appends a segment to every rank, --repeat copies every rank's
 * segments — and keep the communicator groups in step.  Ranks whose
 * segments and parameters end up equal share a job, so a manifest whose
 * 16,384 ranks fall into a few classes is edited a few times, not 16,384.
 */
#include "edit_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct {
  ed_seg_t *segs;
  size_t n_segs;
  int64_t *param;
} rdesc_t;

static int is_file(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static void rdesc_free(rdesc_t *d, size_t n_ops) {
  (void)n_ops;
  for (size_t i = 0; i < d->n_segs; i++) etsim_free(d->segs[i].copy);
  etsim_free(d->segs);
  etsim_free(d->param);
  memset(d, 0, sizeof *d);
}

static int add_file(ed_plan_t *p, const char *path, int is_b, uint32_t *out) {
  for (size_t i = 0; i < p->n_files; i++)
    if (strcmp(p->files[i].path, path) == 0 && p->files[i].is_b == is_b) {
      *out = (uint32_t)i;
      return 0;
    }
  if (etsim_grow((void **)&p->files, &p->cap_files, p->n_files + 1, sizeof *p->files))
    return ETSIM_ENOMEM;
  if (!(p->files[p->n_files].path = etsim_strdup(path))) return ETSIM_ENOMEM;
  p->files[p->n_files].is_b = is_b;
  *out = (uint32_t)p->n_files++;
  return 0;
}

static int seg_init(ed_seg_t *s, uint32_t file, uint32_t entry, uint32_t created_by, size_t n_ops) {
  s->file = file;
  s->entry = entry;
  s->created_by = created_by;
  s->copy = etsim_calloc(n_ops + 1, sizeof *s->copy);
  return s->copy ? 0 : ETSIM_ENOMEM;
}

static int rdesc_new(rdesc_t *d, uint32_t file, uint32_t entry, uint32_t created_by, size_t n_ops) {
  memset(d, 0, sizeof *d);
  d->segs = etsim_calloc(1, sizeof *d->segs);
  d->param = etsim_malloc((n_ops + 1) * sizeof *d->param);
  if (!d->segs || !d->param) return ETSIM_ENOMEM;
  for (size_t k = 0; k <= n_ops; k++) d->param[k] = -1;
  d->n_segs = 1;
  return seg_init(&d->segs[0], file, entry, created_by, n_ops);
}

static int rdesc_copy(rdesc_t *dst, const rdesc_t *src, size_t n_ops) {
  memset(dst, 0, sizeof *dst);
  dst->segs = etsim_calloc(src->n_segs ? src->n_segs : 1, sizeof *dst->segs);
  dst->param = etsim_malloc((n_ops + 1) * sizeof *dst->param);
  if (!dst->segs || !dst->param) return ETSIM_ENOMEM;
  memcpy(dst->param, src->param, (n_ops + 1) * sizeof *dst->param);
  for (size_t i = 0; i < src->n_segs; i++) {
    dst->segs[i] = src->segs[i];
    dst->segs[i].copy = etsim_malloc((n_ops + 1) * sizeof *dst->segs[i].copy);
    if (!dst->segs[i].copy) return ETSIM_ENOMEM;
    memcpy(dst->segs[i].copy, src->segs[i].copy, (n_ops + 1) * sizeof *dst->segs[i].copy);
    dst->n_segs = i + 1;
  }
  return 0;
}

static int rdesc_add_seg(rdesc_t *d, const ed_seg_t *s, size_t n_ops) {
  ed_seg_t *n = etsim_realloc(d->segs, (d->n_segs + 1) * sizeof *n);
  if (!n) return ETSIM_ENOMEM;
  d->segs = n;
  ed_seg_t *t = &d->segs[d->n_segs];
  *t = *s;
  t->copy = etsim_malloc((n_ops + 1) * sizeof *t->copy);
  if (!t->copy) return ETSIM_ENOMEM;
  memcpy(t->copy, s->copy, (n_ops + 1) * sizeof *t->copy);
  d->n_segs++;
  return 0;
}

/* The communicator-group file that goes with a set named `name`; NULL when
 * out of memory. */
static char *default_groups(const char *name) {
  char *p = NULL;
  return etsim_et_comm_groups_path(name, 1, &p, NULL) ? NULL : p;
}

/* A set's files and groups, for --concat and --beside. */
typedef struct {
  char **paths;
  size_t n_paths, n_ranks;
  uint32_t *rank_file;
  ed_groups_t groups;
} bset_t;

static void bset_free(bset_t *b) {
  etsim_et_free_paths(b->paths, b->n_paths);
  etsim_free(b->rank_file);
  etsim_edit__groups_free(&b->groups);
  memset(b, 0, sizeof *b);
}

static int bset_load(bset_t *b, const char *name, etsim_error_t *err) {
  memset(b, 0, sizeof *b);
  int rc = etsim_et_set_resolve(name, &b->paths, &b->n_paths, &b->rank_file, &b->n_ranks, err);
  if (rc) return rc;
  char *gp = default_groups(name);
  if (!gp) rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  else if (is_file(gp)) rc = etsim_edit__groups_load(&b->groups, gp, b->n_ranks, err);
  etsim_free(gp);
  if (rc) bset_free(b);
  return rc;
}

/* "3,2,1,0" or a file with one rank a line. */
static int read_map(const char *arg, uint32_t **out, size_t *n, etsim_error_t *err) {
  if (!is_file(arg)) return etsim_edit__parse_ranks(arg, out, n, "--remap-ranks", err);
  int rc0 = etsim_input_check(arg, err);
  if (rc0) return rc0;
  FILE *fp = fopen(arg, "r");
  if (!fp) return etsim_error_set(err, ETSIM_EIO, "%s: %s", arg, strerror(errno));
  uint32_t *v = NULL;
  size_t cnt = 0, cap = 0, line = 0;
  char buf[128];
  int rc = 0;
  while (fgets(buf, sizeof buf, fp)) {
    line++;
    char *s = buf;
    while (*s == ' ' || *s == '\t') s++;
    if (*s == '\n' || *s == '#' || !*s) continue;
    char *end;
    errno = 0;
    unsigned long r = strtoul(s, &end, 10);
    while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n') end++;
    if (end == s || *end || errno || r >= ETSIM_ET_MAX_RANKS) {
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:%zu: expected one rank number", arg, line);
      break;
    }
    if (etsim_grow((void **)&v, &cap, cnt + 1, sizeof *v)) {
      rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
      break;
    }
    v[cnt++] = (uint32_t)r;
  }
  fclose(fp);
  if (rc) {
    etsim_free(v);
    return rc;
  }
  *out = v;
  *n = cnt;
  return 0;
}

/* Keep/permute ranks: new rank i is old rank list[i].  Groups shrink to
 * the kept ranks (renumbered); a group left empty goes. */
static int reorder(ed_plan_t *p, rdesc_t **pr, size_t *pn, const uint32_t *list, size_t n_new,
                   size_t k, size_t n_ops, etsim_error_t *err) {
  rdesc_t *r = *pr;
  size_t n = *pn;
  ed_rankop_t *ro = &p->rank[k];
  ro->n_before = n;
  ro->n_after = n_new;
  ro->peer = etsim_malloc((n ? n : 1) * sizeof *ro->peer);
  rdesc_t *nr = etsim_calloc(n_new ? n_new : 1, sizeof *nr);
  if (!ro->peer || !nr) {
    etsim_free(nr);
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < n; i++) ro->peer[i] = -1;
  for (size_t i = 0; i < n_new; i++) {
    if (list[i] >= n) {
      etsim_free(nr);
      return etsim_error_set(err, ETSIM_EINVAL, "--%s: rank %u is not in the %zu-rank set",
                             p->rank[k].kind == ED_RANKS ? "ranks" : "remap-ranks", list[i], n);
    }
    if (ro->peer[list[i]] >= 0) {
      etsim_free(nr);
      return etsim_error_set(err, ETSIM_EINVAL, "--%s: rank %u is listed twice",
                             p->rank[k].kind == ED_RANKS ? "ranks" : "remap-ranks", list[i]);
    }
    ro->peer[list[i]] = (int32_t)i;
  }
  for (size_t i = 0; i < n_new; i++) {
    int rc = rdesc_copy(&nr[i], &r[list[i]], n_ops);
    if (rc) {
      for (size_t q = 0; q <= i; q++) rdesc_free(&nr[q], n_ops);
      etsim_free(nr);
      return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    }
  }
  for (size_t i = 0; i < n; i++) rdesc_free(&r[i], n_ops);
  etsim_free(r);
  *pr = nr;
  *pn = n_new;
  /* The groups, renumbered; ids stay. */
  ed_groups_t ng = {0};
  uint32_t *mem = etsim_malloc((n_new ? n_new : 1) * sizeof *mem);
  if (!mem) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  ro->map[0].world_to = UINT32_MAX;
  for (size_t g = 0; g < p->groups.n; g++) {
    size_t m = 0;
    for (size_t q = p->groups.off[g]; q < p->groups.off[g + 1]; q++) {
      int32_t to = ro->peer[p->groups.mem[q]];
      if (to >= 0) mem[m++] = (uint32_t)to;
    }
    uint32_t got;
    if (m && etsim_edit__groups_add(&ng, p->groups.id[g], mem, m, &got)) {
      etsim_free(mem);
      etsim_edit__groups_free(&ng);
      return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    }
  }
  etsim_free(mem);
  etsim_edit__groups_free(&p->groups);
  p->groups = ng;
  return 0;
}

/* Bring set b's groups into this set: members shifted by `shift`, ids
 * reused for equal member sets, else new; b's world becomes the group of
 * its ranks when world_group is set. */
static int import_groups(ed_plan_t *p, const bset_t *b, size_t shift, ed_pgmap_t *m,
                         etsim_error_t *err) {
  uint32_t *mem = etsim_malloc((b->n_ranks + 1) * sizeof *mem);
  if (!mem) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  for (size_t g = 0; g < b->groups.n; g++) {
    size_t n = 0;
    for (size_t q = b->groups.off[g]; q < b->groups.off[g + 1]; q++)
      mem[n++] = b->groups.mem[q] + (uint32_t)shift;
    uint32_t got;
    if (etsim_edit__groups_add(&p->groups, UINT32_MAX, mem, n, &got) ||
        etsim_edit__pgmap_put(m, b->groups.id[g], got)) {
      etsim_free(mem);
      return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    }
  }
  etsim_free(mem);
  etsim_edit__pgmap_sort(m);
  return 0;
}

static int range_group(ed_plan_t *p, size_t lo, size_t n, uint32_t *out) {
  uint32_t *mem = etsim_malloc((n ? n : 1) * sizeof *mem);
  if (!mem) return ETSIM_ENOMEM;
  for (size_t i = 0; i < n; i++) mem[i] = (uint32_t)(lo + i);
  int rc = etsim_edit__groups_add(&p->groups, UINT32_MAX, mem, n, out);
  etsim_free(mem);
  return rc;
}

/* Ranks with equal segments and parameters share a job. */
static uint64_t rdesc_hash(const rdesc_t *d, size_t n_ops) {
  uint64_t h = etsim_hash_u64(d->n_segs + 1);
  for (size_t i = 0; i < d->n_segs; i++) {
    const ed_seg_t *s = &d->segs[i];
    h = etsim_hash_u64(h ^ ((uint64_t)s->file << 32 | s->entry)) + s->created_by;
    h ^= etsim_hash_bytes(s->copy, (n_ops + 1) * sizeof *s->copy);
  }
  return h ^ etsim_hash_bytes(d->param, (n_ops + 1) * sizeof *d->param);
}

static int rdesc_equal(const rdesc_t *a, const ed_job_t *j, size_t n_ops) {
  if (a->n_segs != j->n_segs || memcmp(a->param, j->param, (n_ops + 1) * sizeof *a->param))
    return 0;
  for (size_t i = 0; i < a->n_segs; i++) {
    const ed_seg_t *x = &a->segs[i], *y = &j->segs[i];
    if (x->file != y->file || x->entry != y->entry || x->created_by != y->created_by ||
        memcmp(x->copy, y->copy, (n_ops + 1) * sizeof *x->copy))
      return 0;
  }
  return 1;
}

static int make_jobs(ed_plan_t *p, rdesc_t *r, size_t n, size_t n_ops, etsim_error_t *err) {
  p->rank_job = etsim_malloc((n ? n : 1) * sizeof *p->rank_job);
  if (!p->rank_job) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  p->n_ranks = n;
  etsim_u64map_t by;
  etsim_u64map_init(&by);
  for (size_t i = 0; i < n; i++) {
    uint64_t h = rdesc_hash(&r[i], n_ops);
    uint32_t jx;
    if (etsim_u64map_get(&by, h, &jx) && rdesc_equal(&r[i], &p->jobs[jx], n_ops)) {
      p->rank_job[i] = jx;
      continue;
    }
    if (etsim_grow((void **)&p->jobs, &p->cap_jobs, p->n_jobs + 1, sizeof *p->jobs) ||
        etsim_u64map_put(&by, h, (uint32_t)p->n_jobs, NULL) < 0) {
      etsim_u64map_free(&by);
      return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    }
    ed_job_t *j = &p->jobs[p->n_jobs];
    /* The job takes the descriptor's arrays. */
    j->segs = r[i].segs;
    j->n_segs = r[i].n_segs;
    j->param = r[i].param;
    j->first_rank = i;
    j->out_file = 0;
    r[i].segs = NULL;
    r[i].param = NULL;
    r[i].n_segs = 0;
    p->rank_job[i] = (uint32_t)p->n_jobs++;
  }
  etsim_u64map_free(&by);
  return 0;
}

void etsim_edit__plan_free(ed_plan_t *p, size_t n_ops) {
  for (size_t i = 0; i < p->n_files; i++) etsim_free(p->files[i].path);
  etsim_free(p->files);
  for (size_t i = 0; i < p->n_jobs; i++) {
    for (size_t s = 0; s < p->jobs[i].n_segs; s++) etsim_free(p->jobs[i].segs[s].copy);
    etsim_free(p->jobs[i].segs);
    etsim_free(p->jobs[i].param);
  }
  etsim_free(p->jobs);
  etsim_free(p->rank_job);
  etsim_edit__groups_free(&p->groups);
  for (size_t k = 0; p->rank && k < n_ops; k++) {
    ed_rankop_t *ro = &p->rank[k];
    etsim_free(ro->peer);
    etsim_edit__pgmap_free(&ro->map[0]);
    etsim_edit__pgmap_free(&ro->map[1]);
    if (ro->have_dp) {
      etsim_free(ro->dp.cls);
      etsim_free(ro->dp.rep);
      etsim_free(ro->dp.cls_base);
      etsim_free(ro->dp.span_new);
      etsim_edit__groups_free(&ro->dp.old);
    }
  }
  etsim_free(p->rank);
  memset(p, 0, sizeof *p);
}

/* The ranks while the rank operations run. */
typedef struct {
  ed_plan_t *p;
  rdesc_t *r;
  size_t n, n_ops;
  etsim_error_t *err;
} planner_t;

static int nomem(planner_t *P) { return etsim_error_set(P->err, ETSIM_ENOMEM, "out of memory"); }

static int plan_remap(planner_t *P, const ed_op_t *op, size_t k) {
  uint32_t *map = NULL;
  size_t nm = 0;
  int rc = read_map(op->path, &map, &nm, P->err);
  if (rc) return rc;
  if (nm != P->n)
    rc = etsim_error_set(P->err, ETSIM_EINVAL,
                         "--remap-ranks: %zu entries for a %zu-rank set (a permutation of 0..%zu "
                         "is needed)",
                         nm, P->n, P->n ? P->n - 1 : 0);
  else rc = reorder(P->p, &P->r, &P->n, map, nm, k, P->n_ops, P->err);
  etsim_free(map);
  return rc;
}

/* Another set's ranks after these: both worlds become groups, b's groups
 * and peers move past ours. */
static int plan_beside(planner_t *P, const ed_op_t *op, size_t k) {
  ed_plan_t *p = P->p;
  ed_rankop_t *ro = &p->rank[k];
  bset_t b;
  int rc = bset_load(&b, op->path, P->err);
  if (rc) return rc;
  size_t na = P->n, nb = b.n_ranks;
  uint32_t wa, wb;
  if (range_group(p, 0, na, &wa) || range_group(p, na, nb, &wb)) {
    bset_free(&b);
    return nomem(P);
  }
  ro->map[0].world_to = wa;
  ro->map[1].world_to = wb;
  ro->b_offset = na;
  if ((rc = import_groups(p, &b, na, &ro->map[1], P->err))) {
    bset_free(&b);
    return rc;
  }
  rdesc_t *nr = etsim_realloc(P->r, (na + nb) * sizeof *nr);
  if (!nr) {
    bset_free(&b);
    return nomem(P);
  }
  P->r = nr;
  for (size_t i = 0; i < na; i++) P->r[i].param[k] = 0;
  for (size_t i = 0; i < nb; i++) {
    uint32_t f;
    if (add_file(p, b.paths[b.rank_file[i]], 1, &f) ||
        rdesc_new(&P->r[na + i], f, (uint32_t)k, (uint32_t)k, P->n_ops)) {
      P->n = na + i + 1;
      bset_free(&b);
      return nomem(P);
    }
    P->r[na + i].param[k] = 1;
  }
  P->n = na + nb;
  ro->n_after = P->n;
  p->had_groups = 1;
  bset_free(&b);
  return 0;
}

/* Another set after every rank's segments (one file: after every rank). */
static int plan_concat(planner_t *P, const ed_op_t *op, size_t k) {
  ed_plan_t *p = P->p;
  bset_t b;
  int rc = bset_load(&b, op->path, P->err);
  if (rc) return rc;
  if (b.n_ranks != P->n && b.n_ranks != 1) {
    rc = etsim_error_set(P->err, ETSIM_EINVAL,
                         "--concat %s: %zu ranks cannot follow %zu (give a set of %zu ranks, or "
                         "one file for all)",
                         op->path, b.n_ranks, P->n, P->n);
    bset_free(&b);
    return rc;
  }
  if ((rc = import_groups(p, &b, 0, &p->rank[k].map[1], P->err))) {
    bset_free(&b);
    return rc;
  }
  if (b.groups.n) p->had_groups = 1;
  for (size_t i = 0; i < P->n && !rc; i++) {
    uint32_t f;
    ed_seg_t s = {0};
    if (add_file(p, b.paths[b.rank_file[b.n_ranks == 1 ? 0 : i]], 1, &f) ||
        seg_init(&s, f, (uint32_t)k, (uint32_t)k, P->n_ops) ||
        rdesc_add_seg(&P->r[i], &s, P->n_ops))
      rc = nomem(P);
    etsim_free(s.copy);
  }
  bset_free(&b);
  return rc;
}

/* Every rank's segments again, n - 1 times, each copy numbered. */
static int plan_repeat(planner_t *P, const ed_op_t *op, size_t k) {
  for (size_t i = 0; i < P->n; i++) {
    rdesc_t *d = &P->r[i];
    size_t base = d->n_segs;
    for (uint64_t c = 1; c < op->n; c++)
      for (size_t s = 0; s < base; s++) {
        ed_seg_t t = d->segs[s];
        if (rdesc_add_seg(d, &t, P->n_ops)) return nomem(P);
        d->segs[d->n_segs - 1].copy[k] = (uint32_t)c;
      }
    if (d->n_segs > 65535)
      return etsim_error_set(P->err, ETSIM_ERANGE, "--repeat: more than 65,535 pieces per rank");
  }
  return 0;
}

/* The stage's first ranks: the input's, or a retarget's. */
static int plan_start(planner_t *P, etsim_edit_t *e, size_t lo, char **paths, size_t n_paths,
                      const uint32_t *rank_file, etsim_edit_report_t *rep) {
  ed_plan_t *p = P->p;
  size_t n_in = P->n, nn = n_in;
  uint32_t *tmpl = NULL;
  int64_t *jp = NULL;
  if (lo < e->n_ops && (e->ops[lo].kind == ED_DP || e->ops[lo].kind == ED_NPUS)) {
    /* A retarget re-derives the ranks from the input's structure. */
    int rc = etsim_edit__retarget(e, lo, p, paths, n_paths, rank_file, n_in, &tmpl, &jp, &nn, rep,
                                  P->err);
    if (rc) return rc;
    p->rank[lo].n_before = n_in;
    p->rank[lo].n_after = nn;
  }
  P->n = 0;
  P->r = etsim_calloc(nn ? nn : 1, sizeof *P->r);
  int rc = P->r ? 0 : nomem(P);
  for (size_t i = 0; i < nn && !rc; i++) {
    P->n = i + 1; /* freed by the caller, built or not */
    if (rdesc_new(&P->r[i], rank_file[tmpl ? tmpl[i] : i], (uint32_t)lo, UINT32_MAX, P->n_ops))
      rc = nomem(P);
    else if (jp) P->r[i].param[lo] = jp[i];
  }
  etsim_free(tmpl);
  etsim_free(jp);
  return rc;
}

/* What the input is, its groups, its files. */
static int plan_input(ed_plan_t *p, etsim_edit_t *e, const char *input, const char *groups_path,
                      char **paths, size_t n_paths, size_t n, etsim_error_t *err) {
  p->input_single = is_file(input);
  char *mp = etsim_malloc(strlen(input) + 32);
  if (!mp) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  sprintf(mp, "%s.manifest.json", input);
  p->input_format = p->input_single ? ETSIM_EDIT_OUT_AUTO
                    : is_file(mp)   ? ETSIM_EDIT_OUT_MANIFEST
                                    : ETSIM_EDIT_OUT_ET;
  etsim_free(mp);
  p->rank = etsim_calloc(e->n_ops + 1, sizeof *p->rank);
  if (!p->rank) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  for (size_t k = 0; k < e->n_ops; k++) {
    p->rank[k].kind = e->ops[k].kind;
    p->rank[k].map[0].world_to = p->rank[k].map[1].world_to = UINT32_MAX;
  }
  char *gp = groups_path ? etsim_strdup(groups_path) : default_groups(input);
  if (!gp) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  int rc = 0;
  if (groups_path || is_file(gp)) {
    rc = etsim_edit__groups_load(&p->groups, gp, n, err);
    p->had_groups = rc == 0;
  }
  etsim_free(gp);
  for (size_t i = 0; i < n_paths && !rc; i++) {
    uint32_t f;
    if (add_file(p, paths[i], 0, &f)) rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  return rc;
}

int etsim_edit__plan(etsim_edit_t *e, size_t lo, size_t hi, const char *input,
                     const char *groups_path, ed_plan_t *p, etsim_edit_report_t *rep,
                     etsim_error_t *err) {
  memset(p, 0, sizeof *p);
  planner_t P = {.p = p, .n_ops = e->n_ops, .err = err};
  char **paths = NULL;
  uint32_t *rank_file = NULL;
  size_t n_paths = 0;
  int rc = etsim_et_set_resolve(input, &paths, &n_paths, &rank_file, &P.n, err);
  if (rc) return rc;
  rep->ranks_in = P.n;
  rep->files_in = n_paths;
  if ((rc = plan_input(p, e, input, groups_path, paths, n_paths, P.n, err))) goto done;
  if ((rc = plan_start(&P, e, lo, paths, n_paths, rank_file, rep))) goto done;
  size_t k0 = lo < hi && (e->ops[lo].kind == ED_DP || e->ops[lo].kind == ED_NPUS) ? lo + 1 : lo;
  for (size_t k = k0; k < hi && !rc; k++) {
    const ed_op_t *op = &e->ops[k];
    p->rank[k].n_before = p->rank[k].n_after = P.n;
    switch (op->kind) {
      case ED_RANKS:
        rc = reorder(p, &P.r, &P.n, op->list, op->n_list, k, P.n_ops, err);
        break;
      case ED_REMAP:
        rc = plan_remap(&P, op, k);
        break;
      case ED_BESIDE:
        rc = plan_beside(&P, op, k);
        break;
      case ED_CONCAT:
        rc = plan_concat(&P, op, k);
        break;
      case ED_REPEAT:
        rc = plan_repeat(&P, op, k);
        break;
      case ED_DP:
      case ED_NPUS:
        rc = etsim_error_set(err, ETSIM_EINTERNAL, "a retarget must start a stage");
        break;
      default:
        break;
    }
  }
  if (!rc) rc = make_jobs(p, P.r, P.n, P.n_ops, err);
  if (!rc) rep->ranks_out = P.n;
done:
  if (P.r) {
    for (size_t i = 0; i < P.n; i++) rdesc_free(&P.r[i], P.n_ops);
    etsim_free(P.r);
  }
  etsim_et_free_paths(paths, n_paths);
  etsim_free(rank_file);
  return rc;
}
