// CPU kernel throughput on the BitNet-b1.58-2B-4T shapes (docs/GGUF-FORMAT.md §4.1): the ternary
// product per kernel family at decode (M = 1, weight GB/s) and batched (M tokens, GMAC/s), the
// tied-logits F16 product in F16 and in Q8_0 blocks, activation quantization, and the machine's
// streaming read bandwidth with the same thread counts, so decode figures can be quoted as a
// fraction of the roofline. Figures go to bench/RESULTS.md ("Kernels"). BITNET_ISA does not matter
// here: every family this CPU runs is registered by name.
#include "ceilings.hpp"
#include "kernels/cpu_features.hpp"
#include "kernels/f16.hpp"
#include "kernels/f16_matmul.hpp"
#include "kernels/greedy_screen.hpp"
#include "kernels/parallel.hpp"
#include "kernels/q8_matmul.hpp"
#include "kernels/ternary_matmul.hpp"
#include "kernels_attention.hpp"

#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace bitnet::kernels;
using bitnet::bench::random_floats;

struct matrix_shape {
    const char* name;
    std::uint32_t rows;
    std::uint32_t cols;
};

// The four distinct BitLinear shapes of one 2B-4T layer (q and o share 2560 × 2560, k and v are
// 640 × 2560, gate and up 6912 × 2560).
constexpr matrix_shape shapes[] = {
    {"q_o", 2560, 2560},
    {"k_v", 640, 2560},
    {"gate_up", 6912, 2560},
    {"down", 2560, 6912},
};

constexpr std::size_t vocab = 128256;
constexpr std::size_t n_embd = 2560;

std::vector<std::uint8_t> random_i2s(std::size_t n_bytes, std::uint32_t seed) {
    // Codes 0, 1, 2 uniformly (no code 3), four per byte.
    std::mt19937 rng(seed);
    std::vector<std::uint8_t> b(n_bytes);
    for (auto& v : b) {
        unsigned byte = 0;
        for (int i = 0; i < 4; ++i)
            byte = byte << 2 | (rng() % 3);
        v = static_cast<std::uint8_t>(byte);
    }
    return b;
}

void bm_ternary(benchmark::State& state, isa family, matrix_shape s) {
    const auto n_tok = static_cast<std::size_t>(state.range(0));
    const auto n_threads = static_cast<int>(state.range(1));
    const std::vector<std::uint8_t> i2s =
        random_i2s(static_cast<std::size_t>(s.rows) * s.cols / 4, s.rows);
    const packed_ternary w = pack_ternary(i2s.data(), s.rows, s.cols, 0.5f, family);
    const std::vector<float> x = random_floats(n_tok * s.cols, 7);
    quantized_acts acts;
    quantize_activations(x.data(), n_tok, s.cols, s.cols, acts, family);
    std::vector<float> y(n_tok * s.rows);
    for (auto _ : state) {
        ternary_matmul(w, acts, y.data(), s.rows, n_threads);
        benchmark::DoNotOptimize(y.data());
        benchmark::ClobberMemory();
    }
    const double weight_bytes = static_cast<double>(s.rows) * s.cols / 4;
    const double macs = static_cast<double>(s.rows) * s.cols * static_cast<double>(n_tok);
    state.counters["weight_GB/s"] =
        benchmark::Counter(weight_bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["GMAC/s"] =
        benchmark::Counter(macs * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["tok/s"] = benchmark::Counter(static_cast<double>(n_tok),
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

// Decode through the BitLinear weights of all 30 layers (q, k, v, o, gate, up, down: 521 MB of
// packed weights, far beyond the L2 and, unlike one matrix, not re-read from cache each
// iteration): the memory-bound figure to set against read_bandwidth.
void bm_ternary_decode_stack(benchmark::State& state, isa family) {
    const auto n_threads = static_cast<int>(state.range(0));
    constexpr int n_layers = 30;
    const matrix_shape layer[] = {shapes[0], shapes[1], shapes[1], shapes[0],
                                  shapes[2], shapes[2], shapes[3]};
    std::vector<packed_ternary> stack;
    double weight_bytes = 0;
    for (const matrix_shape& s : layer) {
        const std::vector<std::uint8_t> i2s =
            random_i2s(static_cast<std::size_t>(s.rows) * s.cols / 4, s.rows + s.cols);
        const packed_ternary proto = pack_ternary(i2s.data(), s.rows, s.cols, 0.5f, family);
        for (int l = 0; l < n_layers; ++l) {
            packed_ternary w;
            w.rows = proto.rows;
            w.cols = proto.cols;
            w.scale = proto.scale;
            w.family = proto.family;
            w.data = aligned_buffer(proto.data.size());
            std::memcpy(w.data.data(), proto.data.data(), proto.data.size());
            stack.push_back(std::move(w));
        }
        weight_bytes += static_cast<double>(s.rows) * s.cols / 4 * n_layers;
    }
    const std::vector<float> x = random_floats(6912, 7);
    quantized_acts narrow;
    quantized_acts wide;
    quantize_activations(x.data(), 1, 2560, 2560, narrow, family);
    quantize_activations(x.data(), 1, 6912, 6912, wide, family);
    std::vector<float> y(6912);
    for (auto _ : state) {
        // Layer-major order, as the forward pass reads them.
        for (int l = 0; l < n_layers; ++l)
            for (std::size_t m = 0; m < 7; ++m) {
                const packed_ternary& w = stack[m * n_layers + static_cast<std::size_t>(l)];
                ternary_matmul(w, w.cols == 2560 ? narrow : wide, y.data(), w.rows, n_threads);
            }
        benchmark::DoNotOptimize(y.data());
        benchmark::ClobberMemory();
    }
    state.counters["weight_GB/s"] =
        benchmark::Counter(weight_bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["weight_MB"] = weight_bytes * 1e-6;
}

// --- 1.6-bit packing (5 codes a byte, base 3): a measurement for memory-bound decode -----------
// Codes 0..2 of an I2_S matrix, one per byte, row-major (docs/GGUF-FORMAT.md §2.2's block order
// undone).
std::vector<std::uint8_t> i2s_codes(const std::vector<std::uint8_t>& i2s, std::uint32_t rows,
                                    std::uint32_t cols) {
    std::vector<std::uint8_t> c(static_cast<std::size_t>(rows) * cols);
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t k = 0; k < cols; ++k) {
            const std::uint8_t byte = i2s[r * cols / 4 + 32 * (k / 128) + k % 32];
            c[r * cols + k] = static_cast<std::uint8_t>((byte >> (6 - 2 * (k % 128 / 32))) & 3);
        }
    return c;
}

constexpr std::uint32_t tile5_rows = 80;

// The layout of bench/ternary5_avx512.cpp: 80-row tiles (the last padded with code 1, a zero
// weight), a 64-byte chunk per 4 columns, byte j = ceil(256 · v / 243) for the base-3 number v
// whose digit i (most significant first) is the code of row 16i + j/4, column 4s + j%4.
aligned_buffer pack5(const std::vector<std::uint8_t>& codes, std::uint32_t rows,
                     std::uint32_t cols) {
    const std::size_t n_tiles = (rows + tile5_rows - 1) / tile5_rows;
    const std::size_t steps = cols / 4;
    aligned_buffer out(n_tiles * steps * 64);
    std::uint8_t* dst = out.data();
    for (std::size_t ti = 0; ti < n_tiles; ++ti)
        for (std::size_t s = 0; s < steps; ++s)
            for (std::size_t j = 0; j < 64; ++j) {
                unsigned v = 0;
                for (std::size_t i = 0; i < 5; ++i) {
                    const std::size_t r = ti * tile5_rows + 16 * i + j / 4;
                    v = 3 * v + (r < rows ? codes[r * cols + 4 * s + j % 4] : 1u);
                }
                *dst++ = static_cast<std::uint8_t>((v * 256 + 242) / 243);
            }
    return out;
}

struct packed5 {
    std::uint32_t rows = 0;
    std::uint32_t cols = 0;
    aligned_buffer data;
    [[nodiscard]] std::size_t n_tiles() const { return (rows + tile5_rows - 1) / tile5_rows; }
};

// The GEMV over all tiles of w, split over threads as ternary_matmul splits its rows.
void gemv5(const packed5& w, const std::int8_t* q, std::int32_t* dots, int n_threads) {
    parallel_ranges(w.n_tiles(), 1, n_threads, [&](std::size_t begin, std::size_t end) {
        bitnet::bench::detail::gemv5_tiles_avx512(w.data.data(), w.cols, q, dots, begin, end);
    });
}

// Decode through the 30-layer stack packed 5 codes a byte, the counterpart of
// ternary_decode_30_layers (same shapes, layer-major order, weights far beyond the caches).
// Before timing, every distinct shape's integer dots are checked against a plain loop over the
// codes, so the figure is for a GEMV that computes the right thing.
void bm_ternary5_decode_stack(benchmark::State& state) {
    const auto n_threads = static_cast<int>(state.range(0));
    constexpr int n_layers = 30;
    const matrix_shape layer[] = {shapes[0], shapes[1], shapes[1], shapes[0],
                                  shapes[2], shapes[2], shapes[3]};
    const std::vector<float> x = random_floats(6912, 7);
    quantized_acts narrow;
    quantized_acts wide;
    quantize_activations(x.data(), 1, 2560, 2560, narrow);
    quantize_activations(x.data(), 1, 6912, 6912, wide);
    std::vector<packed5> stack;
    double weight_bytes = 0;
    std::vector<std::int32_t> dots(6912 + tile5_rows);
    for (const matrix_shape& s : layer) {
        const std::vector<std::uint8_t> codes =
            i2s_codes(random_i2s(static_cast<std::size_t>(s.rows) * s.cols / 4, s.rows + s.cols),
                      s.rows, s.cols);
        packed5 proto{s.rows, s.cols, pack5(codes, s.rows, s.cols)};
        const std::int8_t* q = (s.cols == 2560 ? narrow : wide).q.data();
        gemv5(proto, q, dots.data(), n_threads);
        for (std::size_t r = 0; r < s.rows; ++r) {
            std::int32_t want = 0;
            for (std::size_t k = 0; k < s.cols; ++k)
                want += codes[r * s.cols + k] * q[k];
            if (dots[r] != want) {
                state.SkipWithError("5-per-byte GEMV disagrees with the plain loop");
                return;
            }
        }
        for (int l = 0; l < n_layers; ++l) {
            packed5 w{proto.rows, proto.cols, aligned_buffer(proto.data.size())};
            std::memcpy(w.data.data(), proto.data.data(), proto.data.size());
            stack.push_back(std::move(w));
        }
        weight_bytes += static_cast<double>(proto.data.size()) * n_layers;
    }
    for (auto _ : state) {
        for (int l = 0; l < n_layers; ++l)
            for (std::size_t m = 0; m < 7; ++m) {
                const packed5& w = stack[m * n_layers + static_cast<std::size_t>(l)];
                gemv5(w, (w.cols == 2560 ? narrow : wide).q.data(), dots.data(), n_threads);
            }
        benchmark::DoNotOptimize(dots.data());
        benchmark::ClobberMemory();
    }
    state.counters["weight_GB/s"] =
        benchmark::Counter(weight_bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["weight_MB"] = weight_bytes * 1e-6;
}

// One matrix at M = 1, packed 5 codes a byte, re-read from cache every iteration: the unpack's own
// speed, to set against the memory bandwidth it would have to keep up with.
void bm_ternary5_matrix(benchmark::State& state, matrix_shape s) {
    const auto n_threads = static_cast<int>(state.range(0));
    const std::vector<std::uint8_t> codes = i2s_codes(
        random_i2s(static_cast<std::size_t>(s.rows) * s.cols / 4, s.rows), s.rows, s.cols);
    const packed5 w{s.rows, s.cols, pack5(codes, s.rows, s.cols)};
    const std::vector<float> x = random_floats(s.cols, 7);
    quantized_acts acts;
    quantize_activations(x.data(), 1, s.cols, s.cols, acts);
    std::vector<std::int32_t> dots(w.n_tiles() * tile5_rows);
    for (auto _ : state) {
        gemv5(w, acts.q.data(), dots.data(), n_threads);
        benchmark::DoNotOptimize(dots.data());
        benchmark::ClobberMemory();
    }
    state.counters["weight_GB/s"] = benchmark::Counter(
        static_cast<double>(w.data.size()) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// The embedding is shared by every f16 benchmark (657 MB): built once.
const std::vector<std::uint16_t>& embedding() {
    static const std::vector<std::uint16_t> w = [] {
        std::vector<std::uint16_t> v(vocab * n_embd);
        std::mt19937 rng(3);
        std::uniform_real_distribution<float> dist(-0.1f, 0.1f);
        std::vector<std::uint16_t> pool(1 << 16);
        for (auto& h : pool)
            h = f32_to_f16(dist(rng));
        for (std::size_t i = 0; i < v.size(); ++i)
            v[i] = pool[(i * 40503u) & 0xffffu];
        return v;
    }();
    return w;
}

void bm_f16_logits(benchmark::State& state, isa family) {
    const auto n_tok = static_cast<std::size_t>(state.range(0));
    const auto n_threads = static_cast<int>(state.range(1));
    const std::vector<std::uint16_t>& w = embedding();
    const std::vector<float> x = random_floats(n_tok * n_embd, 5);
    std::vector<float> y(n_tok * vocab);
    for (auto _ : state) {
        f16_matmul(w.data(), vocab, n_embd, x.data(), n_tok, n_embd, y.data(), vocab, n_threads,
                   family);
        benchmark::DoNotOptimize(y.data());
        benchmark::ClobberMemory();
    }
    const double weight_bytes = static_cast<double>(w.size()) * 2;
    state.counters["weight_GB/s"] =
        benchmark::Counter(weight_bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["tok/s"] = benchmark::Counter(static_cast<double>(n_tok),
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

// The same product with the embedding in Q8_0 blocks (engine_options::q8_logits), activations
// quantized to Q8_0 inside the timed loop as the engine does. weight_GB/s counts values and scales.
void bm_q8_0_logits(benchmark::State& state, isa family) {
    const auto n_tok = static_cast<std::size_t>(state.range(0));
    const auto n_threads = static_cast<int>(state.range(1));
    static const packed_q8_0 w = pack_q8_0(embedding().data(), vocab, n_embd, isa::scalar);
    packed_q8_0 view; // the same bytes, run by `family`
    view.rows = w.rows;
    view.cols = w.cols;
    view.family = family;
    view.values = aligned_buffer(w.values.size());
    view.scales = aligned_buffer(w.scales.size());
    std::memcpy(view.values.data(), w.values.data(), w.values.size());
    std::memcpy(view.scales.data(), w.scales.data(), w.scales.size());
    const std::vector<float> x = random_floats(n_tok * n_embd, 5);
    std::vector<float> y(n_tok * vocab);
    q8_0_acts acts;
    for (auto _ : state) {
        quantize_q8_0(x.data(), n_tok, n_embd, n_embd, acts);
        q8_0_matmul(view, acts, y.data(), vocab, n_threads);
        benchmark::DoNotOptimize(y.data());
        benchmark::ClobberMemory();
    }
    const double weight_bytes = static_cast<double>(view.bytes());
    state.counters["weight_GB/s"] =
        benchmark::Counter(weight_bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["tok/s"] = benchmark::Counter(static_cast<double>(n_tok),
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

// The greedy token of the F16 logits from a Q8_0 screen (kernels/greedy_screen.hpp): the Q8_0
// product of every row, its bound, and the F16 product of the rows the bound keeps; the same token
// as f16_logits followed by an argmax. exact_rows: the rows computed in F16 a token (random
// activations over a random matrix: their logits are far flatter than a trained model's).
void bm_greedy_screen(benchmark::State& state, isa family) {
    const auto n_tok = static_cast<std::size_t>(state.range(0));
    const auto n_threads = static_cast<int>(state.range(1));
    // embedding() repeats its rows (128 distinct ones: a pool index advancing by a multiple of
    // 512 a row), and every copy of the best row would be a candidate: the screen's matrix draws
    // each value from the pool by a hash of its index instead.
    static const std::vector<std::uint16_t> w = [] {
        const std::vector<std::uint16_t>& e = embedding();
        std::vector<std::uint16_t> v(e.size());
        for (std::uint64_t i = 0; i < v.size(); ++i) {
            std::uint64_t h = (i + 1) * 0x9e3779b97f4a7c15ull;
            h ^= h >> 31;
            h *= 0xbf58476d1ce4e5b9ull;
            v[i] = e[(h >> 40) % e.size()];
        }
        return v;
    }();
    static const q8_0_screen screen = make_q8_0_screen(w.data(), vocab, n_embd);
    const std::vector<float> x = random_floats(n_tok * n_embd, 5);
    std::vector<screened_token> out(n_tok);
    for (auto _ : state) {
        screened_argmax(screen, w.data(), x.data(), n_tok, n_embd, out.data(), n_threads, family);
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    double exact_rows = 0;
    for (const auto& o : out)
        exact_rows += o.exact_rows;
    state.counters["exact_rows"] = exact_rows / static_cast<double>(n_tok);
    state.counters["weight_GB/s"] = benchmark::Counter(
        static_cast<double>(screen.bytes()) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["tok/s"] = benchmark::Counter(static_cast<double>(n_tok),
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

void bm_quantize(benchmark::State& state, isa family) {
    const auto n_tok = static_cast<std::size_t>(state.range(0));
    const std::vector<float> x = random_floats(n_tok * n_embd, 9);
    quantized_acts acts;
    for (auto _ : state) {
        quantize_activations(x.data(), n_tok, n_embd, n_embd, acts, family);
        benchmark::DoNotOptimize(acts.q.data());
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                            static_cast<std::int64_t>(x.size() * sizeof(float)));
}

// Streaming read of a buffer far larger than the L3, split over the threads as the kernels split
// their rows: the bandwidth ceiling for decode.
void bm_read_bandwidth(benchmark::State& state) {
    const auto n_threads = static_cast<int>(state.range(0));
    constexpr std::size_t n_bytes = std::size_t{1} << 30;
    static const std::unique_ptr<std::uint64_t[]> buf = [] {
        auto p = std::make_unique<std::uint64_t[]>(n_bytes / 8);
        std::memset(p.get(), 1, n_bytes); // fault every page in before timing
        return p;
    }();
    const std::size_t n_words = n_bytes / 8;
    for (auto _ : state) {
        std::atomic<std::uint64_t> total{0};
        parallel_ranges(n_words, 4096, n_threads, [&](std::size_t begin, std::size_t end) {
            // Four independent sums so the adds never limit the loads.
            std::uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            for (std::size_t i = begin; i < end; i += 4) {
                s0 += buf[i];
                s1 += buf[i + 1];
                s2 += buf[i + 2];
                s3 += buf[i + 3];
            }
            total.fetch_add(s0 + s1 + s2 + s3, std::memory_order_relaxed);
        });
        const std::uint64_t sum = total.load();
        benchmark::DoNotOptimize(sum);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                            static_cast<std::int64_t>(n_bytes));
}

// The int8 ceiling beside the kernels, on one thread and in CPU time like the kernel rates quoted
// in bench/RESULTS.md, so a kernel's GMAC/s can be given as a fraction of it in the same run
// (bench_engine measures the same loops in wall time over all threads).
void bm_int8_peak(benchmark::State& state, std::int64_t (*loop)(std::int64_t),
                  double macs_per_iter) {
    constexpr std::int64_t iters = 1 << 16;
    for (auto _ : state)
        benchmark::DoNotOptimize(loop(iters));
    state.counters["GMAC/s"] = benchmark::Counter(macs_per_iter * iters * 1e-9,
                                                  benchmark::Counter::kIsIterationInvariantRate);
}

// The memory-bound figures: 1 and 2 threads, wall time, milliseconds.
void on_1_and_2_threads(benchmark::internal::Benchmark* b) {
    b->Arg(1)->Arg(2)->ArgName("threads")->UseRealTime()->Unit(benchmark::kMillisecond);
}

void register_all() {
    std::vector<isa> families = {isa::scalar};
    for (const isa f : {isa::avx2, isa::avx512_vnni})
        if (isa_supported(f))
            families.push_back(f);

    on_1_and_2_threads(benchmark::RegisterBenchmark("read_bandwidth", bm_read_bandwidth));

    if (isa_supported(isa::avx512_vnni))
        benchmark::RegisterBenchmark("int8_peak/vpdpbusd_zmm", bm_int8_peak,
                                     bitnet::bench::detail::vnni_zmm_loop, 12.0 * 64);
    if (isa_supported(isa::avx2))
        benchmark::RegisterBenchmark("int8_peak/vpmaddubsw_ymm", bm_int8_peak,
                                     bitnet::bench::detail::maddubs_ymm_loop, 8.0 * 4 * 32);

    if (isa_supported(isa::avx512_vnni))
        on_1_and_2_threads(benchmark::RegisterBenchmark("ternary5_decode_30_layers/avx512",
                                                        bm_ternary5_decode_stack));
    if (isa_supported(isa::avx512_vnni))
        for (const matrix_shape& s : {shapes[0], shapes[2]})
            benchmark::RegisterBenchmark((std::string("ternary5/avx512/") + s.name).c_str(),
                                         bm_ternary5_matrix, s)
                ->Arg(1)
                ->ArgName("threads")
                ->UseRealTime()
                ->Unit(benchmark::kMicrosecond);

    for (const isa f : families) {
        const std::string fam(isa_name(f));
        on_1_and_2_threads(benchmark::RegisterBenchmark(("ternary_decode_30_layers/" + fam).c_str(),
                                                        bm_ternary_decode_stack, f));
        // Decode: every layer shape at M = 1.
        for (const matrix_shape& s : shapes)
            benchmark::RegisterBenchmark(("ternary/" + fam + "/" + s.name).c_str(), bm_ternary, f,
                                         s)
                ->ArgsProduct({{1}, {1, 2}})
                ->ArgNames({"M", "threads"})
                ->UseRealTime()
                ->Unit(benchmark::kMicrosecond);
        // Batched: the two large shapes; scalar only at M = 8 (it would take seconds per call).
        // M = 2..5 are the steps that verify 1..4 speculative drafts.
        const std::vector<std::int64_t> batch =
            f == isa::scalar ? std::vector<std::int64_t>{8}
                             : std::vector<std::int64_t>{2, 3, 4, 5, 8, 32, 64, 512};
        for (const matrix_shape& s : {shapes[0], shapes[2]})
            benchmark::RegisterBenchmark(("ternary/" + fam + "/" + s.name).c_str(), bm_ternary, f,
                                         s)
                ->ArgsProduct({batch, {1, 2}})
                ->ArgNames({"M", "threads"})
                ->UseRealTime()
                ->Unit(benchmark::kMillisecond);
        // The logits product in F16 and in Q8_0 blocks, side by side. The scalar twins (libm's
        // fma per element or per block) only at M = 1: M = 8 would take seconds per call.
        const std::vector<std::int64_t> logits_m =
            f == isa::scalar ? std::vector<std::int64_t>{1}
                             : std::vector<std::int64_t>{1, 2, 3, 4, 5, 8, 32};
        using logits_fn = void (*)(benchmark::State&, isa);
        for (const auto& [name, fn] :
             {std::pair<const char*, logits_fn>{"f16_logits/", bm_f16_logits},
              std::pair<const char*, logits_fn>{"q8_0_logits/", bm_q8_0_logits},
              std::pair<const char*, logits_fn>{"greedy_screen/", bm_greedy_screen}})
            benchmark::RegisterBenchmark((name + fam).c_str(), fn, f)
                ->ArgsProduct({logits_m, {1, 2}})
                ->ArgNames({"M", "threads"})
                ->UseRealTime()
                ->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark(("quantize/" + fam).c_str(), bm_quantize, f)
            ->Arg(1)
            ->Arg(64)
            ->ArgName("M")
            ->Unit(benchmark::kMicrosecond);
    }
    bitnet::bench::register_attention(families);
}

} // namespace

std::vector<float> bitnet::bench::random_floats(std::size_t n, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> v(n);
    for (auto& x : v)
        x = dist(rng);
    return v;
}

int main(int argc, char** argv) {
    register_all();
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv))
        return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
