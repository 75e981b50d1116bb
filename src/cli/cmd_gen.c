/*
 * cmd_gen.c — `etsim gen micro|llm`: make workload traces from a
 * description (docs/gen.md).  Parsing only; the generators are in src/gen.
 */
#include "cli/cli.h"

#include "cli/dlrm_cli.h"

#include "etsim/gen.h"
#include "etsim/netpkt.h"
#include "etsim/shard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *usage_top =
    "usage: etsim gen micro|llm|dlrm|topo [options]\n"
    "\n"
    "Generate Chakra trace sets (see 'etsim gen micro --help', 'etsim gen llm "
    "--help').\n"
    "  micro   collective microbenchmarks, as ASTRA-sim's example scripts\n"
    "  llm     transformer LLM training (DP x TP x PP x SP x EP, ZeRO, "
    "pipeline schedules)\n"
    "  dlrm    DLRM training from an embedding sharding plan\n"
    "  topo    a network fabric (star, Clos, fat-tree, rail) as an ns-3\n"
    "          topology file for etsim netsim / sim --net-topology\n";

/* `etsim gen topo SPEC -o FILE`. */
static int gen_topo(int argc, char **argv) {
  const char *spec = NULL, *out = NULL;
  const cli_opt_t opts[] = {{.name = "--output",
                             .alias = "-o",
                             .kind = CLI_STR,
                             .out = &out,
                             .metavar = "FILE",
                             .flags = CLI_REQUIRED,
                             .help = "where to write ('-' is stdout)"},
                            CLI_O_END};
  const cli_cmd_t cmd = {"gen topo",
                         "SPEC -o FILE",
                         "Write the fabric SPEC names in the ns-3 RDMA topology format (hosts\n"
                         "first, then switches).  SPEC is one of\n"
                         "  star:hosts=N\n"
                         "  clos2:leaves=L,hosts=H,spines=S[,fabric=RATE]    H hosts per leaf\n"
                         "  fattree:k=K[,hosts=H]                            H per edge (K/2)\n"
                         "  rail:nodes=N,gpus=G[,spines=S][,nic=RATE][,nvlink=RATE][,fabric=RATE]\n"
                         "with [,rate=RATE][,delay=TIME] (default 100Gbps, 1us).  The same SPEC\n"
                         "works wherever a topology file is read (TOPOLOGY_FILE, --net-topology).\n"
                         "Example: etsim gen topo clos2:leaves=8,hosts=16,spines=8 -o clos.topo",
                         opts,
                         1,
                         1,
                         "SPEC",
                         NULL};
  int code = cli_parse(&cmd, argc, argv, &spec, NULL);
  if (code >= 0) return code;
  etsim_error_t err = {0};
  etsim_netpkt_topo_t t;
  if (etsim_netpkt_topo_spec(&t, spec, &err)) return cli_fail(&err);
  int rc = etsim_netpkt_topo_write(&t, out, &err);
  uint32_t n_sw = 0;
  for (uint32_t v = 0; v < t.n_nodes; v++) n_sw += t.is_switch[v] != 0;
  if (!rc && strcmp(out, "-") != 0)
    printf("%s: %u hosts, %u switches, %zu links\n", out, t.n_nodes - n_sw, n_sw, t.n_links);
  etsim_netpkt_topo_free(&t);
  return rc ? cli_fail(&err) : ETSIM_EXIT_OK;
}

static void report(const char *prefix, int format, const etsim_et_set_report_t *r) {
  if (cli_quiet) return;
  printf(
      "%s: %zu rank(s) in %zu file(s)%s, %llu node(s) written (%llu over "
      "all ranks), %llu bytes\n",
      prefix, r->n_ranks, r->n_files, format == ETSIM_ET_OUT_MANIFEST ? " + manifest" : "",
      (unsigned long long)r->n_nodes, (unsigned long long)r->rank_nodes,
      (unsigned long long)r->n_bytes);
}

/* --out-format F: manifest (0) or et (1), the ETSIM_ET_OUT_* order. */
static const char *const out_formats = "manifest|et";

static int gen_micro(int argc, char **argv) {
  etsim_gen_micro_opts_t o = {0};
  int colls[64], dims[16], ids = -1;
  const char *coll_arg = NULL, *size_arg = NULL, *dims_arg = NULL;
  uint64_t npus = 0, count = 1, root = 0;
  char defprefix[64];
  const cli_opt_t opts[] = {
      {.name = "--coll",
       .kind = CLI_STR,
       .out = &coll_arg,
       .metavar = "LIST",
       .flags = CLI_REQUIRED,
       .help = "comma-separated: all-reduce, all-gather,\n"
               "reduce-scatter, all-to-all, broadcast, reduce,\n"
               "gather, scatter, barrier, send-recv (a ring)"},
      {.name = "--size",
       .kind = CLI_STR,
       .out = &size_arg,
       .metavar = "BYTES",
       .flags = CLI_REQUIRED,
       .help = "comm_size of each collective (1048576, 64KiB, 1MiB)"},
      CLI_O_UINT("--npus", NULL, &npus, "N", 1, 16777216, "number of ranks (required)"),
      CLI_O_UINT("--count", NULL, &count, "K", 1, 100000000, "repeat the list K times (default 1)"),
      CLI_O_UINT("--comp-ns", NULL, &o.comp_ns, "T", 0, 0,
                 "a COMP node of T ns before each collective"),
      {.name = "--root",
       .kind = CLI_UINT,
       .out = &root,
       .metavar = "R",
       .min = 0,
       .max = 16777215,
       .given = &o.has_root,
       .help = "root NPU of broadcast, reduce, gather and scatter\n"
               "(the comm_root attribute; default none, which sim\n"
               "reads as 0)"},
      CLI_O_STR("--dims", NULL, &dims_arg, "LIST",
                "involved_dim of each collective, e.g. 1,0 (which\n"
                "network dimensions it spans; ASTRA-sim's default is\n"
                "all)"),
      CLI_O_CHOICE("--out-format", NULL, &o.format, "F", out_formats,
                   "manifest (default: shared class files) or et\n(plain PREFIX.<rank>.et files)"),
      CLI_O_CHOICE("--ids", NULL, &ids, "MODE", "restart|continue",
                   "restart (every rank's ids from 0) or continue\n"
                   "(ids count on across ranks, as ASTRA-sim's scripts;\n"
                   "the default with --out-format et)"),
      CLI_O_STR("--output", "-o", &o.prefix, "PREFIX",
                "where to write (default: the first collective's\nname, e.g. all_reduce)"),
      CLI_O_FLAG("--quiet", "-q", &cli_quiet, "print nothing on success"),
      CLI_O_END};
  const cli_cmd_t cmd = {"gen micro",
                         "--coll LIST --size BYTES --npus N [options]",
                         "One trace per rank: the collectives of LIST in a dependency chain,\n"
                         "repeated --count times, each optionally after a COMP node.  Ranks with\n"
                         "identical traces share one file through PREFIX.manifest.json.",
                         opts,
                         0,
                         0,
                         NULL,
                         NULL};
  int code = cli_parse(&cmd, argc, argv, NULL, NULL);
  if (code >= 0) return code;
  if (!npus)
    return cli_usage_error("gen micro: --npus N is required (see 'etsim gen micro --help')");
  o.count = (size_t)count;
  o.root = (uint32_t)root;
  if (ids >= 0) o.ids = ids == 0 ? ETSIM_GEN_IDS_RESTART : ETSIM_GEN_IDS_CONTINUE;
  if (dims_arg) {
    o.n_dims = 0;
    for (const char *p = dims_arg; *p; p++) {
      if ((*p == '0' || *p == '1') && o.n_dims < 16 && (p[1] == ',' || p[1] == 0)) {
        dims[o.n_dims++] = *p - '0';
        if (p[1] == ',') p++;
      } else {
        return cli_usage_error("--dims: '%s' is not a list of 0/1 like 1,0,1 (at most 16)",
                               dims_arg);
      }
    }
    if (!o.n_dims) return cli_usage_error("--dims: empty list");
    o.dims = dims;
  }
  /* The list: names separated by commas. */
  char list[512];
  snprintf(list, sizeof list, "%s", coll_arg);
  for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int c = etsim_gen_coll_parse(t);
    if (c == -2)
      return cli_usage_error(
          "--coll: unknown collective '%s' (all-reduce, "
          "all-gather, reduce-scatter, all-to-all, "
          "broadcast, reduce, gather, scatter, barrier, "
          "send-recv)",
          t);
    if (o.n_colls == sizeof colls / sizeof colls[0])
      return cli_usage_error("--coll: at most 64 collectives");
    colls[o.n_colls++] = c;
  }
  if (!o.n_colls) return cli_usage_error("--coll: empty list");
  o.colls = colls;
  if (etsim_parse_size(size_arg, &o.size_bytes) || o.size_bytes == 0)
    return cli_usage_error(
        "--size: '%s' is not a size of at least 1 byte (1048576, "
        "64KiB, 1MiB)",
        size_arg);
  o.npus = (size_t)npus;
  if (!o.prefix) {
    char cname[32];
    const char *s =
        o.colls[0] == ETSIM_GEN_SEND_RECV ? "SEND_RECV" : etsim_coll_type_name(o.colls[0]);
    size_t j = 0;
    for (; s[j] && j + 1 < sizeof cname; j++)
      cname[j] = (char)(s[j] >= 'A' && s[j] <= 'Z' ? s[j] + 32 : s[j]);
    cname[j] = 0;
    snprintf(defprefix, sizeof defprefix, "%s", cname);
    o.prefix = defprefix;
  }
  etsim_error_t err = {0};
  etsim_et_set_report_t rep;
  if (etsim_gen_micro(&o, &rep, &err)) return cli_fail(&err);
  report(o.prefix, o.format, &rep);
  return ETSIM_EXIT_OK;
}

/* The memory model per pipeline stage, in GiB per NPU. */
static int print_llm_memory(const etsim_gen_llm_opts_t *o, etsim_error_t *err) {
  uint32_t pp = o->pp ? o->pp : 1;
  const double G = 1024.0 * 1024 * 1024;
  printf("memory per NPU (GiB) of %s, ZeRO %d, %s%s%s:\n", o->model.name ? o->model.name : "model",
         o->zero, o->schedule == ETSIM_GEN_SCHED_GPIPE ? "GPipe" : "1F1B",
         o->recompute ? ", full recomputation" : "", o->flash ? ", flash attention" : "");
  printf("stage  layers  params  grads  optim  act/layer/mb  mbs  activations  zero3  total\n");
  for (uint32_t s = 0; s < pp; s++) {
    etsim_gen_llm_mem_t m;
    if (etsim_gen_llm_memory(o, s, &m, err)) return cli_fail(err);
    printf("%5u  %6llu  %6.2f  %5.2f  %5.2f  %12.4f  %3u  %11.2f  %5.2f  %5.2f\n", s,
           (unsigned long long)m.layers, (double)m.params / G, (double)m.grads / G,
           (double)m.optimizer / G, (double)m.act_layer / G, m.in_flight, (double)m.activations / G,
           (double)m.zero3_layer / G, (double)m.total / G);
  }
  return ETSIM_EXIT_OK;
}

static int gen_llm(int argc, char **argv) {
  etsim_gen_llm_opts_t o = {0};
  const char *preset = NULL;
  int memory = 0;
  /* Model overrides, in the order of `fields` below; given[] says which. */
  enum {
    OV_LAYERS,
    OV_HIDDEN,
    OV_HEADS,
    OV_KV,
    OV_FFN,
    OV_VOCAB,
    OV_SEQ,
    OV_EXPERTS,
    OV_TOPK,
    OV_GATED,
    NOV
  };
  uint64_t ov[NOV] = {0}, par[8] = {0}, npus = 0;
  int given[NOV] = {0};
  const double big = 1e15; /* above every real model; gen llm bounds products itself */
#define OV(nm, k, hlp)                                                                 \
  {                                                                                    \
    .name = nm, .kind = CLI_UINT, .out = &ov[k], .metavar = "N", .min = 0, .max = big, \
    .given = &given[k], .help = hlp                                                    \
  }
#define PAR(nm, k, hlp) CLI_O_UINT(nm, NULL, &par[k], "N", 1, 16777216, hlp)
  const cli_opt_t opts[] = {
      {.name = "--preset",
       .alias = "--model",
       .kind = CLI_STR,
       .out = &preset,
       .metavar = "NAME",
       .help = "gpt3-175b, llama3-8b, llama3-70b, llama3-405b,\n"
               "mixtral-8x7b (or describe one with the flags below)"},
      OV("--layers", OV_LAYERS, "model: transformer layers (overrides the preset)"),
      OV("--hidden", OV_HIDDEN, "model: hidden size"),
      OV("--heads", OV_HEADS, "model: attention heads"),
      OV("--kv-heads", OV_KV, "model: key/value heads"),
      OV("--ffn", OV_FFN, "model: FFN size"),
      OV("--vocab", OV_VOCAB, "model: vocabulary"),
      OV("--seq", OV_SEQ, "model: sequence length"),
      OV("--experts", OV_EXPERTS, "model: experts (mixture of experts)"),
      OV("--top-k", OV_TOPK, "model: experts per token"),
      CLI_O_UINT_GIVEN("--gated", NULL, &ov[OV_GATED], "0|1", 0, 1, &given[OV_GATED],
                       "model: gated MLP (SwiGLU)"),
      PAR("--dp", 0,
          "data-parallel degree (default 1; the product of the\n"
          "five degrees is the NPU count)"),
      PAR("--tp", 1, "tensor-parallel degree"),
      PAR("--pp", 2, "pipeline-parallel degree"),
      PAR("--sp", 3, "sequence-parallel degree"),
      PAR("--ep", 4, "expert-parallel degree"),
      CLI_O_UINT("--npus", NULL, &npus, "N", 1, 16777216, "optional check: must equal the product"),
      PAR("--microbatches", 5, "per iteration and data-parallel rank (default pp)"),
      PAR("--mbs", 6, "sequences per micro-batch (default 1)"),
      CLI_O_CHOICE("--schedule", NULL, &o.schedule, "S", "1f1b|gpipe", "1f1b (default) or gpipe"),
      CLI_O_CHOICE("--zero", NULL, &o.zero, "Z", "0|1|2|3",
                   "0 (all-reduce), 1/2 (reduce-scatter + all-gather),\n"
                   "3 (parameters gathered per layer, FSDP)"),
      CLI_O_FLAG("--recompute", NULL, &o.recompute, "full activation recomputation"),
      CLI_O_FLAG("--memory", NULL, &memory,
                 "print each pipeline stage's memory per NPU (model\n"
                 "states by ZeRO stage, activations by schedule and\n"
                 "recomputation); with no -o, print only"),
      CLI_O_FLAG("--tensors", NULL, &o.tensors,
                 "write the tensors (ASTRA-sim's inputs/outputs\n"
                 "attributes) so 'etsim sim' tracks memory per NPU"),
      CLI_O_FLAG("--flash-attention", NULL, &o.flash,
                 "attention keeps no score matrix (memory model)"),
      CLI_O_REAL("--peak-tflops", NULL, &o.peak_tflops, "F", 1e-6, 1e9,
                 "per NPU (default 989, H100 SXM BF16 dense); compute\n"
                 "time = max(FLOPs / peak, bytes / bandwidth)"),
      CLI_O_REAL("--mem-gbps", NULL, &o.mem_gbps, "B", 1e-6, 1e9, "per NPU (default 3350)"),
      PAR("--dtype-bytes", 7, "bytes per value (default 2)"),
      CLI_O_STR("--output", "-o", &o.prefix, "PREFIX", "where to write (default: the preset name)"),
      CLI_O_CHOICE("--out-format", NULL, &o.format, "F", out_formats, "manifest (default) or et"),
      CLI_O_STR("--comm-group", NULL, &o.comm_group_path, "PATH", "default PREFIX.comm_group.json"),
      CLI_O_FLAG("--quiet", "-q", &cli_quiet, "print nothing on success"),
      CLI_O_END};
#undef OV
#undef PAR
  const cli_cmd_t cmd = {"gen llm",
                         "--preset NAME [parallelism] [options] -o PREFIX",
                         "One training iteration of a decoder-only transformer per rank, with\n"
                         "the communicator groups in PREFIX.comm_group.json (ASTRA-sim's format).",
                         opts,
                         0,
                         0,
                         NULL,
                         NULL};
  int code = cli_parse(&cmd, argc, argv, NULL, NULL);
  if (code >= 0) return code;
  uint32_t *pdst[8] = {&o.dp, &o.tp, &o.pp, &o.sp, &o.ep, &o.microbatches, &o.mbs, &o.dtype_bytes};
  for (int k = 0; k < 8; k++) *pdst[k] = (uint32_t)par[k];
  o.npus = (size_t)npus;
  o.schedule = o.schedule ? ETSIM_GEN_SCHED_GPIPE : ETSIM_GEN_SCHED_1F1B;
  etsim_error_t err = {0};
  if (preset) {
    if (etsim_gen_llm_preset(preset, &o.model, &err)) return cli_fail(&err);
  } else {
    int all = 1;
    for (int k = OV_LAYERS; k <= OV_SEQ; k++) all &= given[k];
    if (!all)
      return cli_usage_error(
          "gen llm: give --preset NAME, or all of --layers "
          "--hidden --heads --kv-heads --ffn --vocab --seq");
    o.model.name = "custom";
  }
  uint64_t *fields[] = {&o.model.layers,   &o.model.hidden,  &o.model.heads,
                        &o.model.kv_heads, &o.model.ffn,     &o.model.vocab,
                        &o.model.seq,      &o.model.experts, &o.model.top_k};
  for (int k = 0; k < OV_GATED; k++)
    if (given[k]) *fields[k] = ov[k];
  if (given[OV_GATED]) o.model.gated = ov[OV_GATED] != 0;
  if (memory) {
    int only = !o.prefix;
    int rc = print_llm_memory(&o, &err);
    if (rc) return rc;
    if (only) return ETSIM_EXIT_OK;
  }
  if (!o.prefix) o.prefix = o.model.name;
  etsim_et_set_report_t rep;
  if (etsim_gen_llm(&o, &rep, &err)) return cli_fail(&err);
  report(o.prefix, o.format, &rep);
  return ETSIM_EXIT_OK;
}

static int gen_dlrm(int argc, char **argv) {
  etsim_gen_dlrm_opts_t g = {0};
  etsim_shard_opts_t so;
  etsim_shard_defaults(&so);
  cli_dlrm_flags_t fl;
  memset(&fl, 0, sizeof fl);
  cli_dlrm_plan_args_t a = {0};
  const char *plan = "auto";
  cli_opt_t opts[11 + CLI_DLRM_N_OPTS + 1] = {
      {.name = "--preset",
       .alias = "--model",
       .kind = CLI_STR,
       .out = &a.model,
       .metavar = "M",
       .flags = CLI_REQUIRED,
       .help = "mlperf-dlrm, mlperf-dlrm-dcnv2, criteo-kaggle,\n"
               "synthetic-large, dlrm-1t, or a model JSON file"},
      CLI_O_STR("--plan", NULL, &plan, "FILE|auto",
                "a plan from 'etsim shard -o plan.json', or auto\n"
                "(default): planned here with the flags below"),
      CLI_O_UINT("--ranks", NULL, &a.ranks, "N", 1, ETSIM_SHARD_MAX_RANKS,
                 "ranks (required with --plan auto)"),
      CLI_O_UINT("--ranks-per-host", NULL, &a.ranks_per_host, "H", 1, ETSIM_SHARD_MAX_RANKS,
                 "ranks per host (default N: one host)"),
      CLI_O_REAL("--hbm-gb", NULL, &so.hbm_gb, "G", 1e-9, 1e9,
                 "memory per rank, for auto (default 32)"),
      CLI_O_UINT("--batch", NULL, &a.batch, "B", 1, ETSIM_SHARD_MAX_BATCH,
                 "samples per rank (default the model's)"),
      CLI_O_STR("--types", NULL, &a.types, "LIST", "allowed types for auto: tw,rw,cw,dp,twrw,twcw"),
      CLI_O_STR("--calib", NULL, &a.calib, "FILE", "for auto: price collectives as measured"),
      CLI_O_CHOICE("--out-format", NULL, &g.format, "F", out_formats, "manifest (default) or et"),
      CLI_O_STR("--output", "-o", &g.prefix, "PREFIX", "where to write (default dlrm)"),
  };
  size_t n_opts = 10;
  opts[n_opts++] = (cli_opt_t)CLI_O_FLAG("--quiet", "-q", &cli_quiet, "print nothing on success");
  cli_dlrm_opts(&fl, opts, &n_opts);
  opts[n_opts] = (cli_opt_t)CLI_O_END;
  const cli_cmd_t cmd = {
      "gen dlrm",
      "--preset M --ranks N [--ranks-per-host H] [--plan plan.json|auto] -o PREFIX",
      "DLRM training iterations per rank from an embedding sharding plan\n"
      "('etsim shard -o plan.json', or auto: planned here).  A plan file\n"
      "brings its iteration options; the flags below override them.",
      opts,
      0,
      0,
      NULL,
      NULL};
  int code0 = cli_parse(&cmd, argc, argv, NULL, NULL);
  if (code0 >= 0) return code0;
  if (cli_dlrm_sizes(&a, &so)) return ETSIM_EXIT_USAGE;
  int autop = strcmp(plan, "auto") == 0;
  if (autop && !a.ranks) return cli_usage_error("gen dlrm: --ranks is required with --plan auto");
  if (autop && cli_dlrm_apply(&fl, &so.step, &so.tiers, 1)) return ETSIM_EXIT_USAGE;
  etsim_error_t err = {0};
  etsim_shard_model_t mdl;
  etsim_shard_access_t *acc = NULL;
  etsim_shard_calib_t cal;
  int rc = cli_dlrm_model_load(&a, &mdl, &err);
  if (rc) return cli_fail(&err);
  etsim_shard_plan_t p;
  memset(&p, 0, sizeof p);
  /* The calibration prices auto plans only (a plan file brings its size,
   * and the trace does not use the estimate): checked against --ranks. */
  int code = cli_dlrm_inputs(&a, autop ? fl.access_path : NULL, autop, &mdl, &so, &cal, &acc);
  if (code) goto out;
  rc = autop ? etsim_shard_plan(&mdl, &so, &p, &err)
             : etsim_shard_plan_read(plan, &mdl, &so, &p, &err);
  if (rc) goto fail;
  if (!autop) {
    if (a.ranks && a.ranks != p.n_ranks) {
      code = cli_usage_error("gen dlrm: --ranks %llu but %s plans %zu ranks",
                             (unsigned long long)a.ranks, plan, p.n_ranks);
      goto out;
    }
    if (cli_dlrm_apply(&fl, &p.step, &p.tiers, 0)) {
      code = ETSIM_EXIT_USAGE;
      goto out;
    }
  }
  g.model = &mdl;
  g.plan = &p;
  if (!g.prefix) g.prefix = "dlrm";
  etsim_et_set_report_t rep;
  if ((rc = etsim_gen_dlrm(&g, &rep, &err))) goto fail;
  report(g.prefix, g.format, &rep);
  goto out;
fail:
  code = cli_fail(&err);
out:
  etsim_shard_plan_free(&p);
  etsim_shard_access_free(acc);
  etsim_shard_model_free(&mdl);
  return code;
}

int etsim_cmd_gen(int argc, char **argv) {
  if (argc < 2) {
    fputs(usage_top, stderr);
    return ETSIM_EXIT_USAGE;
  }
  if (cli_is_help(argv[1])) {
    fputs(usage_top, stdout);
    return ETSIM_EXIT_OK;
  }
  if (strcmp(argv[1], "micro") == 0) return gen_micro(argc - 1, argv + 1);
  if (strcmp(argv[1], "llm") == 0) return gen_llm(argc - 1, argv + 1);
  if (strcmp(argv[1], "dlrm") == 0) return gen_dlrm(argc - 1, argv + 1);
  if (strcmp(argv[1], "topo") == 0) return gen_topo(argc - 1, argv + 1);
  return cli_usage_error(
      "gen: unknown generator '%s' (micro, llm, dlrm or "
      "topo; see 'etsim gen --help')",
      argv[1]);
}
