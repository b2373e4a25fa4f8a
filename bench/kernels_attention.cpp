// bench_kernels' attention figures (bench/RESULTS.md): one 2B-4T layer's prefill attention (20
// query heads over 5 KV heads of 128, F16 KV in 16-token blocks, token t over positions 0..t, as
// the engine calls it: one (token, KV head) at a time) and the softmax of a KV head's four score
// rows alone, per family, one thread.
#include "kernels_attention.hpp"

#include "kernels/attention.hpp"
#include "kernels/f16.hpp"
#include "kernels/softmax.hpp"

#include <cmath>
#include <string>
#include <vector>

namespace bitnet::bench {
namespace {

using namespace bitnet::kernels;

constexpr std::uint32_t n_head = 20, n_kv_head = 5, head_dim = 128, block_tokens = 16;

void bm_attention_prefill(benchmark::State& state, isa family) {
    const auto n_tok = static_cast<std::uint32_t>(state.range(0));
    const std::size_t row = std::size_t{n_kv_head} * head_dim;
    const std::uint32_t n_blocks = (n_tok + block_tokens - 1) / block_tokens;
    std::vector<std::vector<std::uint16_t>> k(n_blocks), v(n_blocks);
    std::vector<const std::uint16_t*> k_ptr, v_ptr;
    for (std::uint32_t b = 0; b < n_blocks; ++b) {
        for (auto* dst : {&k[b], &v[b]}) {
            const auto f = random_floats(block_tokens * row, 2 * b + (dst == &v[b]));
            for (const float x : f)
                dst->push_back(f32_to_f16(x));
        }
        k_ptr.push_back(k[b].data());
        v_ptr.push_back(v[b].data());
    }
    const std::size_t n_q = std::size_t{n_head} * head_dim;
    const auto q = random_floats(n_tok * n_q, 7);
    std::vector<float> out(n_tok * n_q);
    const attention_shape shape{n_head, n_kv_head, head_dim, 1.0f / std::sqrt(128.0f)};
    attention_scratch scratch;
    for (auto _ : state) {
        for (std::uint32_t t = 0; t < n_tok; ++t) {
            const paged_kv kv{k_ptr.data(), v_ptr.data(), block_tokens, t + 1, false};
            for (std::uint32_t h = 0; h < n_kv_head; ++h)
                attention_kv_heads(q.data() + t * n_q, shape, kv, false, out.data() + t * n_q,
                                   scratch, h, h + 1, family);
        }
        benchmark::DoNotOptimize(out.data());
    }
    state.counters["tok/s"] =
        benchmark::Counter(n_tok, benchmark::Counter::kIsIterationInvariantRate);
}

void bm_softmax(benchmark::State& state, isa family) {
    const auto n = static_cast<std::size_t>(state.range(0));
    // Scores a few units apart, as attention's scaled dot products are: N(0, 25).
    auto scores = random_floats(4 * n, 3);
    for (float& x : scores)
        x *= 5.0f;
    std::vector<float> s(scores.size());
    for (auto _ : state) {
        s = scores;
        softmax_rows(s.data(), 4, n, false, family);
        benchmark::DoNotOptimize(s.data());
    }
    state.counters["scores/s"] = benchmark::Counter(4.0 * static_cast<double>(n),
                                                    benchmark::Counter::kIsIterationInvariantRate);
}

} // namespace

void register_attention(const std::vector<isa>& families) {
    for (const isa f : families) {
        const std::string fam(isa_name(f));
        // The scalar family only at 512 tokens: 2,048 take it close to a minute.
        auto* prefill = benchmark::RegisterBenchmark(("attention_prefill/" + fam).c_str(),
                                                     bm_attention_prefill, f);
        prefill->Arg(512)->ArgName("tokens")->Unit(benchmark::kMillisecond);
        if (f != isa::scalar)
            prefill->Arg(2048);
        benchmark::RegisterBenchmark(("softmax_4_rows/" + fam).c_str(), bm_softmax, f)
            ->Arg(512)
            ->Arg(2048)
            ->ArgName("n")
            ->Unit(benchmark::kMicrosecond);
    }
}

} // namespace bitnet::bench
