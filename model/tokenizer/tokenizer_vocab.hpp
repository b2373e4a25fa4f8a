// The tokenizer vocabulary exactly as GGUF stores it (`tokenizer.ggml.*`, docs/GGUF-FORMAT.md §5):
// plain data, no validation. tokenizer::create() checks it; tokenizer_gguf.cpp reads and writes it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace bitnet::model {

/// `tokenizer.ggml.token_type` values (llama.cpp's `llama_token_type`).
enum class token_type : std::int32_t {
    undefined = 0, ///< treated as normal
    normal = 1,
    unknown = 2,
    control = 3,      ///< special tokens (BOS, EOS, chat markers); parsed only on request
    user_defined = 4, ///< added tokens that are always split out of the text
    unused = 5,
    byte = 6, ///< SentencePiece byte-fallback tokens `<0xNN>`
};

/// Everything GGUF stores about a tokenizer. Ids are token indices.
struct tokenizer_vocab {
    /// `tokenizer.ggml.model`: "gpt2" (byte-level BPE) or "llama" (SentencePiece).
    std::string model;
    /// `tokenizer.ggml.pre`: absent means llama.cpp's DEFAULT pre-tokenizer (gpt2 only).
    std::optional<std::string> pre;
    /// `tokenizer.ggml.tokens`. For gpt2, in GPT-2's byte-to-unicode form (a space is `Ġ`).
    std::vector<std::string> tokens;
    /// `tokenizer.ggml.scores`: empty, or one per token (SentencePiece merge priorities).
    std::vector<float> scores;
    /// `tokenizer.ggml.token_type`: empty (all normal), or one `token_type` value per token.
    std::vector<std::int32_t> token_types;
    /// `tokenizer.ggml.merges` (gpt2): "left right", in rank order (first = merged first).
    std::vector<std::string> merges;

    std::optional<std::int32_t> bos_id; ///< `tokenizer.ggml.bos_token_id`
    std::optional<std::int32_t> eos_id; ///< `tokenizer.ggml.eos_token_id`
    /// `tokenizer.ggml.eot_token_id`; when absent, the token `<|eot_id|>` (if any) is used.
    std::optional<std::int32_t> eot_id;
    std::optional<std::int32_t> unk_id; ///< `tokenizer.ggml.unknown_token_id`
    std::optional<std::int32_t> pad_id; ///< `tokenizer.ggml.padding_token_id`

    /// `tokenizer.ggml.add_bos_token`; absent means: true for "llama" and `llama-bpe`, else false.
    std::optional<bool> add_bos;
    std::optional<bool> add_eos; ///< `tokenizer.ggml.add_eos_token`; absent means false
    /// `tokenizer.ggml.add_space_prefix` (SentencePiece); absent means true.
    std::optional<bool> add_space_prefix;
};

} // namespace bitnet::model
