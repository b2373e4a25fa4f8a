// engine::load: the CPU engine over a model's parts (model_parts.cpp reads and checks the file):
// the KV pool, the kernel family each op runs (timed on the model's own shapes, kernel_choice.cpp)
// and the greedy screen's row count.
#include "kernels/parallel.hpp"
#include "model/engine/cpu/cpu_engine.hpp"
#include "model/engine/engine.hpp"
#include "model/engine/model_parts.hpp"

namespace bitnet::model {

result<std::unique_ptr<engine>> engine::load(const engine_options& opt) {
    auto parts = load_model_parts(opt, kernels::best_isa());
    if (!parts)
        return parts.error();
    auto cache = kv_cache::create(kv_options_for(parts->config, opt));
    if (!cache)
        return cache.error();
    const int n_threads = kernels::resolve_threads(opt.n_threads);
    auto plan = choose_kernels(parts->weights, parts->config, n_threads, opt.max_batch_tokens);
    auto screen = opt.greedy_screen_rows > 0
                      ? screen_rows_choice{opt.greedy_screen_rows, "set, not timed"}
                      : choose_screen_rows(parts->weights, parts->config, n_threads, plan);
    return std::unique_ptr<engine>(new cpu_engine(std::move(parts->config), std::move(parts->vocab),
                                                  std::move(parts->weights), std::move(*cache),
                                                  std::move(plan), std::move(screen), opt));
}

} // namespace bitnet::model
