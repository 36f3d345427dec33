/* SPDX-License-Identifier: MIT
 *
 * fake_api.h - the slice of the CUDA driver, CUDA runtime and HIP APIs that
 * the test doubles implement and the test programs call, written from the
 * CUDA 13.0 / ROCm 6.x ABIs (docs/GPU_INTERNALS.md §4, §9)
 * so that no vendor header is needed to build or run the tests.
 *
 * Also declares the fakes' own helpers (fake_cuda_*), which let a test ask
 * the fake driver what really happened (calls per variant, bytes in use).
 */
#ifndef FAKE_API_H
#define FAKE_API_H

#include <stddef.h>
#include <stdint.h>

/* ---- Driver (libcuda.so.1) ------------------------------------------------ */

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUstream;
typedef void *CUmemoryPool;
typedef void *CUarray;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct {
    char reserved[64];
} CUipcMemHandle;
typedef struct {
    unsigned char reserved[64];
} CUmemPoolPtrExportData;
typedef struct {
    int type;
    int requestedHandleTypes;
    struct {
        int type; /* 1 = device */
        int id;
    } location;
    void *win32HandleMetaData;
    struct {
        unsigned char compressionType, gpuDirectRDMACapable;
        unsigned short usage;
        unsigned char reserved[4];
    } allocFlags;
} CUmemAllocationProp;
typedef struct {
    size_t Width, Height;
    int Format;
    unsigned int NumChannels;
} CUDA_ARRAY_DESCRIPTOR;
typedef struct {
    size_t Width, Height, Depth;
    int Format;
    unsigned int NumChannels, Flags;
} CUDA_ARRAY3D_DESCRIPTOR;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_INVALID_CONTEXT 201
#define CUDA_ERROR_NOT_FOUND 500
#define CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM 2
#define CU_AD_FORMAT_UNSIGNED_INT8 0x01
#define CU_AD_FORMAT_FLOAT 0x20

CUresult cuInit(unsigned int flags);
CUresult cuDriverGetVersion(int *version);
CUresult cuDeviceGetCount(int *count);
CUresult cuDeviceGet(CUdevice *dev, int ordinal);
CUresult cuDeviceGetAttribute(int *value, int attrib, CUdevice dev);
CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuCtxGetDevice(CUdevice *dev);
CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr p);
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);
CUresult cuMemFree_v2(CUdeviceptr dptr);
CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                            unsigned int elem);
CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags);
CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags);
CUresult cuMemAllocHost_v2(void **pp, size_t bytesize);
CUresult cuMemFreeHost(void *p);
CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int flags);
CUresult cuMemHostUnregister(void *p);
CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream s);
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream s);
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream s);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream s);
CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                 CUstream s);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                      CUstream s);
CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t size,
                     const CUmemAllocationProp *prop, unsigned long long flags);
CUresult cuMemRelease(CUmemGenericAllocationHandle h);
CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle h,
                  unsigned long long flags);
CUresult cuMemUnmap(CUdeviceptr ptr, size_t size);
CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t align, CUdeviceptr addr,
                             unsigned long long flags);
CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size);
CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle h, unsigned int flags);
CUresult cuIpcCloseMemHandle(CUdeviceptr dptr);
CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *h, void *os_handle,
                                        int type);
CUresult cuArrayCreate_v2(CUarray *h, const CUDA_ARRAY_DESCRIPTOR *d);
CUresult cuArray3DCreate_v2(CUarray *h, const CUDA_ARRAY3D_DESCRIPTOR *d);
CUresult cuArrayDestroy(CUarray a);
CUresult cuMemPoolImportPointer(CUdeviceptr *out, CUmemoryPool pool,
                                CUmemPoolPtrExportData *data);
CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, uint64_t flags);
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags,
                             int *status);

typedef CUresult (*PFN_cuGetProcAddress_v12000)(const char *, void **, int, uint64_t, int *);
typedef CUresult (*PFN_cuGetProcAddress_v11030)(const char *, void **, int, uint64_t);
typedef CUresult (*PFN_cuMemAlloc_v3020)(CUdeviceptr *, size_t);
typedef CUresult (*PFN_cuMemAlloc_v2000)(unsigned int *, unsigned int);
typedef CUresult (*PFN_cuMemFree_v3020)(CUdeviceptr);

/* The fake driver's own introspection (not CUDA). */
struct fake_cuda_counts {
    unsigned long ptsz_calls;    /* calls that reached a _ptsz variant */
    unsigned long old_abi_calls; /* calls of the v2000 cuMemAlloc ABI */
    unsigned long lookups;       /* cuGetProcAddress[_v2] calls */
    unsigned long nested_calls;  /* cuMemAllocHost_v2 -> cuMemHostAlloc via RTLD_DEFAULT */
};
void fake_cuda_counts(struct fake_cuda_counts *out);
unsigned long long fake_cuda_used_bytes(int device); /* what NVML reports */

/* ---- Runtime (libcudart.so.12/13, or embedded: "static runtime") -------- */

typedef int cudaError_t;
cudaError_t cudaSetDevice(int device);
cudaError_t cudaMalloc(void **p, size_t size);
cudaError_t cudaFree(void *p);
cudaError_t cudaMallocManaged(void **p, size_t size, unsigned int flags);
cudaError_t cudaMallocHost(void **p, size_t size);
cudaError_t cudaHostAlloc(void **p, size_t size, unsigned int flags);
cudaError_t cudaFreeHost(void *p);
cudaError_t cudaMallocPitch(void **p, size_t *pitch, size_t width, size_t height);
cudaError_t cudaMallocAsync(void **p, size_t size, CUstream s);
cudaError_t cudaMallocAsync_ptsz(void **p, size_t size, CUstream s);
cudaError_t cudaFreeAsync(void *p, CUstream s);
cudaError_t cudaFreeAsync_ptsz(void *p, CUstream s);
cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **fn, unsigned long long flags,
                                    int *status);
cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **fn,
                                             unsigned int version, unsigned long long flags,
                                             int *status);
int fake_cudart_version(void);

/* ---- HIP (libamdhip64.so.6) ---------------------------------------------- */

typedef int hipError_t;
typedef void *hipStream_t;
typedef void *hipMemPool_t;
typedef void *hipMemGenericAllocationHandle_t;
hipError_t hipSetDevice(int device);
hipError_t hipGetDevice(int *device);
hipError_t hipMalloc(void **p, size_t size);
hipError_t hipExtMallocWithFlags(void **p, size_t size, unsigned int flags);
hipError_t hipMallocManaged(void **p, size_t size, unsigned int flags);
hipError_t hipHostMalloc(void **p, size_t size, unsigned int flags);
hipError_t hipHostFree(void *p);
hipError_t hipFreeHost(void *p);
hipError_t hipFree(void *p);
hipError_t hipMallocAsync(void **p, size_t size, hipStream_t s);
hipError_t hipFreeAsync(void *p, hipStream_t s);
hipError_t hipMallocFromPoolAsync(void **p, size_t size, hipMemPool_t pool, hipStream_t s);
hipError_t hipMemCreate(hipMemGenericAllocationHandle_t *h, size_t size,
                        const CUmemAllocationProp *prop, unsigned long long flags);
hipError_t hipMemRelease(hipMemGenericAllocationHandle_t h);
hipError_t hipMemMap(void *p, size_t size, size_t offset, hipMemGenericAllocationHandle_t h,
                     unsigned long long flags);
hipError_t hipMemUnmap(void *p, size_t size);
hipError_t hipMemAddressReserve(void **p, size_t size, size_t align, void *addr,
                                unsigned long long flags);
hipError_t hipMemAddressFree(void *p, size_t size);
hipError_t hipMallocPitch(void **p, size_t *pitch, size_t width, size_t height);
hipError_t hipHostRegister(void *p, size_t size, unsigned int flags);
hipError_t hipHostUnregister(void *p);
hipError_t hipGetProcAddress(const char *symbol, void **pfn, int version, uint64_t flags,
                             int *status);

#endif /* FAKE_API_H */
