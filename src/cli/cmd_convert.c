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
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *input;  /* the one input path */
  const char *output; /* -o: output path (or prefix, for per-rank formats) */
  int argc;           /* arguments left for the format to parse */
  char **argv;
} convert_args_t;

typedef struct {
  const char *name;
  const char *summary;
  int (*run)(const convert_args_t *a); /* NULL: not available yet */
  const char *options;                 /* format-specific option help, or NULL */
} convert_format_t;

/* ------------------------------------------------------------- json */

static int convert_json(const convert_args_t *a) {
  unsigned flags = 0;
  for (int i = 0; i < a->argc; i++) {
    if (strcmp(a->argv[i], "--gzip") == 0) flags |= ETSIM_ET_WRITE_GZIP;
    else
      return cli_usage_error(
          "convert --from json: unknown option '%s' (see "
          "'etsim convert --help')",
          a->argv[i]);
  }
  etsim_error_t err = {0};
  if (etsim_etjson_convert(a->input, a->output, flags, NULL, &err)) return cli_fail(&err);
  return ETSIM_EXIT_OK;
}

/* ------------------------------------------------------------- text */

static int convert_text(const convert_args_t *a) {
  etsim_conv_text_opts_t o = {0};
  uint64_t npus = 0, passes = 1;
  for (int i = 0; i < a->argc; i++) {
    const char *v;
    int m;
    if ((m = cli_opt(a->argc, a->argv, &i, "--npus", &v))) {
      if (m < 0 || cli_parse_u64(v, "--npus", &npus)) return ETSIM_EXIT_USAGE;
    } else if ((m = cli_opt(a->argc, a->argv, &i, "--passes", &v))) {
      if (m < 0 || cli_parse_u64(v, "--passes", &passes)) return ETSIM_EXIT_USAGE;
    } else if ((m = cli_opt(a->argc, a->argv, &i, "--time-unit", &v))) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      if (strcmp(v, "us") == 0) o.time_unit = ETSIM_TEXT_TIME_US;
      else if (strcmp(v, "ns") == 0 || strcmp(v, "cycles") == 0) o.time_unit = ETSIM_TEXT_TIME_NS;
      else return cli_usage_error("--time-unit: '%s' is not us, ns or cycles", v);
    } else if ((m = cli_opt(a->argc, a->argv, &i, "--out-format", &v))) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      if (strcmp(v, "manifest") == 0) o.format = ETSIM_GEN_OUT_MANIFEST;
      else if (strcmp(v, "et") == 0) o.format = ETSIM_GEN_OUT_ET;
      else return cli_usage_error("--out-format: '%s' is not manifest or et", v);
    } else if (strcmp(a->argv[i], "--quiet") == 0 || strcmp(a->argv[i], "-q") == 0) {
      cli_quiet = 1;
    } else if ((m = cli_opt(a->argc, a->argv, &i, "--comm-group", &v))) {
      if (m < 0) return ETSIM_EXIT_USAGE;
      o.comm_group_path = v;
    } else {
      return cli_usage_error(
          "convert --from text: unknown option '%s' (see "
          "'etsim convert --help')",
          a->argv[i]);
    }
  }
  if (npus == 0 || npus > (1u << 24))
    return cli_usage_error(
        "convert --from text: --npus N (1..16777216) is "
        "required");
  if (passes == 0 || passes > 100000000)
    return cli_usage_error("--passes: %llu is outside 1..100000000", (unsigned long long)passes);
  o.npus = (size_t)npus;
  o.passes = (size_t)passes;
  o.prefix = a->output;
  etsim_error_t err = {0};
  etsim_gen_report_t rep;
  if (etsim_conv_text(a->input, &o, &rep, &err)) return cli_fail(&err);
  if (!cli_quiet)
    printf(
        "%s: %zu rank(s) in %zu file(s)%s, %llu node(s) written (%llu over "
        "all ranks)\n",
        a->output, rep.n_ranks, rep.n_files,
        o.format == ETSIM_GEN_OUT_MANIFEST ? " + manifest" : "", (unsigned long long)rep.n_nodes,
        (unsigned long long)rep.rank_nodes);
  return ETSIM_EXIT_OK;
}

/* ----------------------------------------------------------- pytorch */

/* In convert_pytorch.c. */
int etsim_cli_convert_pytorch(const char *input, const char *output, int argc, char **argv);
static int convert_pytorch(const convert_args_t *a) {
  return etsim_cli_convert_pytorch(a->input, a->output, a->argc, a->argv);
}

/* ----------------------------------------------------------- formats */

/* Format options that take a value ("--npus 8"), so that the value is not
 * taken for the input. */
static const struct {
  const char *format, *opt;
} value_opts[] = {
    {"text", "--npus"},       {"text", "--passes"},     {"text", "--time-unit"},
    {"text", "--out-format"}, {"text", "--comm-group"}, {"pytorch", "--kineto"},
    {"pytorch", "--rank"},    {"pytorch", "--groups"},
};

static const convert_format_t formats[] = {
    {"json", "the JSON form written by 'etsim jsonize' or chakra_jsonizer", convert_json,
     "--gzip  write a gzip-compressed .et (also implied by a "
     ".gz output name)"},
    {"text", "ASTRA-sim 1.0 text workload (Chakra's text converter)", convert_text,
     "--npus N  ranks to write (required); -o names the set's prefix\n"
     "    --passes P          training iterations (default 1)\n"
     "    --time-unit U       us (default, as Chakra's converter) or ns/cycles\n"
     "                        (ASTRA-sim 1.0's unit); see docs/gen.md\n"
     "    --out-format F      manifest (default: ranks share files) or et\n"
     "    --comm-group PATH   HYBRID_TRANSFORMER groups (default\n"
     "                        PREFIX.comm_group.json)"},
    {"pytorch", "PyTorch execution trace (+ Kineto), as chakra_converter", convert_pytorch,
     "--kineto FILE  join a Kineto trace; --rank R; --groups "
     "PATH; --gzip; --quiet (see docs/pytorch.md)"},
};
enum { N_FORMATS = sizeof formats / sizeof formats[0] };

static void usage(FILE *fp) {
  fprintf(fp,
          "usage: etsim convert --from FORMAT -o PATH [options] INPUT\n"
          "\n"
          "Convert INPUT to a Chakra ET file.\n"
          "\n"
          "formats:\n");
  for (int i = 0; i < N_FORMATS; i++)
    fprintf(fp, "  %-8s %s%s\n", formats[i].name, formats[i].summary,
            formats[i].run ? "" : " (not available yet)");
  fprintf(fp,
          "\n"
          "options:\n"
          "  --from FORMAT      the input format (required)\n"
          "  -o, --output PATH  the .et to write (required; '-' is stdout)\n"
          "  -h, --help         show this help\n");
  for (int i = 0; i < N_FORMATS; i++)
    if (formats[i].options)
      fprintf(fp, "  with --from %s:\n    %s\n", formats[i].name, formats[i].options);
}

int etsim_cmd_convert(int argc, char **argv) {
  const char *from = NULL;
  convert_args_t a = {0};
  /* Unknown arguments are collected for the format (argv outlives us). */
  char **rest = argc > 1 ? calloc((size_t)argc, sizeof *rest) : NULL;
  int rc = ETSIM_EXIT_USAGE;
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i], *v;
    int m;
    if (cli_is_help(s)) {
      usage(stdout);
      rc = ETSIM_EXIT_OK;
      goto done;
    }
    if ((m = cli_opt(argc, argv, &i, "--from", &v))) {
      if (m < 0) goto done;
      from = v;
    } else if ((m = cli_opt(argc, argv, &i, "--output", &v)) ||
               (m = cli_opt(argc, argv, &i, "-o", &v))) {
      if (m < 0) goto done;
      a.output = v;
    } else if (s[0] == '-' && s[1]) {
      rest[a.argc++] = argv[i];
      /* A format option that takes a value keeps it ("--npus 8"). */
      const char *fmt = NULL;
      for (int k = 1; k + 1 < argc && !fmt; k++)
        if (strcmp(argv[k], "--from") == 0) fmt = argv[k + 1];
      for (size_t j = 0; fmt && j < sizeof value_opts / sizeof value_opts[0]; j++)
        if (strcmp(value_opts[j].format, fmt) == 0 && strcmp(value_opts[j].opt, s) == 0 &&
            i + 1 < argc) {
          rest[a.argc++] = argv[++i];
          break;
        }
    } else if (a.input) {
      rc = cli_usage_error("convert: one input only ('%s' and '%s')", a.input, s);
      goto done;
    } else {
      a.input = s;
    }
  }
  if (!from) {
    rc = cli_usage_error(
        "convert: --from FORMAT is required (json, text or "
        "pytorch; see 'etsim convert --help')");
    goto done;
  }
  const convert_format_t *f = NULL;
  for (int i = 0; i < N_FORMATS; i++)
    if (strcmp(formats[i].name, from) == 0) f = &formats[i];
  if (!f) {
    rc = cli_usage_error(
        "convert: unknown format '%s' (see 'etsim convert "
        "--help')",
        from);
    goto done;
  }
  if (!f->run) {
    rc = cli_usage_error("convert --from %s: not available yet", from);
    goto done;
  }
  if (!a.input || !a.output) {
    rc = cli_usage_error("convert: %s is required (see 'etsim convert --help')",
                         !a.input ? "an INPUT file" : "-o/--output PATH");
    goto done;
  }
  a.argv = rest;
  rc = f->run(&a);
done:
  free(rest);
  return rc;
}
