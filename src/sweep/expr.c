/* Expressions of a sweep spec: derived keys ("1024 / (gen.tp * gen.pp)")
 * and the point filter ("gen.tp * gen.pp <= 64 && backend != 'packet'").
 *
 * A recursive-descent evaluator over doubles, with strings for equality
 * tests.  Names are keys of the spec (letters, digits, '_', '.', inner '-'
 * between letters as in "system.active-chunks-per-dimension", and an [i]
 * suffix); a '-' followed by anything but a letter is subtraction, so
 * "gen.tp-1" is gen.tp minus one.
 */
#include "sweep/sweep_int.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *s, *p;
  sweep_lookup_fn lookup;
  void *user;
  const char *what;
  etsim_error_t *err;
  int depth;
} ex_t;

static int fail(ex_t *e, const char *msg) {
  return etsim_error_set(e->err, ETSIM_EINVAL, "%s: %s at offset %d of \"%s\"", e->what, msg,
                         (int)(e->p - e->s), e->s);
}

static void ws(ex_t *e) {
  while (*e->p == ' ' || *e->p == '\t' || *e->p == '\n' || *e->p == '\r') e->p++;
}

static int eat(ex_t *e, const char *tok) {
  ws(e);
  size_t n = strlen(tok);
  if (strncmp(e->p, tok, n)) return 0;
  e->p += n;
  return 1;
}

static int need_num(ex_t *e, const sweep_val_t *v) {
  if (v->is_str) return fail(e, "a number is needed, not a string");
  return 0;
}

static int expr_or(ex_t *e, sweep_val_t *out);

static int is_name_start(int c) { return isalpha(c) || c == '_'; }
static int is_name_char(int c) { return isalnum(c) || c == '_' || c == '.'; }

static int call(ex_t *e, const char *name, size_t len, sweep_val_t *out) {
  sweep_val_t a[2];
  int n = 0;
  if (!eat(e, ")")) {
    for (;;) {
      if (n == 2) return fail(e, "too many arguments");
      int rc = expr_or(e, &a[n]);
      if (rc) return rc;
      if ((rc = need_num(e, &a[n]))) return rc;
      n++;
      if (eat(e, ")")) break;
      if (!eat(e, ",")) return fail(e, "expected ',' or ')'");
    }
  }
  static const struct {
    const char *name;
    int args;
  } fns[] = {{"min", 2},   {"max", 2}, {"floor", 1}, {"ceil", 1},
             {"round", 1}, {"abs", 1}, {"log2", 1},  {"sqrt", 1}};
  for (size_t k = 0; k < sizeof fns / sizeof *fns; k++) {
    if (strlen(fns[k].name) != len || strncmp(fns[k].name, name, len)) continue;
    if (n != fns[k].args) return fail(e, "wrong number of arguments");
    double x = a[0].num, r;
    switch (k) {
      case 0:
        r = x < a[1].num ? x : a[1].num;
        break;
      case 1:
        r = x > a[1].num ? x : a[1].num;
        break;
      case 2:
        r = floor(x);
        break;
      case 3:
        r = ceil(x);
        break;
      case 4:
        r = round(x);
        break;
      case 5:
        r = fabs(x);
        break;
      case 6:
        if (!(x > 0)) return fail(e, "log2 of a number that is not positive");
        r = log2(x);
        break;
      default:
        if (x < 0) return fail(e, "sqrt of a negative number");
        r = sqrt(x);
        break;
    }
    *out = (sweep_val_t){0, r, NULL};
    return 0;
  }
  return fail(e, "unknown function (min, max, floor, ceil, round, abs, log2, sqrt)");
}

static int primary(ex_t *e, sweep_val_t *out) {
  ws(e);
  const char *p = e->p;
  if (*p == '(') {
    e->p++;
    int rc = expr_or(e, out);
    if (rc) return rc;
    if (!eat(e, ")")) return fail(e, "expected ')'");
    return 0;
  }
  if (*p == '\'' || *p == '"') {
    const char *q = strchr(p + 1, *p);
    if (!q) return fail(e, "unterminated string");
    /* the string points into the expression; its length is recorded by
     * copying into a small static pool would race nothing (one thread per
     * process), but the value is only compared, so compare by span */
    e->p = q + 1;
    out->is_str = 1;
    out->num = (double)(q - p - 1);
    out->str = p + 1;
    return 0;
  }
  if (isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1]))) {
    char *end;
    double v = strtod(p, &end);
    e->p = end;
    *out = (sweep_val_t){0, v, NULL};
    return 0;
  }
  if (is_name_start((unsigned char)*p)) {
    const char *q = p;
    for (;;) {
      while (is_name_char((unsigned char)*q)) q++;
      if (*q == '-' && isalpha((unsigned char)q[1]) && q > p && isalpha((unsigned char)q[-1])) {
        q++;
        continue;
      }
      break;
    }
    if (*q == '[') {
      const char *r = q + 1;
      while (isdigit((unsigned char)*r)) r++;
      if (*r == ']' && r > q + 1) q = r + 1;
    }
    size_t len = (size_t)(q - p);
    e->p = q;
    if (eat(e, "(")) {
      if (++e->depth > 64) return fail(e, "nested too deeply");
      int rc = call(e, p, len, out);
      e->depth--;
      return rc;
    }
    sweep_val_t v;
    if (e->lookup(e->user, p, len, &v)) {
      e->p = p;
      char msg[160];
      snprintf(msg, sizeof msg, "unknown name '%.*s'%s", (int)(len > 100 ? 100 : len), p,
               memchr(p, '-', len) ? " (write a - b, with spaces, to subtract)" : "");
      return fail(e, msg);
    }
    if (v.is_str) {
      out->is_str = 1;
      out->str = v.str;
      out->num = (double)strlen(v.str);
    } else {
      *out = v;
    }
    return 0;
  }
  return fail(e, *p ? "expected a number, a name or '('" : "unexpected end");
}

static int unary(ex_t *e, sweep_val_t *out);

static int power(ex_t *e, sweep_val_t *out) {
  int rc = primary(e, out);
  if (rc) return rc;
  if (eat(e, "**")) {
    sweep_val_t b;
    if ((rc = unary(e, &b)) || (rc = need_num(e, out)) || (rc = need_num(e, &b))) return rc;
    out->num = pow(out->num, b.num);
  }
  return 0;
}

static int unary(ex_t *e, sweep_val_t *out) {
  if (++e->depth > 256) return fail(e, "nested too deeply");
  int rc;
  ws(e);
  if (*e->p == '-' || (*e->p == '!' && e->p[1] != '=')) {
    char op = *e->p++;
    if ((rc = unary(e, out)) || (rc = need_num(e, out))) return rc;
    out->num = op == '-' ? -out->num : (double)(out->num == 0);
  } else if (*e->p == '+') {
    e->p++;
    if ((rc = unary(e, out)) || (rc = need_num(e, out))) return rc;
  } else if ((rc = power(e, out))) {
    return rc;
  }
  e->depth--;
  return 0;
}

static int mul(ex_t *e, sweep_val_t *out) {
  int rc = unary(e, out);
  for (; !rc;) {
    ws(e);
    char op = *e->p;
    if ((op != '*' && op != '/' && op != '%') || e->p[1] == '*') break;
    e->p++;
    sweep_val_t b;
    if ((rc = unary(e, &b)) || (rc = need_num(e, out)) || (rc = need_num(e, &b))) return rc;
    if (op != '*' && b.num == 0) return fail(e, "division by zero");
    out->num = op == '*' ? out->num * b.num : op == '/' ? out->num / b.num : fmod(out->num, b.num);
  }
  return rc;
}

static int add(ex_t *e, sweep_val_t *out) {
  int rc = mul(e, out);
  for (; !rc;) {
    ws(e);
    char op = *e->p;
    if (op != '+' && op != '-') break;
    e->p++;
    sweep_val_t b;
    if ((rc = mul(e, &b)) || (rc = need_num(e, out)) || (rc = need_num(e, &b))) return rc;
    out->num = op == '+' ? out->num + b.num : out->num - b.num;
  }
  return rc;
}

static int str_eq(const sweep_val_t *a, const sweep_val_t *b) {
  size_t la = (size_t)a->num, lb = (size_t)b->num;
  return la == lb && !memcmp(a->str, b->str, la);
}

static int cmp(ex_t *e, sweep_val_t *out) {
  int rc = add(e, out);
  if (rc) return rc;
  static const char *ops[] = {"==", "!=", "<=", ">=", "<", ">"};
  for (int k = 0; k < 6; k++) {
    if (!eat(e, ops[k])) continue;
    sweep_val_t b;
    if ((rc = add(e, &b))) return rc;
    double r;
    if (out->is_str || b.is_str) {
      if (k > 1 || !out->is_str || !b.is_str) return fail(e, "strings compare only with == and !=");
      r = str_eq(out, &b) == (k == 0);
    } else {
      double x = out->num, y = b.num;
      r = k == 0   ? x == y
          : k == 1 ? x != y
          : k == 2 ? x <= y
          : k == 3 ? x >= y
          : k == 4 ? x < y
                   : x > y;
    }
    *out = (sweep_val_t){0, r, NULL};
    break;
  }
  return 0;
}

static int expr_and(ex_t *e, sweep_val_t *out) {
  int rc = cmp(e, out);
  while (!rc && eat(e, "&&")) {
    sweep_val_t b;
    if ((rc = cmp(e, &b)) || (rc = need_num(e, out)) || (rc = need_num(e, &b))) return rc;
    out->num = (double)(out->num != 0 && b.num != 0);
  }
  return rc;
}

static int expr_or(ex_t *e, sweep_val_t *out) {
  int rc = expr_and(e, out);
  while (!rc && eat(e, "||")) {
    sweep_val_t b;
    if ((rc = expr_and(e, &b)) || (rc = need_num(e, out)) || (rc = need_num(e, &b))) return rc;
    out->num = (double)(out->num != 0 || b.num != 0);
  }
  return rc;
}

int etsim_sweep__expr_eval(const char *expr, sweep_lookup_fn lookup, void *user, const char *what,
                           sweep_val_t *out, etsim_error_t *err) {
  ex_t e = {expr, expr, lookup, user, what, err, 0};
  int rc = expr_or(&e, out);
  if (rc) return rc;
  ws(&e);
  if (*e.p) return fail(&e, "unexpected text");
  if (!out->is_str && !isfinite(out->num)) return fail(&e, "the result is not a finite number");
  return 0;
}
