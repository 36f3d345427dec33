/* embed_bare.c - an embedder that starts and stops the interpreter and runs
 * nothing: no audit event after initialisation (test_python_host.py). */
#include <Python.h>
#include <stdio.h>

int main(void)
{
    Py_Initialize();
    if (Py_FinalizeEx() != 0)
        return 1;
    puts("done");
    return 0;
}
