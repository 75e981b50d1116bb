/*
 * driver.c — a main() for a libFuzzer target built without libFuzzer (the
 * normal gcc build): it feeds the empty input, then each file named on the
 * command line, to LLVMFuzzerTestOneInput, and removes the target's
 * scratch folder.  The normal build links every tests/fuzz/fuzz_*.c with
 * it and ctest runs it on a few example files, so a change that breaks a
 * target (a renamed function, a changed signature, a rule the target
 * checks) fails the normal build or its tests, not only scripts/fuzz.sh.
 */
#include "fuzz_util.h"

static int feed(const char *path) {
  FILE *fp = fopen(path, "rb");
  if (!fp) {
    fprintf(stderr, "fuzz driver: cannot open %s\n", path);
    return 1;
  }
  uint8_t *buf = NULL;
  size_t n = 0, cap = 0;
  for (;;) {
    if (n == cap) {
      cap = cap ? 2 * cap : 65536;
      uint8_t *b = realloc(buf, cap);
      if (!b) {
        free(buf);
        fclose(fp);
        fprintf(stderr, "fuzz driver: %s: out of memory\n", path);
        return 1;
      }
      buf = b;
    }
    size_t got = fread(buf + n, 1, cap - n, fp);
    n += got;
    if (got == 0) break;
  }
  int bad = ferror(fp);
  fclose(fp);
  if (bad) fprintf(stderr, "fuzz driver: cannot read %s\n", path);
  else LLVMFuzzerTestOneInput(buf, n);
  free(buf);
  return bad;
}

/* Remove fz_dir() and what the target left in it. */
static void clean(void) {
  DIR *d = opendir(fz_dir());
  struct dirent *e;
  char p[512];
  while (d && (e = readdir(d)) != NULL) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    snprintf(p, sizeof p, "%s/%s", fz_dir(), e->d_name);
    remove(p);
  }
  if (d) closedir(d);
  rmdir(fz_dir());
}

int main(int argc, char **argv) {
  int rc = 0;
  LLVMFuzzerTestOneInput((const uint8_t *)"", 0);
  for (int i = 1; i < argc; i++) rc |= feed(argv[i]);
  clean();
  if (!rc) printf("%d input(s) passed\n", argc);
  return rc;
}
