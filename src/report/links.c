/* Per-link statistics of a simulation: bytes and busy fraction per link
 * (per NPU and dimension on the analytical backend, which has no links),
 * as a summary line naming the hottest links, a JSON array and a CSV.
 *
 * Busy fraction = time the link spent sending / the iteration time.  On the
 * analytical backend messages never wait for each other, so an NPU's
 * injection into a dimension can be busy for more than the whole run: the
 * summary says so, since such a number is physically impossible (ASTRA-sim
 * trap 2 in the reference notes) and the congestion backend gives the
 * sharing.
 */
#include "report_int.h"

#include <jansson.h>
#include <string.h>

static double frac(const etsim_sim_result_t *r, size_t k) {
  return r->total_ps > 0 ? (double)r->links.busy_ps[k] / (double)r->total_ps : 0;
}

/* Indices of the `want` busiest links, busiest first (ties: lower index). */
static size_t hottest(const etsim_sim_result_t *r, size_t *out, size_t want) {
  size_t n = 0;
  for (size_t k = 0; k < r->links.n; k++) {
    if (!r->links.bytes[k]) continue;
    size_t at = n < want ? n++ : want;
    if (at == want && r->links.busy_ps[k] <= r->links.busy_ps[out[want - 1]]) continue;
    if (at == want) at = want - 1;
    while (at > 0 && r->links.busy_ps[out[at - 1]] < r->links.busy_ps[k]) {
      out[at] = out[at - 1];
      at--;
    }
    out[at] = k;
  }
  return n;
}

void etsim_report_links_summary(FILE *f, const etsim_sim_result_t *r) {
  if (!r->links.n) return;
  size_t top[3];
  size_t n = hottest(r, top, 3);
  int over = 0;
  fprintf(f, "hottest links ");
  for (size_t i = 0; i < n; i++) {
    char name[96];
    etsim_net_link_name(r->links_backend, &r->topo, top[i], name, sizeof name);
    double fr = frac(r, top[i]);
    if (fr > 1) over = 1;
    fprintf(f, "%s%s %.1f %% busy, %.2f MiB", i ? "; " : "", name, 100 * fr,
            (double)r->links.bytes[top[i]] / 1048576.0);
  }
  if (!n) fprintf(f, "(no traffic)");
  fprintf(f, "\n");
  if (over)
    fprintf(f,
            "              over 100 %%: the analytical model lets an NPU's messages overlap on "
            "one link; --backend congestion shares it\n");
}

int etsim_report__links_json(json_t *root, const etsim_sim_result_t *r) {
  if (!r->links.n) return 0;
  json_t *a = json_array();
  for (size_t k = 0; k < r->links.n; k++) {
    if (!r->links.bytes[k]) continue;
    char name[96];
    etsim_net_link_name(r->links_backend, &r->topo, k, name, sizeof name);
    json_t *o = json_object();
    json_object_set_new(o, "link", json_string(name));
    json_object_set_new(o, "bytes", json_integer((json_int_t)r->links.bytes[k]));
    json_object_set_new(o, "busy_ns", json_integer((json_int_t)(r->links.busy_ps[k] / 1000)));
    json_object_set_new(o, "busy_fraction", json_real(frac(r, k)));
    json_array_append_new(a, o);
  }
  return json_object_set_new(root, "links", a);
}

int etsim_report_links_csv(const char *path, const etsim_sim_result_t *r, etsim_error_t *err) {
  if (!r->links.n)
    return etsim_error_set(err, ETSIM_EINVAL, "%s: no per-link statistics were kept", path);
  etsim_outfile_t o;
  int rc = etsim_outfile_open(&o, path, err);
  if (rc) return rc;
  FILE *f = o.fp;
  fprintf(f, "link,bytes,busy_ns,busy_fraction\n");
  for (size_t k = 0; k < r->links.n; k++) {
    char name[96];
    etsim_net_link_name(r->links_backend, &r->topo, k, name, sizeof name);
    fprintf(f, "\"%s\",%llu,%lld,%.6f\n", name, (unsigned long long)r->links.bytes[k],
            (long long)(r->links.busy_ps[k] / 1000), frac(r, k));
  }
  if (ferror(f)) {
    etsim_outfile_abort(&o);
    return etsim_error_set(err, ETSIM_EIO, "%s: write failed", path);
  }
  return etsim_outfile_commit(&o, err);
}
