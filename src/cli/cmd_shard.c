/*
 * cmd_shard.c — `etsim shard`: plan how a DLRM's embedding tables are
 * split over ranks (docs/shard.md).  Parsing and printing only.
 */
#include "cli/cli.h"

#include "etsim/shard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *usage =
    "usage: etsim shard --model M --ranks P --ranks-per-host H [options]\n"
    "\n"
    "Plan the embedding-table sharding of a DLRM: shard sizes and costs as\n"
    "TorchRec's planner, largest-first placement on the least-loaded rank\n"
    "with memory left, and a search over per-table sharding types for the\n"
    "plan whose slowest rank is fastest.\n"
    "\n"
    "  --model M          preset (mlperf-dlrm, mlperf-dlrm-dcnv2,\n"
    "                     criteo-kaggle, synthetic-large) or a JSON file\n"
    "  --ranks P          ranks (GPUs)\n"
    "  --ranks-per-host H ranks per host (default P: one host)\n"
    "  --hbm-gb G         memory per rank (default 32)\n"
    "  --batch B          samples per rank (default the model's)\n"
    "  --types LIST       allowed types: tw,rw,cw,dp,twrw,twcw (default all)\n"
    "  --objective O      time (default) or memory\n"
    "  -o, --output PATH  write the plan as JSON\n"
    "  --quiet            no table on stdout\n";

int etsim_cmd_shard(int argc, char **argv) {
  etsim_shard_opts_t o;
  etsim_shard_defaults(&o);
  const char *model = NULL, *out = NULL;
  uint64_t ranks = 0, rph = 0, batch = 0;
  for (int i = 1; i < argc; i++) {
    const char *v;
    int m;
    if (cli_is_help(argv[i])) {
      fputs(usage, stdout);
      return ETSIM_EXIT_OK;
    }
#define OPT(name) ((m = cli_opt(argc, argv, &i, name, &v)) != 0)
    if (OPT("--model")) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      model = v;
    } else if (OPT("--ranks")) {
      if (m < 0 || cli_parse_u64(v, "--ranks", &ranks)) return ETSIM_EXIT_USAGE;
      if (ranks == 0) return cli_usage_error("shard: --ranks must be at least 1");
    } else if (OPT("--ranks-per-host")) {
      if (m < 0 || cli_parse_u64(v, "--ranks-per-host", &rph)) return ETSIM_EXIT_USAGE;
    } else if (OPT("--hbm-gb")) {
      if (m < 0 || cli_parse_double(v, "--hbm-gb", &o.hbm_gb)) return ETSIM_EXIT_USAGE;
    } else if (OPT("--batch")) {
      if (m < 0 || cli_parse_u64(v, "--batch", &batch)) return ETSIM_EXIT_USAGE;
      if (!batch || batch > 1u << 24)
        return cli_usage_error("--batch: %llu is outside 1..16777216", (unsigned long long)batch);
    } else if (OPT("--types")) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      char list[256];
      snprintf(list, sizeof list, "%s", v);
      o.types = 0;
      for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int ty = etsim_shard_type_parse(t);
        if (ty < 0)
          return cli_usage_error(
              "--types: unknown type '%s' (tw, rw, cw, dp, "
              "twrw, twcw)",
              t);
        o.types |= 1u << ty;
      }
    } else if (OPT("--objective")) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      if (strcmp(v, "time") == 0) o.objective = ETSIM_SHARD_OBJ_TIME;
      else if (strcmp(v, "memory") == 0) o.objective = ETSIM_SHARD_OBJ_MEMORY;
      else return cli_usage_error("--objective: '%s' is not time or memory", v);
    } else if (OPT("-o") || OPT("--output")) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      out = v;
    } else if (strcmp(argv[i], "--quiet") == 0 || strcmp(argv[i], "-q") == 0) {
      cli_quiet = 1;
    } else {
      return cli_usage_error(
          "shard: unknown argument '%s' (see 'etsim shard "
          "--help')",
          argv[i]);
    }
#undef OPT
  }
  if (!model || !ranks)
    return cli_usage_error("shard: --%s is required (see 'etsim shard --help')",
                           !model ? "model" : "ranks");
  o.ranks = (size_t)ranks;
  o.ranks_per_host = (size_t)(rph ? rph : ranks);
  o.batch = (uint32_t)batch;
  etsim_error_t err = {0};
  etsim_shard_model_t mdl;
  int rc = strchr(model, '/') || strstr(model, ".json")
               ? etsim_shard_model_load(model, &mdl, &err)
               : etsim_shard_model_preset(model, &mdl, &err);
  if (rc) return cli_fail(&err);
  etsim_shard_plan_t plan;
  if ((rc = etsim_shard_plan(&mdl, &o, &plan, &err))) {
    etsim_shard_model_free(&mdl);
    return cli_fail(&err);
  }
  if (out && (rc = etsim_shard_plan_write(&plan, &mdl, out, &err))) {
    etsim_shard_plan_free(&plan);
    etsim_shard_model_free(&mdl);
    return cli_fail(&err);
  }
  if (!cli_quiet && !(out && strcmp(out, "-") == 0)) {
    size_t by[ETSIM_SHARD_N_TYPES] = {0};
    for (size_t t = 0; t < plan.n_tables; t++) by[plan.table_type[t]]++;
    printf(
        "%s on %zu ranks (%zu per host), batch %u per rank: slowest rank "
        "%.3f ms per iteration (embeddings), most memory %.2f GB\n",
        mdl.name, plan.n_ranks, plan.ranks_per_host, plan.batch, plan.max_ms, plan.max_bytes / 1e9);
    /* Where the slowest rank's time goes. */
    size_t R = 0;
    for (size_t r = 1; r < plan.n_ranks; r++)
      if (plan.rank_ms[r] > plan.rank_ms[R]) R = r;
    double fc = 0, bc = 0, fm = 0, bm = 0;
    for (size_t i = 0; i < plan.n_shards; i++)
      if (plan.shards[i].rank == R) {
        fc += plan.shards[i].fwd_ms;
        bc += plan.shards[i].bwd_ms;
        fm += plan.shards[i].fwd_comm_ms;
        bm += plan.shards[i].bwd_comm_ms;
      }
    printf(
        "  slowest rank %zu: lookups %.3f ms, backward/update %.3f ms, "
        "forward comms %.3f ms, backward comms %.3f ms (%.0f%% "
        "communication)\n",
        R, fc, bc, fm, bm, plan.rank_ms[R] > 0 ? 100 * (fm + bm) / plan.rank_ms[R] : 0.0);
    printf("  tables by type:");
    for (int ty = 0; ty < ETSIM_SHARD_N_TYPES; ty++)
      if (by[ty]) printf(" %s %zu", etsim_shard_type_name(ty), by[ty]);
    printf("\n  %-6s %10s %12s %7s\n", "rank", "ms", "HBM GB", "shards");
    for (size_t r = 0; r < plan.n_ranks; r++) {
      size_t n = 0;
      for (size_t i = 0; i < plan.n_shards; i++) n += plan.shards[i].rank == r;
      if (r < 16 || r + 4 >= plan.n_ranks)
        printf("  %-6zu %10.3f %12.3f %7zu\n", r, plan.rank_ms[r], plan.rank_bytes[r] / 1e9, n);
      else if (r == 16) printf("  ...\n");
    }
    if (plan.n_tables <= 64) {
      printf("  %-10s %12s %5s %s\n", "table", "rows", "dim", "type");
      for (size_t t = 0; t < plan.n_tables; t++)
        printf("  %-10s %12llu %5u %s\n", mdl.tables[t].name,
               (unsigned long long)mdl.tables[t].rows, mdl.tables[t].dim,
               etsim_shard_type_name(plan.table_type[t]));
    }
  }
  etsim_shard_plan_free(&plan);
  etsim_shard_model_free(&mdl);
  return ETSIM_EXIT_OK;
}
