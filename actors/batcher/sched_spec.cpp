// Speculative decoding in the batching policy: which decode chunks carry draft tokens, and what
// a verification leaves behind. The drafts come from the sequence's schema where it forces the
// next bytes, else from the draft model (when the executor has one), else from the sequence's
// own tokens (spec_draft.hpp); the
// executor verifies them exactly (a draft is accepted only when the sequence's own sampler,
// drawing from the row computed as that position's decode, picks it), so output never changes,
// only the number of passes it takes. Drafts only use what a step leaves after every decode,
// prefill chunk and admission, and only while the step is small (spec_step_tokens): speculation
// never takes a running stream's or a waiting prompt's place.
#include "actors/batcher/sched_policy.hpp"

#include <algorithm>

namespace bitnet::sched {

namespace {

/// Decode steps a sequence sits out after a single draft was rejected, doubling with each such
/// miss in a row up to the cap: a sequence whose text does not repeat stops paying for
/// verification, and tries again later (an accepted draft ends the run of misses).
constexpr std::uint32_t spec_rest_steps = 4;
constexpr std::uint32_t spec_rest_max = 64;

} // namespace

void policy::plan_drafts(step_plan& plan, std::uint32_t budget) {
    const std::uint32_t bt = cfg_.kv_block_tokens;
    for (auto& c : plan.chunks) {
        if (plan.n_tokens >= cfg_.spec_step_tokens || budget == 0)
            break;
        // A decode of a generated token: one token, its logits sampled, no choices to fork.
        if (c.part.tokens.size() != 1 || !c.part.want_logits || c.part.all_logits ||
            !c.forks.empty())
            continue;
        auto& s = seqs_.at(c.part.seq);
        if (!s.req.speculate || c.part.pos0 < s.n_prompt || c.part.pos0 + 1 != s.tokens.size())
            continue;
        // Resting after misses: guesses wait, but tokens the schema forces are still drafted.
        const bool resting = s.spec_rest > 0;
        if (resting)
            --s.spec_rest;
        if (resting && !s.grammar)
            continue;
        const std::uint32_t end = c.part.pos0 + 1;
        std::uint32_t k =
            std::min({cfg_.spec_max_draft, budget, cfg_.spec_step_tokens - plan.n_tokens});
        // Every sample the chunk can yield must be one the sequence may take: at most
        // max_tokens - n_generated of them, and positions inside the context window.
        const std::uint32_t left =
            s.req.max_tokens > s.n_generated ? s.req.max_tokens - s.n_generated : 0;
        k = std::min(k, left > 0 ? left - 1 : 0u);
        k = std::min(k, cfg_.n_ctx > end ? cfg_.n_ctx - end : 0u);
        // And the KV blocks the sequence holds plus the free ones.
        const std::uint64_t capacity =
            static_cast<std::uint64_t>(s.n_blocks + kv_blocks_free_) * bt;
        k = static_cast<std::uint32_t>(
            std::min<std::uint64_t>(k, capacity > end ? capacity - end : 0));
        if (k == 0)
            continue;
        // Guesses, of any source, follow the sequence's adaptive draft length.
        const std::uint32_t guesses = resting ? 0 : std::min(k, std::max(s.spec_k, 1u));
        // The draft model proposes for the next step after this one's sample (it sits out
        // while the sequence rests).
        if (cfg_.spec_draft_model && !resting)
            c.draft_next = std::min(cfg_.spec_max_draft, std::max(s.spec_k, 1u));
        draft_scratch_.clear();
        std::uint32_t certain = 0;
        draft_source source = draft_source::ngram;
        if (s.grammar) {
            const auto generated = std::span<const token_id>(s.tokens).subspan(s.n_prompt);
            certain = s.grammar->propose(generated, k, draft_scratch_);
            draft_scratch_.resize(std::max<std::size_t>(
                certain, std::min<std::size_t>(draft_scratch_.size(), guesses)));
            source = draft_source::grammar;
        }
        if (draft_scratch_.empty() && guesses > 0 && !s.model_drafts.empty() &&
            s.model_drafts_at == s.tokens.size()) {
            source = draft_source::model;
            const auto n = std::min<std::size_t>(guesses, s.model_drafts.size());
            draft_scratch_.assign(s.model_drafts.begin(), s.model_drafts.begin() + n);
        }
        if (draft_scratch_.empty()) {
            source = draft_source::ngram;
            drafter_.propose(s.tokens, guesses, draft_scratch_);
        }
        if (draft_scratch_.empty())
            continue;
        const auto d = static_cast<std::uint32_t>(draft_scratch_.size());
        const std::uint32_t want = blocks_for(end + d);
        const std::uint32_t need = want > s.n_blocks ? want - s.n_blocks : 0;
        kv_blocks_free_ -= need;
        s.n_blocks += need;
        c.part.tokens.insert(c.part.tokens.end(), draft_scratch_.begin(), draft_scratch_.end());
        c.part.all_logits = true;
        // Each draft position is computed as the decode it would have been.
        c.part.decoded_from = std::min(c.part.decoded_from, c.part.pos0);
        c.n_draft = d;
        c.source = source;
        c.n_certain = source == draft_source::grammar ? std::min(certain, d) : 0;
        plan.n_tokens += d;
        budget -= d;
    }
}

void policy::settle_drafts(const step_plan& plan,
                           const std::unordered_map<request_id, std::uint32_t>& confirmed) {
    for (const auto& c : plan.chunks) {
        if (c.n_draft == 0)
            continue;
        const auto it = confirmed.find(c.part.seq);
        const std::uint32_t taken = it == confirmed.end() ? 0 : it->second;
        if (taken > 0)
            spec_drafted_[static_cast<std::size_t>(c.source)] += c.n_draft;
        auto sit = seqs_.find(c.part.seq);
        if (sit == seqs_.end())
            continue; // ended: all its blocks go with it
        auto& s = sit->second;
        if (s.epoch != c.epoch || s.st != state::running)
            continue;
        // The positions of drafts not confirmed were dropped by the executor.
        const std::uint32_t keep = blocks_for(s.n_cached);
        if (s.n_blocks > keep) {
            kv_blocks_free_ += s.n_blocks - keep;
            s.n_blocks = keep;
        }
        if (taken == 0)
            continue;
        // The draft length adapts to the guesses only: certain drafts cannot miss.
        const std::uint32_t accepted_all = std::min(taken - 1, c.n_draft);
        const std::uint32_t n_guess = c.n_draft - c.n_certain;
        if (n_guess == 0 || accepted_all < c.n_certain)
            continue;
        const std::uint32_t accepted = accepted_all - c.n_certain;
        if (accepted > 0)
            s.spec_misses = 0;
        if (accepted == n_guess) {
            s.spec_k = std::min(cfg_.spec_max_draft, std::max(s.spec_k, 1u) * 2);
        } else if (accepted == 0) {
            if (n_guess <= 1) {
                s.spec_rest =
                    std::min(spec_rest_max, spec_rest_steps << std::min(s.spec_misses, 4u));
                ++s.spec_misses;
            }
            s.spec_k = std::max(s.spec_k / 2, 1u);
        } else {
            s.spec_k = accepted + 1;
        }
    }
}

void policy::offer_drafts(request_id id, std::span<const token_id> tokens) {
    auto it = seqs_.find(id);
    if (it == seqs_.end() || it->second.st != state::running)
        return;
    it->second.model_drafts.assign(tokens.begin(), tokens.end());
    it->second.model_drafts_at = it->second.tokens.size();
}

} // namespace bitnet::sched
