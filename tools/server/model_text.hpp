// The text side of the served models for the HTTP layer: each model's tokenizer (read from its
// GGUF without loading weights) and chat template, behind http::text_codec. The registry maps
// each alias to the text of the version it serves and is replaced at every flip (hot-swap); each
// text is immutable, so the codec's functions are safe on any thread.
#pragma once

#include "common/error.hpp"
#include "http/server.hpp"
#include "model/tokenizer/tokenizer.hpp"

#include <map>
#include <memory>
#include <shared_mutex>
#include <string>

namespace bitnet::server {

struct model_text {
    std::shared_ptr<const model::tokenizer> tokenizer;
    http::chat_template chat = http::chat_template::bitnet;
    bool chat_known = false; ///< the GGUF's template was recognised (else the BitNet fallback)
};

/// Reads the tokenizer and `tokenizer.chat_template` of the GGUF at `path`.
[[nodiscard]] result<model_text> read_model_text(const std::string& path);

/// alias -> the text of the version it serves. Thread-safe: the supervisor sets, HTTP reads.
class text_registry {
public:
    /// Null `text` removes the alias.
    void set(const std::string& alias, std::shared_ptr<const model_text> text);
    [[nodiscard]] std::shared_ptr<const model_text> find(std::string_view alias) const;

private:
    mutable std::shared_mutex mutex_;
    std::map<std::string, std::shared_ptr<const model_text>, std::less<>> texts_;
};

/// The codec over `models`; an alias without text is errc::not_found. A request keeps the text it
/// started with even if its alias flips meanwhile.
[[nodiscard]] http::text_codec make_text_codec(std::shared_ptr<const text_registry> models);

} // namespace bitnet::server
