/*
 * lean_stub.h — the few declarations of <lean/lean.h> that ffi/lvt_shim.c uses, with the
 * signatures of the pinned release (leanprover/lean4 v4.28.0: lean.h declares the sarray and
 * io-result helpers `static inline`; the runtime entry points are exported by libleanshared).
 *
 * Used only to check the shim where no Lean toolchain is installed:
 *   gcc -fsyntax-only -Wall -Wextra -Werror -DLVT_STUB_LEAN -Iffi ffi/lvt_shim.c
 * and, with ffi/test/mock_lean.c, to build a mock library that exercises the shim's
 * initialisation, threading and buffer handling from Python.
 */
#ifndef LVT_LEAN_STUB_H
#define LVT_LEAN_STUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lean_object lean_object;
typedef lean_object *lean_obj_arg;
typedef lean_object *b_lean_obj_arg;
typedef lean_object *lean_obj_res;

lean_obj_res lean_alloc_sarray(unsigned elem_size, size_t size, size_t capacity);
uint8_t *lean_sarray_cptr(lean_object *o);
size_t lean_sarray_size(b_lean_obj_arg o);
void lean_dec(lean_object *o);
void lean_dec_ref(lean_object *o);
bool lean_io_result_is_ok(b_lean_obj_arg r);
void lean_io_result_show_error(b_lean_obj_arg r);
void lean_io_mark_end_initialization(void);
void lean_init_task_manager(void);

#endif /* LVT_LEAN_STUB_H */
