// The KV cache's element type for bench/RESULTS.md (issue 28, "KV cache in Q8_0"): for F16 and
// Q8_0 caches of one model under one byte budget, the bytes per token, how many blocks (and
// sequences of --seq-tokens) the budget holds, and decode tokens/s at several contexts, single
// stream and with --batch sequences together. Both engines are loaded once; each figure is the
// median of --repeats runs, F16 and Q8_0 interleaved. Usage:
//   bench_kv -m MODEL [--threads 2] [--contexts 128,1024,3072] [--batch 8] [--batch-context 1024]
//            [--budget-mib 1024] [--seq-tokens 4096] [--steps 16] [--repeats 3]
#include "bench_timing.hpp"
#include "model/engine/engine.hpp"
#include "model/engine/kv_cache.hpp"
#include "model/engine/model_config.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace bitnet;
using bench::clock_type;
using bench::median;

void must(bool ok, const std::string& what) {
    bench::must(ok, "bench_kv", what);
}

/// Decode tokens/s of `n_seq` sequences that each hold `context` positions (prefilled in chunks
/// of 256), over `steps` decode steps.
double decode_tps(model::engine& e, std::size_t n_seq, std::uint32_t context, std::size_t steps) {
    const auto n_vocab = e.config().n_vocab;
    std::mt19937_64 rng(context + n_seq);
    std::vector<model::seq_chunk> batch;
    for (std::size_t s = 0; s < n_seq; ++s) {
        for (std::uint32_t pos = 0; pos < context; pos += 256) {
            const std::uint32_t n = std::min<std::uint32_t>(256, context - pos);
            std::vector<std::int32_t> t(n);
            for (auto& x : t)
                x = static_cast<std::int32_t>(rng() % (n_vocab - 300));
            model::seq_chunk c{s + 1, t, pos, false};
            must(static_cast<bool>(e.step(std::span<const model::seq_chunk>(&c, 1))),
                 "prefill failed");
        }
        batch.push_back({s + 1, {1}, context, true});
    }
    const auto t0 = clock_type::now();
    for (std::size_t i = 0; i < steps; ++i) {
        auto out = e.step(batch);
        must(static_cast<bool>(out), "decode failed");
        for (std::size_t s = 0; s < n_seq; ++s) {
            const auto row = out->row(s, n_vocab);
            batch[s].tokens = {
                static_cast<std::int32_t>(std::max_element(row.begin(), row.end()) - row.begin())};
            batch[s].pos0 += 1;
        }
    }
    const double sec = std::chrono::duration<double>(clock_type::now() - t0).count();
    for (std::size_t s = 0; s < n_seq; ++s)
        e.release(s + 1);
    return static_cast<double>(n_seq * steps) / sec;
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"KV cache in F16 and Q8_0: bytes, capacity, decode speed"};
    std::string model_path;
    int threads = 2, repeats = 3;
    std::vector<std::uint32_t> contexts{128, 1024, 3072};
    std::size_t batch = 8, steps = 16;
    std::uint32_t batch_context = 1024, seq_tokens = 4096;
    std::uint64_t budget_mib = 1024;
    app.add_option("-m,--model", model_path)->required();
    app.add_option("--threads", threads);
    app.add_option("--contexts", contexts, "single-stream decode contexts")->delimiter(',');
    app.add_option("--batch", batch, "sequences decoding together (0: none)");
    app.add_option("--batch-context", batch_context, "their context");
    app.add_option("--budget-mib", budget_mib, "KV budget of both engines");
    app.add_option("--seq-tokens", seq_tokens, "sequence length for the capacity figure");
    app.add_option("--steps", steps, "decode steps per measurement");
    app.add_option("--repeats", repeats);
    CLI11_PARSE(app, argc, argv);

    std::unique_ptr<model::engine> engines[2];
    for (int q8 = 0; q8 < 2; ++q8) {
        model::engine_options opt;
        opt.model_path = model_path;
        opt.n_threads = threads;
        opt.kv_budget_bytes = budget_mib << 20;
        opt.kv_q8_0 = q8 == 1;
        auto e = model::engine::load(opt);
        must(static_cast<bool>(e), e ? "" : e.error().to_string());
        engines[q8] = std::move(*e);
    }
    const auto& c = engines[0]->config();
    const char* names[2] = {"F16", "Q8_0"};
    std::printf("model %s: %u layers, %u KV heads x %u\n", model_path.c_str(), c.n_layer,
                c.n_head_kv, c.head_dim);
    for (int q8 = 0; q8 < 2; ++q8) {
        auto& e = *engines[q8];
        const double per_token =
            static_cast<double>(e.kv_pool_bytes()) / (e.kv_blocks_total() * e.kv_block_tokens());
        const std::uint32_t seqs = e.kv_blocks_total() / e.kv_blocks_for(seq_tokens);
        std::printf("%-4s  %8.0f bytes/token  %6u blocks in %llu MiB  %4u sequences of %u tokens\n",
                    names[q8], per_token, e.kv_blocks_total(),
                    static_cast<unsigned long long>(budget_mib), seqs, seq_tokens);
    }
    std::fflush(stdout);
    auto row = [&](const char* what, std::size_t n_seq, std::uint32_t context) {
        std::vector<double> tps[2];
        for (int r = 0; r < repeats; ++r)
            for (int q8 = 0; q8 < 2; ++q8)
                tps[q8].push_back(decode_tps(*engines[q8], n_seq, context, steps));
        const double f = median(tps[0]), q = median(tps[1]);
        std::printf("%-7s %3zu seq  context %5u  F16 %7.2f tok/s  Q8_0 %7.2f tok/s  ratio %.3f\n",
                    what, n_seq, context, f, q, q / f);
        std::fflush(stdout);
    };
    for (auto ctx : contexts)
        row("single", 1, ctx);
    if (batch > 0)
        row("batch", batch, batch_context);
    return 0;
}
