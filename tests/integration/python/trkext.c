/* SPDX-License-Identifier: MIT
 *
 * trkext.c - the C extension module _trkext for test_python.py: a native
 * frame of known name and line that mallocs exactly the size it is asked
 * for. The tests build it with the compiler and the interpreter's own
 * headers (python3-config --includes) into _trkext<EXT_SUFFIX>.
 *
 * alloc_block(n) returns a capsule owning malloc(n); the block is freed
 * with the capsule. The capsule object itself comes from pymalloc, so the
 * only malloc of the call is the block's. Line markers ("@name") are looked
 * up by the tests: do not reformat.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static void block_free(PyObject *capsule)
{
    free(PyCapsule_GetPointer(capsule, "_trkext.block"));
}

__attribute__((noinline)) static PyObject *alloc_block(PyObject *self, PyObject *arg)
{
    (void)self;
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n < 0)
        return PyErr_Occurred() ? NULL : PyErr_Format(PyExc_ValueError, "negative size");
    void *p = malloc((size_t)n); /* @ext_malloc */
    if (p == NULL)
        return PyErr_NoMemory();
    memset(p, 1, (size_t)n);
    PyObject *capsule = PyCapsule_New(p, "_trkext.block", block_free);
    if (capsule == NULL)
        free(p);
    return capsule;
}

/* A native thread's block: its stack has no Python frame at all (the
 * thread never runs Python), so reports keep its native frames. */
static void *native_kept;

__attribute__((noinline)) static void *native_thread_main(void *arg)
{
    native_kept = malloc((size_t)arg); /* @native_thread_malloc */
    if (native_kept)
        memset(native_kept, 2, (size_t)arg);
    return NULL;
}

/* native_thread_block(n): a native thread mallocs n bytes, kept until exit. */
static PyObject *native_thread_block(PyObject *self, PyObject *arg)
{
    (void)self;
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n < 0)
        return PyErr_Occurred() ? NULL : PyErr_Format(PyExc_ValueError, "negative size");
    pthread_t t;
    if (pthread_create(&t, NULL, native_thread_main, (void *)(size_t)n) != 0)
        return PyErr_Format(PyExc_OSError, "pthread_create failed");
    pthread_join(t, NULL);
    Py_RETURN_NONE;
}

static PyMethodDef trkext_methods[] = {
    {"alloc_block", alloc_block, METH_O, "alloc_block(n): a capsule owning malloc(n)"},
    {"native_thread_block", native_thread_block, METH_O,
     "native_thread_block(n): a native thread mallocs n bytes, kept"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef trkext_module = {
    PyModuleDef_HEAD_INIT, "_trkext", "known native allocations for the tracker's tests", -1,
    trkext_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__trkext(void)
{
    return PyModule_Create(&trkext_module);
}
