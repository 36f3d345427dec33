/* SPDX-License-Identifier: MIT
 *
 * gpu_local.c - loads libgpu_ext_rt.so and libgpu_ext_drv.so (paths in
 * argv[1], argv[2]) with RTLD_LOCAL, like an interpreter loading extension
 * modules, and allocates through each: 7 MiB leaked and 1 MiB freed through
 * the runtime, 6 MiB leaked through the driver's PLT. Links neither the
 * runtime nor the driver itself.
 */
#include <dlfcn.h>
#include <stdio.h>

#define MiB (1ull << 20)

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    void *rt = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    void *drv = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    if (!rt || !drv) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    void *(*rt_alloc)(size_t) = (void *(*)(size_t))dlsym(rt, "ext_rt_alloc");
    int (*rt_roundtrip)(size_t) = (int (*)(size_t))dlsym(rt, "ext_rt_roundtrip");
    unsigned long long (*drv_alloc)(size_t) =
        (unsigned long long (*)(size_t))dlsym(drv, "ext_drv_alloc");
    if (!rt_alloc || !rt_roundtrip || !drv_alloc)
        return 1;
    dlerror();
    void *a = rt_alloc(7 * MiB);
    int ok = rt_roundtrip(1 * MiB);
    unsigned long long b = drv_alloc(6 * MiB);
    /* The hooks' own failed lookups (dlsym(RTLD_NEXT) cannot see a local
     * libcuda) must not surface as the program's dlerror(). */
    const char *err = dlerror();
    printf("rt=%p\nroundtrip=%d\ndrv=0x%llx\ndlerror_clean=%d\n", a, ok, b, err == NULL);
    return a && ok && b ? 0 : 1;
}
