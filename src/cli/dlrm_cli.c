/*
 * dlrm_cli.c — the technique flags of `shard` and `gen dlrm`, and the
 * planner-simulator glue (dlrm_cli.h says why it lives in the CLI).
 */
#include "cli/dlrm_cli.h"

#include "cli/cli.h"
#include "etsim/gen.h"
#include "etsim/sim.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void cli_dlrm_opts(cli_dlrm_flags_t *f, cli_opt_t *o, size_t *n) {
  static const char *const precs = "fp32|fp16|bf16|fp8|int8"; /* etsim_shard_prec_parse order */
  size_t k = *n;
  o[k++] = (cli_opt_t){.name = "--precision",
                       .kind = CLI_CHOICE,
                       .out = &f->prec[0],
                       .metavar = "P",
                       .choices = precs,
                       .given = &f->set[DF_PREC_BOTH],
                       .help = "fp32, fp16, bf16, fp8 or int8 for both kinds below"};
  o[k++] = (cli_opt_t){.name = "--a2a-precision",
                       .kind = CLI_CHOICE,
                       .out = &f->prec[1],
                       .metavar = "P",
                       .choices = precs,
                       .given = &f->set[DF_A2A_PREC],
                       .help = "pooled embeddings and their gradients on the wire"};
  o[k++] = (cli_opt_t){.name = "--ar-precision",
                       .kind = CLI_CHOICE,
                       .out = &f->prec[2],
                       .metavar = "P",
                       .choices = precs,
                       .given = &f->set[DF_AR_PREC],
                       .help =
                           "dense and data-parallel gradient all-reduces\n"
                           "(fp8/int8 add quantize/dequantize kernels)"};
  o[k++] = (cli_opt_t){.name = "--pipeline",
                       .kind = CLI_FLAG,
                       .out = &f->pipeline,
                       .given = &f->set[DF_PIPELINE],
                       .help =
                           "next batch's embedding stage overlaps this batch's\n"
                           "dense work (needs --iterations 2 or more)"};
  o[k++] = (cli_opt_t){.name = "--iterations",
                       .kind = CLI_UINT,
                       .out = &f->iterations,
                       .metavar = "K",
                       .min = 1,
                       .max = 64,
                       .given = &f->set[DF_ITERATIONS],
                       .help = "iterations in the trace (default 1; 3 with --pipeline)"};
  o[k++] = (cli_opt_t){.name = "--bucket-mib",
                       .kind = CLI_UINT,
                       .out = &f->bucket_mib,
                       .metavar = "N",
                       .min = 1,
                       .max = 1000000,
                       .given = &f->set[DF_BUCKET],
                       .help = "DDP gradient bucket (default 25)"};
  static const struct {
    const char *name, *meta, *help;
    int id;
    double min, max;
  } real[] = {
      {"--peak-tflops", "F", "GPU roofline: peak (default 989)", DF_PEAK, 1e-6, 1e9},
      {"--mem-gbps", "B", "GPU roofline: memory bandwidth (default 3350)", DF_MEM, 1e-6, 1e9},
      {"--ddr-gb", "G",
       "DDR capacity per GPU (default 0: absent); HBM caches the\n"
       "hottest rows, the planner decides which",
       DF_DDR_GB, 0, 1e9},
      {"--ssd-gb", "G", "SSD capacity per GPU (default 0: absent)", DF_SSD_GB, 0, 1e9},
      {"--ddr-gbps", "B", "DDR bandwidth per GPU (default 25)", DF_DDR_GBPS, 1e-6, 1e9},
      {"--ssd-gbps", "B", "SSD bandwidth per GPU (default 3)", DF_SSD_GBPS, 1e-6, 1e9},
      {"--ddr-latency-us", "T", "per DDR fetch (default 5)", DF_DDR_LAT, 0, 1e9},
      {"--ssd-latency-us", "T", "per SSD fetch (default 100)", DF_SSD_LAT, 0, 1e9},
      {"--zipf", "A", "access skew: row i of n read ~ i^-A (default 1.05)", DF_ZIPF, 0, 10},
  };
  for (size_t r = 0; r < sizeof real / sizeof *real; r++)
    o[k++] = (cli_opt_t){.name = real[r].name,
                         .kind = CLI_REAL,
                         .out = &f->num[real[r].id],
                         .metavar = real[r].meta,
                         .min = real[r].min,
                         .max = real[r].max,
                         .given = &f->set[real[r].id],
                         .help = real[r].help};
  o[k++] = (cli_opt_t){.name = "--access-trace",
                       .kind = CLI_STR,
                       .out = &f->access_path,
                       .metavar = "FILE",
                       .given = &f->set[DF_ACCESS],
                       .help = "measured access counts instead: lines TABLE ROW [COUNT]"};
  *n = k;
}

int cli_dlrm_apply(const cli_dlrm_flags_t *f, etsim_shard_step_t *s, etsim_shard_tiers_t *k,
                   int placement) {
  const int *set = f->set;
  if (set[DF_PREC_BOTH]) s->a2a_prec = s->ar_prec = f->prec[0];
  if (set[DF_A2A_PREC]) s->a2a_prec = f->prec[1];
  if (set[DF_AR_PREC]) s->ar_prec = f->prec[2];
  if (set[DF_PIPELINE]) s->pipeline = 1;
  if (set[DF_ITERATIONS]) s->iterations = (uint32_t)f->iterations;
  else if (set[DF_PIPELINE] && s->iterations < 2) s->iterations = 3;
  if (set[DF_PEAK]) s->peak_tflops = f->num[DF_PEAK];
  if (set[DF_MEM]) s->mem_gbps = f->num[DF_MEM];
  if (set[DF_BUCKET]) s->bucket_bytes = f->bucket_mib << 20;
  if (s->pipeline && s->iterations < 2) {
    cli_usage_error("--pipeline needs --iterations 2 or more");
    return -1;
  }
  if (!placement && (set[DF_DDR_GB] || set[DF_SSD_GB] || set[DF_ZIPF] || set[DF_ACCESS])) {
    cli_usage_error(
        "--ddr-gb, --ssd-gb, --zipf and --access-trace decide which rows live where: give them "
        "to 'etsim shard' (or --plan auto), not with a plan file");
    return -1;
  }
  if (set[DF_DDR_GB]) k->ddr_gb = f->num[DF_DDR_GB];
  if (set[DF_SSD_GB]) k->ssd_gb = f->num[DF_SSD_GB];
  if (set[DF_DDR_GBPS]) k->ddr_gbps = f->num[DF_DDR_GBPS];
  if (set[DF_SSD_GBPS]) k->ssd_gbps = f->num[DF_SSD_GBPS];
  if (set[DF_DDR_LAT]) k->ddr_latency_us = f->num[DF_DDR_LAT];
  if (set[DF_SSD_LAT]) k->ssd_latency_us = f->num[DF_SSD_LAT];
  if (set[DF_ZIPF]) k->zipf_alpha = f->num[DF_ZIPF];
  return 0;
}

/* ------------------------------------------------------- planner inputs */

int cli_dlrm_sizes(const cli_dlrm_plan_args_t *a, etsim_shard_opts_t *o) {
  if (a->types && !(o->types = cli_shard_types(a->types))) return ETSIM_EXIT_USAGE;
  o->ranks = (size_t)a->ranks;
  o->ranks_per_host = (size_t)(a->ranks_per_host ? a->ranks_per_host : a->ranks);
  o->batch = (uint32_t)a->batch;
  return 0;
}

int cli_dlrm_model_load(const cli_dlrm_plan_args_t *a, etsim_shard_model_t *m, etsim_error_t *err) {
  return strchr(a->model, '/') || strstr(a->model, ".json")
             ? etsim_shard_model_load(a->model, m, err)
             : etsim_shard_model_preset(a->model, m, err);
}

int cli_dlrm_inputs(const cli_dlrm_plan_args_t *a, const char *access_path, int check,
                    const etsim_shard_model_t *m, etsim_shard_opts_t *o, etsim_shard_calib_t *cal,
                    etsim_shard_access_t **acc) {
  etsim_error_t err = {0};
  if (access_path) {
    if (etsim_shard_access_load(access_path, m, acc, &err)) return cli_fail(&err);
    o->tiers.access = *acc;
  }
  if (a->calib) {
    if (etsim_shard_calib_load(a->calib, cal, &err)) return cli_fail(&err);
    if (check && (cal->ranks != o->ranks || cal->ranks_per_host != o->ranks_per_host))
      return cli_usage_error("%s: measured for %u ranks (%u per host), not %zu (%zu)", a->calib,
                             cal->ranks, cal->ranks_per_host, o->ranks, o->ranks_per_host);
    o->calib = cal;
  }
  return 0;
}

/* ------------------------------------------------------------ platform */

int cli_platform_load(cli_platform_t *pf, etsim_error_t *err) {
  if (!pf->backend) pf->backend = "analytical";
  if (etsim_topo_load_yaml(pf->network, &pf->topo, err)) return err ? err->code : ETSIM_EINVAL;
  pf->have_topo = 1;
  if (etsim_sys_config_load(pf->system, &pf->sys, err)) return err ? err->code : ETSIM_EINVAL;
  pf->have_sys = 1;
  return 0;
}

void cli_platform_free(cli_platform_t *pf) {
  if (pf->have_sys) etsim_sys_config_free(&pf->sys);
  pf->have_sys = pf->have_topo = 0;
}

/* A fresh folder for temporary traces, and its removal. */
static int tmp_dir(char *out, size_t n, etsim_error_t *err) {
  const char *base = getenv("TMPDIR");
  snprintf(out, n, "%s/etsim-dlrm-XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(out)) return etsim_error_set(err, ETSIM_EIO, "%s: cannot make a folder", out);
  return 0;
}

static void rm_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    char path[4200];
    while ((e = readdir(d)))
      if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        remove(path);
      }
    closedir(d);
  }
  rmdir(dir);
}

static int run_set(cli_platform_t *pf, const char *prefix, const char *groups, size_t P,
                   etsim_sim_result_t **res, etsim_error_t *err) {
  etsim_et_set_t *set = NULL;
  etsim_comm_groups_t cg = {0};
  int rc = etsim_et_set_load(&set, prefix, 0, err);
  if (!rc && groups) rc = etsim_comm_groups_load(groups, (uint32_t)P, &cg, err);
  if (!rc) {
    etsim_sim_opts_t o = {.backend = pf->backend, .groups = groups ? &cg : NULL};
    rc = etsim_sim_run(set, &pf->topo, &pf->sys, &o, res, err);
  }
  etsim_comm_groups_free(&cg);
  etsim_et_set_free(set);
  return rc;
}

/* One collective per rank (host scope: in its host group). */
static int one_coll(const char *prefix, size_t P, size_t Pl, int coll, int scope, uint64_t bytes,
                    etsim_error_t *err) {
  static const int ct[ETSIM_SHARD_N_COLLS] = {ETSIM_COLL_ALL_TO_ALL, ETSIM_COLL_REDUCE_SCATTER,
                                              ETSIM_COLL_ALL_GATHER, ETSIM_COLL_ALL_REDUCE};
  etsim_et_set_writer_t *set;
  int rc = etsim_et_set_writer_open(&set, prefix, P, ETSIM_ET_OUT_MANIFEST, err);
  if (rc) return rc;
  etsim_et_buf_t buf = {0};
  etsim_et_nb_t *b = etsim_malloc(sizeof *b);
  if (!b) rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  char pg[24];
  for (size_t r = 0; r < P && !rc; r++) {
    buf.n = 0;
    etsim_et_meta_t meta = {"1.0.0", 0, NULL};
    if ((rc = etsim_et_enc_meta(&buf, &meta, err))) break;
    etsim_et_nb_start(b, 0, ETSIM_ET_COMM_COLL_NODE, "calib");
    etsim_et_nb_bool(b, "is_cpu_op", 0);
    etsim_et_nb_i64(b, "comm_type", ct[coll]);
    etsim_et_nb_i64(b, "comm_size", (int64_t)bytes);
    if (scope == ETSIM_SHARD_SCOPE_HOST) {
      snprintf(pg, sizeof pg, "%u", etsim_shard_host_group(r, Pl));
      etsim_et_nb_str(b, "pg_name", pg);
    }
    if ((rc = etsim_et_enc_node(&buf, &b->n, err))) break;
    rc = etsim_et_set_writer_rank(set, r, buf.p, buf.n, err);
  }
  etsim_et_buf_free(&buf);
  etsim_free(b);
  if (rc) {
    etsim_et_set_writer_abort(set);
    return rc;
  }
  return etsim_et_set_writer_commit(set, err);
}

int cli_dlrm_calibrate(cli_platform_t *pf, size_t P, size_t Pl, etsim_shard_calib_t *out,
                       etsim_error_t *err) {
  memset(out, 0, sizeof *out);
  out->ranks = (uint32_t)P;
  out->ranks_per_host = (uint32_t)Pl;
  snprintf(out->source, sizeof out->source, "%s + %s (%s)", pf->network, pf->system, pf->backend);
  if (pf->topo.total != P)
    return etsim_error_set(err, ETSIM_EINVAL, "%s: %u NPUs, but the plan has %zu ranks",
                           pf->network, pf->topo.total, P);
  if (P < 2) return 0;
  char dir[4096], prefix[4200], groups[4200];
  int rc = tmp_dir(dir, sizeof dir, err);
  if (rc) return rc;
  snprintf(groups, sizeof groups, "%s/hosts.json", dir);
  size_t H = P / Pl;
  size_t *off = etsim_malloc((H + 1) * sizeof *off);
  uint32_t *ranks = etsim_malloc(P * sizeof *ranks);
  if (!off || !ranks) rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  for (size_t h = 0; !rc && h <= H; h++) off[h] = h * Pl;
  for (size_t r = 0; !rc && r < P; r++) ranks[r] = (uint32_t)r;
  int hosts = H > 1 && Pl > 1;
  if (!rc && hosts) rc = etsim_et_comm_groups_write(groups, H, 1, off, ranks, err);
  static const int want[][2] = {{ETSIM_SHARD_COLL_A2A, 0}, {ETSIM_SHARD_COLL_RS, 0},
                                {ETSIM_SHARD_COLL_AG, 0},  {ETSIM_SHARD_COLL_AR, 0},
                                {ETSIM_SHARD_COLL_RS, 1},  {ETSIM_SHARD_COLL_AG, 1}};
  for (size_t w = 0; w < sizeof want / sizeof *want && !rc; w++) {
    int coll = want[w][0], scope = want[w][1];
    if (scope && !hosts) continue;
    etsim_shard_curve_t *cv = &out->c[coll][scope];
    for (int e = 12; e <= 32 && !rc; e += 4) { /* 4 KiB .. 4 GiB, x16 */
      uint64_t bytes = 1ull << e;
      snprintf(prefix, sizeof prefix, "%s/c%d_%d_%d", dir, coll, scope, e);
      if ((rc = one_coll(prefix, P, Pl, coll, scope, bytes, err))) break;
      etsim_sim_result_t *res = NULL;
      rc = run_set(pf, prefix, scope ? groups : NULL, P, &res, err);
      if (!rc) {
        cv->bytes[cv->n] = (double)bytes;
        cv->ns[cv->n++] = (double)res->total_ps / 1e3;
      }
      etsim_sim_result_free(res);
    }
  }
  etsim_free(off);
  etsim_free(ranks);
  rm_dir(dir);
  if (rc) etsim_error_prefix(err, "calibrating the planner on %s", pf->network);
  return rc;
}

int cli_dlrm_simulate(cli_platform_t *pf, const etsim_shard_model_t *m, const etsim_shard_plan_t *p,
                      cli_simres_t *out, etsim_error_t *err) {
  memset(out, 0, sizeof *out);
  if (pf->topo.total != p->n_ranks)
    return etsim_error_set(err, ETSIM_EINVAL, "%s: %u NPUs, but the plan has %zu ranks",
                           pf->network, pf->topo.total, p->n_ranks);
  char dir[4096], prefix[4200], groups[4200];
  int rc = tmp_dir(dir, sizeof dir, err);
  if (rc) return rc;
  snprintf(prefix, sizeof prefix, "%s/dlrm", dir);
  snprintf(groups, sizeof groups, "%s/dlrm.comm_group.json", dir);
  etsim_gen_dlrm_opts_t g = {0};
  g.model = m;
  g.plan = p;
  g.prefix = prefix;
  etsim_sim_result_t *res = NULL;
  rc = etsim_gen_dlrm(&g, NULL, err);
  size_t H = p->n_ranks / p->ranks_per_host;
  if (!rc)
    rc = run_set(pf, prefix, H > 1 && p->ranks_per_host > 1 ? groups : NULL, p->n_ranks, &res, err);
  if (!rc) {
    out->iter_ns = (double)res->total_ps / 1e3 / (p->step.iterations ? p->step.iterations : 1);
    for (uint32_t n = 0; n < res->n_npus; n++) {
      for (int k = 0; k < 6; k++) out->exposed_ns[k] += (double)res->npu[n].exposed_by_op[k] / 1e3;
      if ((double)res->npu[n].gpu_comp_ps / 1e3 > out->comp_ns)
        out->comp_ns = (double)res->npu[n].gpu_comp_ps / 1e3;
    }
    for (int k = 0; k < 6; k++) out->exposed_ns[k] /= res->n_npus ? res->n_npus : 1;
  }
  etsim_sim_result_free(res);
  rm_dir(dir);
  return rc;
}
