/*
 * replay_util.h — build small traces for the replay tests through the et
 * writer: a node is a type, a duration, data deps and up to 8 attributes
 * given as "name=value" strings ("comm_type=0", "comm_dst:i32=1",
 * "pg_name:s=g0", "in_split:l64=4,8,0"; integers default to int64).
 */
#ifndef ETSIM_REPLAY_UTIL_H
#define ETSIM_REPLAY_UTIL_H

#include "test_util.h"

#include "etsim/et.h"

/* Node tables below list only the leading fields they need. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

typedef struct {
  uint64_t id;
  const char *name;
  int type;
  uint64_t dur_us;
  uint64_t deps[4];
  size_t nd;
  const char *attrs[8];
  const char *shapes; /* inputs shapes, or NULL */
  uint64_t ctrl[2];
  size_t nc;
  const char *out_shapes; /* outputs shapes, or NULL */
} ru_node_t;

/* Write nodes to path (verbatim: broken graphs allowed); asserts success. */
static inline void ru_write(const char *path, const ru_node_t *sp, size_t n) {
  etsim_error_t err = {0};
  etsim_et_writer_t *w;
  assert_int_equal(etsim_et_writer_open(&w, path, ETSIM_ET_WRITE_VERBATIM, &err), 0);
  etsim_et_meta_t meta = {"0.0.4", 0, NULL};
  assert_int_equal(etsim_et_writer_meta(w, &meta, &err), 0);
  for (size_t i = 0; i < n; i++) {
    etsim_attr_t a[8];
    char names[8][64], sval[8][64];
    size_t na = 0;
    memset(a, 0, sizeof a);
    for (size_t k = 0; k < 8 && sp[i].attrs[k]; k++) {
      const char *s = sp[i].attrs[k];
      const char *eq = strchr(s, '=');
      assert_non_null(eq);
      const char *colon = memchr(s, ':', (size_t)(eq - s));
      size_t nl = (size_t)((colon ? colon : eq) - s);
      memcpy(names[na], s, nl);
      names[na][nl] = 0;
      a[na].name = names[na];
      a[na].doc = "";
      const char *kind = colon ? colon + 1 : "i64";
      static int64_t lists[8][64];
      if (!strncmp(kind, "l64", 3)) {
        size_t nv = 0;
        for (const char *q = eq + 1; *q && nv < 64;) {
          char *end;
          lists[na][nv++] = strtoll(q, &end, 10);
          q = *end == ',' ? end + 1 : end;
          if (end == q && *q != ',') break;
        }
        a[na].kind = ETSIM_ATTR_INT64_LIST;
        a[na].v.list.n = nv;
        a[na].v.list.v = lists[na];
      } else if (!strncmp(kind, "i32", 3)) {
        a[na].kind = ETSIM_ATTR_INT32;
        a[na].v.i32 = (int32_t)strtol(eq + 1, NULL, 10);
      } else if (!strncmp(kind, "u64", 3)) {
        a[na].kind = ETSIM_ATTR_UINT64;
        a[na].v.u64 = strtoull(eq + 1, NULL, 10);
      } else if (!strncmp(kind, "s", 1)) {
        snprintf(sval[na], sizeof sval[na], "%s", eq + 1);
        a[na].kind = ETSIM_ATTR_STRING;
        a[na].v.s = sval[na];
      } else {
        a[na].kind = ETSIM_ATTR_INT64;
        a[na].v.i64 = strtoll(eq + 1, NULL, 10);
      }
      na++;
    }
    etsim_ioinfo_t in = {"", "", ""}, out = {"", "", ""};
    if (sp[i].shapes) in.shapes = sp[i].shapes;
    if (sp[i].out_shapes) out.shapes = sp[i].out_shapes;
    etsim_et_node_t nd;
    memset(&nd, 0, sizeof nd);
    nd.id = sp[i].id;
    nd.name = sp[i].name ? sp[i].name : "n";
    nd.type = sp[i].type;
    nd.duration_micros = sp[i].dur_us;
    nd.data_deps = sp[i].deps;
    nd.n_data_deps = sp[i].nd;
    nd.ctrl_deps = sp[i].ctrl;
    nd.n_ctrl_deps = sp[i].nc;
    nd.inputs = sp[i].shapes || sp[i].out_shapes ? &in : NULL;
    nd.outputs = sp[i].out_shapes ? &out : NULL;
    nd.attrs = a;
    nd.n_attrs = na;
    assert_int_equal(etsim_et_writer_node(w, &nd, &err), 0);
  }
  assert_int_equal(etsim_et_writer_commit(w, &err), 0);
}

#endif
