/*
 * cmd_synth.c — `etsim synth train|sample|eval|baseline`: the LayerDAG
 * generator from the command line (library: include/etsim/synth.h).
 */
#include "cli/cli.h"

#include "cli/synth_hist.h"
#include "etsim/synth.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *usage =
    "usage: etsim synth train  --data DIR|FILE [--data ...] -o MODEL\n"
    "                          [--val FILE] [--epochs E] [--hidden H]\n"
    "                          [--mp-layers K] [--batch B] [--lr LR]\n"
    "                          [--seed S] [--max-nodes N] [--label Y] [--quiet]\n"
    "       etsim synth sample --model MODEL -n N [--label Y | --labels-from FILE]\n"
    "                          [--seed S] -o OUT\n"
    "       etsim synth eval   --real A --generated B [--real-train C] [--json]\n"
    "       etsim synth baseline --data FILE -n N [--method daggen|empirical]\n"
    "                          [--labels-from FILE] [--seed S] -o OUT.txt\n"
    "\n"
    "LayerDAG: learn a layer-wise discrete-diffusion generator from real DAGs\n"
    "and sample new ones that are acyclic by construction (docs/synth.md).\n"
    "Data: the text DAG format of shared/datasets/tpu_tile (*.txt), or Chakra\n"
    "traces (*.et, *.et.gz; cut into windows of at most --max-nodes nodes of\n"
    "consecutive layers, labelled --label).  A folder means all such files.\n"
    "sample: OUT ending in .txt gets the text format; otherwise OUT is a prefix\n"
    "and DAG i is written as the Chakra trace OUT-i.0.et (trace models only).\n"
    "eval: validity, W1 of layer/node/edge counts, MMD of layer sizes and\n"
    "degrees, attribute total variation, and a ridge surrogate trained on the\n"
    "generated labels and tested on the real ones (and on --real-train).\n"
    "baseline: non-learned generators fitted to --data: daggen (default; a\n"
    "DAGGEN-style parametric model: node count, fat, regularity, density,\n"
    "jump) or empirical (empirical layer-count and layer-size marginals).\n"
    "exit: 0 ok, 2 bad usage or input, 3 internal error\n";

static int ends_with(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && strcmp(s + a - b, suf) == 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int load_one(etsim_synth_data_t *d, const char *path, const etsim_synth_trace_opts_t *o,
                    etsim_error_t *err) {
  if (ends_with(path, ".txt")) return etsim_synth_data_load_text(d, path, 0, err);
  return etsim_synth_data_load_trace(d, path, o, err);
}

/* A file, or every *.txt / *.et / *.et.gz of a folder in name order. */
static int load_path(etsim_synth_data_t *d, const char *path, const etsim_synth_trace_opts_t *o,
                     etsim_error_t *err) {
  struct stat st;
  if (stat(path, &st) != 0)
    return etsim_error_set(err, ETSIM_EIO, "%s: no such file or folder", path);
  if (!S_ISDIR(st.st_mode)) return load_one(d, path, o, err);
  DIR *dir = opendir(path);
  if (!dir) return etsim_error_set(err, ETSIM_EIO, "%s: cannot open folder", path);
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *de;
  int rc = 0;
  while ((de = readdir(dir))) {
    const char *nm = de->d_name;
    if (!ends_with(nm, ".txt") && !ends_with(nm, ".et") && !ends_with(nm, ".et.gz")) continue;
    if (etsim_grow((void **)&names, &cap, n + 1, sizeof *names)) {
      rc = ETSIM_ENOMEM;
      break;
    }
    size_t len = strlen(path) + strlen(nm) + 2;
    names[n] = malloc(len);
    if (!names[n]) {
      rc = ETSIM_ENOMEM;
      break;
    }
    snprintf(names[n++], len, "%s/%s", path, nm);
  }
  closedir(dir);
  if (!rc && n == 0)
    rc = etsim_error_set(err, ETSIM_ENOTFOUND, "%s: no .txt, .et or .et.gz files", path);
  else if (rc) etsim_error_set(err, rc, "out of memory");
  if (!rc) {
    etsim_qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n && !rc; i++) rc = load_one(d, names[i], o, err);
  }
  for (size_t i = 0; i < n; i++) free(names[i]);
  etsim_free(names);
  return rc;
}

static int parse_int(const char *v, const char *what, int lo, int hi, int *out) {
  int64_t x;
  if (cli_parse_i64(v, what, &x)) return -1;
  if (x < lo || x > hi) {
    cli_usage_error("%s must be in %d..%d", what, lo, hi);
    return -1;
  }
  *out = (int)x;
  return 0;
}

typedef struct {
  int quiet;
  cli_progress_t pg; /* epochs done and the time left, on a terminal */
} progress_ctx;

static int on_epoch(void *user, const etsim_synth_progress_t *p) {
  progress_ctx *c = user;
  if (c->quiet) return 0;
  cli_progress_clear(&c->pg);
  fprintf(stderr,
          "epoch %3d/%d  loss %.4f (count %.3f, attr %.3f, edge %.3f)  "
          "val %.4f%s  %.2f s\n",
          p->epoch, p->epochs, p->train_loss, p->loss_count, p->loss_attr, p->loss_edge,
          p->val_loss, p->best ? "  best" : "", p->seconds);
  cli_progress(&c->pg, p->epochs > 0 ? (double)p->epoch / p->epochs : -1, "epoch %d of %d",
               p->epoch, p->epochs);
  return 0;
}

static int cmd_train(int argc, char **argv) {
  const char *data[64], *val = NULL, *outp = NULL, *v;
  int nd = 0, quiet = 0;
  etsim_synth_config_t cfg;
  etsim_synth_config_default(&cfg);
  etsim_synth_trace_opts_t to;
  etsim_synth_trace_opts_default(&to);
  for (int i = 2; i < argc; i++) {
    int m;
    if (cli_is_help(argv[i])) {
      fputs(usage, stdout);
      return 0;
    }
    if ((m = cli_opt(argc, argv, &i, "--data", &v))) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      if (nd == 64) return cli_usage_error("at most 64 --data arguments");
      data[nd++] = v;
    } else if ((m = cli_opt(argc, argv, &i, "--val", &v))) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      val = v;
    } else if ((m = cli_opt(argc, argv, &i, "-o", &v)) ||
               (m = cli_opt(argc, argv, &i, "--output", &v))) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      outp = v;
    } else if ((m = cli_opt(argc, argv, &i, "--epochs", &v))) {
      if (m < 0 || parse_int(v, "--epochs", 1, 100000, &cfg.epochs)) return ETSIM_EXIT_USAGE;
    } else if ((m = cli_opt(argc, argv, &i, "--hidden", &v))) {
      if (m < 0 || parse_int(v, "--hidden", 4, 4096, &cfg.hidden)) return ETSIM_EXIT_USAGE;
    } else if ((m = cli_opt(argc, argv, &i, "--mp-layers", &v))) {
      if (m < 0 || parse_int(v, "--mp-layers", 0, 8, &cfg.mp_layers)) return ETSIM_EXIT_USAGE;
    } else if ((m = cli_opt(argc, argv, &i, "--batch", &v))) {
      if (m < 0 || parse_int(v, "--batch", 1, 1 << 20, &cfg.batch)) return ETSIM_EXIT_USAGE;
    } else if ((m = cli_opt(argc, argv, &i, "--t-attr", &v))) {
      if (m < 0 || parse_int(v, "--t-attr", 1, 1024, &cfg.t_attr)) return ETSIM_EXIT_USAGE;
    } else if ((m = cli_opt(argc, argv, &i, "--t-edge", &v))) {
      if (m < 0 || parse_int(v, "--t-edge", 1, 1024, &cfg.t_edge)) return ETSIM_EXIT_USAGE;
    } else if ((m = cli_opt(argc, argv, &i, "--lr", &v))) {
      double lr;
      if (m < 0 || cli_parse_double(v, "--lr", &lr)) return ETSIM_EXIT_USAGE;
      if (!(lr > 0 && lr < 1)) return cli_usage_error("--lr must be in (0, 1)");
      cfg.lr = (float)lr;
    } else if ((m = cli_opt(argc, argv, &i, "--seed", &v))) {
      if (m < 0 || cli_parse_u64(v, "--seed", &cfg.seed)) return ETSIM_EXIT_USAGE;
    } else if ((m = cli_opt(argc, argv, &i, "--max-nodes", &v))) {
      int mx;
      if (m < 0 || parse_int(v, "--max-nodes", 2, 100000, &mx)) return ETSIM_EXIT_USAGE;
      to.max_nodes = (uint32_t)mx;
    } else if ((m = cli_opt(argc, argv, &i, "--label", &v))) {
      if (m < 0 || cli_parse_double(v, "--label", &to.y)) return ETSIM_EXIT_USAGE;
    } else if (!strcmp(argv[i], "--quiet") || !strcmp(argv[i], "-q")) {
      quiet = 1;
    } else if (argv[i][0] != '-' && nd < 64) {
      data[nd++] = argv[i];
    } else {
      return cli_usage_error("synth train: unknown option %s (see --help)", argv[i]);
    }
  }
  if (!nd || !outp) return cli_usage_error("synth train needs --data and -o (see --help)");
  etsim_error_t err = {0};
  etsim_synth_data_t tr, va;
  etsim_synth_data_init(&tr);
  etsim_synth_data_init(&va);
  int rc = 0;
  for (int k = 0; k < nd && !rc; k++) rc = load_path(&tr, data[k], &to, &err);
  if (!rc && val) rc = load_path(&va, val, &to, &err);
  if (!rc && val && va.kind == tr.kind)
    for (uint32_t c = 0; c < tr.n_ch; c++) { /* one vocabulary for both */
      uint32_t k = tr.n_cls[c] > va.n_cls[c] ? tr.n_cls[c] : va.n_cls[c];
      tr.n_cls[c] = va.n_cls[c] = k;
    }
  etsim_synth_model_t *model = NULL;
  if (!rc) {
    if (!quiet)
      fprintf(stderr, "training on %zu DAG(s), validating on %s\n", tr.n_graphs,
              val ? val : "a seeded 10%% of them");
    progress_ctx pc = {.quiet = quiet};
    cli_progress_begin(&pc.pg, "synth train", quiet);
    rc = etsim_synth_train(&tr, val ? &va : NULL, &cfg, on_epoch, &pc, &model, &err);
    cli_progress_end(&pc.pg);
  }
  if (!rc) rc = etsim_synth_model_save(model, outp, &err);
  if (!rc && !quiet) {
    size_t np;
    etsim_synth_model_info(model, NULL, NULL, NULL, &np);
    fprintf(stderr, "wrote %s (%zu parameters)\n", outp, np);
  }
  etsim_synth_model_free(model);
  etsim_synth_data_free(&tr);
  etsim_synth_data_free(&va);
  return rc ? cli_fail(&err) : 0;
}

static int read_labels(const char *path, double **out, size_t *n, etsim_error_t *err) {
  etsim_synth_data_t d;
  etsim_synth_data_init(&d);
  etsim_synth_trace_opts_t to;
  etsim_synth_trace_opts_default(&to);
  int rc = load_path(&d, path, &to, err);
  if (rc) return rc;
  *out = malloc(sizeof(double) * (d.n_graphs + 1));
  if (!*out) {
    etsim_synth_data_free(&d);
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < d.n_graphs; i++) (*out)[i] = d.g[i].y;
  *n = d.n_graphs;
  etsim_synth_data_free(&d);
  return 0;
}

static int write_out(const etsim_synth_data_t *d, const char *outp, const char *what,
                     etsim_error_t *err) {
  if (ends_with(outp, ".txt")) return etsim_synth_data_write_text(d, outp, what, err);
  if (d->kind != ETSIM_SYNTH_KIND_TRACE)
    return etsim_error_set(err, ETSIM_EINVAL,
                           "%s: this model generates text DAGs: give an "
                           "output ending in .txt",
                           outp);
  for (size_t i = 0; i < d->n_graphs; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s-%zu.0.et", outp, i);
    int rc = etsim_synth_write_trace(d, i, path, err);
    if (rc) return rc;
  }
  return 0;
}

static int cmd_sample_or_baseline(int argc, char **argv, int baseline) {
  const char *modelp = NULL, *outp = NULL, *labels_from = NULL, *v;
  const char *data = NULL, *method = NULL;
  uint64_t n = 0, seed = 1;
  double label = NAN;
  int have_n = 0;
  for (int i = 2; i < argc; i++) {
    int m;
    if (cli_is_help(argv[i])) {
      fputs(usage, stdout);
      return 0;
    }
    if (!baseline && (m = cli_opt(argc, argv, &i, "--model", &v))) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      modelp = v;
    } else if (baseline && (m = cli_opt(argc, argv, &i, "--method", &v))) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      if (strcmp(v, "daggen") && strcmp(v, "empirical"))
        return cli_usage_error("--method must be daggen or empirical");
      method = v;
    } else if (baseline && (m = cli_opt(argc, argv, &i, "--data", &v))) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      data = v;
    } else if ((m = cli_opt(argc, argv, &i, "-n", &v))) {
      if (m < 0 || cli_parse_u64(v, "-n", &n)) return ETSIM_EXIT_USAGE;
      if (n < 1 || n > 10000000) return cli_usage_error("-n must be in 1..10000000");
      have_n = 1;
    } else if ((m = cli_opt(argc, argv, &i, "--seed", &v))) {
      if (m < 0 || cli_parse_u64(v, "--seed", &seed)) return ETSIM_EXIT_USAGE;
    } else if (!baseline && (m = cli_opt(argc, argv, &i, "--label", &v))) {
      if (m < 0 || cli_parse_double(v, "--label", &label)) return ETSIM_EXIT_USAGE;
    } else if ((m = cli_opt(argc, argv, &i, "--labels-from", &v))) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      labels_from = v;
    } else if ((m = cli_opt(argc, argv, &i, "-o", &v)) ||
               (m = cli_opt(argc, argv, &i, "--output", &v))) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      outp = v;
    } else {
      return cli_usage_error("synth %s: unknown option %s (see --help)", argv[1], argv[i]);
    }
  }
  if ((!baseline && !modelp) || (baseline && !data) || !outp || (!have_n && !labels_from))
    return cli_usage_error("synth %s needs %s, -n (or --labels-from) and -o (see --help)", argv[1],
                           baseline ? "--data" : "--model");
  etsim_error_t err = {0};
  double *labels = NULL;
  size_t nl = 0;
  int rc = 0;
  if (labels_from && (rc = read_labels(labels_from, &labels, &nl, &err))) return cli_fail(&err);
  if (labels_from && !have_n) n = nl;
  if (labels && nl < n) { /* cycle through the given labels */
    double *l2 = realloc(labels, sizeof(double) * n);
    if (!l2) {
      free(labels);
      return ETSIM_EXIT_INTERNAL;
    }
    labels = l2;
    for (size_t i = nl; i < n; i++) labels[i] = labels[i % nl];
  }
  etsim_synth_data_t out;
  etsim_synth_data_init(&out);
  if (baseline) {
    etsim_synth_data_t fit;
    etsim_synth_data_init(&fit);
    etsim_synth_trace_opts_t to;
    etsim_synth_trace_opts_default(&to);
    rc = load_path(&fit, data, &to, &err);
    if (!rc)
      rc = method && !strcmp(method, "empirical")
               ? etsim_synth_baseline(&fit, (size_t)n, seed, &out, &err)
               : etsim_synth_baseline_daggen(&fit, (size_t)n, seed, &out, &err);
    if (!rc && labels)
      for (size_t i = 0; i < out.n_graphs; i++) out.g[i].y = labels[i];
    etsim_synth_data_free(&fit);
  } else {
    etsim_synth_model_t *model = NULL;
    rc = etsim_synth_model_load(&model, modelp, &err);
    if (!rc && !labels && !isnan(label)) {
      labels = malloc(sizeof(double) * n);
      if (!labels) rc = etsim_error_set(&err, ETSIM_ENOMEM, "out of memory");
      for (size_t i = 0; !rc && i < n; i++) labels[i] = label;
    }
    if (!rc) rc = etsim_synth_sample(model, (size_t)n, labels, seed, &out, &err);
    etsim_synth_model_free(model);
  }
  if (!rc)
    rc = write_out(
        &out, outp,
        baseline ? "etsim synth baseline (layered random DAGs)" : "etsim synth sample (LayerDAG)",
        &err);
  if (!rc && !cli_quiet) {
    size_t nodes = 0;
    for (size_t i = 0; i < out.n_graphs; i++) nodes += out.g[i].n_nodes;
    fprintf(stderr, "wrote %zu DAG(s), %zu nodes, to %s%s\n", out.n_graphs, nodes, outp,
            ends_with(outp, ".txt") ? "" : "-<i>.0.et");
  }
  etsim_synth_data_free(&out);
  free(labels);
  return rc ? cli_fail(&err) : 0;
}

static int cmd_eval(int argc, char **argv) {
  const char *realp = NULL, *genp = NULL, *trainp = NULL, *v;
  int json = 0;
  for (int i = 2; i < argc; i++) {
    int m;
    if (cli_is_help(argv[i])) {
      fputs(usage, stdout);
      return 0;
    }
    if ((m = cli_opt(argc, argv, &i, "--real", &v))) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      realp = v;
    } else if ((m = cli_opt(argc, argv, &i, "--generated", &v))) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      genp = v;
    } else if ((m = cli_opt(argc, argv, &i, "--real-train", &v))) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      trainp = v;
    } else if (!strcmp(argv[i], "--json")) {
      json = 1;
    } else {
      return cli_usage_error("synth eval: unknown option %s (see --help)", argv[i]);
    }
  }
  if (!realp || !genp) return cli_usage_error("synth eval needs --real and --generated");
  etsim_error_t err = {0};
  etsim_synth_data_t R, G, T;
  etsim_synth_data_init(&R);
  etsim_synth_data_init(&G);
  etsim_synth_data_init(&T);
  etsim_synth_trace_opts_t to;
  etsim_synth_trace_opts_default(&to);
  int rc = load_path(&R, realp, &to, &err);
  if (!rc) rc = load_path(&G, genp, &to, &err);
  if (!rc && trainp) rc = load_path(&T, trainp, &to, &err);
  etsim_synth_eval_t ev;
  if (!rc) rc = etsim_synth_evaluate(&R, &G, trainp ? &T : NULL, 1, &ev, &err);
  json_t *hist = !rc && json ? cli_synth_histograms(&R, &G) : NULL; /* for etsim report */
  etsim_synth_data_free(&R);
  etsim_synth_data_free(&G);
  etsim_synth_data_free(&T);
  if (rc) return cli_fail(&err);
  if (json) {
    printf(
        "{\"n_real\": %zu, \"n_generated\": %zu, \"validity\": %.6g, "
        "\"attr_validity\": %.6g, \"w1_layers\": %.6g, \"w1_nodes\": %.6g, "
        "\"w1_edges\": %.6g, \"mmd_layer_size\": %.6g, "
        "\"mmd_in_degree\": %.6g, \"mmd_out_degree\": %.6g, "
        "\"attr_tv\": [",
        ev.n_real, ev.n_gen, ev.validity, ev.attr_validity, ev.w1_layers, ev.w1_nodes, ev.w1_edges,
        ev.mmd_layer_size, ev.mmd_in_degree, ev.mmd_out_degree);
    for (uint32_t c = 0; c < ev.n_ch; c++) printf("%s%.6g", c ? ", " : "", ev.attr_tv[c]);
    printf("]");
    if (ev.has_surrogate)
      printf(
          ", \"surrogate_generated\": {\"pearson\": %.6g, \"spearman\": "
          "%.6g, \"mae\": %.6g}",
          ev.gen_pearson, ev.gen_spearman, ev.gen_mae);
    if (ev.has_real_surrogate)
      printf(
          ", \"surrogate_real\": {\"pearson\": %.6g, \"spearman\": %.6g, "
          "\"mae\": %.6g}",
          ev.real_pearson, ev.real_spearman, ev.real_mae);
    char *h = hist ? json_dumps(hist, JSON_COMPACT) : NULL;
    if (h) printf(", \"histograms\": %s", h);
    free(h);
    json_decref(hist);
    printf("}\n");
    return 0;
  }
  printf("real DAGs           %zu\n", ev.n_real);
  printf("generated DAGs      %zu\n", ev.n_gen);
  printf("validity            %.4f\n", ev.validity);
  if (ev.attr_validity < 1 || ev.n_ch == 3) printf("attribute validity  %.4f\n", ev.attr_validity);
  printf("W1 layers           %.4f\n", ev.w1_layers);
  printf("W1 nodes            %.4f\n", ev.w1_nodes);
  printf("W1 edges            %.4f\n", ev.w1_edges);
  printf("MMD layer sizes     %.6f\n", ev.mmd_layer_size);
  printf("MMD in-degree       %.6f\n", ev.mmd_in_degree);
  printf("MMD out-degree      %.6f\n", ev.mmd_out_degree);
  for (uint32_t c = 0; c < ev.n_ch; c++) printf("attribute TV ch%u    %.4f\n", c, ev.attr_tv[c]);
  if (ev.has_surrogate)
    printf(
        "surrogate (trained on generated): Pearson %.4f  Spearman %.4f  "
        "MAE %.4f\n",
        ev.gen_pearson, ev.gen_spearman, ev.gen_mae);
  if (ev.has_real_surrogate)
    printf(
        "surrogate (trained on real):      Pearson %.4f  Spearman %.4f  "
        "MAE %.4f\n",
        ev.real_pearson, ev.real_spearman, ev.real_mae);
  return 0;
}

int etsim_cmd_synth(int argc, char **argv) {
  if (argc < 2 || cli_is_help(argv[1])) {
    fputs(usage, argc < 2 ? stderr : stdout);
    return argc < 2 ? ETSIM_EXIT_USAGE : ETSIM_EXIT_OK;
  }
  if (!strcmp(argv[1], "train")) return cmd_train(argc, argv);
  if (!strcmp(argv[1], "sample")) return cmd_sample_or_baseline(argc, argv, 0);
  if (!strcmp(argv[1], "baseline")) return cmd_sample_or_baseline(argc, argv, 1);
  if (!strcmp(argv[1], "eval")) return cmd_eval(argc, argv);
  return cli_usage_error(
      "synth: unknown subcommand '%s' (train, sample, "
      "eval, baseline)",
      argv[1]);
}
