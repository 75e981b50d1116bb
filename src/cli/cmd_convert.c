/*
 * cmd_convert.c — `etsim convert --from FORMAT`: other trace formats to
 * Chakra ET.  Each source format is one entry in `formats`: its name, a
 * line for --help, and the function that does the work (NULL while the
 * format is not implemented).  The common options (--from, -o, --help) are
 * parsed here; every argument this file does not know is handed to the
 * format's function, which parses its own options.
 */
#include "cli/cli.h"
#include "etsim/etjson.h"
#include "etsim/convtext.h"

#include <stdio.h>
#include <string.h>

/* What every format gets: the input, the output and its own options'
 * values, which the format's table parsed. */
typedef struct {
  const char *input;
  const char *output; /* -o: output path (or prefix, for per-rank formats) */
} convert_args_t;

/* ------------------------------------------------------------- json */

static int json_gzip, json_quiet;
static const cli_opt_t json_opts[] = {
    CLI_O_FLAG("--gzip", NULL, &json_gzip,
               "write a gzip-compressed .et (also implied by a .gz output name)"),
    CLI_O_FLAG("--quiet", "-q", &json_quiet, "no progress line"), CLI_O_END};

static int convert_json(const convert_args_t *a) {
  etsim_error_t err = {0};
  cli_ticker_t tk;
  cli_ticker_start(&tk, "convert", a->input, json_quiet);
  int rc =
      etsim_etjson_convert(a->input, a->output, json_gzip ? ETSIM_ET_WRITE_GZIP : 0, NULL, &err);
  cli_ticker_stop(&tk);
  return rc ? cli_fail(&err) : ETSIM_EXIT_OK;
}

/* ------------------------------------------------------------- text */

static uint64_t text_npus, text_passes = 1;
static int text_unit, text_format, text_quiet;
static const char *text_groups;
static const cli_opt_t text_opts[] = {
    {.name = "--npus",
     .kind = CLI_UINT,
     .out = &text_npus,
     .metavar = "N",
     .help = "ranks to write (required); -o names the set's prefix",
     .flags = CLI_REQUIRED,
     .min = 1,
     .max = 16777216,
     .given = NULL},
    CLI_O_UINT("--passes", NULL, &text_passes, "P", 1, 100000000,
               "training iterations (default 1)"),
    CLI_O_CHOICE("--time-unit", NULL, &text_unit, "U", "us|ns|cycles",
                 "us (default, as Chakra's converter) or ns/cycles\n(ASTRA-sim 1.0's unit); see "
                 "docs/gen.md"),
    CLI_O_CHOICE("--out-format", NULL, &text_format, "F", "manifest|et",
                 "manifest (default: ranks share files) or et"),
    CLI_O_STR("--comm-group", NULL, &text_groups, "PATH",
              "HYBRID_TRANSFORMER groups (default PREFIX.comm_group.json)"),
    CLI_O_FLAG("--quiet", "-q", &text_quiet, "print nothing on success"),
    CLI_O_END};
static int text_npus_given;

static int convert_text(const convert_args_t *a) {
  etsim_conv_text_opts_t o = {0};
  o.npus = (size_t)text_npus;
  o.passes = (size_t)text_passes;
  o.time_unit = text_unit == 0 ? ETSIM_TEXT_TIME_US : ETSIM_TEXT_TIME_NS;
  o.format = text_format == 0 ? ETSIM_ET_OUT_MANIFEST : ETSIM_ET_OUT_RANK_FILES;
  o.comm_group_path = text_groups;
  o.prefix = a->output;
  etsim_error_t err = {0};
  etsim_et_set_report_t rep;
  cli_ticker_t tk;
  cli_ticker_start(&tk, "convert", a->input, text_quiet);
  int rc = etsim_conv_text(a->input, &o, &rep, &err);
  cli_ticker_stop(&tk);
  if (rc) return cli_fail(&err);
  if (!text_quiet)
    printf(
        "%s: %zu rank(s) in %zu file(s)%s, %llu node(s) written (%llu over "
        "all ranks)\n",
        a->output, rep.n_ranks, rep.n_files, o.format == ETSIM_ET_OUT_MANIFEST ? " + manifest" : "",
        (unsigned long long)rep.n_nodes, (unsigned long long)rep.rank_nodes);
  return ETSIM_EXIT_OK;
}

/* ----------------------------------------------------------- pytorch */

/* In convert_pytorch.c: its option table and the conversion. */
extern const cli_opt_t etsim_cli_pytorch_opts[];
int etsim_cli_convert_pytorch(const char *input, const char *output);
static int convert_pytorch(const convert_args_t *a) {
  return etsim_cli_convert_pytorch(a->input, a->output);
}

/* ----------------------------------------------------------- formats */

typedef struct {
  const char *name;
  const char *summary;
  int (*run)(const convert_args_t *a);
  const cli_opt_t *opts; /* the format's own options */
} convert_format_t;

static const convert_format_t formats[] = {
    {"json", "the JSON form written by 'etsim jsonize' or chakra_jsonizer", convert_json,
     json_opts},
    {"text", "ASTRA-sim 1.0 text workload (Chakra's text converter)", convert_text, text_opts},
    {"pytorch", "PyTorch execution trace (+ Kineto), as chakra_converter", convert_pytorch,
     etsim_cli_pytorch_opts},
};
enum { N_FORMATS = sizeof formats / sizeof formats[0], MAX_OPTS = 16 };

static const char *from, *output;
static const cli_opt_t common_opts[] = {
    CLI_O_STR("--from", NULL, &from, "FORMAT", "the input format (required)"),
    CLI_O_STR("--output", "-o", &output, "PATH", "the .et to write (required; '-' is stdout)"),
    CLI_O_END};

static void usage(FILE *fp) {
  fprintf(fp,
          "usage: etsim convert --from FORMAT -o PATH [options] INPUT\n"
          "\n"
          "Convert INPUT to a Chakra ET file.\n"
          "\n"
          "formats:\n");
  for (int i = 0; i < N_FORMATS; i++)
    fprintf(fp, "  %-8s %s\n", formats[i].name, formats[i].summary);
  fprintf(fp, "\noptions:\n");
  cli_help_opts(common_opts, fp);
  for (int i = 0; i < N_FORMATS; i++) {
    fprintf(fp, "with --from %s:\n", formats[i].name);
    cli_help_opts(formats[i].opts, fp);
  }
}

int etsim_cmd_convert(int argc, char **argv) {
  /* The format decides which options exist: find --from first, then parse
   * everything against the common options plus that format's. */
  for (int i = 1; i < argc; i++) {
    if (cli_is_help(argv[i])) {
      usage(stdout);
      return ETSIM_EXIT_OK;
    }
    if (strcmp(argv[i], "--from") == 0 && i + 1 < argc) from = argv[i + 1];
    else if (strncmp(argv[i], "--from=", 7) == 0) from = argv[i] + 7;
  }
  if (!from)
    return cli_usage_error(
        "convert: --from FORMAT is required (json, text or pytorch; see 'etsim convert --help')");
  const convert_format_t *f = NULL;
  for (int i = 0; i < N_FORMATS; i++)
    if (strcmp(formats[i].name, from) == 0) f = &formats[i];
  if (!f) return cli_usage_error("convert: unknown format '%s' (see 'etsim convert --help')", from);
  cli_opt_t opts[MAX_OPTS];
  size_t n = 0;
  for (const cli_opt_t *o = common_opts; o->name; o++) opts[n++] = *o;
  for (const cli_opt_t *o = f->opts; o->name && n + 1 < MAX_OPTS; o++) {
    opts[n] = *o;
    if (f->run == convert_text && o->out == &text_npus) opts[n].given = &text_npus_given;
    n++;
  }
  opts[n] = (cli_opt_t)CLI_O_END;
  char name[32];
  snprintf(name, sizeof name, "convert --from %s", f->name);
  const cli_cmd_t cmd = {name, "-o PATH [options] INPUT", NULL, opts, 1, 1, "INPUT", NULL};
  const char *input;
  int code = cli_parse(&cmd, argc, argv, &input, NULL);
  if (code >= 0) return code;
  if (!output) return cli_usage_error("convert: -o/--output PATH is required");
  convert_args_t a = {input, output};
  return f->run(&a);
}
