/* plan_format.h - the numbers of the plan section of an artifact.
 *
 * The compiler writes a plan, the runtime reads it; docs/artifact.md has the
 * layout. Every integer is little-endian; a string is a u32 length and its
 * bytes. The runtime checks every field before it uses it.
 */
#ifndef LOCUS_PLAN_FORMAT_H
#define LOCUS_PLAN_FORMAT_H

#include <stdint.h>

#define LOCUS_PLAN_MAGIC 0x4E4C504Cu /* "LPLN" */
/* 2: launches and per-step copies may write state (training steps). */
#define LOCUS_PLAN_VERSION 2u
/* Offsets in an arena are multiples of this. */
#define LOCUS_PLAN_ALIGNMENT 64u

/* Where a buffer's memory comes from. */
enum locus_plan_buffer_kind_e {
  LOCUS_PLAN_ACTIVATION = 0, /* an offset in its device's arena, per run */
  LOCUS_PLAN_INPUT = 1,      /* the same, written by the caller before a run */
  LOCUS_PLAN_STATE = 2,      /* persistent, made by its initialiser at load;
                                a training step's launches and copies write it */
  LOCUS_PLAN_CONSTANT = 3,   /* persistent, its bytes are in the plan */
  LOCUS_PLAN_PERSISTENT = 4, /* persistent, written by a load-time copy */
};

enum locus_plan_command_e {
  LOCUS_PLAN_LAUNCH = 0, /* kernel, then its buffers: reads, then writes */
  LOCUS_PLAN_COPY = 1,   /* source buffer to destination buffer */
  LOCUS_PLAN_RECORD = 2, /* device records event */
  LOCUS_PLAN_WAIT = 3,   /* device waits for event */
};

enum locus_plan_dtype_e {
  LOCUS_PLAN_F32 = 0,
  LOCUS_PLAN_I64 = 1,
  LOCUS_PLAN_I1 = 2, /* one byte per element */
};

/* The PTX section: u32 magic, u32 version, u32 count, then for each kernel
 * (by the number the launchers pass to locus_cuda_launch) its entry name and
 * its PTX module as strings. The PTX ends in a NUL byte, as
 * cuModuleLoadData wants it. */
#define LOCUS_PTX_MAGIC 0x5854504Cu /* "LPTX" */
#define LOCUS_PTX_VERSION 1u

#endif /* LOCUS_PLAN_FORMAT_H */
