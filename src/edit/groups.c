/*
 * groups.c — communicator groups in ASTRA-sim's JSON form,
 * {"<id>": [ranks...]}, and the maps that rename them per rank.
 *
 * A collective names its group by `pg_name`, a decimal id; "" and "0" (or
 * no pg_name) mean every rank.  Groups are kept with sorted members so that
 * two operations that arrive at the same member set share one id.
 */
#include "edit_int.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void etsim_edit__groups_free(ed_groups_t *g) {
  etsim_free(g->id);
  etsim_free(g->off);
  etsim_free(g->mem);
  etsim_u64map_free(&g->by_id);
  etsim_u64map_free(&g->by_set);
  memset(g, 0, sizeof *g);
}

long etsim_edit__groups_find(const ed_groups_t *g, uint32_t id) {
  uint32_t k;
  return etsim_u64map_get(&g->by_id, id, &k) ? (long)k : -1;
}

uint32_t etsim_edit__groups_max_id(const ed_groups_t *g) {
  uint32_t m = 0;
  for (size_t k = 0; k < g->n; k++)
    if (g->id[k] > m) m = g->id[k];
  return m;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

static uint64_t set_hash(const uint32_t *mem, size_t n) {
  return etsim_hash_bytes(mem, n * sizeof *mem) ^ etsim_hash_u64(n);
}

int etsim_edit__groups_add(ed_groups_t *g, uint32_t id, uint32_t *mem, size_t n, uint32_t *out) {
  etsim_qsort(mem, n, sizeof *mem, cmp_u32);
  uint64_t h = set_hash(mem, n);
  uint32_t k;
  if (id == UINT32_MAX) {
    if (etsim_u64map_get(&g->by_set, h, &k) && g->off[k + 1] - g->off[k] == n &&
        memcmp(g->mem + g->off[k], mem, n * sizeof *mem) == 0) {
      *out = g->id[k];
      return 0;
    }
    id = etsim_edit__groups_max_id(g) + 1;
  }
  size_t cap = g->cap;
  if (etsim_grow((void **)&g->id, &g->cap, g->n + 1, sizeof *g->id)) return ETSIM_ENOMEM;
  if (g->cap != cap || !g->off) {
    size_t *off = etsim_realloc(g->off, (g->cap + 1) * sizeof *off);
    if (!off) return ETSIM_ENOMEM;
    if (!g->off) off[0] = 0;
    g->off = off;
  }
  size_t base = g->off[g->n];
  if (etsim_grow((void **)&g->mem, &g->cap_mem, base + n + 1, sizeof *g->mem)) return ETSIM_ENOMEM;
  if (n) memcpy(g->mem + base, mem, n * sizeof *mem);
  if (etsim_u64map_put(&g->by_id, id, (uint32_t)g->n, NULL) < 0 ||
      etsim_u64map_put(&g->by_set, h, (uint32_t)g->n, NULL) < 0)
    return ETSIM_ENOMEM;
  g->id[g->n] = id;
  g->off[g->n + 1] = base + n;
  g->n++;
  *out = id;
  return 0;
}

int etsim_edit__groups_load(ed_groups_t *g, const char *path, size_t n_ranks, etsim_error_t *err) {
  memset(g, 0, sizeof *g);
  json_t *root;
  int rc = etsim_json_load(path, 0, &root, err);
  if (rc) return rc;
  uint32_t *mem = NULL;
  if (!json_is_object(root)) {
    rc = etsim_error_set(err, ETSIM_EFORMAT,
                         "%s: a communicator-group file is an object {\"<id>\": [ranks...]}", path);
    goto done;
  }
  const char *key;
  json_t *val;
  json_object_foreach(root, key, val) {
    char *end;
    errno = 0;
    unsigned long id = strtoul(key, &end, 10);
    if (!*key || *end || errno || id == 0 || id >= UINT32_MAX) {
      rc = etsim_error_set(err, ETSIM_EFORMAT,
                           "%s: group \"%s\": ids are positive decimal numbers (0 is all ranks)",
                           path, key);
      goto done;
    }
    if (!json_is_array(val)) {
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: group \"%s\" is not an array of ranks", path,
                           key);
      goto done;
    }
    size_t n = json_array_size(val);
    etsim_free(mem);
    mem = etsim_malloc((n ? n : 1) * sizeof *mem);
    if (!mem) {
      rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
      goto done;
    }
    for (size_t i = 0; i < n; i++) {
      json_t *r = json_array_get(val, i);
      json_int_t v = json_is_integer(r) ? json_integer_value(r) : -1;
      if (v < 0 || (size_t)v >= ETSIM_ET_MAX_RANKS || (n_ranks && (size_t)v >= n_ranks)) {
        rc = etsim_error_set(err, ETSIM_EFORMAT,
                             "%s: group \"%s\": entry %zu is not a rank of the %zu-rank set", path,
                             key, i, n_ranks);
        goto done;
      }
      mem[i] = (uint32_t)v;
    }
    if (etsim_edit__groups_find(g, (uint32_t)id) >= 0) {
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: group \"%s\" is defined twice", path, key);
      goto done;
    }
    uint32_t got;
    if (etsim_edit__groups_add(g, (uint32_t)id, mem, n, &got)) {
      rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
      goto done;
    }
    for (size_t i = 1; i < n; i++)
      if (g->mem[g->off[g->n - 1] + i] == g->mem[g->off[g->n - 1] + i - 1]) {
        rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: group \"%s\" lists rank %u twice", path, key,
                             g->mem[g->off[g->n - 1] + i]);
        goto done;
      }
  }
done:
  etsim_free(mem);
  json_decref(root);
  if (rc) etsim_edit__groups_free(g);
  return rc;
}

static int cmp_id_index(const void *a, const void *b) {
  const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

size_t *etsim_edit__groups_by_id(const ed_groups_t *g) {
  /* (id, index) in one word: sorting those is sorting by id, stably. */
  uint64_t *key = etsim_malloc((g->n ? g->n : 1) * sizeof *key);
  size_t *ord = etsim_malloc((g->n ? g->n : 1) * sizeof *ord);
  if (!key || !ord) {
    etsim_free(key);
    etsim_free(ord);
    return NULL;
  }
  for (size_t k = 0; k < g->n; k++) key[k] = (uint64_t)g->id[k] << 32 | (uint64_t)k;
  etsim_qsort(key, g->n, sizeof *key, cmp_id_index);
  for (size_t k = 0; k < g->n; k++) ord[k] = (size_t)(key[k] & 0xffffffffu);
  etsim_free(key);
  return ord;
}

int etsim_edit__groups_write(const ed_groups_t *g, const char *path, etsim_error_t *err) {
  etsim_outfile_t o;
  int rc = etsim_outfile_open(&o, path, err);
  if (rc) return rc;
  /* In id order, as the generators write them. */
  size_t *ord = etsim_edit__groups_by_id(g);
  if (!ord) {
    etsim_outfile_abort(&o);
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  FILE *fp = o.fp;
  fputc('{', fp);
  for (size_t i = 0; i < g->n; i++) {
    size_t k = ord[i];
    fprintf(fp, "%s\n  \"%u\": [", i ? "," : "", g->id[k]);
    for (size_t m = g->off[k]; m < g->off[k + 1]; m++)
      fprintf(fp, "%s%u", m > g->off[k] ? ", " : "", g->mem[m]);
    fputc(']', fp);
  }
  fputs("\n}\n", fp);
  etsim_free(ord);
  return etsim_outfile_commit(&o, err);
}

int etsim_edit__pg_world(const char *pg) { return !pg || !*pg || strcmp(pg, "0") == 0; }

int etsim_edit__pg_id(const char *pg, uint32_t *id) {
  if (!pg || !*pg) return 0;
  char *end;
  errno = 0;
  unsigned long v = strtoul(pg, &end, 10);
  if (*end || errno || v >= UINT32_MAX || pg[0] == '-' || pg[0] == '+' || pg[0] == ' ') return 0;
  *id = (uint32_t)v;
  return 1;
}

/* ------------------------------------------------------------ pg maps */

int etsim_edit__pgmap_put(ed_pgmap_t *m, uint32_t from, uint32_t to) {
  if (etsim_grow((void **)&m->pair, &m->cap, m->n + 1, sizeof *m->pair)) return ETSIM_ENOMEM;
  m->pair[m->n].from = from;
  m->pair[m->n].to = to;
  m->n++;
  return 0;
}

static int cmp_pair(const void *a, const void *b) {
  uint32_t x = ((const ed_pgpair_t *)a)->from, y = ((const ed_pgpair_t *)b)->from;
  return x < y ? -1 : x > y;
}

void etsim_edit__pgmap_sort(ed_pgmap_t *m) {
  etsim_qsort(m->pair, m->n, sizeof *m->pair, cmp_pair);
}

int etsim_edit__pgmap_get(const ed_pgmap_t *m, uint32_t from, uint32_t *to) {
  size_t lo = 0, hi = m->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (m->pair[mid].from < from) lo = mid + 1;
    else hi = mid;
  }
  if (lo < m->n && m->pair[lo].from == from) {
    *to = m->pair[lo].to;
    return 1;
  }
  return 0;
}

void etsim_edit__pgmap_free(ed_pgmap_t *m) {
  etsim_free(m->pair);
  m->pair = NULL;
  m->n = m->cap = 0;
}
