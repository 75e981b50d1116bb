/*
 * cli.h — what the etsim subcommands share: exit codes, error printing,
 * option parsing helpers.  The CLI is thin: it parses flags, calls the
 * library and prints; all real work is in the library.
 */
#ifndef ETSIM_CLI_H
#define ETSIM_CLI_H

#include "etsim/base.h"

#include <pthread.h>
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
/* Strict integer parsing: returns 0 or prints an error naming `what`. */
int cli_parse_u64(const char *s, const char *what, uint64_t *out);
int cli_parse_i64(const char *s, const char *what, int64_t *out);
int cli_parse_double(const char *s, const char *what, double *out);
/* A JSON string literal of s on stdout (quotes and escapes). */
void cli_json_str(const char *s);
/* ns as microseconds: whole ones as an integer, others with 3 decimals
 * (the ns); returns buf. */
const char *cli_us(uint64_t ns, char *buf, size_t cap);
/* ------------------------------------------------- table-driven options */

typedef enum {
  CLI_FLAG,  /* int *out = 1 when given */
  CLI_STR,   /* const char **out = the value */
  CLI_LIST,  /* cli_list_t *out: every value of a repeated option, in order */
  CLI_UINT,  /* uint64_t *out: decimal, within [min, max] unless both are 0 */
  CLI_INT,   /* int64_t *out: likewise */
  CLI_REAL,  /* double *out: finite, within [min, max] unless both are 0 */
  CLI_CHOICE /* int *out = the index of the value in `choices` ("a|b|c") */
} cli_kind_t;

enum { CLI_REQUIRED = 1 }; /* cli_opt_t.flags */

/* Every value of a repeated option; at[k] is the argv index of value k, so
 * a command whose options are steps applied in order (edit) can merge
 * several lists back into command-line order. */
typedef struct {
  const char **v;
  int *at;
  size_t n;
} cli_list_t;

/* One option.  `help` may hold '\n' for more lines; NULL keeps the option
 * out of the help (an accepted spelling such as ASTRA-sim's).  `given`, if
 * set, becomes 1 when the option appears (for defaults that must tell
 * "absent" from a value). */
typedef struct {
  const char *name;  /* "--backend" */
  const char *alias; /* a second spelling ("-o", "--workload-configuration") or NULL */
  cli_kind_t kind;
  void *out;
  const char *metavar; /* "F", "N"; NULL for flags */
  const char *help;
  unsigned flags; /* CLI_REQUIRED */
  double min, max;
  const char *choices; /* CLI_CHOICE */
  int *given;
} cli_opt_t;

/* The common shapes of a table entry (designated, so unnamed fields are 0);
 * write others (CLI_REQUIRED, .given on other kinds) out with designated
 * initializers too.
 * A range of 0, 0 means none.  The numeric forms take `dst` only of the
 * type their kind stores (a compile error otherwise: CLI_UINT writes 8
 * bytes through `out`, whatever it points to). */
#define CLI_O_FLAG(nm, al, dst, hlp) \
  { .name = nm, .alias = al, .kind = CLI_FLAG, .out = dst, .help = hlp }
#define CLI_O_STR(nm, al, dst, meta, hlp) \
  { .name = nm, .alias = al, .kind = CLI_STR, .out = dst, .metavar = meta, .help = hlp }
/* dst, if it points to `type` (a compile error otherwise). */
#define CLI_OUT_(type, dst) _Generic((dst), type * : (dst))
#define CLI_O_UINT(nm, al, dst, meta, lo, hi, hlp)                                              \
  {                                                                                             \
    .name = nm, .alias = al, .kind = CLI_UINT, .out = CLI_OUT_(uint64_t, dst), .metavar = meta, \
    .min = lo, .max = hi, .help = hlp                                                           \
  }
#define CLI_O_INT(nm, al, dst, meta, lo, hi, hlp)                                             \
  {                                                                                           \
    .name = nm, .alias = al, .kind = CLI_INT, .out = CLI_OUT_(int64_t, dst), .metavar = meta, \
    .min = lo, .max = hi, .help = hlp                                                         \
  }
#define CLI_O_REAL(nm, al, dst, meta, lo, hi, hlp)                                            \
  {                                                                                           \
    .name = nm, .alias = al, .kind = CLI_REAL, .out = CLI_OUT_(double, dst), .metavar = meta, \
    .min = lo, .max = hi, .help = hlp                                                         \
  }
#define CLI_O_CHOICE(nm, al, dst, meta, list, hlp)                                           \
  {                                                                                          \
    .name = nm, .alias = al, .kind = CLI_CHOICE, .out = CLI_OUT_(int, dst), .metavar = meta, \
    .choices = list, .help = hlp                                                             \
  }
/* CLI_O_UINT that also sets *g to 1 when the option is given (a default
 * that cannot be told from a typed value, such as --np's). */
#define CLI_O_UINT_GIVEN(nm, al, dst, meta, lo, hi, g, hlp)                                     \
  {                                                                                             \
    .name = nm, .alias = al, .kind = CLI_UINT, .out = CLI_OUT_(uint64_t, dst), .metavar = meta, \
    .min = lo, .max = hi, .given = g, .help = hlp                                               \
  }
/* --np N for the commands that start MPI programs (mpirun.c). */
#define CLI_O_NP(dst, g, hlp) CLI_O_UINT_GIVEN("--np", NULL, dst, "N", 1, 1048576, g, hlp)
#define CLI_O_END \
  { .name = NULL }

/* A command: its options (a table ending in an entry with name NULL), how
 * many positional arguments it takes, and the text around the options. */
typedef struct {
  const char *name;     /* "sim" (as typed after etsim) */
  const char *synopsis; /* after "usage: etsim <name> " */
  const char *about;    /* what it does, a paragraph */
  const cli_opt_t *opts;
  int min_args, max_args;
  const char *arg_name; /* "PREFIX": named in errors about arguments */
  const char *epilog;   /* e.g. the exit codes */
} cli_cmd_t;

/* Parse argv[1..] against cmd.  Positional arguments go to args (room for
 * cmd->max_args).  Returns -1 to go on, or the exit code to return: 0
 * after --help (printed to stdout), 2 after a usage error (printed). */
int cli_parse(const cli_cmd_t *cmd, int argc, char **argv, const char **args, int *n_args);
/* The arrays cli_parse made for the table's CLI_LIST options (after a -1
 * from cli_parse, once the values are used; it frees them itself when it
 * returns an exit code).  The values themselves stay in argv. */
void cli_lists_free(const cli_opt_t *opts);
/* The help, generated from the same table; cli_help_opts prints only the
 * option lines (for commands that group options, such as convert). */
void cli_help(const cli_cmd_t *cmd, FILE *f);
void cli_help_opts(const cli_opt_t *opts, FILE *f);

/* Whether progress may be shown (stderr is a terminal and no --quiet). */
extern int cli_quiet;

/* ------------------------------------------------------------ MPI launch */

/* How commands reach their MPI programs (mpirun.c): etsim does not link
 * MPI.  This program's path (/proc/self/exe); 0 or -1. */
int cli_self_path(char *out, size_t cap);
/* Whether mpirun started this process (Open MPI, PMIx or PMI). */
int cli_inside_mpirun(void);
/* The program $env_var names, else `name` next to this one, into out
 * (empty when there is no path to try); 1 if it is executable. */
int cli_sibling(const char *env_var, const char *name, char *out, size_t cap);
/* argv[0..argc) minus --np N / --np=N into dst; returns how many. */
size_t cli_args_minus_np(char **dst, int argc, char **argv);
/* exec `$ETSIM_MPIRUN (mpirun) -np NP --oversubscribe [--allow-run-as-root]
 * $ETSIM_MPIRUN_ARGS PROG argv[0..argc) minus --np [LAST]`; with announce,
 * says so on stderr first.  Returns only on failure (printed, naming cmd):
 * ETSIM_EXIT_INTERNAL. */
int cli_exec_mpirun(const char *cmd, uint64_t np, const char *prog, int argc, char **argv,
                    const char *last, int announce);

/* ------------------------------------------------------------- progress */

/* One progress line on stderr, rewritten in place (etsim_progress_t paces
 * and words it): drawn only when stderr is a terminal and neither the
 * command's --quiet nor cli_quiet is set, so nothing extra appears when
 * output is piped.  Cheap to call often: it returns at once until the next
 * redraw is due (4 a second by default).  Call cli_progress_clear before printing
 * anything else to stderr, cli_progress_end when the work is done. */
typedef struct cli_progress {
  etsim_progress_t p;
  int on, drawn;
  uint64_t wrote; /* bytes of progress drawn (the ticker leaves them out) */
} cli_progress_t;

/* Whether to show it: stderr is a terminal (or ETSIM_PROGRESS=1 forces it,
 * =0 forbids it) and no --quiet; *every_s gets the seconds between redraws
 * (ETSIM_PROGRESS_EVERY, default 0.25). */
int cli_progress_wanted(int quiet, double *every_s);
void cli_progress_begin(cli_progress_t *pg, const char *what, int quiet);
void cli_progress(cli_progress_t *pg, double frac, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void cli_progress_clear(cli_progress_t *pg);
void cli_progress_end(cli_progress_t *pg);
/* printf to stderr, first erasing a drawn progress line (warnings use it). */
void cli_progress_print(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* For one long library call with no progress hook (a conversion): a thread
 * redraws the line with the bytes the process has read and written so far
 * until cli_ticker_stop.  Only when the line is shown at all. */
typedef struct cli_ticker {
  cli_progress_t pg;
  const char *input;
  int stop, running;
  pthread_t thread;
} cli_ticker_t;
void cli_ticker_start(cli_ticker_t *t, const char *what, const char *input, int quiet);
void cli_ticker_stop(cli_ticker_t *t);

#endif
