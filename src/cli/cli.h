/*
 * cli.h — what the etsim subcommands share: exit codes, error printing,
 * option parsing helpers.  The CLI is thin: it parses flags, calls the
 * library and prints; all real work is in the library.
 */
#ifndef ETSIM_CLI_H
#define ETSIM_CLI_H

#include "etsim/base.h"

#include <stdio.h>

/* Exit status, as documented in `etsim --help`. */
enum {
  ETSIM_EXIT_OK = 0,       /* success */
  ETSIM_EXIT_PROBLEMS = 1, /* ran and found problems (validate) */
  ETSIM_EXIT_USAGE = 2,    /* bad usage or unreadable/invalid input */
  ETSIM_EXIT_INTERNAL = 3  /* internal error */
};

#define ETSIM_CMD(name, fn, summary) int fn(int argc, char **argv);
#include "cli/commands.def"
#undef ETSIM_CMD

/* Print "etsim: <msg>" to stderr and return the exit code for err->code:
 * ENOMEM/INTERNAL give 3, everything else 2. */
int cli_fail(const etsim_error_t *err);
/* printf-style "etsim: ..." on stderr; returns ETSIM_EXIT_USAGE. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* True for "-h" / "--help". */
int cli_is_help(const char *arg);
/* If arg is "--name=value" or "--name" followed by a value, set *val and
 * advance *i past what was used; returns 1 on match, 0 otherwise, -1 when
 * the value is missing (an error was printed). */
int cli_opt(int argc, char **argv, int *i, const char *name, const char **val);
/* Parse "[FLAG...] INPUT" for commands that take one trace or rank set.
 * `flags` is a NULL-terminated list of boolean options ("--json"); given
 * ones set set[i] = 1.  Returns 1 with *input set to go on, or 0 with
 * *exit_code set (0 after --help, 2 after a usage error, already printed). */
int cli_one_input(int argc, char **argv, const char *usage, const char *const *flags, int *set,
                  const char **input, int *exit_code);
/* Strict integer parsing: returns 0 or prints an error naming `what`. */
int cli_parse_u64(const char *s, const char *what, uint64_t *out);
int cli_parse_i64(const char *s, const char *what, int64_t *out);
int cli_parse_double(const char *s, const char *what, double *out);
/* Whether progress may be shown (stderr is a terminal and no --quiet). */
extern int cli_quiet;

#endif
