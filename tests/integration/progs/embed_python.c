/* SPDX-License-Identifier: MIT
 *
 * embed_python.c - a C program embedding CPython through the shared libpython
 * (built by test_python.py with python3-config --cflags/--ldflags --embed).
 *
 *   embed_python SCRIPT
 *
 * Loads SCRIPT (tests/integration/python/embedded.py) as module "embedded",
 * calls embedded.from_main() on the main thread, then embedded.from_c_thread()
 * on a pthread created here that enters Python with PyGILState_Ensure (the
 * way C libraries call back into Python). The interpreter is not finalized:
 * what the Python code kept is still live when the program exits, so each
 * block is reported as a leak with its stack.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static PyObject *g_module;

static void fail(const char *what)
{
    if (PyErr_Occurred())
        PyErr_Print();
    fprintf(stderr, "embed_python: %s failed\n", what);
    exit(3);
}

__attribute__((noinline)) static void call_python(const char *function)
{
    PyObject *r = PyObject_CallMethod(g_module, function, NULL);
    if (r == NULL)
        fail(function);
    Py_DECREF(r);
}

static void *c_thread(void *arg)
{
    (void)arg;
    PyGILState_STATE st = PyGILState_Ensure();
    call_python("from_c_thread");
    PyGILState_Release(st);
    return NULL;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf != NULL && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap) {
            char *bigger = realloc(buf, cap * 2);
            if (bigger == NULL) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf != NULL)
        buf[n] = '\0';
    return buf;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: embed_python SCRIPT\n");
        return 2;
    }
    char *src = read_file(argv[1]);
    if (src == NULL) {
        perror(argv[1]);
        return 2;
    }
    Py_Initialize();
    PyObject *code = Py_CompileString(src, argv[1], Py_file_input);
    free(src);
    if (code == NULL)
        fail("compile");
    g_module = PyImport_ExecCodeModuleEx("embedded", code, argv[1]);
    Py_DECREF(code);
    if (g_module == NULL)
        fail("import");

    call_python("from_main");

    PyThreadState *saved = PyEval_SaveThread();
    pthread_t t;
    if (pthread_create(&t, NULL, c_thread, NULL) != 0 || pthread_join(t, NULL) != 0) {
        fprintf(stderr, "embed_python: pthread failed\n");
        return 3;
    }
    PyEval_RestoreThread(saved);
    printf("embedded=ok\n");
    fflush(stdout);
    return 0;
}
