#include "actors/batcher/sched_policy.hpp"

#include <algorithm>
#include <string>

namespace bitnet::sched {

policy::policy(policy_config cfg)
    : cfg_(std::move(cfg))
    , eog_(cfg_.eog_ids.begin(), cfg_.eog_ids.end())
    , kv_blocks_free_(cfg_.kv_blocks_total)
    , kv_shared_(cfg_.prefix_caching) {
    // A zero would make a step that can never hold anything; the config loader rejects these,
    // clamp here so the policy's own invariants do not depend on it.
    cfg_.max_batch_tokens = std::max(cfg_.max_batch_tokens, 1u);
    cfg_.decoding_batch_tokens = std::clamp(cfg_.decoding_batch_tokens, 1u, cfg_.max_batch_tokens);
    cfg_.max_batch_seqs = std::max(cfg_.max_batch_seqs, 1u);
    cfg_.kv_block_tokens = std::max(cfg_.kv_block_tokens, 1u);
    for (auto& w : cfg_.weights)
        w = std::max(w, 1u);
    credits_ = cfg_.weights;
}

std::uint32_t policy::blocks_for(std::uint32_t n_tokens) const noexcept {
    return (n_tokens + cfg_.kv_block_tokens - 1) / cfg_.kv_block_tokens;
}

std::uint32_t policy::private_blocks(const sequence& s) const noexcept {
    if (!kv_shared_)
        return s.n_blocks;
    const std::uint32_t prompt = s.n_prompt == 1 ? 0 : s.n_prompt;
    const std::uint32_t shareable = std::min(s.n_cached, prompt) / cfg_.kv_block_tokens;
    return s.n_blocks - std::min(s.n_blocks, shareable);
}

void policy::sync_kv_free(std::uint32_t engine_free) noexcept {
    if (kv_shared_)
        kv_blocks_free_ = std::min(engine_free + pending_release_blocks_, cfg_.kv_blocks_total);
}

void policy::prefix_attached(request_id id, std::uint32_t n_tokens) noexcept {
    auto it = seqs_.find(id);
    if (it == seqs_.end())
        return;
    auto& s = it->second;
    if (s.st != state::running || n_tokens <= s.n_cached || n_tokens >= s.tokens.size())
        return;
    s.n_cached = n_tokens;
    s.n_blocks = std::max(s.n_blocks, blocks_for(n_tokens));
}

result<void> policy::add(seq_request req, clock::time_point now) {
    if (req.prompt.empty())
        return error{errc::invalid_argument, "the prompt has no tokens"};
    if (req.n_choices == 0 || req.n_choices > max_choices || request_of(req.id) != req.id)
        return error{errc::invalid_argument,
                     "n must be within 1.." + std::to_string(max_choices) +
                         " and the request id below 2^56",
                     "n"};
    // The choices fork when the prompt's first token is sampled: a prompt-only request
    // (max_tokens 0, echo) has nothing to fork from.
    if (req.n_choices > 1 && req.max_tokens == 0)
        return error{errc::invalid_argument, "n > 1 needs max_tokens of at least 1", "n"};
    if (seqs_.count(req.id))
        return error{errc::invalid_argument,
                     "request id " + std::to_string(req.id) + " is already queued or running"};
    if (req.n_resumed > 0 &&
        (req.n_resumed >= req.prompt.size() || req.n_resumed >= req.max_tokens))
        return error{errc::invalid_argument,
                     "n_resumed (" + std::to_string(req.n_resumed) +
                         " tokens already generated) must be less than the prompt's " +
                         std::to_string(req.prompt.size()) + " tokens and max_tokens " +
                         std::to_string(req.max_tokens),
                     "n_resumed"};
    // The whole prompt, resumed tokens included, is what the KV cache must hold before the next
    // token, so the context checks count all of it.
    const auto n_known = static_cast<std::uint32_t>(req.prompt.size());
    if (n_known >= cfg_.n_ctx)
        return error{errc::prompt_too_long,
                     "the prompt has " + std::to_string(n_known) +
                         " tokens; the context window holds " + std::to_string(cfg_.n_ctx) +
                         " including at least one generated token",
                     "prompt"};
    if (blocks_for(n_known + 1) > cfg_.kv_blocks_total)
        return error{errc::prompt_too_long,
                     "the prompt needs " + std::to_string(blocks_for(n_known + 1)) +
                         " KV blocks; the KV budget holds " + std::to_string(cfg_.kv_blocks_total),
                     "prompt"};
    sequence s;
    s.tokens = req.prompt;
    s.n_prompt = n_known - req.n_resumed;
    s.n_generated = req.n_resumed;
    s.spec_k = cfg_.spec_max_draft;
    if (req.speculate && req.schema && cfg_.spec_max_draft > 0)
        s.grammar = std::make_shared<grammar_drafter>(req.schema);
    s.timings.queued = now;
    const auto prio = static_cast<std::size_t>(req.prio);
    const auto id = req.id;
    s.req = std::move(req);
    seqs_.emplace(id, std::move(s));
    waiting_[prio].push_back(id);
    waiting_prompt_tokens_ += n_known;
    return {};
}

bool policy::has_waiting() const noexcept {
    return std::any_of(waiting_.begin(), waiting_.end(), [](const auto& q) { return !q.empty(); });
}

int policy::next_priority() {
    for (int round = 0; round < 2; ++round) {
        for (std::size_t p = 0; p < n_priorities; ++p)
            if (!waiting_[p].empty() && credits_[p] > 0)
                return static_cast<int>(p);
        // Every level with work has spent its turn: start a new round.
        credits_ = cfg_.weights;
    }
    return -1;
}

std::uint32_t policy::plan_chunk(request_id id, sequence& s, std::uint32_t max_tokens,
                                 step_plan& plan) {
    const auto remaining = static_cast<std::uint32_t>(s.tokens.size()) - s.n_cached;
    std::uint32_t n = std::min(remaining, max_tokens);
    if (s.req.max_chunk_tokens > 0)
        n = std::min(n, s.req.max_chunk_tokens);
    // Shrink the chunk to what the held plus free blocks can hold.
    const std::uint64_t capacity =
        static_cast<std::uint64_t>(s.n_blocks + kv_blocks_free_) * cfg_.kv_block_tokens;
    if (capacity <= s.n_cached)
        return 0;
    n = static_cast<std::uint32_t>(std::min<std::uint64_t>(n, capacity - s.n_cached));
    n = prompt_safe_chunk(s, n);
    if (n == 0)
        return 0;
    const std::uint32_t need = blocks_for(s.n_cached + n) - s.n_blocks;
    kv_blocks_free_ -= need;
    s.n_blocks += need;
    chunk c;
    c.part.seq = id;
    c.part.pos0 = s.n_cached;
    c.part.tokens.assign(s.tokens.begin() + s.n_cached, s.tokens.begin() + s.n_cached + n);
    c.part.want_logits = (n == remaining);
    // Generated tokens were computed one at a time when they were sampled; a recompute (after a
    // preemption, or of a resumed stream's tokens) computes them the same way, in any chunk, so
    // it gives the same KV and the same next tokens. A one-token prompt was itself computed as
    // a one-token chunk.
    c.part.decoded_from = s.n_prompt == 1 ? 0 : s.n_prompt;
    c.epoch = s.epoch;
    if (c.part.want_logits && s.req.n_choices > 1 && !s.forked)
        for (std::uint32_t i = 1; i < s.req.n_choices; ++i)
            c.forks.push_back(choice_id(id, i));
    plan.chunks.push_back(std::move(c));
    plan.n_tokens += n;
    // Counted as computed now, so a plan prepared while this one runs continues after it.
    s.n_cached += n;
    return n;
}

std::uint32_t policy::prompt_safe_chunk(const sequence& s, std::uint32_t n) const noexcept {
    // The engine rounds attention probabilities to F16 only in a chunk of exactly one token (as
    // bitnet.cpp does in decode), so a prompt position computed in a 1-token chunk gives other
    // bits than the same prompt prefilled whole, and greedy output could depend on how the
    // scheduler happened to split it. Chunks of 2 or more tokens give the unsplit bits.
    const auto remaining = static_cast<std::uint32_t>(s.tokens.size()) - s.n_cached;
    if (s.n_cached >= s.n_prompt || s.n_prompt == 1 || cfg_.max_batch_tokens == 1)
        return n; // a decode position (or no other way to make progress)
    // Leave no lone prompt token for the next chunk.
    if (n < remaining && remaining - n == 1 && s.n_cached + n < s.n_prompt)
        --n;
    // Nor take one now.
    return n == 1 && remaining > 1 ? 0 : n;
}

void policy::plan_resume(request_id id, sequence& s, step_plan& plan) {
    chunk c;
    c.part.seq = id;
    c.part.pos0 = s.n_cached;
    c.part.want_logits = true;
    c.part.decoded_from = s.n_prompt == 1 ? 0 : s.n_prompt;
    c.epoch = s.epoch;
    c.resume = true;
    plan.chunks.push_back(std::move(c));
    s.awaiting_sample = false; // until the executor defers it again
}

void policy::sample_deferred(std::span<const request_id> ids) {
    for (auto id : ids) {
        auto it = seqs_.find(id);
        // Only a running sequence whose every token is computed waits for a sample.
        if (it != seqs_.end() && it->second.st == state::running &&
            it->second.n_cached == it->second.tokens.size())
            it->second.awaiting_sample = true;
    }
}

void policy::preempt(request_id id, step_plan& plan, std::uint32_t& budget,
                     std::uint32_t& seqs_left) {
    auto& s = seqs_.at(id);
    s.awaiting_sample = false; // recomputed: its last chunk samples again
    // If this step already gave it a chunk, take the chunk back.
    if (auto it = std::find_if(plan.chunks.begin(), plan.chunks.end(),
                               [&](const chunk& c) { return c.part.seq == id; });
        it != plan.chunks.end()) {
        const auto n = static_cast<std::uint32_t>(it->part.tokens.size());
        budget += n;
        plan.n_tokens -= n;
        seqs_left += it->resume ? 0 : 1; // a resume chunk took no slot
        plan.chunks.erase(it);
    }
    kv_blocks_free_ += private_blocks(s);
    s.n_blocks = 0;
    s.n_cached = 0;
    ++s.epoch;
    s.st = state::waiting;
    running_.erase(std::find(running_.begin(), running_.end(), id));
    waiting_[static_cast<std::size_t>(s.req.prio)].push_front(id);
    waiting_prompt_tokens_ += s.tokens.size();
    plan.release.push_back(id);
    ++preemptions_;
}

step_plan policy::schedule(clock::time_point now) {
    step_plan plan;
    plan.step = next_step_++;

    // Deadlines first: nothing past its deadline takes part in a step.
    std::vector<request_id> expired;
    for (const auto& [id, s] : seqs_)
        if (s.req.deadline <= now)
            expired.push_back(id);
    for (auto id : expired)
        end(id, finish_reason::deadline, now, finished_);

    std::uint32_t budget = cfg_.max_batch_tokens;
    std::uint32_t seqs_left = cfg_.max_batch_seqs;
    // Fair shares first: a tenant over its share makes room for a waiting one. These
    // preemptions do not stop admission below (the room is for a waiting request).
    share_fairly(plan, budget, seqs_left);
    const auto preemptions_at_start = preemptions_;

    // 0. Samples the executor deferred (their masks were not ready) are drawn from the rows it
    //    kept: no pass computes them, so they take neither token budget nor sequence slots.
    for (const auto id : running_)
        if (auto& s = seqs_.at(id); s.awaiting_sample)
            plan_resume(id, s, plan);
    plan_decodes(plan, budget, seqs_left, now);

    // While streams decode, prompts get only what is left of decoding_batch_tokens, so the step
    // every running stream waits on stays short (prompts take the whole max_batch_tokens only
    // when nobody waits on the step).
    if (plan.n_tokens > 0)
        budget = std::min(budget, cfg_.decoding_batch_tokens > plan.n_tokens
                                      ? cfg_.decoding_batch_tokens - plan.n_tokens
                                      : 0u);

    // A tenant's prompt chunks take at most its share of what is left for prompts while other
    // tenants want prompt tokens too (fair shares).
    auto shares = plan_prompt_shares(budget);
    plan_prefills(plan, shares, budget, seqs_left);
    // A step that had to preempt admits nothing: the blocks just freed belong to the sequences
    // that needed them, not to newcomers that would be preempted again next step (vLLM v1 rule).
    if (preemptions_ == preemptions_at_start)
        plan_admissions(plan, shares, budget, seqs_left, now);
    // 4. Speculation, with what the step leaves: decode chunks grow by draft tokens to verify.
    if (cfg_.spec_max_draft > 0)
        plan_drafts(plan, budget);
    // Everything that ended since the last plan (including in this one) is released before this
    // plan's chunks run, so the blocks counted free above are free in the engine too.
    plan.release.insert(plan.release.end(), pending_release_.begin(), pending_release_.end());
    pending_release_.clear();
    pending_release_blocks_ = 0;
    return plan;
}

// 1. Decodes: one token for every running sequence that waits for its next token, oldest first.
//    A sequence that cannot get a block preempts the newest running sequence.
void policy::plan_decodes(step_plan& plan, std::uint32_t& budget, std::uint32_t& seqs_left,
                          clock::time_point now) {
    for (std::size_t i = 0; i < running_.size() && budget > 0 && seqs_left > 0; ++i) {
        const auto id = running_[i];
        auto& s = seqs_.at(id);
        if (s.tokens.size() - s.n_cached != 1)
            continue;
        while (plan_chunk(id, s, 1, plan) == 0) {
            if (running_.back() == id)
                break; // it is the newest itself: it waits for a block (never over-commit)
            preempt(running_.back(), plan, budget, seqs_left);
        }
        if (!plan.chunks.empty() && plan.chunks.back().part.seq == id) {
            --budget;
            --seqs_left;
        } else if (running_.size() == 1) {
            // Alone and still no block: it holds the whole KV budget and can never grow.
            end(id, finish_reason::length, now, finished_);
            break;
        }
    }
}

// 2. Prefills already under way continue, oldest first, as large as the budget allows: the
//    oldest prompt finishes before a newer one starts (first come, first served; across
//    tenants, within the fair shares).
void policy::plan_prefills(step_plan& plan, prompt_shares& shares, std::uint32_t& budget,
                           std::uint32_t& seqs_left) {
    for (std::size_t i = 0; i < running_.size() && budget > 0 && seqs_left > 0; ++i) {
        const auto id = running_[i];
        auto& s = seqs_.at(id);
        if (s.tokens.size() - s.n_cached <= 1)
            continue;
        const auto allowed = prompt_allowance(shares, s.req.tenant, budget);
        if (allowed == 0)
            continue;
        auto n = plan_chunk(id, s, allowed, plan);
        // When nothing at all could be planned, the oldest unfinished prefill takes the blocks of
        // the newest sequences: some sequence must always progress.
        while (n == 0 && plan.chunks.empty() && running_.back() != id) {
            preempt(running_.back(), plan, budget, seqs_left);
            n = plan_chunk(id, s, std::min(allowed, budget), plan);
        }
        if (n > 0) {
            budget -= n;
            shares.used[s.req.tenant] += n;
            --seqs_left;
        }
    }
}

// 3. Admissions by weighted priority while budget, sequence slots and blocks allow. The head of
//    the chosen queue that does not fit stops admission (no overtaking by smaller prompts, which
//    would starve long ones).
void policy::plan_admissions(step_plan& plan, prompt_shares& shares, std::uint32_t& budget,
                             std::uint32_t& seqs_left, clock::time_point now) {
    while (budget > 0 && seqs_left > 0) {
        const int p = next_priority();
        if (p < 0)
            break;
        auto& queue = waiting_[static_cast<std::size_t>(p)];
        const auto at = pick_waiting(static_cast<std::size_t>(p), shares, budget);
        const auto id = queue[at];
        auto& s = seqs_.at(id);
        const auto n = plan_chunk(id, s, prompt_allowance(shares, s.req.tenant, budget), plan);
        if (n == 0)
            break;
        queue.erase(queue.begin() + static_cast<std::ptrdiff_t>(at));
        --credits_[static_cast<std::size_t>(p)];
        waiting_prompt_tokens_ -= s.tokens.size();
        shares.used[s.req.tenant] += n;
        held_[s.req.tenant] += seq_weight(s);
        if (auto w = waiting_by_tenant_.find(s.req.tenant);
            w != waiting_by_tenant_.end() && w->second > 0)
            --w->second;
        s.st = state::running;
        if (s.timings.first_scheduled == clock::time_point{})
            s.timings.first_scheduled = now;
        running_.push_back(id);
        budget -= n;
        --seqs_left;
    }
}

void policy::birth_choices(const step_plan& plan) {
    for (const auto& c : plan.chunks) {
        if (c.forks.empty())
            continue;
        auto it = seqs_.find(c.part.seq);
        if (it == seqs_.end())
            continue;
        auto& s = it->second;
        if (s.forked || s.st != state::running || s.epoch != c.epoch ||
            s.n_cached != s.tokens.size())
            continue;
        s.forked = true;
        kv_shared_ = true;
        // Every choice shares the whole blocks; a partly filled last block is shared too and each
        // choice's first append copies it (the engine counts one copy per sharer): counting only
        // the whole blocks as held makes each choice plan that block again, which covers it.
        // The engine's report (sync_kv_free) settles the count after every step.
        const std::uint32_t whole = s.n_cached / cfg_.kv_block_tokens;
        s.n_blocks = std::min(s.n_blocks, whole);
        for (auto child : c.forks) {
            if (seqs_.count(child))
                continue;
            sequence k = s;
            // A choice goes its own way through the schema.
            if (k.grammar)
                k.grammar = k.grammar->fresh();
            k.req.id = child;
            k.req.n_choices = 1;
            seqs_.emplace(child, std::move(k));
            running_.push_back(child);
        }
    }
}

step_outcome policy::update_from_output(const step_plan& plan, std::span<const sample> samples,
                                        clock::time_point now) {
    step_outcome out;
    birth_choices(plan);
    // Draft chunks: how many samples each sequence has taken so far in this loop.
    std::unordered_map<request_id, std::uint32_t> confirmed;
    for (std::size_t si = 0; si < samples.size(); ++si) {
        const auto& smp = samples[si];
        auto cit = std::find_if(plan.chunks.begin(), plan.chunks.end(),
                                [&](const chunk& c) { return c.want_logits_for(smp.id); });
        auto sit = seqs_.find(smp.id);
        if (cit == plan.chunks.end() || sit == seqs_.end())
            continue; // cancelled or finished meanwhile
        auto& s = sit->second;
        // The j-th sample of a draft chunk (j >= 1) follows a sample equal to draft j, whose
        // position the step computed: that position is cached now.
        const std::uint32_t j = cit->n_draft > 0 ? confirmed[smp.id]++ : 0;
        const std::size_t known =
            cit->n_draft > 0 ? cit->part.pos0 + 1 + j : cit->part.pos0 + cit->part.tokens.size();
        // Stale: preempted since planning, or not waiting for this sample.
        if (s.st != state::running || s.epoch != cit->epoch || j > cit->n_draft ||
            s.n_cached + (j > 0 ? 1 : 0) != s.tokens.size() || known != s.tokens.size() ||
            (j > 0 && s.tokens.back() != cit->part.tokens[j]))
            continue;
        if (j > 0) {
            ++s.n_cached;
            ++spec_accepted_[static_cast<std::size_t>(cit->source)];
        }

        if (s.req.max_tokens == 0) {
            // Prompt only (echo's prompt logprobs): the prompt is computed, nothing generated.
            s.timings.first_token = now;
            end(smp.id, finish_reason::length, now, out.finished);
            continue;
        }
        s.tokens.push_back(smp.token);
        const auto index = s.n_generated++;
        if (s.timings.first_token == clock::time_point{}) // index n_resumed when resumed
            s.timings.first_token = now;

        // An end-of-generation or stop token ends the sequence without reaching the client: it
        // is not one of the tokens generated (usage counts what the client receives, as the
        // logprobs and the native `tokens` list it) and has no KV.
        const auto& stops = s.req.stop_token_ids;
        const bool eog = eog_.count(smp.token) > 0;
        if (eog || std::find(stops.begin(), stops.end(), smp.token) != stops.end()) {
            s.tokens.pop_back();
            --s.n_generated;
            end(smp.id, eog ? finish_reason::eos : finish_reason::stop, now, out.finished);
            continue;
        }
        out.tokens.push_back({smp.id, smp.token, smp.logprob, index, si});
        // The token just sampled has no KV yet: the context is full when tokens reach n_ctx.
        if (s.n_generated >= s.req.max_tokens || s.tokens.size() >= cfg_.n_ctx)
            end(smp.id, finish_reason::length, now, out.finished);
    }
    settle_drafts(plan, confirmed);
    return out;
}

void policy::step_failed(const step_plan& plan, clock::time_point now) {
    for (const auto& c : plan.chunks) {
        auto it = seqs_.find(c.part.seq);
        if (it != seqs_.end() && it->second.epoch == c.epoch)
            end(c.part.seq, finish_reason::error, now, finished_);
    }
}

bool policy::finish(request_id id, finish_reason reason, clock::time_point now) {
    if (!seqs_.count(id))
        return false;
    end(id, reason, now, finished_);
    return true;
}

void policy::end(request_id id, finish_reason reason, clock::time_point now,
                 std::vector<finished_seq>& out) {
    auto it = seqs_.find(id);
    if (it == seqs_.end())
        return;
    auto& s = it->second;
    if (s.st == state::waiting) {
        auto& q = waiting_[static_cast<std::size_t>(s.req.prio)];
        q.erase(std::find(q.begin(), q.end(), id));
        waiting_prompt_tokens_ -= s.tokens.size();
    } else {
        running_.erase(std::find(running_.begin(), running_.end(), id));
    }
    if (s.n_blocks > 0) {
        const auto freed = private_blocks(s);
        kv_blocks_free_ += freed;
        pending_release_blocks_ += freed;
        pending_release_.push_back(id);
    }
    finished_seq f;
    f.id = id;
    f.reason = reason;
    f.n_prompt = s.n_prompt;
    f.n_generated = s.n_generated;
    f.never_scheduled = s.timings.first_scheduled == clock::time_point{};
    f.timings = s.timings;
    f.timings.finished = now;
    out.push_back(std::move(f));
    seqs_.erase(it);
}

std::vector<finished_seq> policy::take_finished() {
    std::vector<finished_seq> out;
    out.swap(finished_);
    return out;
}

policy_stats policy::stats() const {
    policy_stats st;
    for (std::size_t p = 0; p < n_priorities; ++p)
        st.waiting[p] = static_cast<std::uint32_t>(waiting_[p].size());
    st.waiting_prompt_tokens = waiting_prompt_tokens_;
    st.running = static_cast<std::uint32_t>(running_.size());
    st.kv_blocks_total = cfg_.kv_blocks_total;
    st.kv_blocks_used = cfg_.kv_blocks_total - kv_blocks_free_;
    st.preemptions = preemptions_;
    for (std::size_t i = 0; i < n_draft_sources; ++i) {
        st.spec_drafted += spec_drafted_[i];
        st.spec_accepted += spec_accepted_[i];
    }
    constexpr auto from_schema = static_cast<std::size_t>(draft_source::grammar);
    constexpr auto from_model = static_cast<std::size_t>(draft_source::model);
    st.spec_grammar_drafted = spec_drafted_[from_schema];
    st.spec_grammar_accepted = spec_accepted_[from_schema];
    st.spec_model_drafted = spec_drafted_[from_model];
    st.spec_model_accepted = spec_accepted_[from_model];
    for (const auto& [id, s] : seqs_) {
        const std::uint64_t to_prefill = s.tokens.size() - s.n_cached;
        const std::uint64_t to_generate =
            s.req.max_tokens > s.n_generated ? s.req.max_tokens - s.n_generated : 0;
        st.outstanding_tokens += to_prefill + to_generate;
    }
    return st;
}

} // namespace bitnet::sched
