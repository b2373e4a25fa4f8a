// Sampling under a schema's mask in the executor's step: token masks from the cache, or from the
// mask worker (model/constrain/mask_worker.hpp), which computes a missing one while the forward
// pass runs. The step waits for its sequences' masks max_step_mask_ms in all after the pass; a
// sequence whose mask is still not ready has its sample deferred (its logits row kept, the batcher
// plans a resume_sample chunk) instead of holding every other sequence's token. A worker that is
// truly stuck still stops the step: past its own budget a mask is waited for without end, so the
// step's watchdog sees it.
#include "actors/executor/executor_internal.hpp"
#include "messages/errors.hpp"

namespace bitnet::actors::executor_detail {

namespace {

using clock = std::chrono::steady_clock;

/// A step with no forward pass (only deferred samples) waits this long for one of its masks:
/// nobody else waits on it, and waiting less would only send the next such step sooner.
constexpr auto idle_mask_wait = std::chrono::milliseconds(50);

/// A mask whose slice has been under way this long in wall time is stuck: a slice is
/// mask_worker::slice_ns of CPU time, and the mask's own budget (limits::max_mask_ms) CPU time
/// too, which a worker below the kernels' priority may take a while to get on a busy machine,
/// so the bound is generous, and still half of the default step_timeout_ms.
constexpr auto stuck_after = std::chrono::milliseconds(15 * model::constrain::limits::max_mask_ms);

/// How often a long wait for a mask looks at the executor's cancel flag.
constexpr auto cancel_check = std::chrono::milliseconds(100);

/// Token `t` taken by the sequence's schema: the constraint's next state, or, before an auto
/// tool call opens, its piece looked at for the opener. The piece that completes the opener
/// starts the constraint with its bytes past the opener (past whitespace too: the call grammar
/// starts at its value); bytes no call can start with leave the turn free text.
void take_token(seq_state& s, msg::token_id t) {
    if (s.constraint) {
        (void)s.constraint->accept(t);
        return;
    }
    if (!s.lazy)
        return;
    const auto& pieces = s.lazy->compiled->vocab().pieces;
    if (t < 0 || static_cast<std::size_t>(t) >= pieces.size())
        return;
    auto& opener = s.lazy->opener;
    const auto parts = opener.feed(pieces[static_cast<std::size_t>(t)]);
    if (!opener.opened())
        return;
    std::string_view value = parts.call;
    value.remove_prefix(std::min(opener.value_offset(), value.size()));
    if (const auto first = value.find_first_not_of(" \t\r\n"); first != std::string_view::npos)
        value.remove_prefix(first);
    else
        value = {};
    model::constrain::token_constraint con(std::move(s.lazy->compiled));
    s.lazy.reset();
    if (con.accept_bytes(value))
        s.constraint.emplace(std::move(con));
}

/// Generated tokens the schema has still to take (a sequence re-prefilled after a preemption
/// replays them once its whole prefix is back).
void catch_up(seq_state& s) {
    const auto from = s.tokens.size() - std::min<std::size_t>(s.replay, s.tokens.size());
    for (auto i = from; i < s.tokens.size(); ++i)
        take_token(s, s.tokens[i]);
    s.replay = 0;
    s.ready_mask.reset();
}

/// Until when `j` is waited for in this step.
clock::time_point wait_for(const executor_state& st, const model::constrain::mask_worker::job& j) {
    if (auto running = j.running_since(); running && clock::now() - *running > stuck_after)
        return clock::time_point::max();
    // A mask asked for in an earlier step has had its wait there; it is taken when ready.
    if (j.queued() < st.step_start && st.step_has_pass)
        return clock::now();
    return st.mask_deadline;
}

/// Charges `s` the CPU time of the mask it is about to sample under (its worker job's; a cached
/// mask costs nothing) and errors once the sequence's masks together are past its budget:
/// executor_order::mask_ms_up_front (one mask's own bound), then mask_ms_per_token for each token
/// it samples. A schema whose every token costs a heavy mask ends its own request after a few
/// tokens instead of holding the worker for all of them.
result<void> charge_mask(const executor_state& st, seq_state& s, std::size_t n_generated) {
    if (!s.mask_job)
        return {};
    s.mask_cpu_ns += s.mask_job->cpu_ns();
    const std::int64_t per_token = st.order.mask_ms_per_token;
    const std::int64_t up_front = st.order.mask_ms_up_front;
    const auto tokens = static_cast<std::int64_t>(n_generated) + 1;
    const std::int64_t budget_ms = up_front + per_token * tokens;
    const std::int64_t used_ms = s.mask_cpu_ns / 1'000'000;
    if (used_ms <= budget_ms)
        return {};
    return error{errc::invalid_argument,
                 "structured output: this request's token masks took " + std::to_string(used_ms) +
                     " ms of CPU time for " + std::to_string(tokens) +
                     " tokens, more than its budget of " + std::to_string(budget_ms) + " ms (" +
                     std::to_string(up_front) + " ms up front, then " + std::to_string(per_token) +
                     " ms per token: limit mask_ms_per_token)",
                 "mask_ms_per_token"};
}

} // namespace

void prefetch_masks(executor_state& st, const msg::step_batch& batch) {
    for (const auto& c : batch.chunks) {
        if (!c.part.want_logits)
            continue;
        auto it = st.seqs.find(c.part.seq);
        if (it == st.seqs.end() || !it->second.constraint)
            continue;
        auto& s = it->second;
        // A replay waits for the chunk's tokens (masked_row asks then); a job already asked for
        // is for this same state (it is dropped whenever the constraint takes a token).
        if (s.replay > 0 || s.mask_job || s.ready_mask)
            continue;
        const auto& con = *s.constraint;
        s.ready_mask = con.compiled()->cached_mask(con.state());
        if (!s.ready_mask)
            s.mask_job = st.masks->submit(con.compiled(), con.state(), s.tenant);
    }
}

void set_mask_deadline(executor_state& st) {
    st.mask_deadline =
        clock::now() + (st.step_has_pass
                            ? std::chrono::milliseconds(model::constrain::limits::max_step_mask_ms)
                            : std::chrono::milliseconds(idle_mask_wait));
}

result<std::optional<std::span<const float>>> masked_row(executor_state& st, seq_state& s,
                                                         std::span<const float> row) {
    auto& con = *s.constraint;
    if (s.replay > 0)
        catch_up(s);
    auto mask = s.ready_mask ? s.ready_mask : con.compiled()->cached_mask(con.state());
    if (!mask) {
        if (!s.mask_job)
            s.mask_job = st.masks->submit(con.compiled(), con.state(), s.tenant);
        auto& j = *s.mask_job;
        // In slices, so a wait without end still ends when the executor is replaced.
        const auto until = wait_for(st, j);
        while (!j.wait_until(std::min(until, clock::now() + cancel_check))) {
            if (st.cancel && st.cancel->cancelled.load()) {
                st.masks->cancel();
                return error{errc::cancelled, "structured output: the mask was cancelled",
                             "response_format"};
            }
            if (clock::now() >= until)
                return std::optional<std::span<const float>>{};
        }
        const auto& m = j.mask();
        if (!m)
            return error{m.error().value() == errc::cancelled ? errc::cancelled
                                                              : errc::invalid_argument,
                         m.error().message, "response_format"};
        mask = *m;
    }
    const bool any = model::constrain::apply_mask(*mask, row, st.masked);
    if (!any)
        return error{errc::invalid_argument,
                     "structured output: no token can continue the JSON value here",
                     "response_format"};
    return std::optional<std::span<const float>>(std::span<const float>(st.masked));
}

result<bool> sample_into(executor_state& st, seq_state& s, std::uint64_t seq,
                         std::span<const float> logits, std::size_t n_generated,
                         msg::step_result& out) {
    if (s.replay > 0 && s.schema_bound())
        catch_up(s);
    if (s.constraint) {
        auto m = masked_row(st, s, logits);
        if (!m)
            return m.error();
        if (!*m) {
            if (s.pending_row.data() != logits.data())
                s.pending_row.assign(logits.begin(), logits.end());
            out.deferred.push_back(seq);
            return false;
        }
        if (auto charged = charge_mask(st, s, n_generated); !charged)
            return charged.error();
        logits = **m;
    }
    auto smp = s.sampler.sample(logits, s.tokens, n_generated);
    if (!smp)
        return smp.error();
    if (s.schema_bound()) {
        take_token(s, smp->token);
        s.mask_job.reset(); // both were for the state before the token
        s.ready_mask.reset();
        std::vector<float>().swap(s.pending_row);
    }
    msg::sampled_token t{seq, smp->token, smp->logprob, {}, {}};
    for (const auto& alt : smp->top_logprobs) {
        t.top_tokens.push_back(alt.token);
        t.top_logprobs.push_back(alt.logprob);
    }
    // The sampled token joins s.tokens when it comes back as the next chunk.
    out.samples.push_back(std::move(t));
    return true;
}

result<void> resume_sample(executor_state& st, const msg::step_chunk& c, msg::step_result& out) {
    auto it = st.seqs.find(c.part.seq);
    if (it == st.seqs.end() || it->second.pending_row.empty())
        return error{errc::internal,
                     "no deferred sample to resume for seq " + std::to_string(c.part.seq)};
    auto& s = it->second;
    if (auto r = sample_into(st, s, c.part.seq, s.pending_row, c.n_sampled, out); !r)
        return r.error();
    return {};
}

} // namespace bitnet::actors::executor_detail
