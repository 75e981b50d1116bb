/*
 * iter.c — where a trace's iterations are.
 *
 * With markers (nodes named like ProfilerStep#N, as PyTorch records each
 * step), an iteration runs from one marker to the node before the next;
 * what comes before the first marker is outside every iteration.  Without
 * markers, iterations are found as repeating structure: each node is
 * reduced to a hash of what does not change from one step to the next
 * (type, name, collective type and size — not durations, which a profile
 * measures differently each step), nodes whose hash occurs once at either
 * end are set aside as prologue and epilogue (a process-group definition,
 * a final report), and the smallest period of the rest comes from the
 * Knuth-Morris-Pratt failure function: a sequence of length L with
 * failure value f at its end repeats with period L - f.  At least two
 * whole periods are needed; a trace that does not repeat is one iteration.
 * Linear in the node count.
 */
#include "edit_int.h"

#include <string.h>

/* Smallest period of s[0..n): n - failure(n-1). */
static size_t smallest_period(const uint64_t *s, size_t n, uint32_t *fail) {
  fail[0] = 0;
  for (size_t i = 1; i < n; i++) {
    uint32_t k = fail[i - 1];
    while (k > 0 && s[i] != s[k]) k = fail[k - 1];
    if (s[i] == s[k]) k++;
    fail[i] = k;
  }
  return n - fail[n - 1];
}

/* How many times each hash occurs, as a map hash -> count (capped). */
static int counts(const uint64_t *h, size_t n, etsim_u64map_t *m, uint32_t **cnt) {
  size_t cap = 0, used = 0;
  *cnt = NULL;
  for (size_t i = 0; i < n; i++) {
    uint32_t k = (uint32_t)used;
    int rc = etsim_u64map_put(m, h[i], k, &k);
    if (rc < 0) return rc;
    if (rc == 1) {
      if (etsim_grow((void **)cnt, &cap, used + 1, sizeof **cnt)) return ETSIM_ENOMEM;
      (*cnt)[used++] = 0;
    }
    if ((*cnt)[k] < 2) (*cnt)[k]++;
  }
  return 0;
}

static uint32_t count_of(const etsim_u64map_t *m, const uint32_t *cnt, uint64_t h) {
  uint32_t k;
  return etsim_u64map_get(m, h, &k) ? cnt[k] : 0;
}

int etsim_edit__iterations(const uint64_t *h, const uint8_t *marker, size_t n, int32_t *it,
                           size_t *n_iter, const char **how) {
  size_t markers = 0;
  for (size_t i = 0; marker && i < n; i++) markers += marker[i] != 0;
  if (markers) {
    int32_t cur = -1;
    for (size_t i = 0; i < n; i++) {
      if (marker[i]) cur++;
      it[i] = cur;
    }
    *n_iter = markers;
    *how = "by the iteration markers";
    return 0;
  }
  *how = "no markers and no repeating structure: the whole trace";
  *n_iter = 1;
  for (size_t i = 0; i < n; i++) it[i] = 0;
  if (n < 2) return 0;
  etsim_u64map_t m;
  etsim_u64map_init(&m);
  uint32_t *cnt = NULL, *fail = NULL;
  int rc = counts(h, n, &m, &cnt);
  if (rc) goto done;
  size_t a = 0, b = n;
  while (a < n && count_of(&m, cnt, h[a]) < 2) a++;
  while (b > a && count_of(&m, cnt, h[b - 1]) < 2) b--;
  if (b - a < 2) goto done;
  fail = etsim_malloc((b - a) * sizeof *fail);
  if (!fail) {
    rc = ETSIM_ENOMEM;
    goto done;
  }
  /* A prologue may hold repeated kinds of node too (a warm-up broadcast):
   * try a few later starts when the first does not repeat. */
  for (size_t start = a; start < b && start < a + 16; start++) {
    size_t len = b - start;
    if (len < 2) break;
    size_t p = smallest_period(h + start, len, fail);
    if (p > len / 2) continue;
    size_t k = len / p;
    for (size_t i = 0; i < n; i++) {
      if (i < start || i >= start + k * p) it[i] = -1;
      else it[i] = (int32_t)((i - start) / p);
    }
    *n_iter = k;
    *how = "by repeating structure";
    break;
  }
done:
  etsim_free(fail);
  etsim_free(cnt);
  etsim_u64map_free(&m);
  return rc;
}
