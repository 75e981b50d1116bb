/* The HTML report's page: inputs read and recognised, one section per
 * input (network runs together, so their FCT distributions share a chart),
 * a table of contents, and a footer naming every input and the etsim
 * version.  The page is one file: styles inline, charts inline SVG, no
 * script and nothing fetched, so it opens the same offline, in a mail or
 * from a CI artefact.  Same inputs, same bytes (no clock, no addresses).
 */
#include "html_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef ETSIM_VERSION
#define ETSIM_VERSION "unknown"
#endif

/* Inputs larger than this are refused rather than read into memory. */
#define MAX_INPUT_BYTES ((size_t)4 << 30)

/* ---------------------------------------------------------- JSON access */

int etsim_report__get_num(const rin_t *in, const json_t *obj, const char *key, const char *where,
                          double *out, etsim_error_t *err) {
  const json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
  if (!v)
    return etsim_error_set(err, ETSIM_EFORMAT, "%s: %s%s%s: missing", in->path, where ? where : "",
                           where ? "." : "", key);
  if (!json_is_number(v) || !isfinite(json_number_value(v)))
    return etsim_error_set(err, ETSIM_EFORMAT, "%s: %s%s%s: not a number", in->path,
                           where ? where : "", where ? "." : "", key);
  *out = json_number_value(v);
  return 0;
}

double etsim_report__num_or(const json_t *obj, const char *key, double dflt) {
  const json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
  return v && json_is_number(v) && isfinite(json_number_value(v)) ? json_number_value(v) : dflt;
}

const char *etsim_report__str_or(const json_t *obj, const char *key, const char *dflt) {
  const json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
  return v && json_is_string(v) ? json_string_value(v) : dflt;
}

/* ----------------------------------------------------------- recognition */

static int ends_with(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && strcmp(s + a - b, suf) == 0;
}

/* A number as CSV and sweep rows write it ("12", "-3.5e6"), whole field. */
static int parse_number(const char *s, double *out) {
  if (!*s) return 0;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (*end || errno || !isfinite(v)) return 0;
  *out = v;
  return 1;
}

/* One CSV record (RFC 4180: quotes, doubled quotes, commas and newlines
 * inside quotes) from *p; fields are written into `buf` NUL-separated.
 * Returns the number of fields, 0 at the end, -1 on an unclosed quote. */
static int csv_record(const char **p, const char *end, char *buf, const char **field, int cap) {
  const char *s = *p;
  if (s >= end) return 0;
  int n = 0;
  char *o = buf;
  for (;;) {
    if (n == cap) return -2;
    field[n++] = o;
    if (s < end && *s == '"') {
      s++;
      for (;;) {
        if (s >= end) return -1;
        if (*s == '"') {
          if (s + 1 < end && s[1] == '"') {
            *o++ = '"';
            s += 2;
            continue;
          }
          s++;
          break;
        }
        *o++ = *s++;
      }
    }
    while (s < end && *s != ',' && *s != '\n' && *s != '\r') *o++ = *s++;
    *o++ = 0;
    if (s < end && *s == ',') {
      s++;
      continue;
    }
    if (s < end && *s == '\r') s++;
    if (s < end && *s == '\n') s++;
    break;
  }
  *p = s;
  return n;
}

#define CSV_MAX_COLS 512

/* A CSV file with a header row as an array of objects (numbers as
 * numbers, the rest as strings, empty fields left out). */
static int load_csv(rin_t *in, const char *text, size_t n, etsim_error_t *err) {
  const char *p = text, *end = text + n;
  char *buf = etsim_malloc(n + 1), *hbuf = etsim_malloc(n + 1);
  const char **hdr = etsim_malloc(CSV_MAX_COLS * sizeof *hdr);
  const char **fld = etsim_malloc(CSV_MAX_COLS * sizeof *fld);
  json_t *rows = json_array();
  int rc = 0;
  if (!buf || !hbuf || !hdr || !fld || !rows) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", in->path);
    goto out;
  }
  int nh = csv_record(&p, end, hbuf, hdr, CSV_MAX_COLS);
  if (nh <= 0) {
    rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:1: %s", in->path,
                         nh == -2 ? "more than 512 columns" : "no header row");
    goto out;
  }
  for (size_t line = 2;; line++) {
    const char *at = p;
    int nf = csv_record(&p, end, buf, fld, CSV_MAX_COLS);
    if (nf == 0) break;
    if (nf == 1 && !fld[0][0]) continue; /* blank line */
    if (nf < 0 || nf != nh) {
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:%zu: %s (%d fields, the header has %d)",
                           in->path, line, nf == -1 ? "unclosed quote" : "wrong number of fields",
                           nf < 0 ? 0 : nf, nh);
      goto out;
    }
    for (const char *q = at; q < p; q++) line += *q == '\n' && q + 1 < p;
    json_t *o = json_object();
    for (int k = 0; k < nh; k++) {
      double v;
      if (!fld[k][0]) continue;
      json_object_set_new(o, hdr[k], parse_number(fld[k], &v) ? json_real(v) : json_string(fld[k]));
    }
    json_array_append_new(rows, o);
  }
  in->doc = rows;
  rows = NULL;
out:
  json_decref(rows);
  etsim_free(buf);
  etsim_free(hbuf);
  etsim_free(hdr);
  etsim_free(fld);
  return rc;
}

/* One JSON object per line (blank lines skipped). */
static int load_jsonl(rin_t *in, const char *text, size_t n, etsim_error_t *err) {
  json_t *rows = json_array();
  const char *p = text, *end = text + n;
  for (size_t line = 1; p < end; line++) {
    const char *e = memchr(p, '\n', (size_t)(end - p));
    if (!e) e = end;
    const char *q = p;
    while (q < e && (*q == ' ' || *q == '\t' || *q == '\r')) q++;
    if (q < e) {
      json_error_t je;
      json_t *o = json_loadb(p, (size_t)(e - p), 0, &je);
      if (!o || !json_is_object(o)) {
        json_decref(o);
        json_decref(rows);
        return etsim_error_set(err, ETSIM_EFORMAT, "%s:%zu: %s", in->path, line,
                               o ? "not a JSON object" : je.text);
      }
      json_array_append_new(rows, o);
    }
    p = e + 1;
  }
  in->doc = rows;
  return 0;
}

static int kind_of_doc(const json_t *d) {
  if (!json_is_object(d)) return 0;
  if (json_object_get(d, "npus") && json_object_get(d, "total_ns")) return RK_SIM;
  if (json_object_get(d, "etsim_shard_plan")) return RK_PLAN;
  if (json_object_get(d, "candidates") && json_object_get(d, "chosen")) return RK_CANDS;
  if (json_object_get(d, "per_node") && json_object_get(d, "iteration")) return RK_REPLAY;
  if (json_object_get(d, "per_rank") && json_object_get(d, "prefix")) return RK_REPLAY_DRY;
  if (json_object_get(d, "w1_layers") && json_object_get(d, "validity")) return RK_SYNTH;
  if (json_object_get(d, "flows_done") && json_object_get(d, "last_done_ns")) return RK_NETSUM;
  return 0;
}

static int load_input(rin_t *in, etsim_error_t *err) {
  char *text = NULL;
  size_t n = 0;
  /* An output of this run still waiting in the batch (netsim's timeline)
   * is read under its temporary name. */
  const char *src = etsim_outfile_batched(in->path);
  int rc = etsim_read_text(src ? src : in->path, MAX_INPUT_BYTES, &text, &n, err);
  if (rc) return rc;
  in->bytes = n;
  const char *p = text;
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
  if (ends_with(in->path, ".jsonl")) {
    in->kind = RK_SWEEP;
    rc = load_jsonl(in, text, n, err);
  } else if (ends_with(in->path, ".csv")) {
    in->kind = strncmp(p, "rank,id,name,kind", 17) == 0 ? RK_REPLAY_CSV : RK_SWEEP;
    rc = load_csv(in, text, n, err);
  } else if (*p == '{' && strstr(p, "\"traceEvents\"") &&
             (size_t)(strstr(p, "\"traceEvents\"") - p) < 4096) {
    /* A Perfetto file: the network's (a "messages" process, port counters)
     * is read in full; the simulator's is only linked. */
    if (strstr(p, "\"cat\":\"msg\"") || strstr(p, "\"name\":\"messages\"") ||
        strstr(p, "\"tx Gb/s\"")) {
      in->kind = RK_NETTL;
      rc = etsim_report__net_parse(in->path, text, n, &in->net, err);
    } else {
      in->kind = RK_SIMTL;
    }
  } else {
    json_error_t je;
    in->doc = json_loadb(text, n, 0, &je);
    if (!in->doc)
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s:%d:%d: %s", in->path, je.line, je.column,
                           je.text);
    else if (!(in->kind = kind_of_doc(in->doc)))
      rc = etsim_error_set(err, ETSIM_EFORMAT,
                           "%s: not a result etsim report knows (sim --json, netsim --json or "
                           "--timeline, sweep points, shard plan or --json, replay --json or "
                           "--csv, synth eval --json)",
                           in->path);
  }
  etsim_free(text);
  return rc;
}

/* ------------------------------------------------------------- links */

/* `target` as a link from the folder of `page`: the page may be opened from
 * anywhere, so a link must be relative to where the page is, not to where
 * etsim ran.  Both are resolved (the page's folder exists, and the target
 * or its folder: a timeline of the same run waits in the output batch
 * until the page is written); NULL when either cannot be, and the caller
 * links `target` as is. */
static char *resolve(const char *p) {
  char *t = realpath(p, NULL);
  if (t) return t;
  const char *slash = strrchr(p, '/');
  char dir[4096];
  snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - p) : 1, slash ? p : ".");
  char *d = realpath(dir[0] ? dir : "/", NULL);
  if (!d) return NULL;
  const char *base = slash ? slash + 1 : p;
  /* malloc, as realpath's result: the caller frees either with free() */
  t = malloc(strlen(d) + strlen(base) + 2);
  if (t) sprintf(t, "%s/%s", strcmp(d, "/") ? d : "", base);
  free(d);
  return t;
}

static char *href_from(const char *page, const char *target) {
  char dir[4096], *slash;
  snprintf(dir, sizeof dir, "%s", page);
  slash = strrchr(dir, '/');
  if (slash) *slash = 0;
  else snprintf(dir, sizeof dir, ".");
  char *d = realpath(dir[0] ? dir : "/", NULL), *t = resolve(target);
  char *out = NULL;
  if (d && t) {
    /* the common folders, then one "../" per folder of the page's own */
    size_t i = 0, last = 0, nd = strlen(d), ups = 0;
    while (d[i] && d[i] == t[i]) {
      i++;
      if (d[i - 1] == '/') last = i;
    }
    if (!d[i] && t[i] == '/') last = i + 1;
    if (last < nd) {
      ups = 1;
      for (size_t k = last; k < nd; k++) ups += d[k] == '/';
    }
    out = etsim_malloc(ups * 3 + strlen(t + last) + 1);
    if (out) {
      out[0] = 0;
      for (size_t k = 0; k < ups; k++) strcat(out, "../");
      strcat(out, t + last);
    }
  }
  free(d);
  free(t);
  return out;
}

/* ------------------------------------------------------------------ page */

static const char *css =
    ":root{--fg:#1d1d1f;--muted:#5b5f66;--line:#dcdcdc;--card:#f5f6f7}\n"
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'Noto Sans',sans-serif;"
    "color:var(--fg);margin:0;background:#fff}\n"
    "header,main,footer{max-width:920px;margin:0 auto;padding:0 20px}\n"
    "header h1{font-size:24px;margin:22px 0 2px}header p{margin:0 0 8px;color:var(--muted)}\n"
    "nav ol{margin:6px 0 14px;padding-left:22px}nav a{color:#0a4f8a}\n"
    "section.input{border-top:1px solid var(--line);padding:6px 0 14px}\n"
    "h2{font-size:19px;margin:16px 0 0}h3{font-size:15px;margin:16px 0 4px}\n"
    "p.from{color:var(--muted);margin:0 0 6px;font-size:12.5px;word-break:break-all}\n"
    "dl.facts{display:grid;grid-template-columns:repeat(auto-fill,minmax(165px,1fr));gap:8px;"
    "margin:10px 0}\n"
    "dl.facts div{background:var(--card);border-radius:6px;padding:6px 10px}\n"
    "dt{color:var(--muted);font-size:12px}dd{margin:0;font-size:16px;font-weight:600}\n"
    "figure.chart{margin:18px 0 10px}figcaption{font-weight:600;margin-bottom:4px}\n"
    "figure svg{width:100%;height:auto;display:block}\n"
    "svg text{font:12px system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;fill:#333}\n"
    "svg .tick{font-size:11px;fill:#555}svg .label{font-size:12px;fill:#222}\n"
    "svg .grid{stroke:#ebebeb}svg .axis{stroke:#777}\n"
    "svg .whisker{stroke:#222;fill:none;stroke-width:1}\n"
    "svg .mark{fill:none;stroke:#000;stroke-width:1.5;stroke-dasharray:4 2}\n"
    "svg .marklabel{font-weight:700;fill:#000}svg .strong{font-weight:700;fill:#000}\n"
    "svg .inbar{font-size:11px;fill:#111}svg .inbar.light{fill:#fff}\n"
    "p.note{color:var(--muted);font-size:12.5px;margin:4px 0}\n"
    "table{border-collapse:collapse;font-size:13px;margin:8px 0}\n"
    "td,th{padding:3px 10px 3px 0;border-bottom:1px solid var(--line);text-align:right}\n"
    "th{font-weight:600}td.l,th.l{text-align:left}\n"
    "a{color:#0a4f8a}code{font-size:12.5px}\n"
    "footer{color:var(--muted);font-size:12.5px;border-top:1px solid var(--line);"
    "margin-top:24px;padding-top:10px;padding-bottom:30px}\n"
    "footer ul{padding-left:18px;margin:4px 0}\n";

static const char *kind_name(int k) {
  switch (k) {
    case RK_SIM:
      return "sim --json";
    case RK_NETSUM:
      return "netsim --json";
    case RK_NETTL:
      return "network timeline";
    case RK_SIMTL:
      return "sim --timeline";
    case RK_SWEEP:
      return "sweep points";
    case RK_PLAN:
      return "shard plan";
    case RK_CANDS:
      return "shard --json";
    case RK_REPLAY:
      return "replay --json";
    case RK_REPLAY_CSV:
      return "replay --csv";
    case RK_REPLAY_DRY:
      return "replay --dry-run --json";
    case RK_SYNTH:
      return "synth eval --json";
    default:
      return "?";
  }
}

/* Sections in a fixed order of kinds; inputs of a kind in the order given. */
static const int order[] = {RK_SIM,   RK_SIMTL,  RK_NETTL,      RK_NETSUM,     RK_SWEEP, RK_PLAN,
                            RK_CANDS, RK_REPLAY, RK_REPLAY_CSV, RK_REPLAY_DRY, RK_SYNTH};

static int section_of(rbuf_t *b, rin_t *ins, size_t n, int kind, const etsim_report_html_opts_t *o,
                      etsim_error_t *err) {
  if (kind == RK_NETTL || kind == RK_NETSUM) { /* one section for both kinds */
    int tl = 0;
    for (size_t i = 0; i < n; i++) tl |= ins[i].kind == RK_NETTL;
    if (kind == RK_NETSUM && tl) return 0;
    return etsim_report__netsim(b, ins, n, err);
  }
  for (size_t i = 0; i < n; i++) {
    rin_t *in = &ins[i];
    if (in->kind != kind) continue;
    int rc = 0;
    switch (kind) {
      case RK_SIM:
        rc = etsim_report__sim(b, in, err);
        break;
      case RK_SIMTL: {
        /* linked from a sim section when there is one */
        int linked = 0;
        for (size_t k = 0; k < n; k++) linked |= ins[k].kind == RK_SIM && ins[k].link == in->path;
        if (linked) break;
        char id[32];
        snprintf(id, sizeof id, "in%zu", i + 1);
        etsim_report__section(b, id, in->label, in->path);
        etsim_report__put(b, "<p>Perfetto timeline: <a href=\"");
        etsim_report__esc(b, in->href ? in->href : in->path);
        etsim_report__put(b, "\">");
        etsim_report__esc(b, in->path);
        etsim_report__put(b,
                          "</a> (open it in <a href=\"https://ui.perfetto.dev\">ui.perfetto.dev"
                          "</a>: Open trace file).</p>\n");
        etsim_report__section_end(b);
        break;
      }
      case RK_SWEEP:
        rc = etsim_report__sweep(b, in, o, err);
        break;
      case RK_PLAN:
      case RK_CANDS:
        rc = etsim_report__plan(b, in, err);
        break;
      case RK_REPLAY:
      case RK_REPLAY_CSV:
      case RK_REPLAY_DRY:
        rc = etsim_report__replay(b, in, err);
        break;
      case RK_SYNTH:
        rc = etsim_report__synth(b, in, err);
        break;
      default:
        break;
    }
    if (rc) return rc;
  }
  return 0;
}

static const char *section_title(int kind) {
  switch (kind) {
    case RK_SIM:
      return "Simulation";
    case RK_NETTL:
      return "Network";
    case RK_SWEEP:
      return "Sweep";
    case RK_PLAN:
      return "Sharding plan";
    case RK_CANDS:
      return "Sharding candidates";
    case RK_REPLAY:
    case RK_REPLAY_CSV:
    case RK_REPLAY_DRY:
      return "Replay";
    case RK_SYNTH:
      return "Synthetic traces";
    default:
      return NULL;
  }
}

int etsim_report__page(const char *out_path, rin_t *ins, size_t n,
                       const etsim_report_html_opts_t *o, etsim_error_t *err) {
  rbuf_t b = {0};
  const char *title = o && o->title ? o->title : "etsim report";
  /* a sim timeline given next to one sim result is that result's link */
  size_t n_sim = 0, n_tl = 0;
  for (size_t i = 0; i < n; i++) {
    n_sim += ins[i].kind == RK_SIM;
    n_tl += ins[i].kind == RK_SIMTL;
  }
  for (size_t i = 0; i < n; i++)
    if (ins[i].kind == RK_SIMTL && n_sim == 1 && n_tl == 1)
      for (size_t k = 0; k < n; k++)
        if (ins[k].kind == RK_SIM && !ins[k].link) ins[k].link = ins[i].path;
  for (size_t i = 0; i < n; i++) {
    if (!ins[i].live) ins[i].href = href_from(out_path, ins[i].path);
    if (ins[i].link) ins[i].link_href = href_from(out_path, ins[i].link);
  }
  etsim_report__put(&b,
                    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
                    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                    "<meta name=\"generator\" content=\"etsim " ETSIM_VERSION "\">\n<title>");
  etsim_report__esc(&b, title);
  etsim_report__fmt(&b, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<header><h1>", css);
  etsim_report__esc(&b, title);
  etsim_report__fmt(&b, "</h1><p>%zu input%s. Hover over a bar, point or line for its value.</p>",
                    n, n == 1 ? "" : "s");
  /* contents: one entry per kind present */
  etsim_report__put(&b, "<nav><ol>");
  int net_listed = 0;
  for (size_t k = 0; k < sizeof order / sizeof *order; k++)
    for (size_t i = 0; i < n; i++) {
      int kd = ins[i].kind;
      if (kd != order[k] || kd == RK_SIMTL) continue;
      if (kd == RK_NETTL || kd == RK_NETSUM) {
        if (net_listed++) continue;
        etsim_report__put(&b, "<li><a href=\"#network\">Network");
        etsim_report__put(&b, "</a></li>");
        continue;
      }
      etsim_report__fmt(&b, "<li><a href=\"#in%zu\">%s: ", i + 1, section_title(kd));
      etsim_report__esc(&b, ins[i].label);
      etsim_report__put(&b, "</a></li>");
    }
  etsim_report__put(&b, "</ol></nav></header>\n<main>\n");
  int rc = 0;
  for (size_t k = 0; k < sizeof order / sizeof *order && !rc; k++) {
    int present = 0;
    for (size_t i = 0; i < n; i++) present |= ins[i].kind == order[k];
    if (present) rc = section_of(&b, ins, n, order[k], o, err);
  }
  if (rc) {
    etsim_free(b.s);
    return rc;
  }
  etsim_report__put(&b, "</main>\n<footer><p>Made by etsim " ETSIM_VERSION
                        " (<code>etsim report</code>). The page is self-contained: it loads "
                        "nothing from the network. Colours: Okabe-Ito and viridis, both readable "
                        "with colour-vision deficiencies.</p><p>Inputs:</p><ul>");
  for (size_t i = 0; i < n; i++) {
    etsim_report__put(&b, "<li><code>");
    etsim_report__esc(&b, ins[i].path);
    etsim_report__fmt(&b, "</code> (%s", ins[i].live ? "this run" : kind_name(ins[i].kind));
    if (ins[i].bytes) etsim_report__fmt(&b, ", %zu bytes", ins[i].bytes);
    etsim_report__put(&b, ")</li>");
  }
  etsim_report__put(&b, "</ul></footer>\n</body></html>\n");
  if (b.oom) {
    etsim_free(b.s);
    return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory building the page", out_path);
  }
  etsim_outfile_t of;
  rc = etsim_outfile_open(&of, out_path, err);
  if (!rc) {
    if (fwrite(b.s, 1, b.n, of.fp) != b.n) {
      etsim_outfile_abort(&of);
      rc = etsim_error_set(err, ETSIM_EIO, "%s: write failed", out_path);
    } else {
      rc = etsim_outfile_commit(&of, err);
    }
  }
  etsim_free(b.s);
  return rc;
}

static void free_inputs(rin_t *ins, size_t n) {
  for (size_t i = 0; i < n; i++) {
    json_decref(ins[i].doc);
    etsim_report__net_free(ins[i].net);
    etsim_free(ins[i].href); /* set by etsim_report__page */
    etsim_free(ins[i].link_href);
  }
  etsim_free(ins);
}

/* The label a file gets when none is given: its name without folders. */
static const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

int etsim_report_html(const char *out_path, const etsim_report_input_t *inputs, size_t n,
                      const etsim_report_html_opts_t *o, etsim_error_t *err) {
  if (!n) return etsim_error_set(err, ETSIM_EINVAL, "report: no inputs");
  rin_t *ins = etsim_calloc(n, sizeof *ins);
  if (!ins) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    ins[i].path = inputs[i].path;
    ins[i].index = i + 1;
    ins[i].label = inputs[i].label ? inputs[i].label : base_name(inputs[i].path);
    rc = load_input(&ins[i], err);
  }
  if (!rc) rc = etsim_report__page(out_path, ins, n, o, err);
  free_inputs(ins, n);
  return rc;
}

int etsim_report_html_sim(const char *out_path, const etsim_sim_result_t *r,
                          const etsim_et_set_t *set, const etsim_topo_t *topo, const char *label,
                          const etsim_report_html_opts_t *o, etsim_error_t *err) {
  json_t *doc = etsim_report__sim_json(r, set);
  if (!doc) return etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  if (topo) {
    /* what only the run knows: the dimensions' names, sizes and speeds */
    json_t *dims = json_array();
    for (int d = 0; d < topo->ndims; d++)
      json_array_append_new(
          dims, json_pack("{s:s,s:i,s:f,s:f}", "kind", etsim_topo_kind_name(topo->kind[d]), "npus",
                          (json_int_t)topo->npus[d], "bw_gbps", topo->bw_gbps[d], "latency_ns",
                          topo->lat_ns[d]));
    json_object_set_new(doc, "topology", dims);
  }
  rin_t in = {.path = label ? label : "simulation",
              .label = label ? label : "simulation",
              .kind = RK_SIM,
              .doc = doc,
              .index = 1,
              .live = 1,
              .link = o ? o->timeline : NULL};
  int rc = etsim_report__page(out_path, &in, 1, o, err);
  json_decref(doc);
  etsim_free(in.href);
  etsim_free(in.link_href);
  return rc;
}
