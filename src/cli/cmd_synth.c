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
    "                          [--seed S] [--max-nodes N] [--label Y | --label-file F]\n"
    "                          [--exact-candidates N] [--hist 0..7] [--quiet]\n"
    "       etsim synth sample --model MODEL -n N [--label Y | --labels-from FILE |\n"
    "                          --label-file F] [--no-project]\n"
    "                          [--seed S] -o OUT\n"
    "       etsim synth eval   --real A --generated B [--real-train C] [--json]\n"
    "                          [--surrogate bimpnn|ridge|none] [--sur-epochs E]\n"
    "                          [--sur-hidden H] [--sur-mp-layers K] [--sur-seed S] ...\n"
    "       etsim synth surrogate --train FILE [--train ...] [--aug FILE ...]\n"
    "                          [--aug-weight W] [--val FILE] --test FILE [--test ...]\n"
    "                          [--epochs E]\n"
    "                          [--patience P] [--hidden H] [--mp-layers K] [--batch B]\n"
    "                          [--lr LR] [--seed S] [--json] [--quiet]\n"
    "       etsim synth baseline --data FILE -n N [--method daggen|empirical]\n"
    "                          [--labels-from FILE] [--seed S] -o OUT.txt\n"
    "\n"
    "LayerDAG: learn a layer-wise discrete-diffusion generator from real DAGs\n"
    "and sample new ones that are acyclic by construction (docs/synth.md).\n"
    "Data: the text DAG format of shared/datasets/tpu_tile (*.txt), or Chakra\n"
    "traces (*.et, *.et.gz; cut into windows of at most --max-nodes nodes of\n"
    "consecutive layers, labelled --label, or per file by --label-file F whose\n"
    "lines are 'NAME VALUE', NAME a trace's file name).  A folder means all\n"
    "such files.  sample --label-file takes the VALUEs in order.\n"
    "sample: OUT ending in .txt gets the text format; otherwise OUT is a prefix\n"
    "and DAG i is written as the Chakra trace OUT-i.0.et (trace models only).\n"
    "eval: validity, W1 of layer/node/edge counts, MMD of layer sizes and\n"
    "degrees, attribute total variation, and a surrogate (default the paper's\n"
    "BiMPNN regressor) trained on the generated labels and tested on the real\n"
    "ones (and trained on --real-train).\n"
    "surrogate: the BiMPNN regressor alone: trained on --train (plus --aug\n"
    "graphs weighing --aug-weight), selected on --val or a seeded 10% of the\n"
    "--train graphs, scored on each --test set (Pearson, Spearman, MAE).\n"
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

/* A label file: one "NAME VALUE" per line (# comments), NAME a trace
 * file's name without its folder.  Set by --label-file; traces then take
 * their label from it instead of --label. */
typedef struct {
  const char *path;
  char **names;
  double *values;
  size_t n;
} label_file_t;
static label_file_t g_labels;

static void label_file_free(label_file_t *lf) {
  for (size_t i = 0; i < lf->n; i++) free(lf->names[i]);
  free(lf->names);
  free(lf->values);
  memset(lf, 0, sizeof *lf);
}

static int label_file_read(label_file_t *lf, const char *path, etsim_error_t *err) {
  FILE *fp = fopen(path, "r");
  if (!fp) return etsim_error_set(err, ETSIM_EIO, "%s: cannot open", path);
  char line[4096];
  long ln = 0;
  size_t cn = 0, cv = 0;
  int rc = 0;
  lf->path = path;
  while (!rc && fgets(line, sizeof line, fp)) {
    ln++;
    char name[4096], *end;
    const char *p = line;
    while (*p == ' ' || *p == '\t') p++;
    if (*p == '#' || *p == '\n' || !*p) continue;
    int k = 0;
    while (*p && *p != ' ' && *p != '\t' && *p != '\n' && k < (int)sizeof name - 1)
      name[k++] = *p++;
    name[k] = 0;
    double v = strtod(p, &end);
    while (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r') end++;
    if (end == p || *end || !isfinite(v)) {
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:%ld: expected 'NAME VALUE'", path, ln);
      break;
    }
    if (etsim_grow((void **)&lf->names, &cn, lf->n + 1, sizeof *lf->names) ||
        etsim_grow((void **)&lf->values, &cv, lf->n + 1, sizeof *lf->values) ||
        !(lf->names[lf->n] = strdup(name))) {
      rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
      break;
    }
    lf->values[lf->n++] = v;
  }
  fclose(fp);
  if (!rc && !lf->n) rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: no labels", path);
  if (rc) label_file_free(lf);
  return rc;
}

static int load_one(etsim_synth_data_t *d, const char *path, const etsim_synth_trace_opts_t *o,
                    etsim_error_t *err) {
  if (ends_with(path, ".txt")) return etsim_synth_data_load_text(d, path, 0, err);
  etsim_synth_trace_opts_t to = *o;
  if (g_labels.n) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t i = 0;
    while (i < g_labels.n && strcmp(g_labels.names[i], base)) i++;
    if (i == g_labels.n)
      return etsim_error_set(err, ETSIM_ENOTFOUND, "%s: no label for %s in %s", path, base,
                             g_labels.path);
    to.y = g_labels.values[i];
  }
  return etsim_synth_data_load_trace(d, path, &to, err);
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
  const char *data[64], *val = NULL, *outp = NULL, *label_path = NULL, *v;
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
    } else if ((m = cli_opt(argc, argv, &i, "--exact-candidates", &v))) {
      if (m < 0 || parse_int(v, "--exact-candidates", 0, 1 << 30, &cfg.exact_candidates))
        return ETSIM_EXIT_USAGE;
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
    } else if ((m = cli_opt(argc, argv, &i, "--label-file", &v))) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      label_path = v;
    } else if ((m = cli_opt(argc, argv, &i, "--hist", &v))) {
      if (m < 0 || parse_int(v, "--hist", 0, 7, &cfg.ctx_hist)) return ETSIM_EXIT_USAGE;
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
  int rc = label_path ? label_file_read(&g_labels, label_path, &err) : 0;
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
              val ? val : "a seeded 10% of them");
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
  label_file_free(&g_labels);
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
  const char *data = NULL, *method = NULL, *label_file = NULL;
  int project = 1;
  etsim_synth_sample_stats_t sst = {0};
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
    } else if ((m = cli_opt(argc, argv, &i, "--label-file", &v))) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      label_file = v;
    } else if (!baseline && !strcmp(argv[i], "--no-project")) {
      project = 0;
    } else if ((m = cli_opt(argc, argv, &i, "-o", &v)) ||
               (m = cli_opt(argc, argv, &i, "--output", &v))) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      outp = v;
    } else {
      return cli_usage_error("synth %s: unknown option %s (see --help)", argv[1], argv[i]);
    }
  }
  if (labels_from && label_file)
    return cli_usage_error("give --labels-from or --label-file, not both");
  if ((!baseline && !modelp) || (baseline && !data) || !outp ||
      (!have_n && !labels_from && !label_file))
    return cli_usage_error("synth %s needs %s, -n (or --labels-from) and -o (see --help)", argv[1],
                           baseline ? "--data" : "--model");
  etsim_error_t err = {0};
  double *labels = NULL;
  size_t nl = 0;
  int rc = 0;
  if (labels_from && (rc = read_labels(labels_from, &labels, &nl, &err))) return cli_fail(&err);
  if (label_file) {
    label_file_t lf = {0};
    if ((rc = label_file_read(&lf, label_file, &err))) return cli_fail(&err);
    labels = malloc(sizeof(double) * lf.n);
    if (!labels) {
      label_file_free(&lf);
      return ETSIM_EXIT_INTERNAL;
    }
    memcpy(labels, lf.values, sizeof(double) * lf.n);
    nl = lf.n;
    label_file_free(&lf);
  }
  if ((labels_from || label_file) && !have_n) n = nl;
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
    if (!rc) rc = etsim_synth_sample_ex(model, (size_t)n, labels, seed, project, &sst, &out, &err);
    if (!rc && !cli_quiet && sst.nodes)
      fprintf(stderr, "%zu of %zu sampled nodes broke an attribute rule%s\n", sst.projected,
              sst.nodes, project ? " and were redrawn within it" : "");
    etsim_synth_model_free(model);
  }
  if (!rc)
    rc = write_out(
        &out, outp,
        baseline ? "etsim synth baseline (layered random DAGs)" : "etsim synth sample (LayerDAG)",
        &err);
  if (!rc && !cli_quiet) {
    size_t nodes = 0, attr_ok = 0;
    for (size_t i = 0; i < out.n_graphs; i++) {
      nodes += out.g[i].n_nodes;
      attr_ok += (size_t)etsim_synth_attr_valid(&out, &out.g[i]);
    }
    fprintf(stderr, "wrote %zu DAG(s), %zu nodes, to %s%s\n", out.n_graphs, nodes, outp,
            ends_with(outp, ".txt") ? "" : "-<i>.0.et");
    /* Traces are written consistent (a collective without a type becomes
     * an all-reduce), so the rule can only be checked here, before. */
    if (out.kind == ETSIM_SYNTH_KIND_TRACE)
      fprintf(stderr, "attribute rules hold in %zu of %zu DAG(s)\n", attr_ok, out.n_graphs);
  }
  etsim_synth_data_free(&out);
  free(labels);
  return rc ? cli_fail(&err) : 0;
}

static int sur_opt(int argc, char **argv, int *i, etsim_synth_surrogate_config_t *sc,
                   const char *prefix);

static int cmd_eval(int argc, char **argv) {
  const char *realp = NULL, *genp = NULL, *trainp = NULL, *v;
  int json = 0, sur = ETSIM_SYNTH_SURROGATE_BIMPNN;
  etsim_synth_surrogate_config_t sc;
  etsim_synth_surrogate_config_default(&sc);
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
    } else if ((m = cli_opt(argc, argv, &i, "--surrogate", &v))) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      if (!strcmp(v, "bimpnn")) sur = ETSIM_SYNTH_SURROGATE_BIMPNN;
      else if (!strcmp(v, "ridge")) sur = ETSIM_SYNTH_SURROGATE_RIDGE;
      else if (!strcmp(v, "none")) sur = ETSIM_SYNTH_SURROGATE_NONE;
      else return cli_usage_error("--surrogate must be bimpnn, ridge or none");
    } else if ((m = sur_opt(argc, argv, &i, &sc, "sur-"))) {
      if (m < 0) return ETSIM_EXIT_USAGE;
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
  if (!rc) rc = etsim_synth_evaluate(&R, &G, trainp ? &T : NULL, sur, &sc, &ev, &err);
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
  if (ev.attr_validity < 1 || ev.n_ch == ETSIM_SYNTH_TRACE_CH)
    printf("attribute validity  %.4f\n", ev.attr_validity);
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

/* Make every set's vocabulary the largest of them, so one surrogate reads
 * all (text data size theirs from their own maximum category). */
static void same_vocab(etsim_synth_data_t **sets, int n) {
  for (uint32_t c = 0; c < ETSIM_SYNTH_MAX_CH; c++) {
    uint32_t k = 0;
    for (int i = 0; i < n; i++)
      if (sets[i] && sets[i]->n_cls[c] > k) k = sets[i]->n_cls[c];
    for (int i = 0; i < n; i++)
      if (sets[i]) sets[i]->n_cls[c] = k;
  }
}

/* Append every graph of src to dst (same layout). */
static int append_all(etsim_synth_data_t *dst, const etsim_synth_data_t *src, etsim_error_t *err) {
  if (dst->n_graphs && (dst->kind != src->kind || dst->n_ch != src->n_ch))
    return etsim_error_set(err, ETSIM_EINVAL, "training sets have different category layouts");
  if (!dst->n_graphs) {
    dst->kind = src->kind;
    dst->n_ch = src->n_ch;
  }
  for (uint32_t c = 0; c < src->n_ch; c++)
    if (src->n_cls[c] > dst->n_cls[c]) dst->n_cls[c] = src->n_cls[c];
  for (size_t i = 0; i < src->n_graphs; i++)
    if (etsim_synth_data_add(dst, &src->g[i]))
      return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  return 0;
}

/* Move a seeded 10% of the first *n_real graphs of d (the real ones, which
 * come first) to val, so model selection only ever sees real graphs and
 * the same seed holds out the same graphs with or without augmentation. */
static int hold_out(etsim_synth_data_t *d, size_t *n_real, etsim_synth_data_t *val, uint64_t seed,
                    etsim_error_t *err) {
  size_t n = *n_real, nv = n >= 10 ? n / 10 : (n >= 2 ? 1 : 0);
  if (!nv) return etsim_error_set(err, ETSIM_EINVAL, "need at least 2 training DAGs");
  etsim_rng_t r;
  etsim_rng_seed(&r, seed ^ 0x401d007ULL);
  for (size_t i = n; i > 1; i--) {
    size_t j = etsim_rng_below(&r, i);
    etsim_synth_dag_t t = d->g[i - 1];
    d->g[i - 1] = d->g[j];
    d->g[j] = t;
  }
  /* The first nv go to val: move them, then close the gap. */
  etsim_synth_data_init(val);
  val->kind = d->kind;
  val->n_ch = d->n_ch;
  memcpy(val->n_cls, d->n_cls, sizeof val->n_cls);
  for (size_t i = 0; i < nv; i++) {
    if (etsim_synth_data_add(val, &d->g[i]))
      return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    etsim_free(d->g[i].x);
    etsim_free(d->g[i].src);
    etsim_free(d->g[i].dst);
  }
  memmove(d->g, d->g + nv, sizeof *d->g * (d->n_graphs - nv));
  d->n_graphs -= nv;
  *n_real = n - nv;
  return 0;
}

typedef struct {
  int quiet;
} sur_ctx;

static int on_sur_epoch(void *user, const etsim_synth_surrogate_progress_t *p) {
  sur_ctx *c = user;
  if (c->quiet) return 0;
  fprintf(stderr, "epoch %3d/%d  loss %.4f  val Pearson %.4f  Spearman %.4f  MAE %.4f%s\n",
          p->epoch, p->epochs, p->train_loss, p->val.pearson, p->val.spearman, p->val.mae,
          p->best ? "  best" : "");
  return 0;
}

/* Parse one surrogate option; 1 taken, 0 not ours, -1 bad. */
static int sur_opt(int argc, char **argv, int *i, etsim_synth_surrogate_config_t *sc,
                   const char *prefix) {
  char name[64];
  const char *v;
  int m, x;
#define SUR_INT(flag, field, lo, hi)                        \
  snprintf(name, sizeof name, "--%s%s", prefix, flag);      \
  if ((m = cli_opt(argc, argv, i, name, &v))) {             \
    if (m < 0 || parse_int(v, name, lo, hi, &x)) return -1; \
    sc->field = x;                                          \
    return 1;                                               \
  }
  SUR_INT("hidden", hidden, 1, 4096)
  SUR_INT("mp-layers", mp_layers, 0, 8)
  SUR_INT("epochs", epochs, 1, 100000)
  SUR_INT("patience", patience, 1, 100000)
  SUR_INT("batch", batch, 1, 1 << 20)
#undef SUR_INT
  snprintf(name, sizeof name, "--%slr", prefix);
  if ((m = cli_opt(argc, argv, i, name, &v))) {
    double lr;
    if (m < 0 || cli_parse_double(v, name, &lr)) return -1;
    if (!(lr > 0 && lr < 1)) {
      cli_usage_error("%s must be in (0, 1)", name);
      return -1;
    }
    sc->lr = (float)lr;
    return 1;
  }
  snprintf(name, sizeof name, "--%sseed", prefix);
  if ((m = cli_opt(argc, argv, i, name, &v))) {
    if (m < 0 || cli_parse_u64(v, name, &sc->seed)) return -1;
    return 1;
  }
  return 0;
}

static int cmd_surrogate(int argc, char **argv) {
  enum { MAXT = 16 };
  const char *train[64], *aug[64], *valp = NULL, *testp[MAXT], *v;
  int nt = 0, na = 0, ntest = 0, json = 0, quiet = 0;
  double aug_w = 1.0;
  etsim_synth_surrogate_config_t sc;
  etsim_synth_surrogate_config_default(&sc);
  for (int i = 2; i < argc; i++) {
    int m;
    if (cli_is_help(argv[i])) {
      fputs(usage, stdout);
      return 0;
    }
    if ((m = sur_opt(argc, argv, &i, &sc, ""))) {
      if (m < 0) return ETSIM_EXIT_USAGE;
    } else if ((m = cli_opt(argc, argv, &i, "--train", &v))) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      if (nt == 64) return cli_usage_error("at most 64 --train arguments");
      train[nt++] = v;
    } else if ((m = cli_opt(argc, argv, &i, "--aug", &v))) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      if (na == 64) return cli_usage_error("at most 64 --aug arguments");
      aug[na++] = v;
    } else if ((m = cli_opt(argc, argv, &i, "--aug-weight", &v))) {
      if (m < 0 || cli_parse_double(v, "--aug-weight", &aug_w)) return ETSIM_EXIT_USAGE;
      if (!(aug_w >= 0 && aug_w <= 1e6)) return cli_usage_error("--aug-weight must be in 0..1e6");
    } else if ((m = cli_opt(argc, argv, &i, "--val", &v))) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      valp = v;
    } else if ((m = cli_opt(argc, argv, &i, "--test", &v))) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      if (ntest == MAXT) return cli_usage_error("at most %d --test arguments", MAXT);
      testp[ntest++] = v;
    } else if (!strcmp(argv[i], "--json")) {
      json = 1;
    } else if (!strcmp(argv[i], "--quiet") || !strcmp(argv[i], "-q")) {
      quiet = 1;
    } else {
      return cli_usage_error("synth surrogate: unknown option %s (see --help)", argv[i]);
    }
  }
  if (!nt || !ntest)
    return cli_usage_error("synth surrogate needs --train and --test (see --help)");
  etsim_error_t err = {0};
  etsim_synth_trace_opts_t to;
  etsim_synth_trace_opts_default(&to);
  etsim_synth_data_t TR, AU, VA, TE[MAXT], one;
  etsim_synth_data_init(&TR);
  etsim_synth_data_init(&AU);
  etsim_synth_data_init(&VA);
  for (int k = 0; k < MAXT; k++) etsim_synth_data_init(&TE[k]);
  double *wts = NULL, *pred = NULL, *y = NULL;
  etsim_synth_surrogate_t *s = NULL;
  int rc = 0;
  for (int k = 0; k < nt + na && !rc; k++) {
    etsim_synth_data_init(&one);
    rc = load_path(&one, k < nt ? train[k] : aug[k - nt], &to, &err);
    if (!rc) rc = append_all(k < nt ? &TR : &AU, &one, &err);
    etsim_synth_data_free(&one);
  }
  if (!rc && valp) rc = load_path(&VA, valp, &to, &err);
  for (int k = 0; k < ntest && !rc; k++) rc = load_path(&TE[k], testp[k], &to, &err);
  size_t n_real = TR.n_graphs;
  if (!rc && AU.n_graphs) rc = append_all(&TR, &AU, &err);
  if (!rc) {
    etsim_synth_data_t *sets[2 + MAXT] = {&TR, valp ? &VA : NULL};
    for (int k = 0; k < ntest; k++) sets[2 + k] = &TE[k];
    for (int k = 1; k < 2 + ntest; k++)
      if (sets[k] && sets[k]->n_graphs && (sets[k]->kind != TR.kind || sets[k]->n_ch != TR.n_ch))
        rc = etsim_error_set(&err, ETSIM_EINVAL,
                             "%s: category layout differs from the training data",
                             k == 1 ? valp : testp[k - 2]);
    if (!rc) same_vocab(sets, 2 + ntest);
  }
  if (!rc) {
    size_t mt = 0;
    for (int k = 0; k < ntest; k++) mt = TE[k].n_graphs > mt ? TE[k].n_graphs : mt;
    wts = malloc(sizeof(double) * (TR.n_graphs + 1));
    pred = malloc(sizeof(double) * (mt + 1));
    y = malloc(sizeof(double) * (mt + 1));
    if (!wts || !pred || !y) rc = etsim_error_set(&err, ETSIM_ENOMEM, "out of memory");
  }
  if (!rc) {
    if (!quiet)
      fprintf(stderr, "training on %zu DAG(s) (%zu augmenting), validating on %s\n", TR.n_graphs,
              TR.n_graphs - n_real, valp ? valp : "a seeded 10% of the --train graphs");
    sur_ctx ctx = {quiet};
    if (!valp) rc = hold_out(&TR, &n_real, &VA, sc.seed, &err);
    for (size_t i = 0; i < TR.n_graphs; i++) wts[i] = i < n_real ? 1.0 : aug_w;
    if (!rc) rc = etsim_synth_surrogate_fit(&TR, wts, &VA, &sc, on_sur_epoch, &ctx, &s, &err);
  }
  /* One trained regressor scores every --test set, one line each. */
  for (int k = 0; k < ntest && !rc; k++) {
    etsim_synth_data_t *te = &TE[k];
    rc = etsim_synth_surrogate_predict(s, te, pred, &err);
    if (rc) {
      etsim_error_prefix(&err, "%s", testp[k]);
      break;
    }
    for (size_t i = 0; i < te->n_graphs; i++) y[i] = te->g[i].y;
    etsim_synth_scores_t r = {0};
    if (etsim_synth_score(pred, y, te->n_graphs, &r)) {
      rc = etsim_error_set(&err, ETSIM_ENOMEM, "out of memory");
      break;
    }
    if (json)
      printf(
          "{\"n_train\": %zu, \"n_aug\": %zu, \"n_test\": %zu, \"params\": %zu, "
          "\"pearson\": %.6g, \"spearman\": %.6g, \"mae\": %.6g}\n",
          n_real, TR.n_graphs - n_real, te->n_graphs, etsim_synth_surrogate_params(s), r.pearson,
          r.spearman, r.mae);
    else
      printf("%s (%zu DAGs): Pearson %.4f  Spearman %.4f  MAE %.4f\n", testp[k], te->n_graphs,
             r.pearson, r.spearman, r.mae);
  }
  etsim_synth_surrogate_free(s);
  etsim_synth_data_free(&TR);
  etsim_synth_data_free(&AU);
  etsim_synth_data_free(&VA);
  for (int k = 0; k < MAXT; k++) etsim_synth_data_free(&TE[k]);
  free(wts);
  free(pred);
  free(y);
  return rc ? cli_fail(&err) : 0;
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
  if (!strcmp(argv[1], "surrogate")) return cmd_surrogate(argc, argv);
  return cli_usage_error(
      "synth: unknown subcommand '%s' (train, sample, "
      "eval, baseline)",
      argv[1]);
}
