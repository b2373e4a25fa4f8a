// Streaming detokenization: turns generated token ids into text that is always whole UTF-8
// characters, holding back a character whose bytes arrive in several tokens.
#pragma once

#include "model/tokenizer/tokenizer.hpp"

#include <cstdint>
#include <string>

namespace bitnet::model {

/// Per-sequence decoder state. Not thread-safe: one per stream. The tokenizer must outlive it.
class token_stream {
public:
    /// Defaults suit generated text: control tokens render as nothing, and no space is stripped
    /// (the output continues a prompt).
    explicit token_stream(const tokenizer& tok,
                          decode_options opt = {.render_special = false,
                                                .strip_leading_space = false});

    /// The text that token `id` completes: only whole characters. Bytes that can never be valid
    /// UTF-8 come out as U+FFFD; an unfinished character waits for the next token.
    [[nodiscard]] std::string push(std::int32_t id);
    /// What is still held back (an unfinished character) as U+FFFD; clears the state.
    [[nodiscard]] std::string flush();
    /// Bytes held back, waiting for the rest of a character.
    [[nodiscard]] std::size_t pending_bytes() const noexcept { return pending_.size(); }
    /// Forgets held-back bytes and starts over (as for a new sequence).
    void reset() noexcept;

private:
    const tokenizer* tok_;
    decode_options opt_;
    std::string pending_;
    bool first_ = true; ///< for strip_leading_space: nothing rendered yet
};

} // namespace bitnet::model
