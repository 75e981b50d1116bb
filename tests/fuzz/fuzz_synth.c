/*
 * fuzz_synth.c — libFuzzer target for LayerDAG's files: the first byte
 * picks the text DAG dataset or a model file; the rest is the file.  A
 * model's checksum is made right first, so mutations reach the header and
 * parameter checks instead of stopping at the sum.  Each must load (a
 * dataset: acyclic graphs, edges in range) or be refused with a message —
 * never a crash, an allocation the file does not justify, or a leak.
 */
#include "fuzz_util.h"

#include "etsim/synth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 1 << 20) return 0;
  etsim_error_t err = {0};
  int rc;
  if (!(data[0] & 1)) {
    const char *p = fz_write(0, "dags.txt", data + 1, size - 1);
    if (!p) return 0;
    etsim_synth_data_t d;
    etsim_synth_data_init(&d);
    if ((rc = etsim_synth_data_load_text(&d, p, 0, &err))) {
      fz_refused(rc, &err);
    } else {
      for (size_t g = 0; g < d.n_graphs; g++) {
        if (etsim_synth_dag_valid(&d, &d.g[g]) != 1) __builtin_trap();
        for (uint32_t k = 0; k < d.g[g].n_edges; k++)
          if (d.g[g].src[k] >= d.g[g].n_nodes || d.g[g].dst[k] >= d.g[g].n_nodes) __builtin_trap();
      }
    }
    etsim_synth_data_free(&d);
    return 0;
  }
  size_t n = size - 1;
  uint8_t *b = malloc(n ? n : 1);
  if (!b) return 0;
  memcpy(b, data + 1, n);
  if (n >= 8) { /* the last 8 bytes: the hash of the rest */
    uint64_t h = etsim_hash_bytes(b, n - 8);
    memcpy(b + n - 8, &h, 8);
  }
  const char *p = fz_write(0, "model.bin", b, n);
  free(b);
  if (!p) return 0;
  etsim_synth_model_t *m = NULL;
  if ((rc = etsim_synth_model_load(&m, p, &err))) fz_refused(rc, &err);
  else etsim_synth_model_free(m);
  return 0;
}
