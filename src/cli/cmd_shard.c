/*
 * cmd_shard.c — `etsim shard`: plan how a DLRM's embedding tables are
 * split over ranks (docs/shard.md).  With a platform (--network and
 * --system) it calibrates the planner on simulated collectives and
 * simulates the finalists to keep the fastest (dlrm_cli.c).
 */
#include "cli/cli.h"

#include "cli/dlrm_cli.h"
#include "etsim/shard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const etsim_shard_plan_t *p;
  double sim_ns;
  cli_simres_t sr;
} rated_t;

static void type_counts(const etsim_shard_plan_t *p, char *out, size_t n) {
  size_t by[ETSIM_SHARD_N_TYPES] = {0}, w = 0;
  out[0] = 0;
  for (size_t t = 0; t < p->n_tables; t++) by[p->table_type[t]]++;
  for (int ty = 0; ty < ETSIM_SHARD_N_TYPES; ty++)
    if (by[ty] && w < n)
      w += (size_t)snprintf(out + w, n - w, "%s%s %zu", w ? ", " : "", etsim_shard_type_name(ty),
                            by[ty]);
}

static int write_json(const char *path, const etsim_shard_model_t *m, const rated_t *v, size_t n,
                      size_t chosen, int simulated, etsim_error_t *err) {
  etsim_outfile_t of;
  int rc = etsim_outfile_open(&of, path, err);
  if (rc) return rc;
  FILE *fp = of.fp;
  const etsim_shard_plan_t *c = v[chosen].p;
  fprintf(fp, "{\"model\": \"%s\", \"ranks\": %zu, \"ranks_per_host\": %zu, \"chosen\": %zu,",
          m->name, c->n_ranks, c->ranks_per_host, chosen);
  fputs("\n \"candidates\": [", fp);
  static const int sim_slot[ETSIM_SHARD_N_COLLS] = {3, 1, 2, 0}; /* sim.h op order */
  for (size_t i = 0; i < n; i++) {
    const etsim_shard_plan_t *p = v[i].p;
    char types[256];
    type_counts(p, types, sizeof types);
    fprintf(fp,
            "%s\n  {\"label\": \"%s\", \"types\": \"%s\", \"estimate_us\": %.3f, "
            "\"max_hbm_gb\": %.3f, \"est_exposed_us\": {",
            i ? "," : "", p->label, types, p->est.iter_ns / 1e3, p->max_bytes / 1e9);
    for (int k = 0; k < ETSIM_SHARD_N_COLLS; k++)
      fprintf(fp, "%s\"%s\": %.3f", k ? ", " : "", etsim_shard_coll_name(k),
              p->est.coll_exp_ns[k] / 1e3 / (p->step.iterations ? p->step.iterations : 1));
    fputc('}', fp);
    if (simulated) {
      fprintf(fp, ", \"simulated_us\": %.3f, \"sim_exposed_us\": {", v[i].sim_ns / 1e3);
      for (int k = 0; k < ETSIM_SHARD_N_COLLS; k++)
        fprintf(
            fp, "%s\"%s\": %.3f", k ? ", " : "", etsim_shard_coll_name(k),
            v[i].sr.exposed_ns[sim_slot[k]] / 1e3 / (p->step.iterations ? p->step.iterations : 1));
      fputc('}', fp);
    }
    fputc('}', fp);
  }
  fputs("\n ]}\n", fp);
  return etsim_outfile_commit(&of, err);
}

static void print_plan(const etsim_shard_model_t *mdl, const etsim_shard_plan_t *plan) {
  char types[256];
  type_counts(plan, types, sizeof types);
  printf(
      "%s on %zu ranks (%zu per host), batch %u per rank: estimated iteration %.1f us (%s), "
      "most HBM %.2f GB\n",
      mdl->name, plan->n_ranks, plan->ranks_per_host, plan->batch, plan->est.iter_ns / 1e3,
      plan->label, plan->max_bytes / 1e9);
  const etsim_shard_est_t *e = &plan->est;
  double it = plan->step.iterations ? plan->step.iterations : 1, tot = e->total_ns;
  printf(
      "  estimate per iteration: compute %.1f us (embeddings %.1f, fetch %.1f, quantize %.1f, "
      "dense %.1f); exposed all-to-all %.1f, reduce-scatter %.1f, all-gather %.1f, all-reduce "
      "%.1f us; all-to-all %.0f%% of the time\n",
      e->comp_ns / it / 1e3, e->emb_ns / it / 1e3, e->fetch_ns / it / 1e3, e->quant_ns / it / 1e3,
      e->mlp_ns / it / 1e3, e->coll_exp_ns[0] / it / 1e3, e->coll_exp_ns[1] / it / 1e3,
      e->coll_exp_ns[2] / it / 1e3, e->coll_exp_ns[3] / it / 1e3,
      tot > 0 ? 100 * e->coll_exp_ns[0] / tot : 0.0);
  /* Where the most loaded rank's TorchRec cost goes. */
  size_t R = 0;
  for (size_t r = 1; r < plan->n_ranks; r++)
    if (plan->rank_ms[r] > plan->rank_ms[R]) R = r;
  double fc = 0, bc = 0, fm = 0, bm = 0;
  for (size_t i = 0; i < plan->n_shards; i++)
    if (plan->shards[i].rank == R) {
      fc += plan->shards[i].fwd_ms;
      bc += plan->shards[i].bwd_ms;
      fm += plan->shards[i].fwd_comm_ms;
      bm += plan->shards[i].bwd_comm_ms;
    }
  printf(
      "  most loaded rank %zu (TorchRec costs): lookups %.3f ms, backward/update %.3f ms, "
      "forward comms %.3f ms, backward comms %.3f ms (%.0f%% communication)\n",
      R, fc, bc, fm, bm, plan->rank_ms[R] > 0 ? 100 * (fm + bm) / plan->rank_ms[R] : 0.0);
  printf("  tables by type: %s\n", types);
  if (plan->tiered) {
    double h = 0, d = 0, all = 0;
    for (size_t i = 0; i < plan->n_shards; i++) {
      const etsim_shard_t *s = &plan->shards[i];
      double rb = (double)s->cols * mdl->tables[s->table].elem_bytes;
      h += (double)s->hbm_rows * rb;
      d += (double)s->ddr_rows * rb;
      all += (double)s->rows * rb;
    }
    printf("  memory levels: %.1f GB of rows in HBM, %.1f GB in DDR, %.1f GB on SSD\n", h / 1e9,
           d / 1e9, (all - h - d) / 1e9);
  }
  printf("  %-6s %10s %12s %7s\n", "rank", "ms", "HBM GB", "shards");
  size_t *cnt = calloc(plan->n_ranks, sizeof *cnt);
  for (size_t i = 0; cnt && i < plan->n_shards; i++) cnt[plan->shards[i].rank]++;
  for (size_t r = 0; r < plan->n_ranks; r++) {
    if (r < 16 || r + 4 >= plan->n_ranks)
      printf("  %-6zu %10.3f %12.3f %7zu\n", r, plan->rank_ms[r], plan->rank_bytes[r] / 1e9,
             cnt ? cnt[r] : 0);
    else if (r == 16) printf("  ...\n");
  }
  free(cnt);
  if (plan->n_tables <= 64) {
    printf("  %-10s %12s %5s %s\n", "table", "rows", "dim", "type");
    for (size_t t = 0; t < plan->n_tables; t++)
      printf("  %-10s %12llu %5u %s\n", mdl->tables[t].name,
             (unsigned long long)mdl->tables[t].rows, mdl->tables[t].dim,
             etsim_shard_type_name(plan->table_type[t]));
  }
}

/* "tw,rw,..." as a bit set of types; 0 after printing an error. */
unsigned cli_shard_types(const char *v) {
  char list[256];
  snprintf(list, sizeof list, "%s", v);
  unsigned types = 0;
  for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int ty = etsim_shard_type_parse(t);
    if (ty < 0) {
      cli_usage_error("--types: unknown type '%s' (tw, rw, cw, dp, twrw, twcw)", t);
      return 0;
    }
    types |= 1u << ty;
  }
  if (!types) cli_usage_error("--types: no type given");
  return types;
}

int etsim_cmd_shard(int argc, char **argv) {
  etsim_shard_opts_t o;
  etsim_shard_defaults(&o);
  cli_dlrm_flags_t fl;
  memset(&fl, 0, sizeof fl);
  cli_dlrm_plan_args_t a = {0};
  const char *out = NULL, *json = NULL, *calib_out = NULL;
  cli_platform_t pf;
  memset(&pf, 0, sizeof pf);
  uint64_t finalists = 3;
  int objective = 0, backend = 0;
  cli_opt_t opts[16 + CLI_DLRM_N_OPTS + 1] = {
      {.name = "--model",
       .kind = CLI_STR,
       .out = &a.model,
       .metavar = "M",
       .flags = CLI_REQUIRED,
       .help = "preset (mlperf-dlrm, mlperf-dlrm-dcnv2, criteo-kaggle,\n"
               "synthetic-large, dlrm-1t) or a JSON file"},
      CLI_O_UINT("--ranks", NULL, &a.ranks, "P", 1, ETSIM_SHARD_MAX_RANKS,
                 "ranks (GPUs; required)"),
      CLI_O_UINT("--ranks-per-host", NULL, &a.ranks_per_host, "H", 1, ETSIM_SHARD_MAX_RANKS,
                 "ranks per host (default P: one host)"),
      CLI_O_REAL("--hbm-gb", NULL, &o.hbm_gb, "G", 1e-9, 1e9, "memory per rank (default 32)"),
      CLI_O_UINT("--batch", NULL, &a.batch, "B", 1, ETSIM_SHARD_MAX_BATCH,
                 "samples per rank (default the model's)"),
      CLI_O_STR("--types", NULL, &a.types, "LIST",
                "allowed types: tw,rw,cw,dp,twrw,twcw (default all)"),
      CLI_O_CHOICE("--objective", NULL, &objective, "O", "time|memory", "time (default) or memory"),
      CLI_O_STR("--output", "-o", &out, "PATH", "write the plan as JSON"),
      CLI_O_STR("--json", NULL, &json, "PATH",
                "the candidates rated (estimate, simulated) as JSON"),
      CLI_O_FLAG("--quiet", "-q", &cli_quiet, "no table on stdout"),
      CLI_O_STR("--network", NULL, &pf.network, "YML",
                "with --system: simulate each collective there to calibrate\n"
                "the estimate, then simulate the finalists and keep the\n"
                "fastest (every single-type plan is among them)"),
      CLI_O_STR("--system", NULL, &pf.system, "JSON", "the platform's system JSON"),
      CLI_O_CHOICE("--backend", NULL, &backend, "B", "analytical|congestion",
                   "analytical (default) or congestion"),
      CLI_O_UINT("--finalists", NULL, &finalists, "K", 1, 32,
                 "best plans by estimate to simulate (default 3)"),
      CLI_O_STR("--calib", NULL, &a.calib, "FILE", "read the calibration instead of measuring it"),
      CLI_O_STR("--calib-out", NULL, &calib_out, "FILE", "write the calibration measured"),
  };
  size_t n_opts = 16;
  cli_dlrm_opts(&fl, opts, &n_opts);
  opts[n_opts] = (cli_opt_t)CLI_O_END;
  const cli_cmd_t cmd = {"shard",
                         "--model M --ranks P [--ranks-per-host H] [options]",
                         "Plan the embedding-table sharding of a DLRM: TorchRec's shard sizes,\n"
                         "largest-first placement on the least-loaded rank with memory left, and\n"
                         "a search over per-table types for the plan whose estimated iteration\n"
                         "(the same graph 'etsim gen dlrm' writes) is fastest.  With a platform\n"
                         "(--network and --system) the planner agrees with the simulator.  The\n"
                         "iteration techniques (precision, pipelining, memory levels) are each\n"
                         "priced in the trace and the planner's estimate.",
                         opts,
                         0,
                         0,
                         NULL,
                         NULL};
  int code = cli_parse(&cmd, argc, argv, NULL, NULL);
  if (code >= 0) return code;
  if (!a.ranks) return cli_usage_error("shard: --ranks P is required (see 'etsim shard --help')");
  if (cli_dlrm_sizes(&a, &o)) return ETSIM_EXIT_USAGE;
  o.objective = objective ? ETSIM_SHARD_OBJ_MEMORY : ETSIM_SHARD_OBJ_TIME;
  pf.backend = backend ? "congestion" : "analytical";
  if (!pf.network != !pf.system)
    return cli_usage_error("shard: --network and --system go together");
  if (calib_out && !pf.network)
    return cli_usage_error("shard: --calib-out needs --network and --system to measure");
  if (cli_dlrm_apply(&fl, &o.step, &o.tiers, 1)) return ETSIM_EXIT_USAGE;
  etsim_error_t err = {0};
  etsim_shard_model_t mdl;
  memset(&mdl, 0, sizeof mdl);
  etsim_shard_access_t *acc = NULL;
  etsim_shard_calib_t cal;
  etsim_shard_plan_t *plans = NULL;
  size_t np = 0;
  rated_t *rv = NULL;
  code = ETSIM_EXIT_OK;
  int rc = cli_dlrm_model_load(&a, &mdl, &err);
  if (rc) goto fail;
  if ((code = cli_dlrm_inputs(&a, fl.access_path, 1, &mdl, &o, &cal, &acc))) goto out;
  if (pf.network) {
    if ((rc = cli_platform_load(&pf, &err))) goto fail;
    if (!a.calib) {
      if (!cli_quiet) fprintf(stderr, "etsim shard: calibrating on %s ...\n", pf.network);
      if ((rc = cli_dlrm_calibrate(&pf, o.ranks, o.ranks_per_host, &cal, &err))) goto fail;
      if (calib_out && (rc = etsim_shard_calib_save(&cal, calib_out, &err))) goto fail;
      o.calib = &cal;
    }
  }
  rc = etsim_shard_plan_finalists(&mdl, &o, pf.network ? (size_t)finalists : 1, pf.network != NULL,
                                  &plans, &np, &err);
  if (rc) goto fail;
  rv = calloc(np, sizeof *rv);
  if (!rv) {
    rc = etsim_error_set(&err, ETSIM_ENOMEM, "out of memory");
    goto fail;
  }
  size_t chosen = 0;
  for (size_t i = 0; i < np; i++) {
    rv[i].p = &plans[i];
    rv[i].sim_ns = plans[i].est.iter_ns;
    if (pf.network) {
      if (!cli_quiet) fprintf(stderr, "etsim shard: simulating %s ...\n", plans[i].label);
      if ((rc = cli_dlrm_simulate(&pf, &mdl, &plans[i], &rv[i].sr, &err))) goto fail;
      rv[i].sim_ns = rv[i].sr.iter_ns;
    }
    if (rv[i].sim_ns < rv[chosen].sim_ns) chosen = i;
  }
  const etsim_shard_plan_t *plan = &plans[chosen];
  if (out && (rc = etsim_shard_plan_write(plan, &mdl, out, &err))) goto fail;
  if (json && (rc = write_json(json, &mdl, rv, np, chosen, pf.network != NULL, &err))) goto fail;
  if (!cli_quiet && !(out && strcmp(out, "-") == 0)) {
    print_plan(&mdl, plan);
    if (pf.network) {
      printf("  finalists on %s (%s): %-28s %12s %13s %7s\n", pf.network, pf.backend, "plan",
             "estimate_us", "simulated_us", "error");
      for (size_t i = 0; i < np; i++)
        printf("  %-40s %-28s %12.1f %13.1f %+6.1f%%%s\n", "", plans[i].label,
               plans[i].est.iter_ns / 1e3, rv[i].sim_ns / 1e3,
               100 * (plans[i].est.iter_ns - rv[i].sim_ns) / rv[i].sim_ns,
               i == chosen ? "  <- chosen" : "");
    }
  }
  goto out;
fail:
  code = cli_fail(&err);
out:
  free(rv);
  etsim_shard_plans_free(plans, np);
  etsim_shard_access_free(acc);
  etsim_shard_model_free(&mdl);
  cli_platform_free(&pf);
  return code;
}
