// Speculative decoding with a draft model: a smaller GGUF with the same vocabulary runs beside
// the served model in the executor. After a step's samples, each sequence that asked
// (step_chunk::draft_next) gets the draft model's greedy continuation of its tokens; the batcher
// plans them as drafts of the next step, where the served model verifies them exactly like any
// other drafts. Greedy drafts are a function of the tokens, so accepting one exactly when the
// sequence's sampler draws it is the rejection rule of speculative sampling for a one-point
// draft distribution: output is the same as without drafts, seed for seed.
//
// The draft model's KV keeps each sequence's known tokens (its own cache, released with the
// sequence's); the positions of the drafts themselves are dropped after proposing, so the next
// proposal starts from the tokens the served model confirmed.
#include "actors/executor/executor_internal.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace bitnet::actors::executor_detail {

namespace {

/// The KV budget of a draft model, as a share of the served model's: its sequences hold the
/// same positions in a smaller model.
constexpr std::uint64_t draft_kv_share = 4;
constexpr std::uint64_t draft_kv_min_bytes = 16ull << 20;

std::int32_t argmax(std::span<const float> row) {
    return static_cast<std::int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

/// One sequence's proposal in the making.
struct draft_job {
    std::uint64_t seq = 0;
    std::uint32_t want = 0;  ///< drafts to propose
    std::uint32_t known = 0; ///< the sequence's tokens, its last sample included
    std::vector<msg::token_id> drafts;
};

} // namespace

result<std::unique_ptr<model::engine>> load_draft_model(const msg::executor_order& order,
                                                        const model::engine& main) {
    model::engine_options opt;
    opt.model_path = order.draft_model;
    opt.n_threads = order.engine.n_threads;
    opt.kv_block_tokens = order.engine.kv_block_tokens;
    opt.max_batch_tokens = order.engine.max_batch_tokens;
    opt.kv_budget_bytes =
        std::max(order.engine.kv_budget_bytes / draft_kv_share, draft_kv_min_bytes);
    // Its logits from a Q8_0 copy of the embedding: half the bytes of the pass that dominates a
    // small model with a large vocabulary, and drafts need no exact numbers (verification
    // decides what is kept).
    opt.q8_logits = true;
    auto loaded = model::engine::load(opt);
    if (!loaded)
        return error{loaded.error().value(),
                     "draft model " + order.draft_model + ": " + loaded.error().message,
                     "draft_model"};
    // Drafts are token ids: they mean the same text only under the same vocabulary.
    const auto& a = main.vocab();
    const auto& b = (*loaded)->vocab();
    if (a.n_vocab() != b.n_vocab() || main.config().n_vocab != (*loaded)->config().n_vocab)
        return error{errc::invalid_argument,
                     "draft model " + order.draft_model + " has a vocabulary of " +
                         std::to_string(b.n_vocab()) + " tokens; the model has " +
                         std::to_string(a.n_vocab()) + " (a draft model needs the same one)",
                     "draft_model"};
    for (std::int32_t id = 0; id < a.n_vocab(); ++id)
        if (a.token_to_piece(id, true) != b.token_to_piece(id, true))
            return error{errc::invalid_argument,
                         "draft model " + order.draft_model + ": token " + std::to_string(id) +
                             " differs from the model's (a draft model needs the same "
                             "vocabulary)",
                         "draft_model"};
    return loaded;
}

void propose_drafts(executor_state& st, const msg::step_batch& batch, msg::step_result& out) {
    if (!st.draft)
        return;
    auto& d = *st.draft;
    const auto n_vocab = d.config().n_vocab;
    const std::uint32_t n_ctx = d.config().n_ctx_train;
    std::vector<draft_job> jobs;
    std::vector<model::seq_chunk> chunks;
    for (const auto& c : batch.chunks) {
        if (c.draft_next == 0)
            continue;
        auto it = st.seqs.find(c.part.seq);
        if (it == st.seqs.end())
            continue; // failed in this step
        // Its last sample of this step (the token after its last accepted draft).
        auto smp = std::find_if(out.samples.rbegin(), out.samples.rend(),
                                [&](const msg::sampled_token& t) { return t.seq == c.part.seq; });
        if (smp == out.samples.rend())
            continue;
        auto& s = it->second;
        const auto known = static_cast<std::uint32_t>(s.tokens.size() + 1);
        if (s.draft_kv >= known) { // never after a proposal; start over rather than guess
            d.release(c.part.seq);
            s.draft_kv = 0;
        }
        const std::uint32_t room = n_ctx > known ? n_ctx - known : 0;
        const std::uint32_t want = std::min(c.draft_next, room);
        if (want == 0)
            continue;
        model::seq_chunk ch{c.part.seq, {}, s.draft_kv, true};
        ch.tokens.assign(s.tokens.begin() + s.draft_kv, s.tokens.end());
        ch.tokens.push_back(smp->token);
        // Generated tokens are computed as the decodes they were in the served model (all of
        // them after the first proposal, which holds the prompt and the first sample).
        ch.decoded_from = s.draft_kv > 0 ? s.draft_kv : known - 1;
        chunks.push_back(std::move(ch));
        jobs.push_back({c.part.seq, want, known, {}});
    }
    if (jobs.empty())
        return;
    // The known tokens the draft model has not seen, then one draft per pass.
    std::vector<std::size_t> active(jobs.size());
    for (std::size_t i = 0; i < jobs.size(); ++i)
        active[i] = i;
    while (!chunks.empty()) {
        auto so = d.step(chunks);
        if (!so) {
            // Out of draft KV, most likely: these sequences propose nothing this time and start
            // over next time (the pass left every KV as it was).
            spdlog::debug("executor '{}': the draft model's pass failed: {}", st.order.alias,
                          so.error().message);
            for (auto i : active) {
                d.release(jobs[i].seq);
                st.seqs.at(jobs[i].seq).draft_kv = 0;
                jobs[i].drafts.clear();
            }
            break;
        }
        std::vector<std::size_t> next;
        std::vector<model::seq_chunk> more;
        for (std::size_t k = 0; k < active.size(); ++k) {
            auto& j = jobs[active[k]];
            j.drafts.push_back(argmax(so->row(so->rows_for_chunk[k], n_vocab)));
            if (j.drafts.size() < j.want) {
                more.push_back({j.seq,
                                {j.drafts.back()},
                                j.known + static_cast<std::uint32_t>(j.drafts.size()) - 1,
                                true});
                next.push_back(active[k]);
            }
        }
        active = std::move(next);
        chunks = std::move(more);
    }
    for (auto& j : jobs) {
        if (j.drafts.empty())
            continue;
        // Keep the known tokens' positions, drop the drafts' (all but the last were computed).
        const auto extra = static_cast<std::uint32_t>(j.drafts.size() - 1);
        if (extra > 0 && !d.truncate(j.seq, extra)) {
            d.release(j.seq);
            st.seqs.at(j.seq).draft_kv = 0;
            continue;
        }
        st.seqs.at(j.seq).draft_kv = j.known;
        out.drafts.push_back({j.seq, std::move(j.drafts)});
    }
}

} // namespace bitnet::actors::executor_detail
