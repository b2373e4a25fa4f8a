// Jump-forward drafts (forced_tokens.hpp).
#include "model/constrain/forced_tokens.hpp"

#include <algorithm>

namespace bitnet::model::constrain {

std::string forced_bytes(const grammar& g, const byte_matcher& m, std::size_t max_bytes) {
    std::string out;
    byte_matcher cur = m;
    byte_matcher probe;
    byte_matcher taken;
    while (out.size() < max_bytes && !cur.dead() && !cur.complete(g)) {
        int only = -1;
        for (int i = 0; i < 256; ++i) {
            // Printable ASCII first: where any byte may follow (inside a string, a number),
            // two of them are found at once, not after the 32 control bytes every such state
            // refuses; a forced byte is still checked against all 256.
            const auto b = static_cast<std::uint8_t>((i + 0x20) & 0xFF);
            probe = cur;
            if (!probe.feed(g, b))
                continue;
            if (only >= 0)
                return out; // a choice: the bytes stop being forced here
            only = b;
            std::swap(taken, probe);
        }
        if (only < 0)
            break;
        out.push_back(static_cast<char>(only));
        std::swap(cur, taken);
    }
    return out;
}

std::uint32_t draft_forced_tokens(const compiled_constraint& c, const byte_matcher& m,
                                  std::uint32_t max_tokens, std::vector<std::int32_t>& out) {
    if (max_tokens == 0)
        return 0;
    return draft_forced_tokens(c, forced_bytes(c.rules(), m, forced_bytes_per_token * max_tokens),
                               max_tokens, out);
}

std::uint32_t draft_forced_tokens(const compiled_constraint& c, std::string_view bytes,
                                  std::uint32_t max_tokens, std::vector<std::int32_t>& out) {
    const auto& vocab = c.vocab();
    std::uint32_t certain = 0;
    bool all_certain = true;
    std::size_t pos = 0;
    for (std::uint32_t n = 0; n < max_tokens && pos < bytes.size(); ++n) {
        // Down the trie along the forced bytes: the deepest node holding a token is the longest
        // piece; every node on the way that holds one is a token the schema allows here too.
        std::uint32_t at = 0;
        std::uint32_t best = 0;
        std::size_t best_len = 0;
        std::size_t tokens_on_path = 0;
        std::size_t depth = 0;
        for (; pos + depth < bytes.size(); ++depth) {
            const auto next = vocab.next(at);
            const auto b = static_cast<std::uint8_t>(bytes[pos + depth]);
            auto it =
                std::lower_bound(next.begin(), next.end(), std::make_pair(b, std::uint32_t{0}));
            if (it == next.end() || it->first != b)
                break;
            at = it->second;
            if (!vocab.tokens(at).empty()) {
                tokens_on_path += vocab.tokens(at).size();
                best = at;
                best_len = depth + 1;
            }
        }
        if (best_len == 0)
            break;
        // Certain: it is the only piece along the way, and no piece can run past it. A walk that
        // reached the end of the forced bytes with edges left might continue into bytes that
        // are free to choose, so it is not.
        const bool ran_out = pos + depth == bytes.size() && !vocab.next(at).empty();
        const auto ids = vocab.tokens(best);
        all_certain = all_certain && tokens_on_path == 1 && !ran_out;
        if (all_certain)
            ++certain;
        out.push_back(*std::min_element(ids.begin(), ids.end()));
        pos += best_len;
    }
    return certain;
}

} // namespace bitnet::model::constrain
