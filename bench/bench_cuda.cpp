// The CUDA kernels' decode speed on a real device: each ternary projection of the 2B-4T shape as
// the decode GEMV (one token), the activation quantization and the F16 tied logits, timed as a
// stream of back-to-back launches; bytes moved per call (2-bit weights, int8 activations, float
// outputs) over the time, as GB/s and as a fraction of the device's theoretical bandwidth
// (enumerate_devices: memory clock × bus width × 2). The sum over one token's kernels of these
// (30 layers, then the logits) is a decode tok/s-equivalent of the matrix work alone: RMSNorm,
// RoPE, attention and the host's sampling are not in it. Also the tiled GEMM at 16 and 64 tokens.
// Without a device (no driver, no GPU, or a build without CUDA) it prints one skip line, exits 0.
//
//   bench_cuda [--device N] [--iterations N]
#include "kernels/cuda/ops.hpp"
#include "kernels/cuda/ternary_gpu_layout.hpp"
#include "kernels/f16.hpp"

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace kc = bitnet::kernels::cuda;

namespace {

// The 2B-4T shape (tools/model_synth.cpp "2b4t").
constexpr std::uint32_t hidden = 2560;
constexpr std::uint32_t ffn = 6912;
constexpr std::uint32_t kv = 640;
constexpr std::uint32_t layers = 30;
constexpr std::uint32_t vocab = 128256;

struct projection {
    const char* name;
    std::uint32_t rows;
    std::uint32_t cols;
};
constexpr projection projections[] = {
    {"attn_q", hidden, hidden}, {"attn_k", kv, hidden},    {"attn_v", kv, hidden},
    {"attn_o", hidden, hidden}, {"ffn_gate", ffn, hidden}, {"ffn_up", ffn, hidden},
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

        // Activations: one token of floats as wide as the widest input, quantized once.
        std::vector<float> x(ffn);
        std::mt19937 rng(1);
        std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
        for (auto& v : x)
            v = dist(rng);
        device_mem dx(*o, 64 * ffn * sizeof(float));
        device_mem dq(*o, 64 * ffn);
        device_mem dscale(*o, 64 * sizeof(float));
        device_mem dy(*o, 64 * std::size_t{vocab} * sizeof(float));
        for (int t = 0; t < 64; ++t)
            o->upload(dx.as<float>() + std::size_t{ffn} * t, x.data(), x.size() * sizeof(float));

        double token_seconds = 0.0;
        double token_bytes = 0.0;
        for (const std::uint32_t k : {hidden, ffn}) {
            kc::quantize_args a{dx.as<float>(),    ffn, 1, k, dq.as<std::int8_t>(), ffn,
                                dscale.as<float>()};
            const double s = seconds_per_call(*o, iterations, [&] { o->run(a); });
            const double bytes = k * 4.0 + k + 4.0;
            report(k == hidden ? "quantize K=2560" : "quantize K=6912", s, bytes,
                   info.bandwidth_gbs);
            // Per layer: the attention input, the attention output and the FFN input at 2560,
            // the FFN's inner activation at 6912.
            const double per_layer = k == hidden ? 3.0 : 1.0;
            token_seconds += per_layer * layers * s;
            token_bytes += per_layer * layers * bytes;
        }
        // Quantize all 64 rows for the batched runs below.
        o->run(kc::quantize_args{dx.as<float>(), ffn, 64, ffn, dq.as<std::int8_t>(), ffn,
                                 dscale.as<float>()});

        std::uint32_t seed = 7;
        for (const projection& p : projections) {
            const auto w = random_bytes(kc::ternary_gpu_bytes(p.rows, p.cols), seed++);
            device_mem dw(*o, w.size());
            o->upload(dw.p, w.data(), w.size());
            for (const std::uint32_t n_tok : {1u, 16u, 64u}) {
                kc::ternary_gemm_args a;
                a.w = dw.as<std::uint8_t>();
                a.rows = p.rows;
                a.cols = p.cols;
                a.w_scale = 0.01f;
                a.q = dq.as<std::int8_t>();
                a.ldq = ffn;
                a.act_scale = dscale.as<float>();
                a.n_rows = n_tok;
                a.y = dy.as<float>();
                a.ldy = p.rows;
                const double s = seconds_per_call(*o, iterations, [&] { o->run(a); });
                const double bytes =
                    static_cast<double>(w.size()) + n_tok * (p.cols + 4.0 + p.rows * 4.0);
                const std::string what =
                    std::string(p.name) + (n_tok == 1 ? "" : " T=" + std::to_string(n_tok));
                report(what.c_str(), s, bytes, info.bandwidth_gbs);
                if (n_tok == 1) {
                    token_seconds += layers * s;
                    token_bytes += layers * bytes;
                } else {
                    std::printf("%-22s %10.0f tokens/s\n", "", n_tok / s);
                }
            }
        }

        {
            std::vector<std::uint16_t> w(std::size_t{vocab} * hidden);
            for (std::size_t i = 0; i < w.size(); ++i)
                w[i] = bitnet::kernels::f32_to_f16(static_cast<float>(i % 97) / 97.0f - 0.5f);
            device_mem dw(*o, w.size() * sizeof(std::uint16_t));
            o->upload(dw.p, w.data(), w.size() * sizeof(std::uint16_t));
            o->finish();
            kc::f16_gemm_args a;
            a.w = dw.as<std::uint16_t>();
            a.rows = vocab;
            a.cols = hidden;
            a.x = dx.as<float>();
            a.ldx = ffn;
            a.n_rows = 1;
            a.y = dy.as<float>();
            a.ldy = vocab;
            const double s = seconds_per_call(*o, std::max(1, iterations / 10), [&] { o->run(a); });
            const double bytes = w.size() * 2.0 + hidden * 4.0 + vocab * 4.0;
            report("logits f16 T=1", s, bytes, info.bandwidth_gbs);
            token_seconds += s;
            token_bytes += bytes;
        }
        std::printf("decode token (matrix kernels only, %u layers + logits): %.3f ms, %.1f "
                    "tok/s-equivalent, %.1f GB/s = %.1f %% of peak\n",
                    layers, token_seconds * 1e3, 1.0 / token_seconds,
                    token_bytes / token_seconds / 1e9,
                    100.0 * token_bytes / token_seconds / 1e9 / info.bandwidth_gbs);
    } catch (const kc::device_error& e) {
        std::fprintf(stderr, "bench_cuda: failed on cuda:%d: %s: %s\n", device,
                     kc::failure_name(e.kind()), e.what());
        return 1;
    }
    return 0;
}
