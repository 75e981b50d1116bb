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
    "usage: etsim synth train|sample|eval|surrogate|baseline [options]\n"
    "\n"
    "LayerDAG: learn a layer-wise discrete-diffusion generator from real DAGs\n"
    "and sample new ones that are acyclic by construction (docs/synth.md).\n"
    "  train      learn a generator from --data, write it to -o MODEL\n"
    "  sample     draw -n DAGs from --model MODEL into -o OUT\n"
    "  eval       compare --generated DAGs with --real ones\n"
    "  surrogate  the BiMPNN regressor alone: train, validate, test\n"
    "  baseline   non-learned generators (daggen, empirical) fitted to --data\n"
    "See 'etsim synth CMD --help' for a command's options.\n"
    "exit: 0 ok, 2 bad usage or input, 3 internal error\n";

/* The data paragraph, shared by the commands that read DAGs. */
#define DATA_ABOUT                                                              \
  "Data: the text DAG format of shared/datasets/tpu_tile (*.txt), or Chakra\n"  \
  "traces (*.et, *.et.gz; cut into windows of at most --max-nodes nodes of\n"   \
  "consecutive layers, labelled --label, or per file by --label-file F whose\n" \
  "lines are 'NAME VALUE [VALUE2]', NAME a trace's file name; a second\n"       \
  "value is a second label component).  A folder means all such files."
#define EXIT_EPILOG "exit: 0 ok, 2 bad usage or input, 3 internal error"

static int ends_with(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && strcmp(s + a - b, suf) == 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A label file: one "NAME VALUE [VALUE2]" per line (# comments), NAME a
 * trace file's name without its folder, every line with as many values.
 * Set by --label-file; traces then take their label from it instead of
 * --label, and a second value is the label's second component (y2: a
 * model trained on it conditions on both). */
typedef struct {
  const char *path;
  char **names;
  double *values; /* dim per line */
  uint32_t dim;   /* values per line: 1 or 2 */
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
    double v[3];
    uint32_t nv = 0;
    for (;;) {
      while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
      if (!*p || nv == 3) break;
      v[nv] = strtod(p, &end);
      if (end == p || !isfinite(v[nv])) break;
      nv++;
      p = end;
    }
    if (*p || nv < 1 || nv > 2) {
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:%ld: expected 'NAME VALUE [VALUE2]'", path, ln);
      break;
    }
    if (lf->n && nv != lf->dim) {
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:%ld: %u value(s), the lines before have %u",
                           path, ln, nv, lf->dim);
      break;
    }
    lf->dim = nv;
    if (etsim_grow((void **)&lf->names, &cn, lf->n + 1, sizeof *lf->names) ||
        etsim_grow((void **)&lf->values, &cv, (lf->n + 1) * nv, sizeof *lf->values) ||
        !(lf->names[lf->n] = strdup(name))) {
      rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
      break;
    }
    memcpy(lf->values + lf->n * nv, v, sizeof(double) * nv);
    lf->n++;
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
    to.y = g_labels.values[i * g_labels.dim];
    if (g_labels.dim > 1) to.y2 = g_labels.values[i * g_labels.dim + 1];
  }
  int rc = etsim_synth_data_load_trace(d, path, &to, err);
  if (!rc && g_labels.dim > 1) d->n_labels = 2;
  return rc;
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

/* Every --data (and bare argument) of train in command-line order, into
 * data[0..64); returns how many, or -1 after printing the error. */
static int data_in_order(const cli_list_t *l, const char **args, int n_args, int argc, char **argv,
                         const char **data) {
  size_t n = l->n + (size_t)n_args, li = 0;
  int ai = 0;
  if (n > 64) {
    cli_usage_error("at most 64 --data arguments");
    return -1;
  }
  for (int i = 1; i < argc; i++) {
    if (li < l->n && l->at[li] == i) data[li + (size_t)ai] = l->v[li], li++;
    else if (ai < n_args && argv[i] == args[ai]) data[li + (size_t)ai] = args[ai], ai++;
  }
  return (int)n;
}

static int cmd_train(int argc, char **argv) {
  const char *data[64], *args[64], *val = NULL, *outp = NULL, *label_path = NULL;
  int n_args = 0, quiet = 0, film = 0, label_edge = 0, size_cond = 0, size_cond_stop = 0;
  int succ = 0, attn = 0, bidir = 0;
  cli_list_t data_opt;
  etsim_synth_config_t cfg;
  etsim_synth_config_default(&cfg);
  etsim_synth_trace_opts_t to;
  etsim_synth_trace_opts_default(&to);
  /* the table stores int64 and double; the config's own types after */
  int64_t epochs = cfg.epochs, hidden = cfg.hidden, mp = cfg.mp_layers, batch = cfg.batch,
          t_attr = cfg.t_attr, t_edge = cfg.t_edge, exact = cfg.exact_candidates,
          hist = cfg.ctx_hist, max_nodes = to.max_nodes;
  double lr = cfg.lr, label_drop = cfg.label_drop, ema = cfg.ema;
  const cli_opt_t opts[] = {
      {.name = "--data",
       .kind = CLI_LIST,
       .out = &data_opt,
       .metavar = "DIR|FILE",
       .help = "training DAGs (repeatable; bare arguments too)"},
      CLI_O_STR("--output", "-o", &outp, "MODEL", "where to write the model"),
      CLI_O_STR("--val", NULL, &val, "FILE",
                "validation DAGs (default: a seeded 10% of the training set)"),
      CLI_O_INT("--epochs", NULL, &epochs, "E", 1, 100000, "training epochs (default 40)"),
      CLI_O_INT("--hidden", NULL, &hidden, "H", 4, 4096, "encoder width (default 64)"),
      CLI_O_INT("--mp-layers", NULL, &mp, "K", 0, 8, "message-passing layers (default 2)"),
      CLI_O_INT("--batch", NULL, &batch, "B", 1, 1 << 20, "graphs per step (default 16)"),
      CLI_O_REAL("--lr", NULL, &lr, "LR", 1e-9, 0.999999, "Adam learning rate (default 0.002)"),
      CLI_O_INT("--t-attr", NULL, &t_attr, "T", 1, 1024, "attribute diffusion steps (default 64)"),
      CLI_O_INT("--t-edge", NULL, &t_edge, "T", 1, 1024, "edge diffusion steps (default 16)"),
      CLI_O_UINT("--seed", NULL, &cfg.seed, "S", 0, 0, "seed (default 1)"),
      CLI_O_INT("--max-nodes", NULL, &max_nodes, "N", 2, 100000,
                "trace windows: at most N nodes (default 400)"),
      CLI_O_REAL("--label", NULL, &to.y, "Y", 0, 0, "the traces' label (default 1)"),
      CLI_O_STR("--label-file", NULL, &label_path, "F",
                "per-trace labels: 'NAME VALUE [VALUE2]' lines"),
      CLI_O_INT("--exact-candidates", NULL, &exact, "N", 0, 1 << 30,
                "edge candidates scored exactly (default 256)"),
      CLI_O_INT("--hist", NULL, &hist, "0..15", 0, 15,
                "context mask: 1 denoisers' histograms, 2 size head's, 4 depth progress, "
                "8 class recency (4 and 8 traces only; default 13)"),
      CLI_O_REAL("--label-drop", NULL, &label_drop, "P", 0, 1,
                 "drop a graph's label from the denoisers with probability P, for "
                 "--guidance (default 0)"),
      CLI_O_FLAG("--film", NULL, &film,
                 "label scale/shift (FiLM) in every layer of the attribute denoiser "
                 "(model version 8)"),
      CLI_O_FLAG("--label-edge", NULL, &label_edge,
                 "label scale on the edge denoiser's per-candidate hidden part "
                 "(model version 9)"),
      CLI_O_REAL("--ema", NULL, &ema, "D", 0, 0.999999,
                 "keep a moving average of the weights, decay D per step, and validate and "
                 "save it (default 0: the raw weights)"),
      CLI_O_FLAG("--size-cond", NULL, &size_cond,
                 "the stop and size heads also read the node count (sample: that of\n"
                 "--labels-from's graph i; model version 10)"),
      CLI_O_FLAG("--size-cond-stop", NULL, &size_cond_stop,
                 "as --size-cond for the stop head alone; the size head reads no node count\n"
                 "(model version 11)"),
      CLI_O_FLAG("--succ", NULL, &succ,
                 "successor messages: at each layer step a node's embedding also reflects\n"
                 "its children so far, as LayerDAG's bidirectional encoder (model version 12)"),
      CLI_O_FLAG("--attn", NULL, &attn,
                 "self-attention among a new layer's nodes in the attribute denoiser, after\n"
                 "its first hidden layer (O(n^2) per layer of n nodes; model version 13)"),
      CLI_O_FLAG("--bidir", NULL, &bidir,
                 "bidirectional encoder: at each layer step the message passing runs again on\n"
                 "the prefix with parent and child messages, as LayerDAG's BiMPNN (encoder\n"
                 "work quadratic in depth; excludes --succ; model version 14)"),
      CLI_O_FLAG("--quiet", "-q", &quiet, "no per-epoch lines"),
      CLI_O_END};
  const cli_cmd_t cmd = {"synth train",
                         "--data DIR|FILE [--data ...] -o MODEL [options]",
                         "Learn a LayerDAG generator from real DAGs.\n" DATA_ABOUT,
                         opts,
                         0,
                         64,
                         "DIR|FILE",
                         EXIT_EPILOG};
  int code = cli_parse(&cmd, argc - 1, argv + 1, args, &n_args);
  if (code >= 0) return code;
  int nd = data_in_order(&data_opt, args, n_args, argc - 1, argv + 1, data);
  cli_lists_free(opts);
  if (nd < 0) return ETSIM_EXIT_USAGE;
  if (!nd || !outp) return cli_usage_error("synth train needs --data and -o (see --help)");
  if (size_cond && size_cond_stop)
    return cli_usage_error("--size-cond and --size-cond-stop exclude each other");
  if (succ && bidir) return cli_usage_error("--succ and --bidir exclude each other");
  cfg.epochs = (int)epochs, cfg.hidden = (int)hidden, cfg.mp_layers = (int)mp;
  cfg.batch = (int)batch, cfg.t_attr = (int)t_attr, cfg.t_edge = (int)t_edge;
  cfg.exact_candidates = (int)exact, cfg.ctx_hist = (int)hist, cfg.lr = (float)lr;
  cfg.label_drop = (float)label_drop;
  cfg.label_film = film;
  cfg.label_edge = label_edge;
  cfg.ema = (float)ema;
  cfg.size_cond = size_cond        ? ETSIM_SYNTH_SIZE_COND_HEADS
                  : size_cond_stop ? ETSIM_SYNTH_SIZE_COND_STOP
                                   : 0;
  cfg.succ_msg = succ;
  cfg.attn = attn;
  cfg.bidir = bidir;
  to.max_nodes = (uint32_t)max_nodes;
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

/* The labels of PATH's graphs into *out, and their node counts into
 * *nodes when nodes is not NULL. */
static int read_labels(const char *path, double **out, uint32_t **nodes, size_t *n,
                       etsim_error_t *err) {
  etsim_synth_data_t d;
  etsim_synth_data_init(&d);
  etsim_synth_trace_opts_t to;
  etsim_synth_trace_opts_default(&to);
  int rc = load_path(&d, path, &to, err);
  if (rc) return rc;
  *out = malloc(sizeof(double) * (d.n_graphs + 1));
  if (nodes) *nodes = malloc(sizeof(uint32_t) * (d.n_graphs + 1));
  if (!*out || (nodes && !*nodes)) {
    free(*out);
    if (nodes) free(*nodes);
    etsim_synth_data_free(&d);
    return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < d.n_graphs; i++) (*out)[i] = d.g[i].y;
  for (size_t i = 0; nodes && i < d.n_graphs; i++) (*nodes)[i] = d.g[i].n_nodes;
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

/* The labels of --labels-from FILE or --label-file F (at most one given),
 * *dim components per DAG (a label file's values per line, else 1), cycled
 * to fill n DAGs; n becomes their count when -n was not given.  NULL
 * without either.  With nodes (not NULL), *nodes gets FILE's node counts,
 * cycled alike.  Returns -1 to go on, or the exit code. */
static int given_labels(const char *labels_from, const char *label_file, int have_n, uint64_t *n,
                        double **out, uint32_t *dim, uint32_t **nodes) {
  etsim_error_t err = {0};
  double *labels = NULL;
  size_t nl = 0;
  *out = NULL;
  *dim = 1;
  if (labels_from && read_labels(labels_from, &labels, nodes, &nl, &err)) return cli_fail(&err);
  if (label_file) {
    label_file_t lf = {0};
    if (label_file_read(&lf, label_file, &err)) return cli_fail(&err);
    labels = malloc(sizeof(double) * lf.n * lf.dim);
    if (!labels) {
      label_file_free(&lf);
      return ETSIM_EXIT_INTERNAL;
    }
    memcpy(labels, lf.values, sizeof(double) * lf.n * lf.dim);
    nl = lf.n;
    *dim = lf.dim;
    label_file_free(&lf);
  }
  if ((labels_from || label_file) && !have_n) *n = nl;
  if (labels && nl < *n) { /* cycle through the given labels */
    double *l2 = realloc(labels, sizeof(double) * *n * *dim);
    if (!l2) {
      free(labels);
      return ETSIM_EXIT_INTERNAL;
    }
    labels = l2;
    for (size_t i = nl * *dim; i < *n * *dim; i++) labels[i] = labels[i % (nl * *dim)];
    if (nodes && *nodes) { /* --labels-from's node counts, cycled alike */
      uint32_t *n2 = realloc(*nodes, sizeof(uint32_t) * *n);
      if (!n2) {
        free(labels);
        return ETSIM_EXIT_INTERNAL;
      }
      *nodes = n2;
      for (size_t i = nl; i < *n; i++) n2[i] = n2[i % nl];
    }
  }
  *out = labels;
  return -1;
}

/* What sample and baseline wrote, on stderr. */
static void say_written(const etsim_synth_data_t *out, const char *outp) {
  size_t nodes = 0, attr_ok = 0;
  for (size_t i = 0; i < out->n_graphs; i++) {
    nodes += out->g[i].n_nodes;
    attr_ok += (size_t)etsim_synth_attr_valid(out, &out->g[i]);
  }
  fprintf(stderr, "wrote %zu DAG(s), %zu nodes, to %s%s\n", out->n_graphs, nodes, outp,
          ends_with(outp, ".txt") ? "" : "-<i>.0.et");
  /* Traces are written consistent (a collective without a type becomes
   * an all-reduce), so the rule can only be checked here, before. */
  if (out->kind == ETSIM_SYNTH_KIND_TRACE)
    fprintf(stderr, "attribute rules hold in %zu of %zu DAG(s)\n", attr_ok, out->n_graphs);
}

/* What the sampler's rules changed, on stderr (trace models). */
static void report_rules(const etsim_synth_sample_stats_t *sst, int project) {
  if (sst->nodes)
    fprintf(stderr, "%zu of %zu sampled nodes broke an attribute rule%s\n", sst->projected,
            sst->nodes, project ? " and were redrawn within it" : "");
  if (sst->run_cut)
    fprintf(stderr,
            "%zu layer(s) began with a node that does not communicate by the "
            "communication-run rule\n",
            sst->run_cut);
}

/* What synth sample's options ask of the model (the option table writes
 * into it). */
typedef struct {
  const char *model, *parents_from;
  double edge_temp, attr_temp, guidance, guidance_edge; /* guidance_edge NaN: that of guidance */
  double label, label2;                                 /* NaN: not given */
  uint64_t max_parents, match_size;                     /* match_size: draws per DAG, 0 one */
  int no_project;
} sample_args_t;

/* synth sample's model side: load a->model, set its sampling options,
 * fill *labelsp (*dimp components a DAG) from --label/--label2 when no
 * file gave them (label_file names the file in errors), and sample n
 * DAGs into out; nodes (--labels-from, else NULL): the node count each
 * DAG is matched to over a->match_size draws (0 is one draw) and that a
 * model trained with --size-cond or --size-cond-stop conditions on. */
static int sample_model(const sample_args_t *a, size_t n, uint64_t seed, double **labelsp,
                        uint32_t *dimp, const char *label_file, const uint32_t *nodes,
                        etsim_synth_data_t *out, etsim_error_t *err) {
  etsim_synth_sample_stats_t sst = {0};
  etsim_synth_model_t *model = NULL;
  int rc = etsim_synth_model_load(&model, a->model, err);
  if (!rc) rc = etsim_synth_model_set_edge_temp(model, a->edge_temp, err);
  if (!rc) rc = etsim_synth_model_set_attr_temp(model, a->attr_temp, err);
  if (!rc) rc = etsim_synth_model_set_guidance(model, a->guidance, err);
  if (!rc && !isnan(a->guidance_edge))
    rc = etsim_synth_model_set_guidance_edge(model, a->guidance_edge, err);
  if (!rc) etsim_synth_model_set_max_parents(model, (uint32_t)a->max_parents);
  if (!rc && a->parents_from) {
    etsim_synth_data_t pd;
    etsim_synth_data_init(&pd);
    etsim_synth_trace_opts_t to;
    etsim_synth_trace_opts_default(&to);
    rc = load_path(&pd, a->parents_from, &to, err);
    if (!rc) {
      rc = etsim_synth_model_set_parent_caps(model, &pd, 0.1, err);
      if (rc) etsim_error_prefix(err, "%s", a->parents_from);
    }
    etsim_synth_data_free(&pd);
  }
  if (!rc && !*labelsp && (!isnan(a->label) || !isnan(a->label2))) {
    /* --label2 alone: the first component at the training median. */
    uint32_t dim = isnan(a->label2) ? 1 : 2;
    double *labels = malloc(sizeof(double) * n * dim);
    if (!labels) rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    for (size_t i = 0; !rc && i < n; i++) {
      labels[i * dim] = isnan(a->label) ? etsim_synth_model_label(model) : a->label;
      if (dim > 1) labels[i * dim + 1] = a->label2;
    }
    *labelsp = labels;
    *dimp = dim;
  }
  uint32_t dim = *dimp;
  if (!rc && dim > etsim_synth_model_n_labels(model))
    rc = etsim_error_set(err, ETSIM_EINVAL,
                         "%s conditions on one label component, %s gives %u per DAG", a->model,
                         label_file ? label_file : "--label2", dim);
  if (!rc && nodes)
    rc = etsim_synth_sample_sized(model, n, *labelsp, dim, nodes,
                                  a->match_size ? (uint32_t)a->match_size : 1, seed, !a->no_project,
                                  &sst, out, err);
  else if (!rc)
    rc = etsim_synth_sample_ex(model, n, *labelsp, dim, seed, !a->no_project, &sst, out, err);
  if (!rc && !cli_quiet) report_rules(&sst, !a->no_project);
  etsim_synth_model_free(model);
  return rc;
}

static int cmd_sample_or_baseline(int argc, char **argv, int baseline) {
  const char *outp = NULL, *labels_from = NULL, *data = NULL, *label_file = NULL;
  int method = 0; /* 0 daggen, 1 empirical */
  uint64_t n = 0, seed = 1;
  sample_args_t sa = {
      .edge_temp = 1, .attr_temp = 1, .guidance_edge = NAN, .label = NAN, .label2 = NAN};
  int have_n = 0;
  /* How many DAGs, their labels and the seed: the same for both. */
#define COUNT_OPTS                                                  \
  CLI_O_UINT_GIVEN("-n", NULL, &n, "N", 1, 10000000, &have_n,       \
                   "how many DAGs (default: one per label given)"), \
      CLI_O_STR("--labels-from", NULL, &labels_from, "FILE",        \
                "the labels of FILE's DAGs, in order"),             \
      CLI_O_STR("--label-file", NULL, &label_file, "F",             \
                "the values of F's 'NAME VALUE [VALUE2]' lines"),   \
      CLI_O_UINT("--seed", NULL, &seed, "S", 0, 0, "seed (default 1)")
  const cli_opt_t sample_opts[] = {
      {.name = "--model",
       .kind = CLI_STR,
       .out = &sa.model,
       .metavar = "MODEL",
       .help = "a model from synth train",
       .flags = CLI_REQUIRED},
      CLI_O_REAL("--label", NULL, &sa.label, "Y", 0, 0, "every DAG's label"),
      CLI_O_REAL("--label2", NULL, &sa.label2, "Y2", 0, 0,
                 "every DAG's second label component (models trained on two)"),
      COUNT_OPTS,
      CLI_O_REAL("--edge-temp", NULL, &sa.edge_temp, "TAU", 1e-3, 100,
                 "edge denoiser temperature (default 1; below 1 sharpens)"),
      CLI_O_REAL("--attr-temp", NULL, &sa.attr_temp, "TAU", 1e-3, 100,
                 "attribute denoiser temperature (default 1; below 1 sharpens)"),
      CLI_O_REAL("--guidance", NULL, &sa.guidance, "W", 0, 20,
                 "classifier-free guidance of the denoisers (default 0: none)"),
      CLI_O_REAL("--guidance-edge", NULL, &sa.guidance_edge, "W", 0, 20,
                 "the edge denoiser's own guidance (default: that of --guidance)"),
      CLI_O_UINT("--max-parents", NULL, &sa.max_parents, "K", 0, 1u << 30,
                 "at most K parents per node, the most probable (default 0: no cap)"),
      CLI_O_STR("--parents-from", NULL, &sa.parents_from, "FILE",
                "per category, at most the parents that a tenth of FILE's\n"
                "nodes of that category with a parent reach (FILE: the training DAGs)"),
      CLI_O_UINT("--match-size", NULL, &sa.match_size, "K", 0, 10000,
                 "with --labels-from: DAG i the closest in node count to FILE's\n"
                 "graph i of K draws (default 0: one draw)"),
      CLI_O_FLAG("--no-project", NULL, &sa.no_project,
                 "keep sampled nodes that break an attribute rule as drawn"),
      {.name = "--output",
       .alias = "-o",
       .kind = CLI_STR,
       .out = &outp,
       .metavar = "OUT",
       .help = "OUT.txt: the text format; else DAG i goes to the trace OUT-i.0.et",
       .flags = CLI_REQUIRED},
      CLI_O_END};
  const cli_opt_t baseline_opts[] = {
      {.name = "--data",
       .kind = CLI_STR,
       .out = &data,
       .metavar = "FILE",
       .help = "the DAGs to fit",
       .flags = CLI_REQUIRED},
      CLI_O_CHOICE("--method", NULL, &method, "M", "daggen|empirical",
                   "daggen (default; a DAGGEN-style parametric model: node count,\n"
                   "fat, regularity, density, jump) or empirical (empirical\n"
                   "layer-count and layer-size marginals)"),
      COUNT_OPTS,
      {.name = "--output",
       .alias = "-o",
       .kind = CLI_STR,
       .out = &outp,
       .metavar = "OUT.txt",
       .help = "where to write the DAGs (text format)",
       .flags = CLI_REQUIRED},
      CLI_O_END};
#undef COUNT_OPTS
  const cli_cmd_t cmd =
      baseline
          ? (cli_cmd_t){"synth baseline",
                        "--data FILE -n N [--method daggen|empirical] [options] -o OUT.txt",
                        "Generate DAGs with a non-learned generator fitted to --data.",
                        baseline_opts,
                        0,
                        0,
                        NULL,
                        EXIT_EPILOG}
          : (cli_cmd_t){"synth sample",
                        "--model MODEL -n N [--label Y [--label2 Y2] | --labels-from FILE |\n"
                        "                    --label-file F] [options] -o OUT",
                        "Sample DAGs from a LayerDAG model: OUT ending in .txt gets the text\n"
                        "format; otherwise OUT is a prefix and DAG i is written as the Chakra\n"
                        "trace OUT-i.0.et (trace models only).  Labels given for fewer DAGs\n"
                        "than -n are used in turn.",
                        sample_opts,
                        0,
                        0,
                        NULL,
                        EXIT_EPILOG};
  int code = cli_parse(&cmd, argc - 1, argv + 1, NULL, NULL);
  if (code >= 0) return code;
  if (labels_from && label_file)
    return cli_usage_error("give --labels-from or --label-file, not both");
  if (!have_n && !labels_from && !label_file)
    return cli_usage_error("synth %s needs -n (or --labels-from) (see --help)", argv[1]);
  if (sa.match_size && !labels_from)
    return cli_usage_error("--match-size needs --labels-from (the node counts to match)");
  double *labels = NULL;
  uint32_t dim = 1, *nodes = NULL;
  code = given_labels(labels_from, label_file, have_n, &n, &labels, &dim, baseline ? NULL : &nodes);
  if (code >= 0) return code;
  etsim_error_t err = {0};
  int rc = 0;
  etsim_synth_data_t out;
  etsim_synth_data_init(&out);
  if (baseline) {
    etsim_synth_data_t fit;
    etsim_synth_data_init(&fit);
    etsim_synth_trace_opts_t to;
    etsim_synth_trace_opts_default(&to);
    rc = load_path(&fit, data, &to, &err);
    if (!rc)
      rc = method == 1 ? etsim_synth_baseline(&fit, (size_t)n, seed, &out, &err)
                       : etsim_synth_baseline_daggen(&fit, (size_t)n, seed, &out, &err);
    if (!rc && labels)
      for (size_t i = 0; i < out.n_graphs; i++) {
        out.g[i].y = labels[i * dim];
        if (dim > 1) out.g[i].y2 = labels[i * dim + 1];
      }
    if (!rc && labels && dim > 1) out.n_labels = 2;
    etsim_synth_data_free(&fit);
  } else {
    rc = sample_model(&sa, (size_t)n, seed, &labels, &dim, label_file, nodes, &out, &err);
  }
  if (!rc)
    rc = write_out(
        &out, outp,
        baseline ? "etsim synth baseline (layered random DAGs)" : "etsim synth sample (LayerDAG)",
        &err);
  if (!rc && !cli_quiet) say_written(&out, outp);
  etsim_synth_data_free(&out);
  free(labels);
  free(nodes);
  return rc ? cli_fail(&err) : 0;
}

/* The surrogate's settings as an option table stores them (int64 and
 * double), copied from and back into its config around the parse; eval
 * names them --sur-X, surrogate --X. */
typedef struct {
  int64_t hidden, mp_layers, epochs, patience, batch;
  double lr;
  uint64_t seed;
} sur_args_t;

static sur_args_t sur_args(const etsim_synth_surrogate_config_t *sc) {
  return (sur_args_t){sc->hidden, sc->mp_layers, sc->epochs, sc->patience,
                      sc->batch,  sc->lr,        sc->seed};
}

static void sur_config(const sur_args_t *a, etsim_synth_surrogate_config_t *sc) {
  sc->hidden = (int)a->hidden, sc->mp_layers = (int)a->mp_layers, sc->epochs = (int)a->epochs;
  sc->patience = (int)a->patience, sc->batch = (int)a->batch, sc->lr = (float)a->lr;
  sc->seed = a->seed;
}

/* The table entries of the surrogate's options, PRE a string literal;
 * EP0 the least --epochs (0 where a pre-training can stand for them), EPH
 * its help. */
#define SUR_OPTS(pre, a, ep0, eph)                                                                 \
  CLI_O_INT("--" pre "hidden", NULL, &(a)->hidden, "H", 1, 4096, "surrogate width (default 128)"), \
      CLI_O_INT("--" pre "mp-layers", NULL, &(a)->mp_layers, "K", 0, 8,                            \
                "surrogate message-passing layers (default 4)"),                                   \
      CLI_O_INT("--" pre "epochs", NULL, &(a)->epochs, "E", ep0, 100000, eph),                     \
      CLI_O_INT("--" pre "patience", NULL, &(a)->patience, "P", 1, 100000,                         \
                "stop after P epochs without a better validation score (default 100)"),            \
      CLI_O_INT("--" pre "batch", NULL, &(a)->batch, "B", 1, 1 << 20,                              \
                "graphs per step (default 256)"),                                                  \
      CLI_O_REAL("--" pre "lr", NULL, &(a)->lr, "LR", 1e-9, 0.999999,                              \
                 "Adam learning rate (default 0.001)"),                                            \
      CLI_O_UINT("--" pre "seed", NULL, &(a)->seed, "S", 0, 0, "surrogate seed (default 1)")

static int cmd_eval(int argc, char **argv) {
  const char *realp = NULL, *genp = NULL, *trainp = NULL;
  int json = 0, sur = ETSIM_SYNTH_SURROGATE_BIMPNN;
  etsim_synth_surrogate_config_t sc;
  etsim_synth_surrogate_config_default(&sc);
  sur_args_t sa = sur_args(&sc);
  const cli_opt_t opts[] = {
      {.name = "--real",
       .kind = CLI_STR,
       .out = &realp,
       .metavar = "A",
       .help = "the real DAGs",
       .flags = CLI_REQUIRED},
      {.name = "--generated",
       .kind = CLI_STR,
       .out = &genp,
       .metavar = "B",
       .help = "the generated DAGs",
       .flags = CLI_REQUIRED},
      CLI_O_STR("--real-train", NULL, &trainp, "C", "real DAGs to train a second surrogate on"),
      CLI_O_FLAG("--json", NULL, &json, "the metrics (and histograms) as JSON"),
      /* the index is the ETSIM_SYNTH_SURROGATE_* value */
      CLI_O_CHOICE("--surrogate", NULL, &sur, "S", "none|ridge|bimpnn",
                   "the regressor: bimpnn (default; the paper's), ridge or none"),
      SUR_OPTS("sur-", &sa, 1, "surrogate training epochs (default 500)"),
      CLI_O_END};
  const cli_cmd_t cmd = {
      "synth eval",
      "--real A --generated B [--real-train C] [--json] [options]",
      "Compare generated DAGs with real ones: validity, W1 of layer/node/edge\n"
      "counts, MMD of layer sizes and degrees, attribute total variation, and a\n"
      "surrogate (default the paper's BiMPNN regressor) trained on the generated\n"
      "labels and tested on the real ones (and trained on --real-train).",
      opts,
      0,
      0,
      NULL,
      EXIT_EPILOG};
  int code = cli_parse(&cmd, argc - 1, argv + 1, NULL, NULL);
  if (code >= 0) return code;
  sur_config(&sa, &sc);
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

/* sets[0]'s category layout in every other (non-NULL, non-empty) set,
 * named names[k] in the error; then one vocabulary for all. */
static int one_layout(etsim_synth_data_t **sets, const char **names, int n, etsim_error_t *err) {
  for (int k = 1; k < n; k++)
    if (sets[k] && sets[k]->n_graphs &&
        (sets[k]->kind != sets[0]->kind || sets[k]->n_ch != sets[0]->n_ch))
      return etsim_error_set(err, ETSIM_EINVAL,
                             "%s: category layout differs from the training data", names[k]);
  same_vocab(sets, n);
  return 0;
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
  if (!p->epoch) {
    fprintf(stderr, "start (pre-trained)  val Pearson %.4f  Spearman %.4f  MAE %.4f\n",
            p->val.pearson, p->val.spearman, p->val.mae);
    return 0;
  }
  fprintf(stderr, "epoch %3d/%d  loss %.4f  val Pearson %.4f  Spearman %.4f  MAE %.4f%s\n",
          p->epoch, p->epochs, p->train_loss, p->val.pearson, p->val.spearman, p->val.mae,
          p->best ? "  best" : "");
  return 0;
}

/* One trained regressor scores every --test set, one line each; with
 * predp, also one 'SET GRAPH LABEL PREDICTION' line per test DAG (how well
 * generated DAGs follow the label they were asked for is the real-trained
 * regressor's prediction on them).  pred and y hold the largest set. */
static int score_tests(etsim_synth_surrogate_t *s, etsim_synth_data_t *TE, const char **testp,
                       int ntest, const char *predp, int json, size_t n_real, size_t n_aug,
                       double *pred, double *y, etsim_error_t *err) {
  etsim_outfile_t pf = {0};
  int rc = predp ? etsim_outfile_open(&pf, predp, err) : 0;
  for (int k = 0; k < ntest && !rc; k++) {
    etsim_synth_data_t *te = &TE[k];
    rc = etsim_synth_surrogate_predict(s, te, pred, err);
    if (rc) {
      etsim_error_prefix(err, "%s", testp[k]);
      break;
    }
    for (size_t i = 0; i < te->n_graphs; i++) y[i] = te->g[i].y;
    for (size_t i = 0; predp && i < te->n_graphs; i++)
      fprintf(pf.fp, "%d %zu %.9g %.9g\n", k, i, y[i], pred[i]);
    etsim_synth_scores_t r = {0};
    if (etsim_synth_score(pred, y, te->n_graphs, &r)) {
      rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
      break;
    }
    if (json)
      printf(
          "{\"n_train\": %zu, \"n_aug\": %zu, \"n_test\": %zu, \"params\": %zu, "
          "\"pearson\": %.6g, \"spearman\": %.6g, \"mae\": %.6g}\n",
          n_real, n_aug, te->n_graphs, etsim_synth_surrogate_params(s), r.pearson, r.spearman,
          r.mae);
    else
      printf("%s (%zu DAGs): Pearson %.4f  Spearman %.4f  MAE %.4f\n", testp[k], te->n_graphs,
             r.pearson, r.spearman, r.mae);
  }
  if (predp && !rc) rc = etsim_outfile_commit(&pf, err);
  if (predp && rc) etsim_outfile_abort(&pf);
  return rc;
}

/* The regressor of `synth surrogate`: fitted on TR (selected on VA); or
 * loaded from initp, or first fitted on pre-training graphs PT (selected
 * on PV, else on VA) with pc's epochs and lr, and then fine-tuned on TR
 * from those weights. */
static int fit_surrogate(const etsim_synth_data_t *TR, const double *wts,
                         const etsim_synth_data_t *VA, const etsim_synth_data_t *PT,
                         const etsim_synth_data_t *PV, const char *initp,
                         const etsim_synth_surrogate_config_t *sc,
                         const etsim_synth_surrogate_config_t *pc, sur_ctx *ctx,
                         etsim_synth_surrogate_t **s, etsim_error_t *err) {
  int rc = 0;
  if (initp) {
    rc = etsim_synth_surrogate_load(s, initp, err);
  } else if (PT->n_graphs) {
    if (!ctx->quiet) fprintf(stderr, "pre-training on %zu DAG(s)\n", PT->n_graphs);
    rc = etsim_synth_surrogate_fit(PT, NULL, PV->n_graphs ? PV : VA, pc, on_sur_epoch, ctx, s, err);
    if (rc) etsim_error_prefix(err, "pre-training");
  } else {
    return etsim_synth_surrogate_fit(TR, wts, VA, sc, on_sur_epoch, ctx, s, err);
  }
  if (rc) return rc;
  if (!ctx->quiet) fprintf(stderr, "fine-tuning on %zu DAG(s)\n", TR->n_graphs);
  return etsim_synth_surrogate_finetune(*s, TR, wts, VA, sc, on_sur_epoch, ctx, err);
}

static int cmd_surrogate(int argc, char **argv) {
  enum { MAXT = 16 };
  const char *valp = NULL, *predp = NULL, *pvalp = NULL, *initp = NULL, *savep = NULL;
  cli_list_t train, aug, test, pre;
  int json = 0, quiet = 0;
  int64_t pre_ep = 500;
  double aug_w = 1.0, pre_lr = 1e-3;
  etsim_synth_surrogate_config_t sc;
  etsim_synth_surrogate_config_default(&sc);
  sur_args_t sa = sur_args(&sc);
  const cli_opt_t opts[] = {
      {.name = "--train",
       .kind = CLI_LIST,
       .out = &train,
       .metavar = "FILE",
       .help = "training DAGs (repeatable)"},
      {.name = "--aug",
       .kind = CLI_LIST,
       .out = &aug,
       .metavar = "FILE",
       .help = "augmenting DAGs (repeatable), weighing --aug-weight"},
      CLI_O_REAL("--aug-weight", NULL, &aug_w, "W", 0, 1e6,
                 "weight of an augmenting DAG (default 1)"),
      CLI_O_STR("--val", NULL, &valp, "FILE",
                "validation DAGs (default: a seeded 10% of the --train graphs)"),
      {.name = "--pretrain",
       .kind = CLI_LIST,
       .out = &pre,
       .metavar = "FILE",
       .help = "pre-train on these DAGs (repeatable), then fine-tune on --train"},
      CLI_O_STR("--pretrain-val", NULL, &pvalp, "FILE",
                "validation DAGs of the pre-training (default: those of the fine-tune)"),
      CLI_O_INT("--pretrain-epochs", NULL, &pre_ep, "E", 1, 100000,
                "pre-training epochs at most (default 500)"),
      CLI_O_REAL("--pretrain-lr", NULL, &pre_lr, "LR", 1e-9, 0.999999,
                 "pre-training Adam learning rate (default 0.001)"),
      CLI_O_STR("--init", NULL, &initp, "FILE",
                "start from these saved weights (--save) and fine-tune them on --train"),
      CLI_O_STR("--save", NULL, &savep, "FILE", "write the trained regressor's weights"),
      {.name = "--test",
       .kind = CLI_LIST,
       .out = &test,
       .metavar = "FILE",
       .help = "a test set, scored on its own line (repeatable, at most 16)"},
      SUR_OPTS("", &sa, 0, "surrogate training epochs (default 500; 0 only after a pre-training)"),
      CLI_O_FLAG("--json", NULL, &json, "one JSON line per test set"),
      CLI_O_STR("--predictions", NULL, &predp, "FILE",
                "one 'SET GRAPH LABEL PREDICTION' line per test DAG"),
      CLI_O_FLAG("--quiet", "-q", &quiet, "no per-epoch lines"),
      CLI_O_END};
  const cli_cmd_t cmd = {
      "synth surrogate",
      "--train FILE [--train ...] [--aug FILE ...] [--val FILE]\n"
      "                       [--pretrain FILE ... | --init FILE] --test FILE [--test ...] "
      "[options]",
      "The BiMPNN regressor alone: trained on --train (plus --aug graphs\n"
      "weighing --aug-weight), selected on --val or a seeded 10% of the\n"
      "--train graphs, scored on each --test set (Pearson, Spearman, MAE).\n"
      "With --pretrain it is first trained on those graphs (selected on\n"
      "--pretrain-val), then fine-tuned on --train from those weights; the\n"
      "pre-trained weights are the fine-tune's epoch-0 candidate. --init\n"
      "starts the fine-tune from weights written by --save instead.",
      opts,
      0,
      0,
      NULL,
      EXIT_EPILOG};
  int code = cli_parse(&cmd, argc - 1, argv + 1, NULL, NULL);
  if (code >= 0) return code;
  sur_config(&sa, &sc);
  etsim_synth_surrogate_config_t pc = sc;
  pc.epochs = (int)pre_ep;
  pc.lr = (float)pre_lr;
  const char **trainp = train.v, **augp = aug.v, **testp = test.v, **prep = pre.v;
  int nt = (int)train.n, na = (int)aug.n, ntest = (int)test.n, np = (int)pre.n;
  if (!nt || !ntest)
    code = cli_usage_error("synth surrogate needs --train and --test (see --help)");
  else if (ntest > MAXT) code = cli_usage_error("at most %d --test arguments", MAXT);
  else if (!sc.epochs && !np && !initp)
    code = cli_usage_error("--epochs 0 needs --pretrain or --init");
  else if (np && initp) code = cli_usage_error("--pretrain and --init exclude each other");
  else if (pvalp && !np) code = cli_usage_error("--pretrain-val needs --pretrain");
  if (code >= 0) {
    cli_lists_free(opts);
    return code;
  }
  etsim_error_t err = {0};
  etsim_synth_trace_opts_t to;
  etsim_synth_trace_opts_default(&to);
  etsim_synth_data_t TR, AU, VA, TE[MAXT], PT, PV, one;
  etsim_synth_data_t *own[] = {&TR, &AU, &VA, &PT, &PV};
  for (int k = 0; k < 5; k++) etsim_synth_data_init(own[k]);
  for (int k = 0; k < MAXT; k++) etsim_synth_data_init(&TE[k]);
  double *wts = NULL, *pred = NULL, *y = NULL;
  etsim_synth_surrogate_t *s = NULL;
  int rc = 0;
  for (int k = 0; k < nt + na + np && !rc; k++) {
    etsim_synth_data_init(&one);
    rc = load_path(&one,
                   k < nt        ? trainp[k]
                   : k < nt + na ? augp[k - nt]
                                 : prep[k - nt - na],
                   &to, &err);
    if (!rc) rc = append_all(k < nt ? &TR : k < nt + na ? &AU : &PT, &one, &err);
    etsim_synth_data_free(&one);
  }
  if (!rc && valp) rc = load_path(&VA, valp, &to, &err);
  if (!rc && pvalp) rc = load_path(&PV, pvalp, &to, &err);
  for (int k = 0; k < ntest && !rc; k++) rc = load_path(&TE[k], testp[k], &to, &err);
  size_t n_real = TR.n_graphs;
  if (!rc && AU.n_graphs) rc = append_all(&TR, &AU, &err);
  if (!rc) {
    etsim_synth_data_t *sets[4 + MAXT] = {&TR, valp ? &VA : NULL, np ? &PT : NULL,
                                          pvalp ? &PV : NULL};
    const char *names[4 + MAXT] = {NULL, valp, "the --pretrain data", pvalp};
    for (int k = 0; k < ntest; k++) sets[4 + k] = &TE[k], names[4 + k] = testp[k];
    rc = one_layout(sets, names, 4 + ntest, &err);
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
    if (!rc) rc = fit_surrogate(&TR, wts, &VA, &PT, &PV, initp, &sc, &pc, &ctx, &s, &err);
  }
  if (!rc && savep) rc = etsim_synth_surrogate_save(s, savep, &err);
  if (!rc)
    rc = score_tests(s, TE, testp, ntest, predp, json, n_real, TR.n_graphs - n_real, pred, y, &err);
  etsim_synth_surrogate_free(s);
  for (int k = 0; k < 5; k++) etsim_synth_data_free(own[k]);
  for (int k = 0; k < MAXT; k++) etsim_synth_data_free(&TE[k]);
  free(wts);
  free(pred);
  free(y);
  cli_lists_free(opts); /* the file names in testp were used to the end */
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
