/*
 * jobs.c — several jobs on one network (docs/sim.md, "Several jobs"):
 * placements (lists and packing policies) and the one rank set the
 * simulator runs, in which NPU g runs its job's local rank, with each
 * job's communicators in NPU ids.  The engine and the network backends do
 * the rest: every message of every job goes through the same links.
 */
#include "sim_int.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* splitmix64, as whatif.c's --npu-speed lognormal (docs/sim.md). */
static uint64_t splitmix64(uint64_t *st) {
  uint64_t z = (*st += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

int etsim_sim_job_place_is_list(const char *place) {
  return place && place[0] >= '0' && place[0] <= '9';
}

/* "0,2,4-7": exactly n ids, each free and inside the network. */
static int place_list(const char *place, const char *opt, uint32_t n, uint32_t n_npus,
                      const uint8_t *taken, uint32_t *out, etsim_error_t *err) {
  const char *p = place;
  uint32_t k = 0;
  uint8_t *seen = etsim_calloc(n_npus ? n_npus : 1, 1);
  if (!seen) return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", opt);
  int rc = 0;
  while (*p && !rc) {
    uint32_t a, b;
    const char *part = p;
    if (etsim_sim__parse_u32(&p, &a)) goto bad;
    b = a;
    if (*p == '-') {
      p++;
      if (etsim_sim__parse_u32(&p, &b)) goto bad;
    }
    if (*p && *p != ',') goto bad;
    if (a > b) {
      rc = etsim_error_set(err, ETSIM_EINVAL, "%s: placement part '%.*s' runs backwards", opt,
                           (int)(p - part), part);
      break;
    }
    if (b >= n_npus) {
      rc = etsim_error_set(err, ETSIM_EINVAL,
                           "%s: placement part '%.*s': NPU %u is outside the %u-NPU network", opt,
                           (int)(p - part), part, b, n_npus);
      break;
    }
    for (uint32_t x = a; x <= b && !rc; x++) {
      if (k == n)
        rc = etsim_error_set(err, ETSIM_EINVAL,
                             "%s: the placement '%s' names more NPUs than the job's %u ranks", opt,
                             place, n);
      else if (seen[x])
        rc = etsim_error_set(err, ETSIM_EINVAL, "%s: placement '%s' names NPU %u twice", opt, place,
                             x);
      else if (taken[x])
        rc = etsim_error_set(err, ETSIM_EINVAL,
                             "%s: placement '%s': NPU %u is already another job's", opt, place, x);
      else seen[x] = 1, out[k++] = x;
    }
    if (*p == ',') {
      p++;
      if (!*p) goto bad;
    }
    continue;
  bad:
    rc = etsim_error_set(err, ETSIM_EINVAL,
                         "%s: placement '%s' is not a list of NPU ids and ranges (\"0,2,4-7\") "
                         "nor contiguous, strided:S or random[:seed=N]",
                         opt, place);
  }
  etsim_free(seen);
  if (!rc && k != n)
    rc = etsim_error_set(err, ETSIM_EINVAL,
                         "%s: the placement '%s' names %u NPUs but the job has %u ranks", opt,
                         place, k, n);
  return rc;
}

int etsim_sim_job_place(const char *place, const char *opt, uint32_t n, uint32_t n_npus,
                        uint8_t *taken, uint32_t *out, etsim_error_t *err) {
  if (!place || !*place) place = "contiguous";
  uint32_t n_free = 0;
  for (uint32_t x = 0; x < n_npus; x++) n_free += !taken[x];
  int rc = 0;
  if (etsim_sim_job_place_is_list(place)) {
    rc = place_list(place, opt, n, n_npus, taken, out, err);
  } else if (n > n_free) {
    return etsim_error_set(err, ETSIM_EINVAL,
                           "%s: the job has %u ranks but only %u of the network's %u NPUs are "
                           "free",
                           opt, n, n_free, n_npus);
  } else if (strcmp(place, "contiguous") == 0) {
    uint32_t run = 0, x = 0;
    for (; x < n_npus && run < n; x++) run = taken[x] ? 0 : run + 1;
    if (run < n)
      return etsim_error_set(err, ETSIM_EINVAL,
                             "%s: contiguous: no run of %u free NPUs in a row (%u are free)", opt,
                             n, n_free);
    for (uint32_t r = 0; r < n; r++) out[r] = x - n + r;
  } else if (strncmp(place, "strided:", 8) == 0) {
    const char *p = place + 8;
    uint32_t st;
    if (etsim_sim__parse_u32(&p, &st) || *p || st == 0)
      return etsim_error_set(err, ETSIM_EINVAL,
                             "%s: strided: the stride in '%s' is not a whole number above 0", opt,
                             place);
    uint32_t o = 0;
    for (; o < n_npus; o++) {
      uint64_t last = (uint64_t)o + (uint64_t)(n - 1) * st;
      if (last >= n_npus) {
        o = n_npus;
        break;
      }
      uint32_t r = 0;
      while (r < n && !taken[o + r * st]) r++;
      if (r == n) break;
    }
    if (o >= n_npus)
      return etsim_error_set(err, ETSIM_EINVAL,
                             "%s: %s: no %u free NPUs o, o+%u, ... inside the %u-NPU network", opt,
                             place, n, st, n_npus);
    for (uint32_t r = 0; r < n; r++) out[r] = o + r * st;
  } else if (strcmp(place, "random") == 0 || strncmp(place, "random:", 7) == 0) {
    uint64_t seed = 1;
    if (place[6] == ':') {
      const char *p = place + 7;
      char *end;
      errno = 0;
      if (strncmp(p, "seed=", 5) != 0 || p[5] < '0' || p[5] > '9' ||
          (seed = strtoull(p + 5, &end, 10), errno || *end))
        return etsim_error_set(err, ETSIM_EINVAL,
                               "%s: random: '%s' is not random:seed=N (N a whole number >= 0)", opt,
                               place);
    }
    /* a partial Fisher-Yates shuffle of the free NPUs, in id order */
    uint32_t *fr = etsim_malloc(n_free * sizeof *fr);
    if (!fr) return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", opt);
    uint32_t k = 0;
    for (uint32_t x = 0; x < n_npus; x++)
      if (!taken[x]) fr[k++] = x;
    uint64_t s = seed;
    for (uint32_t r = 0; r < n; r++) {
      uint32_t j = r + (uint32_t)(splitmix64(&s) % (n_free - r));
      uint32_t t = fr[r];
      fr[r] = fr[j];
      fr[j] = t;
    }
    memcpy(out, fr, n * sizeof *out);
    etsim_free(fr);
    qsort(out, n, sizeof *out, cmp_u32);
  } else {
    return etsim_error_set(err, ETSIM_EINVAL,
                           "%s: unknown placement '%s' (a list \"0,2,4-7\", contiguous, "
                           "strided:S or random[:seed=N])",
                           opt, place);
  }
  if (rc) return rc;
  for (uint32_t r = 0; r < n; r++) taken[out[r]] = 1;
  return 0;
}

void etsim_sim__jobs_free(sim_jobs_t *j) {
  etsim_free(j->view.ranks);
  etsim_free(j->view.traces);
  etsim_free(j->view.paths);
  etsim_free(j->view.rank_trace);
  etsim_free(j->view.files);
  etsim_free(j->view.rank_file);
  etsim_free(j->job_of);
  etsim_free(j->rank_of);
  etsim_free(j->active);
  etsim_free(j->world);
  for (uint32_t k = 0; j->job_groups && k < j->n_jobs; k++)
    etsim_comm_groups_free(&j->job_groups[k]);
  etsim_free(j->job_groups);
  etsim_free(j->all.g);
  etsim_free(j->group_base);
  memset(j, 0, sizeof *j);
}

/* The checks a placement gets when it comes from a caller rather than
 * etsim_sim_job_place: ids inside the network, no NPU twice. */
static int check_jobs(const etsim_sim_job_t *jobs, uint32_t n_jobs, uint32_t n_npus,
                      uint32_t *job_of, etsim_error_t *err) {
  for (uint32_t k = 0; k < n_jobs; k++) {
    const etsim_sim_job_t *jb = &jobs[k];
    const char *nm = jb->name ? jb->name : "?";
    if (!jb->set || !jb->npus || !jb->set->n_ranks)
      return etsim_error_set(err, ETSIM_EINVAL, "job %u (%s): no ranks or no placement", k, nm);
    if (jb->set->attr_label)
      return etsim_error_set(err, ETSIM_EINVAL,
                             "job %u (%s): a set sharing traces by labels cannot be placed "
                             "(load it without ETSIM_ET_SET_SHARE_LABELS)",
                             k, nm);
    for (size_t r = 0; r < jb->set->n_ranks; r++) {
      uint32_t g = jb->npus[r];
      if (g >= n_npus)
        return etsim_error_set(err, ETSIM_EINVAL,
                               "job %u (%s): rank %zu is placed on NPU %u, outside the %u-NPU "
                               "network",
                               k, nm, r, g, n_npus);
      if (job_of[g] != UINT32_MAX)
        return etsim_error_set(err, ETSIM_EINVAL,
                               "job %u (%s): NPU %u (its rank %zu) is already job %u's", k, nm, g,
                               r, job_of[g]);
      job_of[g] = k;
    }
  }
  return 0;
}

/* Job k's groups in NPU ids, checked against its ranks. */
static int translate_groups(const etsim_sim_job_t *jb, uint32_t k, etsim_comm_groups_t *out,
                            etsim_error_t *err) {
  const etsim_comm_groups_t *g = jb->groups;
  memset(out, 0, sizeof *out);
  if (!g || !g->n) return 0;
  out->g = etsim_calloc(g->n, sizeof *out->g);
  if (!out->g) return ETSIM_ENOMEM;
  for (size_t i = 0; i < g->n; i++) {
    uint32_t *m = etsim_malloc(g->g[i].n * sizeof *m);
    if (!m) return ETSIM_ENOMEM;
    out->g[out->n++] = (etsim_comm_t){g->g[i].id, g->g[i].n, m};
    for (uint32_t x = 0; x < g->g[i].n; x++) {
      uint32_t r = g->g[i].members[x];
      if (r >= jb->set->n_ranks)
        return etsim_error_set(err, ETSIM_EINVAL,
                               "job %u (%s): group \"%u\" names rank %u, but the job has %zu "
                               "ranks",
                               k, jb->name ? jb->name : "?", g->g[i].id, r, jb->set->n_ranks);
      m[x] = jb->npus[r];
    }
  }
  return 0;
}

int etsim_sim__jobs_build(const etsim_sim_job_t *jobs, uint32_t n_jobs, uint32_t n_npus,
                          sim_jobs_t *j, etsim_error_t *err) {
  memset(j, 0, sizeof *j);
  j->n_jobs = n_jobs;
  j->jobs = jobs;
  int rc = ETSIM_ENOMEM;
  size_t n_tr = 0, n_fi = 0, n_gr = 0;
  for (uint32_t k = 0; k < n_jobs; k++) {
    n_tr += jobs[k].set ? jobs[k].set->n_traces : 0;
    n_fi += jobs[k].set ? jobs[k].set->n_files : 0;
    n_gr += jobs[k].groups ? jobs[k].groups->n : 0;
  }
  size_t nn = n_npus ? n_npus : 1, nj = n_jobs ? n_jobs : 1;
  j->job_of = etsim_malloc(nn * sizeof *j->job_of);
  j->rank_of = etsim_calloc(nn, sizeof *j->rank_of);
  j->active = etsim_malloc(nn * sizeof *j->active);
  j->world = etsim_calloc(nj, sizeof *j->world);
  j->job_groups = etsim_calloc(nj, sizeof *j->job_groups);
  j->group_base = etsim_calloc(nj, sizeof *j->group_base);
  j->all.g = etsim_calloc(n_gr + 1, sizeof *j->all.g);
  etsim_et_set_t *v = &j->view;
  v->n_ranks = n_npus;
  v->ranks = etsim_malloc(nn * sizeof *v->ranks);
  v->traces = etsim_malloc((n_tr + 1) * sizeof *v->traces);
  v->paths = etsim_malloc((n_tr + 1) * sizeof *v->paths);
  v->rank_trace = etsim_calloc(nn, sizeof *v->rank_trace);
  v->files = etsim_malloc((n_fi + 1) * sizeof *v->files);
  v->rank_file = etsim_calloc(nn, sizeof *v->rank_file);
  if (!j->job_of || !j->rank_of || !j->active || !j->world || !j->job_groups || !j->group_base ||
      !j->all.g || !v->ranks || !v->traces || !v->paths || !v->rank_trace || !v->files ||
      !v->rank_file)
    goto fail;
  memset(j->job_of, 0xff, nn * sizeof *j->job_of);
  if ((rc = check_jobs(jobs, n_jobs, n_npus, j->job_of, err))) goto fail;
  /* the idle trace: no nodes; its path names it in messages */
  j->idle.path = "(idle NPU)";
  j->idle.k_comm_type = j->idle.k_comm_size = j->idle.k_comm_src = j->idle.k_comm_dst =
      j->idle.k_comm_tag = j->idle.k_comm_priority = j->idle.k_is_cpu_op = j->idle.k_tensor_size =
          j->idle.k_pg_name = j->idle.k_involved_dim = j->idle.k_num_ops = UINT32_MAX;
  for (uint32_t g = 0; g < n_npus; g++) v->ranks[g] = &j->idle;
  uint32_t gid = 1;
  for (uint32_t k = 0; k < n_jobs; k++) {
    const etsim_et_set_t *s = jobs[k].set;
    for (size_t t = 0; t < s->n_traces; t++) {
      v->traces[v->n_traces + t] = s->traces[t];
      v->paths[v->n_traces + t] = s->paths[t];
    }
    for (size_t f = 0; f < s->n_files; f++) v->files[v->n_files + f] = s->files[f];
    for (size_t r = 0; r < s->n_ranks; r++) {
      uint32_t g = jobs[k].npus[r];
      j->rank_of[g] = (uint32_t)r;
      v->ranks[g] = s->ranks[r];
      v->rank_trace[g] = (uint32_t)v->n_traces + s->rank_trace[r];
      v->rank_file[g] = (uint32_t)v->n_files + s->rank_file[r];
    }
    v->n_traces += s->n_traces;
    v->n_files += s->n_files;
    v->n_shared_files += s->n_shared_files;
    if ((rc = translate_groups(&jobs[k], k, &j->job_groups[k], err))) goto fail;
    j->group_base[k] = (uint32_t)j->all.n;
    for (size_t i = 0; i < j->job_groups[k].n; i++) {
      j->all.g[j->all.n] = j->job_groups[k].g[i];
      j->all.g[j->all.n++].id = gid++;
    }
  }
  /* worlds after every group: ids stay small (coll.c puts them in tags) */
  for (uint32_t k = 0; k < n_jobs; k++) {
    j->world[k] = (etsim_comm_t){gid++, (uint32_t)jobs[k].set->n_ranks, jobs[k].npus};
  }
  for (uint32_t g = 0; g < n_npus; g++)
    if (j->job_of[g] != UINT32_MAX) j->active[j->n_active++] = g;
  return 0;
fail:
  if (rc == ETSIM_ENOMEM && !err->code) etsim_error_set(err, rc, "several jobs: out of memory");
  etsim_sim__jobs_free(j);
  return rc;
}

int etsim_sim_jobs_view(const etsim_sim_job_t *jobs, uint32_t n_jobs, uint32_t n_npus,
                        etsim_et_set_t **out, etsim_error_t *err) {
  sim_jobs_t *j = etsim_malloc(sizeof *j);
  if (!j) return etsim_error_set(err, ETSIM_ENOMEM, "several jobs: out of memory");
  int rc = etsim_sim__jobs_build(jobs, n_jobs, n_npus, j, err);
  if (rc) {
    etsim_free(j);
    return rc;
  }
  *out = &j->view;
  return 0;
}

void etsim_sim_jobs_view_free(etsim_et_set_t *view) {
  if (!view) return;
  /* the view is a member of its sim_jobs_t */
  sim_jobs_t *j = (sim_jobs_t *)(void *)((char *)view - offsetof(sim_jobs_t, view));
  etsim_sim__jobs_free(j);
  etsim_free(j);
}
