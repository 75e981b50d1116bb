/* Memory capacity: tensor lifetimes from a trace (ASTRA-sim's inputs /
 * outputs convention), capacity and offload prices, and the generator's
 * memory model against hand-computed and published figures:
 *
 *  - ZeRO (Rajbhandari et al., SC'20, fig. 1 and sec. 5): a 7.5 B
 *    parameter model on 64 GPUs needs 120 GB of model states per GPU
 *    without ZeRO, 31.4 GB with P_os, 16.6 GB with P_os+g and 1.9 GB with
 *    P_os+g+p (mixed-precision Adam, K = 12);
 *  - activations per layer of Korthikanti et al. ("Reducing Activation
 *    Recomputation in Large Transformer Models", MLSys'23, eq. 2 with tensor
 *    parallelism t): s b h (10 + 24/t + 5 a s / (h t)) bytes, 2 s b h with
 *    full recomputation (eq. 5);
 *  - GPT-3 175B and Llama-3 70B on 1,024 GPUs under ZeRO 0-3, computed
 *    here by hand from the published model shapes;
 *  - the simulated peak of a `gen llm --tensors` trace equals the model.
 */
#include "sim_util.h"

#include "etsim/gen.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* node 0 writes A (100) and B (50); node 1 reads A and D (7, never
 * written: live from time 0) and writes C (30); node 2 reads B and C and
 * writes E (1000, never read: live to the end). */
static void io_trace(const char *path) {
  su_node_t ns[3] = {
      {.type = ETSIM_ET_COMP_NODE, .dur_us = 10, .outputs = "A:100,B:50"},
      {.type = ETSIM_ET_COMP_NODE,
       .dur_us = 5,
       .ndeps = 1,
       .deps = {0},
       .inputs = "A:100,D:7",
       .outputs = "C:30"},
      {.type = ETSIM_ET_COMP_NODE,
       .dur_us = 1,
       .ndeps = 1,
       .deps = {1},
       .inputs = "B:50,C:30",
       .outputs = "E:1000"},
  };
  su_trace(path, ns, 3);
}

static void test_tensor_lifetimes(void **state) {
  (void)state;
  const char *dir = tmp;
  io_trace(su_p(0, dir, "w.et"));
  su_net(su_p(1, dir, "net.yml"), "Ring", 2, 50, 500);
  su_put(su_p(2, dir, "sys.json"), "{\"preferred-dataset-splits\": 1}");
  su_run_t o = {0};
  etsim_sim_result_t *r =
      su_run(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), &o);
  assert_true(r->mem_tracked);
  /* 7 at 0; 157 at node 0's start; 187 when node 1 starts (10 us); 80
   * when it ends (A and D freed, 15 us); 1080 when node 2 starts; 1000
   * when it ends (B, C freed) */
  assert_int_equal(r->npu[0].peak_mem_bytes, 1080);
  assert_int_equal(r->npu[1].peak_mem_bytes, 1080);
  static const int64_t t_us[] = {0, 0, 10, 15, 15, 16};
  static const uint64_t bytes[] = {7, 157, 187, 80, 1080, 1000};
  size_t k = 0;
  for (size_t i = 0; i < r->n_mem; i++) {
    if (r->mem[i].npu != 0) continue;
    TU_LT(k, 6);
    assert_int_equal(r->mem[i].t_ps, t_us[k] * 1000000);
    assert_int_equal(r->mem[i].bytes, bytes[k]);
    k++;
  }
  assert_int_equal(k, 6);
  etsim_sim_result_free(r);
}

static void test_capacity_and_offload(void **state) {
  (void)state;
  const char *dir = tmp;
  io_trace(su_p(0, dir, "w.et"));
  su_net(su_p(1, dir, "net.yml"), "Ring", 2, 50, 500);
  su_put(su_p(2, dir, "sys.json"), "{\"preferred-dataset-splits\": 1}");
  /* 80 bytes over a capacity of 1000; out and back at 100 ns + 80 / 2 ns
   * each: 280 ns; one pool serves NPU 0, then NPU 1 */
  etsim_mem_config_t pool = {.type = ETSIM_MEM_POOL,
                             .num_nodes = 1,
                             .npus_per_node = 2,
                             .latency_ns = 100,
                             .bw_bytes_per_ns = 2};
  etsim_mem_config_t per_npu = pool;
  per_npu.type = ETSIM_MEM_PER_NPU;
  for (int apply = 0; apply < 2; apply++)
    for (int shared = 0; shared < 2; shared++) {
      etsim_topo_t topo;
      etsim_sys_config_t cfg;
      etsim_et_set_t *set;
      etsim_error_t err = {0};
      assert_int_equal(etsim_topo_load_yaml(su_p(1, dir, "net.yml"), &topo, &err), 0);
      assert_int_equal(etsim_sys_config_load(su_p(2, dir, "sys.json"), &cfg, &err), 0);
      assert_int_equal(etsim_et_set_load(&set, su_p(0, dir, "w.et"), 0, &err), 0);
      assert_int_equal(etsim_et_set_broadcast(set, 2, &err), 0);
      etsim_sim_opts_t o = {
          .memory = shared ? &pool : &per_npu, .hbm_bytes = 1000, .offload = apply, .exact = 1};
      etsim_sim_result_t *r = NULL;
      if (etsim_sim_run(set, &topo, &cfg, &o, &r, &err)) fail_msg("%s", err.msg);
      int64_t base = 16000 * 1000;
      for (uint32_t i = 0; i < 2; i++) {
        int64_t price = 280 * 1000 * (shared ? (int64_t)i + 1 : 1);
        assert_int_equal(r->npu[i].offload_bytes, 80);
        assert_int_equal(r->npu[i].offload_ps, price);
        assert_int_equal(r->npu[i].finish_ps, base + (apply ? price : 0));
      }
      etsim_sim_result_free(r);
      etsim_et_set_free(set);
      etsim_sys_config_free(&cfg);
    }
}

/* The hierarchical memory pool: 8 NPUs, 2 per node; in-node pools at
 * 100 ns and 10 B/ns, the out-node pool at 1000 ns and 5 B/ns; the
 * switches reduce at 20 B/ns.  Every NPU stores 1000 bytes at time 0. */
static void test_hierarchical_pool(void **state) {
  (void)state;
  const char *dir = tmp;
  su_net(su_p(1, dir, "net.yml"), "Ring", 8, 50, 500);
  su_put(su_p(2, dir, "sys.json"), "{\"preferred-dataset-splits\": 1}");
  for (int kind = 0; kind < 3; kind++) {
    /* 0: plain stores (in-node pools), 1: reducing stores without, 2:
     * with in-switch reduction */
    char mem[512];
    snprintf(mem, sizeof mem,
             "{\"memory-type\": \"HIERARCHICAL_MEMORY_POOL\", \"num-nodes\": 4, "
             "\"num-npus-per-node\": 2, \"in-node-pool-latency\": 100, \"in-node-pool-bw\": 10, "
             "\"out-node-pool-latency\": 1000, \"out-node-pool-bw\": 5, "
             "\"in-switch-reduction\": %s, \"in-switch-reduction-bw\": 20}",
             kind == 2 ? "true" : "false");
    su_put(su_p(3, dir, "mem.json"), mem);
    etsim_mem_config_t mc;
    etsim_error_t err = {0};
    if (etsim_mem_config_load(su_p(3, dir, "mem.json"), &mc, &err)) fail_msg("%s", err.msg);
    /* one store of 1000 bytes, a reducing one (comm_type) but for kind 0 */
    etsim_et_writer_t *w;
    assert_int_equal(etsim_et_writer_open(&w, su_p(0, dir, "w.et"), 0, &err), 0);
    etsim_et_meta_t meta = {"0.0.4", 0, NULL};
    assert_int_equal(etsim_et_writer_meta(w, &meta, &err), 0);
    etsim_attr_t a[3] = {
        {.name = "is_cpu_op", .doc = "", .kind = ETSIM_ATTR_BOOL, .v.b = 0},
        {.name = "tensor_size", .doc = "", .kind = ETSIM_ATTR_UINT64, .v.u64 = 1000},
        {.name = "comm_type", .doc = "", .kind = ETSIM_ATTR_INT64, .v.i64 = ETSIM_COLL_REDUCE}};
    etsim_et_node_t n = {.id = 0,
                         .name = "grad_store",
                         .type = ETSIM_ET_MEM_STORE_NODE,
                         .n_attrs = kind ? 3 : 2,
                         .attrs = a};
    assert_int_equal(etsim_et_writer_node(w, &n, &err), 0);
    assert_int_equal(etsim_et_writer_commit(w, &err), 0);
    su_run_t o = {.memory = &mc};
    etsim_sim_result_t *r =
        su_run(su_p(0, dir, "w.et"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), &o);
    for (uint32_t i = 0; i < 8; i++) {
      int64_t want = kind == 0   ? 100 + 100 * (1 + i % 2)           /* a node's pool, in turn */
                     : kind == 1 ? 1100 + 200 * (i + 1)              /* the one pool, in turn */
                                 : 100 + 100 + 50 + 1000 + 200 + 50; /* reduced on the way */
      if (su_ns(r, i) != want)
        fail_msg("kind %d NPU %u: %lld ns, want %lld", kind, i, (long long)su_ns(r, i),
                 (long long)want);
    }
    etsim_sim_result_free(r);
  }
  /* the keys are checked */
  su_put(su_p(3, dir, "mem.json"),
         "{\"memory-type\": \"HIERARCHICAL_MEMORY_POOL\", \"num-npus-per-node\": 2, "
         "\"remote-mem-bw\": 10}");
  etsim_mem_config_t mc;
  etsim_error_t err = {0};
  assert_int_equal(etsim_mem_config_load(su_p(3, dir, "mem.json"), &mc, &err), ETSIM_EFORMAT);
  assert_non_null(strstr(err.msg, "needs \"num-npus-per-node\""));
}

/* ---------------------------------------------------- the model's figures */

static etsim_gen_llm_opts_t preset(const char *name) {
  etsim_gen_llm_opts_t o = {0};
  etsim_error_t err = {0};
  assert_int_equal(etsim_gen_llm_preset(name, &o.model, &err), 0);
  return o;
}

static etsim_gen_llm_mem_t mem_of(const etsim_gen_llm_opts_t *o, uint32_t stage) {
  etsim_gen_llm_mem_t m;
  etsim_error_t err = {0};
  if (etsim_gen_llm_memory(o, stage, &m, &err)) fail_msg("%s", err.msg);
  return m;
}

static void test_zero_paper(void **state) {
  (void)state;
  /* a dense model of 7.5 B parameters: 36 layers of 12 h^2 (h = 4096) and
   * untied embedding and head of 30,791 x 4096 each:
   * 7,247,757,312 + 252,239,872 = 7,499,997,184 */
  etsim_gen_llm_opts_t o = {0};
  o.model = (etsim_gen_llm_model_t){"zero-7.5b", 36, 4096, 32, 32, 16384, 30791, 1024, 0, 0, 0};
  o.dp = 64;
  const double want_gb[4] = {120.0, 31.4, 16.6, 1.9}; /* the paper's, rounded */
  const double psi = 7499997184.0;
  for (int z = 0; z < 4; z++) {
    o.zero = z;
    etsim_gen_llm_mem_t m = mem_of(&o, 0);
    double states = (double)(m.params + m.grads + m.optimizer);
    /* exactly the paper's formulas ... */
    double formula = z == 0   ? 16 * psi
                     : z == 1 ? 4 * psi + 12 * psi / 64
                     : z == 2 ? 2 * psi + 14 * psi / 64
                              : 16 * psi / 64;
    TU_NEAR(states, formula, 1);
    /* ... and its numbers to the digit it prints */
    if (fabs(states / 1e9 - want_gb[z]) > 0.05)
      fail_msg("ZeRO %d: %.3f GB, the paper %.1f GB", z, states / 1e9, want_gb[z]);
  }
}

static void test_gpt3_1024(void **state) {
  (void)state;
  /* GPT-3 175B on 1,024 GPUs: TP 8, PP 8 (12 layers a stage), DP 16, 16
   * micro-batches of one 2,048-token sequence, 1F1B */
  etsim_gen_llm_opts_t o = preset("gpt3-175b");
  o.tp = 8;
  o.pp = 8;
  o.dp = 16;
  o.microbatches = 16;
  const double h = 12288, s = 2048, a = 96, t = 8;
  /* stage 0: 12 layers of 12 h^2 / t, the embedding of the vocabulary
   * padded to a multiple of t (50,264) over t */
  double psi = 12 * 12 * h * h / t + h * 50264 / t;         /* 2,795,114,496 */
  double act = s * h * (10 + 24 / t + 5 * a * s / (h * t)); /* 578,813,952 */
  double in_flight = 8;                                     /* min(16, pp - 0) */
  double states[4] = {16 * psi, 4 * psi + 12 * psi / 16, 2 * psi + 14 * psi / 16, 16 * psi / 16};
  double z3 = 12 * h * h * 2 / t; /* one layer's TP shard, gathered over DP */
  for (int z = 0; z < 4; z++) {
    o.zero = z;
    etsim_gen_llm_mem_t m = mem_of(&o, 0);
    assert_int_equal(m.act_layer, (uint64_t)act);
    assert_int_equal(m.in_flight, 8);
    double want = states[z] + 12 * in_flight * act + (z == 3 ? z3 : 0);
    if (fabs((double)m.total - want) > 64) /* ZeRO shards round down per part */
      fail_msg("GPT-3 ZeRO %d stage 0: %.0f, by hand %.0f", z, (double)m.total, want);
  }
  /* ZeRO 0 and 1 by hand, in GiB: 93.40 and 64.11 */
  o.zero = 0;
  TU_NEAR((double)mem_of(&o, 0).total / GIB, 93.40, 0.005);
  o.zero = 1;
  TU_NEAR((double)mem_of(&o, 0).total / GIB, 64.11, 0.005);
  /* full recomputation keeps 2 s b h per layer and one layer's whole set */
  o.recompute = 1;
  etsim_gen_llm_mem_t m = mem_of(&o, 7);
  assert_int_equal(m.act_layer, (uint64_t)(2 * s * h));
  assert_int_equal(m.activations, (uint64_t)(12 * 1 * 2 * s * h + act));
}

static void test_llama3_70b_1024(void **state) {
  (void)state;
  /* Llama-3 70B on 1,024 GPUs: TP 8, PP 4 (20 layers a stage), DP 32, 8
   * micro-batches of one 8,192-token sequence, flash attention */
  etsim_gen_llm_opts_t o = preset("llama3-70b");
  o.tp = 8;
  o.pp = 4;
  o.dp = 32;
  o.microbatches = 8;
  o.flash = 1;
  const double h = 8192, f = 28672, kvd = 8 * 128, s = 8192, t = 8, V = 128256;
  double layer = 2 * h * h + 2 * h * kvd + 3 * h * f;        /* 855,638,016 */
  double psi0 = 20 * layer / t + h * V / t;                  /* stage 0 */
  double psi1 = 20 * layer / t;                              /* a middle stage */
  double act = s * (10 * h + (4 * h + 4 * kvd + 6 * f) / t); /* 884,998,144 */
  assert_int_equal((uint64_t)layer, 855638016);
  for (int z = 0; z < 4; z++) {
    o.zero = z;
    for (uint32_t st = 0; st < 2; st++) {
      double psi = st ? psi1 : psi0;
      double states = z == 0   ? 16 * psi
                      : z == 1 ? 4 * psi + 12 * psi / 32
                      : z == 2 ? 2 * psi + 14 * psi / 32
                               : 16 * psi / 32;
      double want = states + 20 * (4 - st) * act + (z == 3 ? layer * 2 / t : 0);
      etsim_gen_llm_mem_t m = mem_of(&o, st);
      assert_int_equal(m.act_layer, (uint64_t)act);
      if (fabs((double)m.total - want) > 64)
        fail_msg("Llama-3 70B ZeRO %d stage %u: %.0f, by hand %.0f", z, st, (double)m.total, want);
    }
  }
}

/* The simulated peak of a generated trace is the model's total. */
static void test_trace_peak_is_model(void **state) {
  (void)state;
  const char *dir = tmp;
  const int scheds[2] = {ETSIM_GEN_SCHED_1F1B, ETSIM_GEN_SCHED_GPIPE};
  for (int k = 0; k < 4; k++) {
    etsim_gen_llm_opts_t o = preset("llama3-8b");
    o.model.layers = 4;
    o.tp = 2;
    o.pp = 2;
    o.dp = 2;
    o.microbatches = 3;
    o.schedule = scheds[k % 2];
    o.recompute = k >= 2;
    o.tensors = 1;
    o.prefix = su_p(0, dir, "llm");
    o.comm_group_path = su_p(3, dir, "llm.cg.json");
    etsim_error_t err = {0};
    if (etsim_gen_llm(&o, NULL, &err)) fail_msg("%s", err.msg);
    su_put(su_p(1, dir, "net.yml"),
           "topology: [ FullyConnected, Switch ]\nnpus_count: [ 4, 2 ]\nbandwidth: [ 300, 50 ]\n"
           "latency: [ 500, 2000 ]\n");
    su_put(su_p(2, dir, "sys.json"),
           "{\"preferred-dataset-splits\": 1, \"all-reduce-implementation\": [\"ring\", "
           "\"ring\"], \"all-gather-implementation\": [\"ring\", \"ring\"], "
           "\"reduce-scatter-implementation\": [\"ring\", \"ring\"], "
           "\"all-to-all-implementation\": [\"ring\", \"ring\"]}");
    su_run_t ro = {.groups = su_p(3, dir, "llm.cg.json")};
    etsim_sim_result_t *r = NULL;
    if (su_run1(su_p(0, dir, "llm"), su_p(1, dir, "net.yml"), su_p(2, dir, "sys.json"), &ro, &r,
                &err))
      fail_msg("%s", err.msg);
    for (uint32_t i = 0; i < 8; i++) {
      etsim_gen_llm_mem_t m = mem_of(&o, i / 4); /* ranks 0-3 stage 0 */
      if (r->npu[i].peak_mem_bytes != m.total)
        fail_msg("case %d NPU %u: simulated peak %llu, model %llu", k, i,
                 (unsigned long long)r->npu[i].peak_mem_bytes, (unsigned long long)m.total);
    }
    etsim_sim_result_free(r);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_tensor_lifetimes, tu_setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_capacity_and_offload, tu_setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_hierarchical_pool, tu_setup, tu_teardown),
      cmocka_unit_test(test_zero_paper),
      cmocka_unit_test(test_gpt3_1024),
      cmocka_unit_test(test_llama3_70b_1024),
      cmocka_unit_test_setup_teardown(test_trace_peak_is_model, tu_setup, tu_teardown),
  };
  return TU_RUN(tests, NULL, NULL);
}
