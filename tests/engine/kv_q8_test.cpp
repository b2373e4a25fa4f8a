// The opt-in Q8_0 KV cache on real files: the same budget holds 32/17 as many blocks; teacher
// forced on the trained default model's held-out slice, its top-1 token equals the F16 cache's
// wherever the F16 margin is at least 0.1 and its perplexity stays within 1 % of the F16
// cache's; on bitnet.cpp's tiny file (random weights: its own greedy reference and random
// prompts) the agreement and the largest logit difference are measured (the goal, every
// position with margin >= 0.1, is missed there: bench/RESULTS.md has the figures).
#include "engine_fixture.hpp"
#include "support/default_model_slice.hpp"
#include "support/greedy_reference.hpp"

#include <cmath>
#include <random>

using namespace bitnet;
using namespace bitnet::test;

namespace {

std::unique_ptr<model::engine> load_with_kv(const std::string& path, bool q8) {
    auto opt = test_engine_options(path);
    opt.kv_q8_0 = q8;
    return load_engine_with(opt);
}

struct agreement {
    std::size_t compared = 0, agree = 0, close_calls = 0;
    double max_diff = 0;
};

/// Top-1 agreement of b's rows with a's wherever a's margin is at least 0.1, and the largest
/// logit difference anywhere.
agreement compare_rows(const std::vector<std::vector<std::vector<float>>>& a,
                       const std::vector<std::vector<std::vector<float>>>& b);

/// Teacher-forced logits: every sequence advances one token per step (decode steps), all
/// together; rows[s][i] is the row after token i of sequence s.
std::vector<std::vector<std::vector<float>>>
forced_rows(model::engine& e, const std::vector<std::vector<std::int32_t>>& seqs) {
    const auto n_vocab = e.config().n_vocab;
    std::vector<std::vector<std::vector<float>>> rows(seqs.size());
    std::size_t longest = 0;
    for (const auto& s : seqs)
        longest = std::max(longest, s.size());
    for (std::size_t i = 0; i < longest; ++i) {
        std::vector<model::seq_chunk> batch;
        std::vector<std::size_t> of;
        for (std::size_t s = 0; s < seqs.size(); ++s)
            if (i < seqs[s].size()) {
                batch.push_back({s + 1, {seqs[s][i]}, static_cast<std::uint32_t>(i), true});
                of.push_back(s);
            }
        auto r = e.step(batch);
        REQUIRE_MESSAGE(r, (r ? std::string() : r.error().to_string()));
        for (std::size_t c = 0; c < batch.size(); ++c) {
            const auto row = r->row(r->rows_for_chunk[c], n_vocab);
            rows[of[c]].emplace_back(row.begin(), row.end());
        }
    }
    for (std::size_t s = 0; s < seqs.size(); ++s)
        e.release(s + 1);
    return rows;
}

agreement compare_rows(const std::vector<std::vector<std::vector<float>>>& a,
                       const std::vector<std::vector<std::vector<float>>>& b) {
    agreement g;
    for (std::size_t s = 0; s < a.size(); ++s)
        for (std::size_t i = 0; i < a[s].size(); ++i) {
            for (std::size_t v = 0; v < a[s][i].size(); ++v)
                g.max_diff = std::max(g.max_diff, double{std::fabs(a[s][i][v] - b[s][i][v])});
            if (top2_margin(a[s][i]) < 0.1f) {
                ++g.close_calls;
                continue;
            }
            ++g.compared;
            g.agree += argmax(a[s][i]) == argmax(b[s][i]);
        }
    return g;
}

} // namespace

TEST_CASE("kv q8_0: the same budget holds 32/17 as many blocks, and the engine says so") {
    auto f16 = load_with_kv(data_path("bitnetcpp/tiny-i2_s.gguf"), false);
    auto q8 = load_with_kv(data_path("bitnetcpp/tiny-i2_s.gguf"), true);
    MESSAGE("blocks in 64 MiB: F16 " << f16->kv_blocks_total() << ", Q8_0 "
                                     << q8->kv_blocks_total());
    CHECK(q8->kv_blocks_total() == f16->kv_blocks_total() * 32 / 17);
    CHECK(q8->describe().find("(Q8_0)") != std::string::npos);
    CHECK(f16->describe().find("(F16)") != std::string::npos);
}

TEST_CASE("kv q8_0: teacher-forced top-1 against the F16 cache's on a random-weight file "
          "(tiny-i2_s)") {
    auto f16 = load_with_kv(data_path("bitnetcpp/tiny-i2_s.gguf"), false);
    auto q8 = load_with_kv(data_path("bitnetcpp/tiny-i2_s.gguf"), true);
    const auto n_vocab = f16->config().n_vocab;
    std::vector<std::vector<std::int32_t>> seqs;
    const auto ref = load_greedy_reference();
    auto first = ref.prompt;
    first.insert(first.end(), ref.greedy.begin(), ref.greedy.end());
    seqs.push_back(first);
    std::mt19937_64 rng(99);
    for (int i = 0; i < 6; ++i) {
        std::vector<std::int32_t> p(40 + rng() % 60);
        for (auto& t : p)
            t = static_cast<std::int32_t>(rng() % (n_vocab - 300));
        seqs.push_back(p);
    }
    const auto g = compare_rows(forced_rows(*f16, seqs), forced_rows(*q8, seqs));
    MESSAGE("tiny-i2_s, " << g.compared << " positions with F16 margin >= 0.1: top-1 agrees at "
                          << g.agree << "; " << g.close_calls << " closer calls not compared; max "
                          << "|logit difference| " << g.max_diff);
    CHECK(g.compared > 300);
    // Measured 430 of 443 (97.1 %); the bound guards against a broken cache (a wrong scale or
    // block offset agrees far less), not the goal.
    CHECK(g.agree * 100 >= g.compared * 95);
    CHECK(g.max_diff > 0.0); // the cache is really Q8_0
}

TEST_CASE("kv q8_0: on the default model, top-1 equals the F16 cache's wherever its margin is at "
          "least 0.1, and the held-out perplexity is within 1% of F16's") {
    const default_model_slice s = load_default_model_slice();
    double ppl[2] = {};
    std::vector<std::vector<std::vector<float>>> rows_of[2];
    for (int q8 = 0; q8 < 2; ++q8) {
        auto e = load_with_kv(default_model_path(), q8 == 1);
        std::vector<std::vector<std::int32_t>> seqs;
        for (const auto& w : s.windows)
            seqs.push_back(w.tokens);
        rows_of[q8] = forced_rows(*e, seqs);
        const auto& rows = rows_of[q8];
        double nll = 0;
        std::size_t n = 0;
        for (std::size_t w = 0; w < seqs.size(); ++w)
            for (std::size_t i = 0; i + 1 < seqs[w].size(); ++i, ++n)
                nll += token_nll(rows[w][i], seqs[w][i + 1]);
        ppl[q8] = std::exp(nll / static_cast<double>(n));
    }
    const auto g = compare_rows(rows_of[0], rows_of[1]);
    MESSAGE("default model perplexity: F16 KV "
            << ppl[0] << ", Q8_0 KV " << ppl[1] << "; " << g.compared
            << " positions with F16 margin >= 0.1, top-1 "
               "agrees at "
            << g.agree << "; max |logit difference| " << g.max_diff);
    CHECK(g.compared > 300);
    CHECK(g.agree == g.compared);
    CHECK(ppl[1] == doctest::Approx(ppl[0]).epsilon(0.01));
    CHECK(ppl[1] != ppl[0]);
}
