/*
 * alloc.c — the library's one allocator contract, growable arrays, arenas.
 *
 * Failure injection (etsim_alloc_fail_after) lets tests walk every
 * out-of-memory path; it costs one predictable branch per allocation.
 */
#include "etsim/base.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static long fail_countdown; /* 0: never fail */

void etsim_alloc_fail_after(long n) { fail_countdown = n; }

static int should_fail(void) {
  if (fail_countdown > 0 && --fail_countdown == 0) return 1;
  return 0;
}

void *etsim_malloc(size_t size) {
  if (should_fail()) return NULL;
  return malloc(size ? size : 1);
}

void *etsim_calloc(size_t n, size_t size) {
  if (should_fail()) return NULL;
  return calloc(n ? n : 1, size ? size : 1);
}

void *etsim_realloc(void *ptr, size_t size) {
  if (size == 0) {
    free(ptr);
    return NULL;
  }
  if (should_fail()) return NULL;
  return realloc(ptr, size);
}

void etsim_free(void *ptr) { free(ptr); }

char *etsim_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = etsim_malloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

int etsim_grow(void **pbuf, size_t *pcap, size_t need, size_t elem) {
  if (need <= *pcap) return 0;
  size_t cap = *pcap ? *pcap : 8;
  while (cap < need) {
    if (cap > SIZE_MAX / 3) return ETSIM_ENOMEM;
    cap += cap / 2 + 8;
  }
  if (cap > SIZE_MAX / elem) return ETSIM_ENOMEM;
  void *p = etsim_realloc(*pbuf, cap * elem);
  if (!p) return ETSIM_ENOMEM;
  *pbuf = p;
  *pcap = cap;
  return 0;
}

/* ------------------------------------------------------------------ arena */

struct etsim_arena_block {
  etsim_arena_block_t *next;
  size_t size; /* usable bytes in data */
  size_t used;
  _Alignas(8) unsigned char data[];
};

void etsim_arena_init(etsim_arena_t *a, size_t block_size) {
  a->head = NULL;
  a->block_size = block_size ? block_size : 64 * 1024;
  a->used_bytes = 0;
  a->failures = 0;
}

void *etsim_arena_alloc(etsim_arena_t *a, size_t size) {
  if (size > SIZE_MAX / 2) {
    a->failures++;
    return NULL;
  }
  size = (size + 7) & ~(size_t)7;
  etsim_arena_block_t *b = a->head;
  if (!b || b->size - b->used < size) {
    size_t bs = a->block_size;
    if (size > bs / 4) {
      /* A large piece gets a block of its own behind the head, so the head's
       * free space is not wasted. */
      etsim_arena_block_t *big = etsim_malloc(sizeof *big + size);
      if (!big) {
        a->failures++;
        return NULL;
      }
      big->size = size;
      big->used = size;
      if (b) {
        big->next = b->next;
        b->next = big;
      } else {
        big->next = NULL;
        a->head = big;
      }
      a->used_bytes += size;
      return big->data;
    }
    etsim_arena_block_t *nb = etsim_malloc(sizeof *nb + bs);
    if (!nb) {
      a->failures++;
      return NULL;
    }
    nb->size = bs;
    nb->used = 0;
    nb->next = b;
    a->head = nb;
    b = nb;
  }
  void *p = b->data + b->used;
  b->used += size;
  a->used_bytes += size;
  return p;
}

char *etsim_arena_strndup(etsim_arena_t *a, const char *s, size_t n) {
  char *p = etsim_arena_alloc(a, n + 1);
  if (p) {
    memcpy(p, s, n);
    p[n] = '\0';
  }
  return p;
}

void etsim_arena_reset(etsim_arena_t *a) {
  etsim_arena_block_t *b = a->head;
  if (!b) return;
  /* Keep the largest regular block only. */
  etsim_arena_block_t *keep = NULL;
  while (b) {
    etsim_arena_block_t *next = b->next;
    if (!keep && b->size == a->block_size) keep = b;
    else etsim_free(b);
    b = next;
  }
  if (keep) {
    keep->used = 0;
    keep->next = NULL;
  }
  a->head = keep;
  a->used_bytes = 0;
}

void etsim_arena_free(etsim_arena_t *a) {
  etsim_arena_block_t *b = a->head;
  while (b) {
    etsim_arena_block_t *next = b->next;
    etsim_free(b);
    b = next;
  }
  a->head = NULL;
  a->used_bytes = 0;
}

size_t etsim_arena_reserved(const etsim_arena_t *a) {
  size_t n = 0;
  for (const etsim_arena_block_t *b = a->head; b; b = b->next) n += sizeof *b + b->size;
  return n;
}

/* A 1,024-host all-to-all reads a million queue-pair records (470 MB) and
 * their routes at random: with 4 KB pages nearly every such read also
 * missed the TLB, and the page walks took about as long as the misses. */
void etsim_advise_huge(void *p, size_t bytes) {
#ifdef MADV_HUGEPAGE
  const uintptr_t huge = 2u << 20;
  if (bytes < 2 * huge) return;
  uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1);
  uintptr_t e = ((uintptr_t)p + bytes) & ~(huge - 1);
  if (e > a) (void)madvise((void *)a, e - a, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}
