/*
 * cmd_netsim.c — `etsim netsim CONFIG`: the packet-level RoCE network on
 * its own, as a drop-in for the ns-3 RDMA simulator's scenario files.
 */
#include "cli/cli.h"

#include "etsim/netpkt.h"
#include "etsim/report.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The command line, parsed by cli_parse from the table in parse_opts. */
typedef struct netsim_opts {
  const char *input, *fct, *pfc, *qlen, *cc, *ports, *timeline, *report;
  cli_list_t sets; /* --set KEY=VALUE, in order */
  int backend;     /* 0 packet, 1 flow */
  uint64_t seed, step_ns;
  int seed_given, json, quiet;
  char tl_for_report[4096]; /* the timeline --report makes when --timeline is absent */
} netsim_opts_t;

/* The table's destinations are static (as replay's), so that cli_lists_free
 * can find --set's list after the config has used it. */
static netsim_opts_t opt;
static const cli_opt_t opts[] = {
    CLI_O_CHOICE("--backend", NULL, &opt.backend, "B", "packet|flow",
                 "packet (default) or flow: max-min fair flows on the\n"
                 "same routes (FCT only; no queues, PFC or CC)"),
    CLI_O_STR("--cc", NULL, &opt.cc, "MODE",
              "override CC_MODE (0 none, 1 dcqcn, 3 hpcc, 7 timely,\n8 dctcp, or the names)"),
    {.name = "--set",
     .kind = CLI_LIST,
     .out = &opt.sets,
     .metavar = "KEY=VALUE",
     .help = "override any config key (repeatable)"},
    CLI_O_STR("--fct", NULL, &opt.fct, "PATH",
              "FCT output (overrides FCT_OUTPUT_FILE; - is stdout)"),
    CLI_O_STR("--pfc", NULL, &opt.pfc, "PATH", "PFC output (overrides PFC_OUTPUT_FILE)"),
    CLI_O_STR("--qlen", NULL, &opt.qlen, "PATH", "queue-length output (overrides QLEN_MON_FILE)"),
    CLI_O_STR("--ports", NULL, &opt.ports, "PATH",
              "per-port table: node ifindex peer rate_bps tx_bytes\n"
              "utilisation (over the traffic's span, from the first\n"
              "flow's start to the last completion)\n"
              "pauses_received paused_us peak_queue_bytes (0 at\n"
              "flow level, which has no PFC or queues)"),
    CLI_O_STR("--timeline", NULL, &opt.timeline, "PATH",
              "Perfetto timeline (open in ui.perfetto.dev): each\n"
              "message as a slice; with the packet level, every\n"
              "port's tx Gb/s, queue KB and paused % over time\n"
              "and the first messages' sending rates"),
    CLI_O_STR("--report", NULL, &opt.report, "F",
              "one HTML page with plots (see etsim report); it links\n"
              "the --timeline file, or writes F's name .timeline.json"),
    /* 9e15 ns: below INT64_MAX / 1000, so the step in ps cannot wrap */
    CLI_O_UINT("--timeline-step", NULL, &opt.step_ns, "NS", 1, 9e15,
               "first sampling interval (default 1000 ns; it\n"
               "doubles when a long run fills the sample budget)"),
    CLI_O_UINT_GIVEN("--seed", NULL, &opt.seed, "N", 0, 0, &opt.seed_given,
                     "seed for ECN and loss draws (default 1)"),
    CLI_O_FLAG("--json", NULL, &opt.json, "print the summary as JSON"),
    CLI_O_FLAG("--quiet", "-q", &opt.quiet, "no summary, no progress line"),
    CLI_O_END};

/* Returns -1 to go on, or the exit code (after --help or a usage error). */
static int parse_opts(int argc, char **argv) {
  opt = (netsim_opts_t){.step_ns = 1000};
  const cli_cmd_t cmd = {
      "netsim",
      "[options] CONFIG",
      "Run the packet-level RoCE network (PFC, ECN, DCQCN/DCTCP/TIMELY/HPCC) on\n"
      "an ns-3 RDMA scenario: CONFIG is its 'KEY value' file naming\n"
      "TOPOLOGY_FILE and FLOW_FILE; FCT_OUTPUT_FILE, PFC_OUTPUT_FILE and\n"
      "QLEN_MON_FILE are written in ns-3's line formats.  Relative names in\n"
      "CONFIG are taken from CONFIG's folder.  Serialisation is rounded to\n"
      "whole ns like ns-3 unless TX_ROUND_PS says otherwise.",
      opts,
      1,
      1,
      "CONFIG",
      "exit: 0 all flows done, 1 flows stalled (PFC deadlock or lost packets),\n"
      "      2 bad input"};
  int code = cli_parse(&cmd, argc, argv, &opt.input, NULL);
  if (code >= 0) return code;
  if (opt.report && !opt.timeline) { /* the page links the timeline it is made from */
    size_t n = strlen(opt.report);
    if (n > 5 && !strcmp(opt.report + n - 5, ".html")) n -= 5;
    snprintf(opt.tl_for_report, sizeof opt.tl_for_report, "%.*s.timeline.json", (int)n, opt.report);
    opt.timeline = opt.tl_for_report;
  }
  return -1;
}

/* CONFIG with the command line's overrides (--set in order, then --cc and
 * --seed); -1 to go on, or the exit code. */
static int load_config(const netsim_opts_t *o, etsim_netpkt_cfg_t *cfg) {
  etsim_error_t err = {0};
  etsim_netpkt_cfg_default(cfg);
  cfg->tx_round_ps = 1000; /* ns-3 keeps time in whole ns */
  if (etsim_netpkt_cfg_load(cfg, o->input, &err)) return cli_fail(&err);
  for (size_t k = 0; k < o->sets.n; k++) {
    const char *set = o->sets.v[k];
    char key[128];
    const char *eq = strchr(set, '=');
    if (!eq || eq == set || (size_t)(eq - set) >= sizeof key)
      return cli_usage_error("netsim: --set needs KEY=VALUE, not '%s'", set);
    memcpy(key, set, (size_t)(eq - set));
    key[eq - set] = 0;
    if (etsim_netpkt_cfg_set(cfg, key, eq + 1, &err)) {
      etsim_error_prefix(&err, "--set");
      return cli_fail(&err);
    }
  }
  /* --cc takes a scheme's name or ns-3's CC_MODE number */
  const char *cc = o->cc;
  if (cc && etsim_net_cc_mode(cc, &cfg->cc_mode, &err) &&
      (!isdigit((unsigned char)cc[0]) || etsim_netpkt_cfg_set(cfg, "CC_MODE", cc, &err)))
    return cli_usage_error("--cc: %s", err.msg);
  if (o->seed_given) cfg->seed = o->seed;
  if (!cfg->topology_file[0]) return cli_usage_error("%s: TOPOLOGY_FILE is not set", o->input);
  if (!cfg->flow_file[0]) return cli_usage_error("%s: FLOW_FILE is not set", o->input);
  return -1;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct {
  etsim_outfile_t f;
  int open;
} out_t;

static int open_out(out_t *o, const char *path, etsim_error_t *err) {
  o->open = 0;
  if (!path || !path[0]) return 0;
  int rc = etsim_outfile_open(&o->f, path, err);
  if (!rc) o->open = 1;
  return rc;
}

/* Running to the end with a progress line.  On a terminal the network runs
 * in steps of simulated time (each step sized to take about a tenth of a
 * second), and the line shows the simulated time and the flows done; runs
 * in steps process the same events in the same order as in one call (the
 * timeline recorder relies on the same), so every output is the same.  Off
 * a terminal it runs in one call. */
typedef struct runner {
  const etsim_netpkt_level_t *lv;
  void *net;
  etsim_netpkt_tl_t *tl; /* the packet level's recorder, or NULL */
} runner_t;

static int run_to(const runner_t *r, int64_t t, etsim_error_t *err) {
  return r->tl ? etsim_netpkt_tl_run_until(r->tl, r->net, t, err)
               : r->lv->run_until(r->net, t, err);
}

static int run_all(const runner_t *r, int quiet, etsim_error_t *err) {
  cli_progress_t pg;
  cli_progress_begin(&pg, "netsim", quiet);
  if (!pg.on) return run_to(r, INT64_MAX, err);
  int64_t step = 1000000; /* 1 us to start */
  for (;;) {
    int64_t next = r->lv->next_time(r->net);
    if (next == INT64_MAX) break;
    etsim_stopwatch_t step_sw;
    etsim_stopwatch_start(&step_sw);
    int rc = run_to(r, next > INT64_MAX - step ? INT64_MAX : next + step, err);
    if (rc) {
      cli_progress_end(&pg);
      return rc;
    }
    etsim_stopwatch_stop(&step_sw);
    double dt = step_sw.wall_s;
    if (dt < 0.05 && step < INT64_MAX / 4) step *= 2;
    else if (dt > 0.2 && step > 1000) step /= 2;
    etsim_netpkt_stats_t st;
    r->lv->get_stats(r->net, &st);
    uint64_t done = st.msgs_done, all = st.msgs;
    int64_t now = r->lv->now(r->net);
    int ms = now >= 1000000000; /* ps: microseconds up to 1 ms, then milliseconds */
    cli_progress(&pg, all ? (double)done / (double)all : -1,
                 "%.3f %s simulated, %" PRIu64 " of %" PRIu64 " flows done",
                 (double)now / (ms ? 1e9 : 1e6), ms ? "ms" : "us", done, all);
  }
  cli_progress_end(&pg);
  return run_to(r, INT64_MAX, err); /* the last call of a single run: same end state */
}

/* --report: the page of the timeline just written, named after the CC. */
static int write_report(const char *report, const char *timeline, const char *label) {
  etsim_error_t err = {0};
  etsim_report_input_t in = {timeline, label};
  if (etsim_report_html(report, &in, 1, NULL, &err)) return cli_fail(&err);
  return ETSIM_EXIT_OK;
}

/* --ports of either level: utilisation is tx_bytes over what the port
 * could send in the span from the first flow's start to the last
 * completion (to `now` when nothing completed; monitors may run longer), so
 * flows that start late are not diluted by the idle time before them. */
static int write_ports(out_t *ot, const char *path, const runner_t *r, uint32_t n_nodes,
                       etsim_error_t *err) {
  int rc = open_out(ot, path, err);
  if (rc) return rc;
  etsim_netpkt_stats_t st;
  r->lv->get_stats(r->net, &st);
  int64_t first = st.first_start_ps, last_done = st.last_done_ps;
  int64_t span = (last_done > first ? last_done : r->lv->now(r->net)) - first;
  for (uint32_t v = 0; v < n_nodes; v++) {
    uint32_t np = r->lv->port_count(r->net, v);
    for (uint32_t k = 1; k <= np; k++) {
      etsim_netpkt_port_stat_t ps;
      r->lv->port_stat(r->net, v, k, &ps);
      double util =
          span > 0 ? (double)ps.tx_bytes * 8 / ((double)span * 1e-12 * (double)ps.rate_bps) : 0;
      fprintf(ot->f.fp, "%u %u %u %" PRIu64 " %" PRIu64 " %.6f %" PRIu64 " %.3f %" PRIu64 "\n", v,
              k, ps.peer, ps.rate_bps, ps.tx_bytes, util, ps.pauses_rx, (double)ps.paused_ps / 1e6,
              ps.qbytes_peak);
    }
  }
  return 0;
}

/* Rates are per CPU second (etsim_stopwatch_t says why), as sim reports them. */
static double per_cpu_s(uint64_t n, const etsim_stopwatch_t *t) {
  return t->cpu_s > 0 ? (double)n / t->cpu_s : 0;
}

/* Commit the open outputs of outs[0..n), then the batch they belong to
 * (netsim's outputs replace their files together). */
static int commit_outs(out_t *const *outs, int n, etsim_error_t *err) {
  for (int k = 0; k < n; k++)
    if (outs[k]->open) {
      outs[k]->open = 0;
      int rc = etsim_outfile_commit(&outs[k]->f, err);
      if (rc) return rc;
    }
  return etsim_outfile_batch_commit(err);
}

/* The flow level's summary on stdout, as text or one JSON line. */
static void print_flow_summary(const netsim_opts_t *o, const etsim_netflow_t *net,
                               const etsim_stopwatch_t *sw) {
  etsim_netflow_stats_t st;
  etsim_netflow_get_stats(net, &st);
  if (o->json)
    printf("{\"config\": \"%s\", \"backend\": \"flow\", \"flows\": %" PRIu64
           ", \"flows_done\": %" PRIu64 ", \"last_done_ns\": %" PRId64 ", \"events\": %" PRIu64
           ", \"recomputes\": %" PRIu64
           ", \"cpu_s\": %.6f, \"wall_s\": %.6f, \"events_per_s\": %.0f}\n",
           o->input, st.msgs, st.msgs_done, st.last_done_ps / 1000, st.events, st.recomputes,
           sw->cpu_s, sw->wall_s, per_cpu_s(st.events, sw));
  else {
    printf("%s (flow level)\n", o->input);
    printf("  flows            %" PRIu64 " done of %" PRIu64 ", last at %" PRId64 " ns\n",
           st.msgs_done, st.msgs, st.last_done_ps / 1000);
    printf("  work             %" PRIu64 " events, %" PRIu64
           " re-ratings in %.3f s CPU (%.3f s wall), %.2f M events/s of CPU\n",
           st.events, st.recomputes, sw->cpu_s, sw->wall_s, per_cpu_s(st.events, sw) / 1e6);
  }
}

/* FCT slowdowns of the completed flows (FCT over the flow's standalone
 * time): median, p99 and max. */
static void slowdowns(const etsim_netpkt_t *net, size_t n_flows, double q[3]) {
  double *slow = calloc(n_flows ? n_flows : 1, sizeof *slow);
  size_t ns = 0;
  for (size_t i = 0; slow && i < n_flows; i++) {
    etsim_netpkt_msg_stat_t ms;
    etsim_netpkt_msg_stat(net, i, &ms);
    if (ms.acked_ps >= 0 && ms.standalone_ps > 0)
      slow[ns++] = (double)(ms.acked_ps - ms.start_ps) / (double)ms.standalone_ps;
  }
  if (ns) etsim_qsort(slow, ns, sizeof *slow, cmp_double);
  q[0] = ns ? slow[ns / 2] : 0;
  q[1] = ns ? slow[(ns * 99) / 100 < ns ? (ns * 99) / 100 : ns - 1] : 0;
  q[2] = ns ? slow[ns - 1] : 0;
  free(slow);
}

/* The packet level's summary on stdout, as text or one JSON line. */
static void print_summary(const netsim_opts_t *o, const etsim_netpkt_cfg_t *cfg,
                          const etsim_netpkt_topo_t *topo, const etsim_netpkt_t *net,
                          size_t n_flows, const etsim_stopwatch_t *sw) {
  etsim_netpkt_stats_t st;
  etsim_netpkt_get_stats(net, &st);
  double q[3];
  slowdowns(net, n_flows, q);
  double med = q[0], p99 = q[1], mx = q[2];
  uint32_t n_sw = 0;
  for (uint32_t v = 0; v < topo->n_nodes; v++) n_sw += topo->is_switch[v];
  uint64_t pkts = st.data_pkts + st.ack_pkts + st.pfc_frames;
  const char *input = o->input, *cc = etsim_net_cc_name(cfg->cc_mode);
  if (o->json) {
    printf(
        "{\"config\": \"%s\", \"cc\": \"%s\", \"nodes\": %u, \"switches\": %u, "
        "\"links\": %zu, \"flows\": %" PRIu64 ", \"flows_done\": %" PRIu64
        ", \"last_done_ns\": %" PRId64
        ", \"slowdown_median\": %.4f, "
        "\"slowdown_p99\": %.4f, \"slowdown_max\": %.4f, \"pauses\": %" PRIu64
        ", \"resumes\": %" PRIu64 ", \"paused_us\": %.3f, \"drops_buffer\": %" PRIu64
        ", \"drops_error\": %" PRIu64 ", \"ecn_marks\": %" PRIu64 ", \"cnps\": %" PRIu64
        ", \"max_buffer_bytes\": %" PRIu64 ", \"events\": %" PRIu64 ", \"packets\": %" PRIu64
        ", \"cpu_s\": %.6f, \"wall_s\": %.6f, \"events_per_s\": %.0f, "
        "\"packets_per_s\": %.0f}\n",
        input, cc, topo->n_nodes, n_sw, topo->n_links, st.msgs, st.msgs_done,
        st.last_done_ps / 1000, med, p99, mx, st.pauses, st.resumes, (double)st.paused_ps / 1e6,
        st.drops_buffer, st.drops_error, st.ecn_marks, st.cnps, st.max_switch_buffer_bytes,
        st.events, pkts, sw->cpu_s, sw->wall_s, per_cpu_s(st.events, sw), per_cpu_s(pkts, sw));
    return;
  }
  printf("%s\n", input);
  printf("  network          %u nodes (%u switches), %zu links, cc %s\n", topo->n_nodes, n_sw,
         topo->n_links, cc);
  printf("  flows            %" PRIu64 " done of %" PRIu64 ", last at %" PRId64 " ns\n",
         st.msgs_done, st.msgs, st.last_done_ps / 1000);
  printf("  FCT slowdown     median %.3f, p99 %.3f, max %.3f\n", med, p99, mx);
  printf("  PFC              %" PRIu64 " pauses, %" PRIu64 " resumes, %.3f us paused\n", st.pauses,
         st.resumes, (double)st.paused_ps / 1e6);
  printf("  drops            %" PRIu64 " buffer, %" PRIu64 " link error\n", st.drops_buffer,
         st.drops_error);
  printf("  ECN              %" PRIu64 " marks, %" PRIu64 " CNP echoes\n", st.ecn_marks, st.cnps);
  printf("  peak buffer      %" PRIu64 " bytes shared\n", st.max_switch_buffer_bytes);
  printf("  work             %" PRIu64 " events, %" PRIu64
         " packets in %.3f s CPU (%.3f s wall), "
         "%.2f M events/s and %.2f M packets/s of CPU\n",
         st.events, pkts, sw->cpu_s, sw->wall_s, per_cpu_s(st.events, sw) / 1e6,
         per_cpu_s(pkts, sw) / 1e6);
}

/* The run on level lv and its outputs in the order they must be written
 * (one batch, renamed together: issue 16), then the summary.  PFC and
 * queue-length files and the port recorder exist where the level has
 * queues (the packet level). */
static int run_level(const netsim_opts_t *o, const etsim_netpkt_level_t *lv,
                     const etsim_netpkt_cfg_t *cfg, const etsim_netpkt_topo_t *topo,
                     const etsim_netpkt_flow_t *flows, size_t n_flows) {
  etsim_error_t err = {0};
  runner_t r = {lv, NULL, NULL};
  const char *timeline = o->timeline;
  const char *label = lv->queues ? etsim_net_cc_name(cfg->cc_mode) : "flow level";
  int code = ETSIM_EXIT_OK;
  out_t of = {0}, op = {0}, oq = {0}, ot = {0};
  if (lv->create(&r.net, topo, cfg, &err) ||
      etsim_netpkt_flows_send(lv, r.net, topo, flows, n_flows, cfg->flow_file, &err) ||
      open_out(&of, o->fct ? o->fct : cfg->fct_file, &err) ||
      (lv->queues && (open_out(&op, o->pfc ? o->pfc : cfg->pfc_file, &err) ||
                      open_out(&oq, o->qlen ? o->qlen : cfg->qlen_file, &err)))) {
    code = cli_fail(&err);
    goto done;
  }
  lv->set_outputs(r.net, of.open ? of.f.fp : NULL, op.open ? op.f.fp : NULL,
                  oq.open ? oq.f.fp : NULL);
  etsim_stopwatch_t sw;
  etsim_stopwatch_start(&sw);
  if (timeline && lv->queues &&
      etsim_netpkt_tl_create(&r.tl, r.net, topo, (int64_t)o->step_ns * 1000, n_flows, &err)) {
    code = cli_fail(&err);
    goto done;
  }
  int rc = run_all(&r, o->quiet, &err);
  etsim_stopwatch_stop(&sw);
  /* The output files of one run replace the old ones together or not at
   * all: a failed last write must not leave a mixed set. */
  etsim_outfile_batch_begin();
  if (rc) {
    code = rc == ETSIM_EDEADLOCK ? ETSIM_EXIT_PROBLEMS : cli_fail(&err);
    if (rc == ETSIM_EDEADLOCK) {
      fprintf(stderr, "etsim: %s: %s\n", o->input, err.msg);
      /* The timeline shows how the pause cycle formed. */
      if (timeline && (etsim_netpkt_tl_write(timeline, r.tl, topo, lv, r.net, n_flows, &err) ||
                       etsim_outfile_batch_commit(&err)))
        code = cli_fail(&err);
      else if (o->report && write_report(o->report, timeline, label)) code = ETSIM_EXIT_USAGE;
    }
    goto done;
  }
  lv->finish(r.net);
  if (timeline && etsim_netpkt_tl_write(timeline, r.tl, topo, lv, r.net, n_flows, &err)) {
    code = cli_fail(&err);
    goto done;
  }
  if (o->report && (code = write_report(o->report, timeline, label))) goto done;
  if (o->ports && write_ports(&ot, o->ports, &r, topo->n_nodes, &err)) {
    code = cli_fail(&err);
    goto done;
  }
  if (commit_outs((out_t *[]){&of, &op, &oq, &ot}, 4, &err)) {
    code = cli_fail(&err);
    goto done;
  }
  etsim_netpkt_stats_t st;
  lv->get_stats(r.net, &st);
  if (st.msgs_done < st.msgs) code = ETSIM_EXIT_PROBLEMS;
  if (o->quiet) goto done;
  if (lv->queues) print_summary(o, cfg, topo, r.net, n_flows, &sw);
  else print_flow_summary(o, r.net, &sw);
done:
  etsim_outfile_batch_abort();
  if (of.open) etsim_outfile_abort(&of.f);
  if (op.open) etsim_outfile_abort(&op.f);
  if (oq.open) etsim_outfile_abort(&oq.f);
  if (ot.open) etsim_outfile_abort(&ot.f);
  etsim_netpkt_tl_free(r.tl);
  if (r.net) lv->destroy(r.net);
  return code;
}

int etsim_cmd_netsim(int argc, char **argv) {
  int code = parse_opts(argc, argv);
  if (code >= 0) return code;
  etsim_netpkt_cfg_t cfg;
  code = load_config(&opt, &cfg);
  cli_lists_free(opts); /* --set is applied */
  if (code >= 0) return code;
  etsim_error_t err = {0};
  etsim_netpkt_topo_t topo;
  if (etsim_netpkt_topo_load(&topo, cfg.topology_file, &err)) return cli_fail(&err);
  etsim_netpkt_flow_t *flows = NULL;
  size_t n_flows = 0;
  if (etsim_netpkt_flows_load(cfg.flow_file, &flows, &n_flows, &err)) {
    etsim_netpkt_topo_free(&topo);
    return cli_fail(&err);
  }
  code = run_level(&opt, etsim_netpkt_level_find(opt.backend ? "flow" : "packet"), &cfg, &topo,
                   flows, n_flows);
  etsim_free(flows);
  etsim_netpkt_topo_free(&topo);
  return code;
}
