// Import of a trained model's float weights (written by tools/train/export.py) into a GGUF in
// bitnet.cpp's I2_S layout: each projection is ternarized exactly as training does (absmean), the
// embedding becomes F16, norms stay F32, and the tokenizer comes from a tokenizer.json.
//
// The float export is a directory with `manifest.json` and one little-endian f32 blob:
//   {"format": "bitnet-serve-float-weights", "version": 1, "architecture": "bitnet-b1.58",
//    "name": "...", "data": "weights.f32", "tokenizer": "tokenizer.json",
//    "config": {"n_vocab", "n_embd", "n_layer", "n_head", "n_head_kv", "n_ff", "n_ctx",
//               "rope_base"},
//    "tensors": [{"name": "blk.0.attn_q", "shape": [out, in], "offset": bytes,
//                 "absmean": f32 (projections only: mean |W| as training computed it)}, ...]}
// Tensor names are the GGUF names without ".weight"; shapes are row-major [rows, cols] (PyTorch
// order: `in` is contiguous). Paths inside are relative to the manifest.
#pragma once

#include "common/error.hpp"
#include "model/engine/weights/ternary_weights.hpp"

#include <span>
#include <string>

namespace bitnet::tools {

/// Absmean ternarization of a [rows, cols] float matrix, as BitLinear does in training:
/// s = mean |W| (at least 1e-5), values = clamp(round_half_even(W / s), -1, 1), scale = s.
/// `w` must hold rows * cols values.
[[nodiscard]] model::ternary_matrix ternarize_absmean(std::span<const float> w, std::uint32_t rows,
                                                      std::uint32_t cols);

struct import_options {
    std::string manifest_path;
    std::string tokenizer_path; ///< empty: the manifest's "tokenizer"
    std::string output_path;
};

/// Reads the export and writes the GGUF. Errors: io_error for unreadable files; bad_format for a
/// manifest that is not one, a missing or mis-shaped tensor, a blob too short; invalid_argument
/// when the tokenizer's vocabulary size differs from the config's, or when a projection's
/// absmean recomputed here differs from the one training recorded (the weights are not the ones
/// training saw).
[[nodiscard]] result<void> import_float_model(const import_options& opt);

} // namespace bitnet::tools
