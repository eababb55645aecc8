/* The host code of CApiExceptionTest's artifact: one kernel in the kernel
 * ABI, y = 2 * x for 64 floats. */
/* The entry-point name is the ABI's (LOCUS_ABI_KERNEL_PREFIX "double"). */
void __locus_kernel_double( // NOLINT(bugprone-reserved-identifier)
    void *const *buffers) {
  const float *x = (const float *)buffers[0];
  float *y = (float *)buffers[1];
  for (int i = 0; i < 64; ++i)
    y[i] = 2 * x[i];
}

/* Its signature (LOCUS_ABI_SIGNATURE_PREFIX "double"): two buffers of 64
 * floats, which the runtime checks the plan's launches against. */
const unsigned long long __locus_signature_double[3] = // NOLINT
    {2, 256, 256};
