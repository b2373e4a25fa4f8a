// SentencePiece-style tokenization (llama.cpp's llm_tokenizer_spm): spaces become U+2581, symbols
// start as UTF-8 characters, and the adjacent pair whose concatenation is a token with the highest
// score merges first (leftmost on ties). What remains unknown falls back to `<0xNN>` byte tokens.
#include "model/tokenizer/tokenizer_impl.hpp"
#include "model/tokenizer/unicode.hpp"

#include <algorithm>
#include <cstdio>

namespace bitnet::model {

namespace {

constexpr std::string_view space_marker = "\xE2\x96\x81"; // U+2581 LOWER ONE EIGHTH BLOCK

struct symbol {
    std::int32_t prev;
    std::int32_t next;
    std::uint32_t start; // byte offset in the escaped text
    std::uint32_t n;     // byte length; 0 once merged into its left neighbour
};

struct bigram {
    float score;
    std::int32_t left;
    std::int32_t right;
    std::uint32_t size; // bytes of left + right when pushed; stale when they no longer add up
};

// Max-heap on score, then leftmost (llm_bigram_spm's comparator).
struct lower {
    bool operator()(const bigram& a, const bigram& b) const noexcept {
        return a.score != b.score ? a.score < b.score : a.left > b.left;
    }
};

struct spm_scratch {
    std::string text;
    std::vector<symbol> symbols;
    std::vector<bigram> heap;
};

spm_scratch& thread_scratch() {
    thread_local spm_scratch s;
    return s;
}

} // namespace

result<void> tokenizer::impl::encode_spm(std::string_view raw, bool prefix_space,
                                         std::vector<std::int32_t>& out) const {
    spm_scratch& s = thread_scratch();
    s.text.clear();
    if (prefix_space)
        s.text += space_marker;
    for (const char c : raw) {
        if (c == ' ')
            s.text += space_marker;
        else
            s.text.push_back(c);
    }
    const std::string_view text = s.text;

    s.symbols.clear();
    for (std::size_t off = 0; off < text.size();) {
        const std::size_t len =
            std::min(utf8_sequence_length(static_cast<std::uint8_t>(text[off])), text.size() - off);
        const auto idx = static_cast<std::int32_t>(s.symbols.size());
        s.symbols.push_back(
            {idx - 1, -1, static_cast<std::uint32_t>(off), static_cast<std::uint32_t>(len)});
        if (idx > 0)
            s.symbols[idx - 1].next = idx;
        off += len;
    }

    s.heap.clear();
    auto try_add = [&](std::int32_t l, std::int32_t r) {
        if (l < 0 || r < 0)
            return;
        const symbol& a = s.symbols[l];
        const symbol& b = s.symbols[r];
        const std::string_view both = text.substr(a.start, a.n + b.n);
        const std::int32_t t = token_to_id.find(both);
        if (t < 0)
            return;
        const float score = vocab.scores.empty() ? 0.0f : vocab.scores[t];
        s.heap.push_back({score, l, r, a.n + b.n});
        std::push_heap(s.heap.begin(), s.heap.end(), lower{});
    };
    for (std::size_t i = 1; i < s.symbols.size(); ++i)
        try_add(static_cast<std::int32_t>(i - 1), static_cast<std::int32_t>(i));

    while (!s.heap.empty()) {
        std::pop_heap(s.heap.begin(), s.heap.end(), lower{});
        const bigram g = s.heap.back();
        s.heap.pop_back();
        symbol& a = s.symbols[g.left];
        symbol& b = s.symbols[g.right];
        // Symbols only grow, so matching sizes mean the pair is exactly the one pushed.
        if (a.n == 0 || b.n == 0 || a.n + b.n != g.size)
            continue;
        a.n += b.n;
        b.n = 0;
        a.next = b.next;
        if (b.next >= 0)
            s.symbols[b.next].prev = g.left;
        try_add(a.prev, g.left);
        try_add(g.left, a.next);
    }

    for (std::int32_t i = s.symbols.empty() ? -1 : 0; i >= 0; i = s.symbols[i].next) {
        const symbol& sym = s.symbols[i];
        const std::string_view piece = text.substr(sym.start, sym.n);
        if (const std::int32_t t = token_to_id.find(piece); t >= 0) {
            out.push_back(t);
            continue;
        }
        // Byte fallback (every merged symbol is a token, so only single characters get here).
        for (const char c : piece) {
            const std::int32_t t = byte_fallback[static_cast<std::uint8_t>(c)];
            if (t >= 0) {
                out.push_back(t);
            } else if (vocab.unk_id) {
                out.push_back(*vocab.unk_id);
                break; // one <unk> per character, as SentencePiece without byte fallback
            } else {
                char hex[8];
                std::snprintf(hex, sizeof hex, "<0x%02X>",
                              static_cast<unsigned>(static_cast<std::uint8_t>(c)));
                return error(errc::tokenizer_error,
                             std::string("no token for byte ") + hex +
                                 " and no <unk> in this SentencePiece vocabulary");
            }
        }
    }
    return {};
}

} // namespace bitnet::model
