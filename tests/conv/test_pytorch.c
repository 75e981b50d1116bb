/*
 * test_pytorch.c — `convert --from pytorch` on the real traces in
 * ../shared/traces: node counts per type (reference numbers from an
 * independent Python walk of the same JSON with et_replay's operator rule:
 * a node is an operator if it is record_param_comms / nccl:* / a Triton
 * kernel, or has an op_schema and is not c10d::*, and only operators with
 * no operator above them are converted), every collective's type, size and
 * group, sizes re-derived here from the source JSON, validation clean,
 * byte-identical reruns, and the bad-input errors.
 */
#include "test_util.h"

#include "etsim/convpt.h"
#include "etsim/etcheck.h"

#include <jansson.h>
#include <zlib.h>

/* ---------------------------------------------------------- helpers */

static json_t *load_json_gz(const char *path) {
  gzFile gz = gzopen(path, "rb");
  assert_non_null(gz);
  size_t cap = 1 << 20, len = 0;
  char *buf = malloc(cap);
  int n;
  while ((n = gzread(gz, buf + len, (unsigned)(cap - len))) > 0) {
    len += (size_t)n;
    if (cap - len < (1 << 16)) buf = realloc(buf, cap *= 2);
  }
  gzclose(gz);
  json_error_t je;
  json_t *v = json_loadb(buf, len, 0, &je);
  free(buf);
  assert_non_null(v);
  return v;
}

static void count_problem(void *user, int severity, const char *line) {
  if (severity == ETSIM_CHECK_PROBLEM) {
    (*(long *)user)++;
    print_message("validate: %s\n", line);
  }
}

static etsim_et_trace_t *load_valid(const char *path) {
  etsim_error_t err = {0};
  etsim_et_trace_t *t = NULL;
  int rc = etsim_et_trace_load(&t, path, 0, &err);
  TU_OK(rc, err);
  long problems = 0;
  assert_int_equal(etsim_et_validate(t, count_problem, &problems), 0);
  assert_int_equal(problems, 0);
  return t;
}

static size_t find(const etsim_et_trace_t *t, uint64_t id) {
  size_t i;
  assert_true(etsim_et_trace_find(t, id, &i));
  return i;
}

static int64_t attr_int(const etsim_et_trace_t *t, size_t i, const char *n) {
  int64_t v = -12345;
  assert_int_equal(etsim_et_trace_attr_int_by_name(t, i, n, &v), 1);
  return v;
}

static const char *attr_str(const etsim_et_trace_t *t, size_t i, const char *n) {
  int64_t k = etsim_intern_find(&t->strings, n);
  TU_GE(k, 0);
  return etsim_et_trace_attr_str(t, i, (uint32_t)k);
}

static int has_dep(const etsim_et_trace_t *t, size_t i, uint64_t id) {
  for (uint32_t k = t->data_off[i]; k < t->data_off[i + 1]; k++)
    if (!(t->data_par[k] & ETSIM_ET_DANGLING) && t->id[t->data_par[k]] == id) return 1;
  return 0;
}

static int convert(const char *in, const char *out, const char *kineto, etsim_convpt_summary_t *s,
                   etsim_error_t *err) {
  etsim_convpt_opts_t o = {0};
  o.rank = -1;
  o.kineto_path = kineto;
  return etsim_convpt_convert(in, out, &o, s, err);
}

/* Bytes of the Tensor-typed inputs of a new-layout node, as Chakra's
 * converter computes comm_size (numel * elem_bytes per tensor). */
static uint64_t tensor_bytes(const json_t *v) {
  if (json_is_array(v) && json_array_size(v) >= 5 && json_is_integer(json_array_get(v, 0)) &&
      json_is_integer(json_array_get(v, 4)))
    return (uint64_t)(json_integer_value(json_array_get(v, 3)) *
                      json_integer_value(json_array_get(v, 4)));
  uint64_t s = 0;
  for (size_t i = 0; json_is_array(v) && i < json_array_size(v); i++)
    s += tensor_bytes(json_array_get(v, i));
  return s;
}

static const json_t *src_node(const json_t *nodes, uint64_t id) {
  for (size_t i = 0; i < json_array_size(nodes); i++) {
    const json_t *n = json_array_get(nodes, i);
    if ((uint64_t)json_integer_value(json_object_get(n, "id")) == id) return n;
  }
  return NULL;
}

static const json_t *src_attr(const json_t *n, const char *name) {
  const json_t *a = json_object_get(n, "attrs");
  for (size_t i = 0; i < json_array_size(a); i++)
    if (strcmp(json_string_value(json_object_get(json_array_get(a, i), "name")), name) == 0)
      return json_object_get(json_array_get(a, i), "value");
  return NULL;
}

/* ------------------------------------------------------------ resnet */

static void test_resnet(void **state) {
  (void)state;
  TU_NEED_SHARED(in, "traces/param/resnet_2gpu_et.json.gz");
  char out[4200], et[4200], groups[4200];
  snprintf(out, sizeof out, "%s/resnet", tmp);
  etsim_convpt_summary_t s;
  etsim_error_t err = {0};
  int rc = convert(in, out, NULL, &s, &err);
  TU_OK(rc, err);
  /* Rank 1: the allreduce records name rank_in_group 1, start 0, stride 1. */
  assert_int_equal(s.rank, 1);
  snprintf(et, sizeof et, "%s/resnet.1.et", tmp);
  assert_string_equal(s.out_path, et);
  assert_int_equal(s.host_nodes, 14392);
  assert_int_equal(s.nodes_written, 3712);
  assert_int_equal(s.by_type[ETSIM_ET_METADATA_NODE], 1);
  assert_int_equal(s.by_type[ETSIM_ET_COMP_NODE], 3690);
  assert_int_equal(s.by_type[ETSIM_ET_COMM_COLL_NODE], 21);
  assert_int_equal(s.by_coll[ETSIM_COLL_ALL_REDUCE], 15);
  assert_int_equal(s.by_coll[ETSIM_COLL_BROADCAST], 6);
  assert_int_equal(s.comm_bytes, 307323096); /* the Python walk's sum */
  assert_int_equal(s.wait_edges, 6);         /* 6 waits, each matched */
  assert_int_equal(s.unmatched_waits, 0);
  assert_int_equal(s.process_groups, 1);
  assert_int_equal(s.legacy, 0);

  etsim_et_trace_t *t = load_valid(et);
  assert_int_equal(t->n_nodes, 3712);
  /* Node 437: record_param_comms of the first c10d::broadcast_, one float
   * tensor of 53120 elements. */
  size_t i = find(t, 437);
  assert_int_equal(t->type[i], ETSIM_ET_COMM_COLL_NODE);
  assert_string_equal(t->name[i], "record_param_comms");
  assert_int_equal(attr_int(t, i, "comm_type"), ETSIM_COLL_BROADCAST);
  assert_int_equal(attr_int(t, i, "comm_size"), 53120 * 4);
  assert_int_equal(attr_int(t, i, "is_cpu_op"), 0);
  assert_int_equal(attr_int(t, i, "rf_id"), 115);
  assert_string_equal(attr_str(t, i, "pg_name"), "0");
  /* Node 602: a broadcast of 53 int64 values. */
  i = find(t, 602);
  assert_int_equal(attr_int(t, i, "comm_size"), 53 * 8);
  /* Node 604 waits for seq 33, the collective of node 437. */
  i = find(t, 604);
  assert_int_equal(t->type[i], ETSIM_ET_COMP_NODE);
  assert_true(has_dep(t, i, 437));
  /* Node 3237: an all-reduce of 2,049,000 floats on thread 2. */
  i = find(t, 3237);
  assert_int_equal(attr_int(t, i, "comm_type"), ETSIM_COLL_ALL_REDUCE);
  assert_int_equal(attr_int(t, i, "comm_size"), 2049000 * 4);
  assert_int_equal(attr_int(t, i, "tid"), 2);
  /* Children of converted operators are not converted again: the
   * nccl:all_reduce under 3237 and the c10d:: wrapper above it. */
  assert_false(etsim_et_trace_find(t, 3238, &i));
  assert_false(etsim_et_trace_find(t, 3236, &i));
  /* The METADATA node carries the process groups the way ASTRA-sim reads
   * them: a Python list of one JSON string. */
  i = find(t, 4);
  assert_int_equal(t->type[i], ETSIM_ET_METADATA_NODE);
  TU_NE(t->io[i], 0);
  const char *pv = t->ios[t->io[i]].in.values;
  assert_string_equal(pv,
                      "['[{\"pg_name\": \"0\", \"pg_desc\": \"default_pg\", "
                      "\"backend_config\": \"cuda:nccl\", \"ranks\": [], "
                      "\"group_size\": 2, \"group_count\": 1}]']");

  /* Every collective: comm_size equals the bytes of the source node's
   * tensor inputs, and the 1.1.0 attributes agree (in_msg_nelems x dtype). */
  json_t *src = load_json_gz(in);
  const json_t *nodes = json_object_get(src, "nodes");
  size_t n_checked = 0;
  for (size_t k = 0; k < t->n_nodes; k++) {
    if (t->type[k] != ETSIM_ET_COMM_COLL_NODE) continue;
    const json_t *sn = src_node(nodes, t->id[k]);
    assert_non_null(sn);
    const json_t *in_v = json_object_get(json_object_get(sn, "inputs"), "values");
    const json_t *in_t = json_object_get(json_object_get(sn, "inputs"), "types");
    uint64_t b = 0;
    for (size_t a = 0; a < json_array_size(in_v); a++)
      if (strstr(json_string_value(json_array_get(in_t, a)), "Tensor"))
        b += tensor_bytes(json_array_get(in_v, a));
    assert_int_equal(attr_int(t, k, "comm_size"), (int64_t)b);
    const char *dtype = json_string_value(src_attr(sn, "dtype"));
    int64_t esz = strcmp(dtype, "Float") == 0 ? 4 : strcmp(dtype, "Long") == 0 ? 8 : -1;
    assert_int_equal(attr_int(t, k, "comm_size"),
                     json_integer_value(src_attr(sn, "in_msg_nelems")) * esz);
    const char *cn = json_string_value(src_attr(sn, "collective_name"));
    assert_int_equal(attr_int(t, k, "comm_type"),
                     strcmp(cn, "allreduce") == 0 ? ETSIM_COLL_ALL_REDUCE : ETSIM_COLL_BROADCAST);
    assert_string_equal(attr_str(t, k, "pg_name"), json_string_value(src_attr(sn, "pg_name")));
    n_checked++;
  }
  assert_int_equal(n_checked, 21);
  json_decref(src);

  /* The only group is pg "0", the world, which ASTRA-sim's group file
   * must not list (id 0 is reserved for all ranks): no file. */
  snprintf(groups, sizeof groups, "%s/resnet.comm_group.json", tmp);
  assert_string_equal(s.groups_path, "");
  assert_int_not_equal(access(groups, F_OK), 0);

  /* Deterministic: a second run gives the same bytes. */
  char out2[4200], et2[4200];
  snprintf(out2, sizeof out2, "%s/again", tmp);
  assert_int_equal(convert(in, out2, NULL, &s, &err), 0);
  snprintf(et2, sizeof et2, "%s/again.1.et", tmp);
  size_t l1, l2;
  unsigned char *b1 = tu_read(et, &l1), *b2 = tu_read(et2, &l2);
  assert_non_null(b1);
  assert_non_null(b2);
  assert_int_equal(l1, l2);
  assert_memory_equal(b1, b2, l1);
  free(b1);
  free(b2);
  etsim_et_trace_free(t);
  free(in);
}

/* ------------------------------------------------- 1.0.2 all_gather */

static void test_allgather_102(void **state) {
  (void)state;
  TU_NEED_SHARED(tgz, "traces/chakra/1.0.2-chakra.0.0.4.tgz");
  char cmd[4200], in[4200], out[4200];
  snprintf(cmd, sizeof cmd, "tar xzf '%s' -C '%s' 2>/dev/null", tgz, tmp);
  assert_int_equal(system(cmd), 0);
  snprintf(in, sizeof in, "%s/1.0.2-chakra.0.0.4.json", tmp);
  snprintf(out, sizeof out, "%s/ag.0.et", tmp);
  etsim_convpt_summary_t s;
  etsim_error_t err = {0};
  int rc = convert(in, out, NULL, &s, &err);
  TU_OK(rc, err);
  assert_string_equal(s.schema, "1.0.2-chakra.0.0.4");
  assert_int_equal(s.host_nodes, 263);
  assert_int_equal(s.nodes_written, 121);
  assert_int_equal(s.by_type[ETSIM_ET_METADATA_NODE], 1);
  assert_int_equal(s.by_type[ETSIM_ET_COMP_NODE], 110);
  assert_int_equal(s.by_type[ETSIM_ET_COMM_COLL_NODE], 10);
  assert_int_equal(s.by_coll[ETSIM_COLL_ALL_GATHER], 10);
  assert_int_equal(s.wait_edges, 10);
  assert_int_equal(s.rank, 0);
  etsim_et_trace_t *t = load_valid(out);
  size_t n_coll = 0;
  for (size_t k = 0; k < t->n_nodes; k++) {
    if (t->type[k] != ETSIM_ET_COMM_COLL_NODE) continue;
    n_coll++;
    assert_int_equal(attr_int(t, k, "comm_type"), ETSIM_COLL_ALL_GATHER);
    /* One float per rank: all-gather's comm_size is the per-rank input. */
    assert_int_equal(attr_int(t, k, "comm_size"), 1 * 4);
    /* 1.0.2 names the group by backend id 82149104, which the
     * process_group:init record maps to pg_name "0". */
    assert_string_equal(attr_str(t, k, "pg_name"), "0");
  }
  assert_int_equal(n_coll, 10);
  /* Node 40 is the wait for seq 12, the all_gather record 30. */
  assert_true(has_dep(t, find(t, 40), 30));
  etsim_et_trace_free(t);
  free(tgz);
}

/* ------------------------------------------------ legacy and PT2 */

static void test_legacy_linear(void **state) {
  (void)state;
  TU_NEED_SHARED(in, "traces/param/linear_et.json.gz");
  char out[4200];
  snprintf(out, sizeof out, "%s/linear.et", tmp);
  etsim_convpt_summary_t s;
  etsim_error_t err = {0};
  int rc = convert(in, out, NULL, &s, &err);
  TU_OK(rc, err);
  assert_int_equal(s.legacy, 1);
  assert_string_equal(s.schema, "1.0.1");
  assert_int_equal(s.host_nodes, 931);
  assert_int_equal(s.nodes_written, 320);
  assert_int_equal(s.by_type[ETSIM_ET_COMP_NODE], 320);
  assert_int_equal(s.schema_guessed, 0);
  etsim_et_trace_t *t = load_valid(out);
  /* The file lists callees before callers (12 as_strided, 11 transpose,
   * 10 t, ..., 9 linear): only aten::linear (9) is top level. */
  size_t i = find(t, 9);
  assert_string_equal(t->name[i], "aten::linear");
  assert_int_equal(attr_int(t, i, "rf_id"), 1);
  assert_false(etsim_et_trace_find(t, 10, &i));
  assert_false(etsim_et_trace_find(t, 11, &i));
  assert_false(etsim_et_trace_find(t, 12, &i));
  etsim_et_trace_free(t);
  free(in);
}

static void test_pt2(void **state) {
  (void)state;
  TU_NEED_SHARED(in, "traces/param/pt2_et.json");
  char out[4200];
  snprintf(out, sizeof out, "%s/pt2.et", tmp);
  etsim_convpt_summary_t s;
  etsim_error_t err = {0};
  assert_int_equal(convert(in, out, NULL, &s, &err), 0);
  assert_string_equal(s.schema, "1.1.1-chakra.0.0.4");
  /* Two iterations of aten::mm + a Triton kernel. */
  assert_int_equal(s.nodes_written, 4);
  etsim_et_trace_t *t = load_valid(out);
  assert_string_equal(t->name[find(t, 13)], "aten::mm");
  assert_string_equal(t->name[find(t, 16)], "triton_poi_fused_add_cos_neg_sin_0");
  /* One thread: a serial chain 13 <- 16 <- 26 <- 29. */
  assert_true(has_dep(t, find(t, 16), 13));
  assert_true(has_dep(t, find(t, 26), 16));
  assert_true(has_dep(t, find(t, 29), 26));
  assert_int_equal(t->n_data_edges, 3);
  etsim_et_trace_free(t);
  free(in);
}

/* --------------------------------------------------- with Kineto */

static void test_hta_kineto(void **state) {
  (void)state;
  TU_NEED_SHARED(host, "traces/hta/benchmark_simple_add_et.json.gz");
  TU_NEED_SHARED(dev, "traces/hta/benchmark_simple_add_trace.json.gz");
  char out[4200];
  snprintf(out, sizeof out, "%s/hta.et", tmp);
  etsim_convpt_summary_t s;
  etsim_error_t err = {0};
  int rc = convert(host, out, dev, &s, &err);
  TU_OK(rc, err);
  /* 10 top-level ops, all joined (this Kineto has no Record function id:
   * External id, equal to rf_id here, is used), 4 kernels. */
  assert_int_equal(s.host_ops, 10);
  assert_int_equal(s.linked_ops, 10);
  assert_int_equal(s.unlinked_ops, 0);
  TU_GT(s.join_by_external_id, 0);
  assert_int_equal(s.kernels, 4);
  assert_int_equal(s.nodes_written, 14);
  assert_int_equal(s.unlaunched_kernels, 0);
  /* Three cudaDeviceSynchronize calls each wait for an earlier kernel. */
  assert_int_equal(s.sync_edges, 3);
  etsim_et_trace_t *t = load_valid(out);
  /* aten::add (node 36): Kineto ts 1689360808135120 us, dur 199 us. */
  size_t i = find(t, 36);
  assert_int_equal(t->start_us[i], 1689360808135120ULL);
  assert_int_equal(t->dur_us[i], 199);
  assert_int_equal(attr_int(t, i, "duration_ns"), 199000);
  /* Its kernel (correlation 53) on stream 7: 3 us at 1689360808137698, after
   * the add (data and control) and the previous kernel on the stream. */
  size_t kidx = SIZE_MAX;
  for (size_t k = 0; k < t->n_nodes; k++)
    if (etsim_et_trace_attr_int_by_name(t, k, "correlation", &(int64_t){0}) == 1 &&
        attr_int(t, k, "correlation") == 53)
      kidx = k;
  TU_NE(kidx, SIZE_MAX);
  assert_int_equal(attr_int(t, kidx, "stream"), 7);
  assert_int_equal(attr_int(t, kidx, "is_cpu_op"), 0);
  assert_int_equal(t->start_us[kidx], 1689360808137698ULL);
  assert_int_equal(t->dur_us[kidx], 3);
  assert_true(has_dep(t, kidx, 36));
  assert_int_equal(t->ctrl_off[kidx + 1] - t->ctrl_off[kidx], 1);
  assert_int_equal(t->id[t->ctrl_par[t->ctrl_off[kidx]]], 36);
  TU_GT(t->id[kidx], 58); /* fresh ids above the host's */
  etsim_et_trace_free(t);
  free(host);
  free(dev);
}

/* ------------------------------------------- linked host trace (ET+) */

/* What chakra_trace_link writes: host ops with ts / inclusive_dur, and GPU
 * nodes (with `cat`) whose caller is the op that launched them. */
static void test_linked_etplus(void **state) {
  (void)state;
#define IO0                                                       \
  "\"inputs\": {\"values\": [], \"shapes\": [], \"types\": []}, " \
  "\"outputs\": {\"values\": [], \"shapes\": [], \"types\": []}"
#define T64 "[10, 11, 0, 64, 4, \"cuda:0\"]"
  const char *text =
      "{\"schema\": \"1.0.3-chakra.0.0.4\", \"pid\": 7, \"time\": \"t\", "
      "\"start_ts\": 100, \"finish_ts\": 200, \"nodes\": [\n"
      "{\"id\": 1, \"name\": \"[pytorch|profiler|execution_trace|process]\", "
      "\"ctrl_deps\": 1, " IO0
      ", \"attrs\": []},\n"
      "{\"id\": 2, \"name\": \"[pytorch|profiler|execution_trace|thread]\", "
      "\"ctrl_deps\": 1, " IO0
      ", \"attrs\": []},\n"
      "{\"id\": 3, \"name\": \"## process_group:init ##\", \"ctrl_deps\": 2, "
      "\"inputs\": {\"values\": [\"[{\\\"pg_name\\\": \\\"0\\\", \\\"ranks\\\": "
      "[], \\\"group_size\\\": 4}, {\\\"pg_name\\\": \\\"3\\\", "
      "\\\"ranks\\\": [0, 2], \\\"group_size\\\": 2}, "
      "{\\\"pg_name\\\": \\\"5\\\", \\\"ranks\\\": [], "
      "\\\"group_size\\\": 3}]\"], \"shapes\": [[]], \"types\": "
      "[\"String\"]}, \"outputs\": {\"values\": [], \"shapes\": [], \"types\": "
      "[]}, \"attrs\": []},\n"
      "{\"id\": 4, \"name\": \"aten::mm\", \"ctrl_deps\": 2, \"ts\": 1000, "
      "\"inclusive_dur\": 20, \"exclusive_dur\": 15, \"inputs\": {\"values\": "
      "[" T64
      "], \"shapes\": [[8, 8]], \"types\": [\"Tensor(float)\"]}, "
      "\"outputs\": {\"values\": [], \"shapes\": [], \"types\": []}, "
      "\"attrs\": [{\"name\": \"rf_id\", \"type\": \"uint64\", \"value\": 3}, "
      "{\"name\": \"op_schema\", \"type\": \"string\", \"value\": "
      "\"aten::mm(Tensor self, Tensor mat2) -> Tensor\"}]},\n"
      "{\"id\": 5, \"name\": \"c10d::allreduce_\", \"ctrl_deps\": 2, \"ts\": "
      "1030, \"inclusive_dur\": 10, " IO0
      ", \"attrs\": [{\"name\": "
      "\"op_schema\", \"type\": \"string\", \"value\": \"c10d::allreduce_(...)\"}]},\n"
      "{\"id\": 6, \"name\": \"record_param_comms\", \"ctrl_deps\": 5, \"ts\": "
      "1031, \"inclusive_dur\": 8, \"inputs\": {\"values\": [[" T64
      "], 1, "
      "[\"0\", \"default_pg\"], 2, \"allreduce\", [], [], 0, 1, 4], \"shapes\": "
      "[[[8, 8]], [], [[], []], [], [], [], [], [], [], []], \"types\": "
      "[\"GenericList[Tensor(float)]\", \"Int\", \"Tuple[String,String]\", "
      "\"Int\", \"String\", \"GenericList[]\", \"GenericList[]\", \"Int\", "
      "\"Int\", \"Int\"]}, \"outputs\": {\"values\": [], \"shapes\": [], "
      "\"types\": []}, \"attrs\": [{\"name\": \"collective_name\", \"type\": "
      "\"string\", \"value\": \"allreduce\"}, {\"name\": \"global_rank_start\", "
      "\"type\": \"int64\", \"value\": 0}, {\"name\": \"global_rank_stride\", "
      "\"type\": \"int64\", \"value\": 1}]},\n"
      "{\"id\": 7, \"name\": \"nccl:all_reduce\", \"ctrl_deps\": 6, " IO0
      ", \"attrs\": []},\n"
      "{\"id\": 8, \"name\": \"sm80_gemm\", \"ctrl_deps\": 4, \"cat\": "
      "\"kernel\", \"ts\": 1005, \"inclusive_dur\": 0.4, \"stream\": 7, " IO0
      ", \"attrs\": []},\n"
      "{\"id\": 9, \"name\": \"ncclDevKernel_AllReduce_Sum_f32_RING_LL\", "
      "\"ctrl_deps\": 6, \"cat\": \"kernel\", \"ts\": 1040, \"inclusive_dur\": "
      "12.5, \"stream\": 20, \"pg_name\": \"0\", " IO0
      ", \"attrs\": []},\n"
      "{\"id\": 10, \"name\": \"aten::add\", \"ctrl_deps\": 2, \"ts\": 3000, "
      "\"inclusive_dur\": 5, \"inter_thread_dep\": 4, " IO0
      ", \"attrs\": "
      "[{\"name\": \"op_schema\", \"type\": \"string\", \"value\": "
      "\"aten::add(Tensor a, Tensor b) -> Tensor\"}, {\"name\": \"tid\", "
      "\"type\": \"uint64\", \"value\": 2}]}]}\n";
#undef IO0
#undef T64
  char in[4200], out[4200];
  snprintf(in, sizeof in, "%s/etplus.json", tmp);
  snprintf(out, sizeof out, "%s/etplus", tmp);
  assert_int_equal(tu_write(in, text, strlen(text)), 0);
  etsim_convpt_summary_t s;
  etsim_error_t err = {0};
  int rc = convert(in, out, NULL, &s, &err);
  TU_OK(rc, err);
  assert_int_equal(s.rank, 2); /* rank_in_group 2 of a group from 0 by 1 */
  assert_int_equal(s.nodes_written, 6);
  assert_int_equal(s.kernels, 2);
  assert_int_equal(s.by_type[ETSIM_ET_METADATA_NODE], 1);
  assert_int_equal(s.by_type[ETSIM_ET_COMP_NODE], 4);
  /* Node 10, the first op of thread 2: after the op that finished last on
   * thread 0 before it began (6, ends at 1039 us), and after its ET+
   * inter_thread_dep (4). */
  assert_int_equal(s.inter_thread_edges, 2);
  assert_int_equal(s.by_type[ETSIM_ET_COMM_COLL_NODE], 1);
  snprintf(out, sizeof out, "%s/etplus.2.et", tmp);
  etsim_et_trace_t *t = load_valid(out);
  /* The op keeps the linked timing. */
  size_t i = find(t, 4);
  assert_int_equal(t->start_us[i], 1000);
  assert_int_equal(t->dur_us[i], 20);
  assert_int_equal(attr_int(t, i, "is_cpu_op"), 1);
  /* A 0.4 us kernel: 400 ns exact, 1 us (not 0) in duration_micros. */
  i = find(t, 8);
  assert_int_equal(t->type[i], ETSIM_ET_COMP_NODE);
  assert_int_equal(attr_int(t, i, "duration_ns"), 400);
  assert_int_equal(t->dur_us[i], 1);
  assert_int_equal(attr_int(t, i, "stream"), 7);
  assert_int_equal(attr_int(t, i, "is_cpu_op"), 0);
  assert_true(has_dep(t, i, 4));
  /* The record is the CPU-side launch; the NCCL kernel is the collective. */
  i = find(t, 6);
  assert_int_equal(t->type[i], ETSIM_ET_COMP_NODE);
  assert_true(has_dep(t, i, 4)); /* same thread, after the mm */
  i = find(t, 9);
  assert_int_equal(t->type[i], ETSIM_ET_COMM_COLL_NODE);
  assert_int_equal(attr_int(t, i, "comm_type"), ETSIM_COLL_ALL_REDUCE);
  assert_int_equal(attr_int(t, i, "comm_size"), 64 * 4);
  assert_string_equal(attr_str(t, i, "pg_name"), "0");
  assert_int_equal(attr_int(t, i, "duration_ns"), 12500);
  assert_int_equal(t->dur_us[i], 13);
  assert_int_equal(t->start_us[i], 1040);
  assert_true(has_dep(t, i, 6));
  assert_false(etsim_et_trace_find(t, 7, &i)); /* under the record */
  assert_false(etsim_et_trace_find(t, 5, &i)); /* the c10d:: wrapper */
  i = find(t, 10);
  assert_true(has_dep(t, i, 6));
  assert_true(has_dep(t, i, 4));
  assert_int_equal(t->data_off[i + 1] - t->data_off[i], 2);
  etsim_et_trace_free(t);
  size_t len;
  snprintf(out, sizeof out, "%s/etplus.comm_group.json", tmp);
  char *g = (char *)tu_read(out, &len);
  assert_non_null(g);
  /* "0" is the world and is left out; [] means 0 .. group_size-1. */
  assert_string_equal(g, "{\n  \"3\": [0, 2],\n  \"5\": [0, 1, 2]\n}\n");
  free(g);
}

/* Every allocation failure on the way is reported as ETSIM_ENOMEM with a
 * message and leaves nothing behind (and, under ASan, leaks nothing). */
static void test_out_of_memory(void **state) {
  (void)state;
  TU_NEED_SHARED(host, "traces/hta/benchmark_simple_add_et.json.gz");
  TU_NEED_SHARED(dev, "traces/hta/benchmark_simple_add_trace.json.gz");
  char out[4200];
  snprintf(out, sizeof out, "%s/oom.et", tmp);
  etsim_convpt_opts_t o = {0};
  o.rank = 0;
  o.kineto_path = dev;
  long n;
  int rc = ETSIM_ENOMEM;
  for (n = 1; n < 100000 && rc == ETSIM_ENOMEM; n++) {
    etsim_error_t err = {0};
    etsim_alloc_fail_after(n);
    rc = etsim_convpt_convert(host, out, &o, NULL, &err);
    etsim_alloc_fail_after(0);
    if (rc == ETSIM_ENOMEM) {
      TU_NE(err.msg[0], '\0');
      assert_int_not_equal(access(out, F_OK), 0);
    } else if (rc) {
      print_message("allocation %ld: rc %d '%s'\n", n, rc, err.msg);
    }
  }
  assert_int_equal(rc, 0);
  TU_GT(n, 20); /* the failures were really injected */
  etsim_et_trace_t *t = load_valid(out);
  assert_int_equal(t->n_nodes, 14);
  etsim_et_trace_free(t);
  /* A plain post-order file: the pass that reads nodes back by offset. */
  TU_NEED_SHARED(pt2, "traces/param/pt2_et.json");
  o.kineto_path = NULL;
  assert_int_equal(remove(out), 0);
  rc = ETSIM_ENOMEM;
  for (n = 1; n < 100000 && rc == ETSIM_ENOMEM; n++) {
    etsim_error_t err = {0};
    etsim_alloc_fail_after(n);
    rc = etsim_convpt_convert(pt2, out, &o, NULL, &err);
    etsim_alloc_fail_after(0);
    if (rc == ETSIM_ENOMEM) {
      TU_NE(err.msg[0], '\0');
      assert_int_not_equal(access(out, F_OK), 0);
    }
  }
  assert_int_equal(rc, 0);
  t = load_valid(out);
  assert_int_equal(t->n_nodes, 4);
  etsim_et_trace_free(t);
  free(pt2);
  free(host);
  free(dev);
}

/* --------------------------------------------------------- bad input */

static void expect_fail(const char *name, const char *text, int code, const char *needle) {
  char in[4200], out[4200];
  snprintf(in, sizeof in, "%s/%s.json", tmp, name);
  snprintf(out, sizeof out, "%s/%s_out.0.et", tmp, name);
  assert_int_equal(tu_write(in, text, strlen(text)), 0);
  etsim_convpt_summary_t s;
  etsim_error_t err = {0};
  etsim_convpt_opts_t o = {0};
  o.rank = 0;
  char prefix[4200];
  snprintf(prefix, sizeof prefix, "%s/%s_out", tmp, name);
  int rc = etsim_convpt_convert(in, prefix, &o, &s, &err);
  if (rc != code || !strstr(err.msg, needle))
    print_message("%s: rc %d, message '%s', wanted '%s'\n", name, rc, err.msg, needle);
  assert_int_equal(rc, code);
  TU_CONTAINS(err.msg, needle);
  TU_CONTAINS(err.msg, in);                   /* the file is named */
  assert_int_not_equal(access(out, F_OK), 0); /* nothing written */
}

static void test_bad_input(void **state) {
  (void)state;
  expect_fail("garbage", "{\"schema\": \"1.1.0\",\n \"nodes\": [\n  {\"id\": 1, ]}", ETSIM_EFORMAT,
              ":3:");
  expect_fail("toplist", "[1, 2]", ETSIM_EFORMAT, "not a JSON object");
  expect_fail("nodesobj", "{\"nodes\": {}}", ETSIM_EFORMAT, "'nodes' is not an array");
  expect_fail("nonodes", "{\"schema\": \"1.1.0\"}", ETSIM_EFORMAT, "no 'nodes'");
  expect_fail("truncated", "{\"nodes\": [{\"id\": 1, \"name\": \"x\"", ETSIM_EFORMAT, "truncated");
  expect_fail("dup",
              "{\"nodes\": [{\"id\": 5, \"name\": \"a\", \"ctrl_deps\": 1},\n"
              "{\"id\": 5, \"name\": \"b\", \"ctrl_deps\": 1}]}",
              ETSIM_EFORMAT, "node id 5: the id repeats");
  expect_fail("noid", "{\"nodes\": [{\"name\": \"a\"}]}", ETSIM_EFORMAT,
              "nodes[0]: missing or non-integer 'id'");
  expect_fail("noname", "{\"nodes\": [{\"id\": 7}]}", ETSIM_EFORMAT,
              "node id 7: missing or non-string 'name'");
  expect_fail("badinputs",
              "{\"nodes\": [{\"id\": 7, \"name\": \"a\", \"ctrl_deps\": 1, "
              "\"inputs\": [1]}]}",
              ETSIM_EFORMAT, "node id 7: 'inputs' is not an object");
  expect_fail("trailing", "{\"nodes\": []} x", ETSIM_EFORMAT, "after the top-level");
  expect_fail("empty", "", ETSIM_EFORMAT, "empty file");
  /* A missing file is an error naming it. */
  etsim_error_t err = {0};
  assert_int_equal(etsim_convpt_convert("/nonexistent/x.json", "/tmp/x", NULL, NULL, &err),
                   ETSIM_ENOTFOUND);
  TU_CONTAINS(err.msg, "/nonexistent/x.json");
}

/* An unknown schema version is read as the closest known one, warned. */
static int n_warn;
static char last_warn[1024];
static void on_warn(void *u, const char *line) {
  (void)u;
  n_warn++;
  snprintf(last_warn, sizeof last_warn, "%s", line);
}

static void test_unknown_schema(void **state) {
  (void)state;
  char in[4200], out[4200];
  snprintf(in, sizeof in, "%s/future.json", tmp);
  snprintf(out, sizeof out, "%s/future.et", tmp);
  const char *text =
      "{\"schema\": \"1.2.0-chakra.9\", \"pid\": 1, \"nodes\": [\n"
      "{\"id\": 1, \"name\": \"[pytorch|profiler|execution_trace|process]\", "
      "\"ctrl_deps\": 1},\n"
      "{\"id\": 2, \"name\": \"aten::mm\", \"ctrl_deps\": 1, \"inputs\": "
      "{\"values\": [[3, 4, 0, 6, 4, \"cuda:0\"], 0.5, \"it's\", null, true], "
      "\"shapes\": [[2, 3], [], [], [], []], \"types\": [\"Tensor(float)\", "
      "\"Double\", \"String\", \"None\", \"Bool\"]}, \"outputs\": {\"values\": "
      "[], \"shapes\": [], \"types\": []}, \"attrs\": [{\"name\": \"op_schema\", "
      "\"type\": \"string\", \"value\": \"aten::mm(Tensor a) -> Tensor\"}, "
      "{\"name\": \"rf_id\", \"type\": \"uint64\", \"value\": 9}]}]}";
  assert_int_equal(tu_write(in, text, strlen(text)), 0);
  n_warn = 0;
  etsim_set_warn_handler(on_warn, NULL);
  etsim_convpt_summary_t s;
  etsim_error_t err = {0};
  int rc = etsim_convpt_convert(in, out, NULL, &s, &err);
  etsim_set_warn_handler(NULL, NULL);
  assert_int_equal(rc, 0);
  assert_int_equal(s.schema_guessed, 1);
  TU_GE(n_warn, 1);
  etsim_et_trace_t *t = load_valid(out);
  assert_int_equal(t->n_nodes, 1);
  assert_int_equal(attr_int(t, 0, "rf_id"), 9);
  /* IOInfo is Python's repr of the lists, as Chakra writes it. */
  assert_string_equal(t->ios[t->io[0]].in.values,
                      "[[3, 4, 0, 6, 4, 'cuda:0'], 0.5, \"it's\", None, True]");
  assert_string_equal(t->ios[t->io[0]].in.shapes, "[[2, 3], [], [], [], []]");
  etsim_et_trace_free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_resnet),         cmocka_unit_test(test_allgather_102),
      cmocka_unit_test(test_legacy_linear),  cmocka_unit_test(test_pt2),
      cmocka_unit_test(test_hta_kineto),     cmocka_unit_test(test_linked_etplus),
      cmocka_unit_test(test_out_of_memory),  cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_unknown_schema),
  };
  return TU_RUN(tests, tu_setup, tu_teardown);
}
