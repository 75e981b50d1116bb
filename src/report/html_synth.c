/* The synthetic-trace section of the HTML report, from `etsim synth eval
 * --json`: the metrics, and real against generated histograms of what they
 * compare (layers, nodes and edges per DAG, layer sizes, degrees and
 * categories over all nodes).  Each histogram is drawn as shares of its
 * set, so sets of different sizes compare; wide ranges come in bins.
 */
#include "html_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
  const char *key, *title, *x;
} hists[] = {{"layers", "Layers per DAG", "layers"},
             {"nodes", "Nodes per DAG", "nodes"},
             {"edges", "Edges per DAG", "edges"},
             {"layer_size", "Layer sizes (all layers)", "nodes in a layer"},
             {"in_degree", "In-degree (all nodes)", "in-degree"},
             {"out_degree", "Out-degree (all nodes)", "out-degree"},
             {"category", "Node categories (first channel)", "category"}};

static int histogram(rbuf_t *b, const rin_t *in, const json_t *h, size_t k, etsim_error_t *err) {
  const json_t *lo = json_object_get(h, "lo"), *r = json_object_get(h, "real"),
               *g = json_object_get(h, "generated");
  size_t n = json_array_size(lo);
  if (!n || json_array_size(r) != n || json_array_size(g) != n)
    return etsim_error_set(err, ETSIM_EFORMAT,
                           "%s: histograms.%s: lo, real and generated must be arrays of one "
                           "length",
                           in->path, hists[k].key);
  double width = etsim_report__num_or(h, "width", 1), sr = 0, sg = 0;
  double *vr = etsim_malloc(n * sizeof *vr), *vg = etsim_malloc(n * sizeof *vg);
  char **cat = etsim_calloc(n, sizeof *cat);
  int rc = 0;
  if (!vr || !vg || !cat) {
    rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    vr[i] = json_number_value(json_array_get(r, i));
    vg[i] = json_number_value(json_array_get(g, i));
    sr += vr[i];
    sg += vg[i];
  }
  /* drop empty bins at the top: the range is shared, the tail is noise */
  while (n > 1 && vr[n - 1] == 0 && vg[n - 1] == 0) n--;
  for (size_t i = 0; i < n; i++) {
    vr[i] = sr > 0 ? 100 * vr[i] / sr : 0;
    vg[i] = sg > 0 ? 100 * vg[i] / sg : 0;
    char s[48];
    double a = json_number_value(json_array_get(lo, i));
    if (width > 1) snprintf(s, sizeof s, "%.0f-%.0f", a, a + width - 1);
    else snprintf(s, sizeof s, "%.0f", a);
    cat[i] = etsim_strdup(s);
  }
  char note[200], id[40];
  snprintf(note, sizeof note, "Share of each set: %.0f real, %.0f generated%s.", sr, sg,
           width > 1 ? "; bins of equal width" : "");
  snprintf(id, sizeof id, "synth-%s", hists[k].key);
  const char *sn[2] = {"real", "generated"};
  const double *v[2] = {vr, vg};
  etsim_report__bars(
      b, &(rbars_t){id, hists[k].title, note, hists[k].x, "share (%)", n, (const char *const *)cat,
                    2, sn, v, (int[]){0, 1}, 0, 0, NULL, NULL, -1, NULL, NULL});
out:
  for (size_t i = 0; cat && i < json_array_size(lo); i++) etsim_free(cat[i]);
  etsim_free(cat);
  etsim_free(vr);
  etsim_free(vg);
  return rc;
}

int etsim_report__synth(rbuf_t *b, const rin_t *in, etsim_error_t *err) {
  const json_t *d = in->doc;
  char id[32], title[256], v[12][32];
  snprintf(id, sizeof id, "in%zu", in->index);
  snprintf(title, sizeof title, "Synthetic traces: %s", in->label);
  etsim_report__section(b, id, title, in->path);
  static const char *keys[] = {"n_real",        "n_generated",   "validity", "attr_validity",
                               "w1_layers",     "w1_nodes",      "w1_edges", "mmd_layer_size",
                               "mmd_in_degree", "mmd_out_degree"};
  for (size_t i = 0; i < 10; i++)
    etsim_report__num(v[i], 32, etsim_report__num_or(d, keys[i], NAN));
  const json_t *sg = json_object_get(d, "surrogate_generated"),
               *sr = json_object_get(d, "surrogate_real");
  snprintf(v[10], 32, "%.3f", etsim_report__num_or(sg, "pearson", NAN));
  snprintf(v[11], 32, "%.3f", etsim_report__num_or(sr, "pearson", NAN));
  const char *kv[] = {"real DAGs",
                      v[0],
                      "generated DAGs",
                      v[1],
                      "validity",
                      v[2],
                      "attribute validity",
                      v[3],
                      "W1 layers",
                      v[4],
                      "W1 nodes",
                      v[5],
                      "W1 edges",
                      v[6],
                      "MMD\xc2\xb2 layer sizes",
                      v[7],
                      "MMD\xc2\xb2 in-degree",
                      v[8],
                      "MMD\xc2\xb2 out-degree",
                      v[9],
                      "surrogate on generated (Pearson)",
                      sg ? v[10] : NULL,
                      "surrogate on real (Pearson)",
                      sr ? v[11] : NULL};
  etsim_report__facts(b, kv, sizeof kv / sizeof *kv / 2);
  etsim_report__note(b,
                     "W1: Wasserstein distance of the per-DAG counts; MMD\xc2\xb2: of the "
                     "normalised histograms; lower is closer to the real set (docs/synth.md).");
  const json_t *h = json_object_get(d, "histograms");
  int rc = 0;
  if (!json_is_object(h)) {
    etsim_report__note(b,
                       "This file has the metrics only: etsim synth eval --json writes the "
                       "histograms since etsim 0.1.0.");
  } else {
    for (size_t k = 0; k < sizeof hists / sizeof *hists && !rc; k++) {
      const json_t *one = json_object_get(h, hists[k].key);
      if (one) rc = histogram(b, in, one, k, err);
    }
  }
  etsim_report__section_end(b);
  if (!rc && b->oom) rc = etsim_error_set(err, ETSIM_ENOMEM, "out of memory");
  return rc;
}
