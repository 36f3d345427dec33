/* SPDX-License-Identifier: MIT
 *
 * mmaps.c - a fixed script of mmap-family calls whose anonymous footprint is
 * known page by page (P = page size):
 *
 *   file mappings (private 64P, shared 16P): never counted, one kept to exit
 *   A = mmap 64P                                    live 64P
 *   munmap front 4P, back 4P, middle [24,32)        live 48P
 *   munmap [20,36) over the hole: only 8P more go   live 40P
 *   B = mmap 16P                                    live 56P
 *   B = mremap B 16P -> 32P (may move)              live 72P
 *   B = mremap B 32P -> 8P                          live 48P
 *   T = mmap 8P, munmap T                           live 56P, 48P
 *   B = mremap B 8P -> 8P, MAYMOVE|FIXED to T       live 48P (moved)
 *   munmap old B (no longer mapped: no change)      live 48P
 *   failing mmap (len 0) and munmap (misaligned)    no change
 *   C = mmap 100P, munmap C                         live 148P (the peak), 48P
 *   MAP_FIXED anonymous over A's [4,8): replaced    live 48P
 *   MAP_FIXED file over A's [8,12): anon gone       live 44P
 *   failing mremap (FIXED without MAYMOVE)          no change
 *   the shared file mapping shrunk by mremap 16P -> 8P, then unmapped: a
 *   file mapping stays one when remapped, so nothing changes
 *   exit with A's 36P and B's 8P mapped             leaked 44P
 *
 * With mode 0 only the file mappings are made, so a run with mode 0 shows
 * what anonymous mappings the process has without the script.
 *
 * usage: mmaps MODE TMPFILE
 */
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common.h"

static char *map_anon(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        die("mmap");
    ((char *)p)[0] = 1;
    return p;
}

static void unmap(void *p, size_t len)
{
    if (munmap(p, len))
        die("munmap");
}

int main(int argc, char **argv)
{
    unsigned long long mode = arg_u64(argc, argv, 1, 1);
    if (argc < 3)
        die("usage: mmaps MODE TMPFILE");
    size_t P = (size_t)sysconf(_SC_PAGESIZE);
    put_kv("page_size", P);

    int fd = open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)(64 * P)))
        die("tmpfile");
    char *fpriv = mmap(NULL, 64 * P, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    char *fshared = mmap(NULL, 16 * P, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (fpriv == MAP_FAILED || fshared == MAP_FAILED)
        die("file mmap");
    fpriv[0] = 1;
    fshared[0] = 2;

    if (mode) {
        char *a = map_anon(64 * P);
        unmap(a, 4 * P);           /* front */
        unmap(a + 60 * P, 4 * P);  /* back */
        unmap(a + 24 * P, 8 * P);  /* a hole in the middle */
        unmap(a + 20 * P, 16 * P); /* across the hole: removes [20,24) and [32,36) */

        char *b = map_anon(16 * P);
        b = mremap(b, 16 * P, 32 * P, MREMAP_MAYMOVE);
        if (b == MAP_FAILED)
            die("mremap grow");
        b[32 * P - 1] = 1;
        b = mremap(b, 32 * P, 8 * P, 0);
        if (b == MAP_FAILED)
            die("mremap shrink");

        char *t = map_anon(8 * P);
        unmap(t, 8 * P); /* reserve an address range that is now free */
        char *moved = mremap(b, 8 * P, 8 * P, MREMAP_MAYMOVE | MREMAP_FIXED, t);
        if (moved != t)
            die("mremap move");
        unmap(b, 8 * P); /* old range: nothing mapped there any more */

        if (mmap(NULL, 0, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) != MAP_FAILED)
            die("mmap of length 0 succeeded");
        if (munmap(a + 40 * P + 1, P) == 0)
            die("misaligned munmap succeeded");

        char *c = map_anon(100 * P);
        c[100 * P - 1] = 1;
        unmap(c, 100 * P);

        char *fx = mmap(a + 4 * P, 4 * P, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        if (fx != a + 4 * P)
            die("MAP_FIXED anonymous");
        char *ff = mmap(a + 8 * P, 4 * P, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
        if (ff != a + 8 * P)
            die("MAP_FIXED file");
        if (mremap(moved, 8 * P, 8 * P, MREMAP_FIXED, a + 40 * P) != MAP_FAILED)
            die("mremap FIXED without MAYMOVE succeeded");
        sink(a);
        sink(moved);
    }
    char *fs2 = mremap(fshared, 16 * P, 8 * P, 0);
    if (fs2 != fshared)
        die("mremap shrink of a file mapping");
    unmap(fshared, 8 * P); /* fpriv stays mapped to exit */
    close(fd);
    sink(fpriv);
    return 0;
}
