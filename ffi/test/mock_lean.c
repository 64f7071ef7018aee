/*
 * mock_lean.c — a stand-in for the Lean runtime and the two Lean exports (speaking the wire
 * version LVT_WIRE_VERSION of lvt.h), for testing the C shim and the Python binding where no
 * Lean toolchain is installed.
 *
 *   gcc -shared -fPIC -pthread -DLVT_STUB_LEAN -Iffi ffi/lvt_shim.c ffi/test/mock_lean.c \
 *       -o liblvt_mock.so
 *
 * The mock layout answers a well-formed layout answer whose items are the request bytes
 * (a control item per byte: id = byte, owner = index, learn = 0), so the tests can check that
 * every byte crosses the shim intact, on the calling thread and on the large-input worker
 * thread. The mock unlayout answers "not a render" ([0, 0]). Both exports answer an error
 * (status 1) when the request's first byte is not the wire version (code 1) or when called on
 * a thread the shim did not register with the "runtime" (code 255).
 */
#include "lvt.h"
#include "test/lean_stub.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct lean_object {
  size_t size;
  uint8_t *data;
};

static lean_object g_io_ok;
static atomic_int g_runtime_inits;
static atomic_int g_thread_inits;
static atomic_int g_thread_finals;
static atomic_int g_module_inits;
static atomic_int g_live_objects;
static __thread int t_registered;

void lean_initialize_runtime_module(void) {
  atomic_fetch_add(&g_runtime_inits, 1);
  t_registered = 1;
}
void lean_initialize_thread(void) {
  atomic_fetch_add(&g_thread_inits, 1);
  t_registered = 1;
}
void lean_finalize_thread(void) {
  atomic_fetch_add(&g_thread_finals, 1);
  t_registered = 0;
}
void lean_io_mark_end_initialization(void) {}
void lean_init_task_manager(void) {}
bool lean_io_result_is_ok(b_lean_obj_arg r) { return r == &g_io_ok; }
void lean_io_result_show_error(b_lean_obj_arg r) { (void)r; }

lean_object *initialize_lvt_Verified_Ffi(uint8_t builtin) {
  (void)builtin;
  atomic_fetch_add(&g_module_inits, 1);
  return &g_io_ok;
}

lean_obj_res lean_alloc_sarray(unsigned elem_size, size_t size, size_t capacity) {
  lean_object *o = (lean_object *)malloc(sizeof(lean_object));
  (void)elem_size;
  if (o == NULL) abort();
  o->size = size;
  o->data = (uint8_t *)malloc(capacity > 0 ? capacity : 1);
  if (o->data == NULL) abort();
  atomic_fetch_add(&g_live_objects, 1);
  return o;
}
uint8_t *lean_sarray_cptr(lean_object *o) { return o->data; }
size_t lean_sarray_size(b_lean_obj_arg o) { return o->size; }
void lean_dec_ref(lean_object *o) {
  if (o == &g_io_ok) return;
  free(o->data);
  free(o);
  atomic_fetch_sub(&g_live_objects, 1);
}
void lean_dec(lean_object *o) { lean_dec_ref(o); }

static void put_u32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

static lean_object *error_answer(uint8_t code) {
  lean_object *o = lean_alloc_sarray(1, 2, 2);
  o->data[0] = 1;
  o->data[1] = code;
  return o;
}

lean_object *lvt_layout_bytes(lean_object *req) {
  lean_object *ans;
  size_t n = req->size, i;
  if (!t_registered) {
    ans = error_answer(255);
  } else if (n == 0 || req->data[0] != LVT_WIRE_VERSION) {
    ans = error_answer(1);
  } else {
    /* status 0, ok 1, item count, then per item: piece 0 + u32 id, u32 owner, learn 0 */
    size_t m = 6 + 10 * n;
    uint8_t *p;
    ans = lean_alloc_sarray(1, m, m);
    p = ans->data;
    p[0] = 0;
    p[1] = 1;
    put_u32(p + 2, (uint32_t)n);
    p += 6;
    for (i = 0; i < n; i++, p += 10) {
      p[0] = 0;
      put_u32(p + 1, req->data[i]);
      put_u32(p + 5, (uint32_t)i);
      p[9] = 0;
    }
  }
  lean_dec(req); /* exports consume their argument */
  return ans;
}

lean_object *lvt_unlayout_bytes(lean_object *req) {
  lean_object *ans;
  if (!t_registered) {
    ans = error_answer(255);
  } else if (req->size == 0 || req->data[0] != LVT_WIRE_VERSION) {
    ans = error_answer(1);
  } else {
    ans = lean_alloc_sarray(1, 2, 2);
    ans->data[0] = 0;
    ans->data[1] = 0;
  }
  lean_dec(req);
  return ans;
}

/* Counters for the tests: runtime inits, module inits, thread inits, thread finals, live
 * objects. */
void lvt_mock_counts(int *out5) {
  out5[0] = atomic_load(&g_runtime_inits);
  out5[1] = atomic_load(&g_module_inits);
  out5[2] = atomic_load(&g_thread_inits);
  out5[3] = atomic_load(&g_thread_finals);
  out5[4] = atomic_load(&g_live_objects);
}
