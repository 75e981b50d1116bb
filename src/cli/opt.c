/*
 * opt.c — one table-driven option parser for every subcommand.
 *
 * A command describes its options once, in a cli_opt_t table: name and
 * alias, kind and destination, range, help text.  cli_parse reads argv
 * against the table (checking numbers, ranges, choices and required
 * options, with errors that name the option) and cli_help prints the help
 * from the same table, so the usage text cannot drift from what is parsed.
 * (etsim's own commands.def does the same for the command list.)
 */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

static int takes_value(const cli_opt_t *o) { return o->kind != CLI_FLAG; }

/* "--name=value" or "--name value" (and the alias likewise); 1 on a match
 * with *val set (NULL for flags), 0 no match. */
static int match(const cli_opt_t *o, const char *a, const char **val) {
  const char *names[2] = {o->name, o->alias};
  for (int k = 0; k < 2; k++) {
    const char *n = names[k];
    if (!n) continue;
    size_t len = strlen(n);
    if (strncmp(a, n, len) != 0) continue;
    if (a[len] == '\0') {
      *val = NULL;
      return 1;
    }
    if (a[len] == '=' && takes_value(o)) {
      *val = a + len + 1;
      return 1;
    }
  }
  return 0;
}

/* The index of `v` in the '|'-separated list, or -1. */
static int choice_index(const char *list, const char *v) {
  size_t vl = strlen(v);
  int idx = 0;
  for (const char *p = list;; idx++) {
    const char *bar = strchr(p, '|');
    size_t n = bar ? (size_t)(bar - p) : strlen(p);
    if (n == vl && strncmp(p, v, n) == 0) return idx;
    if (!bar) return -1;
    p = bar + 1;
  }
}

static int in_range(const cli_opt_t *o, double x) {
  if (o->min == 0 && o->max == 0) return 1;
  return x >= o->min && x <= o->max;
}

static int range_error(const cli_opt_t *o, const char *v) {
  /* Integers in full ("1 to 1048576", not "1 to 1.04858e+06"). */
  if (o->kind == CLI_UINT || o->kind == CLI_INT)
    return cli_usage_error("%s: '%s' is outside %.0f to %.0f", o->name, v, o->min, o->max);
  return cli_usage_error("%s: '%s' is outside %g to %g", o->name, v, o->min, o->max);
}

/* Store one value (argv[at]); returns 0 or an exit code after printing the
 * error. */
static int store(const cli_opt_t *o, const char *v, int at) {
  switch (o->kind) {
    case CLI_FLAG:
      *(int *)o->out = 1;
      return 0;
    case CLI_STR:
      *(const char **)o->out = v;
      return 0;
    case CLI_LIST: {
      cli_list_t *l = o->out;
      l->at[l->n] = at;
      l->v[l->n++] = v;
      return 0;
    }
    case CLI_UINT: {
      uint64_t x;
      if (cli_parse_u64(v, o->name, &x)) return ETSIM_EXIT_USAGE;
      if (!in_range(o, (double)x)) return range_error(o, v);
      *(uint64_t *)o->out = x;
      return 0;
    }
    case CLI_INT: {
      int64_t x;
      if (cli_parse_i64(v, o->name, &x)) return ETSIM_EXIT_USAGE;
      if (!in_range(o, (double)x)) return range_error(o, v);
      *(int64_t *)o->out = x;
      return 0;
    }
    case CLI_REAL: {
      double x;
      if (cli_parse_double(v, o->name, &x)) return ETSIM_EXIT_USAGE;
      if (!in_range(o, x)) return range_error(o, v);
      *(double *)o->out = x;
      return 0;
    }
    case CLI_CHOICE: {
      int k = choice_index(o->choices, v);
      if (k < 0) {
        /* "a|b|c" printed as "a, b or c" */
        char buf[512];
        size_t n = 0;
        for (const char *p = o->choices; *p && n + 8 < sizeof buf; p++) {
          if (*p != '|') {
            buf[n++] = *p;
            continue;
          }
          const char *sep = strchr(p + 1, '|') ? ", " : " or ";
          memcpy(buf + n, sep, strlen(sep));
          n += strlen(sep);
        }
        buf[n] = '\0';
        return cli_usage_error("%s: '%s' is not %s", o->name, v, buf);
      }
      *(int *)o->out = k;
      return 0;
    }
  }
  return cli_usage_error("%s: internal error (option kind)", o->name);
}

void cli_lists_free(const cli_opt_t *opts) {
  for (; opts->name; opts++)
    if (opts->kind == CLI_LIST) {
      cli_list_t *l = opts->out;
      free(l->v);
      free(l->at);
      *l = (cli_list_t){0};
    }
}

static int parse(const cli_cmd_t *cmd, int argc, char **argv, const char **args, int *n_args) {
  int n = 0;
  size_t n_opts = 0;
  while (cmd->opts[n_opts].name) n_opts++;
  for (size_t k = 0; k < n_opts; k++)
    if (cmd->opts[k].kind == CLI_LIST) *(cli_list_t *)cmd->opts[k].out = (cli_list_t){0};
  /* Lists can hold every argument at most. */
  for (size_t k = 0; k < n_opts; k++)
    if (cmd->opts[k].kind == CLI_LIST) {
      cli_list_t *l = cmd->opts[k].out;
      l->v = calloc((size_t)argc + 1, sizeof *l->v);
      l->at = calloc((size_t)argc + 1, sizeof *l->at);
      if (!l->v || !l->at) return cli_usage_error("out of memory");
    }
  int only_args = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!only_args && cli_is_help(a)) {
      cli_help(cmd, stdout);
      return ETSIM_EXIT_OK;
    }
    if (!only_args && strcmp(a, "--") == 0) {
      only_args = 1;
      continue;
    }
    if (!only_args && a[0] == '-' && a[1]) {
      const cli_opt_t *o = NULL;
      const char *v = NULL;
      for (size_t k = 0; k < n_opts && !o; k++)
        if (match(&cmd->opts[k], a, &v)) o = &cmd->opts[k];
      if (!o)
        return cli_usage_error("%s: unknown option '%s' (see etsim %s --help)", cmd->name, a,
                               cmd->name);
      if (takes_value(o) && !v) {
        if (i + 1 >= argc) return cli_usage_error("%s needs a value (%s)", o->name, o->metavar);
        v = argv[++i];
      }
      int rc = store(o, v, i);
      if (rc) return rc;
      if (o->given) *o->given = 1;
      continue;
    }
    if (n >= cmd->max_args) {
      if (cmd->max_args == 0)
        return cli_usage_error("%s: unexpected argument '%s' (see etsim %s --help)", cmd->name, a,
                               cmd->name);
      return cli_usage_error("%s: one %s only ('%s' is another)", cmd->name,
                             cmd->arg_name ? cmd->arg_name : "input", a);
    }
    args[n++] = a;
  }
  for (size_t k = 0; k < n_opts; k++) {
    const cli_opt_t *o = &cmd->opts[k];
    if (!(o->flags & CLI_REQUIRED)) continue;
    int have = o->kind == CLI_STR ? *(const char **)o->out != NULL : o->given && *o->given;
    if (!have)
      return cli_usage_error("%s: %s %s is required (see etsim %s --help)", cmd->name, o->name,
                             o->metavar ? o->metavar : "", cmd->name);
  }
  if (n < cmd->min_args)
    return cli_usage_error("%s: %s is missing (see etsim %s --help)", cmd->name,
                           cmd->arg_name ? cmd->arg_name : "an input", cmd->name);
  if (n_args) *n_args = n;
  return -1;
}

int cli_parse(const cli_cmd_t *cmd, int argc, char **argv, const char **args, int *n_args) {
  int code = parse(cmd, argc, argv, args, n_args);
  if (code >= 0) cli_lists_free(cmd->opts); /* the caller returns at once */
  return code;
}

/* Help text column where descriptions start. */
#define HELP_COL 24

void cli_help(const cli_cmd_t *cmd, FILE *f) {
  fprintf(f, "usage: etsim %s %s\n", cmd->name, cmd->synopsis);
  if (cmd->about) fprintf(f, "\n%s\n", cmd->about);
  int any = 0;
  for (const cli_opt_t *o = cmd->opts; o->name && !any; o++) any = o->help != NULL;
  if (any) fprintf(f, "\noptions:\n");
  cli_help_opts(cmd->opts, f);
  if (cmd->epilog) fprintf(f, "\n%s\n", cmd->epilog);
}

void cli_help_opts(const cli_opt_t *opts, FILE *f) {
  for (const cli_opt_t *o = opts; o->name; o++) {
    if (!o->help) continue;
    char left[160];
    int n = snprintf(left, sizeof left, "  %s%s%s%s%s", o->name, o->alias ? ", " : "",
                     o->alias ? o->alias : "", o->metavar ? " " : "", o->metavar ? o->metavar : "");
    /* The description, one line at a time, under the column. */
    const char *h = o->help;
    if (n + 2 > HELP_COL) {
      fprintf(f, "%s\n%*s", left, HELP_COL, "");
    } else {
      fprintf(f, "%-*s", HELP_COL, left);
    }
    for (;;) {
      const char *nl = strchr(h, '\n');
      if (!nl) {
        fprintf(f, "%s\n", h);
        break;
      }
      fprintf(f, "%.*s\n%*s", (int)(nl - h), h, HELP_COL, "");
      h = nl + 1;
    }
  }
}
