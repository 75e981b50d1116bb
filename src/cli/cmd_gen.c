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

static const char *usage_topo =
    "usage: etsim gen topo SPEC -o FILE\n"
    "\n"
    "Write the fabric SPEC names in the ns-3 RDMA topology format (hosts\n"
    "first, then switches).  SPEC is one of\n"
    "  star:hosts=N\n"
    "  clos2:leaves=L,hosts=H,spines=S[,fabric=RATE]    H hosts per leaf\n"
    "  fattree:k=K[,hosts=H]                            H per edge (K/2)\n"
    "  rail:nodes=N,gpus=G[,spines=S][,nic=RATE][,nvlink=RATE][,fabric=RATE]\n"
    "with [,rate=RATE][,delay=TIME] (default 100Gbps, 1us).  The same SPEC\n"
    "works wherever a topology file is read (TOPOLOGY_FILE, --net-topology).\n"
    "Example: etsim gen topo clos2:leaves=8,hosts=16,spines=8 -o clos.topo\n";

/* `etsim gen topo SPEC -o FILE`. */
static int gen_topo(int argc, char **argv) {
  const char *spec = NULL, *out = NULL;
  for (int i = 1; i < argc; i++) {
    const char *v;
    int r;
    if (cli_is_help(argv[i])) {
      fputs(usage_topo, stdout);
      return ETSIM_EXIT_OK;
    }
    if ((r = cli_opt(argc, argv, &i, "-o", &v)) || (r = cli_opt(argc, argv, &i, "--output", &v))) {
      if (r < 0) return ETSIM_EXIT_USAGE;
      out = v;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return cli_usage_error("gen topo: unknown option %s", argv[i]);
    } else if (spec) {
      return cli_usage_error("gen topo: one SPEC only");
    } else {
      spec = argv[i];
    }
  }
  if (!spec || !out) {
    fputs(usage_topo, stderr);
    return ETSIM_EXIT_USAGE;
  }
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

static const char *usage_micro =
    "usage: etsim gen micro --coll LIST --size BYTES --npus N [options]\n"
    "\n"
    "One trace per rank: the collectives of LIST in a dependency chain,\n"
    "repeated --count times, each optionally after a COMP node.  Ranks with\n"
    "identical traces share one file through PREFIX.manifest.json.\n"
    "\n"
    "  --coll LIST        comma-separated: all-reduce, all-gather,\n"
    "                     reduce-scatter, all-to-all, broadcast, reduce,\n"
    "                     gather, scatter, barrier, send-recv (a ring)\n"
    "  --size BYTES       comm_size of each collective (1048576, 64KiB, 1MiB)\n"
    "  --npus N           number of ranks\n"
    "  --count K          repeat the list K times (default 1)\n"
    "  --comp-ns T        a COMP node of T ns before each collective\n"
    "  --root R           root NPU of broadcast, reduce, gather and scatter\n"
    "                     (the comm_root attribute; default none, which sim\n"
    "                     reads as 0)\n"
    "  --dims LIST        involved_dim of each collective, e.g. 1,0 (which\n"
    "                     network dimensions it spans; ASTRA-sim's default is\n"
    "                     all)\n"
    "  --out-format F     manifest (default: shared class files) or et\n"
    "                     (plain PREFIX.<rank>.et files)\n"
    "  --ids MODE         restart (every rank's ids from 0) or continue\n"
    "                     (ids count on across ranks, as ASTRA-sim's scripts;\n"
    "                     the default with --out-format et)\n"
    "  -o, --output PREFIX  where to write (default: the first collective's\n"
    "                     name, e.g. all_reduce)\n"
    "  --quiet            print nothing on success\n";

static void report(const char *prefix, int format, const etsim_gen_report_t *r) {
  if (cli_quiet) return;
  printf(
      "%s: %zu rank(s) in %zu file(s)%s, %llu node(s) written (%llu over "
      "all ranks), %llu bytes\n",
      prefix, r->n_ranks, r->n_files, format == ETSIM_GEN_OUT_MANIFEST ? " + manifest" : "",
      (unsigned long long)r->n_nodes, (unsigned long long)r->rank_nodes,
      (unsigned long long)r->n_bytes);
}

static int parse_format(const char *v, int *out) {
  if (strcmp(v, "manifest") == 0) *out = ETSIM_GEN_OUT_MANIFEST;
  else if (strcmp(v, "et") == 0) *out = ETSIM_GEN_OUT_ET;
  else return cli_usage_error("--out-format: '%s' is not manifest or et", v);
  return 0;
}

static int gen_micro(int argc, char **argv) {
  etsim_gen_micro_opts_t o = {0};
  int colls[64], dims[16];
  const char *coll_arg = NULL, *size_arg = NULL, *npus_arg = NULL;
  char defprefix[64];
  for (int i = 1; i < argc; i++) {
    const char *v;
    int m;
    if (cli_is_help(argv[i])) {
      fputs(usage_micro, stdout);
      return ETSIM_EXIT_OK;
    }
#define OPT(name) ((m = cli_opt(argc, argv, &i, name, &v)) != 0)
    if (OPT("--coll")) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      coll_arg = v;
    } else if (OPT("--size")) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      size_arg = v;
    } else if (OPT("--npus")) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      npus_arg = v;
    } else if (OPT("--count")) {
      uint64_t k;
      if (m < 0 || cli_parse_u64(v, "--count", &k)) return ETSIM_EXIT_USAGE;
      if (k == 0 || k > 100000000)
        return cli_usage_error("--count: %llu is outside 1..100000000", (unsigned long long)k);
      o.count = (size_t)k;
    } else if (OPT("--dims")) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      o.n_dims = 0;
      for (const char *p = v; *p; p++) {
        if ((*p == '0' || *p == '1') && o.n_dims < 16 && (p[1] == ',' || p[1] == 0)) {
          dims[o.n_dims++] = *p - '0';
          if (p[1] == ',') p++;
        } else {
          return cli_usage_error(
              "--dims: '%s' is not a list of 0/1 like 1,0,1 "
              "(at most 16)",
              v);
        }
      }
      if (!o.n_dims) return cli_usage_error("--dims: empty list");
      o.dims = dims;
    } else if (OPT("--comp-ns")) {
      if (m < 0 || cli_parse_u64(v, "--comp-ns", &o.comp_ns)) return ETSIM_EXIT_USAGE;
    } else if (OPT("--root")) {
      uint64_t r;
      if (m < 0 || cli_parse_u64(v, "--root", &r)) return ETSIM_EXIT_USAGE;
      if (r >= (1u << 24))
        return cli_usage_error("--root: %llu is too large", (unsigned long long)r);
      o.has_root = 1;
      o.root = (uint32_t)r;
    } else if (OPT("--out-format")) {
      if (m < 0 || parse_format(v, &o.format)) return ETSIM_EXIT_USAGE;
    } else if (OPT("--ids")) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      if (strcmp(v, "restart") == 0) o.ids = ETSIM_GEN_IDS_RESTART;
      else if (strcmp(v, "continue") == 0) o.ids = ETSIM_GEN_IDS_CONTINUE;
      else return cli_usage_error("--ids: '%s' is not restart or continue", v);
    } else if (OPT("-o") || OPT("--output")) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      o.prefix = v;
    } else if (strcmp(argv[i], "--quiet") == 0 || strcmp(argv[i], "-q") == 0) {
      cli_quiet = 1;
    } else {
      return cli_usage_error(
          "gen micro: unknown argument '%s' (see 'etsim gen "
          "micro --help')",
          argv[i]);
    }
#undef OPT
  }
  if (!coll_arg || !size_arg || !npus_arg)
    return cli_usage_error(
        "gen micro: --%s is required (see 'etsim gen micro "
        "--help')",
        !coll_arg   ? "coll"
        : !size_arg ? "size"
                    : "npus");
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
  if (etsim_parse_size(size_arg, &o.size_bytes))
    return cli_usage_error(
        "--size: '%s' is not a size in bytes (1048576, "
        "64KiB, 1MiB)",
        size_arg);
  uint64_t npus;
  if (cli_parse_u64(npus_arg, "--npus", &npus)) return ETSIM_EXIT_USAGE;
  if (npus == 0 || npus > (1u << 24))
    return cli_usage_error("--npus: %llu is outside 1..16777216", (unsigned long long)npus);
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
  etsim_gen_report_t rep;
  if (etsim_gen_micro(&o, &rep, &err)) return cli_fail(&err);
  report(o.prefix, o.format, &rep);
  return ETSIM_EXIT_OK;
}

static const char *usage_llm =
    "usage: etsim gen llm --preset NAME [parallelism] [options] -o PREFIX\n"
    "\n"
    "One training iteration of a decoder-only transformer per rank, with\n"
    "the communicator groups in PREFIX.comm_group.json (ASTRA-sim's format).\n"
    "\n"
    "model:\n"
    "  --preset NAME      gpt3-175b, llama3-8b, llama3-70b, llama3-405b,\n"
    "                     mixtral-8x7b (or describe one with the flags below)\n"
    "  --layers N --hidden N --heads N --kv-heads N --ffn N --vocab N\n"
    "  --seq N --experts N --top-k N --gated 0|1   (override the preset)\n"
    "parallelism (their product is the NPU count):\n"
    "  --dp N --tp N --pp N --sp N --ep N   (default 1 each)\n"
    "  --npus N           optional check: must equal the product\n"
    "training:\n"
    "  --microbatches M   per iteration and data-parallel rank (default pp)\n"
    "  --mbs B            sequences per micro-batch (default 1)\n"
    "  --schedule S       1f1b (default) or gpipe\n"
    "  --zero Z           0 (all-reduce), 1/2 (reduce-scatter + all-gather),\n"
    "                     3 (parameters gathered per layer, FSDP)\n"
    "  --recompute        full activation recomputation\n"
    "memory:\n"
    "  --memory           print each pipeline stage's memory per NPU (model\n"
    "                     states by ZeRO stage, activations by schedule and\n"
    "                     recomputation); with no -o, print only\n"
    "  --tensors          write the tensors (ASTRA-sim's inputs/outputs\n"
    "                     attributes) so 'etsim sim' tracks memory per NPU\n"
    "  --flash-attention  attention keeps no score matrix (memory model)\n"
    "platform (compute time = max(FLOPs / peak, bytes / bandwidth)):\n"
    "  --peak-tflops F    per NPU (default 989, H100 SXM BF16 dense)\n"
    "  --mem-gbps B       per NPU (default 3350)\n"
    "  --dtype-bytes N    bytes per value (default 2)\n"
    "output:\n"
    "  -o, --output PREFIX  (default: the preset name)\n"
    "  --out-format F     manifest (default) or et\n"
    "  --comm-group PATH  default PREFIX.comm_group.json\n"
    "  --quiet\n";

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
  struct {
    const char *flag;
    uint64_t val;
    int set;
  } ov[] = {{"--layers", 0, 0}, {"--hidden", 0, 0}, {"--heads", 0, 0}, {"--kv-heads", 0, 0},
            {"--ffn", 0, 0},    {"--vocab", 0, 0},  {"--seq", 0, 0},   {"--experts", 0, 0},
            {"--top-k", 0, 0},  {"--gated", 0, 0}};
  enum { NOV = sizeof ov / sizeof ov[0] };
  struct {
    const char *flag;
    uint32_t *dst;
  } ints[] = {{"--dp", &o.dp},   {"--tp", &o.tp},
              {"--pp", &o.pp},   {"--sp", &o.sp},
              {"--ep", &o.ep},   {"--microbatches", &o.microbatches},
              {"--mbs", &o.mbs}, {"--dtype-bytes", &o.dtype_bytes}};
  enum { NINTS = sizeof ints / sizeof ints[0] };
  for (int i = 1; i < argc; i++) {
    const char *v;
    int m = 0, done = 0;
    if (cli_is_help(argv[i])) {
      fputs(usage_llm, stdout);
      return ETSIM_EXIT_OK;
    }
    for (int k = 0; k < NOV && !done; k++)
      if ((m = cli_opt(argc, argv, &i, ov[k].flag, &v))) {
        if (m < 0 || cli_parse_u64(v, ov[k].flag, &ov[k].val)) return ETSIM_EXIT_USAGE;
        ov[k].set = done = 1;
      }
    for (int k = 0; k < NINTS && !done; k++)
      if ((m = cli_opt(argc, argv, &i, ints[k].flag, &v))) {
        uint64_t x;
        if (m < 0 || cli_parse_u64(v, ints[k].flag, &x)) return ETSIM_EXIT_USAGE;
        if (x == 0 || x > (1u << 24))
          return cli_usage_error("%s: %llu is outside 1..16777216", ints[k].flag,
                                 (unsigned long long)x);
        *ints[k].dst = (uint32_t)x;
        done = 1;
      }
    if (done) continue;
#define OPT(name) ((m = cli_opt(argc, argv, &i, name, &v)) != 0)
    if (OPT("--preset") || OPT("--model")) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      preset = v;
    } else if (OPT("--npus")) {
      uint64_t x;
      if (m < 0 || cli_parse_u64(v, "--npus", &x)) return ETSIM_EXIT_USAGE;
      o.npus = (size_t)x;
    } else if (OPT("--schedule")) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      if (strcmp(v, "1f1b") == 0) o.schedule = ETSIM_GEN_SCHED_1F1B;
      else if (strcmp(v, "gpipe") == 0) o.schedule = ETSIM_GEN_SCHED_GPIPE;
      else return cli_usage_error("--schedule: '%s' is not gpipe or 1f1b", v);
    } else if (OPT("--zero")) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      if (strlen(v) != 1 || v[0] < '0' || v[0] > '3')
        return cli_usage_error("--zero: '%s' is not 0, 1, 2 or 3", v);
      o.zero = v[0] - '0';
    } else if (OPT("--peak-tflops")) {
      if (m < 0 || cli_parse_double(v, "--peak-tflops", &o.peak_tflops)) return ETSIM_EXIT_USAGE;
      if (!(o.peak_tflops > 0)) return cli_usage_error("--peak-tflops: must be positive");
    } else if (OPT("--mem-gbps")) {
      if (m < 0 || cli_parse_double(v, "--mem-gbps", &o.mem_gbps)) return ETSIM_EXIT_USAGE;
      if (!(o.mem_gbps > 0)) return cli_usage_error("--mem-gbps: must be positive");
    } else if (OPT("--out-format")) {
      if (m < 0 || parse_format(v, &o.format)) return ETSIM_EXIT_USAGE;
    } else if (OPT("--comm-group")) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      o.comm_group_path = v;
    } else if (OPT("-o") || OPT("--output")) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      o.prefix = v;
    } else if (strcmp(argv[i], "--recompute") == 0) {
      o.recompute = 1;
    } else if (strcmp(argv[i], "--tensors") == 0) {
      o.tensors = 1;
    } else if (strcmp(argv[i], "--flash-attention") == 0) {
      o.flash = 1;
    } else if (strcmp(argv[i], "--memory") == 0) {
      memory = 1;
    } else if (strcmp(argv[i], "--quiet") == 0 || strcmp(argv[i], "-q") == 0) {
      cli_quiet = 1;
    } else {
      return cli_usage_error(
          "gen llm: unknown argument '%s' (see 'etsim gen "
          "llm --help')",
          argv[i]);
    }
#undef OPT
  }
  etsim_error_t err = {0};
  if (preset) {
    if (etsim_gen_llm_preset(preset, &o.model, &err)) return cli_fail(&err);
  } else {
    int all = 1;
    for (int k = 0; k < 7; k++) all &= ov[k].set;
    if (!all)
      return cli_usage_error(
          "gen llm: give --preset NAME, or all of --layers "
          "--hidden --heads --kv-heads --ffn --vocab --seq");
    o.model.name = "custom";
  }
  uint64_t *fields[] = {&o.model.layers,   &o.model.hidden,  &o.model.heads,
                        &o.model.kv_heads, &o.model.ffn,     &o.model.vocab,
                        &o.model.seq,      &o.model.experts, &o.model.top_k};
  for (int k = 0; k < 9; k++)
    if (ov[k].set) *fields[k] = ov[k].val;
  if (ov[9].set) o.model.gated = ov[9].val != 0;
  if (memory) {
    int only = !o.prefix;
    int rc = print_llm_memory(&o, &err);
    if (rc) return rc;
    if (only) return ETSIM_EXIT_OK;
  }
  if (!o.prefix) o.prefix = o.model.name;
  etsim_gen_report_t rep;
  if (etsim_gen_llm(&o, &rep, &err)) return cli_fail(&err);
  report(o.prefix, o.format, &rep);
  return ETSIM_EXIT_OK;
}

static const char *usage_dlrm =
    "usage: etsim gen dlrm --preset M --ranks N [--ranks-per-host H]\n"
    "                      [--plan plan.json|auto] [options] -o PREFIX\n"
    "\n"
    "DLRM training iterations per rank from an embedding sharding plan\n"
    "('etsim shard -o plan.json', or auto: planned here).  A plan file\n"
    "brings its iteration options; the flags below override them.\n"
    "  --preset M         mlperf-dlrm, mlperf-dlrm-dcnv2, criteo-kaggle,\n"
    "                     synthetic-large, dlrm-1t, or a model JSON file\n"
    "  --ranks N --ranks-per-host H --hbm-gb G --batch B --types LIST\n"
    "                     (for auto; --calib FILE prices collectives as measured)\n"
    "  --out-format F     manifest (default) or et\n"
    "  -o, --output PREFIX  (default dlrm)\n";

static int gen_dlrm(int argc, char **argv) {
  etsim_gen_dlrm_opts_t g = {0};
  etsim_shard_opts_t so;
  etsim_shard_defaults(&so);
  cli_dlrm_flags_t fl;
  memset(&fl, 0, sizeof fl);
  const char *model = NULL, *plan = "auto", *calib = NULL;
  uint64_t ranks = 0, rph = 0, batch = 0;
  for (int i = 1; i < argc; i++) {
    const char *v;
    int m;
    if (cli_is_help(argv[i])) {
      fputs(usage_dlrm, stdout);
      fputs(cli_dlrm_flags_usage, stdout);
      return ETSIM_EXIT_OK;
    }
    if ((m = cli_dlrm_flag(argc, argv, &i, &fl)) != 0) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      continue;
    }
#define OPT(name) ((m = cli_opt(argc, argv, &i, name, &v)) != 0)
    if (OPT("--preset") || OPT("--model")) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      model = v;
    } else if (OPT("--plan")) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      plan = v;
    } else if (OPT("--ranks")) {
      if (m < 0 || cli_parse_u64(v, "--ranks", &ranks)) return ETSIM_EXIT_USAGE;
    } else if (OPT("--ranks-per-host")) {
      if (m < 0 || cli_parse_u64(v, "--ranks-per-host", &rph)) return ETSIM_EXIT_USAGE;
    } else if (OPT("--batch")) {
      if (m < 0 || cli_parse_u64(v, "--batch", &batch)) return ETSIM_EXIT_USAGE;
      if (!batch || batch > ETSIM_SHARD_MAX_BATCH)
        return cli_usage_error("--batch: %llu is outside 1..%u", (unsigned long long)batch,
                               ETSIM_SHARD_MAX_BATCH);
    } else if (OPT("--hbm-gb")) {
      if (m < 0 || cli_parse_double(v, "--hbm-gb", &so.hbm_gb)) return ETSIM_EXIT_USAGE;
    } else if (OPT("--types")) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      char list[256];
      snprintf(list, sizeof list, "%s", v);
      so.types = 0;
      for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int ty = etsim_shard_type_parse(t);
        if (ty < 0)
          return cli_usage_error("--types: unknown type '%s' (tw, rw, cw, dp, twrw, twcw)", t);
        so.types |= 1u << ty;
      }
    } else if (OPT("--calib")) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      calib = v;
    } else if (OPT("--out-format")) {
      if (m < 0 || parse_format(v, &g.format)) return ETSIM_EXIT_USAGE;
    } else if (OPT("-o") || OPT("--output")) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      g.prefix = v;
    } else if (strcmp(argv[i], "--quiet") == 0 || strcmp(argv[i], "-q") == 0) {
      cli_quiet = 1;
    } else {
      return cli_usage_error("gen dlrm: unknown argument '%s' (see 'etsim gen dlrm --help')",
                             argv[i]);
    }
#undef OPT
  }
  if (!model) return cli_usage_error("gen dlrm: --preset is required");
  int autop = strcmp(plan, "auto") == 0;
  if (autop && !ranks) return cli_usage_error("gen dlrm: --ranks is required with --plan auto");
  if (ranks > ETSIM_SHARD_MAX_RANKS)
    return cli_usage_error("--ranks: %llu is above %u", (unsigned long long)ranks,
                           ETSIM_SHARD_MAX_RANKS);
  if (autop && cli_dlrm_apply(&fl, &so.step, &so.tiers, 1)) return ETSIM_EXIT_USAGE;
  etsim_error_t err = {0};
  etsim_shard_model_t mdl;
  etsim_shard_access_t *acc = NULL;
  etsim_shard_calib_t cal;
  int rc = strchr(model, '/') || strstr(model, ".json")
               ? etsim_shard_model_load(model, &mdl, &err)
               : etsim_shard_model_preset(model, &mdl, &err);
  if (rc) return cli_fail(&err);
  etsim_shard_plan_t p;
  memset(&p, 0, sizeof p);
  int code = ETSIM_EXIT_OK;
  so.ranks = (size_t)ranks;
  so.ranks_per_host = (size_t)(rph ? rph : ranks);
  so.batch = (uint32_t)batch;
  if (autop && fl.access_path) {
    if ((rc = etsim_shard_access_load(fl.access_path, &mdl, &acc, &err))) goto fail;
    so.tiers.access = acc;
  }
  if (calib) {
    if ((rc = etsim_shard_calib_load(calib, &cal, &err))) goto fail;
    so.calib = &cal;
  }
  rc = autop ? etsim_shard_plan(&mdl, &so, &p, &err)
             : etsim_shard_plan_read(plan, &mdl, &so, &p, &err);
  if (rc) goto fail;
  if (!autop) {
    if (ranks && ranks != p.n_ranks) {
      code = cli_usage_error("gen dlrm: --ranks %llu but %s plans %zu ranks",
                             (unsigned long long)ranks, plan, p.n_ranks);
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
  etsim_gen_report_t rep;
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
