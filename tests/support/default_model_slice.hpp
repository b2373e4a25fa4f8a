// The default model's committed held-out slice (tests/data/default_model/heldout_slice.json,
// written by tools/train/export.py) and the perplexity arithmetic its tests share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace bitnet::test {

/// Path of the shipped default model (models/ at the repository root).
[[nodiscard]] std::string default_model_path();

struct default_model_window {
    std::vector<std::string> documents; ///< the held-out texts in this window
    std::vector<std::int32_t> tokens;   ///< [BOS doc EOS]..., each document's part cut to n_ctx
};

/// A text and the ids the training tokenizer (tools/train/bpe.py) gives it, without BOS.
struct tokenizer_case {
    std::string text;
    std::vector<std::int32_t> ids;
};

struct default_model_slice {
    std::size_t n_ctx = 0;
    std::vector<default_model_window> windows;
    std::vector<tokenizer_case> tokenizer_cases;
    double pytorch_perplexity = 0.0;
    std::size_t pytorch_tokens_predicted = 0;
};

/// Parses the slice; fails the calling test (doctest REQUIRE) when it is missing or malformed.
[[nodiscard]] default_model_slice load_default_model_slice();

/// −log softmax(logits)[target], summed in double.
[[nodiscard]] double token_nll(std::span<const float> logits, std::int32_t target);

} // namespace bitnet::test
