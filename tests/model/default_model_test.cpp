// The shipped default model (models/, trained by tools/train) against the training framework: on
// a committed slice of the held-out split, our tokenizer must give the ids PyTorch evaluated and
// the reference forward pass must reach PyTorch's perplexity within 1 %.
#include "model/gguf/gguf_reader.hpp"
#include "model/tokenizer/tokenizer.hpp"
#include "support/default_model_slice.hpp"
#include "support/reference_forward.hpp"

#include <doctest/doctest.h>

#include <cmath>

using namespace bitnet;
using namespace bitnet::test;

TEST_CASE("default model: our tokenizer gives the ids PyTorch evaluated on the held-out slice") {
    const default_model_slice s = load_default_model_slice();
    auto f = model::gguf_file::open(default_model_path());
    REQUIRE(f);
    auto vocab = model::read_tokenizer_vocab(*f);
    REQUIRE(vocab);
    CHECK(vocab->pre == "llama-bpe");
    auto tok = model::tokenizer::create(*vocab);
    REQUIRE(tok);
    REQUIRE(tok->bos());
    REQUIRE(tok->eos());
    std::size_t n_docs = 0;
    for (const auto& w : s.windows) {
        std::vector<std::int32_t> ids;
        for (const auto& doc : w.documents) {
            auto piece = tok->encode(doc, {.add_bos = true});
            REQUIRE(piece);
            piece->push_back(*tok->eos());
            if (piece->size() > s.n_ctx)
                piece->resize(s.n_ctx);
            ids.insert(ids.end(), piece->begin(), piece->end());
            ++n_docs;
        }
        CHECK(ids == w.tokens);
    }
    CHECK(n_docs >= 4);
}

TEST_CASE("default model: our tokenizer splits and merges like the training tokenizer") {
    const default_model_slice s = load_default_model_slice();
    auto f = model::gguf_file::open(default_model_path());
    REQUIRE(f);
    auto tok = model::tokenizer::create(model::read_tokenizer_vocab(*f).value());
    REQUIRE(tok);
    REQUIRE(s.tokenizer_cases.size() >= 40);
    for (const auto& c : s.tokenizer_cases) {
        CAPTURE(c.text);
        auto ids = tok->encode(c.text);
        REQUIRE(ids);
        CHECK(*ids == c.ids);
        CHECK(tok->decode(*ids) == c.text);
    }
}

TEST_CASE("default model: reference perplexity on the held-out slice equals PyTorch's within 1%") {
    const default_model_slice s = load_default_model_slice();
    auto f = model::gguf_file::open(default_model_path());
    REQUIRE(f);
    auto m = load_reference_model(*f);
    REQUIRE(m);
    double nll = 0.0;
    std::size_t n = 0;
    for (const auto& w : s.windows) {
        reference_state state;
        // Token by token: decode steps, the numerics PyTorch's evaluation imitates.
        for (std::size_t i = 0; i + 1 < w.tokens.size(); ++i) {
            const std::vector<float> logits =
                reference_step(*m, state, std::span(&w.tokens[i], 1), static_cast<int>(i));
            nll += token_nll(logits, w.tokens[i + 1]);
            ++n;
        }
    }
    REQUIRE(n == s.pytorch_tokens_predicted);
    const double ppl = std::exp(nll / static_cast<double>(n));
    MESSAGE("reference perplexity " << ppl << ", PyTorch " << s.pytorch_perplexity);
    CHECK(ppl == doctest::Approx(s.pytorch_perplexity).epsilon(0.01));
    // The model learned something: far below the uniform distribution's perplexity (n_vocab).
    CHECK(ppl < m->n_vocab / 20.0);
}
