// Sampling on the engine's device (engines whose samples_on_device() is true: the CUDA engine):
// which chunks of a pass the device draws for, and the device's draws taken back as sample_into
// would have made them. The device sampler equals model::sampler for the same row, settings and
// draw (kernels/cuda/sample.cuh), so a sequence gives the same tokens whichever side samples;
// what it cannot do stays on the host: schema masks, alternatives (n_logprobs), choices forked
// from a row, draft verification, prompt logprobs, penalty windows past its staging, and the
// logit bias, EOS hold-backs and presence/frequency penalties (sampler.hpp steps 2, 3 and 5).
#include "actors/executor/executor_internal.hpp"

#include <algorithm>

namespace bitnet::actors::executor_detail {

namespace {

bool device_can_sample(const executor_state& st, const msg::step_chunk& c) {
    if (!c.part.want_logits || c.part.all_logits || c.n_draft > 0 || !c.fork_to.empty())
        return false;
    const auto it = st.seqs.find(c.part.seq);
    if (it == st.seqs.end() || it->second.schema_bound())
        return false;
    const model::sampling_params& p = it->second.sampler.params();
    // The device sampler implements the repetition penalty of the shaping steps (sampler.hpp,
    // steps 2-5); a row with a bias, a hold-back or an OpenAI penalty is drawn on the host.
    const bool host_only_shaping = p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f ||
                                   !p.logit_bias.empty() || p.min_tokens > 0 || p.ignore_eos;
    return p.n_logprobs == 0 && !host_only_shaping;
}

/// The sequence's tokens with the chunk's after them, the last `n` (the repetition penalty's
/// window: model::sampler::sample reads the same from s.tokens once the chunk is in).
std::vector<std::int32_t> recent_tokens(const seq_state& s, const msg::step_chunk& c,
                                        std::size_t n) {
    const auto& mine = c.part.tokens;
    const std::size_t from_chunk = std::min(n, mine.size());
    const std::size_t from_seq = std::min(n - from_chunk, s.tokens.size());
    std::vector<std::int32_t> out(s.tokens.end() - static_cast<std::ptrdiff_t>(from_seq),
                                  s.tokens.end());
    out.insert(out.end(), mine.end() - static_cast<std::ptrdiff_t>(from_chunk), mine.end());
    return out;
}

} // namespace

std::vector<model::device_sample> device_samples(const executor_state& st,
                                                 const msg::step_batch& batch,
                                                 std::span<const std::size_t> picked) {
    std::vector<model::device_sample> out;
    if (!st.engine->samples_on_device())
        return out;
    for (std::size_t k = 0; k < picked.size(); ++k) {
        const msg::step_chunk& c = batch.chunks[picked[k]];
        if (!device_can_sample(st, c))
            continue;
        const seq_state& s = st.seqs.at(c.part.seq);
        const model::sampling_params& p = s.sampler.params();
        const bool penalised = p.repetition_penalty != 1.0f && p.repeat_last_n != 0;
        const std::size_t all = s.tokens.size() + c.part.tokens.size();
        const std::size_t window =
            !penalised ? 0
                       : (p.repeat_last_n < 0 ? all : static_cast<std::size_t>(p.repeat_last_n));
        if (window > model::device_sample::max_adjusted_tokens)
            continue; // a window past the device's staging: the host samples this one
        model::device_sample d;
        d.chunk = k;
        d.params = p;
        // Peeked, not taken: a pass that fails takes no draw, as the host sampler would not.
        d.uniform = p.temperature != 0.0f ? s.sampler.peek_uniform() : 0.0;
        d.recent = recent_tokens(s, c, window);
        out.push_back(std::move(d));
    }
    return out;
}

const model::device_sampled* device_sampled_for(const model::step_output& so, std::size_t k) {
    const auto it = std::find_if(so.sampled.begin(), so.sampled.end(),
                                 [&](const model::device_sampled& d) { return d.chunk == k; });
    return it == so.sampled.end() ? nullptr : &*it;
}

result<void> take_device_sample(executor_state& st, const msg::step_chunk& c,
                                const model::device_sampled& d, msg::step_result& out) {
    auto& s = st.seqs.at(c.part.seq);
    s.tokens.insert(s.tokens.end(), c.part.tokens.begin(), c.part.tokens.end());
    if (!d.error.empty())
        return error{errc::invalid_argument, d.error};
    if (s.sampler.params().temperature != 0.0f)
        (void)s.sampler.take_uniform(); // the draw the device made
    // The sampled token joins s.tokens when it comes back as the next chunk.
    out.samples.push_back(msg::sampled_token{c.part.seq, d.token, d.logprob, {}, {}});
    return {};
}

} // namespace bitnet::actors::executor_detail
