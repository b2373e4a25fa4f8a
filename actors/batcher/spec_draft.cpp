// Prompt-lookup drafts (spec_draft.hpp).
#include "actors/batcher/spec_draft.hpp"

#include "model/constrain/forced_tokens.hpp"
#include "model/constrain/token_constraint.hpp"

#include <algorithm>

namespace bitnet::sched {

void ngram_drafter::propose(std::span<const msg::token_id> tokens, std::uint32_t max_draft,
                            std::vector<msg::token_id>& out) const {
    const std::size_t len = tokens.size();
    if (max_draft == 0 || min_ngram == 0 || len < std::size_t{min_ngram} + 1)
        return;
    const std::size_t lo = len > max_lookback ? len - max_lookback : 0;
    for (std::size_t n = std::min<std::size_t>(max_ngram, len - 1); n >= min_ngram; --n) {
        const auto suffix = tokens.subspan(len - n, n);
        // The latest earlier occurrence: it ends before the suffix's own last token, so at least
        // one token follows it.
        for (std::size_t start = len - n; start-- > lo;) {
            if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + start))
                continue;
            // What followed it then follows now; past the end of the known tokens the guess
            // continues itself (a repeat with period len - from: "x y x y" guesses "x y x y").
            const std::size_t from = start + n;
            const std::size_t base = out.size();
            for (std::size_t i = 0; i < max_draft; ++i) {
                const std::size_t at = from + i;
                out.push_back(at < len ? tokens[at] : out[base + (at - len)]);
            }
            return;
        }
    }
}

grammar_drafter::grammar_drafter(std::shared_ptr<const model::constrain::compiled_constraint> c)
    : schema_(std::move(c))
    , state_(std::make_unique<model::constrain::token_constraint>(schema_)) {}

grammar_drafter::~grammar_drafter() = default;

std::shared_ptr<grammar_drafter> grammar_drafter::fresh() const {
    return std::make_shared<grammar_drafter>(schema_);
}

std::uint32_t grammar_drafter::propose(std::span<const msg::token_id> generated,
                                       std::uint32_t max_draft, std::vector<msg::token_id>& out) {
    namespace mc = model::constrain;
    if (max_draft == 0)
        return 0;
    std::string taken;
    for (; fed_ < generated.size() && !broken_; ++fed_) {
        broken_ = !state_->accept(generated[fed_]);
        const auto id = static_cast<std::size_t>(generated[fed_]);
        if (id < schema_->vocab().pieces.size())
            taken += schema_->vocab().pieces[id];
    }
    if (broken_)
        return 0;
    // What the new tokens wrote was forced: the rest of the look ahead still is.
    if (ahead_.starts_with(taken))
        ahead_.erase(0, taken.size());
    else
        ahead_.clear();
    const std::size_t want = mc::forced_bytes_per_token * max_draft;
    if (ahead_.empty() || (capped_ && ahead_.size() < want)) {
        ahead_ = mc::forced_bytes(schema_->rules(), state_->state(), want);
        capped_ = ahead_.size() == want;
    }
    return mc::draft_forced_tokens(*schema_, ahead_, max_draft, out);
}

} // namespace bitnet::sched
