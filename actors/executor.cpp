#include "actors/executor.hpp"

#include "messages/errors.hpp"

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <numeric>
#include <unordered_map>

namespace bitnet::actors {

device_choice choose_device(std::string_view requested, bool built, int devices) {
    if (requested == "cpu")
        return {"cpu", "requested cpu"};
    if (!built)
        return {"cpu", requested == "cuda" ? "cuda requested but this build has no CUDA kernels"
                                           : "built without CUDA"};
    if (devices <= 0)
        return {"cpu", requested == "cuda" ? "cuda requested but no CUDA device is present"
                                           : "no CUDA device present"};
    return {"cuda:0", "CUDA device 0 of " + std::to_string(devices)};
}

bool cuda_built() noexcept {
#ifdef BITNET_WITH_CUDA
    return true;
#else
    return false;
#endif
}

int cuda_device_count() noexcept {
    // The CUDA kernels' runtime query lands with kernels/cuda; until then no build has CUDA.
    return 0;
}

namespace {

class greedy_sampler final : public sequence_sampler {
public:
    explicit greedy_sampler(std::int32_t n_logprobs)
        : n_logprobs_(std::clamp(n_logprobs, 0, 20)) {}

    sample_out sample(std::span<const float> logits, std::span<const msg::token_id>) override {
        sample_out out;
        if (logits.empty())
            return out;
        auto best = std::max_element(logits.begin(), logits.end());
        const float max = *best;
        double sum = 0.0;
        for (float l : logits)
            sum += std::exp(static_cast<double>(l - max));
        const auto log_z = static_cast<float>(std::log(sum)) + max;
        out.token = static_cast<msg::token_id>(best - logits.begin());
        out.logprob = max - log_z;
        if (n_logprobs_ > 0) {
            std::vector<msg::token_id> idx(logits.size());
            std::iota(idx.begin(), idx.end(), 0);
            const auto k = std::min<std::size_t>(static_cast<std::size_t>(n_logprobs_), idx.size());
            std::partial_sort(idx.begin(), idx.begin() + static_cast<long>(k), idx.end(),
                              [&](auto a, auto b) {
                                  return logits[static_cast<std::size_t>(a)] >
                                         logits[static_cast<std::size_t>(b)];
                              });
            for (std::size_t i = 0; i < k; ++i) {
                out.top_tokens.push_back(idx[i]);
                out.top_logprobs.push_back(logits[static_cast<std::size_t>(idx[i])] - log_z);
            }
        }
        return out;
    }

private:
    std::int32_t n_logprobs_;
};

/// What the executor keeps per live sequence.
struct seq_state {
    std::unique_ptr<sequence_sampler> sampler;
    std::deque<msg::token_id> recent; ///< last tokens, for the repetition penalty
};

constexpr std::size_t k_recent_tokens = 64;

struct executor_state {
    std::unique_ptr<model::engine> engine;
    executor_options opt;
    device_choice device;
    std::unordered_map<std::uint64_t, seq_state> seqs;
    static inline const char* name = "executor";
};

using executor_pointer = msg::executor_actor::stateful_pointer<executor_state>;

void remember(seq_state& s, std::span<const msg::token_id> tokens) {
    for (auto t : tokens) {
        s.recent.push_back(t);
        if (s.recent.size() > k_recent_tokens)
            s.recent.pop_front();
    }
}

result<msg::step_result> run_step(executor_state& st, const msg::step_batch& batch) {
    const auto t0 = std::chrono::steady_clock::now();
    for (auto seq : batch.release) {
        st.engine->release(seq);
        st.seqs.erase(seq);
    }
    std::vector<model::seq_chunk> chunks;
    chunks.reserve(batch.chunks.size());
    for (const auto& c : batch.chunks) {
        if (c.pos0 == 0 || !st.seqs.count(c.seq))
            st.seqs[c.seq] = seq_state{st.opt.make_sampler(c.params), {}};
        chunks.push_back({c.seq, c.tokens, c.pos0, c.want_logits});
    }
    msg::step_result out;
    out.step = batch.step;
    if (!chunks.empty()) {
        auto so = st.engine->step(chunks);
        if (!so)
            return so.error();
        const auto n_vocab = st.engine->config().n_vocab;
        for (std::size_t i = 0; i < batch.chunks.size(); ++i) {
            const auto& c = batch.chunks[i];
            auto& s = st.seqs[c.seq];
            remember(s, c.tokens);
            if (!c.want_logits)
                continue;
            const auto row = i < so->rows_for_chunk.size() ? so->rows_for_chunk[i] : SIZE_MAX;
            if (row == SIZE_MAX)
                return error{errc::internal, "engine returned no logits row for a chunk that "
                                             "asked for one (seq " +
                                                 std::to_string(c.seq) + ")"};
            std::vector<msg::token_id> recent(s.recent.begin(), s.recent.end());
            auto smp = s.sampler->sample(so->row(row, n_vocab), recent);
            remember(s, std::span<const msg::token_id>(&smp.token, 1));
            out.samples.push_back({c.seq, smp.token, smp.logprob, std::move(smp.top_tokens),
                                   std::move(smp.top_logprobs)});
        }
    }
    out.kv_blocks_free = st.engine->kv_blocks_free();
    out.step_us =
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    return out;
}

msg::executor_actor::behavior_type executor_fn(executor_pointer self, executor_options opt) {
    auto& init = self->state;
    init.device = choose_device(opt.device, cuda_built(), cuda_device_count());
    init.opt = std::move(opt);
    auto loaded = init.opt.make_engine ? init.opt.make_engine()
                                       : result<std::unique_ptr<model::engine>>(
                                             error{errc::invalid_argument, "no engine factory"});
    if (loaded && *loaded)
        init.engine = std::move(*loaded);
    else
        // The behaviour below is never run: the actor ends with the load error as its reason.
        self->quit(msg::to_caf_error(loaded ? error{errc::internal, "engine factory returned null"}
                                            : loaded.error()));
    return {
        [self](msg::step_atom, const msg::step_batch& batch) -> caf::result<msg::step_result> {
            // An exception would kill the actor and every sequence with it: turn it into an
            // error for this step only.
            try {
                auto r = run_step(self->state, batch);
                if (!r)
                    return msg::to_caf_error(r.error());
                return std::move(*r);
            } catch (const std::exception& e) {
                return msg::to_caf_error(errc::internal, std::string("step threw: ") + e.what());
            }
        },
        [self](msg::info_atom) {
            const auto& st = self->state;
            msg::executor_info info;
            info.device = st.device.device;
            info.device_reason = st.device.reason;
            info.describe = st.engine->describe();
            info.architecture = st.engine->config().arch_name;
            info.n_ctx = st.engine->config().n_ctx_train;
            info.n_vocab = st.engine->config().n_vocab;
            info.kv_block_tokens = st.engine->kv_block_tokens();
            info.kv_blocks_total = st.engine->kv_blocks_total();
            info.eog_ids = st.opt.eog_ids;
            return info;
        },
    };
}

} // namespace

std::unique_ptr<sequence_sampler> make_greedy_sampler(const msg::sampling& params) {
    return std::make_unique<greedy_sampler>(params.n_logprobs);
}

msg::executor_actor spawn_executor(caf::actor_system& sys, executor_options opt) {
    return sys.spawn<caf::detached>(executor_fn, std::move(opt));
}

} // namespace bitnet::actors
