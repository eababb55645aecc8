/* A C program that runs an artifact through the installed runtime: every
 * input filled with 0.5 (or 1 for integer inputs), one run, the first
 * output's first value printed. Built against the installed Locus by
 * find_package(Locus) and by pkg-config (run_install_test.sh). */
#include <locus/locus_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(locus_status_t s) {
  fprintf(stderr, "consumer: %s\n", locus_status_message(s));
  locus_status_free(s);
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: consumer model.locus\n");
    return 2;
  }
  locus_model_t *model = NULL;
  locus_status_t s = locus_model_load(argv[1], NULL, &model);
  if (s)
    return fail(s);
  locus_context_t *context = NULL;
  if ((s = locus_context_create(model, &context)))
    return fail(s);
  size_t inputs = locus_model_tensor_count(model, LOCUS_TENSOR_INPUT);
  for (size_t i = 0; i < inputs; ++i) {
    locus_tensor_info_t info;
    if ((s = locus_model_tensor_info(model, LOCUS_TENSOR_INPUT, i, &info)))
      return fail(s);
    unsigned char *data = malloc(info.byte_size ? info.byte_size : 1);
    for (size_t b = 0; b + 4 <= info.byte_size; b += 4) {
      float half = 0.5f;
      memcpy(data + b, &half, 4);
    }
    s = locus_context_set_input(context, info.name, data, info.byte_size);
    free(data);
    if (s)
      return fail(s);
  }
  if ((s = locus_context_run(context)))
    return fail(s);
  locus_tensor_info_t out;
  if ((s = locus_model_tensor_info(model, LOCUS_TENSOR_OUTPUT, 0, &out)))
    return fail(s);
  float *values = malloc(out.byte_size);
  if ((s = locus_context_read_output(context, out.name, values, out.byte_size)))
    return fail(s);
  printf("consumer (C, runtime %s): %s = %g\n", locus_runtime_version(),
         out.name, (double)values[0]);
  free(values);
  locus_context_release(context);
  locus_model_release(model);
  return 0;
}
