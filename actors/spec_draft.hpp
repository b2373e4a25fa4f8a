// Draft tokens for speculative decoding from the sequence itself (prompt lookup, no extra
// model): where the last few tokens appeared before, the tokens that followed them then are a
// guess for what follows now. Quoting, copying a document, repeating a field name or a code
// identifier all make such guesses right; where they are wrong, the verification step rejects
// them and nothing but that step's extra positions is lost. Plain C++, no CAF.
#pragma once

#include "messages/ids.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace bitnet::sched {

/// Up to `max_draft` tokens to follow `tokens` (a sequence's prompt and generated tokens so
/// far), appended to `out`: the continuation of the latest earlier occurrence of its last n
/// tokens, for the longest n in [min_ngram, max_ngram] that occurs. Nothing when no suffix
/// occurs earlier. Looks back over at most `max_lookback` tokens, so the cost per step stays
/// bounded whatever the context.
struct ngram_drafter {
    std::uint32_t min_ngram = 2;
    std::uint32_t max_ngram = 4;
    std::uint32_t max_lookback = 4096;

    void propose(std::span<const msg::token_id> tokens, std::uint32_t max_draft,
                 std::vector<msg::token_id>& out) const;
};

} // namespace bitnet::sched
