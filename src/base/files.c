/*
 * files.c — what every input and output file goes through, so that no run
 * replaces one of its own inputs, a folder or a missing file gets a clear
 * message, and no temporary output outlives its run.
 *
 * While the guard is on (the CLI's runs), inputs are remembered by (device,
 * inode) when opened; an output about to be written over a remembered input
 * is refused (`-o` equal to an input used to replace it silently).
 *
 * Temporary outputs ("<path>.tmp.<pid>") are kept on a list that a signal
 * handler may walk (etsim_tmp_remove_all unlinks each, which is
 * async-signal-safe), so Ctrl-C or `kill` leaves nothing behind; what a run
 * killed with SIGKILL left is removed by the next run that writes the same
 * output (its pid no longer runs).
 *
 * Not thread-safe: outputs are opened and committed by one thread.
 */
#include "etsim/base.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------ inputs */

typedef struct {
  dev_t dev;
  ino_t ino;
} file_id_t;

static int guard;
static file_id_t *inputs;
static size_t n_inputs, cap_inputs;
/* (dev, ino) hashed -> the first input with that hash: a set of 65,536
 * rank files is checked in linear time, not 2^31 comparisons.  A hash
 * shared by two files falls back to the scan. */
static etsim_u64map_t input_index;

static uint64_t id_key(dev_t dev, ino_t ino) {
  return (uint64_t)ino * 0x9e3779b97f4a7c15ull ^ (uint64_t)dev; /* the map hashes it again */
}

static int is_input(dev_t dev, ino_t ino) {
  uint32_t k;
  if (!etsim_u64map_get(&input_index, id_key(dev, ino), &k)) return 0;
  if (inputs[k].dev == dev && inputs[k].ino == ino) return 1;
  for (size_t i = 0; i < n_inputs; i++)
    if (inputs[i].dev == dev && inputs[i].ino == ino) return 1;
  return 0;
}

int etsim_input_check(const char *path, etsim_error_t *err) {
  struct stat st;
  return strcmp(path, "-") == 0 ? 0 : etsim_input_stat(path, &st, err);
}

int etsim_input_stat(const char *path, struct stat *st, etsim_error_t *err) {
  if (stat(path, st) != 0) {
    int e = errno;
    return etsim_error_set(err, e == ENOENT ? ETSIM_ENOTFOUND : ETSIM_EIO, "%s: cannot open: %s",
                           path, strerror(e));
  }
  if (S_ISDIR(st->st_mode))
    return etsim_error_set(err, ETSIM_EIO, "%s: is a folder, not a file", path);
  if (!guard || !S_ISREG(st->st_mode)) return 0; /* a pipe or device is no output's target */
  if (is_input(st->st_dev, st->st_ino)) return 0;
  if (etsim_grow((void **)&inputs, &cap_inputs, n_inputs + 1, sizeof *inputs) ||
      etsim_u64map_put(&input_index, id_key(st->st_dev, st->st_ino), (uint32_t)n_inputs, NULL) < 0)
    return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
  inputs[n_inputs++] = (file_id_t){st->st_dev, st->st_ino};
  return 0;
}

int etsim_output_check(const char *path, etsim_error_t *err) {
  struct stat st;
  if (strcmp(path, "-") == 0 || stat(path, &st) != 0) return 0;
  if (S_ISDIR(st.st_mode))
    return etsim_error_set(err, ETSIM_EIO, "%s: is a folder; give a file name", path);
  if (is_input(st.st_dev, st.st_ino))
    return etsim_error_set(err, ETSIM_EINVAL,
                           "%s: is also an input of this run; refusing to replace it "
                           "(write the output elsewhere)",
                           path);
  return 0;
}

void etsim_inputs_forget(void) {
  n_inputs = 0;
  etsim_u64map_free(&input_index);
  etsim_u64map_init(&input_index);
}

void etsim_inputs_guard(int on) {
  guard = on;
  if (on) return;
  etsim_free(inputs);
  inputs = NULL;
  n_inputs = cap_inputs = 0;
  etsim_u64map_free(&input_index);
  etsim_u64map_init(&input_index);
}

int etsim_read_text(const char *path, size_t max_bytes, char **out, size_t *out_len,
                    etsim_error_t *err) {
  *out = NULL;
  int rc = etsim_input_check(path, err);
  if (rc) return rc;
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (!f) return etsim_error_set(err, ETSIM_EIO, "%s: cannot open: %s", path, strerror(errno));
  char *buf = NULL;
  size_t n = 0, cap = 0;
  for (;;) {
    if (etsim_grow((void **)&buf, &cap, n + 65536 + 1, 1)) {
      rc = etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
      break;
    }
    size_t got = fread(buf + n, 1, 65536, f);
    const char *nul = memchr(buf + n, 0, got);
    if (nul) {
      rc = etsim_error_set(err, ETSIM_EFORMAT, "%s: offset %zu: a NUL byte: not a text file", path,
                           (size_t)(nul - buf));
      break;
    }
    n += got;
    if (n > max_bytes) {
      rc = etsim_error_set(err, ETSIM_EFORMAT,
                           "%s: larger than %zu MiB, more than such a file holds", path,
                           max_bytes >> 20);
      break;
    }
    if (got < 65536) {
      if (ferror(f))
        rc = etsim_error_set(err, ETSIM_EIO, "%s: read error: %s", path, strerror(errno));
      break;
    }
  }
  if (f != stdin) fclose(f);
  if (rc) {
    etsim_free(buf);
    return rc;
  }
  buf[n] = '\0';
  *out = buf;
  if (out_len) *out_len = n;
  return 0;
}

int etsim_json_load(const char *path, unsigned flags, struct json_t **out, etsim_error_t *err) {
  *out = NULL;
  int rc = etsim_input_check(path, err);
  if (rc) return rc;
  json_error_t je;
  json_t *root = json_load_file(path, flags, &je);
  if (!root) {
    if (json_error_code(&je) == json_error_out_of_memory)
      return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
    if (json_error_code(&je) == json_error_cannot_open_file)
      return etsim_error_set(err, ETSIM_EIO, "%s: cannot open: %s", path,
                             strerror(errno ? errno : EIO));
    /* Jansson gives line and column -1 when it has no position (a read
     * error, an empty file). */
    if (je.line > 0)
      return etsim_error_set(err, ETSIM_EFORMAT, "%s:%d:%d: %s", path, je.line,
                             je.column > 0 ? je.column : 1, je.text);
    return etsim_error_set(err, ETSIM_EFORMAT, "%s: %s", path, je.text);
  }
  *out = root;
  return 0;
}

/* ------------------------------------------------------------- temporaries */

typedef struct tmp_node {
  struct tmp_node *prev, *next;
  char name[];
} tmp_node_t;

static tmp_node_t *volatile tmp_head;

/* Stale temporaries (names ending in ".tmp.<pid>" whose pid no longer
 * runs): a folder is listed once to learn whether it holds any; in the usual
 * case it holds none, and writing thousands of files into it costs that one
 * listing.  Only while some remain is it listed again per output, to remove
 * the output's own.  Nothing here allocates, so the out-of-memory sweeps of
 * the tests see no failure swallowed. */
static char stale_dir[4096];
static size_t stale_left; /* candidates left in stale_dir */

static int pid_gone(const char *digits) {
  char *end;
  long pid = strtol(digits, &end, 10);
  if (*end || end == digits || pid <= 1 || pid == (long)getpid()) return 0;
  return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* The pid part of a stale temporary's name, or NULL. */
static const char *stale_pid(const char *name) {
  const char *t = strstr(name, ".tmp."), *n;
  if (!t) return NULL;
  while ((n = strstr(t + 1, ".tmp.")) != NULL) t = n;
  return pid_gone(t + 5) ? t + 5 : NULL;
}

/* List `dir`; remove the stale temporaries of `base` (NULL: none) and
 * count the others. */
static void stale_pass(const char *dir, const char *base) {
  DIR *d = opendir(dir);
  stale_left = 0;
  if (!d) return;
  size_t bl = base ? strlen(base) : 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    const char *pid = stale_pid(e->d_name);
    if (!pid) continue;
    if (base && (size_t)(pid - e->d_name) == bl + 5 && strncmp(e->d_name, base, bl) == 0) {
      char full[8200];
      snprintf(full, sizeof full, "%s/%s", dir, e->d_name);
      if (remove(full) == 0) continue;
    }
    stale_left++;
  }
  closedir(d);
}

/* Remove "<path>.tmp.<dead pid>" files. */
static void remove_stale(const char *path) {
  const char *slash = strrchr(path, '/');
  size_t dl = slash ? (size_t)(slash - path) : 0;
  char dir[4096];
  if (dl >= sizeof dir) return;
  if (slash) {
    memcpy(dir, path, dl);
    dir[dl] = '\0';
    if (dl == 0) strcpy(dir, "/");
  } else {
    strcpy(dir, ".");
  }
  const char *base = slash ? slash + 1 : path;
  if (strcmp(stale_dir, dir) != 0) {
    snprintf(stale_dir, sizeof stale_dir, "%s", dir);
    stale_pass(dir, base);
  } else if (stale_left) {
    stale_pass(dir, base);
  }
}

int etsim_tmp_name(const char *path, char **out, etsim_error_t *err) {
  *out = NULL;
  int rc = etsim_output_check(path, err);
  if (rc) return rc;
  remove_stale(path);
  size_t n = strlen(path) + 32;
  tmp_node_t *t = etsim_malloc(sizeof *t + n);
  if (!t) return etsim_error_set(err, ETSIM_ENOMEM, "%s: out of memory", path);
  snprintf(t->name, n, "%s.tmp.%ld", path, (long)getpid());
  t->prev = NULL;
  t->next = tmp_head;
  if (tmp_head) tmp_head->prev = t;
  tmp_head = t; /* the handler sees the list before or after, both whole */
  *out = t->name;
  return 0;
}

void etsim_tmp_release(char *name) {
  if (!name) return;
  tmp_node_t *t = (tmp_node_t *)(name - offsetof(tmp_node_t, name));
  if (t->prev) t->prev->next = t->next;
  else tmp_head = t->next;
  if (t->next) t->next->prev = t->prev;
  etsim_free(t);
}

void etsim_tmp_remove_all(void) {
  for (tmp_node_t *t = tmp_head; t; t = t->next) unlink(t->name);
}
