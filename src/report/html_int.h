/* Private to the HTML report (src/report/html*.c).
 *
 * The page is built in memory (rbuf_t) and written in one go through a
 * temporary name.  Charts are inline SVG drawn here (html_svg.c), so the page
 * needs nothing from the network and no script: tooltips are SVG <title>
 * elements, heat maps are PNG images inside the SVG (data: URIs).
 *
 * Each input kind has a section writer (html_sim.c, html_net.c,
 * html_sweep.c, html_plan.c for shard, html_replay.c, html_synth.c) that
 * reads the JSON other commands write, checks the keys it uses (errors name
 * the file and the key) and aggregates large inputs to a bounded number of
 * marks, saying so on the page.
 */
#ifndef ETSIM_REPORT_HTML_INT_H
#define ETSIM_REPORT_HTML_INT_H

#include "etsim/report.h"

#include <jansson.h>
#include <stdarg.h>

/* ------------------------------------------------------------ text buffer */

/* A growing text buffer.  A failed allocation sets `oom` and drops the
 * rest, so writers need not check each call; the page writer checks once. */
typedef struct rbuf {
  char *s;
  size_t n, cap;
  int oom;
  unsigned seq; /* for ids unique in the page (clip paths, gradients) */
} rbuf_t;

void etsim_report__put(rbuf_t *b, const char *s);
void etsim_report__putn(rbuf_t *b, const char *s, size_t n);
void etsim_report__fmt(rbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Text with & < > " ' escaped (for element content and attribute values). */
void etsim_report__esc(rbuf_t *b, const char *s);
/* A number for people: at most 4 significant digits, k/M/G/T above 10^4
 * ("1,284.2" is "1284", 1.5e6 is "1.5M"); never "nan" (gives "-"). */
void etsim_report__num(char *out, size_t cap, double v);
/* A time given in us, in ns, us, ms or s to keep it short ("10 ms"). */
void etsim_report__time_us(char *out, size_t cap, double us);
/* Bytes with binary units ("48 MiB"). */
void etsim_report__bytes(char *out, size_t cap, double v);

/* --------------------------------------------------------------- charts */

/* Colour-blind-safe categorical palette (Okabe and Ito, 2008), 8 colours;
 * index i >= 8 repeats with a dash pattern. */
const char *etsim_report__color(int i);
#define RPT_NCOLORS 8
#define RPT_GREY 99 /* a neutral grey for "other" */

enum { RS_LINE = 0, RS_STEP, RS_POINTS, RS_LINE_POINTS };

typedef struct rseries {
  const char *name;
  const double *x, *y;
  size_t n;
  int color;               /* palette index */
  int style;               /* RS_* */
  const char *const *tips; /* tooltip per point, or NULL */
  int faint;               /* drawn light, behind the others, not in the legend */
} rseries_t;

typedef struct raxis {
  const char *label; /* with the unit: "time (us)" */
  int log;           /* log10 scale (non-positive values are left out) */
  int zero;          /* linear: include 0 in the range */
  double min, max;   /* NAN: from the data */
} raxis_t;

/* Lines, steps and points on numeric axes.  diag draws y = x with shaded
 * bands for +-10 % and +-25 % (measured against recorded). */
typedef struct rxy {
  const char *id, *title, *note;
  raxis_t x, y;
  const rseries_t *s;
  size_t ns;
  int diag;
  int w, h; /* 0: defaults */
} rxy_t;
void etsim_report__xy(rbuf_t *b, const rxy_t *c);

/* Vertical bars, one per category, with several series stacked or side
 * by side.  Many categories are drawn without gaps and labelled sparsely.
 * lo/hi (optional) draw a whisker per category, for groups of aggregated
 * items; `mark` outlines one category and names it. */
typedef struct rbars {
  const char *id, *title, *note;
  const char *xlabel, *ylabel;
  size_t n;
  const char *const *cat; /* category labels */
  size_t nser;
  const char *const *ser_name;
  const double *const *val; /* val[series][category] */
  const int *colors;        /* palette index per series, or NULL */
  int stacked;
  int ylog;
  const double *lo, *hi;
  long mark;
  const char *mark_label;
  const char *const *tips; /* per category, or NULL */
} rbars_t;
void etsim_report__bars(rbuf_t *b, const rbars_t *c);

/* Horizontal stacked bars: rows of segments (a breakdown of a total). */
typedef struct rhstack {
  const char *id, *title, *note, *xlabel;
  size_t rows, nseg;
  const char *const *row_name, *const *seg_name;
  const double *val; /* rows * nseg, row-major; NAN or 0: no segment */
  const int *colors; /* per segment */
} rhstack_t;
void etsim_report__hstack(rbuf_t *b, const rhstack_t *c);

/* A heat map: rows x cols values drawn as a PNG inside the SVG (so 10,000
 * cells cost a few KB), a viridis colour scale with its legend, labels on
 * both axes (every k-th when there are many). */
typedef struct rheat {
  const char *id, *title, *note, *xlabel, *ylabel, *unit;
  size_t rows, cols;
  const double *v; /* rows * cols, NAN: no data (drawn light grey) */
  const char *const *row_name, *const *col_name;
  double vmin, vmax; /* NAN: from the data */
  double x0, x1;     /* x1 > x0: columns span [x0, x1] of a numeric axis (ticks, not names) */
} rheat_t;
void etsim_report__heat(rbuf_t *b, const rheat_t *c);

/* Spans on horizontal lanes (a timeline overview). */
typedef struct rspan {
  uint32_t lane;
  double t0, t1;
  int color;
} rspan_t;
typedef struct rlanes {
  const char *id, *title, *note, *xlabel;
  size_t n_lanes;
  const char *const *lane_name;
  const rspan_t *spans;
  size_t n_spans;
  double t_end;
  size_t nkeys; /* legend: colour index -> name */
  const char *const *key_name;
  const int *key_color;
  long mark_lane; /* drawn bold, -1 none */
} rlanes_t;
void etsim_report__lanes(rbuf_t *b, const rlanes_t *c);

/* ------------------------------------------------------------ the page */

/* Key figures as a definition list: "name" then "value" pairs. */
void etsim_report__facts(rbuf_t *b, const char *const *kv, size_t n_pairs);
/* <section> with an id, a heading and the input it comes from. */
void etsim_report__section(rbuf_t *b, const char *id, const char *title, const char *from);
void etsim_report__section_end(rbuf_t *b);
/* A short paragraph in the "note" style (aggregation, missing data). */
void etsim_report__note(rbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ------------------------------------------------------------- inputs */

enum {
  RK_SIM = 1,    /* etsim sim --json */
  RK_NETSUM,     /* etsim netsim --json (summary) */
  RK_NETTL,      /* netsim --timeline / sim --net-timeline (Perfetto) */
  RK_SIMTL,      /* sim --timeline (Perfetto, linked from the sim section) */
  RK_SWEEP,      /* sweep points.jsonl / points.csv */
  RK_PLAN,       /* etsim shard -o plan.json */
  RK_CANDS,      /* etsim shard --json candidates */
  RK_REPLAY,     /* etsim replay --json */
  RK_REPLAY_CSV, /* etsim replay --csv */
  RK_REPLAY_DRY, /* etsim replay --dry-run --json */
  RK_SYNTH       /* etsim synth eval --json */
};

typedef struct rnet rnet_t; /* a parsed network timeline (html_net.c) */

typedef struct rin {
  const char *path, *label;
  int kind;
  json_t *doc;      /* JSON kinds; sweep and CSV rows as an array of objects */
  rnet_t *net;      /* RK_NETTL */
  size_t bytes;     /* file size */
  size_t index;     /* 1-based position among the inputs (section ids "inN") */
  int live;         /* made in memory by the run itself (sim --report) */
  const char *link; /* RK_SIM: the Perfetto timeline to link, or NULL */
  char *href;       /* this file, as a link from the page's folder */
  char *link_href;  /* `link`, likewise */
} rin_t;

/* Parse a Perfetto network timeline (netsim's layout) from memory. */
int etsim_report__net_parse(const char *path, const char *text, size_t n, rnet_t **out,
                            etsim_error_t *err);
void etsim_report__net_free(rnet_t *t);

/* Typed access to a JSON document with errors naming FILE: key. */
int etsim_report__get_num(const rin_t *in, const json_t *obj, const char *key, const char *where,
                          double *out, etsim_error_t *err);
double etsim_report__num_or(const json_t *obj, const char *key, double dflt);
const char *etsim_report__str_or(const json_t *obj, const char *key, const char *dflt);

/* The section writers.  Each returns 0 or a negative ETSIM_E* code with the
 * file and key named in err. */
int etsim_report__sim(rbuf_t *b, const rin_t *in, etsim_error_t *err);
int etsim_report__netsim(rbuf_t *b, const rin_t *ins, size_t n, etsim_error_t *err);
int etsim_report__sweep(rbuf_t *b, const rin_t *in, const etsim_report_html_opts_t *o,
                        etsim_error_t *err);
int etsim_report__plan(rbuf_t *b, const rin_t *in, etsim_error_t *err);
int etsim_report__replay(rbuf_t *b, const rin_t *in, etsim_error_t *err);
int etsim_report__synth(rbuf_t *b, const rin_t *in, etsim_error_t *err);

/* Render inputs already loaded (the page, the footer); used by the file
 * path and by sim --report, which builds its document in memory. */
int etsim_report__page(const char *out_path, rin_t *ins, size_t n,
                       const etsim_report_html_opts_t *o, etsim_error_t *err);

/* The sim result as the JSON document etsim_report_json writes (report.c). */
json_t *etsim_report__sim_json(const etsim_sim_result_t *r, const etsim_et_set_t *set);

#endif
