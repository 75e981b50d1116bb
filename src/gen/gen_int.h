/*
 * gen_int.h — private furniture of the generators: a reusable node builder
 * that fills an etsim_et_node_t view with attributes and dependencies
 * without allocating, then encodes it into a buffer.
 */
#ifndef ETSIM_GEN_INT_H
#define ETSIM_GEN_INT_H

#include "etsim/gen.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum { NB_MAX_ATTRS = 16, NB_MAX_DEPS = 512 };

typedef struct {
  etsim_et_node_t n;
  etsim_attr_t attrs[NB_MAX_ATTRS];
  uint64_t deps[NB_MAX_DEPS];
  char name[256];
} gen_nb_t;

static inline void nb_start(gen_nb_t *b, uint64_t id, int type,
                            const char *name) {
  memset(&b->n, 0, sizeof b->n);
  b->n.id = id;
  b->n.type = type;
  b->n.name = name;
  b->n.attrs = b->attrs;
  b->n.data_deps = b->deps;
}

static inline etsim_attr_t *nb_attr(gen_nb_t *b, const char *name, int kind) {
  etsim_attr_t *a = &b->attrs[b->n.n_attrs++];
  memset(a, 0, sizeof *a);
  a->name = name;
  a->doc = "";
  a->kind = kind;
  return a;
}

static inline void nb_bool(gen_nb_t *b, const char *name, int v) {
  nb_attr(b, name, ETSIM_ATTR_BOOL)->v.b = v;
}
static inline void nb_i64(gen_nb_t *b, const char *name, int64_t v) {
  nb_attr(b, name, ETSIM_ATTR_INT64)->v.i64 = v;
}
static inline void nb_i32(gen_nb_t *b, const char *name, int32_t v) {
  nb_attr(b, name, ETSIM_ATTR_INT32)->v.i32 = v;
}
static inline void nb_u64(gen_nb_t *b, const char *name, uint64_t v) {
  nb_attr(b, name, ETSIM_ATTR_UINT64)->v.u64 = v;
}
static inline void nb_str(gen_nb_t *b, const char *name, const char *v) {
  nb_attr(b, name, ETSIM_ATTR_STRING)->v.s = v;
}

/* Add a data dependency; returns 0 or -1 when the builder is full. */
static inline int nb_dep(gen_nb_t *b, uint64_t id) {
  if (b->n.n_data_deps >= NB_MAX_DEPS)
    return -1;
  b->deps[b->n.n_data_deps++] = id;
  return 0;
}

/* Collective name in lower case ("all_reduce"), into out. */
static inline void gen_coll_lower(int coll, char *out, size_t n) {
  const char *s = coll == ETSIM_GEN_SEND_RECV ? "send_recv"
                                              : etsim_coll_type_name(coll);
  size_t i = 0;
  for (; s[i] && i + 1 < n; i++)
    out[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] - 'A' + 'a' : s[i]);
  out[i] = 0;
}

#endif
