/* The summary's memory lines: each NPU's peak of live tensor bytes, the
 * NPUs over the capacity asked for, and the price of offloading. */
#include "report_int.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

void etsim_report__mem_summary(FILE *f, const etsim_sim_result_t *r) {
  if (!r->mem_tracked && !(r->hbm_bytes > 0)) return;
  if (!r->mem_tracked) {
    fprintf(f,
            "memory        the traces name no tensors (\"inputs\"/\"outputs\"): nothing to check "
            "against %.1f GiB ('etsim gen llm --tensors' writes them)\n",
            r->hbm_bytes / GIB);
    return;
  }
  uint32_t top = 0, over = 0;
  double sum = 0;
  for (uint32_t i = 0; i < r->n_npus; i++) {
    if (r->npu[i].peak_mem_bytes > r->npu[top].peak_mem_bytes) top = i;
    sum += (double)r->npu[i].peak_mem_bytes;
    if (r->hbm_bytes > 0 && (double)r->npu[i].peak_mem_bytes > r->hbm_bytes) over++;
  }
  fprintf(f, "memory        peak %.2f GiB per NPU on average, most %.2f GiB (NPU %u)",
          sum / (r->n_npus ? r->n_npus : 1) / GIB, (double)r->npu[top].peak_mem_bytes / GIB, top);
  if (r->hbm_bytes > 0)
    fprintf(f, "; %u of %u NPUs over %.1f GiB", over, r->n_npus, r->hbm_bytes / GIB);
  fprintf(f, "\n");
  if (!over) return;
  uint64_t most = 0, bytes = 0;
  int64_t worst = 0;
  uint32_t shown = 0;
  fprintf(f, "over capacity ");
  for (uint32_t i = 0; i < r->n_npus; i++) {
    const etsim_sim_npu_t *p = &r->npu[i];
    if (!p->offload_bytes) continue;
    bytes += p->offload_bytes;
    if (p->offload_bytes > most) most = p->offload_bytes;
    if (p->offload_ps > worst) worst = p->offload_ps;
    if (shown++ < 4)
      fprintf(f, "%sNPU %u by %.2f GiB", shown > 1 ? ", " : "", i, (double)p->offload_bytes / GIB);
  }
  if (shown > 4) fprintf(f, ", ...");
  fprintf(f, "\n");
  if (r->offload_priced)
    fprintf(f,
            "offload       %.2f GiB out and back per iteration over the remote memory: up to %.3f "
            "us per NPU (queue on shared memory included), %s\n",
            (double)bytes / GIB, (double)worst / 1e6,
            r->offload_applied ? "added to the iterations above" : "not added (--offload adds it)");
  else
    fprintf(f,
            "offload       give --memory (a remote-memory JSON) to price moving the excess to host "
            "or pool memory\n");
}
