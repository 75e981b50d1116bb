/*
 * test_text.c — ASTRA-sim 1.0 text workloads to Chakra ET.
 *
 * Every file in ../shared/traces/astra-sim/text_workloads converts and
 * validates, with the node count the mode's rules give from the file's own
 * columns (counted here independently); NONE makes no collective (Chakra's
 * converter emits an ALL_REDUCE); the DATA and MODEL graphs have Chakra's
 * exact edges on a small input; HYBRID_TRANSFORMER carries model- and
 * data-parallel communicator groups; time units; malformed lines give
 * FILE:LINE:COLUMN and what was expected, and nothing is written.
 */
#define _XOPEN_SOURCE 700
#include "test_util.h"

#include "etsim/convtext.h"
#include "etsim/etcheck.h"

#include <dirent.h>
#include <sys/stat.h>

static int count_files(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) n += e->d_name[0] != '.';
  if (d) closedir(d);
  return n;
}

static etsim_et_trace_t *load(const char *path) {
  etsim_error_t err = {0};
  etsim_et_trace_t *t = NULL;
  if (etsim_et_trace_load(&t, path, 0, &err)) print_error("%s\n", err.msg);
  assert_non_null(t);
  return t;
}

static int convert(const char *text, const char *prefix, size_t npus, size_t passes, int unit,
                   int format, etsim_error_t *err) {
  etsim_conv_text_opts_t o = {npus, passes, unit, format, prefix, NULL};
  return etsim_conv_text_mem("in.txt", text, strlen(text), &o, NULL, err);
}

/* Index of the node named `name` (-1 if absent). */
static long find(const etsim_et_trace_t *t, const char *name) {
  for (size_t i = 0; i < t->n_nodes; i++)
    if (strcmp(t->name[i], name) == 0) return (long)i;
  return -1;
}

/* The data parents of node `name`, as names joined by ",". */
static void parents(const etsim_et_trace_t *t, const char *name, char *out, size_t n) {
  long i = find(t, name);
  out[0] = 0;
  TU_GE(i, 0);
  for (uint32_t k = t->data_off[i]; k < t->data_off[i + 1]; k++) {
    size_t l = strlen(out);
    snprintf(out + l, n - l, "%s%s", l ? "," : "", t->name[t->data_par[k]]);
  }
}

#define ASSERT_PARENTS(t, node, want)                                                            \
  do {                                                                                           \
    char got_[1024];                                                                             \
    parents(t, node, got_, sizeof got_);                                                         \
    if (strcmp(got_, want) != 0) print_error("%s: parents '%s', want '%s'\n", node, got_, want); \
    assert_string_equal(got_, want);                                                             \
  } while (0)

/* ------------------------------------------------ the shared workloads */

/* Expected nodes per pass from the file's columns, by the rules of each
 * mode (docs/gen.md), counted without the converter's code. */
static long expected_per_pass(const char *path, long *mode_out) {
  FILE *fp = fopen(path, "r");
  char line[4096], mode[64];
  long n = 0, nodes = 0, lbl = -1;
  assert_non_null(fp);
  assert_non_null(fgets(line, sizeof line, fp));
  assert_int_equal(sscanf(line, "%63s %ld", mode, &lbl) >= 1, 1);
  assert_non_null(fgets(line, sizeof line, fp));
  n = atol(line);
  char ty[64][3][32];
  long i = 0;
  while (i < 64 && fgets(line, sizeof line, fp)) {
    char name[128];
    long a, b, c, d, e, f, g, h;
    if (sscanf(line, "%127s %ld %ld %31s %ld %ld %31s %ld %ld %31s %ld %ld", name, &a, &b, ty[i][0],
               &c, &d, ty[i][1], &e, &f, ty[i][2], &g, &h) == 12)
      i++;
  }
  fclose(fp);
  assert_int_equal(i, n);
#define IS(l, p) (strcmp(ty[l][p], "NONE") != 0)
  if (strcmp(mode, "MICRO") == 0) {
    *mode_out = 0;
    for (long l = 0; l < n; l++) nodes += IS(l, 2);
  } else if (strcmp(mode, "DATA") == 0) {
    *mode_out = 1;
    nodes = 3 * n - 1; /* fwd, wg, ig except the first layer */
    for (long l = 0; l < n; l++) nodes += IS(l, 2);
  } else if (strcmp(mode, "MODEL") == 0) {
    *mode_out = 2;
    nodes = 3 * n;
    for (long l = 0; l < n; l++) nodes += IS(l, 0) + (l ? IS(l, 1) : 0);
  } else if (strncmp(mode, "HYBRID_DLRM", 11) == 0) {
    *mode_out = 3;
    nodes = 3 * n - 1 + (strcmp(ty[0][0], "ALLTOALL") == 0) + IS(0, 1);
    for (long l = 0; l < n; l++) nodes += IS(l, 2);
  } else if (strcmp(mode, "HYBRID_TRANSFORMER") == 0) {
    *mode_out = 4;
    nodes = 3 * n;
    for (long l = 0; l < n; l++) nodes += IS(l, 0) + IS(l, 1) + IS(l, 2);
  } else { /* the two hybrids */
    *mode_out = 5;
    nodes = 3 * n;
    for (long l = 0; l < n; l++) nodes += IS(l, 0) + (l ? IS(l, 1) : 0) + IS(l, 2);
  }
  return nodes;
}

static void finding(void *user, int severity, const char *line) {
  (void)user;
  if (severity == ETSIM_CHECK_PROBLEM) print_error("problem: %s\n", line);
}

static void test_shared_workloads(void **state) {
  (void)state;
  TU_NEED_SHARED(dir, "traces/astra-sim/text_workloads");
  static const char *files[] = {"DLRM_HybridParallel",
                                "MLP_HybridParallel_Data_Model",
                                "MLP_HybridParallel_Model_Data",
                                "MLP_ModelParallel",
                                "Resnet50_DataParallel",
                                "Transformer_HybridParallel",
                                "microAllReduce",
                                "microAllToAll"};
  for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
    char in[4200], prefix[4200];
    snprintf(in, sizeof in, "%s/%s.txt", dir, files[f]);
    snprintf(prefix, sizeof prefix, "%s/%s", tmp, files[f]);
    long mode;
    long per = expected_per_pass(in, &mode);
    etsim_conv_text_opts_t o = {8, 3, 0, 0, prefix, NULL};
    etsim_et_set_report_t rep;
    etsim_error_t err = {0};
    int rc = etsim_conv_text(in, &o, &rep, &err);
    TU_OK(rc, err);
    assert_int_equal(rep.n_ranks, 8);
    assert_int_equal(rep.rank_nodes, (uint64_t)(per * 3 * 8));
    /* Identical ranks share one file; the transformer's groups differ. */
    assert_int_equal(rep.n_files, mode == 4 ? 8 : 1);
    etsim_et_set_t *set;
    assert_int_equal(etsim_et_set_load(&set, prefix, 0, &err), 0);
    assert_int_equal(set->n_ranks, 8);
    for (size_t k = 0; k < set->n_traces; k++) {
      assert_int_equal(set->traces[k]->n_nodes, (size_t)(per * 3));
      assert_int_equal(etsim_et_validate(set->traces[k], finding, NULL), 0);
      etsim_et_stats_t st;
      assert_int_equal(etsim_et_stats(set->traces[k], &st), 0);
      assert_int_equal(st.cyclic, 0);
      etsim_et_stats_free(&st);
    }
    if (mode != 4) assert_int_equal(etsim_et_validate_set(set, finding, NULL), 0);
    /* Metadata as Chakra's converter writes it. */
    const etsim_et_meta_t *m = &set->traces[0]->meta;
    assert_int_equal(m->n_attrs, 2);
    assert_string_equal(m->attrs[0].name, "schema");
    assert_string_equal(m->attrs[0].v.s, "1.0.2-chakra.1.0.0");
    size_t tl;
    char *text = (char *)tu_read(in, &tl);
    assert_string_equal(m->attrs[1].v.s, text);
    free(text);
    etsim_et_set_free(set);
  }
  free(dir);
}

/* Resnet-50 (DATA): each forward of pass 2 waits for its layer's weight-
 * gradient all-reduce of pass 1 and the previous layer's forward. */
static void test_resnet_cross_pass(void **state) {
  (void)state;
  TU_NEED_SHARED(in, "traces/astra-sim/text_workloads/Resnet50_DataParallel.txt");
  char prefix[4200], path[4300];
  snprintf(prefix, sizeof prefix, "%s/rn", tmp);
  etsim_conv_text_opts_t o = {2, 2, 0, ETSIM_ET_OUT_RANK_FILES, prefix, NULL};
  etsim_error_t err = {0};
  assert_int_equal(etsim_conv_text(in, &o, NULL, &err), 0);
  snprintf(path, sizeof path, "%s.1.et", prefix);
  etsim_et_trace_t *t = load(path);
  assert_int_equal(t->n_nodes, 430);
  /* Second forward of layer_64_1_conv4 (index 1): node 215 + 1. */
  assert_string_equal(t->name[216], "COMP_NODE_layer_64_1_conv4_FWD");
  assert_int_equal(t->data_off[217] - t->data_off[216], 2);
  assert_string_equal(t->name[t->data_par[t->data_off[216]]], "COMP_NODE_conv1_FWD");
  assert_string_equal(t->name[t->data_par[t->data_off[216] + 1]],
                      "COMM_COLL_NODE_layer_64_1_conv4_ALLREDUCE");
  assert_int_equal(t->dur_us[216], 3456);
  int64_t v;
  long k = find(t, "COMM_COLL_NODE_layer_64_1_conv4_ALLREDUCE");
  assert_int_equal(etsim_et_trace_attr_int(t, (size_t)k, t->k_comm_size, &v), 1);
  assert_int_equal(v, 65536);
  etsim_et_trace_free(t);
  free(in);
}

/* ------------------------------------------------------------- graphs */

static const char *data3 =
    "DATA\n3\n"
    "a -1 10 NONE 0 11 NONE 0 12 ALLREDUCE 100 1\n"
    "b -1 20 NONE 0 21 NONE 0 22 NONE 0 1\n"
    "c -1 30 NONE 0 31 NONE 0 32 ALLREDUCE 300 1\n";

static void test_data_edges_and_none(void **state) {
  (void)state;
  char prefix[4200], path[4300];
  snprintf(prefix, sizeof prefix, "%s/d3", tmp);
  etsim_error_t err = {0};
  assert_int_equal(convert(data3, prefix, 4, 2, 0, 0, &err), 0);
  snprintf(path, sizeof path, "%s.c0.et", prefix);
  etsim_et_trace_t *t = load(path);
  /* Per pass: 3 fwd, 3 wg, 2 ig, and 2 all-reduces: layer b's NONE makes
   * no collective (Chakra's converter would emit an ALL_REDUCE). */
  assert_int_equal(t->n_nodes, 20);
  assert_int_equal(find(t, "COMM_COLL_NODE_b_NONE"), -1);
  size_t colls = 0;
  for (size_t i = 0; i < t->n_nodes; i++) colls += t->type[i] == ETSIM_ET_COMM_COLL_NODE;
  assert_int_equal(colls, 4);
  /* Pass 1 in Chakra's order and edges. */
  static const char *order[10] = {"COMP_NODE_a_FWD",
                                  "COMP_NODE_b_FWD",
                                  "COMP_NODE_c_FWD",
                                  "COMP_NODE_c_BWD_WG",
                                  "COMM_COLL_NODE_c_ALLREDUCE",
                                  "COMP_NODE_c_BWD_IG",
                                  "COMP_NODE_b_BWD_WG",
                                  "COMP_NODE_b_BWD_IG",
                                  "COMP_NODE_a_BWD_WG",
                                  "COMM_COLL_NODE_a_ALLREDUCE"};
  for (size_t i = 0; i < 10; i++) {
    assert_string_equal(t->name[i], order[i]);
    assert_int_equal(t->id[i], i);
  }
  ASSERT_PARENTS(t, "COMP_NODE_a_FWD", "");
  ASSERT_PARENTS(t, "COMP_NODE_c_BWD_WG", "COMP_NODE_c_FWD");
  ASSERT_PARENTS(t, "COMM_COLL_NODE_c_ALLREDUCE", "COMP_NODE_c_BWD_WG");
  ASSERT_PARENTS(t, "COMP_NODE_b_BWD_WG", "COMP_NODE_c_BWD_IG");
  ASSERT_PARENTS(t, "COMP_NODE_a_BWD_WG", "COMP_NODE_b_BWD_IG");
  /* Pass 2: a and c wait for their all-reduce, b for its weight gradient. */
  assert_string_equal(t->name[10], "COMP_NODE_a_FWD");
  assert_int_equal(t->data_off[11] - t->data_off[10], 1);
  assert_int_equal(t->data_par[t->data_off[10]], 9);
  assert_int_equal(t->data_off[12] - t->data_off[11], 2);
  assert_string_equal(t->name[t->data_par[t->data_off[11] + 1]], "COMP_NODE_b_BWD_WG");
  assert_string_equal(t->name[t->data_par[t->data_off[12] + 1]], "COMM_COLL_NODE_c_ALLREDUCE");
  assert_int_equal(t->dur_us[3], 32);
  etsim_et_trace_free(t);
}

static void test_model_edges(void **state) {
  (void)state;
  const char *text =
      "MODEL\n2\n"
      "x -1 5 ALLGATHER 64 6 ALLREDUCE 64 7 NONE 0 1\n"
      "y -1 8 ALLGATHER 32 9 ALLREDUCE 32 10 NONE 0 1\n";
  char prefix[4200], path[4300];
  snprintf(prefix, sizeof prefix, "%s/m2", tmp);
  etsim_error_t err = {0};
  assert_int_equal(convert(text, prefix, 2, 1, 0, 0, &err), 0);
  snprintf(path, sizeof path, "%s.c0.et", prefix);
  etsim_et_trace_t *t = load(path);
  assert_int_equal(t->n_nodes, 9); /* 2 fwd + 2 AG + 2 ig + 1 AR + 2 wg */
  ASSERT_PARENTS(t, "COMP_NODE_y_FWD", "COMM_COLL_NODE_x_ALLGATHER");
  ASSERT_PARENTS(t, "COMP_NODE_y_BWD_IG", "COMM_COLL_NODE_y_ALLGATHER");
  ASSERT_PARENTS(t, "COMM_COLL_NODE_y_ALLREDUCE", "COMP_NODE_y_BWD_IG");
  ASSERT_PARENTS(t, "COMP_NODE_x_BWD_IG", "COMP_NODE_y_BWD_WG,COMM_COLL_NODE_y_ALLREDUCE");
  ASSERT_PARENTS(t, "COMP_NODE_x_BWD_WG", "COMP_NODE_x_BWD_IG");
  assert_int_equal(find(t, "COMM_COLL_NODE_x_ALLREDUCE"), -1); /* first layer */
  etsim_et_trace_free(t);
}

static void test_transformer_groups(void **state) {
  (void)state;
  const char *text =
      "HYBRID_TRANSFORMER model_parallel_NPU_group: 2\n2\n"
      "e -1 5 ALLGATHER 64 6 NONE 0 7 ALLREDUCE 128 1\n"
      "q -1 8 NONE 0 9 ALLREDUCE 32 10 ALLREDUCE 256 1\n";
  char prefix[4200], path[4300];
  snprintf(prefix, sizeof prefix, "%s/tf", tmp);
  etsim_error_t err = {0};
  assert_int_equal(convert(text, prefix, 6, 1, 0, 0, &err), 0);
  snprintf(path, sizeof path, "%s.comm_group.json", prefix);
  size_t n;
  char *json = (char *)tu_read(path, &n);
  assert_non_null(json);
  assert_string_equal(json,
                      "{\n  \"1\": [0, 1],\n  \"2\": [2, 3],\n  \"3\": "
                      "[4, 5],\n  \"4\": [0, 2, 4],\n  \"5\": [1, 3, 5]\n}\n");
  free(json);
  /* Rank 3: model group 2 for forward and input gradients, data group 5. */
  etsim_et_set_t *set;
  assert_int_equal(etsim_et_set_load(&set, prefix, 0, &err), 0);
  const etsim_et_trace_t *t = set->ranks[3];
  uint32_t kpg = t->k_pg_name;
  long ag = find(t, "COMM_COLL_NODE_e_ALLGATHER");
  long ar_ig = find(t, "COMM_COLL_NODE_q_ALLREDUCE");
  TU_GE(ag, 0);
  TU_GE(ar_ig, 0);
  assert_string_equal(etsim_et_trace_attr_str(t, (size_t)ag, kpg), "2");
  size_t wg = 0, ig = 0;
  for (size_t i = 0; i < t->n_nodes; i++) {
    if (t->type[i] != ETSIM_ET_COMM_COLL_NODE) continue;
    const char *pg = etsim_et_trace_attr_str(t, i, kpg);
    int64_t sz;
    etsim_et_trace_attr_int(t, i, t->k_comm_size, &sz);
    if (sz >= 128) {
      assert_string_equal(pg, "5");
      wg++;
    } else {
      assert_string_equal(pg, "2");
      ig += sz == 32;
    }
  }
  assert_int_equal(wg, 2);
  assert_int_equal(ig, 1);
  /* Blocking input-gradient collective: the weight gradient waits for it. */
  ASSERT_PARENTS(t, "COMP_NODE_q_BWD_WG", "COMM_COLL_NODE_q_ALLREDUCE");
  ASSERT_PARENTS(t, "COMP_NODE_e_BWD_IG", "COMP_NODE_q_BWD_WG");
  etsim_et_set_free(set);
  /* Groups must tile the NPUs. */
  snprintf(prefix, sizeof prefix, "%s/tf_bad", tmp);
  assert_int_equal(convert(text, prefix, 5, 1, 0, 0, &err), ETSIM_EINVAL);
  TU_CONTAINS(err.msg, "does not divide the 5 NPUs");
}

static void test_dlrm_waits(void **state) {
  (void)state;
  const char *text =
      "HYBRID_DLRM 1\n4\n"
      "emb -1 3 ALLTOALL 96 3 ALLTOALL 96 3 NONE 0 1\n"
      "bot -1 4 NONE 0 4 NONE 0 4 ALLREDUCE 40 1\n"
      "top0 -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 50 1\n"
      "top1 -1 6 NONE 0 6 NONE 0 6 ALLREDUCE 60 1\n";
  char prefix[4200], path[4300];
  snprintf(prefix, sizeof prefix, "%s/dl", tmp);
  etsim_error_t err = {0};
  assert_int_equal(convert(text, prefix, 2, 1, 0, 0, &err), 0);
  snprintf(path, sizeof path, "%s.c0.et", prefix);
  etsim_et_trace_t *t = load(path);
  /* 4 fwd + a2a, 4 wg + 3 AR, 3 ig + gradient a2a = 16 */
  assert_int_equal(t->n_nodes, 16);
  ASSERT_PARENTS(t, "COMP_NODE_bot_FWD", "COMP_NODE_emb_FWD");
  ASSERT_PARENTS(t, "COMP_NODE_top0_FWD", "COMP_NODE_bot_FWD,COMM_COLL_NODE_emb_ALLTOALL");
  ASSERT_PARENTS(t, "COMP_NODE_emb_BWD_WG",
                 "COMP_NODE_bot_BWD_IG,"
                 "COMM_COLL_NODE_emb_ALLTOALL");
  etsim_et_trace_free(t);
}

static void test_time_units(void **state) {
  (void)state;
  const char *text = "MICRO\n1\nc -1 2500 NONE 0 999 NONE 0 1500 ALLREDUCE 8 1\n";
  char prefix[4200], path[4300];
  etsim_error_t err = {0};
  snprintf(prefix, sizeof prefix, "%s/us", tmp);
  const char *dtext = "DATA\n1\nc -1 2500 NONE 0 999 NONE 0 3000 ALLREDUCE 8 1\n";
  assert_int_equal(convert(dtext, prefix, 1, 1, ETSIM_TEXT_TIME_NS, 0, &err), 0);
  snprintf(path, sizeof path, "%s.c0.et", prefix);
  etsim_et_trace_t *t = load(path);
  assert_int_equal(t->n_nodes, 3);
  assert_int_equal(t->dur_us[0], 3); /* 2500 ns rounds to 3 us */
  int64_t v;
  assert_int_equal(etsim_et_trace_attr_int_by_name(t, 0, "duration_ns", &v), 1);
  assert_int_equal(v, 2500);
  assert_int_equal(t->dur_us[1], 3); /* 3000 ns is exact: no duration_ns */
  assert_int_equal(etsim_et_trace_attr_int_by_name(t, 1, "duration_ns", &v), 0);
  etsim_et_trace_free(t);
  snprintf(prefix, sizeof prefix, "%s/us2", tmp);
  assert_int_equal(convert(dtext, prefix, 1, 1, ETSIM_TEXT_TIME_US, 0, &err), 0);
  snprintf(path, sizeof path, "%s.c0.et", prefix);
  t = load(path);
  assert_int_equal(t->dur_us[0], 2500);
  etsim_et_trace_free(t);
  (void)text;
}

static void test_et_format(void **state) {
  (void)state;
  char prefix[4200], p0[4300], p2[4300];
  snprintf(prefix, sizeof prefix, "%s/pr", tmp);
  etsim_error_t err = {0};
  assert_int_equal(convert(data3, prefix, 3, 1, 0, ETSIM_ET_OUT_RANK_FILES, &err), 0);
  snprintf(p0, sizeof p0, "%s.0.et", prefix);
  snprintf(p2, sizeof p2, "%s.2.et", prefix);
  size_t n0, n2;
  unsigned char *a = tu_read(p0, &n0), *b = tu_read(p2, &n2);
  assert_non_null(a);
  assert_non_null(b);
  assert_int_equal(n0, n2);
  assert_memory_equal(a, b, n0);
  free(a);
  free(b);
  snprintf(p0, sizeof p0, "%s.manifest.json", prefix);
  assert_int_not_equal(access(p0, F_OK), 0);
}

/* ---------------------------------------------------------- bad input */

static void test_malformed(void **state) {
  (void)state;
  static const struct {
    const char *text, *msg;
  } cases[] = {
      {"", "in.txt:1:1: expected a parallelism"},
      {"PIPELINE\n1\n", "in.txt:1:1: expected a parallelism (MICRO"},
      {"  DATA extra\n1\n",
       "in.txt:1:8: expected the end of the first line, "
       "found 'extra'"},
      {"HYBRID_DLRM\n2\n", "in.txt:1:12: expected the last bottom layer's index"},
      {"HYBRID_TRANSFORMER groups: 4\n1\n",
       "in.txt:1:20: expected 'model_parallel_NPU_group: <G>'"},
      {"HYBRID_TRANSFORMER model_parallel_NPU_group: 0\n1\n",
       "in.txt:1:46: expected the model-parallel group size (a positive "
       "integer), found '0'"},
      {"DATA\n", "in.txt:2:1: expected the number of layers"},
      {"DATA\nthree\n",
       "in.txt:2:1: expected the number of layers (a positive "
       "integer), found 'three'"},
      {"DATA\n1\nc -1 5 NONE 0 5 NONE 0 5 ALLREDUCE\n",
       "in.txt:3:35: expected the weight-gradient collective size in bytes"},
      /* fuzz_text: a 0-byte collective was written, then refused by sim */
      {"DATA\n1\nc -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 0 5\n",
       "in.txt:3:36: expected a size of 1 byte or more (or NONE before it), found '0'"},
      {"DATA\n1\nc -1 5 NONE 0 5 BCAST 0 5 NONE 0 1\n",
       "in.txt:3:17: expected the input-gradient collective (ALLREDUCE, "
       "ALLGATHER, ALLTOALL, REDUCESCATTER or NONE), found 'BCAST'"},
      {"DATA\n1\nc -1 5.5 NONE 0 5 NONE 0 5 NONE 0 1\n",
       "in.txt:3:6: expected the forward compute time (a non-negative "
       "integer), found '5.5'"},
      {"DATA\n1\nc x 5 NONE 0 5 NONE 0 5 NONE 0 1\n", "in.txt:3:3: expected the reserved field"},
      {"DATA\n1\nc -1 5 NONE 0 5 NONE 0 5 NONE 0 1 9\n",
       "in.txt:3:35: expected the end of the line after 12 columns, found '9'"},
      {"DATA\n2\nc -1 5 NONE 0 5 NONE 0 5 NONE 0 1\n\n",
       "in.txt:5:1: expected 2 layer line(s) as line 2 says, found 1"},
      {"DATA\n1\nc -1 5 NONE 0 5 NONE 0 5 NONE 0 1\nd -1 5 NONE 0 5 NONE 0 5 "
       "NONE 0 1\n",
       "in.txt:4:1: expected the end of the file (line 2 gives the number of "
       "layers), found 'd'"},
      {"HYBRID_DLRM 3\n2\nc -1 5 NONE 0 5 NONE 0 5 NONE 0 1\nd -1 5 NONE 0 5 "
       "NONE 0 5 NONE 0 1\n",
       "in.txt:1: the last bottom layer (3) must be below the last layer"},
      {"HYBRID_CUSTOMIZED\n1\n",
       "in.txt:1:1: parallelism 'HYBRID_CUSTOMIZED' "
       "is not supported"},
  };
  char sub[4200];
  snprintf(sub, sizeof sub, "%s/bad", tmp);
  assert_int_equal(mkdir(sub, 0755), 0);
  char prefix[4300];
  snprintf(prefix, sizeof prefix, "%s/x", sub);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    etsim_error_t err = {0};
    int rc = convert(cases[i].text, prefix, 2, 1, 0, 0, &err);
    if (!strstr(err.msg, cases[i].msg))
      print_error("case %zu: got '%s', want '%s'\n", i, err.msg, cases[i].msg);
    if (rc != ETSIM_EFORMAT) TU_EQ(rc, ETSIM_EUNSUPPORTED);
    TU_CONTAINS(err.msg, cases[i].msg);
    assert_int_equal(count_files(sub), 0);
  }
  /* CRLF and tabs, blank lines, as in the shared files, are fine. */
  etsim_error_t err = {0};
  assert_int_equal(convert("DATA\t\t\r\n1\t\r\n\r\nc\t-1\t5\tNONE\t0\t5\tNONE\t0"
                           "\t5\tALLREDUCE\t4\t1\r\n\r\n",
                           prefix, 2, 1, 0, 0, &err),
                   0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shared_workloads),    cmocka_unit_test(test_resnet_cross_pass),
      cmocka_unit_test(test_data_edges_and_none), cmocka_unit_test(test_model_edges),
      cmocka_unit_test(test_transformer_groups),  cmocka_unit_test(test_dlrm_waits),
      cmocka_unit_test(test_time_units),          cmocka_unit_test(test_et_format),
      cmocka_unit_test(test_malformed),
  };
  return TU_RUN(tests, tu_setup, tu_teardown);
}
