// Internals shared by tokenizer.cpp, tokenizer_bpe.cpp, tokenizer_spm.cpp and the tests: the
// tables built once by tokenizer::create and the per-algorithm encoders. Not part of the API.
#pragma once

#include "model/tokenizer/tokenizer.hpp"
#include "model/tokenizer/tokenizer_pretokenize.hpp"

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace bitnet::model {

namespace internal {

/// A fast non-cryptographic hash of a short string (8 bytes per step).
[[nodiscard]] inline std::uint64_t hash_bytes(std::string_view s) noexcept {
    std::uint64_t h = 0x9E3779B97F4A7C15ull ^ s.size();
    const char* p = s.data();
    std::size_t n = s.size();
    for (; n >= 8; p += 8, n -= 8) {
        std::uint64_t w;
        std::memcpy(&w, p, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDull;
        h ^= h >> 32;
    }
    std::uint64_t w = 0;
    std::memcpy(&w, p, n);
    h = (h ^ w) * 0xC4CEB9FE1A85EC53ull;
    return h ^ (h >> 29);
}

/// Token text -> id, open addressing over the vocabulary's own strings. std::unordered_map
/// re-hashes every string it walks past in a bucket; this stores the hash beside the id.
class token_table {
public:
    /// Indexes `tokens`, which must stay where they are while the table is used. On duplicate
    /// texts the last id wins, as in llama.cpp.
    void build(const std::vector<std::string>& tokens);
    /// The id of `text`, or -1.
    [[nodiscard]] std::int32_t find(std::string_view text) const noexcept {
        const std::uint64_t h = hash_bytes(text);
        for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
            const slot& s = slots_[i];
            if (s.id < 0)
                return -1;
            if (s.hash == h && (*tokens_)[s.id] == text)
                return s.id;
        }
    }

private:
    struct slot {
        std::uint64_t hash = 0;
        std::int32_t id = -1;
    };
    std::vector<slot> slots_;
    std::size_t mask_ = 0;
    const std::vector<std::string>* tokens_ = nullptr;
};

/// (left id, right id) -> (rank, merged id), open addressing. Built once, read-only afterwards.
class merge_table {
public:
    struct entry {
        std::uint64_t key = empty_key;
        std::int32_t rank = 0;
        std::int32_t merged = 0;
    };

    void reserve(std::size_t n);
    /// Keeps the first insertion of a pair (llama.cpp's bpe_ranks.emplace).
    void insert(std::int32_t left, std::int32_t right, std::int32_t rank, std::int32_t merged);
    [[nodiscard]] const entry* find(std::int32_t left, std::int32_t right) const noexcept {
        if (slots_.empty())
            return nullptr;
        const std::uint64_t key = make_key(left, right);
        for (std::size_t i = slot_of(key);; i = (i + 1) & mask_) {
            const entry& e = slots_[i];
            if (e.key == key)
                return &e;
            if (e.key == empty_key)
                return nullptr;
        }
    }

private:
    static constexpr std::uint64_t empty_key = ~std::uint64_t{0};
    static std::uint64_t make_key(std::int32_t l, std::int32_t r) noexcept {
        return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(l)) << 32) |
               static_cast<std::uint32_t>(r);
    }
    std::size_t slot_of(std::uint64_t key) const noexcept {
        // Fibonacci hashing: the top bits of the product depend on every bit of the key.
        return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
    }
    std::vector<entry> slots_;
    std::size_t mask_ = 0;
    int shift_ = 64;
    std::size_t size_ = 0;
};

/// A piece of input: raw text to run through the algorithm, or an already-recognised token.
struct fragment {
    std::string_view text; ///< empty when `token` >= 0
    std::int32_t token = -1;
};

} // namespace internal

struct tokenizer::impl {
    tokenizer_vocab vocab;
    tokenizer_kind kind = tokenizer_kind::bpe;
    std::vector<token_type> types;
    std::vector<std::string> pieces;   ///< decoded bytes per token (control: its text)
    internal::token_table token_to_id; ///< over vocab.tokens

    // Special-token splitting: candidates grouped by first byte, longest first.
    std::array<std::vector<std::int32_t>, 256> specials_by_first_byte;
    std::array<bool, 256> special_first_byte{};

    std::optional<std::int32_t> eot;
    std::vector<std::int32_t> eog;
    bool add_bos = false;
    bool add_eos = false;

    // bpe
    internal::pre_tokenizer pre;
    internal::merge_table merges;
    std::array<std::int32_t, 256> byte_token{}; ///< id of each byte's stand-in, -1 when absent
    bool ignore_merges = false;
    std::array<std::string_view, 256> standins{}; ///< gpt2_byte_to_utf8, without its static guard

    // spm
    bool add_space_prefix = true;
    std::array<std::int32_t, 256> byte_fallback{}; ///< `<0xNN>` (or the byte itself), -1 if none

    /// Encodes one raw-text fragment of a byte-level BPE vocabulary, appending to `out`.
    [[nodiscard]] result<void> encode_bpe(std::string_view text,
                                          std::vector<std::int32_t>& out) const;
    /// Encodes one raw-text fragment of a SentencePiece vocabulary. `prefix_space` adds the `▁`.
    [[nodiscard]] result<void> encode_spm(std::string_view text, bool prefix_space,
                                          std::vector<std::int32_t>& out) const;
    /// Splits `text` at special tokens (leftmost, longest first, as Hugging Face does).
    void split_special(std::string_view text, bool parse_special,
                       std::vector<internal::fragment>& out) const;
};

} // namespace bitnet::model
