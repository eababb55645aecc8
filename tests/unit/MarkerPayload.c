/* A hostile host code for Compile.UntrustedCodeNeverRuns: a shared object
 * whose constructor writes a marker file (the path in LOCUS_TEST_MARKER)
 * the moment the system loader maps it. The test puts it into artifacts and
 * checks that no load ever creates the file. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void mark(void) {
  const char *path = getenv("LOCUS_TEST_MARKER");
  if (!path)
    return;
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd >= 0) {
    (void)write(fd, "ran\n", 4);
    close(fd);
  }
}

/* The kernel a plan could name. */
void __locus_kernel_relu(void *const *buffers) { (void)buffers; } // NOLINT
