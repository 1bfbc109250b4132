/* What lets src/formats/ compile unchanged as C11 and as CUDA device code:
 * a host/device qualifier for every inline function and a static assert that
 * works in both languages.  Nothing else in formats/ may depend on which
 * compiler it is. */
#ifndef DSV4KV_HD_H
#define DSV4KV_HD_H

#ifdef __CUDACC__
#define DSV4KV_HD __host__ __device__ __forceinline__
#else
#define DSV4KV_HD inline
#endif

#ifdef __cplusplus
#define DSV4KV_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define DSV4KV_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

#endif
