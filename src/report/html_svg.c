/* Charts for the HTML report, drawn as inline SVG.
 *
 * Everything a chart needs is in the page: axes with nice ticks and units,
 * a legend, tooltips as <title> elements, heat maps as PNG images encoded
 * here with zlib.  Colours come from the Okabe-Ito palette (categorical) and
 * viridis (sequential), both readable with the common colour-vision
 * deficiencies.  No coordinate is ever written as "nan" or "inf": the
 * browser logs those as errors and the page test counts errors.
 */
#include "html_int.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* ----------------------------------------------------------- text buffer */

static int reserve(rbuf_t *b, size_t more) {
  if (b->oom) return -1;
  if (b->n + more + 1 <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < b->n + more + 1) cap *= 2;
  char *s = etsim_realloc(b->s, cap);
  if (!s) {
    b->oom = 1;
    return -1;
  }
  b->s = s;
  b->cap = cap;
  return 0;
}

void etsim_report__putn(rbuf_t *b, const char *s, size_t n) {
  if (reserve(b, n)) return;
  memcpy(b->s + b->n, s, n);
  b->n += n;
  b->s[b->n] = 0;
}

void etsim_report__put(rbuf_t *b, const char *s) { etsim_report__putn(b, s, strlen(s)); }

void etsim_report__fmt(rbuf_t *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char small[512];
  int k = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (k < 0) return;
  if ((size_t)k < sizeof small) {
    etsim_report__putn(b, small, (size_t)k);
    return;
  }
  if (reserve(b, (size_t)k)) return;
  va_start(ap, fmt);
  vsnprintf(b->s + b->n, (size_t)k + 1, fmt, ap);
  va_end(ap);
  b->n += (size_t)k;
}

void etsim_report__esc(rbuf_t *b, const char *s) {
  if (!s) return;
  const char *run = s;
  for (; *s; s++) {
    const char *rep = NULL;
    switch (*s) {
      case '&':
        rep = "&amp;";
        break;
      case '<':
        rep = "&lt;";
        break;
      case '>':
        rep = "&gt;";
        break;
      case '"':
        rep = "&quot;";
        break;
      case '\'':
        rep = "&#39;";
        break;
      default:
        break;
    }
    if (!rep) continue;
    etsim_report__putn(b, run, (size_t)(s - run));
    etsim_report__put(b, rep);
    run = s + 1;
  }
  etsim_report__putn(b, run, (size_t)(s - run));
}

void etsim_report__num(char *out, size_t cap, double v) {
  if (!isfinite(v)) {
    snprintf(out, cap, "-");
    return;
  }
  static const char *suf[] = {"", "k", "M", "G", "T", "P"};
  double a = fabs(v);
  int k = 0;
  if (a >= 1e4)
    while (a >= 1000 && k < 5) {
      a /= 1000;
      v /= 1000;
      k++;
    }
  if (a != 0 && a < 1e-3) snprintf(out, cap, "%.2e", v);
  else if (k) snprintf(out, cap, "%.3g%s", v, suf[k]);
  else if (a >= 100) snprintf(out, cap, "%.0f", v);
  else snprintf(out, cap, "%.4g", v);
}

void etsim_report__bytes(char *out, size_t cap, double v) {
  static const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int k = 0;
  if (!isfinite(v)) {
    snprintf(out, cap, "-");
    return;
  }
  while (fabs(v) >= 1024 && k < 5) {
    v /= 1024;
    k++;
  }
  snprintf(out, cap, k ? "%.3g %s" : "%.0f %s", v, u[k]);
}

void etsim_report__time_us(char *out, size_t cap, double us) {
  char v[24];
  const char *unit = "\xc2\xb5s";
  double x = us;
  if (!isfinite(us)) {
    snprintf(out, cap, "-");
    return;
  }
  if (fabs(us) >= 1e7) x = us / 1e6, unit = "s";
  else if (fabs(us) >= 1e4) x = us / 1e3, unit = "ms";
  else if (us != 0 && fabs(us) < 1) x = us * 1e3, unit = "ns";
  etsim_report__num(v, sizeof v, x);
  snprintf(out, cap, "%s %s", v, unit);
}

/* A coordinate: one decimal, finite. */
static double fin(double v) { return isfinite(v) ? (v > 1e7 ? 1e7 : v < -1e7 ? -1e7 : v) : 0; }

/* ----------------------------------------------------------------- colour */

static const char *okabe_ito[RPT_NCOLORS] = {"#0072B2", "#E69F00", "#009E73", "#D55E00",
                                             "#CC79A7", "#56B4E9", "#F0E442", "#000000"};

const char *etsim_report__color(int i) {
  if (i == RPT_GREY) return "#b4b4b4";
  if (i < 0) i = -i;
  return okabe_ito[i % RPT_NCOLORS];
}

static const char *dash_of(int i) {
  static const char *d[] = {"", " stroke-dasharray=\"6 3\"", " stroke-dasharray=\"2 2\"",
                            " stroke-dasharray=\"8 3 2 3\""};
  if (i < 0) i = -i;
  return d[(i / RPT_NCOLORS) % 4];
}

/* viridis, 9 stops (matplotlib's), interpolated. */
static void viridis(double t, uint8_t rgb[3]) {
  static const uint8_t st[9][3] = {{68, 1, 84},    {71, 45, 123},  {59, 82, 139},
                                   {44, 114, 142}, {33, 145, 140}, {40, 174, 128},
                                   {94, 201, 98},  {173, 220, 48}, {253, 231, 37}};
  if (!(t > 0)) t = 0;
  if (t > 1) t = 1;
  double p = t * 8;
  int i = (int)p;
  if (i >= 8) i = 7;
  double f = p - i;
  for (int c = 0; c < 3; c++) rgb[c] = (uint8_t)(st[i][c] + f * (st[i + 1][c] - st[i][c]) + 0.5);
}

/* ------------------------------------------------------------------ scales */

typedef struct scale {
  double d0, d1; /* domain (log10 of it when log) */
  double r0, r1; /* pixels */
  int log;
} scale_t;

static double sc(const scale_t *s, double v) {
  if (s->log) v = v > 0 ? log10(v) : s->d0;
  double t = s->d1 > s->d0 ? (v - s->d0) / (s->d1 - s->d0) : 0.5;
  return fin(s->r0 + t * (s->r1 - s->r0));
}

static double nice_step(double span, int target) {
  if (!(span > 0)) return 1;
  double raw = span / target, p = pow(10, floor(log10(raw))), f = raw / p;
  f = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
  return f * p;
}

/* The domain of an axis from the data range [lo, hi]. */
static void domain(scale_t *s, const raxis_t *a, double lo, double hi) {
  s->log = a->log;
  if (isfinite(a->min)) lo = a->min;
  if (isfinite(a->max)) hi = a->max;
  if (s->log) {
    if (!(lo > 0) || !isfinite(lo)) lo = hi > 0 && isfinite(hi) ? hi / 10 : 1;
    if (!(hi > 0) || !isfinite(hi)) hi = lo * 10;
    double l0 = log10(lo), l1 = log10(hi);
    if (l1 - l0 >= 1) {
      if (!isfinite(a->min)) l0 = floor(l0);
      if (!isfinite(a->max)) l1 = ceil(l1);
    } else {
      double pad = (l1 - l0) * 0.05 + 0.02;
      if (!isfinite(a->min)) l0 -= pad;
      if (!isfinite(a->max)) l1 += pad;
    }
    s->d0 = l0;
    s->d1 = l1;
    return;
  }
  if (!isfinite(lo) || !isfinite(hi)) lo = 0, hi = 1;
  if (a->zero) {
    if (lo > 0) lo = 0;
    if (hi < 0) hi = 0;
  }
  if (hi <= lo) {
    double d = fabs(lo) > 0 ? fabs(lo) * 0.1 : 1;
    lo -= d;
    hi += d;
    if (a->zero && lo < 0 && !(hi < 0) && lo + d >= 0) lo = 0;
  }
  double st = nice_step(hi - lo, 5);
  if (!isfinite(a->min)) lo = floor(lo / st) * st;
  if (!isfinite(a->max)) hi = ceil(hi / st) * st;
  s->d0 = lo;
  s->d1 = hi;
}

/* Tick values of a scale (at most cap). */
static int ticks(const scale_t *s, double *t, int cap, int target) {
  int n = 0;
  if (s->log && s->d1 - s->d0 >= 1) {
    double span = s->d1 - s->d0;
    int every = (int)ceil(span / target);
    for (double e = ceil(s->d0 - 1e-9); e <= s->d1 + 1e-9 && n < cap; e += every)
      t[n++] = pow(10, e);
    if (span < 2.5)
      for (double e = floor(s->d0); e <= s->d1 && n < cap; e++)
        for (int m = 2; m <= 5; m += 3) {
          double v = m * pow(10, e);
          if (log10(v) >= s->d0 && log10(v) <= s->d1 && n < cap) t[n++] = v;
        }
    return n;
  }
  double lo = s->log ? pow(10, s->d0) : s->d0, hi = s->log ? pow(10, s->d1) : s->d1;
  double st = nice_step(hi - lo, target);
  for (double v = ceil(lo / st - 1e-9) * st; v <= hi + st * 1e-9 && n < cap; v += st)
    t[n++] = fabs(v) < st * 1e-9 ? 0 : v;
  return n;
}

/* --------------------------------------------------------------- frames */

enum { W_DEF = 860, H_DEF = 300, ML = 72, MR = 24, MT = 34, MB = 48 };

static void fig_open(rbuf_t *b, const char *id, const char *title, int w, int h) {
  etsim_report__put(b, "<figure class=\"chart\" data-chart=\"");
  etsim_report__esc(b, id);
  etsim_report__put(b, "\"><figcaption>");
  etsim_report__esc(b, title);
  etsim_report__fmt(b,
                    "</figcaption>\n<svg viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" "
                    "role=\"img\" aria-label=\"",
                    w, h, w, h);
  etsim_report__esc(b, title);
  etsim_report__put(b, "\" xmlns=\"http://www.w3.org/2000/svg\">\n");
}

static void fig_close(rbuf_t *b, const char *note) {
  etsim_report__put(b, "</svg>\n");
  if (note && *note) {
    etsim_report__put(b, "<p class=\"note\">");
    etsim_report__esc(b, note);
    etsim_report__put(b, "</p>\n");
  }
  etsim_report__put(b, "</figure>\n");
}

static void text(rbuf_t *b, double x, double y, const char *anchor, const char *cls,
                 const char *s) {
  etsim_report__fmt(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"%s%s%s>", fin(x), fin(y),
                    anchor, cls ? " class=\"" : "", cls ? cls : "", cls ? "\"" : "");
  etsim_report__esc(b, s);
  etsim_report__put(b, "</text>");
}

/* A y axis label, turned, centred on y. */
static void ylabel_text(rbuf_t *b, double y, const char *label) {
  etsim_report__fmt(b,
                    "<text class=\"label\" text-anchor=\"middle\" transform=\"translate(14 "
                    "%.1f) rotate(-90)\">",
                    y);
  etsim_report__esc(b, label);
  etsim_report__put(b, "</text>");
}

/* Vertical grid lines at the ticks of xs from top to the bottom margin of
 * a chart h high, their values under it, and the x label (may be NULL). */
static void xgrid(rbuf_t *b, const scale_t *xs, int top, int h, const char *xlabel) {
  double t[32];
  char s[32];
  int n = ticks(xs, t, 32, 8);
  for (int i = 0; i < n; i++) {
    double x = sc(xs, t[i]);
    etsim_report__fmt(b, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\"/>", x, x,
                      top, h - MB);
    etsim_report__num(s, sizeof s, t[i]);
    text(b, x, h - MB + 16, "middle", "tick", s);
  }
  if (xlabel) text(b, (xs->r0 + xs->r1) / 2, h - 8, "middle", "label", xlabel);
}

/* Grid, ticks and the axis labels of a plot area [x0,x1] x [y0,y1]. */
static void axes(rbuf_t *b, const scale_t *xs, const scale_t *ys, const char *xlabel,
                 const char *ylabel, int xgrid, int w, int h) {
  double t[32];
  char s[32];
  double x0 = xs->r0, x1 = xs->r1, y0 = ys->r0, y1 = ys->r1; /* y0 bottom */
  etsim_report__put(b, "<g class=\"axes\">");
  int n = ticks(ys, t, 32, 5);
  double last = -1e9;
  for (int i = 0; i < n; i++) {
    double y = sc(ys, t[i]);
    if (fabs(y - last) < 16) continue; /* log axes' linear ticks crowd at the top */
    last = y;
    etsim_report__fmt(b, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>",
                      x0, x1, y, y);
    etsim_report__num(s, sizeof s, t[i]);
    text(b, x0 - 6, y + 4, "end", "tick", s);
  }
  if (xgrid) {
    n = ticks(xs, t, 32, w > 500 ? 8 : 5);
    last = -1e9;
    for (int i = 0; i < n; i++) {
      double x = sc(xs, t[i]);
      if (fabs(x - last) < 44) continue;
      last = x;
      etsim_report__fmt(b, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>",
                        x, x, y0, y1);
      etsim_report__num(s, sizeof s, t[i]);
      text(b, x, y0 + 16, "middle", "tick", s);
    }
  }
  etsim_report__fmt(b, "<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>", x0,
                    x1, y0, y0);
  etsim_report__fmt(b, "<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>", x0,
                    x0, y0, y1);
  if (xlabel) text(b, (x0 + x1) / 2, h - 8, "middle", "label", xlabel);
  if (ylabel) ylabel_text(b, (y0 + y1) / 2, ylabel);
  (void)w;
  etsim_report__put(b, "</g>\n");
}

/* A legend row at the top: swatch + name per entry, wrapping. */
typedef struct lentry {
  const char *name;
  int color, line;
  const char *fill; /* a colour outside the palette, or NULL */
} lentry_t;

static void legend(rbuf_t *b, const lentry_t *e, size_t n, int x0, int w) {
  double x = x0, y = 14;
  etsim_report__put(b, "<g class=\"legend\">");
  for (size_t i = 0; i < n; i++) {
    if (!e[i].name) continue;
    double tw = 8 + 7.2 * (double)strlen(e[i].name) + 18;
    if (x + tw > w - 8 && x > x0) {
      x = x0;
      y += 15;
    }
    if (e[i].line)
      etsim_report__fmt(b,
                        "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                        "stroke-width=\"2.5\"%s/>",
                        x, x + 14, y - 4, y - 4, etsim_report__color(e[i].color),
                        dash_of(e[i].color));
    else
      etsim_report__fmt(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"11\" height=\"11\" fill=\"%s\"/>",
                        x, y - 10, e[i].fill ? e[i].fill : etsim_report__color(e[i].color));
    text(b, x + 18, y, "start", NULL, e[i].name);
    x += tw;
  }
  etsim_report__put(b, "</g>\n");
}

/* ---------------------------------------------------------------- xy plot */

static void range_of(const rseries_t *s, size_t ns, int ylog, int xlog, double *x0, double *x1,
                     double *y0, double *y1) {
  *x0 = *y0 = INFINITY;
  *x1 = *y1 = -INFINITY;
  for (size_t k = 0; k < ns; k++)
    for (size_t i = 0; i < s[k].n; i++) {
      double x = s[k].x[i], y = s[k].y[i];
      if (!isfinite(x) || !isfinite(y) || (xlog && x <= 0) || (ylog && y <= 0)) continue;
      if (x < *x0) *x0 = x;
      if (x > *x1) *x1 = x;
      if (y < *y0) *y0 = y;
      if (y > *y1) *y1 = y;
    }
}

/* One series as a path; long series keep, per pixel column, the first,
 * lowest, highest and last point, so the drawing looks the same at a
 * fraction of the size. */
static void path_of(rbuf_t *b, const rseries_t *s, const scale_t *xs, const scale_t *ys) {
  int started = 0;
  double px = 0, py = 0;
  long col = LONG_MIN;
  double cmin = 0, cmax = 0, clast = 0;
  int have_col = 0;
  int dec = s->n > 2000;
  etsim_report__fmt(b,
                    "<path class=\"series\" fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"%s d=\"",
                    s->faint ? "#bbbbbb" : etsim_report__color(s->color), s->faint ? "1" : "2",
                    dash_of(s->color));
  for (size_t i = 0; i < s->n; i++) {
    double xv = s->x[i], yv = s->y[i];
    if (!isfinite(xv) || !isfinite(yv) || (xs->log && xv <= 0) || (ys->log && yv <= 0)) continue;
    double x = sc(xs, xv), y = sc(ys, yv);
    if (dec) {
      long c = (long)floor(x);
      if (have_col && c == col) {
        if (y < cmin) cmin = y;
        if (y > cmax) cmax = y;
        clast = y;
        continue;
      }
      if (have_col) {
        etsim_report__fmt(b, "L%.1f %.1fL%.1f %.1fL%.1f %.1f", (double)col, cmin, (double)col, cmax,
                          (double)col, clast);
        py = clast;
      }
      col = c;
      cmin = cmax = clast = y;
      have_col = 1;
    }
    if (!started) etsim_report__fmt(b, "M%.1f %.1f", x, y);
    else if (s->style == RS_STEP) etsim_report__fmt(b, "H%.1fV%.1f", x, y);
    else etsim_report__fmt(b, "L%.1f %.1f", x, y);
    started = 1;
    px = x;
    py = y;
  }
  if (dec && have_col)
    etsim_report__fmt(b, "L%.1f %.1fL%.1f %.1f", (double)col, cmin, (double)col, cmax);
  if (!started) etsim_report__put(b, "M0 0");
  (void)px;
  (void)py;
  etsim_report__put(b, "\"/>\n");
}

static void points_of(rbuf_t *b, const rseries_t *s, const scale_t *xs, const scale_t *ys) {
  const char *col = s->faint ? "#bbbbbb" : etsim_report__color(s->color);
  size_t stride = s->n > 4000 ? (s->n + 3999) / 4000 : 1;
  etsim_report__fmt(b, "<g class=\"points\" fill=\"%s\" fill-opacity=\"%s\">", col,
                    s->faint ? "0.6" : "0.85");
  for (size_t i = 0; i < s->n; i += stride) {
    double xv = s->x[i], yv = s->y[i];
    if (!isfinite(xv) || !isfinite(yv) || (xs->log && xv <= 0) || (ys->log && yv <= 0)) continue;
    double x = sc(xs, xv), y = sc(ys, yv);
    if (s->tips && s->tips[i]) {
      etsim_report__fmt(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\"><title>", x, y);
      etsim_report__esc(b, s->tips[i]);
      etsim_report__put(b, "</title></circle>");
    } else {
      etsim_report__fmt(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\"/>", x, y);
    }
  }
  etsim_report__put(b, "</g>\n");
}

void etsim_report__xy(rbuf_t *b, const rxy_t *c) {
  int w = c->w ? c->w : W_DEF, h = c->h ? c->h : H_DEF;
  double x0, x1, y0, y1;
  range_of(c->s, c->ns, c->y.log, c->x.log, &x0, &x1, &y0, &y1);
  if (c->diag) { /* y = x needs the same range on both axes */
    double lo = x0 < y0 ? x0 : y0, hi = x1 > y1 ? x1 : y1;
    x0 = y0 = lo;
    x1 = y1 = hi;
  }
  lentry_t le[66];
  size_t nle = 0;
  for (size_t k = 0; k < c->ns && nle < 64; k++)
    if (!c->s[k].faint && c->s[k].name)
      le[nle++] = (lentry_t){c->s[k].name, c->s[k].color, c->s[k].style != RS_POINTS, NULL};
  if (c->diag) { /* the bands' key */
    le[nle++] = (lentry_t){"within 10 %", 0, 0, "#d4d4d4"};
    le[nle++] = (lentry_t){"within 25 %", 0, 0, "#e8e8e8"};
  }
  int top = MT + (nle > 5 ? 15 * (int)((nle - 1) / 5) : 0);
  scale_t xs = {0, 1, ML, w - MR, 0}, ys = {0, 1, h - MB, top, 0};
  domain(&xs, &c->x, x0, x1);
  domain(&ys, &c->y, y0, y1);
  if (c->diag) {
    xs.d0 = ys.d0 = xs.d0 < ys.d0 ? xs.d0 : ys.d0;
    xs.d1 = ys.d1 = xs.d1 > ys.d1 ? xs.d1 : ys.d1;
  }
  fig_open(b, c->id, c->title, w, h);
  axes(b, &xs, &ys, c->x.label, c->y.label, 1, w, h);
  unsigned id = ++b->seq;
  etsim_report__fmt(b,
                    "<clipPath id=\"clip%u\"><rect x=\"%d\" y=\"%d\" width=\"%d\" "
                    "height=\"%d\"/></clipPath><g clip-path=\"url(#clip%u)\">\n",
                    id, ML, top - 4, w - MR - ML, h - MB - top + 8, id);
  if (c->diag) {
    /* Bands of +-25 % and +-10 % around y = x, sampled along x, clipped to
     * the plot itself (points may overhang it by their radius, bands not). */
    unsigned id2 = ++b->seq;
    etsim_report__fmt(b,
                      "<clipPath id=\"clip%u\"><rect x=\"%d\" y=\"%d\" width=\"%d\" "
                      "height=\"%d\"/></clipPath><g clip-path=\"url(#clip%u)\">\n",
                      id2, ML, top, w - MR - ML, h - MB - top, id2);
    static const double f[2] = {0.25, 0.10};
    static const char *fill[2] = {"#e8e8e8", "#d4d4d4"};
    for (int k = 0; k < 2; k++) {
      etsim_report__fmt(b, "<path class=\"band\" fill=\"%s\" d=\"", fill[k]);
      int n = 24;
      for (int i = 0; i <= n; i++) {
        double u = xs.d0 + (xs.d1 - xs.d0) * i / n, v = xs.log ? pow(10, u) : u;
        etsim_report__fmt(b, "%s%.1f %.1f", i ? "L" : "M", sc(&xs, v), sc(&ys, v * (1 + f[k])));
      }
      for (int i = n; i >= 0; i--) {
        double u = xs.d0 + (xs.d1 - xs.d0) * i / n, v = xs.log ? pow(10, u) : u;
        etsim_report__fmt(b, "L%.1f %.1f", sc(&xs, v), sc(&ys, v * (1 - f[k])));
      }
      etsim_report__put(b, "Z\"/>\n");
    }
    double lo = xs.log ? pow(10, xs.d0) : xs.d0, hi = xs.log ? pow(10, xs.d1) : xs.d1;
    etsim_report__fmt(b,
                      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\" "
                      "stroke-dasharray=\"4 3\"/>\n",
                      sc(&xs, lo), sc(&ys, lo), sc(&xs, hi), sc(&ys, hi));
    etsim_report__put(b, "</g>\n");
  }
  for (int pass = 0; pass < 2; pass++) /* faint series first, behind */
    for (size_t k = 0; k < c->ns; k++) {
      const rseries_t *s = &c->s[k];
      if (s->faint != !pass) continue;
      if (s->style != RS_POINTS) path_of(b, s, &xs, &ys);
      if (s->style == RS_POINTS || s->style == RS_LINE_POINTS) points_of(b, s, &xs, &ys);
    }
  etsim_report__put(b, "</g>\n");
  legend(b, le, nle, ML, w);
  fig_close(b, c->note);
}

/* ------------------------------------------------------------------- bars */

void etsim_report__bars(rbuf_t *b, const rbars_t *c) {
  int w = W_DEF, h = H_DEF;
  size_t n = c->n ? c->n : 1;
  double lo = INFINITY, hi = -INFINITY;
  for (size_t i = 0; i < c->n; i++) {
    double sum = 0;
    for (size_t s = 0; s < c->nser; s++) {
      double v = c->val[s][i];
      if (!isfinite(v)) continue;
      if (c->stacked) sum += v;
      else {
        if (v > hi) hi = v;
        if (v < lo && (!c->ylog || v > 0)) lo = v;
      }
    }
    if (c->stacked) {
      if (sum > hi) hi = sum;
      if (sum < lo && (!c->ylog || sum > 0)) lo = sum;
    }
    if (c->hi && isfinite(c->hi[i]) && c->hi[i] > hi) hi = c->hi[i];
    if (c->lo && isfinite(c->lo[i]) && c->lo[i] < lo && (!c->ylog || c->lo[i] > 0)) lo = c->lo[i];
  }
  lentry_t le[16];
  size_t nle = 0;
  for (size_t s = 0; s < c->nser && nle < 16; s++)
    if (c->nser > 1 && c->ser_name && c->ser_name[s])
      le[nle++] = (lentry_t){c->ser_name[s], c->colors ? c->colors[s] : (int)s, 0, NULL};
  int top = MT + (nle > 5 ? 15 * (int)((nle - 1) / 5) : 0) + (c->mark >= 0 ? 14 : 0);
  raxis_t ya = {c->ylabel, c->ylog, 1, NAN, NAN};
  scale_t ys = {0, 1, h - MB, top, 0};
  domain(&ys, &ya, lo, hi);
  double base = c->ylog ? ys.r0 : sc(&ys, 0);
  fig_open(b, c->id, c->title, w, h);
  scale_t xs = {0, 1, ML, w - MR, 0};
  axes(b, &xs, &ys, c->xlabel, c->ylabel, 0, w, h);
  double pw = (double)(w - MR - ML), band = pw / (double)n;
  double gap = n <= 40 ? band * 0.2 : n <= 120 ? band * 0.08 : 0;
  int grouped = !c->stacked && c->nser > 1;
  double bw = (band - gap) / (grouped ? (double)c->nser : 1);
  if (bw < 0.5) bw = 0.5;
  etsim_report__put(b, "<g class=\"bars\">\n");
  for (size_t i = 0; i < c->n; i++) {
    double x = ML + band * (double)i + gap / 2, acc = 0;
    for (size_t s = 0; s < c->nser; s++) {
      double v = c->val[s][i];
      if (!isfinite(v) || v == 0) continue;
      double ytop, ybot;
      if (c->stacked) {
        ybot = acc == 0 ? base : sc(&ys, acc);
        acc += v;
        ytop = sc(&ys, acc);
      } else {
        ybot = base;
        ytop = sc(&ys, v);
      }
      double bx = grouped ? x + bw * (double)s : x;
      double hgt = ybot - ytop;
      if (hgt < 0) {
        hgt = -hgt;
        ytop = ybot - hgt;
      }
      char vs[32];
      etsim_report__num(vs, sizeof vs, v);
      etsim_report__fmt(b,
                        "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\">"
                        "<title>",
                        fin(bx), ytop, fin(bw), fin(hgt),
                        etsim_report__color(c->colors ? c->colors[s] : (int)s));
      if (c->cat && c->cat[i]) {
        etsim_report__esc(b, c->cat[i]);
        etsim_report__put(b, ": ");
      }
      if (c->ser_name && c->ser_name[s]) {
        etsim_report__esc(b, c->ser_name[s]);
        etsim_report__put(b, " ");
      }
      etsim_report__esc(b, vs);
      if (c->tips && c->tips[i]) {
        etsim_report__put(b, "\n");
        etsim_report__esc(b, c->tips[i]);
      }
      etsim_report__put(b, "</title></rect>\n");
    }
    if (c->lo && c->hi && isfinite(c->lo[i]) && isfinite(c->hi[i]) && c->hi[i] > c->lo[i]) {
      double cx = ML + band * ((double)i + 0.5), y0 = sc(&ys, c->lo[i]), y1 = sc(&ys, c->hi[i]);
      double cw = band * 0.3 < 4 ? band * 0.3 : 4;
      etsim_report__fmt(b,
                        "<path class=\"whisker\" d=\"M%.1f %.1fV%.1fM%.1f %.1fH%.1fM%.1f "
                        "%.1fH%.1f\"/>\n",
                        cx, y0, y1, cx - cw, y0, cx + cw, cx - cw, y1, cx + cw);
    }
  }
  etsim_report__put(b, "</g>\n");
  /* category labels: all when few, every k-th when many */
  size_t every = c->n <= 24 ? 1 : (c->n + 11) / 12;
  size_t maxch = (size_t)(band * (double)every / 6.5);
  if (maxch < 3) maxch = 3;
  for (size_t i = 0; c->cat && i < c->n; i += every) {
    if (!c->cat[i]) continue;
    char lab[64];
    snprintf(lab, sizeof lab, "%s", c->cat[i]);
    if (strlen(lab) > maxch && maxch < sizeof lab) {
      lab[maxch] = 0;
      if (maxch > 3) lab[maxch - 1] = '.';
    }
    text(b, ML + band * ((double)i + 0.5), h - MB + 16, "middle", "tick", lab);
  }
  if (c->mark >= 0 && (size_t)c->mark < c->n) {
    double x = ML + band * (double)c->mark, mw = band < 3 ? 3 : band;
    if (band < 3) x -= (3 - band) / 2;
    etsim_report__fmt(b,
                      "<rect class=\"mark\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%.1f\"/>",
                      fin(x), top - 2, fin(mw), fin(base - top + 2));
    double tx = x + mw / 2;
    const char *anchor = tx < ML + 80 ? "start" : tx > w - MR - 80 ? "end" : "middle";
    text(b, tx, top - 6, anchor, "marklabel", c->mark_label ? c->mark_label : "");
  }
  legend(b, le, nle, ML, w);
  fig_close(b, c->note);
}

/* ------------------------------------------------------ horizontal stacks */

void etsim_report__hstack(rbuf_t *b, const rhstack_t *c) {
  int w = W_DEF, lm = 150, rowh = c->rows > 6 ? 26 : 34;
  for (size_t r = 0; r < c->rows; r++) { /* room for the longest row name, up to a limit */
    int need = 16 + (int)(6.6 * (double)strlen(c->row_name[r]));
    if (need > lm) lm = need > 340 ? 340 : need;
  }
  lentry_t le[32];
  size_t nle = 0;
  double hi = 0;
  for (size_t s = 0; s < c->nseg && nle < 32; s++) {
    int used = 0;
    for (size_t r = 0; r < c->rows; r++)
      used |= isfinite(c->val[r * c->nseg + s]) && c->val[r * c->nseg + s] > 0;
    if (used) le[nle++] = (lentry_t){c->seg_name[s], c->colors[s], 0, NULL};
  }
  for (size_t r = 0; r < c->rows; r++) {
    double sum = 0;
    for (size_t s = 0; s < c->nseg; s++) {
      double v = c->val[r * c->nseg + s];
      if (isfinite(v) && v > 0) sum += v;
    }
    if (sum > hi) hi = sum;
  }
  int top = MT + 15 * (int)(nle > 4 ? (nle - 1) / 4 : 0);
  int h = top + rowh * (int)c->rows + MB;
  raxis_t xa = {c->xlabel, 0, 1, NAN, NAN};
  scale_t xs = {0, 1, lm, w - MR, 0}, ys = {0, 1, h - MB, top, 0};
  domain(&xs, &xa, 0, hi);
  fig_open(b, c->id, c->title, w, h);
  xgrid(b, &xs, top, h, c->xlabel);
  for (size_t r = 0; r < c->rows; r++) {
    double y = top + rowh * (double)r + 5, acc = 0;
    text(b, lm - 8, y + (rowh - 10) / 2.0 + 4, "end", NULL, c->row_name[r]);
    for (size_t g = 0; g < c->nseg; g++) {
      double v = c->val[r * c->nseg + g];
      if (!isfinite(v) || v <= 0) continue;
      double xa0 = sc(&xs, acc), xa1 = sc(&xs, acc + v);
      acc += v;
      char vs[32];
      etsim_report__num(vs, sizeof vs, v);
      etsim_report__fmt(b,
                        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\" "
                        "stroke=\"#fff\" stroke-width=\"0.5\"><title>",
                        xa0, y, xa1 - xa0 > 0.3 ? xa1 - xa0 : 0.3, rowh - 10,
                        etsim_report__color(c->colors[g]));
      etsim_report__esc(b, c->row_name[r]);
      etsim_report__put(b, ": ");
      etsim_report__esc(b, c->seg_name[g]);
      etsim_report__fmt(b, " %s", vs);
      etsim_report__put(b, "</title></rect>");
      if (xa1 - xa0 > 7 * (double)strlen(vs) + 8) {
        int dark = c->colors[g] % RPT_NCOLORS == 0 || c->colors[g] % RPT_NCOLORS == 7 ||
                   c->colors[g] % RPT_NCOLORS == 3 || c->colors[g] % RPT_NCOLORS == 2;
        text(b, (xa0 + xa1) / 2, y + (rowh - 10) / 2.0 + 4, "middle",
             dark ? "inbar light" : "inbar", vs);
      }
    }
  }
  etsim_report__fmt(b, "<line class=\"axis\" x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\"/>", lm, lm,
                    top, h - MB);
  (void)ys;
  legend(b, le, nle, lm, w);
  fig_close(b, c->note);
}

/* --------------------------------------------------------------- heat map */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void base64(rbuf_t *b, const unsigned char *p, size_t n) {
  char q[4];
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)p[i] << 16;
    if (i + 1 < n) v |= (uint32_t)p[i + 1] << 8;
    if (i + 2 < n) v |= p[i + 2];
    q[0] = b64[v >> 18 & 63];
    q[1] = b64[v >> 12 & 63];
    q[2] = i + 1 < n ? b64[v >> 6 & 63] : '=';
    q[3] = i + 2 < n ? b64[v & 63] : '=';
    etsim_report__putn(b, q, 4);
  }
}

static void be32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24);
  p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
}

/* An 8-bit RGB PNG of w x h pixels as base64 (RFC 2083: signature, IHDR,
 * one IDAT of zlib data, each row led by filter byte 0, IEND). */
static int png_base64(rbuf_t *b, const uint8_t *rgb, uint32_t w, uint32_t h) {
  size_t raw_n = (size_t)h * (1 + 3 * (size_t)w);
  unsigned char *raw = etsim_malloc(raw_n);
  uLongf zn = compressBound((uLong)raw_n);
  unsigned char *png = etsim_malloc(8 + 25 + 12 + zn + 12);
  if (!raw || !png) {
    etsim_free(raw);
    etsim_free(png);
    b->oom = 1;
    return -1;
  }
  for (uint32_t y = 0; y < h; y++) {
    raw[(size_t)y * (1 + 3 * w)] = 0;
    memcpy(raw + (size_t)y * (1 + 3 * w) + 1, rgb + (size_t)y * 3 * w, 3 * (size_t)w);
  }
  static const unsigned char sig[8] = {137, 80, 78, 71, 13, 10, 26, 10};
  memcpy(png, sig, 8);
  unsigned char *p = png + 8;
  be32(p, 13);
  memcpy(p + 4, "IHDR", 4);
  be32(p + 8, w);
  be32(p + 12, h);
  p[16] = 8; /* bit depth */
  p[17] = 2; /* RGB */
  p[18] = p[19] = p[20] = 0;
  be32(p + 21, (uint32_t)crc32(0, p + 4, 17));
  p += 25;
  if (compress2(p + 8, &zn, raw, (uLong)raw_n, 9) != Z_OK) {
    etsim_free(raw);
    etsim_free(png);
    b->oom = 1;
    return -1;
  }
  be32(p, (uint32_t)zn);
  memcpy(p + 4, "IDAT", 4);
  be32(p + 8 + zn, (uint32_t)crc32(0, p + 4, (uInt)zn + 4));
  p += 12 + zn;
  be32(p, 0);
  memcpy(p + 4, "IEND", 4);
  be32(p + 8, (uint32_t)crc32(0, p + 4, 4));
  p += 12;
  base64(b, png, (size_t)(p - png));
  etsim_free(raw);
  etsim_free(png);
  return 0;
}

void etsim_report__heat(rbuf_t *b, const rheat_t *c) {
  int w = W_DEF, lm = 120, rm = 90;
  int h = c->rows <= 8 ? 60 + 26 * (int)c->rows + MB : c->rows <= 40 ? 330 : 400;
  int top = 16;
  double lo = c->vmin, hi = c->vmax;
  if (!isfinite(lo) || !isfinite(hi)) {
    double dl = INFINITY, dh = -INFINITY;
    for (size_t i = 0; i < c->rows * c->cols; i++)
      if (isfinite(c->v[i])) {
        if (c->v[i] < dl) dl = c->v[i];
        if (c->v[i] > dh) dh = c->v[i];
      }
    if (!isfinite(lo)) lo = isfinite(dl) ? (dl > 0 ? 0 : dl) : 0;
    if (!isfinite(hi)) hi = isfinite(dh) ? dh : 1;
  }
  if (!(hi > lo)) hi = lo + 1;
  uint32_t pw = c->cols ? (uint32_t)c->cols : 1, ph = c->rows ? (uint32_t)c->rows : 1;
  uint8_t *rgb = etsim_malloc((size_t)pw * ph * 3);
  if (!rgb) {
    b->oom = 1;
    return;
  }
  memset(rgb, 235, (size_t)pw * ph * 3);
  for (size_t r = 0; r < c->rows; r++)
    for (size_t k = 0; k < c->cols; k++) {
      double v = c->v[r * c->cols + k];
      if (isfinite(v)) viridis((v - lo) / (hi - lo), rgb + (r * pw + k) * 3);
    }
  fig_open(b, c->id, c->title, w, h);
  double x0 = lm, x1 = w - rm, y0 = top, y1 = h - MB;
  etsim_report__fmt(b,
                    "<image x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                    "preserveAspectRatio=\"none\" style=\"image-rendering:pixelated\" "
                    "href=\"data:image/png;base64,",
                    x0, y0, x1 - x0, y1 - y0);
  png_base64(b, rgb, pw, ph);
  etsim_report__put(b, "\"/>\n");
  etsim_free(rgb);
  etsim_report__fmt(b,
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
                    "stroke=\"#555\"/>",
                    x0, y0, x1 - x0, y1 - y0);
  double cw = (x1 - x0) / (double)pw, rh = (y1 - y0) / (double)ph;
  size_t every = 1;
  while ((double)every * cw < 48) every++;
  if (c->x1 > c->x0) {
    raxis_t xa = {NULL, 0, 0, c->x0, c->x1};
    scale_t xs = {0, 1, x0, x1, 0};
    domain(&xs, &xa, c->x0, c->x1);
    double t[32];
    char s[32];
    int nt = ticks(&xs, t, 32, 8);
    for (int i = 0; i < nt; i++) {
      double x = sc(&xs, t[i]);
      etsim_report__fmt(b,
                        "<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" "
                        "y2=\"%.1f\"/>",
                        x, x, y1, y1 + 4);
      etsim_report__num(s, sizeof s, t[i]);
      text(b, x, y1 + 16, "middle", "tick", s);
    }
  }
  for (size_t k = 0; c->col_name && k < c->cols; k += every)
    if (c->col_name[k])
      text(b, x0 + cw * ((double)k + 0.5), y1 + 15, "middle", "tick", c->col_name[k]);
  every = 1;
  while ((double)every * rh < 13) every++;
  for (size_t r = 0; c->row_name && r < c->rows; r += every)
    if (c->row_name[r])
      text(b, x0 - 6, y0 + rh * ((double)r + 0.5) + 4, "end", "tick", c->row_name[r]);
  if (c->xlabel) text(b, (x0 + x1) / 2, h - 8, "middle", "label", c->xlabel);
  if (c->ylabel) ylabel_text(b, (y0 + y1) / 2, c->ylabel);
  /* colour scale: a vertical gradient with min, middle and max */
  unsigned g = ++b->seq;
  etsim_report__fmt(b, "<defs><linearGradient id=\"vir%u\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">",
                    g);
  for (int i = 0; i <= 8; i++) {
    uint8_t q[3];
    viridis(i / 8.0, q);
    etsim_report__fmt(b, "<stop offset=\"%.3f\" stop-color=\"#%02x%02x%02x\"/>", i / 8.0, q[0],
                      q[1], q[2]);
  }
  double lx = x1 + 18;
  etsim_report__fmt(b,
                    "</linearGradient></defs><rect x=\"%.1f\" y=\"%.1f\" width=\"14\" "
                    "height=\"%.1f\" fill=\"url(#vir%u)\" stroke=\"#555\"/>",
                    lx, y0, y1 - y0, g);
  for (int i = 0; i <= 2; i++) {
    char s[32];
    etsim_report__num(s, sizeof s, lo + (hi - lo) * i / 2.0);
    text(b, lx + 18, y1 - (y1 - y0) * i / 2.0 + 4, "start", "tick", s);
  }
  if (c->unit) text(b, lx + 7, y1 + 30, "middle", "tick", c->unit);
  fig_close(b, c->note);
}

/* ------------------------------------------------------------------ lanes */

void etsim_report__lanes(rbuf_t *b, const rlanes_t *c) {
  int w = W_DEF, lm = 110, laneh = c->n_lanes > 24 ? 10 : 18;
  lentry_t le[32];
  size_t nle = 0;
  for (size_t k = 0; k < c->nkeys && nle < 32; k++)
    le[nle++] = (lentry_t){c->key_name[k], c->key_color[k], 0, NULL};
  int top = MT + 15 * (int)(nle > 5 ? (nle - 1) / 5 : 0);
  int h = top + laneh * (int)c->n_lanes + MB;
  raxis_t xa = {c->xlabel, 0, 1, NAN, NAN};
  scale_t xs = {0, 1, lm, w - MR, 0};
  domain(&xs, &xa, 0, c->t_end > 0 ? c->t_end : 1);
  fig_open(b, c->id, c->title, w, h);
  xgrid(b, &xs, top, h, c->xlabel);
  for (size_t l = 0; l < c->n_lanes; l++) {
    double y = top + laneh * (double)l;
    etsim_report__fmt(b, "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%d\" fill=\"%s\"/>", lm,
                      y + 1, w - MR - lm, laneh - 2,
                      (long)l == c->mark_lane ? "#fdf1d8" : "#f4f4f4");
    if (laneh >= 14 || l % 2 == 0 || (long)l == c->mark_lane)
      text(b, lm - 6, y + laneh - 4, "end", (long)l == c->mark_lane ? "tick strong" : "tick",
           c->lane_name[l]);
  }
  /* spans, merged per lane and colour when closer than half a pixel */
  etsim_report__put(b, "<g class=\"spans\">");
  size_t i = 0;
  while (i < c->n_spans) {
    const rspan_t *p = &c->spans[i];
    double a = sc(&xs, p->t0), z = sc(&xs, p->t1);
    size_t j = i + 1;
    while (j < c->n_spans && c->spans[j].lane == p->lane && c->spans[j].color == p->color &&
           sc(&xs, c->spans[j].t0) - z < 0.5) {
      double zz = sc(&xs, c->spans[j].t1);
      if (zz > z) z = zz;
      j++;
    }
    if (p->lane < c->n_lanes)
      etsim_report__fmt(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"%s\"/>",
                        a, top + laneh * (double)p->lane + 2, z - a > 0.6 ? z - a : 0.6, laneh - 4,
                        etsim_report__color(p->color));
    i = j;
  }
  etsim_report__put(b, "</g>\n");
  legend(b, le, nle, lm, w);
  fig_close(b, c->note);
}

/* ------------------------------------------------------------- page parts */

void etsim_report__facts(rbuf_t *b, const char *const *kv, size_t n_pairs) {
  etsim_report__put(b, "<dl class=\"facts\">");
  for (size_t i = 0; i < n_pairs; i++) {
    if (!kv[2 * i + 1]) continue;
    etsim_report__put(b, "<div><dt>");
    etsim_report__esc(b, kv[2 * i]);
    etsim_report__put(b, "</dt><dd>");
    etsim_report__esc(b, kv[2 * i + 1]);
    etsim_report__put(b, "</dd></div>");
  }
  etsim_report__put(b, "</dl>\n");
}

void etsim_report__section(rbuf_t *b, const char *id, const char *title, const char *from) {
  etsim_report__put(b, "<section class=\"input\" id=\"");
  etsim_report__esc(b, id);
  etsim_report__put(b, "\"><h2>");
  etsim_report__esc(b, title);
  etsim_report__put(b, "</h2>");
  if (from) {
    etsim_report__put(b, "<p class=\"from\">");
    etsim_report__esc(b, from);
    etsim_report__put(b, "</p>");
  }
  etsim_report__put(b, "\n");
}

void etsim_report__section_end(rbuf_t *b) { etsim_report__put(b, "</section>\n"); }

void etsim_report__note(rbuf_t *b, const char *fmt, ...) {
  char s[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s, sizeof s, fmt, ap);
  va_end(ap);
  etsim_report__put(b, "<p class=\"note\">");
  etsim_report__esc(b, s);
  etsim_report__put(b, "</p>\n");
}
