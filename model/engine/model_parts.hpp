// A model read from its file and checked, before any engine holds it: the stage every engine's
// loader shares (engine::load for the CPU, load_cuda_engine for a CUDA device), so that a file is
// accepted or refused with the same words whichever device it is asked for.
#pragma once

#include "common/error.hpp"
#include "model/engine/engine_options.hpp"
#include "model/engine/kv_cache.hpp"
#include "model/engine/model_config.hpp"
#include "model/engine/model_weights.hpp"
#include "model/tokenizer/tokenizer.hpp"

#include <functional>

namespace bitnet::model {

struct model_parts {
    model_config config;
    tokenizer vocab;
    model_weights weights;
};

/// Opens `opt.model_path` and reads its config, tensors, tokenizer and weights (repacked for
/// `family`); `check`, when given, may refuse the model once its hyper-parameters and tensors are
/// known, before the weights are read (errors are prefixed with the file's path). The file's
/// image is gone when this returns: the parts own copies of everything they read.
using model_check = std::function<result<void>(const model_config&, const model_tensors&)>;
[[nodiscard]] result<model_parts> load_model_parts(const engine_options& opt, kernels::isa family,
                                                   const model_check& check = {});

/// The KV cache's shape for `config` and `opt`'s budget and block size.
[[nodiscard]] kv_cache_options kv_options_for(const model_config& config,
                                              const engine_options& opt);

} // namespace bitnet::model
