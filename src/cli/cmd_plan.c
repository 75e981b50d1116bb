/*
 * cmd_plan.c — `etsim plan`: the best parallelism of a transformer on a
 * platform, found by simulation (docs/sweep.md, "Planning").
 *
 * The library lists the candidates (every DP x TP x PP (x SP x EP) split,
 * micro-batch size, ZeRO stage and recomputation the model allows, pruned
 * by the generator's memory model and by dominance) and writes them as a
 * sweep spec; this command runs that sweep (locally, or under mpirun with
 * --np), ranks the rows by iteration time and prints the best with a
 * ready `etsim gen llm` command.
 */
#include "cli/cli.h"

#include "etsim/gen.h"
#include "etsim/sweep.h"
#include "etsim/topo.h"

#include <jansson.h>

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *model, *network, *system_path, *memory_path, *out_dir, *backend = "analytical";
static uint64_t npus, global_batch, layers, hidden, heads, kv_heads, ffn, vocab, seq, experts,
    top_k, gated = 2, max_tp, max_pp, max_sp, max_mbs, top = 10, jobs, n_procs;
static double hbm_gb = 80, peak_tflops, mem_gbps, timeout_s;
static int npus_given, flash, schedule, exhaustive, quiet, json_out, restart, only_candidates,
    gated_given, np_given;

static const cli_opt_t opts[] = {
    {.name = "--model",
     .alias = "--preset",
     .kind = CLI_STR,
     .out = &model,
     .metavar = "NAME",
     .flags = CLI_REQUIRED,
     .help = "gen llm preset (gpt3-175b, llama3-8b, llama3-70b, llama3-405b,\n"
             "mixtral-8x7b) or custom with the model flags below"},
    {.name = "--npus",
     .kind = CLI_UINT,
     .out = &npus,
     .metavar = "N",
     .min = 1,
     .max = 16777216,
     .flags = CLI_REQUIRED,
     .given = &npus_given,
     .help = "NPUs to fill (the network's)"},
    {.name = "--network",
     .kind = CLI_STR,
     .out = &network,
     .metavar = "F",
     .flags = CLI_REQUIRED,
     .help = "network YAML (ASTRA-sim's)"},
    {.name = "--system",
     .kind = CLI_STR,
     .out = &system_path,
     .metavar = "F",
     .flags = CLI_REQUIRED,
     .help = "system JSON (ASTRA-sim's)"},
    CLI_O_STR("--memory", NULL, &memory_path, "F", "remote-memory JSON (prices offloading)"),
    CLI_O_REAL("--hbm-gb", NULL, &hbm_gb, "G", 1e-6, 1e9, "memory per NPU in GiB (default 80)"),
    CLI_O_UINT("--global-batch", NULL, &global_batch, "B", 1, 1 << 30,
               "sequences per iteration (default: the model's published\n"
               "batch: 1536 GPT-3, 1024 Llama 3; else N)"),
    CLI_O_UINT("--layers", NULL, &layers, "N", 0, 0, "model: layers"),
    CLI_O_UINT("--hidden", NULL, &hidden, "N", 0, 0, "model: hidden size"),
    CLI_O_UINT("--heads", NULL, &heads, "N", 0, 0, "model: heads"),
    CLI_O_UINT("--kv-heads", NULL, &kv_heads, "N", 0, 0, "model: key/value heads"),
    CLI_O_UINT("--ffn", NULL, &ffn, "N", 0, 0, "model: FFN size"),
    CLI_O_UINT("--vocab", NULL, &vocab, "N", 0, 0, "model: vocabulary"),
    CLI_O_UINT("--seq", NULL, &seq, "N", 0, 0, "model: sequence length"),
    CLI_O_UINT("--experts", NULL, &experts, "N", 0, 0, "model: experts"),
    CLI_O_UINT("--top-k", NULL, &top_k, "N", 0, 0, "model: top-k"),
    CLI_O_UINT_GIVEN("--gated", NULL, &gated, "0|1", 0, 1, &gated_given, "model: SwiGLU FFN"),
    CLI_O_FLAG("--flash-attention", NULL, &flash, "attention keeps no score matrix"),
    CLI_O_CHOICE("--schedule", NULL, &schedule, "S", "1f1b|gpipe",
                 "pipeline schedule (default 1f1b)"),
    CLI_O_REAL("--peak-tflops", NULL, &peak_tflops, "F", 1e-6, 1e9, "per NPU (default 989)"),
    CLI_O_REAL("--mem-gbps", NULL, &mem_gbps, "B", 1e-6, 1e9, "per NPU (default 3350)"),
    CLI_O_UINT("--max-tp", NULL, &max_tp, "N", 0, 0, "search bounds"),
    CLI_O_UINT("--max-pp", NULL, &max_pp, "N", 0, 0, "search bounds"),
    CLI_O_UINT("--max-sp", NULL, &max_sp, "N", 0, 0, "context parallelism (default 1: none)"),
    CLI_O_UINT("--max-mbs", NULL, &max_mbs, "N", 0, 0,
               "largest micro-batch (default 4; powers of two)"),
    CLI_O_FLAG("--exhaustive", NULL, &exhaustive,
               "simulate dominated candidates too (only memory prunes)"),
    CLI_O_STR("--backend", NULL, &backend, "B", "simulator backend (default analytical)"),
    CLI_O_STR("--output", "-o", &out_dir, "DIR",
              "the sweep's folder (default plan-MODEL-N); rerunning resumes"),
    CLI_O_UINT("--top", NULL, &top, "K", 1, 1000000, "configurations to print (default 10)"),
    CLI_O_UINT("--jobs", "-j", &jobs, "N", 1, 4096, "executors (default: every CPU)"),
    CLI_O_NP(&n_procs, &np_given, "simulate under 'mpirun -np N' instead"),
    CLI_O_REAL("--timeout", NULL, &timeout_s, "S", 0, 1e9,
               "give up on a candidate after S seconds"),
    CLI_O_FLAG("--restart", NULL, &restart, "discard earlier results in DIR"),
    CLI_O_FLAG("--candidates", NULL, &only_candidates, "list the candidates, simulate nothing"),
    CLI_O_FLAG("--json", NULL, &json_out, "print the ranking as JSON"),
    CLI_O_FLAG("--quiet", "-q", &quiet, "no progress"),
    CLI_O_END};

static const cli_cmd_t cmd = {
    "plan",
    "--model NAME --npus N --network NET.yml --system SYS.json [options]",
    "Find the fastest parallelism for training a transformer on a platform:\n"
    "every DP x TP x PP (x SP, x EP for MoE) split, micro-batch size, ZeRO\n"
    "stage and recomputation the model allows, pruned by memory (the\n"
    "generator's model) and dominance, simulated as a sweep (traces with\n"
    "tensors, so the simulator confirms each peak); prints the best with\n"
    "iteration time, exposed communication per network dimension and peak\n"
    "memory, and the winner as a ready 'etsim gen llm' command (also in\n"
    "DIR/best.sh).",
    opts,
    0,
    0,
    NULL,
    "exit: 0 ok, 1 no candidate fits or none simulated, 2 bad input, 3 internal error"};

typedef struct {
  json_t *row;
  double iter_ns, tokens_s;
  uint64_t peak;
  int over;
} ranked_t;

static int cmp_ranked(const void *a, const void *b) {
  const ranked_t *x = a, *y = b;
  if (x->over != y->over) return x->over - y->over;
  if (x->iter_ns != y->iter_ns) return x->iter_ns < y->iter_ns ? -1 : 1;
  if (x->peak != y->peak) return x->peak < y->peak ? -1 : 1;
  long long px = json_integer_value(json_object_get(x->row, "point")),
            py = json_integer_value(json_object_get(y->row, "point"));
  return px < py ? -1 : px > py;
}

static long long ax(json_t *row, const char *k) {
  json_t *v = json_object_get(json_object_get(row, "axes"), k);
  return json_is_true(v) ? 1 : json_is_integer(v) ? (long long)json_integer_value(v) : 0;
}

static double res(json_t *row, const char *k) {
  json_t *v = json_object_get(json_object_get(row, "results"), k);
  return json_is_number(v) ? json_number_value(v) : NAN;
}

/* `etsim gen llm ...` for a row: the command that made its traces. */
static void gen_command(json_t *row, char *buf, size_t cap, const char *prefix) {
  size_t n = 0;
  n += (size_t)snprintf(buf + n, cap - n, "etsim gen llm");
  if (strcmp(model, "custom")) n += (size_t)snprintf(buf + n, cap - n, " --preset %s", model);
  const struct {
    const char *f;
    uint64_t v;
  } ov[] = {{"layers", layers},     {"hidden", hidden},   {"heads", heads},
            {"kv-heads", kv_heads}, {"ffn", ffn},         {"vocab", vocab},
            {"seq", seq},           {"experts", experts}, {"top-k", top_k}};
  for (size_t i = 0; i < sizeof ov / sizeof *ov && n < cap; i++)
    if (ov[i].v)
      n += (size_t)snprintf(buf + n, cap - n, " --%s %llu", ov[i].f, (unsigned long long)ov[i].v);
  if (gated_given && n < cap)
    n += (size_t)snprintf(buf + n, cap - n, " --gated %llu", (unsigned long long)gated);
  static const char *const k[] = {"dp", "tp", "pp", "sp", "ep", "microbatches", "mbs", "zero"};
  for (size_t i = 0; i < 8 && n < cap; i++) {
    char key[32];
    snprintf(key, sizeof key, "gen.%s", k[i]);
    long long v = ax(row, key);
    if ((i >= 3 && i <= 4 && v == 1) || (i == 7 && v == 0)) continue;
    n += (size_t)snprintf(buf + n, cap - n, " --%s %lld", k[i], v);
  }
  if (ax(row, "gen.recompute") && n < cap) n += (size_t)snprintf(buf + n, cap - n, " --recompute");
  if (schedule && n < cap) n += (size_t)snprintf(buf + n, cap - n, " --schedule gpipe");
  if (flash && n < cap) n += (size_t)snprintf(buf + n, cap - n, " --flash-attention");
  if (peak_tflops > 0 && n < cap)
    n += (size_t)snprintf(buf + n, cap - n, " --peak-tflops %g", peak_tflops);
  if (mem_gbps > 0 && n < cap) n += (size_t)snprintf(buf + n, cap - n, " --mem-gbps %g", mem_gbps);
  if (n < cap) snprintf(buf + n, cap - n, " --tensors -o %s", prefix);
}

static int run_sweep(const char *spec_path, const char *self) {
  /* the sweep command runs it: locally, or under mpirun with --np */
  char *argv[24];
  int k = 0;
  char jb[32], np[32], to[64];
  argv[k++] = (char *)self;
  argv[k++] = "sweep";
  argv[k++] = (char *)spec_path;
  argv[k++] = "-o";
  argv[k++] = (char *)out_dir;
  if (jobs) {
    snprintf(jb, sizeof jb, "%llu", (unsigned long long)jobs);
    argv[k++] = "-j";
    argv[k++] = jb;
  }
  if (np_given) {
    snprintf(np, sizeof np, "%llu", (unsigned long long)n_procs);
    argv[k++] = "--np";
    argv[k++] = np;
  }
  if (timeout_s > 0) {
    snprintf(to, sizeof to, "%.17g", timeout_s);
    argv[k++] = "--timeout";
    argv[k++] = to;
  }
  if (restart) argv[k++] = "--restart";
  if (quiet) argv[k++] = "--quiet";
  else if (np_given && isatty(2)) argv[k++] = "--progress";
  argv[k] = NULL;
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) return cli_usage_error("plan: cannot start the sweep");
  if (pid == 0) {
    /* its summary line is the sweep's, not the plan's: keep stdout clean */
    if (json_out && !freopen("/dev/null", "w", stdout)) _exit(3);
    execv(self, argv);
    _exit(127);
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0) {}
  if (!WIFEXITED(st) || WEXITSTATUS(st)) {
    fprintf(stderr, "etsim: plan: the sweep of the candidates failed (%s/)\n", out_dir);
    return WIFEXITED(st) ? WEXITSTATUS(st) : ETSIM_EXIT_INTERNAL;
  }
  return 0;
}

/* What was searched and pruned, before anything is simulated. */
static void print_search(FILE *info, const etsim_topo_t *topo, const etsim_sweep_plan_stats_t *st) {
  char topo_text[256] = "";
  for (int d = 0, m = 0; d < topo->ndims; d++)
    m += snprintf(topo_text + m, sizeof topo_text - (size_t)m, "%s%s(%u, %g GB/s)", d ? " x " : "",
                  etsim_topo_kind_name(topo->kind[d]), topo->npus[d], topo->bw_gbps[d]);
  fprintf(info, "plan: %s on %llu NPUs, %s; global batch %u sequences; %g GiB per NPU\n", model,
          (unsigned long long)npus, topo_text, st->global_batch, st->hbm_gib);
  fprintf(info,
          "  searched  %zu DP x TP x PP x SP x EP splits, %zu configurations with micro-batch "
          "size, ZeRO stage and recomputation\n",
          st->layouts, st->considered);
  fprintf(info,
          "  memory    %zu over %g GiB by the generator's memory model (etsim_gen_llm_memory: "
          "model states by ZeRO stage + activations by schedule); the simulator's tracked peak "
          "of each simulated trace is shown below\n",
          st->over_memory, st->hbm_gib);
  fprintf(info,
          "  dominance %zu skipped (ZeRO 2 makes ZeRO 1's trace, ZeRO 3 adds gathers to it, "
          "recomputation adds a forward; kept only when the cheaper one does not fit)\n",
          st->dominated);
}

/* --candidates: the list, simulated nothing. */
static int print_candidates(const etsim_sweep_cand_t *c, size_t n) {
  printf("dp,tp,pp,sp,ep,microbatches,mbs,zero,recompute,model_mem_gib\n");
  for (size_t i = 0; i < n; i++)
    printf("%u,%u,%u,%u,%u,%u,%u,%d,%d,%.3f\n", c[i].dp, c[i].tp, c[i].pp, c[i].sp, c[i].ep,
           c[i].microbatches, c[i].mbs, c[i].zero, c[i].recompute,
           (double)c[i].mem_bytes / 1073741824.0);
  return n ? ETSIM_EXIT_OK : ETSIM_EXIT_PROBLEMS;
}

/* The sweep's ok rows, ranked (fitting first, then by iteration time);
 * *failed counts the others.  Returns 0 or an exit code. */
static int read_ranked(const etsim_sweep_plan_stats_t *st, ranked_t **out, size_t *n_out,
                       size_t *failed) {
  char rows_path[PATH_MAX + 16];
  snprintf(rows_path, sizeof rows_path, "%s/points.jsonl", out_dir);
  FILE *f = fopen(rows_path, "r");
  if (!f) return cli_usage_error("plan: %s: %s", rows_path, strerror(errno));
  ranked_t *r = NULL;
  size_t nr = 0, cap = 0;
  char *line = NULL;
  size_t lcap = 0;
  double tokens_iter = 0;
  {
    etsim_gen_llm_model_t m;
    if (!strcmp(model, "custom") || etsim_gen_llm_preset(model, &m, NULL)) m.seq = 0;
    tokens_iter = (double)st->global_batch * (double)(seq ? seq : m.seq);
  }
  double cap_bytes = st->hbm_gib * 1073741824.0;
  *failed = 0;
  while (getline(&line, &lcap, f) > 0) {
    json_t *row = json_loads(line, 0, NULL);
    if (!row) continue;
    const char *status = json_string_value(json_object_get(row, "status"));
    if (!status || strcmp(status, "ok")) {
      (*failed)++;
      json_decref(row);
      continue;
    }
    if (etsim_grow((void **)&r, &cap, nr + 1, sizeof *r)) {
      json_decref(row);
      break;
    }
    double it = res(row, "iteration_ns"), pk = res(row, "peak_mem_bytes");
    r[nr] = (ranked_t){row, it, it > 0 ? tokens_iter / (it * 1e-9) : 0,
                       isnan(pk) ? 0 : (uint64_t)pk, !isnan(pk) && pk > cap_bytes};
    nr++;
  }
  free(line);
  fclose(f);
  etsim_qsort(r, nr, sizeof *r, cmp_ranked);
  *out = r;
  *n_out = nr;
  return 0;
}

/* --json: the ranking as one object on stdout. */
static void print_json(const ranked_t *r, size_t nr, size_t n, size_t failed, int dims,
                       const etsim_sweep_plan_stats_t *st) {
  printf(
      "{\"model\": \"%s\", \"npus\": %llu, \"global_batch\": %u, \"hbm_gib\": %g, "
      "\"candidates\": %zu, \"simulated\": %zu, \"failed\": %zu, \"memory_model\": "
      "\"generator (etsim_gen_llm_memory) for pruning, simulator (traced tensors) for peaks\", "
      "\"top\": [",
      model, (unsigned long long)npus, st->global_batch, st->hbm_gib, n, nr, failed);
  for (size_t i = 0; i < nr && i < top; i++) {
    char cmdline[2048];
    gen_command(r[i].row, cmdline, sizeof cmdline, "best");
    json_t *e = json_pack("{s:I,s:O,s:f,s:f,s:I,s:b,s:s}", "rank", (json_int_t)(i + 1), "axes",
                          json_object_get(r[i].row, "axes"), "iteration_ns", r[i].iter_ns,
                          "tokens_per_s", r[i].tokens_s, "peak_mem_bytes", (json_int_t)r[i].peak,
                          "over_memory", r[i].over, "gen_command", cmdline);
    json_t *ex = json_object();
    for (int d = 0; e && ex && d < dims; d++) {
      char k[32];
      snprintf(k, sizeof k, "exposed_dim%d_ns", d);
      double v = res(r[i].row, k);
      json_object_set_new(ex, k, isnan(v) ? json_null() : json_real(v));
    }
    json_object_set_new(ex, "exposed_p2p_ns", json_real(res(r[i].row, "exposed_p2p_ns")));
    json_object_set_new(ex, "exposed_comm_ns", json_real(res(r[i].row, "exposed_comm_ns")));
    json_object_set_new(e, "exposed", ex);
    char *t = e ? json_dumps(e, JSON_COMPACT) : NULL;
    printf("%s%s", i ? ", " : "", t ? t : "null");
    free(t);
    json_decref(e);
  }
  printf("]}\n");
}

/* The table of the top configurations. */
static void print_table(const ranked_t *r, size_t nr, size_t failed, int dims) {
  printf("top %zu of %zu simulated (%zu failed), by iteration time:\n", nr < top ? nr : (size_t)top,
         nr, failed);
  printf("%4s %5s %4s %4s %3s %3s %5s %4s %4s %3s %11s %11s", "rank", "dp", "tp", "pp", "sp", "ep",
         "mb", "mbs", "zero", "rc", "iter ms", "tokens/s");
  for (int d = 0; d < dims; d++) printf("  exp dim%d ms", d);
  printf(" %10s %9s\n", "exp pp ms", "peak GiB");
  for (size_t i = 0; i < nr && i < top; i++) {
    json_t *row = r[i].row;
    printf("%4zu %5lld %4lld %4lld %3lld %3lld %5lld %4lld %4lld %3s %11.3f %11.4g", i + 1,
           ax(row, "gen.dp"), ax(row, "gen.tp"), ax(row, "gen.pp"), ax(row, "gen.sp"),
           ax(row, "gen.ep"), ax(row, "gen.microbatches"), ax(row, "gen.mbs"), ax(row, "gen.zero"),
           ax(row, "gen.recompute") ? "yes" : "no", r[i].iter_ns / 1e6, r[i].tokens_s);
    for (int d = 0; d < dims; d++) {
      char k[32];
      snprintf(k, sizeof k, "exposed_dim%d_ns", d);
      printf(" %12.3f", res(row, k) / 1e6);
    }
    printf(" %10.3f %9.2f%s\n", res(row, "exposed_p2p_ns") / 1e6, (double)r[i].peak / 1073741824.0,
           r[i].over ? " (over)" : "");
  }
}

/* DIR/best.sh: the winner's gen command and the sim command that
 * reproduces its row. */
static void write_best(const ranked_t *b, const char *gen, const etsim_sweep_plan_stats_t *st) {
  char path[PATH_MAX + 16];
  snprintf(path, sizeof path, "%s/best.sh", out_dir);
  etsim_error_t err = {0};
  etsim_outfile_t of; /* never a half script */
  if (etsim_outfile_open(&of, path, &err)) {
    fprintf(stderr, "etsim: plan: %s\n", err.msg);
    return;
  }
  FILE *bf = of.fp;
  fprintf(bf,
          "#!/bin/sh\n# The fastest configuration etsim plan found (%s/points.jsonl, point "
          "%lld): %.3f ms per iteration.\nset -e\nmkdir -p best\n%s\n",
          out_dir, (long long)json_integer_value(json_object_get(b->row, "point")),
          b->iter_ns / 1e6, gen);
  fprintf(bf,
          "etsim sim --workload best/llm --comm-group best/llm.comm_group.json \\\n"
          "  --network '%s' --system '%s'%s%s%s --backend %s --hbm-gb %g\n",
          network, system_path, memory_path ? " --memory '" : "", memory_path ? memory_path : "",
          memory_path ? "'" : "", backend, st->hbm_gib);
  if (chmod(of.tmp_path, 0755)) {
    fprintf(stderr, "etsim: plan: %s: %s\n", of.tmp_path, strerror(errno));
    etsim_outfile_abort(&of);
  } else if (etsim_outfile_commit(&of, &err)) {
    fprintf(stderr, "etsim: plan: %s\n", err.msg);
  }
}

int etsim_cmd_plan(int argc, char **argv) {
  int code = cli_parse(&cmd, argc, argv, NULL, NULL);
  if (code >= 0) return code;
  etsim_sweep_plan_opts_t o = {.preset = model,
                               .layers = layers,
                               .hidden = hidden,
                               .heads = heads,
                               .kv_heads = kv_heads,
                               .ffn = ffn,
                               .vocab = vocab,
                               .seq = seq,
                               .experts = experts,
                               .top_k = top_k,
                               .gated = gated_given ? (int)gated : -1,
                               .npus = (uint32_t)npus,
                               .global_batch = (uint32_t)global_batch,
                               .hbm_gib = hbm_gb,
                               .flash = flash,
                               .schedule = schedule ? ETSIM_GEN_SCHED_GPIPE : ETSIM_GEN_SCHED_1F1B,
                               .peak_tflops = peak_tflops,
                               .mem_gbps = mem_gbps,
                               .max_tp = (uint32_t)max_tp,
                               .max_pp = (uint32_t)max_pp,
                               .max_sp = (uint32_t)max_sp,
                               .max_mbs = (uint32_t)max_mbs,
                               .exhaustive = exhaustive,
                               .network = network,
                               .system = system_path,
                               .memory = memory_path,
                               .backend = backend};
  etsim_error_t err = {0};
  /* the platform must hold exactly the NPUs asked for */
  etsim_topo_t topo;
  if (etsim_topo_load_yaml(network, &topo, &err)) return cli_fail(&err);
  if (topo.total != npus)
    return cli_usage_error("plan: %s has %u NPUs, not --npus %llu", network, topo.total,
                           (unsigned long long)npus);
  etsim_sweep_cand_t *c;
  size_t n;
  etsim_sweep_plan_stats_t st;
  if (etsim_sweep_plan_candidates(&o, &c, &n, &st, &err)) return cli_fail(&err);
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", out_dir ? out_dir : "");
  if (!out_dir) {
    snprintf(dir, sizeof dir, "plan-%s-%llu", model, (unsigned long long)npus);
    out_dir = dir;
  }
  FILE *info = json_out ? stderr : stdout;
  if (!quiet || only_candidates) print_search(info, &topo, &st);
  if (only_candidates) {
    code = print_candidates(c, n);
    etsim_free(c);
    return code;
  }
  if (!n) {
    etsim_free(c);
    fprintf(stderr, "etsim: plan: no configuration of %s fits %g GiB per NPU on %llu NPUs\n", model,
            st.hbm_gib, (unsigned long long)npus);
    return ETSIM_EXIT_PROBLEMS;
  }
  if (mkdir(out_dir, 0777) && errno != EEXIST) {
    etsim_free(c);
    return cli_usage_error("plan: %s: %s", out_dir, strerror(errno));
  }
  char spec_path[PATH_MAX + 16];
  snprintf(spec_path, sizeof spec_path, "%s/plan.yaml", out_dir);
  int rc = etsim_sweep_plan_write_spec(&o, c, n, spec_path, &err);
  etsim_free(c);
  if (rc) return cli_fail(&err);
  if (!quiet)
    fprintf(info, "  simulating %zu candidates (%s backend): %s -> %s/points.jsonl\n", n, backend,
            spec_path, out_dir);
  char self[PATH_MAX];
  if (cli_self_path(self, sizeof self))
    return cli_usage_error("plan: cannot find the etsim program");
  if ((rc = run_sweep(spec_path, self))) return rc;
  ranked_t *r = NULL;
  size_t nr = 0, failed = 0;
  if ((rc = read_ranked(&st, &r, &nr, &failed))) return rc;
  if (json_out) print_json(r, nr, n, failed, topo.ndims, &st);
  else print_table(r, nr, failed, topo.ndims);
  int best = -1;
  for (size_t i = 0; i < nr && best < 0; i++)
    if (!r[i].over) best = (int)i;
  if (best >= 0) {
    char gen[2048];
    gen_command(r[best].row, gen, sizeof gen, "best/llm");
    write_best(&r[best], gen, &st);
    if (!json_out) printf("best: %s\n      (with the sim command in %s/best.sh)\n", gen, out_dir);
  } else if (!json_out) {
    printf("no simulated configuration fits %g GiB per NPU\n", st.hbm_gib);
  }
  for (size_t i = 0; i < nr; i++) json_decref(r[i].row);
  etsim_free(r);
  return best >= 0 ? ETSIM_EXIT_OK : ETSIM_EXIT_PROBLEMS;
}
