// One kernel body, two ways to run it. A CUDA kernel of ours is written once, as a function
// template over a `block` (kernels/cuda/*.cuh), and compiled twice:
//   - by nvcc (__CUDACC__): `block` is the real thread block; threads() runs its lambda once per
//     hardware thread (threadIdx.x), sync() is __syncthreads(), per_thread<T> is one register,
//     warp_sum() is a butterfly of __shfl_xor_sync;
//   - by the host compiler: `block` is a simulated block; threads() runs its lambda for every
//     thread of the block in turn, sync() has nothing to do (each threads() phase ends for all
//     threads before the next begins: the barrier is the phase boundary), per_thread<T> is an
//     array indexed by thread, warp_sum() runs the same butterfly over that array.
// Rules that keep the two the same program:
//   - a body is a sequence of phases: threads() calls separated by sync(). Code outside threads()
//     runs once per block on the host and once per thread on the device, so it may only compute
//     values that are the same for every thread (shapes, indices of the block);
//   - a value one thread writes and another reads goes through BITNET_SHARED memory or global
//     memory, and only across a sync(); a thread's own value that lives across phases is a
//     per_thread<T>;
//   - warp collectives (warp_sum, warp_max) are phases of their own, called outside threads();
//   - blocks are one-dimensional (blockDim.x threads, a multiple of 32, at most max_threads).
// The host build is what tests run on machines without a GPU: the same arithmetic in the same
// order, so a body checked against the CPU kernels here is the body the device runs.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define BITNET_DEVICE __device__ __forceinline__
#define BITNET_HOST_DEVICE __host__ __device__ __forceinline__
#define BITNET_SHARED __shared__
#else
#include <array>
#include <cstring>
#define BITNET_DEVICE inline
#define BITNET_HOST_DEVICE inline
#define BITNET_SHARED
#endif

namespace bitnet::kernels::cuda {

inline constexpr unsigned warp_size = 32;
inline constexpr unsigned max_threads = 1024;

/// A launch: grid.x * grid.y blocks of `threads` threads (one-dimensional blocks).
struct launch_shape {
    unsigned grid_x = 1;
    unsigned grid_y = 1;
    unsigned threads = warp_size;
};

#if defined(__CUDACC__)

struct block {
    __device__ unsigned x() const { return blockIdx.x; }
    __device__ unsigned y() const { return blockIdx.y; }
    __device__ unsigned size() const { return blockDim.x; }
    template <class F>
    __device__ void threads(F&& f) const {
        f(static_cast<unsigned>(threadIdx.x));
    }
    __device__ void sync() const { __syncthreads(); }
};

template <class T>
struct per_thread {
    T value{};
    __device__ T& operator[](unsigned) { return value; }
    __device__ const T& operator[](unsigned) const { return value; }
};

/// Every lane of every warp ends with the sum of its warp's 32 values (a xor butterfly, offsets
/// 16, 8, 4, 2, 1: every lane adds the same pairs, so all lanes hold the same bits).
template <class T>
__device__ void warp_sum(const block&, per_thread<T>& v) {
    for (unsigned off = warp_size / 2; off > 0; off /= 2)
        v.value += __shfl_xor_sync(0xffffffffu, v.value, static_cast<int>(off));
}
template <class T>
__device__ void warp_max(const block&, per_thread<T>& v) {
    for (unsigned off = warp_size / 2; off > 0; off /= 2) {
        const T o = __shfl_xor_sync(0xffffffffu, v.value, static_cast<int>(off));
        v.value = o > v.value ? o : v.value;
    }
}
/// The butterfly over groups of `width` lanes only (width a power of two up to 32): lane l ends
/// with the sum of its group l / width, folded by halves (offsets width/2, ..., 1).
template <class T>
__device__ void group_sum(const block&, per_thread<T>& v, unsigned width) {
    for (unsigned off = width / 2; off > 0; off /= 2)
        v.value += __shfl_xor_sync(0xffffffffu, v.value, static_cast<int>(off));
}

/// Σ of the four signed byte products of a and b, plus c (the sm_61+ dp4a instruction).
__device__ __forceinline__ int dp4a(int a, int b, int c) {
    return __dp4a(a, b, c);
}

/// Integer atomics and the fence of a split reduction (ternary_gemm.cuh's split-K): integer
/// additions are exact in any order, so the blocks of a split may meet in any order.
__device__ __forceinline__ void atomic_add(std::int32_t* p, std::int32_t v) {
    atomicAdd(reinterpret_cast<int*>(p), static_cast<int>(v));
}
/// The old value, and `v` left in its place.
__device__ __forceinline__ std::int32_t atomic_exchange(std::int32_t* p, std::int32_t v) {
    return atomicExch(reinterpret_cast<int*>(p), static_cast<int>(v));
}
/// Adds 1; returns the value before.
__device__ __forceinline__ std::uint32_t atomic_increment(std::uint32_t* p) {
    return atomicAdd(reinterpret_cast<unsigned*>(p), 1u);
}
__device__ __forceinline__ void atomic_reset(std::uint32_t* p) {
    atomicExch(reinterpret_cast<unsigned*>(p), 0u);
}
/// Makes this thread's global writes visible to every block before its later writes are.
__device__ __forceinline__ void thread_fence() {
    __threadfence();
}

#else // the simulated grid

struct block {
    unsigned bx = 0;
    unsigned by = 0;
    unsigned n_threads = warp_size;
    unsigned x() const { return bx; }
    unsigned y() const { return by; }
    unsigned size() const { return n_threads; }
    template <class F>
    void threads(F&& f) const {
        for (unsigned t = 0; t < n_threads; ++t)
            f(t);
    }
    void sync() const {}
};

template <class T>
struct per_thread {
    std::array<T, max_threads> value{};
    T& operator[](unsigned t) { return value[t]; }
    const T& operator[](unsigned t) const { return value[t]; }
};

/// The device butterfly, step by step: at each offset every lane reads its partner's value from
/// before the step (a shuffle reads registers as they were when the warp issued it).
template <class T, class Op>
void butterfly(const block& b, per_thread<T>& v, unsigned width, Op op) {
    std::array<T, warp_size> before{};
    for (unsigned w0 = 0; w0 < b.size(); w0 += warp_size)
        for (unsigned off = width / 2; off > 0; off /= 2) {
            for (unsigned l = 0; l < warp_size; ++l)
                before[l] = v[w0 + l];
            for (unsigned l = 0; l < warp_size; ++l)
                v[w0 + l] = op(before[l], before[l ^ off]);
        }
}
template <class T>
void warp_sum(const block& b, per_thread<T>& v) {
    butterfly(b, v, warp_size, [](T a, T o) { return a + o; });
}
template <class T>
void warp_max(const block& b, per_thread<T>& v) {
    butterfly(b, v, warp_size, [](T a, T o) { return o > a ? o : a; });
}
template <class T>
void group_sum(const block& b, per_thread<T>& v, unsigned width) {
    butterfly(b, v, width, [](T a, T o) { return a + o; });
}

inline int dp4a(int a, int b, int c) {
    for (int i = 0; i < 4; ++i)
        c += static_cast<int>(static_cast<std::int8_t>(static_cast<std::uint32_t>(a) >> (8 * i))) *
             static_cast<int>(static_cast<std::int8_t>(static_cast<std::uint32_t>(b) >> (8 * i)));
    return c;
}

/// The device's atomics, where blocks run one after the other: plain reads and writes.
inline void atomic_add(std::int32_t* p, std::int32_t v) {
    *p += v;
}
inline std::int32_t atomic_exchange(std::int32_t* p, std::int32_t v) {
    const std::int32_t old = *p;
    *p = v;
    return old;
}
inline std::uint32_t atomic_increment(std::uint32_t* p) {
    return (*p)++;
}
inline void atomic_reset(std::uint32_t* p) {
    *p = 0;
}
inline void thread_fence() {}

/// Runs `body(block)` for every block of `shape`, one after the other (blocks never talk to each
/// other within a launch, so any order is a legal schedule).
template <class Body>
void simulate(const launch_shape& shape, Body&& body) {
    for (unsigned y = 0; y < shape.grid_y; ++y)
        for (unsigned x = 0; x < shape.grid_x; ++x)
            body(block{x, y, shape.threads});
}

#endif

/// After a warp collective (warp_max, warp_sum): lane 0 of every warp writes its warp's result to
/// out[warp] (BITNET_SHARED memory, one slot per warp), then the block synchronises, so that every
/// thread of the next phase may read the results of all warps.
template <class T>
BITNET_DEVICE void store_warp_results(const block& b, per_thread<T>& v, T* out) {
    b.threads([&](unsigned t) {
        if (t % warp_size == 0)
            out[t / warp_size] = v[t];
    });
    b.sync();
}

} // namespace bitnet::kernels::cuda
