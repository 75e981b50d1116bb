/*
 * main.c — `etsim`: dispatch to subcommands, shared CLI helpers.
 */
#include "cli/cli.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int cli_quiet;

typedef struct {
  const char *name;
  int (*fn)(int, char **);
  const char *summary;
} command_t;

static const command_t commands[] = {
#define ETSIM_CMD(name, fn, summary) {name, fn, summary},
#include "cli/commands.def"
#undef ETSIM_CMD
};

static void print_help(FILE *fp) {
  fprintf(fp,
          "etsim %s - co-design AI training systems with execution traces\n"
          "\n"
          "usage: etsim <command> [options] INPUT...\n"
          "       etsim <command> --help\n"
          "\n"
          "commands:\n",
          ETSIM_VERSION);
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(fp, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(fp,
          "\n"
          "A trace set is named by its prefix (run/llm opens run/llm.0.et,\n"
          "run/llm.1.et, ... or run/llm.manifest.json) or by one file.\n"
          "\n"
          "exit status:\n"
          "  0  success\n"
          "  1  the command ran and found problems (e.g. validate)\n"
          "  2  bad usage, or unreadable or invalid input\n"
          "  3  internal error\n");
}

static void warn_to_stderr(void *user, const char *line) {
  (void)user;
  cli_progress_print("etsim: warning: %s\n", line);
}

/* A report lost on the way to stdout (a full disk, a closed pipe, `>
 * /dev/full`) is a failure, not a success: stdio only says so at the flush,
 * after the command has returned. */
static int close_stdout(int code) {
  int bad = fflush(stdout) != 0 || ferror(stdout);
  int e = errno;
  if (fclose(stdout) != 0 && !bad) {
    bad = 1;
    e = errno;
  }
  /* A failed command said why already; "ran and found problems" (validate,
   * diff) with its report lost is a write error like any other. */
  if (!bad || (code != ETSIM_EXIT_OK && code != ETSIM_EXIT_PROBLEMS)) return code;
  fprintf(stderr, "etsim: standard output: write error: %s\n", strerror(e ? e : EIO));
  return ETSIM_EXIT_USAGE;
}

/* OpenBLAS's threaded build starts its worker threads when the library is
 * loaded, and each polls with sched_yield for about 0.1 s of CPU before it
 * sleeps: time every command paid (3 % of a 128-host netsim run), though
 * none uses BLAS threads (synth and replay ask for one).  Stopped before the
 * command runs; a later BLAS call works in the caller's thread.  A weak
 * reference, since other BLAS builds have no such function. */
extern int blas_thread_shutdown_(void) __attribute__((weak));

/* Ctrl-C, kill, a closed terminal or pipe: remove this run's temporary
 * outputs, then die of the same signal. */
static void on_signal(int sig) {
  etsim_tmp_remove_all();
  signal(sig, SIG_DFL);
  raise(sig);
}

int main(int argc, char **argv) {
  etsim_set_warn_handler(warn_to_stderr, NULL);
  etsim_inputs_guard(1); /* no output of this run replaces one of its inputs */
  static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
  for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(sigs[i], &sa, NULL);
  }
  if (blas_thread_shutdown_) blas_thread_shutdown_();
  if (argc < 2) {
    print_help(stderr);
    return ETSIM_EXIT_USAGE;
  }
  if (cli_is_help(argv[1])) {
    print_help(stdout);
    return close_stdout(ETSIM_EXIT_OK);
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("etsim %s\n", ETSIM_VERSION);
    return close_stdout(ETSIM_EXIT_OK);
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (strcmp(argv[1], commands[i].name) == 0)
      return close_stdout(commands[i].fn(argc - 1, argv + 1));
  fprintf(stderr, "etsim: unknown command '%s' (see 'etsim --help')\n", argv[1]);
  return ETSIM_EXIT_USAGE;
}

/* ------------------------------------------------------------ helpers */

int cli_fail(const etsim_error_t *err) {
  fprintf(stderr, "etsim: %s\n",
          err && err->msg[0] ? err->msg : etsim_strerror(err ? err->code : 0));
  if (err && (err->code == ETSIM_ENOMEM || err->code == ETSIM_EINTERNAL))
    return ETSIM_EXIT_INTERNAL;
  return ETSIM_EXIT_USAGE;
}

int cli_usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("etsim: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return ETSIM_EXIT_USAGE;
}

int cli_is_help(const char *arg) { return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0; }

int cli_opt(int argc, char **argv, int *i, const char *name, const char **val) {
  const char *a = argv[*i];
  size_t n = strlen(name);
  if (strncmp(a, name, n) != 0) return 0;
  if (a[n] == '=') {
    *val = a + n + 1;
    return 1;
  }
  if (a[n] != '\0') return 0;
  if (*i + 1 >= argc) {
    cli_usage_error("option %s needs a value", name);
    return -1;
  }
  *val = argv[++*i];
  return 1;
}

/* Integers are decimal only: "010" is ten, not eight, and "0x10" is refused
 * (strtoull's base 0 read them as octal and hex); no sign or space before. */
int cli_parse_u64(const char *s, const char *what, uint64_t *out) {
  char *end;
  errno = 0;
  if (*s < '0' || *s > '9') goto bad;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end) goto bad;
  *out = v;
  return 0;
bad:
  cli_usage_error("%s: '%s' is not a non-negative decimal integer", what, s);
  return -1;
}

int cli_parse_i64(const char *s, const char *what, int64_t *out) {
  char *end;
  errno = 0;
  const char *d = *s == '-' ? s + 1 : s;
  long long v = *d >= '0' && *d <= '9' ? strtoll(s, &end, 10) : 0;
  if (*d < '0' || *d > '9' || errno || *end) {
    cli_usage_error("%s: '%s' is not a decimal integer", what, s);
    return -1;
  }
  *out = v;
  return 0;
}

int cli_parse_double(const char *s, const char *what, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || *end || end == s || !isfinite(v)) {
    cli_usage_error("%s: '%s' is not a finite number", what, s);
    return -1;
  }
  *out = v;
  return 0;
}
