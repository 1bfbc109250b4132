/* Seeded, counter-based randomness for the simulator.
 *
 * Everything random in a run (arrivals of the synthetic workload, key values,
 * synthetic top-k selections, verification samples) is a pure function of
 * --seed and of what it describes, so a run is reproducible and the verifier can
 * re-derive any value the simulator produced. */
#ifndef DSV4KV_SIM_RNG_H
#define DSV4KV_SIM_RNG_H

#include <math.h>
#include <stdint.h>

/* splitmix64 finaliser: a bijective 64-bit mix. */
static inline uint64_t sim_mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* Hash of an ordered pair / triple of 64-bit values. */
static inline uint64_t sim_hash2(uint64_t a, uint64_t b) {
  return sim_mix64(sim_mix64(a) ^ b);
}
static inline uint64_t sim_hash3(uint64_t a, uint64_t b, uint64_t c) {
  return sim_hash2(sim_hash2(a, b), c);
}

/* A sequential generator (splitmix64 stream). */
typedef struct {
  uint64_t state;
} sim_rng;

static inline sim_rng sim_rng_make(uint64_t seed) {
  sim_rng r = {sim_mix64(seed ^ 0x5eed5eed5eed5eedull)};
  return r;
}

static inline uint64_t sim_rng_next(sim_rng *r) {
  r->state += 0x9e3779b97f4a7c15ull;
  uint64_t z = r->state;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Uniform in (0, 1): never 0, so log() of it is finite. */
static inline double sim_rng_uniform(sim_rng *r) {
  return ((double)(sim_rng_next(r) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* Uniform integer in [0, n), n > 0. */
static inline uint64_t sim_rng_below(sim_rng *r, uint64_t n) {
  return sim_rng_next(r) % n;
}

/* Standard normal (Box-Muller, one value per call). */
static inline double sim_rng_normal(sim_rng *r) {
  double u1 = sim_rng_uniform(r), u2 = sim_rng_uniform(r);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

#endif
