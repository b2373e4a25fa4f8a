// Pre-tokenizers of byte-level BPE vocabularies (docs/GGUF-FORMAT.md §5.1): the regex splits that
// run before the merges, on PCRE2 with UTF + UCP (Unicode classes) and JIT. Internal; exposed for
// tests.
#pragma once

#include "common/error.hpp"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bitnet::model::internal {

/// One compiled PCRE2 pattern. Copies share the compiled code, which PCRE2 allows to be used
/// from several threads at once.
class regex {
public:
    /// tokenizer_error with PCRE2's message and offset when `pattern` does not compile.
    [[nodiscard]] static result<regex> compile(std::string_view pattern);

    /// Splits each of `pieces` (views into one text) into the matches of this pattern and the
    /// gaps between them, in order, appending to `out`. Lookarounds see only the piece itself, as
    /// in llama.cpp where every piece is matched on its own. Invalid UTF-8 never matches, so
    /// stray bytes end up in gaps.
    [[nodiscard]] result<void> split(const std::vector<std::string_view>& pieces,
                                     std::vector<std::string_view>& out) const;

private:
    std::shared_ptr<void> code_; // pcre2_code_8, freed by pcre2_code_free
};

/// A sequence of regexes, each re-splitting the pieces of the previous one.
class pre_tokenizer {
public:
    pre_tokenizer() = default;
    /// The pre-tokenizer that `tokenizer.ggml.pre` names: "llama-bpe" (aliases "llama3",
    /// "llama-v3"), "gpt2", or nullopt for llama.cpp's DEFAULT. Others: tokenizer_error naming it.
    [[nodiscard]] static result<pre_tokenizer> create(const std::optional<std::string>& pre);

    /// The pre-tokens of `text`, appended to `out` (views into `text`). `scratch` is reused.
    [[nodiscard]] result<void> split(std::string_view text, std::vector<std::string_view>& out,
                                     std::vector<std::string_view>& scratch) const;

    /// Whether whole pre-tokens that are vocabulary entries skip the merges (Llama-3).
    [[nodiscard]] bool ignore_merges() const noexcept { return ignore_merges_; }

private:
    std::vector<regex> regexes_;
    bool ignore_merges_ = false;
};

/// The pattern strings (for tests and docs).
extern const char* const llama3_pattern;
extern const char* const gpt2_pattern;

} // namespace bitnet::model::internal
