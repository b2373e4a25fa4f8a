// The tokenizer facade: text <-> token ids for the two GGUF tokenizer families (docs/GGUF-FORMAT.md
// §5), byte-level BPE ("gpt2") and SentencePiece ("llama"), following llama.cpp's behaviour. Chat
// templates live elsewhere; this file knows nothing of roles.
#pragma once

#include "common/error.hpp"
#include "model/gguf/gguf_value.hpp"
#include "model/tokenizer/tokenizer_vocab.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bitnet::model {

class gguf_file;

/// Which algorithm a vocabulary uses.
enum class tokenizer_kind {
    bpe, ///< "gpt2": byte-level BPE with merge ranks
    spm, ///< "llama": SentencePiece-style score merges with `<0xNN>` byte fallback
};

/// Options of tokenizer::encode. The defaults add nothing and treat all text as text.
struct encode_options {
    /// Prepend BOS. Never implied: callers pass `tok.add_bos()` when they want the model default.
    bool add_bos = false;
    /// Append EOS (rarely wanted; `tok.add_eos()` is the model default).
    bool add_eos = false;
    /// Recognise control tokens written in the text (`<|eot_id|>` becomes its id). User-defined
    /// tokens are always recognised, as in llama.cpp.
    bool parse_special = false;
};

/// Options of tokenizer::decode and token_stream.
struct decode_options {
    /// Render control tokens as their text; otherwise they produce nothing.
    bool render_special = false;
    /// SentencePiece only: drop the one space that `add_space_prefix` put before the text.
    bool strip_leading_space = true;
};

/// An immutable, validated tokenizer. Copies share the tables; every const member may be called
/// from any thread at once.
class tokenizer {
public:
    /// Validates `vocab` and builds the lookup tables. tokenizer_error names what is wrong: empty
    /// vocabulary, unknown model or pre-tokenizer, array lengths that differ, special ids out of
    /// range, merges that are malformed or use tokens the vocabulary lacks.
    [[nodiscard]] static result<tokenizer> create(tokenizer_vocab vocab);

    /// Token ids of `text`. Fails only on input the vocabulary cannot represent (a byte with no
    /// token and no `<unk>`), or when BOS/EOS is requested but the vocabulary has none.
    [[nodiscard]] result<std::vector<std::int32_t>> encode(std::string_view text,
                                                           const encode_options& opt = {}) const;
    /// As encode, appending to `out` (reuse one vector to avoid allocations). On error `out` may
    /// hold a partial result.
    [[nodiscard]] result<void> encode_into(std::string_view text, const encode_options& opt,
                                           std::vector<std::int32_t>& out) const;

    /// The bytes of `ids` concatenated (not necessarily valid UTF-8 if a character is cut).
    /// Out-of-range ids produce nothing.
    [[nodiscard]] std::string decode(std::span<const std::int32_t> ids,
                                     const decode_options& opt = {}) const;
    /// The bytes one token stands for; empty for an out-of-range id, for unused tokens, and for
    /// control tokens unless `render_special`. Valid while the tokenizer (or a copy) lives.
    [[nodiscard]] std::string_view token_to_piece(std::int32_t id,
                                                  bool render_special = true) const noexcept;
    /// The token's text as stored in the vocabulary (GPT-2 stand-ins, `▁`); empty when out of
    /// range.
    [[nodiscard]] std::string_view token_text(std::int32_t id) const noexcept;
    /// The id whose stored text is exactly `text`.
    [[nodiscard]] std::optional<std::int32_t> find_token(std::string_view text) const noexcept;
    [[nodiscard]] token_type type_of(std::int32_t id) const noexcept;

    [[nodiscard]] std::int32_t n_vocab() const noexcept;
    [[nodiscard]] tokenizer_kind kind() const noexcept;
    [[nodiscard]] std::optional<std::int32_t> bos() const noexcept;
    [[nodiscard]] std::optional<std::int32_t> eos() const noexcept;
    /// The stored eot id, or the `<|eot_id|>` token when none is stored.
    [[nodiscard]] std::optional<std::int32_t> eot() const noexcept;
    [[nodiscard]] std::optional<std::int32_t> unk() const noexcept;
    [[nodiscard]] std::optional<std::int32_t> pad() const noexcept;
    /// Whether the model expects BOS first (the key, or the default of its tokenizer type).
    [[nodiscard]] bool add_bos() const noexcept;
    [[nodiscard]] bool add_eos() const noexcept;
    /// True for ids that end generation: eos, eot, and end markers such as `<|end_of_text|>`,
    /// `<|eom_id|>` or `<|im_end|>` present in the vocabulary.
    [[nodiscard]] bool is_eog(std::int32_t id) const noexcept;
    /// The end-of-generation ids, ascending.
    [[nodiscard]] std::span<const std::int32_t> eog_ids() const noexcept;
    /// The vocabulary it was created from.
    [[nodiscard]] const tokenizer_vocab& vocab() const noexcept;
    /// Expires when this tokenizer and every copy of it are gone: a cache keyed by a tokenizer
    /// holds this, never a copy, so what it keeps for the tokenizer is freed with it.
    [[nodiscard]] std::weak_ptr<const void> lifetime() const noexcept { return impl_; }

    struct impl;

private:
    explicit tokenizer(std::shared_ptr<const impl> p)
        : impl_(std::move(p)) {}
    std::shared_ptr<const impl> impl_;
};

/// Reads the `tokenizer.ggml.*` keys of `file`. not_found when `tokenizer.ggml.model` or
/// `tokenizer.ggml.tokens` is missing; bad_format when a key has the wrong type. Does not validate
/// beyond types (tokenizer::create does).
[[nodiscard]] result<tokenizer_vocab> read_tokenizer_vocab(const gguf_file& file);

/// The `tokenizer.ggml.*` key/values of `vocab`, in the types llama.cpp writes (tokens arr[str],
/// scores arr[f32], token_type arr[i32], merges arr[str], ids u32, flags bool). Absent optional
/// fields and empty arrays are left out.
[[nodiscard]] std::vector<std::pair<std::string, gguf_value>>
tokenizer_vocab_to_gguf(const tokenizer_vocab& vocab);

} // namespace bitnet::model
