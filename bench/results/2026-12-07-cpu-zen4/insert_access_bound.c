// The access pattern of the CPU MXFP8 / NVFP4 inserts alone (eighteenth session):
// each row loads its 1 KiB key row and stores a record (528 or 288 bytes) at its
// slot, pages of 64 slots in shuffled order as `dsv4kv bench` makes them, no
// arithmetic; 2 threads, the rows split in halves; against a 2-thread memcpy of
// 256 MiB right after.  Even runs store through the cache (mode 0), odd runs
// stream every 16-byte piece (mode 1).
//   gcc -O2 -mavx512f -mavx512bw -pthread insert_access_bound.c -o acc && ./acc 528 && ./acc 288
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static int64_t N = 524288; static int REC = 528; static uint16_t *K; static uint8_t *C; static int64_t *S;
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
typedef struct {int64_t lo, hi; int mode;} job;
static void *run(void *v){ job *j=v;
  for (int64_t t=j->lo;t<j->hi;t++){ const __m512i *x=(const __m512i*)(K+t*512); __m512i a[16];
    for(int i=0;i<16;i++) a[i]=_mm512_loadu_si512(x+i);
    uint8_t *d=C+S[t]*REC;
    if (j->mode==1){ const __m128i *q=(const __m128i*)a; for(int i=0;i<REC/16;i++) _mm_stream_si128((__m128i*)(d+16*i),q[i]); }
    else if (REC==528){ for(int i=0;i<8;i++) _mm512_storeu_si512(d+64*i,_mm512_or_si512(a[2*i],a[2*i+1])); _mm_storeu_si128((__m128i*)(d+512),_mm512_castsi512_si128(a[15])); }
    else { for(int i=0;i<4;i++) _mm512_storeu_si512(d+64*i,_mm512_or_si512(a[4*i],_mm512_or_si512(a[4*i+1],_mm512_or_si512(a[4*i+2],a[4*i+3])))); _mm256_storeu_si256((__m256i*)(d+256),_mm512_castsi512_si256(a[0])); }
  } return 0;}
static void *cp(void *v){ job *j=v; size_t h=(size_t)256<<20; memcpy((uint8_t*)C+j->lo*(h/2),(uint8_t*)K+j->lo*(h/2),h/2); return 0;}
int main(int argc,char**argv){ if(argc>1) REC=atoi(argv[1]);
  K=aligned_alloc(64,N*1024); C=aligned_alloc(64,N*REC+(256<<20)); S=malloc(N*8);
  memset(K,1,N*1024); memset(C,0,N*REC+(256<<20));
  int64_t P=N/64; int64_t *perm=malloc(P*8); for(int64_t i=0;i<P;i++)perm[i]=i; srand(1);
  for(int64_t i=P-1;i>0;i--){int64_t r=rand()%(i+1),tt=perm[i];perm[i]=perm[r];perm[r]=tt;}
  for(int64_t t=0;t<N;t++) S[t]=perm[t/64]*64+t%64;
  for(int rep=0;rep<6;rep++){
    int mode=rep&1; pthread_t th[2]; job jb[2]={{0,N/2,mode},{N/2,N,mode}}; double t0=now();
    for(int i=0;i<2;i++) pthread_create(&th[i],0,run,&jb[i]); for(int i=0;i<2;i++) pthread_join(th[i],0);
    double ta=now()-t0; job jc[2]={{0,0,0},{1,0,0}}; t0=now();
    for(int i=0;i<2;i++) pthread_create(&th[i],0,cp,&jc[i]); for(int i=0;i<2;i++) pthread_join(th[i],0);
    double tc=now()-t0;
    double ga=N*(1024.0+REC+8)/ta/1e9, gc=2.0*(256<<20)/tc/1e9;
    _mm_sfence(); printf("mode %d rec %d: access-only %.1f GB/s (counted), memcpy %.1f GB/s, ratio %.1f%%\n",mode,REC,ga,gc,100*ga/gc);
  } return 0;}
