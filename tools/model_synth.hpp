// Synthetic BitNet models in exactly bitnet.cpp's layout (for tests and benchmarks): random
// ternary projections with per-tensor scales, an F16 token embedding, F32 norms, and tokenizer
// metadata. Deterministic for a seed; tensors are generated and written in streaming chunks.
#pragma once

#include "common/error.hpp"
#include "model/gguf/gguf_value.hpp"
#include "model/gguf/gguf_writer.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace bitnet::tools {

/// Hyper-parameters of a named shape.
struct synth_shape {
    std::string name;
    std::uint32_t n_embd, n_layer, n_head, n_head_kv, n_ff, n_vocab, n_ctx;
    float rope_base;
};

/// "tiny" (~2M), "small" (~100M parameters), "2b4t" (BitNet b1.58 2B-4T: 2560/30/20/5/6912/128256).
[[nodiscard]] result<synth_shape> find_shape(const std::string& name);

/// Tokenizer metadata to embed, plus the vocabulary size it implies.
struct synth_tokenizer {
    std::vector<std::pair<std::string, model::gguf_value>> kvs;
    std::uint32_t n_vocab = 0;
};

/// A byte-level BPE vocabulary with no merges: 256 byte tokens, <|begin_of_text|>,
/// <|end_of_text|>, <|eot_id|> (control), padded with unused reserved tokens to `n_vocab`.
[[nodiscard]] synth_tokenizer byte_level_tokenizer(std::uint32_t n_vocab);

/// The tokenizer of a Hugging Face tokenizer.json (and its tokenizer_config.json beside it).
[[nodiscard]] result<synth_tokenizer> tokenizer_from_hf_json(const std::string& path);

struct synth_options {
    std::string arch = "bitnet-b1.58"; ///< bitnet-b1.58, bitnet-25, bitnet, llama
    std::string format = "i2_s";       ///< i2_s, or f32 (ternary values stored as F32)
    synth_shape shape;
    synth_tokenizer tokenizer;
    std::uint64_t seed = 1;
    /// Fill output_norm.weight with NaN: a file that passes every structural check but whose
    /// logits are never finite (tests of the server's warm-up check).
    bool nan_output_norm = false;
};

/// What a tensor of a BitNet file holds, which decides its type: F16 embedding, F32 norm, and
/// projections in the file's format (I2_S, or F32 for the float twin).
enum class tensor_role { embedding, norm, projection };

/// One tensor in writing order; `ne0` is the contiguous (input) side, ne1 == 1 for 1-D tensors.
struct tensor_plan {
    std::string name;
    tensor_role role;
    std::uint64_t ne0, ne1;
};

/// The tensors of `arch` with shape `s` (names and order as bitnet.cpp's converter writes them:
/// embedding, per layer, output norm; `llama` adds a separate output and has no sub-norms).
/// Errors: an unknown architecture, or a shape the I2_S layout cannot hold.
[[nodiscard]] result<std::vector<tensor_plan>>
bitnet_tensor_plan(const std::string& arch, const synth_shape& s, std::uint32_t n_vocab);

/// Adds the `general.*`, `<arch>.*` hyper-parameter and tokenizer metadata of a model to `w`
/// (docs/GGUF-FORMAT.md §3.2); `file_type` 40 = I2_S, 0 = F32.
void add_bitnet_metadata(model::gguf_writer& w, const std::string& arch, const synth_shape& s,
                         const synth_tokenizer& tokenizer, const std::string& name,
                         std::uint32_t file_type);

/// Writes the model to `path`. Memory stays bounded by one chunk (a few MiB), not the model.
[[nodiscard]] result<void> write_synthetic_model(const synth_options& opt, const std::string& path);

} // namespace bitnet::tools
