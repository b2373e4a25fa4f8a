// load_model_parts: open → validate → tokenizer → repack weights, the stage both engines' loaders
// share. Each stage's error names the file and what is wrong, so an operator's load request fails
// with an actionable reason.
#include "model/engine/model_parts.hpp"

namespace bitnet::model {
namespace {

error in_file(const std::string& path, const error& e) {
    return error(e.value(), path + ": " + e.message);
}

} // namespace

result<model_parts> load_model_parts(const engine_options& opt, kernels::isa family,
                                     const model_check& check) {
    auto file = gguf_file::open(opt.model_path);
    if (!file)
        return in_file(opt.model_path, file.error());
    auto config = read_model_config(*file);
    if (!config)
        return in_file(opt.model_path, config.error());
    auto tensors = map_model_tensors(*file, *config);
    if (!tensors)
        return in_file(opt.model_path, tensors.error());
    if (check) {
        auto ok = check(*config, *tensors);
        if (!ok)
            return in_file(opt.model_path, ok.error());
    }
    auto vocab_data = read_tokenizer_vocab(*file);
    if (!vocab_data)
        return in_file(opt.model_path, vocab_data.error());
    auto vocab = tokenizer::create(std::move(*vocab_data));
    if (!vocab)
        return in_file(opt.model_path, vocab.error());
    if (vocab->n_vocab() > static_cast<std::int32_t>(config->n_vocab))
        return error(errc::invalid_model,
                     opt.model_path + ": the tokenizer has " + std::to_string(vocab->n_vocab()) +
                         " tokens but the embedding only " + std::to_string(config->n_vocab));
    if (opt.max_batch_tokens == 0)
        return error(errc::invalid_argument, "max_batch_tokens must be at least 1");
    weight_load_options wopt;
    wopt.family = family;
    wopt.tl_kernel_config = opt.tl_kernel_config;
    wopt.q8_logits = opt.q8_logits;
    wopt.greedy_screen = opt.greedy_screen;
    auto weights = load_model_weights(*file, *config, *tensors, wopt);
    if (!weights)
        return in_file(opt.model_path, weights.error());
    // `file` and its image of the file's bytes go when this returns: the parts own copies of
    // everything they read, so a served file can change on disk without touching them.
    return model_parts{std::move(*config), std::move(*vocab), std::move(*weights)};
}

kv_cache_options kv_options_for(const model_config& config, const engine_options& opt) {
    kv_cache_options kv;
    kv.n_layer = config.n_layer;
    kv.n_kv_heads = config.n_head_kv;
    kv.head_dim = config.head_dim;
    kv.block_tokens = opt.kv_block_tokens;
    kv.budget_bytes = opt.kv_budget_bytes;
    kv.q8_0 = opt.kv_q8_0;
    return kv;
}

} // namespace bitnet::model
