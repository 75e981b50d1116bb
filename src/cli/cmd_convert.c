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
  const char *options; /* format-specific option help, or NULL */
} convert_format_t;

/* ------------------------------------------------------------- json */

static int convert_json(const convert_args_t *a) {
  unsigned flags = 0;
  for (int i = 0; i < a->argc; i++) {
    if (strcmp(a->argv[i], "--gzip") == 0)
      flags |= ETSIM_ET_WRITE_GZIP;
    else
      return cli_usage_error("convert --from json: unknown option '%s' (see "
                             "'etsim convert --help')", a->argv[i]);
  }
  etsim_error_t err = {0};
  if (etsim_etjson_convert(a->input, a->output, flags, NULL, &err))
    return cli_fail(&err);
  return ETSIM_EXIT_OK;
}

/* ----------------------------------------------------------- pytorch */

/* In convert_pytorch.c. */
int etsim_cli_convert_pytorch(const char *input, const char *output, int argc,
                              char **argv);
static int convert_pytorch(const convert_args_t *a) {
  return etsim_cli_convert_pytorch(a->input, a->output, a->argc, a->argv);
}

/* Format options that take a separate value ("--kineto FILE"). */
static const char *const valued_opts[] = {"--kineto", "--rank", "--groups",
                                          NULL};

/* ----------------------------------------------------------- formats */

static const convert_format_t formats[] = {
    {"json", "the JSON form written by 'etsim jsonize' or chakra_jsonizer",
     convert_json, "--gzip  write a gzip-compressed .et (also implied by a "
                   ".gz output name)"},
    {"text", "ASTRA-sim 1.0 text workload (Chakra's text converter)", NULL,
     NULL},
    {"pytorch", "PyTorch execution trace (+ Kineto), as chakra_converter",
     convert_pytorch, "--kineto FILE  join a Kineto trace; --rank R; --groups "
                      "PATH; --gzip; --quiet (see docs/pytorch.md)"},
};
enum { N_FORMATS = sizeof formats / sizeof formats[0] };

static void usage(FILE *fp) {
  fprintf(fp, "usage: etsim convert --from FORMAT -o PATH [options] INPUT\n"
              "\n"
              "Convert INPUT to a Chakra ET file.\n"
              "\n"
              "formats:\n");
  for (int i = 0; i < N_FORMATS; i++)
    fprintf(fp, "  %-8s %s%s\n", formats[i].name, formats[i].summary,
            formats[i].run ? "" : " (not available yet)");
  fprintf(fp, "\n"
              "options:\n"
              "  --from FORMAT      the input format (required)\n"
              "  -o, --output PATH  the .et to write (required; '-' is stdout)\n"
              "  -h, --help         show this help\n");
  for (int i = 0; i < N_FORMATS; i++)
    if (formats[i].options)
      fprintf(fp, "  with --from %s:\n    %s\n", formats[i].name,
              formats[i].options);
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
      if (m < 0)
        goto done;
      from = v;
    } else if ((m = cli_opt(argc, argv, &i, "--output", &v)) ||
               (m = cli_opt(argc, argv, &i, "-o", &v))) {
      if (m < 0)
        goto done;
      a.output = v;
    } else if (s[0] == '-' && s[1]) {
      rest[a.argc++] = argv[i];
      for (int k = 0; valued_opts[k]; k++)
        if (strcmp(s, valued_opts[k]) == 0 && i + 1 < argc)
          rest[a.argc++] = argv[++i];
    } else if (a.input) {
      rc = cli_usage_error("convert: one input only ('%s' and '%s')", a.input,
                           s);
      goto done;
    } else {
      a.input = s;
    }
  }
  if (!from) {
    rc = cli_usage_error("convert: --from FORMAT is required (json, text or "
                         "pytorch; see 'etsim convert --help')");
    goto done;
  }
  const convert_format_t *f = NULL;
  for (int i = 0; i < N_FORMATS; i++)
    if (strcmp(formats[i].name, from) == 0)
      f = &formats[i];
  if (!f) {
    rc = cli_usage_error("convert: unknown format '%s' (see 'etsim convert "
                         "--help')", from);
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
