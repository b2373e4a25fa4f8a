// How to load an engine: a plain value (an executor order carries it as it is, see
// messages/orders.hpp).
#pragma once

#include <cstdint>
#include <string>

namespace bitnet::model {

struct engine_options {
    std::string model_path;
    int n_threads = 0;                            ///< 0 = number of cores
    std::uint64_t kv_budget_bytes = 256ull << 20; ///< whole KV pool, all layers
    std::uint32_t kv_block_tokens = 16;
    std::uint32_t max_batch_tokens = 512; ///< upper bound of tokens in one step
    bool q8_logits = false;               ///< opt-in Q8_0 block logits (documented accuracy loss)
    bool kv_q8_0 = false;                 ///< opt-in Q8_0 KV cache (kernels/attention.hpp)
    /// Keep an exact Q8_0 screen of the F16 logits matrix (kernels/greedy_screen.hpp) for the
    /// chunks that ask for their greedy token only (seq_chunk::greedy_only): about half the
    /// matrix's bytes more in memory. Ignored with q8_logits and on the CUDA engine.
    bool greedy_screen = false;
    /// The most greedy-only rows a step takes from the screen; 0 = measured at load
    /// (choose_screen_rows), else this many (tests and benchmarks pin it, as BITNET_ISA pins
    /// kernel families).
    std::uint32_t greedy_screen_rows = 0;
    std::string tl_kernel_config; ///< bitnet.cpp kernel_config.ini for TL1/TL2 files
};

} // namespace bitnet::model
