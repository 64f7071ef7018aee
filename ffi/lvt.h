/*
 * lvt.h — plain C API of the Lean Verified Tokenizers shared library.
 *
 * The library is built by `lake build` (shared-library facet of the `Verified` Lean library,
 * with ffi/lvt_shim.c linked in). Callers never see a `lean_object*`: requests and answers are
 * byte buffers in the wire layout documented in Verified/Ffi.lean (and mirrored by
 * pybind/lvt/runtime/wire.py).
 *
 * Thread safety: every function may be called from any thread. `lvt_init` runs the Lean
 * runtime and module initialisation exactly once (pthread_once); every other thread is
 * registered with the Lean runtime on its first call (lean_initialize_thread) and unregistered
 * when it exits (lean_finalize_thread, from a pthread key destructor).
 */
#ifndef LVT_H
#define LVT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version of this C API (bumped on any incompatible change of the functions below). */
#define LVT_ABI_VERSION 2
/* Version of the byte layout the Lean exports speak (Verified.Ffi.wireVersion). */
#define LVT_WIRE_VERSION 4

/* Return codes. A request the Lean side cannot decode is NOT an error here: the call returns
 * LVT_OK and the answer bytes carry status 1 and the error code. */
#define LVT_OK 0
#define LVT_ERR_INIT 1   /* Lean runtime or module initialisation failed */
#define LVT_ERR_ARG 2    /* null pointer, or input larger than LVT_MAX_INPUT */
#define LVT_ERR_NOMEM 3  /* the answer buffer could not be allocated */
#define LVT_ERR_THREAD 4 /* the large-input worker thread could not be started */

/* Largest accepted request, in bytes (wire counts are u32). */
#define LVT_MAX_INPUT ((size_t)0x7fffffff)

/* The value of LVT_ABI_VERSION the library was compiled with. */
int lvt_abi_version(void);

/* Initialise the Lean runtime and the Verified.Ffi module; idempotent and thread-safe.
 * Returns LVT_OK or LVT_ERR_INIT (and then every later call fails the same way). */
int lvt_init(void);

/* Layout: `in` holds a layout request (n bytes: format + conversation). On LVT_OK, *out
 * receives a malloc'd answer of *out_n bytes (the items of the render, or "refused") that the
 * caller releases with lvt_free. Calls lvt_init if needed. */
int lvt_layout(const uint8_t *in, size_t n, uint8_t **out, size_t *out_n);

/* Unlayout: same contract as lvt_layout, for an unlayout request (format + symbol stream);
 * the answer holds the lowered conversation or "not a render". */
int lvt_unlayout(const uint8_t *in, size_t n, uint8_t **out, size_t *out_n);

/* Release an answer buffer returned by lvt_layout or lvt_unlayout (NULL is allowed). */
void lvt_free(uint8_t *p);

#ifdef __cplusplus
}
#endif

#endif /* LVT_H */
