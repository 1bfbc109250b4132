/* The bytes combine moves at T 256 (topk 512, window 128: 256 rows of 512
 * int32 read and 640 written), as libc memcpy + memset on one thread: what
 * the same rows cost with no arithmetic at all.  Minimum of 3000 runs.
 *   cc -O2 combine_copy_bound.c -o combine_copy_bound && ./combine_copy_bound */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <stdint.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec*1e-3;}
int main(){ int32_t *in=aligned_alloc(64,256*512*4), *out=aligned_alloc(64,256*640*4); memset(in,1,256*512*4); memset(out,0,256*640*4);
 double best=1e9; for(int rep=0;rep<3000;rep++){double t=now(); for(int r=0;r<256;r++){ memcpy(out+r*640,in+r*512,2048); memset(out+r*640+512,7,512);} t=now()-t; if(t<best)best=t;}
 printf("copy+fill pattern: %.1f us\n",best);
 best=1e9; for(int rep=0;rep<3000;rep++){double t=now(); memset(out,3,256*640*4); t=now()-t; if(t<best)best=t;} printf("memset 655KB: %.1f us\n",best);
 best=1e9; for(int rep=0;rep<3000;rep++){double t=now(); volatile int64_t s=0; int64_t a=0; for(int i=0;i<256*512;i+=16) a+=in[i]; s=a; t=now()-t; if(t<best)best=t;} printf("read 524KB: %.1f us\n",best);
}
