/*
 * cmd_report.c — `etsim report INPUT... -o report.html`: one HTML page with
 * plots from the JSON (and CSV) other etsim commands write.
 */
#include "cli/cli.h"

#include "etsim/report.h"

#include <stdlib.h>
#include <string.h>

int etsim_cmd_report(int argc, char **argv) {
  const char *out = NULL;
  etsim_report_html_opts_t o = {0};
  const cli_opt_t opts[] = {
      {.name = "--output",
       .alias = "-o",
       .kind = CLI_STR,
       .out = &out,
       .metavar = "F",
       .help = "the HTML file to write",
       .flags = CLI_REQUIRED},
      CLI_O_STR("--title", NULL, &o.title, "T", "the page's heading (default: etsim report)"),
      CLI_O_STR("--axes", NULL, &o.axes, "A,B",
                "sweep: the columns that are axes (default: guessed,\nand the page says how)"),
      CLI_O_STR("--metrics", NULL, &o.metrics, "M,N", "sweep: the columns that are results"),
      CLI_O_STR("--x", NULL, &o.sweep_x, "A", "sweep: the axis on the x axis of the line charts"),
      CLI_O_STR("--series", NULL, &o.sweep_series, "B", "sweep: the axis drawn as separate lines"),
      CLI_O_STR("--pareto", NULL, &o.pareto, "M,N",
                "sweep: the two results of the Pareto front; lower is\nbetter, 'M:max' for "
                "higher (default: the first two)"),
      CLI_O_END};
  const cli_cmd_t cmd = {
      "report",
      "[options] INPUT... -o report.html",
      "Write one self-contained HTML page with plots (inline SVG; nothing is\n"
      "loaded from the network when it is opened) from what other commands wrote:\n"
      "  sim --json F             iteration breakdown, finish per NPU, dimension\n"
      "                           utilisation, collectives over time\n"
      "  sim --timeline F         linked from the simulation's section\n"
      "  netsim --timeline F      port throughput, queue and PFC pauses over time,\n"
      "  (sim --net-timeline F)   FCT distributions of all network inputs together\n"
      "  netsim --json            summary table\n"
      "  sweep points.jsonl|.csv  a line chart per result, a Pareto front\n"
      "  shard -o plan.json, --json F   cost and memory per rank, candidates\n"
      "  replay --json, --csv F   measured against recorded times, error bands\n"
      "  synth eval --json        real against generated histograms\n"
      "The kind of each INPUT is recognised from its content.  LABEL=INPUT names\n"
      "an input on the page (e.g. dcqcn=run1/tl.json hpcc=run2/tl.json).",
      opts,
      1,
      argc,
      "INPUT",
      "exit: 0 ok, 2 bad usage or an input that cannot be read or understood"};
  const char **args = calloc((size_t)argc + 1, sizeof *args);
  if (!args) return cli_usage_error("out of memory");
  int n = 0;
  int code = cli_parse(&cmd, argc, argv, args, &n);
  if (code >= 0) {
    free(args);
    return code;
  }
  etsim_report_input_t *in = calloc((size_t)n, sizeof *in);
  char **labels = calloc((size_t)n, sizeof *labels);
  if (!in || !labels) {
    free(args);
    free(in);
    free(labels);
    return cli_usage_error("out of memory");
  }
  for (int i = 0; i < n; i++) {
    /* LABEL=PATH, unless the whole argument is an existing file name */
    const char *eq = strchr(args[i], '=');
    FILE *f = eq ? fopen(args[i], "rb") : NULL;
    if (f) fclose(f);
    if (eq && !f && eq != args[i] && !memchr(args[i], '/', (size_t)(eq - args[i]))) {
      labels[i] = strndup(args[i], (size_t)(eq - args[i]));
      in[i].label = labels[i];
      in[i].path = eq + 1;
    } else {
      in[i].path = args[i];
    }
  }
  etsim_error_t err = {0};
  int rc = etsim_report_html(out, in, (size_t)n, &o, &err);
  for (int i = 0; i < n; i++) free(labels[i]);
  free(labels);
  free(in);
  free(args);
  if (rc) return cli_fail(&err);
  return ETSIM_EXIT_OK;
}
