/*
 * test_oom.c — the out-of-memory sweep (tu_oom_sweep) over every module's
 * main entry points: with the 1st, 2nd, ... allocation failing, each must
 * return ETSIM_ENOMEM with a message, leave no file behind and (under ASan)
 * leak nothing; the run that gets through must give the normal result.
 * Inputs are small so that every allocation can be tried (the sweep is
 * quadratic in the allocations of one run).
 */
#include "test_util.h"

#include "etsim/convtext.h"
#include "etsim/edit.h"
#include "etsim/etcheck.h"
#include "etsim/etjson.h"
#include "etsim/gen.h"
#include "etsim/netpkt.h"
#include "etsim/replay.h"
#include "etsim/report.h"
#include "etsim/shard.h"
#include "etsim/sim.h"
#include "etsim/synth.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static char *path(const char *name) {
  static char buf[8][4200];
  static int k;
  k = (k + 1) % 8;
  snprintf(buf[k], sizeof buf[k], "%s/%s", tmp, name);
  return buf[k];
}

static void put(const char *name, const char *text) {
  assert_int_equal(tu_write(path(name), text, strlen(text)), 0);
}

/* An output folder of its own per test, so the sweep can count its files
 * (the name stays valid until the next outdir call). */
static char *outdir(const char *name) {
  static char d[4200];
  snprintf(d, sizeof d, "%s", path(name));
  char cmd[8500];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir '%s'", d, d);
  assert_int_equal(system(cmd), 0);
  return d;
}

/* A 4-rank all-reduce + send/recv ring microbenchmark written as a manifest
 * set at tmp/mb (no injection while writing it). */
static void make_micro(void) {
  static const int colls[] = {ETSIM_COLL_ALL_REDUCE, ETSIM_GEN_SEND_RECV};
  etsim_gen_micro_opts_t o = {.colls = colls,
                              .n_colls = 2,
                              .size_bytes = 65536,
                              .npus = 4,
                              .comp_ns = 1000,
                              .prefix = path("mb")};
  etsim_error_t err = {0};
  TU_OK(etsim_gen_micro(&o, NULL, &err), err);
}

/* ------------------------------------------------------------------ et */

static int run_set_load(void *user, etsim_error_t *err) {
  (void)user;
  etsim_et_set_t *s;
  int rc = etsim_et_set_load(&s, path("mb"), 0, err);
  if (rc) return rc;
  long probs = etsim_et_validate_set(s, NULL, NULL);
  etsim_et_set_free(s);
  if (probs < 0)
    return etsim_error_set(err, (int)probs, "validate_set: %s", etsim_strerror((int)probs));
  return probs ? etsim_error_set(err, ETSIM_EINTERNAL, "%ld problems", probs) : 0;
}

static void test_et_set(void **state) {
  (void)state;
  make_micro();
  TU_GT(tu_oom_sweep("et set load + validate", run_set_load, NULL, NULL), 20);
}

typedef struct {
  const char *in, *out;
} io_t;

static int run_jsonize(void *user, etsim_error_t *err) {
  io_t *io = user;
  return etsim_etjson_jsonize(io->in, io->out, 0, NULL, err);
}

static int run_json_convert(void *user, etsim_error_t *err) {
  io_t *io = user;
  return etsim_etjson_convert(io->in, io->out, 0, NULL, err);
}

static void test_et_json(void **state) {
  (void)state;
  make_micro();
  char *d = outdir("json");
  char out[4300], back[4300];
  snprintf(out, sizeof out, "%s/c0.json", d);
  snprintf(back, sizeof back, "%s/c0.et", d);
  io_t a = {path("mb.c0.et"), out};
  TU_GT(tu_oom_sweep("jsonize", run_jsonize, &a, d), 3);
  io_t b = {out, back};
  char *d2 = outdir("json2");
  snprintf(back, sizeof back, "%s/c0.et", d2);
  TU_GT(tu_oom_sweep("convert --from json", run_json_convert, &b, d2), 3);
  size_t la, lb;
  unsigned char *x = tu_read(path("mb.c0.et"), &la), *y = tu_read(back, &lb);
  assert_non_null(x);
  assert_non_null(y);
  assert_int_equal(la, lb);
  assert_memory_equal(x, y, la);
  free(x);
  free(y);
}

/* ---------------------------------------------------------------- conv */

static const char text_workload[] =
    "HYBRID_TRANSFORMER model_parallel_NPU_group: 2\n"
    "2\n"
    "l0 -1 10 ALLREDUCE 1024 10 ALLGATHER 2048 10 REDUCESCATTER 4096 10\n"
    "l1 -1 20 ALLTOALL 512 20 NONE 0 20 ALLREDUCE 8192 20\n";

static int run_text(void *user, etsim_error_t *err) {
  const char *prefix = user;
  etsim_conv_text_opts_t o = {.npus = 4, .passes = 2, .prefix = prefix};
  return etsim_conv_text_mem("w.txt", text_workload, sizeof text_workload - 1, &o, NULL, err);
}

static void test_conv_text(void **state) {
  (void)state;
  char *d = outdir("text");
  char prefix[4300];
  snprintf(prefix, sizeof prefix, "%s/w", d);
  TU_GT(tu_oom_sweep("convert --from text", run_text, prefix, d), 5);
  TU_GT(tu_count_files(d), 1);
}

/* ---------------------------------------------------------------- edit */

/* An edit with a step of every kind the two-pass path takes (a selection,
 * a scale, a profile, a rank permutation, a concatenation, an insertion,
 * an anonymization) on the 4-rank set, then a diff of the result against
 * its input. */
typedef struct {
  const char *out;
  uint64_t nodes_out;
} edit_t;

static int run_edit(void *user, etsim_error_t *err) {
  edit_t *x = user;
  etsim_edit_t *e = NULL;
  etsim_edit_opts_t o = {.salt = "k", .out_format = ETSIM_EDIT_OUT_MANIFEST};
  int rc = etsim_edit_new(&e, &o, err);
  static const char *const ops[][2] = {
      {"drop", "type=comp;id=0-0"}, {"scale-time", "2"},     {"profile", NULL},
      {"remap-ranks", "3,2,1,0"},   {"concat", NULL},        {"insert-after", "comp:5@type=coll"},
      {"anonymize", "hash"},        {"round-sizes", "pow2"},
  };
  for (size_t k = 0; !rc && k < sizeof ops / sizeof *ops; k++) {
    const char *arg = ops[k][1];
    if (strcmp(ops[k][0], "profile") == 0) arg = path("prof.csv");
    if (strcmp(ops[k][0], "concat") == 0) arg = path("mb");
    rc = etsim_edit_add(e, ops[k][0], arg, err);
  }
  etsim_edit_report_t rep = {0};
  if (!rc) rc = etsim_edit_run(e, path("mb"), x->out, &rep, err);
  if (!rc) x->nodes_out = rep.nodes_out;
  etsim_edit_report_free(&rep);
  etsim_edit_free(e);
  return rc;
}

static int run_diff(void *user, etsim_error_t *err) {
  etsim_diff_report_t r;
  int rc = etsim_diff(path("mb"), (const char *)user, NULL, &r, err);
  if (!rc && r.equal) return etsim_error_set(err, ETSIM_EINTERNAL, "the edited set diffs equal");
  return rc;
}

static void test_edit(void **state) {
  (void)state;
  make_micro();
  put("prof.csv", "name,time (us)\nall_reduce,7\n");
  char *d = outdir("edit");
  char out[4300];
  snprintf(out, sizeof out, "%s/e", d);
  edit_t x = {out, 0};
  TU_GT(tu_oom_sweep("edit", run_edit, &x, d), 30);
  /* Twice the input's nodes (the concatenation) and what was inserted,
   * less the dropped ones: more than the 4-rank input alone. */
  TU_GT(x.nodes_out, 8);
  TU_GT(tu_oom_sweep("diff", run_diff, out, NULL), 10);
}

/* ----------------------------------------------------------------- gen */

static int run_micro(void *user, etsim_error_t *err) {
  static const int colls[] = {ETSIM_COLL_ALL_GATHER, ETSIM_GEN_SEND_RECV};
  etsim_gen_micro_opts_t o = {
      .colls = colls, .n_colls = 2, .size_bytes = 4096, .npus = 3, .prefix = user};
  return etsim_gen_micro(&o, NULL, err);
}

static int run_llm(void *user, etsim_error_t *err) {
  etsim_gen_llm_opts_t o = {0};
  int rc = etsim_gen_llm_preset("llama3-8b", &o.model, err);
  if (rc) return rc;
  o.model.layers = 2;
  o.dp = 2;
  o.tp = 2;
  o.pp = 2;
  o.microbatches = 2;
  o.zero = 1;
  o.prefix = user;
  return etsim_gen_llm(&o, NULL, err);
}

typedef struct {
  etsim_shard_model_t model;
  etsim_shard_opts_t opts;
  etsim_shard_plan_t plan;
  const char *prefix;
} dlrm_t;

static int run_dlrm(void *user, etsim_error_t *err) {
  dlrm_t *x = user;
  etsim_gen_dlrm_opts_t o = {.model = &x->model, .plan = &x->plan, .prefix = x->prefix};
  return etsim_gen_dlrm(&o, NULL, err);
}

static void test_gen(void **state) {
  (void)state;
  char *d = outdir("micro");
  char prefix[4300];
  snprintf(prefix, sizeof prefix, "%s/m", d);
  TU_GT(tu_oom_sweep("gen micro", run_micro, prefix, d), 5);
  d = outdir("llm");
  snprintf(prefix, sizeof prefix, "%s/l", d);
  TU_GT(tu_oom_sweep("gen llm", run_llm, prefix, d), 20);
  TU_GE(tu_count_files(d), 3); /* traces, manifest, groups */

  dlrm_t x;
  etsim_error_t err = {0};
  TU_OK(etsim_shard_model_preset("criteo-kaggle", &x.model, &err), err);
  etsim_shard_defaults(&x.opts);
  x.opts.ranks = 2;
  TU_OK(etsim_shard_plan(&x.model, &x.opts, &x.plan, &err), err);
  d = outdir("dlrm");
  snprintf(prefix, sizeof prefix, "%s/d", d);
  x.prefix = prefix;
  TU_GT(tu_oom_sweep("gen dlrm", run_dlrm, &x, d), 20);
  etsim_shard_plan_free(&x.plan);
  etsim_shard_model_free(&x.model);
}

/* --------------------------------------------------------------- shard */

typedef struct {
  const char *plan_path;
} shard_t;

static int run_shard(void *user, etsim_error_t *err) {
  shard_t *s = user;
  etsim_shard_model_t m;
  etsim_shard_opts_t o;
  etsim_shard_plan_t p, q;
  int rc = etsim_shard_model_preset("mlperf-dlrm", &m, err);
  if (rc) return rc;
  etsim_shard_defaults(&o);
  o.ranks = 8;
  if ((rc = etsim_shard_plan(&m, &o, &p, err)) == 0) {
    rc = etsim_shard_plan_write(&p, &m, s->plan_path, err);
    if (rc == 0) {
      etsim_shard_opts_t o2;
      etsim_shard_defaults(&o2);
      if ((rc = etsim_shard_plan_read(s->plan_path, &m, &o2, &q, err)) == 0)
        etsim_shard_plan_free(&q);
      remove(s->plan_path);
    }
    etsim_shard_plan_free(&p);
  }
  etsim_shard_model_free(&m);
  return rc;
}

static void test_shard(void **state) {
  (void)state;
  char *d = outdir("shard");
  char plan[4300];
  snprintf(plan, sizeof plan, "%s/plan.json", d);
  shard_t s = {plan};
  TU_GT(tu_oom_sweep("shard plan, write, read", run_shard, &s, d), 10);
}

/* ------------------------------------------------- topo, coll, sim, report */

#define SYS_JSON                                                                           \
  "{\"scheduling-policy\": \"LIFO\", \"endpoint-delay\": 10,"                              \
  " \"active-chunks-per-dimension\": 1, \"preferred-dataset-splits\": 4,"                  \
  " \"all-reduce-implementation\": [\"ring\"], \"all-gather-implementation\": [\"ring\"]," \
  " \"reduce-scatter-implementation\": [\"ring\"],"                                        \
  " \"all-to-all-implementation\": [\"direct\"], \"collective-optimization\": "            \
  "\"localBWAware\", \"local-mem-bw\": 1600, \"boost-mode\": 0}"

typedef struct {
  const char *backend;
  const char *outdir; /* reports go here when set */
  int64_t finish_ps;  /* NPU 0's finish, from the run that got through */
} simrun_t;

static int run_sim(void *user, etsim_error_t *err) {
  simrun_t *x = user;
  etsim_topo_t topo;
  etsim_sys_config_t sys;
  etsim_mem_config_t mem;
  etsim_comm_groups_t cg;
  etsim_et_set_t *set = NULL;
  etsim_sim_result_t *res = NULL;
  int rc = etsim_topo_load_yaml(path("net.yml"), &topo, err);
  if (rc) return rc;
  if ((rc = etsim_sys_config_load(path("sys.json"), &sys, err))) return rc;
  if ((rc = etsim_mem_config_load(path("mem.json"), &mem, err))) goto out_sys;
  if ((rc = etsim_comm_groups_load(path("groups.json"), topo.total, &cg, err))) goto out_sys;
  if ((rc = etsim_et_set_load(&set, path("mb"), 0, err))) goto out;
  etsim_sim_opts_t o = {
      .backend = x->backend, .record_nodes = x->outdir != NULL, .memory = &mem, .groups = &cg};
  if ((rc = etsim_sim_run(set, &topo, &sys, &o, &res, err))) goto out;
  x->finish_ps = res->npu[0].finish_ps;
  if (x->outdir) {
    char f[4300];
    snprintf(f, sizeof f, "%s/r.json", x->outdir);
    if ((rc = etsim_report_json(f, res, set, err))) goto out;
    snprintf(f, sizeof f, "%s/r.csv", x->outdir);
    if ((rc = etsim_report_csv(f, res, set, err))) goto out;
    snprintf(f, sizeof f, "%s/r.timeline.json", x->outdir);
    if ((rc = etsim_report_timeline(f, res, set, err))) goto out;
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "rm -f '%s'/r.*", x->outdir);
    if (system(cmd) != 0) rc = etsim_error_set(err, ETSIM_EIO, "rm failed");
  }
out:
  etsim_sim_result_free(res);
  etsim_et_set_free(set);
  etsim_comm_groups_free(&cg);
out_sys:
  etsim_sys_config_free(&sys);
  return rc;
}

static void sim_inputs(void) {
  make_micro();
  put("net.yml",
      "topology: [ Ring, Switch ]\nnpus_count: [ 2, 2 ]\nbandwidth: [ 50, 25 ]\n"
      "latency: [ 500, 700 ]\n");
  put("sys.json", SYS_JSON);
  put("mem.json", "{\"memory-type\": \"NO_MEMORY_EXPANSION\"}");
  put("groups.json", "{\"1\": [0, 1], \"2\": [2, 3]}");
}

static void test_sim(void **state) {
  (void)state;
  sim_inputs();
  static const char *const backends[] = {"analytical", "congestion"};
  for (int b = 0; b < 2; b++) {
    simrun_t x = {backends[b], outdir("sim"), 0};
    TU_GT(tu_oom_sweep(backends[b], run_sim, &x, x.outdir), 30);
    /* The run that got through equals an unhindered one. */
    simrun_t y = {backends[b], NULL, 0};
    etsim_error_t err = {0};
    TU_OK(run_sim(&y, &err), err);
    assert_int_equal(x.finish_ps, y.finish_ps);
    TU_GT(y.finish_ps, 0);
  }
}

static void test_sim_flow(void **state) {
  (void)state;
  sim_inputs();
  put("net1.yml", "topology: [ Switch ]\nnpus_count: [ 4 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n");
  /* The flow backend needs a one-dimensional Switch: run it on net1. */
  char cmd[8500];
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", path("net1.yml"), path("net.yml"));
  assert_int_equal(system(cmd), 0);
  put("groups.json", "{\"1\": [0, 1]}");
  simrun_t x = {"flow", NULL, 0};
  TU_GT(tu_oom_sweep("flow", run_sim, &x, NULL), 30);
}

/* ----------------------------------------------------------------- net */

static int run_netpkt(void *user, etsim_error_t *err) {
  (void)user;
  etsim_netpkt_cfg_t cfg;
  etsim_netpkt_cfg_default(&cfg);
  int rc = etsim_netpkt_cfg_load(&cfg, path("ns.cfg"), err);
  if (rc) return rc;
  etsim_netpkt_topo_t topo;
  memset(&topo, 0, sizeof topo);
  if ((rc = etsim_netpkt_topo_load(&topo, path("ns.topo"), err))) return rc;
  etsim_netpkt_flow_t *flows = NULL;
  size_t nf = 0;
  etsim_netpkt_t *n = NULL;
  if ((rc = etsim_netpkt_flows_load(path("ns.flows"), &flows, &nf, err))) goto out;
  if ((rc = etsim_netpkt_create(&n, &topo, &cfg, err))) goto out;
  for (size_t i = 0; i < nf && !rc; i++) {
    etsim_netpkt_msg_t m = {.src = flows[i].src,
                            .dst = flows[i].dst,
                            .bytes = flows[i].size_bytes,
                            .start_ps = flows[i].start_ps,
                            .pg = (uint8_t)flows[i].pg,
                            .dport = (uint16_t)flows[i].dport};
    rc = etsim_netpkt_send(n, &m, NULL, err);
  }
  if (!rc) rc = etsim_netpkt_run_until(n, INT64_MAX, err);
out:
  etsim_netpkt_free(n);
  etsim_free(flows);
  etsim_netpkt_topo_free(&topo);
  return rc;
}

static void test_netpkt(void **state) {
  (void)state;
  put("ns.topo", "3 1 2\n2\n2 0 100Gbps 0.001ms 0\n2 1 100Gbps 0.001ms 0\n");
  put("ns.flows", "2\n0 1 3 100 20000 0\n1 0 3 100 30000 0.000001\n");
  put("ns.cfg", "CC_MODE 1\n");
  TU_GT(tu_oom_sweep("packet network", run_netpkt, NULL, NULL), 2);
}

/* --------------------------------------------------------------- synth */

static const char dags[] =
    "# three small DAGs\n"
    "g 3 2 1.0\n0 1 2\n0 1\n1 2\n"
    "g 4 3 2.0\n1 0 2 1\n0 1\n0 2\n2 3\n"
    "g 3 2 1.5\n2 1 0\n0 1\n0 2\n";

typedef struct {
  const char *model_path;
} synth_t;

static int run_synth(void *user, etsim_error_t *err) {
  synth_t *s = user;
  etsim_synth_data_t d, gen;
  etsim_synth_data_init(&d);
  etsim_synth_data_init(&gen);
  etsim_synth_model_t *m = NULL, *m2 = NULL;
  etsim_synth_eval_t ev;
  etsim_synth_config_t c;
  etsim_synth_config_default(&c);
  c.hidden = 8;
  c.pair_hidden = 4;
  c.t_attr = 4;
  c.t_edge = 2;
  c.epochs = 1;
  c.batch = 3;
  int rc = etsim_synth_data_load_text(&d, path("dags.txt"), 0, err);
  if (!rc) rc = etsim_synth_train(&d, &d, &c, NULL, NULL, &m, err);
  if (!rc) rc = etsim_synth_model_save(m, s->model_path, err);
  if (!rc) rc = etsim_synth_model_load(&m2, s->model_path, err);
  if (!rc) rc = etsim_synth_sample(m2, 2, NULL, 7, &gen, err);
  if (!rc) rc = etsim_synth_evaluate(&d, &gen, NULL, ETSIM_SYNTH_SURROGATE_NONE, NULL, &ev, err);
  remove(s->model_path);
  etsim_synth_model_free(m);
  etsim_synth_model_free(m2);
  etsim_synth_data_free(&gen);
  etsim_synth_data_free(&d);
  return rc;
}

static void test_synth(void **state) {
  (void)state;
  put("dags.txt", dags);
  char *d = outdir("synth");
  char model[4300];
  snprintf(model, sizeof model, "%s/m.bin", d);
  synth_t s = {model};
  TU_GT(tu_oom_sweep("synth train, save, load, sample, eval", run_synth, &s, d), 20);
}

/* The metrics alone (evaluate with the ridge surrogate, the set against
 * itself): every buffer of eval.c goes through the allocator, and the run
 * that gets through gives the closed-form result of a set against itself
 * (all valid, every distance 0). */
static int run_synth_eval(void *user, etsim_error_t *err) {
  const etsim_synth_data_t *d = user;
  etsim_synth_eval_t ev;
  int rc = etsim_synth_evaluate(d, d, d, ETSIM_SYNTH_SURROGATE_RIDGE, NULL, &ev, err);
  if (rc) return rc;
  if (ev.validity != 1.0 || ev.w1_nodes != 0 || ev.w1_edges != 0 || ev.w1_layers != 0 ||
      fabs(ev.mmd_in_degree) > 1e-12 || !ev.has_surrogate || !ev.has_real_surrogate)
    return etsim_error_set(err, ETSIM_EINTERNAL,
                           "a run that got through gave validity %g, W1 %g %g %g, MMD %g",
                           ev.validity, ev.w1_nodes, ev.w1_edges, ev.w1_layers, ev.mmd_in_degree);
  return 0;
}

static void test_synth_eval(void **state) {
  (void)state;
  put("dags.txt", dags);
  etsim_synth_data_t d;
  etsim_synth_data_init(&d);
  etsim_error_t err = {0};
  TU_OK(etsim_synth_data_load_text(&d, path("dags.txt"), 0, &err), err);
  /* 184 allocations when written: the stats, W1, ridge and validity
   * buffers, each failing in turn */
  TU_GT(tu_oom_sweep("synth evaluate", run_synth_eval, &d, NULL), 150);
  etsim_synth_data_free(&d);
}

/* -------------------------------------------------------------- replay */

static int run_replay(void *user, etsim_error_t *err) {
  (void)user;
  etsim_et_trace_t *t;
  int rc = etsim_et_trace_load(&t, path("mb.c0.et"), 0, err);
  if (rc) return rc;
  etsim_replay_opts_t o;
  etsim_replay_opts_init(&o);
  o.world = 4;
  etsim_replay_plan_t *p = NULL;
  if ((rc = etsim_replay_plan_build(&p, t, &o, err)) == 0) {
    etsim_replay_sched_t s;
    if ((rc = etsim_replay_sched_init(&s, p)) != 0) {
      rc = etsim_error_set(err, rc, "sched_init: %s", etsim_strerror(rc));
    } else {
      int64_t ns;
      rc = etsim_replay_dry_run(&s, &ns, err);
      etsim_replay_sched_free(&s);
    }
    etsim_replay_plan_free(p);
  }
  etsim_et_trace_free(t);
  return rc;
}

static void test_replay(void **state) {
  (void)state;
  make_micro();
  TU_GT(tu_oom_sweep("replay plan + dry run", run_replay, NULL, NULL), 10);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_et_set),    cmocka_unit_test(test_et_json),
      cmocka_unit_test(test_conv_text), cmocka_unit_test(test_gen),
      cmocka_unit_test(test_shard),     cmocka_unit_test(test_sim),
      cmocka_unit_test(test_sim_flow),  cmocka_unit_test(test_netpkt),
      cmocka_unit_test(test_synth),     cmocka_unit_test(test_synth_eval),
      cmocka_unit_test(test_replay),    cmocka_unit_test(test_edit),
  };
  return TU_RUN(tests, tu_setup, tu_teardown);
}
