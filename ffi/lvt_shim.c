/*
 * lvt_shim.c — the plain C face of the Lean exports of Verified/Ffi.lean.
 *
 * Linked into the shared library of the `Verified` Lean library by lakefile.lean
 * (`moreLinkObjs`). Python (pybind/lvt/runtime/native.py, cffi ABI mode) calls only the functions of
 * lvt.h: bytes in, bytes out, plain C types.
 *
 * Conventions of the pinned release (leanprover/lean4 v4.28.0), which this file follows:
 *  - A module's initializer is `initialize_<package>_<mangled module>(uint8_t builtin)`: Lake
 *    passes the package name to Lean, which prefixes the symbol (Lean.mkModuleInitializationStem).
 *    For package `lvt` and module `Verified.Ffi` that is `initialize_lvt_Verified_Ffi`; a build
 *    without the package prefix (plain `lean -c`) emits `initialize_Verified_Ffi`. Both are
 *    referenced weakly and the one that is linked is used; -DLVT_INIT_SYMBOL=name overrides.
 *  - Embedding sequence, as in the `main` Lean emits: lean_initialize_runtime_module(), the
 *    module initializer with builtin = 1, lean_io_mark_end_initialization(), then
 *    lean_init_task_manager().
 *  - Threads not created by Lean call lean_initialize_thread() before touching Lean objects and
 *    lean_finalize_thread() before exiting.
 *  - `@[export]` functions take their arguments owned (borrow annotations are not allowed on
 *    exports): the request ByteArray is consumed by the call, the answer is owned by us.
 */
#include "lvt.h"

#ifdef LVT_STUB_LEAN
#include "test/lean_stub.h"
#else
#include <lean/lean.h>
#endif

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Runtime entry points exported by the Lean runtime library. */
void lean_initialize_runtime_module(void);
void lean_initialize_thread(void);
void lean_finalize_thread(void);

/* The two exports of Verified/Ffi.lean (`@[export lvt_layout_bytes]`,
 * `@[export lvt_unlayout_bytes]`): ByteArray -> ByteArray. */
lean_object *lvt_layout_bytes(lean_object *req);
lean_object *lvt_unlayout_bytes(lean_object *req);

/* The module initializer, referenced weakly under both spellings (see above). */
#ifdef LVT_INIT_SYMBOL
lean_object *LVT_INIT_SYMBOL(uint8_t builtin);
#define LVT_INIT_FN() (&LVT_INIT_SYMBOL)
#else
lean_object *initialize_lvt_Verified_Ffi(uint8_t builtin) __attribute__((weak));
lean_object *initialize_Verified_Ffi(uint8_t builtin) __attribute__((weak));
#define LVT_INIT_FN() \
  (initialize_lvt_Verified_Ffi ? initialize_lvt_Verified_Ffi : initialize_Verified_Ffi)
#endif

/* Requests larger than this many bytes run on a worker thread with a large stack: some of the
 * proven definitions recurse once per symbol (e.g. `takeText` over a span), and the calling
 * thread's stack (Python threads: 8 MiB on Linux, less elsewhere) must not bound the input. */
#ifndef LVT_BIG_INPUT
#define LVT_BIG_INPUT ((size_t)32 * 1024)
#endif
#define LVT_STACK_BASE ((size_t)64 * 1024 * 1024)
#define LVT_STACK_PER_BYTE ((size_t)256)
#define LVT_STACK_MAX ((size_t)4 * 1024 * 1024 * 1024 - 1)

typedef lean_object *(*lvt_export_fn)(lean_object *);

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_init_rc = LVT_ERR_INIT;
static pthread_key_t g_thread_key;
/* 0: this thread is unknown to Lean; 1: registered by us; 2: the thread that initialised. */
static __thread int t_lean_ready = 0;

int lvt_abi_version(void) { return LVT_ABI_VERSION; }

static void lvt_thread_exit(void *value) {
  (void)value;
  lean_finalize_thread();
}

static void lvt_do_init(void) {
  lean_object *(*init_fn)(uint8_t) = LVT_INIT_FN();
  lean_object *res;
  if (init_fn == NULL) {
    g_init_rc = LVT_ERR_INIT;
    return;
  }
  if (pthread_key_create(&g_thread_key, lvt_thread_exit) != 0) {
    g_init_rc = LVT_ERR_INIT;
    return;
  }
  lean_initialize_runtime_module();
  res = init_fn(1);
  if (lean_io_result_is_ok(res)) {
    lean_dec_ref(res);
    g_init_rc = LVT_OK;
  } else {
    lean_io_result_show_error(res);
    lean_dec_ref(res);
    g_init_rc = LVT_ERR_INIT;
  }
  lean_io_mark_end_initialization();
  if (g_init_rc == LVT_OK) {
    lean_init_task_manager();
  }
  t_lean_ready = 2;
}

int lvt_init(void) {
  if (pthread_once(&g_once, lvt_do_init) != 0) {
    return LVT_ERR_INIT;
  }
  return g_init_rc;
}

/* Initialise the library if needed and register the calling thread with the Lean runtime. */
static int lvt_enter(void) {
  int rc = lvt_init();
  if (rc != LVT_OK) {
    return rc;
  }
  if (t_lean_ready == 0) {
    lean_initialize_thread();
    t_lean_ready = 1;
    /* A non-NULL value makes the key's destructor run lean_finalize_thread at thread exit. */
    (void)pthread_setspecific(g_thread_key, &t_lean_ready);
  }
  return LVT_OK;
}

/* Copy the request into a fresh ByteArray, call the export, copy the answer out. */
static int lvt_call_here(lvt_export_fn fn, const uint8_t *in, size_t n, uint8_t **out,
                         size_t *out_n) {
  lean_object *req = lean_alloc_sarray(1, n, n);
  lean_object *res;
  uint8_t *buf;
  size_t m;
  if (n > 0) {
    memcpy(lean_sarray_cptr(req), in, n);
  }
  res = fn(req); /* consumes req */
  m = lean_sarray_size(res);
  buf = (uint8_t *)malloc(m > 0 ? m : 1);
  if (buf == NULL) {
    lean_dec(res);
    return LVT_ERR_NOMEM;
  }
  if (m > 0) {
    memcpy(buf, lean_sarray_cptr(res), m);
  }
  lean_dec(res);
  *out = buf;
  *out_n = m;
  return LVT_OK;
}

typedef struct {
  lvt_export_fn fn;
  const uint8_t *in;
  size_t n;
  uint8_t **out;
  size_t *out_n;
  int rc;
} lvt_job;

static void *lvt_job_main(void *arg) {
  lvt_job *job = (lvt_job *)arg;
  lean_initialize_thread();
  job->rc = lvt_call_here(job->fn, job->in, job->n, job->out, job->out_n);
  lean_finalize_thread();
  return NULL;
}

/* Run the call on a worker thread whose stack grows with the input. */
static int lvt_call_big(lvt_export_fn fn, const uint8_t *in, size_t n, uint8_t **out,
                        size_t *out_n) {
  pthread_attr_t attr;
  pthread_t tid;
  lvt_job job;
  size_t stack = LVT_STACK_BASE;
  if (n < (LVT_STACK_MAX - LVT_STACK_BASE) / LVT_STACK_PER_BYTE) {
    stack += n * LVT_STACK_PER_BYTE;
  } else {
    stack = LVT_STACK_MAX;
  }
  job.fn = fn;
  job.in = in;
  job.n = n;
  job.out = out;
  job.out_n = out_n;
  job.rc = LVT_ERR_THREAD;
  if (pthread_attr_init(&attr) != 0) {
    return LVT_ERR_THREAD;
  }
  if (pthread_attr_setstacksize(&attr, stack) != 0 ||
      pthread_create(&tid, &attr, lvt_job_main, &job) != 0) {
    pthread_attr_destroy(&attr);
    return LVT_ERR_THREAD;
  }
  pthread_attr_destroy(&attr);
  if (pthread_join(tid, NULL) != 0) {
    return LVT_ERR_THREAD;
  }
  return job.rc;
}

static int lvt_call(lvt_export_fn fn, const uint8_t *in, size_t n, uint8_t **out,
                    size_t *out_n) {
  int rc;
  if (out == NULL || out_n == NULL || (in == NULL && n > 0) || n > LVT_MAX_INPUT) {
    return LVT_ERR_ARG;
  }
  *out = NULL;
  *out_n = 0;
  rc = lvt_enter();
  if (rc != LVT_OK) {
    return rc;
  }
  if (n > LVT_BIG_INPUT) {
    return lvt_call_big(fn, in, n, out, out_n);
  }
  return lvt_call_here(fn, in, n, out, out_n);
}

int lvt_layout(const uint8_t *in, size_t n, uint8_t **out, size_t *out_n) {
  return lvt_call(lvt_layout_bytes, in, n, out, out_n);
}

int lvt_unlayout(const uint8_t *in, size_t n, uint8_t **out, size_t *out_n) {
  return lvt_call(lvt_unlayout_bytes, in, n, out, out_n);
}

void lvt_free(uint8_t *p) { free(p); }
