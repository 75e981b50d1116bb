/*
 * map.c — the u64 -> u32 open-addressing map and the string interner.
 */
#include "etsim/base.h"

#include <string.h>

void etsim_u64map_init(etsim_u64map_t *m) { memset(m, 0, sizeof *m); }

void etsim_u64map_free(etsim_u64map_t *m) {
  etsim_free(m->keys);
  etsim_free(m->vals);
  memset(m, 0, sizeof *m);
}

static int u64map_rehash(etsim_u64map_t *m, size_t cap) {
  uint64_t *keys = etsim_malloc(cap * sizeof *keys);
  uint32_t *vals = etsim_calloc(cap, sizeof *vals);
  if (!keys || !vals) {
    etsim_free(keys);
    etsim_free(vals);
    return ETSIM_ENOMEM;
  }
  size_t mask = cap - 1;
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->vals[i]) continue;
    size_t h = etsim_hash_u64(m->keys[i]) & mask;
    while (vals[h]) h = (h + 1) & mask;
    keys[h] = m->keys[i];
    vals[h] = m->vals[i];
  }
  etsim_free(m->keys);
  etsim_free(m->vals);
  m->keys = keys;
  m->vals = vals;
  m->cap = cap;
  return 0;
}

int etsim_u64map_reserve(etsim_u64map_t *m, size_t n) {
  size_t cap = m->cap ? m->cap : 16;
  while (cap * 7 / 10 < n) cap *= 2;
  return cap == m->cap ? 0 : u64map_rehash(m, cap);
}

int etsim_u64map_put(etsim_u64map_t *m, uint64_t key, uint32_t val, uint32_t *old) {
  if ((m->count + 1) > m->cap * 7 / 10) {
    int rc = u64map_rehash(m, m->cap ? m->cap * 2 : 16);
    if (rc) return rc;
  }
  size_t mask = m->cap - 1;
  size_t h = etsim_hash_u64(key) & mask;
  while (m->vals[h]) {
    if (m->keys[h] == key) {
      if (old) *old = m->vals[h] - 1;
      return 0;
    }
    h = (h + 1) & mask;
  }
  m->keys[h] = key;
  m->vals[h] = val + 1;
  m->count++;
  return 1;
}

int etsim_u64map_get(const etsim_u64map_t *m, uint64_t key, uint32_t *val) {
  if (!m->cap) return 0;
  size_t mask = m->cap - 1;
  size_t h = etsim_hash_u64(key) & mask;
  while (m->vals[h]) {
    if (m->keys[h] == key) {
      *val = m->vals[h] - 1;
      return 1;
    }
    h = (h + 1) & mask;
  }
  return 0;
}

/* Backward-shift deletion: the entries after the hole in its run move
 * back into it unless their home slot lies after the hole (cyclically),
 * so every key stays reachable from its home without tombstones. */
int etsim_u64map_del(etsim_u64map_t *m, uint64_t key) {
  if (!m->cap) return 0;
  size_t mask = m->cap - 1;
  size_t h = etsim_hash_u64(key) & mask;
  while (m->vals[h] && m->keys[h] != key) h = (h + 1) & mask;
  if (!m->vals[h]) return 0;
  for (size_t j = (h + 1) & mask; m->vals[j]; j = (j + 1) & mask) {
    size_t home = etsim_hash_u64(m->keys[j]) & mask;
    if (((j - home) & mask) < ((j - h) & mask)) continue; /* home after the hole */
    m->keys[h] = m->keys[j];
    m->vals[h] = m->vals[j];
    h = j;
  }
  m->vals[h] = 0;
  m->count--;
  return 1;
}

/* FNV-1a folded through the u64 finaliser. */
uint64_t etsim_hash_bytes(const void *p, size_t n) {
  const unsigned char *s = p;
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < n; i++) {
    h ^= s[i];
    h *= 1099511628211ULL;
  }
  return etsim_hash_u64(h);
}

/* --------------------------------------------------------------- interner */

int etsim_intern_init(etsim_intern_t *t) {
  memset(t, 0, sizeof *t);
  etsim_arena_init(&t->arena, 2 * 1024); /* small: one per loaded trace */
  int64_t id = etsim_intern_put(t, "", 0);
  if (id >= 0) return 0;
  etsim_intern_free(t); /* callers that fail here free nothing more */
  return (int)id;
}

void etsim_intern_free(etsim_intern_t *t) {
  etsim_arena_free(&t->arena);
  etsim_free(t->strs);
  etsim_free(t->slots);
  memset(t, 0, sizeof *t);
}

static int intern_rehash(etsim_intern_t *t, size_t nslots) {
  uint32_t *slots = etsim_calloc(nslots, sizeof *slots);
  if (!slots) return ETSIM_ENOMEM;
  for (size_t i = 0; i < t->n; i++) {
    size_t h = etsim_hash_bytes(t->strs[i], strlen(t->strs[i])) & (nslots - 1);
    while (slots[h]) h = (h + 1) & (nslots - 1);
    slots[h] = (uint32_t)i + 1;
  }
  etsim_free(t->slots);
  t->slots = slots;
  t->nslots = nslots;
  return 0;
}

static int64_t intern_lookup(const etsim_intern_t *t, const char *s, size_t len, size_t *slot) {
  size_t mask = t->nslots - 1;
  size_t h = etsim_hash_bytes(s, len) & mask;
  while (t->slots[h]) {
    const char *c = t->strs[t->slots[h] - 1];
    if (strncmp(c, s, len) == 0 && c[len] == '\0') return t->slots[h] - 1;
    h = (h + 1) & mask;
  }
  *slot = h;
  return -1;
}

int64_t etsim_intern_put(etsim_intern_t *t, const char *s, size_t len) {
  if ((t->n + 1) * 2 > t->nslots) {
    int rc = intern_rehash(t, t->nslots ? t->nslots * 2 : 64);
    if (rc) return rc;
  }
  size_t slot;
  int64_t id = intern_lookup(t, s, len, &slot);
  if (id >= 0) return id;
  if (t->n >= UINT32_MAX - 1) return ETSIM_ERANGE;
  if (etsim_grow((void **)&t->strs, &t->cap, t->n + 1, sizeof *t->strs)) return ETSIM_ENOMEM;
  char *copy = etsim_arena_strndup(&t->arena, s, len);
  if (!copy) return ETSIM_ENOMEM;
  t->strs[t->n] = copy;
  t->slots[slot] = (uint32_t)t->n + 1;
  return (int64_t)t->n++;
}

int64_t etsim_intern_find(const etsim_intern_t *t, const char *s) {
  if (!t->nslots) return -1;
  size_t slot;
  return intern_lookup(t, s, strlen(s), &slot);
}
