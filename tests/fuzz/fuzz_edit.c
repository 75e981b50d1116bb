/*
 * fuzz_edit.c — libFuzzer target for what `etsim edit` parses: the first
 * byte picks an operation's argument (predicates, scale factors, nodes to
 * insert, rank lists, ranges; the second byte names the operation), a
 * --profile CSV, a --remap-ranks file or the input's communicator-group
 * JSON; the rest is the text.  An accepted argument or file is then run on
 * a 4-rank LLM set (data x tensor parallel, with groups) made once, and
 * the set it writes must load and validate clean — the edit's promise.
 * Bad input must be refused with a message; never a crash, a leak or an
 * invalid output: an edit that exits 0 leaves a set that validate passes,
 * deadlock check included (an edit that would deadlock is refused).
 *
 * Retargets to more than 64 ranks (--npus, --dp) and --repeat past 64 are
 * not run: their cost grows with the size asked for, which is the user's
 * to choose, not the file's.
 */
#include "fuzz_util.h"

#include "etsim/edit.h"
#include "etsim/etcheck.h"
#include "etsim/gen.h"

static const char *base_set(void) {
  static char prefix[256];
  if (prefix[0]) return prefix;
  const char *p = fz_path(1, "llm");
  size_t len = strlen(p); /* a copy gcc can see fits (fz_path's slots are as long) */
  if (len >= sizeof prefix) __builtin_trap();
  memcpy(prefix, p, len + 1);
  etsim_gen_llm_opts_t o = {0};
  etsim_error_t err = {0};
  if (etsim_gen_llm_preset("llama3-8b", &o.model, &err)) __builtin_trap();
  o.model.layers = 1;
  o.dp = 2;
  o.tp = 2;
  o.pp = 1;
  o.microbatches = 1;
  o.prefix = prefix;
  if (etsim_gen_llm(&o, NULL, &err)) {
    fprintf(stderr, "fuzz_edit: gen llm: %s\n", err.msg);
    __builtin_trap();
  }
  return prefix;
}

/* Any problem validate finds. */
static void on_finding(void *user, int severity, const char *line) {
  if (severity == ETSIM_CHECK_PROBLEM) {
    fprintf(stderr, "fuzz_edit: %s\n", line);
    ++*(long *)user;
  }
}

/* The edit's output loads and validates with no problem. */
static void check_output(const char *out) {
  etsim_et_set_t *s;
  etsim_error_t err = {0};
  if (etsim_et_set_load(&s, out, 0, &err)) {
    fprintf(stderr, "fuzz_edit: the output does not load: %s\n", err.msg);
    __builtin_trap();
  }
  long probs = 0;
  if (etsim_et_validate_set(s, on_finding, &probs) < 0) __builtin_trap();
  etsim_et_set_free(s);
  if (probs != 0) {
    fprintf(stderr, "fuzz_edit: the output has %ld problem(s)\n", probs);
    __builtin_trap();
  }
}

static int too_big(const char *op, const char *arg) {
  if (strcmp(op, "npus") != 0 && strcmp(op, "dp") != 0 && strcmp(op, "repeat") != 0) return 0;
  return strtod(arg, NULL) > 64 || strlen(arg) > 8;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2 || size > 16384) return 0;
  int which = data[0] % 4;
  size_t n_ops;
  const etsim_edit_op_info_t *ops = etsim_edit_ops(&n_ops);
  const char *in = base_set();
  etsim_edit_opts_t o = {.salt = "s"};
  const char *op = NULL, *arg = NULL;
  char *text = NULL;
  if (which == 0) {
    /* An operation's argument: a C string (the command line has no NULs). */
    const etsim_edit_op_info_t *info = &ops[data[1] % n_ops];
    op = info->name;
    text = malloc(size - 1);
    if (!text) return 0;
    memcpy(text, data + 2, size - 2);
    text[size - 2] = 0;
    if (strlen(text) != size - 2 || too_big(op, text) || strcmp(op, "concat") == 0 ||
        strcmp(op, "beside") == 0 || strcmp(op, "profile") == 0) {
      free(text);
      return 0; /* files: the other modes */
    }
    arg = info->metavar ? text : NULL;
  } else {
    const char *p = fz_write(0, which == 3 ? "g.json" : "f.txt", data + 1, size - 1);
    if (!p) return 0;
    if (which == 1) op = "profile", arg = p;
    else if (which == 2) op = "remap-ranks", arg = p;
    else op = "scale-time", arg = "1", o.comm_group = p;
  }
  etsim_error_t err = {0};
  etsim_edit_t *e = NULL;
  int rc = etsim_edit_new(&e, &o, &err);
  if (rc) __builtin_trap();
  const char *out = fz_path(2, "out");
  if ((rc = etsim_edit_add(e, op, arg, &err)) == 0) {
    etsim_edit_report_t rep;
    if ((rc = etsim_edit_run(e, in, out, &rep, &err)) == 0) {
      etsim_edit_report_free(&rep);
      check_output(out);
    }
  }
  if (rc) fz_refused(rc, &err);
  etsim_edit_free(e);
  free(text);
  return 0;
}
