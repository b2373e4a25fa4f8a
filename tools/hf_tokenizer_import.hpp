// Hugging Face tokenizer.json (+ tokenizer_config.json) -> tokenizer_vocab in GGUF form. Byte-level
// BPE becomes "gpt2"; a Unigram model becomes "llama" (SentencePiece). Other kinds are refused.
#pragma once

#include "common/error.hpp"
#include "model/tokenizer/tokenizer_vocab.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace bitnet::tools {

struct hf_import_options {
    /// Use this `tokenizer.ggml.pre` instead of the one recognised from the pre_tokenizer
    /// (e.g. "llama-bpe" for a regex written differently but meaning the same).
    std::optional<std::string> pre_override;
};

/// Converts the text of a tokenizer.json and, if given, of its tokenizer_config.json (BOS/EOS
/// names and add_bos/add_eos). Ids missing from the vocabulary become unused `[PAD{id}]` tokens;
/// added tokens become control (special) or user-defined tokens. Errors: bad_format for JSON that
/// is not a tokenizer, unsupported for model kinds, normalizers or pre-tokenizers we cannot
/// reproduce (the message names them), tokenizer_error for inconsistent ids.
[[nodiscard]] result<model::tokenizer_vocab>
import_hf_tokenizer(std::string_view tokenizer_json, std::optional<std::string_view> config_json,
                    const hf_import_options& opt = {});

/// As above from files. `config_path` empty means `tokenizer_config.json` beside the tokenizer,
/// used only if it exists. io_error when a file cannot be read.
[[nodiscard]] result<model::tokenizer_vocab>
import_hf_tokenizer_file(const std::string& tokenizer_path, const std::string& config_path = {},
                         const hf_import_options& opt = {});

} // namespace bitnet::tools
