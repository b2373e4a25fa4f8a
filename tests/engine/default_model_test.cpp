// The shipped default model on the engine: its perplexity on the committed held-out slice must
// equal the training framework's (PyTorch, same int8 activation quantization) within 1 %.
#include "engine_fixture.hpp"
#include "support/default_model_slice.hpp"

#include <doctest/doctest.h>

#include <cmath>

using namespace bitnet;
using namespace bitnet::test;

TEST_CASE("default model: engine perplexity on the held-out slice equals PyTorch's within 1%") {
    const default_model_slice s = load_default_model_slice();
    auto e = load_engine(default_model_path());
    const std::uint32_t n_vocab = e->config().n_vocab;
    // Every window is its own sequence, all advancing together one token per step (decode steps,
    // the rounding PyTorch's evaluation imitates).
    std::size_t longest = 0;
    for (const auto& w : s.windows)
        longest = std::max(longest, w.tokens.size());
    double nll = 0.0;
    std::size_t n = 0;
    for (std::size_t i = 0; i + 1 < longest; ++i) {
        std::vector<model::seq_chunk> batch;
        std::vector<std::size_t> window_of;
        for (std::size_t wi = 0; wi < s.windows.size(); ++wi) {
            const auto& t = s.windows[wi].tokens;
            if (i + 1 >= t.size())
                continue;
            batch.push_back({wi, {t[i]}, static_cast<std::uint32_t>(i), true});
            window_of.push_back(wi);
        }
        auto r = e->step(batch);
        REQUIRE_MESSAGE(r, (r ? std::string() : r.error().to_string()));
        for (std::size_t c = 0; c < batch.size(); ++c) {
            nll += token_nll(r->row(r->rows_for_chunk[c], n_vocab),
                             s.windows[window_of[c]].tokens[i + 1]);
            ++n;
        }
    }
    REQUIRE(n == s.pytorch_tokens_predicted);
    const double ppl = std::exp(nll / static_cast<double>(n));
    MESSAGE("engine perplexity " << ppl << ", PyTorch " << s.pytorch_perplexity);
    CHECK(ppl == doctest::Approx(s.pytorch_perplexity).epsilon(0.01));
    CHECK(ppl < n_vocab / 20.0);
}
