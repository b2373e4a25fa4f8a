// The executor: owns one model::engine on its own thread (spawned detached: a forward pass must
// never block CAF's cooperative scheduler), runs each step_batch through engine::step and samples
// one token per logits row. Device routing is decided once, at spawn, and reported.
#pragma once

#include "messages/interfaces.hpp"
#include "model/engine.hpp"

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace caf {
class actor_system;
}

namespace bitnet::actors {

/// Where a model runs, and why there (for the log, /health and /v1/models).
struct device_choice {
    std::string device; ///< "cpu" or "cuda:0"
    std::string reason;
};

/// `requested`: "auto" | "cpu" | "cuda". CUDA only when this binary was built with it and a
/// device is present; otherwise CPU, with the reason. "cuda" without CUDA is still a CPU choice
/// (with a reason that says the request could not be honoured) rather than a start-up failure.
[[nodiscard]] device_choice choose_device(std::string_view requested, bool cuda_built,
                                          int cuda_devices);
/// Whether this binary has CUDA kernels, and how many devices the runtime sees (0 without).
[[nodiscard]] bool cuda_built() noexcept;
[[nodiscard]] int cuda_device_count() noexcept;

/// One token chosen from a logits row.
struct sample_out {
    msg::token_id token = 0;
    float logprob = 0.0f;
    std::vector<msg::token_id> top_tokens;
    std::vector<float> top_logprobs;
};

/// Picks a token from `logits` given the request's settings and its recent tokens (for the
/// repetition penalty). Per sequence: `state` is created at the sequence's first chunk and kept
/// until release, so a seeded RNG continues across steps.
class sequence_sampler {
public:
    virtual ~sequence_sampler() = default;
    [[nodiscard]] virtual sample_out sample(std::span<const float> logits,
                                            std::span<const msg::token_id> recent) = 0;
};
using sampler_factory = std::function<std::unique_ptr<sequence_sampler>(const msg::sampling&)>;

/// Greedy argmax with exact log-softmax logprobs and `n_logprobs` alternatives; the sampler used
/// until model/sampler.hpp is wired in (then only for temperature 0).
[[nodiscard]] std::unique_ptr<sequence_sampler> make_greedy_sampler(const msg::sampling& params);

struct executor_options {
    std::string device = "auto";
    /// Loads the engine; runs on the executor's own thread (loading may take seconds).
    std::function<result<std::unique_ptr<model::engine>>()> make_engine;
    sampler_factory make_sampler = make_greedy_sampler;
    std::vector<msg::token_id> eog_ids; ///< reported in executor_info for the batcher's policy
};

/// Spawns the executor detached. It loads the engine first; if that fails it exits with the
/// load error (as a caf::error) so a monitor sees why.
[[nodiscard]] msg::executor_actor spawn_executor(caf::actor_system& sys, executor_options opt);

} // namespace bitnet::actors
