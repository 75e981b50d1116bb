/*
 * test_edit.c — the trace editor on small traces whose right answers are
 * known by construction: bridging (kinds, diamonds, chains), closures,
 * iteration finding, insertion, every scale/round/anonymize rule and the
 * attribute kinds they keep, profiles, joins (barrier, join node, cut
 * dependencies restored), repeats, rank subsets, the cross-rank check,
 * diff, and the errors (with nothing left at the output).
 */
#include "test_util.h"

#include "edit/edit_int.h"
#include "etsim/edit.h"

#include <sys/stat.h>

/* ------------------------------------------------------------ fixtures */

typedef struct {
  uint64_t id;
  const char *name;
  int type;
  uint64_t dur;
  uint64_t deps[8];
  int nd;
  uint64_t ctrl[4];
  int nc;
  int coll;     /* comm_type, -1 none */
  int64_t size; /* comm_size when > 0 */
  const char *pg;
  int64_t peer; /* send: comm_dst, recv: comm_src */
} tn_t;

static void write_et(const char *path, const tn_t *t, size_t n, unsigned flags) {
  etsim_et_writer_t *w;
  etsim_error_t err = {0};
  assert_int_equal(etsim_et_writer_open(&w, path, flags, &err), 0);
  etsim_et_meta_t meta = {.version = "1.0.0"};
  assert_int_equal(etsim_et_writer_meta(w, &meta, &err), 0);
  for (size_t i = 0; i < n; i++) {
    etsim_attr_t a[6];
    size_t na = 0;
    a[na++] = (etsim_attr_t){.name = "is_cpu_op", .doc = "", .kind = ETSIM_ATTR_BOOL};
    if (t[i].coll >= 0 && t[i].type == ETSIM_ET_COMM_COLL_NODE) {
      a[na] = (etsim_attr_t){.name = "comm_type", .doc = "", .kind = ETSIM_ATTR_INT64};
      a[na++].v.i64 = t[i].coll;
    }
    if (t[i].size > 0) {
      a[na] = (etsim_attr_t){.name = "comm_size", .doc = "", .kind = ETSIM_ATTR_INT64};
      a[na++].v.i64 = t[i].size;
    }
    if (t[i].pg) {
      a[na] = (etsim_attr_t){.name = "pg_name", .doc = "", .kind = ETSIM_ATTR_STRING};
      a[na++].v.s = t[i].pg;
    }
    if (t[i].type == ETSIM_ET_COMM_SEND_NODE || t[i].type == ETSIM_ET_COMM_RECV_NODE) {
      a[na] = (etsim_attr_t){.name = t[i].type == ETSIM_ET_COMM_SEND_NODE ? "comm_dst" : "comm_src",
                             .doc = "",
                             .kind = ETSIM_ATTR_INT32};
      a[na++].v.i32 = (int32_t)t[i].peer;
    }
    etsim_et_node_t v = {.id = t[i].id,
                         .name = t[i].name,
                         .type = t[i].type,
                         .duration_micros = t[i].dur,
                         .n_data_deps = (size_t)t[i].nd,
                         .data_deps = t[i].deps,
                         .n_ctrl_deps = (size_t)t[i].nc,
                         .ctrl_deps = t[i].ctrl,
                         .n_attrs = na,
                         .attrs = a};
    assert_int_equal(etsim_et_writer_node(w, &v, &err), 0);
  }
  assert_int_equal(etsim_et_writer_commit(w, &err), 0);
}

/* COMP(id, name, duration[, more designated fields]) */
#define COMP(i, nm, ...) \
  { .id = i, .name = nm, .type = ETSIM_ET_COMP_NODE, .coll = -1, .dur = __VA_ARGS__ }

static char *path_of(const char *name) {
  size_t n = strlen(tmp) + strlen(name) + 2;
  char *p = malloc(n);
  snprintf(p, n, "%s/%s", tmp, name);
  return p;
}

/* Run an edit of the given operations ("name", "arg" pairs, NULL-ended). */
static int run_edit(const char *in, const char *out, etsim_edit_report_t *rep, etsim_error_t *err,
                    const etsim_edit_opts_t *o, ...) {
  etsim_edit_t *e;
  int rc = etsim_edit_new(&e, o, err);
  if (rc) return rc;
  va_list ap;
  va_start(ap, o);
  for (const char *name; (name = va_arg(ap, const char *));) {
    const char *arg = va_arg(ap, const char *);
    if ((rc = etsim_edit_add(e, name, arg, err))) break;
  }
  va_end(ap);
  etsim_edit_report_t local;
  if (!rc) rc = etsim_edit_run(e, in, out, rep ? rep : &local, err);
  if (!rc && !rep) etsim_edit_report_free(&local);
  etsim_edit_free(e);
  return rc;
}

static etsim_et_trace_t *load(const char *path) {
  etsim_et_trace_t *t;
  etsim_error_t err = {0};
  int rc = etsim_et_trace_load(&t, path, 0, &err);
  if (rc) print_error("load %s: %s\n", path, err.msg);
  assert_int_equal(rc, 0);
  return t;
}

/* Dependencies of node `id` of one kind, as a sorted, comma-separated
 * string ("1,5"). */
static const char *deps_of(const etsim_et_trace_t *t, uint64_t id, int ctrl) {
  static char buf[512];
  size_t i;
  assert_true(etsim_et_trace_find(t, id, &i));
  const uint32_t *off = ctrl ? t->ctrl_off : t->data_off, *par = ctrl ? t->ctrl_par : t->data_par;
  uint64_t v[64];
  size_t n = 0;
  for (uint32_t e = off[i]; e < off[i + 1] && n < 64; e++) v[n++] = t->id[par[e]];
  for (size_t a = 1; a < n; a++)
    for (size_t b = a; b > 0 && v[b - 1] > v[b]; b--) {
      uint64_t x = v[b];
      v[b] = v[b - 1];
      v[b - 1] = x;
    }
  buf[0] = 0;
  for (size_t k = 0; k < n; k++)
    snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%llu", k ? "," : "",
             (unsigned long long)v[k]);
  return buf;
}

static int has_id(const etsim_et_trace_t *t, uint64_t id) {
  size_t i;
  return etsim_et_trace_find(t, id, &i);
}

static int exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0;
}

/* ------------------------------------------------------------- bridging */

/* 0 -> 1 -> 2 -> 3, and 4 needs 1 and 2 (data), 5 needs 2 (control). */
static const tn_t chain[] = {
    COMP(0, "a", 10),
    COMP(1, "mid_1", 10, .deps = {0}, .nd = 1),
    COMP(2, "mid_2", 10, .deps = {1}, .nd = 1),
    COMP(3, "b", 10, .deps = {2}, .nd = 1),
    COMP(4, "c", 10, .deps = {1, 2}, .nd = 2),
    COMP(5, "d", 10, .ctrl = {2}, .nc = 1),
};

static void test_bridge(void **state) {
  (void)state;
  char *in = path_of("chain.et"), *out = path_of("chain_out.et");
  write_et(in, chain, 6, 0);
  etsim_edit_report_t rep;
  etsim_error_t err = {0};
  assert_int_equal(run_edit(in, out, &rep, &err, NULL, "drop", "name=^mid_", NULL), 0);
  assert_int_equal(rep.dropped, 2);
  assert_int_equal(rep.nodes_out, 4);
  etsim_edit_report_free(&rep);
  etsim_et_trace_t *t = load(out);
  assert_int_equal(t->n_nodes, 4);
  assert_false(has_id(t, 1));
  assert_string_equal(deps_of(t, 3, 0), "0"); /* through 2 and 1 */
  assert_string_equal(deps_of(t, 4, 0), "0"); /* both bridges lead to 0: once */
  assert_string_equal(deps_of(t, 5, 0), "");
  assert_string_equal(deps_of(t, 5, 1), "0"); /* a control edge stays control */
  etsim_et_trace_free(t);
  /* Keeping what is there changes nothing, byte for byte. */
  char *same = path_of("chain_same.et");
  assert_int_equal(run_edit(in, same, NULL, &err, NULL, "keep", "all", NULL), 0);
  size_t la, lb;
  unsigned char *a = tu_read(in, &la), *b = tu_read(same, &lb);
  assert_int_equal(la, lb);
  assert_memory_equal(a, b, la);
  free(a);
  free(b);
  free(in);
  free(out);
  free(same);
}

static void test_closure(void **state) {
  (void)state;
  char *in = path_of("cl.et"), *out = path_of("cl_out.et");
  write_et(in, chain, 6, 0);
  etsim_error_t err = {0};
  /* Ancestors of b: 0, 1, 2 and b itself. */
  assert_int_equal(run_edit(in, out, NULL, &err, NULL, "keep", "ancestors:name=^b$", NULL), 0);
  etsim_et_trace_t *t = load(out);
  assert_int_equal(t->n_nodes, 4);
  assert_true(has_id(t, 0) && has_id(t, 1) && has_id(t, 2) && has_id(t, 3));
  etsim_et_trace_free(t);
  /* Descendants of mid_2, over data and control edges: 2, 3, 4, 5. */
  assert_int_equal(run_edit(in, out, NULL, &err, NULL, "keep", "descendants:name=mid_2", NULL), 0);
  t = load(out);
  assert_int_equal(t->n_nodes, 4);
  assert_true(has_id(t, 2) && has_id(t, 3) && has_id(t, 4) && has_id(t, 5));
  assert_string_equal(deps_of(t, 4, 0), "2"); /* its dependency on 1 is gone, none bridged */
  etsim_et_trace_free(t);
  /* Dropping the lineage of 1 leaves only... nothing but the unrelated:
   * every node is an ancestor or descendant of 1. */
  assert_int_equal(run_edit(in, out, NULL, &err, NULL, "drop", "lineage:name=mid_1", NULL), 0);
  t = load(out);
  assert_int_equal(t->n_nodes, 0);
  etsim_et_trace_free(t);
  /* Predicates are ANDed; the order of --keep and --drop counts. */
  assert_int_equal(
      run_edit(in, out, NULL, &err, NULL, "keep", "type=comp;id=1-4", "drop", "name=^c$", NULL), 0);
  t = load(out);
  assert_int_equal(t->n_nodes, 3);
  assert_false(has_id(t, 4));
  etsim_et_trace_free(t);
  free(in);
  free(out);
}

/* ----------------------------------------------------------- iterations */

static void test_iterations(void **state) {
  (void)state;
  int32_t it[32];
  size_t n_iter;
  const char *how;
  /* Markers at 1 and 4: node 0 is outside. */
  uint64_t h[10] = {9, 1, 2, 3, 1, 2, 3, 7};
  uint8_t mk[10] = {0, 1, 0, 0, 1, 0, 0, 0};
  assert_int_equal(etsim_edit__iterations(h, mk, 8, it, &n_iter, &how), 0);
  assert_int_equal(n_iter, 2);
  int32_t want_m[8] = {-1, 0, 0, 0, 1, 1, 1, 1};
  assert_memory_equal(it, want_m, sizeof want_m);
  /* Prologue P, three periods of A B C, epilogue E (hashes once each). */
  uint64_t s[11] = {100, 1, 2, 3, 1, 2, 3, 1, 2, 3, 200};
  assert_int_equal(etsim_edit__iterations(s, NULL, 11, it, &n_iter, &how), 0);
  assert_int_equal(n_iter, 3);
  assert_string_equal(how, "by repeating structure");
  int32_t want_s[11] = {-1, 0, 0, 0, 1, 1, 1, 2, 2, 2, -1};
  assert_memory_equal(it, want_s, sizeof want_s);
  /* A period inside an iteration that repeats as a whole: A A B | A A B. */
  uint64_t r[6] = {1, 1, 2, 1, 1, 2};
  assert_int_equal(etsim_edit__iterations(r, NULL, 6, it, &n_iter, &how), 0);
  assert_int_equal(n_iter, 2);
  assert_int_equal(it[2], 0);
  assert_int_equal(it[3], 1);
  /* A partial last period is outside. */
  uint64_t q[8] = {1, 2, 3, 1, 2, 3, 1, 2};
  assert_int_equal(etsim_edit__iterations(q, NULL, 8, it, &n_iter, &how), 0);
  assert_int_equal(n_iter, 2);
  assert_int_equal(it[5], 1);
  assert_int_equal(it[6], -1);
  /* No repetition: one iteration, nothing outside. */
  uint64_t u[4] = {1, 2, 3, 4};
  assert_int_equal(etsim_edit__iterations(u, NULL, 4, it, &n_iter, &how), 0);
  assert_int_equal(n_iter, 1);
  for (int i = 0; i < 4; i++) assert_int_equal(it[i], 0);
}

/* Two iterations marked by ProfilerStep#N, a set-up node before them. */
static const tn_t steps[] = {
    COMP(10, "setup", 1),
    COMP(11, "ProfilerStep#0", 0, .deps = {10}, .nd = 1),
    COMP(12, "fwd", 5, .deps = {11}, .nd = 1),
    COMP(13, "bwd", 5, .deps = {12, 10}, .nd = 2),
    COMP(14, "ProfilerStep#1", 0, .deps = {13}, .nd = 1),
    COMP(15, "fwd", 6, .deps = {14}, .nd = 1),
    COMP(16, "bwd", 6, .deps = {15, 13}, .nd = 2),
};

static void test_iter_select(void **state) {
  (void)state;
  char *in = path_of("steps.et"), *a = path_of("st_a.et"), *b = path_of("st_b.et"),
       *ab = path_of("st_ab.et");
  write_et(in, steps, 7, 0);
  etsim_error_t err = {0};
  assert_int_equal(run_edit(in, a, NULL, &err, NULL, "iter", "0", NULL), 0);
  assert_int_equal(run_edit(in, b, NULL, &err, NULL, "iter-only", "1", NULL), 0);
  etsim_et_trace_t *t = load(a);
  assert_int_equal(t->n_nodes, 4); /* setup + step 0 */
  etsim_et_trace_free(t);
  t = load(b);
  assert_int_equal(t->n_nodes, 3);
  assert_string_equal(deps_of(t, 14, 0), ""); /* its dependency on 13 was cut... */
  /* ...and recorded, for --concat. */
  int64_t k =
      etsim_et_trace_attr_find(t, 0, (uint32_t)etsim_intern_find(&t->strings, "cut_data_deps"));
  TU_GE(k, 0);
  etsim_et_trace_free(t);
  /* Joining the pieces gives the original back. */
  assert_int_equal(run_edit(a, ab, NULL, &err, NULL, "concat", b, NULL), 0);
  etsim_diff_report_t d;
  assert_int_equal(etsim_diff(in, ab, NULL, &d, &err), 0);
  if (!d.equal) print_error("%s\n", d.first);
  assert_true(d.equal);
  /* An iteration past the end is an error that says how many there are. */
  assert_int_equal(run_edit(in, a, NULL, &err, NULL, "iter", "2", NULL), ETSIM_EINVAL);
  assert_non_null(strstr(err.msg, "has 2 iteration(s)"));
  free(in);
  free(a);
  free(b);
  free(ab);
}

/* ------------------------------------------------------------ insertion */

static void test_insert(void **state) {
  (void)state;
  char *in = path_of("ins.et"), *out = path_of("ins_out.et");
  write_et(in, chain, 6, 0);
  etsim_error_t err = {0};
  etsim_edit_report_t rep;
  assert_int_equal(
      run_edit(in, out, &rep, &err, NULL, "insert-after", "comp:50us:name=after@name=^mid_1$",
               "insert-before", "all-reduce:1MiB:pg=3@name=^b$", NULL),
      0);
  assert_int_equal(rep.inserted, 2);
  etsim_edit_report_free(&rep);
  etsim_et_trace_t *t = load(out);
  assert_int_equal(t->n_nodes, 8);
  /* Fresh ids past the largest (5), in output order. */
  size_t i6, i7;
  assert_true(etsim_et_trace_find(t, 6, &i6) && etsim_et_trace_find(t, 7, &i7));
  assert_string_equal(t->name[i6], "after");
  assert_int_equal(t->dur_us[i6], 50);
  assert_string_equal(deps_of(t, 6, 0), "1");
  /* mid_1's children now wait for it. */
  assert_string_equal(deps_of(t, 2, 0), "6");
  assert_string_equal(deps_of(t, 4, 0), "2,6");
  /* The collective takes b's dependencies; b waits for it. */
  assert_int_equal(t->type[i7], ETSIM_ET_COMM_COLL_NODE);
  assert_string_equal(deps_of(t, 7, 0), "2");
  assert_string_equal(deps_of(t, 3, 0), "7");
  int64_t v;
  assert_int_equal(etsim_et_trace_attr_int(t, i7, t->k_comm_size, &v), 1);
  assert_int_equal(v, 1048576);
  assert_string_equal(etsim_et_trace_attr_str(t, i7, t->k_pg_name), "3");
  etsim_et_trace_free(t);
  /* Inserted nodes go when their anchor was dropped before. */
  assert_int_equal(run_edit(in, out, &rep, &err, NULL, "drop", "name=^b$", "insert-before",
                            "comp:1us@name=^b$", NULL),
                   0);
  assert_int_equal(rep.inserted, 0);
  etsim_edit_report_free(&rep);
  free(in);
  free(out);
}

/* --------------------------------------------------------------- scaling */

static void test_scale(void **state) {
  (void)state;
  char *in = path_of("sc.et"), *out = path_of("sc_out.et");
  /* Kinds: comm_size int64, tensor_size uint64, num_ops int32 (odd). */
  etsim_et_writer_t *w;
  etsim_error_t err = {0};
  assert_int_equal(etsim_et_writer_open(&w, in, 0, &err), 0);
  etsim_et_meta_t meta = {.version = "1.0.0"};
  assert_int_equal(etsim_et_writer_meta(w, &meta, &err), 0);
  etsim_attr_t a0[3] = {{.name = "num_ops", .doc = "", .kind = ETSIM_ATTR_INT32},
                        {.name = "tensor_size", .doc = "", .kind = ETSIM_ATTR_UINT64},
                        {.name = "op_schema", .doc = "", .kind = ETSIM_ATTR_STRING}};
  a0[0].v.i32 = 1000;
  a0[1].v.u64 = 3000;
  a0[2].v.s = "aten::mm(Tensor self, Tensor mat2) -> Tensor";
  etsim_et_node_t n0 = {.id = 0,
                        .name = "mm",
                        .type = ETSIM_ET_COMP_NODE,
                        .duration_micros = 903,
                        .n_attrs = 3,
                        .attrs = a0};
  etsim_attr_t a1[4] = {{.name = "comm_type", .doc = "", .kind = ETSIM_ATTR_INT64},
                        {.name = "comm_size", .doc = "", .kind = ETSIM_ATTR_INT64},
                        {.name = "pg_name", .doc = "", .kind = ETSIM_ATTR_STRING},
                        {.name = "is_cpu_op", .doc = "", .kind = ETSIM_ATTR_BOOL}};
  a1[0].v.i64 = ETSIM_COLL_ALL_REDUCE;
  a1[1].v.i64 = 3;
  a1[2].v.s = "7";
  uint64_t d0 = 0;
  etsim_et_node_t n1 = {.id = 1,
                        .name = "ar",
                        .type = ETSIM_ET_COMM_COLL_NODE,
                        .n_data_deps = 1,
                        .data_deps = &d0,
                        .n_attrs = 4,
                        .attrs = a1};
  etsim_et_node_t n2 = {.id = 2,
                        .name = "other",
                        .type = ETSIM_ET_COMP_NODE,
                        .duration_micros = 1000,
                        .n_data_deps = 1,
                        .data_deps = &d0};
  assert_int_equal(etsim_et_writer_node(w, &n0, &err), 0);
  assert_int_equal(etsim_et_writer_node(w, &n1, &err), 0);
  assert_int_equal(etsim_et_writer_node(w, &n2, &err), 0);
  assert_int_equal(etsim_et_writer_commit(w, &err), 0);

  assert_int_equal(run_edit(in, out, NULL, &err, NULL, "scale-time", "0.5", "scale-flops",
                            "2@name=^mm$", "scale-tensor", "0.5", "scale-comm", "0.25", NULL),
                   0);
  etsim_et_trace_t *t = load(out);
  /* 903 us / 2 = 451.5 us: 452 whole us is off by 0.11 %, so duration_ns
   * carries the exact time; 1000 / 2 = 500 us needs none. */
  assert_int_equal(t->dur_us[0], 452);
  int64_t v;
  assert_int_equal(etsim_et_trace_attr_int_by_name(t, 0, "duration_ns", &v), 1);
  assert_int_equal(v, 451500);
  assert_int_equal(t->dur_us[2], 500);
  assert_int_equal(etsim_et_trace_attr_int_by_name(t, 2, "duration_ns", &v), 0);
  /* Kinds are kept. */
  etsim_attr_t a;
  etsim_et_trace_attr(t, (size_t)etsim_et_trace_attr_find(t, 0, t->k_num_ops), &a);
  assert_int_equal(a.kind, ETSIM_ATTR_INT32);
  assert_int_equal(a.v.i32, 2000);
  etsim_et_trace_attr(t, (size_t)etsim_et_trace_attr_find(t, 0, t->k_tensor_size), &a);
  assert_int_equal(a.kind, ETSIM_ATTR_UINT64);
  assert_int_equal(a.v.u64, 1500);
  /* 3 bytes / 4 rounds to 1, never 0 (simulators refuse an empty message). */
  assert_int_equal(etsim_et_trace_attr_int(t, 1, t->k_comm_size, &v), 1);
  assert_int_equal(v, 1);
  etsim_et_trace_free(t);

  /* Rounding: sizes up to powers of two or multiples, times likewise. */
  assert_int_equal(
      run_edit(in, out, NULL, &err, NULL, "round-sizes", "pow2", "round-times", "pow2", NULL), 0);
  t = load(out);
  etsim_et_trace_attr(t, (size_t)etsim_et_trace_attr_find(t, 0, t->k_tensor_size), &a);
  assert_int_equal(a.v.u64, 4096);
  assert_int_equal(t->dur_us[0], 1024);
  assert_int_equal(t->dur_us[2], 1024);
  assert_int_equal(etsim_et_trace_attr_int(t, 1, t->k_comm_size, &v), 1);
  assert_int_equal(v, 4);
  etsim_et_trace_free(t);
  assert_int_equal(
      run_edit(in, out, NULL, &err, NULL, "round-sizes", "1KiB", "round-times", "300us", NULL), 0);
  t = load(out);
  etsim_et_trace_attr(t, (size_t)etsim_et_trace_attr_find(t, 0, t->k_tensor_size), &a);
  assert_int_equal(a.v.u64, 3072);
  assert_int_equal(t->dur_us[0], 1200);
  etsim_et_trace_free(t);

  /* Anonymize: keyed, stable, pg_name kept; strip-attrs keeps what
   * simulation reads. */
  char *out2 = path_of("sc_out2.et");
  etsim_edit_opts_t o1 = {.salt = "one"}, o2 = {.salt = "two"};
  assert_int_equal(
      run_edit(in, out, NULL, &err, &o1, "anonymize", "hash", "strip-attrs", "sim", NULL), 0);
  assert_int_equal(run_edit(in, out2, NULL, &err, &o2, "anonymize", "hash", NULL), 0);
  t = load(out);
  etsim_et_trace_t *t2 = load(out2);
  assert_int_equal(strlen(t->name[0]), 17);
  assert_int_equal(t->name[0][0], 'h');
  assert_string_not_equal(t->name[0], "mm");
  assert_string_not_equal(t->name[0], t2->name[0]); /* another salt */
  assert_string_not_equal(t->name[0], t->name[2]);
  assert_string_equal(etsim_et_trace_attr_str(t, 1, t->k_pg_name), "7");
  assert_int_equal(
      etsim_et_trace_attr_find(t, 0, (uint32_t)etsim_intern_find(&t->strings, "op_schema")), -1);
  int64_t os = etsim_intern_find(&t2->strings, "op_schema");
  TU_GT(os, 0);
  const char *h = etsim_et_trace_attr_str(t2, 0, (uint32_t)os);
  assert_non_null(h);
  assert_int_equal(h[0], 'h');
  etsim_et_trace_free(t);
  etsim_et_trace_free(t2);
  /* The same name hashes alike in another run (ranks and files agree). */
  assert_int_equal(run_edit(in, out2, NULL, &err, &o1, "anonymize", "hash", NULL), 0);
  t = load(out);
  t2 = load(out2);
  assert_string_equal(t->name[0], t2->name[0]);
  etsim_et_trace_free(t);
  etsim_et_trace_free(t2);
  assert_int_equal(run_edit(in, out, NULL, &err, NULL, "anonymize", "strip", NULL), 0);
  t = load(out);
  assert_string_equal(t->name[0], "");
  etsim_et_trace_free(t);

  /* A profile sets durations by name: header in ns, quoted names with
   * commas, rows for absent names are harmless. */
  char *csv = path_of("prof.csv");
  const char *text = "name,time_ns\n\"mm\",1500\nnot there,7\nother,2000000\n";
  assert_int_equal(tu_write(csv, text, strlen(text)), 0);
  assert_int_equal(run_edit(in, out, NULL, &err, NULL, "profile", csv, NULL), 0);
  t = load(out);
  assert_int_equal(t->dur_us[0], 2); /* 1.5 us: 2 whole us, exact in duration_ns */
  assert_int_equal(etsim_et_trace_attr_int_by_name(t, 0, "duration_ns", &v), 1);
  assert_int_equal(v, 1500);
  assert_int_equal(t->dur_us[2], 2000);
  etsim_et_trace_free(t);
  const char *dup = "mm,1\nmm,2\n";
  assert_int_equal(tu_write(csv, dup, strlen(dup)), 0);
  assert_int_equal(run_edit(in, out, NULL, &err, NULL, "profile", csv, NULL), ETSIM_EFORMAT);
  assert_non_null(strstr(err.msg, "prof.csv:2: 'mm' is listed twice"));
  free(csv);
  free(in);
  free(out);
  free(out2);
}

/* ----------------------------------------------------------------- joins */

static void test_concat(void **state) {
  (void)state;
  /* A: two sinks (1, 2); B: three roots (0, 1, 2) and a sink. */
  const tn_t a[] = {COMP(0, "a0", 1), COMP(1, "a1", 1, .deps = {0}, .nd = 1),
                    COMP(2, "a2", 1, .deps = {0}, .nd = 1)};
  const tn_t b[] = {COMP(0, "b0", 1), COMP(1, "b1", 1), COMP(2, "b2", 1),
                    COMP(3, "b3", 1, .deps = {0, 1, 2}, .nd = 3)};
  char *pa = path_of("ca.et"), *pb = path_of("cb.et"), *out = path_of("cab.et");
  write_et(pa, a, 3, 0);
  write_et(pb, b, 4, 0);
  etsim_error_t err = {0};
  etsim_edit_report_t rep;
  assert_int_equal(run_edit(pa, out, &rep, &err, NULL, "concat", pb, NULL), 0);
  assert_int_equal(rep.join_edges, 6);
  etsim_edit_report_free(&rep);
  etsim_et_trace_t *t = load(out);
  /* B's ids collide with A's: shifted past A's largest. */
  assert_int_equal(t->n_nodes, 7);
  assert_string_equal(deps_of(t, 3, 0), "1,2");
  assert_string_equal(deps_of(t, 5, 0), "1,2");
  assert_string_equal(deps_of(t, 6, 0), "3,4,5");
  etsim_et_trace_free(t);
  /* Repeating three times: ids 0..8, each copy after the one before. */
  assert_int_equal(run_edit(pa, out, NULL, &err, NULL, "repeat", "3", NULL), 0);
  t = load(out);
  assert_int_equal(t->n_nodes, 9);
  assert_string_equal(deps_of(t, 6, 0), "4,5");
  assert_string_equal(deps_of(t, 8, 0), "6");
  etsim_et_trace_free(t);
  /* Many sinks by many roots meet in one zero-time join node. */
  tn_t wide[100];
  for (int i = 0; i < 100; i++) wide[i] = (tn_t)COMP((uint64_t)i, "w", 1);
  char *pw = path_of("wide.et");
  write_et(pw, wide, 100, 0);
  assert_int_equal(run_edit(pw, out, &rep, &err, NULL, "concat", pw, NULL), 0);
  assert_int_equal(rep.join_edges, 200);
  assert_int_equal(rep.inserted, 1);
  etsim_edit_report_free(&rep);
  t = load(out);
  assert_int_equal(t->n_nodes, 201);
  size_t j;
  assert_true(etsim_et_trace_find(t, 200, &j));
  assert_int_equal(t->type[j], ETSIM_ET_METADATA_NODE);
  assert_int_equal(t->data_off[j + 1] - t->data_off[j], 100);
  assert_string_equal(deps_of(t, 150, 0), "200");
  assert_int_equal(j, 100); /* written between the parts */
  etsim_et_trace_free(t);
  free(pa);
  free(pb);
  free(pw);
  free(out);
}

/* --------------------------------------------------------------- ranks */

/* Two ranks: a collective on the world, then 0 sends to 1. */
static void write_pair(const char *prefix) {
  char p[4200];
  const tn_t r0[] = {
      {.id = 0, .name = "ar", .type = ETSIM_ET_COMM_COLL_NODE, .coll = 0, .size = 64},
      {.id = 1,
       .name = "send",
       .type = ETSIM_ET_COMM_SEND_NODE,
       .coll = -1,
       .size = 8,
       .peer = 1,
       .deps = {0},
       .nd = 1},
      COMP(2, "after", 3, .deps = {1}, .nd = 1)};
  const tn_t r1[] = {
      {.id = 0, .name = "ar", .type = ETSIM_ET_COMM_COLL_NODE, .coll = 0, .size = 64},
      {.id = 1,
       .name = "recv",
       .type = ETSIM_ET_COMM_RECV_NODE,
       .coll = -1,
       .size = 8,
       .peer = 0,
       .deps = {0},
       .nd = 1},
      COMP(2, "after", 3, .deps = {1}, .nd = 1)};
  snprintf(p, sizeof p, "%s.0.et", prefix);
  write_et(p, r0, 3, 0);
  snprintf(p, sizeof p, "%s.1.et", prefix);
  write_et(p, r1, 3, 0);
}

static void test_ranks(void **state) {
  (void)state;
  char *in = path_of("pair"), *out = path_of("pair_out"), p[4200];
  write_pair(in);
  etsim_error_t err = {0};
  etsim_edit_report_t rep;
  /* Rank 1 alone: its receive from the dropped rank goes. */
  assert_int_equal(run_edit(in, out, &rep, &err, NULL, "ranks", "1", NULL), 0);
  assert_int_equal(rep.ranks_out, 1);
  assert_int_equal(rep.dropped, 1);
  etsim_edit_report_free(&rep);
  snprintf(p, sizeof p, "%s.0.et", out);
  etsim_et_trace_t *t = load(p);
  assert_int_equal(t->n_nodes, 2);
  assert_string_equal(deps_of(t, 2, 0), "0");
  etsim_et_trace_free(t);
  snprintf(p, sizeof p, "%s.1.et", out);
  assert_false(exists(p));
  /* Swapping the ranks swaps the peers. */
  assert_int_equal(run_edit(in, out, NULL, &err, NULL, "remap-ranks", "1,0", NULL), 0);
  snprintf(p, sizeof p, "%s.1.et", out);
  t = load(p);
  size_t i;
  int64_t v;
  assert_true(etsim_et_trace_find(t, 1, &i));
  assert_int_equal(t->type[i], ETSIM_ET_COMM_SEND_NODE);
  assert_int_equal(etsim_et_trace_attr_int(t, i, t->k_comm_dst, &v), 1);
  assert_int_equal(v, 0);
  etsim_et_trace_free(t);
  /* Two jobs side by side: four ranks, two communicators for the worlds. */
  assert_int_equal(run_edit(in, out, &rep, &err, NULL, "beside", in, NULL), 0);
  assert_int_equal(rep.ranks_out, 4);
  etsim_edit_report_free(&rep);
  snprintf(p, sizeof p, "%s.3.et", out);
  t = load(p);
  assert_true(etsim_et_trace_find(t, 1, &i));
  assert_int_equal(etsim_et_trace_attr_int(t, i, t->k_comm_src, &v), 1);
  assert_int_equal(v, 2);
  assert_string_equal(etsim_et_trace_attr_str(t, 0, t->k_pg_name), "2");
  etsim_et_trace_free(t);
  snprintf(p, sizeof p, "%s.comm_group.json", out);
  size_t len;
  char *g = (char *)tu_read(p, &len);
  assert_non_null(g);
  assert_non_null(strstr(g, "\"1\": [0, 1]"));
  assert_non_null(strstr(g, "\"2\": [2, 3]"));
  free(g);
  free(in);
  free(out);
}

static void test_unmatched(void **state) {
  (void)state;
  char *in = path_of("um"), *out = path_of("um_out"), p[4200];
  write_pair(in);
  etsim_error_t err = {0};
  /* Dropping the send alone leaves the receive unmatched: refused, and
   * nothing is written. */
  assert_int_equal(run_edit(in, out, NULL, &err, NULL, "drop", "name=^send$", NULL), ETSIM_EINVAL);
  assert_non_null(strstr(err.msg, "receive unmatched"));
  snprintf(p, sizeof p, "%s.0.et", out);
  assert_false(exists(p));
  /* A collective added on one rank only unbalances the world. */
  assert_int_equal(
      run_edit(in, out, NULL, &err, NULL, "insert-after", "all-reduce:4:name=x@name=^send$", NULL),
      ETSIM_EINVAL);
  assert_non_null(strstr(err.msg, "collectives unmatched"));
  assert_false(exists(p));
  free(in);
  free(out);
}

/* ------------------------------------------------------------- retarget */

static void test_retarget(void **state) {
  (void)state;
  /* Four identical ranks with a world all-gather of 1000 bytes each. */
  char *in = path_of("dp4"), *out = path_of("dp8"), p[4200];
  const tn_t r[] = {{.id = 0,
                     .name = "ag",
                     .type = ETSIM_ET_COMM_COLL_NODE,
                     .coll = ETSIM_COLL_ALL_GATHER,
                     .size = 1000},
                    COMP(1, "optimizer", 100, .deps = {0}, .nd = 1)};
  for (int k = 0; k < 4; k++) {
    snprintf(p, sizeof p, "%s.%d.et", in, k);
    write_et(p, r, 2, 0);
  }
  etsim_error_t err = {0};
  etsim_edit_opts_t o = {.dp_sharded = "^optimizer$"};
  assert_int_equal(run_edit(in, out, NULL, &err, &o, "dp", "8", NULL), 0);
  etsim_et_set_t *s;
  assert_int_equal(etsim_et_set_load(&s, out, 0, &err), 0);
  assert_int_equal(s->n_ranks, 8);
  etsim_et_trace_t *t = s->ranks[7];
  int64_t v;
  assert_int_equal(etsim_et_trace_attr_int(t, 0, t->k_comm_size, &v), 1);
  assert_int_equal(v, 500); /* a fixed whole over twice the ranks */
  assert_int_equal(t->dur_us[1], 50);
  etsim_et_set_free(s);
  /* An all-to-all over the replicas cannot be re-derived: refused. */
  const tn_t a2a[] = {{.id = 0,
                       .name = "a2a",
                       .type = ETSIM_ET_COMM_COLL_NODE,
                       .coll = ETSIM_COLL_ALL_TO_ALL,
                       .size = 64}};
  for (int k = 0; k < 4; k++) {
    snprintf(p, sizeof p, "%s.%d.et", in, k);
    write_et(p, a2a, 1, 0);
  }
  assert_int_equal(run_edit(in, out, NULL, &err, NULL, "dp", "2", NULL), ETSIM_EINVAL);
  assert_non_null(strstr(err.msg, "ALL_TO_ALL runs over the data-parallel replicas"));
  /* Ranks that would be replicas but differ: the set is one replica of
   * four ranks, and 16 NPUs are four of them, whose world collectives
   * stay inside each. */
  const tn_t odd[] = {
      {.id = 0, .name = "ar", .type = ETSIM_ET_COMM_COLL_NODE, .coll = 0, .size = 64},
      COMP(1, "extra", 1, .deps = {0}, .nd = 1)};
  snprintf(p, sizeof p, "%s.3.et", in);
  write_et(p, odd, 2, 0);
  for (int k = 0; k < 3; k++) {
    snprintf(p, sizeof p, "%s.%d.et", in, k);
    write_et(p, odd, 1, 0);
  }
  etsim_edit_report_t rep;
  assert_int_equal(run_edit(in, out, &rep, &err, NULL, "npus", "16", NULL), 0);
  int said = 0;
  for (size_t i = 0; i < rep.n_notes; i++)
    said |= strstr(rep.notes[i], "would be replicas but run different traces") != NULL;
  assert_true(said);
  etsim_edit_report_free(&rep);
  assert_int_equal(etsim_et_set_load(&s, out, 0, &err), 0);
  assert_int_equal(s->n_ranks, 16);
  assert_string_equal(etsim_et_trace_attr_str(s->ranks[0], 0, s->ranks[0]->k_pg_name), "1");
  assert_string_equal(etsim_et_trace_attr_str(s->ranks[13], 0, s->ranks[13]->k_pg_name), "4");
  assert_int_equal(s->ranks[15]->n_nodes, 2);
  etsim_et_set_free(s);
  assert_int_equal(run_edit(in, out, NULL, &err, NULL, "npus", "6", NULL), ETSIM_EINVAL);
  assert_non_null(strstr(err.msg, "6 is not a multiple of 4"));
  free(in);
  free(out);
}

/* ---------------------------------------------------------- bad input */

static void test_errors(void **state) {
  (void)state;
  etsim_edit_t *e;
  etsim_error_t err = {0};
  assert_int_equal(etsim_edit_new(&e, NULL, &err), 0);
  static const char *const bad[][3] = {
      {"keep", "colour=red", "is not a predicate"},
      {"keep", "name=(", "name=("},
      {"keep", "type=banana", "expected node types"},
      {"scale-time", "-1", "not F[@PRED]"},
      {"scale-time", "2@ancestors:all", "closures belong to --keep and --drop"},
      {"ids", "9-3", "not an id range"},
      {"insert-after", "comp:5us", "has no @PRED"},
      {"insert-after", "teleport:5@all", "not a node to insert"},
      {"round-sizes", "lots", "not pow2 or a size"},
      {"anonymize", "rot13", "not hash or strip"},
      {"ranks", "1-", "not a list of ranks"},
      {"no-such-op", "x", "unknown edit operation"},
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    assert_int_not_equal(etsim_edit_add(e, bad[k][0], bad[k][1], &err), 0);
    if (!strstr(err.msg, bad[k][2])) print_error("%s %s: %s\n", bad[k][0], bad[k][1], err.msg);
    assert_non_null(strstr(err.msg, bad[k][2]));
  }
  etsim_edit_free(e);
  /* Duplicate ids in the input: named, nothing written. */
  const tn_t dup[] = {COMP(4, "x", 1), COMP(4, "y", 1)};
  char *in = path_of("dup.et"), *out = path_of("dup_out.et");
  write_et(in, dup, 2, ETSIM_ET_WRITE_VERBATIM);
  assert_int_equal(run_edit(in, out, NULL, &err, NULL, "scale-time", "2", NULL), ETSIM_EFORMAT);
  assert_non_null(strstr(err.msg, "node 4: the id appears twice"));
  assert_false(exists(out));
  /* Dependencies on absent ids are dropped and counted. */
  const tn_t dang[] = {COMP(0, "x", 1),
                       COMP(1, "y", 1, .deps = {0, 77}, .nd = 2, .ctrl = {99}, .nc = 1)};
  write_et(in, dang, 2, ETSIM_ET_WRITE_VERBATIM);
  etsim_edit_report_t rep;
  assert_int_equal(run_edit(in, out, &rep, &err, NULL, NULL), 0);
  assert_int_equal(rep.dangling, 2);
  etsim_edit_report_free(&rep);
  etsim_et_trace_t *t = load(out);
  assert_int_equal(t->n_dangling, 0);
  assert_string_equal(deps_of(t, 1, 0), "0");
  etsim_et_trace_free(t);
  /* A missing input names itself. */
  char *none = path_of("none");
  assert_int_equal(run_edit(none, out, NULL, &err, NULL, NULL), ETSIM_ENOTFOUND);
  assert_non_null(strstr(err.msg, "none"));
  free(none);
  free(in);
  free(out);
}

/* ------------------------------------------------------------------ diff */

static void test_diff(void **state) {
  (void)state;
  char *a = path_of("da.et"), *b = path_of("db.et");
  write_et(a, chain, 6, 0);
  tn_t c[6];
  memcpy(c, chain, sizeof c);
  c[3].dur = 11;    /* node 3 changes */
  c[5].id = 9;      /* node 5 removed, 9 added */
  c[4].deps[1] = 0; /* 4: 2 -> 0 */
  write_et(b, c, 6, 0);
  etsim_diff_report_t d;
  etsim_error_t err = {0};
  assert_int_equal(etsim_diff(a, b, NULL, &d, &err), 0);
  assert_false(d.equal);
  assert_int_equal(d.changed[ETSIM_ET_COMP_NODE], 2);
  assert_int_equal(d.added[ETSIM_ET_COMP_NODE], 1);
  assert_int_equal(d.removed[ETSIM_ET_COMP_NODE], 1);
  assert_int_equal(d.edges_added[0], 1);
  assert_int_equal(d.edges_removed[0], 1);
  assert_int_equal(d.edges_removed[1], 1); /* 5's control edge */
  assert_int_equal(d.edges_added[1], 1);   /* 9's */
  assert_int_equal(d.first_index, 3);
  assert_non_null(strstr(d.first, "duration_micros 10 vs 11"));
  assert_int_equal(d.a.dur_us_by_type[ETSIM_ET_COMP_NODE], 60);
  assert_int_equal(d.b.dur_us_by_type[ETSIM_ET_COMP_NODE], 61);
  /* Names only: equal when names are ignored. */
  memcpy(c, chain, sizeof c);
  c[0].name = "renamed";
  write_et(b, c, 6, 0);
  assert_int_equal(etsim_diff(a, b, NULL, &d, &err), 0);
  assert_false(d.equal);
  etsim_diff_opts_t o = {.flags = ETSIM_DIFF_IGNORE_NAMES};
  assert_int_equal(etsim_diff(a, b, &o, &d, &err), 0);
  assert_true(d.equal);
  free(a);
  free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bridge),     cmocka_unit_test(test_closure),
      cmocka_unit_test(test_iterations), cmocka_unit_test(test_iter_select),
      cmocka_unit_test(test_insert),     cmocka_unit_test(test_scale),
      cmocka_unit_test(test_concat),     cmocka_unit_test(test_ranks),
      cmocka_unit_test(test_unmatched),  cmocka_unit_test(test_retarget),
      cmocka_unit_test(test_errors),     cmocka_unit_test(test_diff),
  };
  return TU_RUN(tests, tu_setup, tu_teardown);
}
