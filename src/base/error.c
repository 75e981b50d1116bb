/*
 * error.c — error codes, their names and messages, and the warning hook.
 */
#include "etsim/base.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *etsim_errname(int code) {
  switch (code) {
    case ETSIM_OK:
      return "ETSIM_OK";
#define ETSIM_ERR_NAME_(name, c, msg) \
  case c:                             \
    return "ETSIM_E" #name;
      ETSIM_ERRNO_MAP(ETSIM_ERR_NAME_)
#undef ETSIM_ERR_NAME_
    default:
      return "ETSIM_E?";
  }
}

const char *etsim_strerror(int code) {
  switch (code) {
    case ETSIM_OK:
      return "success";
#define ETSIM_ERR_MSG_(name, c, msg) \
  case c:                            \
    return msg;
      ETSIM_ERRNO_MAP(ETSIM_ERR_MSG_)
#undef ETSIM_ERR_MSG_
    default:
      return "unknown error";
  }
}

int etsim_error_set(etsim_error_t *err, int code, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->code = code;
  }
  return code;
}

void etsim_error_prefix(etsim_error_t *err, const char *fmt, ...) {
  if (!err) return;
  char head[512], old[sizeof err->msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(head, sizeof head, fmt, ap);
  va_end(ap);
  memcpy(old, err->msg, sizeof old);
  size_t hl = strlen(head);
  if (hl > sizeof err->msg - 3) hl = sizeof err->msg - 3;
  memcpy(err->msg, head, hl);
  memcpy(err->msg + hl, ": ", 2);
  size_t room = sizeof err->msg - hl - 3;
  size_t ol = strnlen(old, room);
  memcpy(err->msg + hl + 2, old, ol);
  err->msg[hl + 2 + ol] = '\0';
}

void etsim_error_clear(etsim_error_t *err) {
  if (err) {
    err->code = 0;
    err->msg[0] = '\0';
  }
}

static etsim_warn_fn warn_fn;
static void *warn_user;

void etsim_set_warn_handler(etsim_warn_fn fn, void *user) {
  warn_fn = fn;
  warn_user = user;
}

void etsim_warn(const char *fmt, ...) {
  if (!warn_fn) return;
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  warn_fn(warn_user, line);
}

/* The one place the library prints: an invariant broke, so etsim has a bug
 * and its state can no longer be trusted to produce a message. */
void etsim__assert_fail(const char *expr, const char *file, int line) {
  fprintf(stderr, "etsim: internal error: %s:%d: ETSIM_ASSERT(%s) failed\n", file, line, expr);
  abort();
}
