/*
 * etsim/base.h — the ground floor every module stands on.
 *
 * Errors, the one allocator contract, an arena for bulk data of one lifetime,
 * growable arrays, an integer hash map, a string interner, a seeded random
 * number generator and the warning hook.  Nothing here knows about traces or
 * networks.  Library code never prints and never exits: it returns negative
 * ETSIM_E* codes and leaves a message in an etsim_error_t for the caller.
 */
#ifndef ETSIM_BASE_H
#define ETSIM_BASE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ errors */

/* One table gives the codes, their names and their messages (libuv style). */
#define ETSIM_ERRNO_MAP(X)           \
  X(NOMEM, -1, "out of memory")      \
  X(IO, -2, "input/output error")    \
  X(FORMAT, -3, "malformed input")   \
  X(INVAL, -4, "invalid argument")   \
  X(NOTFOUND, -5, "not found")       \
  X(UNSUPPORTED, -6, "unsupported")  \
  X(DEADLOCK, -7, "deadlock")        \
  X(RANGE, -8, "value out of range") \
  X(INTERNAL, -9, "internal error")

typedef enum {
  ETSIM_OK = 0,
#define ETSIM_ERR_ENUM_(name, code, msg) ETSIM_E##name = (code),
  ETSIM_ERRNO_MAP(ETSIM_ERR_ENUM_)
#undef ETSIM_ERR_ENUM_
} etsim_errno_t;

/* Name ("ETSIM_EFORMAT") and text ("malformed input") of a code; never NULL. */
const char *etsim_errname(int code);
const char *etsim_strerror(int code);

/*
 * Where a failure is described for the user.  `msg` holds one line in the
 * shape "FILE[:LOCATION]: message" without the program name; the CLI prints
 * "etsim: " in front.  Every fallible function that takes an etsim_error_t*
 * accepts NULL (the message is then dropped, the code still returned).
 */
typedef struct etsim_error {
  int code;
  char msg[1024];
} etsim_error_t;

/* Fill `err` (may be NULL) with a formatted message; returns `code`. */
int etsim_error_set(etsim_error_t *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Put "prefix: " in front of the message already in err (e.g. a file name). */
void etsim_error_prefix(etsim_error_t *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void etsim_error_clear(etsim_error_t *err);

/*
 * Warnings (non-fatal findings such as an unknown config key) go through one
 * hook that the CLI installs; by default they are dropped.  `fmt` produces
 * one line without the trailing newline.
 */
typedef void (*etsim_warn_fn)(void *user, const char *line);
void etsim_set_warn_handler(etsim_warn_fn fn, void *user);
void etsim_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* -------------------------------------------------------------- invariants */

/*
 * ETSIM_ASSERT(x) states an invariant of etsim's own state (never a check of
 * user input, which gets an error naming the file).  It is checked when
 * ETSIM_CHECKS is defined: in Debug and sanitizer builds (CMake sets it), so
 * the whole test suite runs with every invariant checked; in Release it
 * costs nothing.  A failure is a bug in etsim: the expression and its place
 * go to stderr and the process aborts (Lua's lua_assert, SQLite's assert).
 * Off, it still names x inside sizeof (never evaluated), so a variable kept
 * only for an invariant does not draw an unused-variable warning.
 */
#ifdef ETSIM_CHECKS
#define ETSIM_ASSERT(x) ((x) ? (void)0 : etsim__assert_fail(#x, __FILE__, __LINE__))
#else
#define ETSIM_ASSERT(x) ((void)sizeof(!(x)))
#endif
void etsim__assert_fail(const char *expr, const char *file, int line) __attribute__((noreturn));

/* --------------------------------------------------------------- allocator */

/*
 * The whole library allocates through these three (Lua's single contract).
 * etsim_realloc(p, 0) frees and returns NULL.  A failure returns NULL and
 * the caller reports ETSIM_ENOMEM.  Tests may make the N-th allocation from
 * now fail with etsim_alloc_fail_after(N) (0 disables) to exercise the
 * out-of-memory paths.
 */
void *etsim_malloc(size_t size);
void *etsim_calloc(size_t n, size_t size);
void *etsim_realloc(void *ptr, size_t size);
void etsim_free(void *ptr);
char *etsim_strdup(const char *s);
void etsim_alloc_fail_after(long n);

/*
 * Grow *pbuf (an array of `elem` sized items with capacity *pcap) so that it
 * holds at least `need` items.  Capacity grows by half again, so appends are
 * amortised O(1).  Returns 0 or ETSIM_ENOMEM (the old buffer stays valid).
 */
int etsim_grow(void **pbuf, size_t *pcap, size_t need, size_t elem);

/* Ask the kernel for transparent huge pages on the page-aligned interior of
 * a big array (a no-op under 4 MB or without MADV_HUGEPAGE): a 1 GB array
 * otherwise takes ~250 K page faults and as many TLB misses on random reads. */
void etsim_advise_huge(void *p, size_t bytes);

/* qsort that accepts an empty array given as NULL (C's qsort does not: its
 * pointer must be valid even for 0 items, and UBSan says so). */
void etsim_qsort(void *base, size_t n, size_t elem, int (*cmp)(const void *, const void *));

/* Ranks 1..n of v[0..n) into r, equal values sharing their mean rank (as
 * Spearman's correlation wants them).  0 or ETSIM_ENOMEM. */
int etsim_ranks(const double *v, size_t n, double *r);

/* Pearson's correlation of a[0..n) and b[0..n); 0 when either is constant
 * (or n is 0).  Of ranks (etsim_ranks) it is Spearman's. */
double etsim_pearson(const double *a, const double *b, size_t n);

/* ------------------------------------------------------------ typed heaps */

/*
 * ETSIM_HEAP_DEFINE(name, T, less) defines a min-heap of T records and its
 * operations as static inline functions, so that `less` is inlined (libuv's
 * heap-inl.h has the idea; here the records sit by value in one array
 * instead of being linked nodes, because event records are small and the
 * simulator must not allocate per event):
 *
 *   name_t            { T *v; size_t n, cap; }, zero-initialised; v[0] is
 *                     the least record while n > 0
 *   name_reserve(h, cap)  room for cap records: 0 or ETSIM_ENOMEM
 *   name_push(h, &e)  add a copy of e: 0 or ETSIM_ENOMEM (h unchanged)
 *   name_pop(h, &out) take the least record out; h->n must be > 0
 *   name_check(h)     0 when heap order holds, else 1 + the index of a
 *                     record less than its parent (tests; O(n))
 *   name_free(h)
 *
 * `less(const T *a, const T *b)` is a strict total order on the records in
 * the heap: break ties of the key on an insertion sequence number, as
 * libuv's timers do, and the pop order is fully determined by the records,
 * whatever the arity or the order of pushes, so runs are reproducible.  The
 * heap is 4-ary: half the depth of a binary heap, and the four children of
 * a record are adjacent in memory.  Debug builds check on every push and
 * pop that the root is the least record seen by the operation.
 */
#define ETSIM_HEAP_DEFINE(name, T, less)                                               \
  typedef struct name {                                                                \
    T *v;                                                                              \
    size_t n, cap;                                                                     \
  } name##_t;                                                                          \
  __attribute__((unused)) static inline int name##_reserve(name##_t *h, size_t cap) {  \
    return cap <= h->cap ? 0 : etsim_grow((void **)&h->v, &h->cap, cap, sizeof *h->v); \
  }                                                                                    \
  __attribute__((unused)) static inline int name##_push(name##_t *h, const T *e) {     \
    if (h->n == h->cap && etsim_grow((void **)&h->v, &h->cap, h->n + 1, sizeof *h->v)) \
      return ETSIM_ENOMEM;                                                             \
    size_t i = h->n++;                                                                 \
    while (i > 0) {                                                                    \
      size_t p = (i - 1) / 4;                                                          \
      if (!less(e, &h->v[p])) break;                                                   \
      h->v[i] = h->v[p];                                                               \
      i = p;                                                                           \
    }                                                                                  \
    h->v[i] = *e;                                                                      \
    /* the new record is the root exactly when it is below the old root */             \
    ETSIM_ASSERT(i == 0 || !less(e, &h->v[0]));                                        \
    return 0;                                                                          \
  }                                                                                    \
  __attribute__((unused)) static inline void name##_pop(name##_t *h, T *out) {         \
    ETSIM_ASSERT(h->n > 0);                                                            \
    *out = h->v[0];                                                                    \
    T last = h->v[--h->n];                                                             \
    size_t n = h->n, i = 0;                                                            \
    for (;;) {                                                                         \
      size_t c = 4 * i + 1, best = c;                                                  \
      if (c >= n) break;                                                               \
      if (c + 3 < n) { /* four children: pick without hard-to-predict jumps */         \
        size_t b01 = less(&h->v[c + 1], &h->v[c]) ? c + 1 : c;                         \
        size_t b23 = less(&h->v[c + 3], &h->v[c + 2]) ? c + 3 : c + 2;                 \
        best = less(&h->v[b23], &h->v[b01]) ? b23 : b01;                               \
      } else                                                                           \
        for (size_t k = c + 1; k < n; k++)                                             \
          if (less(&h->v[k], &h->v[best])) best = k;                                   \
      if (!less(&h->v[best], &last)) break;                                            \
      h->v[i] = h->v[best];                                                            \
      i = best;                                                                        \
    }                                                                                  \
    if (n) h->v[i] = last;                                                             \
    /* what was taken out is not above what is left */                                 \
    ETSIM_ASSERT(n == 0 || !less(&h->v[0], out));                                      \
  }                                                                                    \
  __attribute__((unused)) static inline size_t name##_check(const name##_t *h) {       \
    for (size_t i = 1; i < h->n; i++)                                                  \
      if (less(&h->v[i], &h->v[(i - 1) / 4])) return i + 1;                            \
    return 0;                                                                          \
  }                                                                                    \
  __attribute__((unused)) static inline void name##_free(name##_t *h) {                \
    etsim_free(h->v);                                                                  \
    h->v = NULL;                                                                       \
    h->n = h->cap = 0;                                                                 \
  }

/* ------------------------------------------------------------------- arena */

/*
 * Bump allocator for data that lives and dies together (a trace's strings,
 * one decoded message).  Allocations are 8-byte aligned; nothing is freed
 * individually.  etsim_arena_reset keeps the first block for reuse, so a
 * reader that resets per message does not touch malloc in steady state.
 */
typedef struct etsim_arena_block etsim_arena_block_t;
typedef struct etsim_arena {
  etsim_arena_block_t *head; /* newest block; owned */
  size_t block_size;         /* default size of a new block */
  size_t used_bytes;         /* bytes handed out since the last reset */
  size_t failures;           /* allocations refused (out of memory), ever: lets a
                                caller whose callee only says "failed" (protobuf-c's
                                unpack) tell out-of-memory from bad input */
} etsim_arena_t;

void etsim_arena_init(etsim_arena_t *a, size_t block_size);
void *etsim_arena_alloc(etsim_arena_t *a, size_t size); /* NULL on OOM */
char *etsim_arena_strndup(etsim_arena_t *a, const char *s, size_t n);
void etsim_arena_reset(etsim_arena_t *a);
void etsim_arena_free(etsim_arena_t *a);
/* Bytes reserved from malloc (for memory reports). */
size_t etsim_arena_reserved(const etsim_arena_t *a);

/* ------------------------------------------------------------ u64 -> u32 map */

/*
 * Open-addressing map from 64-bit keys to 32-bit values, linear probing,
 * capacity a power of two kept at most 70% full.  12 bytes a slot.
 */
typedef struct etsim_u64map {
  uint64_t *keys;
  uint32_t *vals; /* 0 marks an empty slot; stored values are val + 1 */
  size_t cap;     /* power of two, or 0 */
  size_t count;
} etsim_u64map_t;

void etsim_u64map_init(etsim_u64map_t *m);
void etsim_u64map_free(etsim_u64map_t *m);
int etsim_u64map_reserve(etsim_u64map_t *m, size_t n);
/* Insert key -> val (val < UINT32_MAX).  Returns 1 if inserted, 0 if the key
 * was present (its value left unchanged and written to *old if non-NULL), or
 * ETSIM_ENOMEM. */
int etsim_u64map_put(etsim_u64map_t *m, uint64_t key, uint32_t val, uint32_t *old);
/* 1 and *val on hit, 0 on miss. */
int etsim_u64map_get(const etsim_u64map_t *m, uint64_t key, uint32_t *val);
/* Remove key: 1 if it was there, 0 if not.  The capacity stays. */
int etsim_u64map_del(etsim_u64map_t *m, uint64_t key);

/* ---------------------------------------------------------- string interner */

/*
 * Gives each distinct string a small dense id (0 is always "").  Strings are
 * copied into the interner's arena and stay valid until it is freed.
 */
typedef struct etsim_intern {
  etsim_arena_t arena;
  const char **strs; /* id -> string */
  size_t n, cap;
  uint32_t *slots; /* hash slots holding id + 1 */
  size_t nslots;
} etsim_intern_t;

int etsim_intern_init(etsim_intern_t *t);
void etsim_intern_free(etsim_intern_t *t);
/* Returns the id (>= 0) or ETSIM_ENOMEM. */
int64_t etsim_intern_put(etsim_intern_t *t, const char *s, size_t len);
/* Returns the id or -1 when absent. */
int64_t etsim_intern_find(const etsim_intern_t *t, const char *s);
static inline const char *etsim_intern_str(const etsim_intern_t *t, uint32_t id) {
  return t->strs[id];
}

/* ---------------------------------------------------------------- hashing */

uint64_t etsim_hash_bytes(const void *p, size_t n);
static inline uint64_t etsim_hash_u64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

/* --------------------------------------------------------------------- RNG */

/* xoshiro256** seeded through splitmix64: every random choice in etsim comes
 * from one of these, passed in explicitly, so runs are reproducible. */
typedef struct etsim_rng {
  uint64_t s[4];
} etsim_rng_t;

void etsim_rng_seed(etsim_rng_t *r, uint64_t seed);
uint64_t etsim_rng_next(etsim_rng_t *r);
double etsim_rng_uniform(etsim_rng_t *r);             /* [0, 1) */
uint64_t etsim_rng_below(etsim_rng_t *r, uint64_t n); /* [0, n), n > 0 */
double etsim_rng_normal(etsim_rng_t *r);              /* N(0, 1) */

/* ------------------------------------------------------- inputs and outputs */

/*
 * Every reader checks its input through etsim_input_check: a missing file
 * or a folder gets "FILE: cannot open: ..." / "FILE: is a folder".  While
 * the guard is on (etsim_inputs_guard(1); the CLI turns it on for its one
 * run, a library user may for a unit of work), inputs are remembered and
 * etsim_output_check refuses an output path that is one of them; it always
 * refuses a folder.  "-" (standard input) passes.  0 or a negative code.
 * Turning the guard off forgets the inputs.
 */
int etsim_input_check(const char *path, etsim_error_t *err);
/* The same for a named file (not "-"), its stat left in *st: a reader that
 * must know the file's kind before opening it stats it once, not twice. */
struct stat;
int etsim_input_stat(const char *path, struct stat *st, etsim_error_t *err);
int etsim_output_check(const char *path, etsim_error_t *err);
void etsim_inputs_guard(int on);
/* Forget the inputs seen so far, the guard staying on: for a process that
 * runs one independent run after another (a sweep's worker), whose earlier
 * inputs are this run's outputs to write. */
void etsim_inputs_forget(void);

/* Read a whole text file, checked as an input, into *out (owned,
 * NUL-terminated; *out_len bytes before the NUL, may be NULL).  A NUL byte
 * (binary data; /dev/zero is refused at its first block) or more than
 * max_bytes (an endless stream) is an error naming the file and offset. */
int etsim_read_text(const char *path, size_t max_bytes, char **out, size_t *out_len,
                    etsim_error_t *err);

/* Load a JSON file with jansson (flags as json_load_file's), checked as an
 * input; errors read "FILE:LINE:COL: message", or "FILE: message" when
 * jansson has no position.  *out is owned (json_decref). */
struct json_t;
int etsim_json_load(const char *path, unsigned flags, struct json_t **out, etsim_error_t *err);

/*
 * Temporary name "<path>.tmp.<pid>" for an output about to be written,
 * after etsim_output_check; temporaries of `path` left by a run that was
 * killed (their pid no longer runs) are removed first.  The name is owned
 * and registered until etsim_tmp_release (call it after the rename or the
 * removal).  0 and *out, or a negative code with err set.
 */
int etsim_tmp_name(const char *path, char **out, etsim_error_t *err);
void etsim_tmp_release(char *name);
/* Unlink every registered temporary; async-signal-safe, for the CLI's
 * SIGINT/SIGTERM/SIGHUP/SIGPIPE handler. */
void etsim_tmp_remove_all(void);

/* ------------------------------------------------------------ output files */

/*
 * Files that must never be left half-written are opened through this: the
 * data goes to "<path>.tmp.<pid>" and etsim_outfile_commit renames it over
 * `path`; etsim_outfile_abort removes it.  `path` "-" writes to stdout.
 */
typedef struct etsim_outfile {
  void *fp; /* FILE* */
  char *path;
  char *tmp_path; /* NULL for stdout */
} etsim_outfile_t;

int etsim_outfile_open(etsim_outfile_t *o, const char *path, etsim_error_t *err);
int etsim_outfile_commit(etsim_outfile_t *o, etsim_error_t *err);
void etsim_outfile_abort(etsim_outfile_t *o);
/* The whole of data[0..len) as the output file `path` (open, write,
 * commit; on an error nothing is left under `path`'s temporary name). */
int etsim_outfile_write_all(const char *path, const void *data, size_t len, etsim_error_t *err);

/*
 * Outputs of one run that must change together (`sim --json --csv
 * --timeline`): after etsim_outfile_batch_begin, etsim_outfile_commit
 * writes and closes each file but leaves it under its temporary name;
 * etsim_outfile_batch_commit renames them all into place, and
 * etsim_outfile_batch_abort removes them, so a failed last write leaves the
 * earlier outputs as they were instead of a mixed set.
 */
void etsim_outfile_batch_begin(void);
int etsim_outfile_batch_commit(etsim_error_t *err);
void etsim_outfile_batch_abort(void);
/* The temporary name of `path` when it is written and waiting in the batch
 * (a later output of the same run reads it there: netsim's --report reads
 * its --timeline), else NULL. */
const char *etsim_outfile_batched(const char *path);

/* Length of the valid UTF-8 prefix of s[0..n): n when all of it is valid.
 * Overlong forms, surrogates and code points above U+10FFFF are invalid,
 * as for protobuf's string fields and JSON readers. */
size_t etsim_utf8_valid(const char *s, size_t n);

/* ids[0..k) as "0-3,8,10-11" (runs of consecutive ids as ranges) in
 * buf[0..n), n >= 32; a list that does not fit ends in ",...". */
void etsim_format_ranges(char *buf, size_t n, const uint32_t *ids, uint32_t k);

/* Parse "1024", "64KiB", "1MB", "2GiB" etc. into bytes.  0 or ETSIM_EINVAL. */
int etsim_parse_size(const char *s, uint64_t *out_bytes);

/* --------------------------------------------------------------- progress */

/*
 * The pacing and wording of a progress line, shared by every long-running
 * command: "[etsim netsim] 42 % | 1.2 ms simulated, 3 of 8 flows | 3.1 s,
 * about 4 s left".  etsim_progress_line writes the line into `out` when at
 * least `every_s` seconds of wall time passed since the last one (the first
 * after `every_s`, so short runs show nothing; every_s 0: at every call,
 * negative: 0.25 s) and returns its length, else 0 without formatting
 * anything; the caller shows it (the CLI rewrites one
 * stderr line when stderr is a terminal).  Nothing here prints.
 */
typedef struct etsim_progress {
  const char *what; /* "netsim" */
  double t0, next, every_s;
} etsim_progress_t;

void etsim_progress_init(etsim_progress_t *p, const char *what, double every_s);
/* frac: the share done, in [0, 1], or negative when unknown (then no ETA);
 * fmt: what is done so far, printf-style. */
size_t etsim_progress_line(etsim_progress_t *p, char *out, size_t cap, double frac, const char *fmt,
                           ...) __attribute__((format(printf, 5, 6)));
/* Whether etsim_progress_line would write a line now (to skip preparing
 * its text when it would not). */
int etsim_progress_due(const etsim_progress_t *p);
/* Wall seconds since etsim_progress_init. */
double etsim_progress_elapsed(const etsim_progress_t *p);

/* A stopwatch for the wall and CPU seconds of a run (process CPU time, all
 * threads).  Rates are reported per CPU second: on a shared machine wall
 * time measures the neighbours too.  etsim_stopwatch_stop sets wall_s and
 * cpu_s to the time since etsim_stopwatch_start; it may be called again. */
typedef struct etsim_stopwatch {
  double wall0, cpu0;   /* at the start, seconds on their clocks */
  double wall_s, cpu_s; /* start to the last stop */
} etsim_stopwatch_t;
void etsim_stopwatch_start(etsim_stopwatch_t *t);
void etsim_stopwatch_stop(etsim_stopwatch_t *t);
/* Wall seconds since etsim_stopwatch_start, without reading the CPU clock
 * (a system call): cheap enough for a progress check in a hot loop. */
double etsim_stopwatch_wall(const etsim_stopwatch_t *t);

#ifdef __cplusplus
}
#endif
#endif /* ETSIM_BASE_H */
