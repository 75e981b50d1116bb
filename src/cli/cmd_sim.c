/*
 * cmd_sim.c — `etsim sim`: simulate a rank set on a platform.
 *
 * Accepts ASTRA-sim's own flag spellings so a run script works by changing
 * the program name.
 */
#include "cli/cli.h"

#include "etsim/etcheck.h"
#include "etsim/report.h"
#include "etsim/sim.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The options, parsed by cli_parse from one table that also prints the
 * help (src/cli/opt.c).  Numbers stay strings here: their checks and
 * messages are the run's (sys_flags, step_and_hbm, whatif_parse). */
static struct {
  const char *workload, *system, *network, *memory, *groups, *backend, *json, *csv, *timeline,
      *report, *queues, *inj, *comm_scale, *comp_scale, *rdv, *logcfg, *net_topo, *net_cfg, *cc,
      *net_fct, *net_pfc, *ring_win, *net_tl, *net_tl_step, *link_csv, *hbm, *deps, *npu_speed,
      *degrade;
  int multi, quiet, exact, dur_micros, link_stats, offload, jobs_alone;
  cli_list_t jobs, fails;
} A;

static const cli_opt_t opts[] = {
    CLI_O_STR("--workload", NULL, &A.workload, "PREFIX", "traces"),
    CLI_O_STR("--system", NULL, &A.system, "F", "system JSON"),
    CLI_O_STR("--network", NULL, &A.network, "F", "network YAML"),
    CLI_O_STR("--memory", NULL, &A.memory, "F", "remote-memory JSON"),
    CLI_O_STR("--comm-group", NULL, &A.groups, "F",
              "communicator groups {\"id\": [ranks]} ('empty' = none)"),
    CLI_O_STR("--backend", NULL, &A.backend, "B",
              "analytical (ASTRA-sim's congestion-unaware, default),\n"
              "congestion (links as FIFO servers, any dimensions),\n"
              "flow (max-min fair RoCE flows) or packet (RoCE with PFC,\n"
              "ECN and congestion control; see docs/netsim.md)"),
    CLI_O_STR("--net-topology", NULL, &A.net_topo, "F",
              "flow/packet: netsim topology file, NPUs = its first hosts\n"
              "(default: a star for a one-dimensional Switch network)"),
    CLI_O_STR("--net-config", NULL, &A.net_cfg, "F", "flow/packet: netsim config file (KEY value)"),
    CLI_O_STR("--cc", NULL, &A.cc, "NAME", "flow/packet: none, dcqcn, hpcc, timely or dctcp"),
    CLI_O_STR("--net-fct", NULL, &A.net_fct, "F",
              "flow/packet: one line per message in ns-3's FCT format\n"
              "(sip dip sport dport bytes start_ns fct_ns standalone_ns)"),
    CLI_O_STR("--net-pfc", NULL, &A.net_pfc, "F",
              "packet: PFC events (time_ns node node_type port 1|0)"),
    CLI_O_STR("--net-timeline", NULL, &A.net_tl, "F",
              "flow/packet: Perfetto timeline of the network: every\n"
              "message; packet: each port's tx Gb/s, queue KB and\n"
              "paused % sampled every --net-timeline-step NS"),
    CLI_O_STR("--net-timeline-step", NULL, &A.net_tl_step, "NS",
              "the sampling step (default 1000)"),
    CLI_O_STR("--num-queues-per-dim", NULL, &A.queues, "N", "as in ASTRA-sim"),
    CLI_O_STR("--injection-scale", NULL, &A.inj, "X", "as in ASTRA-sim"),
    CLI_O_STR("--ring-window", NULL, &A.ring_win, "N",
              "ring collectives keep at most N pieces undelivered per\n"
              "stream (credits, as NCCL's slots); default no limit,\n"
              "as ASTRA-sim, where pieces can bunch on a link"),
    CLI_O_STR("--compute-scale", NULL, &A.comp_scale, "F",
              "multiply every compute time by F (ASTRA-sim 2.0 accepts\n"
              "and ignores it; etsim honours it)"),
    CLI_O_STR("--comm-scale", NULL, &A.comm_scale, "F", "multiply every comm_size by F (likewise)"),
    CLI_O_STR("--npu-speed", NULL, &A.npu_speed, "SPEC",
              "per-NPU compute speed: JSON {\"17\": 0.7, \"32-47\": 0.9}\n"
              "inline or in a file (others 1; 0.5 = twice as long),\n"
              "or lognormal:sigma=S[,mu=M][,seed=N]; the summary names\n"
              "the slowest NPU and what it costs the iteration"),
    CLI_O_STR("--link-degrade", NULL, &A.degrade, "SPEC",
              "link factors per dimension: {\"1\": 0.5} (bandwidth) or\n"
              "{\"1\": {\"bw\": 0.5, \"latency\": 2}}, inline or a file;\n"
              "per NPU of a dimension: {\"1:17\": 0.5, \"0:32-47\": 0.9}\n"
              "(NPU 17's links in dimension 1; analytical and congestion\n"
              "backends); flow and packet: by cable of the topology,\n"
              "{\"link:3-17\": 0.5}"),
    {.name = "--fail",
     .kind = CLI_LIST,
     .out = &A.fails,
     .metavar = "npu:N@T|link:A-B@T",
     .help = "(repeated) NPU N fails at time T (ns, or 1500us, 1.5ms,\n"
             "2s): from T it handles nothing; a run it blocks stops\n"
             "with a report of the blocked collectives, exit 1 (one\n"
             "NPU per run); flow and packet: also link:A-B@T, the\n"
             "cable between topology nodes A and B down from T on:\n"
             "traffic reroutes, a message with no route left blocks,\n"
             "and the summary gives the slowdown"},
    {.name = "--job",
     .kind = CLI_LIST,
     .out = &A.jobs,
     .metavar = "PREFIX[:GROUPS.json][@PLACEMENT]",
     .help = "(repeated) several jobs on one network:\n"
             "each its own traces, communicator groups (in its own\n"
             "ranks) and NPUs: a list \"0,2,4-7\" (rank r on the r-th),\n"
             "contiguous (default), strided:S or random[:seed=N], placed\n"
             "lists first, then policies in order; other NPUs idle.\n"
             "Jobs share links on the congestion, flow and packet\n"
             "backends; the summary and --json give each job's time"},
    CLI_O_FLAG("--jobs-alone", NULL, &A.jobs_alone,
               "with --job: also run each job alone on its NPUs and\n"
               "report its slowdown"),
    CLI_O_STR("--logging-configuration", NULL, &A.logcfg, "F", "accepted, ignored"),
    CLI_O_STR("--rendezvous-protocol", NULL, &A.rdv, "B", NULL),
    CLI_O_FLAG("--multi-comm", NULL, &A.multi, "allow several communication ops in flight per NPU"),
    CLI_O_STR("--deps", NULL, &A.deps, "KIND",
              "edges that order a rank's nodes: all (data and control,\n"
              "as ASTRA-sim; default), data or ctrl.  PyTorch-derived\n"
              "traces put the caller in ctrl_deps, which can contradict\n"
              "the data edges: run them with --deps data"),
    CLI_O_FLAG("--exact", NULL, &A.exact,
               "simulate every NPU, message by message (by default a class\n"
               "of provably equivalent NPUs is simulated once: the summary\n"
               "says which symmetries were used, or why none applied)"),
    CLI_O_FLAG("--duration-micros", NULL, &A.dur_micros,
               "time compute nodes by duration_micros only, as ASTRA-sim\n"
               "does (default: the finer duration_ns when a node has it)"),
    CLI_O_STR("--json", NULL, &A.json, "F", "results as JSON ('-' = stdout)"),
    CLI_O_STR("--report", NULL, &A.report, "F", "one HTML page with plots (see etsim report)"),
    CLI_O_STR("--csv", NULL, &A.csv, "F", "one row per executed node"),
    CLI_O_STR("--timeline", NULL, &A.timeline, "F",
              "Perfetto/Chrome trace (open in ui.perfetto.dev)"),
    CLI_O_FLAG("--link-stats", NULL, &A.link_stats,
               "bytes and busy time per link (per NPU and dimension on\n"
               "the analytical backend): the summary names the\n"
               "busiest links, --json lists them"),
    CLI_O_STR("--link-csv", NULL, &A.link_csv, "F",
              "the same, one CSV row per link (implies --link-stats)"),
    CLI_O_STR("--hbm-gb", NULL, &A.hbm, "G",
              "memory per NPU in GiB: the summary flags NPUs whose\n"
              "peak of live tensors (traces' inputs/outputs, as\n"
              "'etsim gen llm --tensors' writes) exceeds it, and\n"
              "prices moving the excess to --memory and back"),
    CLI_O_FLAG("--offload", NULL, &A.offload, "add that price to each NPU's iteration"),
    CLI_O_FLAG("--quiet", "-q", &A.quiet, "only the per-NPU lines"),
    /* ASTRA-sim's spellings, accepted as they are */
    CLI_O_STR("--workload-configuration", NULL, &A.workload, "PREFIX", NULL),
    CLI_O_STR("--system-configuration", NULL, &A.system, "F", NULL),
    CLI_O_STR("--network-configuration", NULL, &A.network, "F", NULL),
    CLI_O_STR("--remote-memory-configuration", NULL, &A.memory, "F", NULL),
    CLI_O_STR("--comm-group-configuration", NULL, &A.groups, "F", NULL),
    CLI_O_END};

static const cli_cmd_t cmd = {
    .name = "sim",
    .synopsis =
        "--workload PREFIX --system SYS.json --network NET.yml\n"
        "       etsim sim --job PREFIX[:GROUPS.json][@PLACEMENT] [--job ...] --system ...\n"
        "                 [--memory MEM.json] [--comm-group GROUPS.json]\n"
        "                 [--backend analytical|congestion|flow|packet] [--multi-comm]\n"
        "                 [--deps data|ctrl|all]\n"
        "                 [--json F] [--csv F] [--timeline F] [--quiet]",
    .about =
        "Simulate the Chakra rank set PREFIX (PREFIX.<r>.et, PREFIX.manifest.json,\n"
        "or one .et file used by every NPU) on the network and system described by\n"
        "ASTRA-sim 2.0's configuration files (their own option spellings, such as\n"
        "--workload-configuration=, are accepted).  Prints one ASTRA-sim line per NPU\n"
        "('sys[N] finished, T cycles, exposed communication E cycles.'; 1 cycle =\n"
        "1 ns), then a summary.",
    .opts = opts,
    .epilog = "exit: 0 ok, 2 bad input or deadlock, 3 internal error"};

/* Progress on stderr, when it is a terminal and --quiet is not given: one
 * line rewritten in place, cleared at the end. */
static void load_progress(void *user, size_t done, size_t total) {
  (void)user;
  fprintf(stderr, "\r[etsim sim] reading traces: %zu of %zu files\033[K", done, total);
}

static void sim_progress(void *user, const etsim_sim_progress_t *p) {
  (void)user;
  char eta[32] = "?";
  if (p->frac > 0.01) {
    double left = p->elapsed_s * (1 - p->frac) / p->frac;
    snprintf(eta, sizeof eta, "%d:%02d", (int)(left / 60), (int)left % 60);
  }
  fprintf(stderr,
          "\r[etsim sim] %.3f ms simulated, %u of %u NPUs done, %.0f%% of nodes, %.1f M events, "
          "ETA %s\033[K",
          (double)p->now_ps / 1e9, p->npus_done, p->npus, p->frac * 100, (double)p->events / 1e6,
          eta);
}

static int is_file(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int ends_with(const char *s, const char *tail) {
  size_t n = strlen(s), m = strlen(tail);
  return n >= m && strcmp(s + n - m, tail) == 0;
}

/* The communicator groups next to a workload, as etsim's generators and
 * converters write them: PREFIX.comm_group.json for the prefix PREFIX or a
 * file PREFIX.<r>.et / PREFIX.c<k>.et (and PREFIX.comm_groups.json, the
 * name the PyTorch converter once wrote).  1 and the path in buf, or 0. */
static int groups_next_to(const char *workload, char *buf, size_t cap) {
  size_t n = strlen(workload);
  if (is_file(workload)) {
    if (ends_with(workload, ".et.gz")) n -= 6;
    else if (ends_with(workload, ".et")) n -= 3;
    size_t d = n;
    while (d > 0 && workload[d - 1] >= '0' && workload[d - 1] <= '9') d--;
    if (d < n && d > 0 && workload[d - 1] == 'c') d--;
    if (d < n && d > 0 && workload[d - 1] == '.') n = d - 1;
  }
  static const char *const names[] = {".comm_group.json", ".comm_groups.json"};
  for (int k = 0; k < 2; k++) {
    if (n + strlen(names[k]) + 1 > cap) return 0;
    snprintf(buf, cap, "%.*s%s", (int)n, workload, names[k]);
    if (is_file(buf)) return 1;
  }
  return 0;
}

/* --net-timeline-step (into ps), --hbm-gb and --offload checked: 0 or
 * the exit code of bad usage. */
static int step_and_hbm(const char *net_tl_step, const char *hbm, int offload, int64_t *tl_step_ps,
                        double *hbm_gib) {
  uint64_t ns = 1000;
  if (net_tl_step && (cli_parse_u64(net_tl_step, "--net-timeline-step", &ns) || ns == 0 ||
                      ns > (uint64_t)INT64_MAX / 1000)) {
    return cli_usage_error("--net-timeline-step is a whole number of ns above 0, not '%s'",
                           net_tl_step);
  }
  *tl_step_ps = (int64_t)ns * 1000;
  if (hbm && cli_parse_double(hbm, "--hbm-gb", hbm_gib)) {
    return ETSIM_EXIT_USAGE;
  }
  if (hbm && !(*hbm_gib > 0 && *hbm_gib < 1e9)) {
    return cli_usage_error("--hbm-gb is a capacity in GiB above 0, not '%s'", hbm);
  }
  if (offload && !hbm) {
    return cli_usage_error("--offload needs --hbm-gb (what does not fit is offloaded)");
  }
  return 0;
}

typedef struct outputs {
  int quiet;
  const char *json, *csv, *timeline, *link_csv, *report, *workload;
  const char *auto_groups; /* groups found next to the workload, or NULL */
} outputs_t;

/* ASTRA-sim's lines, the summary and every file asked for; -1 with err
 * set when one cannot be written. */
static int write_outputs(const outputs_t *w, const etsim_sim_result_t *res,
                         const etsim_et_set_t *set, const etsim_topo_t *topo, etsim_error_t *err) {
  etsim_report_astra_lines(stdout, res);
  if (!w->quiet) etsim_report_summary(stdout, res, topo);
  if (!w->quiet && w->auto_groups)
    printf("groups        %s (next to the workload; --comm-group empty uses none)\n",
           w->auto_groups);
  if (w->json && etsim_report_json(w->json, res, set, err)) return -1;
  if (w->csv && etsim_report_csv(w->csv, res, set, err)) return -1;
  if (w->timeline && etsim_report_timeline(w->timeline, res, set, err)) return -1;
  if (w->link_csv && etsim_report_links_csv(w->link_csv, res, err)) return -1;
  /* after the timeline: the page links it */
  if (w->report && etsim_report_html_sim(w->report, res, set, topo, w->workload,
                                         &(etsim_report_html_opts_t){.timeline = w->timeline}, err))
    return -1;
  return 0;
}

/* ------------------------------------------------- --job: several jobs */

#define MAX_JOBS 64

typedef struct job_in {
  char arg[512];     /* "--job 'ARG'" for messages */
  char prefix[4096]; /* PREFIX */
  char groups[4096]; /* GROUPS.json, "" none */
  const char *place; /* into spec, NULL: contiguous */
  char name[160];
  etsim_et_set_t *set;
  etsim_comm_groups_t cg;
  uint32_t *npus;
} job_in_t;

static void jobs_free(job_in_t *jin, int n) {
  for (int k = 0; k < n; k++) {
    etsim_et_set_free(jin[k].set);
    etsim_comm_groups_free(&jin[k].cg);
    etsim_free(jin[k].npus);
  }
}

/* PREFIX[:GROUPS.json][@PLACE] into jin (the last '@' starts the
 * placement, the first ':' before it the groups). */
static int job_split(const char *spec, job_in_t *j) {
  snprintf(j->arg, sizeof j->arg, "--job '%s'", spec);
  const char *at = strrchr(spec, '@');
  size_t end = at ? (size_t)(at - spec) : strlen(spec);
  j->place = at ? at + 1 : NULL;
  const char *colon = memchr(spec, ':', end);
  size_t pe = colon ? (size_t)(colon - spec) : end;
  if (pe == 0 || pe >= sizeof j->prefix || (colon && end - pe - 1 >= sizeof j->groups) ||
      (colon && end == pe + 1) || (at && !at[1]))
    return cli_usage_error(
        "%s: expected PREFIX[:GROUPS.json][@PLACEMENT] with each part non-empty (see etsim sim "
        "--help)",
        j->arg);
  snprintf(j->prefix, sizeof j->prefix, "%.*s", (int)pe, spec);
  if (colon) snprintf(j->groups, sizeof j->groups, "%.*s", (int)(end - pe - 1), colon + 1);
  const char *base = strrchr(j->prefix, '/'), *nm = base && base[1] ? base + 1 : j->prefix;
  size_t nl = strlen(nm);
  if (nl >= sizeof j->name) nl = sizeof j->name - 1; /* the summary's label: a long one is cut */
  memcpy(j->name, nm, nl);
  j->name[nl] = 0;
  return 0;
}

/* Load every job's traces and groups and place it: lists first, then the
 * policies in the order given.  0, an exit code, or -1 with err set. */
static int jobs_load(const char *const *specs, int n, uint32_t n_npus, job_in_t *jin,
                     etsim_sim_job_t *jobs, etsim_error_t *err) {
  for (int k = 0; k < n; k++) {
    job_in_t *j = &jin[k];
    int rc = job_split(specs[k], j);
    if (rc) return rc;
    etsim_error_t e = {0};
    /* labels are not shared: a job's peers are translated per rank */
    if (etsim_et_set_load(&j->set, j->prefix, ETSIM_ET_SET_SHARE, &e))
      return etsim_error_set(err, e.code, "%s: %s", j->arg, e.msg), -1;
    char found[4200];
    const char *g = j->groups[0] ? j->groups : NULL;
    if (!g && groups_next_to(j->prefix, found, sizeof found)) g = found;
    if (g && strcmp(g, "empty") != 0 &&
        etsim_comm_groups_load(g, (uint32_t)j->set->n_ranks, &j->cg, &e))
      return etsim_error_set(err, e.code, "%s: %s (group members are the job's ranks)", j->arg,
                             e.msg),
             -1;
    if (j->set->n_ranks > n_npus)
      return etsim_error_set(err, ETSIM_EINVAL, "%s: the job has %zu ranks, the network %u NPUs",
                             j->arg, j->set->n_ranks, n_npus),
             -1;
    j->npus = etsim_malloc(j->set->n_ranks * sizeof *j->npus);
    if (!j->npus) return etsim_error_set(err, ETSIM_ENOMEM, "--job: out of memory"), -1;
    jobs[k] = (etsim_sim_job_t){j->name, j->set, j->cg.n ? &j->cg : NULL, j->npus};
  }
  uint8_t *taken = etsim_calloc(n_npus ? n_npus : 1, 1);
  if (!taken) return etsim_error_set(err, ETSIM_ENOMEM, "--job: out of memory"), -1;
  int rc = 0;
  for (int pass = 0; pass < 2 && !rc; pass++)
    for (int k = 0; k < n && !rc; k++)
      if (etsim_sim_job_place_is_list(jin[k].place) == !pass &&
          etsim_sim_job_place(jin[k].place, jin[k].arg, (uint32_t)jin[k].set->n_ranks, n_npus,
                              taken, jin[k].npus, err))
        rc = -1;
  etsim_free(taken);
  return rc;
}

typedef struct whatif_args {
  const char *backend, *comm_scale, *comp_scale, *degrade, *npu_speed;
  const char *fails[64]; /* --fail, n_fails of them */
  size_t n_fails;
  etsim_net_link_whatif_t *lw; /* out: cable what-ifs, flow and packet (etsim_free) */
  size_t n_lw;
  etsim_net_npu_links_t npu_links; /* out: per-NPU link factors, analytical and congestion */
  int fail_set;                    /* out: an NPU fails (fail_npu at fail_ps) */
  uint32_t fail_npu;
  int64_t fail_ps;
} whatif_args_t;

static void whatif_args_free(whatif_args_t *a) {
  etsim_free(a->lw);
  etsim_sim_npu_links_free(&a->npu_links);
}

/* The what-if options into a, the --fail values (repeated) copied out of
 * their list: 0, or the exit code of bad usage (the lists freed). */
static int whatif_take(whatif_args_t *a) {
  *a = (whatif_args_t){.backend = A.backend,
                       .comm_scale = A.comm_scale,
                       .comp_scale = A.comp_scale,
                       .degrade = A.degrade,
                       .npu_speed = A.npu_speed};
  if (A.fails.n > sizeof a->fails / sizeof *a->fails) {
    cli_lists_free(opts);
    return cli_usage_error("sim: at most %zu --fail", sizeof a->fails / sizeof *a->fails);
  }
  for (size_t k = 0; k < A.fails.n; k++) a->fails[k] = A.fails.v[k];
  a->n_fails = A.fails.n;
  return 0;
}

/* The what-if options (--compute-scale, --comm-scale, --link-degrade,
 * --fail, --npu-speed) checked and turned into run options; --link-degrade
 * changes topo (analytical, congestion) or becomes a->lw, cable what-ifs
 * the flow and packet network applies to its topology, as --fail
 * link:A-B@T does.  Returns 0, an exit code for bad usage, or -1 with err
 * set (the caller owns *speeds and a->lw either way). */
static int whatif_parse(whatif_args_t *a, etsim_topo_t *topo, double *f_comm, double *f_comp,
                        double **speeds, etsim_error_t *err) {
  int *fail_set = &a->fail_set;
  uint32_t *fail_npu = &a->fail_npu;
  int64_t *fail_ps = &a->fail_ps;
  etsim_net_link_whatif_t **lw = &a->lw;
  size_t *n_lw = &a->n_lw;
  /* ASTRA-sim 2.0 accepts and ignores both; etsim does what they say
   * (docs/sim.md, "What-if"). */
  if (a->comm_scale && (cli_parse_double(a->comm_scale, "--comm-scale", f_comm) ||
                        !(*f_comm >= 1e-3 && *f_comm <= 1e3))) {
    return cli_usage_error("--comm-scale is a factor in [0.001, 1000], not '%s'", a->comm_scale);
  }
  if (a->comp_scale && (cli_parse_double(a->comp_scale, "--compute-scale", f_comp) ||
                        !(*f_comp >= 1e-3 && *f_comp <= 1e3))) {
    return cli_usage_error("--compute-scale is a factor in [0.001, 1000], not '%s'", a->comp_scale);
  }
  int rdma = strcmp(a->backend, "flow") == 0 || strcmp(a->backend, "packet") == 0;
  if (a->degrade && rdma &&
      etsim_sim_link_whatif_parse(a->degrade, "--link-degrade", lw, n_lw, err))
    return -1;
  if (a->degrade && !rdma &&
      etsim_sim_link_degrade_npus(a->degrade, "--link-degrade", topo, &a->npu_links, err))
    return -1;
  /* Several --fail: cables (flow and packet), and one NPU, which on flow
   * and packet also fails every cable of its host at its time. */
  const char *npu_first = NULL;
  for (size_t k = 0; k < a->n_fails; k++) {
    const char *f = a->fails[k];
    int link = strncmp(f, "link", 4) == 0;
    if (!link) {
      if (npu_first)
        return cli_usage_error("--fail %s: one NPU failure per run (the first was --fail %s)", f,
                               npu_first);
      npu_first = f;
      if (etsim_sim_fail_parse(f, "--fail", topo->total, fail_npu, fail_ps, err)) return -1;
      *fail_set = 1;
    } else if (!rdma && etsim_sim_fail_parse(f, "--fail", topo->total, fail_npu, fail_ps, err)) {
      return -1; /* refused, with the reason */
    }
    if (!rdma) continue;
    etsim_net_link_whatif_t *g = etsim_realloc(*lw, (*n_lw + 1) * sizeof **lw);
    if (!g) return etsim_error_set(err, ETSIM_ENOMEM, "--fail: out of memory"), -1;
    *lw = g;
    if (link && etsim_sim_fail_link_parse(f, "--fail", &g[*n_lw], err)) return -1;
    if (!link) {
      memset(&g[*n_lw], 0, sizeof g[*n_lw]);
      g[*n_lw] = (etsim_net_link_whatif_t){.a = *fail_npu,
                                           .bw = 1,
                                           .lat = 1,
                                           .down = 1,
                                           .npu = 1,
                                           .t_ps = *fail_ps,
                                           .opt = "--fail"};
      snprintf(g[*n_lw].key, sizeof g[*n_lw].key, "NPU %u", *fail_npu);
    }
    ++*n_lw;
  }
  if (a->npu_speed) {
    *speeds = etsim_malloc((topo->total ? topo->total : 1) * sizeof **speeds);
    if (!*speeds) return etsim_error_set(err, ETSIM_ENOMEM, "--npu-speed: out of memory"), -1;
    if (etsim_sim_speed_parse(a->npu_speed, "--npu-speed", topo->total, *speeds, err)) return -1;
  }
  return 0;
}

/* --num-queues-per-dim, --ring-window and --injection-scale applied to
 * sys: 0 or the exit code of bad usage. */
static int sys_flags(const char *queues, const char *ring_win, const char *inj,
                     etsim_sys_config_t *sys) {
  if (queues) {
    uint64_t q;
    if (cli_parse_u64(queues, "--num-queues-per-dim", &q)) return ETSIM_EXIT_USAGE;
    if (q < 1 || q > 64) return cli_usage_error("--num-queues-per-dim must be 1 to 64");
    sys->queues_per_dim = (uint32_t)q;
  }
  if (ring_win) {
    uint64_t w;
    if (cli_parse_u64(ring_win, "--ring-window", &w)) return ETSIM_EXIT_USAGE;
    if (w < 1 || w > 1000000) return cli_usage_error("--ring-window must be 1 to 1000000");
    sys->ring_window = (uint32_t)w;
  }
  if (inj) {
    double x;
    if (cli_parse_double(inj, "--injection-scale", &x)) return ETSIM_EXIT_USAGE;
    /* ASTRA-sim: the endpoint delay times the injection scale, in whole ns. */
    double d = (double)sys->endpoint_delay_ns * x;
    if (!(d >= 0 && d <= ETSIM_COLL_MAX_DELAY_NS))
      return cli_usage_error(
          "--injection-scale %s makes the endpoint delay %g ns (0 to %g ns accepted)", inj, d,
          ETSIM_COLL_MAX_DELAY_NS);
    sys->endpoint_delay_ns = (int64_t)d;
  }
  return 0;
}

/* Is a cable down (--fail link:A-B@T on flow or packet)? */
static int any_link_down(const etsim_net_link_whatif_t *lw, size_t n) {
  for (size_t k = 0; k < n; k++)
    if (lw[k].down) return 1;
  return 0;
}

/* A failed cable that cut NPUs apart (or left the run unable to finish)
 * is the run's result, as an NPU failure's report is: "failure" and exit
 * 1 (docs/sim.md, "What-if"); 1 when err is that and was printed. */
static int cut_apart(const etsim_error_t *err, const etsim_net_link_whatif_t *lw, size_t n) {
  if (err->code != ETSIM_EDEADLOCK || !any_link_down(lw, n)) return 0;
  fprintf(stderr, "etsim: failure: %s\n", err->msg);
  return 1;
}

/* Several jobs: load and place them, run, write the outputs.  An exit
 * code, or -1 with err set. */
static int run_jobs(const char *const *specs, int n, const etsim_topo_t *topo,
                    const etsim_sys_config_t *sys, const etsim_sim_opts_t *o, outputs_t *w,
                    etsim_error_t *err) {
  etsim_sim_job_t jobs[MAX_JOBS];
  etsim_sim_result_t *res = NULL;
  etsim_et_set_t *view = NULL;
  job_in_t *jin = etsim_calloc((size_t)n, sizeof *jin);
  if (!jin) return etsim_error_set(err, ETSIM_ENOMEM, "--job: out of memory"), -1;
  int code = jobs_load(specs, n, topo->total, jin, jobs, err);
  if (code) goto out;
  /* The reports and network files of one run replace the old ones
   * together or not at all. */
  etsim_outfile_batch_begin();
  code = -1;
  int rc = etsim_sim_run_jobs(jobs, (uint32_t)n, topo, sys, o, &res, err);
  if (o->progress) fprintf(stderr, "\r\033[K");
  if (rc) goto out;
  if (res->failed) {
    fprintf(stderr, "etsim: failure: %s\n", res->failure);
    code = ETSIM_EXIT_PROBLEMS;
    goto out;
  }
  w->workload = jin[0].prefix;
  if (etsim_sim_jobs_view(jobs, (uint32_t)n, topo->total, &view, err) ||
      write_outputs(w, res, view, topo, err) || etsim_outfile_batch_commit(err))
    goto out;
  code = ETSIM_EXIT_OK;
out:
  etsim_outfile_batch_abort();
  etsim_sim_result_free(res);
  etsim_sim_jobs_view_free(view);
  jobs_free(jin, n);
  etsim_free(jin);
  return code;
}

/* etsim sim's option checks that need no file read: --deps into *deps,
 * and the combinations refused.  0, or the usage error's exit code. */
static int check_usage(const char *deps_arg, int n_job, unsigned *deps) {
  if (deps_arg) {
    if (strcmp(deps_arg, "data") == 0) *deps = ETSIM_ET_DEPS_DATA;
    else if (strcmp(deps_arg, "ctrl") == 0) *deps = ETSIM_ET_DEPS_CTRL;
    else if (strcmp(deps_arg, "all") == 0) *deps = ETSIM_ET_DEPS_DATA | ETSIM_ET_DEPS_CTRL;
    else return cli_usage_error("sim: --deps is data, ctrl or all, not '%s'", deps_arg);
  }
  if (n_job && (A.workload || A.groups))
    return cli_usage_error(
        "sim: --job replaces --workload and --comm-group (each job names its traces and groups: "
        "--job PREFIX[:GROUPS.json][@PLACEMENT])");
  if (A.jobs_alone && !n_job) return cli_usage_error("sim: --jobs-alone needs --job");
  if ((!A.workload && !n_job) || !A.system || !A.network)
    return cli_usage_error(
        "sim: --workload (or --job), --system and --network are required (see etsim sim "
        "--help)");
  return 0;
}

/* The ASTRA-sim flags etsim ignores or refuses, and the network flags
 * only the flow and packet backends read, checked once the system file
 * is loaded (as before the split).  0, or the usage error's exit code. */
static int check_net_flags(void) {
  if (A.logcfg) etsim_warn("--logging-configuration is ignored (etsim writes no log files)");
  if (A.rdv && strcmp(A.rdv, "false") != 0 && strcmp(A.rdv, "0") != 0)
    return cli_usage_error(
        "--rendezvous-protocol is not supported yet (etsim models the "
        "default eager protocol)");
  if ((A.net_topo || A.net_cfg || A.cc || A.net_fct || A.net_pfc || A.net_tl || A.net_tl_step) &&
      strcmp(A.backend, "flow") != 0 && strcmp(A.backend, "packet") != 0)
    return cli_usage_error(
        "--net-topology, --net-config, --cc, --net-fct, --net-pfc and "
        "--net-timeline need --backend flow or packet");
  return 0;
}

/* One job (--workload): load its groups and traces, run, write the
 * outputs.  An exit code, or -1 with err set; the caller aborts the
 * output batch this begins. */
static int run_single(const char *groups, int tty, const etsim_topo_t *topo,
                      const etsim_sys_config_t *sys, const etsim_sim_opts_t *base,
                      const outputs_t *w, etsim_error_t *err) {
  etsim_comm_groups_t cg = {0};
  etsim_et_set_t *set = NULL;
  etsim_sim_result_t *res = NULL;
  etsim_sim_opts_t o = *base;
  const char *workload = w->workload;
  int code = -1;
  if (groups && !strstr(groups, "empty") && etsim_comm_groups_load(groups, topo->total, &cg, err))
    goto out;
  int rc_load = etsim_et_set_load_progress(&set, workload, ETSIM_ET_SET_SHARE_LABELS,
                                           tty ? load_progress : NULL, NULL, err);
  if (tty) fprintf(stderr, "\r\033[K");
  if (rc_load) goto out;
  if (set->n_ranks == 1 && topo->total > 1 && is_file(workload) &&
      etsim_et_set_broadcast(set, topo->total, err))
    goto out;
  o.groups = groups ? &cg : NULL;
  /* The reports and network files of one run replace the old ones
   * together or not at all. */
  etsim_outfile_batch_begin();
  int rc_run = etsim_sim_run(set, topo, sys, &o, &res, err);
  if (tty) fprintf(stderr, "\r\033[K");
  if (rc_run) goto out;
  if (res->failed) {
    /* what-if failure: the report is the result (docs/sim.md, "What-if") */
    fprintf(stderr, "etsim: failure: %s\n", res->failure);
    code = ETSIM_EXIT_PROBLEMS;
    goto out;
  }
  if (res->fail_after_end)
    etsim_warn("--fail npu:%u: NPU %u had finished its trace by then; the run is unaffected",
               o.fail_npu, o.fail_npu);
  if (write_outputs(w, res, set, topo, err)) goto out;
  if (etsim_outfile_batch_commit(err)) goto out;
  code = ETSIM_EXIT_OK;
out:
  etsim_sim_result_free(res);
  etsim_et_set_free(set);
  etsim_comm_groups_free(&cg);
  return code;
}

int etsim_cmd_sim(int argc, char **argv) {
  memset(&A, 0, sizeof A);
  A.backend = "analytical";
  int code = cli_parse(&cmd, argc, argv, NULL, NULL);
  if (code >= 0) return code;
  whatif_args_t wa;
  if ((code = whatif_take(&wa))) return code;
  const char *workload = A.workload, *system = A.system, *network = A.network, *memory = A.memory,
             *groups = A.groups, *backend = A.backend, *json = A.json, *csv = A.csv,
             *timeline = A.timeline, *report = A.report, *queues = A.queues, *inj = A.inj,
             *net_topo = A.net_topo, *net_cfg = A.net_cfg, *cc = A.cc, *net_fct = A.net_fct,
             *net_pfc = A.net_pfc, *ring_win = A.ring_win, *net_tl = A.net_tl,
             *net_tl_step = A.net_tl_step, *link_csv = A.link_csv, *hbm = A.hbm, *deps_arg = A.deps;
  int multi = A.multi, quiet = A.quiet, exact = A.exact, dur_micros = A.dur_micros,
      link_stats = A.link_stats, offload = A.offload, job_alone = A.jobs_alone;
  const char *job_specs[MAX_JOBS];
  int n_job = (int)A.jobs.n;
  if (A.jobs.n > MAX_JOBS) {
    cli_lists_free(opts);
    return cli_usage_error("sim: at most %d --job", MAX_JOBS);
  }
  for (size_t k = 0; k < A.jobs.n; k++) job_specs[k] = A.jobs.v[k];
  cli_lists_free(opts); /* the values stay in argv */
  unsigned deps = 0;
  if ((code = check_usage(deps_arg, n_job, &deps))) return code;
  etsim_error_t err = {0};
  etsim_topo_t topo;
  etsim_sys_config_t sys;
  etsim_mem_config_t mem;
  int have_sys = 0;
  code = ETSIM_EXIT_OK;
  double *speeds = NULL;
  if (etsim_topo_load_yaml(network, &topo, &err)) goto fail;
  if (etsim_sys_config_load(system, &sys, &err)) goto fail;
  have_sys = 1;
  if ((code = sys_flags(queues, ring_win, inj, &sys))) goto out;
  double f_comm = 1, f_comp = 1;
  int wr = whatif_parse(&wa, &topo, &f_comm, &f_comp, &speeds, &err);
  if (wr < 0) goto fail;
  if (wr > 0) {
    code = wr;
    goto out;
  }
  if ((code = check_net_flags())) goto out;
  int64_t tl_step_ps = 0;
  double hbm_gib = 0;
  if ((code = step_and_hbm(net_tl_step, hbm, offload, &tl_step_ps, &hbm_gib))) goto out;
  /* Without --comm-group, the groups a generator or converter wrote next
   * to the workload are used (the summary says so). */
  char found[4200];
  const char *auto_groups = NULL;
  if (!n_job && !groups && groups_next_to(workload, found, sizeof found))
    groups = auto_groups = found;
  if (memory && etsim_mem_config_load(memory, &mem, &err)) goto fail;
  int tty = !quiet && isatty(2);
  etsim_net_opts_t nopt = {net_topo, net_cfg,    cc,    net_fct, net_pfc,
                           net_tl,   tl_step_ps, wa.lw, wa.n_lw, wa.npu_links};
  etsim_sim_opts_t o = {.backend = backend,
                        .multi_comm = multi,
                        .record_nodes = csv || timeline || json || report,
                        .exact = exact,
                        .duration_micros = dur_micros,
                        .memory = memory ? &mem : NULL,
                        .net = &nopt,
                        .link_stats = link_stats || link_csv,
                        .hbm_bytes = hbm_gib * 1073741824.0,
                        .offload = offload,
                        .progress = tty ? sim_progress : NULL,
                        .compute_scale = f_comp,
                        .comm_scale = f_comm,
                        .npu_speed = speeds,
                        .fail_set = wa.fail_set,
                        .fail_npu = wa.fail_npu,
                        .fail_ps = wa.fail_ps,
                        .deps = deps,
                        .job_alone = job_alone};
  if (n_job) {
    /* several jobs on one network (docs/sim.md, "Several jobs") */
    outputs_t w = {quiet, json, csv, timeline, link_csv, report, NULL, NULL};
    code = run_jobs(job_specs, n_job, &topo, &sys, &o, &w, &err);
    if (code < 0) goto fail;
    goto out;
  }
  code = run_single(
      groups, tty, &topo, &sys, &o,
      &(outputs_t){quiet, json, csv, timeline, link_csv, report, workload, auto_groups}, &err);
  if (code < 0) goto fail;
  goto out;
fail:
  code = cut_apart(&err, wa.lw, wa.n_lw) ? ETSIM_EXIT_PROBLEMS : cli_fail(&err);
out:
  etsim_outfile_batch_abort();
  etsim_free(speeds);
  whatif_args_free(&wa);
  if (have_sys) etsim_sys_config_free(&sys);
  return code;
}
