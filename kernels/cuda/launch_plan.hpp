// A recorded plan of kernel launches: the arguments of each launch, in order, as plain data. An
// engine records a decode step's launches once per batch-size bucket, with every pointer into
// buffers that stay where they are, and replays the plan every step after writing the step's
// variable parts (tokens, positions, block tables, context lengths) into those buffers. On a GPU a
// replay is one CUDA graph launch (ops::replay_plan: the graph is captured at the first replay
// and kept with the plan); on the simulated grid it is the same launches run one by one, so the
// tests here check the order and the arguments a device replays.
#pragma once

#include "kernels/cuda/kernel_args.hpp"

#include <cstddef>
#include <memory>
#include <variant>
#include <vector>

namespace bitnet::kernels::cuda {

#define BITNET_CUDA_PLAN_ALTERNATIVE(name) name##_args,
/// Any kernel's arguments (the list ends in std::monostate, which no launch holds).
using any_launch = std::variant<BITNET_CUDA_KERNELS(BITNET_CUDA_PLAN_ALTERNATIVE) std::monostate>;
#undef BITNET_CUDA_PLAN_ALTERNATIVE

class launch_plan {
public:
    template <class Args>
    void add(const Args& a) {
        launches_.emplace_back(a);
        device_graph.reset(); // a changed plan is captured again
    }
    void clear() {
        launches_.clear();
        device_graph.reset();
    }
    [[nodiscard]] std::size_t size() const noexcept { return launches_.size(); }
    [[nodiscard]] bool empty() const noexcept { return launches_.empty(); }
    [[nodiscard]] const std::vector<any_launch>& launches() const noexcept { return launches_; }

    /// Where a device keeps what it made of this plan (a CUDA graph ready to launch), released
    /// with the plan. Only the ops that made it reads it.
    mutable std::shared_ptr<void> device_graph;

private:
    std::vector<any_launch> launches_;
};

} // namespace bitnet::kernels::cuda
