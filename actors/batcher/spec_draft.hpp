// Draft tokens for speculative decoding from the sequence itself (prompt lookup, no extra
// model): where the last few tokens appeared before, the tokens that followed them then are a
// guess for what follows now. Quoting, copying a document, repeating a field name or a code
// identifier all make such guesses right; where they are wrong, the verification step rejects
// them and nothing but that step's extra positions is lost. Plain C++, no CAF.
#pragma once

#include "messages/ids.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace bitnet::model::constrain {
class compiled_constraint;
class token_constraint;
} // namespace bitnet::model::constrain

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

/// Where drafts came from (the `source` label of the speculation metrics).
enum class draft_source : std::uint8_t { ngram, grammar, model };
inline constexpr std::size_t n_draft_sources = 3;

/// Jump-forward drafts for a sequence under a schema (model/constrain/forced_tokens.hpp): the
/// tokens of the bytes the schema forces next. One per sequence: it keeps the sequence's place in
/// the schema and takes the generated tokens it has not seen at each proposal.
class grammar_drafter {
public:
    explicit grammar_drafter(std::shared_ptr<const model::constrain::compiled_constraint> c);
    ~grammar_drafter();
    grammar_drafter(const grammar_drafter&) = delete;
    grammar_drafter& operator=(const grammar_drafter&) = delete;

    /// Up to `max_draft` tokens to follow `generated` (the sequence's generated tokens so far),
    /// appended to `out`. Returns how many of them, from the first, are certain (the only token
    /// the schema allows there). Nothing once a generated token did not fit the schema.
    std::uint32_t propose(std::span<const msg::token_id> generated, std::uint32_t max_draft,
                          std::vector<msg::token_id>& out);

    /// A drafter at the schema's start, for a sequence that forks from this one's (n > 1).
    [[nodiscard]] std::shared_ptr<grammar_drafter> fresh() const;

private:
    std::shared_ptr<const model::constrain::compiled_constraint> schema_;
    std::unique_ptr<model::constrain::token_constraint> state_;
    std::size_t fed_ = 0; ///< generated tokens state_ has taken
    bool broken_ = false; ///< a generated token did not fit (the executor ends such a sequence)
    /// The forced bytes from state_, left from the last look ahead as tokens took them: a
    /// forced stretch is scanned once, not once per step. `capped_`: the look ahead stopped at
    /// its length limit, so more may be forced past it.
    std::string ahead_;
    bool capped_ = false;
};

} // namespace bitnet::sched
