// Byte-level BPE (docs/GGUF-FORMAT.md §5.1, llama.cpp's llm_tokenizer_bpe): pre-tokenize, map bytes
// to their GPT-2 stand-ins, then merge adjacent symbols lowest rank first, leftmost on ties.
// Symbols are token ids from the start (create() checked every merge result is a token), so the
// merge loop never builds strings.
#include "model/tokenizer/tokenizer_impl.hpp"
#include "model/tokenizer/unicode.hpp"

#include <algorithm>
#include <cstdio>

namespace bitnet::model {

namespace internal {

void merge_table::reserve(std::size_t n) {
    std::size_t cap = 16;
    int bits = 4;
    while (cap < n * 2) {
        cap <<= 1;
        ++bits;
    }
    slots_.assign(cap, entry{});
    mask_ = cap - 1;
    shift_ = 64 - bits;
    size_ = 0;
}

void merge_table::insert(std::int32_t left, std::int32_t right, std::int32_t rank,
                         std::int32_t merged) {
    if ((size_ + 1) * 2 > slots_.size()) {
        std::vector<entry> old;
        old.swap(slots_);
        reserve(std::max<std::size_t>(16, old.size()));
        for (const entry& e : old)
            if (e.key != empty_key)
                insert(static_cast<std::int32_t>(e.key >> 32),
                       static_cast<std::int32_t>(e.key & 0xFFFFFFFFu), e.rank, e.merged);
    }
    const std::uint64_t key = make_key(left, right);
    for (std::size_t i = slot_of(key);; i = (i + 1) & mask_) {
        entry& e = slots_[i];
        if (e.key == key)
            return;
        if (e.key == empty_key) {
            e = entry{key, rank, merged};
            ++size_;
            return;
        }
    }
}

} // namespace internal

namespace {

// A candidate merge of symbols `left` and `right` (indices into the symbol arrays).
struct candidate {
    std::int32_t rank;
    std::int32_t left;
    std::int32_t right;
    std::int32_t left_id; // ids at push time: a popped entry is stale if either changed
    std::int32_t right_id;
    std::int32_t merged;
};

// Min-heap on (rank, left): lowest rank first, then leftmost, as llm_bigram_bpe orders them.
struct later {
    bool operator()(const candidate& a, const candidate& b) const noexcept {
        return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
    }
};

struct bpe_scratch {
    std::string mapped;
    std::vector<std::int32_t> ids;
    std::vector<std::int32_t> prev;
    std::vector<std::int32_t> next;
    std::vector<candidate> heap;
    std::vector<std::string_view> words;
    std::vector<std::string_view> words_tmp;
};

bpe_scratch& thread_scratch() {
    thread_local bpe_scratch s;
    return s;
}

} // namespace

result<void> tokenizer::impl::encode_bpe(std::string_view text,
                                         std::vector<std::int32_t>& out) const {
    bpe_scratch& s = thread_scratch();
    s.words.clear();
    BITNET_TRY(pre.split(text, s.words, s.words_tmp));

    for (const std::string_view word : s.words) {
        if (ignore_merges) {
            // Llama-3: a whole pre-token that is a token is emitted as is, even when the merges
            // would not reach it.
            s.mapped.clear();
            for (const char c : word)
                s.mapped += standins[static_cast<std::uint8_t>(c)];
            if (const std::int32_t t = token_to_id.find(s.mapped); t >= 0) {
                out.push_back(t);
                continue;
            }
        }

        const auto n = static_cast<std::int32_t>(word.size());
        s.ids.resize(word.size());
        s.prev.resize(word.size());
        s.next.resize(word.size());
        for (std::int32_t i = 0; i < n; ++i) {
            s.ids[i] = byte_token[static_cast<std::uint8_t>(word[i])];
            s.prev[i] = i - 1;
            s.next[i] = i + 1 < n ? i + 1 : -1;
        }

        s.heap.clear();
        auto push_pair = [&](std::int32_t l, std::int32_t r) {
            if (l < 0 || r < 0 || s.ids[l] < 0 || s.ids[r] < 0)
                return;
            if (const auto* m = merges.find(s.ids[l], s.ids[r])) {
                s.heap.push_back({m->rank, l, r, s.ids[l], s.ids[r], m->merged});
                std::push_heap(s.heap.begin(), s.heap.end(), later{});
            }
        };
        for (std::int32_t i = 0; i + 1 < n; ++i)
            push_pair(i, i + 1);

        while (!s.heap.empty()) {
            std::pop_heap(s.heap.begin(), s.heap.end(), later{});
            const candidate c = s.heap.back();
            s.heap.pop_back();
            // Stale: the left symbol was absorbed or changed, or its neighbour is another one.
            if (s.ids[c.left] != c.left_id || s.next[c.left] != c.right ||
                s.ids[c.right] != c.right_id)
                continue;
            s.ids[c.left] = c.merged;
            s.ids[c.right] = -2; // dead; never equals a pushed id
            const std::int32_t after = s.next[c.right];
            s.next[c.left] = after;
            if (after >= 0)
                s.prev[after] = c.left;
            push_pair(s.prev[c.left], c.left);
            push_pair(c.left, after);
        }

        for (std::int32_t i = 0; i >= 0 && i < n; i = s.next[i]) {
            if (s.ids[i] >= 0) {
                out.push_back(s.ids[i]);
            } else if (vocab.unk_id) {
                out.push_back(*vocab.unk_id);
            } else {
                char hex[8];
                std::snprintf(hex, sizeof hex, "0x%02X",
                              static_cast<unsigned>(static_cast<std::uint8_t>(word[i])));
                return error(errc::tokenizer_error, std::string("byte ") + hex +
                                                        " has no token in this byte-level "
                                                        "vocabulary and there is no <unk>");
            }
        }
    }
    return {};
}

} // namespace bitnet::model
