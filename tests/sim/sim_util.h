/*
 * sim_util.h — helpers for the simulator's unit tests: write small rank
 * traces, platform files, and run them (every NPU, and one NPU for all
 * where the simulator allows it, requiring both to agree).
 */
#ifndef ETSIM_TESTS_SIM_UTIL_H
#define ETSIM_TESTS_SIM_UTIL_H

#include "test_util.h"

#include "etsim/sim.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static char su_path[6][512];

static inline const char *su_p(int k, const char *dir, const char *name) {
  snprintf(su_path[k], sizeof su_path[k], "%s/%s", dir, name);
  return su_path[k];
}

static inline void su_put(const char *path, const char *text) {
  assert_int_equal(tu_write(path, text, strlen(text)), 0);
}

typedef struct su_node {
  int type;
  int64_t comm_type, size, src, dst, tag;
  int64_t root; /* comm_root, written when >= 0 (set root_set) */
  int root_set;
  const char *pg;      /* pg_name, or NULL */
  const char *inputs;  /* "name:size,name:size" -> ASTRA-sim's inputs string list */
  const char *outputs; /* the same for outputs */
  uint64_t dur_us;
  int ndeps;
  uint64_t deps[4];
} su_node_t;

/* Parse "a:1,b:2" into a string list of names and sizes. */
static inline size_t su_io_list(const char *spec, char buf[][64], const char **v) {
  size_t n = 0;
  while (spec && *spec && n < 32) {
    const char *colon = strchr(spec, ':');
    const char *comma = strchr(spec, ',');
    size_t ln = (size_t)(colon - spec);
    snprintf(buf[n], 64, "%.*s", (int)ln, spec);
    v[n] = buf[n];
    n++;
    size_t ls = comma ? (size_t)(comma - colon - 1) : strlen(colon + 1);
    snprintf(buf[n], 64, "%.*s", (int)ls, colon + 1);
    v[n] = buf[n];
    n++;
    spec = comma ? comma + 1 : NULL;
  }
  return n;
}

/* Write one rank's trace: node k gets id k. */
static inline void su_trace(const char *path, const su_node_t *ns, int n) {
  etsim_error_t err = {0};
  etsim_et_writer_t *w;
  assert_int_equal(etsim_et_writer_open(&w, path, 0, &err), 0);
  etsim_et_meta_t meta = {"0.0.4", 0, NULL};
  assert_int_equal(etsim_et_writer_meta(w, &meta, &err), 0);
  for (int k = 0; k < n; k++) {
    etsim_attr_t a[10];
    int na = 0;
    char ib[64][64], ob[64][64];
    const char *iv[64], *ov[64];
    a[na++] = (etsim_attr_t){.name = "is_cpu_op", .doc = "", .kind = ETSIM_ATTR_BOOL, .v.b = 0};
    if (ns[k].type == ETSIM_ET_COMM_COLL_NODE)
      a[na++] = (etsim_attr_t){
          .name = "comm_type", .doc = "", .kind = ETSIM_ATTR_INT64, .v.i64 = ns[k].comm_type};
    if (ns[k].type >= ETSIM_ET_COMM_SEND_NODE)
      a[na++] = (etsim_attr_t){
          .name = "comm_size", .doc = "", .kind = ETSIM_ATTR_INT64, .v.i64 = ns[k].size};
    if (ns[k].root_set)
      a[na++] = (etsim_attr_t){
          .name = "comm_root", .doc = "", .kind = ETSIM_ATTR_INT32, .v.i32 = (int32_t)ns[k].root};
    if (ns[k].pg)
      a[na++] =
          (etsim_attr_t){.name = "pg_name", .doc = "", .kind = ETSIM_ATTR_STRING, .v.s = ns[k].pg};
    if (ns[k].type == ETSIM_ET_COMM_SEND_NODE || ns[k].type == ETSIM_ET_COMM_RECV_NODE) {
      a[na++] = (etsim_attr_t){
          .name = "comm_src", .doc = "", .kind = ETSIM_ATTR_INT32, .v.i32 = (int32_t)ns[k].src};
      a[na++] = (etsim_attr_t){
          .name = "comm_dst", .doc = "", .kind = ETSIM_ATTR_INT32, .v.i32 = (int32_t)ns[k].dst};
      a[na++] = (etsim_attr_t){
          .name = "comm_tag", .doc = "", .kind = ETSIM_ATTR_INT32, .v.i32 = (int32_t)ns[k].tag};
    }
    if (ns[k].inputs) {
      size_t m = su_io_list(ns[k].inputs, ib, iv);
      a[na++] = (etsim_attr_t){
          .name = "inputs", .doc = "", .kind = ETSIM_ATTR_STRING_LIST, .v.list = {m, iv}};
    }
    if (ns[k].outputs) {
      size_t m = su_io_list(ns[k].outputs, ob, ov);
      a[na++] = (etsim_attr_t){
          .name = "outputs", .doc = "", .kind = ETSIM_ATTR_STRING_LIST, .v.list = {m, ov}};
    }
    etsim_et_node_t node = {.id = (uint64_t)k,
                            .name = "n",
                            .type = ns[k].type,
                            .duration_micros = ns[k].dur_us,
                            .n_data_deps = (size_t)ns[k].ndeps,
                            .data_deps = ns[k].deps,
                            .n_attrs = (size_t)na,
                            .attrs = a};
    assert_int_equal(etsim_et_writer_node(w, &node, &err), 0);
  }
  assert_int_equal(etsim_et_writer_commit(w, &err), 0);
}

static inline void su_net(const char *path, const char *kind, int n, double bw, double lat) {
  char buf[256];
  snprintf(buf, sizeof buf,
           "topology: [ %s ]\nnpus_count: [ %d ]\nbandwidth: [ %g ]\nlatency: [ %g ]\n", kind, n,
           bw, lat);
  su_put(path, buf);
}

typedef struct su_run {
  const char *backend;
  const char *groups; /* communicator-group file, or NULL */
  const etsim_mem_config_t *memory;
  double hbm_gb;
  int exact;
} su_run_t;

/* Load a set (a prefix, or one file for all NPUs) and run it. */
static inline int su_run1(const char *workload, const char *net, const char *sys, const su_run_t *o,
                          etsim_sim_result_t **res, etsim_error_t *err) {
  etsim_topo_t topo;
  etsim_sys_config_t cfg;
  etsim_et_set_t *set;
  etsim_comm_groups_t cg = {0};
  int rc = etsim_topo_load_yaml(net, &topo, err);
  if (rc) return rc;
  if ((rc = etsim_sys_config_load(sys, &cfg, err))) return rc;
  if (o->groups && (rc = etsim_comm_groups_load(o->groups, topo.total, &cg, err))) {
    etsim_sys_config_free(&cfg);
    return rc;
  }
  if ((rc = etsim_et_set_load(&set, workload, 0, err))) {
    etsim_sys_config_free(&cfg);
    etsim_comm_groups_free(&cg);
    return rc;
  }
  if (set->n_ranks == 1 && topo.total > 1 && (rc = etsim_et_set_broadcast(set, topo.total, err))) {
    etsim_et_set_free(set);
    etsim_sys_config_free(&cfg);
    etsim_comm_groups_free(&cg);
    return rc;
  }
  etsim_sim_opts_t so = {.backend = o->backend ? o->backend : "analytical",
                         .record_nodes = 1,
                         .exact = o->exact,
                         .groups = o->groups ? &cg : NULL,
                         .memory = o->memory};
  rc = etsim_sim_run(set, &topo, &cfg, &so, res, err);
  etsim_et_set_free(set);
  etsim_sys_config_free(&cfg);
  etsim_comm_groups_free(&cg);
  return rc;
}

/* Run every NPU, then with the one-for-all shortcut allowed; both must
 * give the same picoseconds on every NPU.  Fails the test on an error. */
static inline etsim_sim_result_t *su_run(const char *workload, const char *net, const char *sys,
                                         const su_run_t *o) {
  su_run_t a = *o, b = *o;
  a.exact = 1;
  b.exact = 0;
  etsim_sim_result_t *ra = NULL, *rb = NULL;
  etsim_error_t err = {0};
  if (su_run1(workload, net, sys, &a, &ra, &err)) fail_msg("%s", err.msg);
  if (su_run1(workload, net, sys, &b, &rb, &err)) fail_msg("%s", err.msg);
  for (uint32_t i = 0; i < ra->n_npus; i++)
    if (ra->npu[i].finish_ps != rb->npu[i].finish_ps)
      fail_msg("NPU %u: exact %lld ps, one for all %lld ps", i, (long long)ra->npu[i].finish_ps,
               (long long)rb->npu[i].finish_ps);
  etsim_sim_result_free(rb);
  return ra;
}

static inline int64_t su_ns(const etsim_sim_result_t *r, uint32_t npu) {
  return r->npu[npu].finish_ps / 1000;
}

static inline int64_t su_max_ns(const etsim_sim_result_t *r) { return r->total_ps / 1000; }

/* floor(H L + b / beta) with beta = bw GB/s in 2^30 bytes (ASTRA-sim). */
static inline int64_t su_t(double hops, double lat, double bw, uint64_t bytes) {
  return (int64_t)floor(hops * lat + (double)bytes / (bw * 1073741824.0 / 1e9));
}

#endif
