// The CUDA kernels' decode speed on a real device, on the 2B-4T shape as the CUDA engine runs it:
// each stacked ternary product (Q/K/V, output, gate/up, down) as the decode GEMV (one token) and
// at 8, 16 and 64 tokens (the split-K tiles), the fused norm+quantize launches, and the F16 tied
// logits, timed as a stream of back-to-back launches; bytes moved per call (2-bit weights, int8
// activations, float inputs and outputs) over the time, as GB/s and as a fraction of the device's
// theoretical bandwidth (enumerate_devices: memory clock × bus width × 2). Then one decode token's
// matrix launches (30 layers of 4 products and 4 norm+quantize, then the logits) two ways: summed
// from the separate timings, and as one launch plan replayed as a CUDA graph (what the engine
// does), whose difference is the launches' own cost. RoPE, attention and sampling are not in
// either. Without a device (no driver, no GPU, or a build without CUDA) it prints one skip line
// and exits 0.
//
//   bench_cuda [--device N] [--iterations N]
#include "kernels/cuda/launch_plan.hpp"
#include "kernels/cuda/ops.hpp"
#include "kernels/cuda/ternary_gemm.cuh"
#include "kernels/cuda/ternary_gpu_layout.hpp"
#include "kernels/f16.hpp"

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace kc = bitnet::kernels::cuda;

namespace {

// The 2B-4T shape (tools/model_synth.cpp "2b4t").
constexpr std::uint32_t hidden = 2560;
constexpr std::uint32_t ffn = 6912;
constexpr std::uint32_t kv = 640;
constexpr std::uint32_t layers = 30;
constexpr std::uint32_t vocab = 128256;

/// The engine's four products a layer: Q/K/V and gate/up stacked (cuda_engine_load.cpp).
struct projection {
    const char* name;
    std::uint32_t rows;
    std::uint32_t cols;
};
constexpr projection projections[] = {
    {"attn_qkv", hidden + 2 * kv, hidden},
    {"attn_o", hidden, hidden},
    {"ffn_gate_up", 2 * ffn, hidden},
    {"ffn_down", hidden, ffn},
};

struct device_mem {
    kc::ops& o;
    void* p;
    device_mem(kc::ops& ops, std::size_t bytes)
        : o(ops)
        , p(ops.alloc(bytes)) {}
    device_mem(const device_mem&) = delete;
    device_mem& operator=(const device_mem&) = delete;
    ~device_mem() { o.release(p); }
    template <class T>
    T* as() const {
        return static_cast<T*>(p);
    }
};

std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint32_t seed) {
    std::vector<std::uint8_t> v(n);
    std::mt19937 rng(seed);
    for (auto& b : v)
        b = static_cast<std::uint8_t>(rng() % 3 * 0x55); // codes 0..2 in every slot
    return v;
}

/// Seconds per call of `launch`, over `iterations` calls queued back to back.
template <class F>
double seconds_per_call(kc::ops& o, int iterations, F&& launch) {
    for (int i = 0; i < 10; ++i)
        launch();
    o.finish();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i)
        launch();
    o.finish();
    const auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double>(t1 - t0).count() / iterations;
}

void report(const char* what, double seconds, double bytes, double peak_gbs) {
    const double gbs = bytes / seconds / 1e9;
    std::printf("%-22s %10.2f us %12.1f MB %9.1f GB/s %6.1f %%\n", what, seconds * 1e6, bytes / 1e6,
                gbs, 100.0 * gbs / peak_gbs);
}

/// The device buffers every timing shares: 64 tokens of activations as wide as the widest input
/// (quantized once), outputs as wide as the vocabulary, a norm weight, the split-K workspace.
struct buffers {
    device_mem x, u, q, scale, y, norm, split_sums, split_counters;
    explicit buffers(kc::ops& o)
        : x(o, 64 * ffn * sizeof(float))
        , u(o, 64 * ffn * sizeof(float))
        , q(o, 64 * ffn)
        , scale(o, 64 * sizeof(float))
        , y(o, 64 * std::size_t{vocab} * sizeof(float))
        , norm(o, ffn * sizeof(float))
        , split_sums(o, std::size_t{kc::ternary_gemm_tiled_kernel::fill_blocks} *
                            kc::ternary_gemm_tiled_kernel::tile_outputs * 4)
        , split_counters(o, std::size_t{kc::ternary_gemm_tiled_kernel::fill_blocks} * 4) {
        std::vector<float> v(ffn);
        std::mt19937 rng(1);
        std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
        for (auto& e : v)
            e = dist(rng);
        for (int t = 0; t < 64; ++t) {
            o.upload(x.as<float>() + std::size_t{ffn} * t, v.data(), v.size() * sizeof(float));
            o.upload(u.as<float>() + std::size_t{ffn} * t, v.data(), v.size() * sizeof(float));
        }
        const std::vector<float> ones(ffn, 1.0f);
        o.upload(norm.p, ones.data(), ones.size() * sizeof(float));
        const std::vector<std::uint8_t> zeros(
            std::size_t{kc::ternary_gemm_tiled_kernel::fill_blocks} *
                kc::ternary_gemm_tiled_kernel::tile_outputs * 4,
            0);
        o.upload(split_sums.p, zeros.data(), zeros.size());
        o.upload(split_counters.p, zeros.data(),
                 std::size_t{kc::ternary_gemm_tiled_kernel::fill_blocks} * 4);
        o.finish();
    }
};

/// The norm+quantize launch of one token row of k (gate mode: relu(x)² · u, as the FFN's).
kc::norm_quantize_args norm_quantize_of(const buffers& b, std::uint32_t k, bool gate,
                                        std::uint32_t n_rows = 1) {
    kc::norm_quantize_args a;
    a.x = b.x.as<float>();
    a.ldx = ffn;
    a.u = gate ? b.u.as<float>() : nullptr;
    a.ldu = ffn;
    a.weight = b.norm.as<float>();
    a.eps = 1e-5f;
    a.n_rows = n_rows;
    a.n = k;
    a.q = b.q.as<std::int8_t>();
    a.ldq = ffn;
    a.scale = b.scale.as<float>();
    return a;
}

kc::ternary_gemm_args product_of(const buffers& b, const projection& p, const device_mem& w,
                                 std::uint32_t n_tok) {
    kc::ternary_gemm_args a;
    a.w = w.as<std::uint8_t>();
    a.rows = p.rows;
    a.cols = p.cols;
    a.w_scale = 0.01f;
    a.q = b.q.as<std::int8_t>();
    a.ldq = ffn;
    a.act_scale = b.scale.as<float>();
    a.n_rows = n_tok;
    a.y = b.y.as<float>();
    a.ldy = p.rows;
    a.split_sums = b.split_sums.as<std::int32_t>();
    a.split_counters = b.split_counters.as<std::uint32_t>();
    a.split_tiles = kc::ternary_gemm_tiled_kernel::fill_blocks;
    return a;
}

kc::f16_gemm_args logits_of(const buffers& b, const device_mem& w) {
    kc::f16_gemm_args a;
    a.w = w.as<std::uint16_t>();
    a.rows = vocab;
    a.cols = hidden;
    a.x = b.x.as<float>();
    a.ldx = ffn;
    a.n_rows = 1;
    a.y = b.y.as<float>();
    a.ldy = vocab;
    return a;
}

/// One decode token's matrix work: each timed alone (summed, per layer counts as the engine's),
/// then the whole token as one launch plan replayed (a CUDA graph).
struct token_timing {
    double seconds = 0.0;
    double bytes = 0.0;
    kc::launch_plan layer; ///< one layer's launches
};

void time_norm_quantize(kc::ops& o, int iterations, const buffers& b, double peak,
                        token_timing& tok) {
    // Per layer: the attention input, its sub-norm and the FFN input at 2560, then the gate,
    // sub-norm and quantization of the FFN's inner activation at 6912.
    for (const bool gate : {false, true}) {
        const std::uint32_t k = gate ? ffn : hidden;
        const auto a = norm_quantize_of(b, k, gate);
        const double s = seconds_per_call(o, iterations, [&] { o.run(a); });
        const double bytes = k * 4.0 * (gate ? 2 : 1) + k + 4.0;
        report(gate ? "gate+norm+quant K=6912" : "norm+quant K=2560", s, bytes, peak);
        const double per_layer = gate ? 1.0 : 3.0;
        tok.seconds += per_layer * layers * s;
        tok.bytes += per_layer * layers * bytes;
    }
}

void time_products(kc::ops& o, int iterations, const buffers& b, double peak, token_timing& tok,
                   std::vector<std::unique_ptr<device_mem>>& weights) {
    std::uint32_t seed = 7;
    for (const projection& p : projections) {
        const auto w = random_bytes(kc::ternary_gpu_bytes(p.rows, p.cols), seed++);
        weights.push_back(std::make_unique<device_mem>(o, w.size()));
        o.upload(weights.back()->p, w.data(), w.size());
        tok.layer.add(norm_quantize_of(b, p.cols, p.cols == ffn));
        tok.layer.add(product_of(b, p, *weights.back(), 1));
        for (const std::uint32_t n_tok : {1u, 8u, 16u, 64u}) {
            const auto a = product_of(b, p, *weights.back(), n_tok);
            const double s = seconds_per_call(o, iterations, [&] { o.run(a); });
            const double bytes =
                static_cast<double>(w.size()) + n_tok * (p.cols + 4.0 + p.rows * 4.0);
            const std::string what =
                std::string(p.name) + (n_tok == 1 ? "" : " T=" + std::to_string(n_tok));
            report(what.c_str(), s, bytes, peak);
            if (n_tok == 1) {
                tok.seconds += layers * s;
                tok.bytes += layers * bytes;
            } else {
                std::printf("%-22s %10.0f tokens/s (K split %u ways)\n", "", n_tok / s,
                            kc::ternary_splits_for(p.rows, p.cols, n_tok));
            }
        }
    }
}

void time_token(kc::ops& o, int iterations, const buffers& b, double peak, token_timing& tok) {
    std::vector<std::uint16_t> w(std::size_t{vocab} * hidden);
    for (std::size_t i = 0; i < w.size(); ++i)
        w[i] = bitnet::kernels::f32_to_f16(static_cast<float>(i % 97) / 97.0f - 0.5f);
    device_mem dw(o, w.size() * sizeof(std::uint16_t));
    o.upload(dw.p, w.data(), w.size() * sizeof(std::uint16_t));
    o.finish();
    const auto logits = logits_of(b, dw);
    const double s = seconds_per_call(o, std::max(1, iterations / 10), [&] { o.run(logits); });
    const double bytes = w.size() * 2.0 + hidden * 4.0 + vocab * 4.0;
    report("logits f16 T=1", s, bytes, peak);
    tok.seconds += s;
    tok.bytes += bytes;
    std::printf("decode token (matrix kernels only, %u layers + logits), summed: %.3f ms, %.1f "
                "tok/s-equivalent, %.1f GB/s = %.1f %% of peak\n",
                layers, tok.seconds * 1e3, 1.0 / tok.seconds, tok.bytes / tok.seconds / 1e9,
                100.0 * tok.bytes / tok.seconds / 1e9 / peak);
    kc::launch_plan plan;
    for (std::uint32_t l = 0; l < layers; ++l)
        for (const auto& a : tok.layer.launches())
            std::visit(
                [&](const auto& args) {
                    if constexpr (!std::is_same_v<std::decay_t<decltype(args)>, std::monostate>)
                        plan.add(args);
                },
                a);
    plan.add(logits);
    const double g =
        seconds_per_call(o, std::max(1, iterations / 10), [&] { o.replay_plan(plan); });
    std::printf("decode token (the same %zu launches as one CUDA graph): %.3f ms, %.1f "
                "tok/s-equivalent, %.1f GB/s = %.1f %% of peak\n",
                plan.size(), g * 1e3, 1.0 / g, tok.bytes / g / 1e9,
                100.0 * tok.bytes / g / 1e9 / peak);
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"CUDA decode kernels: time, bytes and bandwidth fraction (2B-4T shape)"};
    int device = 0;
    int iterations = 200;
    app.add_option("--device", device, "CUDA device index")->capture_default_str();
    app.add_option("--iterations", iterations, "timed calls per kernel")->capture_default_str();
    CLI11_PARSE(app, argc, argv);

    const kc::device_report r = kc::enumerate_devices();
    if (device < 0 || static_cast<std::size_t>(device) >= r.devices.size()) {
        std::printf("bench_cuda: skip: no CUDA device %d (%s)\n", device,
                    r.error.empty() ? "not listed by the runtime" : r.error.c_str());
        return 0;
    }
    const kc::device_info& info = r.devices[static_cast<std::size_t>(device)];
    std::unique_ptr<kc::ops> o;
    try {
        o = kc::make_device_ops(device);
    } catch (const kc::device_error& e) {
        std::printf("bench_cuda: skip: cuda:%d cannot be opened: %s: %s\n", device,
                    kc::failure_name(e.kind()), e.what());
        return 0;
    }
    try {
        std::printf("%s, theoretical %.0f GB/s, runtime %d, driver %d\n", o->describe().c_str(),
                    info.bandwidth_gbs, r.runtime_version, r.driver_version);
        std::printf("%-22s %13s %15s %14s %8s\n", "kernel (T = 1)", "time", "moved", "bandwidth",
                    "of peak");
        buffers b(*o);
        // Quantize all 64 rows for the batched runs.
        o->run(norm_quantize_of(b, ffn, false, 64));
        token_timing tok;
        std::vector<std::unique_ptr<device_mem>> weights;
        time_norm_quantize(*o, iterations, b, info.bandwidth_gbs, tok);
        time_products(*o, iterations, b, info.bandwidth_gbs, tok, weights);
        time_token(*o, iterations, b, info.bandwidth_gbs, tok);
    } catch (const kc::device_error& e) {
        std::fprintf(stderr, "bench_cuda: failed on cuda:%d: %s: %s\n", device,
                     kc::failure_name(e.kind()), e.what());
        return 1;
    }
    return 0;
}
